#![cfg_attr(test, allow(dead_code))] // napi registration is compiled out of the test harness
//! Node bindings of forkpoint. Each exported class lives in its own file; a
//! method converts its arguments, calls one core or fs function, and converts
//! the result back (data crosses as JSON text, parsed once by the TS layer).
//! Errors cross as `Error`s whose message is the core error as JSON; the TS
//! layer turns them into `ForkpointError`s.

mod agent;
#[cfg(feature = "contract")]
mod contract;
mod events;
mod feed;
mod incremental;
mod lazy;
mod list;
mod normalize;
mod provider;
mod session;
mod store;
mod stored_log;
mod util;
mod writer;
