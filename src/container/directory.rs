//! Directories: the TDirectory record, its key list, and the walk over a
//! file's directory tree.
//!
//! The record layout is from `TDirectoryFile::Streamer` and
//! `TDirectoryFile::ReadKeys` (io/io/src/TDirectoryFile.cxx) and `RTFDirectory`
//! (tree/ntuple/src/RMiniFile.cxx). Big-endian; a version above 1000 means
//! 64-bit seeks.
//!
//! ```text
//! directory record                          key list (at SeekKeys, NbytesKeys long)
//!  2    Version       5, or 1005            key header   (class "", name = directory name)
//!  4    DatimeC                             4  nkeys
//!  4    DatimeM                             key header 1 (a copy of the object's key)
//!  4    NbytesKeys    size of the key list  key header 2
//!  4    NbytesName                          ...
//! 4|8   SeekDir       key of the directory
//! 4|8   SeekParent    parent's SeekDir
//! 4|8   SeekKeys      key list
//!  ..   UUID, padding (not read)
//! ```
//!
//! The top directory's record follows the TFile key at fBEGIN and the TNamed
//! name and title after it (`RMiniFile::GetNTupleProperAtOffset` reads it the
//! same way); a subdirectory's record is the object of its key (class
//! "TDirectory" or "TDirectoryFile").

use std::collections::{BTreeMap, HashSet};

use super::key::{parse_key, read_tstring, Key, MIN_KEY_LEN};
use super::read_seek;
use super::FileHeader;
use crate::cursor::Cursor;
use crate::error::{Error, Result, ResultExt};
use crate::io::{read_checked, ReadAt};

/// Directory versions above this use 64-bit seeks.
pub const BIG_DIRECTORY_VERSION: u16 = 1000;

/// How deep subdirectories are followed before the file is refused.
pub const MAX_DIRECTORY_DEPTH: usize = 64;

/// Longest directory object read: the record, UUID and padding (under 100
/// bytes) and, for the top directory, a TNamed name and title (titles are
/// cut at 32000 characters by `TKey::Build`).
const MAX_DIRECTORY_OBJECT_LEN: u64 = 1 << 16;

/// A directory record (see the module documentation for the layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directory {
    /// File offset of the record itself.
    pub offset: u64,
    /// Class version; above 1000 the seeks are 64-bit.
    pub version: u16,
    /// Creation date and time, packed.
    pub datime_c: u32,
    /// Modification date and time, packed.
    pub datime_m: u32,
    /// Size of the key list record.
    pub nbytes_keys: u32,
    /// Size of the directory's key and name.
    pub nbytes_name: u32,
    /// Offset of the key holding the directory.
    pub seek_dir: u64,
    /// SeekDir of the parent directory (0 for the top directory).
    pub seek_parent: u64,
    /// Offset of the key list record (0 if no keys were written).
    pub seek_keys: u64,
}

impl Directory {
    /// Whether the record uses 64-bit seeks.
    pub fn is_64bit(&self) -> bool {
        self.version > BIG_DIRECTORY_VERSION
    }

    /// Parses a directory record at the cursor.
    pub fn parse(c: &mut Cursor) -> Result<Directory> {
        let offset = c.offset();
        let version = c.u16_be()?;
        let datime_c = c.u32_be()?;
        let datime_m = c.u32_be()?;
        let nbytes_keys = c.u32_be()?;
        let nbytes_name = c.u32_be()?;
        let big = version > BIG_DIRECTORY_VERSION;
        let seek_dir = read_seek(c, big)?;
        let seek_parent = read_seek(c, big)?;
        let seek_keys = read_seek(c, big)?;
        Ok(Directory {
            offset,
            version,
            datime_c,
            datime_m,
            nbytes_keys,
            nbytes_name,
            seek_dir,
            seek_parent,
            seek_keys,
        })
    }

    /// Reads the top directory: the record after the TFile key at fBEGIN and
    /// its TNamed name and title.
    pub fn read_top(source: &dyn ReadAt, header: &FileHeader) -> Result<Directory> {
        let key = Key::read(source, header.begin)?;
        let payload = key.read_payload(source, MAX_DIRECTORY_OBJECT_LEN)?;
        let mut c = Cursor::new(&payload, key.payload_offset()?, "top directory");
        read_tstring(&mut c)?; // TNamed name
        read_tstring(&mut c)?; // TNamed title
        Directory::parse(&mut c)
    }

    /// Reads the subdirectory held by `key` (a TDirectory key of a key list).
    pub fn read_sub(source: &dyn ReadAt, key: &Key) -> Result<Directory> {
        let on_disk = Key::read(source, key.seek_key)?;
        if !on_disk.is_directory() || on_disk.name != key.name {
            return Err(Error::malformed(
                "key",
                key.seek_key,
                format!(
                    "key holds {} '{}' where the key list names directory '{}'",
                    on_disk.class_name, on_disk.name, key.name
                ),
            ));
        }
        let payload = on_disk.read_payload(source, MAX_DIRECTORY_OBJECT_LEN)?;
        Directory::parse(&mut Cursor::new(
            &payload,
            on_disk.payload_offset()?,
            "directory",
        ))
    }

