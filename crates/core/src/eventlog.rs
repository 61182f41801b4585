//! The event log's state machines, without I/O: sequence numbers and the queue
//! of lines to write ([`EventLogCore`]), the sparse seq→offset index
//! ([`EventIndex`]), checking a file's lines on open ([`EventScanner`]), reading
//! after a bookmark ([`EventReader`]), and the subscription hub that hands over
//! from history to live events exactly once ([`Hub`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::events::{self, Bookmark, Channel, EventFilter, EventMeta};
use crate::storage::EventLine;
use crate::types::TornTail;

/// One index entry every this many events.
pub const INDEX_STEP: u64 = 1024;
/// Value of the index file's `format` field.
pub const INDEX_FORMAT: &str = "forkpoint.event-index";

/// The sidecar path of a log's index.
pub fn index_path(log_path: &str) -> String {
    format!("{log_path}.idx.json")
}

/// A sparse seq → offset index over the start of a log file (FORMAT.md, "Event
/// log"). Rebuildable from the log at any time; never the source of truth.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EventIndex {
    pub format: String,
    pub version: u32,
    pub step: u64,
    /// `[seq, offset, line]` of every `step`-th event (line is 1-based).
    pub entries: Vec<[u64; 3]>,
    /// Bytes of the file the index has seen (ends at a line boundary).
    pub covered: u64,
    /// Lines in the covered part.
    pub lines: u64,
    /// Events in the covered part.
    pub events: u64,
    /// The last event in the covered part.
    pub last: Option<Bookmark>,
}

impl Default for EventIndex {
    fn default() -> Self {
        EventIndex {
            format: INDEX_FORMAT.into(),
            version: 1,
            step: INDEX_STEP,
            entries: Vec::new(),
            covered: 0,
            lines: 0,
            events: 0,
            last: None,
        }
    }
}

impl EventIndex {
    /// Parses an index file.
    pub fn parse(text: &str) -> std::result::Result<EventIndex, String> {
        let i: EventIndex =
            serde_json::from_str(text).map_err(|e| format!("unreadable index: {e}"))?;
        if i.format != INDEX_FORMAT || i.version != 1 || i.step == 0 {
            return Err("not an event index of this version".into());
        }
        if i.entries
            .windows(2)
            .any(|w| w[0][0] >= w[1][0] || w[0][1] >= w[1][1])
        {
            return Err("index entries out of order".into());
        }
        if i.entries.last().is_some_and(|e| e[1] >= i.covered) {
            return Err("index entry beyond the covered part".into());
        }
        Ok(i)
    }

    /// The index as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Records an event line at `offset` ending (newline included) at `end`.
    pub fn note_event(&mut self, at: Bookmark, offset: u64, end: u64) {
        self.lines += 1;
        if self.events.is_multiple_of(self.step) {
            self.entries.push([at.seq, offset, self.lines]);
        }
        self.events += 1;
        self.covered = end;
        self.last = Some(at);
    }

    /// Records a blank line ending at `end`.
    pub fn note_blank(&mut self, end: u64) {
        self.lines += 1;
        self.covered = end;
    }

    /// Where to start reading for the events after `since`: the byte offset, the
    /// number of lines before it, and the seq the index says is there (to be
    /// checked: the index is never trusted blindly). `O(log n)`.
    pub fn start_for(&self, since: Option<u64>) -> (u64, u64, Option<u64>) {
        let Some(s) = since else { return (0, 0, None) };
        let k = self.entries.partition_point(|e| e[0] <= s);
        match k {
            0 => (0, 0, None),
            k => {
                let e = self.entries[k - 1];
                (e[1], e[2] - 1, Some(e[0]))
            }
        }
    }
}

/// Checks a log file's lines in order (on open): every line an event, `seq`
/// strictly increasing. A last line that does not parse is a torn tail.
#[derive(Debug)]
pub struct EventScanner {
    pub index: EventIndex,
    max_depth: usize,
    max_line: u64,
    path: Option<String>,
    /// A line that did not parse: a torn tail if nothing but blank lines
    /// follows it (they are not counted into the index: they go with it),
    /// corruption otherwise.
    bad: Option<(Error, TornTail)>,
}

impl EventScanner {
    /// A scanner continuing `index` (which covers the file up to where lines are fed from).
    pub fn new(index: EventIndex, max_depth: usize, max_line: u64, path: Option<String>) -> Self {
        EventScanner {
            index,
            max_depth,
            max_line,
            path,
            bad: None,
        }
    }

    fn err(&self, msg: String, line: u64, offset: u64) -> Error {
        let e = Error::corrupted(msg).at(Some(line), offset);
        match &self.path {
            Some(p) => e.with_path(p.clone()),
            None => e,
        }
    }

