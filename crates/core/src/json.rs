//! A validating JSON scanner that reports byte spans instead of building values.
//!
//! Session lines are kept as the bytes they were written as (so unknown fields,
//! number spellings and escapes survive a round trip), and only the few fields
//! forkpoint needs are located. This scanner validates a whole document and
//! hands back spans; it never allocates a tree.
//!
//! It accepts what `JSON.parse` accepts: RFC 8259 JSON, including `\uD800`-style
//! lone surrogate escapes (which `JSON.stringify` writes for lone surrogates).
//! Work is iterative, so hostile nesting cannot overflow the stack; a depth
//! limit still bounds it. The input must already be valid UTF-8 (callers check
//! with `std::str::from_utf8`, which is faster than checking here).

use std::borrow::Cow;

/// Default limit on nesting depth (objects and arrays).
pub const DEFAULT_MAX_DEPTH: usize = 512;

/// The kind of a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    True,
    False,
    Null,
}

/// A value's byte span in the scanned buffer. For strings the span includes the quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
    /// For strings: the literal contains a backslash escape.
    pub escaped: bool,
}

impl Value {
    /// The raw text of the value.
    pub fn raw<'a>(&self, src: &'a str) -> &'a str {
        src.get(self.start..self.end).unwrap_or("")
    }

    /// For a string value: the text between the quotes, still escaped.
    pub fn inner<'a>(&self, src: &'a str) -> &'a str {
        if self.kind == Kind::String && self.end >= self.start + 2 {
            src.get(self.start + 1..self.end - 1).unwrap_or("")
        } else {
            ""
        }
    }

    /// For a string value used as an entry id: the decoded string, or — when it
    /// holds lone surrogates or starts with NUL — its [`id_key`] form, so that ids
    /// compare as JavaScript compares them (UTF-16 code units).
    pub fn id_str<'a>(&self, src: &'a str) -> Option<Cow<'a, str>> {
        if self.kind != Kind::String {
            return None;
        }
        let inner = self.inner(src);
        if self.escaped {
            Some(Cow::Owned(id_key(inner)))
        } else {
            Some(Cow::Borrowed(inner))
        }
    }

    /// For a string value: the decoded string (lone surrogates become U+FFFD).
    pub fn str<'a>(&self, src: &'a str) -> Option<Cow<'a, str>> {
        if self.kind != Kind::String {
            return None;
        }
        let inner = self.inner(src);
        if self.escaped {
            Some(Cow::Owned(decode_escaped(inner)))
        } else {
            Some(Cow::Borrowed(inner))
        }
    }

    /// JavaScript truthiness of the value (`""`, `0`, `false`, `null` are falsy).
    pub fn truthy(&self, src: &str) -> bool {
        match self.kind {
            Kind::Null | Kind::False => false,
            Kind::String => self.end > self.start + 2,
            Kind::Number => self
                .raw(src)
                .parse::<f64>()
                .map(|n| n != 0.0 && !n.is_nan())
                .unwrap_or(true),
            _ => true,
        }
    }
}

/// Why a document is not valid JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Invalid syntax at byte `at`.
    Syntax { at: usize, expected: &'static str },
    /// Nesting deeper than the limit at byte `at`.
    Depth { at: usize, limit: usize },
}

impl JsonError {
    /// Byte position of the problem.
    pub fn at(&self) -> usize {
        match self {
            JsonError::Syntax { at, .. } | JsonError::Depth { at, .. } => *at,
        }
    }

    /// Human-readable description.
    pub fn describe(&self) -> String {
        match self {
            JsonError::Syntax { at, expected } => {
                format!("invalid JSON at byte {at} of the line: expected {expected}")
            }
            JsonError::Depth { at, limit } => {
                format!("JSON nested deeper than the limit of {limit} at byte {at} of the line")
            }
        }
    }
}

type Res<T> = Result<T, JsonError>;

#[inline]
fn syntax(at: usize, expected: &'static str) -> JsonError {
    JsonError::Syntax { at, expected }
}

