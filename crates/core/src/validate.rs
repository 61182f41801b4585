//! Checks a tool call's input against the tool's `inputSchema` (JSON Schema),
//! the same way under Node and in browsers, with messages a model can act on:
//! `input.path: expected string, got number; input: missing required property "cmd"`.
//!
//! It checks the part of JSON Schema tools use: `type` (a name or a list of
//! names; `integer` is a number without a fraction; OpenAPI's `nullable: true`
//! adds `null`), `required`, `properties`, `additionalProperties` (`false` or a
//! schema), `items` (a schema, or a list of schemas for a tuple, with
//! `additionalItems`), `prefixItems`, `enum`, `const`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum` (numbers, or draft 4's booleans),
//! `multipleOf`, `minLength`, `maxLength` (in characters), `minItems`,
//! `maxItems`, `uniqueItems`, `minProperties`, `maxProperties`, `anyOf`,
//! `oneOf`, `allOf`, `not`, and `$ref` to a place in the same schema
//! (`#`, `#/$defs/…`, `#/definitions/…`). Boolean schemas (`true`, `false`)
//! work. Other keywords (`pattern`, `format`, `patternProperties`,
//! `if`/`then`/`else`, `contains`, `propertyNames`, …) are not checked: an input
//! passes them unchecked (with `patternProperties`, `additionalProperties` is
//! not checked either, since which names the patterns allow is unknown).
//!
//! (The `jsonschema` crate checks all of JSON Schema, but it made the
//! optimized browser build about 2.9 MB larger; this module adds about 50 KB.)

use std::fmt::Write;

use serde_json::{Map, Value};

/// Most problems a message names (the rest are counted).
pub const MAX_PROBLEMS: usize = 5;

/// Deepest nesting of schemas checked (properties, items, alternatives and
/// `$ref`s together), so a schema that refers to itself cannot loop.
const MAX_DEPTH: usize = 128;

/// Deepest input accepted (the session writer's limit): comparing values
/// recurses into them.
const MAX_INPUT_DEPTH: usize = 512;

/// Most values an `enum` message lists, and longest value shown.
const MAX_LISTED: usize = 8;
const MAX_SHOWN: usize = 40;

/// The names `type` accepts.
const TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Checks `input` against `schema`. `Err` is a short message naming each
/// failing place of the input (at most [`MAX_PROBLEMS`], then how many more),
/// or, for a schema this module cannot use, a message starting
/// `the tool's inputSchema is not a valid JSON Schema:`. `{}` and `true`
/// accept anything.
pub fn check_tool_input(schema: &Value, input: &Value) -> Result<(), String> {
    check_schema(schema)?;
    if deeper_than(input, MAX_INPUT_DEPTH) {
        return Err(format!(
            "input: nested deeper than {MAX_INPUT_DEPTH} levels"
        ));
    }
    let mut c = Checker {
        root: schema,
        problems: Vec::new(),
    };
    c.check(schema, input, &mut Path::root(), 0);
    if c.problems.is_empty() {
        return Ok(());
    }
    let total = c.problems.len();
    let mut out = c.problems[..total.min(MAX_PROBLEMS)]
        .iter()
        .map(Problem::text)
        .collect::<Vec<_>>()
        .join("; ");
    if total > MAX_PROBLEMS {
        let _ = write!(out, "; and {} more", total - MAX_PROBLEMS);
    }
    Err(out)
}

/// Checks that `schema` is a JSON Schema [`check_tool_input`] can use: an
/// object or a boolean, whose keywords it checks have values of the right
/// kind and whose `$ref`s point inside it. `Err` says where and what is wrong.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let mut at = String::from("inputSchema");
    schema_problem(schema, schema, &mut at, 0)
        .map(|p| {
            Err(format!(
                "the tool's inputSchema is not a valid JSON Schema: {p}"
            ))
        })
        .unwrap_or(Ok(()))
}

// ---------------------------------------------------------------------------
// The schema itself

fn schema_problem(root: &Value, s: &Value, at: &mut String, depth: usize) -> Option<String> {
    let o = match s {
        Value::Bool(_) => return None,
        Value::Object(o) => o,
        other => {
            return Some(format!(
                "{at}: a schema is an object or a boolean, not {}",
                kind_of(other)
            ));
        }
    };
    if depth > MAX_DEPTH {
        return Some(format!("{at}: nested deeper than {MAX_DEPTH} levels"));
    }
    for (k, v) in o {
        let len = at.len();
        push_key(at, k);
        let p = keyword_problem(root, k, v, at, depth);
        at.truncate(len);
        if p.is_some() {
            return p;
        }
    }
    None
}

