//! forkpoint's agent store on PostgreSQL: [`PgStorage`] implements the core's
//! storage seam ([`forkpoint_core::storage::AgentStorage`]) so that agents live
//! in one database shared by many machines, one writer per agent.
//!
//! - **Schema**: created and migrated by the library in its own PostgreSQL
//!   schema (default `forkpoint`), versioned in its `forkpoint_schema` table; a
//!   database written by a newer version is `UNSUPPORTED_FORMAT` (see
//!   [`SCHEMA_VERSION`]).
//! - **Bytes**: the session is stored as append-only chunks of whole lines keyed
//!   by their byte offset, the events as one row per line keyed by seq, each with
//!   its newline: the session and event log read back byte for byte as the file
//!   store writes `session.jsonl` and `events.jsonl`.
//! - **Lease**: one writer per agent across hosts. `acquire` takes an agent's
//!   lease when it is free or its time ran out (`leaseMs`, 10 s by default;
//!   the database's clock decides), else `AGENT_LOCKED` naming the holder's pid
//!   and host. Each acquisition draws a new fencing token from a sequence, so
//!   tokens of an agent strictly increase (also across a delete and a new
//!   create). Every `write` checks the token and renews the lease in the same
//!   transaction as it stores the batch: a stale token is `LEASE_LOST` and
//!   nothing is stored. [`PgStorage::renew`] renews without writing (the binding
//!   calls it on a timer). A holder whose lease ran out but was not taken over
//!   still writes (its token is still the current one) and so renews it.
//!   While a storage holds leases, a thread of its own renews them all every
//!   third of `leaseMs` (one statement), so an open agent keeps its lease
//!   while idle, and loses it `leaseMs` after its process stops or its host
//!   is cut off.
//! - **Following**: after each write with events, a notification names the
//!   agent and its last seq (`pg_notify`, sent by a thread of the store for
//!   all its writes since the last one: a notifying transaction takes a
//!   database-wide lock at its commit); [`Follower`] follows an agent from
//!   another host on those notifications, reading the events by seq (a lost
//!   notification delays, never loses, an event).
//! - **TLS**: set by the connection string as for libpq (`sslmode` from
//!   `disable` to `verify-full`, `sslrootcert` as a PEM file or `system`,
//!   `sslcert` and `sslkey`), made by rustls: no OpenSSL on any platform.
//! - **Errors**: a server that cannot be reached, drops the connection, shuts
//!   down or refuses the credentials is `STORE_UNAVAILABLE`; a full disk
//!   `STORAGE_FULL`; other server errors `IO` with the server's message.
//!
//! **Client**: the synchronous `postgres` crate (which wraps `tokio-postgres`
//! and drives each connection on its own small current-thread runtime). The
//! storage trait's futures carry no `Send` bound and the Node binding drives
//! them with `pollster` on the libuv pool, as it does the file store: a
//! blocking call on a pool thread is exactly that shape, with no runtime for
//! this crate to own, start or shut down. Connections are kept in a small pool
//! (idle connections in a mutex-guarded list), so concurrent agents of one
//! process each use their own.

mod error;
mod keeper;
mod pack;
mod pool;
mod schema;
mod storage;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;
mod watch;

pub use schema::SCHEMA_VERSION;
pub use storage::{PgOptions, PgStorage};
pub use watch::{Follower, Watch};
