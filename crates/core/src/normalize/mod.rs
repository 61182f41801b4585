//! Moving conversations between providers (FORMAT.md §15): a canonical message
//! model (pi-ai's shapes, extended), codecs for Anthropic Messages, OpenAI Chat
//! Completions, OpenAI Responses and Gemini `generateContent` in both
//! directions, the rules applied when the target is not the origin, and a
//! report of every step. JSON goes in and out as text, so numbers and escapes
//! inside arguments, signatures and unknown blocks are never re-spelled.

pub mod canon;
pub mod decode;
pub mod encode;
pub mod ids;
pub mod import;
pub mod incremental;
pub mod jv;
pub mod migrate;
pub mod refuse;
pub mod report;
pub mod transform;
pub mod types;

pub use canon::Provider;
pub use decode::Conversation;
pub use jv::J;
pub use report::{CompatibilityReport, ConversionStep};

use crate::Result;
use canon::{bad, extend, role};

/// Parses JSON text given by a caller (`INVALID_INPUT` with the offset if it is not JSON).
pub fn parse(text: &str, what: &str) -> Result<J> {
    J::parse(text).map_err(|e| not_json(what, e))
}

pub(crate) fn not_json(what: &str, e: jv::ParseError) -> crate::Error {
    crate::Error::invalid_input(format!("{what} is not valid JSON: {}", e.message))
        .at(None, e.offset as u64)
}

/// Decodes a provider request fragment into a canonical conversation.
pub fn decode(request: &J, p: Provider) -> Result<Conversation> {
    if !request.is_obj() {
        return Err(bad(format!("a {} request must be a JSON object", p.name())));
    }
    let model = request.get("model").cloned();
    match p {
        Provider::Anthropic => decode::anthropic(request, model),
        Provider::OpenAi => decode::openai(request, model),
        Provider::Responses => decode::responses(request, model),
        Provider::Google => decode::google(request, model),
    }
}

/// `fromProvider`: a request fragment as JSON text → `{system?, systemRole?, messages, tools?}`.
pub fn from_provider(request: &str, provider: &str) -> Result<String> {
    let p = Provider::parse(provider)?;
    let conv = decode(&parse(request, "the request")?, p)?;
    Ok(conversation_json(&conv).text())
}

/// A conversation as the JSON object the bindings return.
pub fn conversation_json(conv: &Conversation) -> J {
    let mut o = J::Obj(vec![]);
    if let Some(s) = &conv.system {
        o.set("system", s.clone());
    }
    if let Some(r) = &conv.system_role {
        o.set("systemRole", J::s(r));
    }
    o.set("messages", J::Arr(conv.messages.clone()));
    if let Some(t) = &conv.tools {
        o.set("tools", J::Arr(t.clone()));
    }
    if let Some(so) = &conv.system_original {
        o.set("systemOriginal", so.clone());
    }
    if let Some(to) = &conv.tools_original {
        o.set("toolsOriginal", to.clone());
    }
    o
}

/// Options of [`to_provider`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ToOptions {
    /// Target model: decides whether same-provider messages count as the same
    /// origin (signatures of another model are not replayed) and Gemini 3 rules.
    pub model: Option<String>,
    /// System prompt (string or text blocks).
    pub system: Option<J>,
    /// `"system"` or `"developer"`: the role of the system prompt's message for
    /// OpenAI Chat (Responses takes it as `instructions`).
    pub system_role: Option<String>,
    /// Tool definitions `{name, description?, parameters}`.
    pub tools: Option<Vec<J>>,
    /// `fromProvider`'s `systemOriginal` (the system prompt's exact JSON).
    pub system_original: Option<J>,
    /// `fromProvider`'s `toolsOriginal` (the tools' exact JSON).
    pub tools_original: Option<J>,
    /// Pair calls and results (fill missing results, drop orphans). Off for single messages.
    pub pairing: bool,
    /// The target has thinking on (Anthropic: extended or adaptive thinking):
    /// the final assistant turn must then start with a thinking block.
    pub thinking: bool,
    /// An earlier conversion's `idMap` (target id → original id): ids found in
    /// it get their original back (the way home after a trip to another provider).
    pub id_map: Vec<(String, String)>,
}

