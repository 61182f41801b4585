//! The rules applied to canonical messages before they are encoded for a
//! target (FORMAT.md §15.4): what survives when the target is not the origin,
//! tool-call ids, pairing of calls and results. Every change is reported.

use std::borrow::Cow;
use std::collections::HashSet;

use super::canon::*;
use super::encode::gemini3;
use super::ids::{IdMap, IdRule};
use super::jv::J;
use super::report::CompatibilityReport;

/// Gemini's documented placeholder for calls that have no signature of their own.
pub const GEMINI_SENTINEL: &str = "skip_thought_signature_validator";

/// The tool-name rule of a target.
pub fn name_rule(p: Provider) -> IdRule {
    match p {
        Provider::Anthropic => IdRule::ANTHROPIC_NAME,
        Provider::OpenAi | Provider::Responses => IdRule::OPENAI_NAME,
        Provider::Google => IdRule::GOOGLE_NAME,
    }
}

/// Maps a tool name to the target's rule (reporting a change).
pub fn map_name(
    ids: &mut IdMap,
    name: &str,
    target: Provider,
    i: Option<usize>,
    rep: &mut CompatibilityReport,
) -> String {
    let rule = name_rule(target);
    let (mapped, new) = ids.names().map_new(name, &rule);
    if new {
        rep.step("tool_name_mapped", i, name_mapped(name, &mapped, target));
    }
    mapped
}

/// The detail of the step `tool_name_mapped`.
pub(crate) fn name_mapped(name: &str, mapped: &str, target: Provider) -> String {
    format!(
        "tool name {name:?} → {mapped:?} ({} accepts no other)",
        target.name()
    )
}

/// The id rule of a target.
pub fn id_rule(p: Provider) -> IdRule {
    match p {
        Provider::Anthropic => IdRule::ANTHROPIC,
        Provider::OpenAi => IdRule::OPENAI,
        Provider::Responses | Provider::Google => IdRule::WIDE,
    }
}

/// The `call_id` of a Responses call id `call_id|item_id` as pi writes it:
/// everything before the last `|` (item ids never hold one; a call_id that
/// does is written `call_id|` when it has no item id).
pub fn responses_key(id: &str) -> &str {
    id.rsplit_once('|').map_or(id, |(c, _)| c)
}

/// The item id of a Responses call id `call_id|item_id`: after the last `|`
/// (none without one, or after a trailing one: `call_id|`).
pub fn responses_item_id(id: &str) -> Option<&str> {
    id.rsplit_once('|')
        .map(|(_, it)| it)
        .filter(|it| !it.is_empty())
}

fn key(id: &str) -> &str {
    responses_key(id)
}

/// What a target is known to reject in an id it produced itself or that an
/// `idMap` gives back: Anthropic's pattern; elsewhere only the length (OpenAI
/// Chat 40, Responses and Gemini 64), as they document no character set.
fn kept_id_ok(p: Provider, id: &str) -> bool {
    match p {
        Provider::Anthropic => IdRule::ANTHROPIC.accepts(id),
        Provider::OpenAi => IdRule::OPENAI.accepts(id),
        Provider::Responses | Provider::Google => !id.is_empty() && id.len() <= 64,
    }
}

/// The id a call is mapped and paired by: Responses calls are `call_id|item_id`
/// (as pi writes them) and pair by `call_id`; other ids are taken whole.
pub(crate) fn call_key(m: &J, id: &str) -> String {
    if origin(m) == Some(Provider::Responses) {
        key(id).to_string()
    } else {
        id.to_string()
    }
}

/// The id call `b` of message `m` keeps where the target takes it (reserved
/// before any id is mapped, so that no mapped id takes it): its key, or the
/// original the restore map gives back, when the target's rule accepts it
/// or the target made it (`same`) or the map gave it back.
pub(crate) fn kept_key(m: &J, b: &J, target: Provider, same: bool, ids: &IdMap) -> Option<String> {
    let k = call_key(m, &b.str_of("id").unwrap_or_default());
    let (k, restored) = ids.restored(&k);
    (id_rule(target).accepts(&k) || ((same || restored) && kept_id_ok(target, &k))).then_some(k)
}

/// Whether `m` (an assistant message) was produced by the target itself, so its
/// signatures, reasoning items and provider fields may be replayed.
pub fn same_origin(m: &J, target: Provider, model: Option<&str>) -> bool {
    if origin(m) != Some(target) {
        return false;
    }
    match (model, m.str_of("model")) {
        (Some(want), Some(had)) => want == had.as_ref() || had.is_empty(),
        _ => true,
    }
}

/// pi's non-LLM roles turned into what pi sends (`convertToLlm`).
fn llm_messages(msgs: Vec<J>, target: Provider, rep: &mut CompatibilityReport) -> Vec<(usize, J)> {
    let mut out = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.into_iter().enumerate() {
        let r = role(&m).to_string();
        match r.as_str() {
            "user" | "assistant" | "toolResult" | "system" => out.push((i, m)),
            // A message of a role only its provider knows: kept for that provider.
            "unknown" => match block_provider(&m) {
                Some(p) if p == target => out.push((i, m)),
                _ => rep.lossy(
                    "unknown_block_dropped",
                    Some(i),
                    "message",
                    format!(
                        "a message of a role {} has no {} form",
                        m.str_of("provider").unwrap_or_default(),
                        target.name()
                    ),
                ),
            },
            "bashExecution" | "custom" | "branchSummary" | "compactionSummary" => {
                let text = m.text();
                let conv = crate::context::to_llm(&[Cow::Borrowed(text.as_str())], 512)
                    .unwrap_or_default();
                match conv.first().and_then(|t| J::parse(t).ok()) {
                    Some(u) => {
                        rep.step(
                            "pi_message_converted",
                            Some(i),
                            format!("a {r} message sent as a user message, as pi does"),
                        );
                        out.push((i, u));
                    }
                    None => rep.step(
                        "excluded_from_context",
                        Some(i),
                        format!("a {r} message marked excludeFromContext is not sent, as in pi"),
                    ),
                }
            }
            other => rep.lossy(
                "unknown_block_dropped",
                Some(i),
                "message",
                format!("a message with role {other:?} has no LLM form"),
            ),
        }
    }
    out
}

