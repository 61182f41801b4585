//! Rewriting a session file, line by line, so that its messages can be sent to
//! another provider (FORMAT.md §15.6). The tree is not touched: every entry
//! keeps its id, parent and position; only the messages change, by the
//! per-message rules of [`super::transform`], with one id map for the whole
//! file so results keep matching their calls.

use super::canon::{Provider, role};
use super::ids::IdMap;
use super::jv::J;
use super::report::CompatibilityReport;
use super::transform;
use crate::{Error, Result};

/// A migration in progress: feed it the lines of the source in order.
pub struct Migration {
    source: Provider,
    target: Provider,
    model: Option<String>,
    ids: IdMap,
    /// Every step taken so far (`message` is the line number, from 1).
    pub report: CompatibilityReport,
    at: String,
    line: u64,
    /// Messages changed so far.
    pub changed: u64,
    /// The start of a line whose end has not come yet ([`Migration::push`]).
    partial: String,
    /// Whether the first non-blank line (the session header) has been read.
    header_seen: bool,
}

impl Migration {
    /// `at` is the time written into the header's `migration` member (ISO 8601).
    pub fn new(source: Provider, target: Provider, model: Option<String>, at: &str) -> Self {
        Migration {
            source,
            target,
            model,
            ids: IdMap::new(),
            report: CompatibilityReport::new(),
            at: at.to_string(),
            line: 0,
            changed: 0,
            partial: String::new(),
            header_seen: false,
        }
    }

    /// The output for one source line (without its newline). Lines that need no
    /// change come back byte for byte.
    pub fn line(&mut self, text: &str) -> Result<String> {
        self.line += 1;
        let trimmed = text.trim_end_matches(['\r', '\n']);
        if trimmed.trim().is_empty() {
            return Ok(trimmed.to_string());
        }
        let mut entry = J::parse(trimmed).map_err(|e| {
            Error::corrupted(format!(
                "line {} is not valid JSON: {}",
                self.line, e.message
            ))
            .at(Some(self.line), e.offset as u64)
        })?;
        // Only pi sessions are migrated: anything else (a Claude Code
        // transcript, a Codex rollout) is refused as the loader refuses it.
        if !std::mem::replace(&mut self.header_seen, true) && !entry.is("type", "session") {
            let why = crate::entry::parse_envelope(trimmed, 512)
                .ok()
                .and_then(|env| crate::load::parse_header(trimmed, &env, 0, true).err())
                .unwrap_or_else(|| {
                    "not a pi session: the first line is not a session header".into()
                });
            let mut e = Error::unsupported(why);
            e.line = Some(self.line);
            return Err(e);
        }
        match entry.str_of("type").as_deref() {
            Some("session") => {
                entry.set(
                    "migration",
                    J::obj([
                        ("from", J::s(self.source.name())),
                        ("to", J::s(self.target.name())),
                        ("at", J::s(&self.at)),
                    ]),
                );
                Ok(entry.text())
            }
            Some("message") => {
                let Some(msg) = entry.get("message").cloned() else {
                    return Ok(trimmed.to_string());
                };
                let r = role(&msg).to_string();
                if !matches!(r.as_str(), "user" | "assistant" | "toolResult") {
                    return Ok(trimmed.to_string());
                }
                if r == "assistant"
                    && matches!(
                        msg.str_of("stopReason").as_deref(),
                        Some("error" | "aborted")
                    )
                {
                    // Never sent (pi and toProvider leave such turns out): kept as it was.
                    return Ok(trimmed.to_string());
                }
                let mut probe = msg.clone();
                let assumed = r == "assistant"
                    && probe.get("api").is_none()
                    && probe.get("provider").is_none();
                if assumed {
                    probe.set("api", J::s(self.source.api()));
                }
                let mut rep = CompatibilityReport::new();
                let out = transform::apply(
                    vec![probe.clone()],
                    self.target,
                    self.model.as_deref(),
                    &mut rep,
                    false,
                    &mut self.ids,
                );
                let mut new_msg = out.into_iter().next().unwrap_or_else(|| {
                    let mut m = probe.clone();
                    m.set("content", J::Arr(vec![]));
                    m
                });
                if assumed {
                    new_msg.remove("api");
                }
                new_msg.remove("original");
                self.report.merge(rep, Some(self.line as usize));
                if new_msg == msg {
                    return Ok(trimmed.to_string());
                }
                self.changed += 1;
                entry.set("message", new_msg);
                Ok(entry.text())
            }
            _ => Ok(trimmed.to_string()),
        }
    }

    /// Migrates text given in pieces of any size: returns the output for the
    /// lines completed by `chunk` (each ending with `\n`); call [`Migration::finish`] after the last piece.
    pub fn push(&mut self, chunk: &str) -> Result<String> {
        self.partial.push_str(chunk);
        let Some(end) = self.partial.rfind('\n') else {
            return Ok(String::new());
        };
        let rest = self.partial.split_off(end + 1);
        let done = std::mem::replace(&mut self.partial, rest);
        let mut out = String::with_capacity(done.len());
        for line in done.split_inclusive('\n') {
            out.push_str(&self.line(line)?);
            out.push('\n');
        }
        Ok(out)
    }

    /// The output for a last line without a newline, if any.
    pub fn finish(&mut self) -> Result<String> {
        if self.partial.is_empty() {
            return Ok(String::new());
        }
        let last = std::mem::take(&mut self.partial);
        let mut out = self.line(&last)?;
        out.push('\n');
        Ok(out)
    }

    /// `{report, idMap}` as JSON text.
    pub fn result_json(&self) -> Result<String> {
        let rep = crate::types::to_json_text(&self.report)?;
        Ok(format!(
            "{{\"report\":{rep},\"idMap\":{}}}",
            super::id_map_json(self.id_map()).text()
        ))
    }

    /// Lines seen so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// The id map: target id → original id.
    pub fn id_map(&self) -> &[(String, String)] {
        &self.ids.changed
    }
}
