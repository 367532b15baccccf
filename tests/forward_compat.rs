//! Files of later format versions, as the spec's "Forward compatibility"
//! section describes them, built by editing fixtures: unknown trailing data
//! in the anchor, envelopes and frames is skipped (checksums still checked);
//! unknown column, field and cluster flags are ignored; a top-level field
//! with an unknown column type or structure is skipped and reported; an
//! unknown feature flag is refused by number.
//!
//! An edit parses the RNTuple's envelopes with the library, changes the
//! records, writes the header, footer and page lists again (uncompressed,
//! with fresh checksums) at the end of the file, and points the anchor at
//! them, fixing its checksum. Pages stay where they are.

mod common;

use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use rntuple::compression::decompress_to_vec;
use rntuple::container::{read_blob, Anchor, Key, RootFile};
use rntuple::envelope::{
    parse_footer, parse_header, parse_page_list, FooterEnvelope, HeaderEnvelope, Locator,
    PageListEnvelope, SchemaDescription,
};
use rntuple::{Error, RNTupleFile};
use xxhash_rust::xxh3::xxh3_64;

/// Little-endian serialiser of envelope payloads. Every record frame, list
/// frame and envelope gets `tail` appended: content a later version of the
/// format might add.
struct Writer {
    buf: Vec<u8>,
    tail: Vec<u8>,
}

