//! Building the context an LLM is sent from a leaf, following pi's
//! `buildSessionContext` and `convertToLlm` exactly (FORMAT.md, "Context").
//!
//! Messages are produced as JSON text: `message` entries contribute their
//! `message` object byte-for-byte; compaction summaries, branch summaries and
//! custom messages are synthesized with the same keys, in the same order, as pi.

use std::borrow::Cow;

use crate::entry::{self, EntryKind, Envelope};
use crate::error::{Error, Result};
use crate::json::{self, Kind, Value};
use crate::load::{EntryRec, Interner, Role};
use crate::time;

/// One entry on a path: its record and its (migrated) line text.
#[derive(Debug, Clone, Copy)]
pub struct PathItem<'a> {
    pub rec: &'a EntryRec,
    pub text: &'a str,
}

/// Which part of the context to produce.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    /// Keep only the newest `n` messages (the compaction summary not counted).
    pub max_messages: Option<usize>,
    /// With `max_messages`: keep the compaction summary in front anyway.
    pub include_summary: bool,
}

/// The context from one leaf.
#[derive(Debug, Clone, Default)]
pub struct Context<'a> {
    /// The messages (pi `AgentMessage`s), each as JSON text.
    pub messages: Vec<Cow<'a, str>>,
    /// Thinking level in force as JSON text (`"off"` unless a change is on the path;
    /// empty when unknown).
    pub thinking_level: String,
    /// `{"provider":…,"modelId":…}` as JSON text, or `None` when no model is known.
    pub model: Option<String>,
    /// Index (in the path) of the newest compaction, if any.
    pub compaction: Option<usize>,
    /// Number of messages the full context has (before any window cut).
    pub total_messages: usize,
    /// Index in the path of the first entry that contributes to the context, i.e.
    /// the oldest entry a lazy loader must have.
    pub first_needed: usize,
}

fn envelope(item: &PathItem, max_depth: usize) -> Result<Envelope> {
    entry::parse_envelope(item.text, max_depth)
        .map_err(|e| Error::corrupted(e.describe()).at(item.rec.line_no(), item.rec.offset))
}

/// `new Date(value).getTime()` as JSON text (`null` for `NaN`).
fn js_date_ms(v: Option<Value>, src: &str) -> String {
    let ms: Option<i64> = match v {
        None => None,
        Some(v) => match v.kind {
            Kind::String => v.str(src).and_then(|s| time::iso_to_ms(&s)),
            Kind::Number => v
                .raw(src)
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && n.abs() <= 8.64e15)
                .map(|n| n.trunc() as i64),
            Kind::Null | Kind::False => Some(0),
            Kind::True => Some(1),
            _ => None,
        },
    };
    ms.map_or_else(|| "null".to_string(), |m| m.to_string())
}

/// Appends `,"key":raw` when the member is present (JSON.stringify drops `undefined`).
fn member(out: &mut String, key: &str, v: Option<Value>, src: &str) {
    if let Some(v) = v {
        out.push_str(",\"");
        out.push_str(key);
        out.push_str("\":");
        out.push_str(v.raw(src));
    }
}

/// The message an entry contributes, if any (pi's `appendMessage`).
pub fn message_of<'a>(item: &PathItem<'a>, max_depth: usize) -> Result<Option<Cow<'a, str>>> {
    match item.rec.kind {
        EntryKind::Message => {
            let (s, e) = item.rec.msg;
            if e > s {
                Ok(item.text.get(s as usize..e as usize).map(Cow::Borrowed))
            } else {
                // pi pushes `entry.message`, which is undefined here.
                Ok(Some(Cow::Borrowed("null")))
            }
        }
        EntryKind::CustomMessage => {
            let env = envelope(item, max_depth)?;
            let src = item.text;
            let mut out = String::from("{\"role\":\"custom\"");
            member(&mut out, "customType", env.custom_type, src);
            member(&mut out, "content", env.content, src);
            member(&mut out, "display", env.display, src);
            member(&mut out, "details", env.details, src);
            out.push_str(",\"timestamp\":");
            out.push_str(&js_date_ms(env.timestamp, src));
            out.push('}');
            Ok(Some(Cow::Owned(out)))
        }
        EntryKind::BranchSummary => {
            let env = envelope(item, max_depth)?;
            let src = item.text;
            if !env.summary.is_some_and(|v| v.truthy(src)) {
                return Ok(None);
            }
            let mut out = String::from("{\"role\":\"branchSummary\"");
            member(&mut out, "summary", env.summary, src);
            member(&mut out, "fromId", env.from_id, src);
            out.push_str(",\"timestamp\":");
            out.push_str(&js_date_ms(env.timestamp, src));
            out.push('}');
            Ok(Some(Cow::Owned(out)))
        }
        _ => Ok(None),
    }
}

fn compaction_summary(item: &PathItem, env: &Envelope) -> String {
    let src = item.text;
    let mut out = String::from("{\"role\":\"compactionSummary\"");
    member(&mut out, "summary", env.summary, src);
    member(&mut out, "tokensBefore", env.tokens_before, src);
    out.push_str(",\"timestamp\":");
    out.push_str(&js_date_ms(env.timestamp, src));
    out.push('}');
    out
}

