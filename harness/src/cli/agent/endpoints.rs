//! The HTTP endpoints operators use besides `/api/v1`, in Mesos' shapes:
//! `/health` (src/slave/http.cpp:1016: 200, empty body, no
//! authentication), `/version` (libprocess' VersionProcess: a JSON object
//! of the version info), `/flags` (:955-1000: `{"flags": {...}}`, VIEW_FLAGS
//! or 403), `/state` (:1380, the frameworks and executors the principal
//! may view), `/metrics/snapshot` (a flat JSON object of metric values)
//! and `/files/{browse,read,download}` (src/files/files.cpp:380-800; the
//! sandbox lookup is shared with LIST_FILES/READ_FILE in [`files`]).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Extension, State};
use axum::http::Uri;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use nestguard::proto::mesos::authorization::{Action, Object};

use super::api::files::{self, FilesError};
use super::api::{AgentDetails, version_info};
use super::http::{Principal, Server};
use super::negotiation::APPLICATION_JSON;

fn json(value: &serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, APPLICATION_JSON)],
        value.to_string(),
    )
        .into_response()
}

/// The open endpoints (no authentication, as in Mesos). The agent's own
/// endpoints answer with and without libprocess' `/slave(1)` prefix.
pub fn open_routes() -> Router<Arc<Server>> {
    Router::new()
        .route("/health", any(|| async { StatusCode::OK }))
        .route("/slave(1)/health", any(|| async { StatusCode::OK }))
        .route(
            "/version",
            get(|| async { json(&nestguard::json::to_json_value(&version_info())) }),
        )
}

/// The endpoints behind the front door.
pub fn authenticated_routes() -> Router<Arc<Server>> {
    Router::new()
        .route("/flags", get(flags))
        .route("/slave(1)/flags", get(flags))
        .route("/state", get(state))
        .route("/slave(1)/state", get(state))
        .route("/metrics/snapshot", get(metrics))
        .route("/files/browse", get(files_browse))
        .route("/files/read", get(files_read))
        .route("/files/download", get(files_download))
}

