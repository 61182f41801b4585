//! Provider conversion (`MessageNormalizer`, `toProvider`, `fromProvider`,
//! `SessionMigrator`): JSON text in, JSON text out, so raw numbers survive.

use std::path::Path;
use std::sync::{Arc, Mutex};

use forkpoint_core::normalize::{self, Provider};
use forkpoint_core::{Error, time::ms_to_iso};
use forkpoint_fs::migrate::FileMigration;
use napi::bindgen_prelude::{AsyncTask, Buffer, Uint8ArraySlice, Utf16String};
use napi::{Env, JsString, Task};
use napi_derive::napi;

use crate::util::{
    JsonText, err, external_string, guard, json_text, now_ms, opts, push_utf16_with, utf8_of,
};

/// `fromProvider`: a provider request fragment → `{system?, systemRole?, messages, tools?}` (JSON).
#[napi(ts_return_type = "string")]
pub fn from_provider_json(request: String, provider: String) -> napi::Result<JsonText> {
    guard(|| normalize::from_provider(&request, &provider).map(json_text))
}

/// `toProvider`: canonical messages → the request's JSON, a newline, then
/// `{report, idMap, nameMap}`, as UTF-8 bytes (the body is sent as bytes; a
/// string is made of it only when asked for).
#[napi]
pub fn to_provider_bytes(
    messages: Utf16String,
    target: String,
    options: Option<String>,
) -> napi::Result<Buffer> {
    provider_lines(utf8_of(&messages), &target, options.as_deref())
}

/// [`normalize::to_provider_lines`] of `text` on the scan threads, as a Buffer.
fn provider_lines(text: String, target: &str, options: Option<&str>) -> napi::Result<Buffer> {
    guard(|| {
        normalize::to_provider_lines(text, target, options, forkpoint_fs::io::scan_threads())
            .map(|s| s.into_bytes().into())
    })
}

/// UTF-8 bytes (a conversion's body) as a JS string whose characters V8
/// keeps outside its heap ([`external_string`]).
#[napi(ts_return_type = "string")]
pub fn utf8_to_string<'env>(
    env: &'env Env,
    bytes: Uint8ArraySlice<'env>,
) -> napi::Result<JsString<'env>> {
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(err(Error::invalid_input("the bytes are not UTF-8")));
    };
    external_string(env, text, forkpoint_fs::io::scan_threads())
}

/// A long JS string's text gathered in pieces for `toProvider`: each piece
/// crosses as UTF-16 into a small buffer and is transcoded onto the text
/// (as [`utf8_of`] does), so the whole string is never copied as UTF-16 (for
/// a 124 MiB context that copy alone was 248 MB of fresh memory).
#[napi]
pub struct NativeUtf8Text {
    text: String,
    /// Room for a piece's UTF-8, kept from piece to piece (made anew for
    /// each, it was fresh memory to fault in each time: for a 124 MiB
    /// context the crossing took 171–256 ms, with it kept 145–189 ms).
    scratch: String,
}

#[napi]
impl NativeUtf8Text {
    /// `units`: the string's length, which the text's is close to (room
    /// that cannot be had is not reserved: the text then grows as it comes).
    #[napi(constructor)]
    pub fn new(units: u32) -> Self {
        let units = units as usize;
        let mut text = String::new();
        let _ = text.try_reserve_exact(units + units / 16);
        NativeUtf8Text {
            text,
            scratch: String::new(),
        }
    }

    /// Appends a piece (the caller never cuts a surrogate pair in two).
    #[napi]
    pub fn push(&mut self, piece: Utf16String) {
        push_utf16_with(&mut self.text, &piece, &mut self.scratch);
    }

    /// The text gathered (which is then gone).
    fn take(&mut self) -> String {
        self.scratch = String::new();
        std::mem::take(&mut self.text)
    }

    /// [`to_provider_bytes`] of the text gathered (which is then gone).
    #[napi(js_name = "toProviderBytes")]
    pub fn provider_bytes(
        &mut self,
        target: String,
        options: Option<String>,
    ) -> napi::Result<Buffer> {
        provider_lines(self.take(), &target, options.as_deref())
    }
}

/// `MessageNormalizer.normalize`: one provider message → canonical message(s) (JSON).
#[napi(ts_return_type = "string")]
pub fn normalize_message_json(message: String, provider: String) -> napi::Result<JsonText> {
    guard(|| normalize::normalize_message(&message, &provider).map(json_text))
}

