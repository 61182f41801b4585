//! Session entries: the envelope every line carries, located without building values.

use crate::json::{self, JsonError, Kind, ObjectReader, Value};

/// The entry types of the session format (see FORMAT.md). Anything else is `Unknown`
/// and kept byte-for-byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    Message,
    Compaction,
    BranchSummary,
    ModelChange,
    ThinkingLevelChange,
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    /// A durable move of the current leaf: a pointer, not a node of the tree.
    Leaf,
    Unknown,
}

impl EntryKind {
    /// The kind for a `type` string.
    pub fn from_type(t: &str) -> EntryKind {
        match t {
            "message" => EntryKind::Message,
            "compaction" => EntryKind::Compaction,
            "branch_summary" => EntryKind::BranchSummary,
            "model_change" => EntryKind::ModelChange,
            "thinking_level_change" => EntryKind::ThinkingLevelChange,
            "custom" => EntryKind::Custom,
            "custom_message" => EntryKind::CustomMessage,
            "label" => EntryKind::Label,
            "session_info" => EntryKind::SessionInfo,
            "leaf" => EntryKind::Leaf,
            _ => EntryKind::Unknown,
        }
    }

    /// Whether entries of this kind produce a message in the context (when non-empty).
    pub fn is_message_like(self) -> bool {
        matches!(
            self,
            EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary
        )
    }
}

/// The spans of the top-level fields forkpoint reads, found in one validating pass.
/// Every other member is validated and skipped (and stays in the raw line).
#[derive(Debug, Default, Clone)]
pub struct Envelope {
    pub ty: Option<Value>,
    pub id: Option<Value>,
    pub parent_id: Option<Value>,
    pub timestamp: Option<Value>,
    pub version: Option<Value>,
    pub message: Option<Value>,
    pub target_id: Option<Value>,
    pub label: Option<Value>,
    pub summary: Option<Value>,
    pub first_kept_entry_id: Option<Value>,
    pub first_kept_entry_index: Option<Value>,
    pub tokens_before: Option<Value>,
    pub from_id: Option<Value>,
    pub details: Option<Value>,
    pub content: Option<Value>,
    pub custom_type: Option<Value>,
    pub display: Option<Value>,
    pub thinking_level: Option<Value>,
    pub provider: Option<Value>,
    pub model_id: Option<Value>,
    pub name: Option<Value>,
    pub cwd: Option<Value>,
    pub parent_session: Option<Value>,
    /// Fields of the `message` object (role, provider, model, ...), read in the same pass.
    pub msg: MessageFields,
    /// Number of top-level members.
    pub members: usize,
    /// Keys of all top-level members, in order (only when collected).
    pub keys: Vec<Value>,
}

/// Parses a line as one JSON object and records the spans of known top-level
/// fields (duplicates: the last one wins, as in `JSON.parse`). The whole line is
/// validated, including trailing whitespace.
pub fn parse_envelope(line: &str, max_depth: usize) -> Result<Envelope, JsonError> {
    parse_envelope_inner(line, max_depth, false)
}

/// As [`parse_envelope`], also collecting every top-level key span in `keys`.
pub fn parse_envelope_with_keys(line: &str, max_depth: usize) -> Result<Envelope, JsonError> {
    parse_envelope_inner(line, max_depth, true)
}

fn parse_envelope_inner(
    line: &str,
    max_depth: usize,
    collect_keys: bool,
) -> Result<Envelope, JsonError> {
    let b = line.as_bytes();
    let mut r = ObjectReader::open(b, 0, 1, max_depth)?;
    let mut env = Envelope::default();
    while let Some(key) = r.next_key()? {
        env.members += 1;
        if collect_keys {
            env.keys.push(key);
        }
        let decoded;
        let name = if key.escaped {
            decoded = json::decode_escaped(key.inner(line));
            decoded.as_str()
        } else {
            key.inner(line)
        };
        let v = if name == "message" && r.peek() == Some(b'{') {
            // Descend instead of skipping: one pass finds role, provider and model.
            let mut inner = r.enter_object()?;
            let start = r.end_of_value_start();
            env.msg = MessageFields::default();
            while let Some(k) = inner.next_key()? {
                let v = inner.skip_value()?;
                if k.escaped {
                    env.msg.set(&json::decode_escaped(k.inner(line)), v);
                } else {
                    env.msg.set(k.inner(line), v);
                }
            }
            r.resume_after(&inner);
            Value {
                start,
                end: inner.end(),
                kind: Kind::Object,
                escaped: false,
            }
        } else {
            r.skip_value()?
        };
        if let Some(slot) = slot_for(&mut env, name) {
            *slot = Some(v);
        }
    }
    let end = json::skip_ws(b, r.end());
    if end != b.len() {
        return Err(JsonError::Syntax {
            at: end,
            expected: "end of line after the JSON object",
        });
    }
    Ok(env)
}

