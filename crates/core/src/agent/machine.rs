//! The agent loop as a state machine without I/O (FORMAT.md §15).
//!
//! The driver feeds [`Input`]s and carries out the [`Command`]s it gets back:
//! persist this batch (and wait for it), call the model with this request, run
//! this tool with this input, stop what runs. Every decision is made here —
//! breakpoints and their order, approvals, completing the model's answer and
//! minting call ids, what happens to a result that cannot be stored, delivery of
//! queued messages, sealing, overrides — so Node and the browser cannot diverge.
//!
//! A state is durable before the side effect it announces: a `Persist` always
//! comes before the `CallModel` or `RunTool` it precedes, and the driver runs
//! commands in order.

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::meta::{AgentMeta, MetaChanges};
use super::{
    AgentCore, Breakpoint, PathCounts, SealedCall, TailMarks, ToolCallRecord, ToolCallState,
};
use crate::events::{Bookmark, build_event_line};
use crate::storage::{EventLine, WriteBatch};
use crate::writer::{IdRng, WriterCore};
use crate::{Error, ErrorCode, LoadOptions, Result, Session, time};

pub use crate::agent_events::{AgentState, ResumeStrategy};

mod stream;

/// A tool the driver can run: what the model sees, and whether it always asks.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub input_schema: Value,
    /// Always ask for a decision before running it.
    #[serde(default)]
    pub requires_approval: bool,
}

/// What a tool run ended with.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ToolOutcome {
    /// The tool returned this value (its JSON text: a value deeper than the
    /// session takes fails the call instead of the input).
    Value { value: String },
    /// The tool threw; the message of its error.
    Error { message: String },
    /// The tool returned something JSON cannot hold (a cycle, a BigInt): why.
    NotJson { message: String },
}

/// What a streamed piece of the model's answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum DeltaKind {
    Text,
    Thinking,
}

/// A piece of the model's answer as it streams: text or thinking of content
/// block `index` (the index it will have in the answer).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelDelta {
    pub index: usize,
    pub kind: DeltaKind,
    pub text: String,
}

/// Most content blocks a streamed answer may have.
const MAX_STREAMED_BLOCKS: usize = 4096;

/// An input to the machine (in JSON, `kind` names the variant in camelCase).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Input {
    /// Continue work: deliver queued messages, redo an interrupted model call,
    /// drive open calls.
    Run,
    /// A user message (a string, or content blocks). Delivered now, or queued while busy.
    Send { content: Value },
    /// The model's answer to call `ticket` (an assistant message; missing
    /// fields are filled).
    ModelReply { ticket: u64, reply: Value },
    /// Pieces of model call `ticket`'s answer as they stream, in order: each
    /// becomes a `text_chunk` / `think_chunk` event, durable with this input.
    ModelDeltas {
        ticket: u64,
        deltas: Vec<ModelDelta>,
    },
    /// The model call `ticket` failed (`code`: the error's stable code, if any).
    ModelError {
        ticket: u64,
        message: String,
        #[serde(default)]
        code: Option<String>,
    },
    /// The driver streams call `ticket` from the provider's own bytes: the
    /// answer is the request to send (`{path, headers, body}`); the bytes
    /// follow with `stream_bytes`, then `ModelStreamEnd`. Sent again for the
    /// same ticket, it starts over (a retry: only before anything streamed).
    ModelStream {
        ticket: u64,
        /// The wire format: `anthropic`, `openai`, `openai-responses`, `google`.
        api: String,
        /// The provider named in the answer (`anthropic`, `openai`, `openrouter`, …).
        #[serde(default)]
        provider: Option<String>,
        model: String,
        /// `{maxTokens?, temperature?, thinking?}`.
        #[serde(default)]
        options: Value,
        /// Prices per million tokens `{input, output, cacheRead?, cacheWrite?}`
        /// (default: the core's table for the model).
        #[serde(default)]
        pricing: Option<Value>,
        /// Texts that must never be recorded (the API key, secret headers):
        /// removed from the stream's error messages. Kept in memory only.
        #[serde(default)]
        secrets: Vec<String>,
    },
    /// The stream of call `ticket` ended: its body was read to the end, or
    /// reading it failed with `error` (a broken connection, a timeout).
    ModelStreamEnd {
        ticket: u64,
        #[serde(default)]
        error: Option<String>,
    },
    /// Tool call `ticket` ended.
    ToolDone { ticket: u64, outcome: ToolOutcome },
    /// A tool's own event (`ctx.emit`) during call `call_id`.
    ToolEvent {
        call_id: String,
        event_type: String,
        #[serde(default)]
        data: Option<Value>,
    },
    /// A decision for a call waiting for one.
    Decide {
        call_id: String,
        allow: bool,
        #[serde(default)]
        note: Option<String>,
    },
    /// Stop the model call and running tools; seal every open call with `note`.
    Interrupt {
        #[serde(default)]
        note: Option<String>,
    },
    /// Replace the todo list (an array).
    SetTodos { todos: Value },
    /// Name the last safe-fork-point.
    Snapshot {
        #[serde(default)]
        label: Option<String>,
    },
    /// Create a workflow checkpoint (`checkpoints.create`'s argument).
    Checkpoint { args: Value },
}

impl Input {
    /// Reads an input as a driver sends it (JSON). Text JavaScript made may
    /// hold lone surrogates (`"\ud83d"`), which JSON parsers refuse: each
    /// becomes U+FFFD, so a tool's or a model's odd text still reaches the
    /// machine. Nesting is checked as the session writer takes it (512).
    pub fn from_json(text: &str) -> Result<Input> {
        let text = well_formed(text);
        super::parse_json(&text, "agent input").map_err(|e| Error::invalid_input(e.message))
    }
}

