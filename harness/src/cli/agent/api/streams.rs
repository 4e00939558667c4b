//! The debug-session calls (src/slave/http.cpp:3868-4494):
//! LAUNCH_NESTED_CONTAINER_SESSION, ATTACH_CONTAINER_OUTPUT and
//! ATTACH_CONTAINER_INPUT, served by the agent's switchboards
//! ([`crate::cli::agent::core::Switchboard`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nestguard::container_id::{self, to_dotted};
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::mesos::v1::agent::{Call, ProcessIo, call, process_io};
use nestguard::proto::mesos::{self, ContainerId};
use tokio::sync::mpsc;

use super::blocking;
use crate::cli::agent::core::{Agent, ApiError, Chunk, Launched, require_debug_sessions};
use crate::cli::agent::negotiation::{
    APPLICATION_RECORDIO, ContentType, Format, MESSAGE_CONTENT_TYPE, MediaTypes, decode_call,
};
use crate::cli::process_io::{data_record, heartbeat_record};
use crate::cli::recordio;
use crate::cli::wire::twin;

/// Mesos' `--http_heartbeat_interval` default (src/slave/flags.cpp:401-407).
const HEARTBEAT: Duration = Duration::from_secs(30);

/// How long a session's container may take to exit once its output ended
/// before it is destroyed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How long an input stream may stay silent: three of Mesos' heartbeat
/// intervals (clients send heartbeats on an idle input).
const INPUT_IDLE: Duration = Duration::from_secs(90);

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (status, body.into()).into_response()
}

/// 404 unless an executor owns the container (the switchboard's calls look
/// the executor up first, as Mesos' `getExecutor(containerId)`).
fn owned_by_executor(agent: &Agent, id: &ContainerId) -> Result<(), ApiError> {
    match agent.executor(&container_id::root(id).value) {
        Some(_) => Ok(()),
        None => Err(ApiError::NotFound(format!(
            "Container {} cannot be found",
            to_dotted(id)
        ))),
    }
}

/// The streaming calls; `kind` is one of them.
pub(super) async fn serve(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    kind: call::Type,
    call: Call,
    media: MediaTypes,
) -> Result<Response, ApiError> {
    require_debug_sessions()?;
    match kind {
        call::Type::AttachContainerOutput => {
            let id: ContainerId = call
                .attach_container_output
                .map(|a| twin(&a.container_id))
                .ok_or_else(|| {
                    ApiError::BadRequest("Expecting 'attach_container_output' to be present".into())
                })?;
            attach_output(agent, subject, &id, media, None)
        }
        call::Type::LaunchNestedContainerSession => {
            launch_session(agent, subject, call, media).await
        }
        // A streaming request is routed to [`attach_input`] with its body;
        // a single-message one has no records to forward.
        _ => Err(ApiError::BadRequest(
            "Expecting 'Content-Type' to be 'application/recordio' for ATTACH_CONTAINER_INPUT"
                .into(),
        )),
    }
}

/// ATTACH_CONTAINER_OUTPUT (:4454): authorized on the executor, framework
/// and container; a stream of ProcessIO records. `on_close` runs when the
/// stream is dropped (the client went away or the output ended).
fn attach_output(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    id: &ContainerId,
    media: MediaTypes,
    on_close: Option<Box<dyn FnOnce(bool) + Send>>,
) -> Result<Response, ApiError> {
    owned_by_executor(agent, id)?;
    agent.require_container(subject, Action::AttachContainerOutput, id, None)?;
    let key = to_dotted(id);
    let Some(board) = agent.switchboard(&key) else {
        if agent.runs(&key) {
            return Err(ApiError::Internal(
                "I/O switchboard server was disabled for this container".into(),
            ));
        }
        return Err(ApiError::NotFound(format!(
            "Container {key} cannot be found"
        )));
    };
    let format = media.message_accept.unwrap_or(media.response_format());
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.reset();
    let stream = OutputStream {
        chunks: board.subscribe()?,
        ended: false,
        format,
        heartbeat,
        on_close,
    };
    let mut response = Response::new(Body::new(stream));
    let headers = response.headers_mut();
    if media.accept == ContentType::RecordIo {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(APPLICATION_RECORDIO),
        );
        headers.insert(
            MESSAGE_CONTENT_TYPE,
            HeaderValue::from_static(format.media_type()),
        );
    } else {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(format.media_type()),
        );
    }
    Ok(response)
}