/// OpenAI custom tools (free-form input) in both OpenAI APIs: a call of the
/// other API's kind (Chat `custom`, Responses `custom_tool_call`) is one for
/// `target` too, and a Responses `custom_tool_call_output` is an OpenAI Chat
/// tool message as any. Takes the other API's `kind` out of the block (so it
/// is not reported dropped); returns the kind the call takes for `target`.
fn sibling_kind(b: &mut J, target: Provider) -> Option<&'static str> {
    let (other, kind) = match target {
        Provider::OpenAi => (Provider::Responses, vendor_kind(b, Provider::Responses)?),
        Provider::Responses => (Provider::OpenAi, vendor_kind(b, Provider::OpenAi)?),
        _ => return None,
    };
    let theirs = match (target, kind.as_ref()) {
        (Provider::OpenAi, "custom_tool_call") => Some("custom"),
        (Provider::OpenAi, "custom_tool_call_output") => None,
        (Provider::Responses, "custom") => Some("custom_tool_call"),
        _ => return None,
    };
    take_vendor_kind(b, other);
    theirs
}

/// Drops the `vendor` members kept for providers other than `target` (reported).
pub(crate) fn strip_foreign_vendor(
    obj: &mut J,
    target: Provider,
    i: Option<usize>,
    what: &str,
    rep: &mut CompatibilityReport,
) {
    let foreign = foreign_vendor_keys(obj, target);
    if foreign.is_empty() {
        return;
    }
    let own = obj
        .get("vendor")
        .and_then(|v| v.get(target.name()))
        .cloned();
    match own {
        Some(o) => obj.set("vendor", J::Obj(vec![(target.name().into(), o)])),
        None => {
            obj.remove("vendor");
        }
    }
    rep.warn_step(
        "provider_fields_dropped",
        i,
        format!(
            "{what} not sent to {}: {}",
            target.name(),
            foreign.join(", ")
        ),
    );
}

/// Applies the target's rules; returns the messages to encode and the id map.
pub fn transform(
    msgs: Vec<J>,
    target: Provider,
    model: Option<&str>,
    rep: &mut CompatibilityReport,
) -> (Vec<J>, IdMap) {
    run(msgs, target, model, rep, true)
}

/// The per-message rules only: calls and results are not paired (for single messages
/// and for rewriting a session file, whose branches pair differently).
pub fn transform_each(
    msgs: Vec<J>,
    target: Provider,
    model: Option<&str>,
    rep: &mut CompatibilityReport,
) -> (Vec<J>, IdMap) {
    run(msgs, target, model, rep, false)
}

fn run(
    msgs: Vec<J>,
    target: Provider,
    model: Option<&str>,
    rep: &mut CompatibilityReport,
    pairing: bool,
) -> (Vec<J>, IdMap) {
    run_restoring(msgs, target, model, rep, pairing, &[])
}

/// [`transform`] (`pairing`) or [`transform_each`], giving ids found in
/// `restore` (an earlier conversion's map: target id → original id) their
/// original form first.
pub fn run_restoring(
    msgs: Vec<J>,
    target: Provider,
    model: Option<&str>,
    rep: &mut CompatibilityReport,
    pairing: bool,
    restore: &[(String, String)],
) -> (Vec<J>, IdMap) {
    let mut ids = IdMap::new();
    ids.set_restore(restore);
    let out = apply(msgs, target, model, rep, pairing, &mut ids);
    (out, ids)
}

/// [`transform`] with an id map kept across calls (a session rewritten message by message).
pub fn apply(
    msgs: Vec<J>,
    target: Provider,
    model: Option<&str>,
    rep: &mut CompatibilityReport,
    pairing: bool,
    ids: &mut IdMap,
) -> Vec<J> {
    apply_parts(msgs, target, model, None, rep, pairing, ids)
}

