//! LIST_FILES/READ_FILE and `/files/*` by Mesos' paths.

use nestguard::proto::mesos::v1::agent::{Response, call, response};

use super::{ACLS, Wire, api, ok, request, typed};
use crate::agent_support::{INTRUDER, OPS, TestAgent, pod, require_root, task};

#[test]
fn sandbox_files_by_mesos_paths() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600")]));
    let (_root, sandbox) = agent.launch_pod(&spec);
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(sandbox.join("hello.txt"), "hello world").unwrap();
    std::os::unix::fs::symlink("/etc", sandbox.join("escape")).unwrap();
    // A link that stays in the sandbox is followed, as in Mesos.
    std::os::unix::fs::symlink("hello.txt", sandbox.join("link.txt")).unwrap();
    // A FIFO must not hang the reader.
    nix::unistd::mkfifo(
        &sandbox.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let virtual_path = format!("/frameworks/e2e-framework/executors/{executor_id}/runs/latest");
    let hello = format!("{virtual_path}/hello.txt");
    let list = |path: &str| {
        let mut c = typed(call::Type::ListFiles);
        c.list_files = Some(call::ListFiles {
            path: path.to_owned(),
        });
        c
    };
    let read = |path: &str, offset: u64, length: Option<u64>| {
        let mut c = typed(call::Type::ReadFile);
        c.read_file = Some(call::ReadFile {
            path: path.to_owned(),
            offset,
            length,
        });
        c
    };
    for wire in [Wire::Json, Wire::Protobuf] {
        // The virtual path and the real sandbox path list the same files.
        for path in [virtual_path.clone(), sandbox.to_string_lossy().into_owned()] {
            let r = ok(&agent, OPS, wire, &list(&path));
            let infos = r.get_list_files_or_panic();
            let file = infos
                .iter()
                .find(|f| f.path == format!("{path}/hello.txt"))
                .unwrap_or_else(|| panic!("{infos:?}"));
            assert_eq!(file.size, Some(11));
            assert_eq!(file.uid.as_deref(), Some("root"));
        }
        let r = ok(&agent, OPS, wire, &read(&hello, 6, Some(5)));
        let got = r.read_file.unwrap();
        assert_eq!((got.size, got.data.as_slice()), (11, b"world".as_slice()));
        let got = ok(&agent, OPS, wire, &read(&hello, 0, None))
            .read_file
            .unwrap();
        assert_eq!(got.data, b"hello world");
        let link = format!("{virtual_path}/link.txt");
        let got = ok(&agent, OPS, wire, &read(&link, 0, None))
            .read_file
            .unwrap();
        assert_eq!(got.data, b"hello world");
        let (status, body) = api(
            &agent,
            OPS,
            wire,
            &read(&format!("{virtual_path}/pipe"), 0, None),
        );
        let body = String::from_utf8(body).unwrap();
        assert_eq!(status, 400);
        assert!(body.ends_with("/pipe': not a regular file.\n"), "{body}");
        let got = ok(&agent, OPS, wire, &read(&hello, 20, None))
            .read_file
            .unwrap();
        assert_eq!((got.size, got.data.len()), (11, 0));
        // Mesos' Files answers: 403 and 404 without a body, 400 with the reason.
        assert_eq!(
            api(&agent, INTRUDER, wire, &list(&virtual_path)),
            (403, Vec::new())
        );
        assert_eq!(
            api(&agent, INTRUDER, wire, &read(&hello, 0, None)),
            (403, Vec::new())
        );
        assert_eq!(api(&agent, OPS, wire, &list("/nope")), (404, Vec::new()));
        assert_eq!(
            api(
                &agent,
                OPS,
                wire,
                &read(&format!("{virtual_path}/missing"), 0, None)
            ),
            (404, Vec::new())
        );
        assert_eq!(
            api(&agent, OPS, wire, &read(&virtual_path, 0, None)),
            (400, b"Cannot read a directory.\n".to_vec())
        );
        // A link out of the sandbox is not found, whether its target
        // exists or not (no oracle for host paths).
        for target in ["hostname", "no-such-file"] {
            assert_eq!(
                api(
                    &agent,
                    OPS,
                    wire,
                    &read(&format!("{virtual_path}/escape/{target}"), 0, None),
                ),
                (404, Vec::new()),
                "{target}"
            );
        }
        // Listed as the link itself, not its target.
        let r = ok(&agent, OPS, wire, &list(&virtual_path));
        let escape = r
            .get_list_files_or_panic()
            .into_iter()
            .find(|f| f.path.ends_with("/escape"))
            .unwrap();
        assert_eq!(escape.mode.unwrap() & 0o170000, 0o120000, "{escape:?}");
    }
    // The /files endpoints.
    let encoded_path = |p: &str| p.replace('/', "%2F");
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/browse?path={}", encoded_path(&virtual_path)),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(status, 200);
    let listing: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let entry = listing
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == hello.as_str())
        .unwrap();
    assert_eq!(entry["size"], 11);
    assert_eq!(entry["mode"].as_str().unwrap().len(), 10);
    assert!(entry["mode"].as_str().unwrap().starts_with('-'));
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/read?path={hello}&offset=0"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"offset": 0, "data": "hello world"})
    );
    let (_, _, body) = request(
        &agent,
        "GET",
        &format!("/files/read?path={hello}"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"offset": 11, "data": ""})
    );
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/read?path={hello}&offset=-2"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(
        (status, body.as_slice()),
        (400, b"Negative offset provided: -2.\n".as_slice())
    );
    let (status, head, body) = request(
        &agent,
        "GET",
        &format!("/files/download?path={hello}"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!((status, body.as_slice()), (200, b"hello world".as_slice()));
    assert!(
        head.to_ascii_lowercase()
            .contains("content-disposition: attachment; filename=hello.txt"),
        "{head}"
    );
    let (status, _, body) = request(&agent, "GET", "/files/browse", Some(OPS), &[], b"");
    assert_eq!(
        (status, body.as_slice()),
        (400, b"Expecting 'path=value' in query.\n".as_slice())
    );
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/download?path={hello}"),
        Some(INTRUDER),
        &[],
        b"",
    );
    assert_eq!(
        (status, body.as_slice()),
        (403, b"403 Forbidden.".as_slice())
    );
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/browse?path={virtual_path}"),
        Some(INTRUDER),
        &[],
        b"",
    );
    assert_eq!((status, body.as_slice()), (403, b"".as_slice()));
    assert_eq!(
        request(
            &agent,
            "GET",
            &format!("/files/read?path={hello}"),
            None,
            &[],
            b""
        )
        .0,
        401
    );
}

