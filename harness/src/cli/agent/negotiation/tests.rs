//! Every status and text of the negotiation, one row each.

use super::*;
use axum::http::HeaderValue;
use nestguard::proto::mesos::v1;

const JSON: &str = APPLICATION_JSON;
const PROTO: &str = APPLICATION_PROTOBUF;
const RECORDIO: &str = APPLICATION_RECORDIO;

/// Method, headers, body; the expected status and body.
type Row<'a> = (Method, Vec<(&'a str, &'a str)>, Vec<u8>, u16, String);

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

fn run(
    method: Method,
    pairs: &[(&str, &str)],
    body: &[u8],
) -> Result<(Call, MediaTypes), Rejection> {
    let media = negotiate(&method, &headers(pairs))?;
    Ok((decode_call(&media, body)?, media))
}

fn recordio(record: &[u8]) -> Vec<u8> {
    let mut out = format!("{}\n", record.len()).into_bytes();
    out.extend_from_slice(record);
    out
}

#[test]
fn every_refusal_has_mesos_status_and_text() {
    let health = br#"{"type":"GET_HEALTH"}"#.as_slice();
    let health_proto = v1::agent::Call {
        r#type: Some(call::Type::GetHealth as i32),
        ..Default::default()
    }
    .encode_to_vec();
    let input = recordio(br#"{"type":"ATTACH_CONTAINER_INPUT","attach_container_input":{"type":"CONTAINER_ID","container_id":{"value":"c"}}}"#);
    let ct = "content-type";
    let rows: Vec<Row<'_>> = vec![
        (Method::GET, vec![(ct, JSON)], health.to_vec(), 405,
            "405 Method Not Allowed. Expecting one of { 'POST' }, but received 'GET'".into()),
        (Method::POST, vec![], health.to_vec(), 400, "Expecting 'Content-Type' to be present".into()),
        (Method::POST, vec![(ct, "application/json; charset=utf-8")], health.to_vec(), 415,
            "Expecting 'Content-Type' of application/json or application/x-protobuf or application/recordio".into()),
        (Method::POST, vec![(ct, "Application/JSON")], health.to_vec(), 415,
            "Expecting 'Content-Type' of application/json or application/x-protobuf or application/recordio".into()),
        (Method::POST, vec![(ct, RECORDIO)], input.clone(), 400,
            "Expecting 'Message-Content-Type' to be set for streaming requests".into()),
        (Method::POST, vec![(ct, RECORDIO), ("message-content-type", "text/plain")], input.clone(), 415,
            "Expecting 'Message-Content-Type' of application/json or application/x-protobuf".into()),
        (Method::POST, vec![(ct, JSON), ("message-content-type", JSON)], health.to_vec(), 415,
            "Expecting 'Message-Content-Type' to be not set for non-streaming requests".into()),
        (Method::POST, vec![(ct, JSON), ("accept", "text/html")], health.to_vec(), 406,
            "Expecting 'Accept' to allow application/json or application/x-protobuf or application/recordio".into()),
        (Method::POST, vec![(ct, JSON), ("accept", "application/json;q=0")], health.to_vec(), 406,
            "Expecting 'Accept' to allow application/json or application/x-protobuf or application/recordio".into()),
        (Method::POST, vec![(ct, JSON), ("accept", RECORDIO), ("message-accept", "text/html")], health.to_vec(), 406,
            "Expecting 'Message-Accept' to allow application/json or application/x-protobuf".into()),
        (Method::POST, vec![(ct, JSON), ("message-accept", JSON)], health.to_vec(), 406,
            "Expecting 'Message-Accept' to be not set for non-streaming responses".into()),
        (Method::POST, vec![(ct, JSON), ("accept", RECORDIO)], health.to_vec(), 406,
            "Streaming response is not supported for GET_HEALTH call".into()),
        (Method::POST, vec![(ct, PROTO)], b"\xff\xff".to_vec(), 400,
            "Failed to parse body into a protobuf object".into()),
        // A required field missing fails C++'s ParseFromString too.
        (Method::POST, vec![(ct, PROTO)], v1::agent::Call {
            r#type: Some(call::Type::ListFiles as i32),
            list_files: None,
            ..Default::default()
        }.encode_to_vec().into_iter().chain([0x22, 0x00]).collect(), 400,
            "Failed to parse body into a protobuf object".into()),
        (Method::POST, vec![(ct, JSON)], b"[1]".to_vec(), 400, "Expecting a JSON object".into()),
        (Method::POST, vec![(ct, JSON)], br#"{"type":"WAIT_CONTAINER","wait_container":{"container_id":{}}}"#.to_vec(), 400,
            "Missing required fields: wait_container.container_id.value".into()),
        (Method::POST, vec![(ct, JSON)], br#"{"type":"READ_FILE","read_file":{}}"#.to_vec(), 400,
            "Missing required fields: read_file.path, read_file.offset".into()),
        // Own fields first, then those of set sub-messages, lists indexed.
        (Method::POST, vec![(ct, JSON)], br#"{"type":"LAUNCH_CONTAINER","launch_container":{"resources":[{"name":"cpus"},{}]}}"#.to_vec(), 400,
            "Missing required fields: launch_container.container_id, launch_container.resources[0].type, launch_container.resources[1].name, launch_container.resources[1].type".into()),
        (Method::POST, vec![(ct, JSON)], br#"{}"#.to_vec(), 400,
            "Failed to validate agent::Call: Expecting 'type' to be present".into()),
        (Method::POST, vec![(ct, PROTO)], vec![0x08, 0x63], 400,
            "Failed to validate agent::Call: Expecting 'type' to be present".into()),
        (Method::POST, vec![(ct, JSON)], br#"{"type":"GET_METRICS"}"#.to_vec(), 400,
            "Failed to validate agent::Call: Expecting 'get_metrics' to be present".into()),
        (Method::POST, vec![(ct, RECORDIO), ("message-content-type", JSON)], recordio(health), 415,
            "Streaming 'Content-Type' application/recordio is not supported for GET_HEALTH call".into()),
        (Method::POST, vec![(ct, RECORDIO), ("message-content-type", JSON)], Vec::new(), 400,
            "Received EOF while reading request body".into()),
        (Method::POST, vec![(ct, JSON)], br#"{"type":"ATTACH_CONTAINER_INPUT","attach_container_input":{"type":"CONTAINER_ID","container_id":{"value":"c"}}}"#.to_vec(), 415,
            "Expecting 'Content-Type' to be application/recordio for ATTACH_CONTAINER_INPUT call".into()),
    ];
    for (i, (method, pairs, body, status, text)) in rows.into_iter().enumerate() {
        let err = run(method, &pairs, &body).expect_err(&format!("row {i} must be refused"));
        assert_eq!(
            (err.0.as_u16(), err.1.as_str()),
            (status, text.as_str()),
            "row {i}"
        );
    }
    // The protobuf body is not JSON.
    let err = run(Method::POST, &[(ct, JSON)], &health_proto).unwrap_err();
    assert_eq!(err.0, StatusCode::BAD_REQUEST);
    assert!(
        err.1.starts_with("Failed to parse body into JSON: "),
        "{}",
        err.1
    );
}

