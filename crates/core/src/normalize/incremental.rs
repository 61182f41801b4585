//! Requests built step after step (an agent's model calls): the conversion of
//! a conversation's earlier messages is kept, and each request converts only
//! what came after, so its cost follows the new messages, not the
//! conversation's length (FORMAT.md §15.8).
//!
//! The kept part ends just before an assistant message: there every rule of
//! [`super::transform`] starts afresh (the turn before is closed, its calls
//! answered) and every encoder's merging stops (no result or user message
//! joins a turn across it). A part is kept only when converting it alone gives
//! what the whole conversion gives for it; each check below names the rule
//! that would differ otherwise. When a check fails the request is converted
//! whole, as [`super::convert`] does, and the kept part is rebuilt.
//!
//! The caller promises that the messages it passed before are still the
//! first ones (only new messages are appended); it calls
//! [`RequestCache::clear`] when it replaces any. The last kept message is
//! compared to be sure.

/// Ids are hashed with foldhash (as in [`super::ids`]): a long conversation
/// looks up and stores one per item.
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::canon::{Provider, blocks, btype, origin, role};
use super::encode::{Fate, ReasoningPairs};
use super::ids::{IdMap, fnv64};
use super::jv::{J, push_member_key};
use super::refuse::TurnScan;
use super::report::CompatibilityReport;
use super::transform::{self, name_rule};
use super::{Converted, ToOptions, check_messages, encode, parse, prepare};
use crate::Result;
use crate::threads::free_later;

/// The conversion of a conversation's first messages, kept for the next request.
#[derive(Debug)]
pub struct RequestCache {
    key: Option<(Provider, ToOptions)>,
    /// Input messages converted into the kept provider messages.
    done: usize,
    /// A hash of the last of them (checked against the caller's).
    last_hash: u64,
    /// Their provider messages, JSON texts joined with commas: in `sealed`
    /// pieces (shared by every body written from them, never copied again),
    /// then `open` (copied into each body until it is long enough to seal).
    sealed: Vec<Piece>,
    open: String,
    /// The rules' state after them.
    ids: IdMap,
    synthetic: HashSet<String>,
    /// The Gemini call ids they sent (a response later carries its id when
    /// its call id was sent).
    sent: std::sync::Arc<HashSet<String>>,
    /// Responses: their hosted calls left out and waiting (for the outputs after them).
    calls: encode::CallState,
    /// Messages the rules gave for them (encoder report indexes count these).
    transformed: usize,
    /// What the rules and the encoders reported for them, one entry per part
    /// kept, in order: pi's roles turned into LLM messages (that rule runs
    /// first over every message), the other rules, the encoding. Shared with
    /// the reports of the requests built from them ([`FullReport`]).
    kept_reps: Vec<Arc<[CompatibilityReport; 3]>>,
    /// The last request's list starts with this many of its own (OpenAI's
    /// system message), then the kept messages; `None`: nothing kept in it.
    splice_at: Option<usize>,
    /// When set, the report of a request built from a kept part lists only
    /// what the conversion of its new messages (and of the system prompt and
    /// tools) did, so that its cost does not follow the conversation's length
    /// either; [`RequestCache::full_report`] gives the whole one.
    pub lean: bool,
    /// Kept text is sealed into a piece once this long (what a body copies
    /// of the kept part at most); 1 MiB.
    pub seal_at: usize,
    /// The last request's report, or its parts.
    last: Last,
    /// Where the kept messages leave the final-turn rule (thinking on, Anthropic).
    turn: TurnScan,
    /// Requests in a row whose checks failed.
    strikes: u8,
    /// How many requests reused a kept part / were converted whole.
    pub hits: u64,
    pub misses: u64,
    /// Threads a first conversion (nothing kept yet: an agent's first call
    /// after a resume, a builder's first build) may use: its messages are
    /// parsed and converted in parts at once, as [`convert_split`] does
    /// (default: [`crate::threads::available`]; 1: on the caller's thread).
    pub threads: usize,
    /// Messages a part has at least (below this a thread of its own does not pay).
    pub min_per_part: usize,
    /// First conversions that were cut in parts and kept.
    pub splits: u64,
    /// The target and options for which a first conversion cut in parts
    /// differed from the whole one: later first conversions of this cache
    /// for them use one thread (each would pay for the parts and then the
    /// whole).
    split_differed: Option<(Provider, ToOptions)>,
}

/// The last request's report: whole, or in the parts [`RequestCache::full_report`] joins.
#[derive(Debug, Default)]
enum Last {
    #[default]
    None,
    Whole(Arc<CompatibilityReport>),
    /// The new messages' pi roles and other rules, the system prompt and
    /// tools, the new messages' encoding, the prompt's and tools' encoding.
    Parts(Arc<[CompatibilityReport; 5]>),
}

/// The whole report of one request, joined when it is read: taking it costs
/// a pointer per part kept, so a request's cost does not follow the
/// conversation's length even when its report may be read later.
#[derive(Clone, Debug)]
pub enum FullReport {
    Whole(Arc<CompatibilityReport>),
    Parts {
        kept: Vec<Arc<[CompatibilityReport; 3]>>,
        parts: Arc<[CompatibilityReport; 5]>,
    },
}

impl FullReport {
    /// The report, in the whole conversion's order: every message's rules,
    /// the system prompt and tools, every message's encoding, the system
    /// prompt's and tools' encoding.
    pub fn report(&self) -> CompatibilityReport {
        match self {
            FullReport::Whole(r) => (**r).clone(),
            FullReport::Parts { kept, parts } => {
                let [l, t, s, e, r] = &**parts;
                let mut all = CompatibilityReport::new();
                let kept_at = |i: usize| kept.iter().map(move |k| &k[i]);
                for part in kept_at(0)
                    .chain([l])
                    .chain(kept_at(1))
                    .chain([t, s])
                    .chain(kept_at(2))
                    .chain([e, r])
                {
                    all.merge(part.clone(), None);
                }
                all
            }
        }
    }
}

/// One part converted: its provider messages and what the rules left.
struct Part {
    items: Vec<J>,
    /// Its provider messages already written, after `items` (a first part
    /// kept that was cut in parts: each part's are written on its thread):
    /// JSON texts of messages joined with commas, each text of a part after
    /// the first starting with one.
    written: Vec<String>,
    turn: TurnScan,
    synthetic: Vec<String>,
    transformed: usize,
    l_rep: CompatibilityReport,
    t_rep: CompatibilityReport,
    /// What the target refuses in its images (message indexes of the part's own).
    m_rep: CompatibilityReport,
    e_rep: CompatibilityReport,
    /// Gemini call ids it sent, and response ids it found not sent
    /// (Responses: item ids it sent, and took as not sent before).
    sent: HashSet<String>,
    unsent: Vec<String>,
    /// Responses item ids it took as sent before it.
    assumed: Vec<String>,
    /// Responses hosted calls it left out and sent, and outputs it sent for
    /// calls before it.
    calls: encode::PartCalls,
}

