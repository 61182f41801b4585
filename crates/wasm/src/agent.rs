//! `NativeAgentStore` and `NativeAgent`: the agent machine over IndexedDB
//! (behind `IndexedDbAgentStore` and `Agent` in forkpoint-web), method by
//! method the napi crate's `NativeStore` and `NativeAgent`: each converts its
//! arguments, calls one core function and converts the result (the same JSON
//! in and out). `NativeAgentLog` is the agent's event log for `on` and
//! `subscribe`: history from storage, live events from each step.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use forkpoint_core::agent::machine::{Input, Query, ToolSpec};
use forkpoint_core::agent::meta::{AgentMeta, MetaChanges};
use forkpoint_core::agent::runtime::{AgentRuntime, Step};
use forkpoint_core::eventlog::{Since, seq_arg};
use forkpoint_core::events::{Bookmark, EventFilter};
use forkpoint_core::storage::{AgentStorage, StoredLog, listed_json};
use forkpoint_core::types::{options_from_json, to_json_text};
use forkpoint_core::{Error, Result, store::validate_id};
use js_sys::{Function, Promise, Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use crate::agents::IdbAgentStorage;
use crate::util::{err, jerr};

type Runtime = AgentRuntime<Rc<IdbAgentStorage>>;

fn parse<'a, T: serde::Deserialize<'a>>(what: &str, text: &'a str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::invalid_input(format!("{what}: {e}")))
}

fn tools_of(json: &str) -> Result<Vec<ToolSpec>> {
    ToolSpec::list_from_json(json)
}

fn now() -> f64 {
    js_sys::Date::now()
}

/// 64 random bits from `crypto.getRandomValues` (`Math.random` where there is none).
fn seed() -> u64 {
    let bytes = Uint8Array::new_with_length(8);
    let got = Reflect::get(&js_sys::global(), &"crypto".into())
        .ok()
        .filter(|c| c.is_object())
        .and_then(|c| {
            let f: Function = Reflect::get(&c, &"getRandomValues".into())
                .ok()?
                .dyn_into()
                .ok()?;
            f.call1(&c, &bytes).ok()
        })
        .is_some();
    if got {
        let mut b = [0u8; 8];
        bytes.copy_to(&mut b);
        u64::from_le_bytes(b)
    } else {
        (js_sys::Math::random() * 9_007_199_254_740_991.0) as u64 ^ (now() as u64) << 11
    }
}

fn string(s: String) -> JsValue {
    JsValue::from_str(&s)
}

/// `redactSecrets`: the filter `meta.json` is written through, applied to any
/// JSON value (JSON in, JSON out): members named like credentials are dropped,
/// the values of credential-named `[name, value]` pairs and secret-shaped text
/// become `[redacted]` (`INVALID_INPUT` if `json` does not parse).
#[wasm_bindgen(js_name = redactSecretsJson)]
pub fn redact_secrets_json(json: String) -> std::result::Result<String, JsError> {
    let mut v: Value = parse("value", &json).map_err(err)?;
    forkpoint_core::secrets::scrub(&mut v);
    to_json_text(&v).map_err(err)
}

// -- the store ----------------------------------------------------------------

/// The agents of an IndexedDB database.
#[wasm_bindgen]
pub struct NativeAgentStore {
    inner: Rc<IdbAgentStorage>,
}

#[wasm_bindgen]
impl NativeAgentStore {
    /// Opens (creating or upgrading) database `dbName`; resolves to the store.
    pub fn open(db_name: String) -> Promise {
        future_to_promise(async move {
            let inner = IdbAgentStorage::open(&db_name).await.map_err(jerr)?;
            Ok(NativeAgentStore {
                inner: Rc::new(inner),
            }
            .into())
        })
    }

    /// The agents (JSON array of their `meta.json`; one that cannot be read is
    /// `{agentId, corrupted: true, error}`), by creation time then id.
    pub fn list(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let listed = inner.list().await.map_err(jerr)?;
            Ok(string(listed_json(listed).map_err(jerr)?))
        })
    }

    /// Whether the store holds agent `id` (`INVALID_ID` for an id that cannot be one).
    pub fn exists(&self, id: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move { Ok(inner.exists(&id).await.map_err(jerr)?.into()) })
    }

    /// Deletes agent `id` (not its forks); `AGENT_LOCKED` while it is open.
    pub fn remove(&self, id: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            inner.delete(&id).await.map_err(jerr)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Checks an agent id (`INVALID_ID`).
    #[wasm_bindgen(js_name = validateId)]
    pub fn validate_id(id: String) -> std::result::Result<(), JsError> {
        validate_id(&id, "agent").map_err(err)
    }

    /// Whether leases are Web Locks here (`false`: held in this process only).
    #[wasm_bindgen(js_name = webLocks)]
    pub fn web_locks() -> bool {
        crate::locks::has_web_locks()
    }

    /// Closes the database connection.
    pub fn close(&self) {
        self.inner.close();
    }
}