impl ToOptions {
    /// Reads `{model?, system?, systemRole?, tools?, thinking?}` (absent → defaults).
    pub fn from_json(text: Option<&str>) -> Result<ToOptions> {
        let mut o = ToOptions {
            pairing: true,
            ..Default::default()
        };
        let Some(text) = text
            .map(str::trim)
            .filter(|t| !t.is_empty() && *t != "null" && *t != "undefined")
        else {
            return Ok(o);
        };
        let v = parse(text, "the options")?;
        if !v.is_obj() {
            return Err(bad("options must be an object"));
        }
        o.model = v.str_of("model").map(|s| s.to_string());
        o.system = v.get("system").filter(|s| !matches!(s, J::Null)).cloned();
        o.system_role = v.str_of("systemRole").map(|s| s.to_string());
        if let Some(r) = &o.system_role
            && r != "system"
            && r != "developer"
        {
            return Err(bad("systemRole must be \"system\" or \"developer\""));
        }
        if let Some(t) = v.get("tools").filter(|t| !matches!(t, J::Null)) {
            o.tools = Some(
                t.as_arr()
                    .ok_or_else(|| bad("tools must be an array"))?
                    .clone(),
            );
        }
        o.system_original = v.get("systemOriginal").filter(|s| s.is_obj()).cloned();
        o.tools_original = v.get("toolsOriginal").filter(|s| s.is_obj()).cloned();
        o.thinking = match v.get("thinking") {
            None | Some(J::Null) => false,
            Some(t) => t
                .as_bool()
                .ok_or_else(|| bad("thinking must be true or false"))?,
        };
        match v.get("idMap") {
            None | Some(J::Null) => {}
            Some(m @ J::Obj(_)) => {
                for k in m.keys() {
                    let orig = m
                        .get(&k)
                        .and_then(J::as_str)
                        .ok_or_else(|| bad("idMap values must be strings"))?;
                    o.id_map.push((k.to_string(), orig.to_string()));
                }
            }
            Some(_) => return Err(bad("idMap must be an object (target id → original id)")),
        }
        Ok(o)
    }
}

/// The result of a conversion.
#[derive(Debug, Clone)]
pub struct Converted {
    pub request: J,
    pub report: CompatibilityReport,
    /// Target id → original id, for every id that had to change, and ids
    /// kept as they are that their own provider's rule would change (listed
    /// with themselves, so that the way home keeps them).
    pub id_map: Vec<(String, String)>,
    /// Target tool name → original name, for every name that had to change.
    pub name_map: Vec<(String, String)>,
}

impl Converted {
    /// `{"request", "report", "idMap"}` as JSON text.
    pub fn to_json(&self) -> String {
        let mut o = J::obj([("request", self.request.clone())]);
        let rep = serde_json::to_string(&self.report).unwrap_or_else(|_| "{}".into());
        o.set("report", J::parse(&rep).unwrap_or(J::Null));
        o.set("idMap", id_map_json(&self.id_map));
        o.set("nameMap", id_map_json(&self.name_map));
        o.text()
    }
}

/// An id map (target id → original id) as a JSON object.
pub fn id_map_json(pairs: &[(String, String)]) -> J {
    J::Obj(
        pairs
            .iter()
            .map(|(t, orig)| {
                let mut k = String::new();
                crate::json::push_escaped(&mut k, t);
                (k.into(), J::s(orig))
            })
            .collect(),
    )
}

/// Converts canonical messages to a request for `target`.
pub fn convert(msgs: Vec<J>, target: Provider, opts: &ToOptions) -> Result<Converted> {
    check_messages(&msgs, 0)?;
    let mut report = CompatibilityReport::new();
    let (mut msgs, mut ids) = transform::run_restoring(
        msgs,
        target,
        opts.model.as_deref(),
        &mut report,
        opts.pairing,
        &opts.id_map,
    );
    // What the target refuses outright (FORMAT.md §15.4, rules 12–15).
    for (i, m) in msgs.iter_mut().enumerate() {
        refuse::media(m, i, target, &mut report);
    }
    if opts.pairing {
        if opts.thinking && target == Provider::Anthropic {
            refuse::thinking_turn(&mut msgs, &mut report);
        }
        refuse::leading_user(&mut msgs, target, &mut report);
    }
    let (system, tools) = prepare(target, opts, &mut ids, &mut report)?;
    let mut ctx = encode::Ctx::new(opts.model.clone());
    let request = encode::encode_request(
        target,
        &msgs,
        system.as_ref(),
        opts.system_role.as_deref(),
        opts.system_original.as_ref(),
        tools.as_deref(),
        opts.tools_original.as_ref(),
        &mut report,
        &mut ctx,
    );
    Ok(Converted {
        request,
        report,
        id_map: ids.changed.clone(),
        name_map: ids.names_changed().to_vec(),
    })
}

/// Every message is an object with a role (`first`: the index of `msgs[0]`).
pub(crate) fn check_messages(msgs: &[J], first: usize) -> Result<()> {
    for (i, m) in msgs.iter().enumerate() {
        if !m.is_obj() || m.str_of("role").is_none() {
            return Err(bad(format!(
                "messages[{}] must be an object with a role",
                first + i
            )));
        }
    }
    Ok(())
}

