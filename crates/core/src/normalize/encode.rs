//! Canonical messages → provider requests. The messages are expected to have
//! been through [`super::transform`] for the target; the encoders only reshape.

/// Ids are hashed with foldhash (as in [`super::ids`]): a long conversation
/// looks up and stores one per item.
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

use super::canon::*;
use super::jv::{J, Key};
use super::report::CompatibilityReport;
use super::transform::{reasoning_item, responses_item_id, responses_key};

/// What the encoders need besides the messages.
#[derive(Debug, Default)]
pub struct Ctx {
    /// Target model (decides Gemini ids).
    pub model: Option<String>,
    /// System messages met mid-conversation, for targets that only have a top-level system.
    hoisted: Vec<J>,
    /// Gemini call ids that were sent (their responses carry them too).
    sent_ids: HashSet<String>,
    /// Gemini call ids sent by the parts of the conversation before this one
    /// ([`encode_part`]).
    sent_before: Option<std::sync::Arc<HashSet<String>>>,
    /// Gemini response ids looked for among the sent ones and not found
    /// (Responses: item ids taken as not sent before).
    unsent: Vec<String>,
    /// Responses item ids found in `sent_before` only: a part converted apart
    /// took them as sent by the parts before it.
    assumed: Vec<String>,
    /// A group's `original` counts messages past the end of those encoded.
    past_end: bool,
    /// Gemini: the assistant turn being encoded sends its call ids.
    ids_now: bool,
    /// Responses: hosted calls left out with their item, for their outputs.
    pub calls: PartCalls,
}

/// Responses hosted calls (`computer_call`, …) and their outputs, which
/// `call_id` pairs: a hosted call left out because its item id repeats an
/// earlier one's takes its output with it (an output whose call is not sent
/// is rejected), unless a call of that id was sent and waits for its output.
/// Function and custom calls are not counted: they keep their item, and the
/// rules pair their outputs.
#[derive(Debug, Default, Clone)]
pub struct CallState {
    /// Call ids whose last call was left out, without an output since.
    pub left_out: HashSet<String>,
    /// Call ids of calls sent that wait for their output.
    pub waiting: HashSet<String>,
}

/// What a part did to the [`CallState`], for the parts after it, and what a
/// part converted without the state before it took for granted (checked
/// when the parts are joined).
#[derive(Debug, Default, Clone)]
pub struct PartCalls {
    /// The state as the part goes (from the state before it, when known).
    pub state: CallState,
    /// Each call id the part changed, with whether it ends left out (`Some(true)`),
    /// waiting (`Some(false)`) or answered (`None`).
    changed: Vec<(String, Option<bool>)>,
    /// Call ids of outputs sent whose call the part did not know.
    outside: Vec<String>,
    /// Call ids of calls left out that the part did not know waiting.
    blind: Vec<String>,
}

impl PartCalls {
    /// Starts from the state before the part.
    pub fn after(state: CallState) -> Self {
        PartCalls {
            state,
            ..Default::default()
        }
    }

    /// A part's doing that is a whole state (the parts joined, after no state).
    pub fn whole(state: CallState) -> Self {
        let mut changed: Vec<(String, Option<bool>)> = state
            .left_out
            .iter()
            .map(|c| (c.clone(), Some(true)))
            .collect();
        changed.extend(state.waiting.iter().map(|c| (c.clone(), Some(false))));
        PartCalls {
            state,
            changed,
            ..Default::default()
        }
    }

    /// A hosted call sent.
    fn sent(&mut self, c: String) {
        self.state.left_out.remove(&c);
        self.state.waiting.insert(c.clone());
        self.changed.push((c, Some(false)));
    }

    /// A hosted call left out.
    fn left_out(&mut self, c: String) {
        if self.state.waiting.contains(&c) {
            return;
        }
        self.blind.push(c.clone());
        self.state.left_out.insert(c.clone());
        self.changed.push((c, Some(true)));
    }

    /// Whether the output of call `c` is sent (else its call was left out).
    fn output(&mut self, c: &str) -> bool {
        if !self.state.waiting.remove(c) {
            if self.state.left_out.contains(c) {
                return false;
            }
            self.outside.push(c.to_string());
        }
        self.changed.push((c.to_string(), None));
        true
    }

    /// Whether a part converted without the state before it (`before`) did
    /// otherwise than it would have with it: sent an output it would have
    /// left out, or left out a call it would have known waiting.
    pub fn differs_after(&self, before: &CallState) -> bool {
        self.outside.iter().any(|c| before.left_out.contains(c))
            || self.blind.iter().any(|c| before.waiting.contains(c))
    }

    /// The state after this part, given the state before it.
    pub fn apply_to(self, before: &mut CallState) {
        for (c, end) in self.changed {
            match end {
                Some(true) => {
                    before.waiting.remove(&c);
                    before.left_out.insert(c);
                }
                Some(false) => {
                    before.left_out.remove(&c);
                    before.waiting.insert(c);
                }
                None => {
                    before.waiting.remove(&c);
                    before.left_out.remove(&c);
                }
            }
        }
    }
}

impl Ctx {
    pub fn new(model: Option<String>) -> Self {
        Ctx {
            model,
            ..Default::default()
        }
    }
}

/// Whether the target Gemini model is version 3 or later (ids and signatures required).
pub fn gemini3(model: Option<&str>) -> bool {
    let Some(m) = model else { return false };
    let m = m.rsplit('/').next().unwrap_or(m);
    m.strip_prefix("gemini-")
        .and_then(|v| v.split(['-', '.']).next())
        .and_then(|v| v.parse::<u32>().ok())
        .is_some_and(|v| v >= 3)
}

/// Encodes messages decoded from one provider message (a decode group) afresh,
/// as the single provider value the group came from.
pub fn encode_group(p: Provider, msgs: &[J]) -> Option<J> {
    let mut rep = CompatibilityReport::new();
    let mut ctx = Ctx::new(None);
    if p == Provider::Google {
        for m in msgs {
            // Results decoded with an id answer calls that were sent with one.
            if role(m) == "toolResult" && m.get("syntheticId").is_none() {
                ctx.sent_ids
                    .insert(m.str_of("toolCallId").unwrap_or_default().to_string());
            }
            for b in blocks(m).iter() {
                if btype(b) == "toolCall" && b.get("syntheticId").is_none() {
                    ctx.sent_ids
                        .insert(b.str_of("id").unwrap_or_default().to_string());
                }
            }
        }
    }
    let (mut list, _) = encode_messages(p, msgs, &mut rep, &mut ctx);
    if !ctx.hoisted.is_empty() {
        return None;
    }
    let responses_assistant =
        p == Provider::Responses && msgs.first().is_some_and(|m| role(m) == "assistant");
    if responses_assistant {
        Some(J::Arr(list))
    } else if list.len() == 1 {
        list.pop()
    } else {
        None
    }
}

/// The system prompt as the piece of a request that holds it: Anthropic's
/// `system` value, OpenAI Chat's first message, Responses' `instructions`,
/// Gemini's `systemInstruction`.
pub fn system_piece(p: Provider, s: &J, system_role: Option<&str>) -> J {
    match p {
        Provider::Anthropic => anthropic_system(s),
        Provider::OpenAi => J::obj([
            ("role", J::s(system_role.unwrap_or("system"))),
            ("content", openai_system(s, p)),
        ]),
        Provider::Responses => J::s(&system_text(s)),
        Provider::Google => {
            let parts: Vec<J> = match s {
                J::Arr(b) => b
                    .iter()
                    .map(|t| {
                        let mut o = J::obj([("text", t.get("text").cloned().unwrap_or(J::s("")))]);
                        extend(&mut o, vendor_members(t, p));
                        o
                    })
                    .collect(),
                other => vec![J::obj([("text", other.clone())])],
            };
            J::obj([("parts", J::Arr(parts))])
        }
    }
}

/// The hash that identifies a system prompt (with its role) in `systemOriginal`.
pub fn system_hash(s: &J, system_role: Option<&str>) -> String {
    semantic_hash(&system_hashed(s, system_role))
}

fn system_hashed(s: &J, system_role: Option<&str>) -> [J; 2] {
    [s.clone(), system_role.map(J::s).unwrap_or(J::Null)]
}

