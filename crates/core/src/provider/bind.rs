//! The providers' functions as the bindings call them (JSON text in and out),
//! so napi and wasm convert → call → convert and hold nothing of their own.

use serde_json::{Value, json};

use super::pricing::{Pricing, Rates};
use super::request::{self, RequestOptions, ThinkingOption};
use super::stream::StreamDecoder;
use super::{auth_header, default_base_url, http_failure};
use crate::normalize::Provider;
use crate::{Error, Result};

fn bad(what: impl Into<String>) -> Error {
    Error::invalid_input(what.into())
}

fn parse(text: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| bad(format!("{what} is not valid JSON: {e}")))
}

/// `{maxTokens?, temperature?, thinking?}` (`thinking`: `true`/`false`,
/// `{budgetTokens}` or `{effort}`) for `model`.
pub fn request_options(model: &str, v: &Value) -> Result<RequestOptions> {
    if !(v.is_null() || v.is_object()) {
        return Err(bad("the request options are an object"));
    }
    let max_tokens = match &v["maxTokens"] {
        Value::Null => None,
        n => Some(
            n.as_u64()
                .filter(|n| *n > 0 && *n <= u64::from(u32::MAX))
                .ok_or_else(|| bad("maxTokens is a positive whole number"))? as u32,
        ),
    };
    let temperature = match &v["temperature"] {
        Value::Null => None,
        t => Some(t.as_f64().ok_or_else(|| bad("temperature is a number"))?),
    };
    let thinking = match &v["thinking"] {
        Value::Null => None,
        Value::Bool(false) => Some(ThinkingOption::Off),
        Value::Bool(true) => Some(ThinkingOption::Effort("medium".into())),
        t @ Value::Object(_) => match (&t["budgetTokens"], &t["effort"]) {
            (Value::Null, Value::String(e)) => Some(ThinkingOption::Effort(e.clone())),
            (n, Value::Null) => Some(ThinkingOption::Budget(
                n.as_u64()
                    .filter(|n| *n <= u64::from(u32::MAX))
                    .ok_or_else(|| bad("thinking.budgetTokens is a whole number"))?
                    as u32,
            )),
            _ => return Err(bad("thinking is {budgetTokens} or {effort}, not both")),
        },
        _ => return Err(bad("thinking is true, false, {budgetTokens} or {effort}")),
    };
    Ok(RequestOptions {
        model: model.to_string(),
        max_tokens,
        temperature,
        thinking,
    })
}

/// Prices per million tokens `{input, output, cacheRead?, cacheWrite?}`.
pub fn pricing(v: &Value) -> Result<Pricing> {
    let n = |k: &str, required: bool| -> Result<f64> {
        match &v[k] {
            Value::Null if !required => Ok(0.0),
            x => x
                .as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .ok_or_else(|| {
                    bad(format!(
                        "pricing.{k} is a number of dollars per million tokens"
                    ))
                }),
        }
    };
    Ok(Pricing {
        rates: Rates {
            input: n("input", true)?,
            output: n("output", true)?,
            cache_read: n("cacheRead", false)?,
            cache_write: n("cacheWrite", false)?,
        },
        long_prompt: None,
    })
}

/// The shortest time between two writes of a stream's pieces: a piece waits
/// at most this long (plus one write) to be durable, and a stream that sends
/// a piece every millisecond costs a write per this many ms, not per piece.
/// 13 ms: a durable piece within 15 ms at the 99th percentile (the write
/// itself takes well under 2 ms), with a quarter fewer fsyncs than 10 ms.
pub const STREAM_COMMIT_INTERVAL_MS: u32 = 13;