fn keyword_problem(
    root: &Value,
    k: &str,
    v: &Value,
    at: &mut String,
    depth: usize,
) -> Option<String> {
    let bad = |what: &str| Some(format!("{at}: must be {what}, not {}", show(v)));
    match k {
        "type" => {
            let names: Vec<&Value> = match v {
                Value::Array(a) if !a.is_empty() => a.iter().collect(),
                Value::String(_) => vec![v],
                _ => return bad("a type name or a non-empty list of them"),
            };
            for n in names {
                if !n.as_str().is_some_and(|n| TYPES.contains(&n)) {
                    return Some(format!(
                        "{at}: {} is not a type (one of {})",
                        show(n),
                        TYPES.join(", ")
                    ));
                }
            }
            None
        }
        "required" => match v {
            Value::Array(a) if a.iter().all(Value::is_string) => None,
            _ => bad("a list of property names"),
        },
        "enum" => (!v.is_array()).then(|| bad("a list of values")).flatten(),
        "minimum" | "maximum" => (!v.is_number()).then(|| bad("a number")).flatten(),
        "exclusiveMinimum" | "exclusiveMaximum" => (!v.is_number() && !v.is_boolean())
            .then(|| bad("a number"))
            .flatten(),
        "multipleOf" => (!v.as_f64().is_some_and(|n| n > 0.0))
            .then(|| bad("a number above 0"))
            .flatten(),
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" => {
            (count(v).is_none())
                .then(|| bad("a whole number ≥ 0"))
                .flatten()
        }
        "uniqueItems" | "nullable" => (!v.is_boolean()).then(|| bad("true or false")).flatten(),
        "properties" | "patternProperties" | "$defs" | "definitions" => match v {
            Value::Object(m) => m.iter().find_map(|(name, sub)| {
                let len = at.len();
                push_key(at, name);
                let p = schema_problem(root, sub, at, depth + 1);
                at.truncate(len);
                p
            }),
            _ => bad("an object of schemas"),
        },
        "additionalProperties" | "additionalItems" | "not" => {
            schema_problem(root, v, at, depth + 1)
        }
        "items" => match v {
            Value::Array(a) => list_problem(root, a, at, depth),
            _ => schema_problem(root, v, at, depth + 1),
        },
        "prefixItems" => match v {
            Value::Array(a) => list_problem(root, a, at, depth),
            _ => bad("a list of schemas"),
        },
        "anyOf" | "oneOf" | "allOf" => match v {
            Value::Array(a) if !a.is_empty() => list_problem(root, a, at, depth),
            _ => bad("a non-empty list of schemas"),
        },
        "$ref" => match v.as_str() {
            None => bad("a string"),
            Some(r) => match resolve(root, r) {
                Ok(_) => None,
                Err(e) => Some(format!("{at}: {e}")),
            },
        },
        _ => None,
    }
}

fn list_problem(root: &Value, list: &[Value], at: &mut String, depth: usize) -> Option<String> {
    list.iter().enumerate().find_map(|(i, sub)| {
        let len = at.len();
        let _ = write!(at, "[{i}]");
        let p = schema_problem(root, sub, at, depth + 1);
        at.truncate(len);
        p
    })
}

/// The schema a `$ref` names: `#` or `#/json/pointer` inside the same schema.
fn resolve<'a>(root: &'a Value, r: &str) -> Result<&'a Value, String> {
    let Some(pointer) = r.strip_prefix('#') else {
        return Err(format!(
            "$ref {} points outside the schema; only \"#/…\" references are supported",
            show_str(r)
        ));
    };
    if pointer.is_empty() {
        return Ok(root);
    }
    if !pointer.starts_with('/') {
        return Err(format!(
            "$ref {} is not a JSON pointer (\"#/$defs/name\"); anchors are not supported",
            show_str(r)
        ));
    }
    let decoded = percent_decode(pointer);
    root.pointer(&decoded)
        .ok_or_else(|| format!("$ref {} points to nothing in the schema", show_str(r)))
}

/// URI fragments may percent-encode characters of the pointer (`%25` is `%`).
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------------
// The input

struct Problem {
    path: String,
    msg: String,
    /// For a wrong type: the types wanted (merged across alternatives).
    wanted: Option<Vec<String>>,
}

impl Problem {
    fn text(&self) -> String {
        format!("{}: {}", self.path, self.msg)
    }
}

/// Where in the input: `input.a[0]["b c"]`.
struct Path(String);

impl Path {
    fn root() -> Path {
        Path("input".into())
    }

