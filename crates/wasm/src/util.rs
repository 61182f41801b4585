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
