//! The stable result codes of the C ABI.
//!
//! One table, [`result_codes!`] below, is the only source of the codes: it
//! generates the enum (which the header test hands to cbindgen for
//! `include/nestguard.h`), the fixed description of every code (for
//! `nestguard_result_describe`) and the conversion from a raw `u32`. A new
//! code is one line in the table.

/// Generates [`nestguard_result`] and everything derived from its table.
///
/// Each row is `Variant = value => "description",` under the variant's doc
/// comment; the doc comments become the header's, the description is the
/// short text `nestguard_result_describe` returns.
macro_rules! result_codes {
    (
        $(#[doc = $enum_doc:literal])*
        pub enum $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $variant:ident = $value:literal => $description:literal,
            )*
        }
    ) => {
        $(#[doc = $enum_doc])*
        #[repr(u32)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[doc = $doc])* $variant = $value,)*
        }

        impl $name {
            /// Every code, in table order.
            pub const ALL: &[$name] = &[$($name::$variant),*];

            /// The doc comment of the type itself, one line per entry (as
            /// written, with its leading space): cbindgen's input.
            pub const DOC: &[&str] = &[$($enum_doc),*];

            /// A short, fixed description of the code.
            pub const fn description(self) -> &'static str {
                match self {
                    $(Self::$variant => $description,)*
                }
            }

            /// The description with a terminating NUL, for C.
            pub(crate) const fn description_nul(self) -> &'static str {
                match self {
                    $(Self::$variant => concat!($description, "\0"),)*
                }
            }

            /// The variant's Rust name (cbindgen derives the C name from it).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => stringify!($variant),)*
                }
            }

            /// The variant's doc comment, one line per entry (as written,
            /// with its leading space).
            pub const fn doc(self) -> &'static [&'static str] {
                match self {
                    $(Self::$variant => &[$($doc),*],)*
                }
            }
        }

        impl TryFrom<u32> for $name {
            type Error = UnknownResultCode;

            fn try_from(code: u32) -> Result<Self, UnknownResultCode> {
                match code {
                    $($value => Ok(Self::$variant),)*
                    other => Err(UnknownResultCode(other)),
                }
            }
        }
    };
}

/// A number that is not a [`nestguard_result`] code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown nestguard result code {0}")]
pub struct UnknownResultCode(pub u32);

impl From<nestguard_result> for u32 {
    fn from(code: nestguard_result) -> u32 {
        code as u32
    }
}

