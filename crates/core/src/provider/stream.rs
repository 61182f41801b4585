//! Streamed answers → pieces as they arrive, and at the end the canonical
//! assistant message.
//!
//! [`StreamDecoder`] reads the body bytes of a streaming call (Anthropic
//! Messages, OpenAI Chat Completions, OpenAI Responses or Gemini
//! `streamGenerateContent?alt=sse`), gives the text, thinking and tool-call
//! pieces of each chunk, and on [`StreamDecoder::finish`] assembles the
//! provider's own non-streamed assistant message from the stream and decodes
//! it with the request decoders, so a streamed answer gives exactly the
//! message the same answer unstreamed would (see [`super::decode_response`]):
//! the same blocks, signatures, reasoning items and byte copies.

use std::borrow::Cow;

use serde_json::Value;

use super::fast;
use super::gpartial::PartialCall;
use super::pricing::{Pricing, default_pricing};
use super::response::{self, Meta, RawArgs, Stop, Tokens, num, stream_error, to_value};
use super::sse::{SseEvent, SseParser};
use crate::normalize::jv::S;
use crate::normalize::{J, Provider};
use crate::{Error, ErrorCode, Result};

/// A piece of the answer, as it arrives. `index` is the index the block has in
/// the final message's `content`: blocks are numbered in the order they first
/// appear. The texts of the `Text` (or `Thinking`) pieces of one index joined
/// are that block's text; the `ToolArgs` pieces of one index joined are the
/// call's arguments as JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamPiece {
    /// Answer text.
    Text { index: usize, text: String },
    /// Reasoning text (a summary for OpenAI Responses).
    Thinking { index: usize, text: String },
    /// A tool call started.
    ToolCall {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of a tool call's JSON arguments.
    ToolArgs { index: usize, text: String },
    /// The usage so far (the canonical usage object, with its cost).
    Usage(Value),
}

impl StreamPiece {
    /// The content index the piece belongs to (`None` for usage).
    pub fn index(&self) -> Option<usize> {
        match self {
            StreamPiece::Text { index, .. }
            | StreamPiece::Thinking { index, .. }
            | StreamPiece::ToolCall { index, .. }
            | StreamPiece::ToolArgs { index, .. } => Some(*index),
            StreamPiece::Usage(_) => None,
        }
    }

    /// The piece as a JSON object: `{"type":"text","index","text"}`,
    /// `{"type":"thinking",…}`, `{"type":"toolCall","index","id","name"}`,
    /// `{"type":"toolArgs","index","text"}`, `{"type":"usage","usage"}`.
    pub fn to_value(&self) -> Value {
        match self {
            StreamPiece::Text { index, text } => {
                serde_json::json!({"type": "text", "index": index, "text": text})
            }
            StreamPiece::Thinking { index, text } => {
                serde_json::json!({"type": "thinking", "index": index, "text": text})
            }
            StreamPiece::ToolCall { index, id, name } => {
                serde_json::json!({"type": "toolCall", "index": index, "id": id, "name": name})
            }
            StreamPiece::ToolArgs { index, text } => {
                serde_json::json!({"type": "toolArgs", "index": index, "text": text})
            }
            StreamPiece::Usage(u) => serde_json::json!({"type": "usage", "usage": u}),
        }
    }
}

/// What every format shares while reading.
struct Common {
    api: Provider,
    /// Events read (1-based number of the current one).
    events: u64,
    /// Byte offset of the current event.
    offset: u64,
    next_index: usize,
    delivered: bool,
    tokens: Tokens,
    usage_sent: Option<Tokens>,
    response_id: Option<String>,
    model: Option<String>,
    given_model: String,
    /// The stream said it is complete (finish may be called).
    complete: bool,
    /// Nothing after this point is read (Anthropic message_stop, `[DONE]`, Responses' end).
    closed: bool,
    names: Vec<(String, String)>,
    pricing: Option<Option<Pricing>>,
    /// The `<turn>` of made-up Gemini call ids (`gcall_<turn>_<n>`); 0 when not set.
    call_seed: u64,
}

impl Common {
    fn index(&mut self) -> usize {
        self.next_index += 1;
        self.next_index - 1
    }

    fn protocol(&self, what: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorCode::ProviderProtocol,
            format!("{} stream: {what} (event {})", self.api.name(), self.events),
        )
        .at(None, self.offset)
    }

    fn pricing(&self) -> Option<Pricing> {
        match self.pricing {
            Some(p) => p,
            None => default_pricing(self.model.as_deref().unwrap_or(&self.given_model)),
        }
    }

    fn usage(&mut self, out: &mut Vec<StreamPiece>) {
        if self.usage_sent != Some(self.tokens) {
            self.usage_sent = Some(self.tokens);
            out.push(StreamPiece::Usage(
                self.tokens.to_value(self.pricing().as_ref()),
            ));
        }
    }

    fn text(
        &mut self,
        out: &mut Vec<StreamPiece>,
        thinking: bool,
        index: usize,
        pending: &mut String,
        raw: &str,
    ) {
        let text = decode_piece(pending, raw);
        if text.is_empty() {
            return;
        }
        self.delivered = true;
        out.push(if thinking {
            StreamPiece::Thinking { index, text }
        } else {
            StreamPiece::Text { index, text }
        });
    }

    fn call(&mut self, out: &mut Vec<StreamPiece>, index: usize, id: &str, name: &str) {
        self.delivered = true;
        let name = match self.names.iter().find(|(t, _)| t == name) {
            Some((_, orig)) => orig.clone(),
            None => name.to_string(),
        };
        out.push(StreamPiece::ToolCall {
            index,
            id: id.to_string(),
            name,
        });
    }

    fn args(&mut self, out: &mut Vec<StreamPiece>, index: usize, text: String) {
        if text.is_empty() {
            return;
        }
        self.delivered = true;
        out.push(StreamPiece::ToolArgs { index, text });
    }

    fn set_id(&mut self, v: Option<Cow<'_, str>>) {
        if let Some(id) = v
            && self.response_id.is_none()
        {
            self.response_id = Some(id.into_owned());
        }
    }

    fn set_model(&mut self, v: Option<Cow<'_, str>>) {
        if let Some(m) = v.filter(|m| !m.is_empty())
            && self.model.as_deref() != Some(m.as_ref())
        {
            self.model = Some(m.into_owned());
        }
    }
}

/// The escaped text of a string value.
fn raw(v: Option<&J>) -> Option<&str> {
    match v {
        Some(J::Str(s)) => Some(s),
        _ => None,
    }
}

/// Decodes an escaped piece, holding back a trailing high-surrogate escape
/// until the piece that carries its low half.
fn decode_piece(pending: &mut String, raw: &str) -> String {
    let joined: Cow<str> = if pending.is_empty() {
        Cow::Borrowed(raw)
    } else {
        let mut s = std::mem::take(pending);
        s.push_str(raw);
        Cow::Owned(s)
    };
    let b = joined.as_bytes();
    let n = b.len();
    let mut cut = n;
    if n >= 6
        && b[n - 6] == b'\\'
        && b[n - 5] == b'u'
        && crate::json::hex4(&b[n - 4..]).is_some_and(|cu| (0xD800..0xDC00).contains(&cu))
    {
        let slashes = b[..n - 6].iter().rev().take_while(|&&c| c == b'\\').count();
        if slashes % 2 == 0 {
            cut = n - 6;
        }
    }
    let (head, tail) = joined.split_at(cut);
    if !tail.is_empty() {
        pending.push_str(tail);
    }
    if head.contains('\\') {
        crate::json::decode_escaped(head)
    } else {
        head.to_string()
    }
}