    /// Reads the key list of this directory, in file order. A directory
    /// without a key list (SeekKeys 0) has no keys.
    pub fn read_keys(&self, source: &dyn ReadAt) -> Result<Vec<Key>> {
        if self.seek_keys == 0 {
            return Ok(Vec::new());
        }
        let data = read_checked(
            source,
            "key list",
            self.seek_keys,
            u64::from(self.nbytes_keys),
        )?;
        let mut c = Cursor::new(&data, self.seek_keys, "key list");
        let header = parse_key(&mut c)?;
        c.seek(usize::from(header.key_len))?;
        let count_offset = c.offset();
        let n_keys = c.i32_be()?;
        let n_keys = usize::try_from(n_keys).map_err(|_| {
            Error::malformed(
                "key list",
                count_offset,
                format!("negative key count {n_keys}"),
            )
        })?;
        if n_keys > c.remaining() / MIN_KEY_LEN {
            return Err(Error::malformed(
                "key list",
                count_offset,
                format!(
                    "{n_keys} keys cannot fit in the {} bytes left",
                    c.remaining()
                ),
            ));
        }
        let mut keys = Vec::with_capacity(n_keys);
        for _ in 0..n_keys {
            let start = c.position();
            let key = parse_key(&mut c)?;
            c.seek(start + usize::from(key.key_len))?;
            keys.push(key);
        }
        Ok(keys)
    }
}

/// A key found while walking the directory tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryEntry {
    /// Path of the directory holding the key, "/"-separated, "" for the top.
    pub directory: String,
    /// The key, as listed in the directory's key list.
    pub key: Key,
}

impl DirectoryEntry {
    /// The "/"-separated path of the object: directory path and key name.
    pub fn path(&self) -> String {
        join(&self.directory, &self.key.name)
    }
}

/// Walks the directory tree from `top` and lists every key that is not a
/// directory, keeping only the highest cycle of each class and name in each
/// directory. Keys of a directory come before those of its subdirectories.
///
/// A directory reached twice (a loop through itself or an ancestor, or two
/// directories sharing a record or key list) and nesting deeper than
/// [`MAX_DIRECTORY_DEPTH`] give [`Error::Malformed`].
pub fn walk(source: &dyn ReadAt, top: &Directory) -> Result<Vec<DirectoryEntry>> {
    let mut walker = Walker {
        source,
        records: HashSet::new(),
        key_lists: HashSet::new(),
        entries: Vec::new(),
    };
    walker.visit(top, "", 0)?;
    Ok(walker.entries)
}

struct Walker<'a> {
    source: &'a dyn ReadAt,
    records: HashSet<u64>,
    key_lists: HashSet<u64>,
    entries: Vec<DirectoryEntry>,
}

impl Walker<'_> {
    fn visit(&mut self, dir: &Directory, path: &str, depth: usize) -> Result<()> {
        if depth > MAX_DIRECTORY_DEPTH {
            return Err(Error::malformed(
                "directory",
                dir.offset,
                format!("directories nested deeper than {MAX_DIRECTORY_DEPTH}"),
            ));
        }
        if !self.records.insert(dir.offset) {
            return Err(Error::malformed(
                "directory",
                dir.offset,
                "directory loop: record reached twice",
            ));
        }
        if dir.seek_keys != 0 && !self.key_lists.insert(dir.seek_keys) {
            return Err(Error::malformed(
                "directory",
                dir.offset,
                "directory loop: key list reached twice",
            ));
        }
        let keys = dir.read_keys(self.source).with_context(|| describe(path))?;
        let mut subdirs = Vec::new();
        for key in highest_cycles(keys) {
            if key.is_directory() {
                subdirs.push(key);
            } else {
                self.entries.push(DirectoryEntry {
                    directory: path.to_string(),
                    key,
                });
            }
        }
        for key in subdirs {
            let sub_path = join(path, &key.name);
            let sub =
                Directory::read_sub(self.source, &key).with_context(|| describe(&sub_path))?;
            self.visit(&sub, &sub_path, depth + 1)?;
        }
        Ok(())
    }
}

