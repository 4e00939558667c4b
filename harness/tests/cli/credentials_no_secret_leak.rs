//! Collects every log line (a TRACE-level `tracing` subscriber writing to a
//! buffer), every error text (`Display` and `Debug`), every `Debug` of the
//! credential types, every C ABI error message and the CLI's output, over
//! the success and failure paths of every credentials module, and checks
//! that no test secret (nor a CRAM-MD5 digest or an issued token) appears.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use nestguard::credentials::cram_md5::{
    Authenticatee, Authenticator, ClientConfig, Message, ServerConfig, hex_digest,
};
use nestguard::credentials::file::{self, LoadOptions};
use nestguard::credentials::http::HttpAuthenticator;
use nestguard::credentials::injection::{Injector, Mode};
use nestguard::credentials::{Credential, CredentialStore, Secret, jwt};
use nestguard::proto::mesos::internal::AuthenticationStartMessage;
use nestguard::proto::mesos::{ExecutorId, ExecutorInfo, FrameworkId, FrameworkInfo};

/// Every secret this test uses; none may appear in any collected text.
const SECRETS: [&str; 6] = [
    "LEAKCHECK-alpha-5b1e",
    "LEAKCHECK-beta-77c2",
    "LEAKCHECK-gamma-0d9f",
    "LEAKCHECK-jwtkey-4a4a",
    "LEAKCHECK-wrong-e3e3",
    "LEAKCHECK-dup-9191",
];

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

#[derive(Default)]
struct Texts(Vec<String>);

impl Texts {
    fn err<E: std::fmt::Display + std::fmt::Debug>(&mut self, e: E) {
        self.0.push(e.to_string());
        self.0.push(format!("{e:?}"));
    }
    fn debug<T: std::fmt::Debug>(&mut self, t: &T) {
        self.0.push(format!("{t:?}"));
    }
}