// -- one call at a time ---------------------------------------------------------

/// Runs the agent's async calls one after another, in call order (the napi
/// build's mutex): each waits for the one before to finish.
#[derive(Default)]
struct Serial {
    busy: Cell<bool>,
    waiters: RefCell<VecDeque<Function>>,
}

/// The turn of one call; the next waiting call goes when it is dropped.
struct Turn(Rc<Serial>);

impl Serial {
    async fn turn(self: &Rc<Self>) -> Turn {
        if self.busy.replace(true) {
            let mut resolve: Option<Function> = None;
            let p = Promise::new(&mut |r, _| resolve = Some(r));
            if let Some(r) = resolve {
                self.waiters.borrow_mut().push_back(r);
                // The turn is handed over with `busy` left set.
                let _ = JsFuture::from(p).await;
            }
        }
        Turn(self.clone())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let next = self.0.waiters.borrow_mut().pop_front();
        match next {
            Some(next) => {
                let _ = next.call0(&JsValue::NULL);
            }
            None => self.0.busy.set(false),
        }
    }
}

// -- the event log ----------------------------------------------------------------

struct LogInner {
    store: Rc<IdbAgentStorage>,
    log: StoredLog,
}

impl LogInner {
    fn new(store: Rc<IdbAgentStorage>, id: &str, last: Option<Bookmark>) -> Rc<LogInner> {
        Rc::new(LogInner {
            store,
            log: StoredLog::new(id, last, false),
        })
    }

    /// A step's durable events, for live listeners and subscriptions.
    fn committed(&self, lines: &[Arc<str>]) {
        self.log.committed_lines(lines);
    }
}

/// An agent's event log (the `EventLog` behind `Agent.on` and
/// `Agent.subscribe`): history read from the agent's store, live events handed
/// over by each step. Only the agent writes it.
#[wasm_bindgen]
pub struct NativeAgentLog {
    inner: Rc<LogInner>,
}

#[wasm_bindgen]
impl NativeAgentLog {
    /// What opening found (EventLogInfo as JSON).
    #[wasm_bindgen(js_name = infoJson)]
    pub fn info_json(&self) -> String {
        self.inner.log.info_json().to_string()
    }

    /// Refused (`INVALID_INPUT`): an agent's events are written by the agent;
    /// its tools emit theirs through `ctx.emit`.
    pub fn append(&self, _event_json: String) -> std::result::Result<Promise, JsError> {
        Err(err(Error::invalid_input(
            "an agent's events are written by the agent (tools emit theirs with ctx.emit)",
        )))
    }

