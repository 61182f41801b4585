//! A small JSON tree that keeps what the codecs must not change: numbers as
//! their source text (`1.10` stays `1.10`, big integers keep every digit),
//! strings as their escaped source text (lone-surrogate escapes survive), and
//! object members in source order with duplicates. Written back compactly,
//! a parsed document gives the bytes `JSON.stringify` would have written.

use std::borrow::Cow;
use std::sync::Arc;

use crate::json::{self, decode_escaped, hex4, push_escaped, scan_number, scan_string, skip_ws};

/// Text shared with the document it was parsed from: a parsed tree points
/// into one copy of the input (no allocation per string), and cloning a tree
/// copies no text. The names the codecs know (keys, roles, block types) are
/// static instead: reading or comparing one never touches the document, and
/// cloning or dropping one counts no references.
#[derive(Clone)]
pub enum S {
    Known(&'static str),
    /// `buf[start..end]` (offsets of 32 bits keep a tree's nodes small; a
    /// document past 4 GiB is copied before it is parsed).
    Shared {
        buf: Handle,
        start: u32,
        end: u32,
        /// The text holds a `\\` (known when it was parsed: a string
        /// without one is never scanned to be decoded or checked).
        escaped: bool,
    },
    /// Text made by the codecs: a whole string of its own, of any length.
    Owned(Arc<String>),
}

/// A parse's own handle on the text its trees share: one `Arc` per parse
/// (per message of a session, per thread of a long array), so that cloning
/// and dropping nodes counts on the handle's counter, not on one counter for
/// the whole text that two threads converting trees of it would both write
/// on every node they copy. (Measured: with a copy of the text per thread,
/// each half of a split conversion took 154–223 ms, against 192–258 ms on
/// one shared text; with these handles 212–246 ms, on a noisier machine:
/// the gain is not told apart from the noise there.)
type Handle = Arc<Arc<String>>;

impl std::ops::Deref for S {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            S::Known(k) => k,
            S::Shared {
                buf, start, end, ..
            } => buf.get(*start as usize..*end as usize).unwrap_or(""),
            S::Owned(text) => text,
        }
    }
}

impl PartialEq for S {
    fn eq(&self, other: &S) -> bool {
        **self == **other
    }
}

impl Eq for S {}

impl PartialEq<str> for S {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for S {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for S {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::fmt::Display for S {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl From<&str> for S {
    fn from(s: &str) -> S {
        match known(s) {
            Some(k) => S::Known(k),
            None => S::owned(s.to_string()),
        }
    }
}

impl From<String> for S {
    fn from(s: String) -> S {
        match known(&s) {
            Some(k) => S::Known(k),
            None => S::owned(s),
        }
    }
}

impl S {
    fn owned(s: String) -> S {
        S::Owned(Arc::new(s))
    }

    /// `src[start..end]`: a known name, or shared with `src` (`escaped`:
    /// the text holds a `\\`).
    fn of(src: &Handle, start: usize, end: usize, escaped: bool) -> Option<S> {
        let text = src.get(start..end)?;
        Some(match known(text) {
            Some(k) if !escaped => S::Known(k),
            _ => S::Shared {
                buf: src.clone(),
                start: u32::try_from(start).ok()?,
                end: u32::try_from(end).ok()?,
                escaped,
            },
        })
    }

    /// Whether the escaped text holds a `\\` (read only for text the codecs made).
    pub(crate) fn escaped(&self) -> bool {
        match self {
            S::Known(_) => false,
            S::Shared { escaped, .. } => *escaped,
            S::Owned(text) => text.contains('\\'),
        }
    }

