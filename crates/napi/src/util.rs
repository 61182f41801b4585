//! Shared conversions.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use forkpoint_core::Error;
use forkpoint_core::provider::request::{BodyPart, Held};
use forkpoint_core::threads::on_threads;
use napi::bindgen_prelude::{BufferSlice, Either, Latin1String};
use napi::{Env, JsString, JsStringLatin1, JsStringUtf16, Status};

/// JSON text for JavaScript: ASCII text becomes a one-byte V8 string by a
/// plain copy, which is several times faster than decoding it as UTF-8.
pub type JsonText = Either<Latin1String, String>;

/// JSON text with every non-ASCII character written as a `\u` escape (such
/// characters can only sit inside its strings, so `JSON.parse` gives the same
/// value), as [`JsonText`]: a one-byte V8 string made by a plain copy, where
/// UTF-8 text with a character past U+00FF becomes a two-byte string (twice
/// the memory) by a decode.
pub fn ascii_json_text(s: String) -> JsonText {
    if s.is_ascii() {
        return Either::A(Latin1String::from(s));
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    let wide = b.iter().filter(|&&c| c >= 0xc0).count();
    let mut out = String::with_capacity(s.len() + wide * 10);
    let mut from = 0;
    while let Some(k) = b[from..].iter().position(|&c| c >= 0x80) {
        let i = from + k;
        out.push_str(&s[from..i]);
        let c = s[i..].chars().next().unwrap_or('\u{fffd}');
        let mut units = [0u16; 2];
        for &u in c.encode_utf16(&mut units).iter() {
            out.push_str("\\u");
            for shift in [12, 8, 4, 0] {
                out.push(HEX[usize::from((u >> shift) & 0xf)] as char);
            }
        }
        from = i + c.len_utf8();
    }
    out.push_str(&s[from..]);
    Either::A(Latin1String::from(out))
}

/// `s` as [`JsonText`].
pub fn json_text(s: String) -> JsonText {
    if s.is_ascii() {
        Either::A(Latin1String::from(s))
    } else {
        Either::B(s)
    }
}

/// `text` as a JS string whose characters V8 keeps outside its heap (an
/// external string: V8 neither copies nor decodes them). ASCII text is copied
/// as one byte a character, other text below U+0100 transcoded to it; any
/// other text is transcoded to UTF-16 (by encoding_rs). ASCII and UTF-16 are
/// made in parts on up to `threads` threads. For a 91 MiB body with a few
/// characters past U+00FF, V8's own decoder (`Buffer#toString`) took 186–209
/// ms, this 68–90 ms on two threads (110–128 ms on one); for an ASCII body
/// 54–63 ms and 42–51 ms. Short text is made the usual way.
pub fn external_string<'env>(
    env: &'env Env,
    text: &str,
    threads: usize,
) -> napi::Result<JsString<'env>> {
    use encoding_rs::mem;
    if text.len() < 1 << 16 {
        return env.create_string(text);
    }
    let latin1 = mem::str_latin1_up_to(text);
    if latin1 == text.len() {
        let out = if text.is_ascii() {
            transcoded(text, threads, <[u8]>::len, |s, out: &mut [u8]| {
                out.copy_from_slice(s.as_bytes());
                s.len()
            })
        } else {
            let mut out = vec![0u8; text.len()];
            let n = mem::convert_utf8_to_latin1_lossy(text.as_bytes(), &mut out);
            out.truncate(n);
            out
        };
        return external_latin1(env, out);
    }
    external_utf16(env, transcoded(text, threads, utf16_units, utf16_exactly))
}

/// V8 is told of an external string's memory (`napi_adjust_external_memory`)
/// while it lives: a string kept outside V8's heap is otherwise invisible to
/// V8's collector, which then saw no reason to run while a loop made one 64
/// MiB string after another (4 GB after 60). (Buffers made over a Vec are
/// not accounted either, but Node frees them on the next turn of the event
/// loop, which an agent's awaits give: an async loop of 40 builds of a 16 MiB
/// body stayed under 270 MB with or without accounting them, measured.)
fn external_accounted<T, S>(
    env: &Env,
    out: Vec<T>,
    make: impl FnOnce(*const T, usize, Vec<T>, Box<dyn FnOnce(Env, Vec<T>)>) -> napi::Result<S>,
) -> napi::Result<S> {
    // Its length, not its room: room past the text is never written, so
    // (fresh from the system for a string this long) never held.
    let size = i64::try_from(out.len() * std::mem::size_of::<T>()).unwrap_or(i64::MAX);
    env.adjust_external_memory(size)?;
    let (data, len) = (out.as_ptr(), out.len());
    make(
        data,
        len,
        out,
        Box::new(move |env: Env, out: Vec<T>| {
            drop(out);
            let _ = env.adjust_external_memory(-size);
        }),
    )
    // On an error the finalizer has run (napi-rs runs it for any call that
    // reached N-API; the checks before it cannot fail for a Vec's buffer).
}

