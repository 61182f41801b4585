//! Credentials kept out of what forkpoint persists of its own accord.
//!
//! `meta.json` (FORMAT.md §14) is the agent's configuration: it names the
//! provider and the model, and never holds a credential. Before it is written,
//! [`scrub`] applies three rules at every depth:
//!
//! 1. **Named secrets go.** An object member whose key names a credential is
//!    removed, key and value ([`is_secret_key`]). Keys are compared after
//!    folding: fullwidth, mathematical and circled letters and common
//!    Cyrillic/Greek look-alikes become ASCII, case is lowered, and everything
//!    that is not a letter or a digit is ignored, so `apiKey`, `API_KEY`,
//!    `Api-Key`, `x-api-key` and `ＡＰＩ＿ＫＥＹ` are one name. Counters named
//!    after tokens (`maxTokens`, `max_output_tokens`, `tokenCount`,
//!    `tokensUsed`) are not credentials, and a member named only like a token
//!    (`token`, `tokens`, `…_token`) whose value is a number, a boolean, `null`
//!    or a list of numbers is kept.
//! 2. **Named pairs are masked.** In a list of `[name, value]` pairs (headers
//!    as `[["Authorization", "Bearer …"], ["Accept", "…"]]`, `Object.entries`),
//!    a pair whose name is a credential's keeps its name; its value becomes
//!    [`REDACTED`]. (A list of plain strings such as `["auth", "deploy"]` is
//!    not a list of pairs.)
//! 3. **Secret-shaped text is masked.** In every string, each part that has the
//!    shape of a known credential ([`redact_str`]) is replaced by [`REDACTED`]:
//!    OpenAI and Anthropic keys (`sk-…`, `sk-proj-…`, `sk-ant-…`), Stripe
//!    secret keys (`sk_live_…`, `rk_live_…`), Google API keys (`AIza…`), GitHub
//!    tokens (`ghp_…`, `gho_…`, `ghu_…`, `ghs_…`, `ghr_…`, `github_pat_…`),
//!    GitLab (`glpat-…`), Slack (`xoxb-…`, …), Hugging Face (`hf_…`), npm
//!    (`npm_…`), AWS access key ids (`AKIA…`, `ASIA…`), JWTs, the credentials
//!    of `Bearer …` and `Basic …` authorizations, PEM private-key blocks, and
//!    the user information of URLs (`https://user:pw@host` →
//!    `https://[redacted]@host`).
//!
//! The rules err towards removing: a harmless member that is dropped is seen
//! and renamed, a credential that is written stays on disk. Ordinary text
//! (model names such as `claude-sonnet-4`, paths, `sk-learn`) has none of the
//! shapes, which need a known prefix and a long random-looking body.

use serde_json::Value;

/// What stands in for a secret found inside a string or a named pair.
pub const REDACTED: &str = "[redacted]";

/// Members of `meta.json` that hold agent ids, which are directory names of
/// the store already: kept as they are, so that an id that happens to look
/// like a key never makes `meta.json` disagree with its directory.
const META_IDS: &[&str] = &["agentId", "lineage", "forkedFrom"];

/// Scrubs `meta.json` before it is written: the three rules of this module,
/// everywhere but in the agent ids (`agentId`, `lineage`, `forkedFrom`).
pub fn scrub_meta(meta: &mut Value) {
    let Value::Object(o) = meta else {
        scrub(meta);
        return;
    };
    o.retain(|k, v| META_IDS.contains(&k.as_str()) || !is_secret_member(k, v));
    for (k, v) in o.iter_mut() {
        if !META_IDS.contains(&k.as_str()) {
            scrub(v);
        }
    }
}

/// Applies the three rules of this module to `value`, at any depth (without
/// recursion, so a deep value cannot exhaust the stack).
pub fn scrub(value: &mut Value) {
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(o) => {
                o.retain(|k, x| !is_secret_member(k, x));
                stack.extend(o.values_mut());
            }
            Value::Array(a) => {
                if a.iter().all(is_pair) {
                    for p in a.iter_mut() {
                        mask_pair(p);
                    }
                }
                stack.extend(a.iter_mut());
            }
            Value::String(s) => {
                if let Some(r) = redact_str(s) {
                    *s = r;
                }
            }
            _ => {}
        }
    }
}

