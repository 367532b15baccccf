//! Positioned reads from a file, a memory map or a byte buffer.
//!
//! ```text
//!  ReadAt::read_at(offset, len) -> Bytes
//!     ├── FileReader      pread(2) on a std::fs::File
//!     ├── MmapReader      slices of a memory-mapped file (zero copy)
//!     └── Bytes           an in-memory file (zero copy)
//! ```
//!
//! Every read is checked against [`ReadAt::len`], so a locator that points
//! past the end of the file gives [`Error::UnexpectedEof`] with its offset.

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

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};

/// A source of bytes that can be read at any offset, from any thread.
pub trait ReadAt: Send + Sync + std::fmt::Debug {
    /// Total length of the source in bytes.
    fn len(&self) -> u64;

    /// Whether the source is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads exactly `len` bytes at `offset`. Implementations may assume the
    /// range lies within the source: [`read_checked`] checks it first.
    fn read_range(&self, offset: u64, len: usize) -> Result<Bytes>;

    /// Like [`ReadAt::read_range`], but a source that has to copy (a file)
    /// copies into `buffer`, which the caller keeps for its next read,
    /// instead of into a new allocation. Sources that hold the bytes already
    /// share them, as `read_range` does.
    fn read_range_reusing<'a>(
        &self,
        offset: u64,
        len: usize,
        buffer: &'a mut Vec<u8>,
    ) -> Result<ReadBytes<'a>> {
        let _ = buffer;
        Ok(ReadBytes::Shared(self.read_range(offset, len)?))
    }

    /// Whether [`ReadAt::prefetch`] does anything: true for a source whose
    /// reads wait for a network (an object store), which readers then tell
    /// what they will read next.
    fn prefetches(&self) -> bool {
        false
    }

    /// A hint that `ranges` will be read soon, each at about its
    /// [`at`](PrefetchRange::at): a source that
    /// [prefetches](ReadAt::prefetches) starts fetching them, those needed
    /// first first, so the reads find them held or on their way. A read may
    /// name its pages in rounds (those known at once, then those that the
    /// bytes of the first place): a call that repeats a range of the call
    /// before belongs to the same read.
    fn prefetch(&self, ranges: &[PrefetchRange]) {
        let _ = ranges;
    }
}

/// A byte range that a read will need, for [`ReadAt::prefetch`].
#[derive(Debug, Clone, PartialEq)]
pub struct PrefetchRange {
    pub range: Range<u64>,
    /// How far into the read the range is first needed: from 0, at its
    /// start, to 1, at its end. A source that holds little at a time
    /// fetches in this order.
    pub at: f32,
}

impl PrefetchRange {
    /// A range needed at the start of the read.
    pub fn at_once(range: Range<u64>) -> Self {
        Self { range, at: 0.0 }
    }
}

/// Bytes from [`ReadAt::read_range_reusing`]: shared with the source, or in
/// the caller's buffer.
#[derive(Debug)]
pub enum ReadBytes<'a> {
    Shared(Bytes),
    Buffer(&'a [u8]),
}

impl std::ops::Deref for ReadBytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ReadBytes::Shared(bytes) => bytes,
            ReadBytes::Buffer(slice) => slice,
        }
    }
}

/// Reads `len` bytes at `offset`, or fails with [`Error::UnexpectedEof`]
/// naming `what` when the range goes past the end of `source`.
pub fn read_checked(
    source: &dyn ReadAt,
    what: &'static str,
    offset: u64,
    len: u64,
) -> Result<Bytes> {
    let len = check_range(source, what, offset, len)?;
    source.read_range(offset, len)
}

/// [`read_checked`] through [`ReadAt::read_range_reusing`].
pub fn read_checked_reusing<'a>(
    source: &dyn ReadAt,
    what: &'static str,
    offset: u64,
    len: u64,
    buffer: &'a mut Vec<u8>,
) -> Result<ReadBytes<'a>> {
    let len = check_range(source, what, offset, len)?;
    source.read_range_reusing(offset, len, buffer)
}

/// `len` as a `usize` if `offset..offset + len` lies within `source`.
fn check_range(source: &dyn ReadAt, what: &'static str, offset: u64, len: u64) -> Result<usize> {
    let size = source.len();
    match offset.checked_add(len) {
        Some(end) if end <= size => usize::try_from(len)
            .map_err(|_| Error::malformed(what, offset, "length does not fit in memory")),
        _ => Err(Error::UnexpectedEof {
            what,
            offset,
            needed: len,
            available: size.saturating_sub(offset),
        }),
    }
}

