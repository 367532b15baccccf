//! The header envelope (spec: "Header envelope", "Field description",
//! "Column description", "Alias columns", "Extra type information").

use super::frame::{read_feature_flags, read_list_frame, read_record_frame, read_string};
use super::{open_envelope, EnvelopeType};
use crate::cursor::Cursor;
use crate::error::Result;

/// A field record as stored, before validation.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldRecord {
    pub field_version: u32,
    pub type_version: u32,
    pub parent_id: u32,
    pub structural_role: u16,
    pub flags: u16,
    pub name: String,
    pub type_name: String,
    pub type_alias: String,
    pub description: String,
    /// Flag 0x01: the number of repetitions of a fixed-size array.
    pub array_size: Option<u64>,
    /// Flag 0x02: the source field of a projected field.
    pub source_field_id: Option<u32>,
    /// Flag 0x04: the ROOT type checksum.
    pub type_checksum: Option<u32>,
}

/// A column record as stored, before validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRecord {
    pub column_type: u16,
    pub bits_on_storage: u16,
    pub field_id: u32,
    pub flags: u16,
    pub representation_index: u16,
    /// Flag 0x01: the first element index of a deferred column (negative:
    /// deferred and suppressed).
    pub first_element_index: Option<i64>,
    /// Flag 0x02: the inclusive range of values.
    pub value_range: Option<(f64, f64)>,
}

/// An alias column: a projected field's view of a physical column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AliasColumnRecord {
    pub physical_column_id: u32,
    pub field_id: u32,
}

/// An extra type information record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraTypeInfoRecord {
    pub content_id: u32,
    pub type_version: u32,
    pub type_name: String,
}

/// The four list frames that describe a schema, in the header or as the
/// footer's schema extension.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaDescription {
    pub fields: Vec<FieldRecord>,
    pub columns: Vec<ColumnRecord>,
    pub alias_columns: Vec<AliasColumnRecord>,
    pub extra_type_info: Vec<ExtraTypeInfoRecord>,
}

/// The parsed header envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderEnvelope {
    /// Numbers of the feature flag bits set.
    pub feature_flags: Vec<u64>,
    pub name: String,
    pub description: String,
    /// The library or program that wrote the data.
    pub writer: String,
    pub schema: SchemaDescription,
    /// XXH3 checksum of the envelope, which footer and page lists repeat.
    pub checksum: u64,
}

const FIELD_REPETITIVE: u16 = 0x01;
const FIELD_PROJECTED: u16 = 0x02;
const FIELD_TYPE_CHECKSUM: u16 = 0x04;
const COLUMN_DEFERRED: u16 = 0x01;
const COLUMN_RANGE: u16 = 0x02;

/// Parses a decompressed header envelope. Feature flags are returned, not
/// checked: the caller combines them with the footer's.
pub fn parse_header(data: &[u8], file_offset: u64) -> Result<HeaderEnvelope> {
    let (mut c, checksum) = open_envelope(data, EnvelopeType::Header, file_offset)?;
    let feature_flags = read_feature_flags(&mut c)?;
    let name = read_string(&mut c)?;
    let description = read_string(&mut c)?;
    let writer = read_string(&mut c)?;
    let schema = parse_schema_description(&mut c)?;
    Ok(HeaderEnvelope {
        feature_flags,
        name,
        description,
        writer,
        schema,
        checksum,
    })
}

/// Reads the four list frames of a schema description.
pub fn parse_schema_description(c: &mut Cursor<'_>) -> Result<SchemaDescription> {
    // Smallest record frame: the 8-byte size.
    let (mut list, n) = read_list_frame(c, 8)?;
    let mut fields = Vec::with_capacity(n);
    for _ in 0..n {
        fields.push(read_field(&mut read_record_frame(&mut list)?)?);
    }
    let (mut list, n) = read_list_frame(c, 8)?;
    let mut columns = Vec::with_capacity(n);
    for _ in 0..n {
        columns.push(read_column(&mut read_record_frame(&mut list)?)?);
    }
    let (mut list, n) = read_list_frame(c, 8)?;
    let mut alias_columns = Vec::with_capacity(n);
    for _ in 0..n {
        let mut r = read_record_frame(&mut list)?;
        alias_columns.push(AliasColumnRecord {
            physical_column_id: r.u32_le()?,
            field_id: r.u32_le()?,
        });
    }
    let (mut list, n) = read_list_frame(c, 8)?;
    let mut extra_type_info = Vec::with_capacity(n);
    for _ in 0..n {
        let mut r = read_record_frame(&mut list)?;
        extra_type_info.push(ExtraTypeInfoRecord {
            content_id: r.u32_le()?,
            type_version: r.u32_le()?,
            type_name: read_string(&mut r)?,
        });
    }
    Ok(SchemaDescription {
        fields,
        columns,
        alias_columns,
        extra_type_info,
    })
}