/// `[name, value]` with a string name.
fn is_pair(v: &Value) -> bool {
    matches!(v, Value::Array(p) if p.len() == 2 && p[0].is_string())
}

/// Masks the value of a `[name, value]` pair whose name is a credential's.
fn mask_pair(v: &mut Value) {
    if let Value::Array(p) = v
        && let [Value::String(name), value] = p.as_mut_slice()
        && is_secret_member(name, value)
    {
        *value = Value::String(REDACTED.into());
    }
}

// ---------------------------------------------------------------------------
// Keys

/// How a key names a secret.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum KeyClass {
    /// Always a credential.
    Secret,
    /// Named like a token: a credential unless its value is a count.
    Token,
}

/// Whether an object key (or a header name) names a credential: `apiKey`,
/// `api_key`, `x-api-key`, `x-goog-api-key`, `key`, `privateKey`, `secret`,
/// `client_secret`, `password`, `passwd`, `pwd`, `pass`, `passphrase`,
/// `authorization`, `auth`, `bearer`, `cookie`, `set-cookie`, `credential(s)`,
/// `pat`, `token(s)`, `accessToken`, `refresh_token`, `OPENAI_KEY` and other
/// names whose last word is `key` (except `publicKey`, `primaryKey`,
/// `cacheKey`, `sortKey` and similar names of non-secret keys), compared after
/// Unicode and case folding. A bare `keys` (a list of names) is not one.
pub fn is_secret_key(key: &str) -> bool {
    key_class(key).is_some()
}

/// Whether the object member `key: value` holds a credential (rule 1): a
/// secret key, or a token-named key whose value is not a count.
pub fn is_secret_member(key: &str, value: &Value) -> bool {
    match key_class(key) {
        None => false,
        Some(KeyClass::Secret) => true,
        Some(KeyClass::Token) => !is_count(value),
    }
}

fn is_count(v: &Value) -> bool {
    match v {
        Value::Number(_) | Value::Bool(_) | Value::Null => true,
        Value::Array(a) => a.iter().all(Value::is_number),
        _ => false,
    }
}

/// Names that contain one of these (folded) are credentials.
const CONTAINS: &[&str] = &[
    "apikey",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "privatekey",
    "authorization",
    "credential",
    "cookie",
    "bearer",
    "accesskey",
    "connectionstring",
    "githubpat",
    "gitlabpat",
];

/// Names that are exactly one of these (folded) are credentials.
const EXACT: &[&str] = &["key", "pass", "pwd", "pw", "pat", "auth", "oauth", "jwt"];

/// Names whose last word is one of these are credentials (`db_pass`, `basicAuth`).
const LAST_WORD: &[&str] = &["key", "keys", "pass", "pwd", "pw", "auth", "jwt"];

/// Words before a final `key` that name something that is not a credential.
const NOT_SECRET_KEYS: &[&str] = &[
    "public",
    "primary",
    "foreign",
    "partition",
    "sort",
    "cache",
    "idempotency",
    "dedup",
    "dedupe",
    "unique",
    "composite",
    "index",
    "lookup",
    "query",
    "routing",
    "row",
    "hash",
    "map",
    "group",
    "object",
    "item",
    "entry",
    "record",
    "event",
    "storage",
    "local",
    "cursor",
    "label",
    "name",
    "template",
    "message",
    "state",
    "list",
    "dict",
    "react",
    "translation",
    "i18n",
    "shortcut",
    "hot",
    "modifier",
];

