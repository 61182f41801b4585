//! PostgreSQL errors as forkpoint errors with stable codes.

use forkpoint_core::{Error, ErrorCode};

/// The forkpoint error for a failed PostgreSQL call made while doing `what`.
pub(crate) fn pg_error(e: &postgres::Error, what: &str) -> Error {
    if let Some(tls) = tls_cause(e) {
        let hint = if matches!(tls, rustls::Error::InvalidCertificate(_)) {
            " (sslmode=verify-ca and verify-full check the server's certificate against sslrootcert's; verify-full also checks that it is made out to the host)"
        } else {
            ""
        };
        return Error::new(
            ErrorCode::StoreUnavailable,
            format!("{what}: the TLS handshake with the PostgreSQL server failed: {tls}{hint}"),
        );
    }
    let Some(db) = e.as_db_error() else {
        // No answer from the server: refused, unreachable, timed out, dropped.
        let why = with_causes(e);
        if why.contains("server does not support TLS") {
            return Error::new(
                ErrorCode::StoreUnavailable,
                format!(
                    "{what}: the PostgreSQL server does not support TLS, which the connection string's sslmode requires ({why})"
                ),
            );
        }
        return Error::new(
            ErrorCode::StoreUnavailable,
            format!("{what}: cannot reach the PostgreSQL server ({why})"),
        );
    };
    let code = db.code().code();
    let msg = db.message();
    let (kind, text) = match code {
        // pg_hba.conf's hostssl and hostnossl lines.
        "28000" if msg.contains("no encryption") => (
            ErrorCode::StoreUnavailable,
            format!(
                "the PostgreSQL server accepts this connection only over TLS: {msg} (set sslmode=require, or verify-full with sslrootcert)"
            ),
        ),
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

/// The errors `e` wraps, outermost first.
fn causes(e: &postgres::Error) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
    std::iter::successors(std::error::Error::source(e), |err| err.source())
}

/// `e` and the errors it wraps, as `a: b: c` (tokio-postgres's own text
/// leaves them out: "error performing TLS handshake").
fn with_causes(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    for err in causes(e) {
        let more = err.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
    }
    text
}

/// The rustls error a failed connection carries, if any (tokio-rustls gives
/// it inside an `io::Error`, whose `source` skips it).
fn tls_cause(e: &postgres::Error) -> Option<&rustls::Error> {
    causes(e).find_map(|err| {
        err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        })
    })
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