    /// The events with `since < seq <= until` passing the filter, as a JSON array.
    #[wasm_bindgen(js_name = readJson)]
    pub fn read_json(
        &self,
        since: Option<f64>,
        until: Option<f64>,
        filter_json: Option<String>,
    ) -> std::result::Result<Promise, JsError> {
        let filter = options_from_json::<EventFilter>(filter_json.as_deref()).map_err(err)?;
        let (since, until) = (seq_arg(since).map_err(err)?, seq_arg(until).map_err(err)?);
        let inner = self.inner.clone();
        Ok(future_to_promise(async move {
            let out = inner
                .log
                .read(&*inner.store, since, until, &filter)
                .await
                .map_err(jerr)?;
            Ok(string(out.into_events_json()))
        }))
    }

    /// The last durable event's bookmark as JSON (`null` for an empty log).
    #[wasm_bindgen(js_name = lastBookmarkJson)]
    pub fn last_bookmark_json(&self) -> std::result::Result<String, JsError> {
        to_json_text(&self.inner.log.last_bookmark()).map_err(err)
    }

    /// Nothing to take in: only the agent (this tab) writes its log.
    pub fn refresh(&self) {}

    /// A new subscription: `since` is `live`, `start` or `after` (with `seq`).
    pub fn subscribe(
        &self,
        filter_json: Option<String>,
        since: String,
        seq: Option<f64>,
    ) -> std::result::Result<u32, JsError> {
        let filter = options_from_json::<EventFilter>(filter_json.as_deref()).map_err(err)?;
        let since = Since::parse(&since, seq).map_err(err)?;
        self.inner.log.subscribe(filter, since).map_err(err)
    }

    /// The next step of a subscription (JSON).
    pub fn poll(&self, id: u32, max: u32) -> std::result::Result<String, JsError> {
        self.inner.log.poll_json(id, max as usize).map_err(err)
    }

    /// Reads a subscription's events from storage (after a `read` step).
    pub fn fill(&self, id: u32, since: Option<f64>, limit: u32) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let since = seq_arg(since).map_err(jerr)?;
            let json = inner
                .log
                .fill_json(&*inner.store, id, since, limit as usize)
                .await
                .map_err(jerr)?;
            Ok(string(json))
        })
    }

    /// Ends a subscription.
    pub fn unsubscribe(&self, id: u32) {
        self.inner.log.unsubscribe(id);
    }

    /// Committed events not yet handed to live handlers (JSON array).
    #[wasm_bindgen(js_name = drainLiveJson)]
    pub fn drain_live_json(&self) -> String {
        self.inner
            .log
            .drain_live_json()
            .unwrap_or_else(|_| "[]".into())
    }

    /// Nothing to close (the agent's `close` releases it).
    pub fn close(&self) -> Promise {
        Promise::resolve(&JsValue::UNDEFINED)
    }
}

// -- the agent ------------------------------------------------------------------------

/// An open agent: its lease, its machine, its event log.
#[wasm_bindgen]
pub struct NativeAgent {
    rt: Rc<Runtime>,
    /// The kept pieces of the last request body given to JavaScript.
    held: RefCell<forkpoint_core::provider::request::Held>,
    log: Rc<LogInner>,
    serial: Rc<Serial>,
    id: String,
}

fn agent(store: &Rc<IdbAgentStorage>, rt: Runtime) -> NativeAgent {
    let id = rt.lease().agent_id.clone();
    let last = rt.with_machine(|m| m.last_event()).ok().flatten();
    NativeAgent {
        log: LogInner::new(store.clone(), &id, last),
        rt: Rc::new(rt),
        held: RefCell::default(),
        serial: Rc::default(),
        id,
    }
}