impl Part {
    /// Writes `items` as one text of `written` (a comma first unless it is
    /// the first), freeing each tree once written.
    fn write_items(&mut self, first: bool) {
        let mut out = String::new();
        for (n, item) in self.items.drain(..).enumerate() {
            if n > 0 || !first {
                out.push(',');
            }
            item.write(&mut out);
        }
        if !out.is_empty() {
            self.written.push(out);
        }
    }
}

/// A conversation's canonical messages as a [`RequestCache`] reads them:
/// JSON texts (parsed when needed) or trees already parsed (cloned; a clone
/// shares the text).
pub trait Messages {
    fn count(&self) -> usize;
    /// Message `i` as a tree.
    fn tree(&self, i: usize) -> Result<J>;
    /// A hash of message `i` (the same for the same message).
    fn fingerprint(&self, i: usize) -> u64;

    /// Messages `from..` as trees.
    fn trees(&self, from: usize) -> Result<Vec<J>> {
        (from..self.count()).map(|i| self.tree(i)).collect()
    }

    /// [`Messages::trees`] made on up to `threads` threads, in runs of at
    /// least [`RequestCache::min_per_part`] messages: the same trees in the
    /// same order, and the same first error.
    fn trees_threads(&self, from: usize, threads: usize, min: usize) -> Result<Vec<J>>
    where
        Self: Sync,
    {
        let n = self.count().saturating_sub(from);
        let parts = threads.min(n / min.max(1)).max(1);
        if parts < 2 {
            return self.trees(from);
        }
        let runs: Vec<(usize, usize)> = (0..parts)
            .map(|k| (from + n * k / parts, from + n * (k + 1) / parts))
            .collect();
        let run =
            |&(a, b): &(usize, usize)| -> Result<Vec<J>> { (a..b).map(|i| self.tree(i)).collect() };
        let (first, later) =
            crate::threads::on_threads("forkpoint-parse", &runs[1..], || run(&runs[0]), run);
        let mut all = first?;
        all.reserve(n - all.len());
        for (r, got) in runs[1..].iter().zip(later) {
            // A run whose thread could not be had is made here.
            all.extend(got.unwrap_or_else(|| run(r))?);
        }
        Ok(all)
    }
}

impl Messages for [&str] {
    fn count(&self) -> usize {
        self.len()
    }
    fn tree(&self, i: usize) -> Result<J> {
        parse(self[i], "a message")
    }
    fn fingerprint(&self, i: usize) -> u64 {
        fnv64(self[i].as_bytes(), 0)
    }
}

impl Messages for [J] {
    fn count(&self) -> usize {
        self.len()
    }
    fn tree(&self, i: usize) -> Result<J> {
        Ok(self[i].clone())
    }
    fn fingerprint(&self, i: usize) -> u64 {
        fnv64(self[i].text().as_bytes(), 0)
    }
}

/// A request body: `head`, the kept conversion's pieces, `tail`, in that
/// order. The pieces are shared by the bodies of the requests that reuse them
/// (each has an id no other piece has in this process), so a driver that
/// sends the parts as they are pays for writing only what is new: the cost of
/// a request follows the new messages, not the conversation's length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Body {
    pub head: String,
    pub kept: Vec<Piece>,
    pub tail: String,
}

/// A piece of the kept conversion of a [`Body`].
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// Unique in the process: a driver may keep what it made of a piece by its id.
    pub id: u64,
    pub text: Arc<String>,
}

/// Kept text is sealed into a piece once this long (what a body copies of
/// the kept part at most).
const SEAL_AT: usize = 1 << 20;

/// Below this many messages a part of its own does not pay (a conversion
/// cut in parts checks and joins them).
pub const MIN_PER_PART: usize = 1024;

impl Piece {
    fn new(text: String) -> Piece {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Piece {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            text: Arc::new(text),
        }
    }
}

impl Body {
    /// A body in one part.
    pub fn whole(text: String) -> Body {
        Body {
            head: text,
            ..Default::default()
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + self.kept.iter().map(|p| p.text.len()).sum::<usize>() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its parts in order (`head`, the pieces, `tail`).
    pub fn parts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.head.as_str())
            .chain(self.kept.iter().map(|p| p.text.as_str()))
            .chain(std::iter::once(self.tail.as_str()))
    }

    /// The whole text (a copy unless it is in one part).
    pub fn into_text(self) -> String {
        if self.kept.is_empty() && self.tail.is_empty() {
            return self.head;
        }
        self.text()
    }

    /// The whole text, joined from the parts (no clone of them first).
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.len());
        for p in self.parts() {
            out.push_str(p);
        }
        out
    }
}

/// One part of a [`Body`] as a driver is handed it (see [`Held`]).
#[derive(Clone, Debug, PartialEq)]
pub enum BodyPart {
    /// Text of this body alone (its head or tail).
    Own(String),
    /// A kept piece the driver was not given before: its text, once.
    New(Piece),
    /// A kept piece the driver was given with the last body: its id alone
    /// (the driver keeps what it made of the last body's pieces by id).
    Known(u64),
}

/// The kept pieces a driver holds: those of the last body it was handed.
/// A piece's text is handed over once; a later body that reuses it names it
/// by id. A piece is never in a body again once a body went without it (a
/// [`RequestCache`] drops pieces only all at once), so the driver needs to
/// keep only the last body's pieces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Held(Vec<u64>);

impl Held {
    /// `body`'s parts in order for a driver that holds `self`, and what it
    /// holds once it has them all. The binding makes them into its own values
    /// and only then keeps the new [`Held`]: a body that could not be handed
    /// over whole leaves the driver holding what it held before.
    pub fn parts(&self, body: Body) -> (Vec<BodyPart>, Held) {
        let mut parts = Vec::with_capacity(body.kept.len() + 2);
        let mut now = Vec::with_capacity(body.kept.len());
        if !body.head.is_empty() {
            parts.push(BodyPart::Own(body.head));
        }
        for piece in body.kept {
            now.push(piece.id);
            parts.push(if self.0.contains(&piece.id) {
                BodyPart::Known(piece.id)
            } else {
                BodyPart::New(piece)
            });
        }
        if !body.tail.is_empty() {
            parts.push(BodyPart::Own(body.tail));
        }
        (parts, Held(now))
    }
}

impl std::fmt::Display for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.parts().try_for_each(|p| f.write_str(p))
    }
}

