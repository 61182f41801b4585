//! Browser bindings of forkpoint. Same shape as the napi crate: each class
//! converts its arguments, calls one core function, converts the result back
//! (data as JSON text, parsed once by the TS layer). Errors are `Error`s whose
//! message is the core error as JSON.

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