impl NativeAgent {
    /// Runs `call` on the runtime in turn; the step's events go to the log.
    fn step<F>(&self, call: impl FnOnce(Rc<Runtime>) -> F + 'static) -> Promise
    where
        F: std::future::Future<Output = Result<(Step, String)>> + 'static,
    {
        let (rt, log, serial) = (self.rt.clone(), self.log.clone(), self.serial.clone());
        future_to_promise(async move {
            let _turn = serial.turn().await;
            let (step, json) = call(rt).await.map_err(jerr)?;
            log.committed(&step.events);
            Ok(string(json))
        })
    }

    fn machine<T>(
        &self,
        f: impl FnOnce(&mut forkpoint_core::agent::machine::AgentMachine) -> Result<T>,
    ) -> Result<T> {
        self.rt.with_machine(f)?
    }
}

#[wasm_bindgen]
impl NativeAgent {
    /// Creates an agent in `store` with `meta` (an `AgentMeta`, JSON) and the
    /// tools the driver can run (`ToolSpec[]`, JSON); `ALREADY_EXISTS` when taken.
    pub fn create(store: &NativeAgentStore, meta_json: String, tools_json: String) -> Promise {
        let store = store.inner.clone();
        future_to_promise(async move {
            let meta: AgentMeta = parse("meta", &meta_json).map_err(jerr)?;
            if !meta.agent_id.is_empty() {
                validate_id(&meta.agent_id, "agent").map_err(jerr)?;
            }
            let tools = tools_of(&tools_json).map_err(jerr)?;
            let rt = Runtime::create(store.clone(), meta, tools, seed(), now())
                .await
                .map_err(jerr)?;
            Ok(agent(&store, rt).into())
        })
    }

    /// Opens agent `id` of `store`: takes its lease, reads it (from the tail
    /// of its session when its resume state allows); nothing is written until
    /// `resume`.
    pub fn open(store: &NativeAgentStore, id: String, tools_json: String) -> Promise {
        let store = store.inner.clone();
        future_to_promise(async move {
            validate_id(&id, "agent").map_err(jerr)?;
            let tools = tools_of(&tools_json).map_err(jerr)?;
            let rt = Runtime::open(store.clone(), &id, tools, seed())
                .await
                .map_err(jerr)?;
            Ok(agent(&store, rt).into())
        })
    }

