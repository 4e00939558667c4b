//! JSON ↔ protobuf in Mesos' convention (stout's `JSON::protobuf` and
//! `protobuf::parse`): field names as written in the `.proto` (snake_case),
//! enums by name, 64-bit integers as JSON numbers, bytes as base64.
//!
//! Built on `prost-reflect`, which implements the protobuf JSON mapping over
//! our descriptors; we only choose Mesos' options. Parsing is lenient like
//! Mesos (unknown keys are ignored); stricter, located parsing for policy files
//! lives with the policy loader.

#![forbid(unsafe_code)]

use prost_reflect::{DeserializeOptions, DynamicMessage, ReflectMessage, SerializeOptions};

/// JSON that does not fit the message.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// Not JSON, or JSON of the wrong shape for the message.
    #[error("invalid JSON for {message}: {source}")]
    Parse {
        /// Full protobuf name of the expected message.
        message: String,
        /// What the parser said (includes line and column).
        #[source]
        source: serde_json::Error,
    },
    /// The parsed message could not be converted to the Rust type.
    #[error("JSON for {message} does not convert: {source}")]
    Convert {
        /// Full protobuf name of the expected message.
        message: String,
        /// The decoder's error.
        #[source]
        source: prost::DecodeError,
    },
}

fn serialize_options() -> SerializeOptions {
    SerializeOptions::new()
        .use_proto_field_name(true)
        .stringify_64_bit_integers(false)
        .skip_default_fields(true)
}

/// Parses Mesos-style JSON into a message, ignoring unknown keys as Mesos does.
pub fn from_json<M: ReflectMessage + Default>(text: &str) -> Result<M, JsonError> {
    let descriptor = M::default().descriptor();
    let name = descriptor.full_name().to_owned();
    let mut de = serde_json::Deserializer::from_str(text);
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let dynamic = DynamicMessage::deserialize_with_options(descriptor, &mut de, &options)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|source| JsonError::Parse {
            message: name.clone(),
            source,
        })?;
    dynamic
        .transcode_to::<M>()
        .map_err(|source| JsonError::Convert {
            message: name,
            source,
        })
}

/// Renders a message as Mesos-style JSON.
#[expect(
    clippy::expect_used,
    reason = "serializing a DynamicMessage into a serde_json::Value cannot fail: every \
              protobuf value has a JSON form (map keys become strings, NaN and infinities \
              strings); a `null` instead would put a wrong body on the wire"
)]
pub fn to_json_value<M: ReflectMessage>(message: &M) -> serde_json::Value {
    message
        .transcode_to_dynamic()
        .serialize_with_options(serde_json::value::Serializer, &serialize_options())
        .expect("every protobuf message has a JSON form")
}

/// Renders a message as compact Mesos-style JSON text.
pub fn to_json<M: ReflectMessage>(message: &M) -> String {
    to_json_value(message).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::{self, authorization};

    #[test]
    fn mesos_request_json() {
        let text = r#"{"subject":{"value":"ops"},"action":"LAUNCH_NESTED_CONTAINER",
            "object":{"executor_info":{"executor_id":{"value":"e"},"command":{"user":"bar"}},
                      "command_info":{"user":"root"},"unknown_key":1}}"#;
        let req: authorization::Request = from_json(text).unwrap();
        assert_eq!(
            req.action,
            Some(authorization::Action::LaunchNestedContainer as i32)
        );
        let object = req.object.as_ref().unwrap();
        assert_eq!(
            object.command_info.as_ref().unwrap().user.as_deref(),
            Some("root")
        );
        let json = to_json_value(&req);
        assert_eq!(json["action"], "LAUNCH_NESTED_CONTAINER");
        assert_eq!(json["object"]["executor_info"]["command"]["user"], "bar");
    }

    #[test]
    fn numbers_stay_numbers_and_errors_locate() {
        let d = mesos::DurationInfo {
            nanoseconds: 5_000_000_000,
        };
        assert_eq!(to_json(&d), r#"{"nanoseconds":5000000000}"#);
        let err = from_json::<mesos::ContainerId>("{\n \"value\": 3}").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
