//! `/files/{browse,read,download}` (src/files/files.cpp:380-800): the query
//! parameters and JSON shapes of Mesos' `Files`; the sandbox lookup is
//! shared with LIST_FILES/READ_FILE in [`files`].

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::json;
use crate::cli::agent::api::files::{self, FilesError};
use crate::cli::agent::server::{Principal, Server};

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
pub(super) async fn files_browse(
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
pub(super) async fn files_read(
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
pub(super) async fn files_download(
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
        files::download(&agent, subject.as_ref(), &path).and_then(|(real, file)| {
            // The size at open is all that is sent: a file the tenant keeps
            // appending to (or a sparse `truncate -s 1T`) must not grow the
            // agent's memory or keep the response open forever.
            match file.metadata() {
                Ok(m) => Ok((real, file, m.len())),
                Err(e) => Err(FilesError::Unknown(format!(
                    "Failed to stat '{}': {e}",
                    real.display()
                ))),
            }
        })
    })
    .await;
    match found {
        Ok(Ok((real, file, size))) => {
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
                axum::body::Body::new(FileBody::start(file, size)),
            )
                .into_response()
        }
        Ok(Err(FilesError::Unauthorized)) => (
            StatusCode::FORBIDDEN,
            crate::cli::agent::server::FORBIDDEN_BODY,
        )
            .into_response(),
        Ok(Err(FilesError::NotFound)) => (StatusCode::NOT_FOUND, "404 Not Found.").into_response(),
        Ok(Err(e)) => files_error(e),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("worker failed: {e}"),
        )
            .into_response(),
    }
}

/// One read of a download: 64 KiB, as Mesos' `Files::read` caps a read.
const CHUNK: usize = 64 * 1024;

/// A download's body: `size` bytes of the file read in chunks on a blocking
/// worker and handed over a bounded channel, so at most a few chunks are in
/// memory whatever the file's size. Hand-rolled over the channel because the
/// harness has no `tokio-util` (`ReaderStream`) and tokio's `fs` would add a
/// feature for one use.
struct FileBody {
    chunks: tokio::sync::mpsc::Receiver<std::io::Result<axum::body::Bytes>>,
    remaining: u64,
}

impl FileBody {
    fn start(file: std::fs::File, size: u64) -> Self {
        let (tx, chunks) = tokio::sync::mpsc::channel(4);
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut file = file.take(size);
            let mut left = size;
            while left > 0 {
                let mut buf = vec![0; CHUNK.min(usize::try_from(left).unwrap_or(CHUNK))];
                let sent = match file.read(&mut buf) {
                    // Shrunk since the open: the body cannot keep its length.
                    Ok(0) => Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file shrank during the download",
                    )),
                    Ok(n) => {
                        buf.truncate(n);
                        left -= n as u64;
                        Ok(axum::body::Bytes::from(buf))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let failed = sent.is_err();
                // The client went away: stop reading.
                if tx.blocking_send(sent).is_err() || failed {
                    return;
                }
            }
        });
        FileBody {
            chunks,
            remaining: size,
        }
    }
}

impl http_body::Body for FileBody {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.remaining == 0 {
            return std::task::Poll::Ready(None);
        }
        self.chunks.poll_recv(cx).map(|chunk| match chunk {
            Some(Ok(bytes)) => {
                self.remaining = self.remaining.saturating_sub(bytes.len() as u64);
                Some(Ok(http_body::Frame::data(bytes)))
            }
            Some(Err(e)) => Some(Err(e)),
            None => Some(Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the download's reader stopped",
            ))),
        })
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}
