//! Interoperability of our CRAM-MD5 with the real Cyrus SASL (Debian
//! `sasl2-bin` + `libsasl2-modules`), in both directions, as separate
//! processes exchanging the `S: <base64>` / `C: <base64>` lines of Cyrus'
//! `sasl-sample-server` and `sasl-sample-client`.
//!
//! Procedure (what the tests do):
//! * a temp dir `nestguard-sasl-*` holds a sasldb made with
//!   `saslpasswd2 -p -c -f <dir>/sasldb2 -u nestguard tim` and a
//!   `sample.conf` (the sample server's application name is "sample") with
//!   `pwcheck_method: auxprop`, `auxprop_plugin: sasldb`,
//!   `sasldb_path: <dir>/sasldb2`, `mech_list: CRAM-MD5`; the server finds it
//!   through `SASL_CONF_PATH=<dir>` (the system /etc/sasldb2 is never used);
//! * `sasl-sample-server -s nestguard -m CRAM-MD5 -u nestguard` sends the
//!   mechanism, reads the client's choice, sends the challenge, reads the
//!   response, then prints `Negotiation complete` (exit 0 after one more
//!   message round) or exits non-zero with "authentication failure";
//! * `sasl-sample-client -s nestguard -m CRAM-MD5 -a tim -u tim` runs in a
//!   new session (no controlling tty), so its getpass() reads the password
//!   from stdin right after the challenge line;
//! * both run under `stdbuf -oL` because they write to a pipe with stdio.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use nestguard::credentials::cram_md5::{
    Authenticatee, Authenticator, ClientConfig, ClientOutcome, Message, ServerConfig, ServerOutcome,
};
use nestguard::credentials::{Credential, CredentialStore, Secret};
use nestguard::proto::mesos::internal::{
    AuthenticationMechanismsMessage, AuthenticationStartMessage,
};

const USER: &str = "tim";
const SECRET: &str = "nestguard-cyrus-tanstaaf";
const WRONG: &str = "nestguard-cyrus-wrong-secret";
const REALM: &str = "nestguard";
const WAIT: Duration = Duration::from_secs(15);

fn require(binary: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(binary).is_file()))
        .unwrap_or(false)
        || std::path::Path::new("/usr/sbin").join(binary).is_file();
    assert!(
        found,
        "{binary} not found: install the Debian packages sasl2-bin and libsasl2-modules \
         (listed in scripts/test-packages.txt)"
    );
}

/// A Cyrus sample process; killed and reaped on drop.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<std::sync::Mutex<String>>,
    stderr_done: Arc<std::sync::atomic::AtomicBool>,
    transcript: Vec<String>,
}

impl Peer {
    fn spawn(mut cmd: Command, new_session: bool) -> Peer {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if new_session {
            // SAFETY: setsid is async-signal-safe; nothing else runs in the child.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::setsid() < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().expect("spawn Cyrus sample program");
        let stdout = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        let stderr_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (sink, done) = (stderr.clone(), stderr_done.clone());
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr_pipe.read_to_string(&mut s);
            sink.lock().unwrap().push_str(&s);
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        Peer {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr,
            stderr_done,
            transcript: Vec::new(),
        }
    }

    /// The next `<prefix><base64>` line, decoded; None if the process ended.
    fn recv(&mut self, prefix: &str) -> Option<Vec<u8>> {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.transcript.push(line.clone());
                    if let Some(b64) = line.strip_prefix(prefix) {
                        return Some(STANDARD.decode(b64.trim()).expect("Cyrus sent base64"));
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(e) => panic!(
                    "no {prefix:?} line within {WAIT:?}: {e}; transcript {:?}",
                    self.transcript
                ),
            }
        }
    }

