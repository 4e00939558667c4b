//! Media negotiation and decoding of `POST /api/v1`, in Mesos 1.11's order
//! and with its texts (`Http::api` and `Http::_api`, src/slave/http.cpp
//! :369-566; `deserialize`, src/common/http.hpp:109-135; stout's
//! `protobuf::parse`, stout/protobuf.hpp:736-760). The status table of
//! docs/agent-api.md cites the line behind each answer.
//!
//! `Content-Type` and `Message-Content-Type` are compared exactly, as Mesos
//! does: `application/json; charset=utf-8` is not `application/json` (415).
//! `Accept` and `Message-Accept` follow libprocess' `acceptsMediaType`
//! (absent: anything; `type/*` and `*/*`; `q=0` refuses).

use axum::http::{HeaderMap, Method, StatusCode, header};
use nestguard::proto::mesos::v1::agent::{Call, call};
use prost::Message;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};

/// `application/json`.
pub const APPLICATION_JSON: &str = "application/json";
/// `application/x-protobuf`.
pub const APPLICATION_PROTOBUF: &str = "application/x-protobuf";
/// `application/recordio`.
pub const APPLICATION_RECORDIO: &str = "application/recordio";
/// The header naming the format of each record of a streaming request.
pub const MESSAGE_CONTENT_TYPE: &str = "Message-Content-Type";
/// The header naming the accepted format of each record of a streaming response.
pub const MESSAGE_ACCEPT: &str = "Message-Accept";

/// The wire format of a message (a whole body, or one RecordIO record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Mesos-style JSON.
    Json,
    /// Serialized protobuf.
    Protobuf,
}

impl Format {
    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Json => APPLICATION_JSON,
            Format::Protobuf => APPLICATION_PROTOBUF,
        }
    }

    /// Encodes a message in this format.
    pub fn encode<M: Message + ReflectMessage>(self, message: &M) -> Vec<u8> {
        match self {
            Format::Json => nestguard::json::to_json(message).into_bytes(),
            Format::Protobuf => message.encode_to_vec(),
        }
    }

    /// `message` in this format as one RecordIO record: a frame of a
    /// streaming response body (SUBSCRIBE's events, attach's ProcessIO).
    pub fn record_frame<M: Message + ReflectMessage>(
        self,
        message: &M,
    ) -> http_body::Frame<axum::body::Bytes> {
        let record = crate::cli::recordio::encode(&self.encode(message));
        http_body::Frame::data(axum::body::Bytes::from(record))
    }
}

/// A body's media type: one message, or a RecordIO stream of messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentType {
    /// One message in this format.
    Single(Format),
    /// `application/recordio`: records in the `Message-*` format.
    RecordIo,
}

impl ContentType {
    fn streaming(self) -> bool {
        self == ContentType::RecordIo
    }
}

/// Mesos' `RequestMediaTypes`: what the request carries and what the
/// response may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaTypes {
    /// `Content-Type`.
    pub content: ContentType,
    /// The chosen response type.
    pub accept: ContentType,
    /// `Message-Content-Type` (streaming requests only).
    pub message_content: Option<Format>,
    /// The chosen record format of a streaming response.
    pub message_accept: Option<Format>,
}

impl MediaTypes {
    /// The format of a non-streaming response (the streaming accept is
    /// refused with 406 before any non-streaming handler runs).
    pub fn response_format(&self) -> Format {
        match self.accept {
            ContentType::Single(f) => f,
            ContentType::RecordIo => self.message_accept.unwrap_or(Format::Json),
        }
    }
}

/// A request refused before it reached a handler: status and body text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection(pub StatusCode, pub String);

fn reject(status: StatusCode, body: impl Into<String>) -> Rejection {
    Rejection(status, body.into())
}

