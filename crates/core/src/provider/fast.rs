//! Readers for the events that make up nearly all of a long answer: one text
//! (or thinking) delta. They scan the event in place, with no tree and no
//! allocation, and give up (`None`) on anything that is not exactly that shape
//! — another member, another type, a duplicate key, a number that is not a
//! plain integer —, so the decoder then reads the event the general way. They
//! change what an event costs, never what it means: the decoder feeds what
//! they find to the same code the general way ends in (tests compare both).

use crate::json::{self, Kind, ObjectReader, Value, skip_ws};

const MAX_DEPTH: usize = json::DEFAULT_MAX_DEPTH;

/// An Anthropic `content_block_delta` with a `text_delta` or `thinking_delta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AnthropicDelta<'a> {
    pub index: u64,
    /// The delta's type (`text_delta` or `thinking_delta`).
    pub delta_type: &'a str,
    pub thinking: bool,
    /// The text, escaped as in the event.
    pub text: &'a str,
}

/// An OpenAI Chat chunk whose only news is a piece of the answer's `content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ChatContent<'a> {
    pub id: Option<&'a str>,
    pub model: Option<&'a str>,
    /// The piece, escaped as in the event.
    pub content: &'a str,
}

/// A string member's escaped text, when the value is a string without escapes
/// (an escaped value is compared decoded by the general reader).
fn plain<'a>(v: &Value, src: &'a str) -> Option<&'a str> {
    (v.kind == Kind::String && !v.escaped).then(|| v.inner(src))
}

/// A string member's escaped text (escapes kept, as the general reader keeps them).
fn string<'a>(v: &Value, src: &'a str) -> Option<&'a str> {
    (v.kind == Kind::String).then(|| v.inner(src))
}

fn uint(v: &Value, src: &str) -> Option<u64> {
    let raw = v.raw(src);
    (v.kind == Kind::Number && raw.bytes().all(|c| c.is_ascii_digit()))
        .then(|| raw.parse().ok())
        .flatten()
}

fn is_null(v: &Value) -> bool {
    v.kind == Kind::Null
}

/// The key as plain text (`None` when escaped: the general reader handles it).
fn key<'a>(k: &Value, src: &'a str) -> Option<&'a str> {
    plain(k, src)
}

/// Sets `slot` once; a second time (a duplicate key) gives up.
fn once<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

/// Nothing but whitespace after the value.
fn ends(b: &[u8], at: usize) -> Option<()> {
    (skip_ws(b, at) == b.len()).then_some(())
}

pub(super) fn anthropic_delta(src: &str) -> Option<AnthropicDelta<'_>> {
    let b = src.as_bytes();
    let mut r = ObjectReader::open(b, 0, 1, MAX_DEPTH).ok()?;
    let (mut ty, mut index, mut delta) = (None, None, None);
    while let Some(k) = r.next_key().ok()? {
        match key(&k, src)? {
            "type" => once(&mut ty, plain(&r.skip_value().ok()?, src)?)?,
            "index" => once(&mut index, uint(&r.skip_value().ok()?, src)?)?,
            "delta" => {
                let mut d = r.enter_object().ok()?;
                let (mut dty, mut text, mut field) = (None, None, None);
                while let Some(k) = d.next_key().ok()? {
                    let name = key(&k, src)?;
                    match name {
                        "type" => once(&mut dty, plain(&d.skip_value().ok()?, src)?)?,
                        "text" | "thinking" => {
                            once(&mut field, name)?;
                            once(&mut text, string(&d.skip_value().ok()?, src)?)?;
                        }
                        _ => return None,
                    }
                }
                r.resume_after(&d);
                let (dty, text, field) = (dty?, text?, field?);
                let thinking = match (dty, field) {
                    ("text_delta", "text") => false,
                    ("thinking_delta", "thinking") => true,
                    _ => return None,
                };
                once(&mut delta, (dty, thinking, text))?;
            }
            _ => return None,
        }
    }
    ends(b, r.end())?;
    if ty? != "content_block_delta" {
        return None;
    }
    let (delta_type, thinking, text) = delta?;
    Some(AnthropicDelta {
        index: index?,
        delta_type,
        thinking,
        text,
    })
}