/// What a client of wire format `api` needs besides the core:
/// `{api, piApi, vendor, baseURL, baseVars, authHeader, authPrefix, keyVars, commitIntervalMs}`.
pub fn defaults_json(api: &str) -> Result<String> {
    let p = Provider::parse(api)?;
    let (header, value) = auth_header(p, "KEY");
    let prefix = value.strip_suffix("KEY").unwrap_or("").to_string();
    let (keys, bases): (&[&str], &[&str]) = match p {
        Provider::Anthropic => (&["ANTHROPIC_API_KEY"], &["ANTHROPIC_BASE_URL"]),
        Provider::OpenAi | Provider::Responses => (&["OPENAI_API_KEY"], &["OPENAI_BASE_URL"]),
        Provider::Google => (
            &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            &["GOOGLE_GEMINI_BASE_URL"],
        ),
    };
    Ok(json!({
        "api": p.name(),
        "piApi": p.api(),
        "vendor": p.vendor(),
        "baseURL": default_base_url(p),
        "baseVars": bases,
        "authHeader": header,
        "authPrefix": prefix,
        "keyVars": keys,
        "commitIntervalMs": STREAM_COMMIT_INTERVAL_MS,
    })
    .to_string())
}

/// The streaming request for a model call: `options` is `{model,
/// maxTokens?, temperature?, thinking?}`, `messages` canonical messages,
/// `tools` `{name, description?, inputSchema}[]`; answers `{path, headers,
/// body, report, nameMap}` (JSON).
pub fn build_request_json(
    api: &str,
    options_json: &str,
    system: Option<&str>,
    messages_json: &str,
    tools_json: &str,
) -> Result<String> {
    let p = Provider::parse(api)?;
    let o = parse(options_json, "the request options")?;
    let model = o["model"]
        .as_str()
        .ok_or_else(|| bad("the request options need a model"))?;
    let opts = request_options(model, &o)?;
    let messages: Vec<Value> = match parse(messages_json, "the messages")? {
        Value::Array(a) => a,
        _ => return Err(bad("the messages are an array")),
    };
    let tools: Vec<Value> = match parse(tools_json, "the tools")? {
        Value::Array(a) => a,
        Value::Null => Vec::new(),
        _ => return Err(bad("the tools are an array")),
    };
    let req = request::build_request(p, &opts, system, &messages, &tools)?;
    Ok(request_json(&req).to_string())
}

/// A request as the driver sends it: `{path, headers: [[name, value]], body, report, nameMap}`.
pub fn request_json(req: &request::HttpRequest) -> Value {
    let names: serde_json::Map<String, Value> = req
        .name_map
        .iter()
        .map(|(t, o)| (t.clone(), Value::String(o.clone())))
        .collect();
    json!({
        "path": req.path,
        "headers": headers_json(req),
        "body": req.body.text(),
        "report": req.report,
        "nameMap": names,
    })
}

/// A request's headers as the driver sets them: `[[name, value]]`.
pub fn headers_json(req: &request::HttpRequest) -> Value {
    req.headers.iter().map(|(k, v)| json!([k, v])).collect()
}

/// What an HTTP error answer means: `{code, message, retryable}` (JSON).
pub fn http_failure_json(
    api: &str,
    status: u16,
    body: &[u8],
    retry_after: Option<&str>,
) -> Result<String> {
    let f = http_failure(Provider::parse(api)?, status, body, retry_after);
    Ok(json!({ "code": f.error.code.as_str(), "message": f.error.message, "retryable": f.retryable })
        .to_string())
}

impl StreamDecoder {
    /// [`set_name_map`](Self::set_name_map) from a request's `nameMap` (JSON
    /// object, target name → original) and [`set_pricing`](Self::set_pricing)
    /// from `{input, output, cacheRead?, cacheWrite?}` (`null`: the model's default).
    pub fn configure_json(
        &mut self,
        name_map_json: Option<&str>,
        pricing_json: Option<&str>,
    ) -> Result<()> {
        if let Some(t) = name_map_json {
            let names = match parse(t, "the name map")? {
                Value::Object(o) => o
                    .into_iter()
                    .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                    .collect(),
                Value::Null => Vec::new(),
                _ => return Err(bad("the name map is an object")),
            };
            self.set_name_map(names);
        }
        if let Some(t) = pricing_json {
            match parse(t, "the pricing")? {
                Value::Null => {}
                v => self.set_pricing(Some(pricing(&v)?)),
            }
        }
        Ok(())
    }

    /// [`push`](Self::push) with the pieces as a JSON array (`StreamPiece::to_value`).
    pub fn push_json(&mut self, bytes: &[u8]) -> Result<String> {
        let pieces = self.push(bytes)?;
        Ok(Value::Array(pieces.iter().map(|p| p.to_value()).collect()).to_string())
    }
}
