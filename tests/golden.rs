//! The Arrow output of every committed fixture equals ROOT's own reading of
//! it (tests/data/*.json, written by tests/data/generate.py with ROOT).

mod common;

use std::collections::BTreeSet;

use common::{compare_with_golden, data_dir, load_golden};

fn files_with_extension(ext: &str) -> BTreeSet<String> {
    std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .map(|n| n.trim_end_matches(ext).to_string())
        .collect()
}

#[test]
fn every_fixture_has_a_golden_and_every_golden_a_fixture() {
    let roots = files_with_extension(".root");
    let goldens = files_with_extension(".json");
    assert!(!roots.is_empty(), "no fixtures in tests/data");
    assert_eq!(roots, goldens, "fixtures and goldens must pair up");
}

#[test]
fn fixtures_agree_with_root() {
    let mut problems = Vec::new();
    // GOLDEN_ONLY=name restricts the run to one fixture while debugging.
    let only = std::env::var("GOLDEN_ONLY").ok();
    for name in files_with_extension(".json") {
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let golden = load_golden(&data_dir().join(format!("{name}.json")));
        let file = golden["file"]
            .as_str()
            .map(String::from)
            .unwrap_or(format!("{name}.root"));
        problems.extend(compare_with_golden(&data_dir().join(file), &golden));
    }
    assert!(
        problems.is_empty(),
        "{} disagreements:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// A projected field and its source read the same physical columns; a batch
/// holding both decodes them once and the two arrays share their buffers.
#[test]
fn projections_share_the_buffers_of_their_source() {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float32Type, UInt32Type};

    let file = rntuple::RNTupleFile::open(data_dir().join("projections.root")).unwrap();
    let batches = file
        .reader_builder(None)
        .unwrap()
        .with_projection(["v", "v_rvec", "v_size32", "points", "points_size"])
        .unwrap()
        .build()
        .unwrap()
        .collect_batches()
        .unwrap();
    assert!(!batches.is_empty());
    for batch in &batches {
        let v = batch.column_by_name("v").unwrap().as_list::<i32>();
        let rvec = batch.column_by_name("v_rvec").unwrap().as_list::<i32>();
        assert_eq!(v, rvec);
        assert_eq!(
            v.offsets().inner().inner().as_ptr(),
            rvec.offsets().inner().inner().as_ptr()
        );
        let values = v.values().as_primitive::<Float32Type>();
        let alias_values = rvec.values().as_primitive::<Float32Type>();
        assert_eq!(
            values.values().inner().as_ptr(),
            alias_values.values().inner().as_ptr()
        );

        // Cardinalities equal the list lengths, from the same offsets.
        let sizes = batch
            .column_by_name("v_size32")
            .unwrap()
            .as_primitive::<UInt32Type>();
        let lengths: Vec<u32> = v
            .offsets()
            .windows(2)
            .map(|w| (w[1] - w[0]) as u32)
            .collect();
        assert_eq!(sizes.values().to_vec(), lengths);
        let points = batch.column_by_name("points").unwrap().as_list::<i32>();
        let points_size = batch
            .column_by_name("points_size")
            .unwrap()
            .as_primitive::<UInt32Type>();
        assert_eq!(points_size.len(), points.len());
        for (i, size) in points_size.values().iter().enumerate() {
            assert_eq!(*size as usize, points.value_length(i) as usize);
        }
    }
}

/// Clusters decoded on threads of their own give the same batches, in the
/// same order, as clusters read one after another: whole files, entry
/// ranges that start and end inside clusters, limits, and a consumer that
/// stops early.
#[test]
fn clusters_in_flight_give_the_batches_of_a_sequential_read() {
    let file = rntuple::RNTupleFile::open(data_dir().join("clusters.root")).unwrap();
    let read = |in_flight: usize,
                configure: &dyn Fn(
        rntuple::RNTupleReaderBuilder,
    ) -> rntuple::RNTupleReaderBuilder| {
        let builder = file
            .reader_builder(None)
            .unwrap()
            .with_batch_size(7)
            .with_clusters_in_flight(in_flight);
        configure(builder)
            .build()
            .unwrap()
            .collect_batches()
            .unwrap()
    };
    let cases: [&dyn Fn(rntuple::RNTupleReaderBuilder) -> rntuple::RNTupleReaderBuilder; 4] = [
        &|b| b,
        &|b| b.with_entry_range(5..170),
        &|b| b.with_limit(60),
        &|b| {
            b.with_projection(["vec_vec"])
                .unwrap()
                .with_entry_range(20..100)
        },
    ];
    for (k, configure) in cases.iter().enumerate() {
        let sequential = read(1, configure);
        assert!(sequential.len() > 3, "case {k}");
        for in_flight in [2, 3, 16] {
            assert_eq!(
                read(in_flight, configure),
                sequential,
                "case {k}, {in_flight} in flight"
            );
        }
    }
    // An error in a cluster's thread reaches the consumer, and ends the read.
    let limits = rntuple::Limits {
        max_batch_bytes: 1,
        ..Default::default()
    };
    let mut failing = file
        .reader_builder(None)
        .unwrap()
        .with_limits(limits)
        .with_clusters_in_flight(3)
        .build()
        .unwrap();
    let err = failing.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
    assert!(failing.next().is_none());
    // Dropping the reader with clusters still in flight ends their threads.
    let mut reader = file
        .reader_builder(None)
        .unwrap()
        .with_batch_size(1)
        .with_clusters_in_flight(4)
        .build()
        .unwrap();
    assert_eq!(reader.next_batch().unwrap().unwrap().num_rows(), 1);
    drop(reader);
}

/// Page lists are kept once read; released, they live while a caller or a
/// reader holds them and are read again after, with the same clusters and
/// the same batches.
#[test]
fn released_page_lists_are_read_again_when_needed() {
    let file = rntuple::RNTupleFile::open(data_dir().join("clusters.root")).unwrap();
    let ntuple = file.ntuple(None).unwrap();
    let read = |ntuple: &rntuple::RNTuple| {
        rntuple::RNTupleReaderBuilder::new(ntuple.clone())
            .with_batch_size(7)
            .build()
            .unwrap()
            .collect_batches()
            .unwrap()
    };
    let expected = read(&ntuple);
    let kept = ntuple.all_clusters().unwrap();
    assert!(kept.len() > 4);
    let weak = std::sync::Arc::downgrade(&kept);
    drop(kept);
    assert!(weak.upgrade().is_some(), "kept until released");

    ntuple.release_page_lists();
    assert!(weak.upgrade().is_none(), "released");
    let held = ntuple.all_clusters().unwrap();
    assert!(std::sync::Arc::ptr_eq(
        &held,
        &ntuple.all_clusters().unwrap()
    ));
    let reader = rntuple::RNTupleReaderBuilder::new(ntuple.clone())
        .build()
        .unwrap();
    let weak = std::sync::Arc::downgrade(&held);
    drop(held);
    assert!(weak.upgrade().is_some(), "held by the reader");
    drop(reader);
    assert!(weak.upgrade().is_none(), "released with the reader");
    assert_eq!(read(&ntuple), expected);
    assert_eq!(
        *ntuple.all_clusters().unwrap(),
        file.ntuple(None).unwrap().clusters().unwrap()
    );
}

/// The async stream gives the batches of the iterator, in order, and ends
/// after an error; dropping it early ends its thread.
#[cfg(feature = "async")]
#[test]
fn the_stream_gives_the_batches_of_the_iterator() {
    futures::executor::block_on(stream_gives_the_batches_of_the_iterator());
}

#[cfg(feature = "async")]
async fn stream_gives_the_batches_of_the_iterator() {
    use futures::StreamExt;
    let file = rntuple::RNTupleFile::open(data_dir().join("clusters.root")).unwrap();
    let builder = || file.reader_builder(None).unwrap().with_batch_size(11);
    let expected = builder().build().unwrap().collect_batches().unwrap();
    assert!(expected.len() > 3);
    let stream = builder().build().unwrap().into_stream().unwrap();
    assert_eq!(stream.schema(), expected[0].schema());
    let streamed: Vec<_> = stream.map(Result::unwrap).collect().await;
    assert_eq!(streamed, expected);

    let limits = rntuple::Limits {
        max_batch_bytes: 1,
        ..Default::default()
    };
    let mut failing = builder()
        .with_limits(limits)
        .build()
        .unwrap()
        .into_stream()
        .unwrap();
    assert!(failing.next().await.unwrap().is_err());
    assert!(failing.next().await.is_none());

    let mut early = builder().build().unwrap().into_stream().unwrap();
    assert!(early.next().await.unwrap().is_ok());
    drop(early);
}

/// A file of several RNTuples opened without a name gives their paths in a
/// typed error, for callers to offer a choice.
#[test]
fn a_file_of_several_rntuples_lists_them_when_none_is_named() {
    let file = rntuple::RNTupleFile::open(data_dir().join("multi.root")).unwrap();
    match file.ntuple(None) {
        Err(rntuple::Error::AmbiguousNTuple { ntuples }) => {
            assert_eq!(ntuples, ["A", "B", "sub/C", "sub/deeper/A"]);
        }
        other => panic!("expected AmbiguousNTuple, got {other:?}"),
    }
    assert_eq!(file.ntuple(Some("sub/C")).unwrap().n_entries(), 4);
    // `find` names the RNTuple `ntuple` would open, by path first.
    let found = file.find(Some("A")).unwrap();
    assert_eq!((found.path.as_str(), found.name.as_str()), ("A", "A"));
    let found = file.find(Some("sub/deeper/A")).unwrap();
    assert_eq!(
        (found.path.as_str(), found.name.as_str()),
        ("sub/deeper/A", "A")
    );
    assert_eq!(file.find(Some("C")).unwrap().path, "sub/C");
    assert!(matches!(
        file.find(None),
        Err(rntuple::Error::AmbiguousNTuple { .. })
    ));
    let single = rntuple::RNTupleFile::open(data_dir().join("adl/nanoaod_events.root")).unwrap();
    assert_eq!(single.find(None).unwrap(), single.ntuples()[0]);
}

/// RNTuples opened through one schema cache share the descriptor fields and
/// Arrow mapping of a header seen before, keep their own clusters, and read
/// as they do without the cache; another header gets a schema of its own.
#[test]
fn files_with_the_same_header_share_one_schema() {
    use std::sync::Arc;

    let schemas = Arc::new(rntuple::SchemaCache::new());
    let open = |path: std::path::PathBuf| {
        rntuple::RNTupleFile::open(path)
            .unwrap()
            .with_schema_cache(schemas.clone())
            .ntuple(None)
            .unwrap()
    };
    let events = open(data_dir().join("adl/nanoaod_events.root"));
    let clusters = open(data_dir().join("adl/nanoaod_clusters.root"));
    assert_eq!(schemas.len(), 1);
    assert!(Arc::ptr_eq(events.mapping(), clusters.mapping()));
    assert!(rntuple::descriptor::Shared::ptr_eq(
        &events.descriptor().fields,
        &clusters.descriptor().fields
    ));
    assert_eq!(events.descriptor().n_clusters, 1);
    assert_eq!(clusters.descriptor().n_clusters, 12);

    let read = |ntuple: rntuple::RNTuple| {
        rntuple::RNTupleReaderBuilder::new(ntuple)
            .with_batch_size(1000)
            .build()
            .unwrap()
            .collect_batches()
            .unwrap()
    };
    let alone = rntuple::RNTupleFile::open(data_dir().join("adl/nanoaod_clusters.root"))
        .unwrap()
        .ntuple(None)
        .unwrap();
    assert!(!Arc::ptr_eq(alone.mapping(), clusters.mapping()));
    assert_eq!(alone.descriptor(), clusters.descriptor());
    assert_eq!(read(clusters), read(alone));

    let other = open(data_dir().join("clusters.root"));
    assert_eq!(schemas.len(), 2);
    assert!(!Arc::ptr_eq(other.mapping(), events.mapping()));
}

/// Every RNTuple of every fixture (and of the corpus, when present) opened
/// through one schema cache, twice, has the descriptor and Arrow schema of
/// an open without the cache; the cache keeps at most its cap of schemas.
#[test]
fn a_schema_cache_opens_every_fixture_as_without_it() {
    use std::sync::Arc;

    let mut paths: Vec<std::path::PathBuf> = files_with_extension("root")
        .into_iter()
        .map(|name| data_dir().join(format!("{name}root")))
        .collect();
    paths.push(data_dir().join("adl/nanoaod_events.root"));
    paths.push(data_dir().join("container/subdirs.root"));
    match common::corpus_dir() {
        Some(dir) => paths.extend(
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "root")),
        ),
        None => eprintln!("corpus absent: only the committed fixtures are opened"),
    }
    let schemas = Arc::new(rntuple::SchemaCache::new());
    let mut opened = 0;
    let mut distinct: Vec<arrow_schema::SchemaRef> = Vec::new();
    for path in &paths {
        let plain = rntuple::RNTupleFile::open(path).unwrap();
        let cached = rntuple::RNTupleFile::open(path)
            .unwrap()
            .with_schema_cache(schemas.clone());
        for info in plain.ntuples() {
            let Ok(expected) = plain.ntuple(Some(&info.path)) else {
                // Files that fail to open fail the same way through the cache.
                assert!(cached.ntuple(Some(&info.path)).is_err(), "{path:?}");
                continue;
            };
            for _ in 0..2 {
                let got = cached.ntuple(Some(&info.path)).unwrap();
                assert_eq!(got.descriptor(), expected.descriptor(), "{path:?}");
                assert_eq!(
                    got.mapping().schema,
                    expected.mapping().schema,
                    "{path:?} {}",
                    info.path
                );
                assert_eq!(got.mapping().skipped, expected.mapping().skipped);
                opened += 1;
            }
            let schema = &expected.mapping().schema;
            if !distinct.contains(schema) {
                distinct.push(schema.clone());
            }
        }
    }
    assert!(opened >= 30, "{opened} RNTuples opened");
    let cap = rntuple::SchemaCache::MAX_SCHEMAS;
    assert_eq!(
        schemas.len(),
        distinct.len().min(cap),
        "{} schemas seen",
        distinct.len()
    );
}

