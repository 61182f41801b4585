//! Provider requests → canonical messages.

use std::collections::HashMap;

use super::canon::*;
use super::jv::J;
use crate::Result;

/// A conversation in canonical form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// The system prompt: a string or text blocks.
    pub system: Option<J>,
    /// `"system"` or `"developer"` when the system prompt was a message (OpenAI).
    pub system_role: Option<String>,
    pub messages: Vec<J>,
    /// Tool definitions `{name, description?, parameters}`.
    pub tools: Option<Vec<J>>,
    /// The exact JSON the system prompt came from, when a fresh encoding
    /// would differ (`{provider, json, hash}`).
    pub system_original: Option<J>,
    /// The same for the tools.
    pub tools_original: Option<J>,
}

impl Conversation {
    /// Reads the tools of the request, keeping their exact JSON when a fresh
    /// encoding would differ (`tools_original`).
    fn finish_tools(&mut self, p: Provider, raw: Option<&J>) -> Result<()> {
        self.tools = tools_from(raw, p)?;
        if let (Some(tools), Some(raw)) = (&self.tools, raw) {
            let mut rep = super::report::CompatibilityReport::new();
            if !(js_stable(raw) && super::encode::encode_tools(p, tools, &mut rep) == *raw) {
                self.tools_original = Some(J::obj([
                    ("provider", J::s(p.name())),
                    ("json", raw.text_as_string()),
                    ("hash", J::s(&semantic_hash(tools))),
                ]));
            }
        }
        Ok(())
    }

    /// Records where the system prompt came from (`raw`: the request's piece).
    fn finish_system(&mut self, p: Provider, raw: Option<J>) {
        let (Some(s), Some(raw)) = (&self.system, raw) else {
            return;
        };
        let role = self.system_role.as_deref();
        if js_stable(&raw) && super::encode::system_piece(p, s, role) == raw {
            return;
        }
        self.system_original = Some(J::obj([
            ("provider", J::s(p.name())),
            ("json", raw.text_as_string()),
            ("hash", J::s(&super::encode::system_hash(s, role))),
        ]));
    }
}

/// Something of each call (its name, its full id) by call id, from the last
/// assistant message that made calls with that id, in call order: results
/// take them in order (calls that share an id are answered in order), and
/// the last one once all are taken.
#[derive(Default)]
struct ByCall(HashMap<String, (Vec<String>, usize)>);

impl ByCall {
    /// One message's calls: `(id, value)` in order.
    fn note(&mut self, calls: Vec<(String, String)>) {
        let mut seen: Vec<&str> = Vec::new();
        for (id, v) in &calls {
            if seen.contains(&id.as_str()) {
                if let Some((list, _)) = self.0.get_mut(id) {
                    list.push(v.clone());
                }
            } else {
                self.0.insert(id.clone(), (vec![v.clone()], 0));
                seen.push(id);
            }
        }
    }

    /// What a result naming `id` takes.
    fn take(&mut self, id: &str) -> Option<String> {
        let (list, taken) = self.0.get_mut(id)?;
        let v = list.get(*taken).or(list.last()).cloned();
        *taken += 1;
        v
    }
}

struct Dec {
    p: Provider,
    model: Option<J>,
    msgs: Vec<J>,
    /// Tool names by call id.
    names: ByCall,
    /// Full canonical id (`call_id|item_id`) by call id (Responses).
    full_ids: ByCall,
    /// Gemini calls of the last model turn: (id, name, answered).
    pending: Vec<(String, String, bool)>,
    /// Attach `original` only where a fresh encoding would differ.
    check: bool,
}

impl Dec {
    fn new(p: Provider, model: Option<J>) -> Self {
        Dec {
            p,
            model,
            msgs: Vec::new(),
            names: ByCall::default(),
            full_ids: ByCall::default(),
            pending: Vec::new(),
            check: true,
        }
    }

    fn assistant(&self, content: Vec<J>) -> J {
        let mut m = J::obj([
            ("role", J::s("assistant")),
            ("content", J::Arr(content)),
            ("api", J::s(self.p.api())),
            ("provider", J::s(self.p.vendor())),
        ]);
        if let Some(model) = &self.model {
            m.set("model", model.clone());
        }
        m
    }

    fn tool_result(&mut self, id: &str, content: Vec<J>, is_error: bool) -> J {
        let name = self.names.take(id).unwrap_or_default();
        J::obj([
            ("role", J::s("toolResult")),
            ("toolCallId", J::s(id)),
            ("toolName", J::s(&name)),
            ("content", J::Arr(content)),
            ("isError", J::Bool(is_error)),
        ])
    }

    /// Notes the calls of one assistant message.
    fn note_calls(&mut self, blocks: &[J]) {
        let mut names = Vec::new();
        let mut full_ids = Vec::new();
        for b in blocks {
            if btype(b) == "toolCall" {
                let id = b.str_of("id").unwrap_or_default().to_string();
                let name = b.str_of("name").unwrap_or_default().to_string();
                // Responses ids are `call_id|item_id`, split at the last `|`
                // (a call_id may hold `|` itself); other providers' ids are whole.
                if self.p == Provider::Responses {
                    let call_id = super::transform::responses_key(&id).to_string();
                    full_ids.push((call_id.clone(), id.clone()));
                    if call_id != id {
                        names.push((call_id, name.clone()));
                    }
                }
                names.push((id, name));
            }
        }
        self.names.note(names);
        self.full_ids.note(full_ids);
    }

    /// Ends a group of messages decoded from `raw` (starting at `start`).
    fn group(&mut self, start: usize, raw: &J) {
        if start >= self.msgs.len() {
            return;
        }
        if self.check && js_stable(raw) {
            let fresh = super::encode::encode_group(self.p, &self.msgs[start..]);
            if fresh.as_ref() == Some(raw) {
                return;
            }
        }
        attach_original(&mut self.msgs[start..], self.p, raw);
    }
}

