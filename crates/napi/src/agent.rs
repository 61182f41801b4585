//! `NativeStore` and `NativeAgent`: the agent machine over a store (behind
//! `JSONStore`, `PostgresStore` and `Agent`). Each method converts its arguments, calls
//! one core function and converts the result; the blocking ones run as a
//! [`Job`] on the libuv pool, where the runtime's futures are driven to the end
//! (the file store completes them synchronously).

use std::sync::{Arc, Mutex, MutexGuard};

use forkpoint_core::agent::machine::{Input, Query, ToolSpec};
use forkpoint_core::agent::meta::{AgentMeta, MetaChanges};
use forkpoint_core::agent::runtime::AgentRuntime;
use forkpoint_core::storage::AgentStorage;
use forkpoint_core::{Error, EventLogInfo, EventLogOptions};
use forkpoint_fs::{FileStorage, validate_id};
use forkpoint_pg::{Follower, PgOptions, PgStorage};
use napi::bindgen_prelude::{AsyncTask, Buffer, BufferSlice, ToNapiValue, TypeName, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, Task};
use napi_derive::napi;
use serde_json::Value;
use std::time::Duration;

use crate::events::NativeEventLog;
use crate::feed::{Ended, Feed, Written};
use crate::store::{Exported, Pg, Store};
use crate::stored_log::NativeStoredLog;
use crate::util::{body_parts, guard, now_ms, seed};

type Runtime = AgentRuntime<Store>;

fn to_json<T: serde::Serialize>(v: &T) -> forkpoint_core::Result<String> {
    forkpoint_core::types::to_json_text(v)
}

fn parse<'a, T: serde::Deserialize<'a>>(what: &str, text: &'a str) -> forkpoint_core::Result<T> {
    serde_json::from_str(text).map_err(|e| Error::invalid_input(format!("{what}: {e}")))
}

fn now() -> f64 {
    now_ms() as f64
}

/// `redactSecrets`: the filter `meta.json` is written through, applied to any
/// JSON value (JSON in, JSON out): members named like credentials are dropped,
/// the values of credential-named `[name, value]` pairs and secret-shaped text
/// become `[redacted]` (`INVALID_INPUT` if `json` does not parse).
#[napi]
pub fn redact_secrets_json(json: String) -> napi::Result<String> {
    guard(|| {
        let mut v: Value = parse("value", &json)?;
        forkpoint_core::secrets::scrub(&mut v);
        to_json(&v)
    })
}

type JobFn<T> = Box<dyn FnOnce() -> forkpoint_core::Result<T> + Send>;

/// One blocking call, run on the libuv pool.
pub struct Job<T>(Option<JobFn<T>>);

impl<T> Job<T> {
    pub(crate) fn new(
        f: impl FnOnce() -> forkpoint_core::Result<T> + Send + 'static,
    ) -> AsyncTask<Job<T>>
    where
        Job<T>: Task,
    {
        AsyncTask::new(Job(Some(Box::new(f))))
    }
}

impl<T: Send + 'static + ToNapiValue + TypeName> Task for Job<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<T> {
        let f = self.0.take();
        guard(|| f.ok_or_else(|| Error::internal("task run twice"))?())
    }

    fn resolve(&mut self, _env: Env, out: T) -> napi::Result<T> {
        Ok(out)
    }
}

/// The options of `PostgresStore.open`, as JSON.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PgOpenOptions {
    connection_string: String,
    schema: Option<String>,
    lease_ms: Option<f64>,
    pool_size: Option<f64>,
    connect_timeout_ms: Option<f64>,
    host: Option<String>,
}

/// A whole number of `what` in `1..=max`, else `INVALID_INPUT`.
fn whole(v: f64, what: &str, max: f64) -> forkpoint_core::Result<u64> {
    if v.fract() == 0.0 && (1.0..=max).contains(&v) {
        Ok(v as u64)
    } else {
        Err(Error::invalid_input(format!(
            "{what} must be a whole number from 1 to {max}, not {v}"
        )))
    }
}

