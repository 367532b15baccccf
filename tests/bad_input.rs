//! Damaged files give an `Error` naming what and where, never a panic, a
//! hang or an allocation the file cannot justify.
//!
//! The cases edit `tests/data/fundamentals.root`, whose `Plain` RNTuple is
//! stored uncompressed, so every envelope and page byte can be changed and
//! envelope checksums recomputed where a test needs a consistent file.

mod common;

use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use rntuple::container::RootFile;
use rntuple::{Error, RNTupleFile};
use xxhash_rust::xxh3::xxh3_64;

const NTUPLE: &str = "Plain";

fn original() -> Vec<u8> {
    std::fs::read(common::data_dir().join("fundamentals.root")).unwrap()
}

/// Reads every batch of every RNTuple of the file.
fn read_all(bytes: &[u8]) -> rntuple::Result<Vec<Vec<RecordBatch>>> {
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(bytes))?;
    let mut out = Vec::new();
    for info in file.ntuples() {
        out.push(
            file.reader_builder(Some(&info.path))?
                .build()?
                .collect_batches()?,
        );
    }
    Ok(out)
}

fn read_plain(bytes: &[u8]) -> rntuple::Result<Vec<RecordBatch>> {
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(bytes))?;
    file.reader_builder(Some(NTUPLE))?
        .build()?
        .collect_batches()
}

struct Layout {
    header: (u64, u64),
    footer: (u64, u64),
    page_list: (u64, u64),
    pages: Vec<(u64, u64, bool)>,
}

fn layout(bytes: &[u8]) -> Layout {
    let root = RootFile::open(Arc::new(Bytes::copy_from_slice(bytes))).unwrap();
    let anchor = root
        .anchors()
        .iter()
        .find(|a| a.name == NTUPLE)
        .unwrap()
        .anchor
        .clone();
    assert_eq!(
        anchor.nbytes_header, anchor.len_header,
        "the Plain RNTuple must be uncompressed"
    );
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(bytes)).unwrap();
    let ntuple = file.ntuple(Some(NTUPLE)).unwrap();
    let group = &ntuple.descriptor().cluster_groups[0];
    let mut pages = Vec::new();
    for cluster in ntuple.clusters().unwrap() {
        for column in &cluster.columns {
            for p in &column.pages {
                pages.push((p.locator.offset, p.locator.size, p.has_checksum));
            }
        }
    }
    Layout {
        header: (anchor.seek_header, anchor.nbytes_header),
        footer: (anchor.seek_footer, anchor.nbytes_footer),
        page_list: (group.page_list.locator.offset, group.page_list.locator.size),
        pages,
    }
}

