//! `NativeStore`: sessions in IndexedDB (behind `IndexedDbStore` in
//! forkpoint-web). The logic is the core's [`Store`]; this file is the
//! [`Storage`] over IndexedDB and the conversions (FORMAT.md §16).

use std::cell::RefCell;
use std::rc::Rc;

use forkpoint_core::normalize::import::ImportFormat;
use forkpoint_core::store::{
    CheckpointOptions, Commit, EVENTS_PREFIX, ImportOptions, Op, Part, Snapshot, Storage, Store,
    StoredLazy, check_guard,
};
use forkpoint_core::types::{options_from_json, to_json_text};
use forkpoint_core::{Error, ErrorCode, LazyOptions, LoadOptions, Result};
use js_sys::{Array, Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::{IdbDatabase, IdbKeyRange, IdbTransaction};

use crate::idb;
use crate::session::NativeSession;
use crate::util::{err, jerr};

/// Largest number used as the upper end of key ranges (2^53 - 1).
const MAX_KEY: f64 = 9_007_199_254_740_991.0;

/// The [`Storage`] over one IndexedDB database.
pub struct IdbStorage {
    db: IdbDatabase,
    /// Called as chunk writes of a commit complete: `(bytesWritten, bytesTotal)`.
    progress: RefCell<Option<Function>>,
    /// An `AbortSignal` that aborts the running commit's transaction.
    signal: RefCell<Option<JsValue>>,
}

fn key3(id: &str, part: Part, n: f64) -> JsValue {
    Array::of3(&id.into(), &part.name().into(), &n.into()).into()
}

fn bound(lo: &JsValue, hi: &JsValue) -> Result<IdbKeyRange> {
    IdbKeyRange::bound(lo, hi).map_err(|e| idb::idb_error(&e, "bad key range"))
}

/// Keys `[id, ...]` of a session in a store keyed by arrays: `[id]` sorts
/// before them and `[id, []]` after them (arrays sort after strings and numbers).
fn session_range(id: &str) -> Result<IdbKeyRange> {
    bound(
        &Array::of1(&id.into()).into(),
        &Array::of2(&id.into(), &Array::new()).into(),
    )
}

fn store_of(tx: &IdbTransaction, name: &str) -> Result<web_sys::IdbObjectStore> {
    tx.object_store(name)
        .map_err(|e| idb::idb_error(&e, &format!("no {name} store (database schema too old?)")))
}

fn strings(v: JsValue, what: &str) -> Result<Vec<String>> {
    let a: Array = v
        .dyn_into()
        .map_err(|_| Error::corrupted(format!("{what}: not a list of records")))?;
    a.iter()
        .map(|x| {
            x.as_string()
                .ok_or_else(|| Error::corrupted(format!("{what}: a record is not JSON text")))
        })
        .collect()
}

fn aborted(signal: &JsValue) -> bool {
    Reflect::get(signal, &"aborted".into())
        .map(|a| a.is_truthy())
        .unwrap_or(false)
}

fn aborted_error() -> Error {
    Error::new(
        ErrorCode::Aborted,
        "the import was aborted; nothing of it was stored",
    )
}

impl IdbStorage {
    async fn get(&self, store: &str, key: &JsValue) -> Result<JsValue> {
        let tx = idb::begin_on(&self.db, &[store], "readonly", false)?;
        let req = store_of(&tx, store)?
            .get(key)
            .map_err(|e| idb::idb_error(&e, "cannot read"))?;
        idb::request(&req).await
    }

    /// A session's record and its chunks `lo..=hi` of a part, read in one
    /// transaction (`None`: no such session). A record that is not text is
    /// handed on as empty text: the core reports it as damaged.
    async fn with_record(
        &self,
        id: &str,
        part: Part,
        lo: f64,
        hi: f64,
    ) -> Result<Option<(String, Vec<Uint8Array>)>> {
        let tx = idb::begin_on(&self.db, &[idb::SESSIONS, idb::CHUNKS], "readonly", false)?;
        let fail = |e: JsValue| idb::idb_error(&e, "cannot read");
        let rec = store_of(&tx, idb::SESSIONS)?
            .get(&id.into())
            .map_err(fail)?;
        let range = bound(&key3(id, part, lo), &key3(id, part, hi))?;
        let all = store_of(&tx, idb::CHUNKS)?
            .get_all_with_key(&range)
            .map_err(fail)?;
        let rec = idb::request(&rec).await?;
        let all: Array = idb::request(&all)
            .await?
            .dyn_into()
            .map_err(|_| Error::corrupted("chunks: not a list"))?;
        if rec.is_undefined() {
            return Ok(None);
        }
        let arrays = all
            .iter()
            .map(|c| {
                c.dyn_into::<Uint8Array>()
                    .map_err(|_| Error::corrupted(format!("session {id:?}: a chunk is not bytes")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some((rec.as_string().unwrap_or_default(), arrays)))
    }

    /// Issues one op in `tx` (no waiting: the transaction settles them all).
    fn issue(&self, tx: &IdbTransaction, op: Op, written: &Rc<RefCell<(f64, f64)>>) -> Result<()> {
        let fail = |e: JsValue| idb::idb_error(&e, "cannot write");
        match op {
            Op::PutSession { id, record } => {
                store_of(tx, idb::SESSIONS)?
                    .put_with_key(&record.into(), &id.into())
                    .map_err(fail)?;
            }
            Op::DeleteSession { id } => {
                store_of(tx, idb::SESSIONS)?
                    .delete(&id.into())
                    .map_err(fail)?;
            }
            Op::PutChunk { id, part, n, bytes } => {
                let len = bytes.len() as f64;
                let value = Uint8Array::from(bytes.as_slice());
                let req = store_of(tx, idb::CHUNKS)?
                    .put_with_key(&value, &key3(&id, part, f64::from(n)))
                    .map_err(fail)?;
                if let Some(p) = self.progress.borrow().clone() {
                    let w = written.clone();
                    let signal = self.signal.borrow().clone();
                    let t = tx.clone();
                    let done = Closure::once_into_js(move |_e: JsValue| {
                        let (sum, total) = {
                            let mut w = w.borrow_mut();
                            w.0 += len;
                            *w
                        };
                        let _ = p.call2(&JsValue::NULL, &sum.into(), &total.into());
                        if signal.as_ref().is_some_and(aborted) {
                            let _ = t.abort();
                        }
                    });
                    req.set_onsuccess(Some(done.unchecked_ref()));
                }
            }
            Op::DeleteChunks { id, part, from } => {
                let r = bound(&key3(&id, part, f64::from(from)), &key3(&id, part, MAX_KEY))?;
                store_of(tx, idb::CHUNKS)?.delete(&r).map_err(fail)?;
            }
            Op::DeleteCheckpoints { id } => {
                store_of(tx, idb::CHECKPOINTS)?
                    .delete(&session_range(&id)?.into())
                    .map_err(fail)?;
            }
            Op::DeleteEvents { id } => {
                // Every log named `session:<id>:…` (ids have no ':').
                let prefix = format!("{EVENTS_PREFIX}{id}:");
                let r = bound(
                    &idb::key(&prefix, 0.0),
                    &idb::key(&format!("{prefix}\u{ffff}"), MAX_KEY),
                )?;
                store_of(tx, idb::EVENTS)?.delete(&r).map_err(fail)?;
            }
        }
        Ok(())
    }
}

impl Storage for IdbStorage {
    async fn backoff(&self, attempt: u32) {
        // A random 0..(5 · 2^attempt) ms, at most 0.5 s.
        let ms = js_sys::Math::random() * f64::from(5u32 << attempt.min(7)).min(500.0);
        let p = Promise::new(&mut |resolve: Function, _| {
            if let Ok(set) = Reflect::get(&js_sys::global(), &"setTimeout".into())
                .and_then(|f| f.dyn_into::<Function>())
            {
                let _ = set.call2(&JsValue::NULL, &resolve, &ms.into());
            } else {
                let _ = resolve.call0(&JsValue::NULL);
            }
        });
        let _ = wasm_bindgen_futures::JsFuture::from(p).await;
    }

    async fn session_records(&self) -> Result<Vec<(String, String)>> {
        let tx = idb::begin_on(&self.db, &[idb::SESSIONS], "readonly", false)?;
        let store = store_of(&tx, idb::SESSIONS)?;
        let fail = |e: JsValue| idb::idb_error(&e, "cannot list sessions");
        let keys = store.get_all_keys().map_err(fail)?;
        let values = store.get_all().map_err(fail)?;
        let keys: Array = idb::request(&keys)
            .await?
            .dyn_into()
            .map_err(|_| Error::corrupted("sessions: not a list of keys"))?;
        let values: Array = idb::request(&values)
            .await?
            .dyn_into()
            .map_err(|_| Error::corrupted("sessions: not a list of records"))?;
        // A record that is not text is handed on as such: the core lists it
        // with an error instead of failing the whole list.
        Ok(keys
            .iter()
            .zip(values.iter())
            .map(|(k, v)| {
                let id = k.as_string().unwrap_or_else(|| format!("{k:?}"));
                (id, v.as_string().unwrap_or_default())
            })
            .collect())
    }

    async fn session_record(&self, id: &str) -> Result<Option<String>> {
        let v = self.get(idb::SESSIONS, &id.into()).await?;
        if v.is_undefined() {
            return Ok(None);
        }
        // A value that is not text is handed on as empty text: the core
        // reports it as damaged, and it can still be deleted.
        Ok(Some(v.as_string().unwrap_or_default()))
    }

    async fn snapshot(&self, id: &str, part: Part) -> Result<Option<Snapshot>> {
        let Some((record, arrays)) = self.with_record(id, part, 0.0, MAX_KEY).await? else {
            return Ok(None);
        };
        // One copy, straight from each chunk into the session's buffer.
        let total: usize = arrays.iter().map(|a| a.length() as usize).sum();
        let mut bytes = vec![0u8; total];
        let mut at = 0;
        for a in &arrays {
            let n = a.length() as usize;
            a.copy_to(&mut bytes[at..at + n]);
            at += n;
        }
        Ok(Some(Snapshot {
            record,
            chunks: arrays.len(),
            bytes,
        }))
    }

    async fn chunks(
        &self,
        id: &str,
        part: Part,
        from: u32,
        to: u32,
    ) -> Result<Option<(String, Vec<Vec<u8>>)>> {
        if to <= from {
            return Ok(self.session_record(id).await?.map(|r| (r, Vec::new())));
        }
        let hi = f64::from(to - 1);
        let Some((record, arrays)) = self.with_record(id, part, f64::from(from), hi).await? else {
            return Ok(None);
        };
        if arrays.len() as u32 != to - from {
            return Err(Error::corrupted(format!(
                "session {id:?}: {} of its {} {} chunks {from}..{to} are stored",
                arrays.len(),
                to - from,
                part.name()
            )));
        }
        Ok(Some((
            record,
            arrays.iter().map(Uint8Array::to_vec).collect(),
        )))
    }

    async fn legacy_checkpoints(&self, id: Option<&str>) -> Result<Vec<(String, String)>> {
        let tx = idb::begin_on(&self.db, &[idb::CHECKPOINTS], "readonly", false)?;
        let store = store_of(&tx, idb::CHECKPOINTS)?;
        let fail = |e: JsValue| idb::idb_error(&e, "cannot read checkpoints");
        let range: JsValue = match id {
            Some(id) => session_range(id)?.into(),
            None => JsValue::UNDEFINED,
        };
        let keys = store.get_all_keys_with_key(&range).map_err(fail)?;
        let values = store.get_all_with_key(&range).map_err(fail)?;
        let keys: Array = idb::request(&keys)
            .await?
            .dyn_into()
            .map_err(|_| Error::corrupted("checkpoints: not a list of keys"))?;
        let values = strings(idb::request(&values).await?, "checkpoints")?;
        // Keys are `[sessionId, checkpointId]`.
        Ok(keys
            .iter()
            .zip(values)
            .map(|(k, v)| {
                let s = Reflect::get_u32(&k, 0)
                    .ok()
                    .and_then(|s| s.as_string())
                    .unwrap_or_default();
                (s, v)
            })
            .collect())
    }

    async fn commit(&self, commit: Commit) -> Result<()> {
        let signal = self.signal.borrow().clone();
        if signal.as_ref().is_some_and(aborted) {
            return Err(aborted_error());
        }
        // Only the stores the commit touches are locked (an event log in
        // another store keeps appending meanwhile).
        let mut stores = vec![idb::SESSIONS];
        for op in &commit.ops {
            let s = match op {
                Op::PutChunk { .. } | Op::DeleteChunks { .. } => idb::CHUNKS,
                Op::DeleteCheckpoints { .. } => idb::CHECKPOINTS,
                Op::DeleteEvents { .. } => idb::EVENTS,
                Op::PutSession { .. } | Op::DeleteSession { .. } => idb::SESSIONS,
            };
            if !stores.contains(&s) {
                stores.push(s);
            }
        }
        let tx = idb::begin_on(&self.db, &stores, "readwrite", true)?;
        // Settles with the transaction whatever happens below.
        let done = idb::transaction(&tx);
        let run = async {
            if let Some((id, _)) = &commit.guard {
                let req = store_of(&tx, idb::SESSIONS)?
                    .get(&id.into())
                    .map_err(|e| idb::idb_error(&e, "cannot read"))?;
                let v = idb::request(&req).await?;
                let cur = (!v.is_undefined()).then(|| v.as_string().unwrap_or_default());
                check_guard(&commit.guard, cur.as_deref())?;
            }
            let total: usize = commit
                .ops
                .iter()
                .map(|o| match o {
                    Op::PutChunk { bytes, .. } => bytes.len(),
                    _ => 0,
                })
                .sum();
            let written = Rc::new(RefCell::new((0.0, total as f64)));
            for op in commit.ops {
                self.issue(&tx, op, &written)?;
            }
            Ok::<_, Error>(())
        };
        // The signal aborts the transaction while it runs.
        let on_abort = signal.as_ref().map(|s| {
            let t = tx.clone();
            let f = Closure::<dyn FnMut()>::new(move || {
                let _ = t.abort();
            });
            let add: Option<Function> = Reflect::get(s, &"addEventListener".into())
                .ok()
                .and_then(|f| f.dyn_into().ok());
            if let Some(add) = &add {
                let _ = add.call2(s, &"abort".into(), f.as_ref());
            }
            (s.clone(), f)
        });
        let issued = run.await;
        if issued.is_err() {
            let _ = tx.abort();
        }
        let settled = done.await;
        if let Some((s, f)) = on_abort {
            if let Ok(rm) = Reflect::get(&s, &"removeEventListener".into())
                .and_then(|f| f.dyn_into::<Function>())
            {
                let _ = rm.call2(&s, &"abort".into(), f.as_ref());
            }
            drop(f);
        }
        // An abort by the signal explains whatever failed after it.
        if (issued.is_err() || settled.is_err()) && signal.as_ref().is_some_and(aborted) {
            return Err(aborted_error());
        }
        issued?;
        settled
    }
}

type IdbStore = Store<IdbStorage>;

/// Sessions in one IndexedDB database.
#[wasm_bindgen]
pub struct NativeStore {
    inner: Rc<IdbStore>,
}

fn seed() -> u64 {
    (js_sys::Math::random() * 9_007_199_254_740_991.0) as u64 ^ (js_sys::Date::now() as u64) << 11
}

fn json_value<T: serde::Serialize>(v: &T) -> std::result::Result<JsValue, JsValue> {
    Ok(JsValue::from_str(&to_json_text(v).map_err(jerr)?))
}

#[wasm_bindgen]
impl NativeStore {
    /// Opens (creating or upgrading) database `dbName`, then moves the
    /// checkpoints forkpoint-web 0.1.0 kept beside its sessions into them
    /// (best effort: a session it cannot do now is done by its next
    /// checkpoint call).
    pub fn open(db_name: String) -> Promise {
        future_to_promise(async move {
            let db = idb::open(&db_name).await.map_err(jerr)?;
            let storage = IdbStorage {
                db,
                progress: RefCell::new(None),
                signal: RefCell::new(None),
            };
            let store = Store::new(storage, seed());
            let _ = store.migrate_checkpoints(js_sys::Date::now() as i64).await;
            Ok(NativeStore {
                inner: Rc::new(store),
            }
            .into())
        })
    }

    /// Imports a session file's bytes as one transaction. `opts` is
    /// `{id?, copy?, format?, source?, name?}` and the `LimitOptions` as JSON
    /// (`copy`: store it under `new_id`); resolves to `{info, summary}` JSON.
    #[wasm_bindgen(js_name = importSession)]
    pub fn import_session(
        &self,
        bytes: Vec<u8>,
        opts: Option<String>,
        new_id: String,
        now_ms: f64,
        signal: JsValue,
        on_progress: Option<Function>,
    ) -> std::result::Result<Promise, JsError> {
        #[derive(serde::Deserialize, Default)]
        #[serde(default)]
        struct Opts {
            id: Option<String>,
            copy: bool,
            format: Option<String>,
            source: Option<String>,
            name: Option<String>,
        }
        let o: Opts = options_from_json(opts.as_deref()).map_err(err)?;
        let limits: forkpoint_core::LimitOptions =
            options_from_json(opts.as_deref()).map_err(err)?;
        let format = o
            .format
            .as_deref()
            .map(ImportFormat::parse)
            .transpose()
            .map_err(err)?;
        let io = ImportOptions {
            id: o.id,
            copy: o.copy,
            new_id,
            format,
            source: o.source,
            name: o.name,
            now_ms: now_ms as i64,
            limits,
        };
        let inner = self.inner.clone();
        Ok(future_to_promise(async move {
            let st = inner.storage();
            *st.signal.borrow_mut() =
                (!signal.is_undefined() && !signal.is_null()).then_some(signal);
            *st.progress.borrow_mut() = on_progress;
            let out = inner.import(bytes, &io).await;
            *st.signal.borrow_mut() = None;
            *st.progress.borrow_mut() = None;
            let (info, summary) = out.map_err(jerr)?;
            json_value(&serde_json::json!({ "info": info, "summary": summary }))
        }))
    }

    /// Every session's facts (StoredSessionInfo[] JSON), most recently changed first.
    #[wasm_bindgen(js_name = listJson)]
    pub fn list_json(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move { json_value(&inner.list().await.map_err(jerr)?) })
    }

    /// One session's facts (JSON).
    #[wasm_bindgen(js_name = infoJson)]
    pub fn info_json(&self, id: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move { json_value(&inner.info(&id).await.map_err(jerr)?) })
    }

    /// Loads a session whole (`opts`: LoadOptions JSON).
    #[wasm_bindgen(js_name = loadSession)]
    pub fn load_session(&self, id: String, opts: Option<String>) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let o = options_from_json::<LoadOptions>(opts.as_deref()).map_err(jerr)?;
            let s = inner.load(&id, &o).await.map_err(jerr)?;
            Ok(NativeSession::from_core(s).into())
        })
    }

    /// Loads the context from the current leaf reading only what it needs
    /// (`opts`: LazyOptions JSON).
    #[wasm_bindgen(js_name = loadLazy)]
    pub fn load_lazy(&self, id: String, opts: Option<String>) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let o = options_from_json::<LazyOptions>(opts.as_deref()).map_err(jerr)?;
            let lazy = inner.load_lazy(&id, o).await.map_err(jerr)?;
            Ok(NativeStoredLazy {
                store: inner,
                lazy: Rc::new(RefCell::new(lazy)),
                busy: Rc::new(std::cell::Cell::new(false)),
            }
            .into())
        })
    }

    /// Appends an entry (JSON); resolves to its id once committed.
    #[wasm_bindgen(js_name = appendEntry)]
    pub fn append_entry(&self, id: String, entry: String, now_ms: f64) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let e = inner
                .append(&id, &entry, now_ms as i64)
                .await
                .map_err(jerr)?;
            Ok(JsValue::from_str(&e))
        })
    }

    /// Moves the current leaf (`null`: before the first entry); resolves to
    /// the session's facts (JSON).
    #[wasm_bindgen(js_name = moveLeaf)]
    pub fn move_leaf(&self, id: String, target: Option<String>, now_ms: f64) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            json_value(
                &inner
                    .move_leaf(&id, target.as_deref(), now_ms as i64)
                    .await
                    .map_err(jerr)?,
            )
        })
    }

    /// Sets or clears an entry's label; resolves to the session's facts (JSON).
    #[wasm_bindgen(js_name = setLabel)]
    pub fn set_label(
        &self,
        id: String,
        target: String,
        label: Option<String>,
        now_ms: f64,
    ) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            json_value(
                &inner
                    .set_label(&id, &target, label.as_deref(), now_ms as i64)
                    .await
                    .map_err(jerr)?,
            )
        })
    }

    /// A new session `newId` with the path to `entryId`; resolves to its facts (JSON).
    pub fn fork(&self, id: String, entry_id: String, new_id: String, now_ms: f64) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            json_value(
                &inner
                    .fork(&id, &entry_id, &new_id, now_ms as i64)
                    .await
                    .map_err(jerr)?,
            )
        })
    }

    /// The session as a file (`original`: the imported bytes while unchanged).
    #[wasm_bindgen(js_name = exportBytes)]
    pub fn export_bytes(&self, id: String, original: bool) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let b = inner.export(&id, original).await.map_err(jerr)?;
            Ok(Uint8Array::from(b.as_slice()).into())
        })
    }

    /// Removes a session with its chunks, checkpoints and event log.
    #[wasm_bindgen(js_name = deleteSession)]
    pub fn delete_session(&self, id: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            inner.delete(&id).await.map_err(jerr)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Saves a checkpoint (`opts`: CheckpointOptions JSON; `newId`: its id
    /// when `opts` names none); resolves to it (JSON).
    #[wasm_bindgen(js_name = saveCheckpoint)]
    pub fn save_checkpoint(
        &self,
        id: String,
        opts: Option<String>,
        new_id: String,
        now_ms: f64,
    ) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let o = options_from_json::<CheckpointOptions>(opts.as_deref()).map_err(jerr)?;
            json_value(
                &inner
                    .save_checkpoint(&id, &new_id, &o, now_ms as i64)
                    .await
                    .map_err(jerr)?,
            )
        })
    }

    /// A session's checkpoints (JSON), oldest first.
    #[wasm_bindgen(js_name = checkpointsJson)]
    pub fn checkpoints_json(&self, id: String, now_ms: f64) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            json_value(&inner.checkpoints(&id, now_ms as i64).await.map_err(jerr)?)
        })
    }

    /// Moves the leaf to a checkpoint's entry; resolves to the checkpoint (JSON).
    #[wasm_bindgen(js_name = restoreCheckpoint)]
    pub fn restore_checkpoint(&self, id: String, checkpoint_id: String, now_ms: f64) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            json_value(
                &inner
                    .restore_checkpoint(&id, &checkpoint_id, now_ms as i64)
                    .await
                    .map_err(jerr)?,
            )
        })
    }

    /// Deletes a checkpoint (with an entry that says so).
    #[wasm_bindgen(js_name = deleteCheckpoint)]
    pub fn delete_checkpoint(&self, id: String, checkpoint_id: String, now_ms: f64) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            inner
                .delete_checkpoint(&id, &checkpoint_id, now_ms as i64)
                .await
                .map_err(jerr)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Closes the database connection.
    pub fn close(&self) {
        self.inner.storage().db.close();
    }
}

