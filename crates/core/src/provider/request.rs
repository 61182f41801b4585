//! Streaming requests: the body from the canonical conversation through
//! [`crate::normalize::convert`] (the same encoders as `toProvider`), plus the
//! model, limits, thinking and stream flags of each API.

pub use crate::normalize::incremental::{Body, BodyPart, Held, Piece};
use crate::normalize::{self, CompatibilityReport, J, Provider, ToOptions};
use crate::{Error, Result};

/// How much the model may think.
#[derive(Debug, Clone, PartialEq)]
pub enum ThinkingOption {
    /// No thinking asked for (Gemini: a budget of 0).
    Off,
    /// A budget in tokens (Anthropic `budget_tokens`, Gemini `thinkingBudget`;
    /// OpenAI: an effort chosen from it).
    Budget(u32),
    /// An effort: `minimal`, `low`, `medium` or `high` (OpenAI
    /// `reasoning_effort`; Anthropic and Gemini: a budget chosen from it).
    Effort(String),
}

/// What a request asks of the model besides the conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestOptions {
    pub model: String,
    /// Output limit (Anthropic requires one: [`DEFAULT_MAX_TOKENS`] when not given).
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub thinking: Option<ThinkingOption>,
}

/// Anthropic's `max_tokens` when none is given (raised above a thinking budget).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A request to send: `POST {base URL}{path}` with these headers (no
/// credential: add [`auth_header`]) and body.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// Appended to the base URL ([`default_base_url`] or the user's).
    pub path: String,
    /// `content-type`, `accept: text/event-stream`, Anthropic's `anthropic-version`.
    pub headers: Vec<(String, String)>,
    /// The JSON body (in parts when it reuses a kept conversion).
    pub body: Body,
    /// What the conversion changed or left out (as `toProvider` reports it).
    pub report: CompatibilityReport,
    /// Tool-call ids that had to change: target id → original.
    pub id_map: Vec<(String, String)>,
    /// Tool names that had to change: target name → original. Give it to
    /// [`super::StreamDecoder::set_name_map`] so calls come back with the original names.
    pub name_map: Vec<(String, String)>,
}

/// The base URL of the provider's public API.
pub fn default_base_url(api: Provider) -> &'static str {
    match api {
        Provider::Anthropic => "https://api.anthropic.com",
        Provider::OpenAi | Provider::Responses => "https://api.openai.com/v1",
        Provider::Google => "https://generativelanguage.googleapis.com/v1beta",
    }
}

/// The header that carries the API key: `x-api-key` (Anthropic),
/// `authorization: Bearer …` (OpenAI), `x-goog-api-key` (Gemini).
pub fn auth_header(api: Provider, key: &str) -> (String, String) {
    match api {
        Provider::Anthropic => ("x-api-key".into(), key.into()),
        Provider::OpenAi | Provider::Responses => ("authorization".into(), format!("Bearer {key}")),
        Provider::Google => ("x-goog-api-key".into(), key.into()),
    }
}

fn budget_of(effort: &str) -> Result<u32> {
    Ok(match effort {
        "minimal" => 1024,
        "low" => 2048,
        "medium" => 8192,
        "high" => 16384,
        other => {
            return Err(Error::invalid_input(format!(
                "thinking effort {other:?} is not minimal, low, medium or high"
            )));
        }
    })
}

fn effort_of(t: &ThinkingOption) -> Result<Option<String>> {
    Ok(match t {
        ThinkingOption::Off => None,
        ThinkingOption::Budget(n) => Some(
            match n {
                0..=1024 => "minimal",
                1025..=4096 => "low",
                4097..=12288 => "medium",
                _ => "high",
            }
            .to_string(),
        ),
        ThinkingOption::Effort(e) => {
            budget_of(e)?;
            Some(e.clone())
        }
    })
}

fn budget(t: &ThinkingOption) -> Result<Option<u32>> {
    match t {
        ThinkingOption::Off => Ok(None),
        ThinkingOption::Budget(n) => Ok(Some(*n)),
        ThinkingOption::Effort(e) => budget_of(e).map(Some),
    }
}

fn num(n: impl ToString) -> J {
    J::Num(n.to_string().into())
}