/// The member holding the conversation in `p`'s requests.
pub fn list_key(p: Provider) -> &'static str {
    match p {
        Provider::Anthropic | Provider::OpenAi => "messages",
        Provider::Responses => "input",
        Provider::Google => "contents",
    }
}

impl Default for RequestCache {
    fn default() -> Self {
        RequestCache {
            key: None,
            done: 0,
            last_hash: 0,
            sealed: Vec::new(),
            open: String::new(),
            ids: IdMap::new(),
            synthetic: HashSet::default(),
            sent: Default::default(),
            calls: encode::CallState::default(),
            transformed: 0,
            kept_reps: Vec::new(),
            splice_at: None,
            lean: false,
            seal_at: SEAL_AT,
            last: Last::None,
            turn: TurnScan::default(),
            strikes: 0,
            hits: 0,
            misses: 0,
            threads: crate::threads::available(),
            min_per_part: MIN_PER_PART,
            splits: 0,
            split_differed: None,
        }
    }
}

impl RequestCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets the kept part (call when earlier messages changed).
    pub fn clear(&mut self) {
        // The settings and counters stay; the kept part goes.
        let old = std::mem::take(self);
        *self = RequestCache {
            hits: old.hits,
            misses: old.misses,
            lean: old.lean,
            strikes: old.strikes,
            seal_at: old.seal_at,
            threads: old.threads,
            min_per_part: old.min_per_part,
            splits: old.splits,
            split_differed: old.split_differed,
            ..Default::default()
        };
    }

    /// The whole report of the last request (what [`super::convert`] reports
    /// for all its messages), also when [`RequestCache::lean`] gave less.
    pub fn full_report(&self) -> Option<CompatibilityReport> {
        self.last_report().map(|r| r.report())
    }

    /// [`RequestCache::full_report`], to be joined when read.
    pub fn last_report(&self) -> Option<FullReport> {
        match &self.last {
            Last::None => None,
            Last::Whole(r) => Some(FullReport::Whole(r.clone())),
            Last::Parts(parts) => Some(FullReport::Parts {
                kept: self.kept_reps.clone(),
                parts: parts.clone(),
            }),
        }
    }

    /// Input messages whose conversion is kept.
    pub fn kept(&self) -> usize {
        self.done
    }

    /// Converts `msgs` (canonical messages as JSON texts) as [`super::convert`]
    /// does. The request's conversation list holds only the messages after the
    /// kept part: write it with [`RequestCache::write`], which puts the kept
    /// ones in front.
    pub fn convert<M: Messages + ?Sized + Sync>(
        &mut self,
        msgs: &M,
        target: Provider,
        opts: &ToOptions,
    ) -> Result<Converted> {
        self.splice_at = None;
        let same_key = self
            .key
            .as_ref()
            .is_some_and(|(p, o)| *p == target && o == opts);
        let prefix_ok = self.done == 0
            || (msgs.count() >= self.done && msgs.fingerprint(self.done - 1) == self.last_hash);
        // Ids given back (`idMap`) are read from the whole conversation.
        let cacheable = opts.pairing && opts.id_map.is_empty();
        if !same_key || !prefix_ok || !cacheable {
            self.clear();
            self.key = Some((target, opts.clone()));
            if !same_key {
                self.strikes = 0;
            }
        }
        // After checks failed twice in a row (a conversation the parts
        // cannot be cut in, e.g. one with system messages), only every 16th
        // request tries again: the others are converted whole at once.
        let trying = self.strikes < 2 || self.misses.is_multiple_of(16);
        if cacheable && trying {
            // Nothing kept to start from: this request converts everything once.
            let fresh = self.done == 0;
            self.advance(msgs, target, opts)?;
            if self.done > 0
                && let Some(c) = self.try_convert(msgs, target, opts, fresh)?
            {
                if fresh {
                    self.misses += 1;
                } else {
                    self.hits += 1;
                }
                self.strikes = 0;
                return Ok(c);
            }
            // A check failed: the kept part starts again from nothing at the
            // next request. (Nothing to keep yet is no failure.)
            if self.done > 0 {
                self.strikes = self.strikes.saturating_add(1);
            }
            self.clear();
            self.key = Some((target, opts.clone()));
        }
        self.misses += 1;
        let (threads, min) = (self.threads, self.min_per_part);
        let all = msgs.trees_threads(0, threads, min)?;
        let c = super::convert_threads(all, target, opts, threads, min, || msgs.trees(0))?;
        self.last = Last::Whole(Arc::new(c.report.clone()));
        Ok(c)
    }

    /// The request's body: the kept provider messages, then the request's own.
    pub fn write(&self, request: &J, target: Provider) -> Body {
        let key = list_key(target);
        let (J::Obj(members), Some(at)) = (request, self.splice_at) else {
            return Body::whole(request.text());
        };
        if self.sealed.is_empty() && self.open.is_empty() {
            return Body::whole(request.text());
        }
        // What comes before the kept messages, and the open part of them
        // and what comes after (no copy of the sealed pieces).
        let mut before = String::from("{");
        let mut after = String::new();
        let mut spliced = false;
        for (i, (k, v)) in members.iter().enumerate() {
            let out = if spliced { &mut after } else { &mut before };
            push_member_key(out, i, k);
            match v {
                J::Arr(list) if !spliced && &**k == key => {
                    before.push('[');
                    for item in &list[..at.min(list.len())] {
                        item.write(&mut before);
                        before.push(',');
                    }
                    after.push_str(&self.open);
                    for item in list.iter().skip(at) {
                        after.push(',');
                        item.write(&mut after);
                    }
                    after.push(']');
                    spliced = true;
                }
                other => other.write(out),
            }
        }
        after.push('}');
        if !spliced {
            return Body::whole(request.text());
        }
        Body {
            head: before,
            kept: self.sealed.clone(),
            tail: after,
        }
    }

    /// Keeps more of `msgs` (up to their last assistant message) when the checks allow.
    fn advance<M: Messages + ?Sized + Sync>(
        &mut self,
        msgs: &M,
        target: Provider,
        opts: &ToOptions,
    ) -> Result<()> {
        // Nothing kept yet: the messages are parsed and converted on the
        // threads given, as `convert_split` does (parsed on them also after
        // a cut conversion differed: a parse cannot differ).
        let threads = if self.done == 0 { self.threads } else { 1 };
        let parsed = msgs.trees_threads(self.done.min(msgs.count()), threads, self.min_per_part)?;
        let Some(cut) = parsed.iter().rposition(kept_turn) else {
            return Ok(());
        };
        if cut == 0 {
            return Ok(());
        }
        let mut part = parsed;
        part.truncate(cut);
        if part.last().is_some_and(|m| role(m) == "assistant") {
            return Ok(());
        }
        let differed = self
            .split_differed
            .as_ref()
            .is_some_and(|(p, o)| *p == target && o == opts);
        let p = if threads > 1 && !differed {
            self.convert_split_part(part, msgs, cut, target, opts)?
        } else {
            self.convert_part(part, target, opts, true)?
        };
        let Some(p) = p else {
            return Ok(());
        };
        for (n, item) in p.items.iter().enumerate() {
            if n > 0 || !self.open.is_empty() || !self.sealed.is_empty() {
                self.open.push(',');
            }
            item.write(&mut self.open);
        }
        self.seal();
        for mut text in p.written {
            // The first text kept has no comma before it (a part written
            // after one that gave no messages starts with one).
            let after = !self.open.is_empty() || !self.sealed.is_empty();
            match (after, text.starts_with(',')) {
                (false, true) => {
                    text.remove(0);
                }
                (true, false) => self.open.push(','),
                _ => {}
            }
            if self.open.is_empty() && text.len() >= self.seal_at {
                // Long enough to be a piece as it is (not copied; no room
                // past the text).
                text.shrink_to_fit();
                self.sealed.push(Piece::new(text));
            } else {
                self.open.push_str(&text);
                self.seal();
            }
        }
        self.kept_reps.push(Arc::new([
            shifted(p.l_rep, self.done),
            shifted_rules(p.t_rep, self.done, self.transformed),
            shifted(p.e_rep, self.transformed),
        ]));
        self.transformed += p.transformed;
        self.synthetic.extend(p.synthetic);
        if !p.sent.is_empty() {
            std::sync::Arc::make_mut(&mut self.sent).extend(p.sent);
        }
        p.calls.apply_to(&mut self.calls);
        self.turn = p.turn;
        self.ids.commit();
        self.done += cut;
        self.last_hash = msgs.fingerprint(self.done - 1);
        Ok(())
    }

    /// Seals the open text into a piece once it is long enough.
    fn seal(&mut self) {
        if !self.open.is_empty() && self.open.len() >= self.seal_at {
            // Kept for good: no room past the text.
            self.open.shrink_to_fit();
            self.sealed.push(Piece::new(std::mem::take(&mut self.open)));
        }
    }

    /// The request from the kept part and the rest converted now; `None` when a check fails.
    fn try_convert<M: Messages + ?Sized>(
        &mut self,
        msgs: &M,
        target: Provider,
        opts: &ToOptions,
        fresh: bool,
    ) -> Result<Option<Converted>> {
        let rest = msgs.trees(self.done)?;
        check_messages(&rest, self.done)?;
        let Some(p) = self.convert_part(rest, target, opts, false)? else {
            return Ok(None);
        };
        if self.transformed + p.transformed <= 1 {
            // One message alone has a form of its own (a Responses input string).
            return Ok(None);
        }
        // Anthropic with thinking on: a final turn that does not start with
        // thinking is rewritten from its start (FORMAT.md §15.4, rule 14),
        // which may lie in the kept part.
        if opts.thinking && target == Provider::Anthropic && p.turn.rewritten() {
            self.ids.rollback();
            return Ok(None);
        }
        let l_rep = shifted(p.l_rep, self.done);
        let t_rep = shifted_rules(p.t_rep, self.done, self.transformed);
        let e_rep = shifted(p.e_rep, self.transformed);
        // The report is put together in the order the whole conversion
        // reports: every message's rules, the system prompt and tools, every
        // message's encoding, the system prompt's and tools' encoding.
        let mut s_rep = CompatibilityReport::new();
        let prepared = prepare(target, opts, &mut self.ids, &mut s_rep);
        let (id_map, name_map) = (self.ids.changed.clone(), self.ids.names_changed().to_vec());
        // This request's own part is converted again by the next one.
        self.ids.rollback();
        let (system, tools) = prepared?;
        let (mut request, r_rep) = frame(target, opts, system, tools);
        match request.get_mut(list_key(target)) {
            Some(J::Arr(list)) => {
                self.splice_at = Some(list.len());
                list.extend(p.items);
            }
            _ => return Ok(None),
        }
        let parts = Arc::new([l_rep, t_rep, s_rep, e_rep, r_rep]);
        let report = if self.lean && !fresh {
            let [l, t, s, e, r] = &*parts;
            let mut lean = l.clone();
            for part in [t, s, e, r] {
                lean.merge(part.clone(), None);
            }
            lean
        } else {
            FullReport::Parts {
                kept: self.kept_reps.clone(),
                parts: parts.clone(),
            }
            .report()
        };
        self.last = Last::Parts(parts);
        Ok(Some(Converted {
            request,
            report,
            id_map,
            name_map,
        }))
    }

    /// Converts `part` (the messages after the kept ones) with the kept
    /// state; `None` when the result could differ from the whole conversion's.
    /// `closed`: the part is to be kept, so it must end with its turns closed.
    fn convert_part(
        &mut self,
        part: Vec<J>,
        target: Provider,
        opts: &ToOptions,
        closed: bool,
    ) -> Result<Option<Part>> {
        check_messages(&part, self.done)?;
        if !self.input_ok(&part, target, opts.model.as_deref()) {
            return Ok(None);
        }
        // The id map is changed in place, noted so that it can be taken back
        // (a part not kept, a request's own part).
        self.ids.begin();
        let r = self.rules_and_encoding(part, target, opts, closed, false);
        if r.is_none() {
            self.ids.rollback();
        }
        Ok(r)
    }

    /// [`RequestCache::convert_part`] of the first part kept (`msgs[..cut]`),
    /// cut in parts converted on [`RequestCache::threads`] threads when the
    /// parts give what converting it whole gives ([`split_parts`]).
    fn convert_split_part<M: Messages + ?Sized + Sync>(
        &mut self,
        part: Vec<J>,
        msgs: &M,
        cut: usize,
        target: Provider,
        opts: &ToOptions,
    ) -> Result<Option<Part>> {
        let part = match split_parts(part, target, opts, self.threads, self.min_per_part, true)? {
            Joined::Done(joint) => {
                let Joint { part, ids, spent } = *joint;
                // Nothing was kept, so the map was empty: the parts' map is it.
                self.ids = ids;
                self.splits += 1;
                free_later(spent);
                return Ok(Some(part));
            }
            Joined::Whole(part) => part,
            // A part converted alone differed: whole, from the messages again.
            Joined::Differs => {
                self.split_differed = Some((target, opts.clone()));
                let mut part = msgs.trees_threads(0, self.threads, self.min_per_part)?;
                part.truncate(cut);
                part
            }
        };
        self.convert_part(part, target, opts, true)
    }

    /// What [`RequestCache::convert_part`] checks of its input before converting it.
    fn input_ok(&mut self, part: &[J], target: Provider, model: Option<&str>) -> bool {
        // Calls and results pair within the part (a result of a kept call
        // would pair across the cut); no system message (it joins the system
        // prompt for some targets, which depends on every part).
        if !alone_ok(part).is_some_and(|a| a.unknown.is_empty()) {
            return false;
        }
        // An id or name the kept part mapped another one to: the whole
        // conversion would have mapped that one elsewhere.
        // (The ids the whole conversion reserves: kept ids outside the
        // target's rule too, and ids an idMap gives back.)
        let nrule = name_rule(target);
        for m in part.iter().filter(|m| role(m) == "assistant") {
            let same = transform::same_origin(m, target, model);
            for b in blocks(m).iter().filter(|b| btype(b) == "toolCall") {
                if transform::kept_key(m, b, target, same, &self.ids)
                    .is_some_and(|k| self.ids.taken_by_other(&k))
                {
                    return false;
                }
                let name = b.str_of("name").unwrap_or_default();
                if nrule.accepts(&name) && self.ids.names().taken_by_other(&name) {
                    return false;
                }
            }
        }
        true
    }

    /// [`RequestCache::convert_part`] after its checks of the input.
    /// `media_steps`: a part whose images need steps is converted (their
    /// steps in [`Part::m_rep`]); else it is not.
    fn rules_and_encoding(
        &mut self,
        part: Vec<J>,
        target: Provider,
        opts: &ToOptions,
        closed: bool,
        media_steps: bool,
    ) -> Option<Part> {
        let mut l_rep = CompatibilityReport::new();
        let mut t_rep = CompatibilityReport::new();
        let out = transform::apply_parts(
            part,
            target,
            opts.model.as_deref(),
            Some(&mut l_rep),
            &mut t_rep,
            true,
            &mut self.ids,
        );
        // A part after the kept ones starts with its assistant turn (were it
        // left out, what follows could join the kept part's last message).
        if self.done > 0 && out.first().is_none_or(|m| role(m) != "assistant") {
            return None;
        }
        // A kept part ends with every call answered and not with an assistant
        // message (the end of a conversation has rules of its own).
        if closed
            && (t_rep.has("calls_pending_at_end")
                || out.last().is_none_or(|m| role(m) == "assistant"))
        {
            return None;
        }
        // What the target refuses (FORMAT.md §15.4, rules 12–15): images are
        // repaired message by message, but their steps come after every
        // message's rules, so a part that needs one is not kept; a model
        // turn first gets a user turn before it: converted whole.
        let mut out = out;
        let mut m_rep = CompatibilityReport::new();
        for (i, m) in out.iter_mut().enumerate() {
            super::refuse::media(m, i, target, &mut m_rep);
        }
        if !m_rep.steps.is_empty() && !media_steps {
            return None;
        }
        if self.transformed == 0
            && matches!(target, Provider::Anthropic | Provider::Google)
            && out
                .iter()
                .find(|m| role(m) != "system")
                .is_some_and(|m| role(m) == "assistant")
        {
            return None;
        }
        let turn = self.turn.scan(&out, self.transformed);
        // Made-up call ids are kept unique across the conversation.
        let mut synthetic = Vec::new();
        for m in out.iter().filter(|m| role(m) == "assistant") {
            for b in blocks(m).iter() {
                if btype(b) == "toolCall" && b.get("syntheticId").is_some() {
                    let id = b.str_of("id").unwrap_or_default().to_string();
                    if self.synthetic.contains(&id) {
                        return None;
                    }
                    synthetic.push(id);
                }
            }
        }
        let mut e_rep = CompatibilityReport::new();
        let encoded = encode::encode_part(
            target,
            &out,
            opts.model.clone(),
            Some(self.sent.clone()),
            &self.calls,
            &mut e_rep,
        )?;
        if closed && encoded.past_end {
            return None;
        }
        Some(Part {
            items: encoded.items,
            written: Vec::new(),
            sent: encoded.sent,
            unsent: encoded.unsent,
            assumed: encoded.assumed,
            calls: encoded.calls,
            turn,
            synthetic,
            transformed: out.len(),
            l_rep,
            t_rep,
            m_rep,
            e_rep,
        })
    }
}