/// `MessageNormalizer.denormalize`: canonical message(s) → `{message, report}` (JSON).
#[napi(ts_return_type = "string")]
pub fn denormalize_message_json(
    normalized: String,
    provider: String,
    model: Option<String>,
) -> napi::Result<JsonText> {
    guard(|| {
        normalize::denormalize_message(&normalized, &provider, model.as_deref()).map(json_text)
    })
}

/// `SessionMigrator.checkCompatibility` (CompatibilityReport as JSON).
#[napi]
pub fn check_compatibility_json(source: String, target: String) -> napi::Result<String> {
    guard(|| {
        let r = normalize::check_compatibility(&source, &target)?;
        forkpoint_core::types::to_json_text(&r)
    })
}

/// A conversation that grows, and its request for one target
/// (`requestBuilder`): each build converts only the messages after the part
/// kept from the build before.
#[napi]
pub struct NativeRequestBuilder {
    inner: normalize::incremental::RequestBuilder,
    /// What JavaScript was handed of the bodies built.
    handed: crate::util::Handed,
}

#[napi]
impl NativeRequestBuilder {
    /// `options`: `toProvider`'s options as JSON.
    #[napi(constructor)]
    pub fn new(target: String, options: Option<String>) -> napi::Result<Self> {
        guard(|| {
            Ok(NativeRequestBuilder {
                inner: normalize::incremental::RequestBuilder::new(&target, options.as_deref())?,
                handed: Default::default(),
            })
        })
    }

    /// Appends messages (a JSON array, or one message); returns how many there are.
    #[napi]
    pub fn push_json(&mut self, messages: String) -> napi::Result<u32> {
        guard(|| {
            self.inner
                .push_text(messages, forkpoint_fs::io::scan_threads())
                .map(|n| n as u32)
        })
    }

    /// [`NativeRequestBuilder::push_json`] of a long string gathered in pieces
    /// (which is then gone).
    #[napi]
    pub fn push_utf8(&mut self, text: &mut NativeUtf8Text) -> napi::Result<u32> {
        self.push_json(text.take())
    }

    /// The request body (UTF-8 JSON) for the whole conversation, in parts:
    /// `[id, bytes | null, …]` (`util::body_parts`: a kept piece's bytes are
    /// given once; the caller keeps the last body's pieces by id).
    #[napi(ts_return_type = "Array<number | Buffer | null>")]
    pub fn build<'env>(&mut self, env: &'env Env) -> napi::Result<crate::util::BodyParts<'env>> {
        let body = guard(|| self.inner.build())?;
        crate::util::body_parts(env, body, &mut self.handed)
    }

    /// The last build's `{report, idMap, nameMap}`, made when read (it stays
    /// that build's after later ones).
    #[napi]
    pub fn meta(&self) -> napi::Result<NativeBuildMeta> {
        guard(|| self.inner.meta()).map(|inner| NativeBuildMeta { inner })
    }

    /// Messages whose conversion the next build reuses.
    #[napi]
    pub fn kept(&self) -> u32 {
        self.inner.kept() as u32
    }
}

/// One build's `{report, idMap, nameMap}` (`NativeRequestBuilder.meta`).
#[napi]
pub struct NativeBuildMeta {
    inner: normalize::incremental::BuildMeta,
}

#[napi]
impl NativeBuildMeta {
    /// `{report, idMap, nameMap}` (JSON).
    #[napi(ts_return_type = "string")]
    pub fn json(&self) -> napi::Result<JsonText> {
        guard(|| self.inner.json().map(json_text))
    }
}

/// A session file being migrated to another provider, step by step.
#[napi]
pub struct NativeMigration {
    inner: Arc<Mutex<FileMigration>>,
}

fn locked(
    m: &Mutex<FileMigration>,
) -> forkpoint_core::Result<std::sync::MutexGuard<'_, FileMigration>> {
    m.lock()
        .map_err(|_| Error::internal("migration poisoned by a panic"))
}

pub struct StepTask {
    inner: Arc<Mutex<FileMigration>>,
    budget: u64,
}