/// `text` with every `\uXXXX` escape of a lone surrogate replaced by `\ufffd`.
fn well_formed(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    let hex = |i: usize| -> Option<u16> {
        let h = text.get(i..i + 4)?;
        u16::from_str_radix(h, 16).ok()
    };
    let unit_at = |i: usize| -> Option<u16> {
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u'))
            .then(|| hex(i + 2))
            .flatten()
    };
    let mut out: Option<String> = None;
    let (mut i, mut copied, mut in_string) = (0, 0, false);
    while i < b.len() {
        match b[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                if let Some(u) = unit_at(i) {
                    let lone = match u {
                        0xD800..=0xDBFF => {
                            !unit_at(i + 6).is_some_and(|l| (0xDC00..=0xDFFF).contains(&l))
                        }
                        0xDC00..=0xDFFF => true,
                        _ => false,
                    };
                    if lone {
                        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                        o.push_str(&text[copied..i]);
                        o.push_str("\\ufffd");
                        copied = i + 6;
                    } else if (0xD800..=0xDBFF).contains(&u) {
                        i += 12; // the pair
                        continue;
                    }
                    i += 6;
                    continue;
                }
                i += 2; // any other escape
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    match out {
        Some(mut o) => {
            o.push_str(&text[copied..]);
            std::borrow::Cow::Owned(o)
        }
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// A request to the model.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// How many messages of the context the call sees (the first `message_count`:
    /// read them with [`AgentMachine::messages_json`] or `Query::Messages`;
    /// the context only grows while a call runs, so they stay the same).
    pub message_count: usize,
    /// The tools the model may call (JSON text of an array of `{name, description, inputSchema}`).
    pub tools: String,
}

/// What the driver must do, in order.
#[derive(Debug, Clone)]
pub enum Command {
    /// Write this batch and wait until it is durable, before the next command.
    Persist(WriteBatch),
    /// Call the model; answer with `ModelReply` or `ModelError` carrying `ticket`.
    CallModel { ticket: u64, request: ModelRequest },
    /// Run a tool; answer with `ToolDone` carrying `ticket`.
    RunTool {
        ticket: u64,
        call_id: String,
        name: String,
        /// The stored input (JSON).
        input: String,
    },
    /// Stop the running model call and tools (their answers will be ignored).
    Abort,
}

/// What an input answered besides commands.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// A value for the caller (JSON): the queue id of `Send`, the snapshot id, the checkpoint, …
    pub value: Option<String>,
    /// The bookmark of `ToolEvent`'s event.
    pub bookmark: Option<Bookmark>,
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Idle,
    Model {
        ticket: u64,
        step: u64,
    },
    Tool {
        ticket: u64,
        call_id: String,
        started: f64,
    },
}

/// The agent's state and decisions.
#[derive(Debug)]
pub struct AgentMachine {
    meta: AgentMeta,
    writer: WriterCore,
    core: AgentCore,
    /// The context at the leaf: one JSON text per message.
    messages: Vec<Box<RawValue>>,
    bp: Breakpoint,
    state: AgentState,
    pending: Vec<String>,
    phase: Phase,
    tools: Vec<ToolSpec>,
    rng: IdRng,
    next_ticket: u64,
    /// The last event's seq (0: none yet).
    seq: u64,
    last_event: Option<Bookmark>,
    last_done: Option<Bookmark>,
    session_len: u64,
    /// What the next `Persist` writes.
    events: Vec<EventLine>,
    meta_dirty: bool,
    out: Vec<Command>,
    /// The current input's time (ms since the epoch).
    now: f64,
    /// The model's error, for the caller waiting on `idle()`.
    failure: Option<String>,
    closed: bool,
    /// Whether the whole session is loaded (false after a resume from the tail:
    /// only resume and some queries are answered until `load_whole`).
    whole: bool,
    /// Where a resume from the tail starts (`None` before the first safe-fork-point).
    marks: Option<TailMarks>,
    /// The marks of the last resume state written.
    marks_written: Option<TailMarks>,
    /// The content blocks the running model call streamed so far (by index).
    streamed: Vec<Option<Streamed>>,
    /// The running call's stream decoder, when the driver streams the
    /// provider's own bytes (`ModelStream`).
    wire: Option<stream::Wire>,
    /// How many messages of the context the running model call sees.
    call_context: usize,
    /// The wire formats and models a `request_converted` was emitted for.
    converted_for: Vec<(String, String)>,
    /// The conversion of the context's first messages for the last model
    /// call: the next call converts only what came after (cleared where the
    /// messages are replaced rather than appended to).
    request_cache: crate::normalize::incremental::RequestCache,
    /// The body of the request `ModelStream` answered, until the driver takes it.
    request_body: Option<crate::normalize::incremental::Body>,
    /// What had streamed when the process died mid-call (read from the log's
    /// tail at open): reported by the resume as `model_partial`.
    crashed_partial: Option<Value>,
    /// The usage totals (`None`: resumed from the tail with a resume state
    /// that has none, or not current: known once the whole session is).
    usage: Option<UsageTotals>,
    /// The usage totals of the last resume state written.
    usage_written: Option<UsageTotals>,
}

/// A content block of the answer being streamed.
#[derive(Debug, Clone, PartialEq)]
struct Streamed {
    kind: BlockKind,
    /// Its text so far (the input's JSON text for a tool call).
    text: String,
    /// A tool call's tool.
    name: String,
}

impl Streamed {
    /// The `content` of a `model_partial`: the blocks as they stand (`None` when there are none).
    fn content<'a>(blocks: impl Iterator<Item = &'a Streamed>) -> Option<Value> {
        let blocks: Vec<Value> = blocks
            .map(|b| match b.kind {
                BlockKind::Text => json!({ "type": "text", "text": b.text }),
                BlockKind::Thinking => json!({ "type": "thinking", "thinking": b.text }),
                BlockKind::ToolCall => {
                    json!({ "type": "toolCall", "name": b.name, "partialInput": b.text })
                }
            })
            .collect();
        (!blocks.is_empty()).then_some(Value::Array(blocks))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

/// The agent's resume state (FORMAT.md §14.2): a cache in the store, written
/// as the marks change, checked when read.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeState {
    /// Format version ([`ResumeState::VERSION`]; another is not read).
    pub v: u32,
    /// The session's length when it was written.
    pub session_len: u64,
    pub marks: TailMarks,
    /// The usage totals when it was written (absent in states written before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageTotals>,
}

impl ResumeState {
    /// The version written and read (2: with the checkpoint lines).
    pub const VERSION: u32 = 2;
}

/// The usage of the context's assistant messages, summed (`info().usage`):
/// kept as answers are stored, and in the resume state, so that an agent
/// resumed from the tail answers it without reading its history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    pub calls: u64,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub reasoning: f64,
    pub total_tokens: f64,
    pub cost: f64,
}

impl UsageTotals {
    /// Adds one message (JSON text): an assistant message counts as a call,
    /// with its `usage`; any other message adds nothing.
    fn add(&mut self, message: &str) {
        #[derive(serde::Deserialize)]
        struct Msg {
            #[serde(default)]
            role: String,
            #[serde(default)]
            usage: Option<Value>,
        }
        let Ok(m) = serde_json::from_str::<Msg>(message) else {
            return;
        };
        if m.role != "assistant" {
            return;
        }
        self.calls += 1;
        let Some(u) = m.usage else { return };
        let n = |k: &str| u[k].as_f64().unwrap_or(0.0);
        self.input += n("input");
        self.output += n("output");
        self.cache_read += n("cacheRead");
        self.cache_write += n("cacheWrite");
        self.reasoning += n("reasoning");
        self.total_tokens += n("totalTokens");
        self.cost += u["cost"]["total"].as_f64().unwrap_or(0.0);
    }

    fn of(messages: &[Box<RawValue>]) -> UsageTotals {
        let mut t = UsageTotals::default();
        for m in messages {
            t.add(m.get());
        }
        t
    }
}

/// The lines before a session's tail that its resume state points to, as
/// read (for [`AgentMachine::from_tail`]).
#[derive(Debug, Default)]
pub struct PriorLines {
    /// The last todo list entry.
    pub todos: Option<String>,
    /// The queued messages not yet delivered: (queue id, the entry's data).
    pub queued: Vec<(String, Value)>,
    /// Every checkpoint entry, oldest first.
    pub checkpoints: Vec<String>,
}

/// What opening an agent found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Opened {
    /// The breakpoint the agent was at (where a crash stopped it).
    pub breakpoint: Breakpoint,
    /// Calls sealed by a crash resume.
    pub sealed: Vec<SealedCall>,
}

fn raw(v: &Value) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(v).map_err(|e| Error::internal(format!("message: {e}")))
}

/// `value` as the model sees a tool's result: a string as it is, anything else as JSON.
fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// JS's `s.length > 200 ? s.slice(0, 200) + '…' : s`, in UTF-16 units.
fn preview(s: &str) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    if units.len() <= 200 {
        return s.to_string();
    }
    let mut cut = String::from_utf16_lossy(&units[..200]);
    cut.push('…');
    cut
}

impl AgentMachine {
    /// The machine of an agent whose session is `session` (loaded whole),
    /// `session_len` bytes long, whose last event is `last_event` and which was
    /// at breakpoint `bp`. `seed` seeds the id generator.
    pub fn new(
        meta: AgentMeta,
        session: Session,
        session_len: u64,
        last_event: Option<Bookmark>,
        bp: Breakpoint,
        tools: Vec<ToolSpec>,
        seed: u64,
    ) -> Result<AgentMachine> {
        let core = AgentCore::from_session(&session)?;
        let messages = Self::context_of(&session)?;
        let marks = core.tail_marks(&session, 0, PathCounts::default(), None);
        let writer = WriterCore::from_session(session, session_len, seed, &LoadOptions::default())?;
        let mut m = Self::new_parts(
            meta,
            writer,
            core,
            messages,
            session_len,
            last_event,
            bp,
            tools,
            seed,
        );
        m.marks_written = marks.clone();
        m.marks = marks;
        m.usage = Some(UsageTotals::of(&m.messages));
        Ok(m)
    }

    /// The machine of an agent resumed from the tail of its session: `tail` is
    /// the session's header followed by its lines from `state.marks.sfp_offset`
    /// (`header_len` bytes of header); `prior` are the lines before the tail
    /// that the marks point to. Only resume and the queries that need no
    /// history work until [`load_whole`](Self::load_whole).
    #[allow(clippy::too_many_arguments)]
    pub fn from_tail(
        meta: AgentMeta,
        tail: Session,
        header_len: u64,
        state: &ResumeState,
        session_len: u64,
        last_event: Option<Bookmark>,
        bp: Breakpoint,
        tools: Vec<ToolSpec>,
        seed: u64,
        prior_lines: PriorLines,
    ) -> Result<AgentMachine> {
        let from = state.marks.sfp_offset;
        let mut core = AgentCore::from_session(&tail)?;
        let prior = TailMarks {
            todos: state.marks.todos.filter(|t| t.0 < from),
            queued: state
                .marks
                .queued
                .iter()
                .filter(|q| q.1 < from)
                .cloned()
                .collect(),
            checkpoints: state
                .marks
                .checkpoints
                .iter()
                .filter(|c| c.0 < from)
                .copied()
                .collect(),
            ..TailMarks::default()
        };
        let shift = from
            .checked_sub(header_len)
            .ok_or_else(|| Error::internal("a tail before the header"))?;
        let marks = core.tail_marks(&tail, shift, state.marks.before, Some(&prior));
        core.rebase(
            state.marks.before,
            prior_lines.todos.as_deref(),
            prior_lines.queued,
            &prior_lines.checkpoints,
        )?;
        let mut writer =
            WriterCore::from_session(tail, session_len, seed, &LoadOptions::default())?;
        writer.set_tail_only();
        let mut m = Self::new_parts(
            meta,
            writer,
            core,
            Vec::new(),
            session_len,
            last_event,
            bp,
            tools,
            seed,
        );
        m.whole = false;
        m.marks_written = Some(state.marks.clone());
        m.marks = marks;
        // The totals hold if they count every answer on the path (none was
        // stored after the state was written).
        m.usage = state
            .usage
            .filter(|u| u.calls == m.core.assistant_messages());
        m.usage_written = state.usage;
        Ok(m)
    }