/// Index in `path` of the newest compaction.
pub fn last_compaction(path: &[PathItem]) -> Option<usize> {
    path.iter()
        .rposition(|p| p.rec.kind == EntryKind::Compaction)
}

/// The decoded `firstKeptEntryId` of a compaction entry.
pub fn first_kept_id(item: &PathItem, max_depth: usize) -> Result<Option<String>> {
    let env = envelope(item, max_depth)?;
    Ok(env
        .first_kept_entry_id
        .filter(|v| v.kind == Kind::String)
        .and_then(|v| v.id_str(item.text))
        .map(|c| c.into_owned()))
}

/// The thinking level and model in force at the end of `path`, found by walking
/// it backwards (the last change wins; assistant messages set the model).
pub fn settings(path: &[PathItem], interner: &Interner) -> Settings {
    let mut s = Settings::default();
    for item in path.iter().rev() {
        if s.thinking.is_some() && s.model.is_some() {
            break;
        }
        let r = item.rec;
        match r.kind {
            EntryKind::ThinkingLevelChange if s.thinking.is_none() => {
                s.thinking = Some(interner.get(r.setting).to_string());
            }
            EntryKind::ModelChange if s.model.is_none() => {
                s.model = Some(interner.get(r.setting).to_string())
            }
            EntryKind::Message if r.role == Role::Assistant && s.model.is_none() => {
                s.model = Some(interner.get(r.setting).to_string());
            }
            _ => {}
        }
    }
    s
}

/// Thinking level and model found on a path, as JSON text (`None`: no change on it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub thinking: Option<String>,
    pub model: Option<String>,
}

/// Builds the context for the last entry of `path` (root first).
pub fn build<'a>(
    path: &[PathItem<'a>],
    window: Window,
    max_depth: usize,
    interner: &Interner,
) -> Result<Context<'a>> {
    let mut ctx = Context::default();
    let set = settings(path, interner);
    ctx.thinking_level = set.thinking.unwrap_or_else(|| "\"off\"".to_string());
    ctx.model = set.model;

    let mut summary: Option<String> = None;
    let mut body: Vec<Cow<'a, str>> = Vec::new();
    match last_compaction(path) {
        Some(c) => {
            ctx.compaction = Some(c);
            let env = envelope(&path[c], max_depth)?;
            summary = Some(compaction_summary(&path[c], &env));
            let first_kept = env
                .first_kept_entry_id
                .filter(|v| v.kind == Kind::String)
                .and_then(|v| v.id_str(path[c].text));
            let start = first_kept
                .as_deref()
                .and_then(|fk| path[..c].iter().position(|p| &*p.rec.id == fk))
                .unwrap_or(c);
            ctx.first_needed = start;
            for item in path[start..c].iter().chain(&path[c + 1..]) {
                if let Some(m) = message_of(item, max_depth)? {
                    body.push(m);
                }
            }
        }
        None => {
            for item in path {
                if let Some(m) = message_of(item, max_depth)? {
                    body.push(m);
                }
            }
        }
    }
    ctx.total_messages = body.len() + usize::from(summary.is_some());
    let cut = window
        .max_messages
        .map_or(0, |n| body.len().saturating_sub(n));
    if let Some(s) = summary
        && (cut == 0 || window.include_summary)
    {
        ctx.messages.push(Cow::Owned(s));
    }
    ctx.messages.extend(body.drain(cut..));
    Ok(ctx)
}

/// `[m1,m2,…]` from message texts.
pub fn join_array<S: AsRef<str>>(items: &[S]) -> String {
    let len = items.iter().map(|m| m.as_ref().len() + 1).sum::<usize>() + 2;
    let mut out = String::with_capacity(len);
    out.push('[');
    for (i, m) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(m.as_ref());
    }
    out.push(']');
    out
}

impl Context<'_> {
    /// The whole context as `{"messages":[…],"thinkingLevel":…,"model":…}`.
    pub fn to_json(&self) -> String {
        let thinking = if self.thinking_level.is_empty() {
            "null"
        } else {
            &self.thinking_level
        };
        let model = self.model.as_deref().unwrap_or("null");
        // One buffer of the exact size: a long context is not copied again
        // (nor held twice) on its way into the object.
        let len = self.messages.iter().map(|m| m.len() + 1).sum::<usize>()
            + thinking.len()
            + model.len()
            + 48;
        let mut out = String::with_capacity(len);
        out.push_str("{\"messages\":[");
        for (i, m) in self.messages.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(m);
        }
        out.push_str("],\"thinkingLevel\":");
        out.push_str(thinking);
        out.push_str(",\"model\":");
        out.push_str(model);
        out.push('}');
        out
    }
}

const COMPACTION_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_SUFFIX: &str = "\n</summary>";
const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUFFIX: &str = "</summary>";