    /// One line (without its newline) at `offset`; `has_nl` false only at the end
    /// of the file. Returns the event's envelope when the line is one.
    pub fn line<'b>(
        &mut self,
        bytes: &'b [u8],
        offset: u64,
        has_nl: bool,
    ) -> Result<Option<events::Envelope<'b>>> {
        let end = offset + bytes.len() as u64 + u64::from(has_nl);
        let line_no = self.index.lines + 1;
        if crate::load::is_blank(bytes) {
            if self.bad.is_none() {
                self.index.note_blank(end);
            }
            return Ok(None);
        }
        if let Some((bad, _)) = self.bad.take() {
            return Err(bad);
        }
        if bytes.len() as u64 > self.max_line {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!("event line over {} bytes", self.max_line),
            )
            .at(Some(line_no), offset));
        }
        let parsed = std::str::from_utf8(bytes)
            .map_err(|e| format!("invalid UTF-8 at byte {} of the line", e.valid_up_to()))
            .and_then(|t| events::parse_envelope(t, self.max_depth));
        match parsed {
            Ok(meta) => {
                if let Some(last) = self.index.last
                    && meta.seq <= last.seq
                {
                    return Err(self.err(
                        format!(
                            "event seq {} does not follow seq {} (sequence numbers only grow)",
                            meta.seq, last.seq
                        ),
                        line_no,
                        offset,
                    ));
                }
                let at = Bookmark {
                    seq: meta.seq,
                    timestamp: meta.timestamp,
                };
                self.index.note_event(at, offset, end);
                Ok(Some(meta))
            }
            Err(why) => {
                let torn = TornTail {
                    line: Some(line_no),
                    offset,
                    bytes: 0,
                };
                self.bad = Some((self.err(why, line_no, offset), torn));
                Ok(None)
            }
        }
    }

    /// Call at the end of the file (length `file_len`): the torn tail, if the
    /// last line that is not blank did not parse. The index ends before it.
    pub fn finish(&mut self, file_len: u64) -> Option<TornTail> {
        self.bad.take().map(|(_, mut t)| {
            t.bytes = file_len - t.offset;
            t
        })
    }
}

/// Where a read stopped: after the line of event `seq`, which ends at byte
/// `offset` and is line number `lines`. A later read after `seq` can start there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPos {
    pub seq: u64,
    pub offset: u64,
    pub lines: u64,
}

/// Reads events after a bookmark from lines fed in file order, straight into
/// a [`ReadOut`].
#[derive(Debug)]
pub struct EventReader {
    since: Option<u64>,
    until: Option<u64>,
    filter: EventFilter,
    max_bytes: usize,
    max_depth: usize,
    line: u64,
    path: Option<String>,
    /// What was read.
    pub out: ReadOut,
    /// Where the read can continue (after the last event looked at).
    pub pos: Option<ReadPos>,
    /// The read has all it wants (limit reached, past `until`, or `max_bytes` read).
    pub done: bool,
    /// It stopped at `max_bytes`: more may follow.
    pub full: bool,
}

impl EventReader {
    /// A reader of the events with `since < seq <= until` that pass `filter`;
    /// `lines_before` is the number of lines before the first one fed.
    pub fn new(
        since: Option<u64>,
        until: Option<u64>,
        filter: EventFilter,
        lines_before: u64,
        max_depth: usize,
        path: Option<String>,
    ) -> Self {
        EventReader {
            since,
            until,
            filter,
            max_bytes: usize::MAX,
            max_depth,
            line: lines_before,
            path,
            out: ReadOut::new(since),
            pos: None,
            done: false,
            full: false,
        }
    }

    /// Stops once the events read reach `max_bytes` (at least one is read).
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Reserves room for about `bytes` of events (the size of the range to read).
    pub fn expect_bytes(mut self, bytes: u64) -> Self {
        let n = bytes.min(self.max_bytes as u64).min(64 << 20) as usize;
        self.out.text.reserve(n);
        self
    }

    /// One complete line (without its newline) at `offset`.
    pub fn line(&mut self, bytes: &[u8], offset: u64) -> Result<()> {
        self.line += 1;
        if self.done || crate::load::is_blank(bytes) {
            return Ok(());
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            self.corrupt(format!("invalid UTF-8 at byte {}", e.valid_up_to()), offset)
        })?;
        let meta = events::parse_envelope(text, self.max_depth)
            .map_err(|why| self.corrupt(why, offset))?;
        if self.since.is_some_and(|s| meta.seq <= s) {
            return Ok(());
        }
        if self.until.is_some_and(|u| meta.seq > u) {
            self.done = true;
            return Ok(());
        }
        self.pos = Some(ReadPos {
            seq: meta.seq,
            offset: offset + bytes.len() as u64 + 1,
            lines: self.line,
        });
        let held = self.out.len();
        if self
            .out
            .offer(meta.seq, meta.channel, &meta.kind, text, &self.filter)
        {
            self.done = true;
        } else if self.out.len() > held && self.out.text.len() >= self.max_bytes {
            self.done = true;
            self.full = true;
        }
        Ok(())
    }

    fn corrupt(&self, why: String, offset: u64) -> Error {
        let e = Error::corrupted(why).at(Some(self.line), offset);
        match &self.path {
            Some(p) => e.with_path(p.clone()),
            None => e,
        }
    }
}