/// Index of the first non-whitespace byte at or after `i`.
#[inline]
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// A mask with the high bit of each byte of `w` that is `"`, `\\` or a control
/// character (< 0x20) set; 0 when there is none. Bytes after the first such
/// byte (in memory order) may be flagged wrongly (borrows carry upward), so
/// only the lowest set bit counts.
#[inline(always)]
fn string_special_mask(w: u64) -> u64 {
    let q = w ^ (ONES * b'"' as u64);
    let bs = w ^ (ONES * b'\\' as u64);
    let zero_q = q.wrapping_sub(ONES) & !q;
    let zero_bs = bs.wrapping_sub(ONES) & !bs;
    let ctrl = w.wrapping_sub(ONES * 0x20) & !w;
    (zero_q | zero_bs | ctrl) & HIGH
}

/// Whether any byte of `w` is `"`, `\\` or a control character (< 0x20).
#[cfg(test)]
fn has_string_special(w: u64) -> bool {
    string_special_mask(w) != 0
}

/// The index of the first `"`, `\\` or control character at or after `i`
/// (`b.len()` when there is none). Eight bytes at a time; the position inside
/// a word comes from its mask, so the bytes before a special one are not
/// looked at again.
#[inline(always)]
fn find_string_special(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..i + 16) {
        let (lo, hi) = chunk.split_at(8);
        let (Ok(lo), Ok(hi)) = (<[u8; 8]>::try_from(lo), <[u8; 8]>::try_from(hi)) else {
            break;
        };
        let m = string_special_mask(u64::from_le_bytes(lo));
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        let m = string_special_mask(u64::from_le_bytes(hi));
        if m != 0 {
            return i + 8 + (m.trailing_zeros() / 8) as usize;
        }
        i += 16;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// Scans a string literal starting at the opening quote `b[i]`. Returns the index
/// after the closing quote and whether the literal holds escapes.
pub fn scan_string(b: &[u8], i: usize) -> Res<(usize, bool)> {
    if b.get(i) != Some(&b'"') {
        return Err(syntax(i, "'\"'"));
    }
    let mut i = i + 1;
    let mut escaped = false;
    loop {
        i = find_string_special(b, i);
        match b.get(i) {
            None => return Err(syntax(i, "closing '\"' of a string")),
            Some(b'"') => return Ok((i + 1, escaped)),
            Some(b'\\') => {
                escaped = true;
                i = escape_end(b, i)?;
            }
            Some(_) => {
                return Err(syntax(i, "no raw control characters inside a string"));
            }
        }
    }
}

/// The index after the escape sequence whose backslash is at `b[i]`.
#[inline]
fn escape_end(b: &[u8], i: usize) -> Res<usize> {
    match b.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            for k in 2..6 {
                match b.get(i + k) {
                    Some(c) if c.is_ascii_hexdigit() => {}
                    _ => return Err(syntax(i + k, "four hex digits after \\u")),
                }
            }
            Ok(i + 6)
        }
        _ => Err(syntax(i + 1, "a valid escape character after '\\'")),
    }
}

/// Scans a number starting at `b[i]`; returns the index after it.
pub fn scan_number(b: &[u8], mut i: usize) -> Res<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            i += 1;
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        _ => return Err(syntax(i, "a digit")),
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return Err(syntax(i, "a digit after '.'"));
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return Err(syntax(i, "a digit in the exponent"));
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    Ok(i)
}

fn scan_literal(b: &[u8], i: usize, lit: &'static [u8], expected: &'static str) -> Res<usize> {
    if b.get(i..i + lit.len()) == Some(lit) {
        Ok(i + lit.len())
    } else {
        Err(syntax(i, expected))
    }
}

/// A scalar value at `i` (which must not be whitespace); containers are not handled here.
fn scan_scalar(b: &[u8], i: usize) -> Res<Value> {
    let (end, kind, escaped) = match b.get(i) {
        Some(b'"') => {
            let (end, esc) = scan_string(b, i)?;
            (end, Kind::String, esc)
        }
        Some(b'-' | b'0'..=b'9') => (scan_number(b, i)?, Kind::Number, false),
        Some(b't') => (scan_literal(b, i, b"true", "a value")?, Kind::True, false),
        Some(b'f') => (scan_literal(b, i, b"false", "a value")?, Kind::False, false),
        Some(b'n') => (scan_literal(b, i, b"null", "a value")?, Kind::Null, false),
        _ => return Err(syntax(i, "a value")),
    };
    Ok(Value {
        start: i,
        end,
        kind,
        escaped,
    })
}

