//! Server-sent events framing (`text/event-stream`, as the WHATWG HTML
//! standard defines it), fed bytes as they arrive.
//!
//! Lines end in LF, CRLF or CR, and a chunk may end anywhere: inside a
//! line, inside a UTF-8 character, or between the CR and the LF of one line
//! end. `data:` lines of one event are joined with `\n`; a blank line ends the
//! event; lines starting with `:` are comments; `id:`, `retry:` and unknown
//! fields are ignored; one leading byte-order mark is dropped. An event with no
//! `data:` line is not delivered, and neither is an event cut off by the end of
//! the stream.

use memchr::memchr2;

use crate::{Error, ErrorCode, Result};

/// The largest event (its data, or one line) accepted: 16 MiB.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// One event of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the event had one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// Byte offset in the stream of the event's first field line.
    pub offset: u64,
}

/// The incremental parser: [`SseParser::push`] the bytes of the body as they
/// arrive and take the events that are complete.
#[derive(Debug)]
pub struct SseParser {
    /// The start of a line that continues in the next chunk.
    line: Vec<u8>,
    /// The last byte seen was a CR: an LF right after it belongs to it.
    after_cr: bool,
    /// The first line was seen (the byte-order mark is only looked for there).
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    /// Offset of the first field line of the event being read.
    event_start: Option<u64>,
    /// Bytes consumed before the current chunk.
    base: u64,
    /// Offset of the line being read.
    line_start: u64,
    limit: usize,
    failed: Option<Error>,
    /// Lines that are no field (`{`, `  "error": {…`): Gemini writes its
    /// mid-stream error as bare JSON outside the event framing.
    stray: String,
}

/// Most bytes of stray lines kept.
const MAX_STRAY: usize = 64 << 10;

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the [`MAX_EVENT_BYTES`] limit.
    pub fn new() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }

    /// A parser whose events (and lines) may hold at most `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: None,
            data: String::new(),
            has_data: false,
            event_start: None,
            base: 0,
            line_start: 0,
            limit,
            failed: None,
            stray: String::new(),
        }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.base
    }

    /// Whether an event was begun and not ended (the stream so far stops inside it).
    pub fn in_event(&self) -> bool {
        self.has_data || self.event.is_some() || !self.line.is_empty()
    }

    /// Feeds the next bytes; returns the events they complete. After an error
    /// (`PROVIDER_PROTOCOL` for bytes that are not UTF-8, `LIMIT_EXCEEDED` for
    /// an event over the limit) every call returns that error.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>> {
        let mut out = Vec::new();
        self.push_into(bytes, &mut out)?;
        Ok(out)
    }

    /// [`SseParser::push`] appending to `out`.
    pub fn push_into(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.feed(bytes, out) {
            Ok(()) => {
                self.base += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let mut i = 0;
        if self.after_cr {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                i = 1;
                self.line_start = self.base + 1;
            }
        }
        while i < bytes.len() {
            let Some(k) = memchr2(b'\n', b'\r', &bytes[i..]) else {
                if self.line.len() + (bytes.len() - i) > self.limit {
                    return Err(too_big(self.line_start));
                }
                self.line.extend_from_slice(&bytes[i..]);
                break;
            };
            let end = i + k;
            if self.line.is_empty() {
                self.line_done(&bytes[i..end], out)?;
            } else {
                if self.line.len() + k > self.limit {
                    return Err(too_big(self.line_start));
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[i..end]);
                let r = self.line_done(&line, out);
                line.clear();
                self.line = line;
                r?;
            }
            i = end + 1;
            if bytes[end] == b'\r' {
                if i == bytes.len() {
                    self.after_cr = true;
                } else if bytes[i] == b'\n' {
                    i += 1;
                }
            }
            self.line_start = self.base + i as u64;
        }
        Ok(())
    }

    fn line_done(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) -> Result<()> {
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix(b"\xEF\xBB\xBF") {
                line = rest;
            }
        }
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                    offset: self.event_start.unwrap_or(self.line_start),
                });
            }
            self.event = None;
            self.data.clear();
            self.has_data = false;
            self.event_start = None;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &line[line.len()..]),
        };
        match field {
            b"data" => {
                let value = std::str::from_utf8(value).map_err(|e| self.not_utf8(line, e))?;
                if self.has_data {
                    self.data.push('\n');
                }
                if self.data.len() + value.len() > self.limit {
                    return Err(too_big(self.event_start.unwrap_or(self.line_start)));
                }
                self.data.push_str(value);
                self.has_data = true;
                self.event_start.get_or_insert(self.line_start);
            }
            b"event" => {
                let value = std::str::from_utf8(value).map_err(|e| self.not_utf8(line, e))?;
                self.event = (!value.is_empty()).then(|| value.to_string());
                self.event_start.get_or_insert(self.line_start);
            }
            // id, retry and unknown fields: ignored (but they must still be text).
            _ => {
                let text = std::str::from_utf8(line).map_err(|e| self.not_utf8(line, e))?;
                if field != b"id" && field != b"retry" && self.stray.len() + text.len() < MAX_STRAY
                {
                    self.stray.push_str(text);
                    self.stray.push('\n');
                }
            }
        }
        Ok(())
    }

    /// The lines read that were no SSE field, joined (at most 64 KiB): where
    /// a provider wrote bare JSON into the stream.
    pub fn stray(&self) -> &str {
        &self.stray
    }

    fn not_utf8(&self, line: &[u8], e: std::str::Utf8Error) -> Error {
        // Where in the line the bad byte is (the value may start after the field name).
        let in_line = std::str::from_utf8(line)
            .err()
            .map_or(e.valid_up_to(), |le| le.valid_up_to());
        let at = self.line_start + in_line as u64;
        Error::new(
            ErrorCode::ProviderProtocol,
            format!("the event stream is not valid UTF-8 at byte {at}"),
        )
        .at(None, at)
    }
}

fn too_big(at: u64) -> Error {
    Error::new(
        ErrorCode::LimitExceeded,
        format!(
            "an event of the stream (from byte {at}) is over {} MiB",
            MAX_EVENT_BYTES >> 20
        ),
    )
    .at(None, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<(Option<String>, String)> {
        let mut p = SseParser::new();
        p.push(input)
            .unwrap()
            .into_iter()
            .map(|e| (e.event, e.data))
            .collect()
    }

    #[test]
    fn fields_comments_and_line_ends() {
        let got = all(b"\xEF\xBB\xBF: hi\r\nevent: a\rdata: 1\ndata:2\r\nid: 7\nretry: 5\n\ndata\n\nevent: lone\n\n");
        assert_eq!(
            got,
            vec![(Some("a".into()), "1\n2".into()), (None, String::new())]
        );
    }

    #[test]
    fn limit_and_utf8() {
        let mut p = SseParser::with_limit(8);
        assert_eq!(
            p.push(b"data: 0123456789\n").unwrap_err().code,
            ErrorCode::LimitExceeded
        );
        let mut p = SseParser::new();
        let e = p.push(b"data: ok\n\ndata: \xff\n\n").unwrap_err();
        assert_eq!(e.code, ErrorCode::ProviderProtocol);
        assert_eq!(e.offset, Some(16));
    }
}
