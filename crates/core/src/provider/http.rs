//! HTTP failures of the providers and the waits between retries.

use serde_json::Value;

use crate::normalize::Provider;
use crate::{Error, ErrorCode};

/// What an HTTP error answer means: the error to report (its code and the
/// provider's own message) and whether trying again later may succeed.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub error: Error,
    pub retryable: bool,
}

/// The longest wait a `retry-after` may ask for that is honoured (60 s).
pub const MAX_RETRY_AFTER_MS: u64 = 60_000;
/// The longest wait of the growing backoff (30 s).
pub const MAX_BACKOFF_MS: u64 = 30_000;
const BASE_BACKOFF_MS: u64 = 500;
const MAX_MESSAGE_CHARS: usize = 1000;

/// The error code of a provider's error kind (Anthropic `error.type`, OpenAI
/// `error.type` / `error.code`, Gemini `error.status`), when it is one we know.
pub(crate) fn kind_code(kind: &str) -> Option<ErrorCode> {
    Some(match kind {
        "authentication_error"
        | "permission_error"
        | "invalid_api_key"
        | "billing_error"
        | "UNAUTHENTICATED"
        | "PERMISSION_DENIED"
        | "API_KEY_INVALID" => ErrorCode::ProviderAuth,
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "insufficient_quota"
        | "RESOURCE_EXHAUSTED"
        | "requests"
        | "tokens" => ErrorCode::ProviderRateLimited,
        "invalid_request_error"
        | "not_found_error"
        | "request_too_large"
        | "invalid_prompt"
        | "context_length_exceeded"
        | "INVALID_ARGUMENT"
        | "FAILED_PRECONDITION"
        | "NOT_FOUND"
        | "OUT_OF_RANGE" => ErrorCode::ProviderBadRequest,
        "overloaded_error"
        | "api_error"
        | "timeout_error"
        | "server_error"
        | "server_is_overloaded"
        | "service_unavailable"
        | "slow_down"
        | "UNAVAILABLE"
        | "INTERNAL"
        | "DEADLINE_EXCEEDED"
        | "UNKNOWN" => ErrorCode::ProviderUnavailable,
        _ => return None,
    })
}

/// The kind and message of a provider's error object (`{"error": {...}}`,
/// Anthropic's `{"type":"error","error":{...}}`, Gemini's `[{"error": {...}}]`,
/// or the error object itself).
pub(crate) fn error_parts(v: &Value) -> (Option<String>, Option<String>) {
    let v = match v {
        Value::Array(a) => a.first().unwrap_or(v),
        _ => v,
    };
    let e = match v.get("error") {
        Some(e @ Value::Object(_)) => e,
        Some(Value::String(s)) => return (None, Some(s.clone())),
        _ => v,
    };
    let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
    let gemini_reason = e
        .get("details")
        .and_then(Value::as_array)
        .and_then(|d| d.iter().find_map(|x| x.get("reason")?.as_str()))
        .filter(|r| *r == "API_KEY_INVALID")
        .map(str::to_string);
    let kind = gemini_reason
        .or_else(|| s("code").filter(|c| kind_code(c).is_some()))
        .or_else(|| s("type"))
        .or_else(|| s("status"))
        .or_else(|| s("code"));
    (kind, s("message"))
}