/// Latin-1 `out` as an external string ([`external_accounted`]).
fn external_latin1(env: &Env, out: Vec<u8>) -> napi::Result<JsString<'_>> {
    external_accounted(env, out, |data, len, out, free| {
        // SAFETY: `data` is `out`'s buffer, `len` long; `out` is moved into
        // the finalizer's hint, so the buffer lives (unchanged, never moved)
        // until V8 calls the finalizer, which drops it.
        unsafe { JsStringLatin1::from_external(env, data, len, out, free) }
    })
    .map(JsStringLatin1::into_value)
}

/// UTF-16 `out` as an external string ([`external_accounted`]).
fn external_utf16(env: &Env, out: Vec<u16>) -> napi::Result<JsString<'_>> {
    external_accounted(env, out, |data, len, out, free| {
        // SAFETY: as in `external_latin1`.
        unsafe { JsStringUtf16::from_external(env, data, len, out, free) }
    })
    .map(JsStringUtf16::into_value)
}

/// UTF-16 units of UTF-8 `b`: one for each byte that is not a continuation,
/// two for a four-byte character (counted in runs short enough for byte-wide
/// counters, which the compiler makes vector code of).
fn utf16_units(b: &[u8]) -> usize {
    b.chunks(127)
        .map(|run| {
            let mut n = 0u8;
            for &c in run {
                n += u8::from((c as i8) >= -0x40) + u8::from(c >= 0xf0);
            }
            usize::from(n)
        })
        .sum()
}

/// `s` as UTF-16 into `out`, which may be exactly as long as it takes
/// (encoding_rs's decoder stops a few units short of a full buffer; the
/// characters left are written one by one). Returns the units written.
fn utf16_exactly(s: &str, out: &mut [u16]) -> usize {
    let mut decoder = encoding_rs::UTF_8.new_decoder_without_bom_handling();
    let (_, read, mut written) =
        decoder.decode_to_utf16_without_replacement(s.as_bytes(), out, true);
    for c in s.get(read..).unwrap_or_default().chars() {
        let Some(room) = out.get_mut(written..written + c.len_utf16()) else {
            break;
        };
        written += c.encode_utf16(room).len();
    }
    written
}

/// `text` transcoded by `convert` (which writes `units(part)` units of a
/// part and returns how many it wrote), in parts of at least 4 MiB on up to
/// `threads` threads. A part's place in the output is known from the units of
/// the parts before it, counted first (also on the threads); its pages are
/// written once, by the thread of their part. If a part does not fill its
/// place exactly (which counting rules out) or a thread cannot be had, the
/// text is transcoded again on the caller's thread.
fn transcoded<T: Copy + Default + Send>(
    text: &str,
    threads: usize,
    units: impl Fn(&[u8]) -> usize + Sync,
    convert: impl Fn(&str, &mut [T]) -> usize + Sync,
) -> Vec<T> {
    // Room for a unit a byte is enough for every encoding here; for a text
    // this long it is fresh from the system (zero pages), so pages that are
    // not written are never touched.
    let mut out = vec![T::default(); text.len()];
    let parts = threads.clamp(1, (text.len() >> 22).max(1));
    if parts > 1 {
        let mut cuts = vec![0];
        for k in 1..parts {
            let mut at = text.len() / parts * k;
            while !text.is_char_boundary(at) {
                at += 1;
            }
            cuts.push(at);
        }
        cuts.push(text.len());
        let pieces: Vec<&str> = cuts.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        // Counted on the threads (a part whose thread could not be had here).
        let (first, later) = on_threads(
            "forkpoint-count",
            &pieces[1..],
            || units(pieces[0].as_bytes()),
            |p| units(p.as_bytes()),
        );
        let sizes: Vec<usize> = std::iter::once(first)
            .chain(
                later
                    .into_iter()
                    .zip(&pieces[1..])
                    .map(|(n, p)| n.unwrap_or_else(|| units(p.as_bytes()))),
            )
            .collect();
        let total = sizes.iter().try_fold(0usize, |a, &n| a.checked_add(n));
        if let Some(total) = total.filter(|&t| t <= out.len()) {
            let mut slots = Vec::with_capacity(parts);
            let mut rest = &mut out[..total];
            for &n in &sizes {
                let (slot, tail) = rest.split_at_mut(n);
                slots.push(slot);
                rest = tail;
            }
            let convert = &convert;
            let mut jobs = pieces.iter().zip(slots).zip(&sizes);
            let exact = match jobs.next() {
                Some(((p, slot), &n)) => {
                    let (mine, theirs) = on_threads(
                        "forkpoint-transcode",
                        jobs,
                        || convert(p, slot) == n,
                        |((p, slot), &n)| convert(p, slot) == n,
                    );
                    // A part whose thread could not be had: all again below.
                    mine && theirs.into_iter().all(|ok| ok == Some(true))
                }
                None => false,
            };
            if exact {
                out.truncate(total);
                return out;
            }
        }
    }
    let n = convert(text, &mut out);
    out.truncate(n);
    out
}