/// Where a subscription starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// Only events committed from now on.
    Live,
    /// Every event of the log.
    Start,
    /// The events after this seq.
    After(u64),
}

/// What a subscription should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Poll {
    /// Deliver these event lines (in seq order, filtered).
    Events(Vec<Arc<str>>),
    /// The events after `since` are no longer in memory: read up to `limit` of
    /// them from storage and hand them to [`Hub::provide`].
    Read { since: Option<u64>, limit: usize },
    /// Caught up: wait for the next commit.
    Pending,
}

impl Poll {
    /// As JSON for the bindings: `{"kind":"events","events":[…]}`,
    /// `{"kind":"read","since":…,"limit":…}` or `{"kind":"pending"}`.
    pub fn to_json(&self) -> String {
        match self {
            Poll::Events(ls) => format!(
                "{{\"kind\":\"events\",\"events\":{}}}",
                crate::context::join_array(ls)
            ),
            Poll::Read { since, limit } => format!(
                "{{\"kind\":\"read\",\"since\":{},\"limit\":{limit}}}",
                since.map_or_else(|| "null".to_string(), |s| s.to_string())
            ),
            Poll::Pending => "{\"kind\":\"pending\"}".into(),
        }
    }
}

/// A seq given by JavaScript (`null`/`undefined`: none): a whole,
/// non-negative number, else `INVALID_INPUT`. Both bindings use this.
pub fn seq_arg(v: Option<f64>) -> Result<Option<u64>> {
    match v {
        None => Ok(None),
        Some(s) if s >= 0.0 && s.fract() == 0.0 && s <= events::MAX_SAFE as f64 => {
            Ok(Some(s as u64))
        }
        Some(s) => Err(Error::invalid_input(format!(
            "{s} is not a seq (a whole, non-negative number)"
        ))),
    }
}

impl Since {
    /// From the bindings' form: `"live"`, `"start"`, or `"after"` with a seq.
    pub fn parse(kind: &str, seq: Option<f64>) -> Result<Since> {
        match (kind, seq) {
            ("live", _) => Ok(Since::Live),
            ("start", _) => Ok(Since::Start),
            ("after", Some(_)) => Ok(Since::After(seq_arg(seq)?.unwrap_or(0))),
            _ => Err(Error::invalid_input(
                "since must be a bookmark, a seq, or null",
            )),
        }
    }
}

#[derive(Debug)]
struct Sub {
    /// Last seq accounted for (delivered or filtered out); `None`: nothing yet.
    cursor: Option<u64>,
    filter: EventFilter,
}

/// The subscription hub: committed events in a bounded ring, and a cursor per
/// subscriber. A subscriber takes events from the ring while the ring holds the
/// event right after its cursor, and reads storage otherwise (history, or after
/// falling behind); since both hold the same committed events in seq order,
/// every event is delivered exactly once and in order, and memory stays bounded.
#[derive(Debug)]
pub struct Hub {
    ring: VecDeque<(EventMeta, Arc<str>)>,
    ring_bytes: usize,
    cap_events: usize,
    cap_bytes: usize,
    subs: HashMap<u32, Sub>,
    next_id: u32,
    /// The last durable seq.
    durable: Option<u64>,
    /// The first seq of the log, once known (the ring serves a from-start
    /// subscription only if it still holds it).
    first: Option<u64>,
    /// Last seq handed to live (`on`) handlers.
    live_cursor: Option<u64>,
}

impl Hub {
    /// A hub whose ring holds at most `cap_events` events and `cap_bytes` bytes.
    pub fn new(
        durable: Option<Bookmark>,
        first: Option<u64>,
        cap_events: usize,
        cap_bytes: usize,
    ) -> Hub {
        Hub {
            ring: VecDeque::new(),
            ring_bytes: 0,
            cap_events: cap_events.max(1),
            cap_bytes,
            subs: HashMap::new(),
            next_id: 1,
            durable: durable.map(|b| b.seq),
            first,
            live_cursor: durable.map(|b| b.seq),
        }
    }

    /// The last durable seq.
    pub fn durable(&self) -> Option<u64> {
        self.durable
    }