fn str_value(raw: &str) -> J {
    J::Str(S::from(raw))
}

// ---------------------------------------------------------------- Anthropic

#[derive(Debug, Clone, Copy, PartialEq)]
enum AKind {
    Text,
    Thinking,
    /// A client tool call (`tool_use`).
    Tool,
    /// Another block with streamed `input` (server and MCP tool use).
    Input,
    Other,
}

struct ABlock {
    key: u64,
    start: J,
    kind: AKind,
    canon: usize,
    text: String,
    pending: String,
    sig: Option<String>,
    json: String,
    json_seen: bool,
    citations: Vec<J>,
    stopped: bool,
    stop_event: u64,
}

#[derive(Default)]
struct AState {
    blocks: Vec<ABlock>,
    stop_reason: Option<String>,
}

impl AState {
    fn find(&mut self, key: u64) -> Option<&mut ABlock> {
        self.blocks.iter_mut().rev().find(|b| b.key == key)
    }

    fn event(&mut self, c: &mut Common, ty: &str, v: &J, out: &mut Vec<StreamPiece>) -> Result<()> {
        match ty {
            "message_start" => {
                let m = v.get("message").unwrap_or(&J::Null);
                c.set_id(m.str_of("id"));
                c.set_model(m.str_of("model"));
                if let Some(u) = m.get("usage") {
                    c.tokens.anthropic(u);
                    c.usage(out);
                }
            }
            "content_block_start" => {
                let key = num(v.get("index"))
                    .ok_or_else(|| c.protocol("content_block_start has no index"))?;
                if self.find(key).is_some() {
                    return Err(c.protocol(format!("content block {key} started twice")));
                }
                let start = v
                    .get("content_block")
                    .filter(|b| b.is_obj())
                    .cloned()
                    .ok_or_else(|| c.protocol("content_block_start has no content_block"))?;
                let kind = match start.str_of("type").as_deref() {
                    Some("text") => AKind::Text,
                    Some("thinking") => AKind::Thinking,
                    Some("tool_use") => AKind::Tool,
                    _ if start.get("input").is_some() => AKind::Input,
                    _ => AKind::Other,
                };
                let canon = c.index();
                let mut b = ABlock {
                    key,
                    kind,
                    canon,
                    text: String::new(),
                    pending: String::new(),
                    sig: None,
                    json: String::new(),
                    json_seen: false,
                    citations: Vec::new(),
                    stopped: false,
                    stop_event: 0,
                    start,
                };
                match kind {
                    AKind::Text | AKind::Thinking => {
                        let field = if kind == AKind::Text {
                            "text"
                        } else {
                            "thinking"
                        };
                        if let Some(t) = raw(b.start.get(field)).map(str::to_string) {
                            c.text(out, kind == AKind::Thinking, canon, &mut b.pending, &t);
                            b.text = t;
                        }
                    }
                    AKind::Tool => {
                        let id = b.start.str_of("id").unwrap_or_default().into_owned();
                        let name = b.start.str_of("name").unwrap_or_default().into_owned();
                        c.call(out, canon, &id, &name);
                    }
                    _ => {}
                }
                self.blocks.push(b);
            }
            "content_block_delta" => {
                let key = num(v.get("index"))
                    .ok_or_else(|| c.protocol("content_block_delta has no index"))?;
                let b = self.open_block(c, key)?;
                let d = v.get("delta").unwrap_or(&J::Null);
                let dt = d.str_of("type").unwrap_or_default();
                let want = |ok: bool| {
                    if ok {
                        Ok(())
                    } else {
                        Err(c.protocol(format!(
                            "a {dt} for content block {key}, a {} block",
                            b.start.str_of("type").unwrap_or_default()
                        )))
                    }
                };
                let field = match dt.as_ref() {
                    "text_delta" => "text",
                    "thinking_delta" => "thinking",
                    "signature_delta" => "signature",
                    "input_json_delta" => "partial_json",
                    "citations_delta" => "citation",
                    _ => return Ok(()),
                };
                let missing = || c.protocol(format!("a {dt} without {field}"));
                match field {
                    "text" | "thinking" => {
                        let r = raw(d.get(field)).ok_or_else(missing)?;
                        let thinking = field == "thinking";
                        return self.text_delta(c, key, &dt, thinking, r, out);
                    }
                    "signature" => {
                        want(b.kind == AKind::Thinking)?;
                        let r = raw(d.get(field)).ok_or_else(missing)?;
                        b.sig.get_or_insert_with(String::new).push_str(r);
                    }
                    "partial_json" => {
                        want(matches!(b.kind, AKind::Tool | AKind::Input))?;
                        let part = d.str_of(field).ok_or_else(missing)?;
                        b.json.push_str(&part);
                        b.json_seen = true;
                        if b.kind == AKind::Tool {
                            c.args(out, b.canon, part.into_owned());
                        }
                    }
                    _ => {
                        want(b.kind == AKind::Text)?;
                        b.citations.push(d.get(field).cloned().ok_or_else(missing)?);
                    }
                }
            }
            "content_block_stop" => {
                let key = num(v.get("index"))
                    .ok_or_else(|| c.protocol("content_block_stop has no index"))?;
                let events = c.events;
                let Some(b) = self.find(key) else {
                    return Err(c.protocol(format!(
                        "content_block_stop for block {key}, which was never started"
                    )));
                };
                b.stopped = true;
                b.stop_event = events;
            }
            "message_delta" => {
                if let Some(r) = v.get("delta").and_then(|d| d.str_of("stop_reason")) {
                    self.stop_reason = Some(r.into_owned());
                }
                if let Some(u) = v.get("usage") {
                    c.tokens.anthropic(u);
                    c.usage(out);
                }
            }
            "message_stop" => {
                c.complete = true;
                c.closed = true;
            }
            "error" => return Err(stream_error(c.api, &to_value(v), Some(c.events))),
            // ping, and event types added later
            _ => {}
        }
        Ok(())
    }

    /// The started, not yet stopped block `key` a delta is for.
    fn open_block(&mut self, c: &Common, key: u64) -> Result<&mut ABlock> {
        let Some(b) = self.find(key) else {
            return Err(c.protocol(format!(
                "a delta for content block {key}, which was never started"
            )));
        };
        if b.stopped {
            return Err(c.protocol(format!(
                "a delta for content block {key} after its content_block_stop"
            )));
        }
        Ok(b)
    }

