//! `.jsonl.gz` sessions: a gzip file of one or more members (RFC 1952 allows
//! concatenated members). The writer appends one member per commit, so a crash
//! can only tear the last member; loading drops a torn last member whole.
//!
//! Decompression is a stream checked against [`GzLimits`] as it goes: it stops
//! with `LIMIT_EXCEEDED` as soon as the output is larger than
//! `maxDecompressedBytes`, decompresses more than `maxCompressionRatio` times
//! the compressed bytes read (past [`RATIO_MIN_BYTES`]), holds a line longer
//! than `maxLineBytes` or more lines than `maxEntries` allows, so memory is
//! bounded by the limits and not by what a gzip bomb would expand to.

use std::io::{BufRead, Read, Write};

use crate::error::{Error, ErrorCode, Result};
use crate::types::{LimitOptions, LoadOptions, TornTail};

/// Whether `bytes` start with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
}

/// The ratio limit applies once this many bytes have been decompressed, so
/// that small, highly repetitive files are not refused.
pub const RATIO_MIN_BYTES: u64 = 16 << 20;

/// Limits checked while decompressing (see [`LoadOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GzLimits {
    /// Most decompressed bytes.
    pub max_bytes: u64,
    /// Largest decompressed/compressed ratio past [`RATIO_MIN_BYTES`]; 0: none.
    pub max_ratio: u32,
    /// Longest non-blank line.
    pub max_line_bytes: u64,
    /// Most entries: more non-blank lines than this plus the header are refused.
    pub max_entries: u64,
}

impl GzLimits {
    /// No limits (tests, and data produced by forkpoint itself).
    pub const NONE: GzLimits = GzLimits {
        max_bytes: u64::MAX,
        max_ratio: 0,
        max_line_bytes: u64::MAX,
        max_entries: u64::MAX,
    };
}

impl From<&LoadOptions> for GzLimits {
    fn from(o: &LoadOptions) -> Self {
        GzLimits {
            max_bytes: o.max_decompressed_bytes,
            max_ratio: o.max_compression_ratio,
            max_line_bytes: o.max_line_bytes,
            max_entries: o.max_entries,
        }
    }
}

impl From<&LimitOptions> for GzLimits {
    fn from(o: &LimitOptions) -> Self {
        GzLimits::from(&o.load_options())
    }
}

fn limit(msg: String) -> Error {
    Error::new(ErrorCode::LimitExceeded, msg)
}

/// Counts decompressed bytes and lines against [`GzLimits`].
#[derive(Debug, Clone)]
pub struct Meter {
    limits: GzLimits,
    /// Decompressed bytes so far.
    pub total: u64,
    line_len: u64,
    line_content: bool,
    lines: u64,
}

impl Meter {
    pub fn new(limits: GzLimits) -> Self {
        Meter {
            limits,
            total: 0,
            line_len: 0,
            line_content: false,
            lines: 0,
        }
    }

    /// Accounts for `data`, decompressed from the first `compressed` bytes of
    /// the input; `LIMIT_EXCEEDED` as soon as a limit is crossed.
    pub fn feed(&mut self, data: &[u8], compressed: u64) -> Result<()> {
        let l = self.limits;
        self.total += data.len() as u64;
        if self.total > l.max_bytes {
            return Err(limit(format!(
                "the gzip file decompresses to more than {} bytes (raise maxDecompressedBytes to load it)",
                l.max_bytes
            )));
        }
        if l.max_ratio > 0
            && self.total > RATIO_MIN_BYTES
            && self.total > u64::from(l.max_ratio).saturating_mul(compressed.max(1))
        {
            return Err(limit(format!(
                "the gzip file decompresses more than {}:1 ({} bytes from the first {} compressed bytes; a gzip bomb?) (raise maxCompressionRatio, or set it to 0, to load it)",
                l.max_ratio, self.total, compressed
            )));
        }
        if l.max_line_bytes == u64::MAX && l.max_entries == u64::MAX {
            return Ok(());
        }
        let mut rest = data;
        loop {
            let (seg, nl) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], Some(i)),
                None => (rest, None),
            };
            if !self.line_content && seg.iter().any(|b| !b.is_ascii_whitespace()) {
                self.line_content = true;
            }
            self.line_len += seg.len() as u64;
            // One byte of slack for a `\r` before the newline; the loader checks exactly.
            if self.line_content && self.line_len > l.max_line_bytes.saturating_add(1) {
                return Err(limit(format!(
                    "the gzip file holds a line longer than {} bytes (raise maxLineBytes to load it)",
                    l.max_line_bytes
                )));
            }
            let Some(i) = nl else { break };
            if self.line_content {
                self.lines += 1;
                if self.lines > l.max_entries.saturating_add(1) {
                    return Err(limit(format!(
                        "the gzip file holds more than {} entries (raise maxEntries to load it)",
                        l.max_entries
                    )));
                }
            }
            self.line_content = false;
            self.line_len = 0;
            rest = &rest[i + 1..];
        }
        Ok(())
    }
}