/// LAUNCH_NESTED_CONTAINER_SESSION (:4207-4340): a DEBUG nested container
/// whose output is the response; it is destroyed when the stream ends or
/// the client closes the connection.
async fn launch_session(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    call: Call,
    media: MediaTypes,
) -> Result<Response, ApiError> {
    let session = call.launch_nested_container_session.ok_or_else(|| {
        ApiError::BadRequest("Expecting 'launch_nested_container_session' to be present".into())
    })?;
    let id: ContainerId = twin(&session.container_id);
    let command: Option<mesos::CommandInfo> = session.command.map(|c| twin(&c));
    let container: Option<mesos::ContainerInfo> = session.container.map(|c| twin(&c));
    if container
        .as_ref()
        .and_then(|c| c.linux_info.as_ref())
        .and_then(|l| l.share_cgroups)
        == Some(false)
    {
        // src/slave/validation.cpp:328-334.
        return Err(ApiError::BadRequest(
            "'share_cgroups' cannot be set to 'false' for nested containers launched as sessions"
                .into(),
        ));
    }
    let for_authz = command.clone().unwrap_or_default();
    agent.require_container(
        subject,
        Action::LaunchNestedContainerSession,
        &id,
        Some(&for_authz),
    )?;
    let launcher = Arc::clone(agent);
    let launch_id = id.clone();
    let launched =
        blocking(move || launcher.launch_session(&launch_id, command, container)).await?;
    if launched == Launched::Already {
        return Ok(StatusCode::ACCEPTED.into_response());
    }
    let destroyer = Arc::clone(agent);
    let destroy_id = id.clone();
    // `ended`: the output ended (the container is exiting), so it gets a
    // moment to exit on its own and keep its exit status.
    let destroy = move |ended: bool| {
        // Off the async workers: a kill goes through the launcher module.
        std::thread::spawn(move || {
            let key = to_dotted(&destroy_id);
            let deadline = std::time::Instant::now() + EXIT_GRACE;
            while ended && destroyer.runs(&key) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if destroyer.runs(&key) {
                tracing::info!(container_id = %to_dotted(&destroy_id), "session closed; destroying its container");
                let _ = destroyer.kill(&destroy_id, libc::SIGKILL);
            }
        });
    };
    match attach_output(agent, subject, &id, media, Some(Box::new(destroy.clone()))) {
        Ok(response) => Ok(response),
        Err(e) => {
            destroy(false);
            Err(e)
        }
    }
}

/// A streamed RecordIO request body, record by record: each record at most
/// `max` bytes, each within `idle` of the previous one.
struct Records {
    body: Body,
    decoder: recordio::Decoder,
    ready: std::collections::VecDeque<Vec<u8>>,
    idle: Duration,
}

impl Records {
    async fn next(&mut self) -> Result<Option<Vec<u8>>, ApiError> {
        use http_body_util::BodyExt;
        loop {
            if let Some(record) = self.ready.pop_front() {
                return Ok(Some(record));
            }
            match tokio::time::timeout(self.idle, self.body.frame()).await {
                Err(_) => {
                    return Err(ApiError::BadRequest(format!(
                        "No input record within {} s",
                        self.idle.as_secs()
                    )));
                }
                Ok(None) => {
                    self.decoder.finish().map_err(|e| {
                        ApiError::BadRequest(format!("Failed to decode the input stream: {e}"))
                    })?;
                    return Ok(None);
                }
                Ok(Some(Err(e))) => {
                    return Err(ApiError::BadRequest(format!(
                        "Failed to read the input stream: {e}"
                    )));
                }
                Ok(Some(Ok(frame))) => {
                    let Ok(chunk) = frame.into_data() else {
                        continue; // trailers
                    };
                    let records = self.decoder.feed(&chunk).map_err(|e| {
                        ApiError::BadRequest(format!("Failed to decode the input stream: {e}"))
                    })?;
                    self.ready.extend(records);
                }
            }
        }
    }
}