/// A request without its conversation's messages (the system prompt and
/// tools encoded), and what their encoding reported: the parts' provider
/// messages are put in its list.
fn frame(
    target: Provider,
    opts: &ToOptions,
    system: Option<J>,
    tools: Option<Vec<J>>,
) -> (J, CompatibilityReport) {
    let mut rep = CompatibilityReport::new();
    let mut ctx = encode::Ctx::new(opts.model.clone());
    let request = encode::encode_request(
        target,
        &[],
        system.as_ref(),
        opts.system_role.as_deref(),
        opts.system_original.as_ref(),
        tools.as_deref(),
        opts.tools_original.as_ref(),
        &mut rep,
        &mut ctx,
    );
    (request, rep)
}

/// An assistant turn that is sent (an aborted one is left out, and joins
/// what is around it): a part may start there.
fn kept_turn(m: &J) -> bool {
    role(m) == "assistant"
        && !matches!(m.str_of("stopReason").as_deref(), Some("error" | "aborted"))
}

/// `r` with its message indexes moved by `by` (a part's indexes count from its start).
fn shifted(mut r: CompatibilityReport, by: usize) -> CompatibilityReport {
    for s in &mut r.steps {
        if let Some(i) = &mut s.message {
            *i += by;
        }
    }
    r
}

