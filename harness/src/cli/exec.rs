//! `nestguard exec`: a command in a new nested container of a running
//! container, like `mesos task exec` — LAUNCH_NESTED_CONTAINER_SESSION for
//! the output, ATTACH_CONTAINER_INPUT for stdin (`-i`), a TTY with `-t`,
//! and the exit status from WAIT_NESTED_CONTAINER.
//!
//! stdin is streamed as it is read, with a HEARTBEAT every 30 s while it
//! is idle (the agent drops an input stream silent for 90 s). The local
//! terminal is not put in raw mode, nor is SIGWINCH forwarded: with `-t`
//! the window size is sent once.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use base64::Engine;
use nestguard::proto::mesos::v1::agent::{Call, ProcessIo, call, process_io};
use nestguard::proto::mesos::v1::{self, CommandInfo, ContainerInfo, TtyInfo, tty_info};

use super::client::{Credential, exit_status};
use super::process_io::{data_record, heartbeat_record};
use super::{out, recordio};

/// `nestguard exec` arguments.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The agent's address.
    #[arg(long, default_value = "http://127.0.0.1:5051")]
    agent: String,
    /// Principal for HTTP Basic authentication.
    #[arg(long)]
    principal: Option<String>,
    /// File holding the principal's secret.
    #[arg(long)]
    secret_file: Option<PathBuf>,
    /// Send this process' stdin to the command.
    #[arg(short, long)]
    interactive: bool,
    /// Run the command on a TTY (stdout and stderr merged).
    #[arg(short, long)]
    tty: bool,
    /// The (dotted) ID of the container to run in.
    container: String,
    /// The command (run by `/bin/sh -c` when it is one word with spaces).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

fn container_id(dotted: &str) -> v1::ContainerId {
    let mut id: Option<v1::ContainerId> = None;
    for part in dotted.split('.') {
        id = Some(v1::ContainerId {
            value: part.to_owned(),
            parent: id.map(Box::new),
        });
    }
    id.unwrap_or_default()
}

fn credential(principal: Option<String>, secret: Option<PathBuf>) -> anyhow::Result<Credential> {
    Ok(match (principal, secret) {
        (Some(principal), Some(path)) => {
            let secret = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Credential::Basic {
                principal,
                secret: secret.trim_end().to_owned(),
            }
        }
        (None, None) => Credential::None,
        _ => bail!("--principal and --secret-file go together"),
    })
}

/// The window size of this process' terminal, or 24x80.
fn window_size() -> tty_info::WindowSize {
    match rustix::termios::tcgetwinsize(std::io::stdout()) {
        Ok(w) if w.ws_row > 0 && w.ws_col > 0 => tty_info::WindowSize {
            rows: u32::from(w.ws_row),
            columns: u32::from(w.ws_col),
        },
        _ => tty_info::WindowSize {
            rows: 24,
            columns: 80,
        },
    }
}

fn input_call(id: &v1::ContainerId, io: Option<ProcessIo>) -> Call {
    use call::attach_container_input::Type;
    Call {
        r#type: Some(call::Type::AttachContainerInput as i32),
        attach_container_input: Some(call::AttachContainerInput {
            r#type: Some(if io.is_some() {
                Type::ProcessIo
            } else {
                Type::ContainerId
            } as i32),
            container_id: io.is_none().then(|| id.clone()),
            process_io: io,
        }),
        ..Default::default()
    }
}

fn stdin_record(data: Vec<u8>) -> ProcessIo {
    data_record(process_io::data::Type::Stdin, data)
}

/// How often an idle input stream carries a HEARTBEAT (Mesos'
/// `--http_heartbeat_interval` default, as `mesos task exec` sends them):
/// the agent closes an input stream silent for three of these.
const INPUT_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(30);

/// This process' stdin as ATTACH_CONTAINER_INPUT records, read as it
/// arrives (by a thread, so that an idle stdin still lets a HEARTBEAT out
/// every [`INPUT_HEARTBEAT`]): `pending` starts with the CONTAINER_ID (and
/// TTY_INFO) records; EOF is sent as an empty record on pipes, ^D on a TTY.
struct StdinRecords {
    id: v1::ContainerId,
    tty: bool,
    pending: Vec<u8>,
    pos: usize,
    done: bool,
    stdin: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    /// [`INPUT_HEARTBEAT`] (shorter in tests).
    heartbeat: std::time::Duration,
}