/// What [`convert`] does between the messages' rules and the encoding: the
/// system prompt checked (other providers' fields dropped), the tool
/// definitions given the names the calls got.
pub(crate) fn prepare(
    target: Provider,
    opts: &ToOptions,
    ids: &mut ids::IdMap,
    report: &mut CompatibilityReport,
) -> Result<(Option<J>, Option<Vec<J>>)> {
    let mut system = opts.system.clone();
    match &system {
        None | Some(J::Str(_)) => {}
        Some(J::Arr(blocks))
            if blocks
                .iter()
                .all(|b| b.is("type", "text") && matches!(b.get("text"), Some(J::Str(_)))) => {}
        Some(_) => {
            return Err(bad(
                "system must be a string or an array of text blocks {type: \"text\", text}",
            ));
        }
    }
    if let Some(J::Arr(blocks)) = &mut system {
        for b in blocks.iter_mut() {
            transform::strip_foreign_vendor(b, target, None, "system prompt fields", report);
        }
    }
    // Tool definitions take the names the calls got.
    let tools: Option<Vec<J>> = opts.tools.as_ref().map(|list| {
        list.iter()
            .filter_map(|t| {
                let mut t = t.clone();
                match custom_as_function(&t, list, target, report) {
                    Custom::Function(f) | Custom::Sibling(f) => t = f,
                    Custom::Dropped => return None,
                    Custom::NotOne => {}
                }
                if t.get("raw").is_none() {
                    let n = t.str_of("name").unwrap_or_default().to_string();
                    let m = transform::map_name(ids, &n, target, None, report);
                    if m != n {
                        t.set("name", J::s(&m));
                    }
                } else if t.is("provider", target.name())
                    && let Some(named) = t.get_mut("raw").and_then(raw_tool_named)
                {
                    // A hosted tool the target gets as it is, whose calls
                    // name it (OpenAI custom tools): the name its calls got.
                    let n = named.str_of("name").unwrap_or_default().to_string();
                    let m = transform::map_name(ids, &n, target, None, report);
                    if m != n {
                        named.set("name", J::s(&m));
                    }
                }
                Some(t)
            })
            .collect()
    });
    Ok((system, tools))
}

/// What [`custom_as_function`] made of a tool definition.
enum Custom {
    /// Not an OpenAI custom tool for another target: as it is.
    NotOne,
    /// The function it is sent as.
    Function(J),
    /// The custom tool of the other OpenAI API, as that API writes it.
    Sibling(J),
    /// Left out (reported): a function has its name.
    Dropped,
}

/// An OpenAI custom tool (free-form text input; Chat `{type: "custom",
/// custom: {name, description?, format?}}`, Responses `{type: "custom",
/// name, …}`) for another target: a function of one string parameter
/// `input`, which is how its calls are sent there (`arguments: {input}`).
/// Its `format` (a grammar the input follows) has no equivalent: lossy.
fn custom_as_function(
    t: &J,
    tools: &[J],
    target: Provider,
    rep: &mut CompatibilityReport,
) -> Custom {
    let (Some(raw), Some(from)) = (t.get("raw"), t.str_of("provider")) else {
        return Custom::NotOne;
    };
    if from == target.name()
        || !matches!(from.as_ref(), "openai" | "openai-responses")
        || !raw.is("type", "custom")
    {
        return Custom::NotOne;
    }
    let def = raw.get("custom").unwrap_or(raw);
    let Some(name) = def.get("name").filter(|n| matches!(n, J::Str(_))) else {
        return Custom::NotOne;
    };
    if let Some(mut sibling) = custom_for_sibling(raw, target, rep) {
        // Rule 11: the definition is written anew for the target.
        let n = sibling.replace_lone_surrogates();
        let what = format!(" in the definition of custom tool {}", name.text());
        encode::lone_surrogates_replaced(n, None, "tools", &what, rep);
        return Custom::Sibling(J::obj([
            ("provider", J::s(target.name())),
            ("raw", sibling),
        ]));
    }
    // A function of that name is there already: two tools cannot share it
    // (the other OpenAI API gets both, as the source had them: the calls
    // stay custom calls there, so the definition follows them).
    if tools
        .iter()
        .any(|o| o.get("raw").is_none() && o.get("name") == Some(name))
    {
        rep.lossy(
            "tool_dropped",
            None,
            "tools",
            format!(
                "{from} custom tool {} not sent to {}: a function of that name is sent, and two tools cannot share a name",
                name.text(),
                target.name()
            ),
        );
        return Custom::Dropped;
    }
    let mut f = J::obj([("name", name.clone())]);
    if let Some(d) = def.get("description") {
        f.set("description", d.clone());
    }
    let params =
        r#"{"type":"object","properties":{"input":{"type":"string"}},"required":["input"]}"#;
    f.set("parameters", J::parse(params).unwrap_or(J::Obj(vec![])));
    let detail = format!(
        "{from} custom tool {} sent to {} as a function of one string parameter, input",
        name.text(),
        target.name()
    );
    // The default format, free text, loses nothing.
    if def.get("format").is_some_and(|f| !f.is("type", "text")) {
        rep.lossy(
            "custom_tool_to_function",
            None,
            "tools",
            format!("{detail}: its input format is not sent"),
        );
    } else {
        rep.step("custom_tool_to_function", None, detail);
    }
    Custom::Function(f)
}

