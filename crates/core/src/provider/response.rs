//! A provider's answer (a whole non-streamed response, or one assembled from
//! a stream) → the canonical assistant message, through the request decoders
//! of [`crate::normalize`]: the same blocks, signatures and byte copies as a
//! message of a decoded conversation.

use serde_json::{Map, Value};

use super::pricing::{self, Pricing};
use crate::normalize::{self, J, Provider};
use crate::{Error, ErrorCode, Result};

/// Token counts in canonical terms: `input` without cache reads, `output`
/// with reasoning, `reasoning` (part of `output`) when the provider says.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub reasoning: Option<u64>,
    /// Whether the provider reported any usage.
    pub known: bool,
}

/// A non-negative integer member.
pub(crate) fn num(v: Option<&J>) -> Option<u64> {
    match v? {
        J::Num(s) => s.parse::<u64>().ok().or_else(|| {
            s.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

fn at<'a>(v: &'a J, path: &[&str]) -> Option<&'a J> {
    path.iter().try_fold(v, |cur, k| cur.get(k))
}

impl Tokens {
    /// Anthropic `usage` (message_start, message_delta: cumulative, members may be absent).
    pub fn anthropic(&mut self, u: &J) {
        if !u.is_obj() {
            return;
        }
        self.known = true;
        if let Some(n) = num(u.get("input_tokens")) {
            self.input = n;
        }
        if let Some(n) = num(u.get("output_tokens")) {
            self.output = n;
        }
        if let Some(n) = num(u.get("cache_read_input_tokens")) {
            self.cache_read = n;
        }
        if let Some(n) = num(u.get("cache_creation_input_tokens")) {
            self.cache_write = n;
        }
    }

    /// OpenAI Chat `usage` (`prompt_tokens` includes the cached ones,
    /// `completion_tokens` the reasoning ones).
    pub fn openai(&mut self, u: &J) {
        if !u.is_obj() {
            return;
        }
        self.known = true;
        let cached = num(at(u, &["prompt_tokens_details", "cached_tokens"])).unwrap_or(0);
        self.cache_read = cached;
        self.input = num(u.get("prompt_tokens"))
            .unwrap_or(0)
            .saturating_sub(cached);
        self.output = num(u.get("completion_tokens")).unwrap_or(0);
        self.reasoning = num(at(u, &["completion_tokens_details", "reasoning_tokens"]));
    }

    /// OpenAI Responses `usage`.
    pub fn responses(&mut self, u: &J) {
        if !u.is_obj() {
            return;
        }
        self.known = true;
        let cached = num(at(u, &["input_tokens_details", "cached_tokens"])).unwrap_or(0);
        self.cache_read = cached;
        self.input = num(u.get("input_tokens"))
            .unwrap_or(0)
            .saturating_sub(cached);
        self.output = num(u.get("output_tokens")).unwrap_or(0);
        self.reasoning = num(at(u, &["output_tokens_details", "reasoning_tokens"]));
    }

    /// Gemini `usageMetadata` (`promptTokenCount` includes the cached ones;
    /// thoughts are billed as output).
    pub fn google(&mut self, u: &J) {
        if !u.is_obj() {
            return;
        }
        self.known = true;
        let cached = num(u.get("cachedContentTokenCount")).unwrap_or(0);
        self.cache_read = cached;
        self.input = (num(u.get("promptTokenCount")).unwrap_or(0)
            + num(u.get("toolUsePromptTokenCount")).unwrap_or(0))
        .saturating_sub(cached);
        let thoughts = num(u.get("thoughtsTokenCount"));
        self.output = num(u.get("candidatesTokenCount")).unwrap_or(0) + thoughts.unwrap_or(0);
        self.reasoning = thoughts;
    }

    /// The canonical usage object (pi's, plus `reasoning` when known), with
    /// its cost when the prices are known (else zeros).
    pub fn to_value(self, pricing: Option<&Pricing>) -> Value {
        let mut u = Map::new();
        u.insert("input".into(), self.input.into());
        u.insert("output".into(), self.output.into());
        u.insert("cacheRead".into(), self.cache_read.into());
        u.insert("cacheWrite".into(), self.cache_write.into());
        u.insert(
            "totalTokens".into(),
            (self.input + self.output + self.cache_read + self.cache_write).into(),
        );
        if let Some(r) = self.reasoning {
            u.insert("reasoning".into(), r.into());
        }
        let mut u = Value::Object(u);
        match pricing {
            Some(p) => pricing::cost(&mut u, p),
            None => {
                let zero = serde_json::json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0});
                u["cost"] = zero;
            }
        }
        u
    }
}