    /// A `text_delta` or `thinking_delta` (`r`: the escaped text) for block `key`.
    fn text_delta(
        &mut self,
        c: &mut Common,
        key: u64,
        dt: &str,
        thinking: bool,
        r: &str,
        out: &mut Vec<StreamPiece>,
    ) -> Result<()> {
        let b = self.open_block(c, key)?;
        if b.kind
            != if thinking {
                AKind::Thinking
            } else {
                AKind::Text
            }
        {
            return Err(c.protocol(format!(
                "a {dt} for content block {key}, a {} block",
                b.start.str_of("type").unwrap_or_default()
            )));
        }
        b.text.push_str(r);
        c.text(out, thinking, b.canon, &mut b.pending, r);
        Ok(())
    }

    fn assemble(&self, c: &Common, partial: Option<Stop>) -> Result<(J, Stop, RawArgs)> {
        let lenient = partial.is_some() || self.stop_reason.as_deref() == Some("max_tokens");
        let mut raw_args = Vec::new();
        let mut content = Vec::with_capacity(self.blocks.len());
        for b in &self.blocks {
            let mut block = b.start.clone();
            match b.kind {
                AKind::Text => {
                    block.set("text", str_value(&b.text));
                    if !b.citations.is_empty() {
                        let mut all = match block.get("citations") {
                            Some(J::Arr(a)) => a.clone(),
                            _ => Vec::new(),
                        };
                        all.extend(b.citations.iter().cloned());
                        block.set("citations", J::Arr(all));
                    }
                }
                AKind::Thinking => {
                    block.set("thinking", str_value(&b.text));
                    if let Some(s) = &b.sig {
                        block.set("signature", str_value(s));
                    }
                }
                AKind::Tool | AKind::Input if b.json_seen => {
                    let input = if b.json.trim().is_empty() {
                        Ok(J::Obj(vec![]))
                    } else {
                        J::parse(&b.json)
                    };
                    match input {
                        Ok(v) => block.set("input", v),
                        Err(e) if lenient => {
                            block.set("input", J::Obj(vec![]));
                            if b.kind == AKind::Tool {
                                raw_args.push((b.canon, b.json.clone()));
                            }
                            let _ = e;
                        }
                        Err(e) => {
                            return Err(Error::new(
                                ErrorCode::ProviderProtocol,
                                format!(
                                    "{} stream: the input of content block {} ({}) is not JSON ({}) (event {})",
                                    c.api.name(),
                                    b.key,
                                    b.start.str_of("name").unwrap_or_default(),
                                    e.message.replace(" of the line", " of it"),
                                    b.stop_event
                                ),
                            ));
                        }
                    }
                }
                _ => {}
            }
            content.push(block);
        }
        let msg = J::obj([("role", J::s("assistant")), ("content", J::Arr(content))]);
        let stop = partial.unwrap_or_else(|| Stop::anthropic(self.stop_reason.as_deref()));
        Ok((msg, stop, raw_args))
    }
}

// ---------------------------------------------------------------- OpenAI Chat

const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum OSlot {
    Reasoning,
    Text,
    Refusal,
    Call(usize),
}

struct OCall {
    key: u64,
    id: String,
    name: String,
    args: String,
    canon: usize,
}

#[derive(Default)]
struct OState {
    /// Slots by canonical index.
    slots: Vec<OSlot>,
    reasoning_field: Option<&'static str>,
    reasoning: String,
    text: String,
    refusal: String,
    pending: [String; 3],
    calls: Vec<OCall>,
    finish: Option<String>,
}

impl OState {
    fn slot(&mut self, c: &mut Common, s: OSlot) -> usize {
        match self.slots.iter().position(|x| *x == s) {
            Some(i) => i,
            None => {
                self.slots.push(s);
                c.index()
            }
        }
    }

    fn event(&mut self, c: &mut Common, data: &str, out: &mut Vec<StreamPiece>) -> Result<()> {
        if data.trim() == "[DONE]" {
            c.complete = true;
            c.closed = true;
            return Ok(());
        }
        if let Some(f) = fast::chat_content(data) {
            c.set_id(f.id.map(Cow::Borrowed));
            c.set_model(f.model.map(Cow::Borrowed));
            self.content(c, f.content, out);
            return Ok(());
        }
        let v = parse(c, data)?;
        if v.get("error").is_some_and(|e| !matches!(e, J::Null)) {
            return Err(stream_error(c.api, &to_value(&v), Some(c.events)));
        }
        c.set_id(v.str_of("id"));
        c.set_model(v.str_of("model"));
        if let Some(choices) = v.get("choices").and_then(J::as_arr) {
            for ch in choices {
                if num(ch.get("index")).unwrap_or(0) != 0 {
                    continue;
                }
                if let Some(d) = ch.get("delta") {
                    self.delta(c, d, out)?;
                }
                if let Some(f) = ch.str_of("finish_reason") {
                    self.finish = Some(f.into_owned());
                    c.complete = true;
                }
            }
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_obj()) {
            c.tokens.openai(u);
            c.usage(out);
        }
        Ok(())
    }

    /// A piece of `content` (escaped).
    fn content(&mut self, c: &mut Common, t: &str, out: &mut Vec<StreamPiece>) {
        if t.is_empty() {
            return;
        }
        let i = self.slot(c, OSlot::Text);
        self.text.push_str(t);
        c.text(out, false, i, &mut self.pending[1], t);
    }

    fn delta(&mut self, c: &mut Common, d: &J, out: &mut Vec<StreamPiece>) -> Result<()> {
        let field = match self.reasoning_field {
            Some(f) if raw(d.get(f)).is_some() => Some(f),
            _ => REASONING_FIELDS
                .into_iter()
                .find(|f| raw(d.get(f)).is_some_and(|t| !t.is_empty())),
        };
        if let Some(f) = field
            && let Some(t) = raw(d.get(f)).filter(|t| !t.is_empty())
        {
            self.reasoning_field.get_or_insert(f);
            let i = self.slot(c, OSlot::Reasoning);
            self.reasoning.push_str(t);
            c.text(out, true, i, &mut self.pending[0], t);
        }
        if let Some(t) = raw(d.get("content")) {
            self.content(c, t, out);
        }
        if let Some(t) = raw(d.get("refusal")).filter(|t| !t.is_empty()) {
            let i = self.slot(c, OSlot::Refusal);
            self.refusal.push_str(t);
            c.text(out, false, i, &mut self.pending[2], t);
        }
        let Some(calls) = d.get("tool_calls") else {
            return Ok(());
        };
        let calls = match calls {
            J::Arr(a) => a,
            J::Null => return Ok(()),
            _ => return Err(c.protocol("tool_calls is not an array")),
        };
        for tc in calls {
            let id = tc.str_of("id").filter(|s| !s.is_empty());
            let key = match num(tc.get("index")) {
                Some(k) => k,
                // No index (some compatible servers): a new id is a new call.
                None => match self.calls.last() {
                    Some(last) if id.as_deref().is_none_or(|i| i == last.id) => last.key,
                    _ => self.calls.len() as u64,
                },
            };
            let f = tc.get("function").unwrap_or(&J::Null);
            let pos = match self.calls.iter().position(|x| x.key == key) {
                Some(p) => {
                    let call = &mut self.calls[p];
                    if call.id.is_empty()
                        && let Some(id) = &id
                    {
                        call.id = id.to_string();
                    }
                    if call.name.is_empty()
                        && let Some(n) = f.str_of("name")
                    {
                        call.name = n.into_owned();
                    }
                    p
                }
                None => {
                    let p = self.calls.len();
                    let canon = self.slot(c, OSlot::Call(p));
                    let call = OCall {
                        key,
                        id: id.as_deref().unwrap_or_default().to_string(),
                        name: f.str_of("name").unwrap_or_default().into_owned(),
                        args: String::new(),
                        canon,
                    };
                    c.call(out, canon, &call.id, &call.name);
                    self.calls.push(call);
                    p
                }
            };
            if let Some(a) = raw(f.get("arguments")) {
                let call = &mut self.calls[pos];
                call.args.push_str(a);
                let text = if a.contains('\\') {
                    crate::json::decode_escaped(a)
                } else {
                    a.to_string()
                };
                c.args(out, call.canon, text);
            }
        }
        Ok(())
    }

