//! `.jsonl.gz` sessions: a gzip file of one or more members (RFC 1952 allows
//! concatenated members). The writer appends one member per commit, so a crash
//! can only tear the last member; loading drops a torn last member whole.

use std::io::{Read, Write};

use crate::error::{Error, Result};
use crate::types::TornTail;

/// Whether `bytes` start with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
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

/// Decodes every member. A member cut short by the end of the file is a torn
/// tail (dropped, reported); a member that is corrupt in another way is
/// `CORRUPTED_DATA` unless `lenient`, in which case it and everything after it
/// are dropped and reported the same way.
pub fn decode(compressed: &[u8], lenient: bool, max_len: u64) -> Result<Decoded> {
    let mut out = Decoded::default();
    let mut pos = 0usize;
    while pos < compressed.len() {
        let rest = &compressed[pos..];
        if rest.iter().all(|&b| b == 0) {
            // Zero-filled tail (a file extended but never written, after a crash).
            out.torn = Some(TornTail {
                line: None,
                offset: pos as u64,
                bytes: rest.len() as u64,
            });
            break;
        }
        let before = out.data.len();
        let mut reader: &[u8] = rest;
        let mut dec = flate2::bufread::GzDecoder::new(&mut reader);
        let mut limited = (&mut dec).take(max_len.saturating_sub(before as u64).saturating_add(1));
        let res = limited.read_to_end(&mut out.data);
        if out.data.len() as u64 > max_len {
            return Err(Error::new(
                crate::ErrorCode::LimitExceeded,
                format!("decompressed session is larger than the limit of {max_len} bytes"),
            ));
        }
        match res {
            Ok(_) => {
                drop(dec);
                let consumed = rest.len() - reader.len();
                if consumed == 0 {
                    break;
                }
                pos += consumed;
                out.valid_len = pos as u64;
            }
            Err(e) => {
                out.data.truncate(before);
                let torn = TornTail {
                    line: None,
                    offset: pos as u64,
                    bytes: rest.len() as u64,
                };
                if e.kind() == std::io::ErrorKind::UnexpectedEof || lenient {
                    out.torn = Some(torn);
                    break;
                }
                return Err(
                    Error::corrupted(format!("corrupt gzip member: {e}")).at(None, pos as u64)
                );
            }
        }
    }
    Ok(out)
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

    #[test]
    fn members_concatenate_and_torn_member_is_dropped() {
        let mut file = encode_member(b"line one\n");
        let first = file.len();
        file.extend(encode_member(b"line two\n"));
        let d = decode(&file, false, u64::MAX).unwrap();
        assert_eq!(d.data, b"line one\nline two\n");
        assert!(d.torn.is_none());
        for cut in first + 1..file.len() {
            let d = decode(&file[..cut], false, u64::MAX).unwrap();
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
        assert!(decode(&file, false, u64::MAX).is_err());
        let d = decode(&file, true, u64::MAX).unwrap();
        assert_eq!(d.data, b"line one\n");
    }
}
