//! # forkpoint-core
//!
//! The core of forkpoint: the pi-compatible session format (read versions 1–3,
//! write version 3), the entry tree, the LLM context from any leaf, lazy resume
//! and the writer's state machine. It does no I/O and knows no binding: callers
//! hand it bytes and perform the reads and writes it asks for, so the same code
//! runs under Node (napi) and in browsers (wasm).
//!
//! The on-disk format is specified in `FORMAT.md` (included below).
#![doc = include_str!("../FORMAT.md")]
#![forbid(unsafe_code)]

pub mod agent;
pub mod agent_events;
pub mod checkpoint;
pub mod context;
pub mod entry;
pub mod error;
pub mod eventlog;
pub mod events;
pub mod gz;
pub mod hint;
pub mod incremental;
pub mod json;
pub mod lazy;
pub mod listing;
pub mod load;
pub mod normalize;
pub mod provider;
pub mod schema;
pub mod secrets;
pub mod session;
pub mod storage;
pub mod store;
pub mod threads;
pub mod time;
pub mod tree;
pub mod types;
pub mod validate;
pub mod writer;

pub use error::{Error, ErrorCode, Result};
pub use session::Session;
pub use types::*;
