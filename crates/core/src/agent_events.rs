//! The events a durable agent writes to its event log (`events.jsonl`), typed.
//!
//! Each event is one JSON object `{"type", …members}`; the log adds `seq`,
//! `timestamp` and `channel` in front when it writes the line (FORMAT.md,
//! "Event log"). Members are camelCase, exactly as the agent has always written
//! them, so typed and untyped writers produce the same lines. Reading tolerates
//! members this version does not know (they are dropped, not refused).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::{AuditEntry, Breakpoint, ToolCallState};
use crate::error::{Error, Result};
use crate::events::{Bookmark, Channel, MAX_SAFE, channel_of};
use crate::json;
use crate::schema::shape;

/// Whether the agent is idle, working, or waiting for a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum AgentState {
    /// Idle: nothing to do.
    Ready,
    /// A model call or a tool call is under way.
    Working,
    /// A tool call waits for a decision (`decide`).
    Paused,
}

/// How a resume treated calls left without a result: `crash` sealed them,
/// `manual` left them open and reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ResumeStrategy {
    #[default]
    Manual,
    Crash,
}

/// Why a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum DoneReason {
    /// The model answered without asking for tools.
    Completed,
    /// `interrupt()` stopped the agent.
    Interrupted,
}

/// A decision about a tool call that needed approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum PermissionDecision {
    Allow,
    Deny,
}

/// How bad an `error` event is (Kode's levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ErrorSeverity {
    Info,
    Warn,
    Error,
}

/// Where an `error` event's failure happened (Kode's phases; the agent
/// reports `model` today).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ErrorPhase {
    /// The model call failed.
    Model,
    /// A tool failed outside its own run.
    Tool,
    /// The agent's machinery (storage, …).
    System,
    /// Creating, resuming or closing the agent.
    Lifecycle,
}

/// The state of a todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// A todo item (at most one `in_progress`). Members this version does not
/// know are kept as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TodoItem {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub assignee: Option<String>,
    /// Milliseconds since the epoch (kept from the list before).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "js_number_opt"
    )]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub created_at: Option<f64>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub notes: Option<String>,
    pub status: TodoStatus,
    pub title: String,
    /// Milliseconds since the epoch (the last change of the list).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "js_number_opt"
    )]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub updated_at: Option<f64>,
    /// Other members, as written.
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub extra: Map<String, Value>,
}

/// The approval part of a tool call's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ApprovalInfo {
    /// Whether the call needed a decision.
    pub required: bool,
    /// The decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub decision: Option<PermissionDecision>,
    /// Who decided (`'api'` for `decide()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub decided_by: Option<String>,
    /// Milliseconds since the epoch.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "js_number_opt"
    )]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub decided_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub note: Option<String>,
}

/// A tool call as events show it: its record at the time of the event. A call
/// without a record yet has only its `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolCallSnapshot {
    /// The model's tool-call id.
    pub id: String,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub state: Option<ToolCallState>,
    /// Whether the call needed a decision, and the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub approval: Option<ApprovalInfo>,
    /// What the tool returned (or the error), once the call is over.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub is_error: Option<bool>,
    /// Milliseconds since the epoch: when the tool started running.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "js_number_opt"
    )]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub started_at: Option<f64>,
    /// Milliseconds since the epoch: when the call got its result.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "js_number_opt"
    )]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub completed_at: Option<f64>,
    /// The input as JSON text, cut to 200 characters (then `…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub input_preview: Option<String>,
    /// Every state the call went through, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub audit_trail: Option<Vec<AuditEntry>>,
}

impl ToolCallSnapshot {
    /// The snapshot of a call without a record: only its id.
    pub fn bare(id: impl Into<String>) -> Self {
        ToolCallSnapshot {
            id: id.into(),
            name: None,
            state: None,
            approval: None,
            result: None,
            is_error: None,
            started_at: None,
            completed_at: None,
            input_preview: None,
            audit_trail: None,
        }
    }
}

/// A call a crash-resume sealed: its snapshot after sealing, the state it was
/// in, and what to check before running it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ResumedSealedCall {
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub call: ToolCallSnapshot,
    pub prior_state: ToolCallState,
    pub recommendations: Vec<String>,
}

/// A call without a result that a manual resume left open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OpenToolCall {
    /// The arguments the model wrote.
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub arguments: Value,
    pub id: String,
    pub name: String,
    /// The state of its record (`null`: no record yet, never started).
    pub state: Option<ToolCallState>,
}