pub(super) fn chat_content(src: &str) -> Option<ChatContent<'_>> {
    let b = src.as_bytes();
    let mut r = ObjectReader::open(b, 0, 1, MAX_DEPTH).ok()?;
    let (mut id, mut model, mut content, mut seen_object) = (None, None, None, false);
    while let Some(k) = r.next_key().ok()? {
        match key(&k, src)? {
            "id" => once(&mut id, plain(&r.skip_value().ok()?, src)?)?,
            "model" => once(&mut model, plain(&r.skip_value().ok()?, src)?)?,
            // Members the decoder does not read.
            "object" | "created" | "system_fingerprint" | "service_tier" | "obfuscation"
            | "provider" => {
                if k.inner(src) == "object" {
                    if seen_object {
                        return None;
                    }
                    seen_object = true;
                }
                r.skip_value().ok()?;
            }
            "usage" => {
                if !is_null(&r.skip_value().ok()?) {
                    return None;
                }
            }
            "choices" => {
                // Exactly one choice: index 0, a delta with only `content`
                // (and `role`), no finish reason, no logprobs.
                let at = r.end_of_value_start();
                if b.get(at) != Some(&b'[') {
                    return None;
                }
                let mut ch = ObjectReader::open(b, at + 1, 3, MAX_DEPTH).ok()?;
                let (mut ci, mut piece) = (None, None);
                while let Some(k) = ch.next_key().ok()? {
                    match key(&k, src)? {
                        "index" => once(&mut ci, uint(&ch.skip_value().ok()?, src)?)?,
                        "finish_reason" | "logprobs" => {
                            if !is_null(&ch.skip_value().ok()?) {
                                return None;
                            }
                        }
                        "delta" => {
                            let mut d = ch.enter_object().ok()?;
                            let mut role_seen = false;
                            while let Some(k) = d.next_key().ok()? {
                                match key(&k, src)? {
                                    "content" => {
                                        once(&mut piece, string(&d.skip_value().ok()?, src)?)?
                                    }
                                    "role" if !role_seen => {
                                        role_seen = true;
                                        d.skip_value().ok()?;
                                    }
                                    _ => return None,
                                }
                            }
                            ch.resume_after(&d);
                        }
                        _ => return None,
                    }
                }
                if ci? != 0 || once(&mut content, piece?).is_none() {
                    return None;
                }
                let close = skip_ws(b, ch.end());
                if b.get(close) != Some(&b']') {
                    return None;
                }
                r = ObjectReader::continue_at(b, close + 1, 1, MAX_DEPTH);
            }
            _ => return None,
        }
    }
    ends(b, r.end())?;
    Some(ChatContent {
        id,
        model,
        content: content?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_text_and_thinking_deltas() {
        let d = anthropic_delta(
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"a\"b"}}"#,
        )
        .unwrap();
        assert_eq!((d.index, d.thinking, d.text), (2, false, r#"a\"b"#));
        let d = anthropic_delta(
            r#" {"delta":{"thinking":"x","type":"thinking_delta"},"index":0,"type":"content_block_delta"} "#,
        )
        .unwrap();
        assert_eq!((d.index, d.thinking, d.text), (0, true, "x"));
    }

    #[test]
    fn anthropic_anything_else_is_left_to_the_general_reader() {
        for e in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","thinking":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"more":1}"#,
            r#"{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":1.0,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delt\u0061","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":1}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} x"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}"#,
            r#"{"type":"ping"}"#,
            r#"[1]"#,
            "",
        ] {
            assert_eq!(anthropic_delta(e), None, "{e}");
        }
    }

    #[test]
    fn chat_content_pieces() {
        let c = chat_content(
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"hi\n"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"ab"}"#,
        )
        .unwrap();
        assert_eq!(c.id, Some("c1"));
        assert_eq!(c.model, Some("gpt-4.1"));
        assert_eq!(c.content, r"hi\n");
    }

    #[test]
    fn chat_anything_else_is_left_to_the_general_reader() {
        for e in [
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x","reasoning_content":"y"}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x","tool_calls":[]}}]}"#,
            r#"{"id":"c","choices":[{"index":1,"delta":{"content":"x"}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"}},{"index":1,"delta":{"content":"y"}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":null}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}],"error":{"message":"m"}}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}],"choices":[]}"#,
            r#"{"id":"c\u0031","choices":[{"index":0,"delta":{"content":"x"}}]}"#,
            r#"{"id":"c","choices":[]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}"#,
            "[DONE]",
        ] {
            assert_eq!(chat_content(e), None, "{e}");
        }
    }
}
