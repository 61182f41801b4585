//! Gemini function-call arguments streamed in pieces (Vertex AI with
//! `toolConfig.functionCallingConfig.streamFunctionCallArguments`): a call's
//! parts carry `functionCall.partialArgs`, a list of
//! `{jsonPath, stringValue | numberValue | boolValue | nullValue, willContinue}`
//! (`jsonPath` an RFC 9535 path such as `$.foo.bar[0].data`; `willContinue` on
//! a string: more of it follows for the same path), and
//! `functionCall.willContinue: true` while more parts of the same call follow.
//! The values are set into the call's `args` object; the pieces given out are
//! the JSON text of that object as far as it is settled.

use crate::normalize::J;

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Paths deeper than this, or indices above [`MAX_INDEX`], are refused.
const MAX_DEPTH: usize = 64;
const MAX_INDEX: usize = 4096;

/// The normalized-path subset of RFC 9535: `$`, then `.name`, `['name']`,
/// `["name"]` or `[n]` steps.
fn parse_path(p: &str) -> Option<Vec<Seg>> {
    let mut rest = p.strip_prefix('$')?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        if out.len() >= MAX_DEPTH {
            return None;
        }
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            out.push(Seg::Key(r[..end].to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let q = r.chars().next()?;
            if q == '\'' || q == '"' {
                let mut name = String::new();
                let mut chars = r[1..].char_indices();
                let mut close = None;
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => name.push(chars.next()?.1),
                        c if c == q => {
                            close = Some(i + 1);
                            break;
                        }
                        c => name.push(c),
                    }
                }
                let after = &r[1 + close?..];
                rest = after.strip_prefix(']')?;
                out.push(Seg::Key(name));
            } else {
                let end = r.find(']')?;
                let n: usize = r[..end].parse().ok()?;
                if n > MAX_INDEX {
                    return None;
                }
                out.push(Seg::Index(n));
                rest = &r[end + 1..];
            }
        } else {
            return None;
        }
    }
    Some(out)
}

/// The value at `path` in `root`, made (objects and arrays) on the way.
/// `None` when the path goes through a value of another kind.
fn slot<'a>(root: &'a mut J, path: &[Seg]) -> Option<&'a mut J> {
    let mut cur = root;
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if matches!(cur, J::Null) {
                    *cur = J::Obj(Vec::new());
                }
                let J::Obj(members) = cur else { return None };
                let pos = match members
                    .iter()
                    .position(|(key, _)| crate::normalize::jv::key_eq(key, k))
                {
                    Some(p) => p,
                    None => {
                        let J::Str(key) = J::s(k) else { return None };
                        members.push((key, J::Null));
                        members.len() - 1
                    }
                };
                cur = &mut members[pos].1;
            }
            Seg::Index(i) => {
                if matches!(cur, J::Null) {
                    *cur = J::Arr(Vec::new());
                }
                let J::Arr(items) = cur else { return None };
                while items.len() <= *i {
                    items.push(J::Null);
                }
                cur = &mut items[*i];
            }
        }
    }
    Some(cur)
}

/// A call whose arguments are streaming.
pub(super) struct PartialCall {
    /// The call's part (an index into the decoder's parts).
    pub part: usize,
    /// The call's content index.
    pub canon: usize,
    pub name: String,
    /// The arguments so far (an object).
    pub args: J,
    /// The argument text given out so far.
    sent: String,
    /// The path of a string that continues in the next partial argument.
    open: Option<Vec<Seg>>,
    /// The arguments changed where text was already given out: no more pieces.
    diverged: bool,
}

impl PartialCall {
    pub fn new(part: usize, canon: usize, name: String, args: Option<&J>) -> Self {
        PartialCall {
            part,
            canon,
            name,
            args: args
                .filter(|a| a.is_obj())
                .cloned()
                .unwrap_or(J::Obj(Vec::new())),
            sent: String::new(),
            open: None,
            diverged: false,
        }
    }

    /// Applies the `partialArgs` of one part; returns the argument text they
    /// settle (a piece, maybe empty), or what is wrong with them.
    pub fn apply(&mut self, partial: Option<&J>) -> Result<String, String> {
        let list = match partial {
            None | Some(J::Null) => return Ok(String::new()),
            Some(J::Arr(a)) => a,
            Some(_) => return Err("functionCall.partialArgs is not an array".into()),
        };
        let mut last = None;
        for pa in list {
            let raw = pa
                .str_of("jsonPath")
                .ok_or("a partial argument without jsonPath")?;
            let path = parse_path(&raw)
                .filter(|p| !p.is_empty())
                .ok_or_else(|| format!("partial argument jsonPath {raw:?} is not supported"))?;
            let continues = self.open.as_ref() == Some(&path);
            let conflict =
                || format!("partial argument {raw:?} conflicts with the arguments so far");
            let at = slot(&mut self.args, &path).ok_or_else(conflict)?;
            let string = if let Some(J::Str(s)) = pa.get("stringValue") {
                *at = match (&*at, continues) {
                    (J::Str(old), true) => J::Str(format!("{}{}", &**old, &**s).into()),
                    _ => J::Str(s.clone()),
                };
                true
            } else if let Some(n @ J::Num(_)) = pa.get("numberValue") {
                *at = n.clone();
                false
            } else if let Some(b @ J::Bool(_)) = pa.get("boolValue") {
                *at = b.clone();
                false
            } else if pa.get("nullValue").is_some() {
                *at = J::Null;
                false
            } else {
                return Err(format!("partial argument {raw:?} without a value"));
            };
            let more = pa.get("willContinue").and_then(J::as_bool) == Some(true);
            self.open = (string && more).then(|| path.clone());
            last = Some((path, string && more));
        }
        Ok(match last {
            Some((path, open)) => self.settled(&path, open),
            None => String::new(),
        })
    }

    /// The new text of the arguments, up to the value at `path` (without its
    /// closing quote while it is `open`), when nothing but closing brackets
    /// follows it.
    fn settled(&mut self, path: &[Seg], open: bool) -> String {
        if self.diverged {
            return String::new();
        }
        const MARK: &str = "\u{1}forkpoint-mark\u{1}";
        let mut marked = self.args.clone();
        let Some(at) = slot(&mut marked, path) else {
            return String::new();
        };
        let value = std::mem::replace(at, J::s(MARK)).text();
        let text = marked.text();
        let mark = J::s(MARK).text();
        let Some(pos) = text.find(&mark) else {
            return String::new();
        };
        if !text[pos + mark.len()..]
            .chars()
            .all(|c| c == '}' || c == ']')
        {
            return String::new();
        }
        let value = if open {
            value.strip_suffix('"').unwrap_or(&value)
        } else {
            &value
        };
        let upto = format!("{}{value}", &text[..pos]);
        self.advance(&upto)
    }

    fn advance(&mut self, upto: &str) -> String {
        match upto.strip_prefix(self.sent.as_str()) {
            Some(rest) => {
                let rest = rest.to_string();
                self.sent = upto.to_string();
                rest
            }
            None => {
                if !self.sent.starts_with(upto) {
                    self.diverged = true;
                }
                String::new()
            }
        }
    }

    /// The call is whole: the rest of its argument text.
    pub fn finish(&mut self) -> String {
        if self.diverged {
            return String::new();
        }
        let all = self.args.text();
        self.advance(&all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("$.foo.bar[0]['x y']"),
            Some(vec![
                Seg::Key("foo".into()),
                Seg::Key("bar".into()),
                Seg::Index(0),
                Seg::Key("x y".into())
            ])
        );
        for bad in ["foo", "$..a", "$[x]", "$['a'", "$[99999999]", "$.a["] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }
}