fn private_file(dir: &tempfile::TempDir, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn files(texts: &mut Texts, dir: &tempfile::TempDir) -> Arc<CredentialStore> {
    let [a, b, c, _, _, dup] = SECRETS;
    let good = format!(
        r#"{{"credentials":[{{"principal":"alpha","secret":"{a}"}},{{"principal":"beta","secret":"{b}"}},{{"principal":"gamma","secret":"{c}"}}]}}"#
    );
    let cases = [
        (
            format!(
                r#"{{"credentials":[{{"principal":"x","secret":"{a}"}},{{"principal":"x","secret":"{dup}"}}]}}"#
            ),
            0o600,
        ),
        (format!(r#"{{"credentials":"{a}"}}"#), 0o600),
        (
            format!(r#"{{"credentials":[{{"principal":"{a}"}}]}}"#),
            0o600,
        ),
        (
            format!(r#"{{"credentials":[{{"principal":"p","secret":"{a}","x":"{b}"}}]}}"#),
            0o600,
        ),
        (
            format!(r#"{{"credentials":[{{"principal":"p","secret":"{a}"#),
            0o600,
        ),
        (
            format!(r#"{{"credentials":[{{"principal":"p","secret":"{a}\q"}}]}}"#),
            0o600,
        ),
        (format!("p {a} {b}\n"), 0o600),
        (format!("p\t{a}\n"), 0o600),
        (format!("p {a}\np {dup}\n"), 0o600),
        (good.clone(), 0o644),
    ];
    for (i, (text, mode)) in cases.iter().enumerate() {
        let path = private_file(dir, &format!("bad-{i}"), text, *mode);
        match file::load_credentials(&path, &LoadOptions::default()) {
            Ok(s) => panic!("case {i} should fail: {s:?}"),
            Err(e) => texts.err(e),
        }
        if let Err(e) = file::load_credential(&path, &LoadOptions::default()) {
            texts.err(e);
        }
    }
    let path = private_file(dir, "good.json", &good, 0o600);
    let store = file::load_credentials(&path, &LoadOptions::default()).unwrap();
    texts.debug(&store);
    let open = private_file(dir, "open.json", &good, 0o666);
    let _ = file::load_credentials(
        &open,
        &LoadOptions {
            allow_open_permissions: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let single = private_file(
        dir,
        "single.json",
        &format!(r#"{{"principal":"alpha","secret":"{a}"}}"#),
        0o600,
    );
    texts.debug(&file::load_credential(&single, &LoadOptions::default()).unwrap());
    Arc::new(store)
}

fn cram(texts: &mut Texts, store: &Arc<CredentialStore>) {
    let [a, _, _, _, wrong, _] = SECRETS;
    for (principal, secret) in [("alpha", a), ("alpha", wrong), ("nobody", a)] {
        let now = Instant::now();
        let (mut client, first) = Authenticatee::new(
            Credential::new(principal, Secret::from(secret)),
            "p@h:1",
            ClientConfig::default(),
            now,
        );
        texts.debug(&first);
        let (mut server, offer) = Authenticator::new(store.clone(), ServerConfig::default(), now);
        let mut to_client = Some(offer);
        while let Some(m) = to_client.take() {
            texts.debug(&m);
            let step = client.receive(m, now);
            texts.debug(&step);
            if let Some(r) = step.reply {
                texts.debug(&r);
                let s = server.receive(r, now);
                texts.debug(&s);
                to_client = s.reply;
            }
        }
        texts.debug(&server.outcome());
        texts.debug(&client.outcome());
    }
    // Error paths: malformed, too long, out of order, timeout.
    let now = Instant::now();
    let start = || {
        Message::Start(AuthenticationStartMessage {
            mechanism: "CRAM-MD5".into(),
            data: Some(Vec::new()),
        })
    };
    for data in [
        format!("alpha{a}").into_bytes(),
        format!("alpha {a}{a}{a}").into_bytes(),
        vec![b'x'; 2000],
    ] {
        let (mut server, _) = Authenticator::new(store.clone(), ServerConfig::default(), now);
        let _ = server.receive(start(), now);
        texts.debug(&server.receive(Message::step(data), now));
        texts.debug(&server.receive(start(), now));
    }
    let (mut server, _) = Authenticator::new(
        store.clone(),
        ServerConfig {
            timeout: Duration::from_millis(1),
            hostname: None,
        },
        now,
    );
    texts.debug(&server.poll_timeout(now + Duration::from_secs(1)));
    // The digest of the right secret must not appear either.
    texts.0.push(String::new());
}

fn http(texts: &mut Texts, store: &Arc<CredentialStore>) -> Vec<String> {
    let [a, b, _, key, wrong, _] = SECRETS;
    let auth = HttpAuthenticator::new(
        "mesos-agent-readwrite",
        Some(store.clone()),
        Some(Secret::from(key)),
    )
    .unwrap();
    texts.debug(&auth);
    let claims = std::collections::BTreeMap::from([
        ("cid".to_owned(), "c".to_owned()),
        ("eid".to_owned(), "e".to_owned()),
        ("fid".to_owned(), "f".to_owned()),
    ]);
    let token = jwt::issue(&claims, &Secret::from(key));
    let bad_key_token = jwt::issue(&claims, &Secret::from(wrong));
    for header in [
        format!("Basic {}", STANDARD.encode(format!("alpha:{a}"))),
        format!("Basic {}", STANDARD.encode(format!("alpha:{wrong}"))),
        format!("Basic {}", STANDARD.encode(format!("alpha:{a}:{b}"))),
        format!("Basic {a}"),
        format!("{a} {b}"),
        format!("Bearer {token}"),
        format!("Bearer {bad_key_token}"),
        format!("Bearer {token}x"),
        format!("Bearer {a}.{b}.{wrong}"),
        format!("Bearer {a}"),
        a.to_string(),
    ] {
        texts.debug(&auth.authenticate(Some(&header), jwt::now_secs()));
    }
    for bad in [
        format!("{token}x"),
        bad_key_token.clone(),
        format!("{a}.{b}.c"),
    ] {
        if let Err(e) = jwt::verify(&bad, &Secret::from(key), 0) {
            texts.err(e);
        }
    }
    vec![token, bad_key_token]
}

fn injection(texts: &mut Texts, store: &Arc<CredentialStore>) -> Vec<String> {
    let key = SECRETS[3];
    let exec = ExecutorInfo {
        executor_id: ExecutorId { value: "e".into() },
        ..Default::default()
    };
    let fw = |p: Option<&str>| FrameworkInfo {
        user: "u".into(),
        name: "n".into(),
        id: Some(FrameworkId { value: "f".into() }),
        principal: p.map(Into::into),
        ..Default::default()
    };
    let root = nestguard::container_id::parse_dotted("r.c").unwrap();
    let token_mode = Injector::new(Mode::Token(Secret::from(key)));
    let secret_mode = Injector::new(Mode::Secret(store.clone()));
    texts.debug(&token_mode);
    texts.debug(&secret_mode);
    let token = token_mode
        .nested_container_environment(&exec, &fw(None), &root)
        .unwrap();
    let _ = secret_mode
        .nested_container_environment(&exec, &fw(Some("alpha")), &root)
        .unwrap();
    for p in [None, Some("stranger")] {
        if let Err(e) = secret_mode.nested_container_environment(&exec, &fw(p), &root) {
            texts.err(e);
        }
    }
    token
        .variables
        .into_iter()
        .filter_map(|v| v.value)
        .collect()
}

fn abi(texts: &mut Texts) {
    let [a, _, _, _, _, dup] = SECRETS;
    let text = format!(
        r#"{{"credentials":[{{"principal":"p","secret":"{a}"}},{{"principal":"p","secret":"{dup}"}}]}}"#
    );
    let mut out = std::ptr::null_mut();
    let rc = nestguard::abi::credentials::nestguard_credentials_parse(
        text.as_ptr().cast(),
        text.len(),
        std::ptr::null(),
        0,
        &mut out,
    );
    assert_ne!(rc, nestguard::abi::result::nestguard_result::Ok);
    let mut buf = vec![0u8; 4096];
    let mut n = 0;
    let _ =
        nestguard::abi::error::nestguard_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut n);
    texts
        .0
        .push(String::from_utf8_lossy(&buf[..n.saturating_sub(1)]).into_owned());
}

fn cli(texts: &mut Texts, dir: &tempfile::TempDir) {
    let [a, b, _, key, _, _] = SECRETS;
    let bin = env!("CARGO_BIN_EXE_nestguard");
    let bad = private_file(dir, "cli-bad.txt", &format!("p {a} {b}\n"), 0o600);
    let open = private_file(
        dir,
        "cli-open.json",
        &format!(r#"{{"credentials":[{{"principal":"p","secret":"{a}"}}]}}"#),
        0o644,
    );
    let good = private_file(
        dir,
        "cli-good.json",
        &format!(r#"{{"credentials":[{{"principal":"p","secret":"{a}"}}]}}"#),
        0o600,
    );
    let keyfile = private_file(dir, "cli.key", key, 0o600);
    let runs: Vec<Vec<String>> = vec![
        vec![
            "-vvv".into(),
            "credentials".into(),
            "check".into(),
            bad.display().to_string(),
        ],
        vec![
            "-vvv".into(),
            "credentials".into(),
            "check".into(),
            open.display().to_string(),
        ],
        vec![
            "-vvv".into(),
            "credentials".into(),
            "check".into(),
            good.display().to_string(),
        ],
        vec![
            "-vvv".into(),
            "token".into(),
            "verify".into(),
            "--key".into(),
            keyfile.display().to_string(),
            format!("{a}.{b}.c"),
        ],
    ];
    for args in runs {
        let out = std::process::Command::new(bin)
            .args(&args)
            .output()
            .unwrap();
        texts
            .0
            .push(String::from_utf8_lossy(&out.stdout).into_owned());
        texts
            .0
            .push(String::from_utf8_lossy(&out.stderr).into_owned());
    }
}

#[test]
fn no_secret_in_any_log_line_or_error_text() {
    let logs = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let dir = tempfile::Builder::new()
        .prefix("nestguard-leak-")
        .tempdir()
        .unwrap();
    let mut texts = Texts::default();
    let store = files(&mut texts, &dir);
    cram(&mut texts, &store);
    let mut forbidden: Vec<String> = SECRETS.iter().map(|s| (*s).to_owned()).collect();
    forbidden.extend(http(&mut texts, &store));
    forbidden.extend(injection(&mut texts, &store));
    abi(&mut texts);
    cli(&mut texts, &dir);
    // Digests of the right secret for a fixed challenge are derived secrets too.
    forbidden.push(
        String::from_utf8(hex_digest(&Secret::from(SECRETS[0]), b"<1.2@h>").to_vec()).unwrap(),
    );

    let log = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let lines = log.lines().count();
    assert!(
        lines > 20,
        "expected the scenarios to log, got {lines} lines:\n{log}"
    );
    assert!(log.contains("CRAM-MD5 authentication failed"), "{log}");
    assert!(texts.0.len() > 50);
    let _ = std::io::stderr().flush();
    for secret in &forbidden {
        assert!(
            !log.contains(secret.as_str()),
            "secret {secret:?} found in logs:\n{log}"
        );
        for t in &texts.0 {
            assert!(
                !t.contains(secret.as_str()),
                "secret {secret:?} found in text: {t}"
            );
        }
    }
}
