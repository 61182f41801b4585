//! Calling model providers, the parts that are the same in every build: the
//! request body of a streaming call (from the canonical conversation, through
//! the `toProvider` encoders), the event stream of the answer read into pieces
//! and then into the canonical assistant message (text, thinking with its
//! signature, tool calls with their JSON arguments, usage, stop reason,
//! origin), HTTP failures and retry waits, and token prices. The bindings only
//! move bytes.

pub mod bind;
mod fast;
mod gpartial;
pub mod http;
pub mod pricing;
pub mod request;
pub mod response;
pub mod sse;
pub mod stream;

pub use bind::{build_request_json, defaults_json, http_failure_json};
pub use http::{Failure, http_failure, retry_wait_ms, retry_wait_ms_at};
pub use pricing::{Pricing, Rates, cost, default_pricing};
pub use request::{
    HttpRequest, RequestOptions, ThinkingOption, auth_header, build_request, build_request_cached,
    build_request_raw, default_base_url,
};
pub use response::{decode_response, decode_response_text};
pub use sse::{SseEvent, SseParser};
pub use stream::{StreamDecoder, StreamPiece};
