//! The writer of a streamed model answer, off the JavaScript thread.
//!
//! The JavaScript side hands each piece of the response body to
//! [`Feed::push`] (a copy into a queue, nothing more) and the feed's own
//! thread decodes what is queued and makes its events durable, one group
//! commit at a time: a write starts at most once per `interval`, and what
//! arrives meanwhile goes out in the next. Neither the start of a write nor
//! its end waits for the JavaScript thread, which a burst can keep busy
//! reading the socket for tens of milliseconds; the JavaScript side is told
//! after each write (for live listeners), whenever it gets to it.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use forkpoint_core::{Error, Result};

/// Queued bytes that start a write before it is due: a burst is written in
/// writes of about this size as fast as they go, while a paced stream (a
/// piece a millisecond is a few KiB per interval) keeps to one write per
/// interval.
const EAGER: usize = 64 * 1024;

/// One write of a feed: when its events became durable (ms since the epoch,
/// with sub-millisecond precision) and the seq of its last event.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Write {
    pub at: f64,
    #[serde(rename = "lastSeq")]
    pub last_seq: Option<u64>,
}

/// What one write gave back.
pub struct Written {
    /// The step (JSON) when the driver must see it: it has commands or a value.
    pub step: Option<String>,
    /// The stream ended with this write (it failed: the step's value says how).
    pub stop: bool,
    pub last_seq: Option<u64>,
}

/// How a feed ended: the steps the driver must see, in order, and every
/// write's time.
#[derive(Debug, Default)]
pub struct Ended {
    pub steps: Vec<String>,
    pub writes: Vec<Write>,
}

#[derive(Default)]
struct State {
    queue: Vec<u8>,
    /// No more bytes will come: write what is queued at once, then stop.
    ending: bool,
    /// Stop without writing what is queued (the call was interrupted).
    discard: bool,
    /// The writer waits for bytes (not for the next write to be due): a push
    /// wakes it. While it waits for a write to be due, pushes do not (its
    /// timer does), so a stream of small pieces costs no thread wake-ups.
    idle: bool,
    /// The writer stopped: a write failed or gave a value.
    stopped: bool,
    steps: Vec<String>,
    error: Option<Error>,
    writes: Vec<Write>,
}

/// What one write does: feeds the bytes and makes their events durable.
pub type WriteFn = dyn FnMut(&[u8]) -> Result<Written> + Send;

pub struct Feed {
    state: Arc<(Mutex<State>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

fn locked(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic in a write is caught before it can poison the lock; should one
    // get through, the state is still consistent (plain fields).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Feed {
    /// Starts the writer thread. `written` is called after each write.
    pub fn start(
        interval: Duration,
        mut write: Box<WriteFn>,
        written: Box<dyn Fn() + Send>,
    ) -> Result<Feed> {
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = state.clone();
        let thread = std::thread::Builder::new()
            .name("forkpoint-stream".into())
            .spawn(move || {
                let (m, cv) = &*shared;
                let mut due: Option<Instant> = None;
                loop {
                    let bytes = {
                        let mut s = locked(m);
                        loop {
                            if s.discard || s.stopped {
                                return;
                            }
                            if s.queue.is_empty() {
                                if s.ending {
                                    return;
                                }
                                s.idle = true;
                                s = cv.wait(s).unwrap_or_else(|p| p.into_inner());
                                s.idle = false;
                                continue;
                            }
                            let wait = due.map(|d| d.saturating_duration_since(Instant::now()));
                            match wait {
                                Some(w) if !w.is_zero() && !s.ending && s.queue.len() < EAGER => {
                                    s = cv.wait_timeout(s, w).unwrap_or_else(|p| p.into_inner()).0;
                                }
                                _ => break,
                            }
                        }
                        due = Some(Instant::now() + interval);
                        std::mem::take(&mut s.queue)
                    };
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        write(&bytes)
                    }))
                    .unwrap_or_else(|_| {
                        Err(Error::internal(
                            "forkpoint panicked while writing a stream (please report this)",
                        ))
                    });
                    let at = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
                    {
                        let mut s = locked(m);
                        match r {
                            Ok(w) => {
                                s.writes.push(Write {
                                    at,
                                    last_seq: w.last_seq,
                                });
                                s.steps.extend(w.step);
                                s.stopped |= w.stop;
                            }
                            Err(e) => {
                                s.error = Some(e);
                                s.stopped = true;
                            }
                        }
                    }
                    written();
                }
            })
            .map_err(|e| Error::internal(format!("cannot start the stream's writer: {e}")))?;
        Ok(Feed {
            state,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues bytes of the body; `false` when the writer has stopped (reading
    /// on is useless: the stream failed or a write did).
    pub fn push(&self, bytes: &[u8]) -> bool {
        let (m, cv) = &*self.state;
        let mut s = locked(m);
        if s.stopped || s.discard {
            return false;
        }
        let before = s.queue.len();
        s.queue.extend_from_slice(bytes);
        if s.idle || (before < EAGER && s.queue.len() >= EAGER) {
            cv.notify_one();
        }
        true
    }

    /// Ends the feed (writes what is queued unless `discard`) and waits for
    /// the writer; the error of a write that failed, or how it ended.
    pub fn end(&self, discard: bool) -> Result<Ended> {
        let (m, cv) = &*self.state;
        {
            let mut s = locked(m);
            s.ending = true;
            s.discard |= discard;
            cv.notify_one();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = thread {
            let _ = t.join();
        }
        let mut s = locked(m);
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        Ok(Ended {
            steps: std::mem::take(&mut s.steps),
            writes: std::mem::take(&mut s.writes),
        })
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        let (m, cv) = &*self.state;
        let mut s = locked(m);
        s.discard = true;
        cv.notify_one();
    }
}