result_codes! {
    /// The result of a fallible nestguard function.
    ///
    /// Numbers are stable: a code is never renumbered or reused. Each module owns a
    /// range: 1–99 general, 100–199 wire types (protobuf, JSON, IDs, checkpoints),
    /// 200–299 authorization, 300–399 credentials, 400–499 the launcher,
    /// 500–599 isolators, 600–699 modules and the agent.
    pub enum nestguard_result {
        /// Success.
        Ok = 0 => "success",
        /// A required pointer argument was NULL.
        NullParameter = 1 => "a required argument was NULL",
        /// A panic was caught at the ABI boundary; the operation did not complete.
        Panic = 2 => "internal error: a panic was caught at the ABI boundary",
        /// An argument was out of range or inconsistent with another.
        InvalidArgument = 3 => "invalid argument",
        /// A string argument was not UTF-8.
        InvalidUtf8 = 4 => "a string argument was not valid UTF-8",
        /// The caller's buffer is too small; `*out_n` holds the size needed.
        BufferTooSmall = 5 => "the buffer is too small",
        /// An I/O error (the message names the file).
        Io = 6 => "I/O error",
        /// The operation is not supported in this build or configuration.
        Unsupported = 7 => "not supported",
        /// Serialized protobuf bytes did not decode as the expected message.
        ProtobufDecode = 100 => "protobuf bytes did not decode",
        /// A ContainerID failed Mesos' validation.
        InvalidContainerId = 101 => "invalid ContainerID",
        /// JSON did not parse into the expected message.
        Json = 102 => "invalid JSON",
        /// A checkpoint file could not be written or read.
        Checkpoint = 103 => "checkpoint error",
        /// ACLs did not load: bad JSON, wrong shape, or Mesos' validation failed
        /// (the message names the file, JSON path and line:column).
        AclsInvalid = 200 => "invalid ACLs",
        /// An object could not be authorized (Mesos' `approved()` error): treat
        /// as not authorized.
        AuthorizationFailed = 201 => "the object could not be authorized",
        /// A malformed authorization request (no action, empty subject or object).
        InvalidAuthorizationRequest = 202 => "invalid authorization request",
        /// A credentials file (or text) was refused; the message names the file
        /// and the line or JSON path.
        CredentialsFile = 300 => "invalid credentials file",
        /// A CRAM-MD5 message could not be decoded or the kind is unknown.
        CramMd5 = 301 => "CRAM-MD5 error",
        /// A JWT signing key could not be loaded.
        Jwt = 302 => "JWT error",
        /// The HTTP authenticator configuration is invalid.
        HttpAuthenticator = 303 => "invalid HTTP authenticator configuration",
        /// Credential injection failed (missing principal, secret or ids).
        CredentialInjection = 304 => "credential injection failed",
        /// The launcher does not know the container.
        LauncherUnknownContainer = 400 => "unknown container",
        /// A container with this id already exists.
        LauncherContainerExists = 401 => "container already exists",
        /// A nested launch under a parent that is not running.
        LauncherParentNotRunning = 402 => "parent container is not running",
        /// The launch helper failed before the container started.
        LauncherHelperFailed = 403 => "the launch helper failed",
        /// The container did not exit within the timeout.
        LauncherTimeout = 404 => "timed out waiting for the container",
        /// The launch info asks for something the launcher does not support.
        LauncherUnsupported = 405 => "not supported by the launcher",
        /// A process syscall or procfs read failed, or not every process could be killed.
        LauncherSystem = 406 => "launcher system error",
        /// A cgroup operation failed (the message names the file and OS error).
        Cgroup = 500 => "cgroup operation failed",
        /// The container has no cgroup.
        CgroupNotFound = 501 => "the container has no cgroup",
        /// The container's cgroup already exists.
        CgroupExists = 502 => "the container's cgroup already exists",
        /// No usable cgroup hierarchy or controller.
        CgroupUnavailable = 503 => "no usable cgroup hierarchy or controller",
        /// Killing, freezing or removing a cgroup did not finish in time.
        CgroupTimeout = 504 => "a cgroup operation timed out",
        /// An isolator module parameter is unknown or malformed (the message
        /// names the key).
        IsolatorParameter = 550 => "invalid isolator parameter",
        /// Launch infos of isolators conflict, or an isolator set a field
        /// isolators must not set (Mesos' merge rules).
        IsolatorLaunchInfoConflict = 551 => "conflicting isolator launch infos",
        /// A volume is invalid (Mesos' validation message).
        IsolatorVolumeInvalid = 552 => "invalid volume",
        /// A volume path leaves its sandbox (`..`, a symbolic link).
        IsolatorVolumeEscape = 553 => "a volume path escapes its sandbox",
        /// The isolator does not know the container.
        IsolatorUnknownContainer = 554 => "the isolator does not know the container",
        /// An isolator failed (the message names the isolator and phase).
        IsolatorFailed = 555 => "an isolator failed",
    }
}

/// An error that can cross the ABI: a stable code plus a detailed message.
pub trait AbiError: std::fmt::Display {
    /// The code this error maps to.
    fn code(&self) -> nestguard_result;
}

/// A fixed code with a message, for argument errors found at the boundary.
#[derive(Debug)]
pub struct Failure(pub nestguard_result, pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

impl AbiError for Failure {
    fn code(&self) -> nestguard_result {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// The C name cbindgen gives a variant (`rename_variants =
    /// "ScreamingSnakeCase"`, `prefix_with_name`).
    fn c_name(code: nestguard_result) -> String {
        let mut out = String::from("NESTGUARD_RESULT_");
        for (i, ch) in code.name().chars().enumerate() {
            if ch.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_uppercase());
        }
        out
    }

    #[test]
    fn every_code_round_trips_has_a_unique_description_and_is_in_the_header() {
        let header =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/nestguard.h"))
                .expect("read include/nestguard.h");
        let mut values = HashSet::new();
        let mut descriptions = HashSet::new();
        for &code in nestguard_result::ALL {
            let value = u32::from(code);
            assert_eq!(nestguard_result::try_from(value), Ok(code));
            assert!(values.insert(value), "{code:?}: value {value} twice");
            let text = code.description();
            assert!(!text.trim().is_empty(), "{code:?} has no description");
            assert!(
                descriptions.insert(text),
                "{code:?}: description '{text}' twice"
            );
            assert_eq!(code.description_nul().strip_suffix('\0'), Some(text));
            assert!(!code.doc().is_empty(), "{code:?} has no doc comment");
            let line = format!("  {} = {value},", c_name(code));
            assert!(
                header.lines().any(|l| l == line),
                "include/nestguard.h lacks '{line}'"
            );
        }
        assert_eq!(values.len(), nestguard_result::ALL.len());
        let in_header = header
            .lines()
            .filter(|l| l.starts_with("  NESTGUARD_RESULT_"))
            .count();
        assert_eq!(
            in_header,
            nestguard_result::ALL.len(),
            "header codes vs table"
        );
    }

    #[test]
    fn numbers_outside_the_table_are_refused() {
        for value in [8, 99, 104, 505, 556, 600, u32::MAX] {
            assert_eq!(
                nestguard_result::try_from(value),
                Err(UnknownResultCode(value))
            );
        }
    }
}
