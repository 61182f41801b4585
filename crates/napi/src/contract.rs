//! The core's storage contract suite over `FileStorage`, for test builds only
//! (cargo feature `contract`; scripts/build.sh builds it, in the debug profile,
//! into tests/native-contract/, never into the package):
//! `runStorageContract(check, dir)` runs one check of
//! `forkpoint_core::storage::contract` on stores in subdirectories of `dir`
//! (a fresh, empty directory). A check reports a broken contract by
//! panicking: the promise rejects with the panic's message.

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use forkpoint_core::Error;
use forkpoint_core::storage::contract::{self, Backend};
use forkpoint_fs::FileStorage;
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;

use crate::agent::Job;

/// Stores in numbered subdirectories of one directory.
struct Files {
    dir: PathBuf,
    n: AtomicU32,
}

fn append_to(path: &Path, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let res = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes));
    if let Err(e) = res {
        panic!("append_raw to {}: {e}", path.display());
    }
}

impl Backend for Files {
    type Store = FileStorage;

    fn fresh(&self) -> FileStorage {
        let n = self.n.fetch_add(1, Ordering::Relaxed) + 1;
        FileStorage::new(self.dir.join(format!("store-{n}")))
    }

    fn second(&self, store: &FileStorage) -> Option<FileStorage> {
        Some(FileStorage::new(store.root()))
    }

    fn append_raw(&self, store: &FileStorage, id: &str, session: &[u8], events: &[u8]) {
        let dir = store.root().join(id);
        append_to(&dir.join("session.jsonl"), session);
        append_to(&dir.join("events.jsonl"), events);
    }
}

/// The names of the contract's checks, in order.
#[napi]
pub fn storage_contract_checks() -> Vec<String> {
    contract::CHECKS.iter().map(|c| c.to_string()).collect()
}

/// Runs contract check `check` on `FileStorage` stores made in directory `dir`
/// (a fresh, empty directory the caller removes). Rejects with the broken
/// contract's message, or `INVALID_INPUT` for a check that does not exist.
#[napi(ts_return_type = "Promise<void>")]
pub fn run_storage_contract(check: String, dir: String) -> AsyncTask<Job<()>> {
    Job::new(move || {
        let b = Files {
            dir: PathBuf::from(dir),
            n: AtomicU32::new(0),
        };
        match catch_unwind(AssertUnwindSafe(|| {
            pollster::block_on(contract::run(&b, &check))
        })) {
            Ok(r) => r,
            Err(p) => {
                let what = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(Error::internal(format!(
                    "contract check '{check}' failed: {what}"
                )))
            }
        }
    })
}
