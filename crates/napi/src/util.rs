//! Shared conversions.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{SystemTime, UNIX_EPOCH};

use forkpoint_core::Error;
use napi::Status;
use napi::bindgen_prelude::{Either, Latin1String};

/// JSON text for JavaScript: ASCII text becomes a one-byte V8 string by a
/// plain copy, which is several times faster than decoding it as UTF-8.
pub type JsonText = Either<Latin1String, String>;

/// `s` as [`JsonText`].
pub fn json_text(s: String) -> JsonText {
    if s.is_ascii() {
        Either::A(Latin1String::from(s))
    } else {
        Either::B(s)
    }
}

/// A core error as a napi error (message = the error's JSON).
pub fn err(e: Error) -> napi::Error {
    napi::Error::new(Status::GenericFailure, e.to_json())
}

/// Runs `f`, turning a panic into an `INTERNAL` error.
pub fn guard<T>(f: impl FnOnce() -> forkpoint_core::Result<T>) -> napi::Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(err),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(err(Error::internal(format!(
                "forkpoint panicked: {what} (please report this)"
            ))))
        }
    }
}

/// Parses an options object given as JSON (`undefined` → defaults).
pub fn opts<T: forkpoint_core::types::OptionsJson>(
    json: Option<String>,
) -> forkpoint_core::Result<T> {
    forkpoint_core::types::options_from_json(json.as_deref())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A random seed from the OS.
pub fn seed() -> u64 {
    getrandom::u64().unwrap_or_else(|_| now_ms() as u64 ^ u64::from(std::process::id()) << 32)
}
