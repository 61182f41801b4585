//! Shared conversions.

use forkpoint_core::Error;
use wasm_bindgen::prelude::*;

/// A core error as a JS error (message = the error's JSON).
pub fn err(e: Error) -> JsError {
    JsError::new(&e.to_json())
}

/// The same, as a value to reject a promise with.
pub fn jerr(e: Error) -> JsValue {
    err(e).into()
}

/// Grows the module's memory once by about `bytes` before a large conversion:
/// the block is freed at once and the allocator hands its memory out again.
/// A memory grown step by step as the trees are built costs more than the
/// conversion itself in V8 (each growth is a call into the engine and a new
/// buffer, and the garbage collector runs).
/// When the memory cannot grow that much, nothing is reserved.
pub fn reserve_memory(bytes: usize) {
    let mut block = Vec::<u8>::new();
    let _ = block.try_reserve_exact(bytes);
}
