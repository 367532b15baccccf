//! The footer envelope (spec: "Footer envelope").

use super::frame::{
    read_feature_flags, read_list_frame, read_locator, read_record_frame, read_string,
    EnvelopeLink, Locator,
};
use super::header::{parse_schema_description, SchemaDescription};
use super::{open_envelope, EnvelopeType};
use crate::error::Result;

/// A cluster group record: an entry range and the link to its page list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterGroupRecord {
    pub min_entry: u64,
    pub entry_span: u64,
    pub n_clusters: u32,
    pub page_list: EnvelopeLink,
}

/// A linked attribute set record: another RNTuple holding user metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeSetRecord {
    pub schema_version_major: u16,
    pub schema_version_minor: u16,
    /// Uncompressed size of the attribute set's anchor, checksum included.
    pub anchor_length: u32,
    pub anchor: Locator,
    pub name: String,
}

/// The parsed footer envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct FooterEnvelope {
    pub feature_flags: Vec<u64>,
    /// The checksum of the header this footer belongs to.
    pub header_checksum: u64,
    /// The schema extension, incremental to the header (possibly empty).
    pub extension: SchemaDescription,
    pub cluster_groups: Vec<ClusterGroupRecord>,
    pub attribute_sets: Vec<AttributeSetRecord>,
}

/// Parses a decompressed footer envelope.
pub fn parse_footer(data: &[u8], file_offset: u64) -> Result<FooterEnvelope> {
    let (mut c, _) = open_envelope(data, EnvelopeType::Footer, file_offset)?;
    let feature_flags = read_feature_flags(&mut c)?;
    let header_checksum = c.u64_le()?;
    let extension = parse_schema_description(&mut read_record_frame(&mut c)?)?;

    // Smallest cluster group: frame size, entries, span, count, link.
    let (mut list, n) = read_list_frame(&mut c, 8 + 8 + 8 + 4 + 8 + 12)?;
    let mut cluster_groups = Vec::with_capacity(n);
    for _ in 0..n {
        let mut r = read_record_frame(&mut list)?;
        cluster_groups.push(ClusterGroupRecord {
            min_entry: r.u64_le()?,
            entry_span: r.u64_le()?,
            n_clusters: r.u32_le()?,
            page_list: EnvelopeLink::read(&mut r)?,
        });
    }

    // Linked attribute sets came with format 1.0.1; older footers end here.
    let mut attribute_sets = Vec::new();
    if c.remaining() > 0 {
        let (mut list, n) = read_list_frame(&mut c, 8)?;
        attribute_sets.reserve(n);
        for _ in 0..n {
            let mut r = read_record_frame(&mut list)?;
            attribute_sets.push(AttributeSetRecord {
                schema_version_major: r.u16_le()?,
                schema_version_minor: r.u16_le()?,
                anchor_length: r.u32_le()?,
                anchor: read_locator(&mut r)?,
                name: read_string(&mut r)?,
            });
        }
    }
    Ok(FooterEnvelope {
        feature_flags,
        header_checksum,
        extension,
        cluster_groups,
        attribute_sets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::test_util::{envelope, Writer};

    fn empty_schema(w: &mut Writer) {
        w.record(|w| {
            for _ in 0..4 {
                w.list(0, |_| {});
            }
        });
    }

    #[test]
    fn parses_cluster_groups_and_attribute_sets() {
        let mut w = Writer::default();
        w.u64(0).u64(0x1234);
        empty_schema(&mut w);
        w.list(1, |w| {
            w.record(|w| {
                w.u64(0).u64(100).u32(2);
                w.u64(500).i32(80).u64(4096);
            });
        });
        w.list(1, |w| {
            w.record(|w| {
                w.u16(1).u16(0).u32(120).i32(110).u64(9000).string("meta");
            });
        });
        let f = parse_footer(&envelope(0x02, &w.buf), 0).unwrap();
        assert_eq!(f.header_checksum, 0x1234);
        assert_eq!(f.cluster_groups[0].entry_span, 100);
        assert_eq!(
            f.cluster_groups[0].page_list.locator,
            Locator {
                size: 80,
                offset: 4096
            }
        );
        assert_eq!(f.attribute_sets[0].name, "meta");
        assert_eq!(f.attribute_sets[0].anchor.offset, 9000);
    }

    #[test]
    fn footer_without_attribute_list_is_fine() {
        let mut w = Writer::default();
        w.u64(0).u64(7);
        empty_schema(&mut w);
        w.list(0, |_| {});
        let f = parse_footer(&envelope(0x02, &w.buf), 0).unwrap();
        assert!(f.attribute_sets.is_empty());
        assert!(f.cluster_groups.is_empty());
    }
}