    /// Loads the whole session after an open from the tail (in turn with the
    /// other calls; at once when it is loaded). Queries that need the history
    /// (`Query::needs_whole`) are answered only after it: IndexedDB cannot be
    /// read synchronously.
    #[wasm_bindgen(js_name = loadWhole)]
    pub fn load_whole(&self) -> Promise {
        if self.rt.with_machine(|m| m.is_whole()).unwrap_or(false) {
            return Promise::resolve(&JsValue::UNDEFINED);
        }
        let (rt, serial) = (self.rt.clone(), self.serial.clone());
        future_to_promise(async move {
            let _turn = serial.turn().await;
            rt.ensure_whole().await.map_err(jerr)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resumes an opened agent (`opts`: `{strategy, changes, autoRun}`, JSON);
    /// resolves to `{opened, step}` (JSON).
    pub fn resume(&self, opts_json: String) -> Promise {
        self.step(move |rt| async move { rt.resume_json(&opts_json, now()).await })
    }

    /// The agent's id.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// The agent's event log (subscriptions, live events).
    pub fn events(&self) -> NativeAgentLog {
        NativeAgentLog {
            inner: self.log.clone(),
        }
    }

    /// Feeds an input (`Input`, JSON); resolves to the step (`{commands, value,
    /// bookmark}`, JSON) once what it wrote is durable.
    pub fn input(&self, input_json: String) -> Promise {
        self.step(move |rt| async move {
            let input = Input::from_json(&input_json)?;
            let step = rt.handle(input, now()).await?;
            let json = step.to_json(false);
            Ok((step, json))
        })
    }

    /// The body of the request the last `modelStream` input answered, once
    /// (`null` after): `[id, bytes | null, …]` (`util::body_parts`).
    #[wasm_bindgen(
        js_name = takeRequestBody,
        unchecked_return_type = "Array<number | Uint8Array | null> | null"
    )]
    pub fn take_request_body(&self) -> Result<JsValue, JsError> {
        let body = self.machine(|m| Ok(m.take_request_body())).map_err(err)?;
        Ok(match body {
            Some(b) => crate::util::body_parts(b, &mut self.held.borrow_mut()).into(),
            None => JsValue::NULL,
        })
    }

    /// Feeds bytes of model call `ticket`'s streamed response body, as they
    /// arrive; resolves to the step (JSON) once the pieces they completed are
    /// durable. Its `value` is `null` or `{retry, code, message}` when the
    /// stream failed.
    #[wasm_bindgen(js_name = streamBytes)]
    pub fn stream_bytes(&self, ticket: u32, bytes: Vec<u8>) -> Promise {
        self.step(move |rt| async move {
            let step = rt.stream_bytes(u64::from(ticket), &bytes, now()).await?;
            let json = step.to_json(false);
            Ok((step, json))
        })
    }

    /// Answers a query (`Query`, JSON) from the agent's state (JSON); one that
    /// needs the history only after `loadWhole`.
    pub fn query(&self, query_json: String) -> std::result::Result<String, JsError> {
        let q: Query = parse("agent query", &query_json).map_err(err)?;
        self.machine(|m| m.query(&q)).map_err(err)
    }

    /// The model's answer completed as it will be stored (ids minted, defaults filled; JSON).
    #[wasm_bindgen(js_name = completeReply)]
    pub fn complete_reply(&self, reply_json: String) -> std::result::Result<String, JsError> {
        self.machine(|m| to_json_text(&m.complete_reply(&reply_json, now())?))
            .map_err(err)
    }

    /// The tools the driver can run (`ToolSpec[]`, JSON).
    #[wasm_bindgen(js_name = setTools)]
    pub fn set_tools(&self, tools_json: String) -> std::result::Result<(), JsError> {
        let tools = tools_of(&tools_json).map_err(err)?;
        self.machine(|m| {
            m.set_tools(tools);
            Ok(())
        })
        .map_err(err)
    }

    /// Applies configuration changes (`MetaChanges`, JSON); durable on resolve.
    #[wasm_bindgen(js_name = changeMeta)]
    pub fn change_meta(&self, changes_json: String) -> Promise {
        self.step(move |rt| async move {
            let c: MetaChanges = parse("changes", &changes_json)?;
            let step = rt.change_meta(&c, now()).await?;
            let json = step.to_json(false);
            Ok((step, json))
        })
    }

    /// Restores checkpoint `id`; resolves to `{checkpoint, step}` (JSON).
    pub fn restore(&self, id: String) -> Promise {
        self.step(move |rt| async move {
            let (cp, step) = rt.restore(&id, now()).await?;
            let json = format!(
                "{{\"checkpoint\":{},\"step\":{}}}",
                to_json_text(&cp)?,
                step.to_json(false)
            );
            Ok((step, json))
        })
    }

    /// Creates a fork in `store` from snapshot `snapshot` (default: a new one of
    /// the last safe-fork-point); resolves to the fork, open.
    pub fn fork(
        &self,
        store: &NativeAgentStore,
        snapshot: Option<String>,
        tools_json: String,
    ) -> Promise {
        let (rt, log, serial) = (self.rt.clone(), self.log.clone(), self.serial.clone());
        let store = store.inner.clone();
        future_to_promise(async move {
            let _turn = serial.turn().await;
            let tools = tools_of(&tools_json).map_err(jerr)?;
            let (child, step) = rt
                .fork(store.clone(), snapshot.as_deref(), tools, seed(), now())
                .await
                .map_err(jerr)?;
            log.committed(&step.events);
            Ok(agent(&store, child).into())
        })
    }

    /// Releases the agent (its lease); later calls are `CLOSED`.
    pub fn close(&self) -> Promise {
        let (rt, serial) = (self.rt.clone(), self.serial.clone());
        future_to_promise(async move {
            let _turn = serial.turn().await;
            rt.close().await.map_err(jerr)?;
            Ok(JsValue::UNDEFINED)
        })
    }
}