    /// The length of the escaped text, without reading it.
    fn raw_len(&self) -> usize {
        match self {
            S::Known(k) => k.len(),
            S::Shared { start, end, .. } => (end - start) as usize,
            S::Owned(text) => text.len(),
        }
    }
}

macro_rules! known_names {
    ($($name:literal),* $(,)?) => {
        /// The static copy of a name the codecs know.
        fn known(text: &str) -> Option<&'static str> {
            if text.len() > 24 {
                return None;
            }
            match text {
                $($name => Some($name),)*
                _ => None,
            }
        }
    };
}

// Keys of the canonical form and of the four providers' requests, and the
// values they compare: roles, block types, stop reasons, APIs, providers.
known_names![
    "api",
    "args",
    "arguments",
    "audio",
    "auto",
    "budget_tokens",
    "cacheRead",
    "cacheWrite",
    "cache_control",
    "call_id",
    "content",
    "contentString",
    "contents",
    "cost",
    "data",
    "details",
    "detail",
    "document",
    "encrypted_content",
    "error",
    "errorMessage",
    "file",
    "fileData",
    "file_data",
    "file_id",
    "filename",
    "fileUri",
    "format",
    "function",
    "functionCall",
    "functionDeclarations",
    "functionResponse",
    "function_call",
    "function_call_output",
    "id",
    "image",
    "image_url",
    "inlineData",
    "input",
    "inputString",
    "input_image",
    "input_text",
    "isError",
    "media_type",
    "message",
    "messages",
    "mimeType",
    "model",
    "name",
    "original",
    "output",
    "output_text",
    "parts",
    "provider",
    "raw",
    "reasoning",
    "redacted",
    "redacted_thinking",
    "refusal",
    "response",
    "responseId",
    "role",
    "signature",
    "source",
    "stopReason",
    "summary",
    "summary_text",
    "system",
    "text",
    "textSignature",
    "thinking",
    "thinkingSignature",
    "thought",
    "thoughtSignature",
    "timestamp",
    "toolCall",
    "toolCallId",
    "toolName",
    "tool_call_id",
    "tool_calls",
    "tool_use",
    "tool_use_id",
    "tool_result",
    "tools",
    "total",
    "totalTokens",
    "type",
    "url",
    "usage",
    "user",
    "vendor",
    "assistant",
    "toolResult",
    "developer",
    "tool",
    "unknown",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
    "base64",
    "stop",
    "toolUse",
    "length",
    "aborted",
    "end_turn",
    "anthropic",
    "openai",
    "google",
    "anthropic-messages",
    "openai-completions",
    "openai-responses",
    "google-generative-ai",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "",
];

/// An object key: the escaped text between the quotes.
pub type Key = S;

/// A JSON value with source-exact scalars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum J {
    Null,
    Bool(bool),
    /// The number's source text (shared with the document it was parsed from).
    Num(S),
    /// The escaped text between the quotes (shared: cloning a tree copies no text).
    Str(S),
    Arr(Vec<J>),
    /// Members in order; keys are escaped text as in the source.
    Obj(Vec<(Key, J)>),
}

/// Why text is not JSON: the byte offset and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub message: String,
}

impl J {
    /// Parses one JSON document (depth limit 512, as JSON.parse-compatible input).
    pub fn parse(text: &str) -> Result<J, ParseError> {
        J::parse_owned(text.to_string())
    }

    /// [`J::parse`] of text the tree may keep: strings point into it, nothing is copied.
    pub fn parse_owned(text: String) -> Result<J, ParseError> {
        let end = text.len();
        J::parse_shared(&Arc::new(text), 0, end)
    }

    /// [`J::parse`] of `buf[start..end]`: the tree shares `buf` (a session's
    /// text, say) instead of copying the document.
    pub fn parse_shared(buf: &Arc<String>, start: usize, end: usize) -> Result<J, ParseError> {
        let Some(doc) = buf.get(start..end) else {
            return Err(ParseError {
                offset: 0,
                message: "the document is not a part of its text".into(),
            });
        };
        if u32::try_from(end).is_err() {
            if u32::try_from(doc.len()).is_err() {
                return Err(ParseError {
                    offset: 0,
                    message: "a document of 4 GiB or more".into(),
                });
            }
            // Offsets past 4 GiB: a copy of the document alone.
            return J::parse_owned(doc.to_string());
        }
        let b = &buf.as_bytes()[..end];
        // One pass that builds and checks; on failure the validating scanner
        // says where and why.
        if let Some((v, after)) = Builder::new(b, buf).value(skip_ws(b, start), 0)
            && skip_ws(b, after) == end
        {
            return Ok(v);
        }
        match json::validate(doc.as_bytes(), json::DEFAULT_MAX_DEPTH) {
            Err(e) => Err(ParseError {
                offset: e.at(),
                message: e.describe(),
            }),
            Ok(_) => Err(ParseError {
                offset: 0,
                message: "invalid JSON".into(),
            }),
        }
    }

    /// [`J::parse_owned`] on up to `threads` threads when the document is a
    /// long array: each thread builds the items from a place where one seems
    /// to start, and a thread's items are used only when the items before
    /// them end exactly there (so the tree, and any error, are the ones one
    /// thread gives).
    pub fn parse_owned_threads(text: String, threads: usize) -> Result<J, ParseError> {
        J::parse_shared_threads(&Arc::new(text), threads)
    }

    #[cfg(test)]
    fn parse_threads_min(text: String, threads: usize, min: usize) -> Result<J, ParseError> {
        J::parse_shared_threads_min(&Arc::new(text), threads, min)
    }