    fn assemble(&self, partial: Option<Stop>) -> (J, Stop, Vec<usize>) {
        let mut msg = J::obj([("role", J::s("assistant"))]);
        // Decoder order: reasoning, content parts, calls; `order` maps it to canonical indices.
        let mut order = Vec::new();
        let canon = |s: OSlot| self.slots.iter().position(|x| *x == s);
        let has_text = canon(OSlot::Text).is_some();
        let has_refusal = canon(OSlot::Refusal).is_some();
        let reasoning = canon(OSlot::Reasoning);
        if let Some(i) = reasoning {
            order.push(i);
        }
        if has_refusal {
            let mut parts: Vec<(usize, J)> = Vec::new();
            if let Some(i) = canon(OSlot::Text) {
                parts.push((
                    i,
                    J::obj([("type", J::s("text")), ("text", str_value(&self.text))]),
                ));
            }
            if let Some(i) = canon(OSlot::Refusal) {
                parts.push((
                    i,
                    J::obj([
                        ("type", J::s("refusal")),
                        ("refusal", str_value(&self.refusal)),
                    ]),
                ));
            }
            parts.sort_by_key(|p| p.0);
            order.extend(parts.iter().map(|p| p.0));
            msg.set("content", J::Arr(parts.into_iter().map(|p| p.1).collect()));
        } else if has_text {
            order.extend(canon(OSlot::Text));
            msg.set("content", str_value(&self.text));
        } else {
            msg.set("content", J::Null);
        }
        if let (Some(f), Some(_)) = (self.reasoning_field, reasoning) {
            msg.set(f, str_value(&self.reasoning));
        }
        if !self.calls.is_empty() {
            let calls = self
                .calls
                .iter()
                .map(|k| {
                    order.push(k.canon);
                    J::obj([
                        ("id", J::s(&k.id)),
                        ("type", J::s("function")),
                        (
                            "function",
                            J::obj([("name", J::s(&k.name)), ("arguments", str_value(&k.args))]),
                        ),
                    ])
                })
                .collect();
            msg.set("tool_calls", J::Arr(calls));
        }
        let stop =
            partial.unwrap_or_else(|| Stop::openai(self.finish.as_deref(), !self.calls.is_empty()));
        (msg, stop, order)
    }
}

// ---------------------------------------------------------------- OpenAI Responses

#[derive(Debug, Clone, Copy, PartialEq)]
enum RKind {
    Message,
    Call,
    Reasoning,
    Other,
}

struct RPart {
    key: u64,
    part: J,
    field: &'static str,
    text: String,
    canon: usize,
    pending: String,
}

struct RItem {
    key: u64,
    item: J,
    kind: RKind,
    done: bool,
    parts: Vec<RPart>,
    args: String,
    args_seen: bool,
    summaries: Vec<String>,
    /// Summary parts whose separator piece was given.
    seps: usize,
    /// Reasoning text parts (`content: [{type: "reasoning_text"}]`, sent by
    /// open-weight models served with the Responses API), escaped as read.
    texts: Vec<String>,
    /// Reasoning text parts whose separator piece was given.
    text_seps: usize,
    canon: usize,
    pending: String,
}

#[derive(Default)]
struct RState {
    items: Vec<RItem>,
    status: Option<String>,
    reason: Option<String>,
    seq: Option<u64>,
}

fn item_kind(item: &J) -> RKind {
    match item.str_of("type").as_deref() {
        Some("message") => RKind::Message,
        Some("function_call") => RKind::Call,
        Some("reasoning") => RKind::Reasoning,
        _ => RKind::Other,
    }
}

fn call_id(item: &J) -> String {
    let call_id = item.str_of("call_id").unwrap_or_default();
    match item.str_of("id") {
        Some(id) => format!("{call_id}|{id}"),
        None => call_id.into_owned(),
    }
}

impl RState {
    fn find(&mut self, c: &Common, v: &J, want: RKind) -> Result<&mut RItem> {
        let key = num(v.get("output_index"))
            .ok_or_else(|| c.protocol("an event without output_index"))?;
        match self.items.iter_mut().rev().find(|i| i.key == key) {
            Some(it) if it.kind == want => Ok(it),
            Some(it) => Err(c.protocol(format!(
                "{} for output item {key}, a {} item",
                v.str_of("type").unwrap_or_default(),
                it.item.str_of("type").unwrap_or_default()
            ))),
            None => Err(c.protocol(format!(
                "{} for output item {key}, which was never added",
                v.str_of("type").unwrap_or_default()
            ))),
        }
    }

    fn add(&mut self, c: &mut Common, key: u64, item: J, out: &mut Vec<StreamPiece>) -> usize {
        let kind = item_kind(&item);
        let canon = if kind == RKind::Message { 0 } else { c.index() };
        let mut it = RItem {
            key,
            kind,
            done: false,
            parts: Vec::new(),
            args: String::new(),
            args_seen: false,
            summaries: Vec::new(),
            seps: 0,
            texts: Vec::new(),
            text_seps: 0,
            canon,
            pending: String::new(),
            item,
        };
        match kind {
            RKind::Call => {
                let name = it.item.str_of("name").unwrap_or_default().into_owned();
                c.call(out, canon, &call_id(&it.item), &name);
                if let Some(a) = it.item.str_of("arguments").filter(|a| !a.is_empty()) {
                    c.args(out, canon, a.into_owned());
                }
            }
            RKind::Message => {
                if let Some(J::Arr(parts)) = it.item.get("content") {
                    for (k, p) in parts.iter().enumerate() {
                        let mut part = RPart::new(k as u64, p.clone(), c.index());
                        if let Some(t) = raw(p.get(part.field)).map(str::to_string) {
                            c.text(out, false, part.canon, &mut part.pending, &t);
                            part.text = t;
                        }
                        it.parts.push(part);
                    }
                }
            }
            _ => {}
        }
        self.items.push(it);
        self.items.len() - 1
    }

