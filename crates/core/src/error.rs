//! One error type with stable codes.
//!
//! Every failure the library reports carries an [`ErrorCode`] whose string form
//! (`CORRUPTED_DATA`, `UNSUPPORTED_FORMAT`, ...) never changes between releases,
//! plus the path, 1-based line and byte offset where they apply. The bindings
//! turn it into a JavaScript `ForkpointError` with `.code`, `.path`, `.line`
//! and `.offset`.

use std::fmt;

/// Stable error codes. The string form is part of the public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ErrorCode {
    /// A line in the middle of a file is not valid JSON, not valid UTF-8, or not a valid entry.
    CorruptedData,
    /// The input is not a session this library reads (a Claude Code or Codex log, a binary
    /// file, an empty file, a newer format version).
    UnsupportedFormat,
    /// A line, nesting depth or entry count is over the configured limit.
    LimitExceeded,
    /// An argument is not acceptable (bad entry object, unknown option value).
    InvalidInput,
    /// An id is not acceptable (empty, already used).
    InvalidId,
    /// The entry, file or session asked for does not exist.
    NotFound,
    /// Another writer holds the session's lock.
    SessionLocked,
    /// Another process writes this event log (open it read-only to follow it).
    LogLocked,
    /// The file is an older format version and appending needs `{ migrate: true }`.
    MigrationRequired,
    /// The disk is full or a quota was hit; nothing acknowledged was lost.
    StorageFull,
    /// An operating-system I/O error.
    Io,
    /// The object was closed, or a previous write failed and the writer must be reopened.
    Closed,
    /// A bug in forkpoint (a caught panic or a broken invariant). Please report it.
    Internal,
    /// No agent with this id in the store.
    AgentNotFound,
    /// Another process (or another open in this one) runs this agent.
    AgentLocked,
    /// The agent's template is not in the template registry.
    TemplateNotFound,
    /// No snapshot (safe-fork-point) with this id.
    SnapshotNotFound,
    /// `decide` for a call that does not wait for a decision.
    PermissionNotPending,
    /// Another handle (another tab) changed the stored session between a read and
    /// a write, twice in a row; reload it and retry.
    Conflict,
    /// The operation was aborted by its `AbortSignal`; nothing of it was stored.
    Aborted,
    /// Another tab holds the database open at an older version and does not let
    /// it be upgraded; close that tab and retry.
    Blocked,
    /// A session with this id is already in the store (import it with another `id`, or as a copy).
    AlreadyExists,
    /// This writer's lease on the agent was taken over (or released): the write
    /// carried a stale fencing token and nothing of it was stored.
    LeaseLost,
    /// The model provider refused the API key (HTTP 401/403, or an authentication
    /// error in the stream). Not retried: fix the key or its permissions.
    ProviderAuth,
    /// The model provider asks to slow down (HTTP 429, a rate-limit error in the
    /// stream). Retried after a wait unless the quota is used up.
    ProviderRateLimited,
    /// The model provider rejected the request as invalid (HTTP 400/404/413/422,
    /// `invalid_request_error`): the message says what it objected to. Not retried.
    ProviderBadRequest,
    /// The model provider is overloaded, down or timed out (HTTP 408/409/5xx/529,
    /// an overloaded or server error in the stream). Retried after a wait while
    /// nothing of the answer was delivered.
    ProviderUnavailable,
    /// The provider's answer broke its own format: bad JSON in an event, a delta
    /// for a block never started, tool arguments that are not JSON, or a stream
    /// that ended before its last event. The message says what and at which event.
    ProviderProtocol,
    /// No native binary of the `forkpoint` addon fits this platform, or its
    /// platform package is not installed (raised by the package's loader; the
    /// message names the platform and what to install).
    UnsupportedPlatform,
    /// The agent store's server (PostgreSQL) cannot be reached or used: the
    /// connection was refused, timed out or dropped, the server is shutting
    /// down, or it refused the credentials. The message says which. Nothing of
    /// the operation was stored unless it says otherwise; retry when the server is back.
    StoreUnavailable,
}