fn read_field(r: &mut Cursor<'_>) -> Result<FieldRecord> {
    let field_version = r.u32_le()?;
    let type_version = r.u32_le()?;
    let parent_id = r.u32_le()?;
    let structural_role = r.u16_le()?;
    let flags = r.u16_le()?;
    let name = read_string(r)?;
    let type_name = read_string(r)?;
    let type_alias = read_string(r)?;
    let description = read_string(r)?;
    let array_size = if flags & FIELD_REPETITIVE != 0 {
        Some(r.u64_le()?)
    } else {
        None
    };
    let source_field_id = if flags & FIELD_PROJECTED != 0 {
        Some(r.u32_le()?)
    } else {
        None
    };
    let type_checksum = if flags & FIELD_TYPE_CHECKSUM != 0 {
        Some(r.u32_le()?)
    } else {
        None
    };
    Ok(FieldRecord {
        field_version,
        type_version,
        parent_id,
        structural_role,
        flags,
        name,
        type_name,
        type_alias,
        description,
        array_size,
        source_field_id,
        type_checksum,
    })
}

fn read_column(r: &mut Cursor<'_>) -> Result<ColumnRecord> {
    let column_type = r.u16_le()?;
    let bits_on_storage = r.u16_le()?;
    let field_id = r.u32_le()?;
    let flags = r.u16_le()?;
    let representation_index = r.u16_le()?;
    let first_element_index = if flags & COLUMN_DEFERRED != 0 {
        Some(r.i64_le()?)
    } else {
        None
    };
    let value_range = if flags & COLUMN_RANGE != 0 {
        Some((r.f64_le()?, r.f64_le()?))
    } else {
        None
    };
    Ok(ColumnRecord {
        column_type,
        bits_on_storage,
        field_id,
        flags,
        representation_index,
        first_element_index,
        value_range,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::envelope::test_util::{envelope, Writer};
    use crate::error::Error;

    /// A header with `x: std::int32_t` (SplitInt32) and `v: std::vector<float>`
    /// (SplitIndex64 + SplitReal32 under `_0`).
    pub fn sample_header_payload() -> Vec<u8> {
        let mut w = Writer::default();
        w.u64(0) // feature flags
            .string("Events")
            .string("a test ntuple")
            .string("hand-made");
        let field = |w: &mut Writer, parent: u32, role: u16, name: &str, ty: &str| {
            w.record(|w| {
                w.u32(0).u32(0).u32(parent).u16(role).u16(0);
                w.string(name).string(ty).string("").string("");
            });
        };
        w.list(3, |w| {
            field(w, 0, 0, "x", "std::int32_t");
            field(w, 1, 1, "v", "std::vector<float>");
            field(w, 1, 0, "_0", "float");
        });
        let column = |w: &mut Writer, ty: u16, bits: u16, field: u32| {
            w.record(|w| {
                w.u16(ty).u16(bits).u32(field).u16(0).u16(0);
            });
        };
        w.list(3, |w| {
            column(w, 0x13, 32, 0);
            column(w, 0x1B, 64, 1);
            column(w, 0x18, 32, 2);
        });
        w.list(0, |_| {});
        w.list(0, |_| {});
        w.buf
    }

    #[test]
    fn parses_fields_and_columns() {
        let env = envelope(0x01, &sample_header_payload());
        let h = parse_header(&env, 0).unwrap();
        assert_eq!(h.name, "Events");
        assert_eq!(h.writer, "hand-made");
        assert_eq!(h.schema.fields.len(), 3);
        assert_eq!(h.schema.fields[1].type_name, "std::vector<float>");
        assert_eq!(h.schema.fields[2].parent_id, 1);
        assert_eq!(h.schema.columns[1].column_type, 0x1B);
        assert_eq!(h.schema.columns[2].field_id, 2);
    }

    #[test]
    fn optional_values_follow_flags() {
        let mut w = Writer::default();
        w.list(1, |w| {
            w.record(|w| {
                w.u32(0).u32(0).u32(0).u16(0).u16(0x07);
                w.string("a")
                    .string("std::array<float,3>")
                    .string("")
                    .string("");
                w.u64(3).u32(9).u32(0xABCD);
            });
        });
        w.list(1, |w| {
            w.record(|w| {
                w.u16(0x1D).u16(12).u32(0).u16(0x03).u16(1);
                w.i64(-20).f64(-1.0).f64(1.0);
            });
        });
        w.list(0, |_| {});
        w.list(0, |_| {});
        let mut c = Cursor::new(&w.buf, 0, "test");
        let s = parse_schema_description(&mut c).unwrap();
        assert_eq!(s.fields[0].array_size, Some(3));
        assert_eq!(s.fields[0].source_field_id, Some(9));
        assert_eq!(s.fields[0].type_checksum, Some(0xABCD));
        assert_eq!(s.columns[0].first_element_index, Some(-20));
        assert_eq!(s.columns[0].value_range, Some((-1.0, 1.0)));
        assert_eq!(s.columns[0].representation_index, 1);
    }

    #[test]
    fn truncated_header_is_an_error() {
        let payload = sample_header_payload();
        let env = envelope(0x01, &payload[..payload.len() - 20]);
        assert!(matches!(
            parse_header(&env, 0),
            Err(Error::UnexpectedEof { .. } | Error::Malformed { .. })
        ));
    }
}
