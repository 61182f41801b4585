//! # forkpoint-fs
//!
//! forkpoint's core on the local file system: it reads session files (whole, in
//! batches, or lazily from the tail with positional reads), appends with fsync or
//! group commit under an OS file lock, and replaces sidecar files atomically
//! (temporary file, fsync, rename, fsync of the directory).
#![forbid(unsafe_code)]

pub mod commit;
pub mod events;
pub mod incremental;
pub mod inspect;
pub mod io;
pub mod lazy;
pub mod list;
pub mod migrate;
pub mod place;
pub mod storage;
pub mod writer;

pub use io::{io_error, read_session};
pub use lazy::load_lazy;
pub use list::{list_sessions, list_sessions_with};
pub use storage::{FileStorage, validate_id};
pub use writer::FileWriter;