    #[allow(clippy::too_many_arguments)]
    fn new_parts(
        meta: AgentMeta,
        writer: WriterCore,
        core: AgentCore,
        messages: Vec<Box<RawValue>>,
        session_len: u64,
        last_event: Option<Bookmark>,
        bp: Breakpoint,
        tools: Vec<ToolSpec>,
        seed: u64,
    ) -> AgentMachine {
        AgentMachine {
            meta,
            writer,
            core,
            messages,
            bp,
            state: AgentState::Ready,
            pending: Vec::new(),
            phase: Phase::Idle,
            tools,
            rng: IdRng::new(seed ^ 0x5DEE_CE66_D1CE_4E5B),
            next_ticket: 1,
            seq: last_event.map_or(0, |b| b.seq),
            last_event,
            last_done: None,
            session_len,
            events: Vec::new(),
            meta_dirty: false,
            out: Vec::new(),
            now: 0.0,
            failure: None,
            closed: false,
            whole: true,
            marks: None,
            marks_written: None,
            streamed: Vec::new(),
            wire: None,
            call_context: 0,
            converted_for: Vec::new(),
            // The report is read at the first call for a target (always a
            // whole conversion): later calls need not gather it again.
            request_cache: {
                let mut c = crate::normalize::incremental::RequestCache::new();
                c.lean = true;
                c
            },
            request_body: None,
            crashed_partial: None,
            usage: None,
            usage_written: None,
        }
    }

    /// The body of the request the last `ModelStream` answered (its
    /// `bodyLength` bytes), once: the driver sends its parts in order.
    pub fn take_request_body(&mut self) -> Option<crate::normalize::incremental::Body> {
        self.request_body.take()
    }

    /// Whether the whole session is loaded.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// The store's resume state could not be used (missing, stale, of another
    /// version): the next write stores a fresh one.
    pub fn forget_stored_state(&mut self) {
        self.marks_written = None;
    }

    /// Loads the whole session (`session`, as the store has it now) into a
    /// machine resumed from the tail; what it decided since is kept.
    pub fn load_whole(&mut self, session: Session) -> Result<()> {
        if self.whole {
            return Ok(());
        }
        let core = AgentCore::from_session(&session)?;
        let messages = Self::context_of(&session)?;
        let marks = core.tail_marks(&session, 0, PathCounts::default(), None);
        let seed = self.rng.next_u64();
        self.writer =
            WriterCore::from_session(session, self.session_len, seed, &LoadOptions::default())?;
        self.core = core;
        self.usage = Some(UsageTotals::of(&messages));
        self.messages = messages;
        self.request_cache.clear();
        self.marks = marks;
        self.whole = true;
        Ok(())
    }

    fn context_of(session: &Session) -> Result<Vec<Box<RawValue>>> {
        #[derive(serde::Deserialize)]
        struct Ctx {
            messages: Vec<Box<RawValue>>,
        }
        let text = session.context_json(None, false)?;
        let c: Ctx = super::parse_json(&text, "context")?;
        Ok(c.messages)
    }

    // -- queries --------------------------------------------------------------

    /// The agent's meta.
    pub fn meta(&self) -> &AgentMeta {
        &self.meta
    }

    /// The current breakpoint.
    pub fn breakpoint(&self) -> Breakpoint {
        self.bp
    }

    /// Ready, working or paused.
    pub fn state(&self) -> AgentState {
        self.state
    }

    /// Calls waiting for a decision.
    pub fn pending(&self) -> &[String] {
        &self.pending
    }

    /// Whether a model call or a tool runs.
    pub fn is_running(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// The last event's bookmark.
    pub fn last_event(&self) -> Option<Bookmark> {
        self.last_event
    }

    /// The bookmark of the last `done` event this machine emitted.
    pub fn last_done(&self) -> Option<Bookmark> {
        self.last_done
    }

    /// The session's length (what is durable plus what the next persist writes).
    pub fn session_len(&self) -> u64 {
        self.session_len
    }

    /// The model's error since the last call, taken.
    pub fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }

