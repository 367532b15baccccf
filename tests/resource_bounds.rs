//! Resource bounds: sizes declared in a file are checked against the bytes
//! that justify them before anything is allocated, configurable limits stop
//! decompression bombs per page and per batch, and the field tree is a tree
//! of bounded depth.

mod common;

use bytes::Bytes;
use rntuple::descriptor::{ClusterDescriptor, Descriptor, MAX_FIELD_DEPTH};
use rntuple::encoding::{can_decode_as, ColumnCoding};
use rntuple::envelope::{
    ColumnPageRange, FieldRecord, FooterEnvelope, HeaderEnvelope, Locator, PageRecord,
    SchemaDescription,
};
use rntuple::page::{ColumnCursor, Limits, PageSource};
use rntuple::{Error, RNTuple, RNTupleFile};

fn ntuple(file: &str, name: &str) -> RNTuple {
    let bytes = std::fs::read(common::data_dir().join(file)).unwrap();
    RNTupleFile::from_bytes(Bytes::from(bytes))
        .unwrap()
        .ntuple(Some(name))
        .unwrap()
}

/// The page source of `ntuple` with other limits.
fn source_with(ntuple: &RNTuple, limits: Limits) -> PageSource {
    let mut source = ntuple.page_source();
    source.limits = limits;
    source
}

/// The physical column of the top-level field `name`.
fn column_of(ntuple: &RNTuple, name: &str) -> u32 {
    ntuple
        .descriptor()
        .find_field(name)
        .unwrap()
        .representations[0][0]
}

fn limit_exceeded(err: &Error) -> bool {
    matches!(err.root_cause(), Error::LimitExceeded { .. })
}

#[test]
fn default_limits_read_the_largest_fixture_pages() {
    // One 20 MiB page per RNTuple.
    let ntuple = ntuple("compression_bigpage.root", "zstd");
    let batches = rntuple::RNTupleReaderBuilder::new(ntuple)
        .build()
        .unwrap()
        .collect_batches()
        .unwrap();
    assert!(!batches.is_empty());
}

#[test]
fn a_page_larger_than_the_page_limit_is_refused() {
    let ntuple = ntuple("compression_bigpage.root", "zstd");
    let cluster = &ntuple.clusters().unwrap()[0];
    let id = cluster
        .columns
        .iter()
        .position(|c| !c.pages.is_empty())
        .unwrap() as u32;
    let column = ntuple.descriptor().column(id).unwrap();
    let limits = Limits {
        max_page_bytes: 1 << 20,
        ..Limits::default()
    };
    let source = source_with(&ntuple, limits);
    let mut cursor =
        ColumnCursor::new(&source, column, cluster, Some(0..cluster.n_entries)).unwrap();
    let err = cursor
        .read_values::<f64>(0..10, &mut Vec::new())
        .unwrap_err();
    assert!(limit_exceeded(&err), "{err}");
}

#[test]
fn limits_set_on_the_file_or_the_builder_bound_a_read() {
    let bytes =
        Bytes::from(std::fs::read(common::data_dir().join("compression_bigpage.root")).unwrap());
    let small = Limits {
        max_page_bytes: 1 << 20,
        ..Limits::default()
    };
    let read = |file: RNTupleFile, builder_limits: Option<Limits>| {
        let mut builder = file.reader_builder(Some("zstd")).unwrap();
        if let Some(limits) = builder_limits {
            builder = builder.with_limits(limits);
        }
        builder.build().unwrap().collect_batches()
    };
    let file = RNTupleFile::from_bytes(bytes.clone()).unwrap();
    assert!(read(file.clone(), None).is_ok());
    // On the builder: the 20 MiB page is refused.
    let err = read(file, Some(small)).unwrap_err();
    assert!(limit_exceeded(&err), "{err}");
    // On the file: the RNTuple and its reads inherit them.
    let file = RNTupleFile::from_bytes(bytes.clone())
        .unwrap()
        .with_limits(small);
    assert_eq!(file.ntuple(Some("zstd")).unwrap().limits(), small);
    let err = read(file.clone(), None).unwrap_err();
    assert!(limit_exceeded(&err), "{err}");
    // The builder can raise them again for one read.
    assert!(read(file, Some(Limits::default())).is_ok());
    // Envelopes count against the page limit too.
    let tiny = Limits {
        max_page_bytes: 16,
        ..Limits::default()
    };
    let err = RNTupleFile::from_bytes(bytes)
        .unwrap()
        .with_limits(tiny)
        .ntuple(Some("zstd"))
        .unwrap_err();
    assert!(limit_exceeded(&err), "{err}");
}