/// Text safe to show: credentials masked, at most 1000 characters.
pub(crate) fn clean_message(text: &str) -> String {
    let text = crate::secrets::redact_str(text).unwrap_or_else(|| text.to_string());
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// An HTTP error answer of the provider (`status` ≥ 300) as an error with the
/// provider's own message (read from its error JSON, else the body's start):
/// 401/403 `PROVIDER_AUTH`; 400/404/413/422 and other 4xx
/// `PROVIDER_BAD_REQUEST`; 429 `PROVIDER_RATE_LIMITED` (retryable unless the
/// quota is used up); 408, 409, 5xx and 529 `PROVIDER_UNAVAILABLE` (retryable).
/// The message never holds the key: anything shaped like a credential is masked.
pub fn http_failure(api: Provider, status: u16, body: &[u8], retry_after: Option<&str>) -> Failure {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let (kind, message) = parsed.as_ref().map(error_parts).unwrap_or((None, None));
    let kind_says = kind.as_deref().and_then(kind_code);
    let (code, mut retryable) = match status {
        401 | 403 => (ErrorCode::ProviderAuth, false),
        429 => (ErrorCode::ProviderRateLimited, true),
        408 | 409 | 500..=599 => (ErrorCode::ProviderUnavailable, true),
        400 if kind_says == Some(ErrorCode::ProviderAuth) => (ErrorCode::ProviderAuth, false),
        400..=499 => (ErrorCode::ProviderBadRequest, false),
        _ => (ErrorCode::ProviderUnavailable, false),
    };
    if matches!(
        kind.as_deref(),
        Some("insufficient_quota" | "billing_error")
    ) {
        retryable = false;
    }
    let message = match message {
        Some(m) => m,
        None => {
            let text = String::from_utf8_lossy(&body[..body.len().min(4 * MAX_MESSAGE_CHARS)]);
            let text = text.trim();
            if text.is_empty() {
                "no error message".to_string()
            } else {
                text.to_string()
            }
        }
    };
    let mut text = format!("{} answered HTTP {status}", api.name());
    if let Some(k) = &kind {
        text.push_str(&format!(" ({k})"));
    }
    text.push_str(": ");
    text.push_str(&clean_message(&message));
    if let Some(ra) = retry_after.and_then(|r| parse_retry_after(r, None)) {
        text.push_str(&format!(" (retry after {} s)", ra.div_ceil(1000)));
    }
    Failure {
        error: Error::new(code, text),
        retryable,
    }
}

/// The wait in milliseconds before retry number `attempt` (0 for the first
/// retry): a `retry-after` of seconds is honoured (up to 60 s); otherwise
/// 0.5 s doubling per attempt up to 30 s, of which the upper half is scaled by
/// `jitter` (a random number in 0..1 from the caller). An HTTP-date
/// `retry-after` needs the current time: see [`retry_wait_ms_at`].
pub fn retry_wait_ms(attempt: u32, retry_after: Option<&str>, jitter: f64) -> u64 {
    retry_wait_ms_at(attempt, retry_after, None, jitter, None)
}

/// [`retry_wait_ms`] that also reads `retry-after-ms` (OpenAI; it wins over
/// `retry-after`) and an HTTP-date `retry-after` relative to `now_ms` (ms
/// since the epoch).
pub fn retry_wait_ms_at(
    attempt: u32,
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
    jitter: f64,
    now_ms: Option<f64>,
) -> u64 {
    let asked = retry_after_ms
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v.ceil() as u64)
        .or_else(|| retry_after.and_then(|r| parse_retry_after(r, now_ms)));
    if let Some(ms) = asked {
        return ms.min(MAX_RETRY_AFTER_MS);
    }
    let full = BASE_BACKOFF_MS
        .saturating_mul(1u64 << attempt.min(20))
        .min(MAX_BACKOFF_MS);
    let j = if jitter.is_finite() {
        jitter.clamp(0.0, 1.0)
    } else {
        0.5
    };
    full / 2 + ((full / 2) as f64 * j) as u64
}

/// A `retry-after` value in ms: seconds (`"7"`, `"1.5"`), or an HTTP date when
/// the current time is known.
fn parse_retry_after(v: &str, now_ms: Option<f64>) -> Option<u64> {
    let v = v.trim();
    if let Ok(s) = v.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| (s * 1000.0).ceil() as u64);
    }
    let at = http_date_ms(v)?;
    let now = now_ms?;
    Some((at as f64 - now).max(0.0) as u64)
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) in ms since the epoch.
fn http_date_ms(v: &str) -> Option<i64> {
    let mut it = v.split_whitespace();
    let _weekday = it.next()?;
    let day: u32 = it.next()?.parse().ok()?;
    let month = match it.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u32 = it.next()?.parse().ok()?;
    let time = it.next()?;
    if it.next()? != "GMT" || time.len() != 8 {
        return None;
    }
    crate::time::iso_to_ms(&format!("{year:04}-{month:02}-{day:02}T{time}Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_caps() {
        assert_eq!(http_date_ms("Thu, 01 Jan 1970 00:00:10 GMT"), Some(10_000));
        assert_eq!(
            retry_wait_ms_at(
                0,
                Some("Thu, 01 Jan 1970 00:00:10 GMT"),
                None,
                0.0,
                Some(4_000.0)
            ),
            6_000
        );
        assert_eq!(retry_wait_ms(3, Some("1.5"), 0.9), 1_500);
        assert_eq!(retry_wait_ms(3, Some("3600"), 0.9), MAX_RETRY_AFTER_MS);
        assert_eq!(retry_wait_ms_at(0, Some("9"), Some("250"), 0.0, None), 250);
        assert_eq!(retry_wait_ms(0, None, 0.0), 250);
        assert_eq!(retry_wait_ms(0, None, 1.0), 500);
        assert_eq!(retry_wait_ms(40, None, 1.0), MAX_BACKOFF_MS);
        assert_eq!(
            retry_wait_ms(40, Some("soon"), f64::NAN),
            MAX_BACKOFF_MS * 3 / 4
        );
    }
}