/// A part's rules' report with its indexes moved: input messages by `inputs`,
/// except the one step that counts the rules' output (`outputs` before it).
fn shifted_rules(mut r: CompatibilityReport, inputs: usize, outputs: usize) -> CompatibilityReport {
    for s in &mut r.steps {
        if let Some(i) = &mut s.message {
            *i += if s.code == "trailing_whitespace_trimmed" {
                outputs
            } else {
                inputs
            };
        }
    }
    r
}

/// A part after the first, for [`split_parts`]: where it starts, whether it
/// must end closed (all but the last, unless all are kept), its messages
/// until a thread takes them.
type Later = (usize, bool, std::sync::Mutex<Option<Vec<J>>>);

/// For each of `cuts`, the Responses item ids that the messages before it
/// give their items, read from the messages alone: a call's `call_id|item_id`,
/// a text signature's or a reasoning item's `id`. Neither more nor fewer than
/// the encoder sends need be found: a part that took an id as sent before,
/// which the parts before did not send, or kept one they sent, is found to
/// differ when the parts are joined.
fn responses_item_ids_before(
    msgs: &[J],
    cuts: &[usize],
) -> Vec<(usize, std::sync::Arc<HashSet<String>>)> {
    let mut seen = HashSet::default();
    let mut out = Vec::with_capacity(cuts.len());
    let mut next = 0;
    for (i, m) in msgs.iter().enumerate() {
        while cuts.get(next) == Some(&i) {
            out.push((i, std::sync::Arc::new(seen.clone())));
            next += 1;
        }
        if role(m) != "assistant" {
            continue;
        }
        // Reasoning items are paired with the item after them as the
        // encoder pairs them (an item whose id is dropped takes the
        // reasoning before it out of what is sent).
        let mut pairs: ReasoningPairs<String> = ReasoningPairs::default();
        for b in blocks(m).iter() {
            let Some((kind, id)) = encode::responses_item_of(b) else {
                continue;
            };
            let Some(x) = id else {
                pairs.item_without_id(kind);
                continue;
            };
            let (fate, follows) = pairs.item(kind, seen.contains(&x), || x.clone());
            if fate == Fate::Sent {
                seen.insert(x);
            }
            if let Some(r) = follows {
                seen.remove(&r);
            }
        }
    }
    out
}