    /// [`J::parse_owned_threads`] of text that is kept shared (so that it
    /// can be parsed again).
    pub fn parse_shared_threads(buf: &Arc<String>, threads: usize) -> Result<J, ParseError> {
        /// Below this many bytes a thread of its own does not pay.
        const MIN_PER_THREAD: usize = 4 << 20;
        J::parse_shared_threads_min(buf, threads, MIN_PER_THREAD)
    }

    fn parse_shared_threads_min(
        buf: &Arc<String>,
        threads: usize,
        min: usize,
    ) -> Result<J, ParseError> {
        let end = buf.len();
        let threads = threads.min(end / min.max(1));
        if threads < 2 || u32::try_from(end).is_err() {
            return J::parse_shared(buf, 0, end);
        }
        let b = buf.as_bytes();
        let open = skip_ws(b, 0);
        if b.get(open) != Some(&b'[') {
            return J::parse_shared(buf, 0, end);
        }
        let mut starts = vec![skip_ws(b, open + 1)];
        for k in 1..threads {
            let from = (end / threads * k).max(starts[starts.len() - 1] + 1);
            match item_start(b, from, end / threads * (k + 1)) {
                Some(at) => starts.push(at),
                None => break,
            }
        }
        if starts.len() < 2 {
            return J::parse_shared(buf, 0, end);
        }
        let later: Vec<usize> = (1..starts.len()).collect();
        let (first, later) = crate::threads::on_threads(
            "forkpoint-parse",
            &later,
            || items_from(b, buf, &starts, 0),
            |&k| items_from(b, buf, &starts, k),
        );
        let mut pieces: Vec<Option<Items>> = std::iter::once(first)
            .chain(later.into_iter().map(Option::flatten))
            .collect();
        let mut items = Vec::new();
        let mut at = 0;
        while let Some(piece) = pieces.get_mut(at).and_then(Option::take) {
            items.extend(piece.items);
            match piece.end {
                ItemsEnd::At(next) => at = next,
                ItemsEnd::Closed(after) if skip_ws(b, after) == end => {
                    return Ok(J::Arr(items));
                }
                ItemsEnd::Closed(_) => break,
            }
        }
        // Not JSON (or a piece failed): one thread says where and why.
        drop(items);
        drop(pieces);
        J::parse_shared(buf, 0, end)
    }

    /// A string value from plain text.
    pub fn s(text: &str) -> J {
        let mut out = String::with_capacity(text.len());
        push_escaped(&mut out, text);
        J::Str(out.into())
    }

    /// This value's JSON text as a JSON string (OpenAI's `arguments`): written
    /// once and escaped once, the value neither cloned nor copied.
    pub fn text_as_string(&self) -> J {
        let text = self.text();
        let mut out = String::with_capacity(text.len() + text.len() / 8 + 2);
        push_escaped(&mut out, &text);
        J::Str(out.into())
    }

