//! The ROOT file container: finds the RNTuple anchors in a ROOT file and
//! reads the blobs they point to.
//!
//! A ROOT file is a header followed by records, each a TKey and an object
//! (ROOT's TFile.cxx, TKey.cxx, TDirectoryFile.cxx; the RNTuple spec's
//! "Embedding in a ROOT file and the anchor"). Everything here is big-endian;
//! the RNTuple data itself (little-endian) sits in RBlob keys, which no key
//! list names: only the anchor's and the envelopes' locators find them.
//!
//! ```text
//!  0       file header   "root", version, fBEGIN, fEND, fSeekInfo ...      file_header.rs
//!  fBEGIN  TFile key     + TNamed name, title + top directory record ---+  key.rs, directory.rs
//!          RBlob keys    pages, header / footer / page-list envelopes  |  blob.rs (read_blob)
//!          ROOT::RNTuple the anchor: version, header and footer        |  anchor.rs
//!                        locators, max key size, XXH3 checksum         |
//!          TDirectory    + record of a subdirectory --+                |
//!          key list      key header, nkeys, one key   <-- SeekKeys ----+
//!                        header per object (and one list per directory)
//!          streamer info, free segments ...
//!  fEND
//! ```
//!
//! [`RootFile::open`] reads the header and the top directory, walks the
//! directory tree, and reads and verifies every anchor it finds.

// File input never panics: the parsers and decoders check every index and
// length instead (tests may unwrap).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod anchor;
mod blob;
mod directory;
mod file_header;
mod key;

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use anchor::{Anchor, ANCHOR_CLASS, MAX_ANCHOR_LEN, MIN_ANCHOR_LEN, PRE_RELEASE_ANCHOR_CLASS};
pub use blob::{read_blob, read_blob_reusing};
pub use directory::{walk, Directory, DirectoryEntry, MAX_DIRECTORY_DEPTH};
pub use file_header::{FileHeader, BIG_FILE_VERSION};
pub use key::{parse_key, read_tstring, Key};

use crate::cursor::Cursor;
use crate::error::{Error, Result, ResultExt};
use crate::io::ReadAt;

/// An RNTuple anchor found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchorEntry {
    /// Directory path and name, "/"-separated, without a leading slash ("dir/sub/name").
    pub path: String,
    /// Name of the RNTuple (the key name).
    pub name: String,
    /// File offset of the anchor's key.
    pub key_offset: u64,
    /// The verified anchor.
    pub anchor: Anchor,
}

/// A ROOT file opened for reading its RNTuples: the header, the top
/// directory and every anchor, read once. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RootFile {
    source: Arc<dyn ReadAt>,
    header: FileHeader,
    top: Directory,
    anchors: Vec<AnchorEntry>,
}

impl RootFile {
    /// Opens a ROOT file: reads its header and top directory, walks all
    /// subdirectories and reads every `ROOT::RNTuple` anchor (the highest
    /// cycle of each name).
    ///
    /// Fails if any anchor is corrupt ([`Error::ChecksumMismatch`]) or of an
    /// unsupported epoch ([`Error::Unsupported`], also for pre-release
    /// `ROOT::Experimental::RNTuple` anchors); the error names the anchor.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rntuple::container::RootFile;
    /// use rntuple::io::MmapReader;
    ///
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/container/subdirs.root");
    /// let file = RootFile::open(Arc::new(MmapReader::open(path)?))?;
    /// let paths: Vec<&str> = file.anchors().iter().map(|a| a.path.as_str()).collect();
    /// assert_eq!(paths, ["top", "dir/inner", "dir/sub/deep"]);
    /// let inner = file.find_anchor("dir/inner").unwrap();
    /// assert_eq!(inner.anchor.version(), (1, 0, 2, 0));
    /// # Ok::<(), rntuple::Error>(())
    /// ```
    pub fn open(source: Arc<dyn ReadAt>) -> Result<RootFile> {
        let src = source.as_ref();
        let header = FileHeader::read(src)?;
        let top = Directory::read_top(src, &header).with_context(|| "top directory")?;
        let mut anchors = Vec::new();
        for entry in walk(src, &top)? {
            let class = entry.key.class_name.as_str();
            if class != ANCHOR_CLASS && class != PRE_RELEASE_ANCHOR_CLASS {
                continue;
            }
            let path = entry.path();
            let context = || format!("RNTuple anchor '{path}'");
            if class == PRE_RELEASE_ANCHOR_CLASS {
                return Err(Error::unsupported("pre-release RNTuple (epoch 0)").context(context()));
            }
            let anchor = read_listed_anchor(src, &entry.key).with_context(context)?;
            anchors.push(AnchorEntry {
                name: entry.key.name,
                key_offset: entry.key.seek_key,
                anchor,
                path,
            });
        }
        Ok(RootFile {
            source,
            header,
            top,
            anchors,
        })
    }

    /// The bytes of the file.
    pub fn source(&self) -> &Arc<dyn ReadAt> {
        &self.source
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The top directory's record.
    pub fn top_directory(&self) -> &Directory {
        &self.top
    }

    /// Every RNTuple anchor in the file: those of a directory in key-list
    /// order, then those of its subdirectories.
    pub fn anchors(&self) -> &[AnchorEntry] {
        &self.anchors
    }

    /// The anchor at `path` ("name" or "dir/sub/name"; a leading "/" is ignored).
    pub fn find_anchor(&self, path: &str) -> Option<&AnchorEntry> {
        let path = path.strip_prefix('/').unwrap_or(path);
        self.anchors.iter().find(|a| a.path == path)
    }
}

/// Reads the anchor of a key-list entry from the key at its SeekKey, which
/// must hold the same class and name.
fn read_listed_anchor(source: &dyn ReadAt, listed: &Key) -> Result<Anchor> {
    let key = Key::read(source, listed.seek_key)?;
    if key.class_name != listed.class_name || key.name != listed.name {
        return Err(Error::malformed(
            "key",
            listed.seek_key,
            format!(
                "key holds {} '{}' where the key list names {} '{}'",
                key.class_name, key.name, listed.class_name, listed.name
            ),
        ));
    }
    Anchor::read(source, &key)
}

/// Reads a file pointer: 8 bytes in 64-bit structures, else 4.
pub(crate) fn read_seek(c: &mut Cursor, big: bool) -> Result<u64> {
    if big {
        c.u64_be()
    } else {
        c.u32_be().map(u64::from)
    }
}
