//! The agent's operator calls through a running agent, each in JSON and in
//! protobuf with the project's generated `mesos.v1.agent` types, with the
//! authorization Mesos applies; the operator endpoints; and Mesos' refusal
//! texts on the wire. This module holds the shared client and ACLs.

mod endpoint_guards;
mod files;
mod info;
mod state;
mod wire;

use std::io::{Read, Write};
use std::net::TcpStream;

use base64::Engine;
use nestguard::proto::mesos::v1::agent::{Call, Response, call};
use prost::Message;

use crate::agent_support::TestAgent;

/// ops may view and change everything; intruder may view nothing (and the
/// framework's `root` user is not among what it may view).
pub(super) const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_flags": [{"principals": {"values": ["ops"]}, "flags": {"type": "ANY"}}],
  "get_endpoints": [{"principals": {"values": ["ops"]}, "paths": {"values": ["/metrics/snapshot"]}}],
  "set_log_level": [{"principals": {"values": ["ops"]}, "level": {"type": "ANY"}}],
  "view_frameworks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_executors": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "access_sandboxes": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "prune_images": [{"principals": {"values": ["ops"]}, "images": {"type": "ANY"}}],
  "mark_resource_providers_gone": [{"principals": {"values": ["ops"]}, "resource_providers": {"type": "ANY"}}],
  "modify_resource_provider_configs": [{"principals": {"values": ["ops"]}, "resource_providers": {"type": "ANY"}}]
}"#;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Wire {
    Json,
    Protobuf,
}

impl Wire {
    pub(super) fn media(self) -> &'static str {
        match self {
            Wire::Json => "application/json",
            Wire::Protobuf => "application/x-protobuf",
        }
    }

    pub(super) fn encode(self, call: &Call) -> Vec<u8> {
        match self {
            Wire::Json => nestguard::json::to_json(call).into_bytes(),
            Wire::Protobuf => call.encode_to_vec(),
        }
    }

    pub(super) fn decode(self, body: &[u8]) -> Response {
        match self {
            Wire::Json => nestguard::json::from_json(std::str::from_utf8(body).unwrap()).unwrap(),
            Wire::Protobuf => Response::decode(body).unwrap(),
        }
    }
}

/// One HTTP/1.1 request on its own connection: (status, headers, body).
pub(super) fn request(
    agent: &TestAgent,
    method: &str,
    path: &str,
    auth: Option<(&str, &str)>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let host = agent.address.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).unwrap();
    // A hung agent fails the test instead of hanging it.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some((p, s)) = auth {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{p}:{s}"));
        head.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, head, body)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
}

pub(super) fn api(agent: &TestAgent, who: (&str, &str), wire: Wire, call: &Call) -> (u16, Vec<u8>) {
    let (status, _, body) = request(
        agent,
        "POST",
        "/api/v1",
        Some(who),
        &[("Content-Type", wire.media()), ("Accept", wire.media())],
        &wire.encode(call),
    );
    (status, body)
}

pub(super) fn typed(kind: call::Type) -> Call {
    Call {
        r#type: Some(kind as i32),
        ..Default::default()
    }
}

pub(super) fn ok(agent: &TestAgent, who: (&str, &str), wire: Wire, call: &Call) -> Response {
    let (status, body) = api(agent, who, wire, call);
    assert_eq!(
        status,
        200,
        "{call:?} in {wire:?}: {}",
        String::from_utf8_lossy(&body)
    );
    wire.decode(&body)
}
