//! `NativeAgent`: an agent's files in a store (behind `Agent` and `JSONStore`).

use std::path::PathBuf;
use std::sync::Arc;

use forkpoint_core::Error;
use forkpoint_core::agent::{AgentCore, ToolCallState};
use forkpoint_fs::agent::{self, AgentFiles, Opened};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::{Value, json};

use crate::events::NativeEventLog;
use crate::util::{JsonText, guard, json_text, now_ms};

fn to_json<T: serde::Serialize>(v: &T) -> forkpoint_core::Result<String> {
    forkpoint_core::types::to_json_text(v)
}

fn parse(what: &str, text: &str) -> forkpoint_core::Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::invalid_input(format!("{what}: {e}")))
}

/// `redactSecrets`: the filter `meta.json` is written through, applied to any
/// JSON value (JSON in, JSON out): members named like credentials are dropped,
/// the values of credential-named `[name, value]` pairs and secret-shaped text
/// become `[redacted]` (`INVALID_INPUT` if `json` does not parse).
#[napi]
pub fn redact_secrets_json(json: String) -> napi::Result<String> {
    guard(|| {
        let mut v = parse("value", &json)?;
        forkpoint_core::secrets::scrub(&mut v);
        to_json(&v)
    })
}

/// An open agent: its lock, session, event log and state.
#[napi]
pub struct NativeAgent {
    inner: Arc<AgentFiles>,
    opened: String,
    context: std::sync::Mutex<Option<String>>,
}

fn opened_json(o: &Opened) -> forkpoint_core::Result<String> {
    let mut out = String::from("{\"meta\":");
    out.push_str(&to_json(&o.meta)?);
    out.push_str(",\"breakpoint\":");
    out.push_str(&to_json(&o.breakpoint)?);
    out.push_str(",\"repaired\":");
    out.push_str(if o.repaired { "true" } else { "false" });
    out.push('}');
    Ok(out)
}

type OpenFn = Box<dyn FnOnce() -> forkpoint_core::Result<(AgentFiles, Opened)> + Send>;

pub struct OpenTask(Option<OpenFn>);

impl Task for OpenTask {
    type Output = (AgentFiles, String, String);
    type JsValue = NativeAgent;

    fn compute(&mut self) -> napi::Result<(AgentFiles, String, String)> {
        let f = self.0.take();
        guard(|| {
            let (a, o) = f.ok_or_else(|| Error::internal("open task run twice"))?()?;
            let j = opened_json(&o)?;
            Ok((a, j, o.context_json))
        })
    }

    fn resolve(
        &mut self,
        _env: Env,
        (a, opened, context): (AgentFiles, String, String),
    ) -> napi::Result<NativeAgent> {
        Ok(NativeAgent {
            inner: Arc::new(a),
            opened,
            context: std::sync::Mutex::new(Some(context)),
        })
    }
}

type AgentCall = Box<dyn FnOnce(&AgentFiles) -> forkpoint_core::Result<String> + Send>;

/// A blocking call of an agent, run on the libuv pool; yields JSON text.
pub struct AgentTask {
    inner: Arc<AgentFiles>,
    call: Option<AgentCall>,
}

impl Task for AgentTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let f = self.call.take();
        guard(|| f.ok_or_else(|| Error::internal("task run twice"))?(&self.inner))
    }

    fn resolve(&mut self, _env: Env, out: String) -> napi::Result<String> {
        Ok(out)
    }
}

type StaticFn = Box<dyn FnOnce() -> forkpoint_core::Result<String> + Send>;

/// A blocking store call, run on the libuv pool; yields JSON text.
pub struct StaticTask(Option<StaticFn>);

impl Task for StaticTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let f = self.0.take();
        guard(|| f.ok_or_else(|| Error::internal("task run twice"))?())
    }

    fn resolve(&mut self, _env: Env, out: String) -> napi::Result<String> {
        Ok(out)
    }
}

/// A record's state and extra fields from the binding's arguments.
fn record_args(
    state: &str,
    extra_json: Option<String>,
) -> forkpoint_core::Result<(ToolCallState, Option<Value>)> {
    let state: ToolCallState = serde_json::from_value(Value::String(state.to_string()))
        .map_err(|_| Error::invalid_input(format!("unknown tool-call state '{state}'")))?;
    let extra = extra_json
        .map(|e| forkpoint_core::agent::parse_json(&e, "record"))
        .transpose()?;
    Ok((state, extra))
}