/// How the turn ended: pi's `stopReason` and, for `error`, a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stop {
    pub reason: &'static str,
    pub message: Option<String>,
}

impl Stop {
    pub fn new(reason: &'static str) -> Stop {
        Stop {
            reason,
            message: None,
        }
    }

    pub fn error(message: String) -> Stop {
        Stop {
            reason: "error",
            message: Some(message),
        }
    }

    /// Anthropic `stop_reason`.
    pub fn anthropic(r: Option<&str>) -> Stop {
        match r {
            Some("tool_use") => Stop::new("toolUse"),
            Some("max_tokens" | "model_context_window_exceeded") => Stop::new("length"),
            Some("refusal") => {
                Stop::error("the model refused to answer (stop_reason refusal)".into())
            }
            _ => Stop::new("stop"),
        }
    }

    /// OpenAI Chat `finish_reason`.
    pub fn openai(r: Option<&str>, has_calls: bool) -> Stop {
        match r {
            Some("length") => Stop::new("length"),
            Some("content_filter") => Stop::error(
                "the answer was cut by the content filter (finish_reason content_filter)".into(),
            ),
            _ if has_calls => Stop::new("toolUse"),
            _ => Stop::new("stop"),
        }
    }

    /// Responses `status` and `incomplete_details.reason`.
    pub fn responses(status: Option<&str>, reason: Option<&str>, has_calls: bool) -> Stop {
        match (status, reason) {
            (Some("incomplete"), Some("max_output_tokens")) => Stop::new("length"),
            (Some("incomplete"), r) => Stop::error(format!(
                "the response is incomplete ({})",
                r.unwrap_or("no reason given")
            )),
            _ if has_calls => Stop::new("toolUse"),
            _ => Stop::new("stop"),
        }
    }

    /// Gemini `finishReason` (and `promptFeedback.blockReason` when the prompt was blocked).
    pub fn google(r: Option<&str>, blocked: Option<&str>, has_calls: bool) -> Stop {
        if let Some(b) = blocked {
            return Stop::error(format!("the prompt was blocked ({b})"));
        }
        match r {
            Some("MAX_TOKENS") => Stop::new("length"),
            Some("STOP") | None if has_calls => Stop::new("toolUse"),
            Some("STOP") | None => Stop::new("stop"),
            Some(other) => Stop::error(format!("the model stopped: finishReason {other}")),
        }
    }
}

/// What besides the blocks goes into the message.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub tokens: Tokens,
    pub stop: Stop,
    pub response_id: Option<String>,
    pub model: Option<String>,
    /// Tool calls whose arguments were cut short: their canonical index and text.
    pub raw_args: RawArgs,
}

/// A tool call whose arguments were cut short: its canonical index and the text.
pub(crate) type RawArgs = Vec<(usize, String)>;

fn protocol(api: Provider, what: String) -> Error {
    Error::new(
        ErrorCode::ProviderProtocol,
        format!("{} answer: {what}", api.name()),
    )
}