    fn event(&mut self, c: &mut Common, ty: &str, v: &J, out: &mut Vec<StreamPiece>) -> Result<()> {
        if let Some(n) = num(v.get("sequence_number")) {
            if self.seq.is_some_and(|s| n <= s) {
                return Err(c.protocol(format!(
                    "sequence_number {n} after {}",
                    self.seq.unwrap_or_default()
                )));
            }
            self.seq = Some(n);
        }
        match ty {
            "response.created" | "response.in_progress" => {
                let r = v.get("response").unwrap_or(&J::Null);
                c.set_id(r.str_of("id"));
                c.set_model(r.str_of("model"));
            }
            "response.output_item.added" => {
                let key = num(v.get("output_index"))
                    .ok_or_else(|| c.protocol("output_item.added without output_index"))?;
                if self.items.iter().any(|i| i.key == key) {
                    return Err(c.protocol(format!("output item {key} added twice")));
                }
                let item = v
                    .get("item")
                    .filter(|i| i.is_obj())
                    .cloned()
                    .ok_or_else(|| c.protocol("output_item.added without an item"))?;
                self.add(c, key, item, out);
            }
            "response.content_part.added"
                if v.get("part")
                    .is_some_and(|p| p.is("type", "reasoning_text")) =>
            {
                // A reasoning item's text part: its text comes in reasoning_text deltas.
                self.find(c, v, RKind::Reasoning)?;
            }
            "response.reasoning_text.delta" | "response.reasoning_text.done" => {
                let k = num(v.get("content_index")).unwrap_or(0) as usize;
                let done = ty.ends_with(".done");
                let r = raw(v.get(if done { "text" } else { "delta" }))
                    .ok_or_else(|| c.protocol(format!("{ty} without its text")))?
                    .to_string();
                let it = self.find(c, v, RKind::Reasoning)?;
                if k > 4096 {
                    return Err(c.protocol(format!("content_index {k}")));
                }
                while it.texts.len() <= k {
                    it.texts.push(String::new());
                }
                // `.done` carries the whole text: only what the deltas did not give.
                let add = if done {
                    match r.strip_prefix(it.texts[k].as_str()) {
                        Some(rest) => rest.to_string(),
                        // Written otherwise (other escapes): the deltas stand.
                        None => return Ok(()),
                    }
                } else {
                    r
                };
                if add.is_empty() {
                    return Ok(());
                }
                it.texts[k].push_str(&add);
                // The stored thinking is the summary when there is one, else
                // these texts: they stream only while no summary has.
                if it.summaries.iter().all(String::is_empty) {
                    let canon = it.canon;
                    if it.text_seps < k + 1 {
                        if k > 0 {
                            c.text(out, true, canon, &mut String::new(), "\\n\\n");
                        }
                        it.text_seps = k + 1;
                    }
                    c.text(out, true, canon, &mut it.pending, &add);
                }
            }
            "response.content_part.added" => {
                let key = num(v.get("content_index")).unwrap_or(0);
                let part = v.get("part").cloned().unwrap_or(J::Null);
                let it = self.find(c, v, RKind::Message)?;
                if it.parts.iter().any(|p| p.key == key) {
                    return Ok(());
                }
                let idx = c.index();
                let mut p = RPart::new(key, part, idx);
                if let Some(t) = raw(p.part.get(p.field)).map(str::to_string) {
                    c.text(out, false, idx, &mut p.pending, &t);
                    p.text = t;
                }
                it.parts.push(p);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let key = num(v.get("content_index")).unwrap_or(0);
                let r =
                    raw(v.get("delta")).ok_or_else(|| c.protocol(format!("{ty} without delta")))?;
                let it = self.find(c, v, RKind::Message)?;
                let pos = match it.parts.iter().position(|p| p.key == key) {
                    Some(p) => p,
                    None => {
                        // The part was not announced: it starts here.
                        let kind = if ty == "response.refusal.delta" {
                            "refusal"
                        } else {
                            "output_text"
                        };
                        let field = if kind == "refusal" { "refusal" } else { "text" };
                        let part = J::obj([("type", J::s(kind)), (field, J::s(""))]);
                        it.parts.push(RPart::new(key, part, c.index()));
                        it.parts.len() - 1
                    }
                };
                let p = &mut it.parts[pos];
                p.text.push_str(r);
                c.text(out, false, p.canon, &mut p.pending, r);
            }
            "response.function_call_arguments.delta" => {
                let r = v
                    .get("delta")
                    .ok_or_else(|| c.protocol(format!("{ty} without delta")))?;
                let text = r.as_str().unwrap_or_default().into_owned();
                let it = self.find(c, v, RKind::Call)?;
                it.args.push_str(raw(Some(r)).unwrap_or_default());
                it.args_seen = true;
                let canon = it.canon;
                c.args(out, canon, text);
            }
            "response.reasoning_summary_part.added" | "response.reasoning_summary_text.delta" => {
                let k = num(v.get("summary_index")).unwrap_or(0) as usize;
                let delta = raw(v.get("delta")).map(str::to_string);
                let it = self.find(c, v, RKind::Reasoning)?;
                if k > 4096 {
                    return Err(c.protocol(format!("summary_index {k}")));
                }
                while it.summaries.len() <= k {
                    it.summaries.push(String::new());
                }
                let canon = it.canon;
                if it.seps < k + 1 {
                    if k > 0 {
                        c.text(out, true, canon, &mut String::new(), "\\n\\n");
                    }
                    it.seps = k + 1;
                }
                if let Some(d) = delta {
                    it.summaries[k].push_str(&d);
                    c.text(out, true, canon, &mut it.pending, &d);
                }
            }
            "response.output_item.done" => {
                let key = num(v.get("output_index"))
                    .ok_or_else(|| c.protocol("output_item.done without output_index"))?;
                let item = v
                    .get("item")
                    .filter(|i| i.is_obj())
                    .cloned()
                    .ok_or_else(|| c.protocol("output_item.done without an item"))?;
                let pos = match self.items.iter().position(|i| i.key == key) {
                    Some(p) => p,
                    None => self.add(c, key, item.clone(), out),
                };
                let it = &mut self.items[pos];
                if it.kind == RKind::Message
                    && let Some(J::Arr(parts)) = item.get("content")
                {
                    // Parts never announced nor streamed still get their indices.
                    for (k, part) in parts.iter().enumerate().skip(it.parts.len()) {
                        let p = RPart::new(k as u64, part.clone(), c.index());
                        it.parts.push(p);
                    }
                }
                it.item = item;
                it.done = true;
            }
            "response.completed" | "response.incomplete" => {
                let r = v.get("response").unwrap_or(&J::Null);
                c.set_id(r.str_of("id"));
                c.set_model(r.str_of("model"));
                self.status = r.str_of("status").map(Cow::into_owned).or_else(|| {
                    Some(
                        if ty == "response.completed" {
                            "completed"
                        } else {
                            "incomplete"
                        }
                        .into(),
                    )
                });
                self.reason = r
                    .get("incomplete_details")
                    .and_then(|d| d.str_of("reason"))
                    .map(Cow::into_owned);
                if let Some(u) = r.get("usage") {
                    c.tokens.responses(u);
                    c.usage(out);
                }
                c.complete = true;
                c.closed = true;
            }
            "response.failed" => {
                let r = v.get("response").unwrap_or(&J::Null);
                let e = r.get("error").filter(|e| e.is_obj()).unwrap_or(r);
                return Err(stream_error(
                    c.api,
                    &serde_json::json!({"error": to_value(e)}),
                    Some(c.events),
                ));
            }
            "error" => {
                return Err(stream_error(c.api, &to_value(v), Some(c.events)));
            }
            _ => {}
        }
        Ok(())
    }

