//! `NativeLazySession`: lazy resume (behind `loadSessionLazy`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use forkpoint_core::{Error, LazyOptions};
use forkpoint_fs::lazy::LazyFile;
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use crate::util::{guard, opts};

/// A session resumed lazily from the tail of its file.
#[napi]
pub struct NativeLazySession {
    inner: Arc<Mutex<LazyFile>>,
}

fn locked(m: &Mutex<LazyFile>) -> forkpoint_core::Result<std::sync::MutexGuard<'_, LazyFile>> {
    m.lock()
        .map_err(|_| Error::internal("lazy session poisoned by a panic"))
}

pub struct LoadTask {
    path: PathBuf,
    opts: Option<String>,
}

impl Task for LoadTask {
    type Output = LazyFile;
    type JsValue = NativeLazySession;

    fn compute(&mut self) -> napi::Result<LazyFile> {
        guard(|| forkpoint_fs::load_lazy(&self.path, opts::<LazyOptions>(self.opts.take())?))
    }

    fn resolve(&mut self, _env: Env, output: LazyFile) -> napi::Result<NativeLazySession> {
        Ok(NativeLazySession {
            inner: Arc::new(Mutex::new(output)),
        })
    }
}

pub struct MoreTask {
    inner: Arc<Mutex<LazyFile>>,
    n: usize,
}

impl Task for MoreTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| locked(&self.inner)?.more_history(self.n))
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

#[napi]
impl NativeLazySession {
    /// Resumes a session lazily; `opts` is LazyOptions as JSON.
    #[napi(ts_return_type = "Promise<NativeLazySession>")]
    pub fn load(path: String, opts: Option<String>) -> AsyncTask<LoadTask> {
        AsyncTask::new(LoadTask {
            path: PathBuf::from(path),
            opts,
        })
    }

    /// The context as JSON.
    #[napi]
    pub fn context_json(&self, llm: Option<bool>) -> napi::Result<String> {
        guard(|| {
            locked(&self.inner)?
                .loader
                .context_json(llm.unwrap_or(false))
        })
    }

    /// LazyMetadata as JSON.
    #[napi]
    pub fn metadata_json(&self) -> napi::Result<String> {
        guard(|| {
            let lf = locked(&self.inner)?;
            let m = lf.loader.metadata(lf.hint_written)?;
            forkpoint_core::types::to_json_text(&m)
        })
    }

    /// Loads `n` more messages of history (oldest first, as a JSON array).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn load_more_history(&self, n: u32) -> AsyncTask<MoreTask> {
        AsyncTask::new(MoreTask {
            inner: self.inner.clone(),
            n: n as usize,
        })
    }
}