/// `String(value)` of a JSON value, escaped for inclusion in a string literal.
fn js_string_escaped(v: Option<Value>, src: &str) -> String {
    match v {
        None => "undefined".into(),
        Some(v) => match v.kind {
            Kind::String => v.inner(src).to_string(),
            Kind::Number => {
                let n = v.raw(src).parse::<f64>().unwrap_or(f64::NAN);
                if n.fract() == 0.0 && n.abs() < 1e21 {
                    format!("{}", n as i64)
                } else {
                    format!("{n}")
                }
            }
            Kind::True => "true".into(),
            Kind::False => "false".into(),
            Kind::Null => "null".into(),
            Kind::Array => {
                // String([…]) joins the elements; keep the raw text of the elements.
                let mut s = String::new();
                json::push_escaped(
                    &mut s,
                    v.raw(src).trim_start_matches('[').trim_end_matches(']'),
                );
                s
            }
            Kind::Object => "[object Object]".into(),
        },
    }
}

fn user_text(text_escaped: &str, timestamp: Option<Value>, src: &str) -> String {
    let mut out = String::from("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"");
    out.push_str(text_escaped);
    out.push_str("\"}]");
    member(&mut out, "timestamp", timestamp, src);
    out.push('}');
    out
}

/// Converts pi `AgentMessage`s to the LLM messages pi sends (`convertToLlm`):
/// bash executions, custom messages and summaries become user messages; a bash
/// execution marked `excludeFromContext` and unknown roles are left out.
pub fn to_llm<'a>(messages: &[Cow<'a, str>], max_depth: usize) -> Result<Vec<Cow<'a, str>>> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let src: &str = m.as_ref();
        let mut r = match json::ObjectReader::open(src.as_bytes(), 0, 1, max_depth) {
            Ok(r) => r,
            Err(_) => continue, // not an object: pi's switch falls through to undefined
        };
        let mut f: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
        while let Some(k) = r.next_key().map_err(|e| Error::corrupted(e.describe()))? {
            let v = r.skip_value().map_err(|e| Error::corrupted(e.describe()))?;
            f.insert(k.str(src).unwrap_or_default().into_owned(), v);
        }
        let get = |k: &str| f.get(k).copied();
        let role = get("role")
            .and_then(|v| v.str(src))
            .map(|c| c.into_owned())
            .unwrap_or_default();
        match role.as_str() {
            "user" | "assistant" | "toolResult" => out.push(m.clone()),
            "bashExecution" => {
                if get("excludeFromContext").is_some_and(|v| v.truthy(src)) {
                    continue;
                }
                let mut t = String::new();
                t.push_str("Ran `");
                t.push_str(&js_string_escaped(get("command"), src));
                t.push_str("`\\n");
                if get("output").is_some_and(|v| v.truthy(src)) {
                    t.push_str("```\\n");
                    t.push_str(&js_string_escaped(get("output"), src));
                    t.push_str("\\n```");
                } else {
                    t.push_str("(no output)");
                }
                if get("cancelled").is_some_and(|v| v.truthy(src)) {
                    t.push_str("\\n\\n(command cancelled)");
                } else if let Some(code) = get("exitCode").filter(|v| v.kind != Kind::Null) {
                    let is_zero =
                        code.kind == Kind::Number && code.raw(src).parse::<f64>().ok() == Some(0.0);
                    if !is_zero {
                        t.push_str("\\n\\nCommand exited with code ");
                        t.push_str(&js_string_escaped(Some(code), src));
                    }
                }
                if get("truncated").is_some_and(|v| v.truthy(src))
                    && get("fullOutputPath").is_some_and(|v| v.truthy(src))
                {
                    t.push_str("\\n\\n[Output truncated. Full output: ");
                    t.push_str(&js_string_escaped(get("fullOutputPath"), src));
                    t.push(']');
                }
                out.push(Cow::Owned(user_text(&t, get("timestamp"), src)));
            }
            "custom" => {
                let mut o = String::from("{\"role\":\"user\",\"content\":");
                match get("content") {
                    Some(c) if c.kind == Kind::String => {
                        o.push_str("[{\"type\":\"text\",\"text\":");
                        o.push_str(c.raw(src));
                        o.push_str("}]");
                    }
                    Some(c) => o.push_str(c.raw(src)),
                    None => o.truncate(o.len() - ",\"content\":".len()),
                }
                member(&mut o, "timestamp", get("timestamp"), src);
                o.push('}');
                out.push(Cow::Owned(o));
            }
            "branchSummary" | "compactionSummary" => {
                let (pre, suf) = if role == "branchSummary" {
                    (BRANCH_PREFIX, BRANCH_SUFFIX)
                } else {
                    (COMPACTION_PREFIX, COMPACTION_SUFFIX)
                };
                let mut t = String::new();
                json::push_escaped(&mut t, pre);
                t.push_str(&js_string_escaped(get("summary"), src));
                json::push_escaped(&mut t, suf);
                out.push(Cow::Owned(user_text(&t, get("timestamp"), src)));
            }
            _ => {}
        }
    }
    Ok(out)
}
