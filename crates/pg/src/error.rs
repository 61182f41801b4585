//! PostgreSQL errors as forkpoint errors with stable codes.

use forkpoint_core::{Error, ErrorCode};

/// The forkpoint error for a failed PostgreSQL call made while doing `what`.
pub(crate) fn pg_error(e: &postgres::Error, what: &str) -> Error {
    let Some(db) = e.as_db_error() else {
        // No answer from the server: refused, unreachable, timed out, dropped.
        return Error::new(
            ErrorCode::StoreUnavailable,
            format!("{what}: cannot reach the PostgreSQL server ({e})"),
        );
    };
    let code = db.code().code();
    let msg = db.message();
    let (kind, text) = match code {
        "28P01" | "28000" => (
            ErrorCode::StoreUnavailable,
            format!(
                "the PostgreSQL server refused the credentials: {msg} (check the user and password of the connection string)"
            ),
        ),
        "3D000" => (
            ErrorCode::StoreUnavailable,
            format!("the PostgreSQL database does not exist: {msg}"),
        ),
        "55P03" => (
            ErrorCode::AgentLocked,
            format!(
                "another holder is writing the agent and did not finish within a lease's time: {msg}"
            ),
        ),
        "53100" => (
            ErrorCode::StorageFull,
            format!("the PostgreSQL server's disk is full: {msg}"),
        ),
        c if c.starts_with("08") || c.starts_with("57P") || c == "53300" => (
            ErrorCode::StoreUnavailable,
            format!("the PostgreSQL server cannot serve the request: {msg}"),
        ),
        _ => (ErrorCode::Io, format!("PostgreSQL error {code}: {msg}")),
    };
    Error::new(kind, format!("{what}: {text}"))
}

/// `Result<T, postgres::Error>` → `forkpoint_core::Result<T>`.
pub(crate) trait Pg<T> {
    /// Maps the error, saying what was being done.
    fn pg(self, what: &str) -> forkpoint_core::Result<T>;
}

impl<T> Pg<T> for Result<T, postgres::Error> {
    fn pg(self, what: &str) -> forkpoint_core::Result<T> {
        self.map_err(|e| pg_error(&e, what))
    }
}