/// An agent read whole by `exportAgent`.
#[napi(object)]
pub struct ExportedAgent {
    /// The `meta.json` text.
    pub meta: Buffer,
    /// The session (`session.jsonl`): whole lines.
    pub session: Buffer,
    /// The event log (`events.jsonl`): one line per event, each with its newline.
    pub events: Buffer,
}

/// The agents of a store: a directory, or a PostgreSQL schema.
#[napi]
pub struct NativeStore {
    inner: Store,
}

#[napi]
impl NativeStore {
    /// The store at `root` (created when the first agent is).
    #[napi(constructor)]
    pub fn new(root: String) -> Self {
        NativeStore {
            inner: Store::File(Arc::new(FileStorage::new(root))),
        }
    }

    /// Connects to PostgreSQL (`opts`: `{connectionString, schema, leaseMs,
    /// poolSize, connectTimeoutMs, host}`, JSON), creating or migrating the
    /// tables: `STORE_UNAVAILABLE` when the server cannot be used,
    /// `UNSUPPORTED_FORMAT` when its tables are newer than this build.
    #[napi(ts_return_type = "Promise<NativeStore>")]
    pub fn open_postgres(opts_json: String) -> AsyncTask<Job<NativeStore>> {
        Job::new(move || {
            let o: PgOpenOptions = parse("PostgresStore options", &opts_json)?;
            let mut p = PgOptions::new(o.connection_string);
            if let Some(s) = o.schema {
                p.schema = s;
            }
            if let Some(ms) = o.lease_ms {
                p.lease_ms = whole(ms, "leaseMs", 365.0 * 24.0 * 3_600_000.0)?;
            }
            if let Some(n) = o.pool_size {
                p.pool_size = whole(n, "poolSize", 1000.0)? as usize;
            }
            if let Some(ms) = o.connect_timeout_ms {
                p.connect_timeout_ms = whole(ms, "connectTimeoutMs", 3_600_000.0)?;
            }
            p.host = o.host;
            Ok(NativeStore {
                inner: Store::Pg(Arc::new(Pg::new(PgStorage::connect(p)?))),
            })
        })
    }