/// An OpenAI custom tool as the other OpenAI API writes it: Chat `{type:
/// "custom", custom: {name, description?, format?}}` with a grammar format
/// `{type: "grammar", grammar: {definition, syntax}}`, Responses `{type:
/// "custom", name, description?, format?}` with `{type: "grammar",
/// definition, syntax}`. Its calls go as custom calls there, so it always
/// stays a custom tool: members the other shape lacks are left out
/// (reported), a format of another shape is sent as it is. `None` when
/// `target` is not the other OpenAI API.
fn custom_for_sibling(raw: &J, target: Provider, rep: &mut CompatibilityReport) -> Option<J> {
    let mut left = Vec::new();
    let mut others = |o: &J, keys: &[&str], at: &str| {
        for k in o.keys() {
            if !keys.contains(&k.as_ref()) {
                left.push(format!("{at}{k}"));
            }
        }
    };
    let (def, to_chat) = match target {
        Provider::OpenAi => {
            others(raw, &["type", "name", "description", "format"], "");
            (raw, true)
        }
        Provider::Responses => {
            let def = raw.get("custom").filter(|d| d.is_obj())?;
            others(raw, &["type", "custom"], "");
            others(def, &["name", "description", "format"], "custom.");
            (def, false)
        }
        _ => return None,
    };
    let mut out = J::obj([("name", def.get("name")?.clone())]);
    if let Some(d) = def.get("description") {
        out.set("description", d.clone());
    }
    if let Some(f) = def.get("format") {
        let g = if to_chat { Some(f) } else { f.get("grammar") };
        let format = match g {
            Some(g) if f.is("type", "grammar") && g.get("definition").is_some() => {
                if to_chat {
                    others(f, &["type", "definition", "syntax"], "format.");
                } else {
                    others(f, &["type", "grammar"], "format.");
                    others(g, &["definition", "syntax"], "format.grammar.");
                }
                let mut grammar = J::obj([("definition", g.get("definition")?.clone())]);
                if let Some(x) = g.get("syntax") {
                    grammar.set("syntax", x.clone());
                }
                if to_chat {
                    J::obj([("type", J::s("grammar")), ("grammar", grammar)])
                } else {
                    let mut r = J::obj([("type", J::s("grammar"))]);
                    if let J::Obj(m) = grammar {
                        extend(&mut r, m);
                    }
                    r
                }
            }
            // Free text, or a shape this version does not know: as it is.
            _ => f.clone(),
        };
        out.set("format", format);
    }
    if !left.is_empty() {
        rep.warn_step(
            "provider_fields_dropped",
            None,
            format!(
                "custom tool {} fields not sent to {}: {}",
                def.get("name").map(J::text).unwrap_or_default(),
                target.name(),
                left.join(", ")
            ),
        );
    }
    Some(if to_chat {
        J::obj([("type", J::s("custom")), ("custom", out)])
    } else {
        let mut r = J::obj([("type", J::s("custom"))]);
        if let J::Obj(m) = out {
            extend(&mut r, m);
        }
        r
    })
}

/// Where a provider's own tool definition holds the name its calls use:
/// OpenAI Chat `{type, custom: {name}}` or `{type, function: {name}}`,
/// Responses and Anthropic `{type, name}`; `None` for tools without one.
fn raw_tool_named(raw: &mut J) -> Option<&mut J> {
    let inner = ["custom", "function"].into_iter().find(|k| {
        raw.get(k)
            .is_some_and(|v| matches!(v.get("name"), Some(J::Str(_))))
    });
    match inner {
        Some(k) => raw.get_mut(k),
        None => matches!(raw.get("name"), Some(J::Str(_))).then_some(raw),
    }
}

/// Reads what `toProvider` accepts: an array of messages or `{messages, system?, systemRole?, tools?}`.
pub fn read_input(text: &str, opts: &mut ToOptions) -> Result<Vec<J>> {
    input_messages(parse(text, "the messages")?, opts)
}

/// [`read_input`] of parsed input.
fn input_messages(input: J, opts: &mut ToOptions) -> Result<Vec<J>> {
    match input {
        J::Arr(a) => Ok(a),
        o @ J::Obj(_) => {
            if opts.system.is_none() {
                opts.system = o.get("system").filter(|s| !matches!(s, J::Null)).cloned();
            }
            if opts.system_role.is_none() {
                opts.system_role = o.str_of("systemRole").map(|s| s.to_string());
            }
            if opts.tools.is_none() {
                opts.tools = o.get("tools").and_then(J::as_arr).cloned();
            }
            if opts.system_original.is_none() {
                opts.system_original = o.get("systemOriginal").filter(|s| s.is_obj()).cloned();
            }
            if opts.tools_original.is_none() {
                opts.tools_original = o.get("toolsOriginal").filter(|s| s.is_obj()).cloned();
            }
            o.get("messages")
                .and_then(J::as_arr)
                .cloned()
                .ok_or_else(|| bad("expected an array of messages or an object with messages"))
        }
        _ => Err(bad(
            "expected an array of messages or an object with messages",
        )),
    }
}

/// `toProvider`: canonical messages (JSON text) → `{request, report, idMap}` (JSON text).
pub fn to_provider(messages: &str, target: &str, options: Option<&str>) -> Result<String> {
    let p = Provider::parse(target)?;
    let mut opts = ToOptions::from_json(options)?;
    let msgs = read_input(messages, &mut opts)?;
    Ok(convert(msgs, p, &opts)?.to_json())
}

