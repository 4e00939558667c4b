//! Injection of an executor's credentials into its containers' environment.

use std::sync::Arc;

use nestguard::container_id::parse_dotted;
use nestguard::credentials::delegation::ExecutorPrincipals;
use nestguard::credentials::injection::{
    InjectionError, Injector, Mode, PRINCIPAL_VAR, SECRET_VAR, TOKEN_VAR,
};
use nestguard::credentials::{Credential, CredentialStore, Secret, jwt};
use nestguard::proto::mesos::environment::Variable;
use nestguard::proto::mesos::{
    CommandInfo, Environment, ExecutorId, ExecutorInfo, FrameworkId, FrameworkInfo, Label, Labels,
};

const KEY: &str = "injection-signing-key";

fn executor(labels: &[(&str, &str)], env: &[(&str, &str)]) -> ExecutorInfo {
    ExecutorInfo {
        executor_id: ExecutorId {
            value: "default-executor".into(),
        },
        framework_id: Some(FrameworkId {
            value: "fw-from-executor".into(),
        }),
        command: Some(CommandInfo {
            environment: Some(Environment {
                variables: env
                    .iter()
                    .map(|(n, v)| Variable {
                        name: (*n).into(),
                        value: Some((*v).into()),
                        ..Default::default()
                    })
                    .collect(),
            }),
            ..Default::default()
        }),
        labels: (!labels.is_empty()).then(|| Labels {
            labels: labels
                .iter()
                .map(|(k, v)| Label {
                    key: (*k).into(),
                    value: Some((*v).into()),
                })
                .collect(),
        }),
        ..Default::default()
    }
}

fn framework(principal: Option<&str>) -> FrameworkInfo {
    FrameworkInfo {
        user: "root".into(),
        name: "nestguard-test".into(),
        id: Some(FrameworkId {
            value: "fw-1".into(),
        }),
        principal: principal.map(Into::into),
        ..Default::default()
    }
}

fn store() -> Arc<CredentialStore> {
    Arc::new(
        CredentialStore::from_credentials([
            Credential::new("fw-principal", Secret::from("inject-secret-fw")),
            Credential::new("exec-principal", Secret::from("inject-secret-exec")),
        ])
        .unwrap(),
    )
}

fn get<'a>(env: &'a Environment, name: &str) -> Vec<&'a str> {
    env.variables
        .iter()
        .filter(|v| v.name == name)
        .map(|v| v.value.as_deref().unwrap_or(""))
        .collect()
}

#[test]
fn token_mode_is_default_with_a_key_and_names_the_root_container() {
    let injector = Injector::from_config(Some(Secret::from(KEY)), Some(store())).unwrap();
    assert!(matches!(injector.mode(), Mode::Token(_)));
    let root = parse_dotted("c0ffee").unwrap();
    let nested = parse_dotted("c0ffee.task.sidecar").unwrap();
    let exec = executor(&[], &[("FOO", "bar")]);

    let hook = injector
        .decorate_executor_environment(&exec, &framework(None), &root)
        .unwrap();
    let nested_env = injector
        .nested_container_environment(&exec, &framework(None), &nested)
        .unwrap();

    let token = get(&hook, TOKEN_VAR);
    assert_eq!(token.len(), 1);
    assert_eq!(
        get(&nested_env, TOKEN_VAR),
        token,
        "nested containers get the executor's token"
    );
    assert_eq!(nested_env.variables.len(), 1);
    let claims = jwt::verify(token[0], &Secret::from(KEY), jwt::now_secs()).unwrap();
    assert_eq!(claims["fid"], "fw-1");
    assert_eq!(claims["eid"], "default-executor");
    assert_eq!(claims["cid"], "c0ffee");
    assert_eq!(claims.len(), 3);
    // Hook shape keeps the incoming variables first.
    assert_eq!(hook.variables[0].name, "FOO");
    assert!(get(&hook, SECRET_VAR).is_empty());
}

#[test]
fn token_mode_falls_back_to_executor_framework_id() {
    let injector = Injector::new(Mode::Token(Secret::from(KEY)));
    let mut fw = framework(None);
    fw.id = None;
    let env = injector
        .nested_container_environment(&executor(&[], &[]), &fw, &parse_dotted("r.n").unwrap())
        .unwrap();
    let claims = jwt::verify(get(&env, TOKEN_VAR)[0], &Secret::from(KEY), 0).unwrap();
    assert_eq!(claims["fid"], "fw-from-executor");
    assert_eq!(claims["cid"], "r");
}

