//! `NativeIncremental`: batches of entries (behind `IncrementalSessionLoader`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use forkpoint_core::{Error, LoadOptions};
use forkpoint_fs::incremental::IncrementalFile;
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use crate::util::{guard, opts};

/// Reads a session file batch by batch.
#[napi]
pub struct NativeIncremental {
    inner: Arc<Mutex<IncrementalFile>>,
}

pub struct NextTask {
    inner: Arc<Mutex<IncrementalFile>>,
}

fn locked(
    m: &Mutex<IncrementalFile>,
) -> forkpoint_core::Result<std::sync::MutexGuard<'_, IncrementalFile>> {
    m.lock()
        .map_err(|_| Error::internal("incremental loader poisoned by a panic"))
}

impl Task for NextTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| {
            let b = locked(&self.inner)?.load_next()?;
            let info = forkpoint_core::types::to_json_text(&b.info)?;
            Ok(format!(
                "{{\"entries\":{},\"info\":{info}}}",
                b.entries_json()
            ))
        })
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

#[napi]
impl NativeIncremental {
    /// A loader of `batchSize` entries per batch; `opts` is LoadOptions as JSON.
    #[napi(constructor)]
    pub fn new(path: String, batch_size: u32, opts_json: Option<String>) -> napi::Result<Self> {
        let o = guard(|| opts::<LoadOptions>(opts_json))?;
        Ok(NativeIncremental {
            inner: Arc::new(Mutex::new(IncrementalFile::new(
                Path::new(&path),
                batch_size as usize,
                o,
            ))),
        })
    }

    /// The next batch as JSON `{entries, info}`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn load_next(&self) -> AsyncTask<NextTask> {
        AsyncTask::new(NextTask {
            inner: self.inner.clone(),
        })
    }

    /// Whether more entries may follow.
    #[napi]
    pub fn has_more(&self) -> napi::Result<bool> {
        guard(|| locked(&self.inner)?.has_more())
    }

    /// Back to the start of the file.
    #[napi]
    pub fn reset(&self) -> napi::Result<()> {
        guard(|| {
            locked(&self.inner)?.reset();
            Ok(())
        })
    }

    /// Byte offset of the next batch.
    #[napi]
    pub fn offset(&self) -> napi::Result<f64> {
        guard(|| Ok(locked(&self.inner)?.offset() as f64))
    }
}
