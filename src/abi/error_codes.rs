//! Which result code each error of the library maps to.
//!
//! The core modules know nothing of their C face: every mapping from a
//! module's error to a stable [`nestguard_result`] lives in the ABI layer,
//! here for the wire types, authorization and isolation, and next to their
//! handles for the launcher and credentials.

use super::result::{AbiError, nestguard_result};
use crate::isolation::cgroups::CgroupError;
use crate::isolation::isolator::IsolatorError;

impl AbiError for crate::container_id::ContainerIdError {
    fn code(&self) -> nestguard_result {
        nestguard_result::InvalidContainerId
    }
}

impl AbiError for prost::DecodeError {
    fn code(&self) -> nestguard_result {
        nestguard_result::ProtobufDecode
    }
}

impl AbiError for crate::json::JsonError {
    fn code(&self) -> nestguard_result {
        nestguard_result::Json
    }
}

impl AbiError for crate::checkpoint::CheckpointError {
    fn code(&self) -> nestguard_result {
        nestguard_result::Checkpoint
    }
}

impl AbiError for crate::authz::LoadError {
    fn code(&self) -> nestguard_result {
        match self {
            crate::authz::LoadError::Read { .. } => nestguard_result::Io,
            _ => nestguard_result::AclsInvalid,
        }
    }
}

impl AbiError for crate::authz::ParameterError {
    fn code(&self) -> nestguard_result {
        match self {
            crate::authz::ParameterError::Missing
            | crate::authz::ParameterError::MaxFileSize(_) => nestguard_result::InvalidArgument,
            crate::authz::ParameterError::Invalid(e) => e.code(),
        }
    }
}

impl AbiError for crate::authz::EvalError {
    fn code(&self) -> nestguard_result {
        match self {
            crate::authz::EvalError::InvalidRequest(_) => {
                nestguard_result::InvalidAuthorizationRequest
            }
            _ => nestguard_result::AuthorizationFailed,
        }
    }
}

impl AbiError for CgroupError {
    fn code(&self) -> nestguard_result {
        match self {
            Self::NotFound { .. } => nestguard_result::CgroupNotFound,
            Self::AlreadyExists { .. } => nestguard_result::CgroupExists,
            Self::Timeout { .. } => nestguard_result::CgroupTimeout,
            Self::InvalidId(_) => nestguard_result::InvalidContainerId,
            Self::Invalid(_) => nestguard_result::InvalidArgument,
            Self::NotMounted(_)
            | Self::ControllerNotMounted { .. }
            | Self::ControllerUnavailable { .. } => nestguard_result::CgroupUnavailable,
            Self::Io { .. }
            | Self::Parse { .. }
            | Self::ParentMissing { .. }
            | Self::Owned { .. } => nestguard_result::Cgroup,
        }
    }
}

impl AbiError for IsolatorError {
    fn code(&self) -> nestguard_result {
        match self.root() {
            Self::Parameter { .. } | Self::UserNamespace(_) => nestguard_result::IsolatorParameter,
            Self::LaunchInfoConflict(_) => nestguard_result::IsolatorLaunchInfoConflict,
            Self::Volume(_) => nestguard_result::IsolatorVolumeInvalid,
            Self::Escape { .. } => nestguard_result::IsolatorVolumeEscape,
            Self::Invalid(_) => nestguard_result::InvalidArgument,
            Self::Cgroup(e) => e.code(),
            Self::Injection(_) => nestguard_result::CredentialInjection,
            Self::Io { .. } => nestguard_result::Io,
            Self::UnknownContainer(_) => nestguard_result::IsolatorUnknownContainer,
            Self::Failed { .. } => nestguard_result::IsolatorFailed,
        }
    }
}