    /// Events became durable (in seq order).
    pub fn committed(&mut self, items: impl IntoIterator<Item = (EventMeta, Arc<str>)>) {
        for (meta, line) in items {
            if self.durable.is_some_and(|d| meta.seq <= d) {
                continue;
            }
            self.durable = Some(meta.seq);
            self.first.get_or_insert(meta.seq);
            self.ring_bytes += line.len();
            self.ring.push_back((meta, line));
        }
        while self.ring.len() > self.cap_events
            || (self.ring_bytes > self.cap_bytes && self.ring.len() > 1)
        {
            if let Some((_, l)) = self.ring.pop_front() {
                self.ring_bytes -= l.len();
            }
        }
    }

    /// Another process appended up to `seq` (read-only logs that follow a file).
    pub fn set_durable(&mut self, last: Option<Bookmark>, first: Option<u64>) {
        if let Some(b) = last
            && self.durable.is_none_or(|d| b.seq > d)
        {
            self.durable = Some(b.seq);
        }
        if self.first.is_none() {
            self.first = first;
        }
    }

    /// A new subscription.
    pub fn subscribe(&mut self, filter: EventFilter, since: Since) -> u32 {
        let cursor = match since {
            Since::Live => self.durable,
            Since::Start => None,
            Since::After(s) => Some(s),
        };
        let id = self.next_id;
        self.next_id += 1;
        self.subs.insert(id, Sub { cursor, filter });
        id
    }

    /// The filter of a storage read for subscription `id`: its own, with at
    /// most `limit` (at least 1) events.
    pub fn read_filter(&self, id: u32, limit: usize) -> Result<EventFilter> {
        let mut filter = self
            .subs
            .get(&id)
            .map(|s| s.filter.clone())
            .ok_or_else(|| Error::new(ErrorCode::Closed, "the subscription was closed"))?;
        filter.limit = Some(limit.max(1) as u64);
        Ok(filter)
    }

    /// Ends a subscription.
    pub fn unsubscribe(&mut self, id: u32) {
        self.subs.remove(&id);
    }

    /// The next step of subscription `id`: at most `max` events.
    pub fn poll(&mut self, id: u32, max: usize) -> Result<Poll> {
        let max = max.max(1);
        let Some(sub) = self.subs.get_mut(&id) else {
            return Err(Error::new(ErrorCode::Closed, "the subscription was closed"));
        };
        let caught_up = match (sub.cursor, self.durable) {
            (_, None) => true,
            (Some(c), Some(d)) => c >= d,
            (None, Some(_)) => false,
        };
        if caught_up {
            return Ok(Poll::Pending);
        }
        // The ring serves if it holds the event right after the cursor.
        let front = self.ring.front().map(|(m, _)| m.seq);
        let serves = match (front, sub.cursor) {
            (None, _) => false,
            (Some(f), Some(c)) => f <= c + 1,
            (Some(f), None) => self.first == Some(f),
        };
        if !serves {
            return Ok(Poll::Read {
                since: sub.cursor,
                limit: max,
            });
        }
        let start = match sub.cursor {
            Some(c) => self.ring.partition_point(|(m, _)| m.seq <= c),
            None => 0,
        };
        let mut out = Vec::new();
        for (meta, line) in self.ring.iter().skip(start) {
            sub.cursor = Some(meta.seq);
            if sub.filter.matches(meta) {
                out.push(line.clone());
                if out.len() >= max {
                    break;
                }
            }
        }
        Ok(if out.is_empty() {
            Poll::Pending
        } else {
            Poll::Events(out)
        })
    }

    /// Hands over what a [`Poll::Read`] read from storage with the
    /// subscription's filter: returns the events to deliver, as a JSON array
    /// (anything at or before the cursor is dropped).
    pub fn provide(&mut self, id: u32, mut out: ReadOut) -> Result<String> {
        let Some(sub) = self.subs.get_mut(&id) else {
            return Err(Error::new(ErrorCode::Closed, "the subscription was closed"));
        };
        if let Some(c) = sub.cursor {
            out.drop_through(c);
        }
        let last = out.seqs().last().max(out.last_examined);
        if let Some(l) = last
            && sub.cursor.is_none_or(|c| l > c)
        {
            sub.cursor = Some(l);
        }
        Ok(out.into_events_json())
    }

    /// The committed events live (`on`) handlers have not seen yet.
    /// As a JSON array.
    pub fn drain_live_json(&mut self) -> String {
        let start = match self.live_cursor {
            Some(c) => self.ring.partition_point(|(m, _)| m.seq <= c),
            None => 0,
        };
        let lines: Vec<&str> = self.ring.iter().skip(start).map(|(_, l)| &**l).collect();
        if let Some((m, _)) = self.ring.back().filter(|_| !lines.is_empty()) {
            self.live_cursor = Some(m.seq);
        }
        crate::context::join_array(&lines)
    }
}

/// Events read from a log, kept as the text of a JSON array being built (so
/// that handing them to JavaScript is one string) with the seq and end of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOut {
    /// `[` then the lines, comma-separated (no closing `]`).
    text: String,
    /// Each event's seq and the end of its line in `text`.
    items: Vec<(u64, usize)>,
    /// The last seq the read looked at (matching or not).
    pub last_examined: Option<u64>,
}