/// Whether `JSON.stringify(JSON.parse(text))` gives `v`'s text back: numbers
/// spelled as JavaScript prints them, strings escaped as it escapes them. When
/// not, the group keeps its original even if a fresh encoding matches, so that
/// a trip through JS objects still gives the original bytes.
fn js_stable(v: &J) -> bool {
    fn str_ok(raw: &str) -> bool {
        if !raw.contains('\\') {
            return true;
        }
        let mut again = String::with_capacity(raw.len());
        crate::json::push_escaped(&mut again, &crate::json::decode_escaped(raw));
        again == raw
    }
    match v {
        J::Num(n) => {
            if n.contains(['e', 'E']) {
                return false;
            }
            match n.parse::<f64>() {
                Ok(f) => {
                    (f == 0.0 && n == "0" || (1e-6..1e21).contains(&f.abs()))
                        && format!("{f}") == **n
                }
                Err(_) => false,
            }
        }
        J::Str(raw) => str_ok(raw),
        J::Arr(a) => a.iter().all(js_stable),
        J::Obj(m) => {
            let mut keys: Vec<&str> = m.iter().map(|(k, _)| &**k).collect();
            keys.sort_unstable();
            keys.windows(2).all(|w| w[0] != w[1])
                && m.iter().all(|(k, x)| str_ok(k) && js_stable(x))
        }
        _ => true,
    }
}

fn arr<'a>(v: Option<&'a J>, what: &str) -> Result<&'a Vec<J>> {
    v.and_then(J::as_arr)
        .ok_or_else(|| bad(format!("{what} must be an array")))
}

/// Tool-call arguments: an object is kept as it is; anything else becomes `{}`
/// with the original text in `argumentsRaw`.
fn call_args(block: &mut J, args: Option<&J>) {
    match args {
        Some(a @ J::Obj(_)) => block.set("arguments", a.clone()),
        Some(other) => {
            block.set("arguments", J::Obj(vec![]));
            block.set("argumentsRaw", other.text_as_string());
        }
        None => block.set("arguments", J::Obj(vec![])),
    }
}

/// Arguments given as a JSON string (OpenAI): `argumentsRaw` keeps the text
/// when it is not exactly the compact JSON of `arguments`.
fn call_args_text(block: &mut J, text: &str) {
    match J::parse(text) {
        Ok(v @ J::Obj(_)) => {
            let exact = v.text() == text;
            block.set("arguments", v);
            if !exact {
                block.set("argumentsRaw", J::s(text));
            }
        }
        _ => {
            block.set("arguments", J::Obj(vec![]));
            block.set("argumentsRaw", J::s(text));
        }
    }
}

/// Adds `vendor.openai-responses.kind` (the Responses item type a canonical object came from).
fn with_kind(obj: J, vendor: Option<J>, kind: &str) -> J {
    let mut obj = with_vendor(obj, vendor);
    set_vendor_kind(&mut obj, Provider::Responses, kind);
    obj
}

fn tool_call(id: &str, name: J) -> J {
    J::obj([("type", J::s("toolCall")), ("id", J::s(id)), ("name", name)])
}

/// A message of a role this version does not model (`{role: "unknown",
/// provider, raw}`): sent back only to its provider, as it was.
fn unknown_message(p: Provider, raw: &J) -> J {
    J::obj([
        ("role", J::s("unknown")),
        ("provider", J::s(p.name())),
        ("raw", raw.clone()),
    ])
}

fn tagged(kind: &str, p: Provider, raw: &J) -> J {
    J::obj([
        ("type", J::s(kind)),
        ("provider", J::s(p.name())),
        ("raw", raw.clone()),
    ])
}

fn system_value(v: &J, p: Provider) -> Result<J> {
    match v {
        J::Str(_) => Ok(v.clone()),
        J::Arr(parts) => {
            let mut out = Vec::new();
            for b in parts {
                let want = if p == Provider::Responses {
                    "input_text"
                } else {
                    "text"
                };
                let text = b
                    .get("text")
                    .filter(|t| b.is("type", want) && matches!(t, J::Str(_)))
                    .cloned()
                    .ok_or_else(|| {
                        bad(format!(
                            "system blocks must be text blocks {{type: \"{want}\", text}}"
                        ))
                    })?;
                out.push(with_vendor(
                    text_block_j(text),
                    vendor_of(b, &["type", "text"], p),
                ));
            }
            Ok(J::Arr(out))
        }
        _ => Err(bad("system must be a string or an array of text blocks")),
    }
}

// ---------------------------------------------------------------- Anthropic

fn anthropic_media(b: &J, kind: &str) -> J {
    let src = b.get("source").cloned().unwrap_or(J::Null);
    let mut out = J::obj([("type", J::s(kind))]);
    match src.str_of("type").as_deref() {
        Some("base64") => {
            out.set("data", src.get("data").cloned().unwrap_or(J::s("")));
            out.set(
                "mimeType",
                src.get("media_type").cloned().unwrap_or(J::s("")),
            );
        }
        Some("url") => out.set("url", src.get("url").cloned().unwrap_or(J::s(""))),
        Some("file") => out.set("fileId", src.get("file_id").cloned().unwrap_or(J::s(""))),
        Some("text") => {
            out.set("text", src.get("data").cloned().unwrap_or(J::s("")));
            out.set(
                "mimeType",
                src.get("media_type").cloned().unwrap_or(J::s("text/plain")),
            );
        }
        _ => return tagged("unknown", Provider::Anthropic, b),
    }
    if let Some(t) = b.get("title") {
        out.set("title", t.clone());
    }
    with_vendor(
        out,
        vendor_of(b, &["type", "source", "title"], Provider::Anthropic),
    )
}

fn anthropic_block(b: &J) -> J {
    let p = Provider::Anthropic;
    let t = btype(b);
    match t.as_ref() {
        "text" => with_vendor(
            text_block_j(b.get("text").cloned().unwrap_or(J::s(""))),
            vendor_of(b, &["type", "text"], p),
        ),
        "image" => anthropic_media(b, "image"),
        "document" => anthropic_media(b, "document"),
        "thinking" => {
            let mut out = J::obj([
                ("type", J::s("thinking")),
                ("thinking", b.get("thinking").cloned().unwrap_or(J::s(""))),
            ]);
            if let Some(s) = b.get("signature") {
                out.set("thinkingSignature", s.clone());
            }
            with_vendor(out, vendor_of(b, &["type", "thinking", "signature"], p))
        }
        "redacted_thinking" => with_vendor(
            J::obj([
                ("type", J::s("thinking")),
                ("thinking", J::s("[Reasoning redacted]")),
                (
                    "thinkingSignature",
                    b.get("data").cloned().unwrap_or(J::s("")),
                ),
                ("redacted", J::Bool(true)),
            ]),
            vendor_of(b, &["type", "data"], p),
        ),
        "tool_use" => {
            let mut out = tool_call(
                &b.str_of("id").unwrap_or_default(),
                b.get("name").cloned().unwrap_or(J::s("")),
            );
            call_args(&mut out, b.get("input"));
            with_vendor(out, vendor_of(b, &["type", "id", "name", "input"], p))
        }
        t if t == "server_tool_use"
            || t.ends_with("_tool_result")
            || t.starts_with("mcp_tool")
            || t == "container_upload" =>
        {
            tagged("serverTool", p, b)
        }
        _ => tagged("unknown", p, b),
    }
}