    /// An object from members with plain keys.
    pub fn obj<const N: usize>(members: [(&str, J); N]) -> J {
        J::Obj(members.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    pub fn num_u(n: usize) -> J {
        J::Num(n.to_string().into())
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(m) => m.iter().rev().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The member `key`, mutable.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut J> {
        match self {
            J::Obj(m) => m
                .iter_mut()
                .rev()
                .find(|(k, _)| key_eq(k, key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets (replaces in place, or appends) the member `key`.
    pub fn set(&mut self, key: &str, value: J) {
        if let J::Obj(m) = self {
            if let Some(slot) = m.iter_mut().rev().find(|(k, _)| key_eq(k, key)) {
                slot.1 = value;
            } else {
                m.push((key.into(), value));
            }
        }
    }

    /// Removes every member `key`; returns the last one.
    pub fn remove(&mut self, key: &str) -> Option<J> {
        if let J::Obj(m) = self {
            let mut out = None;
            m.retain_mut(|(k, v)| {
                if key_eq(k, key) {
                    out = Some(std::mem::replace(v, J::Null));
                    false
                } else {
                    true
                }
            });
            out
        } else {
            None
        }
    }

    /// The decoded text of a string value (lone surrogates become U+FFFD).
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        match self {
            J::Str(raw) if raw.escaped() => Some(Cow::Owned(decode_escaped(raw))),
            J::Str(raw) => Some(Cow::Borrowed(&**raw)),
            _ => None,
        }
    }

    /// The string member `key`, decoded.
    pub fn str_of(&self, key: &str) -> Option<Cow<'_, str>> {
        self.get(key).and_then(J::as_str)
    }

    /// Whether the member `key` is the string `value`.
    pub fn is(&self, key: &str, value: &str) -> bool {
        self.str_of(key).is_some_and(|s| s == value)
    }

    pub fn as_arr(&self) -> Option<&Vec<J>> {
        match self {
            J::Arr(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            J::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn is_obj(&self) -> bool {
        matches!(self, J::Obj(_))
    }

    /// Keys of an object, decoded.
    pub fn keys(&self) -> Vec<Cow<'_, str>> {
        match self {
            J::Obj(m) => m.iter().map(|(k, _)| unescape(k)).collect(),
            _ => Vec::new(),
        }
    }

    /// The compact JSON text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// Appends the compact JSON text.
    pub fn write(&self, out: &mut String) {
        match self {
            J::Null => out.push_str("null"),
            J::Bool(true) => out.push_str("true"),
            J::Bool(false) => out.push_str("false"),
            J::Num(n) => out.push_str(n),
            J::Str(s) => {
                out.push('"');
                out.push_str(s);
                out.push('"');
            }
            J::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    push_member_key(out, i, k);
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// [`J::write`], with an object's long array member (a request's
    /// conversation) written on up to `threads` threads: the same text.
    pub fn write_threads(&self, out: &mut String, threads: usize) {
        /// Below this many items one thread writes the list.
        const MIN_ITEMS: usize = 4096;
        let J::Obj(members) = self else {
            return self.write(out);
        };
        let long = members
            .iter()
            .position(|(_, v)| matches!(v, J::Arr(a) if a.len() >= MIN_ITEMS));
        let Some(long) = long.filter(|_| threads > 1) else {
            return self.write(out);
        };
        out.push('{');
        for (i, (k, v)) in members.iter().enumerate() {
            push_member_key(out, i, k);
            match v {
                J::Arr(items) if i == long => write_items_threads(items, out, threads),
                v => v.write(out),
            }
        }
        out.push('}');
    }

    /// The JSON text indented by two spaces (as `JSON.stringify(v, null, 2)`).
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0);
        out
    }

    fn write_pretty(&self, out: &mut String, depth: usize) {
        let pad = |out: &mut String, d: usize| {
            out.push('\n');
            for _ in 0..d {
                out.push_str("  ");
            }
        };
        match self {
            J::Arr(items) if !items.is_empty() => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    v.write_pretty(out, depth + 1);
                }
                pad(out, depth);
                out.push(']');
            }
            J::Obj(members) if !members.is_empty() => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    out.push('"');
                    out.push_str(k);
                    out.push_str("\": ");
                    v.write_pretty(out, depth + 1);
                }
                pad(out, depth);
                out.push('}');
            }
            other => other.write(out),
        }
    }

    /// The value at an RFC 6901 JSON Pointer (`/a/0/b`).
    pub fn pointer(&self, ptr: &str) -> Option<&J> {
        if ptr.is_empty() {
            return Some(self);
        }
        let mut cur = self;
        for raw in ptr.strip_prefix('/')?.split('/') {
            let tok = raw.replace("~1", "/").replace("~0", "~");
            cur = match cur {
                J::Obj(_) => cur.get(&tok)?,
                J::Arr(a) => a.get(tok.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// Whether a string value or an object key holds an escape of a lone
    /// UTF-16 surrogate.
    pub fn has_lone_surrogate(&self) -> bool {
        match self {
            J::Str(raw) => raw.escaped() && has_lone(raw),
            J::Arr(a) => a.iter().any(J::has_lone_surrogate),
            J::Obj(m) => m
                .iter()
                .any(|(k, v)| key_has_lone_surrogate(k) || v.has_lone_surrogate()),
            _ => false,
        }
    }

    /// [`J::replace_lone_surrogates`], leaving alone the members for which
    /// `keep(object, key)` is true (opaque values such as signatures).
    pub fn replace_lone_surrogates_except(&mut self, keep: &dyn Fn(&J, &str) -> bool) -> usize {
        match self {
            J::Arr(a) => a
                .iter_mut()
                .map(|x| x.replace_lone_surrogates_except(keep))
                .sum(),
            J::Obj(_) => {
                // Member by member, without a list of answers made first:
                // `keep` is asked with the members before already fixed (it
                // reads keys and decoded values, which a fix leaves alike:
                // a lone surrogate reads as U+FFFD before and after), and the
                // keys are fixed after every question is asked.
                let mut n = 0;
                let mut at = 0;
                loop {
                    let J::Obj(m) = &*self else { return 0 };
                    let Some((k, _)) = m.get(at) else { break };
                    let kept = keep(self, &unescape(k));
                    let J::Obj(m) = self else { return 0 };
                    if !kept {
                        n += m[at].1.replace_lone_surrogates_except(keep);
                    }
                    at += 1;
                }
                let J::Obj(m) = self else { return 0 };
                let keys: usize = m.iter_mut().map(|(k, _)| fix_lone(k)).sum();
                if keys > 0 {
                    last_of_each_key(m);
                }
                n + keys
            }
            other => other.replace_lone_surrogates(),
        }
    }

    /// Replaces lone-surrogate escapes in every string with U+FFFD; returns how many.
    pub fn replace_lone_surrogates(&mut self) -> usize {
        match self {
            J::Str(raw) => fix_lone(raw),
            J::Arr(a) => a.iter_mut().map(J::replace_lone_surrogates).sum(),
            J::Obj(m) => {
                let keys: usize = m.iter_mut().map(|(k, _)| fix_lone(k)).sum();
                if keys > 0 {
                    last_of_each_key(m);
                }
                keys + m
                    .iter_mut()
                    .map(|(_, v)| v.replace_lone_surrogates())
                    .sum::<usize>()
            }
            _ => 0,
        }
    }
}

/// Keys that became alike when their lone surrogates were replaced (`k\ud800`
/// and `k\udc00` both `k\ufffd`): the last member of each is kept, the one
/// [`J::get`] and every JSON reader that allows repeats would take, so the
/// object sent has each key once.
fn last_of_each_key(m: &mut Vec<(Key, J)>) {
    let mut seen = std::collections::HashSet::new();
    let mut keep: Vec<bool> = m
        .iter()
        .rev()
        .map(|(k, _)| seen.insert(unescape(k).into_owned()))
        .collect();
    keep.reverse();
    let mut it = keep.into_iter();
    m.retain(|_| it.next().unwrap_or(true));
}

/// Replaces lone-surrogate escapes in a string's or a key's escaped text
/// with U+FFFD; returns how many.
fn fix_lone(raw: &mut S) -> usize {
    if !raw.escaped() || !has_lone(raw) {
        return 0;
    }
    let (fixed, found) = lone_surrogates(raw);
    if found {
        let n = count_lone(raw);
        *raw = fixed.into();
        n
    } else {
        0
    }
}

fn unescape(k: &S) -> Cow<'_, str> {
    if k.escaped() {
        Cow::Owned(decode_escaped(k))
    } else {
        Cow::Borrowed(k)
    }
}

pub(crate) fn key_eq(raw: &S, key: &str) -> bool {
    // Lengths first: a key of another length is not read (an escaped key is
    // longer than its text).
    let n = raw.raw_len();
    (n == key.len() && **raw == *key)
        || (n > key.len() && raw.escaped() && decode_escaped(raw) == key)
}

/// The escaped text with lone-surrogate escapes replaced by `\ufffd`, and whether any was found.
/// Whether an object key (escaped text) holds an escape of a lone surrogate.
pub(crate) fn key_has_lone_surrogate(k: &str) -> bool {
    has_lone(k)
}

/// Whether escaped text holds an escape of a lone surrogate: what
/// [`lone_surrogates`] finds, read the same way (escape by escape from the
/// start, on any text), without making the fixed text: most text has none.
fn has_lone(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let Some(k) = memchr::memchr(b'\\', &b[i..]) else {
            break;
        };
        i += k;
        if b.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let cu = b.get(i + 2..).and_then(hex4).unwrap_or(0);
        if (0xD800..0xDC00).contains(&cu)
            && b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && b.get(i + 8..)
                .and_then(hex4)
                .is_some_and(|lo| (0xDC00..0xE000).contains(&lo))
        {
            i += 12;
        } else if (0xD800..0xE000).contains(&cu) {
            return true;
        } else {
            i += 6;
        }
    }
    false
}

fn lone_surrogates(raw: &str) -> (String, bool) {
    let b = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut found = false;
    let mut i = 0;
    let mut from = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let cu = b.get(i + 2..).and_then(hex4).unwrap_or(0);
        let is_pair_hi = (0xD800..0xDC00).contains(&cu)
            && b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && b.get(i + 8..)
                .and_then(hex4)
                .is_some_and(|lo| (0xDC00..0xE000).contains(&lo));
        if is_pair_hi {
            i += 12;
        } else if (0xD800..0xE000).contains(&cu) {
            out.push_str(&raw[from..i]);
            out.push_str("\\ufffd");
            found = true;
            i += 6;
            from = i;
        } else {
            i += 6;
        }
    }
    out.push_str(&raw[from..]);
    (out, found)
}

fn count_lone(raw: &str) -> usize {
    let (fixed, _) = lone_surrogates(raw);
    fixed.matches("\\ufffd").count() - raw.matches("\\ufffd").count()
}

/// Writes member `i`'s key of an object being written: a comma before all
/// but the first, the (escaped) key quoted, a colon.
pub(crate) fn push_member_key(out: &mut String, i: usize, key: &str) {
    if i > 0 {
        out.push(',');
    }
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
}

/// `items` as a JSON array, the later parts written on threads of their own
/// (each into a text of its own, appended in order).
fn write_items_threads(items: &[J], out: &mut String, threads: usize) {
    let write_list = |list: &[J], out: &mut String| {
        for (i, v) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            v.write(out);
        }
    };
    let parts: Vec<&[J]> = items.chunks(items.len().div_ceil(threads)).collect();
    // The room `out` has left is about the list's size.
    let each = out.capacity().saturating_sub(out.len()) / parts.len();
    out.push('[');
    let ((), later) = crate::threads::on_threads(
        "forkpoint-write",
        &parts[1..],
        || write_list(parts[0], out),
        |part| {
            let mut text = String::with_capacity(each);
            write_list(part, &mut text);
            text
        },
    );
    for (part, text) in parts[1..].iter().zip(later) {
        out.push(',');
        match text {
            Some(text) => out.push_str(&text),
            // No thread could be started: written here.
            None => write_list(part, out),
        }
    }
    out.push(']');
}

/// Items of an array built from one place on ([`J::parse_owned_threads`]).
struct Items {
    items: Vec<J>,
    end: ItemsEnd,
}

enum ItemsEnd {
    /// The next item starts at `starts[k]`: piece `k` goes on from there.
    At(usize),
    /// The array's `]`; the index after it.
    Closed(usize),
}

/// Where an item of an array seems to start at or after `from` (before
/// `until`): an object after `},` whose first key starts with a letter. That
/// `"` opens a string (a closing one is followed by `:`, `,`, `}`, `]` or a
/// space), so the `{` before it is outside any string and, after a comma,
/// an array's item. Its depth is not known: [`J::parse_owned_threads`] uses
/// the place only when the items before it end exactly there.
fn item_start(b: &[u8], from: usize, until: usize) -> Option<usize> {
    let until = until.min(b.len());
    let mut i = from;
    while i + 4 < until {
        let at = i + b.get(i..until)?.iter().position(|&c| c == b'}')?;
        if b.get(at + 1..at + 4) == Some(b",{\"")
            && b.get(at + 4).is_some_and(u8::is_ascii_alphabetic)
        {
            return Some(at + 2);
        }
        i = at + 1;
    }
    None
}

/// Builds the items from `starts[k]` on (depth 1, as inside the document's
/// array) until the next item starts at a later `starts` place or the array
/// closes; `None` where the text is not JSON from there.
fn items_from(b: &[u8], src: &Arc<String>, starts: &[usize], k: usize) -> Option<Items> {
    let mut i = *starts.get(k)?;
    let mut next = k + 1;
    let mut items = Vec::new();
    let mut builder = Builder::new(b, src);
    if k == 0 && b.get(i) == Some(&b']') {
        return Some(Items {
            items,
            end: ItemsEnd::Closed(i + 1),
        });
    }
    loop {
        let (v, after) = builder.value(i, 1)?;
        items.push(v);
        i = skip_ws(b, after);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b']' => {
                return Some(Items {
                    items,
                    end: ItemsEnd::Closed(i + 1),
                });
            }
            _ => return None,
        }
        while starts.get(next).is_some_and(|&s| s < i) {
            next += 1;
        }
        if starts.get(next) == Some(&i) {
            return Some(Items {
                items,
                end: ItemsEnd::At(next),
            });
        }
    }
}

/// Builds trees from one text. Members and items are gathered on stacks
/// shared by the whole document and moved into a list of exactly their
/// number when their object or array closes: no list grows by doubling, so
/// a tree takes less memory (and fewer fresh pages) and no list is copied
/// as it grows.
struct Builder<'a> {
    b: &'a [u8],
    src: Handle,
    members: Vec<(Key, J)>,
    items: Vec<J>,
}

impl<'a> Builder<'a> {
    fn new(b: &'a [u8], src: &Arc<String>) -> Self {
        Builder {
            b,
            src: Arc::new(src.clone()),
            members: Vec::new(),
            items: Vec::new(),
        }
    }

