//! Rows are stored compressed when that pays: a step's session lines and
//! events are a few kilobytes of JSON, below the size at which PostgreSQL
//! compresses a row itself (about 2 KB), and JSON shrinks several times. A
//! row keeps its uncompressed length (`len`) and whether it is compressed
//! (`z`); reading checks that the bytes inflate to exactly `len`.

use std::borrow::Cow;
use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use forkpoint_core::{Error, Result};

/// Below this, a row is stored as it is.
const MIN: usize = 128;

/// `raw` as stored: compressed (`true`) when that saves at least a tenth.
pub(crate) fn pack(raw: &[u8]) -> (bool, Cow<'_, [u8]>) {
    if raw.len() < MIN {
        return (false, Cow::Borrowed(raw));
    }
    let mut e = DeflateEncoder::new(Vec::with_capacity(raw.len() / 3), Compression::fast());
    if e.write_all(raw).is_ok()
        && let Ok(z) = e.finish()
        && z.len() < raw.len() - raw.len() / 10
    {
        return (true, Cow::Owned(z));
    }
    (false, Cow::Borrowed(raw))
}

/// The bytes of a row stored by [`pack`], which must be `len` long
/// (`CORRUPTED_DATA` otherwise, also for bytes that do not inflate).
pub(crate) fn unpack(z: bool, bytes: Vec<u8>, len: i64, what: &str) -> Result<Vec<u8>> {
    let bad = |why: &str| Error::corrupted(format!("{what}: {why}"));
    let len = usize::try_from(len).map_err(|_| bad("a negative length"))?;
    if !z {
        return if bytes.len() == len {
            Ok(bytes)
        } else {
            Err(bad("its length is not the one recorded"))
        };
    }
    // The recorded length is not trusted for the allocation (a damaged row
    // could claim any); reading stops one byte past it.
    let mut out = Vec::with_capacity(len.min(bytes.len().saturating_mul(8)).min(1 << 24));
    // One byte more than expected is read, so a longer stream is seen.
    DeflateDecoder::new(bytes.as_slice())
        .take(len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(&format!("its compressed bytes do not inflate ({e})")))?;
    if out.len() == len {
        Ok(out)
    } else {
        Err(bad("it inflates to another length than the one recorded"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_what_shrinks_and_checks_lengths() {
        let json = b"{\"seq\":1,\"type\":\"text_chunk\",\"delta\":\"hello\"}\n".repeat(20);
        let (z, packed) = pack(&json);
        assert!(z && packed.len() < json.len() / 3, "{}", packed.len());
        let packed = packed.into_owned();
        assert_eq!(
            unpack(true, packed.clone(), json.len() as i64, "x").unwrap(),
            json
        );
        assert!(unpack(true, packed.clone(), json.len() as i64 - 1, "x").is_err());
        assert!(unpack(true, packed, json.len() as i64 + 1, "x").is_err());
        assert!(unpack(true, b"not deflate".to_vec(), 10, "x").is_err());
        // A damaged row claiming a huge length is refused, not allocated.
        let (_, small) = pack(&json);
        assert!(unpack(true, small.into_owned(), i64::MAX, "x").is_err());
        let small = b"{\"a\":1}\n";
        assert_eq!(pack(small), (false, Cow::Borrowed(&small[..])));
        assert_eq!(unpack(false, small.to_vec(), 8, "x").unwrap(), small);
        assert!(unpack(false, small.to_vec(), 9, "x").is_err());
        // Random bytes do not shrink: stored as they are.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        assert!(!pack(&noise).0);
    }
}
