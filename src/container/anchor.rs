//! The RNTuple anchor: the `ROOT::RNTuple` object that locates an RNTuple's
//! header and footer envelopes (spec: "Embedding in a ROOT file and the anchor").
//!
//! The key payload is the object as ROOT's streamer writes it
//! (`ROOT::RNTuple::Streamer` in tree/ntuple/src/RNTuple.cxx, `RTFNTuple` in
//! tree/ntuple/src/RMiniFile.cxx): a byte count and a class version, the
//! anchor fields, then the checksum. All big-endian.
//!
//! ```text
//! offset  size  field
//!  0       4    byte count   0x40000000 | n: the n bytes that follow, up to the checksum
//!  4       2    class version (2)
//!  6       8    version epoch, major, minor, patch   (4 x u16)     -+
//! 14      24    seek, nbytes, len of the header      (3 x u64)      | checksummed
//! 38      24    seek, nbytes, len of the footer      (3 x u64)      |
//! 62       8    max key size                                         |
//! 70       .    fields of later anchor versions (appended only)    -+
//! 4+n      8    XXH3-64 of bytes 6 .. 4+n
//! ```
//!
//! The checksum leaves out the byte count and the class version. Its position
//! is given by the byte count, which is how `RNTuple::Streamer` finds it; the
//! RNTuple 1.0 anchor is 78 bytes long in all. The key's ObjLen is the
//! uncompressed length, checksum included.

use bytes::Bytes;

use super::key::{read_object, Key};
use crate::checksum::xxh3_64;
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::io::ReadAt;

/// Class name of the anchor key.
pub const ANCHOR_CLASS: &str = "ROOT::RNTuple";

/// Class name of pre-release (epoch 0) anchors, which are not read.
pub const PRE_RELEASE_ANCHOR_CLASS: &str = "ROOT::Experimental::RNTuple";

/// Length of the RNTuple 1.0 anchor payload, checksum included (`kMinNTupleSize`).
pub const MIN_ANCHOR_LEN: u64 = 78;

/// Longest anchor payload accepted. The anchor only grows by appended
/// fields; this bound keeps a corrupt length from allocating much.
pub const MAX_ANCHOR_LEN: u64 = 64 * 1024;

/// Flag set in a streamer byte count (`kByteCountMask`).
const BYTE_COUNT_FLAG: u32 = 0x4000_0000;

/// Lowest class version of `ROOT::RNTuple` (the first release wrote 2).
const MIN_CLASS_VERSION: u16 = 2;

/// Byte count plus class version: what precedes the checksummed fields.
const STREAMER_HEADER_LEN: usize = 6;

/// Length of the fields of anchor version 1.0, from the epoch to the max key size.
const FIELDS_LEN: usize = 64;

/// An RNTuple anchor (see the module documentation for the layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// Format epoch: 1 for every released RNTuple.
    pub version_epoch: u16,
    /// Major format version.
    pub version_major: u16,
    /// Minor format version.
    pub version_minor: u16,
    /// Patch format version.
    pub version_patch: u16,
    /// File offset of the header envelope's (compressed) block.
    pub seek_header: u64,
    /// Size in the file of the header envelope.
    pub nbytes_header: u64,
    /// Uncompressed length of the header envelope.
    pub len_header: u64,
    /// File offset of the footer envelope's (compressed) block.
    pub seek_footer: u64,
    /// Size in the file of the footer envelope.
    pub nbytes_footer: u64,
    /// Uncompressed length of the footer envelope.
    pub len_footer: u64,
    /// Largest RBlob key payload; bigger blobs are split (see [`super::read_blob`]).
    pub max_key_size: u64,
}

impl Anchor {
    /// The format version as (epoch, major, minor, patch).
    pub fn version(&self) -> (u16, u16, u16, u16) {
        (
            self.version_epoch,
            self.version_major,
            self.version_minor,
            self.version_patch,
        )
    }

    /// Reads the anchor held by `key`, a key of class [`ANCHOR_CLASS`] read
    /// at its own position ([`Key::read`]).
    pub fn read(source: &dyn ReadAt, key: &Key) -> Result<Anchor> {
        Anchor::read_at(
            source,
            key.payload_offset()?,
            key.stored_len()?,
            u64::from(key.obj_len),
        )
    }

