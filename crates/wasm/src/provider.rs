//! The providers' core functions for `createProvider` in browsers (request
//! bodies, SSE decoding, error codes, retry waits): the same as the Node
//! addon's, JSON text in and out.

use forkpoint_core::normalize::Provider;
use forkpoint_core::provider::{self, stream::StreamDecoder};
use wasm_bindgen::prelude::*;

use crate::util::err;

/// `{api, piApi, vendor, baseURL, authHeader, authPrefix, keyVars}` of wire format `api` (JSON).
#[wasm_bindgen(js_name = providerDefaultsJson)]
pub fn provider_defaults_json(api: &str) -> Result<String, JsError> {
    provider::defaults_json(api).map_err(err)
}

/// The HTTP request (`{path, headers, body, report}`, JSON) for a model call in wire format `api`.
#[wasm_bindgen(js_name = buildProviderRequestJson)]
pub fn build_provider_request_json(
    api: &str,
    options_json: &str,
    system: Option<String>,
    messages_json: &str,
    tools_json: &str,
) -> Result<String, JsError> {
    provider::build_request_json(
        api,
        options_json,
        system.as_deref(),
        messages_json,
        tools_json,
    )
    .map_err(err)
}

/// What an HTTP error answer means: `{code, message, retryable}` (JSON).
#[wasm_bindgen(js_name = providerHttpFailureJson)]
pub fn provider_http_failure_json(
    api: &str,
    status: u32,
    body: &[u8],
    retry_after: Option<String>,
) -> Result<String, JsError> {
    provider::http_failure_json(
        api,
        u16::try_from(status).unwrap_or(u16::MAX),
        body,
        retry_after.as_deref(),
    )
    .map_err(err)
}

/// How long to wait (ms) before retry `attempt` (from 0): what the answer's
/// `retry-after-ms` (wins) or `retry-after` (seconds, or an HTTP date read
/// against `nowMs`, ms since the epoch) asks, else a growing wait scaled by
/// `jitter` in [0, 1).
#[wasm_bindgen(js_name = providerRetryWaitMs)]
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
#[wasm_bindgen]
pub struct NativeStreamDecoder {
    inner: StreamDecoder,
}

#[wasm_bindgen]
impl NativeStreamDecoder {
    /// A decoder for wire format `api`; answers carry `provider` and `model`.
    #[wasm_bindgen(constructor)]
    pub fn new(api: &str, provider: &str, model: &str) -> Result<NativeStreamDecoder, JsError> {
        Ok(NativeStreamDecoder {
            inner: StreamDecoder::new(Provider::parse(api).map_err(err)?, provider, model),
        })
    }

    /// Tool names the request renamed (its `nameMap`, JSON) and the prices
    /// for the usage's cost (`{input, output, cacheRead?, cacheWrite?}`, JSON).
    pub fn configure(
        &mut self,
        name_map_json: Option<String>,
        pricing_json: Option<String>,
    ) -> Result<(), JsError> {
        self.inner
            .configure_json(name_map_json.as_deref(), pricing_json.as_deref())
            .map_err(err)
    }

    /// Feeds bytes; the pieces they complete (`{type, index, …}[]`, JSON).
    pub fn push(&mut self, bytes: &[u8]) -> Result<String, JsError> {
        self.inner.push_json(bytes).map_err(err)
    }

    /// The end of the body: the assistant message (JSON).
    pub fn finish(&mut self) -> Result<String, JsError> {
        self.inner.finish_json().map_err(err)
    }

    /// Whether any content was decoded (a retry would repeat it).
    #[wasm_bindgen(getter)]
    pub fn delivered(&self) -> bool {
        self.inner.delivered()
    }
}
