//! Batches of any size give the same values: a read cut into batches, in
//! whatever way, concatenates to the read of each cluster in one batch.
//!
//! Pages are decoded whole and their values past the end of a batch are
//! kept for the next batch (handed out without a copy where they cover it),
//! and fields run ahead of each other by a batch or two: these tests cut
//! every fixture at sizes that make batches end inside pages, on page
//! boundaries and across several pages.

mod common;

use arrow::compute::concat_batches;
use arrow_array::RecordBatch;
use common::{corpus_dir, data_dir};
use rntuple::RNTupleFile;

/// The batches of every RNTuple of `path`, read `batch_size` entries at a
/// time, concatenated per cluster and in all.
fn read_all(
    path: &std::path::Path,
    batch_size: usize,
    ahead: Option<usize>,
) -> Vec<(String, RecordBatch)> {
    let file = RNTupleFile::open(path).unwrap();
    let mut out = Vec::new();
    for info in file.ntuples() {
        let mut builder = file.reader_builder(Some(&info.path)).unwrap();
        if let Some(n) = ahead {
            builder = builder.with_batches_ahead(n);
        }
        let schema = builder.schema().clone();
        let batches = builder
            .with_batch_size(batch_size)
            .build()
            .unwrap()
            .collect_batches()
            .unwrap();
        out.push((info.path, concat_batches(&schema, &batches).unwrap()));
    }
    out
}

fn fixtures() -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "root"))
        .collect();
    paths.sort();
    assert!(paths.len() > 10, "fixtures in {}", data_dir().display());
    paths
}

#[test]
fn every_batch_size_gives_the_same_values() {
    for path in fixtures() {
        let whole = read_all(&path, usize::MAX, Some(0));
        let entries: usize = whole.iter().map(|(_, b)| b.num_rows()).sum();
        for batch_size in [1, 3, 7, 64, 1000, 4096] {
            if entries / batch_size > 100_000 {
                continue; // millions of one-entry batches say nothing more
            }
            // On the consumer's thread, and with fields running ahead.
            for ahead in [Some(0), Some(1), Some(3), None] {
                let cut = read_all(&path, batch_size, ahead);
                assert_eq!(
                    cut,
                    whole,
                    "{} in batches of {batch_size}, {ahead:?} ahead",
                    path.display()
                );
            }
        }
    }
}

/// The same on the corpus's files, where pages hold thousands of values
/// and clusters many pages: batches end inside pages, exactly on them, and
/// span several.
#[test]
fn corpus_files_read_alike_in_any_batch_size() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: no corpus (../shared/corpus or RNTUPLE_CORPUS)");
        return;
    };
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "root"))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 64 << 20))
        .collect();
    paths.sort();
    for path in paths {
        // Files this reader refuses (their own tests say why) are not the
        // subject here.
        let Ok(file) = RNTupleFile::open(&path) else {
            continue;
        };
        if file.ntuples().is_empty() {
            continue;
        }
        let whole = read_all(&path, usize::MAX, None);
        for batch_size in [777, 8192, 65_536] {
            let cut = read_all(&path, batch_size, None);
            assert_eq!(cut, whole, "{} in batches of {batch_size}", path.display());
        }
    }
}

/// A read consumed on a thread of the rayon pool, even a pool of one thread,
/// runs its fields there instead of waiting for the pool.
#[test]
fn a_read_consumed_inside_the_pool_finishes() {
    let path = data_dir().join("clusters.root");
    let whole = read_all(&path, usize::MAX, None);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for ahead in [None, Some(0), Some(2)] {
        let inside = pool.install(|| read_all(&path, 7, ahead));
        assert_eq!(inside, whole, "{ahead:?} ahead");
    }
}

/// Stopping early, after a batch whose values are kept in part for the
/// next, leaves nothing running: the reader drops cleanly, and a new read
/// gives the same first batches.
#[test]
fn stopping_early_and_reading_again() {
    let path = data_dir().join("clusters.root");
    let file = RNTupleFile::open(&path).unwrap();
    let first = |n: usize| {
        let mut reader = file
            .reader_builder(None)
            .unwrap()
            .with_batch_size(5)
            .with_batches_ahead(2)
            .build()
            .unwrap();
        (0..n)
            .map(|_| reader.next_batch().unwrap().unwrap())
            .collect::<Vec<_>>()
    };
    let two = first(2);
    let three = first(3);
    assert_eq!(two[..], three[..2]);
}

