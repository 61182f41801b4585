//! Token prices of common models, and the cost of a turn's usage.
//!
//! Prices are US dollars per million tokens at the standard (not batch, not
//! priority) tier, as published on the providers' pricing pages
//! (platform.claude.com/docs/en/about-claude/pricing,
//! developers.openai.com/api/docs/pricing, ai.google.dev/gemini-api/docs/pricing),
//! read from stored copies in 2026. Anthropic's `cacheWrite` is the 5-minute
//! cache write; OpenAI and Gemini charge nothing per token for writing their
//! implicit caches (Gemini's explicit cache storage is billed per hour, not
//! here). Prices change: pass your own [`Pricing`] where it matters.

use serde_json::{Map, Value};

/// Rates in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// A model's prices: [`Rates`], and other rates for long prompts where the
/// provider charges more above a prompt size (input + cache read + cache write).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    pub rates: Rates,
    /// `(above_tokens, rates)`: the rates of a turn whose prompt is over `above_tokens`.
    pub long_prompt: Option<(u64, Rates)>,
}

const fn r(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Rates {
    Rates {
        input,
        output,
        cache_read,
        cache_write,
    }
}

const fn flat(rates: Rates) -> Pricing {
    Pricing {
        rates,
        long_prompt: None,
    }
}

/// Model name (without date suffix) → prices.
const TABLE: &[(&str, Pricing)] = &[
    // Anthropic: base input, output, cache hits, 5-minute cache writes.
    ("claude-opus-4-1", flat(r(15.0, 75.0, 1.5, 18.75))),
    ("claude-opus-4-0", flat(r(15.0, 75.0, 1.5, 18.75))),
    ("claude-opus-4", flat(r(15.0, 75.0, 1.5, 18.75))),
    ("claude-opus-4-5", flat(r(5.0, 25.0, 0.5, 6.25))),
    ("claude-opus-4-6", flat(r(5.0, 25.0, 0.5, 6.25))),
    ("claude-opus-4-7", flat(r(5.0, 25.0, 0.5, 6.25))),
    ("claude-opus-4-8", flat(r(5.0, 25.0, 0.5, 6.25))),
    ("claude-opus-5", flat(r(5.0, 25.0, 0.5, 6.25))),
    (
        "claude-sonnet-4-5",
        Pricing {
            rates: r(3.0, 15.0, 0.3, 3.75),
            long_prompt: Some((200_000, r(6.0, 22.5, 0.6, 7.5))),
        },
    ),
    (
        "claude-sonnet-4-0",
        Pricing {
            rates: r(3.0, 15.0, 0.3, 3.75),
            long_prompt: Some((200_000, r(6.0, 22.5, 0.6, 7.5))),
        },
    ),
    (
        "claude-sonnet-4",
        Pricing {
            rates: r(3.0, 15.0, 0.3, 3.75),
            long_prompt: Some((200_000, r(6.0, 22.5, 0.6, 7.5))),
        },
    ),
    ("claude-sonnet-4-6", flat(r(3.0, 15.0, 0.3, 3.75))),
    ("claude-3-7-sonnet", flat(r(3.0, 15.0, 0.3, 3.75))),
    ("claude-haiku-4-5", flat(r(1.0, 5.0, 0.1, 1.25))),
    ("claude-3-5-haiku", flat(r(0.8, 4.0, 0.08, 1.0))),
    // OpenAI: input, output, cached input.
    ("gpt-5", flat(r(1.25, 10.0, 0.125, 0.0))),
    ("gpt-5-mini", flat(r(0.25, 2.0, 0.025, 0.0))),
    ("gpt-5-nano", flat(r(0.05, 0.4, 0.005, 0.0))),
    ("gpt-5.1", flat(r(1.25, 10.0, 0.125, 0.0))),
    ("gpt-4.1", flat(r(2.0, 8.0, 0.5, 0.0))),
    ("gpt-4.1-mini", flat(r(0.4, 1.6, 0.1, 0.0))),
    ("gpt-4.1-nano", flat(r(0.1, 0.4, 0.025, 0.0))),
    ("gpt-4o", flat(r(2.5, 10.0, 1.25, 0.0))),
    ("gpt-4o-mini", flat(r(0.15, 0.6, 0.075, 0.0))),
    ("o3", flat(r(2.0, 8.0, 0.5, 0.0))),
    ("o4-mini", flat(r(1.1, 4.4, 0.275, 0.0))),
    // Gemini: input, output (thinking included), context-cache reads; prompts over 200k cost more.
    (
        "gemini-2.5-pro",
        Pricing {
            rates: r(1.25, 10.0, 0.125, 0.0),
            long_prompt: Some((200_000, r(2.5, 15.0, 0.25, 0.0))),
        },
    ),
    ("gemini-2.5-flash", flat(r(0.3, 2.5, 0.03, 0.0))),
    ("gemini-2.5-flash-lite", flat(r(0.1, 0.4, 0.01, 0.0))),
    (
        "gemini-3-pro-preview",
        Pricing {
            rates: r(2.0, 12.0, 0.2, 0.0),
            long_prompt: Some((200_000, r(4.0, 18.0, 0.4, 0.0))),
        },
    ),
];

/// Whether `rest` (what follows `name-` in a model id) is a version suffix
/// that keeps the model's prices: a date (`20250929`, `2024-08-06`),
/// `latest`, or a `preview…` tag.
fn version_suffix(rest: &str) -> bool {
    let b = rest.as_bytes();
    let date8 = b.len() >= 8 && b[..8].iter().all(u8::is_ascii_digit);
    let date_iso = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-';
    date8 || date_iso || rest == "latest" || rest.starts_with("preview")
}

/// The prices of a model by its id: an exact name of the table, or one
/// followed by a date, `-latest` or `-preview…` (`claude-sonnet-4-5-20250929`,
/// `gpt-4o-2024-08-06`, `models/gemini-2.5-flash`). `None` for models not in
/// the table.
pub fn default_pricing(model: &str) -> Option<Pricing> {
    let m = model.rsplit('/').next().unwrap_or(model);
    let m = m.to_ascii_lowercase();
    TABLE
        .iter()
        .filter(|(name, _)| {
            m == *name
                || m.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(version_suffix)
        })
        .max_by_key(|(name, _)| name.len())
        .map(|(_, p)| *p)
}

fn count(usage: &Map<String, Value>, key: &str) -> f64 {
    usage.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

/// Fills `usage.cost` (`{input, output, cacheRead, cacheWrite, total}`, in US
/// dollars) from the counts of a canonical usage object (`input`, `output`,
/// `cacheRead`, `cacheWrite`) and the prices.
pub fn cost(usage: &mut Value, pricing: &Pricing) {
    let Some(u) = usage.as_object_mut() else {
        return;
    };
    let (input, output, read, write) = (
        count(u, "input"),
        count(u, "output"),
        count(u, "cacheRead"),
        count(u, "cacheWrite"),
    );
    let rates = match pricing.long_prompt {
        Some((above, long)) if input + read + write > above as f64 => long,
        _ => pricing.rates,
    };
    let parts = [
        input * rates.input / 1e6,
        output * rates.output / 1e6,
        read * rates.cache_read / 1e6,
        write * rates.cache_write / 1e6,
    ];
    let total: f64 = parts.iter().sum();
    let mut c = Map::new();
    for (k, v) in ["input", "output", "cacheRead", "cacheWrite", "total"]
        .into_iter()
        .zip(parts.into_iter().chain([total]))
    {
        c.insert(k.into(), Value::from(v));
    }
    u.insert("cost".into(), Value::Object(c));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_names_and_costs() {
        let s = default_pricing("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!(s.rates.input, 3.0);
        assert_eq!(
            default_pricing("claude-opus-4-1-20250805")
                .unwrap()
                .rates
                .output,
            75.0
        );
        assert_eq!(
            default_pricing("gpt-4o-mini-2024-07-18")
                .unwrap()
                .rates
                .input,
            0.15
        );
        assert_eq!(
            default_pricing("gpt-4o-2024-08-06").unwrap().rates.input,
            2.5
        );
        assert_eq!(
            default_pricing("models/gemini-2.5-flash")
                .unwrap()
                .rates
                .output,
            2.5
        );
        assert_eq!(
            default_pricing("gemini-2.5-flash-lite-preview-09-2025")
                .unwrap()
                .rates
                .input,
            0.1
        );
        assert!(default_pricing("gpt-4o-mini-tts").is_none());
        assert!(default_pricing("claude-opus-4-9").is_none());
        let close = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-9;
        let mut u = serde_json::json!({"input": 100_000, "output": 10_000, "cacheRead": 50_000, "cacheWrite": 40_000});
        cost(&mut u, &s);
        assert!(close(&u["cost"]["input"], 0.3));
        assert!(close(&u["cost"]["cacheWrite"], 0.15));
        assert!(close(&u["cost"]["total"], 0.3 + 0.15 + 0.015 + 0.15), "{u}");
        // a prompt over 200k tokens: the long-prompt rates
        let mut u = serde_json::json!({"input": 150_000, "output": 0, "cacheRead": 60_000});
        cost(&mut u, &s);
        assert!(close(&u["cost"]["input"], 0.9));
        assert!(close(&u["cost"]["cacheRead"], 0.036));
    }
}
