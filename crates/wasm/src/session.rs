//! `NativeSession`: a loaded session (behind `Session` in forkpoint-web).

use forkpoint_core::types::options_from_json;
use forkpoint_core::{LoadOptions, Session};
use wasm_bindgen::prelude::*;

use crate::util::err;

/// A loaded session.
#[wasm_bindgen]
pub struct NativeSession {
    inner: Session,
}

impl NativeSession {
    /// Wraps a loaded core session.
    pub(crate) fn from_core(inner: Session) -> NativeSession {
        NativeSession { inner }
    }
}

#[wasm_bindgen]
impl NativeSession {
    /// Loads a session from bytes (`.jsonl` or `.jsonl.gz` content). `opts` is LoadOptions as JSON.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        bytes: Vec<u8>,
        opts: Option<String>,
        path: Option<String>,
    ) -> Result<NativeSession, JsError> {
        let o = options_from_json::<LoadOptions>(opts.as_deref()).map_err(err)?;
        Ok(NativeSession {
            inner: Session::from_file_bytes(bytes, &o, path).map_err(err)?,
        })
    }

    /// SessionMetadata as JSON.
    #[wasm_bindgen(js_name = metadataJson)]
    pub fn metadata_json(&self) -> Result<String, JsError> {
        self.inner.metadata_json().map_err(err)
    }

    /// The header line as written.
    #[wasm_bindgen(js_name = headerJson)]
    pub fn header_json(&self) -> String {
        self.inner.header_text().to_string()
    }

    /// Number of entries.
    #[wasm_bindgen(js_name = entryCount)]
    pub fn entry_count(&self) -> u32 {
        self.inner.len() as u32
    }

    /// Entries `start..end` as a JSON array.
    #[wasm_bindgen(js_name = entriesJson)]
    pub fn entries_json(&self, start: u32, end: u32) -> String {
        self.inner.entries_json(start as usize, end as usize)
    }

    /// One entry as JSON.
    #[wasm_bindgen(js_name = entryJson)]
    pub fn entry_json(&self, id: &str) -> Result<String, JsError> {
        self.inner.entry_json(id).map_err(err)
    }

    /// Entries from the root to `id` as a JSON array.
    #[wasm_bindgen(js_name = pathJson)]
    pub fn path_json(&self, id: &str) -> Result<String, JsError> {
        self.inner.path_json(id).map_err(err)
    }

    /// Tree nodes as JSON: `leaves`, `branchPoints`, `roots`, or the children of an id.
    #[wasm_bindgen(js_name = nodesJson)]
    pub fn nodes_json(&self, which: &str, id: Option<String>) -> Result<String, JsError> {
        self.inner.nodes_json(which, id.as_deref()).map_err(err)
    }

    /// The tree with linear runs collapsed (TreeRun[] as JSON).
    #[wasm_bindgen(js_name = treeJson)]
    pub fn tree_json(&self) -> Result<String, JsError> {
        self.inner.tree_json().map_err(err)
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<String> {
        self.inner.label(id).map(str::to_string)
    }

    /// The context from `leafId` (default: the current leaf) as JSON.
    #[wasm_bindgen(js_name = contextJson)]
    pub fn context_json(
        &self,
        leaf_id: Option<String>,
        llm: Option<bool>,
    ) -> Result<String, JsError> {
        self.inner
            .context_json(leaf_id.as_deref(), llm.unwrap_or(false))
            .map_err(err)
    }

    /// The context from `leafId` as a request for `target` (`toProvider`'s
    /// output format: the request's JSON, a newline, `{report, idMap, nameMap}`,
    /// as UTF-8 bytes).
    #[wasm_bindgen(js_name = toProviderBytes)]
    pub fn to_provider_bytes(
        &self,
        leaf_id: Option<String>,
        target: &str,
        options: Option<String>,
    ) -> Result<Vec<u8>, JsError> {
        crate::util::reserve_memory(self.inner.text().len().saturating_mul(2));
        forkpoint_core::normalize::session_to_provider_lines(
            &self.inner,
            leaf_id.as_deref(),
            target,
            options.as_deref(),
            1,
        )
        .map(String::into_bytes)
        .map_err(err)
    }

    /// The current leaf.
    #[wasm_bindgen(js_name = leafId)]
    pub fn leaf_id(&self) -> Option<String> {
        self.inner.leaf_id().map(str::to_string)
    }

    /// The file's bytes exactly as read (still compressed for gzip).
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.inner.original_bytes().to_vec()
    }
}

/// Collects a session's bytes chunk by chunk (from a `Blob` read in slices),
/// refusing as soon as they are more than `maxFileBytes` allows.
#[wasm_bindgen]
pub struct NativeSessionBuilder {
    buf: Vec<u8>,
    opts: LoadOptions,
}

#[wasm_bindgen]
impl NativeSessionBuilder {
    /// An empty builder for a load with `opts` (JSON load options).
    #[wasm_bindgen(constructor)]
    pub fn new(opts: Option<String>) -> Result<NativeSessionBuilder, JsError> {
        Ok(NativeSessionBuilder {
            buf: Vec::new(),
            opts: options_from_json(opts.as_deref()).map_err(err)?,
        })
    }

    /// Makes room for `bytes` more bytes at once (the size of the file being
    /// read), so the buffer is not grown, and copied, as it fills. Memory
    /// that cannot be had is not an error here: the pushes then grow it.
    pub fn reserve(&mut self, bytes: f64) {
        if bytes.is_finite() && bytes > 0.0 && bytes < usize::MAX as f64 {
            let _ = self.buf.try_reserve_exact(bytes as usize);
        }
    }

    /// Appends a chunk (`LIMIT_EXCEEDED` once the bytes are more than
    /// `maxFileBytes` allows: a `Blob` may hold more than its size claimed).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.opts
            .check_file_size((self.buf.len() + chunk.len()) as u64)
            .map_err(err)?;
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// Loads the collected bytes as a session, with the builder's options.
    pub fn finish(&mut self, path: Option<String>) -> Result<NativeSession, JsError> {
        Ok(NativeSession {
            inner: Session::from_file_bytes(std::mem::take(&mut self.buf), &self.opts, path)
                .map_err(err)?,
        })
    }
}
