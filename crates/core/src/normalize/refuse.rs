//! What a target refuses outright (FORMAT.md §15.4, rules 12–15): repairs made
//! after the other rules so that no request goes out that the provider is
//! known to reject. Each repair is reported. They apply to the same provider
//! too: a request that breaks one of these rules would be rejected by it.

use super::canon::*;
use super::jv::J;
use super::report::CompatibilityReport;

/// The text of the user turn put before a history that starts with an assistant turn.
pub const LEADING_USER_TEXT: &str = "(continued from an earlier conversation)";

/// The image types a target accepts (providers' documentation: Anthropic
/// jpeg/png/gif/webp; OpenAI png/jpeg/webp/gif; Gemini png/jpeg/webp/heic/heif).
pub fn accepts_image(target: Provider, mime: &str) -> bool {
    let m = mime.trim().to_ascii_lowercase();
    match target {
        Provider::Anthropic | Provider::OpenAi | Provider::Responses => matches!(
            m.as_str(),
            "image/jpeg" | "image/png" | "image/gif" | "image/webp"
        ),
        Provider::Google => matches!(
            m.as_str(),
            "image/jpeg" | "image/jpg" | "image/png" | "image/webp" | "image/heic" | "image/heif"
        ),
    }
}

/// Whether `target` takes a document of type `mime` as data or by URL:
/// Anthropic (a `document` block) and OpenAI Chat (a `file` part) take PDFs;
/// Responses takes files (`input_file`) but no audio or video; Gemini takes
/// what it has a part for (`inlineData`, `fileData`: audio and video too).
pub fn accepts_document(target: Provider, mime: &str) -> bool {
    let m = mime.trim().to_ascii_lowercase();
    match target {
        Provider::Anthropic | Provider::OpenAi => m == "application/pdf",
        Provider::Responses => !(m.starts_with("audio/") || m.starts_with("video/")),
        Provider::Google => true,
    }
}

/// A block's `mimeType`, trimmed (none when empty).
fn mime_of(b: &J) -> Option<String> {
    b.str_of("mimeType")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Rule 12 for documents: one given as data or by URL whose type `target`
/// does not take becomes a text placeholder (`document_dropped`, lossy). A
/// document without a type, by file id or as text is left as it is.
fn document(
    b: &mut J,
    i: usize,
    target: Provider,
    sent_as_file: bool,
    rep: &mut CompatibilityReport,
    changed: &mut bool,
) {
    let Some(mime) = mime_of(b) else {
        return;
    };
    if !sent_as_file || accepts_document(target, &mime) {
        return;
    }
    *b = text_block(&format!(
        "[{mime} document not sent: {} does not accept this type]",
        target.name()
    ));
    *changed = true;
    rep.lossy(
        "document_dropped",
        Some(i),
        "document",
        format!(
            "{} does not accept {mime} documents: replaced by a text placeholder",
            target.name()
        ),
    );
}

/// The MIME type of a URL's file extension (path only; query and fragment ignored).
pub fn mime_from_url(url: &str) -> Option<&'static str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let name = path.rsplit('/').next().unwrap_or(path);
    let (_, ext) = name.rsplit_once('.')?;
    Some(match ext.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" | "jpe" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "bmp" => "image/bmp",
        "tif" | "tiff" => "image/tiff",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        _ => return None,
    })
}