fn anthropic_result_content(v: Option<&J>) -> Vec<J> {
    match v {
        None | Some(J::Null) => Vec::new(),
        Some(s @ J::Str(_)) => vec![text_block_j(s.clone())],
        Some(J::Arr(a)) => a.iter().map(anthropic_block).collect(),
        Some(other) => vec![tagged("unknown", Provider::Anthropic, other)],
    }
}

/// Decodes an Anthropic Messages request fragment `{system?, messages}`.
pub fn anthropic(req: &J, model: Option<J>) -> Result<Conversation> {
    let mut conv = Conversation::default();
    if let Some(s) = req.get("system") {
        conv.system = Some(system_value(s, Provider::Anthropic)?);
        conv.finish_system(Provider::Anthropic, Some(s.clone()));
    }
    let mut d = Dec::new(Provider::Anthropic, model);
    for (i, m) in arr(req.get("messages"), "messages")?.iter().enumerate() {
        anthropic_message(&mut d, m).map_err(|e| at(e, "messages", i))?;
    }
    conv.finish_tools(Provider::Anthropic, req.get("tools"))?;
    conv.messages = d.msgs;
    Ok(conv)
}

fn at(e: crate::Error, list: &str, i: usize) -> crate::Error {
    bad(format!("{list}[{i}]: {}", e.message))
}

fn anthropic_message(d: &mut Dec, m: &J) -> Result<()> {
    let start = d.msgs.len();
    // A user message right after one that held tool results is a message of its
    // own here; the encoder would join it to the results: keep its exact JSON.
    let after_results = d.msgs.last().is_some_and(|x| role(x) == "toolResult");
    let role = m.str_of("role").ok_or_else(|| bad("role missing"))?;
    let content = match role.as_ref() {
        "user" | "assistant" => m.get("content").ok_or_else(|| bad("content missing"))?,
        _ => m.get("content").unwrap_or(&J::Null),
    };
    match role.as_ref() {
        "user" => match content {
            J::Str(_) => d.msgs.push(J::obj([
                ("role", J::s("user")),
                ("content", content.clone()),
            ])),
            J::Arr(blocks) => {
                let mut rest = Vec::new();
                for b in blocks {
                    if b.is("type", "tool_result") {
                        let id = b.str_of("tool_use_id").unwrap_or_default().to_string();
                        let is_error = b.get("is_error").and_then(J::as_bool).unwrap_or(false);
                        let content = anthropic_result_content(b.get("content"));
                        let mut r = d.tool_result(&id, content, is_error);
                        if matches!(b.get("content"), Some(J::Str(_))) {
                            r.set("contentString", J::Bool(true));
                        }
                        let r = with_vendor(
                            r,
                            vendor_of(
                                b,
                                &["type", "tool_use_id", "content", "is_error"],
                                Provider::Anthropic,
                            ),
                        );
                        d.msgs.push(r);
                    } else {
                        rest.push(anthropic_block(b));
                    }
                }
                if !rest.is_empty() || blocks.is_empty() {
                    d.msgs
                        .push(J::obj([("role", J::s("user")), ("content", J::Arr(rest))]));
                }
            }
            _ => return Err(bad("content must be a string or an array")),
        },
        "assistant" => {
            let blocks: Vec<J> = match content {
                J::Str(_) => vec![text_block_j(content.clone())],
                J::Arr(a) => a.iter().map(anthropic_block).collect(),
                _ => return Err(bad("content must be a string or an array")),
            };
            d.note_calls(&blocks);
            let msg = d.assistant(blocks);
            d.msgs.push(msg);
        }
        // An inline system message (Anthropic's mid-conversation system prompt):
        // a system message that goes back to Anthropic in its place.
        "system" => match system_value(content, Provider::Anthropic) {
            Ok(value) => {
                let p = Provider::Anthropic;
                let mut inner = vendor_of(m, &["role", "content"], p)
                    .and_then(|v| v.get(p.name()).cloned())
                    .unwrap_or(J::Obj(vec![]));
                inner.set("inline", J::Bool(true));
                d.msgs.push(J::obj([
                    ("role", J::s("system")),
                    ("content", value),
                    ("vendor", J::Obj(vec![(p.name().into(), inner)])),
                ]));
            }
            Err(_) => d.msgs.push(unknown_message(Provider::Anthropic, m)),
        },
        _ => d.msgs.push(unknown_message(Provider::Anthropic, m)),
    }
    // Members besides role and content are not modelled; the group keeps its original.
    let joins = after_results
        && d.msgs
            .get(start)
            .is_some_and(|x| super::canon::role(x) == "user");
    if joins && d.check {
        attach_original(&mut d.msgs[start..], Provider::Anthropic, m);
    } else {
        d.group(start, m);
    }
    Ok(())
}

// ---------------------------------------------------------------- OpenAI Chat

fn openai_part(b: &J, p: Provider) -> J {
    let t = btype(b);
    match t.as_ref() {
        "text" | "input_text" | "output_text" => with_vendor(
            text_block_j(b.get("text").cloned().unwrap_or(J::s(""))),
            vendor_of(b, &["type", "text"], p),
        ),
        "image_url" | "input_image" => {
            let (url, detail, file_id) = if t == "image_url" {
                let iu = b.get("image_url").cloned().unwrap_or(J::Null);
                (iu.get("url").cloned(), iu.get("detail").cloned(), None)
            } else {
                (
                    b.get("image_url").cloned(),
                    b.get("detail").cloned(),
                    b.get("file_id").cloned(),
                )
            };
            let mut out = J::obj([("type", J::s("image"))]);
            match (url, file_id) {
                (Some(u), _) => {
                    let us = u.as_str().unwrap_or_default().to_string();
                    match parse_data_url(&us) {
                        Some((mime, data)) => {
                            out.set("data", J::s(&data));
                            out.set("mimeType", J::s(&mime));
                        }
                        None => out.set("url", u),
                    }
                }
                (None, Some(f)) => out.set("fileId", f),
                _ => return tagged("unknown", p, b),
            }
            if let Some(dt) = detail {
                out.set("detail", dt);
            }
            let known: &[&str] = if t == "image_url" {
                &["type", "image_url"]
            } else {
                &["type", "image_url", "detail", "file_id"]
            };
            let v = vendor_of(b, known, p);
            // image_url's own extra members are not modelled: keep the part raw.
            if t == "image_url"
                && b.get("image_url")
                    .is_some_and(|iu| vendor_of(iu, &["url", "detail"], p).is_some())
            {
                return tagged("unknown", p, b);
            }
            with_vendor(out, v)
        }
        "file" | "input_file" => {
            let f = if t == "file" {
                b.get("file").cloned().unwrap_or(J::Null)
            } else {
                b.clone()
            };
            let mut out = J::obj([("type", J::s("document"))]);
            if let Some((mime, data)) = f.str_of("file_data").and_then(|u| parse_data_url(&u)) {
                out.set("data", J::s(&data));
                out.set("mimeType", J::s(&mime));
            } else if let Some(id) = f.get("file_id") {
                out.set("fileId", id.clone());
            } else if let Some(u) = f.get("file_url") {
                out.set("url", u.clone());
            } else {
                return tagged("unknown", p, b);
            }
            if let Some(n) = f.get("filename") {
                out.set("title", n.clone());
            }
            let known_inner = ["file_data", "file_id", "filename", "file_url", "type"];
            if vendor_of(&f, &known_inner, p).is_some()
                || (t == "file" && vendor_of(b, &["type", "file"], p).is_some())
            {
                return tagged("unknown", p, b);
            }
            out
        }
        _ => tagged("unknown", p, b),
    }
}