#[test]
fn secret_mode_framework_principal_and_mapped_labels() {
    let injector = Injector::from_config(None, Some(store())).unwrap();
    let root = parse_dotted("root1").unwrap();

    // A framework-written label cannot name another principal ...
    let err = injector
        .decorate_executor_environment(
            &executor(&[("principal", "exec-principal")], &[]),
            &framework(Some("fw-principal")),
            &root,
        )
        .unwrap_err();
    assert!(
        matches!(err, InjectionError::PrincipalNotAllowed { .. }),
        "{err}"
    );
    // ... nor stand in for a missing FrameworkInfo.principal.
    let err = injector
        .decorate_executor_environment(
            &executor(&[("principal", "exec-principal")], &[]),
            &framework(None),
            &root,
        )
        .unwrap_err();
    assert!(matches!(err, InjectionError::NoPrincipal { .. }), "{err}");
    // The operator's mapping allows it.
    let mapping =
        ExecutorPrincipals::parse(r#"{"fw-principal": ["exec-principal"]}"#, "<inline>").unwrap();
    let injector = injector.with_executor_principals(mapping);
    let env = injector
        .decorate_executor_environment(
            &executor(&[("principal", "exec-principal")], &[]),
            &framework(Some("fw-principal")),
            &root,
        )
        .unwrap();
    assert_eq!(get(&env, PRINCIPAL_VAR), ["exec-principal"]);
    assert_eq!(get(&env, SECRET_VAR), ["inject-secret-exec"]);

    let env = injector
        .nested_container_environment(
            &executor(&[("other", "x")], &[]),
            &framework(Some("fw-principal")),
            &parse_dotted("root1.child").unwrap(),
        )
        .unwrap();
    assert_eq!(get(&env, PRINCIPAL_VAR), ["fw-principal"]);
    assert_eq!(get(&env, SECRET_VAR), ["inject-secret-fw"]);
    assert_eq!(env.variables.len(), 2);
}

#[test]
fn hook_shape_overrides_same_named_variables() {
    let injector = Injector::new(Mode::Secret(store()));
    let exec = executor(
        &[],
        &[
            ("A", "1"),
            (PRINCIPAL_VAR, "spoofed"),
            ("B", "2"),
            (SECRET_VAR, "spoofed"),
        ],
    );
    let env = injector
        .decorate_executor_environment(
            &exec,
            &framework(Some("fw-principal")),
            &parse_dotted("r").unwrap(),
        )
        .unwrap();
    let names: Vec<&str> = env.variables.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["A", "B", PRINCIPAL_VAR, SECRET_VAR]);
    assert_eq!(get(&env, PRINCIPAL_VAR), ["fw-principal"]);
}

#[test]
fn errors_name_what_is_missing_without_secrets() {
    let injector = Injector::new(Mode::Secret(store()));
    let root = parse_dotted("r").unwrap();
    let err = injector
        .nested_container_environment(&executor(&[], &[]), &framework(None), &root)
        .unwrap_err();
    assert!(matches!(err, InjectionError::NoPrincipal { .. }), "{err}");
    let err = injector
        .nested_container_environment(&executor(&[], &[]), &framework(Some("stranger")), &root)
        .unwrap_err();
    assert!(matches!(err, InjectionError::NoSecret { .. }), "{err}");
    assert!(err.to_string().contains("'stranger'"));
    let err = injector
        .nested_container_environment(
            &executor(&[("principal", "a"), ("principal", "b")], &[]),
            &framework(None),
            &root,
        )
        .unwrap_err();
    assert!(matches!(err, InjectionError::AmbiguousPrincipal(_)));
    let bad = nestguard::proto::mesos::ContainerId {
        value: "a b".into(),
        parent: None,
    };
    assert!(matches!(
        injector.nested_container_environment(
            &executor(&[], &[]),
            &framework(Some("fw-principal")),
            &bad
        ),
        Err(InjectionError::ContainerId(_))
    ));
    assert!(matches!(
        Injector::from_config(None, None),
        Err(InjectionError::NotConfigured)
    ));
}
