//! The providers' core functions for `createProvider` (request bodies, SSE
//! decoding, error codes, retry waits): each converts, calls the core, converts.

use forkpoint_core::normalize::Provider;
use forkpoint_core::provider::{self, stream::StreamDecoder};
use napi::bindgen_prelude::Uint8Array;
use napi_derive::napi;

use crate::util::guard;

/// `{api, piApi, vendor, baseURL, authHeader, authPrefix, keyVars}` of wire format `api` (JSON).
#[napi]
pub fn provider_defaults_json(api: String) -> napi::Result<String> {
    guard(|| provider::defaults_json(&api))
}

/// The HTTP request (`{path, headers, body, report}`, JSON) for a model call
/// in wire format `api`: `options` is `{model, maxTokens?, temperature?,
/// thinking?}`, `messages` the canonical context, `tools` `{name, description,
/// inputSchema}[]`.
#[napi]
pub fn build_provider_request_json(
    api: String,
    options_json: String,
    system: Option<String>,
    messages_json: String,
    tools_json: String,
) -> napi::Result<String> {
    guard(|| {
        provider::build_request_json(
            &api,
            &options_json,
            system.as_deref(),
            &messages_json,
            &tools_json,
        )
    })
}

/// What an HTTP error answer means: `{code, message, retryable}` (JSON).
#[napi]
pub fn provider_http_failure_json(
    api: String,
    status: u32,
    body: Uint8Array,
    retry_after: Option<String>,
) -> napi::Result<String> {
    guard(|| {
        provider::http_failure_json(
            &api,
            u16::try_from(status).unwrap_or(u16::MAX),
            &body,
            retry_after.as_deref(),
        )
    })
}

/// How long to wait (ms) before retry `attempt` (from 0): what the answer's
/// `retry-after-ms` (wins) or `retry-after` (seconds, or an HTTP date read
/// against `nowMs`, ms since the epoch) asks, else a growing wait scaled by
/// `jitter` in [0, 1).
#[napi]
pub fn provider_retry_wait_ms(
    attempt: u32,
    retry_after: Option<String>,
    retry_after_ms: Option<String>,
    jitter: f64,
    now_ms: Option<f64>,
) -> f64 {
    provider::http::retry_wait_ms_at(
        attempt,
        retry_after.as_deref(),
        retry_after_ms.as_deref(),
        jitter,
        now_ms,
    ) as f64
}

/// Decodes a provider's streamed answer (SSE bytes in any split) into pieces
/// and, at the end, the canonical assistant message.
#[napi]
pub struct NativeStreamDecoder {
    inner: StreamDecoder,
}

#[napi]
impl NativeStreamDecoder {
    /// A decoder for wire format `api`; answers carry `provider` and `model`.
    #[napi(constructor)]
    pub fn new(api: String, provider: String, model: String) -> napi::Result<Self> {
        guard(|| {
            Ok(NativeStreamDecoder {
                inner: StreamDecoder::new(Provider::parse(&api)?, &provider, &model),
            })
        })
    }

    /// Tool names the request renamed (its `nameMap`, JSON) and the prices
    /// for the usage's cost (`{input, output, cacheRead?, cacheWrite?}`, JSON).
    #[napi]
    pub fn configure(
        &mut self,
        name_map_json: Option<String>,
        pricing_json: Option<String>,
    ) -> napi::Result<()> {
        guard(|| {
            self.inner
                .configure_json(name_map_json.as_deref(), pricing_json.as_deref())
        })
    }

    /// Feeds bytes; the pieces they complete (`{type, index, …}[]`, JSON).
    #[napi]
    pub fn push(&mut self, bytes: Uint8Array) -> napi::Result<String> {
        guard(|| self.inner.push_json(&bytes))
    }

    /// The end of the body: the assistant message (JSON).
    #[napi]
    pub fn finish(&mut self) -> napi::Result<String> {
        guard(|| self.inner.finish_json())
    }

    /// Whether any content was decoded (a retry would repeat it).
    #[napi(getter)]
    pub fn delivered(&self) -> bool {
        self.inner.delivered()
    }
}