/// libprocess' `Request::_acceptsMediaType`: whether the header `name`
/// allows `wanted`. No header allows anything; blanks are ignored; the exact
/// type, then `type/*`, then `*/*` is looked for, and the first entry that
/// names it decides (a `q` that is not a single value above 0 refuses).
pub fn accepts(headers: &HeaderMap, name: &str, wanted: &str) -> bool {
    let Some((kind, _)) = wanted.split_once('/') else {
        return false;
    };
    let values: Vec<String> = headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    if values.is_empty() {
        return true;
    }
    let field: String = values
        .join(",")
        .chars()
        .filter(|c| !matches!(c, ' ' | '\t' | '\n'))
        .collect();
    for candidate in [wanted.to_owned(), format!("{kind}/*"), "*/*".to_owned()] {
        for item in field.split(',').filter(|i| !i.is_empty()) {
            let mut tokens = item.split(';').filter(|t| !t.is_empty());
            let Some(range) = tokens.next() else {
                continue;
            };
            if !range.eq_ignore_ascii_case(&candidate) {
                continue;
            }
            let q: Vec<&str> = tokens
                .filter_map(|t| t.split_once('='))
                .filter(|(k, _)| *k == "q")
                .map(|(_, v)| v)
                .collect();
            return match q.as_slice() {
                [value] => value.parse::<f64>().is_ok_and(|q| q > 0.0),
                _ => true,
            };
        }
    }
    false
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a [u8]> {
    headers.get(name).map(|v| v.as_bytes())
}

/// `Http::api`'s header checks (:378-494), before the body is looked at.
pub fn negotiate(method: &Method, headers: &HeaderMap) -> Result<MediaTypes, Rejection> {
    if method != Method::POST {
        return Err(reject(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "405 Method Not Allowed. Expecting one of {{ 'POST' }}, but received '{method}'"
            ),
        ));
    }
    let Some(content) = header_text(headers, header::CONTENT_TYPE.as_str()) else {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "Expecting 'Content-Type' to be present",
        ));
    };
    let content = match content {
        b"application/json" => ContentType::Single(Format::Json),
        b"application/x-protobuf" => ContentType::Single(Format::Protobuf),
        b"application/recordio" => ContentType::RecordIo,
        _ => {
            return Err(reject(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Expecting 'Content-Type' of {APPLICATION_JSON} or {APPLICATION_PROTOBUF} or {APPLICATION_RECORDIO}"
                ),
            ));
        }
    };
    let message_content = header_text(headers, MESSAGE_CONTENT_TYPE);
    let message_content = if content.streaming() {
        match message_content {
            None => {
                return Err(reject(
                    StatusCode::BAD_REQUEST,
                    format!("Expecting '{MESSAGE_CONTENT_TYPE}' to be set for streaming requests"),
                ));
            }
            Some(b"application/json") => Some(Format::Json),
            Some(b"application/x-protobuf") => Some(Format::Protobuf),
            Some(_) => {
                return Err(reject(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!(
                        "Expecting '{MESSAGE_CONTENT_TYPE}' of {APPLICATION_JSON} or {APPLICATION_PROTOBUF}"
                    ),
                ));
            }
        }
    } else if message_content.is_some() {
        return Err(reject(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Expecting '{MESSAGE_CONTENT_TYPE}' to be not set for non-streaming requests"),
        ));
    } else {
        None
    };
    let accept_header = header::ACCEPT.as_str();
    let accept = if accepts(headers, accept_header, APPLICATION_JSON) {
        ContentType::Single(Format::Json)
    } else if accepts(headers, accept_header, APPLICATION_PROTOBUF) {
        ContentType::Single(Format::Protobuf)
    } else if accepts(headers, accept_header, APPLICATION_RECORDIO) {
        ContentType::RecordIo
    } else {
        return Err(reject(
            StatusCode::NOT_ACCEPTABLE,
            format!(
                "Expecting 'Accept' to allow {APPLICATION_JSON} or {APPLICATION_PROTOBUF} or {APPLICATION_RECORDIO}"
            ),
        ));
    };
    let message_accept = if accept.streaming() {
        if accepts(headers, MESSAGE_ACCEPT, APPLICATION_JSON) {
            Some(Format::Json)
        } else if accepts(headers, MESSAGE_ACCEPT, APPLICATION_PROTOBUF) {
            Some(Format::Protobuf)
        } else {
            return Err(reject(
                StatusCode::NOT_ACCEPTABLE,
                format!(
                    "Expecting '{MESSAGE_ACCEPT}' to allow {APPLICATION_JSON} or {APPLICATION_PROTOBUF}"
                ),
            ));
        }
    } else if headers.contains_key(MESSAGE_ACCEPT) {
        return Err(reject(
            StatusCode::NOT_ACCEPTABLE,
            format!("Expecting '{MESSAGE_ACCEPT}' to be not set for non-streaming responses"),
        ));
    } else {
        None
    };
    Ok(MediaTypes {
        content,
        accept,
        message_content,
        message_accept,
    })
}

/// The names of the required fields `message` lacks, as protobuf's
/// `InitializationErrorString` spells them (`a.b`, `list[0].c`): the
/// message's own first, in declaration order, then those of its set
/// sub-messages in field-number order. Hand-rolled: prost keeps no field
/// presence for required fields, so the check runs on the reflected message.
fn missing_required(message: &DynamicMessage, prefix: &str, out: &mut Vec<String>) {
    for field in message.descriptor().fields() {
        if field.cardinality() == prost_reflect::Cardinality::Required && !message.has_field(&field)
        {
            out.push(format!("{prefix}{}", field.name()));
        }
    }
    let mut set: Vec<_> = message.fields().collect();
    set.sort_by_key(|(field, _)| field.number());
    for (field, value) in set {
        match value {
            Value::Message(m) => missing_required(m, &format!("{prefix}{}.", field.name()), out),
            Value::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Value::Message(m) = item {
                        missing_required(m, &format!("{prefix}{}[{i}].", field.name()), out);
                    }
                }
            }
            _ => {}
        }
    }
}