    fn assemble(&self, partial: Option<Stop>) -> (J, Stop) {
        let mut items: Vec<&RItem> = self.items.iter().collect();
        items.sort_by_key(|i| i.key);
        let list = items
            .iter()
            .map(|it| {
                if it.done {
                    return it.item.clone();
                }
                let mut item = it.item.clone();
                match it.kind {
                    RKind::Message => {
                        let parts = it
                            .parts
                            .iter()
                            .map(|p| {
                                let mut part = p.part.clone();
                                part.set(p.field, str_value(&p.text));
                                part
                            })
                            .collect();
                        item.set("content", J::Arr(parts));
                    }
                    RKind::Call if it.args_seen => item.set("arguments", str_value(&it.args)),
                    RKind::Reasoning if !it.summaries.is_empty() || !it.texts.is_empty() => {
                        if !it.texts.is_empty() {
                            let t = it
                                .texts
                                .iter()
                                .map(|t| {
                                    J::obj([
                                        ("type", J::s("reasoning_text")),
                                        ("text", str_value(t)),
                                    ])
                                })
                                .collect();
                            item.set("content", J::Arr(t));
                        }
                        if !it.summaries.is_empty() {
                            let s = it
                                .summaries
                                .iter()
                                .map(|t| {
                                    J::obj([("type", J::s("summary_text")), ("text", str_value(t))])
                                })
                                .collect();
                            item.set("summary", J::Arr(s));
                        }
                    }
                    _ => {}
                }
                item
            })
            .collect::<Vec<J>>();
        let calls = items.iter().any(|i| i.kind == RKind::Call);
        let stop = partial.unwrap_or_else(|| {
            Stop::responses(self.status.as_deref(), self.reason.as_deref(), calls)
        });
        (J::Arr(list), stop)
    }
}

impl RPart {
    fn new(key: u64, part: J, canon: usize) -> RPart {
        let field = if part.is("type", "refusal") {
            "refusal"
        } else {
            "text"
        };
        RPart {
            key,
            part,
            field,
            text: String::new(),
            canon,
            pending: String::new(),
        }
    }
}

// ---------------------------------------------------------------- Gemini

#[derive(Debug, Clone, Copy, PartialEq)]
enum GKind {
    Text,
    Thought,
    Other,
}

struct GPart {
    kind: GKind,
    /// The first part (text parts: their members besides the text).
    part: J,
    text: String,
    sig: Option<J>,
    /// Only text, thought and thoughtSignature members: later pieces may join it.
    plain: bool,
    canon: usize,
    pending: String,
}

impl GPart {
    /// A part the decoder keeps as it came (a call, an unknown part).
    fn other(part: J, canon: usize) -> GPart {
        GPart {
            kind: GKind::Other,
            part,
            text: String::new(),
            sig: None,
            plain: false,
            canon,
            pending: String::new(),
        }
    }
}

#[derive(Default)]
struct GState {
    parts: Vec<GPart>,
    /// A call whose arguments stream in `partialArgs` (`willContinue`).
    streaming: Option<PartialCall>,
    calls: usize,
    finish: Option<String>,
    blocked: Option<String>,
}

impl GState {
    fn event(&mut self, c: &mut Common, data: &str, out: &mut Vec<StreamPiece>) -> Result<()> {
        let v = parse(c, data)?;
        let v = match v {
            J::Arr(mut a) if a.len() == 1 => a.remove(0),
            other => other,
        };
        if v.get("error").is_some_and(|e| !matches!(e, J::Null)) {
            return Err(stream_error(c.api, &to_value(&v), Some(c.events)));
        }
        c.set_id(v.str_of("responseId"));
        c.set_model(v.str_of("modelVersion"));
        if let Some(b) = v
            .get("promptFeedback")
            .and_then(|f| f.str_of("blockReason"))
        {
            self.blocked = Some(b.into_owned());
            c.complete = true;
        }
        let cand = v
            .get("candidates")
            .and_then(J::as_arr)
            .and_then(|cs| cs.iter().find(|x| num(x.get("index")).unwrap_or(0) == 0));
        if let Some(cand) = cand {
            if let Some(parts) = cand.get("content").and_then(|x| x.get("parts")) {
                let parts = parts
                    .as_arr()
                    .ok_or_else(|| c.protocol("content.parts is not an array"))?;
                for p in parts {
                    self.part(c, p, out)?;
                }
            }
            if let Some(f) = cand.str_of("finishReason") {
                self.end_streaming(c, out);
                self.finish = Some(f.into_owned());
                c.complete = true;
            }
        }
        if let Some(u) = v.get("usageMetadata") {
            c.tokens.google(u);
            c.usage(out);
        }
        Ok(())
    }

    fn part(&mut self, c: &mut Common, p: &J, out: &mut Vec<StreamPiece>) -> Result<()> {
        if !p.is_obj() {
            return Err(c.protocol("a part is not an object"));
        }
        let sig = p.get("thoughtSignature").cloned();
        let is_text = p.get("text").is_some() || (sig.is_some() && p.keys().len() == 1);
        if !is_text {
            let fc = p.get("functionCall");
            let piecewise = fc.is_some_and(|f| {
                f.get("partialArgs").is_some()
                    || f.get("willContinue").and_then(J::as_bool) == Some(true)
            });
            // More of the call whose arguments are streaming (its name, if
            // given, is the same).
            if let (Some(fc), Some(sc)) = (fc, self.streaming.as_mut())
                && fc
                    .str_of("name")
                    .is_none_or(|n| n.is_empty() || n == sc.name)
                && (piecewise || fc.get("args").is_none())
            {
                let piece = sc.apply(fc.get("partialArgs")).map_err(|m| c.protocol(m))?;
                let canon = sc.canon;
                c.args(out, canon, piece);
                if fc.get("willContinue").and_then(J::as_bool) != Some(true) {
                    self.end_streaming(c, out);
                }
                return Ok(());
            }
            self.end_streaming(c, out);
            let canon = c.index();
            let mut part = p.clone();
            if let Some(fc) = fc {
                let id = match fc.str_of("id") {
                    Some(id) => id.into_owned(),
                    None => format!("gcall_{}_{}", c.call_seed, self.calls),
                };
                self.calls += 1;
                let name = fc.str_of("name").unwrap_or_default().into_owned();
                c.call(out, canon, &id, &name);
                if piecewise {
                    let mut sc = PartialCall::new(self.parts.len(), canon, name, fc.get("args"));
                    let piece = sc.apply(fc.get("partialArgs")).map_err(|m| c.protocol(m))?;
                    c.args(out, canon, piece);
                    // The part as a whole answer has it: `args`, no stream members.
                    if let Some(f) = part.get_mut("functionCall") {
                        f.remove("partialArgs");
                        f.remove("willContinue");
                    }
                    let more = fc.get("willContinue").and_then(J::as_bool) == Some(true);
                    self.streaming = Some(sc);
                    self.parts.push(GPart::other(part, canon));
                    if !more {
                        self.end_streaming(c, out);
                    }
                    return Ok(());
                }
                c.args(
                    out,
                    canon,
                    fc.get("args").map_or_else(|| "{}".to_string(), J::text),
                );
            }
            self.parts.push(GPart::other(part, canon));
            return Ok(());
        }
        self.end_streaming(c, out);
        let kind = if p.get("thought").and_then(J::as_bool) == Some(true) {
            GKind::Thought
        } else {
            GKind::Text
        };
        let t = match p.get("text") {
            None => "",
            Some(J::Str(s)) => s,
            Some(_) => return Err(c.protocol("a part's text is not a string")),
        };
        let plain = p
            .keys()
            .iter()
            .all(|k| matches!(k.as_ref(), "text" | "thought" | "thoughtSignature"));
        let joins = self.parts.last().is_some_and(|l| {
            l.kind == kind && l.plain && plain && !(l.sig.is_some() && sig.is_some())
        });
        if joins {
            let Some(l) = self.parts.last_mut() else {
                return Ok(());
            };
            l.text.push_str(t);
            if sig.is_some() {
                l.sig = sig;
            }
            c.text(out, kind == GKind::Thought, l.canon, &mut l.pending, t);
            return Ok(());
        }
        if t.is_empty() && sig.is_none() {
            return Ok(());
        }
        let canon = c.index();
        let mut part = GPart {
            kind,
            part: p.clone(),
            text: t.to_string(),
            sig,
            plain,
            canon,
            pending: String::new(),
        };
        c.text(out, kind == GKind::Thought, canon, &mut part.pending, t);
        self.parts.push(part);
        Ok(())
    }

