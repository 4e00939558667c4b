//! `nestguard agent`: a simulated Mesos agent that loads libnestguard.so
//! from a Mesos modules manifest, as a real agent would, and serves the
//! agent API's container calls with authentication and authorization.
//!
//! It exists to exercise the library exactly as Mesos uses it: every module
//! call goes through the C ABI ([`abi`]); only wire types, JSON and request
//! validation come from the Rust crate.

pub mod abi;
mod call_validation;
mod core;
mod decision;
mod door;
pub mod flags;
mod http;
pub mod manifest;
mod media;
mod paths;
mod pod_admission;
mod reload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};

use self::abi::{
    Abi, Authorizer, CredentialInjector, Credentials, HttpAuthenticator, Isolator, Launcher,
};
use self::core::{Agent, Modules};
use self::flags::{AgentFlags, LauncherKind};
use self::manifest::ModuleSpec;

/// The module names libnestguard.so provides.
pub const AUTHORIZER_MODULE: &str = "io_nestguard_Authorizer";
/// The isolator module.
pub const ISOLATOR_MODULE: &str = "io_nestguard_Isolator";
/// The credential hook module.
pub const HOOK_MODULE: &str = "io_nestguard_CredentialHook";

fn find<'a>(specs: &'a [ModuleSpec], name: &str) -> anyhow::Result<&'a ModuleSpec> {
    specs
        .iter()
        .find(|s| s.name == name)
        .with_context(|| format!("Module '{name}' unknown"))
}

fn param<'a>(spec: &'a ModuleSpec, key: &str) -> Option<&'a str> {
    spec.parameters
        .iter()
        .rev()
        .find(|p| p.key == key)
        .map(|p| p.value.as_str())
}

/// The isolator module's parameters with the agent's own: `--cgroups_root`
/// (a manifest that says otherwise is an error, not silently overridden)
/// and `cgroups_owner`, naming this agent in the cgroup root's lock file so
/// that a second agent on the root is told who owns it.
fn isolator_parameters(
    manifest: &[nestguard::proto::mesos::Parameter],
    flags: &AgentFlags,
    layout: &paths::Layout,
) -> anyhow::Result<Vec<nestguard::proto::mesos::Parameter>> {
    let mut parameters = manifest.to_vec();
    let set = |key: &str| manifest.iter().rev().find(|p| p.key == key);
    if let Some(root) = &flags.cgroups_root {
        match set("cgroups_root") {
            Some(p) if p.value != *root => bail!(
                "--cgroups_root={root} contradicts {ISOLATOR_MODULE}'s parameter cgroups_root={} in --modules",
                p.value
            ),
            Some(_) => {}
            None => parameters.push(nestguard::proto::mesos::Parameter {
                key: "cgroups_root".into(),
                value: root.clone(),
            }),
        }
    }
    if set("cgroups_owner").is_none() {
        parameters.push(nestguard::proto::mesos::Parameter {
            key: "cgroups_owner".into(),
            value: format!(
                "nestguard agent {} (work dir {}, pid {})",
                layout.agent_id,
                layout.work_dir.display(),
                std::process::id()
            ),
        });
    }
    Ok(parameters)
}

/// The isolator's parameters with `disallow_sharing_agent_pid_namespace`
/// set from the agent flag of that name, so the isolator and the launcher
/// follow one policy. A manifest that says otherwise is refused rather
/// than silently overridden.
fn with_pid_sharing_policy(
    parameters: &[nestguard::proto::mesos::Parameter],
    disallow: bool,
) -> anyhow::Result<Vec<nestguard::proto::mesos::Parameter>> {
    const KEY: &str = "disallow_sharing_agent_pid_namespace";
    let wanted = disallow.to_string();
    if let Some(p) = parameters.iter().find(|p| p.key == KEY) {
        if p.value != wanted {
            bail!(
                "{ISOLATOR_MODULE}: parameter '{KEY}' is '{}' but the agent flag \
                 --{KEY} is '{wanted}'; set the flag instead",
                p.value
            );
        }
        return Ok(parameters.to_vec());
    }
    let mut out = parameters.to_vec();
    out.push(nestguard::proto::mesos::Parameter {
        key: KEY.to_owned(),
        value: wanted,
    });
    Ok(out)
}

