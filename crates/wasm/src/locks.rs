//! Agent leases across tabs: the Web Locks API where the page has it
//! (`navigator.locks`), an in-memory set of held names otherwise (Node with
//! fake-indexeddb: one process, FORMAT.md §16.4).
//!
//! A Web Lock is taken with `ifAvailable` (a lock someone holds is refused at
//! once, never waited for) and held by keeping the request's callback promise
//! pending until [`Held::release`]. The browser releases the locks of a tab
//! that closes or crashes, so the next tab can take the lease over.

use std::cell::RefCell;
use std::collections::HashSet;

use forkpoint_core::{Error, ErrorCode, Result};
use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

thread_local! {
    /// Names held in this process when there are no Web Locks.
    static LOCAL: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
}

/// A held lock.
#[derive(Debug)]
pub enum Held {
    /// A Web Lock: `release` resolves the promise that holds it; `done`
    /// settles once the browser has let it go.
    Web { release: Function, done: Promise },
    /// A name in this process's set.
    Local(String),
}

fn js_error(e: &JsValue, what: &str) -> Error {
    let msg = Reflect::get(e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    Error::new(ErrorCode::Io, format!("{what}: {msg}"))
}

/// `navigator.locks`, if this global has it.
fn web_locks() -> Option<JsValue> {
    let nav = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    if !nav.is_object() {
        return None;
    }
    let locks = Reflect::get(&nav, &"locks".into()).ok()?;
    let request = Reflect::get(&locks, &"request".into()).ok()?;
    request.is_function().then_some(locks)
}

/// Whether leases are Web Locks here (else a set in this process).
pub fn has_web_locks() -> bool {
    web_locks().is_some()
}

/// Takes lock `name` if no one holds it (`None` when someone does).
pub async fn try_take(name: &str) -> Result<Option<Held>> {
    let Some(locks) = web_locks() else {
        let taken = LOCAL.with(|l| l.borrow_mut().insert(name.to_string()));
        return Ok(taken.then(|| Held::Local(name.to_string())));
    };
    let request: Function = Reflect::get(&locks, &"request".into())
        .map_err(|e| js_error(&e, "navigator.locks.request"))?
        .unchecked_into();
    let opts = Object::new();
    let _ = Reflect::set(&opts, &"ifAvailable".into(), &JsValue::TRUE);
    // `granted` settles when the callback runs: with the holding promise's
    // resolve function, or null when the lock was not available.
    let mut grant: Option<Function> = None;
    let granted = Promise::new(&mut |resolve, _| grant = Some(resolve));
    let Some(grant) = grant else {
        return Err(Error::internal("a promise without its resolve function"));
    };
    let callback = Closure::once_into_js(move |lock: JsValue| -> JsValue {
        if lock.is_null() || lock.is_undefined() {
            let _ = grant.call1(&JsValue::NULL, &JsValue::NULL);
            return JsValue::UNDEFINED;
        }
        let mut release: Option<Function> = None;
        let hold = Promise::new(&mut |resolve, _| release = Some(resolve));
        let _ = grant.call1(
            &JsValue::NULL,
            &release.map_or(JsValue::NULL, JsValue::from),
        );
        hold.into()
    });
    let done: Promise = request
        .call3(&locks, &name.into(), &opts, &callback)
        .map_err(|e| js_error(&e, "navigator.locks.request"))?
        .unchecked_into();
    // A request that fails (an opaque origin, say) rejects `done` before the
    // callback runs: the race reports it instead of waiting forever.
    let first = Promise::race(&Array::of2(&granted, &done));
    let release = JsFuture::from(first)
        .await
        .map_err(|e| js_error(&e, "navigator.locks.request"))?;
    Ok(release
        .dyn_into::<Function>()
        .ok()
        .map(|release| Held::Web { release, done }))
}

impl Held {
    /// Gives the lock up; resolves once it is free for others.
    pub async fn release(self) {
        match self {
            Held::Web { release, done } => {
                let _ = release.call0(&JsValue::NULL);
                let _ = JsFuture::from(done).await;
            }
            Held::Local(name) => LOCAL.with(|l| {
                l.borrow_mut().remove(&name);
            }),
        }
    }
}
