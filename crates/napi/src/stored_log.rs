//! `NativeStoredLog`: an agent's event log read through the storage seam
//! (PostgreSQL), behind the same `EventLog` as the file log: the log of an
//! agent open here (fed by its writes), or a follower of an agent written on
//! another host (`PostgresStore.events(id)`), which takes in what the writer
//! stores when notified.

use std::sync::Arc;

use forkpoint_core::eventlog::{Since, seq_arg};
use forkpoint_core::events::EventFilter;
use forkpoint_core::storage::StoredLog;
use forkpoint_core::{Error, types::to_json_text};
use forkpoint_pg::Follower;
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;

use crate::agent::Job;
use crate::store::{Pg, Store};
use crate::util::{guard, opts};

enum Source {
    /// The log of an agent open in this process.
    Agent(Arc<StoredLog>),
    /// An agent written elsewhere, followed.
    Follow(Arc<Follower>, Arc<Pg>),
}

/// An event log over a store's rows (see the module's documentation).
#[napi]
pub struct NativeStoredLog {
    source: Arc<Source>,
    store: Store,
}

impl Source {
    fn log(&self) -> &StoredLog {
        match self {
            Source::Agent(l) => l,
            Source::Follow(f, _) => f.log(),
        }
    }
}

impl NativeStoredLog {
    pub(crate) fn agent(log: Arc<StoredLog>, store: Store) -> NativeStoredLog {
        NativeStoredLog {
            source: Arc::new(Source::Agent(log)),
            store,
        }
    }

    pub(crate) fn follow(follower: Follower, pg: Arc<Pg>) -> NativeStoredLog {
        NativeStoredLog {
            store: Store::Pg(pg.clone()),
            source: Arc::new(Source::Follow(Arc::new(follower), pg)),
        }
    }
}

#[napi]
impl NativeStoredLog {
    /// What opening found (EventLogInfo as JSON).
    #[napi]
    pub fn info_json(&self) -> String {
        self.source.log().info_json().to_string()
    }

    /// Refused (`INVALID_INPUT`): an agent's events are written by the agent;
    /// its tools emit theirs through `ctx.emit`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn append(&self, _event_json: String) -> napi::Result<AsyncTask<Job<String>>> {
        guard(|| {
            Err(Error::invalid_input(
                "an agent's events are written by the agent (tools emit theirs with ctx.emit)",
            ))
        })
    }

    /// The events with `since < seq <= until` passing the filter (EventFilter
    /// JSON), as a JSON array.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn read_json(
        &self,
        since: Option<f64>,
        until: Option<f64>,
        filter_json: Option<String>,
    ) -> napi::Result<AsyncTask<Job<String>>> {
        let (filter, since, until) = guard(|| {
            Ok((
                opts::<EventFilter>(filter_json)?,
                seq_arg(since)?,
                seq_arg(until)?,
            ))
        })?;
        let (source, store) = (self.source.clone(), self.store.clone());
        Ok(Job::new(move || {
            let out = pollster::block_on(source.log().read(&store, since, until, &filter))?;
            Ok(out.into_events_json())
        }))
    }

    /// The last durable event's bookmark as JSON (`null` for an empty log).
    #[napi]
    pub fn last_bookmark_json(&self) -> napi::Result<String> {
        guard(|| to_json_text(&self.source.log().last_bookmark()))
    }

    /// A follower: takes in what the writer stored since (when notified, or
    /// at least every second). An agent's own log: nothing to do.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn refresh(&self) -> AsyncTask<Job<()>> {
        let source = self.source.clone();
        Job::new(move || match &*source {
            Source::Agent(_) => Ok(()),
            Source::Follow(f, pg) => f.refresh(&pg.pg).map(|_| ()),
        })
    }

    /// A new subscription: `since` is `live`, `start` or `after` (with `seq`).
    #[napi]
    pub fn subscribe(
        &self,
        filter_json: Option<String>,
        since: String,
        seq: Option<f64>,
    ) -> napi::Result<u32> {
        guard(|| {
            self.source.log().subscribe(
                opts::<EventFilter>(filter_json)?,
                Since::parse(&since, seq)?,
            )
        })
    }

    /// The next step of a subscription (JSON).
    #[napi]
    pub fn poll(&self, id: u32, max: u32) -> napi::Result<String> {
        guard(|| self.source.log().poll_json(id, max as usize))
    }

    /// Reads a subscription's events from the store (after a `read` step).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn fill(&self, id: u32, since: Option<f64>, limit: u32) -> AsyncTask<Job<String>> {
        let (source, store) = (self.source.clone(), self.store.clone());
        Job::new(move || {
            pollster::block_on(
                source
                    .log()
                    .fill_json(&store, id, seq_arg(since)?, limit as usize),
            )
        })
    }

    /// Ends a subscription.
    #[napi]
    pub fn unsubscribe(&self, id: u32) {
        self.source.log().unsubscribe(id);
    }

    /// Committed events not yet handed to live handlers (JSON array).
    #[napi]
    pub fn drain_live_json(&self) -> napi::Result<String> {
        guard(|| self.source.log().drain_live_json())
    }

    /// Nothing to release (an agent's log ends with the agent).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<Job<()>> {
        Job::new(|| Ok(()))
    }
}