/// Decodes the provider's assistant message (`msg`: Anthropic `{role, content}`,
/// OpenAI Chat `{role, content, tool_calls…}`, Responses output items as an
/// array, Gemini `{role: "model", parts}`) and adds the origin, usage, stop
/// reason and response id.
pub(crate) fn assistant_message(
    api: Provider,
    provider: &str,
    model: &str,
    msg: J,
    meta: &Meta,
    pricing: Option<&Pricing>,
    names: &[(String, String)],
) -> Result<J> {
    let model = J::s(meta.model.as_deref().unwrap_or(model));
    let req = match api {
        Provider::Anthropic | Provider::OpenAi => {
            J::obj([("model", model.clone()), ("messages", J::Arr(vec![msg]))])
        }
        Provider::Responses => J::obj([("model", model.clone()), ("input", msg)]),
        Provider::Google => J::obj([("model", model.clone()), ("contents", J::Arr(vec![msg]))]),
    };
    let conv = normalize::decode(&req, api).map_err(|e| protocol(api, e.message))?;
    let mut m = conv
        .messages
        .into_iter()
        .find(|m| m.is("role", "assistant"))
        .unwrap_or_else(|| {
            J::obj([
                ("role", J::s("assistant")),
                ("content", J::Arr(vec![])),
                ("api", J::s(api.api())),
            ])
        });
    if let Some(J::Arr(blocks)) = m.get_mut("content") {
        for (i, raw) in &meta.raw_args {
            if let Some(b) = blocks.get_mut(*i) {
                b.set("arguments", J::Obj(vec![]));
                b.set("argumentsRaw", J::s(raw));
            }
        }
        if !names.is_empty() {
            for b in blocks.iter_mut().filter(|b| b.is("type", "toolCall")) {
                let name = b.str_of("name").unwrap_or_default().to_string();
                if let Some((_, orig)) = names.iter().find(|(t, _)| *t == name) {
                    b.set("name", J::s(orig));
                }
            }
        }
    }
    m.set("api", J::s(api.api()));
    m.set("provider", J::s(provider));
    m.set("model", model);
    let usage = meta.tokens.to_value(pricing);
    m.set("usage", J::parse(&usage.to_string()).unwrap_or(J::Null));
    m.set("stopReason", J::s(meta.stop.reason));
    if let Some(e) = &meta.stop.message {
        m.set("errorMessage", J::s(e));
    }
    if let Some(id) = &meta.response_id {
        m.set("responseId", J::s(id));
    }
    Ok(m)
}

/// A canonical value as a `serde_json::Value` (strings decoded; a number
/// serde_json cannot hold, such as `1e400`, becomes `null`).
pub(crate) fn to_value(j: &J) -> Value {
    match j {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Num(n) => serde_json::from_str(n).unwrap_or(Value::Null),
        J::Str(_) => Value::String(j.as_str().unwrap_or_default().into_owned()),
        J::Arr(a) => Value::Array(a.iter().map(to_value).collect()),
        J::Obj(m) => {
            let mut out = Map::with_capacity(m.len());
            for (k, v) in m {
                let key = if k.contains('\\') {
                    crate::json::decode_escaped(k)
                } else {
                    k.to_string()
                };
                out.insert(key, to_value(v));
            }
            Value::Object(out)
        }
    }
}

/// Members of an OpenAI response message that say nothing when empty.
fn openai_message(m: &J) -> J {
    let J::Obj(members) = m else {
        return m.clone();
    };
    let mut out = Vec::new();
    let mut refusal = None;
    for (k, v) in members {
        let empty = matches!(v, J::Null) || matches!(v, J::Arr(a) if a.is_empty());
        match &**k {
            "refusal" => {
                if !empty {
                    refusal = Some(v.clone());
                }
            }
            "annotations" | "audio" | "function_call" | "tool_calls" if empty => {}
            _ => out.push((k.clone(), v.clone())),
        }
    }
    let mut msg = J::Obj(out);
    if let Some(r) = refusal {
        let mut parts = match msg.get("content") {
            Some(t @ J::Str(_)) => vec![J::obj([("type", J::s("text")), ("text", t.clone())])],
            Some(J::Arr(a)) => a.clone(),
            _ => Vec::new(),
        };
        parts.push(J::obj([("type", J::s("refusal")), ("refusal", r)]));
        msg.set("content", J::Arr(parts));
    }
    msg
}

/// A whole (non-streamed) response body of `api` → the canonical assistant
/// message, as [`super::StreamDecoder::finish`] gives it for the same answer
/// streamed. `provider` is the `provider` to record; `model` is used when the
/// response names none. An error body gives its error (`PROVIDER_*`).
pub fn decode_response(api: Provider, provider: &str, model: &str, body: &str) -> Result<Value> {
    let text = decode_response_text(api, provider, model, body, None)?;
    Ok(to_value(&text))
}