/// What [`convert_split`] did.
#[derive(Debug)]
pub enum Split {
    /// The conversion: what [`super::convert`] gives.
    Done(Converted),
    /// Not cut (too few messages, options or input a part cannot be
    /// converted alone with): the messages, untouched.
    Whole(Vec<J>),
    /// A part converted alone differed from what the parts before it give
    /// (an id of one part taken by another, say): the messages are used up,
    /// and the caller converts them again, whole.
    Differs,
}

/// [`super::convert`] on up to `threads` threads. The conversation is cut
/// before assistant turns (where [`RequestCache`] keeps parts, with its
/// checks) into parts of about `len / threads` messages, at least
/// `min_per_part`. The first part is converted here and the others at the
/// same time on threads of their own, each with an id map of its own that
/// notes what it is asked. Then, in order, each part's questions are asked
/// again of the map the parts before it left ([`IdMap::replay`]): a part
/// is taken when every answer is the same, so that the request, report and
/// maps are [`super::convert`]'s.
pub fn convert_split(
    msgs: Vec<J>,
    target: Provider,
    opts: &ToOptions,
    threads: usize,
    min_per_part: usize,
) -> Result<Split> {
    let (part, mut ids, spent) =
        match split_parts(msgs, target, opts, threads, min_per_part, false)? {
            Joined::Done(joint) => {
                let Joint { part, ids, spent } = *joint;
                (part, ids, spent)
            }
            Joined::Whole(msgs) => return Ok(Split::Whole(msgs)),
            Joined::Differs => return Ok(Split::Differs),
        };
    // The system prompt and tools, as [`RequestCache`] does for a request.
    let mut s_rep = CompatibilityReport::new();
    let (system, tools) = prepare(target, opts, &mut ids, &mut s_rep)?;
    let (mut request, r_rep) = frame(target, opts, system, tools);
    match request.get_mut(list_key(target)) {
        Some(J::Arr(list)) => list.extend(part.items),
        _ => return Ok(Split::Differs),
    }
    // In the whole conversion's order: every message's rules, what the target
    // refuses, the system prompt and tools, every message's encoding, the
    // system prompt's and tools' encoding.
    let mut report = part.l_rep;
    for rep in [part.t_rep, part.m_rep, s_rep, part.e_rep, r_rep] {
        report.merge(rep, None);
    }
    let id_map = std::mem::take(&mut ids.changed);
    let name_map = ids.names_changed().to_vec();
    free_later((ids, spent));
    Ok(Split::Done(Converted {
        request,
        report,
        id_map,
        name_map,
    }))
}

/// What [`split_parts`] did.
enum Joined {
    /// The parts converted and joined.
    Done(Box<Joint>),
    /// As [`Split::Whole`].
    Whole(Vec<J>),
    /// As [`Split::Differs`].
    Differs,
}

/// Parts converted and joined: what converting them as one part gives, and
/// the id map after them; `spent`, the parts' own state, to be freed.
struct Joint {
    part: Part,
    ids: IdMap,
    spent: Vec<RequestCache>,
}