/// A path that ends in `/.`, `//` or `/./` resolves to the sandbox's root
/// and must be authorized as the sandbox (walking up with `Path::parent`
/// skipped those components and let anyone list the sandbox).
#[test]
fn dot_and_empty_suffixes_are_authorized_as_the_sandbox() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600")]));
    let (_root, sandbox) = agent.launch_pod(&spec);
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(sandbox.join("secret.txt"), "tenant data").unwrap();
    let virtual_path = format!("/frameworks/e2e-framework/executors/{executor_id}/runs/latest");
    let real = sandbox.to_string_lossy().into_owned();
    for base in [virtual_path.as_str(), real.as_str()] {
        for suffix in ["/.", "//", "/./", "/./.", "/.//"] {
            let path = format!("{base}{suffix}");
            let mut c = typed(call::Type::ListFiles);
            c.list_files = Some(call::ListFiles { path: path.clone() });
            for wire in [Wire::Json, Wire::Protobuf] {
                assert_eq!(api(&agent, INTRUDER, wire, &c), (403, Vec::new()), "{path}");
            }
            // The operator still lists it.
            let r = ok(&agent, OPS, Wire::Json, &c);
            assert!(
                r.get_list_files_or_panic()
                    .iter()
                    .any(|f| f.path.ends_with("/secret.txt")),
                "{path}"
            );
            let (status, _, body) = request(
                &agent,
                "GET",
                &format!("/files/browse?path={}", path.replace('/', "%2F")),
                Some(INTRUDER),
                &[],
                b"",
            );
            assert_eq!((status, body.as_slice()), (403, b"".as_slice()), "{path}");
            let (status, _, body) = request(
                &agent,
                "GET",
                &format!("/files/download?path={path}secret.txt"),
                Some(INTRUDER),
                &[],
                b"",
            );
            assert_eq!(
                (status, body.as_slice()),
                (403, b"403 Forbidden.".as_slice()),
                "{path}"
            );
        }
    }
}