impl ErrorCode {
    /// The stable string form, e.g. `"CORRUPTED_DATA"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::CorruptedData => "CORRUPTED_DATA",
            ErrorCode::UnsupportedFormat => "UNSUPPORTED_FORMAT",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorCode::InvalidInput => "INVALID_INPUT",
            ErrorCode::InvalidId => "INVALID_ID",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::SessionLocked => "SESSION_LOCKED",
            ErrorCode::LogLocked => "LOG_LOCKED",
            ErrorCode::MigrationRequired => "MIGRATION_REQUIRED",
            ErrorCode::StorageFull => "STORAGE_FULL",
            ErrorCode::Io => "IO",
            ErrorCode::Closed => "CLOSED",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::AgentNotFound => "AGENT_NOT_FOUND",
            ErrorCode::AgentLocked => "AGENT_LOCKED",
            ErrorCode::TemplateNotFound => "TEMPLATE_NOT_FOUND",
            ErrorCode::SnapshotNotFound => "SNAPSHOT_NOT_FOUND",
            ErrorCode::PermissionNotPending => "PERMISSION_NOT_PENDING",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::Blocked => "BLOCKED",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::LeaseLost => "LEASE_LOST",
            ErrorCode::ProviderAuth => "PROVIDER_AUTH",
            ErrorCode::ProviderRateLimited => "PROVIDER_RATE_LIMITED",
            ErrorCode::ProviderBadRequest => "PROVIDER_BAD_REQUEST",
            ErrorCode::ProviderUnavailable => "PROVIDER_UNAVAILABLE",
            ErrorCode::ProviderProtocol => "PROVIDER_PROTOCOL",
            ErrorCode::UnsupportedPlatform => "UNSUPPORTED_PLATFORM",
            ErrorCode::StoreUnavailable => "STORE_UNAVAILABLE",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with a stable code and, where they apply, the file path, the
/// 1-based line number and the byte offset of the line's first byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "ErrorInfo"))]
pub struct Error {
    /// Stable machine-readable code.
    pub code: ErrorCode,
    /// Human-readable explanation, including what to do about it where we know.
    pub message: String,
    /// The file the error is about, when there is one.
    pub path: Option<String>,
    /// 1-based line number in the file.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub line: Option<u64>,
    /// Byte offset of the start of the line (or of the bad byte) in the file.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub offset: Option<u64>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        match (&self.path, self.line, self.offset) {
            (Some(p), Some(l), Some(o)) => write!(f, " ({p}, line {l}, byte {o})"),
            (Some(p), None, Some(o)) => write!(f, " ({p}, byte {o})"),
            (Some(p), _, None) => write!(f, " ({p})"),
            (None, Some(l), Some(o)) => write!(f, " (line {l}, byte {o})"),
            (None, None, Some(o)) => write!(f, " (byte {o})"),
            _ => Ok(()),
        }
    }
}

impl Error {
    /// A new error without location.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            path: None,
            line: None,
            offset: None,
        }
    }

    /// Shorthand for [`ErrorCode::CorruptedData`].
    pub fn corrupted(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::CorruptedData, message)
    }

    /// Shorthand for [`ErrorCode::UnsupportedFormat`].
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UnsupportedFormat, message)
    }

    /// Shorthand for [`ErrorCode::InvalidInput`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }

    /// Shorthand for [`ErrorCode::NotFound`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// Shorthand for [`ErrorCode::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// Sets the line and offset.
    pub fn at(mut self, line: Option<u64>, offset: u64) -> Self {
        self.line = line;
        self.offset = Some(offset);
        self
    }

    /// Sets the path unless one is already set.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        if self.path.is_none() {
            self.path = Some(path.into());
        }
        self
    }

    /// The error as one JSON object (`{"code","message","path","line","offset"}`):
    /// how the bindings hand errors to the TypeScript layer.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            format!(
                "{{\"code\":\"{}\",\"message\":\"unserializable error\"}}",
                self.code
            )
        })
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
