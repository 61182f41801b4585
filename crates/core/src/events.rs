//! Events: one JSON line each, `{"seq","timestamp","channel","type",…payload}`
//! (FORMAT.md, "Event log"). `seq` is one counter across the three channels.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::json::{self, Kind, ObjectReader};

/// The largest seq (and timestamp magnitude) a log accepts: JavaScript's
/// `Number.MAX_SAFE_INTEGER`, so every value round-trips through JSON.parse.
pub const MAX_SAFE: u64 = 9_007_199_254_740_991;

/// The three event channels (Kode's data, approval and governance planes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Channel {
    /// Model output and tool progress.
    Progress,
    /// Approvals.
    Control,
    /// State, errors, usage, lifecycle.
    Monitor,
}

impl Channel {
    /// The channel's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Progress => "progress",
            Channel::Control => "control",
            Channel::Monitor => "monitor",
        }
    }

    /// The channel with this name.
    pub fn parse(s: &str) -> Option<Channel> {
        match s {
            "progress" => Some(Channel::Progress),
            "control" => Some(Channel::Control),
            "monitor" => Some(Channel::Monitor),
            _ => None,
        }
    }
}

/// The channel of each event type Kode defines; other types need an explicit channel.
pub fn channel_of(kind: &str) -> Option<Channel> {
    Some(match kind {
        "think_chunk_start" | "think_chunk" | "think_chunk_end" | "text_chunk_start"
        | "text_chunk" | "text_chunk_end" | "tool:start" | "tool:end" | "tool:error" | "done"
        // forkpoint's own progress types
        | "tool_input_chunk_start" | "tool_input_chunk" | "tool_input_chunk_end" => {
            Channel::Progress
        }
        "permission_required" | "permission_decided" => Channel::Control,
        "state_changed"
        | "step_complete"
        | "error"
        | "token_usage"
        | "tool_executed"
        | "agent_resumed"
        | "breakpoint_changed"
        | "todo_changed"
        | "todo_reminder"
        | "file_changed"
        | "reminder_sent"
        | "context_compression"
        | "scheduler_triggered"
        | "tool_manual_updated"
        | "skills_metadata_updated"
        | "tool_custom_event"
        | "storage_failure" => Channel::Monitor,
        _ => return None,
    })
}

/// A position in the event log: the event's sequence number and timestamp (ms).
/// `readSince(bookmark)` returns the events after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Bookmark {
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub seq: u64,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub timestamp: i64,
}

/// Which events a read or a subscription wants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EventFilter {
    /// Only these channels (default: all).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub channels: Option<Vec<Channel>>,
    /// Only these event types (default: all).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub kinds: Option<Vec<String>>,
    /// At most this many events.
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub limit: Option<u64>,
}

impl EventFilter {
    /// Whether an event passes the channel and type filters.
    pub fn matches(&self, meta: &EventMeta) -> bool {
        self.accepts(meta.channel, &meta.kind)
    }

    /// Whether an event of this channel and type passes the filters.
    pub fn accepts(&self, channel: Channel, kind: &str) -> bool {
        self.channels
            .as_ref()
            .is_none_or(|cs| cs.contains(&channel))
            && self
                .kinds
                .as_ref()
                .is_none_or(|ks| ks.iter().any(|k| k == kind))
    }
}

/// What the log reads from an event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMeta {
    pub seq: u64,
    pub timestamp: i64,
    pub channel: Channel,
    pub kind: Box<str>,
}

impl EventMeta {
    /// The event's bookmark.
    pub fn bookmark(&self) -> Bookmark {
        Bookmark {
            seq: self.seq,
            timestamp: self.timestamp,
        }
    }
}

fn whole_number(v: json::Value, src: &str) -> Option<f64> {
    let n: f64 = v.raw(src).parse().ok()?;
    (v.kind == Kind::Number && n.fract() == 0.0 && n.abs() <= MAX_SAFE as f64).then_some(n)
}

/// The envelope of an event line, borrowing its type from the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub seq: u64,
    pub timestamp: i64,
    pub channel: Channel,
    pub kind: Cow<'a, str>,
}

impl Envelope<'_> {
    /// The owned form.
    pub fn into_meta(self) -> EventMeta {
        EventMeta {
            seq: self.seq,
            timestamp: self.timestamp,
            channel: self.channel,
            kind: self.kind.as_ref().into(),
        }
    }
}

/// Reads the envelope of an event line. The error is a description.
pub fn parse_event_line(text: &str, max_depth: usize) -> std::result::Result<EventMeta, String> {
    parse_envelope(text, max_depth).map(Envelope::into_meta)
}

