//! Inputs the fuzz targets (`fuzz/`) found to crash, replayed through the
//! same harness (`fuzz/harness.rs`) so they stay fixed; and the writer of the
//! fuzz seed corpora (`cargo test --test fuzz_regressions -- --ignored`).
//!
//! A crash input goes to `tests/data/fuzz/<target>/<name>`; every file there
//! must run through its target without a panic.

mod common;

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use rntuple::compression::decompress_to_vec;
use rntuple::container::{read_blob, RootFile};
use rntuple::encoding::ColumnCoding;
use rntuple::RNTupleFile;

/// A fuzz target: its name and the function that replays one input.
type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 3] = [
    ("open_read", harness::open_read),
    ("envelopes", harness::envelopes),
    ("pages", harness::pages),
];

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn crash_inputs_found_by_fuzzing_run_cleanly() {
    for (target, run) in TARGETS {
        for path in inputs(&common::data_dir().join("fuzz").join(target)) {
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{target}: {} panics", path.display());
        }
    }
}

#[test]
fn seeds_run_cleanly() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (target, run) in TARGETS {
        let files = inputs(&seeds.join(target));
        assert!(!files.is_empty(), "no seeds for {target}");
        for path in files {
            run(&std::fs::read(&path).unwrap());
        }
    }
}

/// Fixtures small enough to seed `open_read`.
const SEED_FILES: &[&str] = &[
    "attributes.root",
    "empty.root",
    "importer.root",
    "multi.root",
    "projections.root",
    "classes.root",
    "extension.root",
    "reals.root",
    "clusters.root",
    "containers.root",
    "container/subdirs.root",
    "merged.root",
];

/// Envelope payloads: between the type-and-length word and the checksum.
fn payload(envelope: &[u8]) -> &[u8] {
    &envelope[8..envelope.len() - 8]
}

/// Writes `fuzz/seeds/<target>/` from the fixtures: small files whole, the
/// envelopes of every RNTuple in them, and one page of each column type and
/// storage (plain or compressed) found.
#[test]
#[ignore = "writes the fuzz seed corpora"]
fn write_fuzz_seeds() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (target, _) in TARGETS {
        let dir = seeds.join(target);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut page_kinds = std::collections::BTreeSet::new();
    for name in SEED_FILES {
        let bytes = std::fs::read(common::data_dir().join(name)).unwrap();
        let stem = name.trim_end_matches(".root").replace('/', "_");
        std::fs::write(seeds.join("open_read").join(&stem), &bytes).unwrap();

        let source = Arc::new(Bytes::from(bytes.clone()));
        let root = RootFile::open(source.clone()).unwrap();
        let file = RNTupleFile::from_bytes(bytes.clone()).unwrap();
        for entry in root.anchors() {
            let a = &entry.anchor;
            let read = |offset, nbytes, len: u64| {
                let stored = read_blob(source.as_ref(), offset, nbytes, a.max_key_size).unwrap();
                decompress_to_vec(&stored, len as usize, offset).unwrap()
            };
            let header = read(a.seek_header, a.nbytes_header, a.len_header);
            let footer = read(a.seek_footer, a.nbytes_footer, a.len_footer);
            let ntuple = file.ntuple(Some(&entry.path)).unwrap();
            let descriptor = ntuple.descriptor().clone();
            let page_list = descriptor.cluster_groups.first().map(|g| {
                let l = g.page_list;
                read(l.locator.offset, l.locator.size, l.length)
            });
            let input = harness::envelopes_input(
                payload(&header),
                payload(&footer),
                page_list.as_deref().map_or(&[][..], payload),
            );
            let id = format!("{stem}_{}", entry.path.replace('/', "_"));
            std::fs::write(seeds.join("envelopes").join(&id), input).unwrap();

            for cluster in ntuple.clusters().unwrap() {
                for (col, range) in cluster.columns.iter().enumerate() {
                    let column = &descriptor.columns[col];
                    let Some(page) = range.pages.first() else {
                        continue;
                    };
                    let coding = ColumnCoding {
                        column_type: column.column_type,
                        bits_on_storage: column.bits_on_storage,
                        value_range: column.value_range,
                    };
                    let len = coding.page_len(page.n_elements as usize).unwrap();
                    let compressed = page.locator.size as usize != len;
                    if page.locator.size > 4096
                        || !page_kinds.insert((
                            column.column_type.code(),
                            column.bits_on_storage,
                            compressed,
                        ))
                    {
                        continue;
                    }
                    let bytes = read_blob(
                        source.as_ref(),
                        page.locator.offset,
                        page.locator.size,
                        a.max_key_size,
                    )
                    .unwrap();
                    let mode = if compressed {
                        harness::PAGE_COMPRESSED
                    } else {
                        0
                    };
                    let input = harness::pages_input(
                        column.column_type.code(),
                        column.bits_on_storage,
                        mode,
                        page.n_elements,
                        &bytes,
                    );
                    let id = format!(
                        "{:02x}_{}_{}",
                        column.column_type.code(),
                        column.bits_on_storage,
                        if compressed { "zip" } else { "raw" }
                    );
                    std::fs::write(seeds.join("pages").join(id), input).unwrap();
                }
            }
        }
    }
}
