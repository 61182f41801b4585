//! `NativeEventLog` for browsers: the event log over IndexedDB (or in memory),
//! with the same core state machine and hub as the file log, so the semantics
//! are the same (FORMAT.md, "Event log" and "IndexedDB").

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use forkpoint_core::eventlog::{EventLogCore, MemoryLog, ReadOut, Since, seq_arg};
use forkpoint_core::events::{self, Bookmark, EventFilter};
use forkpoint_core::types::{options_from_json, to_json_text};
use forkpoint_core::{Durability, Error, ErrorCode, EventLogInfo, EventLogOptions};
use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};
use web_sys::{IdbCursorDirection, IdbDatabase, IdbKeyRange};

use crate::idb;
use crate::util::{err, jerr};

/// Events fetched per IndexedDB request when reading.
const PAGE: u32 = 512;
/// Largest seq an IndexedDB key range reaches (2^53 - 1).
const MAX_SEQ: f64 = events::MAX_SAFE as f64;

struct IdbState {
    core: EventLogCore,
    flushing: bool,
    waiters: Vec<Function>,
    closed: bool,
}

enum Store {
    Memory(RefCell<MemoryLog>),
    Idb {
        db: IdbDatabase,
        log: String,
        durability: Durability,
        state: RefCell<IdbState>,
    },
}

struct Inner {
    store: Store,
    opts: EventLogOptions,
}

/// An event log in IndexedDB (or in memory).
#[wasm_bindgen]
pub struct NativeEventLog {
    inner: Rc<Inner>,
    info: String,
}

fn range(log: &str, lo: f64, hi: f64) -> Result<JsValue, Error> {
    IdbKeyRange::bound(&idb::key(log, lo), &idb::key(log, hi))
        .map(JsValue::from)
        .map_err(|e| idb::idb_error(&e, "bad key range"))
}

fn record_text(v: &JsValue, log: &str) -> Result<String, Error> {
    v.as_string().ok_or_else(|| {
        Error::corrupted(format!(
            "a record of event log {log:?} is not an event line"
        ))
    })
}

fn not_an_event(log: &str, why: String) -> Error {
    Error::corrupted(format!(
        "a record of event log {log:?} is not an event: {why}"
    ))
}

fn record_line(
    v: &JsValue,
    log: &str,
    max_depth: usize,
) -> Result<(events::EventMeta, Arc<str>), Error> {
    let text = record_text(v, log)?;
    let meta = events::parse_event_line(&text, max_depth).map_err(|why| not_an_event(log, why))?;
    Ok((meta, text.into()))
}

/// The first or last record of the log.
async fn edge(
    db: &IdbDatabase,
    log: &str,
    last: bool,
    max_depth: usize,
) -> Result<Option<Bookmark>, Error> {
    let tx = idb::begin(db, "readonly", false)?;
    let store = tx
        .object_store(idb::EVENTS)
        .map_err(|e| idb::idb_error(&e, "no events store"))?;
    let dir = if last {
        IdbCursorDirection::Prev
    } else {
        IdbCursorDirection::Next
    };
    let req = store
        .open_cursor_with_range_and_direction(&range(log, 0.0, MAX_SEQ)?, dir)
        .map_err(|e| idb::idb_error(&e, "cannot open a cursor"))?;
    let cursor = idb::request(&req).await?;
    if cursor.is_null() || cursor.is_undefined() {
        return Ok(None);
    }
    let cursor: web_sys::IdbCursorWithValue = cursor.unchecked_into();
    let value = cursor
        .value()
        .map_err(|e| idb::idb_error(&e, "cannot read a record"))?;
    Ok(Some(record_line(&value, log, max_depth)?.0.bookmark()))
}

impl Inner {
    fn max_depth(&self) -> usize {
        self.opts.max_depth as usize
    }