/// Scans an object key and the colon after it: `i` is at the opening quote.
/// Returns the key's value span and the position of the member's value.
fn scan_key(b: &[u8], i: usize) -> Res<(Value, usize)> {
    if b.get(i) != Some(&b'"') {
        return Err(syntax(i, "a string key"));
    }
    let (end, escaped) = scan_string(b, i)?;
    let j = skip_ws(b, end);
    if b.get(j) != Some(&b':') {
        return Err(syntax(j, "':' after an object key"));
    }
    Ok((
        Value {
            start: i,
            end,
            kind: Kind::String,
            escaped,
        },
        skip_ws(b, j + 1),
    ))
}

/// Scans one value starting at or after `pos` (leading whitespace skipped).
/// `depth` is the number of containers already open around it.
pub fn scan_value(b: &[u8], pos: usize, depth: usize, max_depth: usize) -> Res<Value> {
    let start = skip_ws(b, pos);
    match b.get(start) {
        Some(b'{' | b'[') => scan_container(b, start, depth, max_depth),
        _ => scan_scalar(b, start),
    }
}

/// Scans an object or array at `start` iteratively.
fn scan_container(b: &[u8], start: usize, depth: usize, max_depth: usize) -> Res<Value> {
    let kind = if b.get(start) == Some(&b'{') {
        Kind::Object
    } else {
        Kind::Array
    };
    // Open containers, innermost last: true for objects.
    let mut stack: Vec<bool> = Vec::new();
    let mut i = start;
    'open: loop {
        // `b[i]` is '{' or '[': open it.
        let is_obj = b.get(i) == Some(&b'{');
        if depth + stack.len() + 1 > max_depth {
            return Err(JsonError::Depth {
                at: i,
                limit: max_depth,
            });
        }
        stack.push(is_obj);
        i = skip_ws(b, i + 1);
        let close = if is_obj { b'}' } else { b']' };
        if b.get(i) == Some(&close) {
            i += 1;
            stack.pop();
        } else {
            if is_obj {
                i = scan_key(b, i)?.1;
            }
            match b.get(i) {
                Some(b'{' | b'[') => continue 'open,
                _ => i = scan_scalar(b, i)?.end,
            }
        }
        // After a complete value: separators and closers until a new container opens.
        loop {
            let Some(&top_is_obj) = stack.last() else {
                return Ok(Value {
                    start,
                    end: i,
                    kind,
                    escaped: false,
                });
            };
            i = skip_ws(b, i);
            match b.get(i) {
                Some(b',') => {
                    i = skip_ws(b, i + 1);
                    if top_is_obj {
                        i = scan_key(b, i)?.1;
                    }
                    match b.get(i) {
                        Some(b'{' | b'[') => continue 'open,
                        _ => i = scan_scalar(b, i)?.end,
                    }
                }
                Some(b'}') if top_is_obj => {
                    i += 1;
                    stack.pop();
                }
                Some(b']') if !top_is_obj => {
                    i += 1;
                    stack.pop();
                }
                _ => {
                    return Err(syntax(
                        i,
                        if top_is_obj {
                            "',' or '}'"
                        } else {
                            "',' or ']'"
                        },
                    ));
                }
            }
        }
    }
}

/// Validates that `b` is exactly one JSON value (with optional surrounding whitespace).
pub fn validate(b: &[u8], max_depth: usize) -> Res<Value> {
    let v = scan_value(b, 0, 0, max_depth)?;
    let end = skip_ws(b, v.end);
    if end != b.len() {
        return Err(syntax(end, "end of line after the JSON value"));
    }
    Ok(v)
}

/// Iterates the members of one object, validating as it goes.
///
/// ```
/// use forkpoint_core::json::ObjectReader;
/// let src = r#"{"a": 1, "b": {"c": true}}"#;
/// let mut r = ObjectReader::open(src.as_bytes(), 0, 1, 512).unwrap();
/// let mut keys = vec![];
/// while let Some(k) = r.next_key().unwrap() {
///     keys.push(k.inner(src).to_string());
///     r.skip_value().unwrap();
/// }
/// assert_eq!(keys, ["a", "b"]);
/// ```
pub struct ObjectReader<'a> {
    b: &'a [u8],
    pos: usize,
    depth: usize,
    max_depth: usize,
    first: bool,
    done: bool,
}

