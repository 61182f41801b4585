//! Provider conversion for browsers: the same core functions as the Node
//! addon's, JSON text in and out (so raw numbers survive).

use forkpoint_core::normalize;
use wasm_bindgen::prelude::*;

use crate::util::err;

/// `fromProvider`: a provider request fragment → `{system?, systemRole?, messages, tools?}` (JSON).
#[wasm_bindgen(js_name = fromProviderJson)]
pub fn from_provider_json(request: &str, provider: &str) -> Result<String, JsError> {
    normalize::from_provider(request, provider).map_err(err)
}

/// `toProvider`: canonical messages → the request's JSON, a newline, then
/// `{report, idMap, nameMap}`, as UTF-8 bytes (the body is sent as bytes; a
/// string is made of it only when asked for).
#[wasm_bindgen(js_name = toProviderBytes)]
pub fn to_provider_bytes(
    messages: String,
    target: &str,
    options: Option<String>,
) -> Result<Vec<u8>, JsError> {
    crate::util::reserve_memory(messages.len().saturating_mul(2));
    normalize::to_provider_lines(messages, target, options.as_deref(), 1)
        .map(String::into_bytes)
        .map_err(err)
}

/// A conversation that grows, and its request for one target
/// (`requestBuilder`): each build converts only the messages after the part
/// kept from the build before.
#[wasm_bindgen]
pub struct NativeRequestBuilder {
    inner: normalize::incremental::RequestBuilder,
    /// The kept pieces of the last body given to JavaScript.
    held: forkpoint_core::provider::request::Held,
}

#[wasm_bindgen]
impl NativeRequestBuilder {
    /// `options`: `toProvider`'s options as JSON.
    #[wasm_bindgen(constructor)]
    pub fn new(target: &str, options: Option<String>) -> Result<NativeRequestBuilder, JsError> {
        Ok(NativeRequestBuilder {
            inner: normalize::incremental::RequestBuilder::new(target, options.as_deref())
                .map_err(err)?,
            held: Default::default(),
        })
    }

    /// Appends messages (a JSON array, or one message); returns how many there are.
    #[wasm_bindgen(js_name = pushJson)]
    pub fn push_json(&mut self, messages: String) -> Result<u32, JsError> {
        self.inner
            .push_text(messages, 1)
            .map(|n| n as u32)
            .map_err(err)
    }

    /// The request body (UTF-8 JSON) for the whole conversation, in parts:
    /// `[id, bytes | null, …]` (`util::body_parts`).
    #[wasm_bindgen(unchecked_return_type = "Array<number | Uint8Array | null>")]
    pub fn build(&mut self) -> Result<js_sys::Array, JsError> {
        let body = self.inner.build().map_err(err)?;
        Ok(crate::util::body_parts(body, &mut self.held))
    }

    /// The last build's `{report, idMap, nameMap}`, made when read (it stays
    /// that build's after later ones).
    pub fn meta(&self) -> Result<NativeBuildMeta, JsError> {
        self.inner
            .meta()
            .map(|inner| NativeBuildMeta { inner })
            .map_err(err)
    }

    /// Messages whose conversion the next build reuses.
    pub fn kept(&self) -> u32 {
        self.inner.kept() as u32
    }
}

/// One build's `{report, idMap, nameMap}` (`NativeRequestBuilder.meta`).
#[wasm_bindgen]
pub struct NativeBuildMeta {
    inner: normalize::incremental::BuildMeta,
}

#[wasm_bindgen]
impl NativeBuildMeta {
    /// `{report, idMap, nameMap}` (JSON).
    pub fn json(&self) -> Result<String, JsError> {
        self.inner.json().map_err(err)
    }
}

/// `MessageNormalizer.normalize`: one provider message → canonical message(s) (JSON).
#[wasm_bindgen(js_name = normalizeMessageJson)]
pub fn normalize_message_json(message: &str, provider: &str) -> Result<String, JsError> {
    normalize::normalize_message(message, provider).map_err(err)
}

