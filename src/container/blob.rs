//! Blobs: the (compressed) bytes of an envelope or a page, stored in the
//! payload of invisible RBlob keys.
//!
//! A blob of at most Max Key Size bytes (an anchor field) is one key payload.
//! A bigger one is split over several keys (spec: "Embedding in a ROOT file
//! and the anchor"; `RNTupleFileWriter::WriteBlob` and
//! `RMiniFileReader::TryReadBuffer` in tree/ntuple/src/RMiniFile.cxx):
//!
//! ```text
//!  first key payload: exactly max key size bytes, at the blob's offset
//!  +-------------------------------+------------------+-----+------------------+
//!  | data: max - 8 * (n - 1) bytes | offset of chunk 2 | ... | offset of chunk n |
//!  +-------------------------------+------------------+-----+------------------+
//!                                    u64 little-endian: file offset of the payload
//!                                    (not the key) of the later chunk
//!  chunks 2 .. n: min(max, bytes left) bytes each, in other RBlob keys
//! ```
//!
//! The writer derives the chunk count n from the blob size alone
//! (`ComputeNumChunks`): n = ceil(nbytes / max), plus one more when the
//! offsets do not fit in the room the last chunk leaves. The later chunks are
//! written before the first one, so their offsets are lower.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::{read_checked, read_checked_reusing, ReadAt, ReadBytes};

/// Size of one chunk offset.
const CHUNK_OFFSET_LEN: u64 = 8;

/// [`read_blob`], reading a blob that is not split into `buffer` (which
/// the caller reuses) when the source has to copy; see
/// [`ReadAt::read_range_reusing`].
pub fn read_blob_reusing<'a>(
    source: &dyn ReadAt,
    offset: u64,
    nbytes: u64,
    max_key_size: u64,
    buffer: &'a mut Vec<u8>,
) -> Result<ReadBytes<'a>> {
    if max_key_size == 0 || nbytes <= max_key_size {
        return read_checked_reusing(source, "blob", offset, nbytes, buffer);
    }
    Ok(ReadBytes::Shared(read_blob(
        source,
        offset,
        nbytes,
        max_key_size,
    )?))
}

/// Reads the `nbytes` bytes of a blob at `offset`, reassembling it when it
/// is larger than `max_key_size` and therefore split over several keys. A
/// `max_key_size` of 0 means blobs are never split.
///
/// The bytes are returned as stored (still compressed). A blob that is not
/// split is a single [`read_checked`], without a copy for in-memory and
/// mapped sources.
pub fn read_blob(
    source: &dyn ReadAt,
    offset: u64,
    nbytes: u64,
    max_key_size: u64,
) -> Result<Bytes> {
    if max_key_size == 0 || nbytes <= max_key_size {
        return read_checked(source, "blob", offset, nbytes);
    }
    let (_, offsets_len) = chunk_layout(nbytes, max_key_size).ok_or_else(|| {
        Error::malformed(
            "blob",
            offset,
            format!("{nbytes} bytes cannot be split into keys of {max_key_size} bytes"),
        )
    })?;
    // The chunks are disjoint parts of the file, so together they cannot be
    // longer than it: check before allocating.
    if nbytes > source.len() {
        return Err(Error::UnexpectedEof {
            what: "blob",
            offset,
            needed: nbytes,
            available: source.len().saturating_sub(offset),
        });
    }
    let capacity = usize::try_from(nbytes)
        .map_err(|_| Error::malformed("blob", offset, "length does not fit in memory"))?;
    let first_len = max_key_size - offsets_len;

    let first = read_checked(source, "blob", offset, max_key_size)?;
    let (data, offsets) = first
        .split_at_checked(to_usize(first_len, offset)?)
        .ok_or_else(|| {
            Error::malformed("blob", offset, "first key shorter than the max key size")
        })?;
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(data);

    let mut remaining = nbytes - first_len;
    for (i, raw) in offsets.chunks_exact(8).enumerate() {
        if remaining == 0 {
            break;
        }
        let mut le = [0u8; 8];
        le.copy_from_slice(raw);
        let chunk_offset = u64::from_le_bytes(le);
        let len = remaining.min(max_key_size);
        let chunk = read_checked(source, "blob chunk", chunk_offset, len).map_err(|e| {
            e.context(format_args!(
                "chunk {} of the blob at offset {offset}",
                i + 2
            ))
        })?;
        out.extend_from_slice(&chunk);
        remaining -= len;
    }
    if remaining != 0 {
        return Err(Error::malformed(
            "blob",
            offset,
            format!("{remaining} bytes are not covered by the chunk offsets"),
        ));
    }
    Ok(Bytes::from(out))
}