fn user_content(content: &J, p: Provider) -> Result<J> {
    match content {
        J::Str(_) => Ok(content.clone()),
        J::Arr(parts) => Ok(J::Arr(parts.iter().map(|b| openai_part(b, p)).collect())),
        _ => Err(bad("content must be a string or an array")),
    }
}

const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// Decodes an OpenAI Chat Completions request fragment `{messages}`.
pub fn openai(req: &J, model: Option<J>) -> Result<Conversation> {
    let p = Provider::OpenAi;
    let mut conv = Conversation::default();
    let mut d = Dec::new(p, model);
    for (i, m) in arr(req.get("messages"), "messages")?.iter().enumerate() {
        openai_message(&mut d, &mut conv, m, i).map_err(|e| at(e, "messages", i))?;
    }
    conv.finish_tools(p, req.get("tools"))?;
    conv.messages = d.msgs;
    Ok(conv)
}

fn openai_message(d: &mut Dec, conv: &mut Conversation, m: &J, i: usize) -> Result<()> {
    let p = Provider::OpenAi;
    let start = d.msgs.len();
    let role = m
        .str_of("role")
        .ok_or_else(|| bad("role missing"))?
        .to_string();
    match role.as_str() {
        "system" | "developer" => {
            let content = m.get("content").ok_or_else(|| bad("content missing"))?;
            let Ok(value) = system_value(content, p) else {
                // Parts other than text: not modelled, kept as they are.
                d.msgs.push(unknown_message(p, m));
                d.group(start, m);
                return Ok(());
            };
            if i == 0 && vendor_of(m, &["role", "content"], p).is_none() {
                conv.system = Some(value);
                if role == "developer" {
                    conv.system_role = Some(role);
                }
                conv.finish_system(p, Some(m.clone()));
                return Ok(());
            }
            let mut msg = J::obj([("role", J::s("system")), ("content", value)]);
            if role == "developer" {
                msg.set("developer", J::Bool(true));
            }
            d.msgs
                .push(with_vendor(msg, vendor_of(m, &["role", "content"], p)));
        }
        "user" => {
            let content = m.get("content").ok_or_else(|| bad("content missing"))?;
            let msg = J::obj([
                ("role", J::s("user")),
                ("content", user_content(content, p)?),
            ]);
            d.msgs
                .push(with_vendor(msg, vendor_of(m, &["role", "content"], p)));
        }
        "assistant" => {
            let mut blocks = Vec::new();
            let mut known = vec!["role", "content", "tool_calls"];
            for f in REASONING_FIELDS {
                if let Some(t @ J::Str(_)) = m.get(f) {
                    blocks.push(J::obj([
                        ("type", J::s("thinking")),
                        ("thinking", t.clone()),
                        ("thinkingSignature", J::s(f)),
                    ]));
                    known.push(f);
                    break;
                }
            }
            match m.get("content") {
                Some(s @ J::Str(_)) => blocks.push(text_block_j(s.clone())),
                Some(J::Arr(parts)) => {
                    for b in parts {
                        if b.is("type", "refusal") {
                            blocks.push(with_vendor(
                                text_block_j(b.get("refusal").cloned().unwrap_or(J::s(""))),
                                Some(J::obj([(p.name(), J::obj([("refusal", J::Bool(true))]))])),
                            ));
                        } else {
                            let mut part = openai_part(b, p);
                            if btype(&part) != "text" {
                                // Not an assistant content part we model: kept in place, raw.
                                part = tagged("unknown", p, b);
                                part.set("at", J::s("content"));
                            }
                            blocks.push(part);
                        }
                    }
                }
                Some(J::Null) | None => {}
                Some(_) => return Err(bad("content must be a string, an array or null")),
            }
            if let Some(calls) = m.get("tool_calls") {
                for c in calls
                    .as_arr()
                    .ok_or_else(|| bad("tool_calls must be an array"))?
                {
                    let f = c.get("function");
                    match (c.str_of("type").as_deref(), f) {
                        (Some("function") | None, Some(f)) => {
                            let mut b = tool_call(
                                &c.str_of("id").unwrap_or_default(),
                                f.get("name").cloned().unwrap_or(J::s("")),
                            );
                            call_args_text(&mut b, &f.str_of("arguments").unwrap_or_default());
                            if !matches!(f.get("arguments"), Some(J::Str(_))) {
                                b = tagged("unknown", p, c);
                            }
                            if vendor_of(c, &["id", "type", "function"], p).is_some()
                                || vendor_of(f, &["name", "arguments"], p).is_some()
                            {
                                b = tagged("unknown", p, c);
                            }
                            blocks.push(b);
                        }
                        // A custom tool call (free-form input): a call with
                        // arguments {input}, its type kept for OpenAI (`kind`).
                        (Some("custom"), _)
                            if c.get("custom").is_some_and(|cu| {
                                matches!(cu.get("input"), Some(J::Str(_)))
                                    && matches!(cu.get("name"), Some(J::Str(_)))
                                    && vendor_of(cu, &["name", "input"], p).is_none()
                            }) && vendor_of(c, &["id", "type", "custom"], p).is_none() =>
                        {
                            let cu = c.get("custom").cloned().unwrap_or(J::Null);
                            let mut b = tool_call(
                                &c.str_of("id").unwrap_or_default(),
                                cu.get("name").cloned().unwrap_or(J::s("")),
                            );
                            b.set(
                                "arguments",
                                J::obj([("input", cu.get("input").cloned().unwrap_or(J::s("")))]),
                            );
                            b.set(
                                "vendor",
                                J::obj([(p.name(), J::obj([("kind", J::s("custom"))]))]),
                            );
                            blocks.push(b);
                        }
                        _ => blocks.push(tagged("unknown", p, c)),
                    }
                }
            }
            d.note_calls(&blocks);
            let msg = d.assistant(blocks);
            d.msgs.push(with_vendor(msg, vendor_of(m, &known, p)));
        }
        "tool" => {
            let id = m.str_of("tool_call_id").unwrap_or_default().to_string();
            let content = match m.get("content") {
                Some(s @ J::Str(_)) => vec![text_block_j(s.clone())],
                Some(J::Arr(parts)) => parts.iter().map(|b| openai_part(b, p)).collect(),
                _ => return Err(bad("tool content must be a string or an array")),
            };
            let mut r = d.tool_result(&id, content, false);
            if matches!(m.get("content"), Some(J::Str(_))) {
                r.set("contentString", J::Bool(true));
            }
            d.msgs.push(with_vendor(
                r,
                vendor_of(m, &["role", "tool_call_id", "content"], p),
            ));
        }
        // `function` (deprecated) and roles this version does not know.
        _ => d.msgs.push(unknown_message(p, m)),
    }
    d.group(start, m);
    Ok(())
}

