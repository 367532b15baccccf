//! Tests of [`RootFile`] on real files (the shared corpus and the fixtures in
//! tests/data/container) and on hand-built and corrupted ones.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use xxhash_rust::xxh3::xxh3_64;

use super::fixture::FileBuilder;
use super::*;
use crate::io::{FileReader, MmapReader};

/// Anchor fields: version, then seek/nbytes/len of header and footer and the max key size.
type Fields = ([u16; 4], [u64; 7]);

/// What ROOT 6.40 reads from the corpus: file, path, key offset, anchor
/// (`TKey::GetSeekKey` and the `ROOT::RNTuple` getters, via PyROOT).
#[rustfmt::skip]
const CORPUS: &[(&str, &str, u64, Fields)] = &[
    ("Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root", "Events", 26838, ([1, 0, 0, 0], [364, 437, 1514, 26754, 84, 148, 1 << 30])),
    ("cmsopendata2015_ttbar_19980_NANOAOD_RNTupleImporter_rntuple_v1-0-0-1.root", "Events", 49662, ([1, 0, 0, 1], [388, 18630, 145088, 49579, 83, 148, 1 << 30])),
    ("ntpl001_staff_rntuple_v1-0-0-0.root", "Staff", 24588, ([1, 0, 0, 0], [266, 319, 997, 24504, 84, 148, 1 << 30])),
    ("ntpl001_staff_rntuple_v1-0-1-0.root", "Staff", 24628, ([1, 0, 1, 0], [282, 318, 996, 24543, 85, 160, 1 << 30])),
    ("rntviewer-testfile-multiple-rntuples-v1-0-0-0.root", "A", 807, ([1, 0, 0, 0], [266, 101, 164, 725, 82, 148, 1 << 30])),
    ("rntviewer-testfile-multiple-rntuples-v1-0-0-0.root", "B", 2119, ([1, 0, 0, 0], [1542, 111, 171, 2037, 82, 148, 1 << 30])),
    ("rntviewer-testfile-uncomp-single-rntuple-v1-0-0-0.root", "Contributors", 1835, ([1, 0, 0, 0], [254, 332, 332, 1687, 148, 148, 1 << 30])),
    ("test_1jag_int_float_rntuple_v1-0-0-0.root", "ntuple", 1551, ([1, 0, 0, 0], [312, 228, 434, 1469, 82, 148, 1 << 30])),
    ("test_atomic_bitset_rntuple_v1-0-0-0.root", "ntuple", 836, ([1, 0, 0, 0], [310, 196, 342, 754, 82, 148, 1 << 30])),
    ("test_bit_rntuple_v1-0-0-0.root", "ntuple", 685, ([1, 0, 0, 0], [290, 115, 175, 603, 82, 148, 1 << 30])),
    ("test_emptystruct_invalidvar_rntuple_v1-0-0-0.root", "ntuple", 941, ([1, 0, 0, 0], [328, 260, 490, 859, 82, 148, 1 << 30])),
    ("test_extension_columns_rntuple_v1-0-0-0.root", "ntuple", 3043, ([1, 0, 0, 0], [318, 128, 185, 2827, 216, 411, 1 << 30])),
    ("test_float_types_rntuple_v1-0-0-0.root", "ntuple", 1128, ([1, 0, 0, 0], [322, 252, 1005, 1045, 83, 148, 1 << 30])),
    ("test_index_multicluster_rntuple_v1-0-0-0.root", "ntuple", 1618, ([1, 0, 0, 0], [320, 165, 273, 1533, 85, 148, 1 << 30])),
    ("test_int_5e4_rntuple_v1-0-0-0.root", "ntuple", 1542, ([1, 0, 0, 0], [298, 129, 188, 1459, 83, 148, 1 << 30])),
    ("test_int_float_rntuple_v1-0-0-0.root", "ntuple", 844, ([1, 0, 0, 0], [302, 167, 263, 762, 82, 148, 1 << 30])),
    ("test_int_multicluster_rntuple_v1-0-0-0.root", "ntuple", 1034, ([1, 0, 0, 0], [316, 129, 188, 949, 85, 148, 1 << 30])),
    ("test_int_vfloat_tlv_vtlv_rntuple_v1-0-0-0.root", "ntuple", 1224, ([1, 0, 0, 0], [322, 341, 1076, 1141, 83, 148, 1 << 30])),
    ("test_multiple_cluster_groups_rntuple_v1-0-0-0.root", "ntuple", 6376, ([1, 0, 0, 0], [346, 191, 347, 6246, 130, 244, 1 << 30])),
    ("test_multiple_representations_rntuple_v1-0-0-0.root", "ntuple", 936, ([1, 0, 0, 0], [348, 130, 192, 855, 81, 148, 1 << 30])),
    ("test_nested_structs_rntuple_v1-0-0-0.root", "ntuple", 1114, ([1, 0, 0, 0], [312, 268, 677, 1031, 83, 148, 1 << 30])),
    ("test_split_3e4_rntuple_v1-0-0-0.root", "ntuple", 1063, ([1, 0, 0, 0], [302, 225, 425, 980, 83, 148, 1 << 30])),
    ("test_splitint_rntuple_v1-0-1-0.root", "ntuple", 895, ([1, 0, 1, 0], [316, 159, 334, 813, 82, 160, 1 << 30])),
    ("test_stl_containers_rntuple_v1-0-0-0.root", "ntuple", 2144, ([1, 0, 0, 0], [312, 708, 3598, 2062, 82, 148, 1 << 30])),
];