fn float(f: f64) -> Result<J> {
    if !f.is_finite() {
        return Err(Error::invalid_input("temperature must be a finite number"));
    }
    Ok(J::Num(serde_json::Value::from(f).to_string().into()))
}

/// Builds the streaming request for `api`: `messages` are canonical messages
/// (pi's), `tools` `{name, description?, inputSchema}` (or `parameters`). The
/// body is what `toProvider` gives for them, with the model, limits, thinking
/// and the stream flags added (`stream: true`; OpenAI Chat also
/// `stream_options: {include_usage: true}`; Responses, when thinking, `store:
/// false` with the encrypted reasoning included; Gemini's path is
/// `/models/{model}:streamGenerateContent?alt=sse`).
pub fn build_request(
    api: Provider,
    opts: &RequestOptions,
    system: Option<&str>,
    messages: &[serde_json::Value],
    tools: &[serde_json::Value],
) -> Result<HttpRequest> {
    let msgs = messages
        .iter()
        .map(|m| normalize::parse(&m.to_string(), "a message"))
        .collect::<Result<Vec<J>>>()?;
    build_request_j(api, opts, system, msgs, tools)
}

/// [`build_request`] with the messages as JSON texts (as stored: their
/// numbers, escapes and `original` copies exactly as written).
pub fn build_request_raw(
    api: Provider,
    opts: &RequestOptions,
    system: Option<&str>,
    messages: &[&str],
    tools: &[serde_json::Value],
) -> Result<HttpRequest> {
    let msgs = messages
        .iter()
        .map(|m| normalize::parse(m, "a message"))
        .collect::<Result<Vec<J>>>()?;
    build_request_j(api, opts, system, msgs, tools)
}

fn tool_def(t: &serde_json::Value) -> Result<J> {
    let name = t
        .get("name")
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::invalid_input("each tool needs a name"))?;
    let mut out = J::obj([("name", J::s(name))]);
    if let Some(d) = t.get("description").and_then(|d| d.as_str()) {
        out.set("description", J::s(d));
    }
    let schema = t
        .get("inputSchema")
        .or_else(|| t.get("parameters"))
        .or_else(|| t.get("input_schema"))
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    out.set(
        "parameters",
        normalize::parse(&schema.to_string(), "a tool's input schema")?,
    );
    Ok(out)
}

fn build_request_j(
    api: Provider,
    opts: &RequestOptions,
    system: Option<&str>,
    msgs: Vec<J>,
    tools: &[serde_json::Value],
) -> Result<HttpRequest> {
    let (model, to) = to_options(opts, system, tools)?;
    let converted = normalize::convert(msgs, api, &to)?;
    finish(api, opts, model, converted, |body| Body::whole(body.text()))
}

/// [`build_request_raw`] for a conversation that grows step after step: the
/// conversion of the messages before the last assistant turn is kept in
/// `cache` and only the messages after it are converted (the body is the one
/// [`build_request_raw`] gives). The first messages must be the ones of the
/// cache's last request; call [`normalize::incremental::RequestCache::clear`]
/// when any of them changed.
pub fn build_request_cached(
    cache: &mut normalize::incremental::RequestCache,
    api: Provider,
    opts: &RequestOptions,
    system: Option<&str>,
    messages: &[&str],
    tools: &[serde_json::Value],
) -> Result<HttpRequest> {
    let (model, to) = to_options(opts, system, tools)?;
    let converted = cache.convert(messages, api, &to)?;
    finish(api, opts, model, converted, |body| cache.write(body, api))
}

/// The model name checked, and the conversion's options.
fn to_options(
    opts: &RequestOptions,
    system: Option<&str>,
    tools: &[serde_json::Value],
) -> Result<(String, ToOptions)> {
    let model = opts.model.strip_prefix("models/").unwrap_or(&opts.model);
    if model.is_empty()
        || !model
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'@'))
    {
        return Err(Error::invalid_input(format!(
            "model {:?} is not a model name (letters, digits, '.', '-', '_', ':', '@')",
            opts.model
        )));
    }
    let tools = tools.iter().map(tool_def).collect::<Result<Vec<J>>>()?;
    let to = ToOptions {
        model: Some(model.to_string()),
        system: system.map(J::s),
        tools: (!tools.is_empty()).then_some(tools),
        pairing: true,
        // Anthropic with thinking on needs the final turn to start with thinking.
        thinking: opts
            .thinking
            .as_ref()
            .is_some_and(|t| *t != ThinkingOption::Off),
        ..Default::default()
    };
    Ok((model.to_string(), to))
}

