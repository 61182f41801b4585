//! `NativeWriter`: appending to a session file (behind `SessionWriter`).

use std::path::PathBuf;
use std::sync::Arc;

use forkpoint_core::WriterOptions;
use forkpoint_fs::FileWriter;
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use crate::util::{guard, now_ms, opts, seed};

/// A session file open for appending.
#[napi]
pub struct NativeWriter {
    inner: Arc<FileWriter>,
    report: String,
}

pub struct OpenTask {
    path: PathBuf,
    opts: Option<String>,
}

impl Task for OpenTask {
    type Output = (FileWriter, String);
    type JsValue = NativeWriter;

    fn compute(&mut self) -> napi::Result<(FileWriter, String)> {
        guard(|| {
            let o = opts::<WriterOptions>(self.opts.take())?;
            let (w, report) = FileWriter::open(&self.path, &o, now_ms(), seed())?;
            let r = forkpoint_core::types::to_json_text(&report)?;
            Ok((w, r))
        })
    }

    fn resolve(
        &mut self,
        _env: Env,
        (w, report): (FileWriter, String),
    ) -> napi::Result<NativeWriter> {
        Ok(NativeWriter {
            inner: Arc::new(w),
            report,
        })
    }
}

/// Waits on the libuv pool until an append is durable; resolves to its id.
pub struct WaitTask {
    inner: Arc<FileWriter>,
    ticket: u64,
    id: String,
}

impl Task for WaitTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| {
            self.inner.wait(self.ticket)?;
            Ok(std::mem::take(&mut self.id))
        })
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

pub struct CloseTask {
    inner: Arc<FileWriter>,
}

impl Task for CloseTask {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<()> {
        guard(|| self.inner.close())
    }

    fn resolve(&mut self, _env: Env, _: ()) -> napi::Result<()> {
        Ok(())
    }
}

#[napi]
impl NativeWriter {
    /// Opens or creates a session file; `opts` is WriterOptions as JSON.
    #[napi(ts_return_type = "Promise<NativeWriter>")]
    pub fn open(path: String, opts: Option<String>) -> AsyncTask<OpenTask> {
        AsyncTask::new(OpenTask {
            path: PathBuf::from(path),
            opts,
        })
    }

    /// What opening found and repaired (WriterOpenReport as JSON).
    #[napi]
    pub fn open_report_json(&self) -> String {
        self.report.clone()
    }

    fn wait_for(
        &self,
        r: forkpoint_core::Result<(String, u64)>,
    ) -> napi::Result<AsyncTask<WaitTask>> {
        let (id, ticket) = guard(|| r)?;
        Ok(AsyncTask::new(WaitTask {
            inner: self.inner.clone(),
            ticket,
            id,
        }))
    }

    /// Appends an entry (JSON object); resolves to its id once durable.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn append(&self, entry_json: String) -> napi::Result<AsyncTask<WaitTask>> {
        let r = guard(|| self.inner.submit(|c| c.append(&entry_json, now_ms())))?;
        self.wait_for(Ok(r))
    }

    /// Moves the current leaf (null: before the first entry).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn move_leaf(&self, target: Option<String>) -> napi::Result<AsyncTask<WaitTask>> {
        let r = guard(|| {
            self.inner
                .submit(|c| c.move_leaf(target.as_deref(), now_ms()))
        })?;
        self.wait_for(Ok(r))
    }

    /// Sets or clears a label.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn append_label(
        &self,
        target: String,
        label: Option<String>,
    ) -> napi::Result<AsyncTask<WaitTask>> {
        let r = guard(|| {
            self.inner
                .submit(|c| c.append_label(&target, label.as_deref(), now_ms()))
        })?;
        self.wait_for(Ok(r))
    }

    /// Moves the leaf to `from` and appends a branch summary there.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn branch_with_summary(
        &self,
        from: Option<String>,
        summary: String,
        details_json: Option<String>,
        from_hook: Option<bool>,
    ) -> napi::Result<AsyncTask<WaitTask>> {
        let r = guard(|| {
            self.inner.submit(|c| {
                c.branch_with_summary(
                    from.as_deref(),
                    &summary,
                    details_json.as_deref(),
                    from_hook,
                    now_ms(),
                )
            })
        })?;
        self.wait_for(Ok(r))
    }

    /// The current leaf.
    #[napi]
    pub fn leaf_id(&self) -> napi::Result<Option<String>> {
        guard(|| self.inner.leaf_id())
    }

    /// Flushes, writes the resume hint and releases the lock.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<CloseTask> {
        AsyncTask::new(CloseTask {
            inner: self.inner.clone(),
        })
    }
}