#[test]
fn accepted_requests_pick_mesos_formats() {
    let health = br#"{"type":"GET_HEALTH"}"#;
    let ct = "content-type";
    for (pairs, want) in [
        (vec![(ct, JSON)], Format::Json),
        (vec![(ct, JSON), ("accept", PROTO)], Format::Protobuf),
        (vec![(ct, JSON), ("accept", "application/*")], Format::Json),
        (vec![(ct, JSON), ("accept", "*/*")], Format::Json),
        (
            vec![
                (ct, JSON),
                ("accept", "application/json;q=0, application/x-protobuf"),
            ],
            Format::Protobuf,
        ),
        (
            vec![(ct, JSON), ("accept", "APPLICATION/X-PROTOBUF")],
            Format::Protobuf,
        ),
    ] {
        let (call, media) = run(Method::POST, &pairs, health).unwrap();
        assert_eq!(call.r#type, Some(call::Type::GetHealth as i32));
        assert_eq!(media.response_format(), want, "{pairs:?}");
    }
    let proto = v1::agent::Call {
        r#type: Some(call::Type::GetVersion as i32),
        ..Default::default()
    }
    .encode_to_vec();
    let (call, _) = run(Method::POST, &[(ct, PROTO)], &proto).unwrap();
    assert_eq!(call.r#type, Some(call::Type::GetVersion as i32));
    // A streaming accept is allowed for the output-streaming calls; the
    // record format comes from Message-Accept.
    let body = br#"{"type":"ATTACH_CONTAINER_OUTPUT","attach_container_output":{"container_id":{"value":"c"}}}"#;
    let (_, media) = run(
        Method::POST,
        &[(ct, JSON), ("accept", RECORDIO), ("message-accept", PROTO)],
        body,
    )
    .unwrap();
    assert_eq!(media.accept, ContentType::RecordIo);
    assert_eq!(media.message_accept, Some(Format::Protobuf));
    // UNKNOWN passes negotiation and validation (the dispatch answers 501).
    let (call, _) = run(Method::POST, &[(ct, JSON)], br#"{"type":"UNKNOWN"}"#).unwrap();
    assert_eq!(call.r#type, Some(call::Type::Unknown as i32));
}

/// A length header near `usize::MAX` is a record the stream ends inside,
/// not an overflow.
#[test]
fn recordio_length_near_usize_max_is_rejected_not_overflowed() {
    for length in [usize::MAX, usize::MAX - 1, usize::MAX - 3] {
        let body = format!("{length}\n{{}}");
        assert_eq!(
            first_record(body.as_bytes()),
            Err("Failed to decode RecordIO: the stream ended inside a record".to_owned()),
            "{length}"
        );
    }
}