/// The body from the conversion, with the model, limits, thinking and stream
/// flags; `write` gives the body's text.
fn finish(
    api: Provider,
    opts: &RequestOptions,
    model: String,
    converted: normalize::Converted,
    write: impl FnOnce(&J) -> Body,
) -> Result<HttpRequest> {
    let model = model.as_str();
    let J::Obj(members) = converted.request else {
        return Err(Error::internal("the encoder gave no object"));
    };
    let mut body = J::Obj(Vec::with_capacity(members.len() + 6));
    if api != Provider::Google {
        body.set("model", J::s(model));
    }
    for (k, v) in members {
        body.set(&k, v);
    }
    let thinking = opts
        .thinking
        .as_ref()
        .filter(|t| **t != ThinkingOption::Off);
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
    ];
    let path = match api {
        Provider::Anthropic => {
            headers.push(("anthropic-version".into(), "2023-06-01".into()));
            let b = match thinking {
                Some(t) => budget(t)?,
                None => None,
            };
            let max = opts.max_tokens.unwrap_or_else(|| {
                DEFAULT_MAX_TOKENS.max(b.map_or(0, |b| b + DEFAULT_MAX_TOKENS / 2))
            });
            body.set("max_tokens", num(max));
            if let Some(b) = b {
                body.set(
                    "thinking",
                    J::obj([("type", J::s("enabled")), ("budget_tokens", num(b))]),
                );
            }
            if let Some(t) = opts.temperature {
                body.set("temperature", float(t)?);
            }
            body.set("stream", J::Bool(true));
            "/v1/messages".to_string()
        }
        Provider::OpenAi => {
            if let Some(m) = opts.max_tokens {
                body.set("max_completion_tokens", num(m));
            }
            if let Some(t) = opts.temperature {
                body.set("temperature", float(t)?);
            }
            if let Some(e) = match thinking {
                Some(t) => effort_of(t)?,
                None => None,
            } {
                body.set("reasoning_effort", J::s(&e));
            }
            body.set("stream", J::Bool(true));
            body.set("stream_options", J::obj([("include_usage", J::Bool(true))]));
            "/chat/completions".to_string()
        }
        Provider::Responses => {
            if let Some(m) = opts.max_tokens {
                body.set("max_output_tokens", num(m));
            }
            if let Some(t) = opts.temperature {
                body.set("temperature", float(t)?);
            }
            if let Some(e) = match thinking {
                Some(t) => effort_of(t)?,
                None => None,
            } {
                body.set(
                    "reasoning",
                    J::obj([("effort", J::s(&e)), ("summary", J::s("auto"))]),
                );
                // Stateless: nothing kept at OpenAI; the reasoning comes back
                // encrypted and is replayed whole. (Without thinking the
                // server's default `store` stays, so replayed item ids resolve.)
                body.set("include", J::Arr(vec![J::s("reasoning.encrypted_content")]));
                body.set("store", J::Bool(false));
            }
            body.set("stream", J::Bool(true));
            "/responses".to_string()
        }
        Provider::Google => {
            let mut gc = J::Obj(vec![]);
            if let Some(m) = opts.max_tokens {
                gc.set("maxOutputTokens", num(m));
            }
            if let Some(t) = opts.temperature {
                gc.set("temperature", float(t)?);
            }
            match &opts.thinking {
                Some(ThinkingOption::Off) => {
                    gc.set("thinkingConfig", J::obj([("thinkingBudget", num(0))]))
                }
                Some(t) => {
                    let b = budget(t)?.unwrap_or(0);
                    gc.set(
                        "thinkingConfig",
                        J::obj([
                            ("thinkingBudget", num(b)),
                            ("includeThoughts", J::Bool(true)),
                        ]),
                    );
                }
                None => {}
            }
            if !gc.keys().is_empty() {
                body.set("generationConfig", gc);
            }
            format!("/models/{model}:streamGenerateContent?alt=sse")
        }
    };
    Ok(HttpRequest {
        path,
        headers,
        body: write(&body),
        report: converted.report,
        id_map: converted.id_map,
        name_map: converted.name_map,
    })
}