impl Writer {
    fn new(tail: &[u8]) -> Self {
        Self {
            buf: Vec::new(),
            tail: tail.to_vec(),
        }
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn f64(&mut self, v: f64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn string(&mut self, s: &str) -> &mut Self {
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
        self
    }
    fn locator(&mut self, l: Locator) -> &mut Self {
        let size = i32::try_from(l.size).expect("standard locator");
        self.i32(size).u64(l.offset)
    }
    fn feature_flags(&mut self, bits: &[u64]) -> &mut Self {
        let n_words = bits.iter().map(|b| b / 63 + 1).max().unwrap_or(1);
        for w in 0..n_words {
            let mut word = 0u64;
            for b in bits.iter().filter(|b| *b / 63 == w) {
                word |= 1 << (b % 63);
            }
            if w + 1 < n_words {
                word |= 1 << 63;
            }
            self.u64(word);
        }
        self
    }
    fn inner(&self) -> Writer {
        Writer::new(&self.tail)
    }
    fn record(&mut self, f: impl FnOnce(&mut Writer)) -> &mut Self {
        let mut inner = self.inner();
        f(&mut inner);
        inner.buf.extend_from_slice(&self.tail);
        self.i64(8 + inner.buf.len() as i64);
        self.buf.extend_from_slice(&inner.buf);
        self
    }
    fn list(&mut self, n: usize, f: impl FnOnce(&mut Writer)) -> &mut Self {
        let mut inner = self.inner();
        f(&mut inner);
        inner.buf.extend_from_slice(&self.tail);
        self.i64(-(12 + inner.buf.len() as i64));
        self.u32(n as u32);
        self.buf.extend_from_slice(&inner.buf);
        self
    }
    /// The payload wrapped into an envelope of `type_id`.
    fn envelope(mut self, type_id: u16) -> Vec<u8> {
        self.buf.extend_from_slice(&self.tail);
        let len = (self.buf.len() + 16) as u64;
        let mut out = ((len << 16) | u64::from(type_id)).to_le_bytes().to_vec();
        out.extend_from_slice(&self.buf);
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }
}

fn write_schema(w: &mut Writer, s: &SchemaDescription) {
    w.list(s.fields.len(), |w| {
        for f in &s.fields {
            w.record(|w| {
                w.u32(f.field_version)
                    .u32(f.type_version)
                    .u32(f.parent_id)
                    .u16(f.structural_role)
                    .u16(f.flags);
                w.string(&f.name)
                    .string(&f.type_name)
                    .string(&f.type_alias)
                    .string(&f.description);
                if let Some(n) = f.array_size {
                    w.u64(n);
                }
                if let Some(id) = f.source_field_id {
                    w.u32(id);
                }
                if let Some(sum) = f.type_checksum {
                    w.u32(sum);
                }
            });
        }
    });
    w.list(s.columns.len(), |w| {
        for c in &s.columns {
            w.record(|w| {
                w.u16(c.column_type)
                    .u16(c.bits_on_storage)
                    .u32(c.field_id)
                    .u16(c.flags)
                    .u16(c.representation_index);
                if let Some(first) = c.first_element_index {
                    w.i64(first);
                }
                if let Some((min, max)) = c.value_range {
                    w.f64(min).f64(max);
                }
            });
        }
    });
    w.list(s.alias_columns.len(), |w| {
        for a in &s.alias_columns {
            w.record(|w| {
                w.u32(a.physical_column_id).u32(a.field_id);
            });
        }
    });
    w.list(s.extra_type_info.len(), |w| {
        for e in &s.extra_type_info {
            w.record(|w| {
                w.u32(e.content_id).u32(e.type_version).string(&e.type_name);
            });
        }
    });
}

fn write_header(h: &HeaderEnvelope, tail: &[u8]) -> Vec<u8> {
    let mut w = Writer::new(tail);
    w.feature_flags(&h.feature_flags)
        .string(&h.name)
        .string(&h.description)
        .string(&h.writer);
    write_schema(&mut w, &h.schema);
    w.envelope(0x01)
}

fn write_footer(f: &FooterEnvelope, tail: &[u8]) -> Vec<u8> {
    let mut w = Writer::new(tail);
    w.feature_flags(&f.feature_flags).u64(f.header_checksum);
    w.record(|w| write_schema(w, &f.extension));
    w.list(f.cluster_groups.len(), |w| {
        for g in &f.cluster_groups {
            w.record(|w| {
                w.u64(g.min_entry).u64(g.entry_span).u32(g.n_clusters);
                w.u64(g.page_list.length).locator(g.page_list.locator);
            });
        }
    });
    w.list(f.attribute_sets.len(), |w| {
        for a in &f.attribute_sets {
            w.record(|w| {
                w.u16(a.schema_version_major)
                    .u16(a.schema_version_minor)
                    .u32(a.anchor_length)
                    .locator(a.anchor)
                    .string(&a.name);
            });
        }
    });
    w.envelope(0x02)
}

fn write_page_list(p: &PageListEnvelope, tail: &[u8]) -> Vec<u8> {
    let mut w = Writer::new(tail);
    w.u64(p.header_checksum);
    w.list(p.clusters.len(), |w| {
        for c in &p.clusters {
            w.record(|w| {
                w.u64(c.first_entry)
                    .u64(c.n_entries | (u64::from(c.flags) << 56));
            });
        }
    });
    w.list(p.columns.len(), |w| {
        for cluster in &p.columns {
            w.list(cluster.len(), |w| {
                for column in cluster {
                    w.list(column.pages.len(), |w| {
                        for page in &column.pages {
                            let n = page.n_elements as i32;
                            w.i32(if page.has_checksum { -n } else { n });
                            w.locator(page.locator);
                        }
                        match (column.element_offset, column.compression) {
                            (Some(offset), Some(c)) => {
                                w.i64(offset as i64).u32(c);
                            }
                            _ => {
                                w.i64(-1);
                            }
                        }
                    });
                }
            });
        }
    });
    w.envelope(0x03)
}

/// One RNTuple of a fixture, parsed for editing.
#[derive(Clone)]
struct Parts {
    bytes: Vec<u8>,
    /// File offset of the anchor payload, which must be stored uncompressed.
    anchor_at: usize,
    header: HeaderEnvelope,
    footer: FooterEnvelope,
    page_lists: Vec<PageListEnvelope>,
}

fn parts(file: &str, ntuple: &str) -> Parts {
    let bytes = std::fs::read(common::data_dir().join(file)).unwrap();
    let source = Arc::new(Bytes::from(bytes.clone()));
    let root = RootFile::open(source.clone()).unwrap();
    let entry = root.find_anchor(ntuple).unwrap();
    let key = Key::read(source.as_ref(), entry.key_offset).unwrap();
    assert!(!key.is_compressed().unwrap());
    let a = entry.anchor;
    let read = |offset, nbytes, len: u64| {
        let stored = read_blob(source.as_ref(), offset, nbytes, a.max_key_size).unwrap();
        decompress_to_vec(&stored, len as usize, offset).unwrap()
    };
    let header = parse_header(&read(a.seek_header, a.nbytes_header, a.len_header), 0).unwrap();
    let footer = parse_footer(&read(a.seek_footer, a.nbytes_footer, a.len_footer), 0).unwrap();
    let page_lists = footer
        .cluster_groups
        .iter()
        .map(|g| {
            let l = g.page_list;
            parse_page_list(&read(l.locator.offset, l.locator.size, l.length), 0).unwrap()
        })
        .collect();
    Parts {
        anchor_at: key.payload_offset().unwrap() as usize,
        bytes,
        header,
        footer,
        page_lists,
    }
}

impl Parts {
    /// The file with these parts written at its end (with `tail` in every
    /// frame and envelope) and the anchor pointing at them.
    fn build(&self, tail: &[u8]) -> Vec<u8> {
        let mut out = self.bytes.clone();
        let header = write_header(&self.header, tail);
        let checksum = xxh3_64(&header[..header.len() - 8]);
        let header_at = out.len() as u64;
        out.extend_from_slice(&header);

        let mut footer = self.footer.clone();
        footer.header_checksum = checksum;
        for (group, page_list) in footer.cluster_groups.iter_mut().zip(&self.page_lists) {
            let mut page_list = page_list.clone();
            page_list.header_checksum = checksum;
            let envelope = write_page_list(&page_list, tail);
            group.page_list.length = envelope.len() as u64;
            group.page_list.locator = Locator {
                size: envelope.len() as u64,
                offset: out.len() as u64,
            };
            out.extend_from_slice(&envelope);
        }
        let footer = write_footer(&footer, tail);
        let footer_at = out.len() as u64;
        out.extend_from_slice(&footer);

        // Anchor fields after the byte count, class version and version.
        let fields = [
            header_at,
            header.len() as u64,
            header.len() as u64,
            footer_at,
            footer.len() as u64,
            footer.len() as u64,
        ];
        let a = self.anchor_at;
        for (i, v) in fields.iter().enumerate() {
            let at = a + 14 + 8 * i;
            out[at..at + 8].copy_from_slice(&v.to_be_bytes());
        }
        let byte_count = u32::from_be_bytes(out[a..a + 4].try_into().unwrap()) & 0x3FFF_FFFF;
        let end = a + 4 + byte_count as usize;
        let sum = xxh3_64(&out[a + 6..end]);
        out[end..end + 8].copy_from_slice(&sum.to_be_bytes());
        out
    }
}

/// Every batch of one RNTuple, and the names of the fields left out.
fn read(bytes: Vec<u8>, ntuple: &str) -> rntuple::Result<(Vec<RecordBatch>, Vec<String>)> {
    let file = RNTupleFile::from_bytes(bytes)?;
    let builder = file.reader_builder(Some(ntuple))?;
    let skipped = builder
        .ntuple()
        .mapping()
        .skipped
        .iter()
        .map(|s| s.name.clone())
        .collect();
    Ok((builder.build()?.collect_batches()?, skipped))
}

fn original(file: &str, ntuple: &str) -> Vec<RecordBatch> {
    let bytes = std::fs::read(common::data_dir().join(file)).unwrap();
    let (batches, skipped) = read(bytes, ntuple).unwrap();
    assert!(skipped.is_empty(), "{file} {ntuple}: {skipped:?}");
    batches
}

/// `batches` without the column named `name`.
fn without(batches: &[RecordBatch], names: &[&str]) -> Vec<RecordBatch> {
    batches
        .iter()
        .map(|b| {
            let keep: Vec<usize> = (0..b.num_columns())
                .filter(|&i| !names.contains(&b.schema().field(i).name().as_str()))
                .collect();
            b.project(&keep).unwrap()
        })
        .collect()
}

/// The fixtures the edits are made to: an uncompressed RNTuple of plain
/// columns, a compressed one with several representations and suppressed
/// columns, one with many cluster groups, one with collections, one with a
/// schema extension and one with projected fields.
const CASES: &[(&str, &str)] = &[
    ("fundamentals.root", "Plain"),
    ("fundamentals.root", "Reprs"),
    ("clusters.root", "Clusters"),
    ("containers.root", "Containers"),
    ("extension.root", "Extension"),
    ("projections.root", "Projections"),
];

#[test]
fn rewritten_envelopes_read_identically() {
    for &(file, ntuple) in CASES {
        let p = parts(file, ntuple);
        let (batches, skipped) = read(p.build(&[]), ntuple).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(batches, original(file, ntuple), "{file} {ntuple}");
    }
}

#[test]
fn unknown_trailing_data_in_frames_and_envelopes_is_skipped() {
    for &(file, ntuple) in CASES {
        let p = parts(file, ntuple);
        for tail in [&[0xAB][..], &[0u8; 8], &[0xFF; 21]] {
            let (batches, skipped) = read(p.build(tail), ntuple)
                .unwrap_or_else(|e| panic!("{file} {ntuple} tail {tail:?}: {e}"));
            assert!(skipped.is_empty());
            assert_eq!(batches, original(file, ntuple), "{file} {ntuple}");
        }
    }
}

#[test]
fn checksums_still_cover_unknown_trailing_data() {
    let p = parts("fundamentals.root", "Plain");
    let tail = [0x5A; 16];
    let bytes = p.build(&tail);
    let file = RNTupleFile::from_bytes(bytes.clone()).unwrap();
    let ntuple = file.ntuple(Some("Plain")).unwrap();
    let link = ntuple.descriptor().cluster_groups[0].page_list;
    // The header comes first after the original file, the footer last;
    // flip the last byte of each envelope's tail, before its checksum.
    let header_end = p.bytes.len() + write_header(&p.header, &tail).len();
    let page_list_end = (link.locator.offset + link.locator.size) as usize;
    for end in [header_end, page_list_end, bytes.len()] {
        let mut damaged = bytes.clone();
        damaged[end - 9] ^= 1;
        let err = read(damaged, "Plain").unwrap_err();
        assert!(
            matches!(err.root_cause(), Error::ChecksumMismatch { .. }),
            "{err}"
        );
    }
}

#[test]
fn unknown_trailing_anchor_fields_are_skipped_but_checksummed() {
    let p = parts("fundamentals.root", "Plain");
    let a = p.anchor_at;
    let payload = &p.bytes[a..a + 78];
    let anchor = Anchor::parse(payload, 0).unwrap();

    // A later anchor version with 24 more bytes of fields.
    let mut longer = payload[..70].to_vec();
    longer.extend_from_slice(&[0x11; 24]);
    let byte_count = (longer.len() as u32 - 4) | 0x4000_0000;
    longer[..4].copy_from_slice(&byte_count.to_be_bytes());
    let sum = xxh3_64(&longer[6..]);
    longer.extend_from_slice(&sum.to_be_bytes());
    assert_eq!(Anchor::parse(&longer, 0).unwrap(), anchor);

    longer[80] ^= 1;
    assert!(matches!(
        Anchor::parse(&longer, 0),
        Err(Error::ChecksumMismatch { .. })
    ));
}

#[test]
fn unknown_flag_bits_are_ignored() {
    for &(file, ntuple) in CASES {
        let mut p = parts(file, ntuple);
        for f in &mut p.header.schema.fields {
            f.flags |= 0x7FF0;
        }
        for c in &mut p.header.schema.columns {
            c.flags |= 0xFFF0;
        }
        for f in &mut p.footer.extension.fields {
            f.flags |= 0x0100;
        }
        for c in &mut p.footer.extension.columns {
            c.flags |= 0x0100;
        }
        for list in &mut p.page_lists {
            for c in &mut list.clusters {
                c.flags |= 0xFE;
            }
        }
        let (batches, skipped) =
            read(p.build(&[]), ntuple).unwrap_or_else(|e| panic!("{file} {ntuple}: {e}"));
        assert!(skipped.is_empty(), "{file} {ntuple}: {skipped:?}");
        assert_eq!(batches, original(file, ntuple), "{file} {ntuple}");
    }
}

#[test]
fn unknown_extra_type_info_is_ignored() {
    let mut p = parts("fundamentals.root", "Plain");
    p.header
        .schema
        .extra_type_info
        .push(rntuple::envelope::ExtraTypeInfoRecord {
            content_id: 0x77,
            type_version: 3,
            type_name: "SomeFutureThing".into(),
        });
    let (batches, _) = read(p.build(&[]), "Plain").unwrap();
    assert_eq!(batches, original("fundamentals.root", "Plain"));
}

/// The ID of the top-level field `name`.
fn field_id(s: &SchemaDescription, name: &str) -> u32 {
    s.fields
        .iter()
        .enumerate()
        .position(|(i, f)| f.name == name && f.parent_id == i as u32)
        .unwrap() as u32
}

#[test]
fn a_field_with_an_unknown_column_type_is_skipped() {
    let (file, ntuple) = ("fundamentals.root", "Plain");
    for name in ["int32", "bool", "double"] {
        let mut p = parts(file, ntuple);
        let id = field_id(&p.header.schema, name);
        for c in &mut p.header.schema.columns {
            if c.field_id == id {
                c.column_type = 0xEE;
            }
        }
        let (batches, skipped) = read(p.build(&[]), ntuple).unwrap();
        assert_eq!(skipped, [name]);
        assert_eq!(batches, without(&original(file, ntuple), &[name]));
    }
}

#[test]
fn a_field_with_an_unknown_column_type_deep_inside_is_skipped() {
    let (file, ntuple) = ("containers.root", "Containers");
    let mut p = parts(file, ntuple);
    // The innermost column of a vector of vectors.
    let top = field_id(&p.header.schema, "vec_vec_float");
    let inner = p
        .header
        .schema
        .columns
        .iter()
        .rposition(|c| {
            let mut f = c.field_id;
            while p.header.schema.fields[f as usize].parent_id != f {
                f = p.header.schema.fields[f as usize].parent_id;
            }
            f == top
        })
        .unwrap();
    p.header.schema.columns[inner].column_type = 0x1F;
    let (batches, skipped) = read(p.build(&[]), ntuple).unwrap();
    assert_eq!(skipped, ["vec_vec_float"]);
    assert_eq!(
        batches,
        without(&original(file, ntuple), &["vec_vec_float"])
    );
}

#[test]
fn a_field_with_an_unknown_structure_or_type_is_skipped() {
    let (file, ntuple) = ("fundamentals.root", "Plain");
    let mut p = parts(file, ntuple);
    let id = field_id(&p.header.schema, "int64");
    p.header.schema.fields[id as usize].structural_role = 0x33;
    let id = field_id(&p.header.schema, "uint16");
    p.header.schema.fields[id as usize].type_name = "std::future_type<int>".into();
    let (batches, mut skipped) = read(p.build(&[]), ntuple).unwrap();
    skipped.sort();
    assert_eq!(skipped, ["int64", "uint16"]);
    assert_eq!(
        batches,
        without(&original(file, ntuple), &["int64", "uint16"])
    );
}

#[test]
fn projections_of_a_skipped_field_are_skipped_too() {
    let (file, ntuple) = ("projections.root", "Projections");
    let p0 = parts(file, ntuple);
    let schema = &p0.header.schema;
    // A top-level field that some projected field takes its columns from.
    let (source, projected): (u32, Vec<String>) = schema
        .fields
        .iter()
        .enumerate()
        .filter(|(i, f)| f.parent_id == *i as u32 && f.source_field_id.is_none())
        .find_map(|(i, _)| {
            let deps: Vec<String> = schema
                .fields
                .iter()
                .enumerate()
                .filter(|(j, g)| {
                    g.parent_id == *j as u32
                        && g.source_field_id.is_some_and(|s| {
                            let mut s = s;
                            while schema.fields[s as usize].parent_id != s {
                                s = schema.fields[s as usize].parent_id;
                            }
                            s == i as u32
                        })
                })
                .map(|(_, g)| g.name.clone())
                .collect();
            (!deps.is_empty()).then_some((i as u32, deps))
        })
        .unwrap();
    let name = schema.fields[source as usize].name.clone();
    let mut p = p0.clone();
    let below = |mut f: u32| {
        while p0.header.schema.fields[f as usize].parent_id != f {
            f = p0.header.schema.fields[f as usize].parent_id;
        }
        f == source
    };
    let column = p
        .header
        .schema
        .columns
        .iter()
        .position(|c| below(c.field_id))
        .unwrap();
    p.header.schema.columns[column].column_type = 0xEE;
    let (batches, mut skipped) = read(p.build(&[]), ntuple).unwrap();
    let mut expected: Vec<String> = projected.clone();
    expected.push(name.clone());
    expected.sort();
    skipped.sort();
    assert_eq!(skipped, expected);
    let mut gone: Vec<&str> = projected.iter().map(String::as_str).collect();
    gone.push(&name);
    assert_eq!(batches, without(&original(file, ntuple), &gone));
}

#[test]
fn an_unknown_feature_flag_is_refused_by_number() {
    for (in_footer, bit) in [(false, 5u64), (true, 17), (false, 63), (true, 130)] {
        let mut p = parts("fundamentals.root", "Plain");
        if in_footer {
            p.footer.feature_flags.push(bit);
        } else {
            p.header.feature_flags.push(bit);
        }
        let err = read(p.build(&[]), "Plain").unwrap_err();
        match err.root_cause() {
            Error::Unsupported { feature } => {
                assert!(feature.contains(&bit.to_string()), "{feature}")
            }
            other => panic!("bit {bit}: {other}"),
        }
    }
}

/// A table of files whose fields cannot all be mapped: the format reports
/// the left-out fields of every file from the metadata it read for the
/// schema, and the command warns once per field, counting the other files.
#[cfg(feature = "cli")]
#[test]
fn sql_tables_warn_once_per_field_left_out() {
    // A file of one RNTuple, so that `--table` needs no name for it.
    let (file, ntuple) = ("containers.root", "Containers");
    let mut p = parts(file, ntuple);
    let id = field_id(&p.header.schema, "vec_int");
    for c in &mut p.header.schema.columns {
        if c.field_id == id {
            c.column_type = 0xEE;
        }
    }
    let bytes = p.build(&[]);
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.root", "b.root", "c.root"] {
        std::fs::write(dir.path().join(name), &bytes).unwrap();
    }
    let glob = format!("{}/*.root", dir.path().display());

    // The library: one entry per file, from the metadata already read.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let skipped = runtime.block_on(async {
        use rntuple::datafusion::{
            session_context, RNTupleReadOptions, RNTupleTable, SessionContextExt,
        };
        let ctx = session_context();
        let options = RNTupleReadOptions::default().with_ntuple(ntuple.to_string());
        let frame = ctx.read_rntuple(&glob, options).await.unwrap();
        let datafusion::logical_expr::LogicalPlan::TableScan(scan) = frame.logical_plan() else {
            panic!("not a table scan");
        };
        let provider = datafusion::datasource::source_as_provider(&scan.source).unwrap();
        let table = provider.downcast_ref::<RNTupleTable>().unwrap();
        table.format().skipped_fields()
    });
    let files: Vec<&str> = skipped.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(files.len(), 3, "{skipped:?}");
    assert!(files[0].ends_with("a.root") && files[2].ends_with("c.root"));
    assert!(
        skipped.iter().all(|(_, f)| f.name == "vec_int"),
        "{skipped:?}"
    );

    // The command: one warning for the three files, naming the first.
    let out = assert_cmd::Command::cargo_bin("rntuple")
        .unwrap()
        .args([
            "sql",
            "--table",
            &format!("t={glob}"),
            "-c",
            "SELECT count(*) AS n FROM t",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("left out")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("a.root: field vec_int"), "{stderr}");
    assert!(warnings[0].ends_with("(and in 2 other files)"), "{stderr}");
}