// ---------------------------------------------------------------- OpenAI Responses

fn responses_item_kind(item: &J) -> &'static str {
    match item.str_of("type").as_deref() {
        Some("message") | None => match item.str_of("role").as_deref() {
            Some("assistant") => "assistant",
            Some("system") | Some("developer") => "system",
            Some("user") | None => "user",
            Some(_) => "unknown",
        },
        Some("function_call_output" | "custom_tool_call_output") => "output",
        Some(_) => "assistant",
    }
}

/// Decodes an OpenAI Responses request fragment `{instructions?, input}`.
pub fn responses(req: &J, model: Option<J>) -> Result<Conversation> {
    let p = Provider::Responses;
    let mut conv = Conversation::default();
    if let Some(s) = req.get("instructions")
        && !matches!(s, J::Null)
    {
        if !matches!(s, J::Str(_)) {
            return Err(bad("instructions must be a string"));
        }
        conv.system = Some(system_value(s, p)?);
        conv.finish_system(p, Some(s.clone()));
    }
    let mut d = Dec::new(p, model);
    responses_into(req, &mut d)?;
    conv.finish_tools(p, req.get("tools"))?;
    conv.messages = d.msgs;
    Ok(conv)
}

fn responses_into(req: &J, d: &mut Dec) -> Result<()> {
    let p = Provider::Responses;
    let items = match req.get("input") {
        Some(s @ J::Str(_)) => {
            d.msgs.push(J::obj([
                ("role", J::s("user")),
                ("content", s.clone()),
                (
                    "vendor",
                    J::obj([(p.name(), J::obj([("inputString", J::Bool(true))]))]),
                ),
            ]));
            return Ok(());
        }
        v => arr(v, "input")?,
    };
    let mut i = 0;
    while i < items.len() {
        let item = &items[i];
        if !item.is_obj() {
            return Err(bad(format!("input[{i}] must be an object")));
        }
        match responses_item_kind(item) {
            "assistant" => {
                let mut j = i;
                while j < items.len() && responses_item_kind(&items[j]) == "assistant" {
                    j += 1;
                }
                let start = d.msgs.len();
                let mut blocks = Vec::new();
                for it in &items[i..j] {
                    responses_assistant_item(it, &mut blocks);
                }
                d.note_calls(&blocks);
                let msg = d.assistant(blocks);
                d.msgs.push(msg);
                d.group(start, &J::Arr(items[i..j].to_vec()));
                i = j;
                continue;
            }
            "unknown" => {
                let start = d.msgs.len();
                d.msgs.push(unknown_message(p, item));
                d.group(start, item);
            }
            "system" => {
                let content = item.get("content").ok_or_else(|| bad("content missing"))?;
                let Ok(value) = system_value(content, p) else {
                    let start = d.msgs.len();
                    d.msgs.push(unknown_message(p, item));
                    d.group(start, item);
                    i += 1;
                    continue;
                };
                let role = item.str_of("role").unwrap_or_default().to_string();
                {
                    let start = d.msgs.len();
                    let mut msg = J::obj([("role", J::s("system")), ("content", value)]);
                    if role == "developer" {
                        msg.set("developer", J::Bool(true));
                    }
                    d.msgs
                        .push(with_vendor(msg, vendor_of(item, &["role", "content"], p)));
                    d.group(start, item);
                }
            }
            "user" => {
                let start = d.msgs.len();
                let content = item.get("content").ok_or_else(|| bad("content missing"))?;
                let msg = J::obj([
                    ("role", J::s("user")),
                    (
                        "content",
                        user_content(content, p).map_err(|e| at(e, "input", i))?,
                    ),
                ]);
                d.msgs
                    .push(with_vendor(msg, vendor_of(item, &["role", "content"], p)));
                d.group(start, item);
            }
            _ => {
                let start = d.msgs.len();
                let call_id = item.str_of("call_id").unwrap_or_default().to_string();
                let id = match d.full_ids.take(&call_id) {
                    Some(full) => full,
                    None if call_id.contains('|') => format!("{call_id}|"),
                    None => call_id,
                };
                let content = match item.get("output") {
                    Some(s @ J::Str(_)) => vec![text_block_j(s.clone())],
                    Some(J::Arr(parts)) => parts.iter().map(|b| openai_part(b, p)).collect(),
                    _ => {
                        return Err(bad(format!(
                            "input[{i}].output must be a string or an array"
                        )));
                    }
                };
                let mut r = d.tool_result(&id, content, false);
                if matches!(item.get("output"), Some(J::Str(_))) {
                    r.set("contentString", J::Bool(true));
                }
                let v = vendor_of(item, &["type", "call_id", "output"], p);
                d.msgs.push(if item.is("type", "custom_tool_call_output") {
                    with_kind(r, v, "custom_tool_call_output")
                } else {
                    with_vendor(r, v)
                });
                d.group(start, item);
            }
        }
        i += 1;
    }
    Ok(())
}