impl<'a> ObjectReader<'a> {
    /// Opens the object whose `{` is at or after `pos`. `depth` is this object's own
    /// nesting level (1 for a top-level object).
    pub fn open(b: &'a [u8], pos: usize, depth: usize, max_depth: usize) -> Res<Self> {
        let i = skip_ws(b, pos);
        if b.get(i) != Some(&b'{') {
            return Err(syntax(i, "'{' (a JSON object)"));
        }
        if depth > max_depth {
            return Err(JsonError::Depth {
                at: i,
                limit: max_depth,
            });
        }
        Ok(ObjectReader {
            b,
            pos: i + 1,
            depth,
            max_depth,
            first: true,
            done: false,
        })
    }

    /// The next member's key; the reader is then positioned at its value, which the
    /// caller must consume with [`skip_value`](Self::skip_value) or
    /// [`enter_object`](Self::enter_object) + [`resume_after`](Self::resume_after).
    pub fn next_key(&mut self) -> Res<Option<Value>> {
        if self.done {
            return Ok(None);
        }
        let mut i = skip_ws(self.b, self.pos);
        if self.first {
            self.first = false;
            if self.b.get(i) == Some(&b'}') {
                self.pos = i + 1;
                self.done = true;
                return Ok(None);
            }
        } else {
            match self.b.get(i) {
                Some(b',') => i = skip_ws(self.b, i + 1),
                Some(b'}') => {
                    self.pos = i + 1;
                    self.done = true;
                    return Ok(None);
                }
                _ => return Err(syntax(i, "',' or '}'")),
            }
        }
        let (key, vpos) = scan_key(self.b, i)?;
        self.pos = vpos;
        Ok(Some(key))
    }

    /// A reader of an object whose first members were already read: the next
    /// byte at or after `pos` (whitespace skipped) is `,` or `}`.
    pub fn continue_at(b: &'a [u8], pos: usize, depth: usize, max_depth: usize) -> Self {
        ObjectReader {
            b,
            pos,
            depth,
            max_depth,
            first: false,
            done: false,
        }
    }

    /// Consumes the current member's value and returns its span.
    pub fn skip_value(&mut self) -> Res<Value> {
        let v = scan_value(self.b, self.pos, self.depth, self.max_depth)?;
        self.pos = v.end;
        Ok(v)
    }

    /// Position of the current member's value (whitespace skipped).
    pub fn end_of_value_start(&self) -> usize {
        skip_ws(self.b, self.pos)
    }

    /// The first byte of the current member's value.
    pub fn peek(&self) -> Option<u8> {
        self.b.get(skip_ws(self.b, self.pos)).copied()
    }

    /// Opens the current member's value as a nested object reader.
    pub fn enter_object(&self) -> Res<ObjectReader<'a>> {
        ObjectReader::open(self.b, self.pos, self.depth + 1, self.max_depth)
    }

    /// After a nested reader finished: continue after it.
    pub fn resume_after(&mut self, nested: &ObjectReader<'a>) {
        self.pos = nested.pos;
    }

    /// Position after the closing `}` once all members were read.
    pub fn end(&self) -> usize {
        self.pos
    }

    /// Whether the closing `}` was reached.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Reads the remaining members, skipping their values, so that the object is fully validated.
    pub fn finish(&mut self) -> Res<()> {
        while self.next_key()?.is_some() {
            self.skip_value()?;
        }
        Ok(())
    }
}

/// Whether a key (a string [`Value`]) equals `name`, decoding escapes if needed.
#[inline]
pub fn key_is(key: &Value, src: &str, name: &str) -> bool {
    if key.escaped {
        decode_escaped(key.inner(src)) == name
    } else {
        key.inner(src) == name
    }
}