/// [`apply`], with what turning pi's roles into LLM messages reports (done
/// for every message before the other rules) in `llm_rep` when given: a
/// conversation converted in parts joins the parts' reports in the whole
/// conversion's order ([`super::incremental`]).
pub fn apply_parts(
    msgs: Vec<J>,
    target: Provider,
    model: Option<&str>,
    llm_rep: Option<&mut CompatibilityReport>,
    rep: &mut CompatibilityReport,
    pairing: bool,
    ids: &mut IdMap,
) -> Vec<J> {
    let rule = id_rule(target);
    let n_msgs = msgs.len();
    let input = llm_messages(msgs, target, llm_rep.unwrap_or(rep));
    for (_, m) in &input {
        if role(m) == "assistant" {
            let same = same_origin(m, target, model);
            for b in blocks(m).iter() {
                if btype(b) == "toolCall" {
                    if let Some(k) = kept_key(m, b, target, same, ids) {
                        ids.reserve(&k);
                    }
                    let name = b.str_of("name").unwrap_or_default();
                    if name_rule(target).accepts(&name) {
                        ids.names().reserve(&name);
                    }
                }
            }
        }
    }
    let mut out: Vec<J> = Vec::with_capacity(input.len());
    // Calls of the last assistant turn still waiting for a result.
    let mut pending: Vec<Pending> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut dropped_calls: HashSet<String> = HashSet::new();
    // The last assistant turn: where its results start in `out`, its call ids in
    // order, whether it comes from the target itself.
    let mut turn: Option<(usize, Vec<String>, bool)> = None;
    // Made-up (Gemini) call ids seen so far, to keep them unique in the conversation.
    let mut synthetic_seen: HashSet<String> = HashSet::new();

    // Ends the current turn: missing results filled (pairing), Gemini results
    // put in call order (Gemini pairs by name and position when it has no ids).
    let close_turn = |out: &mut Vec<J>,
                      pending: &mut Vec<Pending>,
                      turn: &mut Option<(usize, Vec<String>, bool)>,
                      ids: &mut IdMap,
                      i: usize,
                      fill: bool,
                      rep: &mut CompatibilityReport| {
        let Some((start, calls, same_turn)) = turn.take() else {
            pending.clear();
            return;
        };
        if pairing && fill && !pending.is_empty() {
            for m in &mut out[start..] {
                m.remove("original");
            }
            for p in pending.drain(..) {
                let mut r = J::obj([
                    ("role", J::s("toolResult")),
                    ("toolCallId", J::s(&p.target)),
                    ("toolName", J::s(ids.names().get_or(&p.name))),
                    ("content", J::Arr(vec![text_block("No result provided")])),
                    ("isError", J::Bool(true)),
                    ("contentString", J::Bool(true)),
                ]);
                if let Some(kind) = p.output_kind {
                    set_vendor_kind(&mut r, target, kind);
                }
                out.push(r);
                rep.warn_step(
                    "missing_tool_result_filled",
                    Some(i),
                    format!("call {} ({}) had no result: an error result \"No result provided\" was added", p.key, p.name),
                );
            }
        }
        // A Gemini turn going back to Gemini keeps the order Gemini took.
        if pairing && target == Provider::Google && !same_turn && out.len() > start + 1 {
            let pos = |m: &J| {
                let id = m.str_of("toolCallId").unwrap_or_default();
                calls.iter().position(|c| *c == id).unwrap_or(usize::MAX)
            };
            let sorted = out[start..].windows(2).all(|w| pos(&w[0]) <= pos(&w[1]));
            if !sorted {
                out[start..].sort_by_key(|m| pos(m));
                for m in &mut out[start..] {
                    m.remove("original");
                }
                rep.step(
                    "tool_results_reordered",
                    Some(i),
                    "function responses put in the order of their calls (Gemini pairs by position)"
                        .into(),
                );
            }
        }
    };

    let mut input: Vec<Option<(usize, J)>> = input.into_iter().map(Some).collect();
    let mut idx = 0;
    while idx < input.len() {
        let Some((i, m)) = input[idx].take() else {
            idx += 1;
            continue;
        };
        // A result that comes after a user message although its call is still waiting
        // moves up to follow its call (providers want results right after the calls).
        if pairing
            && !pending.is_empty()
            && !matches!(role(&m).as_ref(), "assistant" | "toolResult" | "unknown")
        {
            let mut moved = Vec::new();
            for slot in input.iter_mut().skip(idx + 1) {
                let Some((_, x)) = slot else { continue };
                match role(x).as_ref() {
                    "assistant" => break,
                    "toolResult" => {
                        let id = x.str_of("toolCallId").unwrap_or_default();
                        if pending
                            .iter()
                            .any(|p| p.id == id || p.key == id || p.stored == id)
                        {
                            moved.push(slot.take());
                        }
                    }
                    _ => {}
                }
            }
            if !moved.is_empty() {
                rep.step(
                    "tool_result_moved",
                    Some(i),
                    format!("{} result(s) placed before the message that came between them and their calls", moved.len()),
                );
                for mm in out.iter_mut().rev().take_while(|x| role(x) == "toolResult") {
                    mm.remove("original");
                }
                input[idx] = Some((i, m));
                input.splice(idx..idx, moved);
                continue;
            }
        }
        idx += 1;
        match role(&m).as_ref() {
            // Only its own provider gets it (llm_messages): as it is, in its place.
            "unknown" => out.push(m),
            "assistant" => {
                let stop = m.str_of("stopReason").map(|s| s.to_string());
                if matches!(stop.as_deref(), Some("error" | "aborted")) {
                    for b in blocks(&m).iter() {
                        if btype(b) == "toolCall" {
                            let id = b.str_of("id").unwrap_or_default().to_string();
                            dropped_calls.insert(call_key(&m, &id));
                            dropped_calls.insert(id);
                        }
                    }
                    rep.lossy(
                        "aborted_turn_dropped",
                        Some(i),
                        "message",
                        format!("an assistant turn that ended with stopReason {:?} is not sent (it may be partial)", stop.unwrap_or_default()),
                    );
                    continue;
                }
                close_turn(&mut out, &mut pending, &mut turn, ids, i, true, rep);
                answered.clear();
                let same = same_origin(&m, target, model);
                let mut msg = m;
                let was_string = matches!(msg.get("content"), Some(J::Str(_)));
                let content: Vec<J> = match msg.get_mut("content") {
                    Some(J::Arr(a)) => std::mem::take(a),
                    _ => blocks(&msg).into_owned(),
                };
                let mut new_blocks = Vec::with_capacity(content.len());
                let mut skipped_thinking = false;
                let mut changed = false;
                for mut b in content {
                    match btype(&b).as_ref() {
                        "thinking" => {
                            let redacted = b.get("redacted").and_then(J::as_bool) == Some(true);
                            // The signature as it is (long, and only a Responses
                            // item is ever decoded and read).
                            let sig = b
                                .get("thinkingSignature")
                                .filter(|v| matches!(v, J::Str(t) if !t.is_empty()))
                                .cloned();
                            // The raw JSON string: decoding a long text only to test it is wasteful.
                            let raw_text = b.get("thinking").cloned().unwrap_or(J::s(""));
                            let keep = same
                                && match target {
                                    Provider::Anthropic => sig.is_some(),
                                    Provider::Responses => {
                                        sig.as_ref().is_some_and(is_reasoning_item)
                                    }
                                    Provider::OpenAi => !redacted,
                                    Provider::Google => !redacted,
                                };
                            if keep {
                                new_blocks.push(b);
                                continue;
                            }
                            changed = true;
                            skipped_thinking = true;
                            if redacted {
                                rep.lossy(
                                    "redacted_thinking_dropped",
                                    Some(i),
                                    "thinking",
                                    format!(
                                        "redacted thinking cannot be sent to {}",
                                        target.name()
                                    ),
                                );
                            } else if !is_blank(&raw_text) {
                                report_signature(rep, i, sig.as_ref());
                                rep.lossy(
                                    "thinking_to_text",
                                    Some(i),
                                    "thinking",
                                    format!(
                                        "thinking from {} sent to {} as plain text",
                                        origin_name(&msg),
                                        target.name()
                                    ),
                                );
                                new_blocks.push(text_block_j(raw_text));
                            } else if sig.is_some() {
                                report_signature(rep, i, sig.as_ref());
                                rep.lossy("thinking_dropped", Some(i), "thinkingSignature", "empty thinking kept only for its signature, which the target cannot verify".into());
                            } else {
                                rep.step(
                                    "thinking_dropped",
                                    Some(i),
                                    "empty thinking without a signature".into(),
                                );
                            }
                        }
                        "text" => {
                            if is_empty_text(&b)
                                && (!same
                                    || matches!(target, Provider::Anthropic | Provider::Google))
                            {
                                changed = true;
                                rep.step("empty_text_dropped", Some(i), "an empty text block left out (Anthropic and Gemini reject them)".into());
                                continue;
                            }
                            if !same {
                                if b.remove("textSignature").is_some() {
                                    changed = true;
                                    rep.lossy("signature_dropped", Some(i), "textSignature", "a text signature (message id / Gemini signature) belongs to its origin".into());
                                }
                                strip_foreign_vendor(
                                    &mut b,
                                    target,
                                    Some(i),
                                    "provider-specific fields",
                                    rep,
                                );
                            }
                            new_blocks.push(b);
                        }
                        "toolCall" => {
                            let mut id = b.str_of("id").unwrap_or_default().to_string();
                            let stored = id.clone();
                            let synthetic = b.get("syntheticId").and_then(J::as_bool) == Some(true);
                            if synthetic {
                                // Made-up ids (one Gemini turn normalized at a time) repeat:
                                // keep each unique in the conversation.
                                let mut n = 1;
                                let base = id.clone();
                                while synthetic_seen.contains(&id) {
                                    id = format!("{base}_{n}");
                                    n += 1;
                                }
                                synthetic_seen.insert(id.clone());
                                if id != base {
                                    b.set("id", J::s(&id));
                                    changed = true;
                                }
                            }
                            let name = b.str_of("name").unwrap_or_default().to_string();
                            let mapped_name = map_name(ids, &name, target, Some(i), rep);
                            if mapped_name != name {
                                b.set("name", J::s(&mapped_name));
                                changed = true;
                            }
                            let k = call_key(&msg, &id);
                            let (k, restored) = ids.restored(&k);
                            // An id the target made itself, or one an idMap gives
                            // back, stays as it is where the target takes it.
                            let keep = (same || restored) && kept_id_ok(target, &k);
                            // A conversation's calls get ids of their own (pairing:
                            // one request); a line of a session file keeps its id.
                            let (mapped, repeated) = if pairing {
                                ids.call(&k, &rule, keep)
                            } else if keep {
                                (ids.keep(&k, &rule), false)
                            } else {
                                (ids.map(&k, &rule), false)
                            };
                            let item = (origin(&msg) == Some(Provider::Responses))
                                .then(|| id.rsplit_once('|').map(|(_, it)| it.to_string()))
                                .flatten();
                            let new_id = match (target, item) {
                                (Provider::Responses, Some(it)) if same && !skipped_thinking => {
                                    format!("{mapped}|{it}")
                                }
                                // A call_id holding `|` (no item id): written `call_id|`.
                                (Provider::Responses, _) if mapped.contains('|') => {
                                    format!("{mapped}|")
                                }
                                _ => mapped.clone(),
                            };
                            // An id its own provider made outside the rule
                            // we know for it (a Responses call_id with `|`),
                            // which this target takes as it is: listed, so
                            // that the way home keeps it too.
                            if !same
                                && !restored
                                && mapped == k
                                && origin(&msg).is_some_and(|o| !id_rule(o).accepts(&k))
                            {
                                ids.note_kept(&k);
                            }
                            if repeated {
                                rep.step(
                                    "tool_call_id_repeated",
                                    Some(i),
                                    format!(
                                        "call id {k:?} was an earlier call's: this call is sent as {mapped:?} (a request's call ids must be unique), and its results with it"
                                    ),
                                );
                            } else if mapped != k {
                                rep.step(
                                    "tool_call_id_mapped",
                                    Some(i),
                                    format!(
                                        "call id {k:?} → {mapped:?} ({} accepts no other)",
                                        target.name()
                                    ),
                                );
                            }
                            if new_id != id {
                                b.set("id", J::s(&new_id));
                                changed = true;
                            }
                            if !same {
                                if b.remove("thoughtSignature").is_some() {
                                    changed = true;
                                    rep.lossy("signature_dropped", Some(i), "thoughtSignature", "a Gemini thought signature only verifies with the model that produced it".into());
                                }
                                let custom = sibling_kind(&mut b, target);
                                strip_foreign_vendor(
                                    &mut b,
                                    target,
                                    Some(i),
                                    "provider-specific fields",
                                    rep,
                                );
                                if let Some(kind) = custom {
                                    set_vendor_kind(&mut b, target, kind);
                                }
                            }
                            // Responses answers a custom tool call with a
                            // custom_tool_call_output.
                            let output_kind = (target == Provider::Responses
                                && vendor_kind(&b, target).as_deref() == Some("custom_tool_call"))
                            .then_some("custom_tool_call_output");
                            pending.push(Pending {
                                output_kind,
                                id: id.clone(),
                                stored,
                                key: k,
                                target: mapped,
                                name,
                                synthetic,
                            });
                            new_blocks.push(b);
                        }
                        "serverTool" | "unknown" => {
                            if block_provider(&b) == Some(target) {
                                new_blocks.push(b);
                            } else {
                                changed = true;
                                let kind = btype(&b).to_string();
                                let code = if kind == "serverTool" {
                                    "server_tool_dropped"
                                } else {
                                    "unknown_block_dropped"
                                };
                                rep.lossy(
                                    code,
                                    Some(i),
                                    &kind,
                                    format!(
                                        "a {} block from {} cannot be sent to {}",
                                        kind,
                                        b.str_of("provider").unwrap_or_default(),
                                        target.name()
                                    ),
                                );
                            }
                        }
                        _ => new_blocks.push(b),
                    }
                }
                if target == Provider::Google
                    && gemini3(model)
                    && !same
                    && let Some(first) = new_blocks.iter_mut().find(|b| btype(b) == "toolCall")
                    && first.get("thoughtSignature").is_none()
                {
                    first.set("thoughtSignature", J::s(GEMINI_SENTINEL));
                    changed = true;
                    rep.step("thought_signature_sentinel", Some(i), format!("Gemini 3 requires a signature on the first call of a turn: {GEMINI_SENTINEL:?} used"));
                }
                // A turn with no blocks but members of its own (OpenAI Chat
                // `content: null` with `audio`) goes back to its provider as it is.
                let own_members = same && !vendor_members(&msg, target).is_empty();
                if new_blocks.is_empty() && !own_members {
                    pending.clear();
                    turn = None;
                    let lost = foreign_vendor_keys(&msg, target);
                    if lost.is_empty() {
                        rep.step(
                            "empty_turn_dropped",
                            Some(i),
                            "an assistant turn with nothing left to send was left out".into(),
                        );
                    } else {
                        rep.lossy(
                            "empty_turn_dropped",
                            Some(i),
                            "message",
                            format!(
                                "an assistant turn whose only content was {} cannot be sent to {}: left out",
                                lost.join(", "),
                                target.name()
                            ),
                        );
                    }
                    continue;
                }
                if !same {
                    strip_foreign_vendor(
                        &mut msg,
                        target,
                        Some(i),
                        "provider-specific fields",
                        rep,
                    );
                }
                if changed || !same || !was_string {
                    msg.set("content", J::Arr(new_blocks));
                }
                out.push(msg);
                turn = Some((
                    out.len(),
                    pending.iter().map(|p| p.target.clone()).collect(),
                    same,
                ));
            }
            "toolResult" => {
                let id = m.str_of("toolCallId").unwrap_or_default().to_string();
                // A result pairs with the most recent call that carries its id:
                // a waiting call of the last turn, also when that call's
                // repeated made-up id was renamed (the result follows it).
                // Calls that share an id: the one of the result's tool name
                // first (results may come in another order), else in order.
                let rname = m.str_of("toolName").unwrap_or_default();
                let by_id = |p: &Pending| p.id == id || p.key == id;
                let mut found = pending
                    .iter()
                    .position(|p| by_id(p) && !rname.is_empty() && p.name == rname)
                    .or_else(|| pending.iter().position(by_id))
                    .or_else(|| pending.iter().position(|p| p.stored == id));
                if found.is_none() && m.get("syntheticId").and_then(J::as_bool) == Some(true) {
                    // Gemini sent neither id: the first waiting call of the same name.
                    let name = m.str_of("toolName").unwrap_or_default();
                    found = pending
                        .iter()
                        .position(|p| p.name == name && (p.synthetic || pairing));
                    if let Some(pos) = found {
                        rep.step(
                            "tool_result_paired_by_name",
                            Some(i),
                            format!(
                                "a result without an id paired with call {} by name and position",
                                pending[pos].key
                            ),
                        );
                    }
                }
                // Without pairing (one message, a session line), a `call|item` result
                // follows the mapping its call got.
                let k = match found {
                    Some(pos) => pending[pos].key.clone(),
                    None if ids.get(&id).is_some() => id.clone(),
                    None if ids.get(key(&id)).is_some() => key(&id).to_string(),
                    None => ids.restored(&id).0,
                };
                let found = if pairing {
                    found
                } else {
                    Some(found.unwrap_or(usize::MAX))
                };
                let Some(pos) = found else {
                    if dropped_calls.contains(&k) || dropped_calls.contains(&id) {
                        rep.lossy(
                            "orphan_tool_result_dropped",
                            Some(i),
                            "toolResult",
                            format!("the result of call {k} belongs to a turn that was left out"),
                        );
                    } else if answered.contains(&k) || answered.contains(&id) {
                        rep.lossy(
                            "duplicate_tool_result_dropped",
                            Some(i),
                            "toolResult",
                            format!("a second result for call {k}: the first one is kept"),
                        );
                    } else {
                        rep.lossy(
                            "orphan_tool_result_dropped",
                            Some(i),
                            "toolResult",
                            format!("a result for call {k}, which the turn before did not make"),
                        );
                    }
                    continue;
                };
                // The id its call was given (a repeated id: that call's own).
                let paired = pos < pending.len();
                let (name, mapped, output_kind) = if paired {
                    let p = pending.remove(pos);
                    answered.insert(p.id);
                    answered.insert(p.stored);
                    (p.name, p.target, p.output_kind)
                } else {
                    (String::new(), ids.map(&k, &rule), None)
                };
                answered.insert(k.clone());
                let mut r = m;
                let new_id = match id.rsplit_once('|') {
                    // A pi-style `call|item` result keeps its item part for Responses, as its call does.
                    Some((c, item)) if target == Provider::Responses && k != id && c == k => {
                        if mapped == k {
                            id.clone()
                        } else {
                            format!("{mapped}|{item}")
                        }
                    }
                    _ if target == Provider::Responses
                        && mapped == k
                        && k == id
                        && !mapped.contains('|') =>
                    {
                        id.clone()
                    }
                    // A call_id holding `|` (no item id): written `call_id|`.
                    _ if target == Provider::Responses && mapped.contains('|') => {
                        format!("{mapped}|")
                    }
                    _ => mapped,
                };
                if new_id != id {
                    r.set("toolCallId", J::s(&new_id));
                }
                if r.str_of("toolName").is_none_or(|n| n.is_empty()) && !name.is_empty() {
                    r.set("toolName", J::s(&name));
                    rep.step(
                        "tool_result_name_filled",
                        Some(i),
                        format!("a result without a tool name takes its call's ({name})"),
                    );
                }
                if let Some(n) = r
                    .str_of("toolName")
                    .map(|n| n.to_string())
                    .filter(|n| !n.is_empty())
                {
                    let mapped = map_name(ids, &n, target, Some(i), rep);
                    if mapped != n {
                        r.set("toolName", J::s(&mapped));
                    }
                }
                if r.get("isError").and_then(J::as_bool) == Some(true)
                    && matches!(target, Provider::OpenAi | Provider::Responses)
                {
                    rep.lossy("tool_error_flag_lost", Some(i), "isError", format!("{} has no error flag on tool results: call {k} failed, only its text says so", target.name()));
                }
                sibling_kind(&mut r, target);
                strip_foreign_vendor(&mut r, target, Some(i), "provider-specific fields", rep);
                // Responses answers a call with an output of its kind.
                if target == Provider::Responses && paired {
                    let has = vendor_kind(&r, target).map(|k| k.into_owned());
                    // (the call, the kind the result had, the call's output kind)
                    let mismatch = match (output_kind, has.as_deref()) {
                        // A result without a kind (a Chat tool message, a
                        // Responses function_call_output: the canonical
                        // form does not tell them apart) is not reported.
                        (Some(kind), None) => {
                            set_vendor_kind(&mut r, target, kind);
                            None
                        }
                        // Only canonical messages written by hand can hold
                        // this: our decoders give a custom call's output its kind.
                        (Some(kind), Some(had)) if had != kind => {
                            Some(("custom tool call", had.to_string(), kind))
                        }
                        (None, Some(had @ "custom_tool_call_output")) => {
                            Some(("function call", had.to_string(), "function_call_output"))
                        }
                        _ => None,
                    };
                    if let Some((call, had, kind)) = mismatch {
                        if output_kind.is_some() {
                            set_vendor_kind(&mut r, target, kind);
                        } else {
                            take_vendor_kind(&mut r, target);
                        }
                        rep.step(
                            "tool_result_kind_matched",
                            Some(i),
                            format!("the result of {call} {k} was a {had}: sent as a {kind} (Responses answers a call with an output of its kind)"),
                        );
                    }
                }
                out.push(r);
            }
            _ => {
                close_turn(&mut out, &mut pending, &mut turn, ids, i, true, rep);
                answered.clear();
                let mut u = m;
                if target != Provider::Anthropic {
                    // Where the system message sat in an Anthropic request: for Anthropic only.
                    drop_inline_mark(&mut u);
                }
                strip_foreign_vendor(&mut u, target, Some(i), "provider-specific fields", rep);
                // Whether the rules below leave a message with blocks without any.
                let mut emptied = false;
                if let Some(J::Arr(bl)) = u.get_mut("content") {
                    emptied = !bl.is_empty();
                    let mut kept = Vec::with_capacity(bl.len());
                    for mut b in bl.drain(..) {
                        let t = btype(&b).to_string();
                        if (t == "unknown" || t == "serverTool")
                            && block_provider(&b) != Some(target)
                        {
                            let code = if t == "serverTool" {
                                "server_tool_dropped"
                            } else {
                                "unknown_block_dropped"
                            };
                            rep.lossy(
                                code,
                                Some(i),
                                &t,
                                format!(
                                    "a {t} block from {} cannot be sent to {}",
                                    b.str_of("provider").unwrap_or_default(),
                                    target.name()
                                ),
                            );
                            continue;
                        }
                        // Media with nothing to send (no data, URL, file id
                        // or text): no target can take it. Left out here, so
                        // that a message left empty is left out too (rule 9).
                        if (t == "image" || t == "document")
                            && ["data", "url", "fileId", "text"]
                                .iter()
                                .all(|k| b.get(k).is_none())
                        {
                            rep.lossy(
                                if t == "image" {
                                    "image_dropped"
                                } else {
                                    "document_dropped"
                                },
                                Some(i),
                                &t,
                                format!(
                                    "{} {t} block with no data, URL, file id or text cannot be sent to {}",
                                    if t == "image" { "an" } else { "a" },
                                    target.name()
                                ),
                            );
                            continue;
                        }
                        if is_empty_text(&b)
                            && matches!(target, Provider::Anthropic | Provider::Google)
                        {
                            rep.step(
                                "empty_text_dropped",
                                Some(i),
                                "an empty text block left out (Anthropic and Gemini reject them)"
                                    .into(),
                            );
                            continue;
                        }
                        strip_foreign_vendor(
                            &mut b,
                            target,
                            Some(i),
                            "provider-specific fields",
                            rep,
                        );
                        if matches!(target, Provider::Anthropic | Provider::Google)
                            && b.remove("detail").is_some()
                        {
                            rep.warn_step(
                                "provider_fields_dropped",
                                Some(i),
                                format!(
                                    "image detail is an OpenAI setting: not sent to {}",
                                    target.name()
                                ),
                            );
                        }
                        kept.push(b);
                    }
                    emptied &= kept.is_empty();
                    *bl = kept;
                }
                let empty = match u.get("content") {
                    Some(J::Arr(a)) => a.is_empty(),
                    Some(J::Str(t)) => t.is_empty(),
                    _ => true,
                };
                // Anthropic and Gemini reject every empty message; OpenAI's
                // schemas want at least one content part, so a message these
                // rules emptied is not sent there either (one sent empty is
                // sent as it came).
                if empty && (emptied || matches!(target, Provider::Anthropic | Provider::Google)) {
                    super::encode::empty_message_dropped(rep, i, &role(&u), target);
                    continue;
                }
                out.push(u);
            }
        }
    }
    if pairing && !pending.is_empty() {
        let list: Vec<String> = pending.iter().map(|p| p.key.clone()).collect();
        rep.warn_step(
            "calls_pending_at_end",
            Some(n_msgs.saturating_sub(1)),
            format!(
                "the conversation ends with calls waiting for results: {}",
                list.join(", ")
            ),
        );
        for p in &pending {
            ids.map(&p.key, &rule);
        }
    }
    close_turn(&mut out, &mut pending, &mut turn, ids, n_msgs, false, rep);
    if target == Provider::Anthropic {
        trim_final_assistant(&mut out, rep);
    }
    out
}