/// The canonical id of a Responses call: `call_id|item_id` (as pi writes it),
/// split at the last `|`; a call_id that holds `|` and has no item id is
/// written `call_id|` so that its own `|` is never read as the separator.
fn responses_call_id(it: &J) -> String {
    let call_id = it.str_of("call_id").unwrap_or_default().to_string();
    match it.str_of("id") {
        Some(item_id) => format!("{call_id}|{item_id}"),
        None if call_id.contains('|') => format!("{call_id}|"),
        None => call_id,
    }
}

fn responses_assistant_item(it: &J, blocks: &mut Vec<J>) {
    let p = Provider::Responses;
    match it.str_of("type").as_deref() {
        Some("message") | None => {
            let sig = it.str_of("id").map(|id| {
                let mut s = J::obj([("v", J::Num("1".into())), ("id", J::s(&id))]);
                if let Some(ph) = it.get("phase") {
                    s.set("phase", ph.clone());
                }
                s.text()
            });
            let parts: Vec<J> = match it.get("content") {
                Some(s @ J::Str(_)) => vec![text_block_j(s.clone())],
                Some(J::Arr(a)) => a
                    .iter()
                    .map(|b| {
                        if b.is("type", "refusal") {
                            with_vendor(
                                text_block_j(b.get("refusal").cloned().unwrap_or(J::s(""))),
                                Some(J::obj([(p.name(), J::obj([("refusal", J::Bool(true))]))])),
                            )
                        } else {
                            openai_part(b, p)
                        }
                    })
                    .collect(),
                _ => vec![tagged("unknown", p, it)],
            };
            // A part this version does not model: the whole item is kept as it is.
            let parts = if parts.iter().all(|b| btype(b) == "text") {
                parts
            } else {
                vec![tagged("unknown", p, it)]
            };
            let item_vendor = vendor_of(it, &["type", "id", "role", "content", "phase"], p);
            for mut b in parts {
                if btype(&b) == "text" {
                    if let Some(s) = &sig {
                        b.set("textSignature", J::s(s));
                    }
                    if let Some(J::Obj(extra)) = item_vendor.as_ref().and_then(|v| v.get(p.name()))
                    {
                        // item-level members (status…) ride on each text block
                        let mut v = b.get("vendor").cloned().unwrap_or(J::Obj(vec![]));
                        let mut inner = v.get(p.name()).cloned().unwrap_or(J::Obj(vec![]));
                        for (k, x) in extra {
                            inner.set(&format!("item.{k}"), x.clone());
                        }
                        v.set(p.name(), inner);
                        b.set("vendor", v);
                    }
                }
                blocks.push(b);
            }
        }
        Some("reasoning") => {
            let texts = |key: &str| -> Vec<String> {
                it.get(key)
                    .and_then(J::as_arr)
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.str_of("text").map(|t| t.to_string()))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            // The summary (OpenAI's models); without one, the reasoning text
            // itself (`content: [{type: "reasoning_text"}]`, open-weight models).
            let mut thinking = texts("summary");
            if thinking.iter().all(String::is_empty) {
                thinking = texts("content");
            }
            blocks.push(J::obj([
                ("type", J::s("thinking")),
                ("thinking", J::s(&thinking.join("\n\n"))),
                ("thinkingSignature", it.text_as_string()),
            ]));
        }
        Some("function_call") => {
            let id = responses_call_id(it);
            let mut b = tool_call(&id, it.get("name").cloned().unwrap_or(J::s("")));
            match it.get("arguments") {
                Some(J::Str(_)) => {
                    call_args_text(&mut b, &it.str_of("arguments").unwrap_or_default())
                }
                _ => {
                    blocks.push(tagged("unknown", p, it));
                    return;
                }
            }
            blocks.push(with_vendor(
                b,
                vendor_of(it, &["type", "id", "call_id", "name", "arguments"], p),
            ));
        }
        Some(kind @ ("custom_tool_call" | "local_shell_call")) => {
            // Client tools with other shapes (Codex: apply_patch, the shell): tool calls
            // whose item type is remembered (`vendor.openai-responses.kind`) for Responses.
            let id = responses_call_id(it);
            let (name, args, known): (J, J, &[&str]) = if kind == "custom_tool_call" {
                (
                    it.get("name").cloned().unwrap_or(J::s("")),
                    J::obj([("input", it.get("input").cloned().unwrap_or(J::s("")))]),
                    &["type", "id", "call_id", "name", "input"],
                )
            } else {
                (
                    J::s("local_shell"),
                    it.get("action")
                        .filter(|a| a.is_obj())
                        .cloned()
                        .unwrap_or(J::Obj(vec![])),
                    &["type", "id", "call_id", "action"],
                )
            };
            let mut b = tool_call(&id, name);
            b.set("arguments", args);
            blocks.push(with_kind(b, vendor_of(it, known, p), kind));
        }
        Some(
            "web_search_call"
            | "file_search_call"
            | "computer_call"
            | "code_interpreter_call"
            | "image_generation_call"
            | "mcp_call"
            | "mcp_list_tools"
            | "mcp_approval_request"
            | "shell_call"
            | "apply_patch_call",
        ) => blocks.push(tagged("serverTool", p, it)),
        _ => blocks.push(tagged("unknown", p, it)),
    }
}

// ---------------------------------------------------------------- Google Gemini

fn google_media(part: &J, key: &str) -> J {
    let p = Provider::Google;
    let v = part.get(key).cloned().unwrap_or(J::Null);
    let mime = v.str_of("mimeType").unwrap_or_default().to_string();
    let kind = if mime.starts_with("image/") {
        "image"
    } else {
        "document"
    };
    let mut out = J::obj([("type", J::s(kind))]);
    if key == "inlineData" {
        out.set("data", v.get("data").cloned().unwrap_or(J::s("")));
        out.set("mimeType", J::s(&mime));
    } else {
        out.set("url", v.get("fileUri").cloned().unwrap_or(J::s("")));
        out.set("mimeType", J::s(&mime));
    }
    let inner_extra = vendor_of(&v, &["mimeType", "data", "fileUri"], p).is_some();
    if inner_extra {
        return tagged("unknown", p, part);
    }
    with_vendor(out, vendor_of(part, &[key], p))
}