/// The value of four hex digits at the start of `s`.
pub(crate) fn hex4(s: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in s.get(..4)? {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Decodes the escaped inside of a JSON string literal (without the quotes).
/// Lone surrogates, which Rust strings cannot hold, become U+FFFD.
pub fn decode_escaped(inner: &str) -> String {
    let b = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut i = 0;
    let mut plain_from = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        out.push_str(inner.get(plain_from..i).unwrap_or(""));
        let c = b.get(i + 1).copied().unwrap_or(b'\\');
        i += 2;
        match c {
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let hi = b.get(i..).and_then(hex4).unwrap_or(0xFFFD);
                i += 4;
                if (0xD800..0xDC00).contains(&hi) {
                    let lo = if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
                        b.get(i + 2..).and_then(hex4)
                    } else {
                        None
                    };
                    match lo {
                        Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                            i += 6;
                            let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                            out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        }
                        _ => out.push('\u{FFFD}'),
                    }
                } else {
                    out.push(char::from_u32(hi).unwrap_or('\u{FFFD}'));
                }
            }
            other => out.push(other as char),
        }
        plain_from = i;
    }
    out.push_str(inner.get(plain_from..).unwrap_or(""));
    out
}

/// The UTF-16 code units of the escaped inside of a JSON string literal, as
/// `JSON.parse` gives them (lone surrogates kept).
pub(crate) fn utf16_units(inner: &str) -> Vec<u16> {
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            let c = inner[i..].chars().next().unwrap_or('\u{FFFD}');
            let mut buf = [0u16; 2];
            out.extend_from_slice(c.encode_utf16(&mut buf));
            i += c.len_utf8().max(1);
            continue;
        }
        let c = b.get(i + 1).copied().unwrap_or(b'\\');
        i += 2;
        match c {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(10),
            b'r' => out.push(13),
            b't' => out.push(9),
            b'u' => {
                out.push(b.get(i..).and_then(hex4).unwrap_or(0xFFFD) as u16);
                i += 4;
            }
            other => out.push(u16::from(other)),
        }
    }
    out
}

/// The comparison key of an entry id given as the escaped inside of a JSON
/// string. Rust strings cannot hold lone surrogates, so decoding turns `"\ud800"`
/// and `"\udfff"` alike into U+FFFD, and two different JavaScript ids would
/// collide. Ids without lone surrogates (all real ones) are their decoded text;
/// the others are NUL followed by their canonical escaped form (as
/// `JSON.stringify` writes it), which no decoded id can equal (a decoded id that
/// starts with NUL takes the escaped form too). Callers get that form as the
/// id: a handle that finds the entry when passed back.
pub fn id_key(inner: &str) -> String {
    let decoded = decode_escaped(inner);
    let lone = inner.contains("\\u") && {
        let units = utf16_units(inner);
        char::decode_utf16(units.iter().copied()).any(|r| r.is_err())
    };
    if !lone && !decoded.starts_with('\0') {
        return decoded;
    }
    let mut out = String::from("\0");
    for r in char::decode_utf16(utf16_units(inner)) {
        match r {
            Ok(c) => {
                let mut tmp = [0u8; 4];
                push_escaped(&mut out, c.encode_utf8(&mut tmp));
            }
            Err(e) => out.push_str(&format!("\\u{:04x}", e.unpaired_surrogate())),
        }
    }
    out
}

/// Appends an id key as the JSON string literal it came from (a key holding
/// lone surrogates is written with their escapes, as JavaScript would).
pub fn push_id_literal(out: &mut String, key: &str) {
    match key.strip_prefix('\0') {
        Some(escaped) => {
            out.push('"');
            out.push_str(escaped);
            out.push('"');
        }
        None => push_str_literal(out, key),
    }
}

/// An id key as a JSON string literal.
pub fn id_literal(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    push_id_literal(&mut out, key);
    out
}

/// The top-level `type`, `id` and `parentId` of an entry line, found by a skim
/// that follows the line's structure (strings, brackets) without validating
/// what it skips. Duplicate keys: the last wins, as in `JSON.parse`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Skim<'a> {
    pub ty: Option<&'a [u8]>,
    pub id: Option<&'a [u8]>,
    /// `Some(None)`: `null`.
    pub parent: Option<Option<&'a [u8]>>,
}