/// Removes the mark of an Anthropic inline system message (not a member of any wire message).
fn drop_inline_mark(m: &mut J) {
    let p = Provider::Anthropic;
    if role(m) != "system" {
        return;
    }
    let Some(J::Obj(v)) = m.get_mut("vendor") else {
        return;
    };
    let mut now_empty = false;
    if let Some((_, inner)) = v.iter_mut().find(|(k, _)| &**k == p.name()) {
        inner.remove("inline");
        now_empty = inner.keys().is_empty();
    }
    if now_empty {
        v.retain(|(k, _)| &**k != p.name());
    }
    if v.is_empty() {
        m.remove("vendor");
    }
}

/// Whether a JSON string value is empty or whitespace only.
fn is_blank(v: &J) -> bool {
    match v {
        J::Str(raw) => {
            let b = raw.as_bytes();
            // Plain non-space text: not blank, without decoding anything.
            if b.iter().any(|&c| !matches!(c, b' ' | b'\\' | b'n' | b't' | b'r' | b'u' | b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F')) {
                return false;
            }
            v.as_str().is_none_or(|t| t.trim().is_empty())
        }
        _ => true,
    }
}

/// A text block with no text and no signature.
fn is_empty_text(b: &J) -> bool {
    btype(b) == "text"
        && matches!(b.get("text"), Some(J::Str(t)) if t.is_empty())
        && b.get("textSignature").is_none()
}

/// A call waiting for its result.
struct Pending {
    /// The `kind` its results take for the target (Responses
    /// `custom_tool_call_output`).
    output_kind: Option<&'static str>,
    /// The call's id as written.
    id: String,
    /// The id the stored call had before a repeated made-up id was renamed
    /// (its results still name that one).
    stored: String,
    /// The id it pairs and maps by.
    key: String,
    /// The id it was given for the target.
    target: String,
    name: String,
    /// Made up (Gemini sent none): results pair by name and position.
    synthetic: bool,
}

/// Anthropic rejects a final (prefill) assistant message that ends in whitespace.
fn trim_final_assistant(out: &mut [J], rep: &mut CompatibilityReport) {
    let Some(last) = out.last_mut() else { return };
    if role(last) != "assistant" {
        return;
    }
    let Some(J::Arr(bl)) = last.get_mut("content") else {
        return;
    };
    let Some(b) = bl.last_mut() else { return };
    if btype(b) != "text" {
        return;
    }
    let text = b.str_of("text").unwrap_or_default().to_string();
    let trimmed = text.trim_end();
    if trimmed.len() != text.len() {
        b.set("text", J::s(trimmed));
        last.remove("original");
        rep.step(
            "trailing_whitespace_trimmed",
            Some(out.len() - 1),
            "Anthropic does not accept a final assistant message ending in whitespace".into(),
        );
    }
}

/// Reports the signature a block loses: a whole Responses reasoning item
/// (`reasoning_item_dropped`) or an opaque signature (`signature_dropped`).
fn report_signature(rep: &mut CompatibilityReport, i: usize, sig: Option<&J>) {
    if sig.is_none() {
        return;
    }
    if sig.is_some_and(is_reasoning_item) {
        rep.lossy("reasoning_item_dropped", Some(i), "thinkingSignature", "a Responses reasoning item (and its encrypted_content) only goes back to OpenAI Responses".into());
    } else {
        rep.lossy(
            "signature_dropped",
            Some(i),
            "thinkingSignature",
            "the thinking signature only verifies with the model that produced it".into(),
        );
    }
}

/// The Responses reasoning item a thinking signature holds (a string of the
/// item's JSON), parsed; `None` for any other signature. The one test of
/// what is a reasoning item: the transform keeps the block for Responses by
/// it, the encoder sends the item it gives, and the prescan of parts
/// converted apart falls back to it ([`super::encode::responses_item_of`]).
/// Only text that can start an object (spaces, then `{` or an escape) is decoded.
pub(super) fn reasoning_item(sig: &J) -> Option<J> {
    let J::Str(raw) = sig else { return None };
    if !raw.trim_start_matches(' ').starts_with(['{', '\\']) {
        return None;
    }
    J::parse_owned(sig.as_str()?.into_owned())
        .ok()
        .filter(|item| item.is("type", "reasoning"))
}

/// Whether a thinking signature holds a Responses reasoning item:
/// `reasoning_item(sig).is_some()`, read by the validating scanner instead
/// of built as a tree (the report and the transform only ask; a signature
/// carries the item's `encrypted_content`, kilobytes long).
pub(super) fn is_reasoning_item(sig: &J) -> bool {
    use crate::json::{self, Kind, ObjectReader};
    let J::Str(raw) = sig else { return false };
    if !raw.trim_start_matches(' ').starts_with(['{', '\\']) {
        return false;
    }
    let Some(text) = sig.as_str() else {
        return false;
    };
    let b = text.as_bytes();
    let Ok(mut r) = ObjectReader::open(b, 0, 1, json::DEFAULT_MAX_DEPTH) else {
        return false;
    };
    // The last `type` decides, as `J::get` reads repeated keys.
    let mut reasoning = false;
    loop {
        match r.next_key() {
            Ok(Some(key)) => {
                let Ok(v) = r.skip_value() else { return false };
                if json::key_is(&key, &text, "type") {
                    reasoning =
                        v.kind == Kind::String && v.str(&text).as_deref() == Some("reasoning");
                }
            }
            Ok(None) => break,
            Err(_) => return false,
        }
    }
    reasoning && json::skip_ws(b, r.end()) == b.len()
}

fn origin_name(m: &J) -> String {
    match origin(m) {
        Some(p) => p.name().to_string(),
        None => m
            .str_of("api")
            .map(|s| s.to_string())
            .unwrap_or_else(|| "an unknown origin".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasoning_item_check_agrees_with_the_parse() {
        let deep = format!(
            r#"{{"type":"reasoning","x":{}1{}}}"#,
            "[".repeat(600),
            "]".repeat(600)
        );
        // The item is depth 1: 511 arrays in it are the most J::parse takes (512).
        let nested = |n: usize| {
            format!(
                r#"{{"type":"reasoning","x":{}1{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        let (at_limit, past_limit) = (nested(511), nested(512));
        let items = [
            at_limit.as_str(),
            past_limit.as_str(),
            r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}"#,
            r#"  {"id":"rs_1","type":"reasoning"}  "#,
            r#"{"type":"reasoning","type":"message"}"#,
            r#"{"type":"message","type":"reasoning"}"#,
            r#"{"typ\u0065":"reas\u006fning"}"#,
            r#"{"type":"reasoning"} x"#,
            r#"{"type":"reasoning",}"#,
            r#"{"type":"reasoning""#,
            r#"{"type":["reasoning"]}"#,
            r#"{"type":null}"#,
            r#"["reasoning"]"#,
            r#"{}"#,
            r#"{"a":1.}"#,
            r#"opaque-signature"#,
            r#""#,
            deep.as_str(),
        ];
        for text in items {
            let sig = J::s(text);
            assert_eq!(
                is_reasoning_item(&sig),
                reasoning_item(&sig).is_some(),
                "{text}"
            );
        }
        assert!(is_reasoning_item(&J::s(items[2])) && is_reasoning_item(&J::s(items[6])));
        assert!(is_reasoning_item(&J::s(&at_limit)) && !is_reasoning_item(&J::s(&past_limit)));
        assert!(!is_reasoning_item(&J::Null));
    }
}