/// `MessageNormalizer.denormalize`: canonical message(s) → `{message, report}` (JSON).
#[wasm_bindgen(js_name = denormalizeMessageJson)]
pub fn denormalize_message_json(
    normalized: &str,
    provider: &str,
    model: Option<String>,
) -> Result<String, JsError> {
    normalize::denormalize_message(normalized, provider, model.as_deref()).map_err(err)
}

/// `SessionMigrator.checkCompatibility` (CompatibilityReport as JSON).
#[wasm_bindgen(js_name = checkCompatibilityJson)]
pub fn check_compatibility_json(source: &str, target: &str) -> Result<String, JsError> {
    let r = normalize::check_compatibility(source, target).map_err(err)?;
    forkpoint_core::types::to_json_text(&r).map_err(err)
}

/// `SessionMigrator.migrate` over text: feed lines, get the migrated lines back.
#[wasm_bindgen]
pub struct NativeMigration {
    inner: normalize::migrate::Migration,
}

#[wasm_bindgen]
impl NativeMigration {
    #[wasm_bindgen(constructor)]
    pub fn new(
        from: &str,
        to: &str,
        model: Option<String>,
        now_iso: &str,
    ) -> Result<NativeMigration, JsError> {
        Ok(NativeMigration {
            inner: normalize::migrate::Migration::new(
                normalize::Provider::parse(from).map_err(err)?,
                normalize::Provider::parse(to).map_err(err)?,
                model,
                now_iso,
            ),
        })
    }

    /// Migrates text given in pieces of any size; returns the output of the lines it completes.
    pub fn push(&mut self, text: &str) -> Result<String, JsError> {
        self.inner.push(text).map_err(err)
    }

    /// The output of a last line without a newline, after the last piece.
    pub fn finish(&mut self) -> Result<String, JsError> {
        self.inner.finish().map_err(err)
    }

    /// Messages changed so far.
    #[wasm_bindgen(getter, js_name = messagesChanged)]
    pub fn messages_changed(&self) -> f64 {
        self.inner.changed as f64
    }

    /// `{report, idMap}` (JSON).
    #[wasm_bindgen(js_name = resultJson)]
    pub fn result_json(&self) -> Result<String, JsError> {
        self.inner.result_json().map_err(err)
    }
}

/// `importSession`: a pi, Claude Code or Codex session's bytes → the
/// ImportSummary (JSON), a newline, then the pi v3 session text. `session_id`
/// null: the id derived from the source (FORMAT.md §15.7). `limits` is
/// `LimitOptions` as JSON.
/// `LIMIT_EXCEEDED` when a file of `size` bytes is more than `limits`'
/// `maxFileBytes` allows (LimitOptions as JSON): checked before a `Blob` is
/// read whole.
#[wasm_bindgen(js_name = checkFileSize)]
pub fn check_file_size(
    size: f64,
    limits: Option<String>,
    path: Option<String>,
) -> Result<(), JsError> {
    let limits: forkpoint_core::LimitOptions =
        forkpoint_core::types::options_from_json(limits.as_deref()).map_err(err)?;
    limits.check_claimed_file_size(size, path).map_err(err)
}

#[wasm_bindgen(js_name = importSessionJson)]
pub fn import_session_json(
    bytes: &[u8],
    format: &str,
    session_id: Option<String>,
    now_iso: &str,
    limits: Option<String>,
) -> Result<String, JsError> {
    let f = normalize::import::ImportFormat::parse(format).map_err(err)?;
    let limits: forkpoint_core::LimitOptions =
        forkpoint_core::types::options_from_json(limits.as_deref()).map_err(err)?;
    let (text, summary) =
        normalize::import::import_session_with(bytes, f, session_id.as_deref(), now_iso, &limits)
            .map_err(err)?;
    let mut out = forkpoint_core::types::to_json_text(&summary).map_err(err)?;
    out.push('\n');
    out.push_str(&text);
    Ok(out)
}