/// The agent's resident memory in KiB, from its /proc status.
fn agent_rss_kib(agent: &TestAgent) -> Option<u64> {
    let work = format!("--work_dir={}", agent.dir.path().join("work").display());
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !cmdline.split(|b| *b == 0).any(|a| a == work.as_bytes()) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
        return status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
    }
    None
}

/// `/files/download` streams the size the file had at open: a sparse GiB
/// does not grow the agent's memory, and bytes appended during the
/// download are not sent.
#[test]
fn download_streams_the_size_at_open() {
    use std::io::{BufRead, BufReader, Read, Write};
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600")]));
    let (_root, sandbox) = agent.launch_pod(&spec);
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    const SIZE: u64 = 1 << 30;
    let big = sandbox.join("big.bin");
    std::fs::File::create(&big).unwrap().set_len(SIZE).unwrap();
    let rss_before = agent_rss_kib(&agent).expect("the agent's VmRSS");
    let host = agent.address.trim_start_matches("http://").to_owned();
    let stream = std::net::TcpStream::connect(&host).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let token = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", OPS.0, OPS.1))
    };
    let path = format!("/frameworks/e2e-framework/executors/{executor_id}/runs/latest/big.bin");
    (&stream)
        .write_all(
            format!(
                "GET /files/download?path={path} HTTP/1.1\r\nHost: {host}\r\n\
                 Connection: close\r\nAuthorization: Basic {token}\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
    let mut reader = BufReader::new(&stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head.push_str(&line);
    }
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-length: {SIZE}\r\n")),
        "{head}"
    );
    // The tenant keeps writing after the open.
    let mut appender = std::fs::OpenOptions::new().append(true).open(&big).unwrap();
    appender.write_all(&[1; 4096]).unwrap();
    let mut buf = vec![0; 1 << 20];
    let mut got: u64 = 0;
    let mut rss_peak = rss_before;
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got += n as u64;
        if got % (64 << 20) < n as u64 {
            rss_peak = rss_peak.max(agent_rss_kib(&agent).unwrap_or(0));
            appender.write_all(&[1; 4096]).unwrap();
        }
    }
    assert_eq!(got, SIZE);
    // A whole-file read would have added a GiB; a stream adds a few chunks.
    assert!(
        rss_peak < rss_before + 32 * 1024,
        "VmRSS grew from {rss_before} KiB to {rss_peak} KiB"
    );
}

trait ListFilesOrPanic {
    fn get_list_files_or_panic(self) -> Vec<nestguard::proto::mesos::v1::FileInfo>;
}

impl ListFilesOrPanic for Response {
    fn get_list_files_or_panic(self) -> Vec<nestguard::proto::mesos::v1::FileInfo> {
        assert_eq!(self.r#type, Some(response::Type::ListFiles as i32));
        self.list_files.expect("list_files").file_infos
    }
}

/// A non-streaming response whose client never reads it does not pin the
/// connection: after the idle timeout (and one more for the graceful close)
/// the agent drops it.
#[test]
fn an_unread_download_is_closed_after_the_idle_timeout() {
    use std::io::{Read, Write};
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls_and(ACLS, &["--http_idle_timeout=1secs"]);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600")]));
    let (_root, sandbox) = agent.launch_pod(&spec);
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    const SIZE: u64 = 1 << 30;
    std::fs::File::create(sandbox.join("big.bin"))
        .unwrap()
        .set_len(SIZE)
        .unwrap();
    let host = agent.address.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&host).unwrap();
    let token = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", OPS.0, OPS.1))
    };
    let path = format!("/frameworks/e2e-framework/executors/{executor_id}/runs/latest/big.bin");
    stream
        .write_all(
            format!(
                "GET /files/download?path={path} HTTP/1.1\r\nHost: {host}\r\n\
                 Authorization: Basic {token}\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
    // Never read while the agent's idle timer runs out.
    std::thread::sleep(std::time::Duration::from_secs(5));
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut got: u64 = 0;
    let mut buf = vec![0; 1 << 20];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the agent kept the unread download open: {e} after {got} bytes"),
        }
    }
    assert!(got < SIZE, "the whole file arrived: {got}");
}
