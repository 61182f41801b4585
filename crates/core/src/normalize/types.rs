//! Shapes of the canonical (normalized) model and of the conversion API, for
//! the generated TypeScript types. The codecs work on [`super::J`] values and
//! never go through these types; FORMAT.md §15 is the specification.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schema::{StopReason, Usage};

/// A provider wire format: Anthropic Messages, OpenAI Chat Completions, OpenAI
/// Responses, Google Gemini `generateContent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ProviderName {
    Anthropic,
    Openai,
    OpenaiResponses,
    Google,
}

use crate::schema::shape;

shape! {
    /// Text. `textSignature`: OpenAI Responses message id/phase (pi's `{"v":1,…}`
    /// JSON) or a Gemini `thoughtSignature`. `vendor`: provider-specific members
    /// kept for that provider only (`{"anthropic": {"cache_control": …}}`).
    pub struct NormalizedText {
        pub text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub text_signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// Reasoning. `thinkingSignature`: Anthropic signature (or redacted data with
    /// `redacted`), the whole Responses reasoning item as JSON text, a Gemini
    /// thought signature, or the OpenAI-compatible field name it came from.
    pub struct NormalizedThinking {
        pub thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub thinking_signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub redacted: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// An image: base64 `data` + `mimeType`, or a `url`, or a provider `fileId`.
    pub struct NormalizedImage {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub file_id: Option<String>,
        /// OpenAI's `detail` (`auto`, `low`, `high`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub detail: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// A document (PDF, text): base64 `data`, inline `text`, a `url` or a `fileId`.
    pub struct NormalizedDocument {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub file_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// A tool call. `arguments` is always an object; when the model's arguments
    /// were not a JSON object, `argumentsRaw` holds their original text.
    /// Responses calls have the id `call_id|item_id` (as pi). `syntheticId`:
    /// Gemini sent no id, one was made up (and is never sent back to Gemini).
    pub struct NormalizedToolCall {
        pub id: String,
        pub name: String,
        #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
        pub arguments: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub arguments_raw: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub thought_signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub synthetic_id: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// A provider's own block kept as it was (`serverTool`: server-side tool use
    /// and results; `unknown`: a block type this version does not know). Sent
    /// only back to that provider.
    pub struct RawBlock {
        pub provider: ProviderName,
        #[cfg_attr(feature = "ts", ts(type = "unknown"))]
        pub raw: Value,
    }
}

/// A block of canonical content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum NormalizedBlock {
    #[serde(rename = "text")]
    Text(NormalizedText),
    #[serde(rename = "thinking")]
    Thinking(NormalizedThinking),
    #[serde(rename = "image")]
    Image(NormalizedImage),
    #[serde(rename = "document")]
    Document(NormalizedDocument),
    #[serde(rename = "toolCall")]
    ToolCall(NormalizedToolCall),
    #[serde(rename = "serverTool")]
    ServerTool(RawBlock),
    #[serde(rename = "unknown")]
    Unknown(RawBlock),
}

/// Content given as a string or as blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum NormalizedContent {
    Text(String),
    Blocks(Vec<NormalizedBlock>),
}

shape! {
    /// The exact provider JSON a message (and the `count - 1` after it) was
    /// decoded from, when a fresh encoding would not give the same bytes.
    /// Sent instead of re-encoding when the target is that provider and the
    /// messages are unchanged (`hash` of what they were).
    pub struct OriginalJson {
        pub provider: ProviderName,
        pub json: String,
        pub count: u32,
        pub hash: String,
    }
}

shape! {
    /// A user turn.
    pub struct NormalizedUserMessage {
        pub content: NormalizedContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub timestamp: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub original: Option<OriginalJson>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// A model turn, with its origin (`api`, `provider`, `model`).
    pub struct NormalizedAssistantMessage {
        pub content: Vec<NormalizedBlock>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub api: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub provider: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub stop_reason: Option<StopReason>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub error_message: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub usage: Option<Usage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub timestamp: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub original: Option<OriginalJson>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// The result of one tool call.
    pub struct NormalizedToolResultMessage {
        pub tool_call_id: String,
        pub tool_name: String,
        pub content: Vec<NormalizedBlock>,
        pub is_error: bool,
        /// The provider gave the content as one string: its one text block
        /// goes to each target as a string. Without it, blocks stay an array
        /// where the target takes one (Anthropic, OpenAI Chat, Responses).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub content_string: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub synthetic_id: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub timestamp: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub original: Option<OriginalJson>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

shape! {
    /// A message of a role this version does not model (Anthropic `critic`,
    /// OpenAI's deprecated `function`, …): the provider's message as it
    /// was, sent only back to that provider.
    pub struct NormalizedUnknownMessage {
        pub provider: ProviderName,
        #[cfg_attr(feature = "ts", ts(type = "unknown"))]
        pub raw: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub original: Option<OriginalJson>,
    }
}

shape! {
    /// A system or developer message inside the conversation (OpenAI Chat and
    /// Responses; an Anthropic inline `system` message has `vendor.anthropic.inline`).
    pub struct NormalizedSystemMessage {
        pub content: NormalizedContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub developer: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub original: Option<OriginalJson>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, Record<string, unknown>>"))]
        pub vendor: Option<Value>,
    }
}

/// A canonical message (pi-ai's `user`/`assistant`/`toolResult` shapes, extended).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum NormalizedMessage {
    #[serde(rename = "user")]
    User(NormalizedUserMessage),
    #[serde(rename = "assistant")]
    Assistant(NormalizedAssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(NormalizedToolResultMessage),
    #[serde(rename = "system")]
    System(NormalizedSystemMessage),
    #[serde(rename = "unknown")]
    Unknown(NormalizedUnknownMessage),
}

shape! {
    /// A tool the model may call.
    pub struct ToolDeclaration {
        pub name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub description: Option<String>,
        /// JSON Schema of the arguments.
        #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
        pub parameters: Value,
    }
}

shape! {
    /// A conversation in canonical form (`fromProvider`'s result).
    pub struct NormalizedConversation {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub system: Option<NormalizedContent>,
        /// Set when the system prompt was an OpenAI `system`/`developer` message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub system_role: Option<String>,
        pub messages: Vec<NormalizedMessage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub tools: Option<Vec<ToolDeclaration>>,
        /// The system prompt's exact JSON, when a fresh encoding would differ
        /// (used by `toProvider` to the same provider while the prompt is unchanged).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub system_original: Option<SystemOriginal>,
    }
}

shape! {
    /// See `NormalizedConversation.systemOriginal`.
    pub struct SystemOriginal {
        pub provider: ProviderName,
        pub json: String,
        pub hash: String,
    }
}

shape! {
    /// Options of `toProvider`.
    pub struct ToProviderOptions {
        /// The target model: messages from the same provider but another model
        /// do not replay their signatures; Gemini 3 rules (call ids, signature
        /// placeholder) apply to `gemini-3…` and later.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub model: Option<String>,
        /// The system prompt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub system: Option<NormalizedContent>,
        /// OpenAI Chat: the role of the system prompt's message, `system`
        /// (default) or `developer`. Responses always takes it as `instructions`;
        /// Anthropic and Gemini have one top-level system prompt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub system_role: Option<String>,
        /// Tool definitions, converted to the target's shape.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub tools: Option<Vec<ToolDeclaration>>,
        /// `fromProvider`'s `systemOriginal`, for byte-stable output to the same provider.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub system_original: Option<SystemOriginal>,
        /// The target has thinking on (Anthropic extended or adaptive
        /// thinking). Anthropic then rejects a final assistant turn (a tool-use
        /// loop) that does not start with a thinking block: the calls of such a
        /// turn's steps before the first one that does, and their results, are
        /// sent as text (`tool_calls_to_text` in the report). Other targets
        /// ignore it. Default `false`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        pub thinking: Option<bool>,
        /// The `idMap` of an earlier conversion (target id → original id): ids
        /// found in it get their original back before the target's rules apply,
        /// so a conversation that went to another provider and comes back has
        /// its own ids again. An id given back stays as it is where the target
        /// takes it (Anthropic: `[a-zA-Z0-9_-]`, at most 64; OpenAI Chat: at
        /// most 40; Responses and Gemini: at most 64).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, string>"))]
        pub id_map: Option<std::collections::BTreeMap<String, String>>,
    }
}

shape! {
    /// Progress of `SessionMigrator.migrate`.
    pub struct MigrationProgress {
        pub bytes_read: f64,
        pub total_bytes: f64,
        pub messages_changed: f64,
    }
}