/// Runs the agent until SIGINT/SIGTERM.
pub fn run(flags: AgentFlags) -> anyhow::Result<ExitCode> {
    if !flags.ip.is_loopback() {
        bail!(
            "nestguard agent serves on loopback only; --ip={} is not a loopback address",
            flags.ip
        );
    }
    let exe = std::env::current_exe().context("locating the nestguard executable")?;
    let exe_dir = exe.parent().map(PathBuf::from);
    let specs = match &flags.modules {
        Some(m) => manifest::read(m)?,
        None => Vec::new(),
    };
    let library = match (&flags.library, specs.first()) {
        (Some(path), _) => path.clone(),
        (None, Some(spec)) => manifest::resolve(&spec.library, exe_dir.as_deref()),
        (None, None) => crate::cli::library::default_path()?,
    };
    let abi = Abi::load(&library)?;
    tracing::info!(library = %abi.path().display(), "loaded libnestguard.so");

    let authorizer = match flags.authorizer.as_str() {
        "local" => None,
        name => {
            let spec = find(&specs, name)?;
            if spec.name != AUTHORIZER_MODULE {
                bail!("Module '{name}' is not an Authorizer module");
            }
            Some(Authorizer::create(&abi, &spec.parameters)?)
        }
    };
    let credentials = flags
        .http_credentials
        .as_deref()
        .map(|p| Credentials::load(&abi, p))
        .transpose()?;
    let mut injector = None;
    for name in AgentFlags::list(&flags.hooks) {
        let spec = find(&specs, &name)?;
        if spec.name != HOOK_MODULE {
            bail!("Module '{name}' is not a Hook module");
        }
        let mode = match param(spec, "mode").unwrap_or("auto") {
            "auto" => 0,
            "token" => 1,
            "secret" => 2,
            other => bail!(
                "{HOOK_MODULE}: parameter 'mode' must be auto, token or secret, not '{other}'"
            ),
        };
        let hook = CredentialInjector::create(
            &abi,
            mode,
            flags.jwt_secret_key.as_deref(),
            credentials.as_ref(),
            param(spec, "executor_principals"),
        )?;
        tracing::info!(
            mode = if hook.mode == 1 { "token" } else { "secret" },
            "credential hook ready"
        );
        injector = Some(hook);
    }
    std::fs::create_dir_all(&flags.work_dir)
        .with_context(|| format!("creating {}", flags.work_dir.display()))?;
    let layout = paths::Layout {
        work_dir: flags.work_dir.clone(),
        agent_id: paths::agent_id(&flags.work_dir)?,
    };
    let mut isolator = None;
    for name in AgentFlags::list(&flags.isolation) {
        match name.as_str() {
            ISOLATOR_MODULE => {
                let spec = find(&specs, &name)?;
                let parameters = with_pid_sharing_policy(
                    &isolator_parameters(&spec.parameters, &flags, &layout)?,
                    flags.disallow_sharing_agent_pid_namespace,
                )?;
                isolator = Some(Isolator::create(&abi, &parameters).with_context(|| {
                    format!(
                        "{ISOLATOR_MODULE} could not be created; nothing was recovered or destroyed"
                    )
                })?);
            }
            // Mesos' defaults: accepted, nothing to do in a simulated agent.
            "posix/cpu" | "posix/mem" => {}
            other => bail!(
                "Unknown or unsupported isolator '{other}' (supported: {ISOLATOR_MODULE}, posix/cpu, posix/mem)"
            ),
        }
    }
    let authenticator = if flags.authenticate_http_readwrite {
        Some(HttpAuthenticator::create(
            &abi,
            "mesos-agent-readwrite",
            credentials.as_ref(),
            flags.jwt_secret_key.as_deref(),
        )?)
    } else {
        None
    };

    let launcher_kind = flags.launcher();
    if launcher_kind == LauncherKind::Posix {
        tracing::warn!(
            "using the posix launcher: containers are plain processes without namespaces or cgroups"
        );
    }
    if isolator.is_none() && flags.cgroups_root.is_some() {
        tracing::warn!("--cgroups_root has no effect without {ISOLATOR_MODULE} in --isolation");
    }
    let runtime_dir = flags.runtime_dir();
    let helper = exe_dir.as_ref().map(|d| d.join("nestguard-launch"));
    let launcher = Launcher::create(
        &abi,
        &runtime_dir,
        helper.as_deref(),
        launcher_kind == LauncherKind::Posix,
        !flags.disallow_sharing_agent_pid_namespace,
        isolator.as_ref(),
    )?;

    let agent = Arc::new(Agent::new(
        Modules {
            authorizer,
            injector,
            isolator,
            launcher,
        },
        layout,
        exe,
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((flags.ip, flags.port))
            .await
            .with_context(|| format!("binding {}:{}", flags.ip, flags.port))?;
        let address = listener.local_addr()?;
        agent.set_endpoint(address.to_string());
        // Before recovery (which can take a while): from here on SIGHUP
        // reloads the ACLs instead of killing the agent.
        let _watcher = reload::start(Arc::clone(&agent))?;
        let recovering = Arc::clone(&agent);
        tokio::task::spawn_blocking(move || recovering.recover()).await??;
        println!("nestguard agent listening on http://{address} (launcher: {launcher_kind:?})");
        let server = Arc::new(http::Server {
            agent,
            authenticator,
            bodies: http::BodyLimits {
                unauthenticated: flags.max_unauthenticated_body_bytes,
                max: flags.max_body_bytes,
                read_timeout: flags.http_body_read_timeout,
            },
            per_subject: http::SubjectLimits::new(flags.max_requests_per_principal as usize),
        });
        let limits = door::Limits {
            header_read_timeout: flags.http_header_read_timeout,
            idle_timeout: flags.http_idle_timeout,
            max_connections: flags.max_http_connections,
            max_connections_per_peer: flags.max_http_connections_per_peer(),
        };
        door::serve(listener, http::router(server), limits, shutdown()).await;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
    tracing::info!("shutting down; containers keep running and are recovered at the next start");
}