/// An event of a durable agent, as it appears in its event log (without the
/// log's `seq`, `timestamp` and `channel`, except where an event carries its own
/// `timestamp`). `type` says which; each type always goes to the same channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum AgentEvent {
    #[serde(rename = "think_chunk_start")]
    ThinkChunkStart(ThinkChunkStartEvent),
    #[serde(rename = "think_chunk")]
    ThinkChunk(ThinkChunkEvent),
    #[serde(rename = "think_chunk_end")]
    ThinkChunkEnd(ThinkChunkEndEvent),
    #[serde(rename = "text_chunk_start")]
    TextChunkStart(TextChunkStartEvent),
    #[serde(rename = "text_chunk")]
    TextChunk(TextChunkEvent),
    #[serde(rename = "text_chunk_end")]
    TextChunkEnd(TextChunkEndEvent),
    #[serde(rename = "tool_input_chunk_start")]
    ToolInputChunkStart(ToolInputChunkStartEvent),
    #[serde(rename = "tool_input_chunk")]
    ToolInputChunk(ToolInputChunkEvent),
    #[serde(rename = "tool_input_chunk_end")]
    ToolInputChunkEnd(ToolInputChunkEndEvent),
    #[serde(rename = "tool:start")]
    ToolStart(ToolStartEvent),
    #[serde(rename = "tool:end")]
    ToolEnd(ToolEndEvent),
    #[serde(rename = "tool:error")]
    ToolError(ToolErrorEvent),
    #[serde(rename = "done")]
    Done(DoneEvent),
    #[serde(rename = "permission_required")]
    PermissionRequired(PermissionRequiredEvent),
    #[serde(rename = "permission_decided")]
    PermissionDecided(PermissionDecidedEvent),
    #[serde(rename = "agent_created")]
    AgentCreated(AgentCreatedEvent),
    #[serde(rename = "agent_resumed")]
    AgentResumed(AgentResumedEvent),
    #[serde(rename = "agent_forked")]
    AgentForked(AgentForkedEvent),
    #[serde(rename = "state_changed")]
    StateChanged(StateChangedEvent),
    #[serde(rename = "breakpoint_changed")]
    BreakpointChanged(BreakpointChangedEvent),
    #[serde(rename = "step_complete")]
    StepComplete(StepCompleteEvent),
    #[serde(rename = "error")]
    Error(AgentErrorEvent),
    #[serde(rename = "token_usage")]
    TokenUsage(TokenUsageEvent),
    #[serde(rename = "tool_executed")]
    ToolExecuted(ToolExecutedEvent),
    #[serde(rename = "tool_custom_event")]
    ToolCustomEvent(ToolCustomEvent),
    #[serde(rename = "todo_changed")]
    TodoChanged(TodoChangedEvent),
    #[serde(rename = "checkpoint_restored")]
    CheckpointRestored(CheckpointRestoredEvent),
    #[serde(rename = "model_partial")]
    ModelPartial(ModelPartialEvent),
    #[serde(rename = "request_converted")]
    RequestConverted(RequestConvertedEvent),
}

// The members of each event type. (ts-rs drops the docs of enum variants, so
// each type's documentation lives on its struct.)

shape! {
    /// `think_chunk_start` (`progress`): the model's answer has a thinking
    /// block; `think_chunk` and `think_chunk_end` follow. Emitted once the
    /// answer is durable.
    pub struct ThinkChunkStartEvent {
        /// The model call's number (1 for the agent's first).
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
    }
}

shape! {
    /// `think_chunk` (`progress`): the text of a thinking block (whole, not streamed).
    pub struct ThinkChunkEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        pub delta: String,
    }
}

shape! {
    /// `think_chunk_end` (`progress`): the end of a thinking block.
    pub struct ThinkChunkEndEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
    }
}

shape! {
    /// `text_chunk_start` (`progress`): the model's answer has a text block;
    /// `text_chunk` and `text_chunk_end` follow. Emitted once the answer is durable.
    pub struct TextChunkStartEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
    }
}

shape! {
    /// `text_chunk` (`progress`): the text of a text block (whole, not streamed).
    pub struct TextChunkEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        pub delta: String,
    }
}

shape! {
    /// `text_chunk_end` (`progress`): the end of a text block, with its whole text.
    pub struct TextChunkEndEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        pub text: String,
    }
}

shape! {
    /// `tool_input_chunk_start` (`progress`): the model's streamed answer
    /// started tool call `index` (the index of its block in the answer) to
    /// tool `name`; `tool_input_chunk` pieces of its JSON input follow.
    pub struct ToolInputChunkStartEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub index: u64,
        pub name: String,
    }
}

shape! {
    /// `tool_input_chunk` (`progress`): a piece of the JSON text of tool call
    /// `index`'s input as it streams (the pieces joined are the input).
    pub struct ToolInputChunkEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub index: u64,
        pub delta: String,
    }
}

shape! {
    /// `tool_input_chunk_end` (`progress`): the streamed tool call `index` is
    /// in the stored answer as call `callId` (emitted once the answer is durable).
    pub struct ToolInputChunkEndEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub index: u64,
        pub call_id: String,
    }
}

shape! {
    /// `tool:start` (`progress`): a tool is about to run; its `EXECUTING`
    /// record is durable.
    pub struct ToolStartEvent {
        pub call: ToolCallSnapshot,
    }
}

