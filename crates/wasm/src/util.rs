//! Shared conversions.

use forkpoint_core::Error;
use forkpoint_core::provider::request::{BodyPart, Held};
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

/// A request body's parts for JavaScript, flat: `[id, bytes, id, bytes, …]`
/// in order. `id` 0 is a part of this body alone (head, tail); another is a
/// kept piece of the conversion, whose bytes are copied out once: `null`
/// where the last body given with the same `held` had it (the caller keeps
/// the pieces of the last body by id; [`Held::parts`] says which).
pub fn body_parts(body: forkpoint_core::provider::request::Body, held: &mut Held) -> js_sys::Array {
    let (parts, now) = held.parts(body);
    let out = js_sys::Array::new();
    for part in parts {
        let (id, bytes) = match &part {
            BodyPart::Own(text) => (0, Some(text.as_bytes())),
            BodyPart::New(piece) => (piece.id, Some(piece.text.as_bytes())),
            BodyPart::Known(id) => (*id, None),
        };
        out.push(&JsValue::from_f64(id as f64));
        out.push(&bytes.map_or(JsValue::NULL, |b| js_sys::Uint8Array::from(b).into()));
    }
    *held = now;
    out
}
