//! The stable result codes of the C ABI.

/// The result of a fallible nestguard function.
///
/// Numbers are stable: a code is never renumbered or reused. Each module owns a
/// range: 1–99 general, 100–199 wire types (protobuf, JSON, IDs, checkpoints),
/// 200–299 authorization, 300–399 credentials, 400–499 the launcher,
/// 500–599 isolators, 600–699 modules and the agent.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum nestguard_result {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullParameter = 1,
    /// A panic was caught at the ABI boundary; the operation did not complete.
    Panic = 2,
    /// An argument was out of range or inconsistent with another.
    InvalidArgument = 3,
    /// A string argument was not UTF-8.
    InvalidUtf8 = 4,
    /// The caller's buffer is too small; `*out_n` holds the size needed.
    BufferTooSmall = 5,
    /// An I/O error (the message names the file).
    Io = 6,
    /// The operation is not supported in this build or configuration.
    Unsupported = 7,
    /// Serialized protobuf bytes did not decode as the expected message.
    ProtobufDecode = 100,
    /// A ContainerID failed Mesos' validation.
    InvalidContainerId = 101,
    /// JSON did not parse into the expected message.
    Json = 102,
    /// A checkpoint file could not be written or read.
    Checkpoint = 103,
    /// ACLs did not load: bad JSON, wrong shape, or Mesos' validation failed
    /// (the message names the file, JSON path and line:column).
    AclsInvalid = 200,
    /// An object could not be authorized (Mesos' `approved()` error): treat
    /// as not authorized.
    AuthorizationFailed = 201,
    /// A malformed authorization request (no action, empty subject or object).
    InvalidAuthorizationRequest = 202,
    /// A credentials file (or text) was refused; the message names the file
    /// and the line or JSON path.
    CredentialsFile = 300,
    /// A CRAM-MD5 message could not be decoded or the kind is unknown.
    CramMd5 = 301,
    /// A JWT signing key could not be loaded.
    Jwt = 302,
    /// The HTTP authenticator configuration is invalid.
    HttpAuthenticator = 303,
    /// Credential injection failed (missing principal, secret or ids).
    CredentialInjection = 304,
    /// The launcher does not know the container.
    LauncherUnknownContainer = 400,
    /// A container with this id already exists.
    LauncherContainerExists = 401,
    /// A nested launch under a parent that is not running.
    LauncherParentNotRunning = 402,
    /// The launch helper failed before the container started.
    LauncherHelperFailed = 403,
    /// The container did not exit within the timeout.
    LauncherTimeout = 404,
    /// The launch info asks for something the launcher does not support.
    LauncherUnsupported = 405,
    /// A process syscall or procfs read failed, or not every process could be killed.
    LauncherSystem = 406,
    /// A cgroup operation failed (the message names the file and OS error).
    Cgroup = 500,
    /// The container has no cgroup.
    CgroupNotFound = 501,
    /// The container's cgroup already exists.
    CgroupExists = 502,
    /// No usable cgroup hierarchy or controller.
    CgroupUnavailable = 503,
    /// Killing, freezing or removing a cgroup did not finish in time.
    CgroupTimeout = 504,
    /// An isolator module parameter is unknown or malformed (the message
    /// names the key).
    IsolatorParameter = 550,
    /// Launch infos of isolators conflict, or an isolator set a field
    /// isolators must not set (Mesos' merge rules).
    IsolatorLaunchInfoConflict = 551,
    /// A volume is invalid (Mesos' validation message).
    IsolatorVolumeInvalid = 552,
    /// A volume path leaves its sandbox (`..`, a symbolic link).
    IsolatorVolumeEscape = 553,
    /// The isolator does not know the container.
    IsolatorUnknownContainer = 554,
    /// An isolator failed (the message names the isolator and phase).
    IsolatorFailed = 555,
}

impl nestguard_result {
    /// A short, fixed description of the code.
    pub fn description(self) -> &'static str {
        match self {
            Self::Ok => "success",
            Self::NullParameter => "a required argument was NULL",
            Self::Panic => "internal error: a panic was caught at the ABI boundary",
            Self::InvalidArgument => "invalid argument",
            Self::InvalidUtf8 => "a string argument was not valid UTF-8",
            Self::BufferTooSmall => "the buffer is too small",
            Self::Io => "I/O error",
            Self::Unsupported => "not supported",
            Self::ProtobufDecode => "protobuf bytes did not decode",
            Self::InvalidContainerId => "invalid ContainerID",
            Self::Json => "invalid JSON",
            Self::Checkpoint => "checkpoint error",
            Self::AclsInvalid => "invalid ACLs",
            Self::AuthorizationFailed => "the object could not be authorized",
            Self::InvalidAuthorizationRequest => "invalid authorization request",
            Self::CredentialsFile => "invalid credentials file",
            Self::CramMd5 => "CRAM-MD5 error",
            Self::Jwt => "JWT error",
            Self::HttpAuthenticator => "invalid HTTP authenticator configuration",
            Self::CredentialInjection => "credential injection failed",
            Self::LauncherUnknownContainer => "unknown container",
            Self::LauncherContainerExists => "container already exists",
            Self::LauncherParentNotRunning => "parent container is not running",
            Self::LauncherHelperFailed => "the launch helper failed",
            Self::LauncherTimeout => "timed out waiting for the container",
            Self::LauncherUnsupported => "not supported by the launcher",
            Self::LauncherSystem => "launcher system error",
            Self::Cgroup => "cgroup operation failed",
            Self::CgroupNotFound => "the container has no cgroup",
            Self::CgroupExists => "the container's cgroup already exists",
            Self::CgroupUnavailable => "no usable cgroup hierarchy or controller",
            Self::CgroupTimeout => "a cgroup operation timed out",
            Self::IsolatorParameter => "invalid isolator parameter",
            Self::IsolatorLaunchInfoConflict => "conflicting isolator launch infos",
            Self::IsolatorVolumeInvalid => "invalid volume",
            Self::IsolatorVolumeEscape => "a volume path escapes its sandbox",
            Self::IsolatorUnknownContainer => "the isolator does not know the container",
            Self::IsolatorFailed => "an isolator failed",
        }
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