    fn with<R>(&mut self, step: Step<'_>, f: impl FnOnce(&mut Path) -> R) -> R {
        let len = self.0.len();
        match step {
            Step::Key(k) => push_key(&mut self.0, k),
            Step::Index(i) => {
                let _ = write!(self.0, "[{i}]");
            }
        }
        let r = f(self);
        self.0.truncate(len);
        r
    }
}

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// `.name` for a name that reads as an identifier, `["other name"]` otherwise.
fn push_key(out: &mut String, k: &str) {
    let ident = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        out.push('.');
        out.push_str(k);
    } else {
        let _ = write!(out, "[{}]", show_str(k));
    }
}

struct Checker<'s> {
    root: &'s Value,
    problems: Vec<Problem>,
}

impl<'s> Checker<'s> {
    fn fail(&mut self, path: &Path, msg: String) {
        self.problems.push(Problem {
            path: path.0.clone(),
            msg,
            wanted: None,
        });
    }

    /// The problems of `v` against `s` alone (for alternatives).
    fn problems_of(&self, s: &'s Value, v: &Value, path: &mut Path, depth: usize) -> Vec<Problem> {
        let mut sub = Checker {
            root: self.root,
            problems: Vec::new(),
        };
        sub.check(s, v, path, depth);
        sub.problems
    }

    fn check(&mut self, s: &'s Value, v: &Value, path: &mut Path, depth: usize) {
        let o = match s {
            Value::Bool(true) => return,
            Value::Bool(false) => return self.fail(path, "no value is allowed here".into()),
            Value::Object(o) => o,
            // check_schema refused it already.
            _ => return,
        };
        if depth > MAX_DEPTH {
            return self.fail(
                path,
                format!("the schema nests (or refers to itself) more than {MAX_DEPTH} levels deep here; not checked"),
            );
        }
        if let Some(r) = o.get("$ref").and_then(Value::as_str)
            && let Ok(target) = resolve(self.root, r)
        {
            self.check(target, v, path, depth + 1);
        }
        if let Some(t) = o.get("type")
            && !self.check_type(o, t, v, path)
        {
            // The other keywords would only repeat it.
            return;
        }
        if let Some(e) = o.get("enum").and_then(Value::as_array)
            && !e.iter().any(|x| same(x, v))
        {
            let mut list: Vec<String> = e.iter().take(MAX_LISTED).map(show).collect();
            if e.len() > MAX_LISTED {
                list.push("…".into());
            }
            self.fail(
                path,
                format!("expected one of {}, got {}", list.join(", "), show(v)),
            );
        }
        if let Some(c) = o.get("const")
            && !same(c, v)
        {
            self.fail(path, format!("expected {}, got {}", show(c), show(v)));
        }
        match v {
            Value::Number(_) => self.check_number(o, v, path),
            Value::String(text) => self.check_string(o, text, path),
            Value::Array(items) => self.check_array(o, items, path, depth),
            Value::Object(members) => self.check_object(o, members, path, depth),
            _ => {}
        }
        if let Some(all) = o.get("allOf").and_then(Value::as_array) {
            for sub in all {
                self.check(sub, v, path, depth + 1);
            }
        }
        if let Some(any) = o.get("anyOf").and_then(Value::as_array) {
            self.check_alternatives("anyOf", any, v, path, depth, false);
        }
        if let Some(one) = o.get("oneOf").and_then(Value::as_array) {
            self.check_alternatives("oneOf", one, v, path, depth, true);
        }
        if let Some(not) = o.get("not")
            && self.problems_of(not, v, path, depth + 1).is_empty()
        {
            self.fail(path, "must not match the schema under \"not\"".into());
        }
    }