/// A page that fails to decode, late in the file, fails the batch that
/// needs it: every batch before comes out whole and equal to a clean read's,
/// however far other fields had run ahead, and the read ends there.
#[test]
fn a_bad_page_fails_its_batch_and_no_earlier_one() {
    let bytes = std::fs::read(data_dir().join("clusters.root")).unwrap();
    let clean = RNTupleFile::from_bytes(bytes.clone()).unwrap();
    let ntuple = clean.ntuple(None).unwrap();
    let clusters = ntuple.clusters().unwrap();
    let last = clusters.last().unwrap();
    let page = ntuple
        .descriptor()
        .columns
        .iter()
        .filter_map(|c| last.column(c.id))
        .filter_map(|range| range.pages.last())
        .max_by_key(|p| p.locator.offset)
        .unwrap();
    let mut bad = bytes.clone();
    let at = (page.locator.offset + page.locator.size / 2) as usize;
    bad[at] ^= 0x55;
    let read = |file: &RNTupleFile, ahead: usize| {
        let reader = file
            .reader_builder(None)
            .unwrap()
            .with_batch_size(7)
            .with_batches_ahead(ahead)
            .build()
            .unwrap();
        reader.collect::<Vec<_>>()
    };
    let good = read(&clean, 0);
    let bad = RNTupleFile::from_bytes(bad).unwrap();
    for ahead in [0, 1, 4] {
        let broken = read(&bad, ahead);
        let failed = broken.iter().position(|b| b.is_err()).expect("an error");
        assert!(failed > 0, "the bad page is in the last cluster");
        assert_eq!(broken.len(), failed + 1, "the read ends at the error");
        for (k, batch) in broken[..failed].iter().enumerate() {
            assert_eq!(
                batch.as_ref().unwrap(),
                good[k].as_ref().unwrap(),
                "batch {k}, {ahead} ahead"
            );
        }
        let err = broken[failed].as_ref().unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
    }
}

/// A read counts each page it decompresses, once: a whole read takes every
/// page of the columns it reads, in any batch size, and a read of the first
/// entry takes no more than the first page of each column.
#[test]
fn a_read_takes_each_page_once() {
    let file = RNTupleFile::open(data_dir().join("clusters.root")).unwrap();
    let ntuple = file.ntuple(None).unwrap();
    let descriptor = ntuple.descriptor();
    let clusters = ntuple.clusters().unwrap();
    let pages = clusters.iter().flat_map(|cluster| {
        descriptor
            .columns
            .iter()
            .filter_map(|column| cluster.column(column.id))
            .flat_map(|range| range.pages.iter())
    });
    let (n_pages, n_bytes) = pages.fold((0, 0), |(n, bytes), page| {
        let len = page.locator.size + if page.has_checksum { 8 } else { 0 };
        (n + 1, bytes + len)
    });
    assert!(
        n_pages > clusters.len() as u64,
        "the fixture has several pages per cluster"
    );
    for batch_size in [1, 7, 100, 65_536] {
        let mut reader = file
            .reader_builder(None)
            .unwrap()
            .with_batch_size(batch_size)
            .build()
            .unwrap();
        while reader.next_batch().unwrap().is_some() {}
        let stats = reader.read_stats();
        assert_eq!(stats.pages(), n_pages, "batches of {batch_size}");
        assert_eq!(stats.bytes(), n_bytes, "batches of {batch_size}");
    }
    let mut first = file
        .reader_builder(None)
        .unwrap()
        .with_limit(1)
        .build()
        .unwrap();
    while first.next_batch().unwrap().is_some() {}
    let columns = descriptor
        .columns
        .iter()
        .filter(|column| clusters[0].column(column.id).is_some())
        .count() as u64;
    let read = first.read_stats().pages();
    assert!(
        (1..=columns).contains(&read),
        "{read} pages for one entry, {columns} columns"
    );
}

/// A cursor's reads of consecutive ranges, all of one length or of changing
/// lengths, give the values of one read of the whole column. A read keeps
/// the decoded rest of its last page for the next ones, which slice it or,
/// when it is shorter than they are, go on from it: whatever length comes
/// next, the values come in order.
#[test]
fn consecutive_reads_of_a_column_give_its_values_in_order() {
    use rntuple::encoding::{can_decode_as, NativeType};
    use rntuple::page::ColumnCursor;

    fn check<T: NativeType + arrow_buffer::ArrowNativeType>(
        read: &dyn Fn() -> ColumnCursor,
        total: u64,
        bits: impl Fn(&[T]) -> Vec<u64>,
        what: &str,
    ) {
        let mut whole: Vec<T> = Vec::new();
        read().read_values(0..total, &mut whole).unwrap();
        let lengths: [&[u64]; 5] = [&[7], &[64], &[100, 100, 100, 101, 3], &[1, 250, 13], &[999]];
        for lengths in lengths {
            let mut cursor = read();
            let mut got = Vec::new();
            let mut at = 0;
            for &len in lengths.iter().cycle() {
                if at == total {
                    break;
                }
                let end = (at + len).min(total);
                got.extend_from_slice(&cursor.read_values_buffer::<T>(at..end).unwrap());
                at = end;
            }
            let (got, whole) = (bits(&got), bits(&whole));
            let first_difference = got.iter().zip(&whole).position(|(a, b)| a != b);
            assert_eq!(
                (got.len(), first_difference),
                (whole.len(), None),
                "{what}, reads of {lengths:?}: (values, first that differs)"
            );
        }
    }

    let file = RNTupleFile::open(data_dir().join("clusters.root")).unwrap();
    let ntuple = file.ntuple(None).unwrap();
    let descriptor = ntuple.descriptor();
    let source = ntuple.page_source();
    let mut checked = 0;
    for cluster in ntuple.clusters().unwrap() {
        for column in &descriptor.columns {
            let Some(range) = cluster.column(column.id) else {
                continue;
            };
            if range.pages.len() < 2 {
                continue;
            }
            let total: u64 = range.pages.iter().map(|p| u64::from(p.n_elements)).sum();
            let read = || ColumnCursor::new(&source, column, &cluster, None).unwrap();
            let what = format!("column {} in cluster {}", column.id, cluster.id);
            if can_decode_as::<f64>(column.column_type) {
                check::<f64>(
                    &read,
                    total,
                    |v| v.iter().map(|x| x.to_bits()).collect(),
                    &what,
                );
            } else if can_decode_as::<i64>(column.column_type) {
                check::<i64>(
                    &read,
                    total,
                    |v| v.iter().map(|&x| x as u64).collect(),
                    &what,
                );
            } else {
                continue;
            }
            checked += 1;
        }
    }
    assert!(checked >= 2, "{checked} columns of several pages");
}