    /// Takes in events another tab stored (the hub learns the new end).
    async fn refresh(&self) -> Result<(), Error> {
        if let Store::Idb { db, log, state, .. } = &self.store {
            let last = edge(db, log, true, self.max_depth()).await?;
            let first = edge(db, log, false, self.max_depth()).await?;
            state
                .borrow_mut()
                .core
                .hub
                .set_durable(last, first.map(|b| b.seq));
        }
        Ok(())
    }

    async fn read(
        &self,
        since: Option<u64>,
        until: Option<u64>,
        filter: &EventFilter,
    ) -> Result<ReadOut, Error> {
        if self.opts.read_only {
            // Another tab writes this log: take in what it stored since.
            self.refresh().await?;
        }
        let (db, log) = match &self.store {
            Store::Memory(m) => return Ok(m.borrow().read(since, until, filter)),
            Store::Idb { db, log, .. } => (db, log),
        };
        let mut out = ReadOut::new(since);
        let mut lo = since.map_or(0.0, |s| s as f64 + 1.0);
        let hi = until.map_or(MAX_SEQ, |u| u as f64);
        // Only events the hub knows to be durable (a read never races ahead of it).
        let hi = match self.durable() {
            Some(d) => hi.min(d as f64),
            None => return Ok(out),
        };
        while lo <= hi {
            let tx = idb::begin(db, "readonly", false)?;
            let store = tx
                .object_store(idb::EVENTS)
                .map_err(|e| idb::idb_error(&e, "no events store"))?;
            let req = store
                .get_all_with_key_and_limit(&range(log, lo, hi)?, PAGE)
                .map_err(|e| idb::idb_error(&e, "cannot read events"))?;
            let values: Array = idb::request(&req).await?.unchecked_into();
            let n = values.length();
            for v in values.iter() {
                let text = record_text(&v, log)?;
                let meta = events::parse_envelope(&text, self.max_depth())
                    .map_err(|why| not_an_event(log, why))?;
                lo = meta.seq as f64 + 1.0;
                if out.offer(meta.seq, meta.channel, &meta.kind, &text, filter) {
                    return Ok(out);
                }
            }
            if n < PAGE {
                break;
            }
        }
        Ok(out)
    }

    fn durable(&self) -> Option<u64> {
        match &self.store {
            Store::Memory(m) => m.borrow().core.hub.durable(),
            Store::Idb { state, .. } => state.borrow().core.hub.durable(),
        }
    }

    fn with_hub<T>(
        &self,
        f: impl FnOnce(&mut forkpoint_core::eventlog::Hub) -> Result<T, Error>,
    ) -> Result<T, Error> {
        match &self.store {
            Store::Memory(m) => f(&mut m.borrow_mut().core.hub),
            Store::Idb { state, .. } => f(&mut state.borrow_mut().core.hub),
        }
    }

    /// Waits until `seq` is durable, writing queued events itself when no write
    /// is in flight (group commit, as the file log does).
    async fn wait(self: &Rc<Self>, seq: u64) -> Result<(), Error> {
        let Store::Idb {
            db,
            log,
            durability,
            state,
        } = &self.store
        else {
            return Ok(());
        };
        loop {
            let batch = {
                let mut st = state.borrow_mut();
                if let Some(e) = st.core.failure() {
                    return Err(e.clone());
                }
                if st.core.hub.durable().is_some_and(|d| d >= seq) {
                    return Ok(());
                }
                if st.flushing {
                    None
                } else {
                    let max = if *durability == Durability::Fsync {
                        Some(1)
                    } else {
                        None
                    };
                    match st.core.take_batch(max) {
                        Some(b) => {
                            st.flushing = true;
                            Some(b)
                        }
                        None => {
                            return Err(Error::internal("event not durable but nothing queued"));
                        }
                    }
                }
            };
            let Some(batch) = batch else {
                // Another append is writing: wait for it to finish.
                let p = Promise::new(&mut |resolve, _| state.borrow_mut().waiters.push(resolve));
                let _ = JsFuture::from(p).await;
                continue;
            };
            let res = async {
                let tx = idb::begin(db, "readwrite", true)?;
                let store = tx
                    .object_store(idb::EVENTS)
                    .map_err(|e| idb::idb_error(&e, "no events store"))?;
                for (meta, line) in &batch.items {
                    // `add`, not `put`: a second writer that reused a seq fails loudly.
                    store
                        .add_with_key(&JsValue::from_str(line), &idb::key(log, meta.seq as f64))
                        .map_err(|e| idb::idb_error(&e, "cannot store an event"))?;
                }
                idb::transaction(&tx).await
            }
            .await;
            let waiters = {
                let mut st = state.borrow_mut();
                st.flushing = false;
                match &res {
                    Ok(()) => st.core.committed(batch),
                    Err(e) => st.core.fail(e.clone()),
                }
                std::mem::take(&mut st.waiters)
            };
            for w in waiters {
                let _ = w.call0(&JsValue::NULL);
            }
            res?;
        }
    }
}