#[test]
fn a_batch_larger_than_the_batch_limit_is_refused() {
    let ntuple = ntuple("compression.root", "zstd");
    let clusters = ntuple.clusters().unwrap();
    // The column of numbers with the most pages in a cluster.
    let (cluster, id, range) = clusters
        .iter()
        .flat_map(|c| c.columns.iter().enumerate().map(move |(id, r)| (c, id, r)))
        .filter(|(_, id, _)| {
            let column = ntuple.descriptor().column(*id as u32).unwrap();
            can_decode_as::<f64>(column.column_type) || can_decode_as::<i64>(column.column_type)
        })
        .max_by_key(|(_, _, r)| r.pages.len())
        .unwrap();
    assert!(range.pages.len() > 1);
    let column = ntuple.descriptor().column(id as u32).unwrap();
    let n = cluster.n_elements(id as u32);
    let first = range.element_offset.map(|first| first..first + n);
    // The decompressed size of all its pages.
    let coding = ColumnCoding::new(column.column_type).with_bits_on_storage(column.bits_on_storage);
    let bytes: u64 = range
        .pages
        .iter()
        .map(|p| coding.page_len(p.n_elements as usize).unwrap() as u64)
        .sum();
    let read = |max_batch_bytes| {
        let limits = Limits {
            max_batch_bytes,
            ..Limits::default()
        };
        let source = source_with(&ntuple, limits);
        let mut cursor = ColumnCursor::new(&source, column, cluster, first.clone()).unwrap();
        if can_decode_as::<f64>(column.column_type) {
            let mut out = Vec::<f64>::new();
            cursor.read_values(0..n, &mut out).map(|_| out.len())
        } else {
            let mut out = Vec::<i64>::new();
            cursor.read_values(0..n, &mut out).map(|_| out.len())
        }
    };
    assert_eq!(read(bytes).unwrap() as u64, n);
    let err = read(bytes - 1).unwrap_err();
    assert!(limit_exceeded(&err), "{err}");
}

/// A cursor over a column of `Plain` in a cluster without any of its pages;
/// `expected` as [`ColumnCursor::new`] takes it.
fn cursor_without_pages(expected: Option<std::ops::Range<u64>>) -> ColumnCursor {
    let ntuple = ntuple("fundamentals.root", "Plain");
    let id = column_of(&ntuple, "int64");
    let column = ntuple.descriptor().column(id).unwrap();
    let cluster = ClusterDescriptor {
        id: 0,
        first_entry: 0,
        n_entries: 1,
        columns: Vec::new(),
    };
    ColumnCursor::new(&ntuple.page_source(), column, &cluster, expected).unwrap()
}

#[test]
fn synthetic_zeros_count_against_the_batch_limit() {
    // A column of one element per entry, absent from a cluster, reads as
    // zeros; a claim of 2^40 of them must not allocate them.
    let mut cursor = cursor_without_pages(Some(0..1));
    let err = cursor
        .read_values::<i64>(0..1 << 40, &mut Vec::new())
        .unwrap_err();
    assert!(limit_exceeded(&err), "{err}");
    let mut out = Vec::new();
    cursor.read_values::<i64>(0..1000, &mut out).unwrap();
    assert_eq!(out, vec![0; 1000]);
}

/// A column inside a collection (its first element not known from the
/// entry number) without pages in a cluster holds no elements: corrupt
/// offsets claiming its items fail without allocating zeros for them (the
/// fuzzer made a 14 KB file ask for 201 MB of string bytes this way).
#[test]
fn a_collection_column_without_pages_holds_no_items() {
    let mut cursor = cursor_without_pages(None);
    let mut out = Vec::new();
    cursor.read_values::<i64>(0..0, &mut out).unwrap();
    assert!(out.is_empty());
    let err = cursor
        .read_values::<i64>(0..201_604_410, &mut out)
        .unwrap_err();
    assert!(
        err.to_string().contains("has 0 elements in cluster 0"),
        "{err}"
    );
    assert_eq!(out.capacity(), 0, "nothing was allocated for the claim");
}

#[test]
fn a_page_size_its_bytes_cannot_justify_fails_before_allocating() {
    // 100 million doubles (800 MB, under the page limit) claimed by 200
    // bytes of the file: stored bytes whose chunk headers cannot inflate to
    // that size are refused before a page buffer exists.
    let ntuple = ntuple("fundamentals.root", "Plain");
    let id = column_of(&ntuple, "double");
    let column = ntuple.descriptor().column(id).unwrap();
    let mut columns = vec![ColumnPageRange::default(); id as usize + 1];
    columns[id as usize] = ColumnPageRange {
        pages: vec![PageRecord {
            n_elements: 100_000_000,
            has_checksum: false,
            locator: Locator {
                size: 200,
                offset: 1000,
            },
        }]
        .into(),
        element_offset: Some(0),
        compression: Some(505),
    };
    let cluster = ClusterDescriptor {
        id: 0,
        first_entry: 0,
        n_entries: 100_000_000,
        columns,
    };
    let source = ntuple.page_source();
    let mut cursor =
        ColumnCursor::new(&source, column, &cluster, Some(0..cluster.n_entries)).unwrap();
    let err = cursor
        .read_values::<f64>(0..10, &mut Vec::new())
        .unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::Malformed { .. } | Error::UnexpectedEof { .. }
        ),
        "{err}"
    );
}

