//! Browser bindings of forkpoint. Same shape as the napi crate: each class
//! converts its arguments, calls one core function, converts the result back
//! (data as JSON text, parsed once by the TS layer). Errors are `Error`s whose
//! message is the core error as JSON.

// The module's allocator: Rust's default for wasm (dlmalloc) grows the
// memory a few pages at a time, and a first conversion of a large context
// spent more time in those growths than converting.
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

mod agent;
mod agents;
#[cfg(feature = "contract")]
mod contract;
mod events;
mod idb;
mod locks;
mod normalize;
mod provider;
mod session;
mod store;
mod util;

pub use agent::{NativeAgent, NativeAgentLog, NativeAgentStore, redact_secrets_json};
pub use agents::IdbAgentStorage;
pub use events::NativeEventLog;
pub use normalize::NativeMigration;
pub use session::{NativeSession, NativeSessionBuilder};
pub use store::{NativeStore, NativeStoredLazy};
