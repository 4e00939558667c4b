//! Content negotiation of `POST /api/v1`, as the Mesos agent does it:
//! `Content-Type` must be JSON or protobuf, `Accept` must allow one of them
//! (JSON preferred), and the body must decode into a `mesos.v1.agent.Call`.

use axum::http::{HeaderMap, Method, StatusCode, header};
use nestguard::proto::mesos::v1::agent::Call;
use prost::Message;

/// `application/json`.
pub const APPLICATION_JSON: &str = "application/json";
/// `application/x-protobuf`.
pub const APPLICATION_PROTOBUF: &str = "application/x-protobuf";
const APPLICATION_RECORDIO: &str = "application/recordio";

/// The wire format of a request or response body.
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
    pub fn encode<M: Message + prost_reflect::ReflectMessage>(self, message: &M) -> Vec<u8> {
        match self {
            Format::Json => nestguard::json::to_json(message).into_bytes(),
            Format::Protobuf => message.encode_to_vec(),
        }
    }
}

/// A request rejected before it reached a handler: status and body text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection(pub StatusCode, pub String);

fn media_type(value: &str) -> &str {
    value.split(';').next().unwrap_or("").trim()
}

/// Whether the `Accept` header allows `wanted` (absent header: anything).
pub fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    let values: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if values.is_empty() {
        return true;
    }
    let (kind, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    values.iter().flat_map(|v| v.split(',')).any(|item| {
        let mut parts = item.split(';');
        let range = parts.next().unwrap_or("").trim();
        let zero_q = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
        });
        !zero_q && (range == wanted || range == "*/*" || range == format!("{kind}/*"))
    })
}

/// Checks method and headers and decodes the call; returns the call and the
/// response format.
pub fn decode_call(
    method: &Method,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Call, Format), Rejection> {
    if method != Method::POST {
        return Err(Rejection(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("Expecting one of {{ 'POST' }}, but received '{method}'"),
        ));
    }
    let Some(content_type) = headers.get(header::CONTENT_TYPE) else {
        return Err(Rejection(
            StatusCode::BAD_REQUEST,
            "Expecting 'Content-Type' to be present".into(),
        ));
    };
    let content = match media_type(content_type.to_str().unwrap_or("")) {
        APPLICATION_JSON => Format::Json,
        APPLICATION_PROTOBUF => Format::Protobuf,
        APPLICATION_RECORDIO => {
            return Err(Rejection(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Streaming requests are not supported by this agent".into(),
            ));
        }
        _ => {
            return Err(Rejection(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Expecting 'Content-Type' of {APPLICATION_JSON} or {APPLICATION_PROTOBUF} or {APPLICATION_RECORDIO}"
                ),
            ));
        }
    };
    let accept = if accepts(headers, APPLICATION_JSON) {
        Format::Json
    } else if accepts(headers, APPLICATION_PROTOBUF) {
        Format::Protobuf
    } else {
        return Err(Rejection(
            StatusCode::NOT_ACCEPTABLE,
            format!(
                "Expecting 'Accept' to allow {APPLICATION_JSON} or {APPLICATION_PROTOBUF} or {APPLICATION_RECORDIO}"
            ),
        ));
    };
    let call = match content {
        Format::Protobuf => Call::decode(body).map_err(|_| {
            Rejection(
                StatusCode::BAD_REQUEST,
                "Failed to parse body into Call protobuf".into(),
            )
        })?,
        Format::Json => {
            let text = std::str::from_utf8(body).map_err(|e| {
                Rejection(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to parse body into JSON: {e}"),
                )
            })?;
            serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
                Rejection(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to parse body into JSON: {e}"),
                )
            })?;
            nestguard::json::from_json::<Call>(text).map_err(|e| {
                Rejection(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to convert JSON into Call protobuf: {e}"),
                )
            })?
        }
    };
    super::call_validation::validate_agent_call(&call).map_err(|e| {
        Rejection(
            StatusCode::BAD_REQUEST,
            format!("Failed to validate agent::Call: {e}"),
        )
    })?;
    Ok((call, accept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn negotiation() {
        let body = br#"{"type":"GET_CONTAINERS"}"#;
        let (_, f) = decode_call(
            &Method::POST,
            &headers(&[("content-type", APPLICATION_JSON)]),
            body,
        )
        .unwrap();
        assert_eq!(f, Format::Json);
        let h = headers(&[
            ("content-type", APPLICATION_JSON),
            ("accept", "application/x-protobuf"),
        ]);
        assert_eq!(
            decode_call(&Method::POST, &h, body).unwrap().1,
            Format::Protobuf
        );
        let h = headers(&[("content-type", APPLICATION_JSON), ("accept", "text/html")]);
        assert_eq!(
            decode_call(&Method::POST, &h, body).unwrap_err().0,
            StatusCode::NOT_ACCEPTABLE
        );
        let h = headers(&[("content-type", "text/plain")]);
        assert_eq!(
            decode_call(&Method::POST, &h, body).unwrap_err().0,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(
            decode_call(&Method::GET, &h, body).unwrap_err().0,
            StatusCode::METHOD_NOT_ALLOWED
        );
        let e = decode_call(&Method::POST, &headers(&[]), body).unwrap_err();
        assert_eq!(e.1, "Expecting 'Content-Type' to be present");
        let h = headers(&[("content-type", APPLICATION_JSON)]);
        let e = decode_call(&Method::POST, &h, br#"{"type":"KILL_NESTED_CONTAINER"}"#).unwrap_err();
        assert_eq!(
            e.1,
            "Failed to validate agent::Call: Expecting 'kill_nested_container' to be present"
        );
    }
}