/// Where decompressed bytes go.
pub trait Sink {
    /// Bytes of the current member.
    fn write(&mut self, data: &[u8]) -> Result<()>;
    /// The current member ended cleanly.
    fn commit(&mut self);
    /// The current member is dropped (torn, or corrupt when lenient): forget
    /// what it wrote.
    fn rollback(&mut self);
}

/// A [`Sink`] collecting everything in memory, growing at most to the limit
/// and failing cleanly (`LIMIT_EXCEEDED`) when memory cannot be had.
#[derive(Debug, Default)]
pub struct VecSink {
    pub data: Vec<u8>,
    committed: usize,
    max: usize,
}

impl VecSink {
    pub fn new(max_bytes: u64) -> Self {
        VecSink {
            data: Vec::new(),
            committed: 0,
            max: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        }
    }
}

impl Sink for VecSink {
    fn write(&mut self, data: &[u8]) -> Result<()> {
        let need = self.data.len().saturating_add(data.len());
        if need > self.data.capacity() {
            let cap = need
                .max(self.data.capacity().saturating_mul(2))
                .max(64 << 10)
                .min(self.max.max(need));
            self.data
                .try_reserve_exact(cap - self.data.len())
                .map_err(|_| {
                    limit(format!(
                        "not enough memory to decompress the gzip file past {} bytes (lower maxDecompressedBytes to fail sooner)",
                        self.data.len()
                    ))
                })?;
        }
        self.data.extend_from_slice(data);
        Ok(())
    }
    fn commit(&mut self) {
        self.committed = self.data.len();
    }
    fn rollback(&mut self) {
        self.data.truncate(self.committed);
    }
}

/// A reader counting the bytes consumed from it.
struct Counted<R> {
    inner: R,
    pos: u64,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.pos += n as u64;
    }
}

/// What a streamed decode found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Length of the compressed input up to the end of the last complete member.
    pub valid_len: u64,
    /// A torn (or, when lenient, broken) last part of the input, in compressed offsets.
    pub torn: Option<TornTail>,
    /// Decompressed bytes of the complete members.
    pub len: u64,
}

/// Decompresses every member of `input` (`total_len` bytes long) into `sink`,
/// checking `limits` as it goes. A member cut short by the end of the input is
/// a torn tail (dropped, reported), and so is a zero-filled tail; a member that
/// is corrupt in another way is `CORRUPTED_DATA` unless `lenient`, in which
/// case it and everything after it are dropped and reported the same way.
pub fn decode_stream<R: BufRead>(
    input: R,
    total_len: u64,
    lenient: bool,
    limits: &GzLimits,
    sink: &mut impl Sink,
) -> Result<Outcome> {
    let io = |e: std::io::Error| Error::new(ErrorCode::Io, format!("cannot read: {e}"));
    let mut rd = Counted {
        inner: input,
        pos: 0,
    };
    let mut meter = Meter::new(*limits);
    let mut out = Outcome::default();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let start = rd.pos;
        let first = match rd.fill_buf().map_err(io)?.first() {
            None => break,
            Some(&b) => b,
        };
        let torn = TornTail {
            line: None,
            offset: start,
            bytes: total_len.saturating_sub(start),
        };
        if first == 0 {
            // A zero-filled tail (a file extended but never written, after a crash)?
            let mut zero = true;
            loop {
                let chunk = rd.fill_buf().map_err(io)?;
                if chunk.is_empty() {
                    break;
                }
                if chunk.iter().any(|&b| b != 0) {
                    zero = false;
                    break;
                }
                let n = chunk.len();
                rd.consume(n);
            }
            if zero || lenient {
                out.torn = Some(torn);
                break;
            }
            return Err(Error::corrupted("corrupt gzip member: not a gzip header").at(None, start));
        }
        let mut dec = flate2::bufread::GzDecoder::new(&mut rd);
        let before = meter.clone();
        let res = loop {
            match dec.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    meter.feed(&buf[..n], dec.get_ref().pos)?;
                    sink.write(&buf[..n])?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        drop(dec);
        match res {
            Ok(()) => {
                if rd.pos == start {
                    break;
                }
                sink.commit();
                out.valid_len = rd.pos;
                out.len = meter.total;
            }
            Err(e) => {
                sink.rollback();
                meter = before;
                if e.kind() == std::io::ErrorKind::UnexpectedEof || lenient {
                    out.torn = Some(torn);
                    break;
                }
                return Err(Error::corrupted(format!("corrupt gzip member: {e}")).at(None, start));
            }
        }
    }
    out.len = meter.total;
    Ok(out)
}

/// Decompressed content of a gzip session file.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The decompressed bytes of all complete members.
    pub data: Vec<u8>,
    /// Length of the compressed file up to the end of the last complete member.
    pub valid_len: u64,
    /// A torn (or, when lenient, broken) last part of the file, in compressed offsets.
    pub torn: Option<TornTail>,
}

