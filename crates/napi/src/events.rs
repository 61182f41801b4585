//! `NativeEventLog`: the event log (behind `EventLog` and `EventBus`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use forkpoint_core::eventlog::{Since, seq_arg};
use forkpoint_core::events::EventFilter;
use forkpoint_core::{Error, EventLogOptions};
use forkpoint_fs::events::{FileEventLog, ReadAhead, ReadCursor};
use napi::bindgen_prelude::AsyncTask;
use napi::bindgen_prelude::Either;
use napi::{Env, JsStringLatin1, Task};
use napi_derive::napi;

use crate::util::{JsonText, guard, json_text, now_ms, opts};

/// An event log file.
#[napi]
pub struct NativeEventLog {
    inner: Arc<FileEventLog>,
    info: String,
}

fn json<T: serde::Serialize>(v: &T) -> forkpoint_core::Result<String> {
    forkpoint_core::types::to_json_text(v)
}

pub struct OpenTask {
    path: PathBuf,
    opts: Option<String>,
}

impl Task for OpenTask {
    type Output = (FileEventLog, String);
    type JsValue = NativeEventLog;

    fn compute(&mut self) -> napi::Result<(FileEventLog, String)> {
        guard(|| {
            let (log, info) =
                FileEventLog::open(&self.path, &opts::<EventLogOptions>(self.opts.take())?)?;
            Ok((log, json(&info)?))
        })
    }

    fn resolve(
        &mut self,
        _env: Env,
        (log, info): (FileEventLog, String),
    ) -> napi::Result<NativeEventLog> {
        Ok(NativeEventLog {
            inner: Arc::new(log),
            info,
        })
    }
}

/// A blocking call of the log that yields JSON.
type LogCall = Box<dyn FnMut(&FileEventLog) -> forkpoint_core::Result<String> + Send>;

/// Runs one of the log's blocking calls on the libuv pool.
pub struct CallTask {
    inner: Arc<FileEventLog>,
    call: LogCall,
}

impl Task for CallTask {
    type Output = String;
    type JsValue = JsonText;

    fn compute(&mut self) -> napi::Result<String> {
        guard(|| (self.call)(&self.inner))
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<JsonText> {
        Ok(json_text(output))
    }
}

/// Where a [`NativeEventReader`] is.
enum ReaderState {
    /// Not started: the first part is read on the caller's thread.
    Cursor(ReadCursor),
    /// Read ahead on a thread of its own.
    Ahead(ReadAhead),
    /// Complete or closed.
    Done,
}

/// A read of an event log taken in parts (`NativeEventLog.reader`).
#[napi]
pub struct NativeEventReader {
    log: Arc<FileEventLog>,
    state: Arc<Mutex<ReaderState>>,
}

/// Parts read ahead at most (of `part_bytes` each) while the caller parses.
const AHEAD_PARTS: usize = 16;

fn poisoned() -> Error {
    Error::internal("event reader poisoned by a panic")
}

#[napi]
impl NativeEventReader {
    /// The next part if it can be had without waiting (`[]` at the end), else
    /// `null`. The first call reads a part of about `firstBytes` here, then
    /// starts reading the rest ahead on a thread of its own, in parts of about
    /// `partBytes`, so that the caller parses one part while the next are read.
    #[napi(ts_return_type = "string | null")]
    pub fn take<'e>(
        &self,
        env: &'e Env,
        first_bytes: u32,
        part_bytes: u32,
    ) -> napi::Result<Option<Either<JsStringLatin1<'e>, String>>> {
        let out = guard(|| {
            // Locked: a `next()` is waiting for the part.
            let Ok(mut st) = self.state.try_lock() else {
                return Ok(None);
            };
            match std::mem::replace(&mut *st, ReaderState::Done) {
                ReaderState::Cursor(mut c) => {
                    let text = self.log.read_part(&mut c, first_bytes as usize)?;
                    if text != "[]" && !c.is_done() {
                        *st = ReaderState::Ahead(self.log.read_ahead(
                            c,
                            part_bytes as usize,
                            AHEAD_PARTS,
                        )?);
                    }
                    Ok(Some(text))
                }
                ReaderState::Ahead(mut a) => {
                    let r = a.try_next();
                    if !matches!(r, Some(Ok(ref t)) if t == "[]") {
                        *st = ReaderState::Ahead(a);
                    }
                    r.transpose()
                }
                ReaderState::Done => Ok(Some("[]".into())),
            }
        })?;
        // ASCII text (nearly always): handed to V8 without a copy.
        out.map(|t| {
            if t.is_ascii() {
                JsStringLatin1::from_data(env, t.into_bytes()).map(Either::A)
            } else {
                Ok(Either::B(t))
            }
        })
        .transpose()
    }

    /// The next part, waiting for it off the JS thread (`[]` at the end).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn next(&self, max_bytes: u32) -> AsyncTask<CallTask> {
        let state = self.state.clone();
        AsyncTask::new(CallTask {
            inner: self.log.clone(),
            call: Box::new(move |log| {
                let mut st = state.lock().map_err(|_| poisoned())?;
                match &mut *st {
                    ReaderState::Cursor(c) => log.read_part(c, max_bytes as usize),
                    ReaderState::Ahead(a) => a.wait_next(),
                    ReaderState::Done => Ok("[]".into()),
                }
            }),
        })
    }

    /// Ends the read early (a read-ahead thread stops at its next part).
    #[napi]
    pub fn close(&self) -> napi::Result<()> {
        guard(|| {
            *self.state.lock().map_err(|_| poisoned())? = ReaderState::Done;
            Ok(())
        })
    }
}