/// Number of keys a blob of `nbytes` is split over, as `ComputeNumChunks`
/// computes it, and the length of the chunk offsets at the end of the first
/// key; `None` when the offsets would not fit in the first key (a max key
/// size too small for the blob).
fn chunk_layout(nbytes: u64, max_key_size: u64) -> Option<(u64, u64)> {
    if max_key_size == 0 {
        return None;
    }
    let mut chunks = nbytes.div_ceil(max_key_size);
    let tail = nbytes % max_key_size;
    let room = if tail > 0 { max_key_size - tail } else { 0 };
    let mut offsets_len = chunks.checked_sub(1)?.checked_mul(CHUNK_OFFSET_LEN)?;
    if offsets_len > room {
        chunks += 1;
        offsets_len = offsets_len.checked_add(CHUNK_OFFSET_LEN)?;
    }
    (offsets_len <= max_key_size).then_some((chunks, offsets_len))
}

fn to_usize(n: u64, offset: u64) -> Result<usize> {
    usize::try_from(n)
        .map_err(|_| Error::malformed("blob", offset, "length does not fit in memory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits `data` as `RNTupleFileWriter::WriteBlob` does, placing the later
    /// chunks first and the first chunk last. Returns the file and the
    /// offset of the blob.
    fn write_split(data: &[u8], max: u64) -> (Vec<u8>, u64) {
        let (_, offsets_len) = chunk_layout(data.len() as u64, max).unwrap();
        let first_len = (max - offsets_len) as usize;
        let mut file = vec![0xcc; 100];
        let mut offsets = Vec::new();
        for chunk in data[first_len..].chunks(max as usize) {
            file.extend([0xdd; 10]); // stands for an RBlob key header
            offsets.extend((file.len() as u64).to_le_bytes());
            file.extend(chunk);
        }
        file.extend([0xdd; 10]);
        let offset = file.len() as u64;
        file.extend(&data[..first_len]);
        file.extend(offsets);
        (file, offset)
    }

    #[test]
    fn chunk_count_follows_the_writer() {
        // 175 bytes in keys of 128: 120 + 8 offset bytes, then 55 (split.root's header).
        assert_eq!(chunk_layout(175, 128).map(|(n, _)| n), Some(2));
        // 256 in keys of 128: no room in a full last chunk, so a third key.
        assert_eq!(chunk_layout(256, 128).map(|(n, _)| n), Some(3));
        // 250 in keys of 128: the last chunk's room (6) is too small for 8.
        assert_eq!(chunk_layout(250, 128).map(|(n, _)| n), Some(3));
        // Keys too small to hold the offsets.
        assert_eq!(chunk_layout(1000, 8), None);
        assert_eq!(chunk_layout(u64::MAX, 1), None);
    }

    #[test]
    fn reassembles_split_blobs() {
        for (len, max) in [
            (175usize, 128u64),
            (256, 128),
            (250, 128),
            (1000, 128),
            (129, 128),
            (4096, 300),
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let (file, offset) = write_split(&data, max);
            let source = Bytes::from(file);
            let blob = read_blob(&source, offset, len as u64, max).unwrap();
            assert_eq!(&blob[..], &data[..], "{len} in keys of {max}");
        }
    }

    #[test]
    fn unsplit_blobs_are_zero_copy() {
        let source = Bytes::from((0..=255u8).collect::<Vec<_>>());
        let blob = read_blob(&source, 10, 100, 100).unwrap();
        assert_eq!(blob.as_ptr(), source[10..].as_ptr());
        let blob = read_blob(&source, 10, 200, 0).unwrap();
        assert_eq!(blob.len(), 200);
        assert!(matches!(
            read_blob(&source, 100, 200, 0),
            Err(Error::UnexpectedEof { .. })
        ));
    }

    #[test]
    fn bad_chunk_offsets_are_errors() {
        let data = vec![7u8; 300];
        let (mut file, offset) = write_split(&data, 128);
        // Point the last chunk offset past the end of the file.
        let end = file.len();
        file[end - 8..].copy_from_slice(&u64::MAX.to_le_bytes());
        let err = read_blob(&Bytes::from(file), offset, 300, 128).unwrap_err();
        assert!(
            matches!(
                err.root_cause(),
                Error::UnexpectedEof {
                    what: "blob chunk",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn huge_sizes_are_refused_before_allocating() {
        let source = Bytes::from(vec![0u8; 1000]);
        let err = read_blob(&source, 0, 1 << 40, 128).unwrap_err();
        assert!(
            matches!(err, Error::UnexpectedEof { .. } | Error::Malformed { .. }),
            "{err}"
        );
        let err = read_blob(&source, 0, 900, 16).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
    }
}