/// Text of a JS string as UTF-8. The string's UTF-16 code units are copied
/// out as V8 holds them and transcoded here, in pieces, in about half the time
/// of V8's own conversion to UTF-8 (for a large context the boundary cost as
/// much as a third of the conversion). A lone surrogate (JSON text can hold one
/// only inside a string) is written as its `\uXXXX` escape, which means the
/// same, so it reaches the core as it was; V8's conversion would make it U+FFFD.
pub fn utf8_of(units: &[u16]) -> String {
    let mut out = String::with_capacity(units.len() + units.len() / 16);
    push_utf16(&mut out, units);
    out
}

/// Appends UTF-16 `units` to `out` as [`utf8_of`] writes them (a surrogate
/// pair cut between two calls would be two lone halves: callers cut before
/// a high surrogate).
pub fn push_utf16(out: &mut String, units: &[u16]) {
    push_utf16_with(out, units, &mut String::new());
}

/// [`push_utf16`] with `scratch`, room for a piece's UTF-8 that a caller
/// appending many pieces keeps (a fresh one for each piece was fresh memory
/// to fault in each time).
pub fn push_utf16_with(out: &mut String, units: &[u16], scratch: &mut String) {
    const PIECE: usize = 1 << 16;
    let room = PIECE.min(units.len()) * 3 + 3;
    if scratch.len() < room {
        *scratch = "\0".repeat(room);
    }
    let buf = scratch.as_mut_str();
    let mut rest = units;
    while !rest.is_empty() {
        let mut n = rest.len().min(PIECE);
        // A surrogate pair is never cut in two.
        if n < rest.len() && (0xD800..0xDC00).contains(&rest[n - 1]) {
            n -= 1;
        }
        let piece = &rest[..n];
        // Pairs are transcoded as they are; only a lone half needs an escape.
        if encoding_rs::mem::utf16_valid_up_to(piece) < piece.len() {
            push_with_escapes(out, piece);
        } else {
            let mut piece = piece;
            while !piece.is_empty() {
                let (read, written) = encoding_rs::mem::convert_utf16_to_str_partial(piece, buf);
                out.push_str(&buf[..written]);
                piece = &piece[read..];
            }
        }
        rest = &rest[n..];
    }
}

/// UTF-16 with surrogates: pairs as their character, lone ones as escapes.
fn push_with_escapes(out: &mut String, units: &[u16]) {
    for c in char::decode_utf16(units.iter().copied()) {
        match c {
            Ok(c) => out.push(c),
            Err(e) => out.push_str(&format!("\\u{:04x}", e.unpaired_surrogate())),
        }
    }
}

/// A core error as a napi error (message = the error's JSON).
pub fn err(e: Error) -> napi::Error {
    napi::Error::new(Status::GenericFailure, e.to_json())
}

/// Runs `f`, turning a panic into an `INTERNAL` error.
pub fn guard<T>(f: impl FnOnce() -> forkpoint_core::Result<T>) -> napi::Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(err),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(err(Error::internal(format!(
                "forkpoint panicked: {what} (please report this)"
            ))))
        }
    }
}

