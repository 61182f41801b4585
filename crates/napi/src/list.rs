//! `listSessions`.

use std::path::PathBuf;

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use crate::util::guard;

pub struct ListTask {
    dir: PathBuf,
}

impl Task for ListTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| {
            let list = forkpoint_fs::list_sessions(&self.dir)?;
            forkpoint_core::types::to_json_text(&list)
        })
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// Lists the sessions of a directory (SessionInfo[] as JSON).
#[napi(ts_return_type = "Promise<string>")]
pub fn list_sessions_json(dir: String) -> AsyncTask<ListTask> {
    AsyncTask::new(ListTask {
        dir: PathBuf::from(dir),
    })
}