#[wasm_bindgen]
impl NativeEventLog {
    /// Opens event log `logName` in IndexedDB database `dbName` (durability
    /// `'memory'`: in memory, nothing stored). `opts` is EventLogOptions as JSON.
    #[wasm_bindgen(js_name = openIndexedDb)]
    pub async fn open_indexed_db(
        db_name: String,
        log_name: String,
        opts: Option<String>,
    ) -> Result<NativeEventLog, JsValue> {
        let o = options_from_json::<EventLogOptions>(opts.as_deref()).map_err(jerr)?;
        let mut info = EventLogInfo::new(&o);
        let max_depth = o.max_depth as usize;
        let store = if o.durability == Durability::Memory {
            Store::Memory(RefCell::new(MemoryLog::new(max_depth, o.max_line_bytes)))
        } else {
            let db = idb::open(&db_name)
                .await
                .map_err(|e| jerr(e.with_path(format!("indexeddb:{db_name}/{log_name}"))))?;
            let last = edge(&db, &log_name, true, max_depth).await.map_err(jerr)?;
            let first = edge(&db, &log_name, false, max_depth).await.map_err(jerr)?;
            let count_tx = idb::begin(&db, "readonly", false).map_err(jerr)?;
            let all = range(&log_name, 0.0, MAX_SEQ).map_err(jerr)?;
            let count_req = count_tx
                .object_store(idb::EVENTS)
                .and_then(|s| s.count_with_key(&all))
                .map_err(|e| jerr(idb::idb_error(&e, "cannot count events")))?;
            info.events = idb::request(&count_req)
                .await
                .map_err(jerr)?
                .as_f64()
                .unwrap_or(0.0) as u64;
            info.created = last.is_none();
            info.last_bookmark = last;
            let core = EventLogCore::new(last, first.map(|b| b.seq), max_depth, o.max_line_bytes);
            Store::Idb {
                db,
                log: log_name,
                durability: o.durability,
                state: RefCell::new(IdbState {
                    core,
                    flushing: false,
                    waiters: Vec::new(),
                    closed: false,
                }),
            }
        };
        let info = to_json_text(&info).map_err(jerr)?;
        Ok(NativeEventLog {
            inner: Rc::new(Inner { store, opts: o }),
            info,
        })
    }

    /// What opening found (EventLogInfo as JSON).
    #[wasm_bindgen(js_name = infoJson)]
    pub fn info_json(&self) -> String {
        self.info.clone()
    }

    /// Appends an event (JSON object); resolves to its bookmark (JSON) once durable.
    pub fn append(&self, event_json: String) -> Result<Promise, JsError> {
        if self.inner.opts.read_only {
            return Err(err(Error::invalid_input(
                "this event log was opened read-only",
            )));
        }
        let now = js_sys::Date::now() as i64;
        let b = match &self.inner.store {
            Store::Memory(m) => m.borrow_mut().append(&event_json, now).map_err(err)?,
            Store::Idb { state, .. } => {
                let mut st = state.borrow_mut();
                if st.closed {
                    return Err(err(Error::new(
                        ErrorCode::Closed,
                        "the event log is closed",
                    )));
                }
                st.core.append(&event_json, now).map_err(err)?
            }
        };
        let inner = self.inner.clone();
        Ok(future_to_promise(async move {
            inner.wait(b.seq).await.map_err(jerr)?;
            Ok(JsValue::from_str(&to_json_text(&b).map_err(jerr)?))
        }))
    }