/// Parses an options object given as JSON (`undefined` → defaults).
pub fn opts<T: forkpoint_core::types::OptionsJson>(
    json: Option<String>,
) -> forkpoint_core::Result<T> {
    forkpoint_core::types::options_from_json(json.as_deref())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A random seed from the OS.
pub fn seed() -> u64 {
    getrandom::u64().unwrap_or_else(|_| now_ms() as u64 ^ u64::from(std::process::id()) << 32)
}

/// What [`body_parts`] gives: ids and bytes, flat.
pub type BodyParts<'env> = Vec<Either<f64, Option<BufferSlice<'env>>>>;

/// What a JavaScript caller was handed of request bodies ([`body_parts`]).
#[derive(Debug, Default)]
pub struct Handed {
    /// The kept pieces of the last body it was handed.
    held: Held,
    /// Pieces an external buffer was made for in a call that failed before
    /// its parts reached JavaScript: V8 may hold that buffer until it is
    /// collected, and must never get a second one over the same memory, so
    /// these pieces' bytes are copied instead (only after a failed N-API call).
    spoiled: Vec<u64>,
}

/// A request body's parts for JavaScript, flat: `[id, bytes, id, bytes, …]`
/// in order. `id` 0 is a part of this body alone (head, tail); another is a
/// kept piece ([`forkpoint_core::provider::request::Piece`]), whose bytes
/// are given once: `null` where the last body handed over had it (the
/// caller keeps the pieces of the last body by id; [`Held::parts`] says
/// which). A piece's bytes are an external buffer over its text: made once,
/// never copied.
pub fn body_parts<'env>(
    env: &'env Env,
    body: forkpoint_core::provider::request::Body,
    handed: &mut Handed,
) -> napi::Result<BodyParts<'env>> {
    let (parts, now) = handed.held.parts(body);
    let mut out = Vec::with_capacity(2 * parts.len());
    let mut made = Vec::new();
    let mut make = |part: BodyPart| -> napi::Result<(u64, Option<BufferSlice<'env>>)> {
        Ok(match part {
            BodyPart::Own(text) => (0, Some(BufferSlice::from_data(env, text.into_bytes())?)),
            BodyPart::New(piece) if handed.spoiled.contains(&piece.id) => {
                let bytes = piece.text.as_bytes().to_vec();
                (piece.id, Some(BufferSlice::from_data(env, bytes)?))
            }
            BodyPart::New(piece) => {
                let buffer = external_piece(env, piece.text)?;
                made.push(piece.id);
                (piece.id, Some(buffer))
            }
            BodyPart::Known(id) => (id, None),
        })
    };
    for part in parts {
        match make(part) {
            Ok((id, bytes)) => {
                out.push(Either::A(id as f64));
                out.push(Either::B(bytes));
            }
            Err(e) => {
                // The caller keeps what it held; the buffers made are not
                // handed over, and their pieces are copied from now on.
                handed.spoiled.extend(made);
                return Err(e);
            }
        }
    }
    handed.held = now;
    Ok(out)
}

/// `text`'s bytes as a Buffer V8 keeps outside its heap (accounted while it lives).
fn external_piece(env: &Env, text: Arc<String>) -> napi::Result<BufferSlice<'_>> {
    let size = i64::try_from(text.len()).unwrap_or(i64::MAX);
    env.adjust_external_memory(size)?;
    let (data, len) = (text.as_ptr().cast_mut(), text.len());
    // SAFETY: `data` is the piece's text, `len` long; an `Arc` of it is the
    // finalizer's hint, so the text lives (never moved) until V8 calls the
    // finalizer, which drops it. The core never reads a piece's bytes after
    // writing it (bodies only hand the `Arc` on), so a caller that writes
    // into the Buffer (the API says not to) changes only its own requests.
    // Each piece is given to JavaScript once (`Held::parts`; `body_parts`
    // keeps the new `Held` only once every part is made, and copies a
    // piece whose buffer was made in a call that failed, and a piece
    // absent from a body never comes back, since only `clear` drops pieces),
    // so no two buffers share its memory.
    unsafe {
        BufferSlice::from_external(env, data, len, text, move |env: Env, text| {
            drop(text);
            let _ = env.adjust_external_memory(-size);
        })
    }
}