/// Images and documents of a user message or tool result that the target
/// cannot take: an image type it does not accept becomes a text placeholder
/// (`image_type_unsupported`); Gemini gets a URL's MIME type from its
/// extension (`mime_type_derived`), and a URL whose type cannot be derived
/// becomes a text placeholder (Gemini's `fileData` needs a `mimeType`);
/// `image/jpg` is sent as `image/jpeg` to the targets that know only that name.
pub fn media(m: &mut J, i: usize, target: Provider, rep: &mut CompatibilityReport) {
    if !matches!(role(m).as_ref(), "user" | "toolResult") {
        return;
    }
    let Some(J::Arr(bl)) = m.get_mut("content") else {
        return;
    };
    let mut changed = false;
    for b in bl.iter_mut() {
        let kind = btype(b).to_string();
        if kind != "image" && kind != "document" {
            continue;
        }
        let url = b.str_of("url").map(|u| u.into_owned());
        let has_data = b.get("data").is_some();
        let mime = mime_of(b);
        // Gemini: a URL is `fileData`, which needs a MIME type.
        if target == Provider::Google
            && !has_data
            && mime.is_none()
            && let Some(u) = &url
        {
            match mime_from_url(u) {
                Some(d) => {
                    b.set("mimeType", J::s(d));
                    changed = true;
                    rep.step(
                        "mime_type_derived",
                        Some(i),
                        format!("Gemini needs a MIME type for a URL: {d} taken from {u:?}"),
                    );
                }
                None => {
                    let (code, field) = if kind == "image" {
                        ("image_type_unsupported", "image")
                    } else {
                        ("document_dropped", "document")
                    };
                    *b = text_block(&format!(
                        "[{kind} not sent: {u} (its type is not known and Gemini needs one)]"
                    ));
                    changed = true;
                    rep.lossy(
                        code,
                        Some(i),
                        field,
                        format!("a {kind} URL without a MIME type cannot be sent to Gemini, and its extension names none: replaced by a text placeholder"),
                    );
                    continue;
                }
            }
        }
        if kind == "document" {
            document(b, i, target, has_data || url.is_some(), rep, &mut changed);
            continue;
        }
        let Some(mime) = mime_of(b) else {
            continue;
        };
        if !has_data && url.is_none() {
            // A file id: the provider knows the file's type.
            continue;
        }
        if mime.eq_ignore_ascii_case("image/jpg") && !accepts_image(target, &mime) {
            b.set("mimeType", J::s("image/jpeg"));
            changed = true;
            rep.step(
                "mime_type_derived",
                Some(i),
                format!(
                    "image/jpg sent as image/jpeg ({} knows only that name)",
                    target.name()
                ),
            );
            continue;
        }
        if !accepts_image(target, &mime) {
            *b = text_block(&format!(
                "[{mime} image not sent: {} does not accept this type]",
                target.name()
            ));
            changed = true;
            rep.lossy(
                "image_type_unsupported",
                Some(i),
                "image",
                format!(
                    "{} does not accept {mime} images: replaced by a text placeholder",
                    target.name()
                ),
            );
        }
    }
    if changed {
        m.remove("original");
    }
}

/// Anthropic with thinking on rejects a request whose final assistant turn (the
/// assistant messages after the last user turn that holds no tool results: a
/// tool-use loop is one turn) does not start with a thinking block. Until it
/// does, the calls of the turn's first step and their results are sent as text
/// (`tool_calls_to_text`): the user turn of those results becomes a plain one,
/// and the final turn starts at the next assistant message.
pub fn thinking_turn(out: &mut Vec<J>, rep: &mut CompatibilityReport) {
    loop {
        let Some(start) = final_turn_start(out) else {
            return;
        };
        if blocks(&out[start])
            .first()
            .is_some_and(|b| btype(b) == "thinking")
        {
            return;
        }
        let Some(rs) = (start..out.len()).find(|&j| role(&out[j]) == "toolResult") else {
            // No results in the turn: no tool loop (or calls pending at the end).
            return;
        };
        let re = (rs..out.len())
            .find(|&j| role(&out[j]) == "assistant")
            .unwrap_or(out.len());
        let mut calls = 0;
        for m in &mut out[start..rs] {
            if role(m) != "assistant" {
                continue;
            }
            let Some(J::Arr(bl)) = m.get_mut("content") else {
                continue;
            };
            let mut touched = false;
            for b in bl.iter_mut() {
                if btype(b) == "toolCall" {
                    *b = text_block(&call_text(b));
                    calls += 1;
                    touched = true;
                }
            }
            if touched {
                m.remove("original");
            }
        }
        let mut merged: Vec<J> = Vec::new();
        let mut rest: Vec<J> = Vec::new();
        let mut results = 0;
        for m in out.drain(rs..re) {
            if role(&m) == "toolResult" {
                merged.push(text_block(&result_text(&m)));
                merged.extend(blocks(&m).iter().filter(|b| btype(b) != "text").cloned());
                results += 1;
            } else {
                let mut m = m;
                m.remove("original");
                rest.push(m);
            }
        }
        let user = J::obj([("role", J::s("user")), ("content", J::Arr(merged))]);
        let mut insert = vec![user];
        insert.extend(rest);
        out.splice(rs..rs, insert);
        rep.lossy(
            "tool_calls_to_text",
            Some(start),
            "toolCall",
            format!("thinking is on and the final assistant turn does not start with a thinking block, which Anthropic rejects: {calls} call(s) of its first step and {results} result(s) sent as text"),
        );
    }
}