    /// Whether `v` has one of the types; records the problem if not.
    fn check_type(&mut self, o: &Map<String, Value>, t: &Value, v: &Value, path: &Path) -> bool {
        let mut names: Vec<&str> = match t {
            Value::String(n) => vec![n.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => return true,
        };
        if o.get("nullable") == Some(&Value::Bool(true)) && !names.contains(&"null") {
            names.push("null");
        }
        if names.iter().any(|n| has_type(v, n)) {
            return true;
        }
        let got = if names.contains(&"integer") && v.is_number() {
            format!("number {}", show(v))
        } else {
            kind_of(v).to_string()
        };
        self.fail(path, format!("expected {}, got {got}", or_list(&names)));
        if let Some(p) = self.problems.last_mut() {
            p.wanted = Some(names.iter().map(|n| n.to_string()).collect());
        }
        false
    }

    fn check_number(&mut self, o: &Map<String, Value>, v: &Value, path: &Path) {
        let Some(n) = v.as_f64() else { return };
        let num = |k: &str| o.get(k).and_then(Value::as_f64);
        let flag = |k: &str| o.get(k) == Some(&Value::Bool(true));
        if let Some(min) = num("minimum") {
            if flag("exclusiveMinimum") && n <= min {
                self.fail(
                    path,
                    format!("must be > {}, got {}", show_num(min), show(v)),
                );
            } else if n < min {
                self.fail(
                    path,
                    format!("must be ≥ {}, got {}", show_num(min), show(v)),
                );
            }
        }
        if let Some(max) = num("maximum") {
            if flag("exclusiveMaximum") && n >= max {
                self.fail(
                    path,
                    format!("must be < {}, got {}", show_num(max), show(v)),
                );
            } else if n > max {
                self.fail(
                    path,
                    format!("must be ≤ {}, got {}", show_num(max), show(v)),
                );
            }
        }
        if let Some(min) = num("exclusiveMinimum")
            && n <= min
        {
            self.fail(
                path,
                format!("must be > {}, got {}", show_num(min), show(v)),
            );
        }
        if let Some(max) = num("exclusiveMaximum")
            && n >= max
        {
            self.fail(
                path,
                format!("must be < {}, got {}", show_num(max), show(v)),
            );
        }
        if let Some(m) = num("multipleOf")
            && m > 0.0
        {
            let q = n / m;
            if q.is_finite() && (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
                self.fail(
                    path,
                    format!("must be a multiple of {}, got {}", show_num(m), show(v)),
                );
            }
        }
    }

    fn check_string(&mut self, o: &Map<String, Value>, text: &str, path: &Path) {
        let len = || text.chars().count() as u64;
        if let Some(min) = o.get("minLength").and_then(count)
            && len() < min
        {
            self.fail(
                path,
                format!(
                    "must be at least {} long, got {}",
                    n_of(min, "character"),
                    len()
                ),
            );
        }
        if let Some(max) = o.get("maxLength").and_then(count)
            && len() > max
        {
            self.fail(
                path,
                format!(
                    "must be at most {} long, got {}",
                    n_of(max, "character"),
                    len()
                ),
            );
        }
    }

    fn check_array(
        &mut self,
        o: &'s Map<String, Value>,
        items: &[Value],
        path: &mut Path,
        depth: usize,
    ) {
        let n = items.len() as u64;
        if let Some(min) = o.get("minItems").and_then(count)
            && n < min
        {
            self.fail(
                path,
                format!("must have at least {}, got {n}", n_of(min, "item")),
            );
        }
        if let Some(max) = o.get("maxItems").and_then(count)
            && n > max
        {
            self.fail(
                path,
                format!("must have at most {}, got {n}", n_of(max, "item")),
            );
        }
        if o.get("uniqueItems") == Some(&Value::Bool(true)) {
            // By canonical text, so a long array is not compared pair by pair.
            let mut seen: std::collections::HashMap<String, usize> =
                std::collections::HashMap::with_capacity(items.len());
            for (j, item) in items.iter().enumerate() {
                let mut key = String::new();
                canonical(item, &mut key);
                if let Some(i) = seen.insert(key, j) {
                    self.fail(
                        path,
                        format!("items must be unique, but [{i}] and [{j}] are equal"),
                    );
                    break;
                }
            }
        }
        // The tuple part: `prefixItems`, or `items` as a list (before 2020-12).
        let (tuple, rest): (&[Value], Option<&Value>) = match (o.get("prefixItems"), o.get("items"))
        {
            (Some(Value::Array(p)), rest) => (p, rest),
            (_, Some(Value::Array(p))) => (p, o.get("additionalItems")),
            (_, rest) => (&[], rest),
        };
        for (i, item) in items.iter().enumerate() {
            let s = match tuple.get(i) {
                Some(s) => s,
                None => match rest {
                    Some(s) => s,
                    None => break,
                },
            };
            if tuple.get(i).is_none() && *s == Value::Bool(false) {
                self.fail(
                    path,
                    format!(
                        "must have at most {}, got {n}",
                        n_of(tuple.len() as u64, "item")
                    ),
                );
                break;
            }
            path.with(Step::Index(i), |p| self.check(s, item, p, depth + 1));
        }
    }

    fn check_object(
        &mut self,
        o: &'s Map<String, Value>,
        members: &Map<String, Value>,
        path: &mut Path,
        depth: usize,
    ) {
        if let Some(req) = o.get("required").and_then(Value::as_array) {
            for name in req.iter().filter_map(Value::as_str) {
                if !members.contains_key(name) {
                    self.fail(
                        path,
                        format!("missing required property {}", show_str(name)),
                    );
                }
            }
        }
        let n = members.len() as u64;
        if let Some(min) = o.get("minProperties").and_then(count)
            && n < min
        {
            self.fail(
                path,
                format!("must have at least {}, got {n}", n_of(min, "property")),
            );
        }
        if let Some(max) = o.get("maxProperties").and_then(count)
            && n > max
        {
            self.fail(
                path,
                format!("must have at most {}, got {n}", n_of(max, "property")),
            );
        }
        let props = o.get("properties").and_then(Value::as_object);
        let extra = if o.contains_key("patternProperties") {
            None
        } else {
            o.get("additionalProperties")
        };
        for (k, v) in members {
            match props.and_then(|p| p.get(k)) {
                Some(s) => path.with(Step::Key(k), |p| self.check(s, v, p, depth + 1)),
                None => match extra {
                    Some(Value::Bool(false)) => {
                        let allowed = props.map_or_else(String::new, |p| {
                            let mut names: Vec<&str> =
                                p.keys().take(MAX_LISTED).map(String::as_str).collect();
                            if p.len() > MAX_LISTED {
                                names.push("…");
                            }
                            format!(" (allowed: {})", names.join(", "))
                        });
                        self.fail(
                            path,
                            format!("unexpected property {}{allowed}", show_str(k)),
                        );
                    }
                    Some(s) => path.with(Step::Key(k), |p| self.check(s, v, p, depth + 1)),
                    None => {}
                },
            }
        }
    }

    fn check_alternatives(
        &mut self,
        keyword: &str,
        alts: &'s [Value],
        v: &Value,
        path: &mut Path,
        depth: usize,
        exactly_one: bool,
    ) {
        let results: Vec<Vec<Problem>> = alts
            .iter()
            .map(|s| self.problems_of(s, v, path, depth + 1))
            .collect();
        let matching: Vec<usize> = (0..results.len())
            .filter(|&i| results[i].is_empty())
            .collect();
        if exactly_one && matching.len() > 1 {
            let which: Vec<String> = matching.iter().map(|i| (i + 1).to_string()).collect();
            return self.fail(
                path,
                format!(
                    "matches {} alternatives of oneOf ({}), expected exactly one",
                    matching.len(),
                    which.join(", ")
                ),
            );
        }
        if !matching.is_empty() {
            return;
        }
        // Every alternative only wants another type here: name the types.
        let only_types = results
            .iter()
            .all(|r| r.len() == 1 && r[0].path == path.0 && r[0].wanted.is_some());
        if only_types {
            let mut wanted: Vec<String> = Vec::new();
            for t in results
                .iter()
                .filter_map(|r| r[0].wanted.as_ref())
                .flatten()
            {
                if !wanted.contains(t) {
                    wanted.push(t.clone());
                }
            }
            let names: Vec<&str> = wanted.iter().map(String::as_str).collect();
            return self.fail(
                path,
                format!("expected {}, got {}", or_list(&names), kind_of(v)),
            );
        }
        // Otherwise: what the closest alternative (fewest problems) wants.
        let best = results
            .iter()
            .min_by_key(|r| r.len())
            .and_then(|r| r.first());
        let closest = best.map_or_else(String::new, |p| {
            format!("; the closest fails with {}", p.text())
        });
        self.fail(
            path,
            format!(
                "matches none of the {} alternatives of {keyword}{closest}",
                alts.len()
            ),
        );
    }
}

fn has_type(v: &Value, name: &str) -> bool {
    match name {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// A number without a fraction (`1.0` is an integer, as JSON Schema says).
fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|n| n.fract() == 0.0)
}

/// A whole number ≥ 0 (also written `2.0`).
fn count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n < u64::MAX as f64)
            .map(|n| n as u64)
    })
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// Whether arrays and objects nest more than `limit` levels (without recursing).
fn deeper_than(v: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        if d + 1 > limit {
            return true;
        }
        stack.extend(children.map(|c| (c, d + 1)));
    }
    false
}

