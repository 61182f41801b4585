//! IndexedDB as futures: requests, transactions, opening with an upgrade. The
//! callback closures live only until the request or transaction settles, then
//! are detached and dropped (no leak per request).

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbFactory, IdbOpenDbRequest, IdbRequest, IdbTransaction};

use forkpoint_core::{Error, ErrorCode};

/// The database schema version this build creates (FORMAT.md §13 and §16).
/// Version 1 had only `events`; version 2 adds the session stores; version 3
/// the agent stores.
pub const DB_VERSION: u32 = 3;
/// The object store of event records: key `[logName, seq]`, value the event line.
pub const EVENTS: &str = "events";
/// Session records: key the session id, value the record's JSON.
pub const SESSIONS: &str = "sessions";
/// Chunks of sessions: key `[sessionId, part, n]`, value the bytes (`Uint8Array`).
pub const CHUNKS: &str = "chunks";
/// Checkpoints: key `[sessionId, checkpointId]`, value the checkpoint's JSON.
pub const CHECKPOINTS: &str = "checkpoints";
/// Agent records: key the agent id, value the record's JSON (FORMAT.md §16.4).
pub const AGENTS: &str = "agents";
/// Chunks of agents' sessions: key `[agentId, offset]`, value the bytes (`Uint8Array`).
pub const AGENT_CHUNKS: &str = "agentChunks";
/// Agents' event lines: key `[agentId, seq]`, value the event line.
pub const AGENT_EVENTS: &str = "agentEvents";
/// Every object store of the current schema.
pub const STORES: [&str; 7] = [
    EVENTS,
    SESSIONS,
    CHUNKS,
    CHECKPOINTS,
    AGENTS,
    AGENT_CHUNKS,
    AGENT_EVENTS,
];

type Handler = Closure<dyn FnMut(JsValue)>;

/// How long an open may stay blocked by another tab before it fails with `BLOCKED`.
const BLOCKED_GRACE_MS: f64 = 1500.0;

/// Maps an IndexedDB error (a `DOMException`) to a forkpoint error.
pub fn idb_error(e: &JsValue, what: &str) -> Error {
    let name = Reflect::get(e, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_default();
    let msg = Reflect::get(e, &"message".into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    let code = match name.as_str() {
        "QuotaExceededError" => ErrorCode::StorageFull,
        "ConstraintError" => ErrorCode::LogLocked,
        "VersionError" => ErrorCode::UnsupportedFormat,
        "BlockedError" => ErrorCode::Blocked,
        "AbortError" if msg.contains("forkpoint: aborted") => ErrorCode::Aborted,
        // The connection was closed (another tab upgraded the database).
        "InvalidStateError" => ErrorCode::Closed,
        _ => ErrorCode::Io,
    };
    Error::new(code, format!("{what}: {name}: {msg}"))
}

/// Settles when `set` handlers fire: `ok` resolves with the value of `value()`,
/// the others reject with the target's `error`.
async fn settle(
    target: &JsValue,
    ok: &str,
    fail: &[&str],
    value: impl Fn() -> JsValue + 'static,
    error: impl Fn() -> JsValue + 'static,
) -> Result<JsValue, JsValue> {
    let handlers: std::rc::Rc<std::cell::RefCell<Vec<Handler>>> = Default::default();
    let error = std::rc::Rc::new(error);
    let value = std::rc::Rc::new(value);
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        let mut hs = handlers.borrow_mut();
        let value = value.clone();
        let on_ok: Handler = Closure::new(move |_e: JsValue| {
            let _ = resolve.call1(&JsValue::NULL, &value());
        });
        let _ = Reflect::set(target, &format!("on{ok}").into(), on_ok.as_ref());
        hs.push(on_ok);
        for f in fail {
            let reject = reject.clone();
            let error = error.clone();
            let h: Handler = Closure::new(move |_e: JsValue| {
                let _ = reject.call1(&JsValue::NULL, &error());
            });
            let _ = Reflect::set(target, &format!("on{f}").into(), h.as_ref());
            hs.push(h);
        }
    });
    let out = JsFuture::from(promise).await;
    // Detach before the closures are dropped.
    for name in std::iter::once(ok).chain(fail.iter().copied()) {
        let _ = Reflect::set(target, &format!("on{name}").into(), &JsValue::NULL);
    }
    drop(handlers);
    out
}

/// The result of a request.
pub async fn request(req: &IdbRequest) -> Result<JsValue, Error> {
    let (r1, r2) = (req.clone(), req.clone());
    settle(
        req,
        "success",
        &["error"],
        move || r1.result().unwrap_or(JsValue::UNDEFINED),
        move || {
            r2.error()
                .ok()
                .flatten()
                .map(JsValue::from)
                .unwrap_or(JsValue::UNDEFINED)
        },
    )
    .await
    .map_err(|e| idb_error(&e, "IndexedDB request failed"))
}

/// Waits for a transaction to commit.
pub async fn transaction(tx: &IdbTransaction) -> Result<(), Error> {
    let t = tx.clone();
    settle(
        tx,
        "complete",
        &["error", "abort"],
        || JsValue::UNDEFINED,
        move || {
            t.error()
                .map(JsValue::from)
                .unwrap_or_else(|| JsValue::from_str("transaction aborted"))
        },
    )
    .await
    .map(|_| ())
    .map_err(|e| idb_error(&e, "IndexedDB transaction failed"))
}

/// Opens a transaction on the events store; `strict` asks the browser to flush
/// to disk before `complete`.
pub fn begin(db: &IdbDatabase, mode: &str, strict: bool) -> Result<IdbTransaction, Error> {
    begin_on(db, &[EVENTS], mode, strict)
}