/// Decodes a Gemini request fragment `{systemInstruction?, contents}`.
pub fn google(req: &J, model: Option<J>) -> Result<Conversation> {
    let p = Provider::Google;
    let mut conv = Conversation::default();
    if let Some(si) = req.get("systemInstruction") {
        conv.system = Some(match si {
            J::Str(_) => si.clone(),
            _ => {
                let parts = arr(si.get("parts"), "systemInstruction.parts")?;
                let texts: Vec<J> = parts
                    .iter()
                    .map(|pt| {
                        let t = pt
                            .get("text")
                            .cloned()
                            .ok_or_else(|| bad("systemInstruction parts must be text"))?;
                        Ok(with_vendor(text_block_j(t), vendor_of(pt, &["text"], p)))
                    })
                    .collect::<Result<_>>()?;
                if texts.len() == 1 && texts[0].get("vendor").is_none() {
                    texts[0].get("text").cloned().unwrap_or(J::s(""))
                } else {
                    J::Arr(texts)
                }
            }
        });
    }
    if let Some(si) = req.get("systemInstruction") {
        // Members besides parts (a role) are not modelled: only the original keeps them.
        conv.finish_system(p, Some(si.clone()));
    }
    let mut d = Dec::new(p, model);
    for (i, c) in arr(req.get("contents"), "contents")?.iter().enumerate() {
        google_content(&mut d, c, i).map_err(|e| at(e, "contents", i))?;
    }
    conv.finish_tools(p, req.get("tools"))?;
    conv.messages = d.msgs;
    Ok(conv)
}

fn google_content(d: &mut Dec, c: &J, ci: usize) -> Result<()> {
    let p = Provider::Google;
    let start = d.msgs.len();
    let role = c.str_of("role").map(|r| r.to_string());
    // `function`: the role older Gemini clients give function responses (a
    // user turn here; the group keeps its original for Gemini).
    if !matches!(role.as_deref(), None | Some("user" | "model" | "function")) {
        d.msgs.push(unknown_message(p, c));
        d.group(start, c);
        return Ok(());
    }
    let parts = arr(c.get("parts"), "parts")?;
    match role.as_deref() {
        Some("model") => {
            let mut blocks = Vec::new();
            let mut k = 0;
            let mut pending = Vec::new();
            for part in parts {
                let sig = part.get("thoughtSignature").cloned();
                let b = if let Some(t) = part.get("text") {
                    if part.get("thought").and_then(J::as_bool) == Some(true) {
                        let mut b = J::obj([("type", J::s("thinking")), ("thinking", t.clone())]);
                        if let Some(s) = sig {
                            b.set("thinkingSignature", s);
                        }
                        with_vendor(
                            b,
                            vendor_of(part, &["text", "thought", "thoughtSignature"], p),
                        )
                    } else {
                        let mut b = text_block_j(t.clone());
                        if let Some(s) = sig {
                            b.set("textSignature", s);
                        }
                        with_vendor(b, vendor_of(part, &["text", "thoughtSignature"], p))
                    }
                } else if let Some(fc) = part.get("functionCall") {
                    let name = fc.str_of("name").unwrap_or_default().to_string();
                    let (id, synthetic) = match fc.str_of("id") {
                        Some(id) => (id.to_string(), false),
                        None => (format!("gcall_{ci}_{k}"), true),
                    };
                    k += 1;
                    let mut b = tool_call(&id, fc.get("name").cloned().unwrap_or(J::s("")));
                    call_args(&mut b, fc.get("args"));
                    if synthetic {
                        b.set("syntheticId", J::Bool(true));
                    }
                    if let Some(s) = sig {
                        b.set("thoughtSignature", s);
                    }
                    pending.push((id, name, false));
                    // Members of the call besides id/name/args (willContinue, partialArgs…)
                    // ride along as `functionCall.<member>` for Gemini only.
                    let mut v = vendor_of(part, &["functionCall", "thoughtSignature"], p);
                    if let Some(J::Obj(extra)) = vendor_of(fc, &["id", "name", "args"], p)
                        .and_then(|x| x.get(p.name()).cloned())
                    {
                        let mut inner = v
                            .as_ref()
                            .and_then(|x| x.get(p.name()).cloned())
                            .unwrap_or(J::Obj(vec![]));
                        for (k, x) in extra {
                            inner.set(&format!("functionCall.{k}"), x);
                        }
                        v = Some(J::Obj(vec![(p.name().into(), inner)]));
                    }
                    with_vendor(b, v)
                } else if part.get("executableCode").is_some()
                    || part.get("codeExecutionResult").is_some()
                    || part.get("toolCall").is_some()
                    || part.get("toolResponse").is_some()
                {
                    tagged("serverTool", p, part)
                } else if part.get("inlineData").is_some() {
                    google_media(part, "inlineData")
                } else if part.get("fileData").is_some() {
                    google_media(part, "fileData")
                } else {
                    tagged("unknown", p, part)
                };
                blocks.push(b);
            }
            d.pending = pending;
            d.note_calls(&blocks);
            let msg = d.assistant(blocks);
            d.msgs
                .push(with_vendor(msg, vendor_of(c, &["role", "parts"], p)));
        }
        Some("user" | "function") | None => {
            let mut rest = Vec::new();
            for (k, part) in parts.iter().enumerate() {
                if let Some(fr) = part.get("functionResponse") {
                    let name = fr.str_of("name").unwrap_or_default().to_string();
                    let id = match fr.str_of("id") {
                        Some(id) => {
                            if let Some(slot) = d.pending.iter_mut().find(|c| c.0 == id.as_ref()) {
                                slot.2 = true;
                            }
                            id.to_string()
                        }
                        None => match d.pending.iter_mut().find(|c| !c.2 && c.1 == name) {
                            Some(slot) => {
                                slot.2 = true;
                                slot.0.clone()
                            }
                            None => format!("gresp_{ci}_{k}"),
                        },
                    };
                    let resp = fr.get("response").cloned().unwrap_or(J::Obj(vec![]));
                    let keys = resp.keys();
                    let is_error = keys.iter().any(|k| k == "error");
                    let only = |key: &str| keys.len() == 1 && keys[0] == key;
                    let text = match (resp.get("output"), resp.get("error")) {
                        (Some(s @ J::Str(_)), _) if only("output") => s.clone(),
                        (_, Some(s @ J::Str(_))) if only("error") => s.clone(),
                        _ => resp.text_as_string(),
                    };
                    let mut content = vec![text_block_j(text)];
                    if let Some(J::Arr(media)) = fr.get("parts") {
                        for m in media {
                            content.push(if m.get("inlineData").is_some() {
                                google_media(m, "inlineData")
                            } else if m.get("fileData").is_some() {
                                google_media(m, "fileData")
                            } else {
                                tagged("unknown", p, m)
                            });
                        }
                    }
                    let mut r = J::obj([
                        ("role", J::s("toolResult")),
                        ("toolCallId", J::s(&id)),
                        ("toolName", J::s(&name)),
                        ("content", J::Arr(content)),
                        ("isError", J::Bool(is_error)),
                        ("contentString", J::Bool(true)),
                    ]);
                    if fr.get("id").is_none() {
                        r.set("syntheticId", J::Bool(true));
                    }
                    let v = vendor_of(part, &["functionResponse"], p)
                        .or_else(|| vendor_of(fr, &["id", "name", "response", "parts"], p));
                    if v.is_some() || !matches!(resp, J::Obj(_)) {
                        // Not modelled: keep the whole part next to the result's text.
                        r.set(
                            "vendor",
                            J::obj([(p.name(), J::obj([("part", part.clone())]))]),
                        );
                    }
                    d.msgs.push(r);
                } else if let Some(t) = part.get("text") {
                    rest.push(with_vendor(
                        text_block_j(t.clone()),
                        vendor_of(part, &["text"], p),
                    ));
                } else if part.get("inlineData").is_some() {
                    rest.push(google_media(part, "inlineData"));
                } else if part.get("fileData").is_some() {
                    rest.push(google_media(part, "fileData"));
                } else {
                    rest.push(tagged("unknown", p, part));
                }
            }
            if !rest.is_empty() || parts.is_empty() {
                let mut msg = J::obj([("role", J::s("user")), ("content", J::Arr(rest))]);
                if role.is_none() {
                    msg.set(
                        "vendor",
                        J::obj([(p.name(), J::obj([("noRole", J::Bool(true))]))]),
                    );
                }
                d.msgs.push(msg);
            }
        }
        // Other roles were kept as unknown messages above.
        Some(_) => {}
    }
    d.group(start, c);
    Ok(())
}