    /// The events with `since < seq <= until` passing the filter, as a JSON array.
    #[wasm_bindgen(js_name = readJson)]
    pub fn read_json(
        &self,
        since: Option<f64>,
        until: Option<f64>,
        filter_json: Option<String>,
    ) -> Result<Promise, JsError> {
        let filter = options_from_json::<EventFilter>(filter_json.as_deref()).map_err(err)?;
        let inner = self.inner.clone();
        let (since, until) = (seq_arg(since).map_err(err)?, seq_arg(until).map_err(err)?);
        Ok(future_to_promise(async move {
            let out = inner.read(since, until, &filter).await.map_err(jerr)?;
            Ok(JsValue::from_str(&out.into_events_json()))
        }))
    }

    /// The last durable event's bookmark as JSON (`null` for an empty log).
    #[wasm_bindgen(js_name = lastBookmarkJson)]
    pub fn last_bookmark_json(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let b = match &inner.store {
                Store::Memory(m) => m.borrow().last_bookmark(),
                Store::Idb { db, log, .. } => {
                    edge(db, log, true, inner.max_depth()).await.map_err(jerr)?
                }
            };
            Ok(JsValue::from_str(&to_json_text(&b).map_err(jerr)?))
        })
    }

    /// Takes in events another tab appended (the hub learns the new end).
    pub fn refresh(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            inner.refresh().await.map_err(jerr)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// A new subscription: `since` is `live`, `start` or `after` (with `seq`).
    pub fn subscribe(
        &self,
        filter_json: Option<String>,
        since: String,
        seq: Option<f64>,
    ) -> Result<u32, JsError> {
        let filter = options_from_json::<EventFilter>(filter_json.as_deref()).map_err(err)?;
        let since = Since::parse(&since, seq).map_err(err)?;
        self.inner
            .with_hub(|h| Ok(h.subscribe(filter, since)))
            .map_err(err)
    }

    /// The next step of a subscription (JSON).
    pub fn poll(&self, id: u32, max: u32) -> Result<String, JsError> {
        self.inner
            .with_hub(|h| h.poll(id, max as usize))
            .map(|p| p.to_json())
            .map_err(err)
    }

    /// Reads a subscription's events from storage (after a `read` step).
    pub fn fill(&self, id: u32, since: Option<f64>, limit: u32) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let filter = inner
                .with_hub(|h| h.read_filter(id, limit as usize))
                .map_err(jerr)?;
            let out = inner
                .read(seq_arg(since).map_err(jerr)?, None, &filter)
                .await
                .map_err(jerr)?;
            let json = inner.with_hub(|h| h.provide(id, out)).map_err(jerr)?;
            Ok(JsValue::from_str(&json))
        })
    }

    /// Ends a subscription.
    pub fn unsubscribe(&self, id: u32) -> Result<(), JsError> {
        self.inner
            .with_hub(|h| {
                h.unsubscribe(id);
                Ok(())
            })
            .map_err(err)
    }

    /// Committed events not yet handed to live handlers (JSON array).
    #[wasm_bindgen(js_name = drainLiveJson)]
    pub fn drain_live_json(&self) -> Result<String, JsError> {
        self.inner
            .with_hub(|h| Ok(h.drain_live_json()))
            .map_err(err)
    }

    /// Waits for pending appends and closes the database connection.
    pub fn close(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            if let Store::Idb { db, state, .. } = &inner.store {
                let last = state.borrow().core.last_assigned().map(|b| b.seq);
                if let Some(s) = last {
                    inner.wait(s).await.map_err(jerr)?;
                }
                state.borrow_mut().closed = true;
                db.close();
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}