/// Reads this process' stdin on a thread; an empty chunk is EOF.
fn stdin_chunks() -> std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(4);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        loop {
            let read = std::io::stdin()
                .read(&mut chunk)
                .map(|n| chunk[..n].to_vec());
            let end = !matches!(&read, Ok(data) if !data.is_empty());
            if tx.send(read).is_err() || end {
                return;
            }
        }
    });
    rx
}

impl Read for StdinRecords {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.pos < self.pending.len() {
                let n = buf.len().min(self.pending.len() - self.pos);
                buf[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            let io = match self.stdin.recv_timeout(self.heartbeat) {
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    heartbeat_record(INPUT_HEARTBEAT)
                }
                Ok(Err(e)) => return Err(e),
                Ok(Ok(data)) if !data.is_empty() => stdin_record(data),
                // EOF (or the reader gone).
                Ok(Ok(_)) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    self.done = true;
                    stdin_record(if self.tty { vec![4] } else { Vec::new() })
                }
            };
            let call = input_call(&self.id, Some(io));
            self.pending = recordio::encode(nestguard::json::to_json(&call).as_bytes());
            self.pos = 0;
        }
    }
}

/// Runs `nestguard exec`.
pub fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let credential = credential(args.principal, args.secret_file)?;
    let auth = credential.header();
    let base = args.agent.trim_end_matches('/').to_owned();
    let http: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let post = |body: Vec<u8>, headers: &[(&str, &str)]| {
        let mut request = http.post(format!("{base}/api/v1"));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(h) = &auth {
            request = request.header("Authorization", h);
        }
        request.send(&body[..])
    };

    let id = session_id(&args.container)?;
    let session = session_call(&id, &args.command, args.tty);
    let mut response = post(
        nestguard::json::to_json(&session).into_bytes(),
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/recordio"),
            ("Message-Accept", "application/json"),
        ],
    )
    .with_context(|| format!("POST {base}/api/v1"))?;
    if response.status().as_u16() != 200 {
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        bail!("the agent refused the session: {status} {text}");
    }

    // stdin streams to the container as it is read, on its own connection.
    let input = args
        .interactive
        .then(|| spawn_input(&http, &base, auth.clone(), &id, args.tty));
    copy_output(response.body_mut().as_reader())?;

    // The input ends with the container (its stdin is gone); it is not
    // waited for, as stdin may never reach EOF.
    drop(input);
    let wait = Call {
        r#type: Some(call::Type::WaitNestedContainer as i32),
        wait_nested_container: Some(call::WaitNestedContainer { container_id: id }),
        ..Default::default()
    };
    let mut reply = post(
        nestguard::json::to_json(&wait).into_bytes(),
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
    )?;
    let body = reply.body_mut().read_to_string().unwrap_or_default();
    let status = exit_status(&body).with_context(|| format!("the WAIT answer: {body}"))?;
    Ok(shell_exit_code(status))
}

/// A fresh ID for the session, nested under `parent` (dotted).
fn session_id(parent: &str) -> anyhow::Result<v1::ContainerId> {
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).context("random container ID")?;
    let child = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(suffix);
    Ok(v1::ContainerId {
        value: format!("exec-{}", child.replace(['-', '_'], "x")),
        parent: Some(Box::new(container_id(parent))),
    })
}

/// LAUNCH_NESTED_CONTAINER_SESSION of `command` (one word: a shell
/// command; more: argv), with a TTY of this terminal's size if `tty`.
fn session_call(id: &v1::ContainerId, command: &[String], tty: bool) -> Call {
    let command = if command.len() == 1 {
        CommandInfo {
            shell: Some(true),
            value: Some(command[0].clone()),
            ..Default::default()
        }
    } else {
        CommandInfo {
            shell: Some(false),
            value: Some(command[0].clone()),
            arguments: command.to_vec(),
            ..Default::default()
        }
    };
    let container = tty.then(|| ContainerInfo {
        r#type: v1::container_info::Type::Mesos as i32,
        tty_info: Some(TtyInfo {
            window_size: Some(window_size()),
        }),
        ..Default::default()
    });
    Call {
        r#type: Some(call::Type::LaunchNestedContainerSession as i32),
        launch_nested_container_session: Some(call::LaunchNestedContainerSession {
            container_id: id.clone(),
            command: Some(command),
            container,
        }),
        ..Default::default()
    }
}

