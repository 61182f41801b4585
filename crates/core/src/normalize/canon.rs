//! The canonical message model (pi-ai's message shapes, extended; FORMAT.md §15)
//! as [`J`] values, and helpers shared by the codecs.

use std::borrow::Cow;

use super::ids::fnv64;
use super::jv::{J, Key, key_has_lone_surrogate};
use crate::{Error, Result};

/// A provider wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenAI Responses.
    Responses,
    /// Google Gemini `generateContent`.
    Google,
}

impl Provider {
    pub const ALL: [Provider; 4] = [
        Provider::Anthropic,
        Provider::OpenAi,
        Provider::Responses,
        Provider::Google,
    ];

    /// Parses a provider name (`anthropic`, `openai`, `openai-responses`, `google`,
    /// and the pi `api` names that mean the same wire format).
    pub fn parse(name: &str) -> Result<Provider> {
        Ok(match name {
            "anthropic" | "anthropic-messages" => Provider::Anthropic,
            "openai" | "openai-chat" | "openai-completions" => Provider::OpenAi,
            "openai-responses" | "openai-codex-responses" | "azure-openai-responses" => {
                Provider::Responses
            }
            "google"
            | "gemini"
            | "google-generative-ai"
            | "google-vertex"
            | "google-gemini-cli" => Provider::Google,
            other => {
                return Err(Error::invalid_input(format!(
                    "unknown provider {other:?}: expected anthropic, openai, openai-responses or google"
                )));
            }
        })
    }

    /// The name used in reports and `original.provider`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::Responses => "openai-responses",
            Provider::Google => "google",
        }
    }

    /// The pi `api` value of messages decoded from this format.
    pub fn api(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic-messages",
            Provider::OpenAi => "openai-completions",
            Provider::Responses => "openai-responses",
            Provider::Google => "google-generative-ai",
        }
    }

    /// The pi `provider` value of messages decoded from this format.
    pub fn vendor(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi | Provider::Responses => "openai",
            Provider::Google => "google",
        }
    }
}

/// The wire format an assistant message came from (its `api`, else its `provider`).
pub fn origin(msg: &J) -> Option<Provider> {
    if let Some(api) = msg.str_of("api") {
        return match api.as_ref() {
            "anthropic-messages" | "bedrock-anthropic" => Some(Provider::Anthropic),
            "openai-completions" => Some(Provider::OpenAi),
            a if a.ends_with("-responses") => Some(Provider::Responses),
            a if a.starts_with("google-") => Some(Provider::Google),
            _ => None,
        };
    }
    match msg.str_of("provider")?.as_ref() {
        "anthropic" => Some(Provider::Anthropic),
        "openai" => Some(Provider::OpenAi),
        "google" => Some(Provider::Google),
        _ => None,
    }
}

/// Whether a block belongs to the given provider (server-tool and unknown blocks).
pub fn block_provider(block: &J) -> Option<Provider> {
    block
        .str_of("provider")
        .and_then(|p| Provider::parse(&p).ok())
}

/// The role of a canonical message.
pub fn role(msg: &J) -> Cow<'_, str> {
    msg.str_of("role").unwrap_or(Cow::Borrowed(""))
}

/// The blocks of a message (`content` as a string is one text block).
pub fn blocks(msg: &J) -> Cow<'_, [J]> {
    match msg.get("content") {
        Some(J::Arr(a)) => Cow::Borrowed(a.as_slice()),
        Some(s @ J::Str(_)) => Cow::Owned(vec![J::Obj(vec![
            ("type".into(), J::s("text")),
            ("text".into(), s.clone()),
        ])]),
        _ => Cow::Owned(Vec::new()),
    }
}

/// A text block.
pub fn text_block(text: &str) -> J {
    J::obj([("type", J::s("text")), ("text", J::s(text))])
}

/// A text block from an already-escaped JSON string value.
pub fn text_block_j(text: J) -> J {
    J::obj([("type", J::s("text")), ("text", text)])
}

