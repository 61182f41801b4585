//! Typed shapes of session entries and messages (pi v3), for typed reading of
//! entry JSON (`serde_json::from_str::<SessionEntry>(text)`) and for the
//! generated TypeScript types. Loading never goes through these types: entries
//! are kept as the bytes they were written as, unknown fields included.

use serde::{Deserialize, Serialize};
use serde_json::Value;

macro_rules! shape {
    ($(#[$m:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        pub struct $name { $($body)* }
    };
}
pub(crate) use shape;

shape! {
    /// Text. `textSignature` is OpenAI Responses message metadata.
    pub struct TextContent {
        pub text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub text_signature: Option<String>,
    }
}

shape! {
    /// Model reasoning. `thinkingSignature` is the provider's opaque signature (or,
    /// with `redacted`, the encrypted payload).
    pub struct ThinkingContent {
        pub thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub thinking_signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub redacted: Option<bool>,
    }
}

shape! {
    /// An image, base64-encoded.
    pub struct ImageContent {
        pub data: String,
        pub mime_type: String,
    }
}

shape! {
    /// A tool call. `thoughtSignature` is Gemini's.
    pub struct ToolCall {
        pub id: String,
        pub name: String,
        #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
        pub arguments: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub thought_signature: Option<String>,
    }
}

/// A block of user or tool-result content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum UserBlock {
    #[serde(rename = "text")]
    Text(TextContent),
    #[serde(rename = "image")]
    Image(ImageContent),
}

/// A block of assistant content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum AssistantBlock {
    #[serde(rename = "text")]
    Text(TextContent),
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

/// User content: a string or blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum UserContent {
    Text(String),
    Blocks(Vec<UserBlock>),
}

shape! {
    /// Cost in dollars.
    pub struct Cost {
        pub input: f64,
        pub output: f64,
        pub cache_read: f64,
        pub cache_write: f64,
        pub total: f64,
    }
}

shape! {
    /// Token usage of one model call.
    pub struct Usage {
        pub input: f64,
        pub output: f64,
        pub cache_read: f64,
        pub cache_write: f64,
        pub total_tokens: f64,
        pub cost: Cost,
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

shape! {
    /// A message from the user.
    pub struct UserMessage {
        pub content: UserContent,
        /// Milliseconds since the epoch.
        pub timestamp: f64,
    }
}

shape! {
    /// A model response, with the provider, API and model that produced it.
    pub struct AssistantMessage {
        pub content: Vec<AssistantBlock>,
        pub api: String,
        pub provider: String,
        pub model: String,
        pub usage: Usage,
        pub stop_reason: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub error_message: Option<String>,
        /// Provider response id (OpenAI Responses).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub response_id: Option<String>,
        pub timestamp: f64,
    }
}

shape! {
    /// The result of a tool call.
    pub struct ToolResultMessage {
        pub tool_call_id: String,
        pub tool_name: String,
        pub content: Vec<UserBlock>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
        pub details: Option<Value>,
        pub is_error: bool,
        pub timestamp: f64,
    }
}

shape! {
    /// A shell command the user ran (`!cmd`); `excludeFromContext` for `!!cmd`.
    pub struct BashExecutionMessage {
        pub command: String,
        pub output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub exit_code: Option<f64>,
        pub cancelled: bool,
        pub truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub full_output_path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub exclude_from_context: Option<bool>,
        pub timestamp: f64,
    }
}

shape! {
    /// A message injected by an extension (from `custom_message` entries).
    pub struct CustomMessage {
        pub custom_type: String,
        pub content: UserContent,
        pub display: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
        pub details: Option<Value>,
        pub timestamp: f64,
    }
}

shape! {
    /// The summary of a branch the conversation came back from.
    pub struct BranchSummaryMessage {
        pub summary: String,
        pub from_id: String,
        pub timestamp: f64,
    }
}

shape! {
    /// The summary of compacted history.
    pub struct CompactionSummaryMessage {
        pub summary: String,
        pub tokens_before: f64,
        pub timestamp: f64,
    }
}

/// A message of the context, as pi's `buildSessionContext` yields it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum AgentMessage {
    #[serde(rename = "user")]
    User(UserMessage),
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
    #[serde(rename = "bashExecution")]
    BashExecution(BashExecutionMessage),
    #[serde(rename = "custom")]
    Custom(CustomMessage),
    #[serde(rename = "branchSummary")]
    BranchSummary(BranchSummaryMessage),
    #[serde(rename = "compactionSummary")]
    CompactionSummary(CompactionSummaryMessage),
}

/// A message as sent to an LLM (pi's `convertToLlm` output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum LlmMessage {
    #[serde(rename = "user")]
    User(UserMessage),
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
}

