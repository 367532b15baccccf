//! Damaged files give an `Error` naming what and where, never a panic, a
//! hang, an allocation the file cannot justify, or different data without
//! an error.
//!
//! The first tests damage every fixture in `tests/data` (and
//! `tests/data/container`) in the same ways: truncation at every envelope,
//! page and anchor boundary and at a spread of other offsets; every byte of
//! every anchor, header, footer and page list flipped; a sample of page
//! bytes flipped. Each case must end in an error or in data identical to an
//! unmodified read, and a flip in a region a checksum covers must give
//! `ChecksumMismatch`. Samples are fixed, so every run tries the same cases.
//!
//! The later cases edit `tests/data/fundamentals.root`, whose `Plain`
//! RNTuple is stored uncompressed, so every envelope and page byte can be
//! changed and envelope checksums recomputed where a test needs a
//! consistent file.

mod common;

use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use rntuple::container::{Key, RootFile};
use rntuple::{Error, RNTupleFile};
use xxhash_rust::xxh3::xxh3_64;

const NTUPLE: &str = "Plain";

fn original() -> Vec<u8> {
    std::fs::read(common::data_dir().join("fundamentals.root")).unwrap()
}

fn read_plain(bytes: &[u8]) -> rntuple::Result<Vec<RecordBatch>> {
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(bytes))?;
    file.reader_builder(Some(NTUPLE))?
        .build()?
        .collect_batches()
}

struct Layout {
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
        .anchor;
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

/// Every fixture file: name and bytes.
fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in [common::data_dir(), common::data_dir().join("container")] {
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "root"))
            .collect();
        names.sort();
        for path in names {
            let name = path.strip_prefix(common::data_dir()).unwrap();
            out.push((name.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    assert!(out.len() >= 15, "fixtures missing");
    out
}

/// What a read of a whole file gives: per RNTuple its path and batches, and
/// those of its linked attribute sets.
type Everything = Vec<(String, Vec<RecordBatch>, Vec<Vec<RecordBatch>>)>;

/// Reads every batch of every RNTuple of the file and of its attribute sets.
fn read_everything(bytes: &[u8]) -> rntuple::Result<Everything> {
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(bytes))?;
    let mut out = Vec::new();
    for info in file.ntuples() {
        let ntuple = file.ntuple(Some(&info.path))?;
        let mut sets = Vec::new();
        for set in ntuple.attribute_sets() {
            let set = ntuple.attribute_set(&set.name)?;
            sets.push(
                rntuple::RNTupleReaderBuilder::new(set)
                    .build()?
                    .collect_batches()?,
            );
        }
        let batches = rntuple::RNTupleReaderBuilder::new(ntuple)
            .build()?
            .collect_batches()?;
        out.push((info.path, batches, sets));
    }
    Ok(out)
}

/// Reads every batch of the RNTuple at `path`.
fn read_ntuple(bytes: &[u8], path: &str) -> rntuple::Result<Vec<RecordBatch>> {
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(bytes))?;
    file.reader_builder(Some(path))?.build()?.collect_batches()
}

/// A byte range of one RNTuple's data in a file.
#[derive(Debug, Clone)]
struct Region {
    what: &'static str,
    ntuple: String,
    start: u64,
    end: u64,
    /// Whether a checksum covers every byte as stored, so that any flip
    /// must be a `ChecksumMismatch` (anchors, uncompressed envelopes, pages
    /// with checksums).
    checksummed: bool,
}

impl Region {
    fn len(&self) -> u64 {
        self.end - self.start
    }
}

/// The anchors, envelopes and pages of every RNTuple of a file. Blobs split
/// over several keys count with their first key only.
fn regions(bytes: &[u8]) -> Vec<Region> {
    let source = Arc::new(Bytes::copy_from_slice(bytes));
    let root = RootFile::open(source.clone()).unwrap();
    let file = RNTupleFile::from_bytes(Bytes::copy_from_slice(bytes)).unwrap();
    let mut out = Vec::new();
    for entry in root.anchors() {
        let a = &entry.anchor;
        let ntuple = entry.path.clone();
        // A split blob counts with its first key, whose end holds the
        // offsets of the other chunks, which no checksum covers.
        let mut push = |what, offset: u64, size: u64, checksummed: bool| {
            let split = a.max_key_size > 0 && size > a.max_key_size;
            out.push(Region {
                what,
                ntuple: ntuple.clone(),
                start: offset,
                end: offset + if split { a.max_key_size } else { size },
                checksummed: checksummed && !split,
            })
        };
        let key = Key::read(source.as_ref(), entry.key_offset).unwrap();
        let payload = key.payload_offset().unwrap();
        if !key.is_compressed().unwrap() {
            // Byte count and class version, then the checksummed fields and
            // the checksum itself.
            push("anchor preamble", payload, 6, false);
            push("anchor", payload + 6, u64::from(key.obj_len) - 6, true);
        }
        let plain = a.nbytes_header == a.len_header;
        push("header", a.seek_header, a.nbytes_header, plain);
        let plain = a.nbytes_footer == a.len_footer;
        push("footer", a.seek_footer, a.nbytes_footer, plain);
        let ntuple_data = file.ntuple(Some(&entry.path)).unwrap();
        for g in &ntuple_data.descriptor().cluster_groups {
            let l = g.page_list;
            let plain = l.locator.size == l.length;
            push("page list", l.locator.offset, l.locator.size, plain);
        }
        for cluster in ntuple_data.clusters().unwrap() {
            for column in &cluster.columns {
                for p in &column.pages {
                    let checksum = if p.has_checksum { 8 } else { 0 };
                    let size = p.locator.size + checksum;
                    push("page", p.locator.offset, size, p.has_checksum);
                }
            }
        }
    }
    out
}