/// A stored session opened lazily.
#[wasm_bindgen]
pub struct NativeStoredLazy {
    store: Rc<IdbStore>,
    lazy: Rc<RefCell<StoredLazy>>,
    /// A loadMoreHistory call is running (the TS layer queues them; this
    /// refuses an overlap that slipped past it instead of mixing two).
    busy: Rc<std::cell::Cell<bool>>,
}

#[wasm_bindgen]
impl NativeStoredLazy {
    /// The context from the current leaf as JSON.
    #[wasm_bindgen(js_name = contextJson)]
    pub fn context_json(&self, llm: bool) -> std::result::Result<String, JsError> {
        self.lazy.borrow().loader.context_json(llm).map_err(err)
    }

    /// LazyMetadata as JSON.
    #[wasm_bindgen(js_name = metadataJson)]
    pub fn metadata_json(&self) -> std::result::Result<String, JsError> {
        let l = self.lazy.borrow();
        l.loader
            .metadata(l.hint_written)
            .and_then(|m| to_json_text(&m))
            .map_err(err)
    }

    /// The session's stored facts as JSON.
    #[wasm_bindgen(js_name = infoJson)]
    pub fn info_json(&self) -> std::result::Result<String, JsError> {
        to_json_text(self.lazy.borrow().info()).map_err(err)
    }

    /// Loads up to `n` older messages; resolves to a JSON array.
    #[wasm_bindgen(js_name = loadMoreHistory)]
    pub fn load_more_history(&self, n: u32) -> std::result::Result<Promise, JsError> {
        if self.busy.replace(true) {
            return Err(err(Error::invalid_input(
                "a loadMoreHistory call on this session is still running",
            )));
        }
        let (store, lazy, busy) = (self.store.clone(), self.lazy.clone(), self.busy.clone());
        Ok(future_to_promise(async move {
            let out = store.more_history(&lazy, n as usize).await;
            busy.set(false);
            Ok(JsValue::from_str(&out.map_err(jerr)?))
        }))
    }
}