/// JSON text equal for values [`same`] calls equal: numbers by value, object
/// members sorted (serde_json keeps them sorted).
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                let _ = write!(out, "{}", f as i64);
            }
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(x, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `1 item`, `2 items`, `0 properties`.
fn n_of(n: u64, word: &str) -> String {
    match (n, word.strip_suffix('y')) {
        (1, _) => format!("1 {word}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(names: &[&str]) -> String {
    match names {
        [] => "nothing".into(),
        [one] => (*one).into(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// A value as JSON, cut to [`MAX_SHOWN`] characters.
fn show(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= MAX_SHOWN {
        return text;
    }
    let cut: String = text.chars().take(MAX_SHOWN - 1).collect();
    format!("{cut}…")
}

fn show_str(s: &str) -> String {
    show(&Value::String(s.to_string()))
}

fn show_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, input: Value) -> Result<(), String> {
        check_tool_input(&schema, &input)
    }

    fn err(schema: Value, input: Value) -> String {
        check(schema, input).expect_err("should fail")
    }

    fn bash() -> Value {
        json!({
            "type": "object",
            "properties": {
                "cmd": { "type": "string", "minLength": 1 },
                "path": { "type": "string" },
                "timeoutMs": { "type": "integer", "minimum": 1, "maximum": 600000 },
                "env": { "type": "object", "additionalProperties": { "type": "string" } },
                "mode": { "enum": ["run", "dry-run"] }
            },
            "required": ["cmd"],
            "additionalProperties": false
        })
    }

    #[test]
    fn a_good_input_passes() {
        check(bash(), json!({ "cmd": "ls" })).unwrap();
        check(
            bash(),
            json!({ "cmd": "ls -l", "path": "/tmp", "timeoutMs": 1000.0, "env": { "A": "1" }, "mode": "run" }),
        )
        .unwrap();
    }

    #[test]
    fn problems_name_their_paths() {
        assert_eq!(
            err(bash(), json!({ "path": 5 })),
            r#"input: missing required property "cmd"; input.path: expected string, got number"#
        );
        assert_eq!(
            err(
                bash(),
                json!({ "cmd": "", "timeoutMs": 1.5, "mode": "fast", "extra": true })
            ),
            concat!(
                "input.cmd: must be at least 1 character long, got 0; ",
                "input.timeoutMs: expected integer, got number 1.5; ",
                "input.mode: expected one of \"run\", \"dry-run\", got \"fast\"; ",
                r#"input: unexpected property "extra" (allowed: cmd, path, timeoutMs, env, mode)"#
            )
        );
        assert_eq!(
            err(
                bash(),
                json!({ "cmd": "x", "env": { "A": 1, "my var": null } })
            ),
            r#"input.env.A: expected string, got number; input.env["my var"]: expected string, got null"#
        );
        assert_eq!(
            err(bash(), json!({ "cmd": "x", "timeoutMs": 0 })),
            "input.timeoutMs: must be ≥ 1, got 0"
        );
        assert_eq!(
            err(bash(), json!("ls")),
            "input: expected object, got string"
        );
    }

    #[test]
    fn nested_arrays_and_objects() {
        let schema = json!({
            "type": "object",
            "properties": {
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "line": { "type": "integer", "minimum": 0 },
                            "text": { "type": "string", "maxLength": 5 }
                        },
                        "required": ["line", "text"]
                    }
                }
            },
            "required": ["edits"]
        });
        check(
            schema.clone(),
            json!({ "edits": [{ "line": 0, "text": "ok" }] }),
        )
        .unwrap();
        assert_eq!(
            err(
                schema.clone(),
                json!({ "edits": [{ "line": 1, "text": "ok" }, { "line": -1, "text": "too long" }, { "text": 3 }] })
            ),
            concat!(
                "input.edits[1].line: must be ≥ 0, got -1; ",
                "input.edits[1].text: must be at most 5 characters long, got 8; ",
                "input.edits[2]: missing required property \"line\"; ",
                "input.edits[2].text: expected string, got number"
            )
        );
        assert_eq!(
            err(schema, json!({ "edits": [] })),
            "input.edits: must have at least 1 item, got 0"
        );
    }

    #[test]
    fn at_most_five_problems_then_a_count() {
        let schema = json!({ "type": "array", "items": { "type": "string" } });
        let e = err(schema, json!([1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(e.matches("expected string").count(), 5);
        assert!(
            e.starts_with("input[0]: expected string, got number; input[1]:"),
            "{e}"
        );
        assert!(
            e.ends_with("input[4]: expected string, got number; and 2 more"),
            "{e}"
        );
    }

    #[test]
    fn empty_and_boolean_schemas() {
        for input in [
            json!(null),
            json!(1),
            json!("x"),
            json!([1]),
            json!({ "a": {} }),
        ] {
            check(json!({}), input.clone()).unwrap();
            check(json!(true), input.clone()).unwrap();
            assert_eq!(err(json!(false), input), "input: no value is allowed here");
        }
        let schema = json!({ "type": "object", "properties": { "secret": false } });
        assert_eq!(
            err(schema, json!({ "secret": 1 })),
            "input.secret: no value is allowed here"
        );
    }

    #[test]
    fn types_lists_integers_and_nullable() {
        let s = json!({ "type": ["string", "null"] });
        check(s.clone(), json!(null)).unwrap();
        check(s.clone(), json!("a")).unwrap();
        assert_eq!(
            err(s, json!(2)),
            "input: expected string or null, got number"
        );
        check(json!({ "type": "integer" }), json!(3.0)).unwrap();
        check(json!({ "type": "integer" }), json!(-7)).unwrap();
        check(json!({ "type": "number" }), json!(2.5)).unwrap();
        let n = json!({ "type": "string", "nullable": true });
        check(n.clone(), json!(null)).unwrap();
        assert_eq!(
            err(n, json!(true)),
            "input: expected string or null, got boolean"
        );
    }

    #[test]
    fn enum_const_and_numbers() {
        check(json!({ "enum": [1, "a", null] }), json!(1.0)).unwrap();
        assert_eq!(
            err(json!({ "const": "v1" }), json!("v2")),
            r#"input: expected "v1", got "v2""#
        );
        assert_eq!(
            err(
                json!({ "exclusiveMinimum": 0, "exclusiveMaximum": 10 }),
                json!(10)
            ),
            "input: must be < 10, got 10"
        );
        assert_eq!(
            err(json!({ "minimum": 0, "exclusiveMinimum": true }), json!(0)),
            "input: must be > 0, got 0"
        );
        check(json!({ "multipleOf": 0.1 }), json!(0.3)).unwrap();
        assert_eq!(
            err(json!({ "multipleOf": 5 }), json!(7)),
            "input: must be a multiple of 5, got 7"
        );
        let long: Vec<i32> = (0..20).collect();
        let e = err(json!({ "enum": long }), json!(99));
        assert!(
            e.starts_with("input: expected one of 0, 1, 2, 3, 4, 5, 6, 7, …, got 99"),
            "{e}"
        );
    }

    #[test]
    fn strings_count_characters() {
        check(json!({ "maxLength": 2 }), json!("é😀")).unwrap();
        assert_eq!(
            err(json!({ "maxLength": 2 }), json!("abc")),
            "input: must be at most 2 characters long, got 3"
        );
    }

    #[test]
    fn alternatives() {
        let id = json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] });
        check(id.clone(), json!("a")).unwrap();
        check(id.clone(), json!(3)).unwrap();
        assert_eq!(
            err(id, json!(true)),
            "input: expected string or integer, got boolean"
        );

        let target = json!({
            "type": "object",
            "properties": {
                "target": {
                    "oneOf": [
                        { "type": "object", "properties": { "file": { "type": "string" } }, "required": ["file"] },
                        { "type": "object", "properties": { "url": { "type": "string" } }, "required": ["url"] }
                    ]
                }
            }
        });
        check(target.clone(), json!({ "target": { "file": "a" } })).unwrap();
        assert_eq!(
            err(
                target.clone(),
                json!({ "target": { "file": "a", "url": "b" } })
            ),
            "input.target: matches 2 alternatives of oneOf (1, 2), expected exactly one"
        );
        assert_eq!(
            err(target, json!({ "target": { "file": 1 } })),
            concat!(
                "input.target: matches none of the 2 alternatives of oneOf; ",
                "the closest fails with input.target.file: expected string, got number"
            )
        );

        let both = json!({ "allOf": [{ "required": ["a"] }, { "required": ["b"] }] });
        check(both.clone(), json!({ "a": 1, "b": 2 })).unwrap();
        assert_eq!(
            err(both, json!({ "a": 1 })),
            r#"input: missing required property "b""#
        );
        assert_eq!(
            err(json!({ "not": { "type": "null" } }), json!(null)),
            r#"input: must not match the schema under "not""#
        );
    }

    #[test]
    fn arrays_tuples_and_uniqueness() {
        let pair = json!({ "type": "array", "prefixItems": [{ "type": "string" }, { "type": "number" }], "items": false });
        check(pair.clone(), json!(["a", 1])).unwrap();
        assert_eq!(
            err(pair.clone(), json!([1, "a"])),
            "input[0]: expected string, got number; input[1]: expected number, got string"
        );
        assert_eq!(
            err(pair, json!(["a", 1, 2])),
            "input: must have at most 2 items, got 3"
        );
        let old =
            json!({ "items": [{ "type": "string" }], "additionalItems": { "type": "boolean" } });
        check(old.clone(), json!(["a", true, false])).unwrap();
        assert_eq!(
            err(old, json!(["a", 1])),
            "input[1]: expected boolean, got number"
        );
        assert_eq!(
            err(
                json!({ "uniqueItems": true, "maxItems": 3 }),
                json!([{"a": 2}, 1, {"a": 2.0}, 3])
            ),
            "input: must have at most 3 items, got 4; input: items must be unique, but [0] and [2] are equal"
        );
    }

    #[test]
    fn local_refs_and_recursion() {
        let tree = json!({
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string" },
                        "children": { "type": "array", "items": { "$ref": "#/$defs/node" } }
                    },
                    "required": ["name"]
                }
            },
            "$ref": "#/$defs/node"
        });
        check(
            tree.clone(),
            json!({ "name": "a", "children": [{ "name": "b", "children": [] }] }),
        )
        .unwrap();
        assert_eq!(
            err(
                tree,
                json!({ "name": "a", "children": [{ "children": [{ "name": 3 }] }] })
            ),
            concat!(
                "input.children[0]: missing required property \"name\"; ",
                "input.children[0].children[0].name: expected string, got number"
            )
        );
        // A schema that refers to itself without going deeper in the input
        // stops at the depth limit instead of looping.
        let e = err(json!({ "$ref": "#" }), json!(1));
        assert!(
            e.contains("more than 128 levels deep here; not checked"),
            "{e}"
        );
        // Deep input under a recursive schema: checked to the limit, no overflow.
        let mut deep = json!(1);
        for _ in 0..500 {
            deep = json!([deep]);
        }
        let e = err(json!({ "type": "array", "items": { "$ref": "#" } }), deep);
        assert!(e.contains("not checked"), "{e}");
        // Input deeper than the writer accepts is refused before anything
        // recurses into it.
        let mut deeper = json!(1);
        for _ in 0..600 {
            deeper = json!([deeper]);
        }
        assert_eq!(
            err(json!({}), deeper),
            "input: nested deeper than 512 levels"
        );
        // `definitions` and escaped pointers work too.
        let s =
            json!({ "definitions": { "a/b": { "type": "string" } }, "$ref": "#/definitions/a~1b" });
        check(s.clone(), json!("x")).unwrap();
        assert_eq!(err(s, json!(1)), "input: expected string, got number");
    }

    #[test]
    fn unchecked_keywords_let_inputs_through() {
        let s = json!({
            "type": "object",
            "properties": { "email": { "type": "string", "format": "email", "pattern": "^x" } },
            "patternProperties": { "^x-": { "type": "string" } },
            "additionalProperties": false
        });
        check(s, json!({ "email": "not an email", "x-any": 1 })).unwrap();
    }

    #[test]
    fn schemas_that_are_not_schemas_say_so() {
        let cases = [
            (
                json!("object"),
                r#"inputSchema: a schema is an object or a boolean, not string"#,
            ),
            (
                json!(null),
                "inputSchema: a schema is an object or a boolean, not null",
            ),
            (
                json!({ "type": "strin" }),
                r#"inputSchema.type: "strin" is not a type (one of string, number, integer, boolean, object, array, null)"#,
            ),
            (
                json!({ "properties": { "p": { "type": ["string", 5] } } }),
                r#"inputSchema.properties.p.type: 5 is not a type (one of string, number, integer, boolean, object, array, null)"#,
            ),
            (
                json!({ "type": [] }),
                "inputSchema.type: must be a type name or a non-empty list of them, not []",
            ),
            (
                json!({ "required": "cmd" }),
                r#"inputSchema.required: must be a list of property names, not "cmd""#,
            ),
            (
                json!({ "properties": [] }),
                "inputSchema.properties: must be an object of schemas, not []",
            ),
            (
                json!({ "minLength": -1 }),
                "inputSchema.minLength: must be a whole number ≥ 0, not -1",
            ),
            (
                json!({ "maximum": "10" }),
                r#"inputSchema.maximum: must be a number, not "10""#,
            ),
            (
                json!({ "multipleOf": 0 }),
                "inputSchema.multipleOf: must be a number above 0, not 0",
            ),
            (
                json!({ "anyOf": [] }),
                "inputSchema.anyOf: must be a non-empty list of schemas, not []",
            ),
            (
                json!({ "items": [{}, 3] }),
                "inputSchema.items[1]: a schema is an object or a boolean, not number",
            ),
            (
                json!({ "additionalProperties": "no" }),
                "inputSchema.additionalProperties: a schema is an object or a boolean, not string",
            ),
            (
                json!({ "$ref": "#/$defs/missing" }),
                r##"inputSchema.$ref: $ref "#/$defs/missing" points to nothing in the schema"##,
            ),
            (
                json!({ "$ref": "https://example.com/s.json" }),
                r##"inputSchema.$ref: $ref "https://example.com/s.json" points outside the schema; only "#/…" references are supported"##,
            ),
            (
                json!({ "properties": { "my key": { "enum": 3 } } }),
                r#"inputSchema.properties["my key"].enum: must be a list of values, not 3"#,
            ),
        ];
        for (schema, want) in cases {
            let e = check_tool_input(&schema, &json!({})).unwrap_err();
            assert_eq!(
                e,
                format!("the tool's inputSchema is not a valid JSON Schema: {want}"),
                "{schema}"
            );
            assert_eq!(check_schema(&schema).unwrap_err(), e);
        }
        check_schema(&bash()).unwrap();
        // Unknown keywords are not errors.
        check_schema(&json!({ "x-vendor": 1, "description": "d", "examples": [] })).unwrap();
        // A schema nested deeper than the limit.
        let mut deep = json!({});
        for _ in 0..200 {
            deep = json!({ "not": deep });
        }
        assert!(
            check_schema(&deep)
                .unwrap_err()
                .contains("nested deeper than 128 levels")
        );
    }
}