/// Opens a transaction over `stores`; `strict` asks the browser to flush to disk
/// before `complete` (the durability option, passed by name: it is not stable in web-sys).
pub fn begin_on(
    db: &IdbDatabase,
    stores: &[&str],
    mode: &str,
    strict: bool,
) -> Result<IdbTransaction, Error> {
    let f: Function = Reflect::get(db, &"transaction".into())
        .map_err(|e| idb_error(&e, "no IDBDatabase.transaction"))?
        .unchecked_into();
    let opts = js_sys::Object::new();
    let _ = Reflect::set(
        &opts,
        &"durability".into(),
        &(if strict { "strict" } else { "relaxed" }).into(),
    );
    let names: Array = stores.iter().map(|s| JsValue::from_str(s)).collect();
    f.call3(db, &names, &mode.into(), &opts)
        .map(|t| t.unchecked_into())
        .map_err(|e| idb_error(&e, "cannot start an IndexedDB transaction"))
}

/// The `[logName, seq]` key.
pub fn key(log: &str, seq: f64) -> JsValue {
    Array::of2(&log.into(), &seq.into()).into()
}

/// Opens (and creates or upgrades) the database. Another tab holding an older
/// version open blocks the upgrade: that is an error, not a hang.
pub async fn open(name: &str) -> Result<IdbDatabase, Error> {
    let factory: IdbFactory = Reflect::get(&js_sys::global(), &"indexedDB".into())
        .ok()
        .filter(|f| !f.is_undefined() && !f.is_null())
        .ok_or_else(|| Error::new(ErrorCode::Io, "IndexedDB is not available here"))?
        .unchecked_into();
    let req: IdbOpenDbRequest = factory
        .open_with_u32(name, DB_VERSION)
        .map_err(|e| idb_error(&e, "cannot open the IndexedDB database"))?;
    let r = req.clone();
    let upgrade: Handler = Closure::new(move |_e: JsValue| {
        // Creates what is missing: from nothing (version 0), from version 1
        // (events only) or 2 (no agent stores). Existing stores and their
        // records are kept.
        if let Ok(db) = r.result().map(|d| d.unchecked_into::<IdbDatabase>()) {
            for name in STORES {
                if !db.object_store_names().contains(name) {
                    let _ = db.create_object_store(name);
                }
            }
        }
    });
    req.set_onupgradeneeded(Some(upgrade.as_ref().unchecked_ref()));
    // `blocked` is not final: Chromium fires it even when the other
    // connections close in their `versionchange` handler a moment later. The
    // open fails with BLOCKED only if it is still blocked after a grace period.
    let mut handlers: Vec<Handler> = Vec::new();
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        let r = req.clone();
        let ok: Handler = Closure::new(move |_e: JsValue| {
            let _ = resolve.call1(&JsValue::NULL, &r.result().unwrap_or(JsValue::UNDEFINED));
        });
        let r = req.clone();
        let rj = reject.clone();
        let fail: Handler = Closure::new(move |_e: JsValue| {
            let e = r
                .error()
                .ok()
                .flatten()
                .map(JsValue::from)
                .unwrap_or(JsValue::UNDEFINED);
            let _ = rj.call1(&JsValue::NULL, &e);
        });
        let blocked: Handler = Closure::new(move |_e: JsValue| {
            let rj = reject.clone();
            let later = Closure::once_into_js(move || {
                let o = js_sys::Object::new();
                let _ = Reflect::set(&o, &"name".into(), &"BlockedError".into());
                let _ = Reflect::set(
                    &o,
                    &"message".into(),
                    &"another tab holds an older version of this database open; close it and retry"
                        .into(),
                );
                let _ = rj.call1(&JsValue::NULL, &o);
            });
            if let Ok(set) = Reflect::get(&js_sys::global(), &"setTimeout".into())
                .and_then(|f| f.dyn_into::<Function>())
            {
                let _ = set.call2(&JsValue::NULL, &later, &BLOCKED_GRACE_MS.into());
            }
        });
        req.set_onsuccess(Some(ok.as_ref().unchecked_ref()));
        req.set_onerror(Some(fail.as_ref().unchecked_ref()));
        req.set_onblocked(Some(blocked.as_ref().unchecked_ref()));
        handlers.extend([ok, fail, blocked]);
    });
    let out = JsFuture::from(promise).await;
    req.set_onsuccess(None);
    req.set_onerror(None);
    req.set_onblocked(None);
    drop(handlers);
    if out.is_err() {
        // A blocked open still completes once the other tab lets go: close
        // that connection then instead of holding it.
        let r = req.clone();
        let close = Closure::once_into_js(move |_e: JsValue| {
            if let Ok(d) = r.result() {
                d.unchecked_into::<IdbDatabase>().close();
            }
        });
        req.set_onsuccess(Some(close.unchecked_ref()));
        upgrade.forget();
    } else {
        req.set_onupgradeneeded(None);
        drop(upgrade);
    }
    let db: IdbDatabase = out
        .map_err(|e| idb_error(&e, "cannot open the IndexedDB database"))?
        .unchecked_into();
    // Close when a newer version wants to upgrade, instead of blocking it.
    let d = db.clone();
    let on_version_change = Closure::<dyn FnMut(JsValue)>::new(move |_e: JsValue| d.close());
    db.set_onversionchange(Some(on_version_change.as_ref().unchecked_ref()));
    on_version_change.forget(); // one per opened database
    Ok(db)
}
