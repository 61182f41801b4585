//! Integration tests of the core, compiled as one binary. Fixtures are the
//! named files of `tests/fixtures/` (shared with the JS tests).

mod agent;
mod checkpoints;
mod common;
mod events_props;
mod fixtures;
mod hardening;
mod import;
mod incremental;
mod lazy_props;
mod machine;
mod machine_review;
mod provider_request;
mod provider_stream;
mod providers;
mod storage;
mod store;
mod writer_core;