/// Streams this process' stdin to the session as ATTACH_CONTAINER_INPUT
/// on its own connection (with the window size first on a TTY).
fn spawn_input(
    http: &ureq::Agent,
    base: &str,
    auth: Option<String>,
    id: &v1::ContainerId,
    tty: bool,
) -> std::thread::JoinHandle<()> {
    let mut first = recordio::encode(nestguard::json::to_json(&input_call(id, None)).as_bytes());
    if tty {
        let control = ProcessIo {
            r#type: Some(process_io::Type::Control as i32),
            data: None,
            control: Some(process_io::Control {
                r#type: Some(process_io::control::Type::TtyInfo as i32),
                tty_info: Some(TtyInfo {
                    window_size: Some(window_size()),
                }),
                heartbeat: None,
            }),
        };
        first.extend(recordio::encode(
            nestguard::json::to_json(&input_call(id, Some(control))).as_bytes(),
        ));
    }
    let records = StdinRecords {
        id: id.clone(),
        tty,
        pending: first,
        pos: 0,
        done: false,
        stdin: stdin_chunks(),
        heartbeat: INPUT_HEARTBEAT,
    };
    let http = http.clone();
    let url = format!("{base}/api/v1");
    std::thread::spawn(move || {
        let mut request = http
            .post(url)
            .header("Content-Type", "application/recordio")
            .header("Message-Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(h) = &auth {
            request = request.header("Authorization", h);
        }
        match request.send(ureq::SendBody::from_owned_reader(records)) {
            Ok(mut reply) if reply.status().as_u16() != 200 => {
                let text = reply.body_mut().read_to_string().unwrap_or_default();
                tracing::warn!(
                    status = reply.status().as_u16(),
                    text,
                    "the agent refused the input"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "sending the input failed"),
        }
    })
}

/// Copies the session's output records to stdout and stderr until it ends.
fn copy_output(mut reader: impl Read) -> anyhow::Result<()> {
    let mut decoder = recordio::Decoder::new(16 << 20);
    let mut buf = vec![0u8; 16 * 1024];
    // Through `out`: a closed stdout drops the output, never panics or
    // ends the session (its exit code is still the command's).
    loop {
        let n = reader.read(&mut buf).context("reading the session")?;
        if n == 0 {
            break;
        }
        for record in decoder.feed(&buf[..n])? {
            let io: ProcessIo = nestguard::json::from_json(&String::from_utf8_lossy(&record))
                .context("a ProcessIO record")?;
            let Some(data) = io.data else { continue };
            match data.r#type() {
                process_io::data::Type::Stderr => out::write_stderr_bytes(data.data()),
                _ => out::write_stdout_bytes(data.data()),
            }
        }
    }
    Ok(())
}

/// A wait status as a shell reports it: the exit code, or 128 + the signal.
fn shell_exit_code(status: i32) -> ExitCode {
    let code = if status & 0x7f == 0 {
        (status >> 8) & 0xff
    } else {
        128 + (status & 0x7f)
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(r: &mut StdinRecords) -> Vec<ProcessIo> {
        let mut buf = vec![0u8; 64 * 1024];
        let n = r.read(&mut buf).unwrap();
        recordio::Decoder::new(1 << 20)
            .feed(&buf[..n])
            .unwrap()
            .iter()
            .map(|rec| {
                let call: Call =
                    nestguard::json::from_json(std::str::from_utf8(rec).unwrap()).unwrap();
                call.attach_container_input.unwrap().process_io.unwrap()
            })
            .collect()
    }

    /// An idle stdin sends heartbeats; data and EOF follow as they come.
    #[test]
    fn idle_input_carries_heartbeats() {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let mut input = StdinRecords {
            id: container_id("pod"),
            tty: false,
            pending: Vec::new(),
            pos: 0,
            done: false,
            stdin: rx,
            heartbeat: std::time::Duration::ZERO,
        };
        let io = records(&mut input);
        assert_eq!(io[0].r#type(), process_io::Type::Control);
        assert_eq!(
            io[0].control.as_ref().unwrap().r#type(),
            process_io::control::Type::Heartbeat
        );
        tx.send(Ok(b"hi".to_vec())).unwrap();
        // The heartbeat may win the race once more; the data comes next.
        let mut data = records(&mut input);
        if data[0].r#type() == process_io::Type::Control {
            data = records(&mut input);
        }
        assert_eq!(data[0].data.as_ref().unwrap().data(), b"hi");
        drop(tx);
        let eof = records(&mut input);
        assert_eq!(eof[0].data.as_ref().unwrap().data(), b"");
        assert_eq!(input.read(&mut [0u8; 16]).unwrap(), 0);
    }
}