/// The messages of [`convert_split`] (or, with `keep`, of a part that
/// [`RequestCache`] keeps: every part ends closed, and a part whose images
/// need steps is not converted) cut in parts, converted on threads and joined.
fn split_parts(
    msgs: Vec<J>,
    target: Provider,
    opts: &ToOptions,
    threads: usize,
    min_per_part: usize,
    keep: bool,
) -> Result<Joined> {
    check_messages(&msgs, 0)?;
    let n = threads.min(msgs.len() / min_per_part.max(1));
    // Ids given back are read from the whole conversation; Anthropic's
    // final-turn rule with thinking on may rewrite a turn in any part.
    if n < 2
        || !opts.pairing
        || !opts.id_map.is_empty()
        || (opts.thinking && target == Provider::Anthropic)
    {
        return Ok(Joined::Whole(msgs));
    }
    let mut cuts = vec![0];
    for k in 1..n {
        let from = (msgs.len() * k / n).max(cuts[cuts.len() - 1] + 1);
        if let Some(at) = (from..msgs.len()).find(|&i| cut_here(&msgs, i)) {
            cuts.push(at);
        }
    }
    cuts.push(msgs.len());
    cuts.dedup();
    if cuts.len() < 3 {
        return Ok(Joined::Whole(msgs));
    }
    // Anthropic and Gemini want a user turn first: one added changes every
    // index after it (converted whole).
    if matches!(target, Provider::Anthropic | Provider::Google)
        && msgs
            .iter()
            .find(|m| role(m) != "system")
            .is_some_and(|m| role(m) == "assistant")
    {
        return Ok(Joined::Whole(msgs));
    }
    // What can be told from the input alone, on the threads: every part
    // passes the checks of a kept part, and no made-up call id is in two
    // parts (the whole conversion would rename the later one).
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let (first, later) = crate::threads::on_threads(
        "forkpoint-check",
        &ranges[1..],
        || alone_ok(&msgs[ranges[0].0..ranges[0].1]),
        |&(a, b)| alone_ok(&msgs[a..b]),
    );
    let mut parts = Vec::with_capacity(ranges.len());
    for (k, alone) in std::iter::once(Some(first)).chain(later).enumerate() {
        let alone = match alone {
            Some(alone) => alone,
            None => alone_ok(&msgs[ranges[k].0..ranges[k].1]),
        };
        let Some(alone) = alone else {
            return Ok(Joined::Whole(msgs));
        };
        parts.push(alone);
    }
    let mut made_up: HashSet<&str> = HashSet::default();
    for (k, part) in parts.iter().enumerate() {
        if part.made_up.iter().any(|id| made_up.contains(id.as_str())) {
            return Ok(Joined::Whole(msgs));
        }
        made_up.extend(part.made_up.iter().map(String::as_str));
        // A result that answers no call of its part answers none of another.
        let elsewhere = |id: &str| {
            parts
                .iter()
                .enumerate()
                .any(|(j, other)| j != k && other.answers(id))
        };
        // A kept part has none (RequestCache::input_ok).
        if (keep && !part.unknown.is_empty()) || part.unknown.iter().any(|id| elsewhere(id)) {
            return Ok(Joined::Whole(msgs));
        }
    }
    drop(made_up);
    drop(parts);
    // Responses item ids the parts before each later part hold, as far as
    // the messages tell (the join checks what each part took from them).
    let item_ids_before = if target == Provider::Responses {
        responses_item_ids_before(&msgs, &cuts[1..cuts.len() - 1])
    } else {
        Vec::new()
    };
    // The parts after the first, each with where it starts and whether it
    // must end closed (all but the last, unless all are kept).
    let mut first = msgs;
    let mut later: Vec<Later> = Vec::new();
    for k in (1..cuts.len() - 1).rev() {
        let part = first.split_off(cuts[k]);
        later.push((
            cuts[k],
            keep || k + 2 < cuts.len(),
            std::sync::Mutex::new(Some(part)),
        ));
    }
    later.reverse();
    // A later part, converted alone with an id map of its own that notes
    // what it is asked (on its thread, or here when none could be had).
    let convert_later = |(start, closed, trees): &Later| {
        let trees = trees.lock().ok()?.take()?;
        let mut cache = RequestCache {
            done: *start,
            // Not the first part (its index offsets are not needed here).
            transformed: 1,
            ..Default::default()
        };
        if let Some((_, ids)) = item_ids_before.iter().find(|(at, _)| at == start) {
            cache.sent = ids.clone();
        }
        cache.ids.record();
        let mut part = cache.rules_and_encoding(trees, target, opts, *closed, !keep);
        if let Some(p) = part.as_mut().filter(|_| keep) {
            p.write_items(false);
        }
        let asked = cache.ids.take_record();
        // Freed later, not while the caller waits.
        Some((part, asked, cache))
    };
    let (mine, theirs) = crate::threads::on_threads(
        "forkpoint-convert",
        &later,
        || {
            let mut cache = RequestCache::new();
            let mut part = cache.rules_and_encoding(first, target, opts, true, !keep);
            if let Some(p) = part.as_mut().filter(|_| keep) {
                p.write_items(true);
            }
            (part, cache)
        },
        convert_later,
    );
    let (Some(first), mut cache) = mine else {
        return Ok(Joined::Differs);
    };
    let (mut items, mut written) = (first.items, first.written);
    let (mut l_rep, mut t_rep, mut m_rep, mut e_rep) =
        (first.l_rep, first.t_rep, first.m_rep, first.e_rep);
    let mut turn = first.turn;
    cache.transformed = first.transformed;
    cache.synthetic.extend(first.synthetic);
    cache.sent = std::sync::Arc::new(first.sent);
    first.calls.apply_to(&mut cache.calls);
    let mut later_caches = Vec::new();
    for (item, theirs) in later.iter().zip(theirs) {
        cache.done = item.0;
        // A part whose thread did not run is converted here, the same way.
        let Some((part, (ids, names), spent)) = theirs.flatten().or_else(|| convert_later(item))
        else {
            return Ok(Joined::Differs);
        };
        later_caches.push(spent);
        if cache.ids.replay(ids).is_none() {
            return Ok(Joined::Differs);
        }
        // A tool name mapped in an earlier part is reported there only.
        let Some(seen_before) = cache.ids.names().replay(names) else {
            return Ok(Joined::Differs);
        };
        let mut part = part;
        if let Some(p) = &mut part {
            for (name, mapped) in seen_before {
                let detail = transform::name_mapped(&name, &mapped, target);
                let Some(at) = p
                    .t_rep
                    .steps
                    .iter()
                    .position(|s| s.code == "tool_name_mapped" && s.detail == detail)
                else {
                    return Ok(Joined::Differs);
                };
                p.t_rep.steps.remove(at);
            }
        }
        let Some(part) = part else {
            return Ok(Joined::Differs);
        };
        if part.synthetic.iter().any(|id| cache.synthetic.contains(id))
            || part.unsent.iter().any(|id| cache.sent.contains(id))
            || part.assumed.iter().any(|id| !cache.sent.contains(id))
            || part.calls.differs_after(&cache.calls)
        {
            return Ok(Joined::Differs);
        }
        turn = part.turn;
        items.extend(part.items);
        written.extend(part.written);
        l_rep.merge(shifted(part.l_rep, cache.done), None);
        t_rep.merge(
            shifted_rules(part.t_rep, cache.done, cache.transformed),
            None,
        );
        m_rep.merge(shifted(part.m_rep, cache.transformed), None);
        e_rep.merge(shifted(part.e_rep, cache.transformed), None);
        cache.transformed += part.transformed;
        cache.synthetic.extend(part.synthetic);
        std::sync::Arc::make_mut(&mut cache.sent).extend(part.sent);
        part.calls.apply_to(&mut cache.calls);
    }
    let ids = std::mem::replace(&mut cache.ids, IdMap::new());
    // `turn` is the last part's scan alone, not the whole one's: a
    // [`TurnScan`] is read only for Anthropic with thinking on, which is
    // never cut.
    let part = Part {
        items,
        written,
        turn,
        synthetic: cache.synthetic.drain().collect(),
        transformed: cache.transformed,
        l_rep,
        t_rep,
        m_rep,
        e_rep,
        sent: std::mem::take(std::sync::Arc::make_mut(&mut cache.sent)),
        unsent: Vec::new(),
        assumed: Vec::new(),
        calls: encode::PartCalls::whole(std::mem::take(&mut cache.calls)),
    };
    later_caches.push(cache);
    Ok(Joined::Done(Box::new(Joint {
        part,
        ids,
        spent: later_caches,
    })))
}

/// What [`alone_ok`] found in a part.
struct Alone<'a> {
    /// Its made-up call ids.
    made_up: Vec<String>,
    /// Its call ids as results may name them (borrowed from the trees, or,
    /// with escapes, owned).
    calls: HashSet<&'a str>,
    owned: HashSet<String>,
    /// Its results that answer none of its calls.
    unknown: Vec<String>,
}

impl Alone<'_> {
    /// Whether a result with this id answers a call of the part.
    fn answers(&self, id: &str) -> bool {
        let known = |id: &str| self.calls.contains(id) || self.owned.contains(id);
        known(id) || id.split_once('|').is_some_and(|(c, _)| known(c))
    }
}