impl Task for StepTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| {
            let mut m = locked(&self.inner)?;
            let done = m.step(self.budget)?;
            if done {
                m.finish()?;
            }
            Ok(format!(
                "{{\"done\":{done},\"bytesRead\":{},\"totalBytes\":{},\"messagesChanged\":{}}}",
                m.bytes_read(),
                m.total,
                m.changed()
            ))
        })
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

#[napi]
impl NativeMigration {
    /// Opens `src` and a temporary file beside `dst`; an existing `dst` is
    /// `ALREADY_EXISTS` unless `overwrite`, one a writer holds `SESSION_LOCKED`.
    #[napi(constructor)]
    pub fn new(
        src: String,
        from: String,
        to: String,
        dst: String,
        model: Option<String>,
        overwrite: Option<bool>,
    ) -> napi::Result<Self> {
        let m = guard(|| {
            FileMigration::open(
                Path::new(&src),
                Path::new(&dst),
                Provider::parse(&from)?,
                Provider::parse(&to)?,
                model,
                &ms_to_iso(now_ms()),
                overwrite.unwrap_or(false),
            )
        })?;
        Ok(NativeMigration {
            inner: Arc::new(Mutex::new(m)),
        })
    }

    /// Migrates about `budget` more bytes on a worker thread; when the source is
    /// done, makes the target durable and moves it into place.
    /// Resolves `{done, bytesRead, totalBytes, messagesChanged}` (JSON).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn step(&self, budget: f64) -> AsyncTask<StepTask> {
        AsyncTask::new(StepTask {
            inner: self.inner.clone(),
            budget: budget.max(1.0) as u64,
        })
    }

    /// `{report, idMap}` (JSON).
    #[napi]
    pub fn result_json(&self) -> napi::Result<String> {
        guard(|| locked(&self.inner)?.result_json())
    }

    /// Stops and removes the temporary file (the target is untouched).
    #[napi]
    pub fn abort(&self) -> napi::Result<()> {
        guard(|| {
            locked(&self.inner)?.abort();
            Ok(())
        })
    }
}

pub struct ImportTask {
    src: Option<String>,
    bytes: Option<Vec<u8>>,
    dst: String,
    format: String,
    session_id: Option<String>,
    opts: Option<String>,
    overwrite: bool,
}

impl Task for ImportTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| {
            let format = normalize::import::ImportFormat::parse(&self.format)?;
            let limits = crate::util::opts::<forkpoint_core::LimitOptions>(self.opts.take())?;
            let summary = forkpoint_fs::migrate::import_file(
                self.src.as_deref().map(Path::new),
                self.bytes.take(),
                Path::new(&self.dst),
                format,
                self.session_id.as_deref(),
                &ms_to_iso(now_ms()),
                &limits,
                self.overwrite,
            )?;
            forkpoint_core::types::to_json_text(&summary)
        })
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// `LIMIT_EXCEEDED` when a file of `size` bytes is more than `limits`'
/// `maxFileBytes` allows (LimitOptions as JSON), with `path`: checked before
/// a file the TypeScript layer reads itself (for progress) is read.
#[napi]
pub fn check_file_size(
    size: f64,
    limits: Option<String>,
    path: Option<String>,
) -> napi::Result<()> {
    guard(|| {
        let limits: forkpoint_core::LimitOptions = opts(limits)?;
        limits.check_claimed_file_size(size, path)
    })
}

/// `importSession`: reads a pi, Claude Code or Codex session (`src` path or
/// `bytes`), writes it as a pi v3 session to `dst` atomically; resolves the
/// ImportSummary (JSON). `session_id` null: the id derived from the source
/// (FORMAT.md §15.7). `opts` is LimitOptions as JSON. An existing `dst` is
/// `ALREADY_EXISTS` unless `overwrite`; one a writer holds is `SESSION_LOCKED`.
#[napi(ts_return_type = "Promise<string>")]
pub fn import_session_json(
    src: Option<String>,
    bytes: Option<napi::bindgen_prelude::Buffer>,
    dst: String,
    format: String,
    session_id: Option<String>,
    opts: Option<String>,
    overwrite: Option<bool>,
) -> AsyncTask<ImportTask> {
    AsyncTask::new(ImportTask {
        src,
        bytes: bytes.map(|b| b.to_vec()),
        dst,
        format,
        session_id,
        opts,
        overwrite: overwrite.unwrap_or(false),
    })
}
