//! The core's storage contract suite over IndexedDB, for test builds (cargo
//! feature `contract`): `runStorageContract(check, dbName)` runs one check of
//! `forkpoint_core::storage::contract` on a fresh database. A check reports a
//! broken contract by panicking; the panic's message is left in
//! `globalThis.__forkpointContractPanic` before the module traps, so the JS
//! runner can show it.

use std::cell::RefCell;
use std::rc::Rc;

use forkpoint_core::storage::contract::{self, Backend};
use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;

use crate::agents::IdbAgentStorage;
use crate::util::jerr;

/// A backend whose stores are databases opened before the check runs
/// (opening is async; the suite's `fresh` is not).
struct Idb {
    name: String,
    pool: RefCell<Vec<Rc<IdbAgentStorage>>>,
}

impl Backend for Idb {
    type Store = Rc<IdbAgentStorage>;

    fn fresh(&self) -> Rc<IdbAgentStorage> {
        match self.pool.borrow_mut().pop() {
            Some(s) => s,
            None => panic!("the contract check asked for more fresh stores than were opened"),
        }
    }

    fn second(&self, store: &Rc<IdbAgentStorage>) -> Option<Rc<IdbAgentStorage>> {
        Some(Rc::new(IdbAgentStorage::new(
            store.db().clone(),
            &self.name,
        )))
    }

    fn append_raw(&self, store: &Rc<IdbAgentStorage>, id: &str, session: &[u8], events: &[u8]) {
        if let Err(e) = store.append_raw(id, session, events) {
            panic!("append_raw: {e}");
        }
    }
}

/// Checks of this store beyond the contract.
const OWN_CHECKS: &[&str] = &["chunks_and_ranges"];

/// The names of the contract's checks, in order, then this store's own.
#[wasm_bindgen(js_name = storageContractChecks)]
pub fn storage_contract_checks() -> Array {
    contract::CHECKS
        .iter()
        .chain(OWN_CHECKS)
        .map(|c| JsValue::from_str(c))
        .collect()
}

/// Sessions of many chunks: writes of every size (below, at and above a
/// chunk, one byte) read back whole and in ranges that start and end inside,
/// at and across chunk boundaries; after a release and a new acquisition the
/// writes go on.
async fn chunks_and_ranges(b: &Idb) {
    use forkpoint_core::storage::{AgentStorage, WriteBatch};
    let s = b.fresh();
    let (mut e, init) = contract::Expect::new("big");
    let mut lease = match s.create("big", &init).await {
        Ok(l) => l,
        Err(err) => panic!("create: {err}"),
    };
    let chunk = crate::agents::CHUNK_BYTES as usize;
    let sizes = [
        10,
        chunk - 300,
        1,
        chunk,
        chunk + 1,
        3 * chunk + 17,
        500,
        chunk / 2,
        chunk / 2,
        7,
    ];
    for (i, n) in sizes.into_iter().enumerate() {
        // Bytes ending in a newline (the store does not read them).
        let mut bytes = vec![b'a' + (i as u8 % 26); n];
        if let Some(last) = bytes.last_mut() {
            *last = b'\n';
        }
        let batch = WriteBatch {
            session: bytes.clone(),
            session_at: e.session.len() as u64,
            ..WriteBatch::default()
        };
        if let Err(err) = s.write(&lease, &batch).await {
            panic!("write {i} of {n} bytes: {err}");
        }
        e.session.extend_from_slice(&bytes);
        if i == 5 {
            let _ = s.release(&lease).await;
            lease = match s.acquire("big").await {
                Ok(l) => l,
                Err(err) => panic!("acquire: {err}"),
            };
        }
    }
    let all = &e.session;
    let len = all.len() as u64;
    let read = |a: u64, z: u64| s.read_session("big", a, z);
    match read(0, u64::MAX).await {
        Ok(got) => assert!(
            got == *all,
            "the whole session ({} of {len} bytes)",
            got.len()
        ),
        Err(err) => panic!("read: {err}"),
    }
    let c = chunk as u64;
    let points = [
        0,
        1,
        9,
        10,
        11,
        c - 1,
        c,
        c + 1,
        2 * c,
        3 * c + 5,
        len / 2,
        len - c,
        len - 1,
        len,
    ];
    for &a in &points {
        for &z in &points {
            if a > z {
                continue;
            }
            match read(a, z).await {
                Ok(got) => assert!(
                    got[..] == all[a as usize..z as usize],
                    "bytes {a}..{z} of {len}"
                ),
                Err(err) => panic!("read {a}..{z}: {err}"),
            }
        }
    }
    match s.head(&lease).await {
        Ok(h) => assert_eq!(h.session_len, len, "head session_len"),
        Err(err) => panic!("head: {err}"),
    }
}

/// Runs contract check `check` on a new IndexedDB database `dbName`.
#[wasm_bindgen(js_name = runStorageContract)]
pub async fn run_storage_contract(check: String, db_name: String) -> Result<(), JsValue> {
    std::panic::set_hook(Box::new(|info| {
        let _ = Reflect::set(
            &js_sys::global(),
            &"__forkpointContractPanic".into(),
            &info.to_string().into(),
        );
    }));
    let store = IdbAgentStorage::open(&db_name).await.map_err(jerr)?;
    let b = Idb {
        name: db_name.clone(),
        pool: RefCell::new(vec![Rc::new(store)]),
    };
    match check.as_str() {
        "chunks_and_ranges" => chunks_and_ranges(&b).await,
        other => contract::run(&b, other).await.map_err(jerr)?,
    }
    Ok(())
}
