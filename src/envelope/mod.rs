//! RNTuple envelopes: the header, the footer and the page lists.
//!
//! ```text
//!  envelope  = u64 (type: low 16 bits | length: high 48 bits) payload u64 xxh3
//!  payload   = basic types, record frames and list frames
//!  frame     = i64 size (negative: list frame) [u32 item count] items ... [unknown tail]
//!  locator   = i32 size u64 offset              (standard)
//!            | i32 header (size, type, T bit) payload  (non-standard: 0x01 large)
//! ```
//!
//! Parsers here turn decompressed envelope bytes into plain records
//! ([`HeaderEnvelope`], [`FooterEnvelope`], [`PageListEnvelope`]); the
//! [`crate::descriptor`] layer validates and links them. Offsets in errors are
//! positions inside the decompressed envelope; callers add the file offset
//! of the envelope as context.

// File input never panics: the parsers and decoders check every index and
// length instead (tests may unwrap).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod footer;
mod frame;
mod header;
mod page_list;

pub use footer::{parse_footer, AttributeSetRecord, ClusterGroupRecord, FooterEnvelope};
pub use frame::{
    read_feature_flags, read_list_frame, read_locator, read_record_frame, read_string,
    EnvelopeLink, Locator,
};
pub use header::{
    parse_header, parse_schema_description, AliasColumnRecord, ColumnRecord, ExtraTypeInfoRecord,
    FieldRecord, HeaderEnvelope, SchemaDescription,
};
pub use page_list::{
    parse_page_list, ClusterSummary, ColumnPageRange, PageListEnvelope, PageRecord, Pages,
};

use crate::checksum::xxh3_64;
use crate::cursor::Cursor;
use crate::error::{Error, Result};

/// Envelope type IDs (spec: "Envelopes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum EnvelopeType {
    Header = 0x01,
    Footer = 0x02,
    PageList = 0x03,
}

impl EnvelopeType {
    fn name(self) -> &'static str {
        match self {
            EnvelopeType::Header => "header envelope",
            EnvelopeType::Footer => "footer envelope",
            EnvelopeType::PageList => "page list envelope",
        }
    }
}

/// Feature flag bits this reader implements (spec: "Feature flags").
const KNOWN_FEATURES: &[u64] = &[
    0, // Nested deferred columns (1.1.0.0)
];

/// Checks the envelope frame of decompressed `data` — type, length and the
/// XXH3 checksum over everything before it — and returns a cursor over the
/// payload together with the checksum (which footer and page lists use to
/// name the header they belong to).
///
/// `file_offset` is where the envelope's block starts in the file, for errors.
pub fn open_envelope(
    data: &[u8],
    kind: EnvelopeType,
    file_offset: u64,
) -> Result<(Cursor<'_>, u64)> {
    let what = kind.name();
    if data.len() < 16 {
        return Err(Error::UnexpectedEof {
            what,
            offset: file_offset,
            needed: 16,
            available: data.len() as u64,
        });
    }
    let (body, tail) = data.split_at(data.len() - 8);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(tail);
    let expected = u64::from_le_bytes(stored);
    let actual = xxh3_64(body);
    crate::error::verify_checksum(what, file_offset, expected, actual)?;
    let mut cursor = Cursor::new(body, 0, what);
    let type_and_length = cursor.u64_le()?;
    let type_id = (type_and_length & 0xFFFF) as u16;
    let length = type_and_length >> 16;
    if type_id != kind as u16 {
        return Err(Error::malformed(
            what,
            file_offset,
            format!("envelope type {type_id:#x}, expected {:#x}", kind as u16),
        ));
    }
    if length != data.len() as u64 {
        return Err(Error::malformed(
            what,
            file_offset,
            format!(
                "envelope length {length} but {} bytes were read",
                data.len()
            ),
        ));
    }
    Ok((cursor, expected))
}

/// Refuses feature flags this reader does not implement (spec: "Feature flags":
/// "a reader that meets an unknown bit must stop gracefully").
pub fn check_feature_flags(bits: &[u64]) -> Result<()> {
    match bits.iter().find(|bit| !KNOWN_FEATURES.contains(bit)) {
        Some(bit) => Err(Error::unsupported(format!(
            "unsupported format feature: {bit}"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Builders for hand-made envelopes in unit tests.

    use xxhash_rust::xxh3::xxh3_64;

    /// Little-endian serialiser for test envelopes.
    #[derive(Default)]
    pub struct Writer {
        pub buf: Vec<u8>,
    }

    impl Writer {
        pub fn u16(&mut self, v: u16) -> &mut Self {
            self.buf.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub fn u32(&mut self, v: u32) -> &mut Self {
            self.buf.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub fn i32(&mut self, v: i32) -> &mut Self {
            self.buf.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub fn u64(&mut self, v: u64) -> &mut Self {
            self.buf.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub fn i64(&mut self, v: i64) -> &mut Self {
            self.buf.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub fn f64(&mut self, v: f64) -> &mut Self {
            self.buf.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub fn string(&mut self, s: &str) -> &mut Self {
            self.u32(s.len() as u32);
            self.buf.extend_from_slice(s.as_bytes());
            self
        }
        /// A record frame around what `f` writes.
        pub fn record(&mut self, f: impl FnOnce(&mut Writer)) -> &mut Self {
            let mut inner = Writer::default();
            f(&mut inner);
            self.i64(8 + inner.buf.len() as i64);
            self.buf.extend_from_slice(&inner.buf);
            self
        }
        /// A list frame of `n` items written by `f`.
        pub fn list(&mut self, n: u32, f: impl FnOnce(&mut Writer)) -> &mut Self {
            let mut inner = Writer::default();
            f(&mut inner);
            self.i64(-(12 + inner.buf.len() as i64));
            self.u32(n);
            self.buf.extend_from_slice(&inner.buf);
            self
        }
    }

    /// Wraps a payload into an envelope of the given type with a valid checksum.
    pub fn envelope(type_id: u16, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() + 16) as u64;
        let mut out = Vec::new();
        out.extend_from_slice(&((len << 16) | u64::from(type_id)).to_le_bytes());
        out.extend_from_slice(payload);
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::envelope;
    use super::*;

    #[test]
    fn envelope_checksum_and_type_are_checked() {
        let env = envelope(0x02, &[1, 2, 3]);
        let (cursor, _) = open_envelope(&env, EnvelopeType::Footer, 0).unwrap();
        assert_eq!(cursor.remaining(), 3);

        assert!(matches!(
            open_envelope(&env, EnvelopeType::Header, 0),
            Err(Error::Malformed { .. })
        ));

        let mut bad = env.clone();
        bad[9] ^= 0x40;
        assert!(matches!(
            open_envelope(&bad, EnvelopeType::Footer, 77),
            Err(Error::ChecksumMismatch { offset: 77, .. })
        ));
        assert!(matches!(
            open_envelope(&env[..10], EnvelopeType::Footer, 0),
            Err(Error::UnexpectedEof { .. })
        ));
    }

    #[test]
    fn unknown_feature_is_refused_by_number() {
        assert!(check_feature_flags(&[0]).is_ok());
        let err = check_feature_flags(&[137]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unsupported: unsupported format feature: 137"
        );
    }
}