fn field(parent: u32, name: &str, role: u16, type_name: &str) -> FieldRecord {
    FieldRecord {
        field_version: 0,
        type_version: 0,
        parent_id: parent,
        structural_role: role,
        flags: 0,
        name: name.into(),
        type_name: type_name.into(),
        type_alias: String::new(),
        description: String::new(),
        array_size: None,
        source_field_id: None,
        type_checksum: None,
    }
}

fn descriptor(fields: Vec<FieldRecord>) -> rntuple::Result<Descriptor> {
    let header = HeaderEnvelope {
        feature_flags: Vec::new(),
        name: "T".into(),
        description: String::new(),
        writer: String::new(),
        schema: SchemaDescription {
            fields,
            ..SchemaDescription::default()
        },
        checksum: 7,
    };
    let footer = FooterEnvelope {
        feature_flags: Vec::new(),
        header_checksum: 7,
        extension: SchemaDescription::default(),
        cluster_groups: Vec::new(),
        attribute_sets: Vec::new(),
    };
    Descriptor::new(header, footer, [1, 0, 0, 0])
}

/// Records nested `depth` levels below a top-level record.
fn chain(depth: usize) -> Vec<FieldRecord> {
    (0..=depth as u32)
        .map(|i| field(i.saturating_sub(1), &format!("f{i}"), 0x02, ""))
        .collect()
}

#[test]
fn field_tree_depth_is_bounded() {
    let d = descriptor(chain(MAX_FIELD_DEPTH)).unwrap();
    assert_eq!(d.fields.len(), MAX_FIELD_DEPTH + 1);
    let err = descriptor(chain(MAX_FIELD_DEPTH + 1)).unwrap_err();
    assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");
}

#[test]
fn cyclic_field_trees_are_errors() {
    // 0 -> 1 -> 0: a cycle with no top-level field.
    let err = descriptor(vec![field(1, "a", 0x02, ""), field(0, "b", 0x02, "")]).unwrap_err();
    assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");
    // A longer cycle hanging under a sound top-level field.
    let err = descriptor(vec![
        field(0, "top", 0x02, ""),
        field(3, "x", 0x02, ""),
        field(1, "y", 0x02, ""),
        field(2, "z", 0x02, ""),
    ])
    .unwrap_err();
    assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");
    // A parent that does not exist.
    let err = descriptor(vec![field(9, "orphan", 0, "std::int32_t")]).unwrap_err();
    assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");
}

#[test]
fn a_self_referencing_field_is_top_level() {
    // The spec marks a top-level field by naming itself as its parent.
    let d = descriptor(vec![field(0, "a", 0x02, ""), field(1, "b", 0x02, "")]).unwrap();
    assert_eq!(d.top_level, [0, 1]);
}

#[test]
fn projection_cycles_are_errors() {
    // A projected field whose source is itself or another projected field.
    let mut own = field(0, "p", 0, "std::int32_t");
    own.source_field_id = Some(0);
    own.flags = 0x02;
    assert!(descriptor(vec![own]).is_err());
    let mut a = field(0, "a", 0, "std::int32_t");
    a.source_field_id = Some(1);
    let mut b = field(1, "b", 0, "std::int32_t");
    b.source_field_id = Some(0);
    assert!(descriptor(vec![a, b]).is_err());
}

/// A range taken from corrupt offsets is checked against the column and the
/// batch limit before any output is sized for it (the fuzzer once made a
/// nested collection ask for 771 million offsets of a 3 KB file).
#[test]
fn column_ranges_are_checked_before_allocating() {
    let file = RNTupleFile::open(common::data_dir().join("clusters.root")).unwrap();
    let ntuple = file.ntuple(None).unwrap();
    let descriptor = ntuple.descriptor().clone();
    let cluster = ntuple.clusters().unwrap()[0].clone();
    let vec = descriptor.fields.iter().find(|f| f.name == "vec").unwrap();
    let offsets = &descriptor.columns[vec.representations[0][0] as usize];
    let elements = cluster.n_elements(offsets.id);
    assert!(elements > 0);

    let source = ntuple.page_source();
    let cursor = ColumnCursor::new(&source, offsets, &cluster, Some(0..cluster.n_entries)).unwrap();
    assert_eq!(
        cursor.checked_len(&(0..elements), 8).unwrap() as u64,
        elements
    );
    let err = cursor.checked_len(&(0..771_751_940), 8).unwrap_err();
    assert!(err.to_string().contains("elements in cluster"), "{err}");

    let small = PageSource {
        limits: Limits {
            max_batch_bytes: 8 * elements - 1,
            ..Limits::default()
        },
        ..source
    };
    let cursor = ColumnCursor::new(&small, offsets, &cluster, Some(0..cluster.n_entries)).unwrap();
    let err = cursor.checked_len(&(0..elements), 8).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { .. }), "{err}");
}