fn flag_object(details: &AgentDetails) -> serde_json::Value {
    serde_json::Value::Object(
        details
            .flags
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}

async fn flags(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
) -> Response {
    match server
        .agent
        .authorize_action(subject.as_ref(), Action::ViewFlags, None)
    {
        Ok(()) => json(&serde_json::json!({ "flags": flag_object(&server.details) })),
        Err(e) => e.into_response(),
    }
}

async fn metrics(State(server): State<Arc<Server>>) -> Response {
    let snapshot: serde_json::Map<String, serde_json::Value> = server
        .metrics
        .snapshot()
        .into_iter()
        .map(|(k, v)| (k, serde_json::json!(v)))
        .collect();
    json(&serde_json::Value::Object(snapshot))
}

async fn state(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
) -> Response {
    let agent = &server.agent;
    let subject = subject.as_ref();
    let mut frameworks: Vec<serde_json::Value> = Vec::new();
    for e in agent.running_executors() {
        let framework = Object {
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        if !agent.may_view(subject, Action::ViewFramework, framework) {
            continue;
        }
        let executor = Object {
            executor_info: Some(e.executor.clone()),
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        let executors = if agent.may_view(subject, Action::ViewExecutor, executor) {
            let (mut tasks, mut completed) = (Vec::new(), Vec::new());
            for task in super::api::tasks::tasks_of(agent.agent_id(), &e) {
                let object = Object {
                    task: Some(task.clone()),
                    framework_info: Some(e.framework.clone()),
                    ..Default::default()
                };
                if !agent.may_view(subject, Action::ViewTask, object) {
                    continue;
                }
                let entry = serde_json::json!({
                    "id": task.task_id.value,
                    "name": task.name,
                    "state": task.state().as_str_name(),
                });
                if super::api::tasks::is_terminal(task.state()) {
                    completed.push(entry);
                } else {
                    tasks.push(entry);
                }
            }
            vec![serde_json::json!({
                "id": e.executor.executor_id.value,
                "name": e.executor.name,
                "container": e.container_id.value,
                "directory": e.sandbox.to_string_lossy(),
                "tasks": tasks,
                "completed_tasks": completed,
            })]
        } else {
            Vec::new()
        };
        frameworks.push(serde_json::json!({
            "id": e.framework.id.as_ref().map(|id| id.value.clone()),
            "name": e.framework.name,
            "user": e.framework.user,
            "principal": e.framework.principal,
            "executors": executors,
        }));
    }
    let details = &server.details;
    let start_time = details
        .started
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut body = serde_json::json!({
        "version": version_info().version,
        "id": agent.agent_id(),
        "hostname": details.hostname,
        "port": details.port,
        "start_time": start_time,
        "frameworks": frameworks,
        "completed_frameworks": [],
    });
    // Mesos shows the flags only to those who may view them.
    if agent
        .authorize_action(subject, Action::ViewFlags, None)
        .is_ok()
    {
        body["flags"] = flag_object(details);
    }
    json(&body)
}

/// The query's parameters, decoded (`+` is a space, as in forms).
fn query(uri: &Uri) -> std::collections::HashMap<String, String> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn bad(message: impl Into<String>) -> Response {
    (StatusCode::BAD_REQUEST, message.into()).into_response()
}

/// The required `path` parameter, or the 400 without it (files.cpp:385-388).
fn path_param(params: &std::collections::HashMap<String, String>) -> Result<String, Box<Response>> {
    match params.get("path") {
        Some(p) if !p.is_empty() => Ok(p.clone()),
        _ => Err(Box::new(bad("Expecting 'path=value' in query.\n"))),
    }
}

/// The endpoints' answer to a `FilesError` (files.cpp:397-412): the
/// message as the body.
fn files_error(e: FilesError) -> Response {
    e.into_api_response()
}

/// `/files/browse?path=`: a JSON array of `model(FileInfo)`.
async fn files_browse(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    uri: Uri,
) -> Response {
    let path = match path_param(&query(&uri)) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let agent = Arc::clone(&server.agent);
    let listed =
        tokio::task::spawn_blocking(move || files::browse(&agent, subject.as_ref(), &path)).await;
    match listed {
        Ok(Ok(infos)) => json(&serde_json::Value::Array(
            infos.iter().map(file_model).collect(),
        )),
        Ok(Err(e)) => files_error(e),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("worker failed: {e}"),
        )
            .into_response(),
    }
}

/// `model(FileInfo)` (src/common/http.cpp:744-789): mtime in seconds and
/// the mode as `ls` shows it.
fn file_model(info: &nestguard::proto::mesos::v1::FileInfo) -> serde_json::Value {
    let mode = info.mode.unwrap_or(0);
    let kind = match mode & libc::S_IFMT {
        libc::S_IFDIR => 'd',
        libc::S_IFCHR => 'c',
        libc::S_IFBLK => 'b',
        libc::S_IFIFO => 'p',
        libc::S_IFLNK => 'l',
        libc::S_IFSOCK => 's',
        _ => '-',
    };
    let mut text = String::from(kind);
    for (bit, c) in [
        (0o400, 'r'),
        (0o200, 'w'),
        (0o100, 'x'),
        (0o040, 'r'),
        (0o020, 'w'),
        (0o010, 'x'),
        (0o004, 'r'),
        (0o002, 'w'),
        (0o001, 'x'),
    ] {
        text.push(if mode & bit != 0 { c } else { '-' });
    }
    serde_json::json!({
        "path": info.path,
        "nlink": info.nlink.unwrap_or(0),
        "size": info.size.unwrap_or(0),
        "mtime": info.mtime.as_ref().map(|t| t.nanoseconds / 1_000_000_000).unwrap_or(0),
        "mode": text,
        "uid": info.uid.clone().unwrap_or_default(),
        "gid": info.gid.clone().unwrap_or_default(),
    })
}

/// A `-1`-or-more parameter (files.cpp:514-553); None when absent.
fn signed_param(
    params: &std::collections::HashMap<String, String>,
    name: &str,
) -> Result<Option<i64>, Box<Response>> {
    let Some(value) = params.get(name) else {
        return Ok(None);
    };
    let n: i64 = value
        .trim()
        .parse()
        .map_err(|e| Box::new(bad(format!("Failed to parse {name}: {e}.\n"))))?;
    if n < -1 {
        return Err(Box::new(bad(format!("Negative {name} provided: {n}.\n"))));
    }
    Ok(Some(n))
}

/// `/files/read?path=&offset=&length=`: `{"offset": N, "data": "..."}`;
/// without an offset (or -1), the file's size and no data.
async fn files_read(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    uri: Uri,
) -> Response {
    let params = query(&uri);
    let path = match path_param(&params) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let (offset, length) = match (
        signed_param(&params, "offset"),
        signed_param(&params, "length"),
    ) {
        (Ok(o), Ok(l)) => (o.unwrap_or(-1), l.filter(|l| *l > -1)),
        (Err(r), _) | (_, Err(r)) => return *r,
    };
    let (start, length) = if offset == -1 {
        (0, Some(0))
    } else {
        (offset.unsigned_abs(), length.map(i64::unsigned_abs))
    };
    let agent = Arc::clone(&server.agent);
    let got = tokio::task::spawn_blocking(move || {
        files::read(&agent, subject.as_ref(), start, length, &path)
    })
    .await;
    match got {
        Ok(Ok((size, data))) => {
            let shown_offset = if offset == -1 { size } else { start };
            json(&serde_json::json!({
                "offset": shown_offset,
                "data": String::from_utf8_lossy(&data),
            }))
        }
        Ok(Err(e)) => files_error(e),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("worker failed: {e}"),
        )
            .into_response(),
    }
}

/// `/files/download?path=`: the file itself, as an attachment
/// (files.cpp:738-793; 403 and 404 with libprocess' default bodies).
async fn files_download(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    uri: Uri,
) -> Response {
    let path = match path_param(&query(&uri)) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let agent = Arc::clone(&server.agent);
    let found = tokio::task::spawn_blocking(move || {
        files::download(&agent, subject.as_ref(), &path).and_then(|real| {
            match std::fs::read(&real) {
                Ok(bytes) => Ok((real, bytes)),
                Err(e) => Err(FilesError::Unknown(format!(
                    "Failed to read '{}': {e}",
                    real.display()
                ))),
            }
        })
    })
    .await;
    match found {
        Ok(Ok((real, bytes))) => {
            let name = real
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
                    (
                        header::CONTENT_DISPOSITION,
                        format!("attachment; filename={name}"),
                    ),
                ],
                bytes,
            )
                .into_response()
        }
        Ok(Err(FilesError::Unauthorized)) => {
            (StatusCode::FORBIDDEN, super::http::FORBIDDEN_BODY).into_response()
        }
        Ok(Err(FilesError::NotFound)) => (StatusCode::NOT_FOUND, "404 Not Found.").into_response(),
        Ok(Err(e)) => files_error(e),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("worker failed: {e}"),
        )
            .into_response(),
    }
}