/// In `f0._0._1` over `vector<optional<tuple<pair<int16, float>>>>`, `_0`
/// could name the vector's item or the tuple's member; only the member
/// leads on to a `_1`, so the path names the pair's floats. (`rntuple
/// index` once asked for such a path and failed: "no field".)
#[test]
fn a_path_through_a_tuple_in_a_collection_finds_the_member() {
    use arrow::array::{Array, AsArray};
    use arrow::compute::concat_batches;
    use arrow::datatypes::{DataType, Float32Type};

    let file = rntuple::RNTupleFile::open(data_dir().join("nested.root")).unwrap();
    let read = |path: &str| {
        let builder = file
            .reader_builder(Some("TuplesInCollections"))
            .unwrap()
            .with_projection([path])
            .unwrap();
        let schema = builder.schema().clone();
        concat_batches(
            &schema,
            &builder.build().unwrap().collect_batches().unwrap(),
        )
        .unwrap()
    };
    let whole = read("f0");
    let part = read("f0._0._1");
    let DataType::List(item) = part.schema().field(0).data_type().clone() else {
        panic!("not a list: {}", part.schema());
    };
    let DataType::Struct(members) = item.data_type() else {
        panic!("items are not tuples: {item}");
    };
    assert_eq!(members.len(), 1, "{members:?}");
    assert_eq!(members[0].name(), "_0");

    // The floats, item by item, from the projection and from the whole field.
    let floats = |batch: &arrow::record_batch::RecordBatch| {
        let items = batch.column(0).as_list::<i32>().values().clone();
        let pair = items.as_struct().column_by_name("_0").unwrap().clone();
        let values = pair.as_struct().column_by_name("_1").unwrap().clone();
        let nulls = items.logical_nulls();
        (0..items.len())
            .map(|i| {
                let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                valid.then(|| values.as_primitive::<Float32Type>().value(i).to_bits())
            })
            .collect::<Vec<_>>()
    };
    let expected = floats(&whole);
    assert!(expected.iter().flatten().count() > 100, "too few values");
    assert_eq!(floats(&part), expected);
}