fn slot_for<'e>(env: &'e mut Envelope, key: &str) -> Option<&'e mut Option<Value>> {
    Some(match key {
        "type" => &mut env.ty,
        "id" => &mut env.id,
        "parentId" => &mut env.parent_id,
        "timestamp" => &mut env.timestamp,
        "version" => &mut env.version,
        "message" => &mut env.message,
        "targetId" => &mut env.target_id,
        "label" => &mut env.label,
        "summary" => &mut env.summary,
        "firstKeptEntryId" => &mut env.first_kept_entry_id,
        "firstKeptEntryIndex" => &mut env.first_kept_entry_index,
        "tokensBefore" => &mut env.tokens_before,
        "fromId" => &mut env.from_id,
        "details" => &mut env.details,
        "content" => &mut env.content,
        "customType" => &mut env.custom_type,
        "display" => &mut env.display,
        "thinkingLevel" => &mut env.thinking_level,
        "provider" => &mut env.provider,
        "modelId" => &mut env.model_id,
        "name" => &mut env.name,
        "cwd" => &mut env.cwd,
        "parentSession" => &mut env.parent_session,
        _ => return None,
    })
}

/// Fields of a `message` payload that forkpoint reads.
#[derive(Debug, Default, Clone)]
pub struct MessageFields {
    pub role: Option<Value>,
    pub provider: Option<Value>,
    pub model: Option<Value>,
    pub exclude_from_context: Option<Value>,
    pub timestamp: Option<Value>,
    pub content: Option<Value>,
}

impl MessageFields {
    fn set(&mut self, key: &str, v: Value) {
        match key {
            "role" => self.role = Some(v),
            "provider" => self.provider = Some(v),
            "model" => self.model = Some(v),
            "excludeFromContext" => self.exclude_from_context = Some(v),
            "timestamp" => self.timestamp = Some(v),
            "content" => self.content = Some(v),
            _ => {}
        }
    }
}

/// Reads the known fields of a message object found at `span` within `line`.
pub fn parse_message_fields(
    line: &str,
    span: Value,
    max_depth: usize,
) -> Result<MessageFields, JsonError> {
    let mut out = MessageFields::default();
    if span.kind != Kind::Object {
        return Ok(out);
    }
    let sub = line.get(span.start..span.end).unwrap_or("");
    let mut r = ObjectReader::open(sub.as_bytes(), 0, 2, max_depth)?;
    while let Some(key) = r.next_key()? {
        let mut v = r.skip_value()?;
        v.start += span.start;
        v.end += span.start;
        if key.escaped {
            out.set(&json::decode_escaped(key.inner(sub)), v);
        } else {
            out.set(key.inner(sub), v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_known_fields_last_wins() {
        let line = r#"{"type":"message","id":"a1","parentId":null,"x":{"id":"nested"},"message":{"role":"user"},"id":"a2"}"#;
        let env = parse_envelope(line, 64).unwrap();
        assert_eq!(env.ty.unwrap().str(line).unwrap(), "message");
        assert_eq!(env.id.unwrap().str(line).unwrap(), "a2");
        assert_eq!(env.parent_id.unwrap().kind, Kind::Null);
        let m = parse_message_fields(line, env.message.unwrap(), 64).unwrap();
        assert_eq!(m.role.unwrap().str(line).unwrap(), "user");
    }

    #[test]
    fn escaped_keys_match() {
        let line = r#"{"\u0074ype":"label","id":"x"}"#;
        let env = parse_envelope(line, 64).unwrap();
        assert_eq!(env.ty.unwrap().str(line).unwrap(), "label");
    }

    #[test]
    fn rejects_non_objects_and_trailing_garbage() {
        assert!(parse_envelope("[1]", 64).is_err());
        assert!(parse_envelope("{} {}", 64).is_err());
        assert!(parse_envelope("{\"a\":1}  \r", 64).is_ok());
    }
}