shape! {
    /// The first line of a session file.
    pub struct SessionHeader {
        #[serde(rename = "type")]
        #[cfg_attr(feature = "ts", ts(rename = "type", type = "\"session\""))]
        pub kind: String,
        /// Absent in version 1 files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub version: Option<u32>,
        pub id: String,
        pub timestamp: String,
        pub cwd: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub parent_session: Option<String>,
    }
}

shape! {
    /// Fields every entry has.
    pub struct EntryBase {
        pub id: String,
        /// `null` for a root.
        pub parent_id: Option<String>,
        /// ISO-8601.
        pub timestamp: String,
    }
}

shape! {
    pub struct MessageEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub message: AgentMessage,
    }
}

shape! {
    /// Older history replaced by a summary; the context keeps entries from
    /// `firstKeptEntryId` on.
    pub struct CompactionEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub summary: String,
        pub first_kept_entry_id: String,
        pub tokens_before: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
        pub details: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub from_hook: Option<bool>,
    }
}

shape! {
    /// A summary of a branch left behind (`fromId`: where it started, or `"root"`).
    pub struct BranchSummaryEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub from_id: String,
        pub summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
        pub details: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub from_hook: Option<bool>,
    }
}

shape! {
    pub struct ModelChangeEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub provider: String,
        pub model_id: String,
    }
}

shape! {
    pub struct ThinkingLevelChangeEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub thinking_level: String,
    }
}

shape! {
    /// Extension state; not part of the context. forkpoint's own records use
    /// `customType` values starting with `forkpoint.`.
    pub struct CustomEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub custom_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
        pub data: Option<Value>,
    }
}

shape! {
    /// A message from an extension that is part of the context (as a user message).
    pub struct CustomMessageEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub custom_type: String,
        pub content: UserContent,
        pub display: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
        pub details: Option<Value>,
    }
}

shape! {
    /// Sets (or, without `label`, clears) the label of `targetId`.
    pub struct LabelEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub target_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub label: Option<String>,
    }
}

shape! {
    /// The session's display name.
    pub struct SessionInfoEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub name: Option<String>,
    }
}

shape! {
    /// A durable move of the current leaf to `targetId` (`null`: before the first
    /// entry). A pointer, not a node of the tree; its `parentId` is the target.
    pub struct LeafEntry {
        #[serde(flatten)]
        pub base: EntryBase,
        pub target_id: Option<String>,
    }
}

/// An entry of a session file. Files may also hold entry types this library does
/// not know; they are kept and returned as they are (see `UnknownEntry`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum SessionEntry {
    #[serde(rename = "message")]
    Message(MessageEntry),
    #[serde(rename = "compaction")]
    Compaction(CompactionEntry),
    #[serde(rename = "branch_summary")]
    BranchSummary(BranchSummaryEntry),
    #[serde(rename = "model_change")]
    ModelChange(ModelChangeEntry),
    #[serde(rename = "thinking_level_change")]
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    #[serde(rename = "custom")]
    Custom(CustomEntry),
    #[serde(rename = "custom_message")]
    CustomMessage(CustomMessageEntry),
    #[serde(rename = "label")]
    Label(LabelEntry),
    #[serde(rename = "session_info")]
    SessionInfo(SessionInfoEntry),
    #[serde(rename = "leaf")]
    Leaf(LeafEntry),
}

shape! {
    /// The context from a leaf: what pi's `buildSessionContext` returns.
    pub struct SessionContext {
        pub messages: Vec<AgentMessage>,
        /// `"off"` unless a thinking-level change is on the path; `null` when a
        /// lazy load could not tell.
        pub thinking_level: Option<String>,
        pub model: Option<crate::types::ModelRef>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pi_entries() {
        let line = r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
        let e: SessionEntry = serde_json::from_str(line).unwrap();
        match e {
            SessionEntry::Message(m) => {
                assert_eq!(m.base.id, "a");
                assert!(
                    matches!(m.message, AgentMessage::User(UserMessage { content: UserContent::Text(ref t), .. }) if t == "hi")
                );
            }
            _ => panic!("wrong variant"),
        }
    }
}