/// What ROOT 6.40 reads from tests/data/container (see generate.py there).
#[rustfmt::skip]
const FIXTURES: &[(&str, &str, u64, Fields)] = &[
    ("subdirs.root", "top", 3996, ([1, 0, 2, 0], [326, 173, 173, 769, 160, 160, 1 << 30])),
    ("subdirs.root", "dir/inner", 2501, ([1, 0, 2, 0], [1900, 175, 175, 2341, 160, 160, 1 << 30])),
    ("subdirs.root", "dir/sub/deep", 3636, ([1, 0, 2, 0], [3094, 174, 174, 3476, 160, 160, 1 << 30])),
    ("split.root", "split", 1509, ([1, 0, 2, 0], [363, 175, 175, 1381, 160, 160, 128])),
];

fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("RNTUPLE_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "corpus not found at {}, skipping (set RNTUPLE_CORPUS)",
            dir.display()
        );
        None
    }
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/container")
}

fn open_bytes(data: Vec<u8>) -> Result<RootFile> {
    RootFile::open(Arc::new(Bytes::from(data)))
}

fn fields(a: &Anchor) -> Fields {
    (
        [
            a.version_epoch,
            a.version_major,
            a.version_minor,
            a.version_patch,
        ],
        [
            a.seek_header,
            a.nbytes_header,
            a.len_header,
            a.seek_footer,
            a.nbytes_footer,
            a.len_footer,
            a.max_key_size,
        ],
    )
}

/// Opens every file of `expected` in `dir` and compares its anchors.
fn check_files(dir: &Path, expected: &[(&str, &str, u64, Fields)]) {
    let mut files: Vec<&str> = expected.iter().map(|e| e.0).collect();
    files.dedup();
    for file in files {
        let path = dir.join(file);
        let sources: [Arc<dyn ReadAt>; 2] = [
            Arc::new(FileReader::open(&path).unwrap()),
            Arc::new(MmapReader::open(&path).unwrap()),
        ];
        for source in sources {
            let root = RootFile::open(source).unwrap_or_else(|e| panic!("{file}: {e}"));
            let got: Vec<_> = root
                .anchors()
                .iter()
                .map(|a| (a.path.as_str(), a.key_offset, fields(&a.anchor)))
                .collect();
            let want: Vec<_> = expected
                .iter()
                .filter(|e| e.0 == file)
                .map(|e| (e.1, e.2, e.3))
                .collect();
            assert_eq!(got, want, "{file}");
            for a in root.anchors() {
                assert_eq!(a.path.rsplit('/').next(), Some(a.name.as_str()));
                assert_eq!(root.find_anchor(&format!("/{}", a.path)), Some(a));
            }
        }
    }
}

