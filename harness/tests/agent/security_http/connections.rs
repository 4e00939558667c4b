//! Hole 8 of the front door: slow and idle clients, the connection cap, and one
//! subject's (or one peer's) requests never starving the others.

use super::*;

// ----- hole 8: slow and idle clients, the connection cap -----------------------

/// Reads until EOF or reset; true if the server closed within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    let start = Instant::now();
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return start.elapsed() < within,
        }
    }
}

#[test]
fn slow_loris_is_disconnected_after_the_header_timeout() {
    let door = Door::start(
        Setup::posix(ALLOW_OPS_WAIT)
            .flag("--http_header_read_timeout=1secs")
            .flag("--http_idle_timeout=60secs"),
    );
    let mut stream = TcpStream::connect(door.host_port()).unwrap();
    let started = Instant::now();
    // One header byte every 100 ms, never finishing.
    let header = format!(
        "POST /api/v1 HTTP/1.1\r\nHost: x\r\n{}\r\nX-Slow: {}",
        basic(OPS.0, OPS.1),
        "a".repeat(100)
    );
    let mut cut = false;
    for byte in header.bytes() {
        if stream.write_all(&[byte]).is_err() {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if started.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    let cut = cut || closed_within(&mut stream, Duration::from_secs(2));
    assert!(
        cut,
        "a slow client held its connection for {:?}",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The agent still serves everyone else.
    let (status, _) = door.api(OPS, &wait_missing());
    assert_eq!(status, 404);
}

fn health_request(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 1024];
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let n = stream.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn idle_connections_are_closed() {
    let door = Door::start(
        Setup::posix(ALLOW_OPS_WAIT)
            .flag("--http_header_read_timeout=30secs")
            .flag("--http_idle_timeout=1secs"),
    );
    // A kept-alive connection after a request, and one that never sent one.
    let mut used = TcpStream::connect(door.host_port()).unwrap();
    assert!(health_request(&mut used).starts_with("HTTP/1.1 200"));
    let mut silent = TcpStream::connect(door.host_port()).unwrap();
    let started = Instant::now();
    assert!(closed_within(&mut used, Duration::from_secs(6)));
    assert!(closed_within(&mut silent, Duration::from_secs(6)));
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn a_long_wait_is_not_an_idle_connection() {
    let acls = r#"{
      "permissive": false,
      "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
    }"#;
    let mut door = Door::start(Setup::posix(acls).flag("--http_idle_timeout=1secs"));
    door.launch_standalone("long", "sleep 3; exit 7");
    let started = Instant::now();
    let wait = serde_json::json!({"type": "WAIT_CONTAINER",
        "wait_container": {"container_id": {"value": "long"}}});
    let (status, body) = door.api(OPS, &wait);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["wait_container"]["exit_status"], 7 << 8, "{body}");
    assert!(started.elapsed() > Duration::from_secs(2));
}

#[test]
fn connection_cap_queues_extra_clients_until_one_closes() {
    let door = Door::start(
        Setup::posix(ALLOW_OPS_WAIT)
            .flag("--max_http_connections=2")
            .flag("--http_header_read_timeout=30secs")
            .flag("--http_idle_timeout=30secs"),
    );
    let mut first = TcpStream::connect(door.host_port()).unwrap();
    assert!(health_request(&mut first).starts_with("HTTP/1.1 200"));
    let mut second = TcpStream::connect(door.host_port()).unwrap();
    assert!(health_request(&mut second).starts_with("HTTP/1.1 200"));
    // The third is not served while two are open ...
    let mut third = TcpStream::connect(door.host_port()).unwrap();
    third
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut buf = [0u8; 1024];
    let early = third.read(&mut buf);
    assert!(
        early.is_err(),
        "served beyond the cap: {:?}",
        early.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
    );
    // ... and is once one of them closes.
    drop(first);
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let n = third.read(&mut buf).unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
}

/// Sends a JSON POST to /api/v1 on a raw connection (not read yet).
fn send_api(door: &Door, authorization: &str, call: &serde_json::Value) -> TcpStream {
    let mut stream = TcpStream::connect(door.host_port()).unwrap();
    let body = call.to_string();
    let request = format!(
        "POST /api/v1 HTTP/1.1\r\nHost: x\r\n{authorization}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

/// The status line of the answer on `stream`, or None within `within`.
fn status_within(stream: &mut TcpStream, within: Duration) -> Option<String> {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 1024];
    let n = stream.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    text.lines().next().map(str::to_owned)
}

/// Item 5: one subject (a principal, or an executor token) holding WAITs
/// on a long-running container cannot take every connection: past
/// `--max_requests_per_principal` its requests get 429 (and their
/// connections close), and an operator is still served. On the old front
/// door the WAITs took all four connections and the operator waited in the
/// backlog.
#[test]
fn one_subjects_waits_cannot_starve_the_others() {
    let acls = r#"{
      "permissive": false,
      "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "manage_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "wait_standalone_containers": [{"principals": {"values": ["ops", "viewer"]}, "users": {"type": "ANY"}}],
      "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
    }"#;
    let token = nestguard::credentials::jwt::issue(
        &[("cid".to_owned(), "long".to_owned())]
            .into_iter()
            .collect(),
        &nestguard::credentials::Secret::from(JWT_KEY),
    );
    for holder in [
        basic(VIEWER.0, VIEWER.1),
        format!("Authorization: Bearer {token}"),
    ] {
        let mut door = Door::start(
            Setup::posix(acls)
                .flag("--max_http_connections=4")
                .flag("--max_http_connections_per_peer=4")
                .flag("--max_requests_per_principal=2"),
        );
        door.launch_standalone("long", "sleep 600");
        // The token's executor may wait on its nested containers.
        let child = serde_json::json!({"value": "child", "parent": {"value": "long"}});
        let launch = serde_json::json!({"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": child, "command": {"value": "sleep 600"}}});
        let (status, body) = door.api(OPS, &launch);
        assert_eq!(status, 200, "{body}\n{}", door.log());
        let waited = if holder.contains("Bearer") {
            child
        } else {
            serde_json::json!({"value": "long"})
        };
        let wait = serde_json::json!({"type": "WAIT_CONTAINER",
            "wait_container": {"container_id": waited}});
        let mut waits: Vec<TcpStream> = (0..4).map(|_| send_api(&door, &holder, &wait)).collect();
        let mut refused = 0;
        for stream in &mut waits {
            if let Some(line) = status_within(stream, Duration::from_secs(2)) {
                assert_eq!(line, "HTTP/1.1 429 Too Many Requests", "{}", door.log());
                refused += 1;
            }
        }
        assert_eq!(
            refused,
            2,
            "two WAITs beyond the cap get 429\n{}",
            door.log()
        );
        // The operator is served at once.
        let mut ops = send_api(&door, &basic(OPS.0, OPS.1), &wait_missing());
        assert_eq!(
            status_within(&mut ops, Duration::from_secs(5)).as_deref(),
            Some("HTTP/1.1 404 Not Found"),
            "{}",
            door.log()
        );
    }
}

/// Item 5: one peer address cannot take every connection: beyond
/// `--max_http_connections_per_peer` its connections are closed at once,
/// and another peer (here 127.0.0.2) is still served. On the old front
/// door the third connection waited in the backlog and so did the other
/// peer.
#[test]
fn one_peers_flood_leaves_connections_for_others() {
    let door = Door::start(
        Setup::posix(ALLOW_OPS_WAIT)
            .flag("--max_http_connections=3")
            .flag("--max_http_connections_per_peer=2")
            .flag("--http_header_read_timeout=30secs")
            .flag("--http_idle_timeout=30secs"),
    );
    // Two idle connections from 127.0.0.1 (never sending a byte).
    let _held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(door.host_port()).unwrap())
        .collect();
    // Nothing shows the agent's per-peer count to poll: give it time to
    // accept both before the third.
    std::thread::sleep(Duration::from_millis(300));
    // The third from the same peer is closed unserved.
    let mut third = TcpStream::connect(door.host_port()).unwrap();
    let _ = third.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        closed_within(&mut third, Duration::from_secs(3)),
        "a third connection of one peer was kept"
    );
    // Another peer is served at once.
    let (status, _, body) = door.curl(&["--interface", "127.0.0.2", "--max-time", "5"], "/health");
    assert_eq!((status, body.as_str()), (200, ""), "{}", door.log());
}

// ----- hole 9: hot reload ------------------------------------------------------