/// Skims one entry line (an object). `None` when the line is not plainly an
/// object, or when a key or one of the three values needs escapes or is not a
/// plain string (`null` for `parentId`) — such lines are parsed in full.
pub fn skim_entry(b: &[u8]) -> Option<Skim<'_>> {
    let mut out = Skim::default();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return (skip_ws(b, i + 1) == b.len()).then_some(out);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let k_end = i + 1 + memchr::memchr2(b'"', b'\\', b.get(i + 1..)?)?;
        if b[k_end] != b'"' {
            return None;
        }
        let key = &b[i + 1..k_end];
        i = skip_ws(b, k_end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let v = i;
        let (end, plain) = match *b.get(i)? {
            b'"' => {
                let e = skim_string(b, i)?;
                (e, !b[i + 1..e - 1].contains(&b'\\'))
            }
            b'{' | b'[' => (skim_nested(b, i)?, false),
            _ => {
                let mut e = i;
                while e < b.len() && !matches!(b[e], b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
                    e += 1;
                }
                (e, false)
            }
        };
        let text = &b[v..end];
        let string = (text.first() == Some(&b'"') && plain).then(|| &text[1..text.len() - 1]);
        match key {
            b"type" => out.ty = Some(string?),
            b"id" => out.id = Some(string?),
            b"parentId" => {
                out.parent = Some(match string {
                    Some(p) => Some(p),
                    None if text == b"null" => None,
                    None => return None,
                })
            }
            _ => {}
        }
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return (skip_ws(b, i + 1) == b.len()).then_some(out),
            _ => return None,
        }
    }
}

/// The end (after the closing quote) of the string starting at `b[i]`.
fn skim_string(b: &[u8], i: usize) -> Option<usize> {
    // From quote to quote: a quote ends the string when an even number of
    // backslashes stands before it (each escape pair is two of them). Escapes
    // such as `\n`, frequent in text, are not stopped at one by one.
    let mut j = i + 1;
    loop {
        let q = j + memchr::memchr(b'"', b.get(j..)?)?;
        let run = b[i + 1..q]
            .iter()
            .rev()
            .take_while(|&&c| c == b'\\')
            .count();
        if run % 2 == 0 {
            return Some(q + 1);
        }
        j = q + 1;
    }
}

/// The end of the object or array starting at `b[i]`, by its brackets.
fn skim_nested(b: &[u8], i: usize) -> Option<usize> {
    let mut depth: u64 = 0;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = skim_string(b, j)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

/// Appends `,"key":value` for each member, as their source text.
pub fn push_members(out: &mut String, members: &[(Value, Value)], src: &str) {
    for (k, v) in members {
        out.push(',');
        out.push_str(k.raw(src));
        out.push(':');
        out.push_str(v.raw(src));
    }
}

/// Appends `s` as a JSON string literal, escaped as `JSON.stringify` does.
pub fn push_str_literal(out: &mut String, s: &str) {
    out.push('"');
    push_escaped(out, s);
    out.push('"');
}

/// Appends the escaped inside of a JSON string literal for `s` (no quotes).
/// Only ASCII bytes are ever escaped, so runs between them are copied whole
/// (found eight bytes at a time).
pub fn push_escaped(out: &mut String, s: &str) {
    let b = s.as_bytes();
    let mut from = 0;
    loop {
        let i = find_string_special(b, from);
        let Some(&c) = b.get(i) else {
            break;
        };
        out.push_str(&s[from..i]);
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            c => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c >> 4) as usize] as char);
                out.push(HEX[(c & 15) as usize] as char);
            }
        }
        from = i + 1;
    }
    out.push_str(&s[from..]);
}