fn key_class(key: &str) -> Option<KeyClass> {
    let words = words(key);
    let last = words.last()?;
    let n: String = words.concat();
    if CONTAINS.iter().any(|p| n.contains(p)) || EXACT.contains(&n.as_str()) {
        return Some(KeyClass::Secret);
    }
    if n == "token" || n == "tokens" || last == "token" {
        return Some(KeyClass::Token);
    }
    if LAST_WORD.contains(&last.as_str()) && words.len() > 1 {
        let before = &words[words.len() - 2];
        if (last == "key" || last == "keys") && NOT_SECRET_KEYS.contains(&before.as_str()) {
            return None;
        }
        return Some(KeyClass::Secret);
    }
    None
}

/// The folded words of a key: split at anything that is not a letter or a
/// digit and at camel-case boundaries (`openaiKey`, `APIKey`), lowercased.
fn words(key: &str) -> Vec<String> {
    let chars: Vec<char> = key.chars().map(fold_char).collect();
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase().filter(|c| c.is_alphanumeric()));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Maps a character to the ASCII letter or digit it is written to look like:
/// fullwidth forms, mathematical alphanumerics, circled letters, and the
/// Cyrillic and Greek letters that look like Latin ones. Others are unchanged.
fn fold_char(c: char) -> char {
    let u = c as u32;
    let ascii = |b: u32| char::from_u32(b).unwrap_or(c);
    match u {
        // Fullwidth ASCII (！ to ～) and the ideographic space.
        0xFF01..=0xFF5E => return ascii(u - 0xFEE0),
        0x3000 => return ' ',
        // Mathematical alphanumeric symbols: 13 alphabets of A–Z a–z, then digits.
        0x1D400..=0x1D6A3 => {
            let i = (u - 0x1D400) % 52;
            return ascii(if i < 26 { 0x41 + i } else { 0x61 + i - 26 });
        }
        0x1D7CE..=0x1D7FF => return ascii(0x30 + (u - 0x1D7CE) % 10),
        // Circled letters.
        0x24B6..=0x24CF => return ascii(0x41 + u - 0x24B6),
        0x24D0..=0x24E9 => return ascii(0x61 + u - 0x24D0),
        _ => {}
    }
    match c {
        'А' => 'A',
        'В' => 'B',
        'Е' => 'E',
        'К' => 'K',
        'М' => 'M',
        'Н' => 'H',
        'О' => 'O',
        'Р' => 'P',
        'С' => 'C',
        'Т' => 'T',
        'Х' => 'X',
        'І' => 'I',
        'Ј' => 'J',
        'Ѕ' => 'S',
        'а' => 'a',
        'е' => 'e',
        'о' => 'o',
        'р' => 'p',
        'с' => 'c',
        'у' => 'y',
        'х' => 'x',
        'і' => 'i',
        'ј' => 'j',
        'ѕ' => 's',
        'к' => 'k',
        'Α' => 'A',
        'Β' => 'B',
        'Ε' => 'E',
        'Ι' => 'I',
        'Κ' => 'K',
        'Μ' => 'M',
        'Ν' => 'N',
        'Ο' => 'O',
        'Ρ' => 'P',
        'Τ' => 'T',
        'Υ' => 'Y',
        'Χ' => 'X',
        'Ζ' => 'Z',
        'ο' => 'o',
        'α' => 'a',
        'ε' => 'e',
        'ι' => 'i',
        'κ' => 'k',
        'ν' => 'v',
        'ρ' => 'p',
        'τ' => 't',
        'υ' => 'u',
        'ſ' => 's',
        'ı' => 'i',
        '\u{212A}' => 'K',
        _ => c,
    }
}

// ---------------------------------------------------------------------------
// Values

/// Whether `s` holds a credential by its shape (rule 3).
pub fn looks_like_secret(s: &str) -> bool {
    !spans(s).is_empty()
}

/// `s` with each credential found by its shape replaced by [`REDACTED`]
/// (rule 3), or `None` when it has none.
pub fn redact_str(s: &str) -> Option<String> {
    let spans = spans(s);
    if spans.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for (a, b) in spans {
        out.push_str(&s[at..a]);
        out.push_str(REDACTED);
        at = b;
    }
    out.push_str(&s[at..]);
    Some(out)
}