impl Default for ReadOut {
    fn default() -> Self {
        ReadOut::new(None)
    }
}

impl ReadOut {
    /// Nothing read yet; `since` is where the read starts.
    pub fn new(since: Option<u64>) -> Self {
        ReadOut {
            text: String::from("["),
            items: Vec::new(),
            last_examined: since,
        }
    }

    /// Adds an event line (in seq order).
    pub fn push(&mut self, seq: u64, line: &str) {
        if !self.items.is_empty() {
            self.text.push(',');
        }
        self.text.push_str(line);
        self.items.push((seq, self.text.len()));
    }

    /// Takes the next event examined (in seq order): keeps it if `filter`
    /// passes it. True once `filter.limit` events are held.
    pub fn offer(
        &mut self,
        seq: u64,
        channel: Channel,
        kind: &str,
        line: &str,
        filter: &EventFilter,
    ) -> bool {
        self.last_examined = Some(seq);
        if !filter.accepts(channel, kind) {
            return false;
        }
        self.push(seq, line);
        filter.limit.is_some_and(|l| self.len() as u64 >= l)
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no event was read.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The events' seqs.
    pub fn seqs(&self) -> impl Iterator<Item = u64> + '_ {
        self.items.iter().map(|(s, _)| *s)
    }

    /// The event lines.
    pub fn lines(&self) -> impl Iterator<Item = &str> + '_ {
        let mut start = 1;
        self.items.iter().map(move |&(_, end)| {
            let line = &self.text[start..end];
            start = end + 1;
            line
        })
    }

    /// Drops the events with seq `<= cursor` (a prefix, as seqs grow).
    pub fn drop_through(&mut self, cursor: u64) {
        let k = self.items.partition_point(|(s, _)| *s <= cursor);
        if k == 0 {
            return;
        }
        if k == self.items.len() {
            self.text.truncate(1);
            self.items.clear();
            return;
        }
        let cut = self.items[k - 1].1 + 1; // through the comma after event k-1
        self.text.replace_range(1..cut, "");
        self.items.drain(..k);
        for item in &mut self.items {
            item.1 -= cut - 1;
        }
    }

    /// The events as a JSON array.
    pub fn events_json(&self) -> String {
        let mut s = String::with_capacity(self.text.len() + 1);
        s.push_str(&self.text);
        s.push(']');
        s
    }

    /// The events as a JSON array, without copying.
    pub fn into_events_json(mut self) -> String {
        self.text.push(']');
        self.text
    }
}

/// Reads `since < seq <= until` events passing `filter` from events in seq order.
pub fn read_slice(
    lines: &[(EventMeta, Arc<str>)],
    since: Option<u64>,
    until: Option<u64>,
    filter: &EventFilter,
) -> ReadOut {
    let from = since.map_or(0, |s| lines.partition_point(|(m, _)| m.seq <= s));
    let mut out = ReadOut::new(since);
    for (meta, line) in &lines[from..] {
        if until.is_some_and(|u| meta.seq > u) {
            break;
        }
        if out.offer(meta.seq, meta.channel, &meta.kind, line, filter) {
            break;
        }
    }
    out
}

/// An event log kept in memory (durability `'memory'`, for tests).
#[derive(Debug)]
pub struct MemoryLog {
    pub core: EventLogCore,
    pub lines: Vec<(EventMeta, Arc<str>)>,
}

impl MemoryLog {
    /// An empty log.
    pub fn new(max_depth: usize, max_line: u64) -> Self {
        MemoryLog {
            core: EventLogCore::new(None, None, max_depth, max_line),
            lines: Vec::new(),
        }
    }

    /// Appends and commits at once.
    pub fn append(&mut self, event_json: &str, now_ms: i64) -> Result<Bookmark> {
        let b = self.core.append(event_json, now_ms)?;
        if let Some(batch) = self.core.take_batch(None) {
            self.lines.extend(batch.items.iter().cloned());
            self.core.committed(batch);
        }
        Ok(b)
    }

    /// Appends prebuilt lines and commits them at once (see
    /// [`EventLogCore::append_lines`]).
    pub fn append_lines(&mut self, lines: &[EventLine]) -> Result<Option<Bookmark>> {
        let b = self.core.append_lines(lines)?;
        if let Some(batch) = self.core.take_batch(None) {
            self.lines.extend(batch.items.iter().cloned());
            self.core.committed(batch);
        }
        Ok(b)
    }

    /// Reads like a stored log.
    pub fn read(&self, since: Option<u64>, until: Option<u64>, filter: &EventFilter) -> ReadOut {
        read_slice(&self.lines, since, until, filter)
    }

