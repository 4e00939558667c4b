//! Fuzz bodies for the simulated agent's inputs (`nestguard-harness`): the
//! agent API's `Call` (negotiation, protobuf/JSON/RecordIO decoding,
//! validation), the executor API's `Call`, and RecordIO framing. One `pub fn
//! NAME(data: &[u8])` per target in `fuzz/fuzz_targets/NAME.rs`.
//!
//! Also compiled into the harness's tests (`harness/tests/fuzz_seeds.rs`, by
//! path), which run every body over its seeds in `fuzz/seeds/NAME/`.

use nestguard::proto::mesos::v1;
use nestguard_harness::cli::inputs::http::{HeaderMap, HeaderName, HeaderValue, Method};
use nestguard_harness::cli::inputs::{
    ContentType, Decoder, Format, MediaTypes, RecordIoError, decode_call, encode_record, negotiate,
    validate_agent_call, validate_executor_call,
};
use prost::Message as _;

/// A target's body.
pub type Body = fn(&[u8]);

/// Every target of this file, by name, for the seed test.
pub const TARGETS: &[(&str, Body)] = &[
    ("agent_call", agent_call),
    ("agent_negotiate", agent_negotiate),
    ("executor_call", executor_call),
    ("recordio", recordio),
];

fn format(byte: u8) -> Format {
    if byte & 1 == 0 {
        Format::Json
    } else {
        Format::Protobuf
    }
}

fn content(byte: u8) -> ContentType {
    if byte & 2 == 0 {
        ContentType::Single(format(byte))
    } else {
        ContentType::RecordIo
    }
}

/// The agent API's `Call` body. The first byte picks the media types (JSON
/// or protobuf, single or RecordIO, streaming accept or not); the rest is
/// the body. Invariants: an accepted call validates on its own, and its
/// protobuf and JSON encodings are accepted again as the same call.
pub fn agent_call(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let media = MediaTypes {
        content: content(selector),
        accept: if selector & 4 == 0 {
            ContentType::Single(format(selector >> 3))
        } else {
            ContentType::RecordIo
        },
        message_content: (selector & 16 != 0).then(|| format(selector >> 5)),
        message_accept: (selector & 64 != 0).then(|| format(selector >> 7)),
    };
    let Ok(call) = decode_call(&media, body) else {
        return;
    };
    validate_agent_call(&call).expect("an accepted call validates");
    for f in [Format::Protobuf, Format::Json] {
        let encoded = f.encode(&call);
        let framed;
        let body = if media.content == ContentType::RecordIo {
            framed = encode_record(&encoded);
            &framed[..]
        } else {
            &encoded[..]
        };
        let again = MediaTypes {
            content: match media.content {
                ContentType::Single(_) => ContentType::Single(f),
                ContentType::RecordIo => ContentType::RecordIo,
            },
            message_content: Some(f),
            ..media
        };
        let back = decode_call(&again, body)
            .unwrap_or_else(|e| panic!("re-encoded call ({f:?}) refused: {e:?}"));
        assert_eq!(back, call, "call changed through {f:?}");
    }
}

/// The agent API's request headers: lines `name: value`, the first line
/// the method. Invariant: negotiation never accepts a method other than
/// POST.
pub fn agent_negotiate(data: &[u8]) {
    let mut lines = data.split(|b| *b == b'\n');
    let method = lines
        .next()
        .and_then(|m| Method::from_bytes(m).ok())
        .unwrap_or(Method::POST);
    let mut headers = HeaderMap::new();
    for line in lines.take(16) {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    if negotiate(&method, &headers).is_ok() {
        assert_eq!(method, Method::POST);
    }
}

/// The executor API's `Call`, protobuf or JSON (first byte), decoded as the
/// agent does and validated. Invariant: a call that validates survives a
/// protobuf and a JSON round trip and validates the same.
pub fn executor_call(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let call = if selector & 1 == 0 {
        let Ok(text) = std::str::from_utf8(body) else {
            return;
        };
        if serde_json::from_str::<serde_json::Value>(text).is_err() {
            return;
        }
        match nestguard::json::from_json::<v1::executor::Call>(text) {
            Ok(call) => call,
            Err(_) => return,
        }
    } else {
        match v1::executor::Call::decode(body) {
            Ok(call) => call,
            Err(_) => return,
        }
    };
    let verdict = validate_executor_call(&call);
    let decoded = v1::executor::Call::decode(&call.encode_to_vec()[..]).expect("own encoding");
    assert_eq!(decoded, call);
    let json = nestguard::json::to_json(&call);
    let from_json: v1::executor::Call =
        nestguard::json::from_json(&json).expect("own JSON decodes");
    if verdict.is_ok() {
        assert_eq!(from_json, call, "JSON round trip changed a valid call");
        validate_executor_call(&from_json).expect("a valid call stays valid");
    }
}

/// RecordIO. The first byte is the decoder's limit, the second the chunk
/// size; the rest is the stream. Invariants: the records of a stream that
/// decodes re-encode to that very stream, in any chunking; no record is
/// over the limit.
pub fn recordio(data: &[u8]) {
    let [max, chunk, stream @ ..] = data else {
        return;
    };
    let max = usize::from(*max) * 4;
    let chunk = usize::from(*chunk).max(1);
    let mut decoder = Decoder::new(max);
    let mut records = Vec::new();
    let mut failed: Option<RecordIoError> = None;
    for piece in stream.chunks(chunk) {
        match decoder.feed(piece) {
            Ok(mut got) => records.append(&mut got),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    assert!(records.iter().all(|r| r.len() <= max));
    if failed.is_some() || decoder.finish().is_err() {
        return;
    }
    let encoded: Vec<u8> = records.iter().flat_map(|r| encode_record(r)).collect();
    // Leading zeros in a length ("007\n") decode but do not re-encode.
    if encoded != stream {
        let mut again = Decoder::new(max);
        let back = again.feed(&encoded).expect("own encoding decodes");
        again.finish().expect("own encoding is complete");
        assert_eq!(back, records);
        return;
    }
    let mut whole = Decoder::new(max);
    assert_eq!(whole.feed(stream).expect("decodes whole"), records);
}