    /// The streaming call is whole: the rest of its argument text, and its
    /// `args` into its part.
    fn end_streaming(&mut self, c: &mut Common, out: &mut Vec<StreamPiece>) {
        if let Some(mut sc) = self.streaming.take() {
            let rest = sc.finish();
            c.args(out, sc.canon, rest);
            if let Some(f) = self
                .parts
                .get_mut(sc.part)
                .and_then(|g| g.part.get_mut("functionCall"))
            {
                f.set("args", sc.args);
            }
        }
    }

    fn assemble(&self, partial: Option<Stop>) -> (J, Stop) {
        let parts = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let mut p = g.part.clone();
                if let Some(sc) = self.streaming.as_ref().filter(|sc| sc.part == i)
                    && let Some(f) = p.get_mut("functionCall")
                {
                    f.set("args", sc.args.clone());
                }
                if g.kind != GKind::Other {
                    p.set("text", str_value(&g.text));
                    if let Some(s) = &g.sig {
                        p.set("thoughtSignature", s.clone());
                    }
                }
                p
            })
            .collect();
        let stop = partial.unwrap_or_else(|| {
            Stop::google(
                self.finish.as_deref(),
                self.blocked.as_deref(),
                self.calls > 0,
            )
        });
        (
            J::obj([("role", J::s("model")), ("parts", J::Arr(parts))]),
            stop,
        )
    }
}

fn parse(c: &Common, data: &str) -> Result<J> {
    J::parse(data).map_err(|e| {
        c.protocol(format!(
            "the data is not JSON ({})",
            e.message.replace(" of the line", " of the data")
        ))
    })
}

// ---------------------------------------------------------------- the decoder

enum Format {
    Anthropic(AState),
    OpenAi(OState),
    Responses(RState),
    Google(GState),
}

/// Reads one streamed answer. Feed it the body with [`StreamDecoder::push`]
/// (chunks of any size, split anywhere) and take the pieces; then call
/// [`StreamDecoder::finish`] for the assistant message. An error stops the
/// stream: it is returned by the call that meets it, or — when that call also
/// has pieces to give — by the next call, so no piece is lost; every later
/// call returns it again.
pub struct StreamDecoder {
    c: Common,
    provider: String,
    sse: SseParser,
    fmt: Format,
    failed: Option<Error>,
    result: Option<J>,
    events_buf: Vec<SseEvent>,
}

impl StreamDecoder {
    /// A decoder for a stream of `api`'s format; `provider` is recorded as the
    /// message's `provider`, `model` as its `model` unless the stream names one.
    pub fn new(api: Provider, provider: &str, model: &str) -> Self {
        StreamDecoder {
            c: Common {
                api,
                events: 0,
                offset: 0,
                next_index: 0,
                delivered: false,
                tokens: Tokens::default(),
                usage_sent: None,
                response_id: None,
                model: None,
                given_model: model.to_string(),
                complete: false,
                closed: false,
                names: Vec::new(),
                pricing: None,
                call_seed: 0,
            },
            provider: provider.to_string(),
            sse: SseParser::new(),
            fmt: match api {
                Provider::Anthropic => Format::Anthropic(AState::default()),
                Provider::OpenAi => Format::OpenAi(OState::default()),
                Provider::Responses => Format::Responses(RState::default()),
                Provider::Google => Format::Google(GState::default()),
            },
            failed: None,
            result: None,
            events_buf: Vec::new(),
        }
    }

    /// Tool names the request renamed (target name → original, the request's
    /// `name_map`): calls come back with their original names.
    pub fn set_name_map(&mut self, names: Vec<(String, String)>) {
        self.c.names = names;
    }

    /// The prices for the usage's cost (`None`: no cost, zeros). Default: the
    /// prices of the model ([`default_pricing`]).
    pub fn set_pricing(&mut self, pricing: Option<Pricing>) {
        self.c.pricing = Some(pricing);
    }

    /// The number made-up call ids carry (Gemini answers without call ids):
    /// `gcall_<seed>_<n>` for the answer's `n`th call, in the pieces and in the
    /// message. Without it the answer's calls are `gcall_0_<n>`, as a
    /// non-streamed answer decodes. An agent gives each step its own seed, so
    /// the calls of different turns never share an id.
    pub fn set_call_seed(&mut self, seed: u64) {
        self.c.call_seed = seed;
    }

    /// Whether any content was given out as pieces (any piece but usage): a
    /// retry would give it twice.
    pub fn delivered(&self) -> bool {
        self.c.delivered
    }

    /// Whether the stream's last event was read (finish will not fail for an early end).
    pub fn complete(&self) -> bool {
        self.c.complete
    }

    /// Number of events read so far.
    pub fn events(&self) -> u64 {
        self.c.events
    }

