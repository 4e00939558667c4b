//! The libprocess messages of the CRAM-MD5 exchange, as one enum.

use prost::Message as _;

use super::CramMd5Error;
use crate::proto::mesos::internal::{
    AuthenticateMessage, AuthenticationCompletedMessage, AuthenticationErrorMessage,
    AuthenticationFailedMessage, AuthenticationMechanismsMessage, AuthenticationStartMessage,
    AuthenticationStepMessage,
};

/// Which message (protobuf bytes do not say it themselves; libprocess sends
/// the type name next to them). The numbers are part of the C ABI.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// `mesos.internal.AuthenticateMessage` (client → master).
    Authenticate = 1,
    /// `mesos.internal.AuthenticationMechanismsMessage` (server → client).
    Mechanisms = 2,
    /// `mesos.internal.AuthenticationStartMessage` (client → server).
    Start = 3,
    /// `mesos.internal.AuthenticationStepMessage` (both ways).
    Step = 4,
    /// `mesos.internal.AuthenticationCompletedMessage` (server → client).
    Completed = 5,
    /// `mesos.internal.AuthenticationFailedMessage` (server → client).
    Failed = 6,
    /// `mesos.internal.AuthenticationErrorMessage` (server → client).
    Error = 7,
}

impl MessageKind {
    /// The libprocess message name (the full protobuf type name).
    pub fn type_name(self) -> &'static str {
        match self {
            Self::Authenticate => "mesos.internal.AuthenticateMessage",
            Self::Mechanisms => "mesos.internal.AuthenticationMechanismsMessage",
            Self::Start => "mesos.internal.AuthenticationStartMessage",
            Self::Step => "mesos.internal.AuthenticationStepMessage",
            Self::Completed => "mesos.internal.AuthenticationCompletedMessage",
            Self::Failed => "mesos.internal.AuthenticationFailedMessage",
            Self::Error => "mesos.internal.AuthenticationErrorMessage",
        }
    }

    /// The kind with this ABI number.
    pub fn from_u32(n: u32) -> Result<Self, CramMd5Error> {
        Ok(match n {
            1 => Self::Authenticate,
            2 => Self::Mechanisms,
            3 => Self::Start,
            4 => Self::Step,
            5 => Self::Completed,
            6 => Self::Failed,
            7 => Self::Error,
            other => return Err(CramMd5Error::UnknownKind(other)),
        })
    }

    /// The kind with this libprocess name.
    pub fn from_type_name(name: &str) -> Option<Self> {
        (1..=7)
            .filter_map(|n| Self::from_u32(n).ok())
            .find(|k| k.type_name() == name)
    }
}

/// One message of the exchange.
#[derive(Clone, PartialEq)]
pub enum Message {
    /// The client asks to authenticate `pid`.
    Authenticate(AuthenticateMessage),
    /// The mechanisms the server offers.
    Mechanisms(AuthenticationMechanismsMessage),
    /// The mechanism the client chose, with its initial response.
    Start(AuthenticationStartMessage),
    /// A challenge (server → client) or response (client → server).
    Step(AuthenticationStepMessage),
    /// Success.
    Completed,
    /// Wrong principal or secret.
    Failed,
    /// Anything else went wrong.
    Error(AuthenticationErrorMessage),
}

impl std::fmt::Debug for Message {
    /// Shows the kind and sizes only: step data is a challenge or a digest.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Step(s) => write!(f, "Step({} bytes)", s.data.len()),
            Message::Error(e) => write!(f, "Error({:?})", e.error),
            Message::Mechanisms(m) => write!(f, "Mechanisms({:?})", m.mechanisms),
            Message::Start(s) => write!(f, "Start({:?})", s.mechanism),
            other => f.write_str(other.kind().type_name()),
        }
    }
}

impl Message {
    /// Which message this is.
    pub fn kind(&self) -> MessageKind {
        match self {
            Message::Authenticate(_) => MessageKind::Authenticate,
            Message::Mechanisms(_) => MessageKind::Mechanisms,
            Message::Start(_) => MessageKind::Start,
            Message::Step(_) => MessageKind::Step,
            Message::Completed => MessageKind::Completed,
            Message::Failed => MessageKind::Failed,
            Message::Error(_) => MessageKind::Error,
        }
    }

    /// A step message.
    pub fn step(data: impl Into<Vec<u8>>) -> Self {
        Message::Step(AuthenticationStepMessage { data: data.into() })
    }

    /// An error message.
    pub fn error(text: impl Into<String>) -> Self {
        Message::Error(AuthenticationErrorMessage {
            error: Some(text.into()),
        })
    }

    /// Serialized protobuf bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Message::Authenticate(m) => m.encode_to_vec(),
            Message::Mechanisms(m) => m.encode_to_vec(),
            Message::Start(m) => m.encode_to_vec(),
            Message::Step(m) => m.encode_to_vec(),
            Message::Completed => AuthenticationCompletedMessage {}.encode_to_vec(),
            Message::Failed => AuthenticationFailedMessage {}.encode_to_vec(),
            Message::Error(m) => m.encode_to_vec(),
        }
    }

    /// Decodes serialized bytes of the given kind.
    pub fn decode(kind: MessageKind, bytes: &[u8]) -> Result<Self, CramMd5Error> {
        let err = |e: prost::DecodeError| CramMd5Error::Decode {
            kind: kind.type_name(),
            reason: e.to_string(),
        };
        Ok(match kind {
            MessageKind::Authenticate => {
                Message::Authenticate(AuthenticateMessage::decode(bytes).map_err(err)?)
            }
            MessageKind::Mechanisms => {
                Message::Mechanisms(AuthenticationMechanismsMessage::decode(bytes).map_err(err)?)
            }
            MessageKind::Start => {
                Message::Start(AuthenticationStartMessage::decode(bytes).map_err(err)?)
            }
            MessageKind::Step => {
                Message::Step(AuthenticationStepMessage::decode(bytes).map_err(err)?)
            }
            MessageKind::Completed => {
                AuthenticationCompletedMessage::decode(bytes).map_err(err)?;
                Message::Completed
            }
            MessageKind::Failed => {
                AuthenticationFailedMessage::decode(bytes).map_err(err)?;
                Message::Failed
            }
            MessageKind::Error => {
                Message::Error(AuthenticationErrorMessage::decode(bytes).map_err(err)?)
            }
        })
    }
}