/// Encodes a whole request fragment for `p`. `system_original` is
/// `fromProvider`'s `systemOriginal`: used when it is `p`'s and the prompt is unchanged.
#[allow(clippy::too_many_arguments)]
pub fn encode_request(
    p: Provider,
    msgs: &[J],
    system: Option<&J>,
    system_role: Option<&str>,
    system_original: Option<&J>,
    tools: Option<&[J]>,
    tools_original: Option<&J>,
    rep: &mut CompatibilityReport,
    ctx: &mut Ctx,
) -> J {
    let (list, _) = encode_messages(p, msgs, rep, ctx);
    let mut system = system.cloned();
    let mut hoisted = false;
    if !ctx.hoisted.is_empty() {
        hoisted = true;
        let mut texts: Vec<J> = match system.take() {
            Some(J::Arr(b)) => b,
            Some(s @ J::Str(_)) => vec![text_block_j(s)],
            _ => Vec::new(),
        };
        texts.append(&mut ctx.hoisted);
        system = Some(J::Arr(texts));
    }
    let piece = system.as_ref().map(|s| {
        let original = system_original.filter(|o| !hoisted && o.is("provider", p.name()));
        match original.and_then(|o| matching_original(o, &system_hashed(s, system_role))) {
            Some(raw) => raw,
            None => {
                let mut piece = system_piece(p, s, system_role);
                let n = piece.replace_lone_surrogates();
                lone_surrogates_replaced(n, None, "text", " in the system prompt", rep);
                piece
            }
        }
    });
    let mut req = J::Obj(vec![]);
    match p {
        Provider::Anthropic => {
            if let Some(s) = piece {
                req.set("system", s);
            }
            req.set("messages", J::Arr(list));
        }
        Provider::OpenAi => {
            let mut all = Vec::new();
            if let Some(s) = piece {
                all.push(s);
            }
            all.extend(list);
            req.set("messages", J::Arr(all));
        }
        Provider::Responses => {
            if let Some(s) = piece {
                if matches!(&system, Some(J::Arr(b)) if b.len() > 1) {
                    rep.step(
                        "text_joined",
                        None,
                        "system prompt blocks joined with a blank line: instructions is one string"
                            .into(),
                    );
                }
                req.set("instructions", s);
            }
            let string_input = msgs.len() == 1
                && role(&msgs[0]) == "user"
                && matches!(msgs[0].get("content"), Some(J::Str(_)))
                && vendor_members(&msgs[0], p)
                    .iter()
                    .any(|(k, _)| &**k == "inputString");
            if string_input {
                req.set("input", msgs[0].get("content").cloned().unwrap_or(J::s("")));
            } else {
                req.set("input", J::Arr(list));
            }
        }
        Provider::Google => {
            if let Some(s) = piece {
                req.set("systemInstruction", s);
            }
            req.set("contents", J::Arr(list));
        }
    }
    if let Some(tools) = tools {
        let original = tools_original
            .filter(|o| o.is("provider", p.name()))
            .and_then(|o| matching_original(o, tools));
        let encoded = match original {
            Some(raw) => raw,
            None => encode_tools(p, tools, rep),
        };
        req.set("tools", encoded);
    }
    req
}

/// A part of a conversation encoded ([`encode_part`]).
pub struct Part {
    pub items: Vec<J>,
    /// Gemini call ids it sent.
    pub sent: HashSet<String>,
    /// Gemini response ids it did not find sent (by it or by `sent_before`):
    /// a part before it that sent one would have changed its encoding.
    pub unsent: Vec<String>,
    /// Responses item ids it took as sent by the parts before it.
    pub assumed: Vec<String>,
    /// A group's `original` reaches past the part's end (the whole
    /// conversation may give that group's JSON as it was).
    pub past_end: bool,
    /// Responses hosted calls left out, sent, and outputs sent for calls before it.
    pub calls: PartCalls,
}

/// The provider messages for a part of a conversation, as [`encode_request`]
/// encodes them (for [`super::incremental`]), after parts that sent
/// `sent_before`; or `None` when a system message had to join the system
/// prompt (the prompt then depends on every part).
pub fn encode_part(
    p: Provider,
    msgs: &[J],
    model: Option<String>,
    sent_before: Option<std::sync::Arc<HashSet<String>>>,
    calls_before: &CallState,
    rep: &mut CompatibilityReport,
) -> Option<Part> {
    let mut ctx = Ctx::new(model);
    ctx.sent_before = sent_before;
    ctx.calls = PartCalls::after(calls_before.clone());
    let (list, _) = encode_messages(p, msgs, rep, &mut ctx);
    ctx.hoisted.is_empty().then_some(Part {
        items: list,
        sent: ctx.sent_ids,
        unsent: ctx.unsent,
        assumed: ctx.assumed,
        past_end: ctx.past_end,
        calls: ctx.calls,
    })
}

fn system_text(s: &J) -> String {
    match s {
        J::Arr(b) => b
            .iter()
            .filter_map(|t| t.str_of("text").map(|x| x.to_string()))
            .collect::<Vec<_>>()
            .join("\n\n"),
        other => other.as_str().unwrap_or_default().to_string(),
    }
}