    /// The agents (as `list`), off the JavaScript thread.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn list_async(&self) -> AsyncTask<Job<String>> {
        let store = self.inner.clone();
        Job::new(move || forkpoint_core::storage::listed_json(pollster::block_on(store.list())?))
    }

    /// Whether the store holds agent `id` (as `exists`), off the JavaScript thread.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn exists_async(&self, id: String) -> AsyncTask<Job<bool>> {
        let store = self.inner.clone();
        Job::new(move || {
            validate_id(&id)?;
            pollster::block_on(store.exists(&id))
        })
    }

    /// Deletes agent `id` (as `remove`), off the JavaScript thread.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn remove_async(&self, id: String) -> AsyncTask<Job<()>> {
        let store = self.inner.clone();
        Job::new(move || pollster::block_on(store.delete(&id)))
    }

    /// PostgreSQL: closes the idle connections and stops following
    /// notifications (open agents keep their leases). Files: nothing to do.
    #[napi]
    pub fn close_store(&self) {
        if let Store::Pg(pg) = &self.inner {
            pg.pg.close_idle();
        }
    }

    /// Follows agent `id`'s events as its writer (on any host) stores them
    /// (PostgreSQL only; `AGENT_NOT_FOUND`).
    #[napi(ts_return_type = "Promise<NativeStoredLog>")]
    pub fn follow(&self, id: String) -> AsyncTask<Job<NativeStoredLog>> {
        let store = self.inner.clone();
        Job::new(move || match store {
            Store::Pg(pg) => Ok(NativeStoredLog::follow(Follower::open(&pg.pg, &id)?, pg)),
            Store::File(_) => Err(Error::invalid_input(
                "follow is for PostgreSQL stores (open the agent's events.jsonl read-only)",
            )),
        })
    }

    /// The agents (JSON array of their `meta.json`; one that cannot be read is
    /// `{agentId, corrupted: true, error}`), by creation time then id.
    #[napi]
    pub fn list(&self) -> napi::Result<String> {
        guard(|| forkpoint_core::storage::listed_json(pollster::block_on(self.inner.list())?))
    }

    /// Whether the store holds agent `id` (`INVALID_ID` for an id that cannot be one).
    #[napi]
    pub fn exists(&self, id: String) -> napi::Result<bool> {
        guard(|| pollster::block_on(self.inner.exists(&id)))
    }

    /// Deletes agent `id` (not its forks); `AGENT_LOCKED` while it is open.
    #[napi]
    pub fn remove(&self, id: String) -> napi::Result<()> {
        guard(|| pollster::block_on(self.inner.delete(&id)))
    }

    /// What the store knows of agent `id`, without taking its lease (JSON).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn inspect(&self, id: String) -> AsyncTask<Job<String>> {
        let store = self.inner.clone();
        Job::new(move || match store {
            Store::File(store) => to_json(&pollster::block_on(forkpoint_fs::inspect::inspect(
                &store, &id,
            ))?),
            Store::Pg(pg) => {
                validate_id(&id)?;
                let meta = pg.pg.read_meta(&id)?;
                let path = |part: &str| format!("{id}/{part} in PostgreSQL");
                to_json(&pollster::block_on(forkpoint_fs::inspect::inspect_in(
                    &pg.pg, &id, &meta, &path,
                ))?)
            }
        })
    }

    /// Agent `id` whole, read without taking its lease (`AGENT_NOT_FOUND`):
    /// its `meta.json`, its session (whole lines) and its event lines (each
    /// with its newline), byte for byte as a `JSONStore` keeps them in
    /// `meta.json`, `session.jsonl` and `events.jsonl`.
    #[napi(ts_return_type = "Promise<ExportedAgent>")]
    pub fn export_agent(&self, id: String) -> AsyncTask<Job<ExportedAgent>> {
        let store = self.inner.clone();
        Job::new(move || {
            let x = pollster::block_on(store.export(&id))?;
            Ok(ExportedAgent {
                meta: x.meta.into(),
                session: x.session.into(),
                events: x.events.into(),
            })
        })
    }

    /// Creates agent `id` holding exactly these bytes (as `exportAgent` gives
    /// them), then releases it: `ALREADY_EXISTS` when the id is taken,
    /// `INVALID_INPUT` when they cannot be an agent's (the meta must be a JSON
    /// object whose `agentId` is `id`).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn import_agent(
        &self,
        id: String,
        meta: Buffer,
        session: Buffer,
        events: Buffer,
    ) -> AsyncTask<Job<()>> {
        let store = self.inner.clone();
        Job::new(move || {
            let parts = Exported {
                meta: meta.to_vec(),
                session: session.to_vec(),
                events: events.to_vec(),
            };
            pollster::block_on(store.import(&id, parts))
        })
    }

    /// Checks an agent id (`INVALID_ID`).
    #[napi]
    pub fn validate_id(id: String) -> napi::Result<()> {
        guard(|| validate_id(&id))
    }
}

/// An open agent: its lease, its machine, its event log.
#[napi]
pub struct NativeAgent {
    rt: Arc<Mutex<Runtime>>,
    /// The writer of the model call being streamed (its ticket).
    feed: Mutex<Option<(u32, Arc<Feed>)>>,
    /// What JavaScript was handed of request bodies.
    handed: Mutex<crate::util::Handed>,
    events: AgentLog,
    id: String,
}

/// An open agent's event log.
enum AgentLog {
    /// The file store's, with what opening it found (JSON).
    File(Option<(Arc<forkpoint_fs::events::FileEventLog>, String)>),
    /// Read through the storage seam, fed by the agent's writes.
    Stored(Arc<forkpoint_core::storage::StoredLog>, Store),
}

/// The seq of an event line (`{"seq":N,…`).
fn seq_of(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("{\"seq\":")?;
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    rest[..end].parse().ok()
}

fn lock(rt: &Mutex<Runtime>) -> forkpoint_core::Result<MutexGuard<'_, Runtime>> {
    rt.lock()
        .map_err(|_| Error::internal("agent poisoned by a panic"))
}