/// ATTACH_CONTAINER_INPUT (:3974, server :1652-1800), a streamed request:
/// the first record names the container, the others are PROCESS_IO
/// records forwarded as they arrive. The input slot is held until the
/// stream ends.
pub async fn attach_input(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    media: MediaTypes,
    body: Body,
    limits: crate::cli::agent::server::BodyLimits,
) -> Response {
    let mut records = Records {
        body,
        decoder: recordio::Decoder::new(limits.max),
        ready: Default::default(),
        idle: limits.read_timeout.max(INPUT_IDLE),
    };
    match attach_input_records(agent, subject, media, &mut records).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn attach_input_records(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    media: MediaTypes,
    records: &mut Records,
) -> Result<Response, ApiError> {
    use call::attach_container_input::Type as InputType;
    require_debug_sessions()?;
    // Decoded (and validated) as a collected body's first record would be.
    let decode = |record: Option<Vec<u8>>| {
        let framed = record.map(|r| recordio::encode(&r)).unwrap_or_default();
        decode_call(&media, &framed).map_err(|r| (r.0, r.1))
    };
    let first = match decode(records.next().await?) {
        Ok(call) => call,
        Err((status, text_body)) => return Ok(text(status, text_body)),
    };
    let attach = first.attach_container_input.unwrap_or_default();
    if attach.r#type() != InputType::ContainerId {
        return Err(ApiError::BadRequest(
            "Expecting 'attach_container_input.type' to be CONTAINER_ID".into(),
        ));
    }
    let id: ContainerId = attach.container_id.as_ref().map(twin).ok_or_else(|| {
        ApiError::BadRequest("Expecting 'attach_container_input.container_id' to be present".into())
    })?;
    owned_by_executor(agent, &id)?;
    agent.require_container(subject, Action::AttachContainerInput, &id, None)?;
    let key = to_dotted(&id);
    let Some(board) = agent.switchboard(&key) else {
        if agent.runs(&key) {
            return Err(ApiError::Internal(
                "I/O switchboard server was disabled for this container".into(),
            ));
        }
        return Err(ApiError::NotFound(format!(
            "Container {key} cannot be found"
        )));
    };
    let Some(slot) = board.take_input() else {
        return Ok(text(
            StatusCode::CONFLICT,
            "Multiple input connections are not allowed",
        ));
    };
    while let Some(record) = records.next().await? {
        let call = decode(Some(record)).map_err(|(_, t)| ApiError::BadRequest(t))?;
        let Some(io) = call
            .attach_container_input
            .filter(|a| a.r#type() == InputType::ProcessIo)
            .and_then(|a| a.process_io)
        else {
            return Err(ApiError::BadRequest(
                "Expecting 'attach_container_input.type' to be PROCESS_IO".into(),
            ));
        };
        forward(&slot, io).await?;
    }
    drop(slot);
    // Mesos answers 1 s later when the output already ended (:1775-1790).
    if board.output_ended() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(StatusCode::OK.into_response())
}

/// One PROCESS_IO record to the container.
async fn forward(slot: &crate::cli::agent::core::InputSlot, io: ProcessIo) -> Result<(), ApiError> {
    match io.r#type() {
        process_io::Type::Data => {
            let data = io.data.unwrap_or_default();
            if data.r#type() != process_io::data::Type::Stdin {
                return Err(ApiError::BadRequest(
                    "Expecting 'process_io.data.type' to be STDIN".into(),
                ));
            }
            let bytes = data.data.unwrap_or_default();
            slot.write_stdin(bytes).await.map_err(|e| {
                ApiError::Internal(format!("Failed to write to the container's stdin: {e}"))
            })
        }
        process_io::Type::Control => {
            let control = io.control.unwrap_or_default();
            match control.r#type() {
                process_io::control::Type::TtyInfo => {
                    let size = control
                        .tty_info
                        .and_then(|t| t.window_size)
                        .unwrap_or_default();
                    slot.set_window_size(size.rows, size.columns).map_err(|e| {
                        ApiError::BadRequest(format!("Unable to set the window size: {e}"))
                    })
                }
                _ => Ok(()), // HEARTBEAT (and UNKNOWN) are ignored.
            }
        }
        process_io::Type::Unknown => Err(ApiError::BadRequest(
            "Expecting 'process_io.type' to be DATA or CONTROL".into(),
        )),
    }
}

/// The output of a switchboard as RecordIO-framed ProcessIO records, with
/// a heartbeat now and then; ends when the output ends.
struct OutputStream {
    chunks: mpsc::Receiver<Chunk>,
    /// The output ended (rather than the client going away).
    ended: bool,
    format: Format,
    heartbeat: tokio::time::Interval,
    on_close: Option<Box<dyn FnOnce(bool) + Send>>,
}

impl Drop for OutputStream {
    fn drop(&mut self) {
        if let Some(close) = self.on_close.take() {
            close(self.ended);
        }
    }
}

impl http_body::Body for OutputStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let record = match self.chunks.poll_recv(cx) {
            Poll::Ready(Some(Chunk::Stdout(d))) => data_record(process_io::data::Type::Stdout, d),
            Poll::Ready(Some(Chunk::Stderr(d))) => data_record(process_io::data::Type::Stderr, d),
            Poll::Ready(None) => {
                self.ended = true;
                return Poll::Ready(None);
            }
            Poll::Pending => match self.heartbeat.poll_tick(cx) {
                Poll::Ready(_) => heartbeat_record(HEARTBEAT),
                Poll::Pending => return Poll::Pending,
            },
        };
        Poll::Ready(Some(Ok(self.format.record_frame(&record))))
    }
}