/// Reads the envelope of an event line and validates the whole line as one
/// JSON object. The error is a description.
pub fn parse_envelope(text: &str, max_depth: usize) -> std::result::Result<Envelope<'_>, String> {
    if let Some(e) = canonical_envelope(text, max_depth) {
        return Ok(e);
    }
    let b = text.as_bytes();
    let mut r = ObjectReader::open(b, 0, 1, max_depth).map_err(|e| e.describe())?;
    let (mut seq, mut ts, mut channel, mut kind) = (None, None, None, None);
    while let Some(k) = r.next_key().map_err(|e| e.describe())? {
        let v = r.skip_value().map_err(|e| e.describe())?;
        match k.str(text).as_deref() {
            Some("seq") => seq = Some(v),
            Some("timestamp") => ts = Some(v),
            Some("channel") => channel = Some(v),
            Some("type") => kind = Some(v),
            _ => {}
        }
    }
    if json::skip_ws(b, r.end()) != b.len() {
        return Err("trailing characters after the JSON object".into());
    }
    let seq = seq
        .and_then(|v| whole_number(v, text))
        .filter(|n| *n >= 0.0)
        .ok_or("no whole, non-negative \"seq\"")?;
    let timestamp = ts
        .and_then(|v| whole_number(v, text))
        .ok_or("no whole-number \"timestamp\"")?;
    let channel = channel
        .and_then(|v| v.str(text))
        .and_then(|c| Channel::parse(&c))
        .ok_or("no \"channel\" of progress, control or monitor")?;
    let kind = kind
        .filter(|v| v.kind == Kind::String)
        .and_then(|v| v.str(text))
        .ok_or("no string \"type\"")?;
    Ok(Envelope {
        seq: seq as u64,
        timestamp: timestamp as i64,
        channel,
        kind,
    })
}

/// Reads a whole number of at most 16 digits without leading zeros.
fn digits(b: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut n = 0u64;
    while let Some(c) = b.get(*i).filter(|c| c.is_ascii_digit()) {
        n = n * 10 + u64::from(c - b'0');
        *i += 1;
        if *i - start > 16 {
            return None;
        }
    }
    let len = *i - start;
    (len == 1 || (len > 1 && b[start] != b'0')).then_some(n)
}

fn expect(b: &[u8], i: &mut usize, lit: &[u8]) -> Option<()> {
    b.get(*i..)?.starts_with(lit).then(|| *i += lit.len())
}

/// The fast path of [`parse_envelope`] for lines as the log writes them:
/// `{"seq":N,"timestamp":T,"channel":"C","type":"K"` then other members.
/// The rest of the line is still validated; `None` (use the general path)
/// when the line has another shape or names an envelope member twice.
fn canonical_envelope(text: &str, max_depth: usize) -> Option<Envelope<'_>> {
    if max_depth == 0 {
        return None; // the general path reports the depth error
    }
    let b = text.as_bytes();
    let mut i = 0;
    expect(b, &mut i, b"{\"seq\":")?;
    let seq = digits(b, &mut i).filter(|n| *n <= MAX_SAFE)?;
    expect(b, &mut i, b",\"timestamp\":")?;
    let negative = expect(b, &mut i, b"-").is_some();
    let ts = digits(b, &mut i).filter(|n| *n <= MAX_SAFE)? as i64;
    expect(b, &mut i, b",\"channel\":\"")?;
    let channel = [Channel::Progress, Channel::Control, Channel::Monitor]
        .into_iter()
        .find(|c| b[i..].starts_with(c.as_str().as_bytes()))?;
    i += channel.as_str().len();
    expect(b, &mut i, b"\",\"type\":\"")?;
    let k0 = i;
    while *b.get(i)? != b'"' {
        if b[i] == b'\\' || b[i] < 0x20 {
            return None;
        }
        i += 1;
    }
    let kind = text.get(k0..i)?;
    let mut r = ObjectReader::continue_at(b, i + 1, 1, max_depth);
    while let Some(k) = r.next_key().ok()? {
        r.skip_value().ok()?;
        if k.escaped || matches!(k.inner(text), "seq" | "timestamp" | "channel" | "type") {
            return None;
        }
    }
    if json::skip_ws(b, r.end()) != b.len() {
        return None;
    }
    Some(Envelope {
        seq,
        timestamp: if negative { -ts } else { ts },
        channel,
        kind: Cow::Borrowed(kind),
    })
}