fn tools_of(json: &str) -> forkpoint_core::Result<Vec<ToolSpec>> {
    ToolSpec::list_from_json(json)
}

fn agent(store: &Store, rt: Runtime) -> NativeAgent {
    let id = rt.lease().agent_id.clone();
    let events = match store {
        Store::File(files) => AgentLog::File(files.events(&id).map(|log| {
            let opts = EventLogOptions::default();
            let mut info = EventLogInfo::new(&opts);
            info.last_bookmark = log.last_bookmark().ok().flatten();
            (log, to_json(&info).unwrap_or_else(|_| "{}".into()))
        })),
        Store::Pg(pg) => {
            let last = rt.with_machine(|m| m.last_event()).ok().flatten();
            AgentLog::Stored(pg.log(&id, last), store.clone())
        }
    };
    NativeAgent {
        rt: Arc::new(Mutex::new(rt)),
        feed: Mutex::new(None),
        handed: Mutex::default(),
        events,
        id,
    }
}

#[napi]
impl NativeAgent {
    /// Creates an agent in `store` with `meta` (an `AgentMeta`, JSON) and the
    /// tools the driver can run (`ToolSpec[]`, JSON); `ALREADY_EXISTS` when taken.
    #[napi(ts_return_type = "Promise<NativeAgent>")]
    pub fn create(
        store: &NativeStore,
        meta_json: String,
        tools_json: String,
    ) -> AsyncTask<Job<NativeAgent>> {
        let store = store.inner.clone();
        Job::new(move || {
            let meta: AgentMeta = parse("meta", &meta_json)?;
            if !meta.agent_id.is_empty() {
                validate_id(&meta.agent_id)?;
            }
            let tools = tools_of(&tools_json)?;
            let rt =
                pollster::block_on(Runtime::create(store.clone(), meta, tools, seed(), now()))?;
            Ok(agent(&store, rt))
        })
    }

    /// Opens agent `id` of `store`: takes its lease, reads it; nothing is
    /// written until `resume`.
    #[napi(ts_return_type = "Promise<NativeAgent>")]
    pub fn open(
        store: &NativeStore,
        id: String,
        tools_json: String,
    ) -> AsyncTask<Job<NativeAgent>> {
        let store = store.inner.clone();
        Job::new(move || {
            validate_id(&id)?;
            let tools = tools_of(&tools_json)?;
            let rt = pollster::block_on(Runtime::open(store.clone(), &id, tools, seed()))?;
            Ok(agent(&store, rt))
        })
    }