// ---------------------------------------------------------------- tools

/// Tool definitions in canonical form: function tools `{name, description?,
/// parameters, vendor?}`; other tools (hosted search, code execution…)
/// `{provider, raw}`, sent back only to that provider.
pub fn tools_from(v: Option<&J>, p: Provider) -> Result<Option<Vec<J>>> {
    let Some(v) = v else { return Ok(None) };
    let list = v.as_arr().ok_or_else(|| bad("tools must be an array"))?;
    let mut out = Vec::new();
    let function = |name: Option<&J>, desc: Option<&J>, params: Option<&J>, vendor: Option<J>| {
        let mut t = J::obj([("name", name.cloned().unwrap_or(J::s("")))]);
        if let Some(d) = desc {
            t.set("description", d.clone());
        }
        t.set("parameters", params.cloned().unwrap_or(J::Obj(vec![])));
        with_vendor(t, vendor)
    };
    let hosted = |t: &J| J::obj([("provider", J::s(p.name())), ("raw", t.clone())]);
    for t in list {
        if !t.is_obj() {
            return Err(bad("each tool must be an object"));
        }
        match p {
            Provider::Anthropic => {
                // Client tools have an input_schema and no type (or type "custom").
                if t.get("input_schema").is_some()
                    && (t.get("type").is_none() || t.is("type", "custom"))
                {
                    out.push(function(
                        t.get("name"),
                        t.get("description"),
                        t.get("input_schema"),
                        vendor_of(t, &["name", "description", "input_schema"], p),
                    ));
                } else {
                    out.push(hosted(t));
                }
            }
            Provider::OpenAi => match t.get("function") {
                Some(f)
                    if t.is("type", "function")
                        && vendor_of(t, &["type", "function"], p).is_none() =>
                {
                    out.push(function(
                        f.get("name"),
                        f.get("description"),
                        f.get("parameters"),
                        vendor_of(f, &["name", "description", "parameters"], p),
                    ))
                }
                _ => out.push(hosted(t)),
            },
            Provider::Responses => {
                if t.is("type", "function") {
                    let mut f = function(
                        t.get("name"),
                        t.get("description"),
                        t.get("parameters"),
                        vendor_of(t, &["type", "name", "description", "parameters"], p),
                    );
                    // Left to Responses' default (strict where the schema
                    // allows), which no other API has (encode_tools).
                    if t.get("strict").is_none() {
                        set_vendor_member(&mut f, p, DEFAULT_STRICT, J::Bool(true));
                    }
                    out.push(f);
                } else {
                    out.push(hosted(t));
                }
            }
            Provider::Google => match t.get("functionDeclarations") {
                Some(J::Arr(decls)) if vendor_of(t, &["functionDeclarations"], p).is_none() => {
                    for f in decls {
                        out.push(function(
                            f.get("name"),
                            f.get("description"),
                            f.get("parameters"),
                            vendor_of(f, &["name", "description", "parameters"], p),
                        ));
                    }
                }
                _ => out.push(hosted(t)),
            },
        }
    }
    Ok(Some(out))
}

// ---------------------------------------------------------------- message by message

/// Decodes Anthropic messages one at a time (for importers): tool names of
/// results are found from the calls seen before. No `original` is attached.
pub struct AnthropicDecoder(Dec);

impl AnthropicDecoder {
    pub fn new(model: Option<J>) -> Self {
        let mut d = Dec::new(Provider::Anthropic, model);
        d.check = false;
        AnthropicDecoder(d)
    }

    /// Sets the model recorded on the assistant messages that follow.
    pub fn set_model(&mut self, model: Option<J>) {
        self.0.model = model;
    }

    /// The canonical messages of one Anthropic message `{role, content}`.
    pub fn message(&mut self, m: &J) -> Result<Vec<J>> {
        let start = self.0.msgs.len();
        anthropic_message(&mut self.0, m)?;
        let out = self.0.msgs.split_off(start);
        Ok(strip_original(out))
    }
}

/// Decodes OpenAI Responses items (for importers, e.g. Codex rollouts). No `original` is attached.
pub struct ResponsesDecoder(Dec);

impl ResponsesDecoder {
    pub fn new(model: Option<J>) -> Self {
        let mut d = Dec::new(Provider::Responses, model);
        d.check = false;
        ResponsesDecoder(d)
    }

    /// Sets the model recorded on the assistant messages that follow.
    pub fn set_model(&mut self, model: Option<J>) {
        self.0.model = model;
    }

    /// The canonical messages of consecutive items (assistant-side items in a row become one message).
    pub fn items(&mut self, items: &[J]) -> Result<Vec<J>> {
        let req = J::obj([("input", J::Arr(items.to_vec()))]);
        let start = self.0.msgs.len();
        responses_into(&req, &mut self.0)?;
        let out = self.0.msgs.split_off(start);
        Ok(strip_original(out))
    }
}

fn strip_original(mut msgs: Vec<J>) -> Vec<J> {
    for m in &mut msgs {
        m.remove("original");
    }
    msgs
}