    /// The last event's bookmark.
    pub fn last_bookmark(&self) -> Option<Bookmark> {
        self.lines.last().map(|(m, _)| m.bookmark())
    }
}

/// A batch of event lines for one write.
#[derive(Debug, Default)]
pub struct EventBatch {
    pub items: Vec<(EventMeta, Arc<str>)>,
    /// The lines, each with its newline.
    pub bytes: Vec<u8>,
    pub last_seq: u64,
}

/// Sequence numbers, the queue of lines to write, and the hub.
#[derive(Debug)]
pub struct EventLogCore {
    last: Option<Bookmark>,
    queue: VecDeque<(EventMeta, Arc<str>)>,
    pub hub: Hub,
    failed: Option<Error>,
    max_depth: usize,
    max_line: u64,
}

/// Ring limits of the hub.
pub const RING_EVENTS: usize = 8192;
pub const RING_BYTES: usize = 16 << 20;

impl EventLogCore {
    /// A log whose last durable event is `last` (seq continues after it).
    pub fn new(
        last: Option<Bookmark>,
        first: Option<u64>,
        max_depth: usize,
        max_line: u64,
    ) -> Self {
        EventLogCore {
            last,
            queue: VecDeque::new(),
            hub: Hub::new(last, first, RING_EVENTS, RING_BYTES),
            failed: None,
            max_depth,
            max_line,
        }
    }