/// A tool-call record entry from the binding's arguments (checked here, on the JS thread).
fn record_entry(
    id: &str,
    name: &str,
    state: &str,
    extra_json: Option<String>,
) -> napi::Result<String> {
    guard(|| {
        let (state, extra) = record_args(state, extra_json)?;
        Ok(AgentCore::record_entry(
            id,
            name,
            state,
            now_ms() as f64,
            extra.as_ref(),
        ))
    })
}

#[napi]
impl NativeAgent {
    /// Creates agent `id` in the store at `root` with `meta` (JSON object).
    #[napi(ts_return_type = "Promise<NativeAgent>")]
    pub fn create(root: String, id: String, meta_json: String) -> AsyncTask<OpenTask> {
        AsyncTask::new(OpenTask(Some(Box::new(move || {
            AgentFiles::create(&PathBuf::from(root), &id, parse("meta", &meta_json)?)
        }))))
    }

    /// Opens agent `id` of the store at `root`.
    #[napi(ts_return_type = "Promise<NativeAgent>")]
    pub fn open(root: String, id: String) -> AsyncTask<OpenTask> {
        AsyncTask::new(OpenTask(Some(Box::new(move || {
            AgentFiles::open(&PathBuf::from(root), &id)
        }))))
    }

    /// The agents of a store (JSON array of their `meta.json`).
    #[napi]
    pub fn list(root: String) -> napi::Result<String> {
        guard(|| to_json(&agent::list(&PathBuf::from(root))?))
    }

    /// Whether the store holds agent `id`.
    #[napi]
    pub fn exists(root: String, id: String) -> napi::Result<bool> {
        guard(|| agent::exists(&PathBuf::from(root), &id))
    }

    /// Deletes agent `id` (not its forks); `AGENT_LOCKED` while it is open.
    #[napi]
    pub fn remove(root: String, id: String) -> napi::Result<()> {
        guard(|| agent::delete(&PathBuf::from(root), &id))
    }