    fn key_or_str(&self, start: usize, end: usize, escaped: bool) -> Option<S> {
        S::of(&self.src, start, end, escaped)
    }

    /// Builds the value at `i` (whitespace already skipped); returns it and
    /// the index after it, or `None` if the input is not JSON there (or
    /// nests deeper than the limit). On `None` the stacks may hold leftovers:
    /// the builder is not used again.
    fn value(&mut self, i: usize, depth: usize) -> Option<(J, usize)> {
        let b = self.b;
        match b.get(i)? {
            b'{' => {
                if depth >= json::DEFAULT_MAX_DEPTH {
                    return None;
                }
                let mut i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    return Some((J::Obj(Vec::new()), i + 1));
                }
                let base = self.members.len();
                loop {
                    if b.get(i) != Some(&b'"') {
                        return None;
                    }
                    let (end, escaped) = scan_string(b, i).ok()?;
                    let key: Key = self.key_or_str(i + 1, end - 1, escaped)?;
                    let colon = skip_ws(b, end);
                    if b.get(colon) != Some(&b':') {
                        return None;
                    }
                    let (v, after) = self.value(skip_ws(b, colon + 1), depth + 1)?;
                    self.members.push((key, v));
                    i = skip_ws(b, after);
                    match b.get(i)? {
                        b',' => i = skip_ws(b, i + 1),
                        b'}' => {
                            let members = self.members.drain(base..).collect();
                            return Some((J::Obj(members), i + 1));
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                if depth >= json::DEFAULT_MAX_DEPTH {
                    return None;
                }
                let mut i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    return Some((J::Arr(Vec::new()), i + 1));
                }
                let base = self.items.len();
                loop {
                    let (v, after) = self.value(i, depth + 1)?;
                    self.items.push(v);
                    i = skip_ws(b, after);
                    match b.get(i)? {
                        b',' => i = skip_ws(b, i + 1),
                        b']' => {
                            let items = self.items.drain(base..).collect();
                            return Some((J::Arr(items), i + 1));
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => {
                let (end, escaped) = scan_string(b, i).ok()?;
                Some((J::Str(self.key_or_str(i + 1, end - 1, escaped)?), end))
            }
            b't' => (b.get(i..i + 4)? == b"true").then_some((J::Bool(true), i + 4)),
            b'f' => (b.get(i..i + 5)? == b"false").then_some((J::Bool(false), i + 5)),
            b'n' => (b.get(i..i + 4)? == b"null").then_some((J::Null, i + 4)),
            _ => {
                let end = scan_number(b, i).ok()?;
                self.src.get(i..end)?;
                let num = S::Shared {
                    buf: self.src.clone(),
                    start: u32::try_from(i).ok()?,
                    end: u32::try_from(end).ok()?,
                    escaped: false,
                };
                Some((J::Num(num), end))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_known_from_the_parse() {
        let v = J::parse(r#"{"a\u0062":"x\"y","k":"plain","r\u006fle":"\ud800"}"#).expect("json");
        assert_eq!(v.str_of("ab").as_deref(), Some("x\"y"));
        assert!(matches!(v.str_of("k"), Some(Cow::Borrowed("plain"))));
        assert_eq!(v.str_of("role").as_deref(), Some("\u{fffd}"));
        assert!(v.has_lone_surrogate());
        let J::Obj(m) = &v else { panic!() };
        assert!(
            m[0].0.escaped()
                && !m[1].0.escaped()
                && !m[1].1.clone().as_str().is_some_and(|s| s.contains('\\'))
        );
        assert!(S::owned("a\\nb".into()).escaped() && !S::owned("ab".into()).escaped());
    }

    #[test]
    fn round_trips_source_exact() {
        for t in [
            r#"{"a":1.10,"b":[1e2,123456789012345678901234567890],"a":2,"c":"\ud83d x \u00e9","d":null}"#,
            r#"[]"#,
            r#"{}"#,
            r#""x""#,
        ] {
            assert_eq!(J::parse(t).unwrap().text(), t);
        }
        let spaced = J::parse(" { \"a\" : [ 1 , true ] } ").unwrap();
        assert_eq!(spaced.text(), r#"{"a":[1,true]}"#);
        assert_eq!(spaced.get("a").unwrap().as_arr().unwrap().len(), 2);
    }

    #[test]
    fn the_quick_lone_surrogate_check_agrees_with_the_fix() {
        for t in [
            r"plain",
            r"\ud800",
            r"\\ud800",
            r"\\\ud800",
            r"\\\\ud800",
            r"\ud83d\ude00",
            r"\ud83d\ude00\ud83d",
            r"\ude00\ud83d",
            r"\ud83d\\ude00",
            r"\u001b[0m \u00e9 \uDBFF\uDFFF",
            r"\uDBFF",
            r"x\\u\u0041\ud800",
            r"\u",
            r"\ud83d\u",
            r"\u\ud800",
            r"\u000\\ud800",
            r"\u00\ud800",
            r"\\",
            r"x\",
        ] {
            assert_eq!(has_lone(t), lone_surrogates(t).1, "{t}");
        }
    }

    #[test]
    fn lone_surrogates_found_and_replaced() {
        let mut v = J::parse(r#"["ok \ud83d\ude00", "bad \ud83d x", "\udc00"]"#).unwrap();
        assert!(v.has_lone_surrogate());
        assert_eq!(v.replace_lone_surrogates(), 2);
        assert_eq!(v.text(), r#"["ok \ud83d\ude00","bad \ufffd x","\ufffd"]"#);
        assert!(!v.has_lone_surrogate());
    }

    #[test]
    fn errors_have_offsets() {
        let e = J::parse("{\"a\":}").unwrap_err();
        assert_eq!(e.offset, 5);
    }
}

#[cfg(test)]
mod size {
    use super::J;

    /// A message list whose items hold places that look like an item's start
    /// at other depths (content blocks, arguments holding messages) and in
    /// strings (escaped).
    fn message_list(n: usize) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| match i % 4 {
                0 => format!(r#"{{"role":"user","content":"hi {i} \"}},{{\"role\":1"}}"#),
                1 => format!(
                    r#"{{"role":"assistant","content":[{{"type":"text","text":"a"}},{{"type":"toolCall","id":"c{i}","arguments":{{"log":[{{"role":"x"}},{{"role":"y"}}]}}}}],"n":{i}.50}}"#
                ),
                2 => format!(r#" {{ "role" : "toolResult", "toolCallId":"c{i}", "content":[] }}"#),
                _ => format!(r#"{{"role":"user","content":[{{"type":"text","text":"\ud83d\ude00 {i}"}}]}}"#),
            })
            .collect();
        format!(" [{}]\n", items.join(",\n"))
    }

    #[test]
    fn parsed_on_threads_is_the_same_tree() {
        for n in [0, 1, 2, 3, 7, 40, 401] {
            let text = message_list(n);
            let one = J::parse(&text).expect("json");
            for threads in [2, 3, 8, 64] {
                let many = J::parse_threads_min(text.clone(), threads, 1).expect("json");
                assert_eq!(many, one, "{n} items on {threads} threads");
            }
        }
        // Not an array, and not JSON: the errors one thread gives.
        let obj = format!(r#"{{"messages":{}}}"#, message_list(40));
        assert_eq!(J::parse_threads_min(obj.clone(), 4, 1), J::parse(&obj));
        let good = message_list(40);
        for cut in [1, good.len() / 3, good.len() / 2, good.len() - 3] {
            // An item's `{` (outside strings) made `#`.
            let at = cut + good[cut..].find("{\"role\":\"").unwrap_or(0);
            let mut bad = good.clone();
            bad.replace_range(at..at + 1, "#");
            let want = J::parse(&bad).expect_err("not JSON");
            for threads in [2, 5] {
                assert_eq!(
                    J::parse_threads_min(bad.clone(), threads, 1),
                    Err(want.clone())
                );
            }
        }
        let unclosed = good.trim_end().trim_end_matches(']').to_string();
        assert_eq!(
            J::parse_threads_min(unclosed.clone(), 3, 1),
            J::parse(&unclosed)
        );
        let trailing = format!("{good} x");
        assert!(J::parse_threads_min(trailing, 3, 1).is_err());
    }

    #[test]
    fn written_on_threads_is_the_same_text() {
        let list = J::parse(&message_list(9000)).expect("json");
        let request = J::obj([
            ("model", J::s("m")),
            ("messages", list),
            ("tools", J::Arr(vec![J::s("t")])),
        ]);
        let want = request.text();
        for threads in [1, 2, 3, 7] {
            let mut out = String::with_capacity(want.len());
            request.write_threads(&mut out, threads);
            assert_eq!(out, want, "{threads} threads");
        }
        let mut out = String::new();
        J::s("x").write_threads(&mut out, 2);
        assert_eq!(out, "\"x\"");
    }

    #[test]
    fn nodes_stay_small() {
        // Every pass of a conversion walks these: their size is its speed.
        assert_eq!(std::mem::size_of::<super::S>(), 24);
        assert_eq!(std::mem::size_of::<super::J>(), 32);
    }
}