impl ReadAt for Bytes {
    fn len(&self) -> u64 {
        Bytes::len(self) as u64
    }

    fn read_range(&self, offset: u64, len: usize) -> Result<Bytes> {
        let start = usize::try_from(offset)
            .map_err(|_| Error::malformed("read", offset, "offset too large"))?;
        let end = start
            .checked_add(len)
            .filter(|&end| end <= Bytes::len(self))
            .ok_or(Error::UnexpectedEof {
                what: "read",
                offset,
                needed: len as u64,
                available: (Bytes::len(self) as u64).saturating_sub(offset),
            })?;
        Ok(self.slice(start..end))
    }
}

/// A local file read with positioned reads (`pread`).
#[derive(Debug)]
pub struct FileReader {
    file: File,
    len: u64,
}

impl FileReader {
    /// Opens the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let file = File::open(path.as_ref())?;
        let len = file.metadata()?.len();
        Ok(Self { file, len })
    }
}

impl ReadAt for FileReader {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_range(&self, offset: u64, len: usize) -> Result<Bytes> {
        let mut buf = vec![0u8; len];
        read_exact_at(&self.file, &mut buf, offset)?;
        Ok(Bytes::from(buf))
    }

    fn read_range_reusing<'a>(
        &self,
        offset: u64,
        len: usize,
        buffer: &'a mut Vec<u8>,
    ) -> Result<ReadBytes<'a>> {
        // The buffer only grows, so a reused one is not cleared again.
        if buffer.len() < len {
            buffer.resize(len, 0);
        }
        let dst = buffer
            .get_mut(..len)
            .ok_or_else(|| Error::malformed("read", offset, "buffer shorter than the read"))?;
        read_exact_at(&self.file, dst, offset)?;
        Ok(ReadBytes::Buffer(dst))
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        let n = file.seek_read(buf, offset)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// A memory-mapped local file: reads are slices of the map, without copies.
#[derive(Debug, Clone)]
pub struct MmapReader {
    map: Bytes,
}

impl MmapReader {
    /// Maps the file at `path` into memory.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let file = File::open(path.as_ref())?;
        // SAFETY: the map is read-only. As with every memory map, a file that
        // another process truncates while it is mapped makes reads fault; this
        // is the documented trade-off of `memmap2` and the reason
        // `RNTupleFile::open` falls back to `FileReader` where mapping fails.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Self {
            map: Bytes::from_owner(map),
        })
    }
}

impl ReadAt for MmapReader {
    fn len(&self) -> u64 {
        self.map.len() as u64
    }

    fn read_range(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.map.read_range(offset, len)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for Arc<T> {
    fn len(&self) -> u64 {
        (**self).len()
    }

    fn read_range(&self, offset: u64, len: usize) -> Result<Bytes> {
        (**self).read_range(offset, len)
    }

    fn read_range_reusing<'a>(
        &self,
        offset: u64,
        len: usize,
        buffer: &'a mut Vec<u8>,
    ) -> Result<ReadBytes<'a>> {
        (**self).read_range_reusing(offset, len, buffer)
    }

    fn prefetches(&self) -> bool {
        (**self).prefetches()
    }

    fn prefetch(&self, ranges: &[PrefetchRange]) {
        (**self).prefetch(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads into a reused buffer give the same bytes as plain reads, for
    /// files (which copy into the buffer) and in-memory sources (which share).
    #[test]
    fn reusing_reads_equal_plain_reads() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.bin");
        std::fs::write(&path, &data).unwrap();
        let file = FileReader::open(&path).unwrap();
        let memory = Bytes::from(data.clone());
        let sources: [&dyn ReadAt; 2] = [&file, &memory];
        for source in sources {
            let mut buffer = Vec::new();
            // A long read, then shorter and longer ones through the same buffer.
            for (offset, len) in [(100u64, 5000u64), (7, 10), (0, 10_000), (9_990, 10), (3, 0)] {
                let expected = read_checked(source, "test", offset, len).unwrap();
                let got = read_checked_reusing(source, "test", offset, len, &mut buffer).unwrap();
                assert_eq!(&*got, &expected[..], "{source:?} at {offset} len {len}");
            }
            let past_end = read_checked_reusing(source, "test", 9_995, 10, &mut buffer);
            assert!(matches!(
                past_end,
                Err(Error::UnexpectedEof { offset: 9_995, .. })
            ));
        }
    }
}