fn missing(message: &DynamicMessage) -> Option<String> {
    let mut out = Vec::new();
    missing_required(message, "", &mut out);
    (!out.is_empty()).then(|| out.join(", "))
}

/// `deserialize<v1::agent::Call>` (src/common/http.hpp:109-135): the texts
/// of the protobuf and JSON paths.
fn deserialize(format: Format, body: &[u8]) -> Result<Call, String> {
    let descriptor = Call::default().descriptor();
    let dynamic = match format {
        Format::Protobuf => {
            // C++'s `ParseFromString` also fails on a missing required field.
            let parse_error = || "Failed to parse body into a protobuf object".to_owned();
            let message = DynamicMessage::decode(descriptor, body).map_err(|_| parse_error())?;
            if missing(&message).is_some() {
                return Err(parse_error());
            }
            message
        }
        Format::Json => {
            let value: serde_json::Value = serde_json::from_slice(body)
                .map_err(|e| format!("Failed to parse body into JSON: {e}"))?;
            if !value.is_object() {
                return Err("Expecting a JSON object".into());
            }
            let options = prost_reflect::DeserializeOptions::new().deny_unknown_fields(false);
            let message = DynamicMessage::deserialize_with_options(descriptor, value, &options)
                .map_err(|e| e.to_string())?;
            if let Some(fields) = missing(&message) {
                return Err(format!("Missing required fields: {fields}"));
            }
            message
        }
    };
    let mut call: Call = dynamic
        .transcode_to()
        .map_err(|_| "Failed to parse body into a protobuf object".to_owned())?;
    // A number outside the enum is an unknown field to C++ (proto2 closed
    // enums): the call then has no type.
    if call
        .r#type
        .is_some_and(|t| call::Type::try_from(t).is_err())
    {
        call.r#type = None;
    }
    Ok(call)
}

/// The first record of a RecordIO body (`<length>\n<bytes>`), as Mesos'
/// streaming `Reader` hands `_api` the first call; None when the stream is
/// empty.
fn first_record(body: &[u8]) -> Result<Option<&[u8]>, String> {
    if body.is_empty() {
        return Ok(None);
    }
    let Some(newline) = body.iter().position(|b| *b == b'\n') else {
        return Err("Failed to decode RecordIO: the record's length has no end".into());
    };
    let length: usize = std::str::from_utf8(&body[..newline])
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| {
            "Failed to decode RecordIO: the record's length is not a number".to_owned()
        })?;
    let ended = || "Failed to decode RecordIO: the stream ended inside a record".to_owned();
    // The length is the client's: near usize::MAX the end would overflow.
    let end = (newline + 1).checked_add(length).ok_or_else(ended)?;
    body.get(newline + 1..end).map(Some).ok_or_else(ended)
}

/// Decodes and validates the call (`Http::api` :431-545), then applies
/// `_api`'s streaming rules (:549-566).
pub fn decode_call(media: &MediaTypes, body: &[u8]) -> Result<Call, Rejection> {
    let bad = |m: String| reject(StatusCode::BAD_REQUEST, m);
    let call = match media.content {
        ContentType::Single(format) => deserialize(format, body).map_err(bad)?,
        ContentType::RecordIo => {
            let format = media.message_content.unwrap_or(Format::Json);
            match first_record(body).map_err(bad)? {
                None => return Err(bad("Received EOF while reading request body".into())),
                Some(record) => deserialize(format, record).map_err(bad)?,
            }
        }
    };
    super::call_validation::validate_agent_call(&call)
        .map_err(|e| bad(format!("Failed to validate agent::Call: {e}")))?;
    let kind = call::Type::try_from(call.r#type.unwrap_or(0)).unwrap_or(call::Type::Unknown);
    let name = kind.as_str_name();
    let input = kind == call::Type::AttachContainerInput;
    if media.content.streaming() && !input {
        return Err(reject(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "Streaming 'Content-Type' {APPLICATION_RECORDIO} is not supported for {name} call"
            ),
        ));
    }
    if !media.content.streaming() && input {
        return Err(reject(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Expecting 'Content-Type' to be {APPLICATION_RECORDIO} for {name} call"),
        ));
    }
    let streams_out = matches!(
        kind,
        call::Type::AttachContainerOutput | call::Type::LaunchNestedContainerSession
    );
    if media.accept.streaming() && !streams_out {
        return Err(reject(
            StatusCode::NOT_ACCEPTABLE,
            format!("Streaming response is not supported for {name} call"),
        ));
    }
    Ok(call)
}

#[cfg(test)]
mod tests;