/// A string as a JSON literal.
pub fn str_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_str_literal(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_as_json_stringify_does() {
        // Every control character, quotes and backslashes at every place of
        // the eight-byte words, next to multi-byte characters.
        let mut cases: Vec<String> = (0u8..0x20).map(|c| (c as char).to_string()).collect();
        for pad in 0..20 {
            let p = "é😀x".repeat(pad);
            cases.push(format!("{p}\"{p}\\{p}\n\u{1f}{p}\u{7f}"));
            cases.push(format!("{}\t", "a".repeat(pad)));
        }
        cases.push(String::new());
        for c in cases {
            let mut out = String::new();
            push_escaped(&mut out, &c);
            let want = serde_json::to_string(&c).expect("string");
            assert_eq!(format!("\"{out}\""), want, "{c:?}");
        }
    }

    fn ok(s: &str) -> bool {
        validate(s.as_bytes(), DEFAULT_MAX_DEPTH).is_ok()
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        for s in [
            "{}",
            "[]",
            " { \"a\" : [1, -2.5e+3, 0, 0.0, true, false, null, \"x\"] } ",
            r#"{"s":"\ud800 lone","t":"\u00e9\n\t\"\\\/"}"#,
            r#""\uDBFF\uDFFF""#,
            "[[[[]]]]",
            "-0",
            "1E5",
            "\"é😀\"",
            "{\"a\":{\"b\":{}}}\r",
        ] {
            assert!(ok(s), "{s}");
        }
    }

    #[test]
    fn rejects_invalid() {
        for s in [
            "",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "[1,]",
            "[1 2]",
            "01",
            "1.",
            "-",
            ".5",
            "1e",
            "tru",
            "nul",
            "\"abc",
            "\"\\x\"",
            "\"\\u12g4\"",
            "\"a\u{1}b\"",
            "{} x",
            "{'a':1}",
            "[\"a\"",
            "NaN",
            "{\"a\" 1}",
        ] {
            assert!(!ok(s), "accepted {s:?}");
        }
    }

    #[test]
    fn depth_limit_is_enforced_without_recursion() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(matches!(
            validate(deep.as_bytes(), 512),
            Err(JsonError::Depth { limit: 512, .. })
        ));
        let fine = "[".repeat(512) + &"]".repeat(512);
        assert!(validate(fine.as_bytes(), 512).is_ok());
        let over = "[".repeat(513) + &"]".repeat(513);
        assert!(validate(over.as_bytes(), 512).is_err());
    }

    #[test]
    fn object_reader_spans() {
        let src = r#"{"type":"message","id":"ab12","message":{"role":"user","content":[1,{"x":2}]},"n":1.50}"#;
        let mut r = ObjectReader::open(src.as_bytes(), 0, 1, 512).unwrap();
        let mut seen = vec![];
        while let Some(k) = r.next_key().unwrap() {
            let v = r.skip_value().unwrap();
            seen.push((k.inner(src).to_string(), v.raw(src).to_string()));
        }
        assert_eq!(seen[0], ("type".into(), "\"message\"".into()));
        assert_eq!(seen[2].1, r#"{"role":"user","content":[1,{"x":2}]}"#);
        assert_eq!(seen[3].1, "1.50");
        assert_eq!(r.end(), src.len());
    }

    #[test]
    fn decode_and_escape_round_trip() {
        assert_eq!(
            decode_escaped(r"a\nb\u00e9\ud83d\ude00"),
            "a\nb\u{e9}\u{1F600}"
        );
        assert_eq!(decode_escaped(r"x\ud800y"), "x\u{FFFD}y");
        assert_eq!(decode_escaped(r"\udc00"), "\u{FFFD}");
    }

    #[test]
    fn skims_find_the_top_level_keys() {
        let s = skim_entry(br#"{"type":"message","id":"a1","parentId":null,"message":{"id":"x","type":"t","c":["}\"{"]}}"#).unwrap();
        assert_eq!(
            (s.ty, s.id, s.parent),
            (Some(&b"message"[..]), Some(&b"a1"[..]), Some(None))
        );
        // The last duplicate wins, as in JSON.parse; nested keys do not count.
        let s = skim_entry(
            br#"{"type":"x","id":"a","parentId":"p","n":[{"id":"z"}],"id":"b","parentId":"q"}"#,
        )
        .unwrap();
        assert_eq!((s.id, s.parent), (Some(&b"b"[..]), Some(Some(&b"q"[..]))));
        // Escapes, odd values and broken lines are left to the full parse.
        assert!(skim_entry(br#"{"type":"x","id":"a\u0062"}"#).is_none());
        assert!(skim_entry(br#"{"type":"x","i\u0064":"a"}"#).is_none());
        assert!(skim_entry(br#"{"type":"x","id":7}"#).is_none());
        assert!(skim_entry(br#"{"type":"x","id":"a","x":[1,2}"#).is_none());
        assert!(skim_entry(br#"{"type":"x","id":"a"} trailing"#).is_none());
        assert!(skim_entry(br#"{"type":"x","id":"a","s":"unterminated}"#).is_none());
        assert!(skim_entry(b"[1]").is_none());
    }

    #[test]
    fn skimmed_strings_end_where_json_says() {
        // Runs of backslashes before a quote, of every length up to 6, inside
        // and at the end of a string, with other escapes between.
        for run in 0..=6 {
            for tail in ["", "x", "\"", "\n\\n", "é\u{1F600}"] {
                let text = format!("a{}{}\"b{tail}{}", "\\".repeat(run), tail, "\\".repeat(run));
                let lit = serde_json::to_string(&text).unwrap();
                let line = format!("{lit},1");
                assert_eq!(skim_string(line.as_bytes(), 0), Some(lit.len()), "{lit}");
                let entry = format!(r#"{{"type":"m","id":"i","x":[{lit},{{"k":{lit}}}]}}"#);
                assert!(skim_entry(entry.as_bytes()).is_some(), "{entry}");
            }
        }
        // A quote after an odd run is escaped: the string goes on.
        assert_eq!(skim_string(br#""a\"b" "#, 0), Some(6));
        assert_eq!(skim_string(br#""a\\\"b"#, 0), None);
        assert_eq!(skim_string(br#""\\""#, 0), Some(4));
    }

    #[test]
    fn id_keys_compare_as_javascript_does() {
        // Different lone surrogates are different ids; pairs and plain text decode.
        assert_ne!(id_key(r"\ud800"), id_key(r"\udfff"));
        assert_ne!(id_key(r"a\ud800"), id_key(r"a\ufffd"));
        assert_eq!(id_key(r"\ud83d\ude00"), "\u{1F600}");
        assert_eq!(id_key(r"x\u0041"), "xA");
        assert_eq!(id_key(r"\uD800"), id_key(r"\ud800"));
        // A decoded id that starts with NUL cannot pose as an escaped key.
        let forged = id_key(r"\u0000\\ud800");
        assert_ne!(forged, id_key(r"\ud800"));
        assert_eq!(id_key(r"q\ud800"), "\0q\\ud800");
        assert_eq!(id_literal(&id_key(r"q\ud800")), r#""q\ud800""#);
        assert_eq!(id_literal("plain"), r#""plain""#);
        let s = "q\"b\\n\n\u{1}é";
        let lit = str_literal(s);
        assert_eq!(lit, "\"q\\\"b\\\\n\\n\\u0001é\"");
        assert_eq!(decode_escaped(&lit[1..lit.len() - 1]), s);
    }

    #[test]
    fn finds_the_first_special_byte_at_every_position() {
        let naive = |b: &[u8], i: usize| {
            (i..b.len())
                .find(|&k| b[k] == b'"' || b[k] == b'\\' || b[k] < 0x20)
                .unwrap_or(b.len())
        };
        // Every special byte at every position of a 40-byte run, with a second
        // special byte (a borrow source) after it, and bytes around 0x20 and 0x80.
        for special in [b'"', b'\\', 0u8, 0x1f, b'\n'] {
            for len in 0..40 {
                for at in 0..=len {
                    let mut b: Vec<u8> = (0..len)
                        .map(|k| [b'a', 0x20, 0x7f, 0x80, 0xff, b'#', b']'][k % 7])
                        .collect();
                    if at < len {
                        b[at] = special;
                        if at + 1 < len {
                            b[at + 1] = 0;
                        }
                    }
                    for start in 0..=len.min(9) {
                        assert_eq!(
                            find_string_special(&b, start),
                            naive(&b, start),
                            "{special} {len} {at} {start}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn swar_special_detection() {
        for byte in 0u8..=255 {
            let mut w = [b'a'; 8];
            w[3] = byte;
            let special = byte == b'"' || byte == b'\\' || byte < 0x20;
            assert_eq!(
                has_string_special(u64::from_le_bytes(w)),
                special,
                "byte {byte}"
            );
        }
    }
}