    fn send(&mut self, prefix: &str, data: &[u8], extra_line: Option<&str>) {
        let mut text = format!("{prefix}{}\n", STANDARD.encode(data));
        if let Some(extra) = extra_line {
            text.push_str(extra);
            text.push('\n');
        }
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).expect("write to Cyrus");
        stdin.flush().unwrap();
    }

    /// Waits until a line containing `needle` is printed (true) or the
    /// process closes its output (false); no fixed sleeps, so a loaded
    /// machine cannot turn a slow success into a failure.
    fn saw(&mut self, needle: &str) -> bool {
        if self.transcript.iter().any(|l| l.contains(needle)) {
            return true;
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.transcript.push(line);
                    if found {
                        return true;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return false,
                Err(e) => panic!(
                    "neither {needle:?} nor an exit within {WAIT:?}: {e}; transcript {:?}",
                    self.transcript
                ),
            }
        }
    }

    /// Closes stdin and waits for the exit status.
    fn finish(&mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "Cyrus process did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The stderr collected so far; once the process has exited, all of it.
    fn stderr(&mut self) -> String {
        if let Ok(Some(_)) = self.child.try_wait() {
            let deadline = Instant::now() + WAIT;
            while !self.stderr_done.load(std::sync::atomic::Ordering::SeqCst)
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Temp dir with a sasldb holding USER's SECRET and the sample server config.
fn sasl_dir(secret: &str) -> tempfile::TempDir {
    require("saslpasswd2");
    let dir = tempfile::Builder::new()
        .prefix("nestguard-sasl-")
        .tempdir()
        .unwrap();
    let db = dir.path().join("sasldb2");
    let mut child = Command::new("saslpasswd2")
        .args(["-p", "-c", "-f"])
        .arg(&db)
        .args(["-u", REALM, USER])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn saslpasswd2");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(secret.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "saslpasswd2 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(db.is_file());
    let conf = format!(
        "pwcheck_method: auxprop\nauxprop_plugin: sasldb\nsasldb_path: {}\nmech_list: CRAM-MD5\n",
        db.display()
    );
    std::fs::write(dir.path().join("sample.conf"), conf).unwrap();
    dir
}

fn cyrus_server(dir: &tempfile::TempDir) -> Peer {
    require("sasl-sample-server");
    let mut cmd = Command::new("stdbuf");
    cmd.args([
        "-oL",
        "sasl-sample-server",
        "-s",
        "nestguard",
        "-m",
        "CRAM-MD5",
        "-u",
        REALM,
    ])
    .env("SASL_CONF_PATH", dir.path());
    Peer::spawn(cmd, false)
}

/// Our authenticatee against the Cyrus server; returns (our outcome,
/// server exit success, server stdout transcript, server stderr).
fn our_client_vs_cyrus(stored: &str, secret: &str) -> (ClientOutcome, bool, Peer) {
    let dir = sasl_dir(stored);
    let mut server = cyrus_server(&dir);
    let now = Instant::now();
    let credential = Credential::new(USER, Secret::from(secret));
    let (mut client, first) = Authenticatee::new(
        credential,
        "agent@127.0.0.1:5051",
        ClientConfig::default(),
        now,
    );
    assert!(matches!(first.reply, Some(Message::Authenticate(_))));

    let mechs = server.recv("S: ").expect("mechanism list");
    let mechanisms = String::from_utf8(mechs)
        .unwrap()
        .split(' ')
        .map(str::to_owned)
        .collect();
    let step = client.receive(
        Message::Mechanisms(AuthenticationMechanismsMessage { mechanisms }),
        now,
    );
    let Some(Message::Start(start)) = step.reply else {
        panic!("expected start, got {step:?}")
    };
    assert_eq!(start.mechanism, "CRAM-MD5");
    server.send("C: ", start.mechanism.as_bytes(), None);

    let challenge = server.recv("S: ").expect("challenge");
    let step = client.receive(Message::step(challenge), now);
    let Some(Message::Step(response)) = step.reply else {
        panic!("expected response, got {step:?}")
    };
    server.send("C: ", &response.data, None);

    // The server's verdict: "Negotiation complete" or an error exit.
    // After "Negotiation complete" the sample server goes on to exchange
    // application messages, which are not part of the authentication; it is
    // stopped there. On failure it exits on its own with an error.
    let complete = server.saw("Negotiation complete");
    let verdict = if complete {
        Message::Completed
    } else {
        Message::Failed
    };
    let exited_with_error = if complete {
        false
    } else {
        !server.finish().success()
    };
    let outcome = client.receive(verdict, now).outcome.expect("settled");
    drop(dir);
    (outcome, complete && !exited_with_error, server)
}

#[test]
fn our_client_authenticates_against_cyrus_server() {
    let (outcome, exit_ok, mut server) = our_client_vs_cyrus(SECRET, SECRET);
    assert_eq!(
        outcome,
        ClientOutcome::Authenticated,
        "stderr: {}",
        server.stderr()
    );
    assert!(
        exit_ok,
        "Cyrus server did not complete; stderr: {}",
        server.stderr()
    );
    assert!(
        server.saw(&format!("Username: {USER}@{REALM}")),
        "{:?}",
        server.transcript
    );
}

#[test]
fn our_client_with_wrong_secret_is_refused_by_cyrus_server() {
    let (outcome, exit_ok, mut server) = our_client_vs_cyrus(SECRET, WRONG);
    assert_eq!(outcome, ClientOutcome::Refused);
    assert!(!exit_ok, "Cyrus server accepted a wrong secret");
    let stderr = server.stderr();
    assert!(
        stderr.contains("authentication failure"),
        "stderr: {stderr}"
    );
}

/// The Cyrus client against our authenticator; returns our outcome.
fn cyrus_client_vs_our_server(password: &str) -> (ServerOutcome, Peer) {
    require("sasl-sample-client");
    let mut cmd = Command::new("stdbuf");
    cmd.args([
        "-oL",
        "sasl-sample-client",
        "-s",
        "nestguard",
        "-m",
        "CRAM-MD5",
        "-a",
        USER,
        "-u",
        USER,
    ]);
    let mut client = Peer::spawn(cmd, true);

    let store = Arc::new(
        CredentialStore::from_credentials([Credential::new(USER, Secret::from(SECRET))]).unwrap(),
    );
    let now = Instant::now();
    let (mut server, offer) = Authenticator::new(store, ServerConfig::default(), now);
    let Message::Mechanisms(m) = &offer else {
        panic!()
    };
    client.send("S: ", m.mechanisms.join(" ").as_bytes(), None);

    let chosen = client.recv("C: ").expect("mechanism choice");
    // The sample client appends "\0<initial response>" only when it has one.
    let (mechanism, initial) = match chosen.iter().position(|&b| b == 0) {
        Some(i) => (chosen[..i].to_vec(), Some(chosen[i + 1..].to_vec())),
        None => (chosen, Some(Vec::new())),
    };
    let step = server.receive(
        Message::Start(AuthenticationStartMessage {
            mechanism: String::from_utf8(mechanism).unwrap(),
            data: initial,
        }),
        now,
    );
    let Some(Message::Step(challenge)) = step.reply else {
        panic!("expected challenge: {step:?}")
    };
    // Challenge line, then the password for the client's getpass().
    client.send("S: ", &challenge.data, Some(password));

    let response = client.recv("C: ").expect("response");
    let text = String::from_utf8(response.clone()).unwrap();
    assert!(
        text.starts_with("tim ") && text.len() == 4 + 32,
        "Cyrus response shape: {text:?}"
    );
    let step = server.receive(Message::step(response), now);
    let outcome = step.outcome.expect("settled");
    match &outcome {
        ServerOutcome::Authenticated(_) => assert!(matches!(step.reply, Some(Message::Completed))),
        ServerOutcome::Refused => assert!(matches!(step.reply, Some(Message::Failed))),
        ServerOutcome::Error(e) => panic!("unexpected error {e}"),
    }
    (outcome, client)
}

#[test]
fn cyrus_client_authenticates_against_our_server() {
    let (outcome, mut client) = cyrus_client_vs_our_server(SECRET);
    assert_eq!(outcome, ServerOutcome::Authenticated(USER.into()));
    // The client's side of CRAM-MD5 ends with sending the response; the
    // verdict is ours (checked above). It then waits for application data.
    assert!(
        client.saw("Negotiation complete"),
        "{:?}",
        client.transcript
    );
}

#[test]
fn cyrus_client_with_wrong_secret_is_refused_by_our_server() {
    let (outcome, mut client) = cyrus_client_vs_our_server(WRONG);
    assert_eq!(outcome, ServerOutcome::Refused);
    // CRAM-MD5 gives the client no verdict of its own: the refusal above is
    // the check. The process is reaped by the guard.
    let _ = client.finish();
}

/// Secrets longer than the HMAC block (64 bytes) are hashed first (RFC 2104);
/// Cyrus must agree.
#[test]
fn long_secret_interoperates_with_cyrus_server() {
    let long = "nestguard-long-secret-".repeat(5);
    assert!(long.len() > 64);
    let (outcome, ok, mut server) = our_client_vs_cyrus(&long, &long);
    assert_eq!(
        outcome,
        ClientOutcome::Authenticated,
        "stderr: {}",
        server.stderr()
    );
    assert!(ok);
}