/// [`to_provider`] for the bindings: the request's JSON text, a newline (which
/// compact JSON never contains), then `{report, idMap, nameMap}`. The messages'
/// text is kept by the parsed tree, not copied. With `threads` > 1 the trees
/// are freed on another thread, after the text is made.
pub fn to_provider_lines(
    messages: String,
    target: &str,
    options: Option<&str>,
    threads: usize,
) -> Result<String> {
    let p = Provider::parse(target)?;
    let mut opts = ToOptions::from_json(options)?;
    let size = messages.len();
    let text = std::sync::Arc::new(messages);
    let parsed = |opts: &mut ToOptions| {
        let input =
            J::parse_shared_threads(&text, threads).map_err(|e| not_json("the messages", e))?;
        input_messages(input, opts)
    };
    let msgs = parsed(&mut opts)?;
    let body = body_buffer(size, threads);
    let again = || parsed(&mut opts.clone());
    lines(
        convert_threads(msgs, p, &opts, threads, incremental::MIN_PER_PART, again)?,
        size,
        threads,
        body,
    )
}

/// [`convert`] on up to `threads` threads ([`incremental::convert_split`]);
/// `again` gives the messages again when a part converted alone differed.
pub fn convert_threads(
    msgs: Vec<J>,
    target: Provider,
    opts: &ToOptions,
    threads: usize,
    min_per_part: usize,
    again: impl FnOnce() -> Result<Vec<J>>,
) -> Result<Converted> {
    match incremental::convert_split(msgs, target, opts, threads, min_per_part)? {
        incremental::Split::Done(c) => Ok(c),
        incremental::Split::Whole(msgs) => convert(msgs, target, opts),
        incremental::Split::Differs => convert(again()?, target, opts),
    }
}