/// `type` of a block.
pub fn btype(block: &J) -> Cow<'_, str> {
    block.str_of("type").unwrap_or(Cow::Borrowed(""))
}

/// The members of `v` whose keys are not in `known`, as `{"<provider>": {…}}`, or `None`.
pub fn vendor_of(v: &J, known: &[&str], p: Provider) -> Option<J> {
    let J::Obj(m) = v else { return None };
    let rest: Vec<(Key, J)> = m
        .iter()
        .filter(|(k, _)| !known.contains(&&**k))
        .cloned()
        .collect();
    if rest.is_empty() {
        None
    } else {
        Some(J::Obj(vec![(p.name().into(), J::Obj(rest))]))
    }
}

/// Adds `vendor` to a canonical object when there is any.
pub fn with_vendor(mut obj: J, vendor: Option<J>) -> J {
    if let Some(v) = vendor {
        obj.set("vendor", v);
    }
    obj
}

/// The `kind` kept for `p` (a Responses item type, OpenAI Chat `custom`).
pub fn vendor_kind(b: &J, p: Provider) -> Option<std::borrow::Cow<'_, str>> {
    b.get("vendor")?.get(p.name())?.str_of("kind")
}

/// Sets the `kind` kept for `p`, keeping the other members kept for it.
pub fn set_vendor_kind(b: &mut J, p: Provider, kind: &str) {
    set_vendor_member(b, p, "kind", J::s(kind));
}

/// The vendor member that marks a Responses function tool without `strict`
/// (left to Responses' default: strict where the schema allows), which no
/// other API can say (decoded in `tools_from`, read by `encode_tools`).
pub const DEFAULT_STRICT: &str = "defaultStrict";

/// Sets a member kept for `p`, keeping the others.
pub fn set_vendor_member(b: &mut J, p: Provider, key: &str, value: J) {
    if b.get("vendor").is_none() {
        b.set("vendor", J::Obj(vec![]));
    }
    if let Some(v) = b.get_mut("vendor") {
        if v.get(p.name()).is_none() {
            v.set(p.name(), J::Obj(vec![]));
        }
        if let Some(own) = v.get_mut(p.name()) {
            own.set(key, value);
        }
    }
}

/// Takes out the `kind` kept for `p`, and the `vendor` objects it leaves empty.
pub fn take_vendor_kind(b: &mut J, p: Provider) -> Option<J> {
    let v = b.get_mut("vendor")?;
    let own = v.get_mut(p.name())?;
    let kind = own.remove("kind");
    if own.keys().is_empty() {
        v.remove(p.name());
    }
    if v.keys().is_empty() {
        b.remove("vendor");
    }
    kind
}

/// The provider-specific members kept for `p` on a canonical object.
pub fn vendor_members(obj: &J, p: Provider) -> Vec<(Key, J)> {
    match obj.get("vendor").and_then(|v| v.get(p.name())) {
        Some(J::Obj(m)) => m.clone(),
        _ => Vec::new(),
    }
}

/// Names of provider-specific members kept for providers other than `p`.
pub fn foreign_vendor_keys(obj: &J, p: Provider) -> Vec<String> {
    match obj.get("vendor") {
        Some(J::Obj(m)) => m
            .iter()
            .filter(|(k, _)| &**k != p.name())
            .flat_map(|(k, v)| v.keys().into_iter().map(move |f| format!("{k}.{f}")))
            .collect(),
        _ => Vec::new(),
    }
}

/// Appends members to an object.
pub fn extend(obj: &mut J, members: Vec<(Key, J)>) {
    if let J::Obj(m) = obj {
        m.extend(members);
    }
}

/// Splits a `data:<mime>;base64,<data>` URL.
pub fn parse_data_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let mime = meta.strip_suffix(";base64")?;
    Some((mime.to_string(), data.to_string()))
}