/// Builds the line for an event given as a JSON object: `seq` (assigned by the
/// log), `timestamp` (the event's own numeric `timestamp` if it has one, else
/// `now_ms`), `channel` (from the type for Kode's types; required for others),
/// `type`, then the event's other members in their order.
pub fn build_event_line(
    event_json: &str,
    seq: u64,
    now_ms: i64,
    max_depth: usize,
) -> Result<(String, EventMeta)> {
    let src = event_json.trim();
    let b = src.as_bytes();
    let bad = |m: String| Error::invalid_input(m);
    let mut r = ObjectReader::open(b, 0, 1, max_depth)
        .map_err(|e| bad(format!("event is not a JSON object: {}", e.describe())))?;
    let (mut kind, mut channel, mut ts) = (None, None, None);
    let mut rest: Vec<(json::Value, json::Value)> = Vec::new();
    while let Some(k) = r.next_key().map_err(|e| bad(e.describe()))? {
        let v = r.skip_value().map_err(|e| bad(e.describe()))?;
        let name = k.str(src).unwrap_or_default();
        match name.as_ref() {
            "type" => kind = Some(v),
            "channel" => channel = Some(v),
            "timestamp" => ts = Some(v),
            "seq" | "bookmark" => {
                return Err(bad(format!(
                    "\"{name}\" is assigned by the log; leave it out of the event"
                )));
            }
            _ => {
                rest.retain(|(rk, _)| rk.str(src) != k.str(src));
                rest.push((k, v));
            }
        }
    }
    if json::skip_ws(b, r.end()) != b.len() {
        return Err(bad(
            "event has trailing characters after the JSON object".into()
        ));
    }
    let kind = kind
        .filter(|v| v.kind == Kind::String)
        .and_then(|v| v.str(src))
        .filter(|k| !k.is_empty())
        .ok_or_else(|| bad("an event needs a non-empty string \"type\"".into()))?;
    let given = match channel {
        None => None,
        Some(v) => Some(v.str(src).and_then(|c| Channel::parse(&c)).ok_or_else(|| {
            bad("\"channel\" must be \"progress\", \"control\" or \"monitor\"".into())
        })?),
    };
    let channel = match (channel_of(&kind), given) {
        (Some(known), Some(g)) if known != g => {
            return Err(bad(format!(
                "{kind:?} events go to the {} channel, not {}",
                known.as_str(),
                g.as_str()
            )));
        }
        (Some(known), _) => known,
        (None, Some(g)) => g,
        (None, None) => {
            return Err(bad(format!(
                "{kind:?} is not a Kode event type: give it a \"channel\""
            )));
        }
    };
    let timestamp = match ts {
        None => now_ms,
        Some(v) => whole_number(v, src).map(|n| n as i64).ok_or_else(|| {
            bad("an event's \"timestamp\" must be a whole number of milliseconds".into())
        })?,
    };
    let mut line = String::with_capacity(src.len() + 64);
    line.push_str("{\"seq\":");
    line.push_str(&seq.to_string());
    line.push_str(",\"timestamp\":");
    line.push_str(&timestamp.to_string());
    line.push_str(",\"channel\":\"");
    line.push_str(channel.as_str());
    line.push_str("\",\"type\":");
    json::push_str_literal(&mut line, &kind);
    json::push_members(&mut line, &rest, src);
    line.push('}');
    if line.contains('\n') {
        return Err(Error::new(
            ErrorCode::Internal,
            "event line holds a newline",
        ));
    }
    let meta = EventMeta {
        seq,
        timestamp,
        channel,
        kind: kind.as_ref().into(),
    };
    Ok((line, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_put_the_envelope_first_and_keep_the_payload() {
        let (line, m) = build_event_line(
            r#"{"type":"tool:end","call":{"id":"c1","n":1.50}}"#,
            7,
            1000,
            64,
        )
        .unwrap();
        assert_eq!(
            line,
            r#"{"seq":7,"timestamp":1000,"channel":"progress","type":"tool:end","call":{"id":"c1","n":1.50}}"#
        );
        assert_eq!(m.channel, Channel::Progress);
        assert_eq!(parse_event_line(&line, 64).unwrap(), m);
        let (line, _) = build_event_line(
            r#"{"type":"breakpoint_changed","previous":"READY","timestamp":5}"#,
            8,
            1000,
            64,
        )
        .unwrap();
        assert!(line.starts_with(r#"{"seq":8,"timestamp":5,"channel":"monitor""#));
    }

    #[test]
    fn channels_follow_kode_and_unknown_types_need_one() {
        assert_eq!(channel_of("permission_required"), Some(Channel::Control));
        assert_eq!(channel_of("agent_resumed"), Some(Channel::Monitor));
        assert!(build_event_line(r#"{"type":"my_event"}"#, 1, 0, 64).is_err());
        let (_, m) =
            build_event_line(r#"{"type":"my_event","channel":"control"}"#, 1, 0, 64).unwrap();
        assert_eq!(m.channel, Channel::Control);
        let e =
            build_event_line(r#"{"type":"tool:end","channel":"monitor"}"#, 1, 0, 64).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        for bad in [
            r#"{"type":"done","seq":3}"#,
            r#"[1]"#,
            r#"{"type":""}"#,
            r#"{"type":"done","timestamp":"x"}"#,
        ] {
            assert_eq!(
                build_event_line(bad, 1, 0, 64).unwrap_err().code,
                ErrorCode::InvalidInput,
                "{bad}"
            );
        }
    }

    #[test]
    fn filters() {
        let m = EventMeta {
            seq: 1,
            timestamp: 0,
            channel: Channel::Monitor,
            kind: "error".into(),
        };
        assert!(EventFilter::default().matches(&m));
        assert!(
            EventFilter {
                channels: Some(vec![Channel::Monitor]),
                ..Default::default()
            }
            .matches(&m)
        );
        assert!(
            !EventFilter {
                kinds: Some(vec!["done".into()]),
                ..Default::default()
            }
            .matches(&m)
        );
    }
}