/// A session's context from `leaf` (default: the current leaf) as a request for
/// `target`, without the context ever leaving Rust: [`to_provider_lines`]'s format.
/// With `threads` > 1 a long context's messages are parsed on up to that many
/// threads (the trees, in order, and any error are the same), and the trees
/// are freed on another thread after the text is made.
pub fn session_to_provider_lines(
    session: &crate::Session,
    leaf: Option<&str>,
    target: &str,
    options: Option<&str>,
    threads: usize,
) -> Result<String> {
    /// Below this many messages one thread parses them all.
    const PARALLEL_MIN_MESSAGES: usize = 2048;
    let p = Provider::parse(target)?;
    let opts = ToOptions::from_json(options)?;
    let ctx = session.context(leaf)?;
    let size = ctx.messages.iter().map(|m| m.len()).sum();
    let trees = || -> Result<Vec<J>> {
        Ok(
            if threads > 1 && ctx.messages.len() >= PARALLEL_MIN_MESSAGES {
                let parts: Vec<&[std::borrow::Cow<'_, str>]> = ctx
                    .messages
                    .chunks(ctx.messages.len().div_ceil(threads))
                    .collect();
                let (first, later) = on_threads(
                    "forkpoint-parse",
                    &parts[1..],
                    || llm_trees(session, parts[0]),
                    |part| llm_trees(session, part),
                );
                let mut all = Vec::with_capacity(ctx.messages.len());
                all.extend(first?);
                for (part, trees) in parts[1..].iter().zip(later) {
                    // A part whose thread did not run is parsed here.
                    all.extend(trees.unwrap_or_else(|| llm_trees(session, part))?);
                }
                all
            } else {
                llm_trees(session, &ctx.messages)?
            },
        )
    };
    let body = body_buffer(size, threads);
    lines(
        convert_threads(
            trees()?,
            p,
            &opts,
            threads,
            incremental::MIN_PER_PART,
            trees,
        )?,
        size,
        threads,
        body,
    )
}

use crate::threads::on_threads;

/// The trees of a session's context messages as pi's `convertToLlm` gives
/// them ([`crate::context::to_llm`]): a message the LLM takes as it is is
/// parsed where it lies in the session's text (nothing copied); the others
/// go through `to_llm`.
fn llm_trees(session: &crate::Session, messages: &[std::borrow::Cow<'_, str>]) -> Result<Vec<J>> {
    let text = session.shared_text();
    let base = text.as_ptr() as usize;
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let at = (m.as_ptr() as usize).wrapping_sub(base);
        let tree = if at <= text.len() && text.len() - at >= m.len() {
            J::parse_shared(text, at, at + m.len())
        } else {
            J::parse(m)
        };
        let tree = tree.map_err(|e| not_json("a context message", e))?;
        if !tree.is_obj() {
            continue; // not an object: pi's switch falls through to undefined
        }
        if matches!(
            tree.str_of("role").as_deref(),
            Some("user" | "assistant" | "toolResult")
        ) {
            out.push(tree);
            continue;
        }
        for t in crate::context::to_llm(std::slice::from_ref(m), crate::json::DEFAULT_MAX_DEPTH)? {
            out.push(parse(&t, "a context message")?);
        }
    }
    Ok(out)
}

/// The buffer of a body of about `size` bytes, made on another thread while
/// the conversion runs (`threads` > 1, a large body): every page of it is
/// written there once, so writing the body later never waits for a fresh
/// page (for a 124 MiB context that was about 27,000 page faults, some 60 ms).
fn body_buffer(size: usize, threads: usize) -> Option<std::thread::JoinHandle<String>> {
    /// Smaller bodies are written in a few milliseconds anyway.
    const MIN_SIZE: usize = 8 << 20;
    if threads < 2 || size < MIN_SIZE {
        return None;
    }
    let capacity = body_capacity(size);
    std::thread::Builder::new()
        .name("forkpoint-body".into())
        .spawn(move || {
            // Memory that cannot be had is not made ready here (never an abort):
            // the body then finds its own.
            let mut out = String::new();
            if out.try_reserve_exact(capacity).is_err() {
                return out;
            }
            let zeros = "\0".repeat(1 << 16);
            while out.len() + zeros.len() <= capacity {
                out.push_str(&zeros);
            }
            out.clear();
            out
        })
        .ok()
}

/// Room for the body of an input of `size` bytes (a body is a little longer
/// or shorter than its input).
fn body_capacity(size: usize) -> usize {
    size + size / 8
}

/// `size`: the input's length, which the body's is close to (reserved once,
/// so a large body is not copied each time its buffer doubles; `body`: that
/// buffer, made ahead by [`body_buffer`]). With `threads` > 1 the conversion
/// is freed on another thread (nobody waits for it).
fn lines(
    c: Converted,
    size: usize,
    threads: usize,
    body: Option<std::thread::JoinHandle<String>>,
) -> Result<String> {
    let rep =
        serde_json::to_string(&c.report).map_err(|e| crate::Error::internal(e.to_string()))?;
    let mut out = body.and_then(|h| h.join().ok()).unwrap_or_default();
    out.reserve(body_capacity(size) + rep.len() + 64);
    c.request.write_threads(&mut out, threads);
    out.push('\n');
    out.push_str("{\"report\":");
    out.push_str(&rep);
    out.push_str(",\"idMap\":");
    out.push_str(&id_map_json(&c.id_map).text());
    out.push_str(",\"nameMap\":");
    out.push_str(&id_map_json(&c.name_map).text());
    out.push('}');
    if threads > 1 {
        crate::threads::free_later(c);
    }
    Ok(out)
}

/// `MessageNormalizer.normalize`: one provider message → one canonical message,
/// or an array when the provider message holds several (an Anthropic user turn
/// with tool results, a Gemini turn with several function responses).
pub fn normalize_message(message: &str, provider: &str) -> Result<String> {
    let p = Provider::parse(provider)?;
    let m = parse(message, "the message")?;
    if !m.is_obj() {
        return Err(bad("a message must be a JSON object"));
    }
    let wrapped = match p {
        Provider::Anthropic | Provider::OpenAi => J::obj([("messages", J::Arr(vec![m]))]),
        Provider::Responses => J::obj([("input", J::Arr(vec![m]))]),
        Provider::Google => J::obj([("contents", J::Arr(vec![m]))]),
    };
    let conv = decode(&wrapped, p)?;
    let mut msgs = conv.messages;
    if let Some(s) = conv.system {
        let mut sys = J::obj([("role", J::s("system")), ("content", s)]);
        if conv.system_role.as_deref() == Some("developer") {
            sys.set("developer", J::Bool(true));
        }
        msgs.insert(0, sys);
    }
    Ok(match msgs.len() {
        1 => msgs.remove(0).text(),
        _ => J::Arr(msgs).text(),
    })
}

/// `MessageNormalizer.denormalize`: canonical message(s) → the provider message,
/// or an array when the target needs several (Responses items, one OpenAI tool
/// message per result). Per-message rules apply; calls and results are not paired.
/// Returns `{"message", "report"}`.
pub fn denormalize_message(
    normalized: &str,
    provider: &str,
    model: Option<&str>,
) -> Result<String> {
    let p = Provider::parse(provider)?;
    let msgs = match parse(normalized, "the message")? {
        J::Arr(a) => a,
        o => vec![o],
    };
    // Anthropic takes a system message inline only where one was (its mark).
    let inline = |m: &J| {
        p == Provider::Anthropic
            && m.get("vendor")
                .and_then(|v| v.get(Provider::Anthropic.name()))
                .and_then(|a| a.get("inline"))
                == Some(&J::Bool(true))
    };
    if msgs.iter().any(|m| role(m) == "system" && !inline(m))
        && matches!(p, Provider::Anthropic | Provider::Google)
    {
        return Err(bad(format!(
            "{} has no system messages inside a conversation: pass the system prompt to toProvider",
            p.name()
        )));
    }
    let opts = ToOptions {
        model: model.map(str::to_string),
        pairing: false,
        ..Default::default()
    };
    let c = convert(msgs, p, &opts)?;
    let list = match p {
        Provider::Anthropic | Provider::OpenAi => c.request.get("messages"),
        Provider::Responses => c.request.get("input"),
        Provider::Google => c.request.get("contents"),
    }
    .and_then(J::as_arr)
    .cloned()
    .unwrap_or_default();
    let message = match list.len() {
        1 => list.into_iter().next().unwrap_or(J::Null),
        _ => J::Arr(list),
    };
    let rep = serde_json::to_string(&c.report).unwrap_or_else(|_| "{}".into());
    let mut o = J::obj([("message", message)]);
    o.set("report", J::parse(&rep).unwrap_or(J::Null));
    Ok(o.text())
}

/// `SessionMigrator.checkCompatibility`: every step a conversion of messages
/// from `source` (the provider they were recorded with) to `target` may take,
/// before looking at one — each with the lossy flag the conversion gives it.
/// The same provider lists the repairs made for it too (rules 6, 12–15 of
/// FORMAT.md §15.4: a request that breaks them would be rejected).
pub fn check_compatibility(source: &str, target: &str) -> Result<CompatibilityReport> {
    let s = Provider::parse(source)?;
    let t = Provider::parse(target)?;
    let mut r = CompatibilityReport::new();
    use Provider::*;
    let other = s != t;
    let (sn, tn) = (s.name(), t.name());
    let to_ag = matches!(t, Anthropic | Google);
    let from_chat = matches!(s, OpenAi | Responses);

    // pi's own messages (a session's), rules 1–2.
    r.step(
        "pi_message_converted",
        None,
        "pi's bashExecution, custom and summary messages are sent as user messages".into(),
    );
    r.step(
        "excluded_from_context",
        None,
        "messages marked excludeFromContext are not sent".into(),
    );
    r.lossy(
        "aborted_turn_dropped",
        None,
        "message",
        "assistant turns that ended with an error or were aborted are not sent".into(),
    );
    // Rules 3–4: what only verifies with its origin.
    if other {
        r.lossy(
            "thinking_to_text",
            None,
            "thinking",
            format!("{sn}'s reasoning is sent to {tn} as plain text (or left out when empty)"),
        );
        r.lossy(
            "signature_dropped",
            None,
            "thinkingSignature",
            "reasoning signatures and encrypted reasoning only verify with their origin".into(),
        );
        r.lossy(
            "thinking_dropped",
            None,
            "thinkingSignature",
            "empty thinking kept only for its signature is left out".into(),
        );
        r.step(
            "thinking_dropped",
            None,
            "empty thinking without a signature is left out".into(),
        );
    }
    if other && s == Anthropic {
        r.lossy(
            "redacted_thinking_dropped",
            None,
            "thinking",
            "redacted thinking cannot be sent elsewhere".into(),
        );
    }
    if other && s == Responses {
        r.lossy(
            "reasoning_item_dropped",
            None,
            "thinkingSignature",
            "Responses reasoning items (encrypted_content) are not sent elsewhere".into(),
        );
    }
    if other && matches!(s, Responses | Google) {
        r.lossy(
            "signature_dropped",
            None,
            "textSignature",
            "message ids / text signatures belong to their origin".into(),
        );
    }
    if other && s == Google {
        r.lossy(
            "signature_dropped",
            None,
            "thoughtSignature",
            "Gemini thought signatures on calls belong to their model".into(),
        );
    }
    // Between the two OpenAI APIs a custom tool stays one.
    if other && from_chat && !matches!(t, OpenAi | Responses) {
        r.step(
            "custom_tool_to_function",
            None,
            format!("{sn} custom tools are sent as functions of one string parameter, input"),
        );
        r.lossy(
            "custom_tool_to_function",
            None,
            "tools",
            format!("{sn} custom tools with an input format lose it"),
        );
    }
    if other {
        r.lossy(
            "server_tool_dropped",
            None,
            "serverTool",
            format!("{sn}'s server-tool blocks cannot be replayed to {tn}"),
        );
        r.lossy(
            "unknown_block_dropped",
            None,
            "unknown",
            "blocks of types this version does not know are kept only for their origin".into(),
        );
        r.warn_step(
            "provider_fields_dropped",
            None,
            format!("{sn}-specific fields (cache_control, citations, detail, …) are not sent"),
        );
        r.lossy(
            "tool_dropped",
            None,
            "tools",
            format!("{sn}'s hosted tools have no {tn} equivalent"),
        );
    }
    // Rule 11: for the same provider, in what it did not write (messages
    // without their own JSON).
    r.lossy(
        "lone_surrogates_replaced",
        None,
        "text",
        if other {
            "lone UTF-16 surrogates outside opaque values are replaced with U+FFFD".into()
        } else {
            format!(
                "lone UTF-16 surrogates in messages {sn} did not write are replaced with U+FFFD"
            )
        },
    );
    // Rule 5: ids and names.
    r.step(
        "tool_call_id_mapped",
        None,
        format!("tool-call ids that {tn} does not accept are mapped (reversibly)"),
    );
    r.step(
        "tool_call_id_repeated",
        None,
        "a call whose id an earlier call had gets an id of its own (a request's call ids must be unique)".into(),
    );
    if s == Responses && t == Responses {
        r.step(
            "item_id_repeated",
            None,
            "an item whose id an earlier item had is sent without it (Responses rejects repeated item ids)".into(),
        );
        r.lossy(
            "item_id_repeated",
            None,
            "thinking",
            "a reasoning item whose id an earlier item had is left out (it cannot go without its id)".into(),
        );
        r.step(
            "tool_result_kind_matched",
            None,
            "a result of another kind than its call (function or custom) is sent as its call's kind".into(),
        );
    }
    r.step(
        "tool_name_mapped",
        None,
        format!("tool names that {tn} does not accept are mapped (reversibly)"),
    );
    // Rule 6: pairing.
    r.step(
        "tool_result_moved",
        None,
        "results that come after a user message move up to their calls".into(),
    );
    r.warn_step(
        "missing_tool_result_filled",
        None,
        "calls without a result get an error result \"No result provided\"".into(),
    );
    r.lossy(
        "orphan_tool_result_dropped",
        None,
        "toolResult",
        "results for no waiting call are left out".into(),
    );
    r.lossy(
        "duplicate_tool_result_dropped",
        None,
        "toolResult",
        "a second result for the same call is left out".into(),
    );
    r.warn_step(
        "calls_pending_at_end",
        None,
        "calls still waiting for results at the end are reported".into(),
    );
    if s == Google {
        r.step(
            "tool_result_paired_by_name",
            None,
            "Gemini results without an id pair with a call by name and position".into(),
        );
    }
    if from_chat {
        r.step(
            "tool_result_name_filled",
            None,
            format!("{sn} results carry no tool name: they take their call's"),
        );
    }
    if t == Google && other {
        r.step(
            "tool_results_reordered",
            None,
            "function responses are put in the order of their calls".into(),
        );
    }
    // Rules 7–8.
    if matches!(t, OpenAi | Responses) {
        r.lossy(
            "tool_error_flag_lost",
            None,
            "isError",
            format!("{tn} has no error flag on tool results"),
        );
    }
    if to_ag {
        r.warn_step(
            "invalid_arguments_wrapped",
            None,
            "arguments that are not a JSON object are sent as {\"invalid_arguments\": text}".into(),
        );
    }
    if (t == OpenAi || t == Google) && other {
        r.warn_step(
            "tool_result_image_moved",
            None,
            format!("images in tool results move to a user message after them ({tn})"),
        );
    }
    // Rule 9.
    if other || to_ag {
        r.step(
            "empty_text_dropped",
            None,
            "empty text blocks are left out".into(),
        );
        r.step(
            "empty_turn_dropped",
            None,
            "assistant turns with nothing left to send are left out".into(),
        );
    }
    if other {
        r.lossy(
            "empty_turn_dropped",
            None,
            "message",
            format!("assistant turns whose only content was {sn}-specific are left out"),
        );
    }
    if to_ag {
        r.step(
            "empty_message_dropped",
            None,
            format!("messages with no content are left out ({tn} rejects them)"),
        );
    } else {
        r.step(
            "empty_message_dropped",
            None,
            format!("messages whose every block was left out are left out ({tn} wants at least one content part)"),
        );
    }
    if t == Anthropic {
        r.step(
            "trailing_whitespace_trimmed",
            None,
            "a final assistant message ending in whitespace is trimmed".into(),
        );
    }
    // Rule 10.
    if to_ag && (from_chat || (t == Google && s == Anthropic)) {
        r.lossy(
            "system_hoisted",
            None,
            "system position",
            "system/developer messages inside the conversation join the system prompt".into(),
        );
        r.step(
            "system_hoisted",
            None,
            "system/developer messages before the conversation join the system prompt".into(),
        );
    }
    if t == Google && other {
        r.step(
            "thought_signature_sentinel",
            None,
            "Gemini 3 targets get the placeholder signature on the first call of a turn".into(),
        );
    }
    if matches!(t, Responses | Google) && other {
        r.step(
            "text_joined",
            None,
            format!("text blocks {tn} takes as one string are joined"),
        );
    }
    // Media and documents (encoding, rules 12–13), also for the same
    // provider: an image with nothing to send, a document type it does not
    // take (rule 12).
    r.lossy(
        "image_dropped",
        None,
        "image",
        format!("images {tn} cannot take in their form are left out"),
    );
    r.lossy(
        "document_dropped",
        None,
        "document",
        format!("documents {tn} cannot take in their form or type are left out"),
    );
    if t != Anthropic {
        r.lossy(
            "document_title_dropped",
            None,
            "document.title",
            format!("document titles are not sent to {tn}"),
        );
    }
    if matches!(t, OpenAi | Responses) {
        r.step(
            "filename_extension_added",
            None,
            format!("{tn} reads a file's type from its name: PDFs get .pdf"),
        );
    }
    r.lossy(
        "image_type_unsupported",
        None,
        "image",
        format!("images of a type {tn} does not accept become a text placeholder"),
    );
    r.step(
        "mime_type_derived",
        None,
        format!("image types {tn} knows under another name or needs are derived"),
    );
    // Rules 14–15.
    if t == Anthropic {
        r.lossy(
            "tool_calls_to_text",
            None,
            "toolCall",
            "with thinking on, the calls of a final turn without thinking are sent as text".into(),
        );
    }
    if to_ag {
        r.warn_step(
            "leading_user_turn_added",
            None,
            format!("{tn} needs a user turn before the first assistant turn"),
        );
    }
    Ok(r)
}