/// A hash of what JavaScript would see of these values (numbers by value,
/// strings decoded, object members by key): the same after a trip through
/// `JSON.parse`/`JSON.stringify`. The `original` member of messages is ignored.
pub fn semantic_hash(msgs: &[J]) -> String {
    hash_of(msgs, true)
}

/// The provider's bytes an original (`{json, hash, …}`) keeps for `vals`,
/// parsed, when its hash is that of `vals`: as this version computes it, or,
/// for values with lone surrogates, as 0.1.0 did (it hashed the decoded
/// text, which reads a lone surrogate as U+FFFD), so that what it stored
/// still gives its bytes back. The old rule is taken only when the bytes
/// hold a lone surrogate too: values edited from U+FFFD to a lone surrogate,
/// whose bytes hold none, hash as their bytes did by that rule, and are not
/// taken for them.
pub fn matching_original(o: &J, vals: &[J]) -> Option<J> {
    let stored = o.str_of("hash")?;
    let raw = || J::parse(&o.str_of("json")?).ok();
    if *stored == hash_of(vals, true) {
        return raw();
    }
    if vals.iter().any(J::has_lone_surrogate) && *stored == hash_of(vals, false) {
        return raw().filter(J::has_lone_surrogate);
    }
    None
}

fn hash_of(msgs: &[J], units: bool) -> String {
    let mut buf = Vec::new();
    for m in msgs {
        feed(m, &mut buf, true, units);
        buf.push(0xff);
    }
    format!(
        "{:016x}{:016x}",
        fnv64(&buf, 0),
        fnv64(&buf, 0x9e37_79b9_7f4a_7c15)
    )
}

/// UTF-16 code units for the hash: their count, then each.
fn push_units(buf: &mut Vec<u8>, units: &[u16]) {
    buf.extend_from_slice(&(units.len() as u64).to_le_bytes());
    for u in units {
        buf.extend_from_slice(&u.to_le_bytes());
    }
}

fn feed(v: &J, buf: &mut Vec<u8>, top: bool, units: bool) {
    match v {
        J::Null => buf.push(b'n'),
        J::Bool(b) => buf.extend_from_slice(if *b { b"T" } else { b"F" }),
        J::Num(n) => {
            let f: f64 = n.parse().unwrap_or(f64::NAN);
            if f.is_infinite() {
                // Past a double's range (`1e400`): JavaScript reads Infinity,
                // which `JSON.stringify` writes as `null`.
                buf.push(b'n');
            } else {
                buf.push(b'#');
                // `-0` is written `0` by `JSON.stringify`.
                let f = if f == 0.0 { 0.0 } else { f };
                buf.extend_from_slice(&f.to_bits().to_le_bytes());
            }
        }
        // A string with lone surrogates is hashed as its UTF-16 code units
        // (JavaScript tells `\ud800` from `\ufffd`; the decoded text does
        // not); the others as their text, as 0.1.0 hashed them.
        J::Str(raw) if units && v.has_lone_surrogate() => {
            buf.push(b'\'');
            push_units(buf, &crate::json::utf16_units(raw));
        }
        J::Str(_) => {
            buf.push(b'"');
            let s = v.as_str().unwrap_or_default();
            buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
            buf.extend_from_slice(s.as_bytes());
        }
        J::Arr(a) => {
            buf.push(b'[');
            for x in a {
                feed(x, buf, false, units);
            }
            buf.push(b']');
        }
        // An object with a key holding a lone surrogate: keys as UTF-16 code
        // units (`k\ud800` is not `k\ufffd`), the last of equal keys, as
        // JavaScript keeps it.
        J::Obj(m) if units && m.iter().any(|(k, _)| key_has_lone_surrogate(k)) => {
            let mut members: Vec<(Vec<u16>, &J)> = m
                .iter()
                .rev()
                .map(|(k, x)| (crate::json::utf16_units(k), x))
                .collect();
            // Stable: of equal keys the last member comes first and stays.
            members.sort_by(|a, b| a.0.cmp(&b.0));
            members.dedup_by(|later, first| later.0 == first.0);
            let original: Vec<u16> = "original".encode_utf16().collect();
            buf.push(b'<');
            for (k, x) in members {
                if top && k == original {
                    continue;
                }
                push_units(buf, &k);
                feed(x, buf, false, units);
            }
            buf.push(b'>');
        }
        J::Obj(_) => {
            let mut keys: Vec<Cow<str>> = v.keys();
            keys.sort();
            keys.dedup();
            buf.push(b'{');
            for k in keys {
                if top && k == "original" {
                    continue;
                }
                buf.extend_from_slice(&(k.len() as u64).to_le_bytes());
                buf.extend_from_slice(k.as_bytes());
                if let Some(x) = v.get(&k) {
                    feed(x, buf, false, units);
                }
            }
            buf.push(b'}');
        }
    }
}