fn anthropic_system(s: &J) -> J {
    match s {
        J::Arr(b) => J::Arr(
            b.iter()
                .map(|t| {
                    let mut o = J::obj([
                        ("type", J::s("text")),
                        ("text", t.get("text").cloned().unwrap_or(J::s(""))),
                    ]);
                    extend(&mut o, vendor_members(t, Provider::Anthropic));
                    o
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A `system` / `developer` message inside an OpenAI Chat or Responses conversation.
fn system_message(m: &J, p: Provider) -> J {
    let dev = m.get("developer").and_then(J::as_bool) == Some(true);
    let mut msg = J::obj([
        ("role", J::s(if dev { "developer" } else { "system" })),
        (
            "content",
            openai_system(m.get("content").unwrap_or(&J::s("")), p),
        ),
    ]);
    extend(&mut msg, vendor_members(m, p));
    msg
}

fn openai_system(s: &J, p: Provider) -> J {
    let part = if p == Provider::Responses {
        "input_text"
    } else {
        "text"
    };
    match s {
        J::Arr(b) => J::Arr(
            b.iter()
                .map(|t| {
                    let mut o = J::obj([
                        ("type", J::s(part)),
                        ("text", t.get("text").cloned().unwrap_or(J::s(""))),
                    ]);
                    extend(&mut o, vendor_members(t, p));
                    o
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Tool definitions in `p`'s shape; hosted tools of another provider are left out (reported).
pub fn encode_tools(p: Provider, tools: &[J], rep: &mut CompatibilityReport) -> J {
    let field = |t: &J, k: &str| t.get(k).cloned();
    let mut out = Vec::new();
    let mut decls = Vec::new();
    for t in tools {
        if let Some(raw) = t.get("raw") {
            if t.is("provider", p.name()) {
                out.push(raw.clone());
            } else {
                rep.lossy(
                    "tool_dropped",
                    None,
                    "tools",
                    format!(
                        "a {} hosted tool ({}) has no {} equivalent",
                        t.str_of("provider").unwrap_or_default(),
                        raw.str_of("type")
                            .or_else(|| raw.keys().into_iter().next())
                            .unwrap_or_default(),
                        p.name()
                    ),
                );
            }
            continue;
        }
        // `strict` (calls follow the schema exactly) is a member of function
        // tools in both OpenAI APIs.
        let sibling = match p {
            Provider::OpenAi => Some(Provider::Responses),
            Provider::Responses => Some(Provider::OpenAi),
            _ => None,
        };
        let strict = sibling.and_then(|o| {
            t.get("vendor")?
                .get(o.name())?
                .get("strict")
                .map(|v| (format!("{}.strict", o.name()), v.clone()))
        });
        let default_strict = format!("{}.{DEFAULT_STRICT}", Provider::Responses.name());
        let foreign: Vec<String> = foreign_vendor_keys(t, p)
            .into_iter()
            .filter(|k| strict.as_ref().is_none_or(|(s, _)| s != k))
            .map(|k| {
                if k == default_strict {
                    format!("{k} (strict left to Responses' default, strict where the schema allows: sent not strict)")
                } else {
                    k
                }
            })
            .collect();
        if !foreign.is_empty() {
            rep.warn_step(
                "provider_fields_dropped",
                None,
                format!(
                    "tool fields not sent to {}: {}",
                    p.name(),
                    foreign.join(", ")
                ),
            );
        }
        let mut d = J::obj([("name", field(t, "name").unwrap_or(J::s("")))]);
        if let Some(x) = field(t, "description") {
            d.set("description", x);
        }
        let params = field(t, "parameters").unwrap_or(J::Obj(vec![]));
        let mut own = vendor_members(t, p);
        if let Some((_, v)) = strict
            && !own.iter().any(|(k, _)| &**k == "strict")
        {
            own.push(("strict".into(), v));
        }
        // Responses reads a missing `strict` as strict where the schema
        // allows (OpenAI's function-calling guide); OpenAI Chat, the other
        // providers and the canonical model as not strict. A tool from
        // Responses without it is marked `defaultStrict` and sent without it;
        // any other gets `strict: false`, which keeps its meaning.
        if p == Provider::Responses {
            match own.iter().position(|(k, _)| &**k == DEFAULT_STRICT) {
                Some(at) => {
                    own.remove(at);
                }
                None if !own.iter().any(|(k, _)| &**k == "strict") => {
                    own.push(("strict".into(), J::Bool(false)));
                }
                None => {}
            }
        }
        let name = t.str_of("name").unwrap_or_default().into_owned();
        let mut encoded = match p {
            Provider::Google => {
                d.set("parameters", params);
                extend(&mut d, own);
                d
            }
            Provider::Anthropic => {
                d.set("input_schema", params);
                extend(&mut d, own);
                d
            }
            Provider::OpenAi => {
                d.set("parameters", params);
                extend(&mut d, own);
                J::obj([("type", J::s("function")), ("function", d)])
            }
            Provider::Responses => {
                let mut r = J::obj([("type", J::s("function"))]);
                if let J::Obj(m) = d {
                    extend(&mut r, m);
                }
                r.set("parameters", params);
                extend(&mut r, own);
                r
            }
        };
        // Rule 11: a definition encoded here (its schema's keys and texts too).
        let n = encoded.replace_lone_surrogates();
        let what = format!(" in the definition of tool {name:?}");
        lone_surrogates_replaced(n, None, "tools", &what, rep);
        if p == Provider::Google {
            decls.push(encoded);
        } else {
            out.push(encoded);
        }
    }
    if !decls.is_empty() {
        out.insert(0, J::obj([("functionDeclarations", J::Arr(decls))]));
    }
    J::Arr(out)
}

/// Encodes the message list; returns the provider messages and, for each, the
/// index of the canonical message it started from.
fn encode_messages(
    p: Provider,
    msgs: &[J],
    rep: &mut CompatibilityReport,
    ctx: &mut Ctx,
) -> (Vec<J>, Vec<usize>) {
    let mut out: Vec<J> = Vec::new();
    let mut from: Vec<usize> = Vec::new();
    let mut st = State::default();
    let mut i = 0;
    while i < msgs.len() {
        // Gemini before 3 takes no call ids: a group that holds some is encoded afresh.
        let no_ids =
            p == Provider::Google && ctx.model.as_deref().is_some_and(|m| !gemini3(Some(m)));
        ctx.past_end |= original_past_end(&msgs[i..], p);
        let original = unchanged_original(&msgs[i..], p).filter(|(_, n)| {
            !no_ids
                || !msgs[i..i + n].iter().any(|m| {
                    (role(m) == "toolResult" && m.get("syntheticId").is_none())
                        || blocks(m)
                            .iter()
                            .any(|b| btype(b) == "toolCall" && b.get("syntheticId").is_none())
                })
        });
        if let Some((raw, n)) = original {
            st.close(p, &mut out, &mut from, rep);
            match raw {
                J::Arr(items) if p == Provider::Responses => {
                    let start = out.len();
                    for it in items {
                        out.push(it);
                        from.push(i);
                    }
                    repeated_item_ids(&mut out, &mut from, start, i, rep, ctx);
                }
                other => {
                    out.push(other);
                    from.push(i);
                }
            }
            if p == Provider::Google {
                for m in &msgs[i..i + n] {
                    for b in blocks(m).iter() {
                        if btype(b) == "toolCall" && b.get("syntheticId").is_none() {
                            ctx.sent_ids
                                .insert(b.str_of("id").unwrap_or_default().to_string());
                        }
                    }
                }
            }
            i += n;
            continue;
        }
        let before = out.len();
        if p == Provider::Google && role(&msgs[i]) != "toolResult" {
            st.close(p, &mut out, &mut from, rep);
            from.resize(out.len(), i);
        }
        let before = if p == Provider::Google {
            out.len()
        } else {
            before
        };
        match p {
            Provider::Anthropic => anthropic_one(&msgs[i], i, &mut out, &mut st, rep, ctx),
            Provider::OpenAi => openai_one(&msgs[i], i, &mut out, &mut from, &mut st, rep),
            Provider::Responses => responses_one(&msgs[i], i, &mut out, rep),
            Provider::Google => google_one(&msgs[i], i, &mut out, &mut st, rep, ctx),
        }
        for m in out.iter_mut().skip(before) {
            let n = m.replace_lone_surrogates_except(&opaque_member);
            lone_surrogates_replaced(n, Some(i), "text", "", rep);
        }
        from.resize(out.len(), i);
        if p == Provider::Responses {
            repeated_item_ids(&mut out, &mut from, before, i, rep, ctx);
        }
        i += 1;
    }
    st.close(p, &mut out, &mut from, rep);
    (out, from)
}

/// What an item of a Responses request is to the rule for repeated item ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ItemKind {
    /// Its id may go: `call_id` pairs calls and outputs, a message is its text
    /// (messages, function and custom calls and their outputs).
    Optional,
    /// A reasoning item: its id is what it is, and the item after it is tied to it.
    Reasoning,
    /// The output of a hosted call (`computer_call_output`, …), paired by `call_id`.
    HostedOutput,
    /// Any other item, whose id is what it is: a hosted call (with a
    /// `call_id`), an item reference.
    Required,
}

impl ItemKind {
    /// The kind of an item of `type` `kind` (none: a message).
    pub(super) fn of(kind: Option<&str>) -> ItemKind {
        match kind {
            None
            | Some(
                "message"
                | "function_call"
                | "function_call_output"
                | "custom_tool_call"
                | "custom_tool_call_output",
            ) => ItemKind::Optional,
            Some("reasoning") => ItemKind::Reasoning,
            Some(k) if k.ends_with("_output") => ItemKind::HostedOutput,
            Some(_) => ItemKind::Required,
        }
    }
}

/// The Responses item a block of an assistant message becomes, read from the
/// block alone as the encoder reads it: its kind and its id (none: not an
/// item of its own, sent as part of a message item). `None`: the block is not
/// sent as an item (another provider's raw item). For the prescan of parts
/// converted apart ([`ReasoningPairs`]); what the rules before the encoder
/// change (a thinking block of another model sent as text, say) it does not
/// know, and a part that took a wrong id is found at the join.
pub(super) fn responses_item_of(b: &J) -> Option<(ItemKind, Option<String>)> {
    let p = Provider::Responses;
    if let Some(raw) = own_raw(b, p) {
        let kind = ItemKind::of(raw.str_of("type").as_deref());
        return Some((kind, raw.str_of("id").map(|i| i.into_owned())));
    }
    Some(match btype(b).as_ref() {
        "unknown" | "serverTool" => return None,
        "thinking" => {
            let Some(sig) = b.get("thinkingSignature") else {
                return Some((ItemKind::Optional, None));
            };
            // pi writes the item compactly, its id second: read in the
            // escaped text, neither decoded nor parsed (the item can be long);
            // an id with an escape goes the long way.
            let fast = match sig {
                J::Str(raw) => raw
                    .strip_prefix(r#"{\"type\":\"reasoning\",\"id\":\""#)
                    .and_then(|rest| rest.split_once('\\'))
                    .filter(|(_, after)| after.starts_with('"'))
                    .map(|(id, _)| id.to_string()),
                _ => None,
            };
            match fast {
                Some(id) => (ItemKind::Reasoning, Some(id)),
                None => match reasoning_item(sig) {
                    Some(item) => (
                        ItemKind::Reasoning,
                        item.str_of("id").map(|i| i.into_owned()),
                    ),
                    // Not a reasoning item: dropped or sent as text.
                    None => (ItemKind::Optional, None),
                },
            }
        }
        "text" => (
            ItemKind::Optional,
            b.str_of("textSignature")
                .and_then(|s| parse_text_signature(&s).0),
        ),
        "toolCall" => (
            ItemKind::of(Some(
                vendor_kind(b, p).as_deref().unwrap_or("function_call"),
            )),
            b.str_of("id")
                .and_then(|id| responses_item_id(&id).map(str::to_string)),
        ),
        _ => (ItemKind::Optional, None),
    })
}

/// What becomes of an item with an id under the rule for repeated item ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    /// Sent as it is (its id is new).
    Sent,
    /// Sent without its id.
    IdDropped,
    /// Left out.
    LeftOut,
}

/// Responses ties an item to the reasoning item before it: an item whose
/// reasoning is not sent, and a reasoning item whose next item is not sent as
/// it was, are rejected. This is that rule over the items in order (one
/// assistant turn's, or one request's), written once for the encoder and for
/// the prescan of parts converted apart (which must find the ids the encoder
/// sends). `T` marks the last reasoning item sent, to take it back.
#[derive(Debug)]
pub(super) struct ReasoningPairs<T> {
    /// A reasoning item was left out, and none sent since.
    gone: bool,
    /// The last reasoning item sent, until the item after it is seen.
    sent: Option<T>,
}

impl<T> Default for ReasoningPairs<T> {
    fn default() -> Self {
        ReasoningPairs {
            gone: false,
            sent: None,
        }
    }
}

impl<T> ReasoningPairs<T> {
    /// The next item, which has an id (`repeated`: an earlier item's). What
    /// becomes of it, and the reasoning item sent just before it that is to
    /// be left out too (this item is not sent as it was). `mark` is called
    /// for a reasoning item sent.
    pub(super) fn item(
        &mut self,
        kind: ItemKind,
        repeated: bool,
        mark: impl FnOnce() -> T,
    ) -> (Fate, Option<T>) {
        let reasoning = kind == ItemKind::Reasoning;
        let optional = kind == ItemKind::Optional;
        let follows = if reasoning { None } else { self.sent.take() };
        // An item with a new id whose reasoning was left out.
        let unpaired = self.gone && optional;
        if !(repeated || unpaired) {
            if reasoning {
                self.gone = false;
                self.sent = Some(mark());
            }
            return (Fate::Sent, None);
        }
        let fate = if optional {
            Fate::IdDropped
        } else {
            Fate::LeftOut
        };
        if reasoning || follows.is_some() {
            self.gone = true;
        }
        (fate, follows)
    }

    /// The next item, which has no id: sent as it is.
    pub(super) fn item_without_id(&mut self, kind: ItemKind) {
        if kind != ItemKind::Reasoning {
            self.sent = None;
        }
    }
}

/// Responses rejects input whose items repeat an id, as a turn replayed twice
/// does (`rs_1`, `msg_1`, `fc_1` again). A later item with an earlier item's id
/// is sent without it where the id is optional ([`ItemKind`]), and left out
/// where the id is what the item is, and so are the outputs of a hosted call
/// left out ([`PartCalls`]), and the reasoning items tied to what is not sent
/// as it was ([`ReasoningPairs`]). The ids seen go in `sent_ids`, and, for
/// parts converted apart, in `unsent` (a part before that held one would have
/// changed this part).
fn repeated_item_ids(
    out: &mut Vec<J>,
    from: &mut Vec<usize>,
    start: usize,
    i: usize,
    rep: &mut CompatibilityReport,
    ctx: &mut Ctx,
) {
    let mut keep = Vec::with_capacity(out.len().saturating_sub(start));
    // The last reasoning sent is marked with its place in `keep` and its id.
    let mut pairs: ReasoningPairs<(usize, String)> = ReasoningPairs::default();
    // Read where they lie (most items are sent as they are: nothing copied).
    for item in out.iter_mut().skip(start) {
        let type_ = item.str_of("type");
        let kind = ItemKind::of(type_.as_deref());
        let type_ = type_.unwrap_or(std::borrow::Cow::Borrowed("message"));
        let call_id = item.str_of("call_id");
        if let (ItemKind::HostedOutput, Some(c)) = (kind, &call_id)
            && !ctx.calls.output(c)
        {
            rep.lossy(
                "orphan_tool_result_dropped",
                Some(i),
                "toolResult",
                format!("{type_} for call {c:?} left out with its call (left out for a repeated item id)"),
            );
            keep.push(false);
            continue;
        }
        // A hosted call (function and custom calls keep their item, and the
        // rules pair their outputs).
        let call = call_id
            .filter(|_| kind == ItemKind::Required)
            .map(|c| c.into_owned());
        let Some(id) = item.str_of("id") else {
            pairs.item_without_id(kind);
            if let Some(c) = call {
                ctx.calls.sent(c);
            }
            keep.push(true);
            continue;
        };
        let mine = ctx.sent_ids.contains(&*id);
        let before = !mine && ctx.sent_before.as_ref().is_some_and(|s| s.contains(&*id));
        if before {
            ctx.assumed.push(id.to_string());
        }
        let repeated = mine || before;
        let (fate, follows) = pairs.item(kind, repeated, || (keep.len(), id.to_string()));
        let mut drop_id = false;
        match fate {
            Fate::Sent => {
                let id = id.to_string();
                ctx.sent_ids.insert(id.clone());
                ctx.unsent.push(id);
                if let Some(c) = call {
                    ctx.calls.sent(c);
                }
            }
            Fate::IdDropped => {
                drop_id = true;
                rep.step(
                    "item_id_repeated",
                    Some(i),
                    if repeated {
                        format!("{type_} item id {id:?} was an earlier item's: sent without it (Responses rejects repeated item ids)")
                    } else {
                        format!("{type_} item id {id:?} not sent: the reasoning item before it was left out (Responses rejects an item without its reasoning)")
                    },
                );
                if let Some(c) = call {
                    ctx.calls.sent(c);
                }
            }
            Fate::LeftOut => {
                rep.lossy(
                    "item_id_repeated",
                    Some(i),
                    if kind == ItemKind::Reasoning {
                        "thinking"
                    } else {
                        "message"
                    },
                    format!("{type_} item {id:?} has an earlier item's id and cannot go without one: left out (Responses rejects repeated item ids)"),
                );
                if let Some(c) = call {
                    ctx.calls.left_out(c);
                }
            }
        }
        // The reasoning sent just before this item, which is not sent as it
        // was: left out too.
        if let Some((at, rid)) = follows {
            keep[at] = false;
            ctx.sent_ids.remove(&rid);
            ctx.unsent.retain(|u| *u != rid);
            rep.lossy(
                "item_id_repeated",
                Some(i),
                "thinking",
                format!("reasoning item {rid:?} left out: the item after it, {id:?}, is not sent as it was (Responses rejects a reasoning item without the item that follows it)"),
            );
        }
        if drop_id {
            item.remove("id");
        }
        keep.push(fate != Fate::LeftOut);
    }
    if keep.iter().all(|k| *k) {
        return;
    }
    let mut k = std::iter::repeat_n(&true, start).chain(keep.iter());
    out.retain(|_| *k.next().unwrap_or(&true));
    let mut k = std::iter::repeat_n(&true, start).chain(keep.iter());
    from.retain(|_| *k.next().unwrap_or(&true));
}

/// Rule 11's report: `n` lone surrogates (in `what`, which starts with a
/// space, or nothing for a message) replaced with U+FFFD.
pub(super) fn lone_surrogates_replaced(
    n: usize,
    message: Option<usize>,
    field: &str,
    what: &str,
    rep: &mut CompatibilityReport,
) {
    if n > 0 {
        rep.lossy(
            "lone_surrogates_replaced",
            message,
            field,
            format!("{n} lone UTF-16 surrogate(s){what} replaced with U+FFFD"),
        );
    }
}

/// Opaque values a provider verifies byte for byte (signatures, encrypted
/// reasoning): kept as they are, lone surrogates included (§15.4 rule 11).
fn opaque_member(obj: &J, key: &str) -> bool {
    match key {
        "signature" | "thoughtSignature" | "encrypted_content" => true,
        "data" => obj.is("type", "redacted_thinking"),
        _ => false,
    }
}

/// Merging state between messages.
#[derive(Default)]
struct State {
    /// The last provider message is a fresh user turn holding tool results
    /// (Anthropic, Gemini): more results and a following user message join it.
    open_results: bool,
    /// OpenAI Chat: images from tool results waiting for a user message after the tool messages.
    images: Vec<J>,
    image_from: usize,
}

impl State {
    fn close(
        &mut self,
        p: Provider,
        out: &mut Vec<J>,
        from: &mut Vec<usize>,
        rep: &mut CompatibilityReport,
    ) {
        self.open_results = false;
        if self.images.is_empty() {
            return;
        }
        if p == Provider::OpenAi {
            let mut parts = vec![J::obj([
                ("type", J::s("text")),
                ("text", J::s("Attached image(s) from tool result:")),
            ])];
            parts.append(&mut self.images);
            out.push(J::obj([("role", J::s("user")), ("content", J::Arr(parts))]));
            rep.warn_step(
                "tool_result_image_moved",
                Some(self.image_from),
                "OpenAI Chat tool messages hold text only: images of tool results moved to a user message after them".into(),
            );
        } else {
            let mut parts = vec![J::obj([(
                "text",
                J::s("Attached image(s) from tool result:"),
            )])];
            parts.append(&mut self.images);
            out.push(J::obj([("role", J::s("user")), ("parts", J::Arr(parts))]));
            rep.warn_step(
                "tool_result_image_moved",
                Some(self.image_from),
                "only Gemini 3 and later take images inside function responses: moved to a user turn after them".into(),
            );
        }
        from.push(self.image_from);
    }
}

fn dropped(rep: &mut CompatibilityReport, i: usize, b: &J, target: Provider) {
    let t = btype(b);
    let code = match t.as_ref() {
        "serverTool" => "server_tool_dropped",
        "document" => "document_dropped",
        "image" => "image_dropped",
        _ => "unknown_block_dropped",
    };
    rep.lossy(
        code,
        Some(i),
        &t,
        format!(
            "{} {t} block cannot be sent to {}",
            if t == "image" { "an" } else { "a" },
            target.name()
        ),
    );
}

fn own_raw(b: &J, p: Provider) -> Option<J> {
    let t = btype(b);
    if (t == "unknown" || t == "serverTool") && block_provider(b) == Some(p) {
        b.get("raw").cloned()
    } else {
        None
    }
}

// ---------------------------------------------------------------- Anthropic

fn anthropic_media(b: &J) -> Option<J> {
    let kind = btype(b).to_string();
    let source = if let Some(d) = b.get("data") {
        J::obj([
            ("type", J::s("base64")),
            ("media_type", b.get("mimeType").cloned().unwrap_or(J::s(""))),
            ("data", d.clone()),
        ])
    } else if let Some(u) = b.get("url") {
        J::obj([("type", J::s("url")), ("url", u.clone())])
    } else if let Some(f) = b.get("fileId") {
        J::obj([("type", J::s("file")), ("file_id", f.clone())])
    } else if let (Some(t), "document") = (b.get("text"), kind.as_str()) {
        J::obj([
            ("type", J::s("text")),
            (
                "media_type",
                b.get("mimeType").cloned().unwrap_or(J::s("text/plain")),
            ),
            ("data", t.clone()),
        ])
    } else {
        return None;
    };
    let mut o = J::obj([("type", J::s(&kind)), ("source", source)]);
    if let Some(t) = b.get("title")
        && kind == "document"
    {
        o.set("title", t.clone());
    }
    extend(&mut o, vendor_members(b, Provider::Anthropic));
    Some(o)
}

fn anthropic_block(b: &J, i: usize, rep: &mut CompatibilityReport) -> Option<J> {
    let p = Provider::Anthropic;
    if let Some(raw) = own_raw(b, p) {
        return Some(raw);
    }
    let mut o = match btype(b).as_ref() {
        "text" => J::obj([
            ("type", J::s("text")),
            ("text", b.get("text").cloned().unwrap_or(J::s(""))),
        ]),
        "thinking" => {
            if b.get("redacted").and_then(J::as_bool) == Some(true) {
                J::obj([
                    ("type", J::s("redacted_thinking")),
                    (
                        "data",
                        b.get("thinkingSignature").cloned().unwrap_or(J::s("")),
                    ),
                ])
            } else {
                J::obj([
                    ("type", J::s("thinking")),
                    ("thinking", b.get("thinking").cloned().unwrap_or(J::s(""))),
                    (
                        "signature",
                        b.get("thinkingSignature").cloned().unwrap_or(J::s("")),
                    ),
                ])
            }
        }
        "toolCall" => J::obj([
            ("type", J::s("tool_use")),
            ("id", b.get("id").cloned().unwrap_or(J::s(""))),
            ("name", b.get("name").cloned().unwrap_or(J::s(""))),
            ("input", object_args(b, i, rep)),
        ]),
        "image" | "document" => match anthropic_media(b) {
            Some(m) => return Some(m),
            None => {
                dropped(rep, i, b, p);
                return None;
            }
        },
        _ => {
            dropped(rep, i, b, p);
            return None;
        }
    };
    extend(&mut o, vendor_members(b, p));
    Some(o)
}

/// Arguments for targets that need an object: the original text when it is an
/// object (its numbers as written), else `{"invalid_arguments": text}`; parsed
/// arguments that are not an object likewise, as their JSON text (rule 7; the
/// wrap is reported here, where it is made: a message sent as its provider
/// wrote it is not wrapped).
fn object_args(b: &J, i: usize, rep: &mut CompatibilityReport) -> J {
    let wrapped = |text: J, rep: &mut CompatibilityReport| {
        let id = b.str_of("id").unwrap_or_default();
        rep.warn_step(
            "invalid_arguments_wrapped",
            Some(i),
            format!("arguments of call {id} are not a JSON object: sent as {{\"invalid_arguments\": <the original text>}}"),
        );
        J::obj([("invalid_arguments", text)])
    };
    match b.get("argumentsRaw") {
        // Empty arguments (`""`, as OpenAI streams a call without any) and
        // `null`: no arguments.
        Some(raw)
            if raw
                .as_str()
                .is_some_and(|t| t.trim().is_empty() || t.trim() == "null") =>
        {
            J::Obj(vec![])
        }
        Some(raw) => match raw.as_str().and_then(|t| J::parse(&t).ok()) {
            Some(o @ J::Obj(_)) => o,
            _ => wrapped(raw.clone(), rep),
        },
        None => match b.get("arguments") {
            Some(o @ J::Obj(_)) => o.clone(),
            // No arguments (missing or `null`): `{}`.
            None | Some(J::Null) => J::Obj(vec![]),
            // An array, a string, a number: its JSON text, wrapped.
            Some(other) => wrapped(other.text_as_string(), rep),
        },
    }
}

/// Arguments for targets that take their JSON text (OpenAI Chat and
/// Responses): the original text as it was written, else the parsed
/// arguments' text; none (missing or `null`): `"{}"`.
fn text_args(b: &J) -> J {
    match (b.get("argumentsRaw"), b.get("arguments")) {
        (Some(raw), _) => raw.clone(),
        (None, None | Some(J::Null)) => J::s("{}"),
        (None, Some(a)) => a.text_as_string(),
    }
}

fn anthropic_one(
    m: &J,
    i: usize,
    out: &mut Vec<J>,
    st: &mut State,
    rep: &mut CompatibilityReport,
    ctx: &mut Ctx,
) {
    let p = Provider::Anthropic;
    match role(m).as_ref() {
        "user" => {
            let content = match m.get("content") {
                Some(s @ J::Str(_)) if !st.open_results => s.clone(),
                _ => J::Arr(
                    blocks(m)
                        .iter()
                        .filter_map(|b| anthropic_block(b, i, rep))
                        .collect(),
                ),
            };
            if st.open_results
                && let (Some(J::Arr(c)), J::Arr(more)) =
                    (out.last_mut().and_then(|l| l.get_mut("content")), &content)
            {
                c.extend(more.iter().cloned());
                st.open_results = false;
                return;
            }
            let mut msg = J::obj([("role", J::s("user")), ("content", content)]);
            extend(&mut msg, vendor_members(m, p));
            out.push(msg);
            st.open_results = false;
        }
        "toolResult" => {
            let mut content: Vec<J> = blocks(m)
                .iter()
                .filter_map(|b| anthropic_block(b, i, rep))
                .collect();
            let mut r = J::obj([
                ("type", J::s("tool_result")),
                (
                    "tool_use_id",
                    m.get("toolCallId").cloned().unwrap_or(J::s("")),
                ),
            ]);
            if content.len() == 1
                && content[0].is("type", "text")
                && content[0].keys().len() == 2
                && content_string(m)
            {
                r.set(
                    "content",
                    content.remove(0).get("text").cloned().unwrap_or(J::s("")),
                );
            } else if !content.is_empty() {
                r.set("content", J::Arr(content));
            }
            if m.get("isError").and_then(J::as_bool) == Some(true) {
                r.set("is_error", J::Bool(true));
            }
            extend(&mut r, vendor_members(m, p));
            if st.open_results
                && let Some(J::Arr(c)) = out.last_mut().and_then(|l| l.get_mut("content"))
            {
                let at = c.iter().take_while(|b| b.is("type", "tool_result")).count();
                c.insert(at, r);
                return;
            }
            out.push(J::obj([
                ("role", J::s("user")),
                ("content", J::Arr(vec![r])),
            ]));
            st.open_results = true;
        }
        "assistant" => {
            st.open_results = false;
            let content: Vec<J> = match m.get("content") {
                Some(J::Arr(a)) => a
                    .iter()
                    .filter_map(|b| anthropic_block(b, i, rep))
                    .collect(),
                _ => Vec::new(),
            };
            let mut msg = J::obj([("role", J::s("assistant")), ("content", J::Arr(content))]);
            extend(&mut msg, vendor_members(m, p));
            out.push(msg);
        }
        "system" if is_inline_system(m) => {
            // Anthropic's own inline system message, in its place.
            st.open_results = false;
            let mut msg = J::obj([
                ("role", J::s("system")),
                (
                    "content",
                    anthropic_system(m.get("content").unwrap_or(&J::s(""))),
                ),
            ]);
            extend(
                &mut msg,
                vendor_members(m, p)
                    .into_iter()
                    .filter(|(k, _)| &**k != "inline")
                    .collect(),
            );
            out.push(msg);
        }
        "system" => hoist(m, i, p, !out.is_empty(), rep, ctx),
        "unknown" if own_message(m, p).is_some() => {
            st.open_results = false;
            out.extend(own_message(m, p));
        }
        other => rep.lossy(
            "unknown_block_dropped",
            Some(i),
            "message",
            format!("a message with role {other:?} cannot be sent to anthropic"),
        ),
    }
}

/// Whether a tool result's content was one string where it came from (its one
/// text block goes to each target as a string; otherwise blocks stay an array
/// where the target takes one).
fn content_string(m: &J) -> bool {
    m.get("contentString").and_then(J::as_bool) == Some(true)
}

/// A system message that was inline in an Anthropic request (`vendor.anthropic.inline`).
fn is_inline_system(m: &J) -> bool {
    vendor_members(m, Provider::Anthropic)
        .iter()
        .any(|(k, v)| &**k == "inline" && *v == J::Bool(true))
}

/// The raw provider message of a message of a role only `p` knows.
fn own_message(m: &J, p: Provider) -> Option<J> {
    if role(m) == "unknown" && m.is("provider", p.name()) {
        m.get("raw").cloned()
    } else {
        None
    }
}

fn hoist(
    m: &J,
    i: usize,
    p: Provider,
    after_others: bool,
    rep: &mut CompatibilityReport,
    ctx: &mut Ctx,
) {
    for b in blocks(m).iter() {
        ctx.hoisted
            .push(text_block_j(b.get("text").cloned().unwrap_or(J::s(""))));
    }
    let detail = format!(
        "{} has no system messages inside the conversation: appended to the system prompt",
        p.name()
    );
    if after_others {
        rep.lossy("system_hoisted", Some(i), "system position", detail);
    } else {
        rep.step("system_hoisted", Some(i), detail);
    }
}

// ---------------------------------------------------------------- OpenAI Chat

fn data_url(b: &J) -> Option<String> {
    Some(format!(
        "data:{};base64,{}",
        b.str_of("mimeType")?,
        b.str_of("data")?
    ))
}

fn openai_part(b: &J, i: usize, p: Provider, rep: &mut CompatibilityReport) -> Option<J> {
    if let Some(raw) = own_raw(b, p) {
        return Some(raw);
    }
    let responses = p == Provider::Responses;
    let mut o = match btype(b).as_ref() {
        "text" => J::obj([
            ("type", J::s(if responses { "input_text" } else { "text" })),
            ("text", b.get("text").cloned().unwrap_or(J::s(""))),
        ]),
        "image" => {
            let url = match (b.get("url"), data_url(b), b.get("fileId")) {
                (Some(u), _, _) => Some(u.clone()),
                (None, Some(d), _) => Some(J::s(&d)),
                _ => None,
            };
            if responses {
                let mut o = J::obj([("type", J::s("input_image"))]);
                match (url, b.get("fileId")) {
                    (Some(u), _) => o.set("image_url", u),
                    (None, Some(f)) => o.set("file_id", f.clone()),
                    _ => {
                        dropped(rep, i, b, p);
                        return None;
                    }
                }
                o.set("detail", b.get("detail").cloned().unwrap_or(J::s("auto")));
                o
            } else {
                let Some(u) = url else {
                    dropped(rep, i, b, p);
                    return None;
                };
                let mut iu = J::obj([("url", u)]);
                if let Some(d) = b.get("detail") {
                    iu.set("detail", d.clone());
                }
                J::obj([("type", J::s("image_url")), ("image_url", iu)])
            }
        }
        "document" => {
            if let Some(t) = b.get("text") {
                if b.get("title").is_some() {
                    rep.lossy(
                        "document_title_dropped",
                        Some(i),
                        "document.title",
                        format!(
                            "a text document goes to {} as plain text, without its title",
                            p.name()
                        ),
                    );
                }
                J::obj([
                    ("type", J::s(if responses { "input_text" } else { "text" })),
                    ("text", t.clone()),
                ])
            } else {
                let mut f = J::Obj(vec![]);
                if let Some(d) = data_url(b) {
                    f.set("file_data", J::s(&d));
                } else if let Some(id) = b.get("fileId") {
                    f.set("file_id", id.clone());
                } else if let (Some(u), true) = (b.get("url"), responses) {
                    f.set("file_url", u.clone());
                } else {
                    dropped(rep, i, b, p);
                    return None;
                }
                if let Some(t) = b.get("title") {
                    f.set("filename", pdf_filename(b, t, i, p, rep));
                }
                if responses {
                    let mut o = J::obj([("type", J::s("input_file"))]);
                    if let J::Obj(m) = f {
                        extend(&mut o, m);
                    }
                    o
                } else {
                    J::obj([("type", J::s("file")), ("file", f)])
                }
            }
        }
        _ => {
            dropped(rep, i, b, p);
            return None;
        }
    };
    extend(&mut o, vendor_members(b, p));
    Some(o)
}

/// A PDF's filename for OpenAI, which tells the file's type by its extension:
/// `Spec` → `Spec.pdf` (reported); other names and types as they are.
fn pdf_filename(b: &J, title: &J, i: usize, p: Provider, rep: &mut CompatibilityReport) -> J {
    let is_pdf = b
        .str_of("mimeType")
        .is_some_and(|m| m.eq_ignore_ascii_case("application/pdf"));
    let Some(name) = title.as_str().filter(|_| is_pdf) else {
        return title.clone();
    };
    if name.to_ascii_lowercase().ends_with(".pdf") {
        return title.clone();
    }
    let with = format!("{name}.pdf");
    rep.step(
        "filename_extension_added",
        Some(i),
        format!(
            "{} reads a file's type from its name: the PDF {name:?} is sent as {with:?}",
            p.name()
        ),
    );
    J::s(&with)
}

/// A user message's content for OpenAI Chat and Responses; `None` when
/// every block it had was left out (rule 9: reported, not sent).
fn user_content(m: &J, i: usize, p: Provider, rep: &mut CompatibilityReport) -> Option<J> {
    match m.get("content") {
        Some(s @ J::Str(_)) => Some(s.clone()),
        _ => {
            let bl = blocks(m);
            let parts: Vec<J> = bl
                .iter()
                .filter_map(|b| openai_part(b, i, p, rep))
                .collect();
            if parts.is_empty() && !bl.is_empty() {
                emptied(rep, i, p);
                return None;
            }
            Some(J::Arr(parts))
        }
    }
}

/// Rule 9: a user message whose every block the encoder left out is not sent.
fn emptied(rep: &mut CompatibilityReport, i: usize, p: Provider) {
    empty_message_dropped(rep, i, "user", p);
}

/// Reports that a message with no content (`role`'s) is not sent to `p`
/// (rule 9; the transform's and the encoders' report).
pub(crate) fn empty_message_dropped(
    rep: &mut CompatibilityReport,
    i: usize,
    role: &str,
    p: Provider,
) {
    let why = if matches!(p, Provider::Anthropic | Provider::Google) {
        "rejects empty messages"
    } else {
        "wants at least one content part"
    };
    rep.step(
        "empty_message_dropped",
        Some(i),
        format!(
            "a {role} message with no content left out ({} {why})",
            p.name()
        ),
    );
}

fn is_refusal(b: &J, p: Provider) -> bool {
    vendor_members(b, p)
        .iter()
        .any(|(k, v)| &**k == "refusal" && *v == J::Bool(true))
}

fn openai_one(
    m: &J,
    i: usize,
    out: &mut Vec<J>,
    from: &mut Vec<usize>,
    st: &mut State,
    rep: &mut CompatibilityReport,
) {
    let p = Provider::OpenAi;
    let r = role(m).to_string();
    if r != "toolResult" {
        st.close(p, out, from, rep);
        from.resize(out.len(), i);
    }
    match r.as_str() {
        "system" => out.push(system_message(m, p)),
        "user" => {
            let Some(content) = user_content(m, i, p, rep) else {
                return;
            };
            let mut msg = J::obj([("role", J::s("user")), ("content", content)]);
            extend(&mut msg, vendor_members(m, p));
            out.push(msg);
        }
        "assistant" => {
            let bl = blocks(m);
            let mut msg = J::obj([("role", J::s("assistant"))]);
            let mut texts = Vec::new();
            let mut refusal = false;
            let mut raw_parts = false;
            let mut calls = Vec::new();
            let mut reasoning: Option<(String, Vec<String>)> = None;
            for b in bl.iter() {
                match btype(b).as_ref() {
                    "text" => {
                        refusal |= is_refusal(b, p);
                        texts.push(b.clone());
                    }
                    "thinking" => {
                        let field = b
                            .str_of("thinkingSignature")
                            .filter(|f| {
                                ["reasoning_content", "reasoning", "reasoning_text"]
                                    .contains(&f.as_ref())
                            })
                            .map(|f| f.to_string())
                            .unwrap_or_else(|| "reasoning_content".into());
                        let r = reasoning.get_or_insert((field, Vec::new()));
                        r.1.push(b.str_of("thinking").unwrap_or_default().to_string());
                    }
                    "toolCall" => {
                        let (kind, members) = split_kind(vendor_members(b, p));
                        if kind.as_deref() == Some("custom") {
                            // OpenAI's custom tool call: free-form input.
                            let args = b.get("arguments").cloned().unwrap_or(J::Obj(vec![]));
                            let mut c = J::obj([
                                ("id", b.get("id").cloned().unwrap_or(J::s(""))),
                                ("type", J::s("custom")),
                                (
                                    "custom",
                                    J::obj([
                                        ("name", b.get("name").cloned().unwrap_or(J::s(""))),
                                        ("input", args.get("input").cloned().unwrap_or(J::s(""))),
                                    ]),
                                ),
                            ]);
                            extend(&mut c, members);
                            calls.push(c);
                            continue;
                        }
                        let args = text_args(b);
                        let mut c = J::obj([
                            ("id", b.get("id").cloned().unwrap_or(J::s(""))),
                            ("type", J::s("function")),
                            (
                                "function",
                                J::obj([
                                    ("name", b.get("name").cloned().unwrap_or(J::s(""))),
                                    ("arguments", args),
                                ]),
                            ),
                        ]);
                        extend(&mut c, vendor_members(b, p));
                        calls.push(c);
                    }
                    _ => match own_raw(b, p) {
                        Some(_) if b.is("at", "content") => {
                            raw_parts = true;
                            texts.push(b.clone());
                        }
                        Some(raw) => calls.push(raw),
                        None => dropped(rep, i, b, p),
                    },
                }
            }
            let content = if raw_parts {
                J::Arr(
                    texts
                        .iter()
                        .map(|t| match own_raw(t, p) {
                            Some(raw) => raw,
                            None if is_refusal(t, p) => J::obj([
                                ("type", J::s("refusal")),
                                ("refusal", t.get("text").cloned().unwrap_or(J::s(""))),
                            ]),
                            None => J::obj([
                                ("type", J::s("text")),
                                ("text", t.get("text").cloned().unwrap_or(J::s(""))),
                            ]),
                        })
                        .collect(),
                )
            } else if texts.is_empty() {
                // `null` beside tool calls or members such as `audio`, as the API returns it.
                if calls.is_empty() && vendor_members(m, p).is_empty() {
                    J::s("")
                } else {
                    J::Null
                }
            } else if texts.len() == 1 && !refusal && texts[0].keys().len() == 2 {
                texts[0].get("text").cloned().unwrap_or(J::s(""))
            } else {
                // Several blocks stay several parts (assistant content takes text parts).
                J::Arr(
                    texts
                        .iter()
                        .map(|t| {
                            if is_refusal(t, p) {
                                J::obj([
                                    ("type", J::s("refusal")),
                                    ("refusal", t.get("text").cloned().unwrap_or(J::s(""))),
                                ])
                            } else {
                                J::obj([
                                    ("type", J::s("text")),
                                    ("text", t.get("text").cloned().unwrap_or(J::s(""))),
                                ])
                            }
                        })
                        .collect(),
                )
            };
            msg.set("content", content);
            if let Some((field, parts)) = reasoning {
                msg.set(&field, J::s(&parts.join("\n\n")));
            }
            if !calls.is_empty() {
                msg.set("tool_calls", J::Arr(calls));
            }
            extend(&mut msg, vendor_members(m, p));
            out.push(msg);
        }
        "toolResult" => {
            let bl = blocks(m);
            let texts: Vec<J> = bl.iter().filter(|b| btype(b) == "text").cloned().collect();
            for b in bl.iter() {
                match btype(b).as_ref() {
                    "text" => {}
                    "image" => {
                        if st.images.is_empty() {
                            st.image_from = i;
                        }
                        if let Some(part) = openai_part(b, i, p, rep) {
                            st.images.push(part);
                        }
                    }
                    _ => dropped(rep, i, b, p),
                }
            }
            let content = match texts.len() {
                0 if bl.iter().any(|b| btype(b) == "image") => J::s("(see attached image)"),
                0 => J::s(""),
                1 if content_string(m) => texts[0].get("text").cloned().unwrap_or(J::s("")),
                _ => J::Arr(
                    texts
                        .iter()
                        .map(|t| {
                            J::obj([
                                ("type", J::s("text")),
                                ("text", t.get("text").cloned().unwrap_or(J::s(""))),
                            ])
                        })
                        .collect(),
                ),
            };
            let mut msg = J::obj([
                ("role", J::s("tool")),
                (
                    "tool_call_id",
                    m.get("toolCallId").cloned().unwrap_or(J::s("")),
                ),
                ("content", content),
            ]);
            extend(&mut msg, vendor_members(m, p));
            out.push(msg);
        }
        "unknown" if own_message(m, p).is_some() => out.extend(own_message(m, p)),
        other => rep.lossy(
            "unknown_block_dropped",
            Some(i),
            "message",
            format!("a message with role {other:?} cannot be sent to openai"),
        ),
    }
}

// ---------------------------------------------------------------- OpenAI Responses

fn responses_one(m: &J, i: usize, out: &mut Vec<J>, rep: &mut CompatibilityReport) {
    let p = Provider::Responses;
    match role(m).as_ref() {
        "system" => out.push(system_message(m, p)),
        "user" => {
            let Some(content) = user_content(m, i, p, rep) else {
                return;
            };
            let mut msg = J::obj([("role", J::s("user")), ("content", content)]);
            extend(
                &mut msg,
                vendor_members(m, p)
                    .into_iter()
                    .filter(|(k, _)| &**k != "inputString")
                    .collect(),
            );
            out.push(msg);
        }
        "toolResult" => {
            let bl = blocks(m);
            let simple = bl.len() == 1
                && bl[0].is("type", "text")
                && bl[0].keys().len() == 2
                && content_string(m);
            let output = if simple {
                bl[0].get("text").cloned().unwrap_or(J::s(""))
            } else if bl.is_empty() {
                J::s("")
            } else {
                J::Arr(
                    bl.iter()
                        .filter_map(|b| openai_part(b, i, p, rep))
                        .collect(),
                )
            };
            let id = m.str_of("toolCallId").unwrap_or_default().to_string();
            let (kind, members) = split_kind(vendor_members(m, p));
            let mut item = J::obj([
                (
                    "type",
                    J::s(kind.as_deref().unwrap_or("function_call_output")),
                ),
                ("call_id", J::s(super::transform::responses_key(&id))),
                ("output", output),
            ]);
            extend(&mut item, members);
            out.push(item);
        }
        "assistant" => {
            let bl = blocks(m);
            let mut k = 0;
            while k < bl.len() {
                let b = &bl[k];
                if let Some(raw) = own_raw(b, p) {
                    out.push(raw);
                    k += 1;
                    continue;
                }
                match btype(b).as_ref() {
                    "thinking" => {
                        match b.get("thinkingSignature").and_then(reasoning_item) {
                            Some(item) => out.push(item),
                            None => rep.lossy(
                                "thinking_dropped",
                                Some(i),
                                "thinking",
                                "reasoning without a Responses reasoning item cannot be replayed"
                                    .into(),
                            ),
                        }
                        k += 1;
                    }
                    "text" => {
                        // Consecutive text blocks of one message item (same signature) go together.
                        let sig = b.get("textSignature").cloned();
                        let mut parts = Vec::new();
                        let first = k;
                        while k < bl.len()
                            && btype(&bl[k]) == "text"
                            && bl[k].get("textSignature").cloned() == sig
                        {
                            let t = &bl[k];
                            let mut part = if is_refusal(t, p) {
                                J::obj([
                                    ("type", J::s("refusal")),
                                    ("refusal", t.get("text").cloned().unwrap_or(J::s(""))),
                                ])
                            } else {
                                J::obj([
                                    ("type", J::s("output_text")),
                                    ("text", t.get("text").cloned().unwrap_or(J::s(""))),
                                ])
                            };
                            extend(
                                &mut part,
                                vendor_members(t, p)
                                    .into_iter()
                                    .filter(|(key, _)| {
                                        &**key != "refusal" && !key.starts_with("item.")
                                    })
                                    .collect(),
                            );
                            parts.push(part);
                            k += 1;
                            if sig.is_none() {
                                break;
                            }
                        }
                        let parsed = sig
                            .as_ref()
                            .and_then(J::as_str)
                            .map(|s| parse_text_signature(&s));
                        let mut item = J::obj([("type", J::s("message"))]);
                        let id = parsed.as_ref().and_then(|x| x.0.clone());
                        if let Some(id) = &id {
                            item.set("id", J::s(id));
                        }
                        item.set("role", J::s("assistant"));
                        let item_extra: Vec<(Key, J)> = vendor_members(&bl[first], p)
                            .into_iter()
                            .filter_map(|(key, v)| key.strip_prefix("item.").map(|s| (s.into(), v)))
                            .collect();
                        if id.is_none()
                            && item_extra.is_empty()
                            && parts.len() == 1
                            && parts[0].keys().len() == 2
                            && parts[0].is("type", "output_text")
                        {
                            // No item id: the short form the API accepts for earlier assistant turns.
                            out.push(J::obj([
                                ("role", J::s("assistant")),
                                ("content", parts[0].get("text").cloned().unwrap_or(J::s(""))),
                            ]));
                            continue;
                        }
                        item.set("content", J::Arr(parts));
                        extend(&mut item, item_extra);
                        if let Some(ph) = parsed.and_then(|x| x.1) {
                            item.set("phase", ph);
                        }
                        out.push(item);
                    }
                    "toolCall" => {
                        let full = b.str_of("id").unwrap_or_default();
                        let call_id = responses_key(&full).to_string();
                        let item_id = responses_item_id(&full).map(str::to_string);
                        let (kind, members) = split_kind(vendor_members(b, p));
                        let mut item =
                            J::obj([("type", J::s(kind.as_deref().unwrap_or("function_call")))]);
                        if let Some(it) = item_id {
                            item.set("id", J::s(&it));
                        }
                        item.set("call_id", J::s(&call_id));
                        let args = b.get("arguments");
                        match kind.as_deref() {
                            Some("custom_tool_call") => {
                                item.set("name", b.get("name").cloned().unwrap_or(J::s("")));
                                let input = args.and_then(|a| a.get("input"));
                                item.set("input", input.cloned().unwrap_or(J::s("")));
                            }
                            Some("local_shell_call") => {
                                item.set("action", args.cloned().unwrap_or(J::Obj(vec![])))
                            }
                            _ => {
                                item.set("name", b.get("name").cloned().unwrap_or(J::s("")));
                                item.set("arguments", text_args(b));
                            }
                        }
                        extend(&mut item, members);
                        out.push(item);
                        k += 1;
                    }
                    _ => {
                        dropped(rep, i, b, p);
                        k += 1;
                    }
                }
            }
        }
        "unknown" if own_message(m, p).is_some() => out.extend(own_message(m, p)),
        other => rep.lossy(
            "unknown_block_dropped",
            Some(i),
            "message",
            format!("a message with role {other:?} cannot be sent to openai-responses"),
        ),
    }
}

/// The Responses item type kept in `vendor` (`kind`), and the other members.
fn split_kind(members: Vec<(Key, J)>) -> (Option<String>, Vec<(Key, J)>) {
    let mut kind = None;
    let rest = members
        .into_iter()
        .filter(|(k, v)| {
            if &**k == "kind" {
                kind = v.as_str().map(|s| s.to_string());
                false
            } else {
                true
            }
        })
        .collect();
    (kind, rest)
}

/// pi's text signature for Responses: `{"v":1,"id","phase"?}` or a bare message id.
fn parse_text_signature(s: &str) -> (Option<String>, Option<J>) {
    if s.starts_with('{')
        && let Ok(v) = J::parse(s)
        && let Some(id) = v.str_of("id")
    {
        return (Some(id.to_string()), v.get("phase").cloned());
    }
    (Some(s.to_string()), None)
}

// ---------------------------------------------------------------- Google Gemini

fn google_media(b: &J) -> Option<J> {
    if let Some(d) = b.get("data") {
        Some(J::obj([(
            "inlineData",
            J::obj([
                ("mimeType", b.get("mimeType").cloned().unwrap_or(J::s(""))),
                ("data", d.clone()),
            ]),
        )]))
    } else if let Some(u) = b.get("url") {
        let mut fd = J::Obj(vec![]);
        if let Some(mt) = b.get("mimeType") {
            fd.set("mimeType", mt.clone());
        }
        fd.set("fileUri", u.clone());
        Some(J::obj([("fileData", fd)]))
    } else if let (Some(t), "document") = (b.get("text"), btype(b).as_ref()) {
        // The title has no place in a Gemini text part (reported by the caller).
        Some(J::obj([("text", t.clone())]))
    } else {
        None
    }
}

fn google_part(b: &J, i: usize, rep: &mut CompatibilityReport, ctx: &mut Ctx) -> Option<J> {
    let p = Provider::Google;
    if let Some(raw) = own_raw(b, p) {
        return Some(raw);
    }
    let mut o = match btype(b).as_ref() {
        "text" => {
            let mut o = J::obj([("text", b.get("text").cloned().unwrap_or(J::s("")))]);
            if let Some(s) = b.get("textSignature") {
                o.set("thoughtSignature", s.clone());
            }
            o
        }
        "thinking" => {
            let mut o = J::obj([
                ("text", b.get("thinking").cloned().unwrap_or(J::s(""))),
                ("thought", J::Bool(true)),
            ]);
            if let Some(s) = b.get("thinkingSignature") {
                o.set("thoughtSignature", s.clone());
            }
            o
        }
        "toolCall" => {
            let mut fc = J::Obj(vec![]);
            let id = b.str_of("id").unwrap_or_default().to_string();
            let synthetic = b.get("syntheticId").and_then(J::as_bool) == Some(true);
            if !synthetic && ctx.ids_now {
                fc.set("id", J::s(&id));
                ctx.sent_ids.insert(id);
            }
            fc.set("name", b.get("name").cloned().unwrap_or(J::s("")));
            fc.set("args", object_args(b, i, rep));
            let (inner, outer): (Vec<_>, Vec<_>) = vendor_members(b, p)
                .into_iter()
                .partition(|(k, _)| k.starts_with("functionCall."));
            for (k, x) in inner {
                fc.set(&k["functionCall.".len()..], x);
            }
            let mut o = J::obj([("functionCall", fc)]);
            if let Some(s) = b.get("thoughtSignature") {
                o.set("thoughtSignature", s.clone());
            }
            extend(&mut o, outer);
            return Some(o);
        }
        "image" | "document" => match google_media(b) {
            Some(m) => {
                if b.get("title").is_some() {
                    rep.lossy(
                        "document_title_dropped",
                        Some(i),
                        "document.title",
                        "Gemini parts have no document title".into(),
                    );
                }
                m
            }
            None => {
                dropped(rep, i, b, p);
                return None;
            }
        },
        _ => {
            dropped(rep, i, b, p);
            return None;
        }
    };
    extend(&mut o, vendor_members(b, p));
    Some(o)
}

fn google_response(m: &J) -> J {
    let bl = blocks(m);
    let texts: Vec<&J> = bl
        .iter()
        .filter(|b| btype(b) == "text")
        .filter_map(|b| b.get("text"))
        .collect();
    // One text block: its string as it is (no decoding and re-escaping).
    let value = match texts.as_slice() {
        [one @ J::Str(_)] => (*one).clone(),
        _ => J::s(
            &texts
                .iter()
                .filter_map(|t| t.as_str().map(|x| x.to_string()))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    };
    let is_error = m.get("isError").and_then(J::as_bool) == Some(true);
    // A result that is a JSON object is sent as the response object itself.
    let parsed = match &value {
        J::Str(raw) if raw.trim_start().starts_with('{') => value
            .as_str()
            .and_then(|t| J::parse(&t).ok())
            .filter(J::is_obj),
        _ => None,
    };
    match (is_error, parsed) {
        (true, Some(o)) if o.get("error").is_some() => o,
        (true, _) => J::obj([("error", value)]),
        (false, Some(o)) if o.get("error").is_none() => o,
        (false, _) => J::obj([("output", value)]),
    }
}

fn google_one(
    m: &J,
    i: usize,
    out: &mut Vec<J>,
    st: &mut State,
    rep: &mut CompatibilityReport,
    ctx: &mut Ctx,
) {
    let p = Provider::Google;
    match role(m).as_ref() {
        "user" => {
            // A separate user turn after the function responses (as the Gemini SDKs send it).
            let bl = blocks(m);
            let parts: Vec<J> = bl
                .iter()
                .filter_map(|b| google_part(b, i, rep, ctx))
                .collect();
            if parts.is_empty() && !bl.is_empty() {
                emptied(rep, i, p);
                return;
            }
            let no_role = vendor_members(m, p).iter().any(|(k, _)| &**k == "noRole");
            let msg = if no_role {
                J::obj([("parts", J::Arr(parts))])
            } else {
                J::obj([("role", J::s("user")), ("parts", J::Arr(parts))])
            };
            out.push(msg);
            st.open_results = false;
        }
        "toolResult" => {
            let part = match vendor_members(m, p)
                .into_iter()
                .find(|(k, _)| &**k == "part")
            {
                Some((_, raw)) => raw,
                None => {
                    let mut fr = J::Obj(vec![]);
                    let id = m.str_of("toolCallId").unwrap_or_default().to_string();
                    let synthetic = m.get("syntheticId").and_then(J::as_bool) == Some(true);
                    if !synthetic {
                        let sent = ctx.sent_ids.contains(&id)
                            || ctx.sent_before.as_ref().is_some_and(|s| s.contains(&id));
                        if sent {
                            fr.set("id", J::s(&id));
                        } else {
                            ctx.unsent.push(id);
                        }
                    }
                    fr.set("name", m.get("toolName").cloned().unwrap_or(J::s("")));
                    let n_texts = blocks(m).iter().filter(|b| btype(b) == "text").count();
                    if n_texts > 1 {
                        rep.step(
                            "text_joined",
                            Some(i),
                            format!("{n_texts} text blocks of a tool result joined with a newline: a Gemini function response holds one output"),
                        );
                    }
                    fr.set("response", google_response(m));
                    let media: Vec<J> = blocks(m)
                        .iter()
                        .filter(|b| btype(b) != "text")
                        .filter_map(|b| match google_media(b) {
                            Some(x) => Some(x),
                            None => {
                                dropped(rep, i, b, p);
                                None
                            }
                        })
                        .collect();
                    if !media.is_empty() {
                        if gemini3(ctx.model.as_deref()) {
                            fr.set("parts", J::Arr(media));
                        } else {
                            if st.images.is_empty() {
                                st.image_from = i;
                            }
                            st.images.extend(media);
                        }
                    }
                    J::obj([("functionResponse", fr)])
                }
            };
            if st.open_results
                && let Some(J::Arr(c)) = out.last_mut().and_then(|l| l.get_mut("parts"))
            {
                let at = c
                    .iter()
                    .take_while(|x| x.get("functionResponse").is_some())
                    .count();
                c.insert(at, part);
                return;
            }
            out.push(J::obj([
                ("role", J::s("user")),
                ("parts", J::Arr(vec![part])),
            ]));
            st.open_results = true;
        }
        "assistant" => {
            st.open_results = false;
            // Gemini before 3 rejects ids: a given target model decides; else the origin.
            ctx.ids_now = match ctx.model.as_deref() {
                Some(model) => gemini3(Some(model)),
                None => origin(m) == Some(p),
            };
            let parts: Vec<J> = blocks(m)
                .iter()
                .filter_map(|b| google_part(b, i, rep, ctx))
                .collect();
            let mut msg = J::obj([("role", J::s("model")), ("parts", J::Arr(parts))]);
            extend(&mut msg, vendor_members(m, p));
            out.push(msg);
        }
        "system" => hoist(m, i, p, !out.is_empty(), rep, ctx),
        "unknown" if own_message(m, p).is_some() => {
            st.open_results = false;
            out.extend(own_message(m, p));
        }
        other => rep.lossy(
            "unknown_block_dropped",
            Some(i),
            "message",
            format!("a message with role {other:?} cannot be sent to google"),
        ),
    }
}