/// Checks the XXH3 checksum at the end of an uncompressed envelope (spec:
/// "Envelopes"), so a wrongly reassembled blob shows.
fn assert_envelope_checksum(envelope: &[u8]) {
    let (body, checksum) = envelope.split_at(envelope.len() - 8);
    assert_eq!(
        xxh3_64(body),
        u64::from_le_bytes(checksum.try_into().unwrap())
    );
}

#[test]
fn corpus_files_list_their_anchors() {
    let Some(dir) = corpus_dir() else { return };
    // Every .root file in the corpus has an entry in CORPUS.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".root") {
            assert!(
                CORPUS.iter().any(|e| e.0 == name),
                "{name} has no expected anchors"
            );
        }
    }
    check_files(&dir, CORPUS);
}

#[test]
fn corpus_uncompressed_envelopes_verify() {
    let Some(dir) = corpus_dir() else { return };
    let data =
        std::fs::read(dir.join("rntviewer-testfile-uncomp-single-rntuple-v1-0-0-0.root")).unwrap();
    let root = open_bytes(data).unwrap();
    let a = &root.anchors()[0].anchor;
    for (seek, nbytes) in [
        (a.seek_header, a.nbytes_header),
        (a.seek_footer, a.nbytes_footer),
    ] {
        let blob = read_blob(root.source().as_ref(), seek, nbytes, a.max_key_size).unwrap();
        assert_envelope_checksum(&blob);
    }
}

#[test]
fn corpus_truncations_and_flips_never_panic() {
    let Some(dir) = corpus_dir() else { return };
    let data =
        std::fs::read(dir.join("rntviewer-testfile-multiple-rntuples-v1-0-0-0.root")).unwrap();
    for len in (0..data.len()).step_by(7) {
        let _ = open_bytes(data[..len].to_vec());
    }
    for i in 0..data.len() {
        for bit in [0x01, 0x80] {
            let mut flipped = data.clone();
            flipped[i] ^= bit;
            let _ = open_bytes(flipped);
        }
    }
}