shape! {
    /// `tool:end` (`progress`): a tool call got its result: completed, failed
    /// (also when the tool does not exist), denied, or `sealed: true` when
    /// forkpoint closed it after a crash or an interrupt.
    pub struct ToolEndEvent {
        pub call: ToolCallSnapshot,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub sealed: Option<bool>,
    }
}

shape! {
    /// `tool:error` (`progress`): a tool threw (after its `tool:end`);
    /// `error` is the message.
    pub struct ToolErrorEvent {
        pub call: ToolCallSnapshot,
        pub error: String,
    }
}

shape! {
    /// `done` (`progress`): a step ended: the model answered without tools
    /// (`completed`), or `interrupt()` stopped the agent (`interrupted`).
    pub struct DoneEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        pub reason: DoneReason,
    }
}

shape! {
    /// `permission_required` (`control`): a tool call waits for a decision
    /// (`decide(call.id, …)`); its `APPROVAL_REQUIRED` record is durable and
    /// the agent is `PAUSED`.
    pub struct PermissionRequiredEvent {
        pub call: ToolCallSnapshot,
    }
}

shape! {
    /// `permission_decided` (`control`): a decision was recorded for a call.
    pub struct PermissionDecidedEvent {
        pub call_id: String,
        pub decision: PermissionDecision,
        /// `'api'` for `decide()`.
        pub decided_by: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub note: Option<String>,
    }
}

shape! {
    /// `agent_created` (`monitor`): the agent was created (the first event of
    /// its log).
    pub struct AgentCreatedEvent {
        pub agent_id: String,
        pub template_id: Option<String>,
    }
}

shape! {
    /// `agent_resumed` (`monitor`): the agent was opened again. `sealed`: the
    /// calls a `crash` resume sealed; `open`: the calls a `manual` resume left
    /// without a result; `breakpoint`: where the agent was when it stopped.
    pub struct AgentResumedEvent {
        pub strategy: ResumeStrategy,
        pub sealed: Vec<ResumedSealedCall>,
        pub breakpoint: Breakpoint,
        pub open: Vec<OpenToolCall>,
    }
}

shape! {
    /// `agent_forked` (`monitor`): the first event of a fork's log: the agent
    /// it was forked `from`, the snapshot and the session entry it was forked
    /// at.
    pub struct AgentForkedEvent {
        pub from: String,
        pub snapshot: String,
        pub entry_id: String,
    }
}

shape! {
    /// `state_changed` (`monitor`): the agent's state changed.
    pub struct StateChangedEvent {
        pub state: AgentState,
    }
}

shape! {
    /// `breakpoint_changed` (`monitor`): the loop moved to another breakpoint
    /// (durable before the step it announces). `timestamp` is the event's own
    /// time (ms), which the log keeps as the line's timestamp.
    pub struct BreakpointChangedEvent {
        pub previous: Breakpoint,
        pub current: Breakpoint,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub timestamp: i64,
    }
}

shape! {
    /// `step_complete` (`monitor`): a step without tool calls ended; `done` is
    /// the bookmark of its `done` event.
    pub struct StepCompleteEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        pub done: Bookmark,
    }
}

shape! {
    /// `error` (`monitor`): something failed (today: the model call, which
    /// ends the step).
    pub struct AgentErrorEvent {
        pub severity: ErrorSeverity,
        pub phase: ErrorPhase,
        pub message: String,
        /// The error's stable code (`PROVIDER_RATE_LIMITED`, …) when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub code: Option<String>,
    }
}

shape! {
    /// `token_usage` (`monitor`): the tokens of one model call (from its `usage`).
    pub struct TokenUsageEvent {
        #[serde(with = "js_number")]
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub input_tokens: f64,
        #[serde(with = "js_number")]
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub output_tokens: f64,
        #[serde(with = "js_number")]
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub total_tokens: f64,
        /// Input tokens read from the provider's prompt cache.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "js_number_opt")]
        #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
        pub cache_read_tokens: Option<f64>,
        /// Input tokens written to the provider's prompt cache.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "js_number_opt")]
        #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
        pub cache_write_tokens: Option<f64>,
        /// Output tokens spent on reasoning (where the provider says).
        #[serde(default, skip_serializing_if = "Option::is_none", with = "js_number_opt")]
        #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
        pub reasoning_tokens: Option<f64>,
        /// The call's cost in dollars (from the pricing table; absent when the
        /// model's prices are not known).
        #[serde(default, skip_serializing_if = "Option::is_none", with = "js_number_opt")]
        #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
        pub cost: Option<f64>,
    }
}

shape! {
    /// `tool_executed` (`monitor`): a tool call ran (after its `tool:end`, and
    /// its `tool:error` if it threw).
    pub struct ToolExecutedEvent {
        pub call: ToolCallSnapshot,
    }
}