    /// The context's messages (JSON array text).
    pub fn messages_json(&self, up_to: Option<usize>) -> String {
        let n = up_to.map_or(self.messages.len(), |n| n.min(self.messages.len()));
        let messages = &self.messages[..n];
        let mut s = String::with_capacity(
            self.messages
                .iter()
                .map(|m| m.get().len() + 1)
                .sum::<usize>()
                + 2,
        );
        s.push('[');
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(m.get());
        }
        s.push(']');
        s
    }

    /// The agent's state over its session (records, snapshots, checkpoints, todos).
    pub fn core(&mut self) -> &mut AgentCore {
        &mut self.core
    }

    /// The tools the driver can run.
    pub fn set_tools(&mut self, tools: Vec<ToolSpec>) {
        self.tools = tools;
    }

    /// Text of the last assistant message of the context.
    pub fn last_text(&self) -> String {
        #[derive(serde::Deserialize)]
        struct M<'a> {
            role: &'a str,
            #[serde(default)]
            content: Value,
        }
        for m in self.messages.iter().rev() {
            if let Ok(m) = super::parse_checked::<M<'_>>(m.get(), "message")
                && m.role == "assistant"
            {
                return m
                    .content
                    .as_array()
                    .map(|bs| {
                        bs.iter()
                            .filter(|b| b["type"] == "text")
                            .filter_map(|b| b["text"].as_str())
                            .collect::<String>()
                    })
                    .unwrap_or_default();
            }
        }
        String::new()
    }

    /// A tool call as events show it.
    pub fn call_snapshot(&mut self, id: &str) -> Result<Value> {
        let Some(r) = self.core.record(id)? else {
            return Ok(json!({ "id": id }));
        };
        Ok(snapshot_of(r))
    }

    // -- the loop -------------------------------------------------------------

    /// Takes an input at time `now` (ms since the epoch); returns the commands
    /// to carry out, in order. An error changes nothing durable that was not
    /// already in a returned `Persist`.
    pub fn handle(&mut self, input: Input, now: f64) -> Result<Reply> {
        if self.closed {
            return Err(Error::new(ErrorCode::Closed, "the agent is closed"));
        }
        if !self.whole {
            return Err(Error::internal(
                "the agent's session is not loaded whole yet",
            ));
        }
        self.now = now;
        let reply = self.input(input);
        // What was written before an error is still persisted: entries are
        // taken in whole batches, so it is consistent.
        self.flush();
        reply
    }

    /// The commands queued by the last calls, in order (take them after every call).
    pub fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.out)
    }

    /// Commands of a resume: seals (crash) or reports open calls, then
    /// `agent_resumed`; with `auto_run`, continues work.
    pub fn resume(
        &mut self,
        strategy: ResumeStrategy,
        changes: Option<&MetaChanges>,
        auto_run: bool,
        now: f64,
    ) -> Result<Opened> {
        self.now = now;
        if let Some(c) = changes
            && self.meta.apply(c)
        {
            self.meta.updated_at = time::ms_to_iso(now as i64);
            self.meta_dirty = true;
        }
        let crashed_at = self.bp;
        if let Some(content) = self.crashed_partial.take() {
            let step = self.core.assistant_messages() + 1;
            self.emit(json!({ "type": "model_partial", "channel": "monitor", "step": step, "reason": "crashed", "content": content }))?;
        }
        let mut sealed = Vec::new();
        if strategy == ResumeStrategy::Crash && !self.core.open_calls()?.is_empty() {
            sealed = self.seal(None, None)?;
            for s in &sealed {
                let call = self.call_snapshot(&s.id)?;
                self.emit(json!({ "type": "tool:end", "call": call, "sealed": true }))?;
            }
        } else {
            for (id, _, _, r) in self.core.open_calls()? {
                if r.is_some_and(|r| r.state == ToolCallState::ApprovalRequired)
                    && !self.pending.contains(&id)
                {
                    self.pending.push(id);
                }
            }
        }
        let open = if strategy == ResumeStrategy::Crash {
            Vec::new()
        } else {
            self.open_calls_json()?
        };
        let mut sealed_json = Vec::new();
        for s in &sealed {
            let mut v = self.call_snapshot(&s.id)?;
            v["priorState"] = json!(s.prior_state);
            v["recommendations"] = json!(s.recommendations);
            sealed_json.push(v);
        }
        let strategy_name = match strategy {
            ResumeStrategy::Crash => "crash",
            ResumeStrategy::Manual => "manual",
        };
        self.emit(json!({
            "type": "agent_resumed",
            "strategy": strategy_name,
            "sealed": sealed_json,
            "breakpoint": crashed_at,
            "open": open,
        }))?;
        if strategy == ResumeStrategy::Crash {
            self.set_breakpoint(Breakpoint::Ready)?;
        }
        if !self.pending.is_empty() {
            self.set_state(AgentState::Paused)?;
        }
        self.flush();
        if auto_run {
            self.advance()?;
            self.flush();
        }
        Ok(Opened {
            breakpoint: crashed_at,
            sealed,
        })
    }

    /// What had streamed of the model call the agent's last process died in
    /// (read from its log at open); the resume reports it as `model_partial`.
    pub fn set_crashed_partial(&mut self, content: Option<Value>) {
        self.crashed_partial = content;
    }

    /// The first batch of a new agent: `agent_created`.
    pub fn created(&mut self, now: f64) -> Result<()> {
        self.now = now;
        let template = self.meta.template_id.clone();
        self.emit(json!({
            "type": "agent_created",
            "channel": "monitor",
            "agentId": self.meta.agent_id,
            "templateId": template,
        }))?;
        self.flush();
        Ok(())
    }

    /// Replaces the meta (the caller's changes), durable with the next persist.
    pub fn change_meta(&mut self, changes: &MetaChanges, now: f64) {
        if self.meta.apply(changes) {
            self.meta.updated_at = time::ms_to_iso(now as i64);
            self.meta_dirty = true;
        }
        self.flush();
    }

    /// Marks the machine closed: later inputs are `CLOSED`.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Starts restoring checkpoint `id`: moves the leaf to its entry (a `leaf`
    /// entry; history kept). The caller persists, reloads the session and calls
    /// [`finish_restore`](Self::finish_restore).
    pub fn begin_restore(&mut self, id: &str, now: f64) -> Result<super::CheckpointInfo> {
        if self.phase != Phase::Idle {
            return Err(Error::invalid_input(
                "the agent is working: wait for idle() or interrupt() before restoring a checkpoint",
            ));
        }
        self.now = now;
        let cp = self.core.checkpoint(id)?.clone();
        self.writer.move_leaf(Some(&cp.entry_id), now as i64)?;
        self.flush();
        Ok(cp)
    }

    /// Finishes a restore with the session as it is now.
    pub fn finish_restore(
        &mut self,
        session: &Session,
        cp: &super::CheckpointInfo,
        now: f64,
    ) -> Result<()> {
        self.now = now;
        self.core = AgentCore::from_session(session)?;
        self.messages = Self::context_of(session)?;
        self.request_cache.clear();
        self.usage = Some(UsageTotals::of(&self.messages));
        self.marks = self
            .core
            .tail_marks(session, 0, PathCounts::default(), None);
        self.pending.clear();
        for (id, _, _, r) in self.core.open_calls()? {
            if r.is_some_and(|r| r.state == ToolCallState::ApprovalRequired) {
                self.pending.push(id);
            }
        }
        self.emit(json!({ "type": "checkpoint_restored", "channel": "monitor", "checkpointId": cp.id, "entryId": cp.entry_id }))?;
        if self.pending.is_empty() {
            self.set_breakpoint(Breakpoint::Ready)?;
            self.set_state(AgentState::Ready)?;
        } else {
            // A decision awaited at the checkpoint is awaited again.
            self.set_breakpoint(Breakpoint::AwaitingApproval)?;
            self.set_state(AgentState::Paused)?;
        }
        self.flush();
        Ok(())
    }

    /// A new id for a fork of this agent.
    pub fn fork_id(&mut self, now: f64) -> String {
        self.now = now;
        let base: String = self.meta.agent_id.chars().take(90).collect();
        let r = self.rng.next_u64();
        format!("{base}-fork-{}{:06x}", base36(now as u64), r & 0xff_ffff)
    }

    /// The meta of a fork `new_id` made from `snap`: this one's configuration,
    /// lineage + this id.
    pub fn fork_meta(&self, new_id: &str, snap: &super::SnapshotInfo, now: f64) -> AgentMeta {
        let mut m = self.meta.clone();
        let t = time::ms_to_iso(now as i64);
        m.agent_id = new_id.to_string();
        m.created_at = t.clone();
        m.updated_at = t;
        m.lineage.push(self.meta.agent_id.clone());
        m.forked_from = Some(super::meta::ForkedFrom {
            agent_id: self.meta.agent_id.clone(),
            snapshot: snap.id.clone(),
            entry_id: snap.entry_id.clone(),
        });
        m
    }

    /// The next event seq.
    pub fn next_seq(&self) -> u64 {
        self.seq + 1
    }

    fn input(&mut self, input: Input) -> Result<Reply> {
        match input {
            Input::Run => {
                self.advance()?;
                Ok(Reply::default())
            }
            Input::Send { content } => self.send(&content.to_string()),
            Input::ModelReply { ticket, reply } => {
                if !matches!(self.phase, Phase::Model { ticket: t, .. } if t == ticket) {
                    return Ok(Reply::default()); // interrupted: the answer is dropped
                }
                self.replied(&reply.to_string())
            }
            Input::ModelDeltas { ticket, deltas } => {
                let Phase::Model { ticket: t, step } = self.phase else {
                    return Ok(Reply::default());
                };
                if t != ticket {
                    return Ok(Reply::default()); // interrupted: dropped
                }
                for d in deltas {
                    self.delta(step, d)?;
                }
                Ok(Reply::default())
            }
            Input::ModelError {
                ticket,
                message,
                code,
            } => {
                if !matches!(self.phase, Phase::Model { ticket: t, .. } if t == ticket) {
                    return Ok(Reply::default());
                }
                self.model_failed_with(code.as_deref(), &message)?;
                Ok(Reply::default())
            }
            Input::ModelStream {
                ticket,
                api,
                provider,
                model,
                options,
                pricing,
                secrets,
            } => self.open_stream(
                ticket,
                &api,
                provider.as_deref(),
                &model,
                &options,
                pricing,
                secrets,
            ),
            Input::ModelStreamEnd { ticket, error } => self.end_stream(ticket, error),
            Input::ToolDone { ticket, outcome } => {
                let Phase::Tool {
                    ticket: t,
                    call_id,
                    started,
                } = self.phase.clone()
                else {
                    return Ok(Reply::default());
                };
                if t != ticket {
                    return Ok(Reply::default());
                }
                self.phase = Phase::Idle;
                self.tool_done(&call_id, started, outcome)?;
                self.advance()?;
                Ok(Reply::default())
            }
            Input::ToolEvent {
                call_id,
                event_type,
                data,
            } => {
                let name = self
                    .core
                    .record(&call_id)?
                    .map(|r| r.name.clone())
                    .unwrap_or_default();
                let data: Value = data.unwrap_or(Value::Null);
                let mut e = json!({ "type": "tool_custom_event", "toolName": name, "eventType": event_type });
                if !data.is_null() {
                    e["data"] = data;
                }
                e["timestamp"] = json!(self.now as i64);
                let b = self.emit(e)?;
                Ok(Reply {
                    value: None,
                    bookmark: Some(b),
                })
            }
            Input::Decide {
                call_id,
                allow,
                note,
            } => {
                self.decide(&call_id, allow, note)?;
                Ok(Reply::default())
            }
            Input::Interrupt { note } => {
                self.interrupt(note)?;
                Ok(Reply::default())
            }
            Input::SetTodos { todos } => {
                let (entry, current, previous) =
                    self.core.todos_entry(&todos.to_string(), self.now)?;
                self.append(&[entry])?;
                self.emit(
                    json!({ "type": "todo_changed", "current": current, "previous": previous }),
                )?;
                Ok(Reply::default())
            }
            Input::Snapshot { label } => {
                let (entry, id) = self.core.snapshot_entry(label.as_deref(), self.now)?;
                self.append(&[entry])?;
                Ok(Reply {
                    value: Some(Value::String(id).to_string()),
                    bookmark: None,
                })
            }
            Input::Checkpoint { args } => {
                let args: Value = args;
                let (entry, c) = self.core.checkpoint_entry(&args, self.now)?;
                self.append(&[entry])?;
                Ok(Reply {
                    value: Some(
                        serde_json::to_string(&c).map_err(|e| Error::internal(e.to_string()))?,
                    ),
                    bookmark: None,
                })
            }
        }
    }

    /// The running call's answer: stored, then work goes on.
    fn replied(&mut self, reply: &str) -> Result<Reply> {
        let steps = self.core.assistant_messages();
        if let Err(e) = self.answer(reply) {
            if self.core.assistant_messages() == steps {
                // Not stored: the model call failed.
                self.model_failed(&format!(
                    "the model's answer cannot be stored: {}",
                    e.message
                ))?;
            }
            return Err(e);
        }
        self.advance()?;
        Ok(Reply::default())
    }

    fn busy(&mut self) -> Result<bool> {
        Ok(self.phase != Phase::Idle
            || !self.pending.is_empty()
            || !self.core.open_calls()?.is_empty())
    }

    fn new_id(&mut self, prefix: &str) -> String {
        let r = self.rng.next_u64();
        format!(
            "{prefix}-{}{:012x}",
            base36(self.now as u64),
            r & 0xffff_ffff_ffff
        )
    }

    fn send(&mut self, content: &str) -> Result<Reply> {
        let content: Value = super::parse_json(content, "message content")
            .map_err(|e| Error::invalid_input(e.message))?;
        let content = match content {
            Value::String(s) => json!([{ "type": "text", "text": s }]),
            c => c,
        };
        let queue_id = self.new_id("msg");
        let text = content.to_string();
        if self.busy()? {
            let (entry, _) = AgentCore::user_entry(&queue_id, &text, true, self.now)?;
            self.append(&[entry])?;
            // Open calls left by a crash or a restore: drive them (this returns
            // at once while a call runs or a decision is awaited).
            self.advance()?;
        } else {
            // Messages queued before (an interrupt or a crash stopped the turn
            // that would have delivered them) go first, in the order sent.
            self.deliver_queued()?;
            self.deliver(&queue_id, &text)?;
            self.advance()?;
        }
        Ok(Reply {
            value: Some(Value::String(queue_id).to_string()),
            bookmark: None,
        })
    }

    fn deliver(&mut self, queue_id: &str, content: &str) -> Result<()> {
        let (entry, message) = AgentCore::user_entry(queue_id, content, false, self.now)?;
        self.append(&[entry])?;
        if let Some(m) = message {
            self.messages.push(raw(&m)?);
        }
        Ok(())
    }

    /// Delivers the queued messages, oldest first; false when there were none.
    fn deliver_queued(&mut self) -> Result<bool> {
        let queued: Vec<Value> = self.core.queued().into_iter().cloned().collect();
        for q in &queued {
            let id = q["queueId"].as_str().unwrap_or_default().to_string();
            let content = q
                .get("content")
                .cloned()
                .unwrap_or(Value::Array(Vec::new()));
            self.deliver(&id, &content.to_string())?;
        }
        Ok(!queued.is_empty())
    }

    fn needs_model(&self) -> bool {
        #[derive(serde::Deserialize)]
        struct M<'a> {
            role: &'a str,
        }
        self.messages
            .last()
            .and_then(|m| super::parse_checked::<M<'_>>(m.get(), "message").ok())
            .is_some_and(|m| m.role == "user" || m.role == "toolResult")
    }

    /// Goes on until the next side effect or until idle.
    fn advance(&mut self) -> Result<()> {
        if self.phase != Phase::Idle || !self.pending.is_empty() {
            return Ok(());
        }
        loop {
            let open = self.core.open_calls()?;
            if let Some((id, name, args, rec)) = open.into_iter().next() {
                let state = rec.map(|r| r.state);
                if self.drive_call(id, name, args, state)? {
                    return Ok(());
                }
                continue;
            }
            if !self.needs_model() && !self.deliver_queued()? {
                break;
            }
            self.call_model()?;
            return Ok(());
        }
        self.set_breakpoint(Breakpoint::Ready)?;
        self.set_state(AgentState::Ready)?;
        Ok(())
    }

    fn tool_defs(&self) -> String {
        let defs: Vec<Value> = self
            .meta
            .tools
            .iter()
            .filter_map(|n| self.tools.iter().find(|t| &t.name == n))
            .map(|t| json!({ "name": t.name, "description": t.description, "inputSchema": t.input_schema }))
            .collect();
        Value::Array(defs).to_string()
    }

    fn call_model(&mut self) -> Result<()> {
        let step = self.core.assistant_messages() + 1;
        self.set_state(AgentState::Working)?;
        self.set_breakpoint(Breakpoint::PreModel)?;
        self.set_breakpoint(Breakpoint::StreamingModel)?;
        self.flush();
        let ticket = self.ticket();
        self.phase = Phase::Model { ticket, step };
        self.streamed.clear();
        self.wire = None;
        self.call_context = self.messages.len();
        let request = ModelRequest {
            system: self.meta.system_prompt.clone(),
            message_count: self.messages.len(),
            tools: self.tool_defs(),
        };
        self.out.push(Command::CallModel { ticket, request });
        Ok(())
    }

    fn ticket(&mut self) -> u64 {
        let t = self.next_ticket;
        self.next_ticket += 1;
        t
    }

    /// The model's answer completed as stored: defaults for what it left out,
    /// an id for each tool call without one.
    pub fn complete_reply(&mut self, reply: &str, now: f64) -> Result<Value> {
        self.now = now;
        let reply: Value = super::parse_json(reply, "the model's answer")
            .map_err(|e| Error::invalid_input(e.message))?;
        let Value::Object(reply) = reply else {
            return Err(Error::invalid_input("the model's answer is a JSON object"));
        };
        let content: Vec<Value> = match reply.get("content") {
            Some(Value::Array(a)) => a.clone(),
            // A provider that answers with a string (OpenAI Chat style).
            Some(Value::String(s)) => vec![json!({ "type": "text", "text": s })],
            _ => Vec::new(),
        };
        // Call ids are unique within the answer: a result answers one call.
        let mut seen = std::collections::HashSet::new();
        let content: Vec<Value> = content
            .into_iter()
            .map(|mut b| {
                if b["type"] == "toolCall"
                    && b["id"]
                        .as_str()
                        .is_none_or(|s| s.is_empty() || !seen.insert(s.to_string()))
                {
                    let id = self.new_id("call");
                    if let Value::Object(o) = &mut b {
                        o.insert("id".into(), Value::String(id));
                    }
                }
                b
            })
            .collect();
        let m = &self.meta.model;
        let mut answer = Map::new();
        answer.insert("role".into(), json!("assistant"));
        answer.insert(
            "api".into(),
            json!(m.api.clone().unwrap_or_else(|| "unknown".into())),
        );
        answer.insert("provider".into(), json!(m.provider));
        answer.insert("model".into(), json!(m.model));
        answer.insert(
            "usage".into(),
            json!({ "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                    "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0 } }),
        );
        answer.insert("stopReason".into(), json!("stop"));
        answer.insert("timestamp".into(), json!(now as i64));
        for (k, v) in reply {
            // An answer is the assistant's, whatever role the object names.
            if k != "role"
                && (!v.is_null()
                    || !matches!(
                        k.as_str(),
                        "api" | "provider" | "model" | "usage" | "stopReason"
                    ))
            {
                answer.insert(k, v);
            }
        }
        answer.insert("content".into(), Value::Array(content));
        Ok(Value::Object(answer))
    }

    /// The model call failed: `error`, then READY (the caller's `idle()` rejects).
    fn model_failed(&mut self, message: &str) -> Result<()> {
        self.model_failed_with(None, message)
    }

    /// [`model_failed`](Self::model_failed) with the error's stable code.
    fn model_failed_with(&mut self, code: Option<&str>, message: &str) -> Result<()> {
        if let Phase::Model { step, .. } = self.phase {
            self.record_partial(step, "failed")?;
        }
        self.phase = Phase::Idle;
        self.streamed.clear();
        self.wire = None;
        let mut e =
            json!({ "type": "error", "severity": "error", "phase": "model", "message": message });
        if let Some(c) = code {
            e["code"] = json!(c);
        }
        self.emit(e)?;
        self.set_breakpoint(Breakpoint::Ready)?;
        self.set_state(AgentState::Ready)?;
        self.failure = Some(message.to_string());
        Ok(())
    }

    /// A streamed piece: `*_chunk_start` for a block's first piece, then `*_chunk`.
    fn delta(&mut self, step: u64, d: ModelDelta) -> Result<()> {
        let kind = match d.kind {
            DeltaKind::Text => BlockKind::Text,
            DeltaKind::Thinking => BlockKind::Thinking,
        };
        self.piece(step, d.index, kind, "", &d.text)
    }

    /// A streamed piece of block `index`.
    fn piece(
        &mut self,
        step: u64,
        index: usize,
        kind: BlockKind,
        name: &str,
        text: &str,
    ) -> Result<()> {
        if index >= MAX_STREAMED_BLOCKS {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!("a streamed answer has at most {MAX_STREAMED_BLOCKS} content blocks"),
            ));
        }
        if self.streamed.len() <= index {
            self.streamed.resize(index + 1, None);
        }
        let prefix = match kind {
            BlockKind::Text => "text",
            BlockKind::Thinking => "think",
            BlockKind::ToolCall => "tool_input",
        };
        match &mut self.streamed[index] {
            slot @ None => {
                *slot = Some(Streamed {
                    kind,
                    text: String::new(),
                    name: name.to_string(),
                });
                if kind == BlockKind::ToolCall {
                    self.emit(json!({ "type": "tool_input_chunk_start", "channel": "progress", "step": step, "index": index, "name": name }))?;
                } else {
                    self.emit(json!({ "type": format!("{prefix}_chunk_start"), "step": step }))?;
                }
            }
            Some(b) if b.kind != kind => {
                return Err(Error::invalid_input(format!(
                    "streamed block {index} changed from {:?} to {kind:?}",
                    b.kind
                )));
            }
            Some(_) => {}
        }
        if text.is_empty() {
            return Ok(());
        }
        if let Some(Some(b)) = self.streamed.get_mut(index) {
            b.text.push_str(text);
        }
        let (kind_name, index) = match kind {
            BlockKind::Text => ("text_chunk", None),
            BlockKind::Thinking => ("think_chunk", None),
            BlockKind::ToolCall => ("tool_input_chunk", Some(index)),
        };
        self.emit_chunk(kind_name, step, index, text);
        Ok(())
    }

    /// A streamed piece's event, its line written directly (the line
    /// `build_event_line` makes of `{type, step, index?, delta}`; a stream
    /// has thousands of them).
    fn emit_chunk(&mut self, kind: &'static str, step: u64, index: Option<usize>, delta: &str) {
        let seq = self.seq + 1;
        let timestamp = self.now as i64;
        let meta = crate::events::EventMeta {
            seq,
            timestamp,
            channel: crate::events::Channel::Progress,
            kind: kind.into(),
        };
        self.seq = seq;
        self.last_event = Some(meta.bookmark());
        self.events.push(EventLine {
            meta,
            line: Arc::from(chunk_line(kind, seq, timestamp, step, index, delta)),
        });
    }

    /// What streamed of the running call, as answer blocks (`None`: nothing).
    fn partial_content(&self) -> Option<Value> {
        Streamed::content(self.streamed.iter().flatten())
    }

    /// What a call had streamed, from the events logged since its last
    /// breakpoint (the resume after a crash reads them from the log's tail):
    /// the `content` of its `model_partial`, built as the running machine
    /// builds it.
    pub fn partial_from_events(lines: &[std::sync::Arc<str>]) -> Option<Value> {
        let mut blocks: Vec<Streamed> = Vec::new();
        // The block of each tool input's index, and the last text / thinking block.
        let mut tools: Vec<(u64, usize)> = Vec::new();
        let (mut text, mut think) = (None::<usize>, None::<usize>);
        for l in lines {
            let Ok(v) = serde_json::from_str::<Value>(l.as_ref()) else {
                continue;
            };
            let start = |blocks: &mut Vec<Streamed>, kind, name: &str| {
                blocks.push(Streamed {
                    kind,
                    text: String::new(),
                    name: name.to_string(),
                });
                Some(blocks.len() - 1)
            };
            let at = match v["type"].as_str().unwrap_or("") {
                "text_chunk_start" => {
                    text = start(&mut blocks, BlockKind::Text, "");
                    continue;
                }
                "think_chunk_start" => {
                    think = start(&mut blocks, BlockKind::Thinking, "");
                    continue;
                }
                "tool_input_chunk_start" => {
                    let name = v["name"].as_str().unwrap_or("");
                    if let Some(b) = start(&mut blocks, BlockKind::ToolCall, name) {
                        tools.push((v["index"].as_u64().unwrap_or(0), b));
                    }
                    continue;
                }
                "text_chunk" => text,
                "think_chunk" => think,
                "tool_input_chunk" => {
                    let index = v["index"].as_u64();
                    tools.iter().rev().find(|t| Some(t.0) == index).map(|t| t.1)
                }
                _ => None,
            };
            if let Some(b) = at.and_then(|i| blocks.get_mut(i)) {
                b.text.push_str(v["delta"].as_str().unwrap_or(""));
            }
        }
        Streamed::content(blocks.iter())
    }

    /// `model_partial` for the running call's streamed pieces, if any.
    fn record_partial(&mut self, step: u64, reason: &str) -> Result<()> {
        if let Some(content) = self.partial_content() {
            self.emit(json!({ "type": "model_partial", "channel": "monitor", "step": step, "reason": reason, "content": content }))?;
        }
        self.streamed.clear();
        Ok(())
    }

    fn answer(&mut self, reply: &str) -> Result<()> {
        let Phase::Model { step, .. } = self.phase else {
            return Ok(());
        };
        self.phase = Phase::Idle;
        let message = self.complete_reply(reply, self.now)?;
        let text = message.to_string();
        let entries = AgentCore::answer_entries(&text, self.now)?;
        self.append(&entries)?;
        if let Some(u) = &mut self.usage {
            u.add(&text);
        }
        self.messages.push(raw(&message)?);
        let content = message["content"].as_array().cloned().unwrap_or_default();
        let mut calls = 0;
        // Blocks that streamed get only their end; the others all three events.
        let streamed = std::mem::take(&mut self.streamed);
        self.wire = None;
        for (i, b) in content.iter().enumerate() {
            let was = match streamed.get(i).and_then(Option::as_ref).map(|s| s.kind) {
                Some(BlockKind::Text) => Some(DeltaKind::Text),
                Some(BlockKind::Thinking) => Some(DeltaKind::Thinking),
                Some(BlockKind::ToolCall) => {
                    if b["type"] == "toolCall" {
                        let id = b["id"].as_str().unwrap_or("").to_string();
                        self.emit(json!({ "type": "tool_input_chunk_end", "channel": "progress", "step": step, "index": i, "callId": id }))?;
                    }
                    None
                }
                None => None,
            };
            match b["type"].as_str() {
                Some("thinking") => {
                    let t = b["thinking"].as_str().unwrap_or("");
                    if was != Some(DeltaKind::Thinking) {
                        self.emit(json!({ "type": "think_chunk_start", "step": step }))?;
                        self.emit(json!({ "type": "think_chunk", "step": step, "delta": t }))?;
                    }
                    self.emit(json!({ "type": "think_chunk_end", "step": step }))?;
                }
                Some("text") => {
                    let t = b["text"].as_str().unwrap_or("");
                    if was != Some(DeltaKind::Text) {
                        self.emit(json!({ "type": "text_chunk_start", "step": step }))?;
                        self.emit(json!({ "type": "text_chunk", "step": step, "delta": t }))?;
                    }
                    self.emit(json!({ "type": "text_chunk_end", "step": step, "text": t }))?;
                }
                Some("toolCall") => calls += 1,
                _ => {}
            }
        }
        if let Some(u) = message.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            let mut e = json!({ "type": "token_usage", "inputTokens": n("input"), "outputTokens": n("output"), "totalTokens": n("totalTokens") });
            // Members beyond Kode's only when they say something.
            for (from, to) in [
                ("cacheRead", "cacheReadTokens"),
                ("cacheWrite", "cacheWriteTokens"),
            ] {
                if n(from) > 0.0 {
                    e[to] = json!(n(from));
                }
            }
            if let Some(r) = u.get("reasoning").and_then(Value::as_f64) {
                e["reasoningTokens"] = json!(r);
            }
            if let Some(c) = u["cost"]["total"].as_f64().filter(|c| *c > 0.0) {
                e["cost"] = json!(c);
            }
            self.emit(e)?;
        }
        if calls > 0 {
            self.set_breakpoint(Breakpoint::ToolPending)?;
            return Ok(());
        }
        let done = self.emit(json!({ "type": "done", "step": step, "reason": "completed" }))?;
        self.last_done = Some(done);
        self.emit(json!({ "type": "step_complete", "step": step, "done": done }))?;
        Ok(())
    }

    /// Drives one open call; true when the loop must stop (a side effect or a pause).
    fn drive_call(
        &mut self,
        id: String,
        name: String,
        args: Value,
        state: Option<ToolCallState>,
    ) -> Result<bool> {
        let state = state.unwrap_or(ToolCallState::Pending);
        if state == ToolCallState::ApprovalRequired {
            if !self.pending.contains(&id) {
                self.pending.push(id);
            }
            self.set_breakpoint(Breakpoint::AwaitingApproval)?;
            self.set_state(AgentState::Paused)?;
            return Ok(true);
        }
        if !matches!(state, ToolCallState::Pending | ToolCallState::Approved) {
            // Started before a crash or a rewind (or closed without its
            // message): never run twice. Sealed (or its stored result restored).
            let sealed = self.seal(None, Some(&id))?;
            for s in &sealed {
                let call = self.call_snapshot(&s.id)?;
                self.emit(json!({ "type": "tool:end", "call": call, "sealed": true }))?;
            }
            return Ok(false);
        }
        let spec = self
            .meta
            .tools
            .contains(&name)
            .then(|| self.tools.iter().find(|t| t.name == name).cloned())
            .flatten();
        let Some(spec) = spec else {
            self.finish_call(
                &id,
                &name,
                ToolCallState::Failed,
                &format!("Tool '{name}' is not available to this agent."),
                true,
                json!({ "ok": false, "error": "tool not found" }),
                json!({ "note": "tool not found" }),
            )?;
            return Ok(false);
        };
        // An input its tool's schema refuses is an error the model sees, before
        // anyone is asked to approve it.
        if state == ToolCallState::Pending
            && !spec.input_schema.is_null()
            && let Err(why) = crate::validate::check_tool_input(&spec.input_schema, &args)
        {
            let message = format!("invalid input for tool '{name}': {why}");
            self.fail_call(&id, &name, &message, "invalid input")?;
            let call = self.call_snapshot(&id)?;
            self.emit(json!({ "type": "tool:error", "call": call, "error": message }))?;
            return Ok(false);
        }
        if state == ToolCallState::Pending
            && self.meta.needs_approval(&name, spec.requires_approval)
        {
            self.record(
                &id,
                &name,
                ToolCallState::ApprovalRequired,
                json!({ "approval": { "required": true }, "note": "awaiting approval" }),
            )?;
            self.pending.push(id.clone());
            self.set_breakpoint(Breakpoint::AwaitingApproval)?;
            self.set_state(AgentState::Paused)?;
            let call = self.call_snapshot(&id)?;
            self.emit(json!({ "type": "permission_required", "call": call }))?;
            return Ok(true);
        }
        self.set_breakpoint(Breakpoint::PreTool)?;
        self.record(
            &id,
            &name,
            ToolCallState::Executing,
            json!({ "note": "execution start" }),
        )?;
        self.set_breakpoint(Breakpoint::ToolExecuting)?;
        let call = self.call_snapshot(&id)?;
        self.emit(json!({ "type": "tool:start", "call": call }))?;
        self.flush(); // the record and the breakpoint are durable before the tool runs
        let ticket = self.ticket();
        self.phase = Phase::Tool {
            ticket,
            call_id: id.clone(),
            started: self.now,
        };
        self.out.push(Command::RunTool {
            ticket,
            call_id: id,
            name,
            input: args.to_string(),
        });
        Ok(true)
    }

    fn tool_done(&mut self, id: &str, started: f64, outcome: ToolOutcome) -> Result<()> {
        let name = self
            .core
            .record(id)?
            .map(|r| r.name.clone())
            .unwrap_or_default();
        let value = match outcome {
            ToolOutcome::Value { value } => super::parse_json::<Value>(&value, "the tool's result")
                .map_err(|e| {
                    (
                        format!("the tool's result cannot be stored: {}", e.message),
                        "result not storable",
                        false,
                    )
                }),
            ToolOutcome::Error { message } => Err((message, "execution failed", true)),
            ToolOutcome::NotJson { message } => Err((
                format!("the tool's result cannot be stored as JSON: {message}"),
                "execution complete",
                false,
            )),
        };
        match value {
            Ok(value) => {
                let duration = (self.now - started) as i64;
                self.finish_call(
                    id,
                    &name,
                    ToolCallState::Completed,
                    &result_text(&value),
                    false,
                    value,
                    json!({ "note": "execution complete", "durationMs": duration }),
                )?;
            }
            Err((message, note, tool_error)) => {
                self.fail_call(id, &name, &message, note)?;
                if tool_error {
                    let call = self.call_snapshot(id)?;
                    self.emit(json!({ "type": "tool:error", "call": call, "error": message }))?;
                }
            }
        }
        let call = self.call_snapshot(id)?;
        self.emit(json!({ "type": "tool_executed", "call": call }))?;
        self.set_breakpoint(Breakpoint::PostTool)?;
        Ok(())
    }

    /// Fails a call with `message` (the text the model sees is `Error: {message}`).
    fn fail_call(&mut self, id: &str, name: &str, message: &str, note: &str) -> Result<()> {
        self.finish_call(
            id,
            name,
            ToolCallState::Failed,
            &format!("Error: {message}"),
            true,
            json!({ "ok": false, "error": message }),
            json!({ "note": note }),
        )
    }

    /// Finishes a call: its result message and terminal record, durable together.
    /// A result the session cannot hold (too deep, too long) fails the call, with why.
    #[allow(clippy::too_many_arguments)]
    fn finish_call(
        &mut self,
        id: &str,
        name: &str,
        state: ToolCallState,
        text: &str,
        is_error: bool,
        result: Value,
        extra: Value,
    ) -> Result<()> {
        let mut extra = extra;
        extra["result"] = result;
        extra["isError"] = json!(is_error);
        let (message, entries) =
            AgentCore::result_entries(id, name, state, text, is_error, Some(&extra), self.now);
        let message = match self.check_entries(&entries) {
            Ok(()) => {
                self.append(&entries)?;
                message
            }
            Err(e)
                if matches!(
                    e.code,
                    ErrorCode::InvalidInput | ErrorCode::CorruptedData | ErrorCode::LimitExceeded
                ) =>
            {
                let why = format!("the tool's result cannot be stored: {}", e.message);
                let failed = json!({ "note": "result not storable", "result": { "ok": false, "error": why }, "isError": true });
                let (message, entries) = AgentCore::result_entries(
                    id,
                    name,
                    ToolCallState::Failed,
                    &format!("Error: {why}"),
                    true,
                    Some(&failed),
                    self.now,
                );
                self.append(&entries)?;
                message
            }
            Err(e) => return Err(e),
        };
        self.messages.push(raw(&message)?);
        let call = self.call_snapshot(id)?;
        self.emit(json!({ "type": "tool:end", "call": call }))?;
        Ok(())
    }

    fn record(&mut self, id: &str, name: &str, state: ToolCallState, extra: Value) -> Result<()> {
        let entry = AgentCore::record_entry(id, name, state, self.now, Some(&extra));
        self.append(&[entry])
    }

    fn decide(&mut self, id: &str, allow: bool, note: Option<String>) -> Result<()> {
        let open = self.core.open_calls()?;
        let call = open.into_iter().find(|(c, _, _, _)| c == id);
        let waiting = call.as_ref().is_some_and(|(_, _, _, r)| {
            r.is_some_and(|r| r.state == ToolCallState::ApprovalRequired)
        });
        let Some(pos) = self
            .pending
            .iter()
            .position(|p| p == id)
            .filter(|_| waiting)
        else {
            return Err(Error::new(
                ErrorCode::PermissionNotPending,
                format!("no call '{id}' waits for a decision"),
            ));
        };
        let name = call.map(|(_, n, _, _)| n).unwrap_or_default();
        let decision = if allow { "allow" } else { "deny" };
        let mut approval = json!({ "required": true, "decision": decision, "decidedBy": "api", "decidedAt": self.now as i64 });
        if let Some(n) = &note {
            approval["note"] = json!(n);
        }
        if allow {
            let n = note.clone().unwrap_or_else(|| "approval granted".into());
            self.record(
                id,
                &name,
                ToolCallState::Approved,
                json!({ "approval": approval, "note": n }),
            )?;
        } else {
            let text = match &note {
                Some(n) => format!("Denied by the user: {n}."),
                None => "Denied by the user.".to_string(),
            };
            let mut result = json!({ "ok": false, "error": "denied" });
            if let Some(n) = &note {
                result["note"] = json!(n);
            }
            let n = note.clone().unwrap_or_else(|| "approval denied".into());
            self.finish_call(
                id,
                &name,
                ToolCallState::Denied,
                &text,
                true,
                result,
                json!({ "approval": approval, "note": n }),
            )?;
        }
        self.pending.remove(pos);
        let mut e = json!({ "type": "permission_decided", "callId": id, "decision": decision, "decidedBy": "api" });
        if let Some(n) = &note {
            e["note"] = json!(n);
        }
        self.emit(e)?;
        self.set_breakpoint(if allow {
            Breakpoint::PreTool
        } else {
            Breakpoint::PostTool
        })?;
        if self.pending.is_empty() {
            self.set_state(AgentState::Working)?;
            self.advance()?;
        }
        Ok(())
    }

    fn interrupt(&mut self, note: Option<String>) -> Result<()> {
        if self.phase != Phase::Idle {
            self.out.push(Command::Abort);
        }
        if let Phase::Model { step, .. } = self.phase {
            self.record_partial(step, "interrupted")?;
            self.wire = None;
        }
        self.phase = Phase::Idle;
        let note = note.unwrap_or_else(|| "Interrupted by user".into());
        let sealed = self.seal(Some(&note), None)?;
        for s in &sealed {
            let call = self.call_snapshot(&s.id)?;
            self.emit(json!({ "type": "tool:end", "call": call, "sealed": true }))?;
        }
        self.pending.clear();
        let step = self.core.assistant_messages();
        let done = self.emit(json!({ "type": "done", "step": step, "reason": "interrupted" }))?;
        self.last_done = Some(done);
        self.set_breakpoint(Breakpoint::Ready)?;
        self.set_state(AgentState::Ready)?;
        Ok(())
    }

    /// Seals open calls (all, or `only`), appending their entries.
    fn seal(&mut self, note: Option<&str>, only: Option<&str>) -> Result<Vec<SealedCall>> {
        let (entries, sealed) = self.core.seal(self.now, note, only)?;
        self.append(&entries)?;
        for s in &sealed {
            self.messages.push(raw(&s.message)?);
        }
        Ok(sealed)
    }

    fn open_calls_json(&mut self) -> Result<Vec<Value>> {
        Ok(self
            .core
            .open_calls()?
            .into_iter()
            .map(|(id, name, args, rec)| json!({ "id": id, "name": name, "arguments": args, "state": rec.map(|r| r.state) }))
            .collect())
    }

    // -- writing --------------------------------------------------------------

    fn check_entries(&self, entries: &[String]) -> Result<()> {
        for e in entries {
            AgentCore::check(e)?;
            if e.len() as u64 + 256 > LoadOptions::default().max_line_bytes {
                return Err(Error::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "an entry of {} bytes is over the session's line limit",
                        e.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Appends entries to the session (all or none) and takes them into the state.
    fn append(&mut self, entries: &[String]) -> Result<()> {
        self.check_entries(entries)?;
        for e in entries {
            let off = self.writer.logical_len();
            let before = self.core.counts();
            let sfp = self.core.last_sfp().map(|(i, _)| i);
            let (id, _) = self.writer.append(e, self.now as i64)?;
            let len = self.writer.logical_len() - off - 1;
            self.core.observe(e, &id)?;
            self.mark(e, &id, off, len, before, sfp);
        }
        Ok(())
    }

    /// Keeps the resume marks up to date with an appended entry.
    fn mark(
        &mut self,
        e: &str,
        id: &str,
        off: u64,
        len: u64,
        before: PathCounts,
        sfp: Option<u64>,
    ) {
        let now_sfp = self.core.last_sfp();
        let m = self.marks.get_or_insert_with(TailMarks::default);
        if let Some((i, sid)) = now_sfp
            && Some(i) != sfp
            && sid == id
        {
            m.sfp_offset = off;
            m.sfp_id = id.to_string();
            m.before = before;
        }
        // The entries this machine builds start with their type (and custom type).
        if e.starts_with("{\"type\":\"custom\",\"customType\":\"forkpoint.todos\"") {
            m.todos = Some((off, len));
        } else if e.starts_with("{\"type\":\"custom\",\"customType\":\"forkpoint.checkpoint\"") {
            m.checkpoints.push((off, len));
        } else if e.starts_with("{\"type\":\"custom\",\"customType\":\"forkpoint.queued\"") {
            if let Ok(v) = super::parse_json::<Value>(e, "entry")
                && let Some(q) = v["data"]["queueId"].as_str()
            {
                m.queued.push((q.to_string(), off, len));
            }
        } else if e.starts_with("{\"type\":\"message\",\"queueId\"")
            && let Ok(v) = super::parse_json::<Value>(e, "entry")
            && let Some(q) = v["queueId"].as_str()
        {
            m.queued.retain(|x| x.0 != q);
        }
    }

    /// Appends an event; returns its bookmark (durable with the next persist).
    fn emit(&mut self, event: Value) -> Result<Bookmark> {
        let (line, meta) =
            build_event_line(&event.to_string(), self.seq + 1, self.now as i64, 512)?;
        self.seq = meta.seq;
        let b = meta.bookmark();
        self.last_event = Some(b);
        self.events.push(EventLine {
            meta,
            line: Arc::from(line),
        });
        Ok(b)
    }

    fn set_breakpoint(&mut self, bp: Breakpoint) -> Result<()> {
        if bp == self.bp {
            return Ok(());
        }
        let previous = self.bp;
        self.bp = bp;
        self.emit(json!({ "type": "breakpoint_changed", "previous": previous, "current": bp, "timestamp": self.now as i64 }))?;
        Ok(())
    }

    fn set_state(&mut self, s: AgentState) -> Result<()> {
        if s == self.state {
            return Ok(());
        }
        self.state = s;
        self.emit(json!({ "type": "state_changed", "state": s }))?;
        Ok(())
    }

    /// Queues a `Persist` of everything written since the last one.
    fn flush(&mut self) {
        let mut batch = WriteBatch {
            session_at: self.session_len,
            ..WriteBatch::default()
        };
        if let Some(b) = self.writer.take_batch(None) {
            self.writer.committed(&b);
            batch.session = b.bytes;
        }
        batch.events = std::mem::take(&mut self.events);
        if self.meta_dirty {
            self.meta_dirty = false;
            match self.meta.to_text() {
                Ok(t) => batch.meta = Some(t),
                Err(_) => self.meta_dirty = true,
            }
        }
        if let Some(h) = self.writer.take_hint(false) {
            batch.hint = Some(h.to_json().into_bytes());
        }
        if let Some(m) = self.marks.as_ref().filter(|m| !m.sfp_id.is_empty())
            && (self.marks_written.as_ref() != Some(m)
                || (self.usage.is_some() && self.usage_written != self.usage))
        {
            let st = ResumeState {
                v: ResumeState::VERSION,
                session_len: self.session_len + batch.session.len() as u64,
                marks: m.clone(),
                usage: self.usage,
            };
            if let Ok(t) = serde_json::to_vec(&st) {
                batch.state = Some(t);
                self.marks_written = Some(m.clone());
                self.usage_written = self.usage;
            }
        }
        if batch.is_empty() {
            return;
        }
        self.session_len += batch.session.len() as u64;
        self.out.push(Command::Persist(batch));
    }
}

/// `n` in base 36 (as JS's `n.toString(36)`).
pub fn base36(mut n: u64) -> String {
    const D: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut s = Vec::new();
    while n > 0 {
        s.push(D[(n % 36) as usize]);
        n /= 36;
    }
    s.reverse();
    String::from_utf8(s).unwrap_or_default()
}

/// A tool call as events show it (`snapshotOf`).
pub fn snapshot_of(r: &ToolCallRecord) -> Value {
    let input = super::parse_checked::<Value>(r.input.get(), "input").unwrap_or(Value::Null);
    let mut o = Map::new();
    o.insert("id".into(), json!(r.id));
    o.insert("name".into(), json!(r.name));
    o.insert("state".into(), json!(r.state));
    let mut opt = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            o.insert(k.into(), v);
        }
    };
    opt(
        "approval",
        r.approval
            .as_ref()
            .and_then(|a| super::parse_checked(a.get(), "record").ok()),
    );
    opt(
        "result",
        r.result
            .as_ref()
            .and_then(|a| super::parse_checked(a.get(), "record").ok()),
    );
    opt("isError", r.is_error.map(Value::Bool));
    opt("startedAt", r.started_at.map(|v| json!(v)));
    opt("completedAt", r.completed_at.map(|v| json!(v)));
    let text = match &input {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    o.insert("inputPreview".into(), json!(preview(&text)));
    o.insert("auditTrail".into(), json!(r.audit));
    Value::Object(o)
}

/// What [`AgentMachine::query`] answers.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Query {
    /// `{agentId, state, breakpoint, stepCount, messageCount, lastSfpIndex,
    /// lastBookmark, lastDone, pending, running, failure}`.
    Status,
    /// The meta.
    Meta,
    /// The context's messages (the first `up_to` of them, when given).
    Messages {
        #[serde(default)]
        up_to: Option<usize>,
    },
    /// Every tool-call record of the path.
    Records,
    /// One record (or `null`).
    Record { id: String },
    /// Calls without a result: `{id, name, arguments, state}`.
    OpenCalls,
    /// The todo list (`{todos, version, updatedAt}` or `null`).
    Todos,
    /// Checkpoints grouped by execution.
    Checkpoints,
    /// One checkpoint (`NOT_FOUND`).
    Checkpoint { id: String },
    /// The last successful checkpoint of an execution (before a step), or `null`.
    LastSuccessful {
        execution_id: String,
        #[serde(default)]
        before_step: Option<f64>,
    },
    /// A snapshot (`SNAPSHOT_NOT_FOUND`).
    Snapshot { id: String },
    /// The text of the last assistant message.
    LastText,
    /// The tokens and cost of every model answer in the context, summed:
    /// `{calls, input, output, cacheRead, cacheWrite, reasoning, totalTokens, cost}`;
    /// `null` before the whole session is loaded when the resume state did not
    /// have them (the runtime then loads it).
    Usage,
}

impl Query {
    /// Whether the answer needs the whole session (not only a resume's tail).
    pub fn needs_whole(&self) -> bool {
        !matches!(
            self,
            Query::Status
                | Query::Meta
                | Query::Usage
                | Query::OpenCalls
                | Query::Todos
                | Query::Checkpoints
                | Query::Checkpoint { .. }
                | Query::LastSuccessful { .. }
        )
    }
}

fn to_text<T: Serialize + ?Sized>(v: &T) -> Result<String> {
    crate::types::to_json_text(v)
}

impl AgentMachine {
    /// Answers a query (JSON text); one that [needs the whole
    /// session](Query::needs_whole) is `INTERNAL` before `load_whole`.
    pub fn query(&mut self, q: &Query) -> Result<String> {
        if q.needs_whole() && !self.whole {
            return Err(Error::internal(
                "this query needs the whole session: load it first",
            ));
        }
        match q {
            Query::Status => {
                let failure = self.failure.clone();
                to_text(&json!({
                    "agentId": self.meta.agent_id,
                    "state": self.state,
                    "breakpoint": self.bp,
                    "stepCount": self.core.assistant_messages(),
                    "messageCount": self.core.message_count(),
                    "lastSfpIndex": self.core.last_sfp().map_or(-1, |(i, _)| i as i64),
                    "lastBookmark": self.last_event,
                    "lastDone": self.last_done,
                    "pending": self.pending,
                    "running": self.phase != Phase::Idle,
                    "failure": failure,
                }))
            }
            Query::Meta => to_text(&self.meta),
            Query::Messages { up_to } => Ok(self.messages_json(*up_to)),
            Query::Records => to_text(&self.core.records()?),
            Query::Record { id } => to_text(&self.core.record(id)?),
            Query::OpenCalls => to_text(&self.open_calls_json()?),
            Query::Todos => to_text(&self.core.todos()),
            Query::Checkpoints => {
                let groups: Vec<Value> = self
                    .core
                    .checkpoints_by_execution()
                    .into_iter()
                    .map(|(e, c)| json!({ "executionId": e, "checkpoints": c }))
                    .collect();
                to_text(&groups)
            }
            Query::Checkpoint { id } => to_text(self.core.checkpoint(id)?),
            Query::LastSuccessful {
                execution_id,
                before_step,
            } => to_text(
                &self
                    .core
                    .last_successful(execution_id, before_step.map(|b| b.max(0.0) as u64)),
            ),
            Query::Snapshot { id } => to_text(&self.core.snapshot(id)?),
            Query::LastText => to_text(&self.last_text()),
            Query::Usage => to_text(&self.usage),
        }
    }
}

/// The log line of a streamed piece `{type: kind, step, index?, delta}` (what
/// `build_event_line` makes of it, without parsing it back).
fn chunk_line(
    kind: &str,
    seq: u64,
    timestamp: i64,
    step: u64,
    index: Option<usize>,
    delta: &str,
) -> String {
    let mut line = String::with_capacity(delta.len() + 112);
    line.push_str("{\"seq\":");
    line.push_str(&seq.to_string());
    line.push_str(",\"timestamp\":");
    line.push_str(&timestamp.to_string());
    line.push_str(",\"channel\":\"progress\",\"type\":\"");
    line.push_str(kind);
    line.push_str("\",\"step\":");
    line.push_str(&step.to_string());
    if let Some(i) = index {
        line.push_str(",\"index\":");
        line.push_str(&i.to_string());
    }
    line.push_str(",\"delta\":");
    crate::json::push_str_literal(&mut line, delta);
    line.push('}');
    line
}

#[cfg(test)]
mod chunk_tests {
    use super::*;

    #[test]
    fn a_chunk_line_is_the_line_build_event_line_makes() {
        for (kind, index, delta) in [
            ("text_chunk", None, "plain"),
            (
                "think_chunk",
                None,
                "quote \" back\\ nl\n tab\t \u{1} \u{1f} \u{7f} é 😀 </script>",
            ),
            ("tool_input_chunk", Some(3), "{\"n\":"),
            ("text_chunk", None, ""),
        ] {
            let mut v = json!({ "type": kind, "channel": "progress", "step": 7 });
            if let Some(i) = index {
                v["index"] = json!(i);
            }
            v["delta"] = json!(delta);
            let (want, meta) =
                build_event_line(&v.to_string(), 42, 1_700_000_000_123, 512).unwrap();
            assert_eq!(
                chunk_line(kind, 42, 1_700_000_000_123, 7, index, delta),
                want,
                "{kind} {delta:?}"
            );
            assert_eq!(meta.channel, crate::events::Channel::Progress);
        }
    }
}
