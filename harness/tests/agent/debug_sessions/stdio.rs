//! A session's stdio: nestguard exec with scripted stdin, input streams (a
//! second input conflicts), links swapped into the sandbox that never lead the
//! agent outside, and a stalled output reader disconnected.

use super::*;

/// `nestguard exec` with scripted stdin: with pipes (`-i`) and a TTY
/// (`-i -t`); its exit code is the command's.
#[test]
fn nestguard_exec_runs_a_command_with_scripted_stdin() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let secret = agent.dir.path().join("ops.secret");
    std::fs::write(&secret, OPS.1).unwrap();
    let exec = |flags: &[&str], command: &[&str], input: &[u8]| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nestguard"))
            .arg("exec")
            .args(["--agent", agent.address.trim_end_matches('/')])
            .args(["--principal", OPS.0])
            .arg("--secret-file")
            .arg(&secret)
            .args(flags)
            .arg(&root)
            .arg("--")
            .args(command)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = exec(&["-i"], &["tr a-z A-Z; exit 7"], b"shout\n");
    assert_eq!((code, out.as_str()), (Some(7), "SHOUT\n"), "{err}");
    let (code, out, err) = exec(&[], &["echo", "two words"], b"");
    assert_eq!((code, out.as_str()), (Some(0), "two words\n"), "{err}");
    let (code, out, err) = exec(&["-i", "-t"], &["read l; echo got $l; stty size"], b"it\n");
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("got it"), "{out:?}");
}