/// Whether `part` may be converted alone, as the first part or after others
/// (as [`RequestCache::input_ok`] with nothing kept, but a result that
/// answers no call of its part is left to the caller: the whole conversion
/// finds no call for it either unless another part has one), and what it
/// holds; `None` when it has a system message (which may join the system
/// prompt, made of every part).
fn alone_ok(part: &[J]) -> Option<Alone<'_>> {
    let mut a = Alone {
        made_up: Vec::new(),
        calls: HashSet::default(),
        owned: HashSet::default(),
        unknown: Vec::new(),
    };
    for m in part {
        match role(m).as_ref() {
            "system" => return None,
            "assistant" => {
                let Some(J::Arr(list)) = m.get("content") else {
                    continue;
                };
                let mut responses = None;
                for b in list.iter().filter(|b| btype(b) == "toolCall") {
                    let id = b.str_of("id").unwrap_or_default();
                    if b.get("syntheticId").is_some() {
                        a.made_up.push(id.to_string());
                    }
                    // What `call_key` gives, and the part before a `|`.
                    let responses =
                        *responses.get_or_insert_with(|| origin(m) == Some(Provider::Responses));
                    match id {
                        std::borrow::Cow::Borrowed(id) => {
                            a.calls.insert(id);
                            if responses {
                                a.calls.insert(super::transform::responses_key(id));
                            }
                            if let Some((c, _)) = id.split_once('|') {
                                a.calls.insert(c);
                            }
                        }
                        std::borrow::Cow::Owned(id) => {
                            if responses {
                                a.owned
                                    .insert(super::transform::responses_key(&id).to_string());
                            }
                            if let Some((c, _)) = id.split_once('|') {
                                a.owned.insert(c.to_string());
                            }
                            a.owned.insert(id);
                        }
                    }
                }
            }
            "toolResult" => {
                let id = m.str_of("toolCallId").unwrap_or_default();
                // Also a result paired by name: were its id a call of another
                // part (a turn left out, say), the whole conversion would say so.
                if !a.answers(&id) {
                    a.unknown.push(id.to_string());
                }
            }
            _ => {}
        }
    }
    Some(a)
}

/// Whether a part may start at `msgs[i]`: a sent assistant turn after a
/// message that is not one, where every call of the turn before has its
/// result (a part that ends with calls waiting is not kept).
fn cut_here(msgs: &[J], i: usize) -> bool {
    if i == 0 || !kept_turn(&msgs[i]) || role(&msgs[i - 1]) == "assistant" {
        return false;
    }
    let Some(turn) = msgs[..i].iter().rposition(|m| role(m) == "assistant") else {
        return true;
    };
    if !kept_turn(&msgs[turn]) {
        return false;
    }
    let results: HashSet<String> = msgs[turn + 1..i]
        .iter()
        .filter(|m| role(m) == "toolResult")
        .map(|m| m.str_of("toolCallId").unwrap_or_default().to_string())
        .collect();
    blocks(&msgs[turn])
        .iter()
        .filter(|b| btype(b) == "toolCall")
        .all(|b| results.contains(b.str_of("id").unwrap_or_default().as_ref()))
}

/// `(target, original)` pairs of an id or name map.
type IdPairs = Vec<(String, String)>;

/// A conversation that grows message by message, and its request for one
/// target (`RequestBuilder` in the bindings): each [`RequestBuilder::build`]
/// converts only the messages after the kept part.
#[derive(Debug)]
pub struct RequestBuilder {
    target: Provider,
    opts: ToOptions,
    /// The conversation's messages as parsed when pushed (they share the
    /// pushed text).
    messages: Vec<J>,
    cache: RequestCache,
    /// The last build's maps (its report is asked of the cache when wanted).
    maps: Option<Arc<(IdPairs, IdPairs)>>,
}

/// A build's `{report, idMap, nameMap}`, made when read ([`BuildMeta::json`]):
/// it stays that build's after later ones.
#[derive(Clone, Debug)]
pub struct BuildMeta {
    report: FullReport,
    maps: Arc<(IdPairs, IdPairs)>,
}

impl BuildMeta {
    /// `{report, idMap, nameMap}` (JSON; the whole report).
    pub fn json(&self) -> Result<String> {
        let rep = serde_json::to_string(&self.report.report())
            .map_err(|e| crate::Error::internal(e.to_string()))?;
        let (ids, names) = &*self.maps;
        Ok(format!(
            "{{\"report\":{rep},\"idMap\":{},\"nameMap\":{}}}",
            super::id_map_json(ids).text(),
            super::id_map_json(names).text()
        ))
    }
}

impl RequestBuilder {
    /// `options` as `toProvider` takes them (JSON text).
    pub fn new(target: &str, options: Option<&str>) -> Result<Self> {
        let mut cache = RequestCache::new();
        cache.lean = true;
        Ok(RequestBuilder {
            target: Provider::parse(target)?,
            opts: ToOptions::from_json(options)?,
            messages: Vec::new(),
            cache,
            maps: None,
        })
    }

    /// Appends canonical messages: a JSON array of them, or one message.
    /// Returns how many the conversation holds.
    /// The messages point into `text`; a long array is parsed on up to
    /// `threads` threads.
    pub fn push_text(&mut self, text: String, threads: usize) -> Result<usize> {
        let added = match J::parse_owned_threads(text, threads)
            .map_err(|e| super::not_json("the messages", e))?
        {
            J::Arr(a) => a,
            one => vec![one],
        };
        check_messages(&added, self.messages.len())?;
        self.messages.extend(added);
        Ok(self.messages.len())
    }

    /// Messages in the conversation.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Messages whose conversion is kept from the last build.
    pub fn kept(&self) -> usize {
        self.cache.kept()
    }

    /// The request body for the whole conversation (what `toProvider` gives
    /// for it); [`RequestBuilder::meta`] then has its report and maps.
    pub fn build(&mut self) -> Result<Body> {
        let c = self
            .cache
            .convert(self.messages.as_slice(), self.target, &self.opts)?;
        let body = self.cache.write(&c.request, self.target);
        self.maps = Some(Arc::new((c.id_map, c.name_map)));
        Ok(body)
    }

    /// The last build's `{report, idMap, nameMap}`, to be made when read.
    pub fn meta(&self) -> Result<BuildMeta> {
        match (&self.maps, self.cache.last_report()) {
            (Some(maps), Some(report)) => Ok(BuildMeta {
                report,
                maps: maps.clone(),
            }),
            _ => Err(crate::Error::invalid_input("nothing was built yet")),
        }
    }
}