/// Keeps, for each class and name, the key with the highest cycle, in the
/// order of the key list.
fn highest_cycles(keys: Vec<Key>) -> Vec<Key> {
    let mut best: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, key) in keys.iter().enumerate() {
        let slot = best
            .entry((key.class_name.as_str(), key.name.as_str()))
            .or_insert(i);
        if keys.get(*slot).is_some_and(|k| k.cycle < key.cycle) {
            *slot = i;
        }
    }
    let mut keep: Vec<usize> = best.into_values().collect();
    keep.sort_unstable();
    let mut keep = keep.into_iter().peekable();
    keys.into_iter()
        .enumerate()
        .filter_map(|(i, key)| keep.next_if_eq(&i).map(|_| key))
        .collect()
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn describe(path: &str) -> String {
    if path.is_empty() {
        "top directory".to_string()
    } else {
        format!("directory '{path}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::fixture::{self, FileBuilder};
    use bytes::Bytes;

    #[test]
    fn parses_a_64bit_record() {
        let data = fixture::directory_record(true, 0x70, 0x3b, 100, 0, 0x1_0000_2000);
        let dir = Directory::parse(&mut Cursor::new(&data, 158, "directory")).unwrap();
        assert!(dir.is_64bit());
        assert_eq!(dir.offset, 158);
        assert_eq!(dir.version, 1005);
        assert_eq!((dir.nbytes_keys, dir.nbytes_name), (0x70, 0x3b));
        assert_eq!(
            (dir.seek_dir, dir.seek_parent, dir.seek_keys),
            (100, 0, 0x1_0000_2000)
        );
    }

    #[test]
    fn highest_cycle_wins() {
        let key = |class: &str, name: &str, cycle| {
            let data = fixture::key_bytes(false, 100, 100, class, name, "", 1, 1, cycle);
            parse_key(&mut Cursor::new(&data, 0, "key")).unwrap()
        };
        let keys = vec![
            key("ROOT::RNTuple", "a", 2),
            key("ROOT::RNTuple", "b", 1),
            key("ROOT::RNTuple", "a", 3),
            key("TNamed", "a", 9),
            key("ROOT::RNTuple", "a", 1),
        ];
        let kept: Vec<_> = highest_cycles(keys)
            .into_iter()
            .map(|k| (k.name, k.cycle))
            .collect();
        assert_eq!(
            kept,
            [
                ("b".to_string(), 1),
                ("a".to_string(), 3),
                ("a".to_string(), 9)
            ]
        );
    }

    #[test]
    fn walks_nested_directories() {
        let mut b = FileBuilder::new(false);
        let top = b.top();
        let a = b.anchor("nt", &top, 1);
        let dir = b.directory("dir", &top);
        let inner = b.anchor("inner", &dir, 1);
        b.key_list(&dir, &[inner]);
        b.key_list(&top, &[a, dir.key.clone()]);
        let file = b.finish();
        let source = Bytes::from(file);
        let header = FileHeader::read(&source).unwrap();
        let top = Directory::read_top(&source, &header).unwrap();
        let paths: Vec<_> = walk(&source, &top)
            .unwrap()
            .iter()
            .map(DirectoryEntry::path)
            .collect();
        assert_eq!(paths, ["nt", "dir/inner"]);
    }

    #[test]
    fn a_directory_listing_itself_is_an_error() {
        // dir's key list holds the key of dir itself.
        let mut b = FileBuilder::new(false);
        let top = b.top();
        let dir = b.directory("dir", &top);
        b.key_list(&dir, std::slice::from_ref(&dir.key));
        b.key_list(&top, std::slice::from_ref(&dir.key));
        let source = Bytes::from(b.finish());
        let header = FileHeader::read(&source).unwrap();
        let top = Directory::read_top(&source, &header).unwrap();
        let err = walk(&source, &top).unwrap_err();
        assert!(
            matches!(
                err.root_cause(),
                Error::Malformed {
                    what: "directory",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_key_list_pointing_at_an_ancestor_is_an_error() {
        // sub's record names the top directory's key list.
        let mut b = FileBuilder::new(true);
        let top = b.top();
        let dir = b.directory("dir", &top);
        let top_list = b.key_list(&top, std::slice::from_ref(&dir.key));
        b.patch_directory(&dir, top_list);
        let source = Bytes::from(b.finish());
        let header = FileHeader::read(&source).unwrap();
        let top = Directory::read_top(&source, &header).unwrap();
        let err = walk(&source, &top).unwrap_err();
        assert!(
            matches!(
                err.root_cause(),
                Error::Malformed {
                    what: "directory",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut b = FileBuilder::new(false);
        let top = b.top();
        let mut parent = top.clone();
        let mut dirs = Vec::new();
        for i in 0..=MAX_DIRECTORY_DEPTH {
            let dir = b.directory(&format!("d{i}"), &parent);
            dirs.push((parent.clone(), dir.clone()));
            parent = dir;
        }
        for (parent, dir) in dirs {
            b.key_list(&parent, std::slice::from_ref(&dir.key));
        }
        let source = Bytes::from(b.finish());
        let header = FileHeader::read(&source).unwrap();
        let top = Directory::read_top(&source, &header).unwrap();
        let err = walk(&source, &top).unwrap_err();
        assert!(matches!(err.root_cause(), Error::Malformed { .. }), "{err}");
    }

    #[test]
    fn huge_key_count_is_refused_before_allocating() {
        let mut b = FileBuilder::new(false);
        let top = b.top();
        let list = b.key_list(&top, &[]);
        let mut file = b.finish();
        // The key count follows the 26 + 1 + 7 + 1 bytes of the header key.
        let at = usize::try_from(list.0).unwrap() + 35;
        file[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        let source = Bytes::from(file);
        let header = FileHeader::read(&source).unwrap();
        let top = Directory::read_top(&source, &header).unwrap();
        let err = top.read_keys(&source).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Malformed {
                    what: "key list",
                    ..
                }
            ),
            "{err}"
        );
    }
}