    /// Appends an event (a JSON object); returns its bookmark, which is also the
    /// ticket to wait for (durable once `hub.durable() >= bookmark.seq`).
    pub fn append(&mut self, event_json: &str, now_ms: i64) -> Result<Bookmark> {
        if let Some(e) = &self.failed {
            return Err(Error::new(
                ErrorCode::Closed,
                format!(
                    "an earlier write failed ({}); reopen the log to continue",
                    e.message
                ),
            ));
        }
        let seq = self.last.map_or(1, |b| b.seq + 1);
        let (line, meta) = events::build_event_line(event_json, seq, now_ms, self.max_depth)?;
        if line.len() as u64 > self.max_line {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!(
                    "event is {} bytes, over the limit of {}",
                    line.len(),
                    self.max_line
                ),
            ));
        }
        let b = meta.bookmark();
        self.last = Some(b);
        self.queue.push_back((meta, line.into()));
        Ok(b)
    }

    /// Queues event lines built elsewhere (by [`events::build_event_line`], as a
    /// storage batch carries them) whose seqs continue the log, all or nothing
    /// (see [`check_lines`](Self::check_lines)). Returns the last line's
    /// bookmark, the ticket to wait for (`None` for no lines).
    pub fn append_lines(&mut self, lines: &[EventLine]) -> Result<Option<Bookmark>> {
        self.check_lines(lines)?;
        for l in lines {
            self.queue.push_back((l.meta.clone(), l.line.clone()));
            self.last = Some(l.meta.bookmark());
        }
        Ok(lines.last().map(|l| l.meta.bookmark()))
    }

    /// Whether [`append_lines`](Self::append_lines) would take these lines:
    /// the first seq is the last seq + 1 (any seq on an empty log), each next
    /// one + 1, and each line is its `meta`'s event on one line. A seq that
    /// does not follow, a line whose envelope is not its `meta` or that holds
    /// a newline is `INTERNAL` (the writer's bug), a line over the limit
    /// `LIMIT_EXCEEDED`, a log failed earlier `CLOSED`.
    pub fn check_lines(&self, lines: &[EventLine]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(Error::new(
                ErrorCode::Closed,
                format!(
                    "an earlier write failed ({}); reopen the log to continue",
                    e.message
                ),
            ));
        }
        let mut prev = self.last.map(|b| b.seq);
        for l in lines {
            if let Some(p) = prev
                && p.checked_add(1) != Some(l.meta.seq)
            {
                return Err(Error::internal(format!(
                    "event seq {} does not follow seq {p} (an event line's seq is the log's last + 1)",
                    l.meta.seq
                )));
            }
            if l.line.len() as u64 > self.max_line {
                return Err(Error::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "event is {} bytes, over the limit of {}",
                        l.line.len(),
                        self.max_line
                    ),
                ));
            }
            if memchr::memchr(b'\n', l.line.as_bytes()).is_some() {
                return Err(Error::internal(format!(
                    "event line {} holds a newline",
                    l.meta.seq
                )));
            }
            match events::parse_event_line(&l.line, self.max_depth) {
                Ok(m) if m == l.meta => {}
                Ok(_) => {
                    return Err(Error::internal(format!(
                        "event line {} does not match its envelope",
                        l.meta.seq
                    )));
                }
                Err(why) => {
                    return Err(Error::internal(format!(
                        "event line {} is not an event: {why}",
                        l.meta.seq
                    )));
                }
            }
            prev = Some(l.meta.seq);
        }
        Ok(())
    }

    /// Takes queued lines for one write (all, or at most `max`).
    pub fn take_batch(&mut self, max: Option<usize>) -> Option<EventBatch> {
        let n = max.unwrap_or(usize::MAX).min(self.queue.len());
        if n == 0 {
            return None;
        }
        let mut b = EventBatch::default();
        for (meta, line) in self.queue.drain(..n) {
            b.bytes.extend_from_slice(line.as_bytes());
            b.bytes.push(b'\n');
            b.last_seq = meta.seq;
            b.items.push((meta, line));
        }
        Some(b)
    }

    /// The storage layer wrote and synced `batch`.
    pub fn committed(&mut self, batch: EventBatch) {
        self.hub.committed(batch.items);
    }

    /// Marks the log failed (every later append errors until reopened).
    pub fn fail(&mut self, e: Error) {
        self.failed = Some(e);
    }

    /// The error that made the log fail.
    pub fn failure(&self) -> Option<&Error> {
        self.failed.as_ref()
    }

    /// The last event handed out (durable or queued).
    pub fn last_assigned(&self) -> Option<Bookmark> {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Channel;

    fn meta(seq: u64, kind: &str, channel: Channel) -> EventMeta {
        EventMeta {
            seq,
            timestamp: seq as i64,
            channel,
            kind: kind.into(),
        }
    }

    #[test]
    fn index_locates_starts() {
        let mut i = EventIndex {
            step: 2,
            ..Default::default()
        };
        for s in 1..=7u64 {
            i.note_event(
                meta(s * 10, "done", Channel::Progress).bookmark(),
                s * 100,
                s * 100 + 50,
            );
        }
        assert_eq!(
            i.entries,
            vec![[10, 100, 1], [30, 300, 3], [50, 500, 5], [70, 700, 7]]
        );
        assert_eq!(i.start_for(None), (0, 0, None));
        assert_eq!(i.start_for(Some(5)), (0, 0, None));
        assert_eq!(i.start_for(Some(30)), (300, 2, Some(30)));
        assert_eq!(i.start_for(Some(49)), (300, 2, Some(30)));
        assert_eq!(i.start_for(Some(1000)), (700, 6, Some(70)));
        assert_eq!(EventIndex::parse(&i.to_json()).unwrap(), i);
    }

    #[test]
    fn read_out_drops_a_prefix() {
        let mut out = ReadOut::new(None);
        for s in [3, 5, 8] {
            out.push(s, &format!("{{\"seq\":{s}}}"));
        }
        out.drop_through(4);
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            ["{\"seq\":5}", "{\"seq\":8}"]
        );
        assert_eq!(out.events_json(), "[{\"seq\":5},{\"seq\":8}]");
        out.drop_through(8);
        assert!(out.is_empty());
        assert_eq!(out.into_events_json(), "[]");
    }

    #[test]
    fn canonical_and_general_envelopes_agree() {
        for line in [
            r#"{"seq":7,"timestamp":-3,"channel":"control","type":"permission_required","a":[1,{"b":null}]}"#,
            r#"{"seq":7,"timestamp":12,"channel":"monitor","type":"x"}"#,
            r#"{"seq":7,"timestamp":12,"channel":"monitor","type":"x","seq":9}"#,
            r#"{"seq":7,"timestamp":12,"channel":"monitor","type":"x","s\u0065q":9}"#,
            r#"{"seq":7.0,"timestamp":1e3,"channel":"monitor","type":"t\u00e9"}"#,
            r#"{"timestamp":1,"seq":2,"type":"x","channel":"progress"}"#,
        ] {
            let got = events::parse_event_line(line, 64).unwrap();
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(got.seq, v["seq"].as_f64().unwrap() as u64, "{line}");
            assert_eq!(
                got.timestamp,
                v["timestamp"].as_f64().unwrap() as i64,
                "{line}"
            );
            assert_eq!(&*got.kind, v["type"].as_str().unwrap(), "{line}");
            assert_eq!(
                got.channel.as_str(),
                v["channel"].as_str().unwrap(),
                "{line}"
            );
        }
        assert!(
            events::parse_event_line(
                r#"{"seq":7,"timestamp":1,"channel":"monitor","type":"x"}"#,
                0
            )
            .is_err(),
            "depth limit on both paths"
        );
        for bad in [
            r#"{"seq":7,"timestamp":1,"channel":"monitor","type":"x","a":}"#,
            r#"{"seq":7,"timestamp":1,"channel":"monitor","type":"x"} x"#,
            r#"{"seq":07,"timestamp":1,"channel":"monitor","type":"x"}"#,
            r#"{"seq":7,"timestamp":1,"channel":"monitor","type":"x","a":"\q"}"#,
            r#"{"seq":7,"timestamp":1,"channel":"monitors","type":"x"}"#,
        ] {
            assert!(events::parse_event_line(bad, 64).is_err(), "{bad}");
        }
    }

    fn built(seq: u64) -> EventLine {
        let (line, meta) =
            events::build_event_line(r#"{"type":"note","channel":"monitor"}"#, seq, 5, 64).unwrap();
        EventLine {
            meta,
            line: line.into(),
        }
    }

    #[test]
    fn prebuilt_lines_continue_the_log_or_nothing_is_queued() {
        let mut core = EventLogCore::new(None, None, 64, 1 << 20);
        // An empty log takes any first seq (a fork continues its parent's).
        let b = core.append_lines(&[built(7), built(8)]).unwrap();
        assert_eq!(b.map(|b| b.seq), Some(8));
        assert_eq!(core.append_lines(&[]).unwrap(), None);
        for bad in [
            vec![built(10)],           // a gap
            vec![built(8)],            // not after the last
            vec![built(9), built(11)], // a gap inside the batch
        ] {
            let e = core.append_lines(&bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::Internal, "{}", e.message);
        }
        let mut lying = built(9);
        lying.line = built(10).line;
        assert_eq!(
            core.append_lines(&[lying]).unwrap_err().code,
            ErrorCode::Internal
        );
        let mut broken = built(9);
        broken.line =
            "{\"seq\":9,\n\"timestamp\":5,\"channel\":\"monitor\",\"type\":\"note\"}".into();
        assert_eq!(
            core.append_lines(&[broken]).unwrap_err().code,
            ErrorCode::Internal
        );
        let mut small = EventLogCore::new(None, None, 64, 10);
        assert_eq!(
            small.append_lines(&[built(1)]).unwrap_err().code,
            ErrorCode::LimitExceeded
        );
        // Nothing of the refused batches was queued: only 7 and 8.
        let batch = core.take_batch(None).unwrap();
        assert_eq!(
            batch.items.iter().map(|(m, _)| m.seq).collect::<Vec<_>>(),
            [7, 8]
        );
        assert_eq!(core.last_assigned().map(|b| b.seq), Some(8));
        core.append_lines(&[built(9)]).unwrap();
        // An append after prebuilt lines continues them.
        assert_eq!(
            core.append(r#"{"type":"note","channel":"monitor"}"#, 1)
                .unwrap()
                .seq,
            10
        );
        core.fail(Error::internal("disk"));
        assert_eq!(
            core.append_lines(&[built(11)]).unwrap_err().code,
            ErrorCode::Closed
        );
    }

    #[test]
    fn hub_hands_over_from_storage_to_ring_exactly_once() {
        let mut hub = Hub::new(None, None, 4, 1 << 20);
        let line = |s: u64| -> Arc<str> { format!("e{s}").into() };
        hub.committed((1..=10).map(|s| (meta(s, "done", Channel::Progress), line(s))));
        // Ring holds 7..=10 only.
        let id = hub.subscribe(EventFilter::default(), Since::After(2));
        assert_eq!(
            hub.poll(id, 100).unwrap(),
            Poll::Read {
                since: Some(2),
                limit: 100
            }
        );
        let read = |from: u64, to: u64| {
            let mut out = ReadOut::new(Some(from - 1));
            for s in from..=to {
                out.push(s, &line(s));
            }
            out.last_examined = Some(to);
            out
        };
        assert_eq!(hub.provide(id, read(3, 5)).unwrap(), "[e3,e4,e5]");
        // Still behind the ring's start (7): read again.
        assert_eq!(
            hub.poll(id, 100).unwrap(),
            Poll::Read {
                since: Some(5),
                limit: 100
            }
        );
        // A read overlapping what was delivered: only the new part.
        assert_eq!(hub.provide(id, read(4, 6)).unwrap(), "[e6]");
        assert_eq!(
            hub.poll(id, 100).unwrap(),
            Poll::Events((7..=10).map(line).collect())
        );
        assert_eq!(hub.poll(id, 100).unwrap(), Poll::Pending);
        hub.committed([(meta(11, "done", Channel::Progress), line(11))]);
        assert_eq!(hub.poll(id, 100).unwrap(), Poll::Events(vec![line(11)]));
        let live = hub.subscribe(
            EventFilter {
                kinds: Some(vec!["x".into()]),
                ..Default::default()
            },
            Since::Live,
        );
        assert_eq!(hub.poll(live, 10).unwrap(), Poll::Pending);
        hub.committed([
            (meta(12, "done", Channel::Progress), line(12)),
            (meta(13, "x", Channel::Monitor), line(13)),
        ]);
        assert_eq!(hub.poll(live, 10).unwrap(), Poll::Events(vec![line(13)]));
        hub.unsubscribe(live);
        assert_eq!(hub.poll(live, 10).unwrap_err().code, ErrorCode::Closed);
    }
}