    /// Feeds the next bytes of the body; returns the pieces they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<StreamPiece>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut out = Vec::new();
        let mut events = std::mem::take(&mut self.events_buf);
        let r = self.sse.push_into(bytes, &mut events);
        let mut err = r.err();
        for ev in events.drain(..) {
            if err.is_some() {
                break;
            }
            self.c.events += 1;
            self.c.offset = ev.offset;
            if self.c.closed {
                continue;
            }
            if let Err(e) = self.event(&ev, &mut out) {
                err = Some(e);
            }
        }
        self.events_buf = events;
        match err {
            None => Ok(out),
            Some(e) => {
                self.failed = Some(e.clone());
                if out.is_empty() { Err(e) } else { Ok(out) }
            }
        }
    }

    fn event(&mut self, ev: &SseEvent, out: &mut Vec<StreamPiece>) -> Result<()> {
        let c = &mut self.c;
        // Anthropic and Responses name each event in its `type` (else `event:`).
        let typed = |c: &mut Common| -> Result<(String, J)> {
            let v = parse(c, &ev.data)?;
            let ty = v
                .str_of("type")
                .map(Cow::into_owned)
                .or_else(|| ev.event.clone())
                .unwrap_or_default();
            Ok((ty, v))
        };
        match &mut self.fmt {
            Format::OpenAi(s) => s.event(c, &ev.data, out),
            Format::Google(s) => s.event(c, &ev.data, out),
            Format::Anthropic(s) => {
                if let Some(d) = fast::anthropic_delta(&ev.data) {
                    return s.text_delta(c, d.index, d.delta_type, d.thinking, d.text, out);
                }
                let (ty, v) = typed(c)?;
                s.event(c, &ty, &v, out)
            }
            Format::Responses(s) => {
                let (ty, v) = typed(c)?;
                s.event(c, &ty, &v, out)
            }
        }
    }

    /// The canonical assistant message of the whole stream. `PROVIDER_PROTOCOL`
    /// when the stream ended before its last event (Anthropic `message_stop`,
    /// OpenAI `finish_reason` or `[DONE]`, Responses `response.completed`,
    /// Gemini `finishReason`) or a tool call's input is not JSON; the stream's
    /// own error when it failed. Calling it again gives the same message.
    pub fn finish(&mut self) -> Result<Value> {
        Ok(to_value(&self.finish_j()?))
    }

    /// [`StreamDecoder::finish`] as the message's exact JSON text (numbers,
    /// escapes and signatures as the provider wrote them).
    pub fn finish_json(&mut self) -> Result<String> {
        Ok(self.finish_j()?.text())
    }

    /// The message as far as it came, for a stream that was aborted or failed:
    /// `stop_reason` is `"aborted"` or `"error"`, `error_message` its message.
    /// Tool arguments cut short are kept as text (`argumentsRaw`, `arguments: {}`).
    pub fn finish_partial(
        &mut self,
        stop_reason: &str,
        error_message: Option<&str>,
    ) -> Result<Value> {
        let reason = match stop_reason {
            "aborted" => "aborted",
            "error" => "error",
            other => {
                return Err(Error::invalid_input(format!(
                    "stop_reason must be \"aborted\" or \"error\", not {other:?}"
                )));
            }
        };
        let stop = Stop {
            reason,
            message: error_message.map(str::to_string),
        };
        Ok(to_value(&self.assemble(Some(stop))?))
    }

    /// The error the stream itself reported, if it did: an error event (also
    /// one whose pieces were given out first, so the call that would have
    /// returned it never came), or Gemini's bare error JSON outside the
    /// framing. For a body that broke after it, this is the error to report:
    /// the provider's own code, not the broken connection's.
    pub fn failure(&mut self) -> Option<Error> {
        if let Some(e) = &self.failed {
            return Some(e.clone());
        }
        if self.c.complete {
            return None;
        }
        self.stray_error()
    }

    /// Gemini writes a mid-stream error as bare JSON outside the framing.
    fn stray_error(&mut self) -> Option<Error> {
        let stray = self.sse.stray().trim();
        if stray.starts_with('{')
            && let Ok(v) = serde_json::from_str::<Value>(stray)
            && v.get("error").is_some_and(Value::is_object)
        {
            let status = v["error"]["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| *c >= 400)
                .unwrap_or(500);
            let e = super::http_failure(self.c.api, status, stray.as_bytes(), None).error;
            self.failed = Some(e.clone());
            return Some(e);
        }
        None
    }

    fn finish_j(&mut self) -> Result<J> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if let Some(r) = &self.result {
            return Ok(r.clone());
        }
        if !self.c.complete {
            if let Some(e) = self.stray_error() {
                return Err(e);
            }
            let end = match self.c.api {
                Provider::Anthropic => "message_stop",
                Provider::OpenAi => "a finish_reason or [DONE]",
                Provider::Responses => "response.completed",
                Provider::Google => "a finishReason",
            };
            let cut = if self.sse.in_event() {
                ", and its last event was cut off"
            } else {
                ""
            };
            return Err(Error::new(
                ErrorCode::ProviderProtocol,
                format!(
                    "{} stream: the stream ended before {end} (after {} events, {} bytes{cut})",
                    self.c.api.name(),
                    self.c.events,
                    self.sse.position()
                ),
            )
            .at(None, self.sse.position()));
        }
        let r = self.assemble(None);
        match &r {
            Ok(m) => self.result = Some(m.clone()),
            Err(e) => self.failed = Some(e.clone()),
        }
        r
    }

    fn assemble(&self, partial: Option<Stop>) -> Result<J> {
        let c = &self.c;
        let mut order = None;
        let (msg, stop, raw_args) = match &self.fmt {
            Format::Anthropic(s) => s.assemble(c, partial)?,
            Format::OpenAi(s) => {
                let (m, stop, o) = s.assemble(partial);
                order = Some(o);
                (m, stop, Vec::new())
            }
            Format::Responses(s) => {
                let (m, stop) = s.assemble(partial);
                (m, stop, Vec::new())
            }
            Format::Google(s) => {
                let (m, stop) = s.assemble(partial);
                (m, stop, Vec::new())
            }
        };
        let meta = Meta {
            tokens: c.tokens,
            stop,
            response_id: c.response_id.clone(),
            model: c.model.clone(),
            raw_args,
        };
        let pricing = c.pricing();
        let mut m = response::assistant_message(
            c.api,
            &self.provider,
            &c.given_model,
            msg,
            &meta,
            pricing.as_ref(),
            &c.names,
        )?;
        if c.call_seed != 0
            && let Some(J::Arr(blocks)) = m.get_mut("content")
        {
            let from = "gcall_0_";
            for b in blocks
                .iter_mut()
                .filter(|b| b.get("syntheticId").and_then(J::as_bool) == Some(true))
            {
                if let Some(n) = b
                    .str_of("id")
                    .and_then(|id| id.strip_prefix(from).map(str::to_string))
                {
                    b.set("id", J::s(&format!("gcall_{}_{n}", c.call_seed)));
                }
            }
        }
        // OpenAI Chat: the decoder's block order (reasoning, text, calls) → the order they came in.
        if let Some(order) = order
            && let Some(J::Arr(blocks)) = m.get_mut("content")
            && blocks.len() == order.len()
            && order.iter().enumerate().any(|(i, o)| i != *o)
        {
            let mut slots: Vec<Option<J>> = vec![None; blocks.len()];
            for (b, &o) in blocks.drain(..).zip(order.iter()) {
                if let Some(s) = slots.get_mut(o) {
                    *s = Some(b);
                }
            }
            *blocks = slots.into_iter().flatten().collect();
        }
        Ok(m)
    }
}