/// The input is a stream: records reach the container while the request is
/// open, and a second input connection meanwhile gets Mesos' conflict.
#[test]
fn input_streams_and_a_second_input_conflicts() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Json;
    let call = session_call(&root, "live", "cat", None);
    let (status, head, mut session, mut rest) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 200, "{head}");

    let host = agent
        .address
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let mut first = TcpStream::connect(host).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", OPS.0, OPS.1));
    let head_text = format!(
        "POST /api/v1 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAuthorization: Basic {token}\r\nContent-Type: application/recordio\r\nMessage-Content-Type: application/json\r\nAccept: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    first.write_all(head_text.as_bytes()).unwrap();
    let chunk = |data: &[u8]| {
        let mut out = format!("{:x}\r\n", data.len()).into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
        out
    };
    // The container ID and a line, the request still open.
    let body = input_body(wire, &root, "live", &[stdin(b"live\n")]);
    first.write_all(&chunk(&body)).unwrap();
    first.flush().unwrap();

    // The line comes back through cat before the input ends.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    session
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    while !String::from_utf8_lossy(&rest).contains("bGl2ZQo") {
        assert!(Instant::now() < deadline, "no echo of the live input");
        if let Ok(n) = session.read(&mut buf) {
            rest.extend_from_slice(&buf[..n]);
        }
    }

    let second = input_body(wire, &root, "live", &[stdin(b"other\n")]);
    let (status, text) = send_input(&agent, wire, &second);
    assert_eq!(
        (status, text.as_str()),
        (409, "Multiple input connections are not allowed")
    );

    // EOF ends cat; the first input is answered 200.
    let eof = input_body(wire, &root, "live", &[stdin(b"")]);
    let mut decoder = recordio::Decoder::new(1 << 20);
    let records = decoder.feed(&eof).unwrap();
    first
        .write_all(&chunk(&recordio::encode(&records[1])))
        .unwrap();
    first.write_all(b"0\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = first.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    session
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (out, _) = output(wire, &head, session, rest);
    assert_eq!(out, "live\n");
    wait_gone(&agent, &root, "live");
}

/// A hostile tenant swaps links into a session's sandbox at the names the
/// switchboard once used (`.nestguard-io`) and still tees to (`stdout`,
/// `stderr`), racing the agent: the agent never creates, writes or chowns
/// anything through them, and makes nothing in the sandbox (the session's
/// stdio are descriptors, not paths).
#[test]
fn links_swapped_into_the_sandbox_never_lead_the_agent_outside() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    // The sessions run as their parent's user (another one is refused):
    // `nobody`'s, so that every `fchown` the agent does is visible.
    let (root, sandbox) = nobodys_pod(&agent);
    let outside = agent.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("victim"), b"keep").unwrap();
    // The tenant, racing: a loop over the sessions' sandboxes (its own),
    // with a pause so that it does not take a whole core.
    let tenant = format!(
        r#"o='{out}'; while :; do for d in '{sb}'/containers/evil-*; do
            ln -sfn "$o" "$d/.nestguard-io" 2>/dev/null; rm -f "$d/.nestguard-io" 2>/dev/null
            mv "$d/.nestguard-io" "$d/moved" 2>/dev/null && ln -sfn "$o" "$d/.nestguard-io"
            ln -sf "$o/victim" "$d/stdout"; ln -sf "$o/victim" "$d/stderr"
            rm -f "$d/stdout" "$d/stderr"; ln "$o/victim" "$d/stdout" 2>/dev/null
          done; sleep 0.001; done"#,
        out = outside.display(),
        sb = sandbox.display()
    );
    for i in 0..4 {
        std::fs::create_dir_all(sandbox.join(format!("containers/evil-{i}"))).unwrap();
    }
    // Killed and reaped however the test ends.
    struct Tenant(std::process::Child);
    impl Drop for Tenant {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let tenant = Tenant(
        std::process::Command::new("sh")
            .args(["-c", &tenant])
            .spawn()
            .unwrap(),
    );
    for i in 0..4 {
        let child = format!("evil-{i}");
        let call = session_call(&root, &child, "echo out; echo err >&2", None);
        let (status, head, mut stream, mut rest) = open(
            &agent,
            OPS,
            &streaming_headers(Wire::Json),
            &Wire::Json.encode(&call),
        );
        // The session may fail (the tenant broke its own sandbox); what
        // matters is where the agent wrote.
        let _ = stream.read_to_end(&mut rest);
        let _ = (status, head);
    }
    drop(tenant);
    for i in 0..4 {
        let io = sandbox.join(format!("containers/evil-{i}/.nestguard-io"));
        // Only the tenant's own link may be there, never a directory.
        assert!(
            std::fs::symlink_metadata(&io).map_or(true, |m| m.file_type().is_symlink()),
            "{} was made",
            io.display()
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["victim"], "the agent created something outside");
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep");
    let meta = std::fs::metadata(outside.join("victim")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (0, 0), "the victim was chowned");
    let meta = std::fs::metadata(&outside).unwrap();
    assert_eq!(
        (meta.uid(), meta.gid()),
        (0, 0),
        "the directory was chowned"
    );

    // Without the tenant, sessions work as before (as `nobody`).
    let call = session_call(&root, "calm", "echo calm; id -un", None);
    let (status, head, stream, rest) = open(
        &agent,
        OPS,
        &streaming_headers(Wire::Json),
        &Wire::Json.encode(&call),
    );
    assert_eq!(status, 200, "{head}");
    assert_eq!(output(Wire::Json, &head, stream, rest).0, "calm\nnobody\n");
}

/// A reader that stops reading is disconnected once its queue is full
/// (the switchboard's unit tests assert the cap itself): the session's own
/// reader gets all the output, the stalled one far less and then the end
/// of its stream, and the agent keeps serving.
#[test]
fn a_stalled_output_reader_is_disconnected() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Protobuf;
    // Well above what the stalled reader can hold (its 4 MiB queue and
    // the sockets' buffers).
    const TOTAL: usize = 24 << 20;
    let call = session_call(
        &root,
        "flood",
        &format!("read go; head -c {TOTAL} /dev/zero"),
        None,
    );
    let (status, head, stream, rest) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    let session = std::thread::spawn(move || count_stdout(wire, stream, rest));
    let attach: Call = nestguard::json::from_json(
        &serde_json::json!({
            "type": "ATTACH_CONTAINER_OUTPUT",
            "attach_container_output": {"container_id": nested(&root, "flood")}
        })
        .to_string(),
    )
    .unwrap();
    let (status, head, stalled, stalled_rest) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&attach));
    assert_eq!(status, 200, "{head}");
    // Both readers are attached; the output starts.
    let body = input_body(wire, &root, "flood", &[stdin(b"go\n"), stdin(b"")]);
    let (status, text) = send_input(&agent, wire, &body);
    assert_eq!(status, 200, "{text}");
    assert_eq!(session.join().unwrap(), TOTAL);
    // Only now is the stalled reader read: it was cut off long before.
    let got = count_stdout(wire, stalled, stalled_rest);
    assert!(got < TOTAL, "the stalled reader got everything");
    wait_gone(&agent, &root, "flood");
}