    /// Reads an anchor payload stored in `nbytes` bytes at `offset`, `len`
    /// bytes long uncompressed; the form in which an RNTuple footer links the
    /// anchors of its attribute sets (`RMiniFileReader::GetNTupleProperAtOffset`).
    pub fn read_at(source: &dyn ReadAt, offset: u64, nbytes: u64, len: u64) -> Result<Anchor> {
        if !(MIN_ANCHOR_LEN..=MAX_ANCHOR_LEN).contains(&len) {
            return Err(Error::malformed(
                "anchor",
                offset,
                format!("anchor length {len} is outside {MIN_ANCHOR_LEN}..={MAX_ANCHOR_LEN}"),
            ));
        }
        let payload: Bytes = read_object(source, "anchor", offset, nbytes, len)?;
        Anchor::parse(&payload, offset)
    }

    /// Parses and verifies an uncompressed anchor payload whose first byte
    /// is at file offset `offset` (for compressed payloads: the offset of the
    /// compressed block).
    ///
    /// Fields appended by later anchor versions are skipped but still
    /// checksummed. Gives [`Error::ChecksumMismatch`] when the checksum does
    /// not match, and [`Error::Unsupported`] for epoch 0 (pre-release) and
    /// epochs above 1.
    pub fn parse(payload: &[u8], offset: u64) -> Result<Anchor> {
        let mut c = Cursor::new(payload, offset, "anchor");
        let byte_count = c.u32_be()?;
        if byte_count & BYTE_COUNT_FLAG == 0 {
            return Err(Error::malformed(
                "anchor",
                offset,
                format!("byte count {byte_count:#010x} lacks its flag"),
            ));
        }
        let class_version = c.u16_be()?;
        if class_version < MIN_CLASS_VERSION {
            return Err(Error::unsupported(format!(
                "RNTuple anchor class version {class_version}"
            )));
        }
        // The byte count covers the class version and the fields.
        let fields_end = usize::try_from(byte_count & !BYTE_COUNT_FLAG)
            .ok()
            .and_then(|n| n.checked_add(4))
            .filter(|&end| end >= STREAMER_HEADER_LEN + FIELDS_LEN)
            .ok_or_else(|| {
                Error::malformed(
                    "anchor",
                    offset,
                    format!("byte count {byte_count:#010x} is too small"),
                )
            })?;
        let checksummed =
            payload
                .get(STREAMER_HEADER_LEN..fields_end)
                .ok_or(Error::UnexpectedEof {
                    what: "anchor",
                    offset,
                    needed: fields_end as u64,
                    available: payload.len() as u64,
                })?;

        let version_epoch = c.u16_be()?;
        let version_major = c.u16_be()?;
        let version_minor = c.u16_be()?;
        let version_patch = c.u16_be()?;
        let anchor = Anchor {
            version_epoch,
            version_major,
            version_minor,
            version_patch,
            seek_header: c.u64_be()?,
            nbytes_header: c.u64_be()?,
            len_header: c.u64_be()?,
            seek_footer: c.u64_be()?,
            nbytes_footer: c.u64_be()?,
            len_footer: c.u64_be()?,
            max_key_size: c.u64_be()?,
        };

        c.seek(fields_end)?;
        let checksum_offset = c.offset();
        let expected = c.u64_be()?;
        let actual = xxh3_64(checksummed);
        crate::error::verify_checksum("anchor", checksum_offset, expected, actual)?;

        match anchor.version_epoch {
            0 => Err(Error::unsupported("pre-release RNTuple (epoch 0)")),
            1 => Ok(anchor),
            epoch => Err(Error::unsupported(format!("RNTuple epoch {epoch}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::fixture;

    /// The anchor of RNTuple "B" in the corpus file
    /// rntviewer-testfile-multiple-rntuples-v1-0-0-0.root, at offset 0x872.
    const CORPUS_ANCHOR: [u8; 78] = [
        0x40, 0x00, 0x00, 0x42, // byte count: flag | 66
        0x00, 0x02, // class version 2
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // version 1.0.0.0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x06, // seek header 1542
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x6f, // nbytes header 111
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xab, // len header 171
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0xf5, // seek footer 2037
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x52, // nbytes footer 82
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x94, // len footer 148
        0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, // max key size 1 GiB
        0x59, 0x5f, 0x6d, 0x89, 0xee, 0x3b, 0xf1, 0x02, // XXH3-64 of bytes 6..70
    ];

    #[test]
    fn parses_a_corpus_anchor() {
        let a = Anchor::parse(&CORPUS_ANCHOR, 0x872).unwrap();
        assert_eq!(a.version(), (1, 0, 0, 0));
        assert_eq!(
            (a.seek_header, a.nbytes_header, a.len_header),
            (1542, 111, 171)
        );
        assert_eq!(
            (a.seek_footer, a.nbytes_footer, a.len_footer),
            (2037, 82, 148)
        );
        assert_eq!(a.max_key_size, 1 << 30);
    }

    #[test]
    fn every_flipped_byte_is_caught() {
        for i in 0..CORPUS_ANCHOR.len() {
            let mut data = CORPUS_ANCHOR;
            data[i] ^= 0x10;
            let result = Anchor::parse(&data, 0x872);
            // The class version is not checksummed: a higher one is accepted.
            if i == 4 || i == 5 {
                assert!(result.is_ok(), "{i}");
                continue;
            }
            let err = result.unwrap_err();
            match i {
                // The byte count is not checksummed either, but it places the
                // checksum: here it points past the end.
                0..=3 => assert!(matches!(err, Error::UnexpectedEof { .. }), "{i}: {err}"),
                _ => assert!(
                    matches!(
                        err,
                        Error::ChecksumMismatch {
                            what: "anchor",
                            offset: 0x8b8,
                            ..
                        }
                    ),
                    "{i}: {err}"
                ),
            }
        }
    }

    #[test]
    fn grown_anchor_is_read_and_checksummed() {
        // A future anchor with 16 bytes of appended fields.
        let fields = fixture::anchor_fields(1, 2, 3, 4, 1000, 100, 200, 2000, 50, 60, 1 << 30);
        let grown = fixture::anchor_payload_with(&fields, &[0xee; 16]);
        assert_eq!(grown.len(), 78 + 16);
        let a = Anchor::parse(&grown, 0).unwrap();
        assert_eq!(a.version(), (1, 2, 3, 4));
        assert_eq!(
            (a.seek_footer, a.nbytes_footer, a.len_footer),
            (2000, 50, 60)
        );
        let mut flipped = grown.clone();
        flipped[75] ^= 1;
        assert!(matches!(
            Anchor::parse(&flipped, 0),
            Err(Error::ChecksumMismatch { offset: 86, .. })
        ));
    }

    #[test]
    fn epochs_other_than_1_are_unsupported() {
        for epoch in [0, 2, 0xffff] {
            let fields = fixture::anchor_fields(epoch, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7);
            let err = Anchor::parse(&fixture::anchor_payload_with(&fields, &[]), 0).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "{epoch}: {err}");
        }
    }

    #[test]
    fn truncated_or_short_anchors_are_errors() {
        for len in [0, 5, 6, 40, 70, 77] {
            let err = Anchor::parse(&CORPUS_ANCHOR[..len], 0).unwrap_err();
            assert!(matches!(err, Error::UnexpectedEof { .. }), "{len}: {err}");
        }
        let mut small = CORPUS_ANCHOR;
        small[3] = 0x10; // byte count 16: smaller than the 1.0 fields
        assert!(matches!(
            Anchor::parse(&small, 0),
            Err(Error::Malformed { .. })
        ));
        let mut no_flag = CORPUS_ANCHOR;
        no_flag[0] = 0;
        assert!(matches!(
            Anchor::parse(&no_flag, 0),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn read_at_bounds_the_length() {
        let source = Bytes::from(CORPUS_ANCHOR.to_vec());
        assert!(Anchor::read_at(&source, 0, 78, 78).is_ok());
        assert!(matches!(
            Anchor::read_at(&source, 0, 78, 77),
            Err(Error::Malformed { .. })
        ));
        assert!(matches!(
            Anchor::read_at(&source, 0, 78, u64::MAX),
            Err(Error::Malformed { .. })
        ));
        assert!(matches!(
            Anchor::read_at(&source, 1, 78, 78),
            Err(Error::UnexpectedEof { .. })
        ));
    }
}