/// Decodes every member of an in-memory file into memory, as [`decode_stream`].
pub fn decode(compressed: &[u8], lenient: bool, limits: &GzLimits) -> Result<Decoded> {
    let mut sink = VecSink::new(limits.max_bytes);
    let o = decode_stream(
        compressed,
        compressed.len() as u64,
        lenient,
        limits,
        &mut sink,
    )?;
    Ok(Decoded {
        data: sink.data,
        valid_len: o.valid_len,
        torn: o.torn,
    })
}

/// One gzip member holding `data`.
pub fn encode_member(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 3 + 64),
        flate2::Compression::default(),
    );
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: &GzLimits = &GzLimits::NONE;

    #[test]
    fn members_concatenate_and_torn_member_is_dropped() {
        let mut file = encode_member(b"line one\n");
        let first = file.len();
        file.extend(encode_member(b"line two\n"));
        let d = decode(&file, false, NONE).unwrap();
        assert_eq!(d.data, b"line one\nline two\n");
        assert!(d.torn.is_none());
        for cut in first + 1..file.len() {
            let d = decode(&file[..cut], false, NONE).unwrap();
            assert_eq!(d.data, b"line one\n", "cut at {cut}");
            assert_eq!(d.torn.as_ref().unwrap().offset, first as u64);
            assert_eq!(d.valid_len, first as u64);
        }
    }

    #[test]
    fn corrupt_member_is_an_error_unless_lenient() {
        let mut file = encode_member(b"line one\n");
        let n = file.len();
        file.extend(encode_member(b"line two\n"));
        file[n + 12] ^= 0xff;
        assert!(decode(&file, false, NONE).is_err());
        let d = decode(&file, true, NONE).unwrap();
        assert_eq!(d.data, b"line one\n");
    }

    #[test]
    fn zero_tail_is_torn_and_garbage_tail_is_corrupt() {
        let mut file = encode_member(b"line one\n");
        let n = file.len();
        file.extend([0u8; 100]);
        let d = decode(&file, false, NONE).unwrap();
        assert_eq!(d.data, b"line one\n");
        assert_eq!(d.valid_len, n as u64);
        let t = d.torn.unwrap();
        assert_eq!((t.offset, t.bytes), (n as u64, 100));
        file[n + 50] = 7;
        assert_eq!(
            decode(&file, false, NONE).unwrap_err().code,
            ErrorCode::CorruptedData
        );
        assert_eq!(decode(&file, true, NONE).unwrap().data, b"line one\n");
    }

    const LINE: usize = 228;

    fn bomb(lines: usize) -> Vec<u8> {
        let line = format!("{{\"type\":\"custom\",\"data\":\"{}\"}}\n", "x".repeat(200));
        assert_eq!(line.len(), LINE);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        for _ in 0..lines {
            enc.write_all(line.as_bytes()).unwrap();
        }
        enc.finish().unwrap()
    }

    #[test]
    fn each_limit_stops_decompression() {
        // 18 MB of text in about 20 KB: past the ratio's 16 MiB threshold.
        const N: usize = 80_000;
        let file = bomb(N);
        let base = GzLimits::NONE;
        let d = decode(&file, false, &base).unwrap();
        assert_eq!(d.data.len(), N * LINE);
        let cases = [
            (
                GzLimits {
                    max_bytes: 1 << 20,
                    ..base
                },
                "maxDecompressedBytes",
            ),
            (
                GzLimits {
                    max_ratio: 200,
                    ..base
                },
                "maxCompressionRatio",
            ),
            (
                GzLimits {
                    max_entries: 1000,
                    ..base
                },
                "maxEntries",
            ),
            (
                GzLimits {
                    max_line_bytes: 100,
                    ..base
                },
                "maxLineBytes",
            ),
        ];
        for (limits, name) in cases {
            let e = decode(&file, false, &limits).unwrap_err();
            assert_eq!(e.code, ErrorCode::LimitExceeded, "{name}");
            assert!(e.message.contains(name), "{name}: {}", e.message);
        }
        // A raised limit lets it through.
        let ok = GzLimits {
            max_ratio: 5000,
            max_entries: N as u64 - 1,
            max_line_bytes: LINE as u64 - 1,
            max_bytes: (N * LINE) as u64,
        };
        assert_eq!(decode(&file, false, &ok).unwrap().data.len(), N * LINE);
    }

    #[test]
    fn a_vec_sink_stops_at_the_limit_not_after() {
        struct Spy(u64);
        impl Sink for Spy {
            fn write(&mut self, data: &[u8]) -> Result<()> {
                self.0 += data.len() as u64;
                Ok(())
            }
            fn commit(&mut self) {}
            fn rollback(&mut self) {}
        }
        let file = bomb(10_000);
        let mut spy = Spy(0);
        let limits = GzLimits {
            max_bytes: 100_000,
            ..GzLimits::NONE
        };
        let e = decode_stream(&file[..], file.len() as u64, false, &limits, &mut spy).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
        assert!(spy.0 <= 100_000, "{}", spy.0);
    }
}