/// A fixed pseudo-random sequence (SplitMix64), for samples that are the
/// same in every run.
struct Sample(u64);

impl Sample {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// Flips bits of byte `at`, a different bit for each offset.
fn flipped(bytes: &[u8], at: u64) -> Vec<u8> {
    let mut damaged = bytes.to_vec();
    damaged[at as usize] ^= 1 << (at % 8);
    damaged
}

#[test]
fn truncations_give_errors_or_the_same_data() {
    for (name, bytes) in fixtures() {
        let reference = read_everything(&bytes).unwrap();
        let len = bytes.len() as u64;
        let mut cuts = std::collections::BTreeSet::new();
        for r in regions(&bytes) {
            for cut in [
                r.start,
                r.start + 1,
                r.start + r.len() / 2,
                r.end - 1,
                r.end,
            ] {
                cuts.insert(cut.min(len));
            }
        }
        let mut sample = Sample(len);
        for i in 0..64 {
            cuts.insert(len * i / 64);
            cuts.insert(sample.below(len));
        }
        cuts.extend([0, 1, 4, 33, len - 1]);
        let mut errors = 0;
        for &cut in &cuts {
            match read_everything(&bytes[..cut as usize]) {
                Err(_) => errors += 1,
                Ok(data) => assert!(
                    data == reference,
                    "{name}: cut at {cut} gave different data without an error"
                ),
            }
        }
        assert!(
            errors * 2 > cuts.len(),
            "{name}: only {errors} of {} truncations were noticed",
            cuts.len()
        );
    }
}

/// Flips `at` in a region of RNTuple `ntuple` and checks the outcome.
fn check_flip(name: &str, bytes: &[u8], region: &Region, at: u64, reference: &[RecordBatch]) {
    let damaged = flipped(bytes, at);
    match read_ntuple(&damaged, &region.ntuple) {
        Err(err) => assert!(
            !region.checksummed || matches!(err.root_cause(), Error::ChecksumMismatch { .. }),
            "{name}: {} {} byte {at}: {err}",
            region.ntuple,
            region.what
        ),
        Ok(data) => assert!(
            !region.checksummed && data == reference,
            "{name}: {} {} byte {at}: flip went unnoticed",
            region.ntuple,
            region.what
        ),
    }
}

#[test]
fn every_anchor_and_envelope_byte_flipped_is_noticed() {
    for (name, bytes) in fixtures() {
        let all = regions(&bytes);
        let mut references = std::collections::HashMap::new();
        for r in all.iter().filter(|r| r.what != "page") {
            let reference = references
                .entry(r.ntuple.clone())
                .or_insert_with(|| read_ntuple(&bytes, &r.ntuple).unwrap());
            for at in r.start..r.end {
                check_flip(&name, &bytes, r, at, reference);
            }
        }
    }
}

#[test]
fn flipped_page_bytes_are_noticed() {
    for (name, bytes) in fixtures() {
        let pages: Vec<Region> = regions(&bytes)
            .into_iter()
            .filter(|r| r.what == "page")
            .collect();
        let mut references = std::collections::HashMap::new();
        let mut sample = Sample(bytes.len() as u64);
        // Every page of small files; 200 pages of the others.
        let step = pages.len().div_ceil(200).max(1);
        for r in pages.iter().step_by(step) {
            let reference = references
                .entry(r.ntuple.clone())
                .or_insert_with(|| read_ntuple(&bytes, &r.ntuple).unwrap());
            for at in [r.start, r.end - 1, r.start + sample.below(r.len())] {
                check_flip(&name, &bytes, r, at, reference);
            }
        }
    }
}

#[test]
fn bytes_flipped_anywhere_give_errors_or_the_same_data() {
    for (name, bytes) in fixtures() {
        let reference = read_everything(&bytes).unwrap();
        let mut sample = Sample(!(bytes.len() as u64));
        for _ in 0..300 {
            let at = sample.below(bytes.len() as u64);
            if let Ok(data) = read_everything(&flipped(&bytes, at)) {
                // No checksum covers the key lists: a flip there can rename
                // an RNTuple or hide it as another class. Any other flip
                // outside RNTuple data (a key's title or date, the streamer
                // info) changes nothing.
                let paths = |e: &Everything| e.iter().map(|n| n.0.clone()).collect::<Vec<_>>();
                assert!(
                    data == reference || paths(&data) != paths(&reference),
                    "{name}: byte {at} changed the data"
                );
            }
        }
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
