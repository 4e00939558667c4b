//! Hot reload of the authorizer's ACL file: on SIGHUP and whenever the file
//! changes. The library swaps the new policy in atomically and keeps the last
//! good one when the file does not load; the agent logs why and serves on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use super::core::Agent;

/// Editors and `mv` produce bursts of events; one reload per burst.
const SETTLE: Duration = Duration::from_millis(200);

/// Why a reload runs.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    Sighup,
    FileChanged,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Sighup => "SIGHUP",
            Trigger::FileChanged => "file changed",
        }
    }
}

/// Installs the SIGHUP handler (always, so SIGHUP never terminates the
/// agent) and, when the authorizer reads a file, a watcher on that file's
/// directory (a directory watch sees files replaced by rename, as editors
/// and config managers do). Keep the returned watcher alive while serving.
pub fn start(agent: Arc<Agent>) -> anyhow::Result<Option<notify::RecommendedWatcher>> {
    let mut hangup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let (tx, mut rx) = mpsc::channel::<Trigger>(1);
    let on_hup = tx.clone();
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            // A full channel means a reload is already pending.
            let _ = on_hup.try_send(Trigger::Sighup);
        }
    });
    let file = agent
        .authorizer()
        .and_then(|a| a.file().map(Path::to_path_buf));
    let watcher = match &file {
        Some(file) => Some(watch(file, tx)?),
        None => None,
    };
    tokio::spawn(async move {
        while let Some(trigger) = rx.recv().await {
            tokio::time::sleep(SETTLE).await;
            while rx.try_recv().is_ok() {}
            let agent = Arc::clone(&agent);
            let _ = tokio::task::spawn_blocking(move || reload(&agent, trigger)).await;
        }
    });
    Ok(watcher)
}

fn watch(file: &Path, tx: mpsc::Sender<Trigger>) -> anyhow::Result<notify::RecommendedWatcher> {
    let name = file.file_name().map(|n| n.to_owned());
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        // Our file, or the `..data` symlink swap of a Kubernetes ConfigMap.
        let ours = event.paths.iter().any(|p| {
            let n = p.file_name();
            n == name.as_deref() || n.is_some_and(|n| n.to_string_lossy().starts_with(".."))
        });
        if ours {
            let _ = tx.try_send(Trigger::FileChanged);
        }
    })
    .context("creating the ACL file watcher")?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .with_context(|| format!("watching {}", dir.display()))?;
    tracing::info!(file = %file.display(), "watching the ACL file for changes");
    Ok(watcher)
}

fn reload(agent: &Agent, trigger: Trigger) {
    let Some(authorizer) = agent.authorizer() else {
        tracing::info!(
            trigger = trigger.as_str(),
            "no authorizer module: nothing to reload"
        );
        return;
    };
    let file = authorizer
        .file()
        .map(|f| f.display().to_string())
        .unwrap_or_else(|| "<inline>".into());
    match authorizer.reload() {
        Ok(()) => tracing::info!(trigger = trigger.as_str(), file, "ACLs reloaded"),
        Err(e) => tracing::warn!(
            trigger = trigger.as_str(),
            file,
            error = %e,
            "ACL reload failed; keeping the previous policy"
        ),
    }
}