/// [`decode_response`] as the message's exact JSON (numbers, escapes and
/// signatures as the provider wrote them), with the given prices (default:
/// [`pricing::default_pricing`] of the model).
pub fn decode_response_text(
    api: Provider,
    provider: &str,
    model: &str,
    body: &str,
    pricing: Option<Pricing>,
) -> Result<J> {
    let r = J::parse(body).map_err(|e| {
        protocol(
            api,
            format!(
                "the response is not JSON ({} at byte {})",
                e.message, e.offset
            ),
        )
    })?;
    if r.get("error").is_some_and(|e| !matches!(e, J::Null)) {
        return Err(stream_error(api, &to_value(&r), None));
    }
    let mut tokens = Tokens::default();
    let (msg, stop) = match api {
        Provider::Anthropic => {
            if let Some(u) = r.get("usage") {
                tokens.anthropic(u);
            }
            let msg = J::obj([
                ("role", J::s("assistant")),
                (
                    "content",
                    r.get("content").cloned().unwrap_or(J::Arr(vec![])),
                ),
            ]);
            (msg, Stop::anthropic(r.str_of("stop_reason").as_deref()))
        }
        Provider::OpenAi => {
            if let Some(u) = r.get("usage") {
                tokens.openai(u);
            }
            let choice = r
                .get("choices")
                .and_then(J::as_arr)
                .and_then(|c| c.first())
                .ok_or_else(|| protocol(api, "the response has no choices".into()))?;
            let msg = openai_message(choice.get("message").unwrap_or(&J::Null));
            let calls = msg
                .get("tool_calls")
                .and_then(J::as_arr)
                .is_some_and(|a| !a.is_empty());
            (
                msg,
                Stop::openai(choice.str_of("finish_reason").as_deref(), calls),
            )
        }
        Provider::Responses => {
            if let Some(u) = r.get("usage") {
                tokens.responses(u);
            }
            let items = r.get("output").cloned().unwrap_or(J::Arr(vec![]));
            let calls = items
                .as_arr()
                .is_some_and(|a| a.iter().any(|i| i.is("type", "function_call")));
            let stop = Stop::responses(
                r.str_of("status").as_deref(),
                r.get("incomplete_details")
                    .and_then(|d| d.str_of("reason"))
                    .as_deref(),
                calls,
            );
            (items, stop)
        }
        Provider::Google => {
            if let Some(u) = r.get("usageMetadata") {
                tokens.google(u);
            }
            let cand = r
                .get("candidates")
                .and_then(J::as_arr)
                .and_then(|c| c.first());
            let parts = cand
                .and_then(|c| c.get("content"))
                .and_then(|c| c.get("parts"))
                .cloned()
                .unwrap_or(J::Arr(vec![]));
            let calls = parts
                .as_arr()
                .is_some_and(|a| a.iter().any(|p| p.get("functionCall").is_some()));
            let blocked = r
                .get("promptFeedback")
                .and_then(|f| f.str_of("blockReason"));
            let stop = Stop::google(
                cand.and_then(|c| c.str_of("finishReason")).as_deref(),
                blocked.as_deref(),
                calls,
            );
            (J::obj([("role", J::s("model")), ("parts", parts)]), stop)
        }
    };
    let id_key = if api == Provider::Google {
        "responseId"
    } else {
        "id"
    };
    let model_key = if api == Provider::Google {
        "modelVersion"
    } else {
        "model"
    };
    let meta = Meta {
        tokens,
        stop,
        response_id: r.str_of(id_key).map(|s| s.into_owned()),
        model: r.str_of(model_key).map(|s| s.into_owned()),
        raw_args: Vec::new(),
    };
    let pricing =
        pricing.or_else(|| pricing::default_pricing(meta.model.as_deref().unwrap_or(model)));
    assistant_message(api, provider, model, msg, &meta, pricing.as_ref(), &[])
}

/// An error object met in a stream (or as a response body) as an error with
/// its code (`PROVIDER_*`, `PROVIDER_UNAVAILABLE` for kinds not known) and the
/// provider's message.
pub(crate) fn stream_error(api: Provider, v: &Value, event: Option<u64>) -> Error {
    let (kind, message) = super::http::error_parts(v);
    let code = kind
        .as_deref()
        .and_then(super::http::kind_code)
        .unwrap_or(ErrorCode::ProviderUnavailable);
    let mut text = format!("{} reported an error", api.name());
    if let Some(n) = event {
        text.push_str(&format!(" in the stream (event {n})"));
    }
    if let Some(k) = kind {
        text.push_str(&format!(" ({k})"));
    }
    text.push_str(": ");
    text.push_str(&super::http::clean_message(
        message.as_deref().unwrap_or("no message"),
    ));
    Error::new(code, text)
}