shape! {
    /// `tool_custom_event` (`monitor`): a tool called `ctx.emit(eventType,
    /// data)` while running. `timestamp` is the event's own time (ms), which
    /// the log keeps as the line's timestamp.
    pub struct ToolCustomEvent {
        pub tool_name: String,
        pub event_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
        #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
        pub data: Option<Value>,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub timestamp: i64,
    }
}

shape! {
    /// `todo_changed` (`monitor`): the todo list changed (the whole list
    /// before and after).
    pub struct TodoChangedEvent {
        pub current: Vec<TodoItem>,
        pub previous: Vec<TodoItem>,
    }
}

shape! {
    /// `checkpoint_restored` (`monitor`): `checkpoints.restore` moved the
    /// agent to a checkpoint.
    pub struct CheckpointRestoredEvent {
        pub checkpoint_id: String,
        pub entry_id: String,
    }
}

shape! {
    /// `model_partial` (`monitor`): a model call ended before its answer was
    /// complete (the stream failed or broke, the agent was interrupted, or the
    /// process died mid-stream: then it is written by the resume). `content`
    /// is what had streamed, in the answer's block shapes (`text`, `thinking`,
    /// `toolCall` with the `partialInput` text); its pieces are also in the log
    /// as `*_chunk` events. The half-answer is not in the session: the call is
    /// made again by the next `run()` (or `autoRun`), so no tool call of it runs.
    pub struct ModelPartialEvent {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        pub step: u64,
        /// `failed`, `interrupted` or `crashed`.
        pub reason: String,
        #[cfg_attr(feature = "ts", ts(type = "Array<Record<string, unknown>>"))]
        pub content: Value,
    }
}

shape! {
    /// `request_converted` (`monitor`): the first request to a model whose
    /// wire format differs from where some of the context came from was
    /// converted; `steps` is the compatibility report (what changed, what was lost).
    pub struct RequestConvertedEvent {
        pub provider: String,
        pub model: String,
        #[cfg_attr(feature = "ts", ts(type = "Array<Record<string, unknown>>"))]
        pub steps: Value,
    }
}

/// Every event type, in the order of [`AgentEvent`]'s variants.
pub const AGENT_EVENT_TYPES: [&str; 29] = [
    "think_chunk_start",
    "think_chunk",
    "think_chunk_end",
    "text_chunk_start",
    "text_chunk",
    "text_chunk_end",
    "tool_input_chunk_start",
    "tool_input_chunk",
    "tool_input_chunk_end",
    "tool:start",
    "tool:end",
    "tool:error",
    "done",
    "permission_required",
    "permission_decided",
    "agent_created",
    "agent_resumed",
    "agent_forked",
    "state_changed",
    "breakpoint_changed",
    "step_complete",
    "error",
    "token_usage",
    "tool_executed",
    "tool_custom_event",
    "todo_changed",
    "checkpoint_restored",
    "model_partial",
    "request_converted",
];

impl AgentEvent {
    /// The event's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::ThinkChunkStart(_) => "think_chunk_start",
            AgentEvent::ThinkChunk(_) => "think_chunk",
            AgentEvent::ThinkChunkEnd(_) => "think_chunk_end",
            AgentEvent::TextChunkStart(_) => "text_chunk_start",
            AgentEvent::TextChunk(_) => "text_chunk",
            AgentEvent::TextChunkEnd(_) => "text_chunk_end",
            AgentEvent::ToolInputChunkStart(_) => "tool_input_chunk_start",
            AgentEvent::ToolInputChunk(_) => "tool_input_chunk",
            AgentEvent::ToolInputChunkEnd(_) => "tool_input_chunk_end",
            AgentEvent::ToolStart(_) => "tool:start",
            AgentEvent::ToolEnd(_) => "tool:end",
            AgentEvent::ToolError(_) => "tool:error",
            AgentEvent::Done(_) => "done",
            AgentEvent::PermissionRequired(_) => "permission_required",
            AgentEvent::PermissionDecided(_) => "permission_decided",
            AgentEvent::AgentCreated(_) => "agent_created",
            AgentEvent::AgentResumed(_) => "agent_resumed",
            AgentEvent::AgentForked(_) => "agent_forked",
            AgentEvent::StateChanged(_) => "state_changed",
            AgentEvent::BreakpointChanged(_) => "breakpoint_changed",
            AgentEvent::StepComplete(_) => "step_complete",
            AgentEvent::Error(_) => "error",
            AgentEvent::TokenUsage(_) => "token_usage",
            AgentEvent::ToolExecuted(_) => "tool_executed",
            AgentEvent::ToolCustomEvent(_) => "tool_custom_event",
            AgentEvent::TodoChanged(_) => "todo_changed",
            AgentEvent::CheckpointRestored(_) => "checkpoint_restored",
            AgentEvent::ModelPartial(_) => "model_partial",
            AgentEvent::RequestConverted(_) => "request_converted",
        }
    }

    /// The channel the event goes to: Kode's channel for Kode's types
    /// ([`channel_of`]), `monitor` for forkpoint's own (`agent_created`,
    /// `agent_forked`, `checkpoint_restored`).
    pub fn channel(&self) -> Channel {
        channel_of(self.kind()).unwrap_or(Channel::Monitor)
    }

    /// The event as the JSON object the event log appends
    /// (`build_event_line`): `type`, then `channel`, then the members in their
    /// order. The log moves `type` and `channel` into the line's envelope (and
    /// a `timestamp` member, for the events that have one).
    pub fn to_json(&self) -> String {
        let kind = self.kind();
        let head = format!(
            "{{\"type\":\"{kind}\",\"channel\":\"{}\"",
            self.channel().as_str()
        );
        // Cannot fail: every member is JSON (strings, numbers, `Value`s).
        let Ok(body) = serde_json::to_string(self) else {
            return head + "}";
        };
        // serde writes the tag first: `{"type":"<kind>"` then `,…` or `}`.
        let tag_len = kind.len() + 10;
        match body.get(tag_len..) {
            Some(rest) if body.starts_with(&head[..tag_len]) => head + rest,
            _ => body,
        }
    }

    /// Reads an event from its JSON object (as [`to_json`](Self::to_json) or
    /// the agent writes it, or a whole event-log line: `seq` and `channel`
    /// are ignored). Unknown members are ignored; an unknown `type` or a
    /// missing or mistyped member is `INVALID_INPUT`.
    pub fn from_json(text: &str) -> Result<AgentEvent> {
        json::validate(text.trim().as_bytes(), 512)
            .map_err(|e| Error::invalid_input(format!("agent event: {}", e.describe())))?;
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let ev = AgentEvent::deserialize(&mut de)
            .map_err(|e| Error::invalid_input(format!("agent event: {e}")))?;
        de.end()
            .map_err(|e| Error::invalid_input(format!("agent event: {e}")))?;
        Ok(ev)
    }
}