/// The byte ranges of `s` that hold credentials, sorted and merged.
fn spans(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if s.len() < 8 {
        return out;
    }
    pem_spans(s, &mut out);
    url_spans(s, &mut out);
    scheme_spans(s, &mut out);
    // Words end where a span found so far begins or ends, as they will end at
    // the marker once it stands there: masking again finds nothing new.
    let mut cuts: Vec<usize> = out.iter().flat_map(|&(a, b)| [a, b]).collect();
    cuts.sort_unstable();
    token_spans(s, &cuts, &mut out);
    out.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(out.len());
    for (a, b) in out {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// `-----BEGIN … PRIVATE KEY-----` up to the end of its `-----END …-----` line
/// (or of the text).
fn pem_spans(s: &str, out: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(i) = s[from..].find("-----BEGIN ") {
        let start = from + i;
        let head_end = s[start + 11..].find("-----").map(|j| start + 11 + j);
        let Some(head_end) = head_end else { break };
        if !s[start..head_end].ends_with("PRIVATE KEY") {
            from = head_end;
            continue;
        }
        let end = s[head_end + 5..]
            .find("-----END ")
            .and_then(|j| {
                let e = head_end + 5 + j + 9;
                s[e..].find("-----").map(|k| e + k + 5)
            })
            .unwrap_or(s.len());
        out.push((start, end));
        from = end;
    }
}

/// The user information of URLs (`scheme://user:password@host`): all of it when
/// it has a password, a user name only when it is a credential itself.
fn url_spans(s: &str, out: &mut Vec<(usize, usize)>) {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = s[from..].find("://") {
        let i = from + i;
        from = i + 3;
        // A scheme: a letter, then letters, digits, `+`, `-`, `.`.
        let mut k = i;
        while k > 0 && (b[k - 1].is_ascii_alphanumeric() || b"+-.".contains(&b[k - 1])) {
            k -= 1;
        }
        while k < i && !b[k].is_ascii_alphabetic() {
            k += 1;
        }
        if k == i {
            continue;
        }
        let start = i + 3;
        let end = s[start..]
            .find(|c: char| c.is_whitespace() || "/?#\"'<>`".contains(c))
            .map_or(s.len(), |j| start + j);
        let Some(at) = s[start..end].rfind('@') else {
            continue;
        };
        let user = &s[start..start + at];
        if user.is_empty() {
            continue;
        }
        if user.contains(':') || (user.len() >= 16 && random_looking(user)) || token_at(user) {
            out.push((start, start + at));
        }
    }
}

/// The credentials of `Bearer …` and `Basic …` (any case): a bearer token of 8
/// characters or more with a digit or a JWT; a basic credential that is Base64
/// of `user:password`.
fn scheme_spans(s: &str, out: &mut Vec<(usize, usize)>) {
    let lower = s.to_ascii_lowercase();
    let b = s.as_bytes();
    for scheme in ["bearer", "basic"] {
        let mut from = 0;
        while let Some(i) = lower[from..].find(scheme) {
            let i = from + i;
            from = i + scheme.len();
            if i > 0 && b[i - 1].is_ascii_alphanumeric() {
                continue;
            }
            let mut j = i + scheme.len();
            let ws = j;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            if j == ws {
                continue;
            }
            let start = j;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b"-._~+/".contains(&b[j])) {
                j += 1;
            }
            while j < b.len() && b[j] == b'=' {
                j += 1;
            }
            let cred = &s[start..j];
            let hit = if scheme == "bearer" {
                cred.len() >= 8 && (cred.bytes().any(|c| c.is_ascii_digit()) || is_jwt(cred))
            } else {
                cred.len() >= 8 && base64_user_pass(cred)
            };
            if hit {
                out.push((start, j));
                from = j;
            }
        }
    }
}

/// Known key shapes and JWTs: each maximal run of `[A-Za-z0-9_.-]` (ending at
/// the `cuts` too) is split at its dots into words; three words in a row that
/// make a JWT are one, each other word is checked against the prefixes.
fn token_spans(s: &str, cuts: &[usize], out: &mut Vec<(usize, usize)>) {
    let b = s.as_bytes();
    let is_run = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.';
    let mut i = 0;
    while i < b.len() {
        if !is_run(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        // The first cut after `start` ends the run.
        let limit = cuts[cuts.partition_point(|&c| c <= start)..]
            .first()
            .copied()
            .unwrap_or(b.len());
        // A PEM boundary (`-----`) ends a run: a token never swallows it, so a
        // redacted token cannot make a `-----BEGIN … PRIVATE KEY-----` header
        // appear on a second pass.
        while i < limit && is_run(b[i]) && !(i > start && s[i..].starts_with("-----")) {
            i += 1;
        }
        // The run's words between dots, with their offsets; three in a row may be a JWT.
        let mut words: Vec<(usize, &str)> = Vec::new();
        let mut at = start;
        for word in s[start..i].split('.') {
            words.push((at, word));
            at += word.len() + 1;
        }
        let mut k = 0;
        while k < words.len() {
            let (a, w) = words[k];
            if k + 2 < words.len() {
                let (c, last) = words[k + 2];
                if is_jwt(&s[a..c + last.len()]) {
                    out.push((a, c + last.len()));
                    k += 3;
                    continue;
                }
            }
            if token_at(w) {
                out.push((a, a + w.len()));
            }
            k += 1;
        }
    }
}

/// Whether `w` (a word without dots) has the shape of a known key.
fn token_at(w: &str) -> bool {
    let body = |p: &str| w.strip_prefix(p);
    let all = |t: &str, f: fn(u8) -> bool| t.bytes().all(f);
    let b64 = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    if let Some(t) = body("sk-") {
        // OpenAI (sk-, sk-proj-), Anthropic (sk-ant-api03-…).
        return t.len() >= 20 && all(t, b64) && random_looking(t);
    }
    for p in ["sk_live_", "sk_test_", "rk_live_", "rk_test_"] {
        if let Some(t) = body(p) {
            return t.len() >= 16 && all(t, alnum) && random_looking(t);
        }
    }
    if let Some(t) = body("AIza") {
        return t.len() == 35 && all(t, b64);
    }
    for p in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        if let Some(t) = body(p) {
            return t.len() >= 30 && all(t, alnum);
        }
    }
    if let Some(t) = body("github_pat_") {
        return t.len() >= 22 && all(t, |c| c.is_ascii_alphanumeric() || c == b'_');
    }
    if let Some(t) = body("glpat-") {
        return t.len() >= 20 && all(t, b64);
    }
    if w.len() > 5
        && w.starts_with("xox")
        && b"baprs".contains(&w.as_bytes()[3])
        && w.as_bytes()[4] == b'-'
    {
        let t = &w[5..];
        return t.len() >= 10
            && all(t, |c| c.is_ascii_alphanumeric() || c == b'-')
            && random_looking(t);
    }
    if let Some(t) = body("hf_") {
        return t.len() >= 30 && all(t, alnum) && random_looking(t);
    }
    if let Some(t) = body("npm_") {
        return t.len() >= 36 && all(t, alnum);
    }
    for p in ["AKIA", "ASIA"] {
        if let Some(t) = body(p) {
            return t.len() == 16 && all(t, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
        }
    }
    false
}

/// A JWT: three Base64url parts separated by dots, the header starting `eyJ`
/// (`{"`), header and payload of 10 characters or more.
fn is_jwt(s: &str) -> bool {
    let mut parts = s.split('.');
    let (Some(h), Some(p), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let b64 = |t: &str| {
        t.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
    };
    h.starts_with("eyJ") && h.len() >= 10 && p.len() >= 10 && b64(h) && b64(p) && b64(sig)
}

/// Has a letter and a digit: random text nearly always does, prose and
/// hyphenated names (`sk-learn-and-pandas`) seldom do.
fn random_looking(t: &str) -> bool {
    t.bytes().any(|c| c.is_ascii_digit()) && t.bytes().any(|c| c.is_ascii_alphabetic())
}

/// Whether `t` is standard Base64 of printable `user:password`.
fn base64_user_pass(t: &str) -> bool {
    let t = t.trim_end_matches('=');
    let mut bits: u32 = 0;
    let mut n = 0;
    let mut out = Vec::with_capacity(t.len() * 3 / 4);
    for c in t.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return false,
        };
        bits = (bits << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    let Ok(text) = std::str::from_utf8(&out) else {
        return false;
    };
    match text.split_once(':') {
        Some((user, _)) => !user.is_empty() && !text.chars().any(char::is_control),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;
    use serde_json::json;

    const OPENAI: &str = "sk-abcdefghij0123456789ABCDEFGHIJ0123456789abcdefgh";
    const PROJ: &str = "sk-proj-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789_-AbCdEf";
    const ANT: &str = "sk-ant-api03-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789-AbCdEfGhIjKlMnOpAA";
    const GOOGLE: &str = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q";
    const GITHUB: &str = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";

    fn redacted(s: &str) -> String {
        redact_str(s).unwrap_or_else(|| panic!("not redacted: {s}"))
    }

    #[test]
    fn the_key_names_of_the_issue_are_secret() {
        for k in [
            "private_key",
            "privateKey",
            "OPENAI_KEY",
            "key",
            "bearer",
            "cookie",
            "passwd",
            "pwd",
            "pat",
            "tokens",
            "apiKey",
            "api_key",
            "APIKEY",
            "Api-Key",
            "ＡＰＩ＿ＫＥＹ",
            "x-api-key",
            "X-Goog-Api-Key",
            "secret",
            "client_secret",
            "sessionSecret",
            "password",
            "pass",
            "passphrase",
            "token",
            "accessToken",
            "refresh_token",
            "id_token",
            "authorization",
            "Authorization",
            "Proxy-Authorization",
            "auth",
            "basicAuth",
            "Set-Cookie",
            "credential",
            "credentials",
            "db_pass",
            "anthropicKey",
            "AWS_SECRET_ACCESS_KEY",
            "github_pat",
            // Look-alikes: mathematical bold, circled, Cyrillic а/е, Kelvin sign, zero-width space.
            "𝐚𝐩𝐢𝐊𝐞𝐲",
            "ⓐⓟⓘⓚⓔⓨ",
            "аpi_kеy",
            "\u{212A}EY",
            "api\u{200B}key",
            "PASS\u{2010}WORD",
        ] {
            assert!(is_secret_key(k), "{k} is a secret key");
            assert!(is_secret_member(k, &json!("v")), "{k}");
        }
    }

    #[test]
    fn ordinary_names_are_not_secret() {
        for k in [
            "maxTokens",
            "max_tokens",
            "max_output_tokens",
            "tokenCount",
            "tokensUsed",
            "tokenLimit",
            "totalTokens",
            "model",
            "provider",
            "api",
            "cwd",
            "keyboard",
            "keys",
            "monkey",
            "hotkey",
            "publicKey",
            "primary_key",
            "cacheKey",
            "sortKey",
            "authMode",
            "systemPrompt",
            "permission",
            "requireApprovalTools",
            "lineage",
            "templateId",
            "sessionId",
            "thinkingSignature",
            "bypass",
            "",
        ] {
            assert!(!is_secret_key(k), "{k} is not a secret key");
        }
    }

    #[test]
    fn token_named_counts_are_kept() {
        assert!(!is_secret_member("tokens", &json!(1234)));
        assert!(!is_secret_member("max_token", &json!(4096)));
        assert!(!is_secret_member("tokens", &json!([1, 2, 3])));
        assert!(is_secret_member("tokens", &json!({ "access": "x" })));
        assert!(is_secret_member("tokens", &json!(["abc"])));
        assert!(is_secret_member("token", &json!("abc")));
        // A password is one whatever its type.
        assert!(is_secret_member("password", &json!(123456)));
    }

    #[test]
    fn each_value_shape_is_masked() {
        for s in [
            OPENAI,
            PROJ,
            ANT,
            GOOGLE,
            GITHUB,
            "gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
            "ghu_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
            "ghs_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
            "ghr_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789",
            "glpat-A1b2C3d4E5f6G7h8I9j0",
            "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
            "xoxp-1234567890-abcdef",
            "AKIAIOSFODNN7EXAMPLE",
            "ASIAIOSFODNN7EXAMPLE",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789ab",
            JWT,
        ] {
            assert_eq!(redacted(s), REDACTED, "{s}");
            assert!(looks_like_secret(s));
        }
    }

    #[test]
    fn secrets_inside_text_are_masked_in_place() {
        assert_eq!(
            redacted(&format!("use {OPENAI}, then stop.")),
            "use [redacted], then stop."
        );
        assert_eq!(redacted(&format!("Bearer {OPENAI}")), "Bearer [redacted]");
        assert_eq!(redacted("bearer abc123def456"), "bearer [redacted]");
        assert_eq!(
            redacted(&format!("Authorization: Bearer {JWT}")),
            "Authorization: Bearer [redacted]"
        );
        // Basic base64("aladdin:opensesame").
        assert_eq!(
            redacted("Basic YWxhZGRpbjpvcGVuc2VzYW1l"),
            "Basic [redacted]"
        );
        assert_eq!(redacted(&format!("key={GOOGLE}&q=1")), "key=[redacted]&q=1");
        assert_eq!(
            redacted(
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nrest"
            ),
            "[redacted]\nrest"
        );
    }

    #[test]
    fn url_user_information_is_masked() {
        assert_eq!(
            redacted(&format!("https://user:{OPENAI}@api.example.com/v1")),
            "https://[redacted]@api.example.com/v1"
        );
        assert_eq!(
            redacted("postgres://admin:hunter2@db:5432/x"),
            "postgres://[redacted]@db:5432/x"
        );
        assert_eq!(
            redacted("https://x-access-token:abc@github.com/o/r.git"),
            "https://[redacted]@github.com/o/r.git"
        );
        assert_eq!(
            redacted(&format!("see https://{GITHUB}@github.com/o/r")),
            "see https://[redacted]@github.com/o/r"
        );
        assert_eq!(redacted("https://user:@host"), "https://[redacted]@host");
        // A plain user name is not a credential; an @ in the path is not user information.
        for s in [
            "ssh://git@github.com/o/r.git",
            "https://example.com/@user/post",
            "https://example.com/path?mail=a@b.c",
            "mailto:someone@example.com",
        ] {
            assert_eq!(redact_str(s), None, "{s}");
        }
    }

    #[test]
    fn ordinary_text_is_kept() {
        for s in [
            "claude-sonnet-4-20250514",
            "gpt-4o-mini",
            "anthropic",
            "/home/user/projects/sk-learn-demo",
            "sk-learn is a library",
            "sk-learn-and-pandas-and-numpy-are-great",
            "the bearer of bad news",
            "Bearer authentication is described in RFC 6750",
            "Basic usage: call it with one argument",
            "Basic configuration",
            "AKIA is a prefix",
            "eyJhbGciOi is a prefix",
            "a.b.c",
            "You are a helpful assistant. Keep answers short.",
            "2026-11-25T19:00:00.000Z",
            "",
        ] {
            assert_eq!(redact_str(s), None, "{s}");
        }
    }

    #[test]
    fn scrub_applies_the_three_rules_at_any_depth() {
        let mut v = json!({
            "agentId": "a",
            "model": { "provider": "anthropic", "model": "claude-sonnet-4", "api": "anthropic-messages" },
            "cwd": "/home/user/work",
            "metadata": {
                "private_key": "x", "privateKey": "x", "OPENAI_KEY": "x", "key": "x", "bearer": "x",
                "cookie": "x", "passwd": "x", "pwd": "x", "pat": "x", "tokens": { "a": "x" },
                "ＡＰＩ＿ＫＥＹ": "x", "Api-Key": "x", "APIKEY": "x",
                "headers": [["Authorization", format!("Bearer {OPENAI}")], ["Accept", "application/json"]],
                "proxy": format!("https://user:{OPENAI}@proxy.example.com:8080"),
                "note": format!("the key is {ANT}"),
                "list": [GOOGLE, "kept", { "nested": { "x-api-key": "x", "keep": 1 } }],
                "maxTokens": 100, "max_output_tokens": 200, "tokenCount": 3, "tokensUsed": 4, "tokens_total": 5,
                "keyboard": "qwerty", "keys": ["a", "b"],
                "entries": [["Cookie", "session=abc"]],
                "tools": ["auth", "deploy"],
                "pair": ["password", "email"]
            }
        });
        scrub_meta(&mut v);
        assert_eq!(
            v,
            json!({
                "agentId": "a",
                "model": { "provider": "anthropic", "model": "claude-sonnet-4", "api": "anthropic-messages" },
                "cwd": "/home/user/work",
                "metadata": {
                    "headers": [["Authorization", "[redacted]"], ["Accept", "application/json"]],
                    "proxy": "https://[redacted]@proxy.example.com:8080",
                    "note": "the key is [redacted]",
                    "list": ["[redacted]", "kept", { "nested": { "keep": 1 } }],
                    "maxTokens": 100, "max_output_tokens": 200, "tokenCount": 3, "tokensUsed": 4, "tokens_total": 5,
                    "keyboard": "qwerty", "keys": ["a", "b"],
                    "entries": [["Cookie", "[redacted]"]],
                    "tools": ["auth", "deploy"],
                    "pair": ["password", "email"]
                }
            })
        );
    }

    #[test]
    fn meta_keeps_agent_ids_that_look_like_keys() {
        let id = "AKIAIOSFODNN7EXAMPLE";
        let mut m = json!({
            "agentId": id, "lineage": [id], "forkedFrom": { "agentId": id },
            "metadata": { "id": id, "apiKey": "x" }
        });
        scrub_meta(&mut m);
        assert_eq!(
            m,
            json!({
                "agentId": id, "lineage": [id], "forkedFrom": { "agentId": id },
                "metadata": { "id": "[redacted]" }
            })
        );
    }

    proptest::proptest! {
        /// Any text: no panic (byte offsets stay on character boundaries), the
        /// marker never forms a new secret, and the known shapes standing as
        /// words never survive.
        #[test]
        fn redaction_never_panics_and_is_idempotent(
            parts in proptest::collection::vec(proptest::prop_oneof![
                proptest::string::string_regex(".{0,12}").unwrap(),
                proptest::sample::select(vec![
                    "sk-", "Bearer ", "basic ", "https://", "://", "@", ":", "eyJ", ".", "AIza", "ghp_", "-----BEGIN ",
                    "PRIVATE KEY-----", "-----END ", "xoxb-", "AKIA", "ＡＰＩ", "é", "\u{1F600}",
                ]).prop_map(String::from),
                proptest::sample::select(vec![OPENAI, GOOGLE, GITHUB, JWT, "YWxhZGRpbjpvcGVuc2VzYW1l"]).prop_map(String::from),
            ], 0..12)
        ) {
            // Glued together (a key inside a longer word is not looked for) and spaced.
            for s in [parts.concat(), parts.join(" ")] {
                let once = redact_str(&s).unwrap_or_else(|| s.clone());
                proptest::prop_assert_eq!(redact_str(&once), None, "from {:?}", s);
                let _ = is_secret_key(&s);
            }
            let spaced = parts.join(" ");
            let once = redact_str(&spaced).unwrap_or_else(|| spaced.clone());
            for secret in [OPENAI, GITHUB, JWT] {
                proptest::prop_assert!(!once.contains(secret), "{:?} kept {}", spaced, secret);
            }
        }
    }

    #[test]
    fn deep_values_do_not_exhaust_the_stack() {
        let mut v = json!("sk-x");
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        scrub(&mut v);
        // Taken apart iteratively too (serde_json's drop recurses).
        let mut stack = vec![v];
        while let Some(x) = stack.pop() {
            if let Value::Array(a) = x {
                stack.extend(a);
            }
        }
    }
}