/// Recomputes the XXH3 checksum at the end of an uncompressed envelope.
fn fix_envelope_checksum(bytes: &mut [u8], (offset, size): (u64, u64)) {
    let (start, end) = (offset as usize, (offset + size) as usize);
    let sum = xxh3_64(&bytes[start..end - 8]);
    bytes[end - 8..end].copy_from_slice(&sum.to_le_bytes());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn truncated_files_give_errors_or_the_same_data() {
    let bytes = original();
    let reference = read_all(&bytes).unwrap();
    let step = (bytes.len() / 400).max(1);
    let cuts = (0..bytes.len())
        .step_by(step)
        .chain([1, 4, 63, 64, 100, bytes.len() - 1]);
    let mut errors = 0;
    for cut in cuts {
        match read_all(&bytes[..cut]) {
            Err(_) => errors += 1,
            Ok(data) => assert_eq!(
                data, reference,
                "cut at {cut} gave different data without an error"
            ),
        }
    }
    assert!(errors > 300, "only {errors} truncations were noticed");
}

#[test]
fn flipped_envelope_bytes_are_checksum_mismatches() {
    let bytes = original();
    let layout = layout(&bytes);
    for (what, (offset, size)) in [
        ("header", layout.header),
        ("footer", layout.footer),
        ("page list", layout.page_list),
    ] {
        for i in offset..offset + size {
            let mut damaged = bytes.clone();
            damaged[i as usize] ^= 0x20;
            let err = read_plain(&damaged).expect_err(what);
            assert!(
                matches!(err.root_cause(), Error::ChecksumMismatch { .. }),
                "{what} byte {i}: {err}"
            );
        }
    }
}

#[test]
fn flipped_page_bytes_are_checksum_mismatches() {
    let bytes = original();
    let layout = layout(&bytes);
    assert!(!layout.pages.is_empty());
    for &(offset, size, has_checksum) in &layout.pages {
        assert!(has_checksum, "ROOT writes page checksums by default");
        for i in [offset, offset + size / 2, offset + size - 1] {
            let mut damaged = bytes.clone();
            damaged[i as usize] ^= 0x01;
            let err = read_plain(&damaged).expect_err("damaged page");
            assert!(
                matches!(
                    err.root_cause(),
                    Error::ChecksumMismatch { what: "page", .. }
                ),
                "{err}"
            );
        }
    }
}

#[test]
fn flipped_anchor_bytes_are_refused() {
    let bytes = original();
    let root = RootFile::open(Arc::new(Bytes::copy_from_slice(&bytes))).unwrap();
    let entry = root.anchors().iter().find(|a| a.name == NTUPLE).unwrap();
    let key_offset = entry.key_offset as usize;
    // The anchor's fields: find the big-endian seek header in the key.
    let needle = entry.anchor.seek_header.to_be_bytes();
    let at = key_offset + find(&bytes[key_offset..], &needle).unwrap();
    for i in at - 8..at + 7 * 8 + 8 {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x04;
        let err = read_plain(&damaged).expect_err("damaged anchor");
        assert!(
            matches!(err.root_cause(), Error::ChecksumMismatch { .. }),
            "anchor byte {i}: {err}"
        );
    }
}

#[test]
fn page_locator_past_the_end_is_unexpected_eof() {
    let mut bytes = original();
    let layout = layout(&bytes);
    let (pl_offset, pl_size) = layout.page_list;
    let (page_offset, _, _) = layout.pages[0];
    let envelope = &bytes[pl_offset as usize..(pl_offset + pl_size) as usize];
    let at = pl_offset as usize + find(envelope, &page_offset.to_le_bytes()).unwrap();
    let past_end = bytes.len() as u64 + 1000;
    bytes[at..at + 8].copy_from_slice(&past_end.to_le_bytes());
    fix_envelope_checksum(&mut bytes, layout.page_list);
    let err = read_plain(&bytes).unwrap_err();
    assert!(
        matches!(err.root_cause(), Error::UnexpectedEof { .. }),
        "{err}"
    );
}

#[test]
fn huge_entry_counts_in_a_small_file_are_errors_without_huge_allocations() {
    let mut bytes = original();
    let layout = layout(&bytes);
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(&bytes)).unwrap();
    let n_entries = file.ntuple(Some(NTUPLE)).unwrap().n_entries();
    let huge: u64 = 1 << 40;

    // Cluster summary: first entry 0, then the entry count.
    let (pl_offset, pl_size) = layout.page_list;
    let mut summary = Vec::new();
    summary.extend_from_slice(&0u64.to_le_bytes());
    summary.extend_from_slice(&n_entries.to_le_bytes());
    let envelope = &bytes[pl_offset as usize..(pl_offset + pl_size) as usize];
    let at = pl_offset as usize + find(envelope, &summary).unwrap() + 8;
    bytes[at..at + 8].copy_from_slice(&huge.to_le_bytes());
    fix_envelope_checksum(&mut bytes, layout.page_list);
    // The page list now disagrees with the footer.
    let err = read_plain(&bytes).unwrap_err();
    assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");

    // Make the footer's cluster group agree: min entry 0, entry span.
    let (f_offset, f_size) = layout.footer;
    let footer = &bytes[f_offset as usize..(f_offset + f_size) as usize];
    let at = f_offset as usize + find(footer, &summary).unwrap() + 8;
    bytes[at..at + 8].copy_from_slice(&huge.to_le_bytes());
    fix_envelope_checksum(&mut bytes, layout.footer);
    let err = read_plain(&bytes).unwrap_err();
    assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");
}

#[test]
fn not_a_root_file() {
    let err = RNTupleFile::from_bytes(Bytes::from_static(
        b"definitely not a ROOT file, just some text",
    ))
    .unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::Malformed { .. } | Error::UnexpectedEof { .. }
        ),
        "{err}"
    );
}
