//! `listSessions`.

use std::path::PathBuf;

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use crate::util::{guard, opts};

pub struct ListTask {
    dir: PathBuf,
    opts: Option<String>,
}

impl Task for ListTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| {
            let limits = opts::<forkpoint_core::LimitOptions>(self.opts.take())?;
            let list = forkpoint_fs::list_sessions_with(&self.dir, &limits)?;
            forkpoint_core::types::to_json_text(&list)
        })
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// Lists the sessions of a directory (SessionInfo[] as JSON). `opts` is
/// LimitOptions as JSON.
#[napi(ts_return_type = "Promise<string>")]
pub fn list_sessions_json(dir: String, opts: Option<String>) -> AsyncTask<ListTask> {
    AsyncTask::new(ListTask {
        dir: PathBuf::from(dir),
        opts,
    })
}