/// Marks the first of `msgs` with the exact provider JSON they were decoded from.
pub fn attach_original(msgs: &mut [J], p: Provider, raw: &J) {
    let hash = semantic_hash(msgs);
    let count = msgs.len();
    if let Some(first) = msgs.first_mut() {
        first.set(
            "original",
            J::obj([
                ("provider", J::s(p.name())),
                ("json", raw.text_as_string()),
                ("count", J::num_u(count)),
                ("hash", J::s(&hash)),
            ]),
        );
    }
}

/// If `msgs[0]` carries an `original` for `p` whose messages are unchanged, the
/// original JSON and how many messages it covers.
/// Whether `msgs[0]` starts a group of `p` (its `original`) that counts more
/// messages than `msgs` holds: a part of a conversation that ends inside a
/// group is encoded otherwise than the whole conversation.
pub fn original_past_end(msgs: &[J], p: Provider) -> bool {
    msgs.first()
        .and_then(|m| m.get("original"))
        .filter(|o| o.is("provider", p.name()))
        .and_then(|o| match o.get("count") {
            Some(J::Num(n)) => n.parse::<usize>().ok(),
            _ => None,
        })
        .is_some_and(|count| count > msgs.len())
}

pub fn unchanged_original(msgs: &[J], p: Provider) -> Option<(J, usize)> {
    let o = msgs.first()?.get("original")?;
    if !o.is("provider", p.name()) {
        return None;
    }
    let count: usize = match o.get("count") {
        Some(J::Num(n)) => n.parse().ok()?,
        _ => return None,
    };
    if count == 0 || count > msgs.len() {
        return None;
    }
    if msgs[1..count].iter().any(|m| m.get("original").is_some()) {
        return None;
    }
    let raw = matching_original(o, &msgs[..count])?;
    Some((raw, count))
}