impl NativeEventLog {
    /// A log opened by someone else (an agent's), shared.
    pub(crate) fn shared(inner: Arc<FileEventLog>, info: String) -> NativeEventLog {
        NativeEventLog { inner, info }
    }
}

#[napi]
impl NativeEventLog {
    /// Opens an event log; `opts` is EventLogOptions as JSON.
    #[napi(ts_return_type = "Promise<NativeEventLog>")]
    pub fn open(path: String, opts: Option<String>) -> AsyncTask<OpenTask> {
        AsyncTask::new(OpenTask {
            path: PathBuf::from(path),
            opts,
        })
    }

    /// What opening found (EventLogInfo as JSON).
    #[napi]
    pub fn info_json(&self) -> String {
        self.info.clone()
    }

    fn task(
        &self,
        call: impl FnMut(&FileEventLog) -> forkpoint_core::Result<String> + Send + 'static,
    ) -> AsyncTask<CallTask> {
        AsyncTask::new(CallTask {
            inner: self.inner.clone(),
            call: Box::new(call),
        })
    }

    /// Appends an event (JSON object); resolves to its bookmark (JSON) once durable.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn append(&self, event_json: String) -> napi::Result<AsyncTask<CallTask>> {
        let bookmark = guard(|| self.inner.append(&event_json, now_ms()))?;
        Ok(self.task(move |log| {
            log.wait(bookmark.seq)?;
            json(&bookmark)
        }))
    }

    /// The events with `since < seq <= until` passing the filter (EventFilter JSON),
    /// as a JSON array.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn read_json(
        &self,
        since: Option<f64>,
        until: Option<f64>,
        filter_json: Option<String>,
    ) -> napi::Result<AsyncTask<CallTask>> {
        let (filter, since, until) = guard(|| {
            Ok((
                opts::<EventFilter>(filter_json)?,
                seq_arg(since)?,
                seq_arg(until)?,
            ))
        })?;
        Ok(self.task(move |log| Ok(log.read(since, until, &filter)?.into_events_json())))
    }

    /// A read of the events with `since < seq <= until` (default: the last
    /// durable event now) passing the filter, taken in parts: each part can be
    /// parsed while the next one is read.
    #[napi]
    pub fn reader(
        &self,
        since: Option<f64>,
        until: Option<f64>,
        filter_json: Option<String>,
    ) -> napi::Result<NativeEventReader> {
        guard(|| {
            let filter = opts::<EventFilter>(filter_json)?;
            Ok(NativeEventReader {
                log: self.inner.clone(),
                state: Arc::new(Mutex::new(ReaderState::Cursor(self.inner.cursor(
                    seq_arg(since)?,
                    seq_arg(until)?,
                    filter,
                )?))),
            })
        })
    }

    /// The last durable event's bookmark as JSON (`null` for an empty log).
    #[napi]
    pub fn last_bookmark_json(&self) -> napi::Result<String> {
        guard(|| json(&self.inner.last_bookmark()?))
    }

    /// Read-only logs: takes in what the writer appended since.
    #[napi]
    pub fn refresh(&self) -> napi::Result<()> {
        guard(|| self.inner.refresh())
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
            self.inner.subscribe(
                opts::<EventFilter>(filter_json)?,
                Since::parse(&since, seq)?,
            )
        })
    }

    /// The next step of a subscription (JSON).
    #[napi]
    pub fn poll(&self, id: u32, max: u32) -> napi::Result<String> {
        guard(|| self.inner.poll_json(id, max as usize))
    }

    /// Reads a subscription's events from storage (after a `read` step).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn fill(&self, id: u32, since: Option<f64>, limit: u32) -> AsyncTask<CallTask> {
        self.task(move |log| log.fill_json(id, seq_arg(since)?, limit as usize))
    }

    /// Ends a subscription.
    #[napi]
    pub fn unsubscribe(&self, id: u32) -> napi::Result<()> {
        guard(|| self.inner.unsubscribe(id))
    }

    /// Committed events not yet handed to live handlers (JSON array).
    #[napi]
    pub fn drain_live_json(&self) -> napi::Result<String> {
        guard(|| self.inner.drain_live_json())
    }

    /// Waits for pending appends, writes the index, releases the lock.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<CallTask> {
        self.task(|log| log.close().map(|_| String::new()))
    }
}
