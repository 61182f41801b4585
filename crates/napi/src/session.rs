//! `NativeSession`: a fully loaded session (behind `SessionLoader`).

use std::path::PathBuf;

use forkpoint_core::{LoadOptions, Session};
use napi::bindgen_prelude::{AsyncTask, Buffer};
use napi::{Env, Task};
use napi_derive::napi;

use crate::util::{guard, opts};

/// A loaded session file.
#[napi]
pub struct NativeSession {
    inner: Session,
}

pub struct OpenTask {
    path: PathBuf,
    opts: Option<String>,
}

impl Task for OpenTask {
    type Output = Session;
    type JsValue = NativeSession;

    fn compute(&mut self) -> napi::Result<Session> {
        guard(|| forkpoint_fs::read_session(&self.path, &opts::<LoadOptions>(self.opts.take())?))
    }

    fn resolve(&mut self, _env: Env, output: Session) -> napi::Result<NativeSession> {
        Ok(NativeSession { inner: output })
    }
}

fn json_or_throw(r: forkpoint_core::Result<String>) -> napi::Result<String> {
    guard(|| r)
}

#[napi]
impl NativeSession {
    /// Loads a session file on the libuv thread pool. `opts` is LoadOptions as JSON.
    #[napi(ts_return_type = "Promise<NativeSession>")]
    pub fn open(path: String, opts: Option<String>) -> AsyncTask<OpenTask> {
        AsyncTask::new(OpenTask {
            path: PathBuf::from(path),
            opts,
        })
    }

    /// Loads a session from bytes (`.jsonl` or `.jsonl.gz` content).
    #[napi(factory)]
    pub fn from_bytes(
        bytes: Buffer,
        opts_json: Option<String>,
        path: Option<String>,
    ) -> napi::Result<Self> {
        let inner = guard(|| {
            Session::from_file_bytes(bytes.to_vec(), &opts::<LoadOptions>(opts_json)?, path)
        })?;
        Ok(NativeSession { inner })
    }

    /// SessionMetadata as JSON.
    #[napi]
    pub fn metadata_json(&self) -> napi::Result<String> {
        guard(|| self.inner.metadata_json())
    }

    /// The header line as written.
    #[napi]
    pub fn header_json(&self) -> String {
        self.inner.header_text().to_string()
    }

    /// Number of entries.
    #[napi]
    pub fn entry_count(&self) -> u32 {
        self.inner.len() as u32
    }

    /// Entries `start..end` as a JSON array.
    #[napi]
    pub fn entries_json(&self, start: u32, end: u32) -> String {
        self.inner.entries_json(start as usize, end as usize)
    }

    /// One entry as JSON.
    #[napi]
    pub fn entry_json(&self, id: String) -> napi::Result<String> {
        json_or_throw(self.inner.entry_json(&id))
    }

    /// Entries from the root to `id` as a JSON array.
    #[napi]
    pub fn path_json(&self, id: String) -> napi::Result<String> {
        json_or_throw(self.inner.path_json(&id))
    }

    /// Tree nodes as JSON: `leaves`, `branchPoints`, `roots`, or the children of an id.
    #[napi]
    pub fn nodes_json(&self, which: String, id: Option<String>) -> napi::Result<String> {
        guard(|| self.inner.nodes_json(&which, id.as_deref()))
    }

    /// The tree with linear runs collapsed (TreeRun[] as JSON).
    #[napi]
    pub fn tree_json(&self) -> napi::Result<String> {
        guard(|| self.inner.tree_json())
    }

    /// The label of an entry.
    #[napi]
    pub fn label(&self, id: String) -> Option<String> {
        self.inner.label(&id).map(str::to_string)
    }

    /// The context from `leafId` (default: the current leaf) as JSON.
    #[napi(ts_return_type = "string")]
    pub fn context_json(
        &self,
        leaf_id: Option<String>,
        llm: Option<bool>,
    ) -> napi::Result<crate::util::JsonText> {
        json_or_throw(
            self.inner
                .context_json(leaf_id.as_deref(), llm.unwrap_or(false)),
        )
        .map(crate::util::ascii_json_text)
    }

    /// The context from `leafId` as a request for `target` (`toProvider`'s
    /// output format: the request's JSON, a newline, `{report, idMap, nameMap}`,
    /// as UTF-8 bytes).
    #[napi]
    pub fn to_provider_bytes(
        &self,
        leaf_id: Option<String>,
        target: String,
        options: Option<String>,
    ) -> napi::Result<napi::bindgen_prelude::Buffer> {
        crate::util::guard(|| {
            forkpoint_core::normalize::session_to_provider_lines(
                &self.inner,
                leaf_id.as_deref(),
                &target,
                options.as_deref(),
                forkpoint_fs::io::scan_threads(),
            )
            .map(|s| s.into_bytes().into())
        })
    }

    /// The current leaf.
    #[napi]
    pub fn leaf_id(&self) -> Option<String> {
        self.inner.leaf_id().map(str::to_string)
    }

    /// The file's bytes exactly as read (still compressed for gzip).
    #[napi]
    pub fn to_bytes(&self) -> Buffer {
        self.inner.original_bytes().to_vec().into()
    }
}