/// The index of the first message of the final assistant turn, if the
/// conversation ends in one.
fn final_turn_start(out: &[J]) -> Option<usize> {
    TurnScan::default().scan(out, 0).start
}

/// The final assistant turn, found message after message: [`TurnScan::scan`]
/// goes on from where an earlier part of the same conversation left it, as
/// long as no run of user and result messages is cut (a request converted in
/// parts cuts before assistant messages only, [`super::incremental`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TurnScan {
    /// Where the final turn starts (an assistant message after the last user
    /// turn that holds no tool results).
    pub start: Option<usize>,
    /// Its first message starts with a thinking block.
    pub thinking_first: bool,
    /// Tool results came after its start.
    pub results: bool,
}

impl TurnScan {
    /// Goes on over `out`, whose first message is the conversation's `offset`-th.
    pub(crate) fn scan(mut self, out: &[J], offset: usize) -> TurnScan {
        let mut i = 0;
        while i < out.len() {
            match role(&out[i]).as_ref() {
                "assistant" => {
                    if self.start.is_none() {
                        self.start = Some(offset + i);
                        self.thinking_first = blocks(&out[i])
                            .first()
                            .is_some_and(|b| btype(b) == "thinking");
                        self.results = false;
                    }
                    i += 1;
                }
                "system" => i += 1,
                _ => {
                    let mut results = false;
                    while i < out.len() && role(&out[i]) != "assistant" {
                        results |= role(&out[i]) == "toolResult";
                        i += 1;
                    }
                    if !results {
                        self.start = None;
                    } else if self.start.is_some() {
                        self.results = true;
                    }
                }
            }
        }
        self
    }

    /// Whether [`thinking_turn`] would rewrite the final turn.
    pub(crate) fn rewritten(&self) -> bool {
        self.start.is_some() && !self.thinking_first && self.results
    }
}

fn call_text(b: &J) -> String {
    let args = match b.str_of("argumentsRaw") {
        Some(raw) => raw.into_owned(),
        None => b
            .get("arguments")
            .map(J::text)
            .unwrap_or_else(|| "{}".into()),
    };
    format!(
        "[tool call {} (id {}): {args}]",
        b.str_of("name").unwrap_or_default(),
        b.str_of("id").unwrap_or_default()
    )
}

fn result_text(m: &J) -> String {
    let text: Vec<String> = blocks(m)
        .iter()
        .filter(|b| btype(b) == "text")
        .filter_map(|b| b.str_of("text").map(|t| t.into_owned()))
        .collect();
    let kind = if m.get("isError").and_then(J::as_bool) == Some(true) {
        "tool error"
    } else {
        "tool result"
    };
    format!(
        "[{kind} {} (id {}): {}]",
        m.str_of("toolName").unwrap_or_default(),
        m.str_of("toolCallId").unwrap_or_default(),
        text.join("\n")
    )
}

/// Gemini rejects a history whose first content is a model turn; Anthropic's
/// API did too, and Claude on Bedrock still does. A user turn with
/// [`LEADING_USER_TEXT`] goes before it (`leading_user_turn_added`).
pub fn leading_user(out: &mut Vec<J>, target: Provider, rep: &mut CompatibilityReport) {
    if !matches!(target, Provider::Anthropic | Provider::Google) {
        return;
    }
    let Some(first) = out.iter().position(|m| role(m) != "system") else {
        return;
    };
    if role(&out[first]) != "assistant" {
        return;
    }
    out.insert(
        first,
        J::obj([
            ("role", J::s("user")),
            ("content", J::Arr(vec![text_block(LEADING_USER_TEXT)])),
        ]),
    );
    rep.warn_step(
        "leading_user_turn_added",
        Some(first),
        format!(
            "{} needs a user turn before the first assistant turn: {LEADING_USER_TEXT:?} added",
            target.name()
        ),
    );
}