#[test]
fn corpus_anchor_flip_is_a_checksum_mismatch() {
    let Some(dir) = corpus_dir() else { return };
    let mut data =
        std::fs::read(dir.join("rntviewer-testfile-multiple-rntuples-v1-0-0-0.root")).unwrap();
    // Anchor "B": key at 2119 (0x847), KeyLen 43, so the payload is at 2162;
    // byte 20 of the payload is inside seek header.
    data[2162 + 20] ^= 0x01;
    let err = open_bytes(data).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::ChecksumMismatch {
                what: "anchor",
                offset: 2232,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn fixtures_with_subdirectories_cycles_and_split_blobs() {
    check_files(&fixture_dir(), FIXTURES);
}

#[test]
fn split_blobs_reassemble_to_valid_envelopes() {
    let path = fixture_dir().join("split.root");
    let root = RootFile::open(Arc::new(MmapReader::open(path).unwrap())).unwrap();
    let a = &root.find_anchor("split").unwrap().anchor;
    assert!(a.nbytes_header > a.max_key_size && a.nbytes_footer > a.max_key_size);
    for (seek, nbytes, len) in [
        (a.seek_header, a.nbytes_header, a.len_header),
        (a.seek_footer, a.nbytes_footer, a.len_footer),
    ] {
        assert_eq!(nbytes, len, "stored uncompressed");
        let blob = read_blob(root.source().as_ref(), seek, nbytes, a.max_key_size).unwrap();
        assert_eq!(blob.len() as u64, nbytes);
        assert_envelope_checksum(&blob);
    }
}

#[test]
fn hand_built_64bit_file() {
    let mut b = FileBuilder::new(true);
    let top = b.top();
    let nt = b.anchor("nt", &top, 1);
    let dir = b.directory("dir", &top);
    let inner = b.anchor("inner", &dir, 1);
    b.key_list(&dir, &[inner]);
    b.key_list(&top, &[nt, dir.key.clone()]);
    let root = open_bytes(b.finish()).unwrap();
    assert!(root.header().is_64bit());
    assert!(root.top_directory().is_64bit());
    let paths: Vec<_> = root.anchors().iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, ["nt", "dir/inner"]);
    assert_eq!(root.find_anchor("dir/inner").unwrap().name, "inner");
    assert_eq!(root.anchors()[0].anchor.version(), (1, 0, 0, 0));
}

#[test]
fn only_the_highest_cycle_is_listed() {
    let mut b = FileBuilder::new(false);
    let top = b.top();
    let one = b.anchor("nt", &top, 1);
    let three_at = b.pos();
    let three = b.anchor("nt", &top, 3);
    let two = b.anchor("nt", &top, 2);
    b.key_list(&top, &[one, three, two]);
    let root = open_bytes(b.finish()).unwrap();
    assert_eq!(root.anchors().len(), 1);
    assert_eq!(root.anchors()[0].key_offset, three_at);
}

#[test]
fn other_classes_are_ignored_and_epoch_0_is_refused() {
    let mut b = FileBuilder::new(false);
    let top = b.top();
    let named = b.object("TNamed", "note", &[0; 12], &top, 1);
    let nt = b.anchor("nt", &top, 1);
    b.key_list(&top, &[named.clone(), nt.clone()]);
    assert_eq!(open_bytes(b.finish()).unwrap().anchors().len(), 1);

    let mut b = FileBuilder::new(false);
    let top = b.top();
    let old = b.object(PRE_RELEASE_ANCHOR_CLASS, "old", &[0; 64], &top, 1);
    b.key_list(&top, &[old]);
    let err = open_bytes(b.finish()).unwrap_err();
    assert!(
        matches!(err.root_cause(), Error::Unsupported { .. }),
        "{err}"
    );
}

#[test]
fn corrupt_hand_built_files_are_errors() {
    let build = || {
        let mut b = FileBuilder::new(false);
        let top = b.top();
        let nt_at = b.pos();
        let nt = b.anchor("nt", &top, 1);
        let (list, _) = b.key_list(&top, &[nt]);
        (b.finish(), nt_at as usize, list as usize)
    };

    let (file, nt_at, _) = build();
    assert!(open_bytes(file.clone()).is_ok());

    // A flipped byte in the anchor's fields.
    let mut flipped = file.clone();
    let payload_at = nt_at + 26 + 14 + 3 + 1;
    flipped[payload_at + 30] ^= 0x04;
    let err = open_bytes(flipped).unwrap_err();
    assert!(
        matches!(err.root_cause(), Error::ChecksumMismatch { .. }),
        "{err}"
    );

    // The anchor key's KeyLen pointing past the end of the file.
    let mut long = file.clone();
    long[nt_at + 14..nt_at + 16].copy_from_slice(&u16::MAX.to_be_bytes());
    let err = open_bytes(long).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::UnexpectedEof { .. } | Error::Malformed { .. }
        ),
        "{err}"
    );

    // The anchor key's Nbytes pointing past the end of the file.
    let mut big = file.clone();
    big[nt_at..nt_at + 4].copy_from_slice(&100_000i32.to_be_bytes());
    let err = open_bytes(big).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::UnexpectedEof { .. } | Error::Malformed { .. }
        ),
        "{err}"
    );

    // The key list entry pointing at something that is not the anchor key.
    let (mut moved, _, list) = build();
    let seek_key_at = list + 35 + 4 + 18;
    moved[seek_key_at..seek_key_at + 4].copy_from_slice(&100u32.to_be_bytes());
    let err = open_bytes(moved).unwrap_err();
    assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");

    // Not a ROOT file, and a file cut inside its header.
    let err = open_bytes(b"PK\x03\x04 not root at all".to_vec()).unwrap_err();
    assert!(matches!(err, Error::Malformed { offset: 0, .. }), "{err}");
    let err = open_bytes(file[..30].to_vec()).unwrap_err();
    assert!(matches!(err, Error::UnexpectedEof { .. }), "{err}");
    // fBEGIN beyond the end of the file.
    let err = open_bytes(file[..60].to_vec()).unwrap_err();
    assert!(
        matches!(err.root_cause(), Error::UnexpectedEof { .. }),
        "{err}"
    );
}