    /// Resumes an opened agent (`opts`: `{strategy, changes, autoRun}`, JSON);
    /// resolves to `{opened, step}` (JSON).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn resume(&self, opts_json: String) -> AsyncTask<Job<String>> {
        let rt = self.rt.clone();
        Job::new(move || {
            let rt = lock(&rt)?;
            Ok(pollster::block_on(rt.resume_json(&opts_json, now()))?.1)
        })
    }

    /// The agent's id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// The agent's event log in a file store (subscriptions, live events).
    #[napi]
    pub fn events(&self) -> napi::Result<NativeEventLog> {
        guard(|| match &self.events {
            AgentLog::File(Some((log, info))) => {
                Ok(NativeEventLog::shared(log.clone(), info.clone()))
            }
            _ => Err(Error::internal("the agent has no event log file")),
        })
    }

    /// The agent's event log in a PostgreSQL store (subscriptions, live events).
    #[napi]
    pub fn stored_events(&self) -> napi::Result<NativeStoredLog> {
        guard(|| match &self.events {
            AgentLog::Stored(log, store) => Ok(NativeStoredLog::agent(log.clone(), store.clone())),
            AgentLog::File(_) => Err(Error::internal("the agent's event log is a file")),
        })
    }

    /// Feeds an input (`Input`, JSON); resolves to the step (`{commands, value,
    /// bookmark}`, JSON) once what it wrote is durable.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn input(&self, input_json: String) -> AsyncTask<Job<String>> {
        let rt = self.rt.clone();
        Job::new(move || {
            let input = Input::from_json(&input_json)?;
            let rt = lock(&rt)?;
            Ok(pollster::block_on(rt.handle(input, now()))?.to_json(false))
        })
    }

    /// The body of the request the last `modelStream` input answered, once
    /// (`null` after): `[id, bytes | null, …]` (`util::body_parts`; the
    /// caller keeps the last body's pieces by id).
    #[napi(ts_return_type = "Array<number | Buffer | null> | null")]
    pub fn take_request_body<'env>(
        &self,
        env: &'env Env,
    ) -> napi::Result<Option<crate::util::BodyParts<'env>>> {
        let body = guard(|| lock(&self.rt)?.with_machine(|m| m.take_request_body()))?;
        let Some(body) = body else {
            return Ok(None);
        };
        let mut handed = self
            .handed
            .lock()
            .map_err(|_| napi::Error::from_reason("agent poisoned by a panic"))?;
        body_parts(env, body, &mut handed).map(Some)
    }

    /// Starts the writer of model call `ticket`'s streamed body, on a thread of
    /// its own: bytes given to `streamPush` are decoded and made durable there,
    /// a write at most every `intervalMs` (what arrives meanwhile goes in the
    /// next), so a JavaScript thread busy reading a burst cannot hold them
    /// back. `onWrite` is called on the JavaScript thread after each write (for
    /// live listeners). End it with `streamEnd`.
    #[napi]
    pub fn stream_start(
        &self,
        ticket: u32,
        interval_ms: f64,
        on_write: ThreadsafeFunction<u32, Unknown<'static>, u32, Status, false>,
    ) -> napi::Result<()> {
        guard(|| {
            let rt = self.rt.clone();
            let write = Box::new(move |bytes: &[u8]| -> forkpoint_core::Result<Written> {
                let rt = lock(&rt)?;
                let step = pollster::block_on(rt.stream_bytes(u64::from(ticket), bytes, now()))?;
                let stop = step.reply.value.is_some();
                Ok(Written {
                    step: (stop || !step.commands.is_empty()).then(|| step.to_json(false)),
                    stop,
                    last_seq: step.events.last().and_then(|l| seq_of(l)),
                })
            });
            let written = Box::new(move || {
                on_write.call(0, ThreadsafeFunctionCallMode::NonBlocking);
            });
            let ms = if interval_ms.is_finite() {
                interval_ms.clamp(0.0, 60_000.0)
            } else {
                0.0
            };
            let interval = Duration::from_secs_f64(ms / 1000.0);
            let feed = Arc::new(Feed::start(interval, write, written)?);
            let old = self
                .feed
                .lock()
                .map_err(|_| Error::internal("agent poisoned by a panic"))?
                .replace((ticket, feed));
            if let Some((_, old)) = old {
                old.end(true).ok();
            }
            Ok(())
        })
    }

    /// Queues bytes of model call `ticket`'s streamed body (returns at once);
    /// `false` when its writer has stopped (the stream failed, or a write did:
    /// `streamEnd` says how), so reading on is useless.
    #[napi]
    pub fn stream_push(&self, ticket: u32, bytes: BufferSlice) -> napi::Result<bool> {
        guard(|| {
            let feed = self.feed_of(ticket)?;
            Ok(feed.push(&bytes))
        })
    }

    /// Ends model call `ticket`'s writer: what is queued is written (dropped
    /// with `discard`), then resolves to `{steps, writes}` (JSON): the steps the
    /// driver must see (commands, or the stream's failure as `value`), and for
    /// each write `{at, lastSeq}` — when its events became durable (ms since
    /// the epoch) and the seq of its last one. A write that failed rejects.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn stream_end(&self, ticket: u32, discard: bool) -> AsyncTask<Job<String>> {
        let feed = self.feed_of(ticket);
        let slot = self.feed.lock().ok().and_then(|mut f| {
            if f.as_ref().is_some_and(|(t, _)| *t == ticket) {
                f.take()
            } else {
                None
            }
        });
        drop(slot);
        Job::new(move || {
            let Ended { steps, writes } = feed?.end(discard)?;
            let mut out = String::from("{\"steps\":[");
            out.push_str(&steps.join(","));
            out.push_str("],\"writes\":");
            out.push_str(&to_json(&writes)?);
            out.push('}');
            Ok(out)
        })
    }

    /// Answers a query (`Query`, JSON) from the agent's state (JSON).
    #[napi]
    pub fn query(&self, query_json: String) -> napi::Result<String> {
        guard(|| {
            let q: Query = parse("agent query", &query_json)?;
            // After a resume from the tail, the first query that needs the
            // whole session loads it (the file store completes at once).
            pollster::block_on(lock(&self.rt)?.query(&q))
        })
    }

    /// The model's answer completed as it will be stored (ids minted, defaults filled; JSON).
    #[napi]
    pub fn complete_reply(&self, reply_json: String) -> napi::Result<String> {
        guard(|| {
            to_json(
                &lock(&self.rt)?
                    .machine()
                    .complete_reply(&reply_json, now())?,
            )
        })
    }

    /// The tools the driver can run (`ToolSpec[]`, JSON).
    #[napi]
    pub fn set_tools(&self, tools_json: String) -> napi::Result<()> {
        guard(|| {
            let tools = tools_of(&tools_json)?;
            lock(&self.rt)?.machine().set_tools(tools);
            Ok(())
        })
    }

    /// Applies configuration changes (`MetaChanges`, JSON); durable on resolve.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn change_meta(&self, changes_json: String) -> AsyncTask<Job<String>> {
        let rt = self.rt.clone();
        Job::new(move || {
            let c: MetaChanges = parse("changes", &changes_json)?;
            let rt = lock(&rt)?;
            Ok(pollster::block_on(rt.change_meta(&c, now()))?.to_json(false))
        })
    }

    /// Restores checkpoint `id`; resolves to `{checkpoint, step}` (JSON).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn restore(&self, id: String) -> AsyncTask<Job<String>> {
        let rt = self.rt.clone();
        Job::new(move || {
            let rt = lock(&rt)?;
            let (cp, step) = pollster::block_on(rt.restore(&id, now()))?;
            Ok(format!(
                "{{\"checkpoint\":{},\"step\":{}}}",
                to_json(&cp)?,
                step.to_json(false)
            ))
        })
    }

    /// Creates a fork in `store` from snapshot `snapshot` (default: a new one of
    /// the last safe-fork-point); resolves to the fork, open.
    #[napi(ts_return_type = "Promise<NativeAgent>")]
    pub fn fork(
        &self,
        store: &NativeStore,
        snapshot: Option<String>,
        tools_json: String,
    ) -> AsyncTask<Job<NativeAgent>> {
        let rt = self.rt.clone();
        let store = store.inner.clone();
        Job::new(move || {
            let tools = tools_of(&tools_json)?;
            let rt = lock(&rt)?;
            let (child, _) = pollster::block_on(rt.fork(
                store.clone(),
                snapshot.as_deref(),
                tools,
                seed(),
                now(),
            ))?;
            Ok(agent(&store, child))
        })
    }

    /// Releases the agent (its lease); later calls are `CLOSED`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<Job<()>> {
        let rt = self.rt.clone();
        let feed = self.feed.lock().ok().and_then(|mut f| f.take());
        Job::new(move || {
            if let Some((_, feed)) = feed {
                feed.end(true).ok(); // a stream being read: its writer stops
            }
            let rt = lock(&rt)?;
            pollster::block_on(rt.close())
        })
    }
}

impl NativeAgent {
    /// The writer of model call `ticket` (`INVALID_INPUT` when none was started).
    fn feed_of(&self, ticket: u32) -> forkpoint_core::Result<Arc<Feed>> {
        let f = self
            .feed
            .lock()
            .map_err(|_| Error::internal("agent poisoned by a panic"))?;
        match &*f {
            Some((t, feed)) if *t == ticket => Ok(feed.clone()),
            _ => Err(Error::invalid_input(format!(
                "no stream writer was started for model call {ticket}"
            ))),
        }
    }
}