    /// What the store knows of agent `id`, without taking its lock (JSON).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn inspect(root: String, id: String) -> AsyncTask<StaticTask> {
        AsyncTask::new(StaticTask(Some(Box::new(move || {
            to_json(&agent::inspect(&PathBuf::from(root), &id)?)
        }))))
    }

    /// Checks an agent id (`INVALID_ID`).
    #[napi]
    pub fn validate_id(id: String) -> napi::Result<()> {
        guard(|| agent::validate_id(&id))
    }

    fn task(
        &self,
        f: impl FnOnce(&AgentFiles) -> forkpoint_core::Result<String> + Send + 'static,
    ) -> AsyncTask<AgentTask> {
        AsyncTask::new(AgentTask {
            inner: self.inner.clone(),
            call: Some(Box::new(f)),
        })
    }

    /// What opening found: `{meta, breakpoint, repaired}` (JSON).
    #[napi]
    pub fn opened_json(&self) -> String {
        self.opened.clone()
    }

    /// The context at the leaf when it was opened (`SessionContext` JSON), once:
    /// the caller parses it when it needs the messages.
    #[napi(ts_return_type = "string")]
    pub fn take_opened_context(&self) -> napi::Result<JsonText> {
        guard(|| {
            let c = self
                .context
                .lock()
                .map_err(|_| Error::internal("agent poisoned by a panic"))?
                .take()
                .ok_or_else(|| Error::invalid_input("the opened context was taken already"))?;
            Ok(json_text(c))
        })
    }

    /// The agent's event log.
    #[napi]
    pub fn events(&self) -> napi::Result<NativeEventLog> {
        guard(|| {
            Ok(NativeEventLog::shared(
                self.inner.events().clone(),
                to_json(self.inner.events_info())?,
            ))
        })
    }

    /// Records a tool call's new state (`extra`: JSON object of fields such as
    /// `input`, `approval`, `result`, `isError`, `note`); durable when it resolves.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn record(
        &self,
        id: String,
        name: String,
        state: String,
        extra_json: Option<String>,
    ) -> napi::Result<AsyncTask<AgentTask>> {
        let entry = record_entry(&id, &name, &state, extra_json)?;
        let (_, ticket) = guard(|| self.inner.submit(&[entry]))?;
        Ok(self.task(move |a| {
            a.wait(ticket)?;
            to_json(&a.core()?.record(&id)?)
        }))
    }

    /// Appends a user message (`content` JSON) now, or queued while busy;
    /// resolves once durable to the message (JSON; `null` when queued).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn send(
        &self,
        queue_id: String,
        content_json: String,
        queued: bool,
    ) -> napi::Result<AsyncTask<AgentTask>> {
        let (message, ticket) = guard(|| {
            let (entry, message) =
                AgentCore::user_entry(&queue_id, &content_json, queued, now_ms() as f64)?;
            let (_, ticket) = self.inner.submit(&[entry])?;
            Ok((to_json(&message)?, ticket))
        })?;
        Ok(self.task(move |a| a.wait(ticket).map(|()| message)))
    }

    /// Appends a model's answer (an assistant message, JSON) and a `PENDING`
    /// record per tool call in it; resolves once all are durable.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn answer(&self, message_json: String) -> napi::Result<AsyncTask<AgentTask>> {
        let (_, ticket) = guard(|| {
            let entries = AgentCore::answer_entries(&message_json, now_ms() as f64)?;
            self.inner.submit(&entries)
        })?;
        Ok(self.task(move |a| a.wait(ticket).map(|()| String::new())))
    }

    /// Finishes a call: appends its result message (`text`, `isError`) and its
    /// terminal record (`extra`: JSON of `result`, `note`, …) together; resolves
    /// to the message (JSON) once both are durable.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn complete_call(
        &self,
        id: String,
        name: String,
        state: String,
        text: String,
        is_error: bool,
        extra_json: Option<String>,
    ) -> napi::Result<AsyncTask<AgentTask>> {
        let (message, ticket) = guard(|| {
            let (state, extra) = record_args(&state, extra_json)?;
            let (message, entries) = AgentCore::result_entries(
                &id,
                &name,
                state,
                &text,
                is_error,
                extra.as_ref(),
                now_ms() as f64,
            );
            let (_, ticket) = self.inner.submit(&entries)?;
            Ok((to_json(&message)?, ticket))
        })?;
        Ok(self.task(move |a| a.wait(ticket).map(|()| message)))
    }

    /// Seals every call without a result on the current path (crash resume,
    /// interrupt), or only call `only`; resolves to the sealed calls (JSON) once durable.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn seal(&self, note: Option<String>, only: Option<String>) -> AsyncTask<AgentTask> {
        self.task(move |a| to_json(&a.seal(note.as_deref(), only.as_deref())?))
    }

    /// Names the last safe-fork-point; resolves to the snapshot id.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn snapshot(&self, label: Option<String>) -> AsyncTask<AgentTask> {
        self.task(move |a| a.snapshot(label.as_deref()))
    }

    /// Creates agent `newId` (a sibling in the store) from a snapshot.
    #[napi(ts_return_type = "Promise<NativeAgent>")]
    pub fn fork(
        &self,
        root: String,
        new_id: String,
        snapshot_id: String,
        meta_json: String,
    ) -> AsyncTask<OpenTask> {
        let me = self.inner.clone();
        AsyncTask::new(OpenTask(Some(Box::new(move || {
            me.fork(
                &PathBuf::from(root),
                &new_id,
                &snapshot_id,
                parse("meta", &meta_json)?,
            )
        }))))
    }

    /// Moves the leaf to an entry (history kept); resolves to the context there.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn move_leaf(&self, entry_id: String) -> AsyncTask<AgentTask> {
        self.task(move |a| a.move_leaf(&entry_id))
    }

    /// Creates a checkpoint at the current leaf; resolves to it (JSON).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn checkpoint(&self, args_json: String) -> AsyncTask<AgentTask> {
        self.task(move |a| {
            let args = parse("checkpoint", &args_json)?;
            let (entry, c) = a.core()?.checkpoint_entry(&args, now_ms() as f64)?;
            a.append(&[entry])?;
            to_json(&c)
        })
    }

    /// Checkpoints grouped by execution: `[{executionId, checkpoints}]` (JSON).
    #[napi]
    pub fn checkpoints_json(&self) -> napi::Result<String> {
        guard(|| to_json(&agent::checkpoint_groups_json(&*self.inner.core()?)))
    }

    /// One checkpoint (JSON); `NOT_FOUND` when there is none.
    #[napi]
    pub fn checkpoint_json(&self, id: String) -> napi::Result<String> {
        guard(|| to_json(self.inner.core()?.checkpoint(&id)?))
    }

    /// The last successful checkpoint of an execution (JSON, or `null`).
    #[napi]
    pub fn last_successful_json(
        &self,
        execution_id: String,
        before_step: Option<f64>,
    ) -> napi::Result<String> {
        guard(|| {
            let before = before_step.map(|b| b.max(0.0) as u64);
            to_json(&self.inner.core()?.last_successful(&execution_id, before))
        })
    }

    /// A snapshot (JSON); `SNAPSHOT_NOT_FOUND` when there is none.
    #[napi]
    pub fn snapshot_json(&self, id: String) -> napi::Result<String> {
        guard(|| to_json(&self.inner.core()?.snapshot(&id)?))
    }

    /// The tool-call records of the current path (JSON array).
    #[napi]
    pub fn records_json(&self) -> napi::Result<String> {
        guard(|| to_json(&self.inner.core()?.records()?))
    }

    /// One call's record (JSON, or `null`).
    #[napi]
    pub fn record_json(&self, id: String) -> napi::Result<String> {
        guard(|| to_json(&self.inner.core()?.record(&id)?))
    }

    /// The calls of the current path without a result: `[{id, name, arguments,
    /// state}]` (state `null` when only the transcript has the call).
    #[napi]
    pub fn open_calls_json(&self) -> napi::Result<String> {
        guard(|| to_json(&agent::open_calls_json(&mut *self.inner.core()?)?))
    }

    /// The todo list of the current path (`{todos, version, updatedAt}` JSON, or `null`).
    #[napi]
    pub fn todos_json(&self) -> napi::Result<String> {
        guard(|| to_json(&self.inner.core()?.todos()))
    }

    /// Replaces the todo list (JSON array; checked: `INVALID_INPUT`); resolves to
    /// `{current, previous}` (JSON) once durable.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn set_todos(&self, todos_json: String) -> napi::Result<AsyncTask<AgentTask>> {
        let (out, ticket) = guard(|| {
            let core = self.inner.core()?;
            let (entry, current, previous) = core.todos_entry(&todos_json, now_ms() as f64)?;
            drop(core);
            let (_, ticket) = self.inner.submit(&[entry])?;
            Ok((
                to_json(&json!({ "current": current, "previous": previous }))?,
                ticket,
            ))
        })?;
        Ok(self.task(move |a| a.wait(ticket).map(|()| out)))
    }

    /// Messages sent while busy and not yet delivered (JSON array of `{queueId, …}`).
    #[napi]
    pub fn queued_json(&self) -> napi::Result<String> {
        guard(|| to_json(&self.inner.core()?.queued()))
    }

    /// `{messageCount, userMessages, lastSfpIndex, lastSfpEntryId}` (JSON).
    #[napi]
    pub fn counts_json(&self) -> napi::Result<String> {
        guard(|| {
            let core = self.inner.core()?;
            let sfp = core.last_sfp();
            to_json(&json!({
                "messageCount": core.message_count(),
                "userMessages": core.user_messages(),
                "assistantMessages": core.assistant_messages(),
                "lastSfpIndex": sfp.map_or(-1, |(i, _)| i as i64),
                "lastSfpEntryId": sfp.map(|(_, e)| e),
            }))
        })
    }

    /// Replaces `meta.json` (atomically; credentials are dropped).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn set_meta(&self, meta_json: String) -> AsyncTask<AgentTask> {
        self.task(move |a| {
            a.set_meta(parse("meta", &meta_json)?)?;
            Ok(String::new())
        })
    }

    /// Waits for pending writes and releases the agent's lock.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn close(&self) -> AsyncTask<AgentTask> {
        self.task(|a| a.close().map(|()| String::new()))
    }
}