/// A cursor told where its reads end keeps no decoded rest of a page after
/// the read that ends there: a read past that end decodes the page again.
/// Without the promise, the next read takes the kept values. The values
/// are the same either way.
#[test]
fn a_read_that_ends_at_the_read_end_keeps_no_rest() {
    use rntuple::encoding::can_decode_as;
    use rntuple::page::ColumnCursor;

    let file = RNTupleFile::open(data_dir().join("clusters.root")).unwrap();
    let ntuple = file.ntuple(None).unwrap();
    let descriptor = ntuple.descriptor();
    let mut checked = 0;
    for cluster in ntuple.clusters().unwrap() {
        for column in &descriptor.columns {
            let Some(range) = cluster.column(column.id) else {
                continue;
            };
            let first_page = range.pages.first().map_or(0, |p| u64::from(p.n_elements));
            if first_page < 4 || !can_decode_as::<f64>(column.column_type) {
                continue;
            }
            let half = first_page / 2;
            // (pages decompressed by the second read, the values of both)
            let reads = |end: Option<u64>| {
                let source = ntuple.page_source();
                let mut cursor = ColumnCursor::new(&source, column, &cluster, None).unwrap();
                if let Some(end) = end {
                    cursor.set_read_end(end);
                }
                let first = cursor.read_values_buffer::<f64>(0..half).unwrap();
                let before = source.stats.pages();
                let second = cursor.read_values_buffer::<f64>(half..half + 1).unwrap();
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let values = [bits(&first), bits(&second)].concat();
                (source.stats.pages() - before, values)
            };
            let (kept, values) = reads(None);
            let (again, same) = reads(Some(half));
            let what = format!("column {} in cluster {}", column.id, cluster.id);
            assert_eq!(
                (kept, again),
                (0, 1),
                "{what}: pages the second read decompressed"
            );
            assert_eq!(values, same, "{what}");
            checked += 1;
        }
    }
    assert!(checked >= 2, "{checked} columns checked");
}

/// The items of a collection learn where reads end from the offsets of the
/// read that ends there: after it, a read past the end decodes the item
/// page again instead of taking a kept rest. The values are the same
/// either way.
#[test]
fn the_items_of_a_read_that_ends_at_the_read_end_keep_no_rest() {
    use rntuple::arrow::assemble::{NodeReader, SharedReads};
    use rntuple::arrow::map_descriptor;

    let file = RNTupleFile::open(data_dir().join("clusters.root")).unwrap();
    let ntuple = file.ntuple(None).unwrap();
    let descriptor = ntuple.descriptor();
    let mapping = map_descriptor(descriptor);
    let (index, _) = mapping.schema.column_with_name("vec").unwrap();
    let node = &mapping.nodes[index];
    let (mut compared, mut ended) = (0, 0);
    for cluster in ntuple.clusters().unwrap() {
        let entries = cluster.n_entries;
        for k in 1..entries {
            // (pages decompressed by the read after entry k, the arrays of both reads)
            let reads = |end: Option<u64>| {
                let source = ntuple.page_source();
                let mut reader = NodeReader::new(descriptor, &source, node, &cluster).unwrap();
                if let Some(end) = end {
                    reader.set_read_end(end);
                }
                let first = reader.read(0..k, &SharedReads::default()).unwrap();
                let before = source.stats.pages();
                let second = reader.read(k..k + 1, &SharedReads::default()).unwrap();
                (source.stats.pages() - before, [first, second])
            };
            let (kept, values) = reads(None);
            let (again, same) = reads(Some(k));
            let what = format!("vec, entries 0..{k} of cluster {}", cluster.id);
            assert_eq!(values, same, "{what}");
            assert!(again >= kept, "{what}: {again} pages against {kept}");
            compared += 1;
            if (kept, again) == (0, 1) {
                ended += 1;
            }
        }
    }
    assert!(compared >= 20, "{compared} reads compared");
    assert!(
        ended >= 2,
        "{ended} of {compared} reads ended inside an item page"
    );
}