/// An `INVALID_INPUT` error about the request.
pub fn bad(what: impl Into<String>) -> Error {
    Error::invalid_input(what.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_original(text: &str, hash: &str) -> J {
        with_original_json(text, hash, r#"{"role":"user","content":"x"}"#)
    }

    fn with_original_json(text: &str, hash: &str, json: &str) -> J {
        let mut m = J::parse(text).unwrap();
        m.set(
            "original",
            J::obj([
                ("provider", J::s("anthropic")),
                ("json", J::s(json)),
                ("count", J::num_u(1)),
                ("hash", J::s(hash)),
            ]),
        );
        m
    }

    #[test]
    fn a_lone_surrogate_and_its_replacement_hash_apart() {
        let lone = J::parse(r#"{"role":"user","content":"a \ud800"}"#).unwrap();
        let fixed = J::parse(r#"{"role":"user","content":"a \ufffd"}"#).unwrap();
        let spelled = J::parse(r#"{"role":"user","content":"\u0061 \uD800"}"#).unwrap();
        assert_ne!(
            semantic_hash(std::slice::from_ref(&lone)),
            semantic_hash(std::slice::from_ref(&fixed))
        );
        assert_eq!(
            semantic_hash(std::slice::from_ref(&lone)),
            semantic_hash(&[spelled])
        );
        // Strings without lone surrogates hash as 0.1.0 hashed them.
        assert_eq!(
            semantic_hash(std::slice::from_ref(&fixed)),
            hash_of(&[fixed], false)
        );
        // An original whose message was edited from the lone surrogate to
        // U+FFFD is not used.
        let edited = with_original(
            r#"{"role":"user","content":"a \ufffd"}"#,
            &semantic_hash(&[lone]),
        );
        assert!(unchanged_original(&[edited], Provider::Anthropic).is_none());
    }

    #[test]
    fn keys_with_a_lone_surrogate_hash_apart_from_their_replacement() {
        let lone = J::parse(r#"{"p\ud800":{"type":"string"}}"#).unwrap();
        let fixed = J::parse(r#"{"p\ufffd":{"type":"string"}}"#).unwrap();
        let spelled = J::parse(r#"{"p\uD800":{"type":"string"}}"#).unwrap();
        let h = |v: &J| semantic_hash(std::slice::from_ref(v));
        assert_ne!(h(&lone), h(&fixed));
        assert_eq!(h(&lone), h(&spelled));
        // Of equal keys the last counts, as in JavaScript.
        let twice = J::parse(r#"{"p\ud800":1,"p\ud800":{"type":"string"}}"#).unwrap();
        assert_eq!(h(&twice), h(&lone));
        // A message whose key was edited from the lone surrogate to U+FFFD
        // does not get its original back.
        let text = r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"f","arguments":{"k\ud83d":"v"}}]}"#;
        let edited = with_original(
            &text.replace(r"k\ud83d", r"k\ufffd"),
            &semantic_hash(&[J::parse(text).unwrap()]),
        );
        assert!(unchanged_original(&[edited], Provider::Anthropic).is_none());
        let kept = with_original(text, &semantic_hash(&[J::parse(text).unwrap()]));
        assert!(unchanged_original(&[kept], Provider::Anthropic).is_some());
    }

    #[test]
    fn an_original_hashed_by_0_1_0_is_still_used() {
        // 0.1.0 stored the provider's bytes, which held the lone surrogate
        // the message has, with the hash of the text it decoded.
        let text = r#"{"role":"user","content":"a \ud800"}"#;
        let bytes = r#"{"role":"user","content":[{"type":"text","text":"a \ud800"}]}"#;
        let old = hash_of(&[J::parse(text).unwrap()], false);
        assert_ne!(old, semantic_hash(&[J::parse(text).unwrap()]));
        let m = with_original_json(text, &old, bytes);
        let (raw, n) = unchanged_original(&[m], Provider::Anthropic).unwrap();
        assert_eq!((raw.text(), n), (bytes.to_string(), 1));
    }

    #[test]
    fn a_replacement_character_edited_to_a_lone_surrogate_does_not_get_its_bytes_back() {
        // Stored with U+FFFD (bytes and hash agree, by either rule), then
        // edited to a lone surrogate: by 0.1.0's rule the edit hashes as the
        // stored text, but the bytes hold no lone surrogate, so they are not
        // the message's.
        let stored = r#"{"role":"user","content":"a \ufffd"}"#;
        let bytes = r#"{"role":"user","content":[{"type":"text","text":"a \ufffd"}]}"#;
        let hash = semantic_hash(&[J::parse(stored).unwrap()]);
        let edited = r#"{"role":"user","content":"a \ud800"}"#;
        assert_eq!(hash, hash_of(&[J::parse(edited).unwrap()], false));
        let m = with_original_json(edited, &hash, bytes);
        assert!(unchanged_original(&[m], Provider::Anthropic).is_none());
        // Not edited, it gets them.
        let m = with_original_json(stored, &hash, bytes);
        assert!(unchanged_original(&[m], Provider::Anthropic).is_some());
    }
}