/// Writes a number as JavaScript's `JSON.stringify` does: whole numbers
/// without a fraction (`1700000000000`, not `1700000000000.0`).
mod js_number {
    use super::MAX_SAFE;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.fract() == 0.0 && v.abs() <= MAX_SAFE as f64 {
            s.serialize_i64(*v as i64)
        } else {
            s.serialize_f64(*v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        f64::deserialize(d)
    }
}

/// [`js_number`] for an optional number.
mod js_number_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(n) => super::js_number::serialize(n, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<f64>::deserialize(d)
    }
}

/// A member that is present, `null` included (`Some(Value::Null)`), so a
/// `null` result stays distinct from no result.
mod present {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(v: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use crate::events::build_event_line;

    // The snapshot `snapshotOf` in agent.ts builds for a call with a record
    // (free-form values keep their members' order, see
    // `free_form_members_keep_their_order`).
    const CALL: &str = r#"{"id":"call-1","name":"bash","state":"COMPLETED","approval":{"required":true,"decision":"allow","decidedBy":"api","decidedAt":1700000000100,"note":"go"},"result":{"ok":true,"stdout":"a\nb"},"isError":false,"startedAt":1700000000200,"completedAt":1700000000300,"inputPreview":"{\"cmd\":\"ls\"}","auditTrail":[{"state":"PENDING","at":1700000000000},{"state":"APPROVAL_REQUIRED","at":1700000000050,"note":"awaiting approval"},{"state":"APPROVED","at":1700000000100,"note":"go"},{"state":"EXECUTING","at":1700000000200,"note":"execution start"},{"state":"COMPLETED","at":1700000000300,"note":"execution complete"}]}"#;
    const PENDING_CALL: &str = r#"{"id":"call-2","name":"write","state":"APPROVAL_REQUIRED","approval":{"required":true},"inputPreview":"{\"path\":\"a.txt\"}","auditTrail":[{"state":"PENDING","at":1700000000000},{"state":"APPROVAL_REQUIRED","at":1700000000001,"note":"awaiting approval"}]}"#;
    const EXECUTING_CALL: &str = r#"{"id":"call-3","name":"bash","state":"EXECUTING","startedAt":1700000000200,"inputPreview":"{}","auditTrail":[{"state":"PENDING","at":1700000000000},{"state":"EXECUTING","at":1700000000200,"note":"execution start"}]}"#;
    const FAILED_CALL: &str = r#"{"id":"call-4","name":"bash","state":"FAILED","result":{"error":"boom","ok":false},"isError":true,"startedAt":1700000000200,"completedAt":1700000000250,"inputPreview":"{}","auditTrail":[{"state":"EXECUTING","at":1700000000200,"note":"execution start"},{"state":"FAILED","at":1700000000250,"note":"execution failed"}]}"#;
    const SEALED_CALL: &str = r#"{"id":"call-5","name":"bash","state":"SEALED","result":{"data":{"recorded":true,"status":"EXECUTING","toolId":"call-5"},"error":"Interrupted by user","ok":false,"recommendations":["Check for possible side effects of the tool","Confirm external system state before retrying"]},"isError":true,"startedAt":1700000000200,"completedAt":1700000000900,"inputPreview":"{\"cmd\":\"sleep 100\"}","auditTrail":[{"state":"EXECUTING","at":1700000000200,"note":"execution start"},{"state":"SEALED","at":1700000000900,"note":"Interrupted by user"}]}"#;

    /// The events agent.ts (and the fork in crates/fs) write, one or more per type.
    fn examples() -> Vec<String> {
        let with = |t: &str, call: &str| t.replace("CALL", call);
        vec![
            r#"{"type":"think_chunk_start","step":1}"#.into(),
            r#"{"type":"think_chunk","step":1,"delta":"Let me list the files."}"#.into(),
            r#"{"type":"think_chunk_end","step":1}"#.into(),
            r#"{"type":"text_chunk_start","step":2}"#.into(),
            r#"{"type":"text_chunk","step":2,"delta":"Done: 3 files."}"#.into(),
            r#"{"type":"text_chunk_end","step":2,"text":"Done: 3 files."}"#.into(),
            r#"{"type":"tool_input_chunk_start","channel":"progress","step":2,"index":1,"name":"bash"}"#.into(),
            r#"{"type":"tool_input_chunk","channel":"progress","step":2,"index":1,"delta":"{\"cmd\":"}"#.into(),
            r#"{"type":"tool_input_chunk_end","channel":"progress","step":2,"index":1,"callId":"toolu_01"}"#.into(),
            with(r#"{"type":"tool:start","call":CALL}"#, EXECUTING_CALL),
            with(r#"{"type":"tool:end","call":CALL}"#, CALL),
            with(r#"{"type":"tool:end","call":CALL,"sealed":true}"#, SEALED_CALL),
            r#"{"type":"tool:end","call":{"id":"call-9"},"sealed":true}"#.into(),
            with(r#"{"type":"tool:error","call":CALL,"error":"boom"}"#, FAILED_CALL),
            r#"{"type":"done","step":2,"reason":"completed"}"#.into(),
            r#"{"type":"done","step":3,"reason":"interrupted"}"#.into(),
            with(r#"{"type":"permission_required","call":CALL}"#, PENDING_CALL),
            r#"{"type":"permission_decided","callId":"call-2","decision":"allow","decidedBy":"api","note":"go"}"#.into(),
            r#"{"type":"permission_decided","callId":"call-2","decision":"deny","decidedBy":"api"}"#.into(),
            r#"{"type":"agent_created","channel":"monitor","agentId":"agt-1","templateId":null}"#.into(),
            r#"{"type":"agent_created","channel":"monitor","agentId":"agt-2","templateId":"coder"}"#.into(),
            format!(
                r#"{{"type":"agent_resumed","strategy":"crash","sealed":[{},"priorState":"EXECUTING","recommendations":["Check for possible side effects of the tool","Confirm external system state before retrying"]}}],"breakpoint":"TOOL_EXECUTING","open":[]}}"#,
                &SEALED_CALL[..SEALED_CALL.len() - 1]
            ),
            r#"{"type":"agent_resumed","strategy":"crash","sealed":[{"id":"call-7","priorState":"PENDING","recommendations":[]}],"breakpoint":"TOOL_PENDING","open":[]}"#.into(),
            r#"{"type":"agent_resumed","strategy":"manual","sealed":[],"breakpoint":"AWAITING_APPROVAL","open":[{"arguments":{"path":"a.txt"},"id":"call-2","name":"write","state":"APPROVAL_REQUIRED"},{"arguments":{},"id":"call-3","name":"read","state":null}]}"#.into(),
            r#"{"type":"agent_forked","channel":"monitor","from":"agt-1","snapshot":"sfp:3","entryId":"a1b2c3d4"}"#.into(),
            r#"{"type":"state_changed","state":"PAUSED"}"#.into(),
            r#"{"type":"breakpoint_changed","previous":"READY","current":"PRE_MODEL","timestamp":1700000000000}"#.into(),
            r#"{"type":"step_complete","step":2,"done":{"seq":41,"timestamp":1700000000400}}"#.into(),
            r#"{"type":"error","severity":"error","phase":"model","message":"429 rate limited"}"#.into(),
            r#"{"type":"error","severity":"error","phase":"model","message":"overloaded","code":"PROVIDER_UNAVAILABLE"}"#.into(),
            r#"{"type":"token_usage","inputTokens":1200,"outputTokens":45,"totalTokens":1245}"#.into(),
            r#"{"type":"token_usage","inputTokens":1200,"outputTokens":45,"totalTokens":1245,"cacheReadTokens":1000,"cacheWriteTokens":0,"reasoningTokens":12,"cost":0.0043}"#.into(),
            with(r#"{"type":"tool_executed","call":CALL}"#, CALL),
            r#"{"type":"tool_custom_event","toolName":"bash","eventType":"progress","data":{"line":"x","pct":50},"timestamp":1700000000500}"#.into(),
            r#"{"type":"tool_custom_event","toolName":"bash","eventType":"ping","timestamp":1700000000500}"#.into(),
            r#"{"type":"tool_custom_event","toolName":"bash","eventType":"ping","data":null,"timestamp":1700000000500}"#.into(),
            r#"{"type":"todo_changed","current":[{"createdAt":1700000000000,"id":"t1","status":"in_progress","title":"Read the code","updatedAt":1700000000600},{"assignee":"me","createdAt":1700000000600,"id":"t2","notes":"later","status":"pending","title":"Write tests","updatedAt":1700000000600}],"previous":[{"createdAt":1700000000000,"id":"t1","status":"pending","title":"Read the code","updatedAt":1700000000000}]}"#.into(),
            r#"{"type":"checkpoint_restored","channel":"monitor","checkpointId":"ckpt-e1-2","entryId":"a1b2c3d4"}"#.into(),
            r#"{"type":"model_partial","channel":"monitor","step":3,"reason":"crashed","content":[{"type":"text","text":"Let me"}]}"#.into(),
            r#"{"type":"request_converted","channel":"monitor","provider":"openai","model":"gpt-4o","steps":[{"kind":"thinking_dropped","count":1}]}"#.into(),
        ]
    }

    /// `AuditEntry.at` is an f64 the core writes as `1700000000000.0`, where
    /// JavaScript writes `1700000000000`: the same number.
    fn js(text: &str) -> String {
        regex::Regex::new(r"(\d)\.0([,}\]])")
            .unwrap()
            .replace_all(text, "$1$2")
            .into_owned()
    }

    fn without_channel(text: &str) -> String {
        text.replace(r#","channel":"monitor""#, "")
            .replace(r#","channel":"progress""#, "")
    }

    #[test]
    fn every_event_reads_and_writes_back_the_same_members_in_the_same_order() {
        for lit in examples() {
            let ev = AgentEvent::from_json(&lit).unwrap_or_else(|e| panic!("{lit}: {e:?}"));
            let own = serde_json::to_string(&ev).unwrap();
            assert_eq!(js(&own), without_channel(&lit), "serde of {lit}");
            let given: Value = serde_json::from_str(&lit).unwrap();
            assert_eq!(given["type"], ev.kind());
        }
    }

    #[test]
    fn to_json_makes_the_same_log_line_as_the_agent_does_today() {
        for lit in examples() {
            let ev = AgentEvent::from_json(&lit).unwrap();
            let (today, m1) = build_event_line(&lit, 9, 1_700_000_000_999, 512).unwrap();
            let (typed, m2) = build_event_line(&ev.to_json(), 9, 1_700_000_000_999, 512).unwrap();
            assert_eq!(js(&typed), today, "{lit}");
            assert_eq!(m1, m2);
            assert_eq!(m2.channel, ev.channel());
            assert!(ev.to_json().starts_with(&format!(
                "{{\"type\":\"{}\",\"channel\":\"{}\"",
                ev.kind(),
                ev.channel().as_str()
            )));
        }
    }

    #[test]
    fn the_fork_event_of_crates_fs_is_an_agent_forked() {
        // What crates/fs writes as a fork's first event.
        let first = serde_json::json!({
            "type": "agent_forked",
            "channel": "monitor",
            "from": "agt-1",
            "snapshot": "sfp:3",
            "entryId": "a1b2c3d4",
        });
        let (today, _) = build_event_line(&first.to_string(), 12, 5, 512).unwrap();
        let ev = AgentEvent::from_json(&today).unwrap();
        assert_eq!(
            ev,
            AgentEvent::AgentForked(AgentForkedEvent {
                entry_id: "a1b2c3d4".into(),
                from: "agt-1".into(),
                snapshot: "sfp:3".into(),
            })
        );
        assert_eq!(
            build_event_line(&ev.to_json(), 12, 5, 512).unwrap().0,
            today
        );
    }

    #[test]
    fn every_type_has_an_example_a_kind_and_its_channel() {
        let mut seen: Vec<&'static str> = examples()
            .iter()
            .map(|l| AgentEvent::from_json(l).unwrap().kind())
            .collect();
        seen.dedup();
        let mut all = AGENT_EVENT_TYPES.to_vec();
        assert_eq!(seen, all, "examples in AGENT_EVENT_TYPES order");
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), AGENT_EVENT_TYPES.len());
        for lit in examples() {
            let ev = AgentEvent::from_json(&lit).unwrap();
            let want = match ev.kind() {
                "think_chunk_start"
                | "think_chunk"
                | "think_chunk_end"
                | "text_chunk_start"
                | "text_chunk"
                | "text_chunk_end"
                | "tool:start"
                | "tool:end"
                | "tool:error"
                | "done"
                | "tool_input_chunk_start"
                | "tool_input_chunk"
                | "tool_input_chunk_end" => Channel::Progress,
                "permission_required" | "permission_decided" => Channel::Control,
                _ => Channel::Monitor,
            };
            assert_eq!(ev.channel(), want, "{}", ev.kind());
        }
    }

    #[test]
    fn unknown_members_are_ignored_on_read() {
        let lit = r#"{"type":"tool:end","call":{"id":"c1","name":"x","futureCallMember":[1],"approval":{"required":false,"by":"policy"}},"sealed":false,"futureMember":{"a":1}}"#;
        let ev = AgentEvent::from_json(lit).unwrap();
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"type":"tool:end","call":{"id":"c1","name":"x","approval":{"required":false}},"sealed":false}"#
        );
        // A whole log line: the envelope's seq and channel are ignored, its
        // timestamp is the event's own where the event has one.
        let line = r#"{"seq":4,"timestamp":1700000000000,"channel":"monitor","type":"breakpoint_changed","previous":"PRE_TOOL","current":"TOOL_EXECUTING"}"#;
        assert_eq!(
            AgentEvent::from_json(line).unwrap(),
            AgentEvent::BreakpointChanged(BreakpointChangedEvent {
                previous: Breakpoint::PreTool,
                current: Breakpoint::ToolExecuting,
                timestamp: 1_700_000_000_000,
            })
        );
    }

    #[test]
    fn todo_members_this_version_does_not_know_are_kept() {
        let lit = r#"{"type":"todo_changed","current":[{"id":"t1","priority":2,"status":"completed","title":"x"}],"previous":[]}"#;
        let ev = AgentEvent::from_json(lit).unwrap();
        let AgentEvent::TodoChanged(TodoChangedEvent { current, .. }) = &ev else {
            panic!("{ev:?}")
        };
        assert_eq!(current[0].extra["priority"], 2);
        assert_eq!(current[0].status, TodoStatus::Completed);
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"type":"todo_changed","current":[{"id":"t1","status":"completed","title":"x","priority":2}],"previous":[]}"#
        );
    }

    #[test]
    fn a_null_result_is_not_a_missing_result() {
        let null = AgentEvent::from_json(r#"{"type":"tool:end","call":{"id":"c","result":null}}"#)
            .unwrap();
        let none = AgentEvent::from_json(r#"{"type":"tool:end","call":{"id":"c"}}"#).unwrap();
        assert_ne!(null, none);
        assert_eq!(
            serde_json::to_string(&null).unwrap(),
            r#"{"type":"tool:end","call":{"id":"c","result":null}}"#
        );
        assert_eq!(
            none,
            AgentEvent::ToolEnd(ToolEndEvent {
                call: ToolCallSnapshot::bare("c"),
                sealed: None
            })
        );
    }

    #[test]
    fn free_form_members_keep_their_order() {
        // The workspace enables serde_json's `preserve_order`: a tool's data
        // comes back with its members in the order it gave them.
        let ev = AgentEvent::from_json(
            r#"{"type":"tool_custom_event","toolName":"t","eventType":"e","data":{"z":1,"a":2},"timestamp":1}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"type":"tool_custom_event","toolName":"t","eventType":"e","data":{"z":1,"a":2},"timestamp":1}"#
        );
    }

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        let ev = AgentEvent::TokenUsage(TokenUsageEvent {
            input_tokens: 10.0,
            output_tokens: 2.5,
            total_tokens: 12.5,
            cache_read_tokens: None,
            cache_write_tokens: None,
            reasoning_tokens: None,
            cost: None,
        });
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"type":"token_usage","inputTokens":10,"outputTokens":2.5,"totalTokens":12.5}"#
        );
        let mut call = ToolCallSnapshot::bare("c");
        call.started_at = Some(1_700_000_000_000.0);
        call.completed_at = Some(1e300);
        let text = serde_json::to_string(&AgentEvent::ToolStart(ToolStartEvent { call })).unwrap();
        assert!(text.contains(r#""startedAt":1700000000000,"#), "{text}");
        assert!(text.contains(r#""completedAt":1e+300"#), "{text}");
    }

    #[test]
    fn what_is_not_an_agent_event_is_invalid_input() {
        let deep = format!(
            r#"{{"type":"tool_custom_event","toolName":"t","eventType":"e","timestamp":1,"data":{}{}}}"#,
            "[".repeat(600),
            "]".repeat(600)
        );
        for bad in [
            r#"{"type":"tool:endd","call":{"id":"c"}}"#,
            r#"{"type":"done","step":1}"#,
            r#"{"type":"done","step":1,"reason":"finished"}"#,
            r#"{"type":"state_changed","state":"SLEEPING"}"#,
            r#"{"type":"step_complete","step":-1,"done":{"seq":1,"timestamp":1}}"#,
            r#"{"step":1}"#,
            r#"[]"#,
            r#"{"type":"done","step":1,"reason":"completed"} x"#,
            r#"{"type":"done""#,
            deep.as_str(),
        ] {
            let e = AgentEvent::from_json(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidInput, "{bad}");
            assert!(e.message.starts_with("agent event: "), "{}", e.message);
        }
    }
}
