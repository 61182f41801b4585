//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use forkpoint_core::lazy::{LazyLoader, Step};
use forkpoint_core::{LazyOptions, LoadOptions, Result, Session};

/// Path of a fixture in `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Bytes of a fixture.
pub fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Loads bytes strictly.
pub fn load(b: &[u8]) -> Result<Session> {
    Session::from_bytes(b.to_vec(), &LoadOptions::default(), None)
}

/// Loads bytes leniently.
pub fn load_lenient(b: &[u8]) -> Result<Session> {
    Session::from_bytes(
        b.to_vec(),
        &LoadOptions {
            lenient: true,
            ..Default::default()
        },
        None,
    )
}

/// Runs a lazy load over in-memory bytes.
pub fn lazy(b: &[u8], opts: LazyOptions, hint: Option<String>) -> Result<LazyLoader> {
    let mut l = LazyLoader::new(b.len() as u64, opts, None, hint);
    drive(&mut l, b)?;
    Ok(l)
}

/// Serves reads until the loader is done.
pub fn drive(l: &mut LazyLoader, b: &[u8]) -> Result<()> {
    loop {
        match l.next_step()? {
            Step::Done => return Ok(()),
            Step::Read { offset, len } => {
                let (s, e) = (offset as usize, (offset + len) as usize);
                l.provide(b[s..e].to_vec())?;
            }
        }
    }
}
