//! A file of an object store read with blocking positioned reads, for code
//! that is not async: the reader of [`RNTupleFile`] and the `rntuple`
//! command's `ls`, `schema`, `info`, `cat` and `export`.
//!
//! ```text
//!  read_range(offset, len)
//!     ├── inside a prefetched chunk ─> waits for it, sliced (prefetch.rs)
//!     ├── len >= BLOCK (2 MiB) ─────> one ranged GET of exactly the range
//!     └── else: the BLOCK-aligned blocks it touches (one or two)
//!            ├── held ───────────────> sliced (or the two joined)
//!            └── missing ─> one get_ranges call ─> held, up to HELD_BLOCKS,
//!                                                  the least recently used dropped
//! ```
//!
//! Reads come first to the ranges readers said they would read
//! ([`ReadAt::prefetch`]): a batch reader names the pages of each cluster
//! as it starts it, and those of the next, fetched in chunks of up to
//! 8 MiB in the order the read needs them, 8 requests at once and up to
//! 64 MiB held (prefetch.rs). Other reads (metadata, pages
//! read again) take the blocks: a reader decompresses the pages of a
//! column one after another, and they lie next to each other, so a 2 MiB
//! block makes one request of a few pages, as a local file's readahead
//! would. SQL scans do not come here: they fetch each cluster's pages in
//! one `get_ranges` call (store.rs).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use tokio::runtime::Runtime;

use super::prefetch::Prefetcher;
use crate::error::{Error, Result};
use crate::io::{PrefetchRange, ReadAt};
use crate::reader::RNTupleFile;

/// The unit of fetching for reads shorter than it.
const BLOCK: u64 = 2 << 20;
/// Blocks held for later reads: 32 MiB.
const HELD_BLOCKS: usize = 16;

/// A file of an object store, read through [`ReadAt`]: each read waits for
/// the store. Ranges announced with [`ReadAt::prefetch`] are fetched ahead
/// of their reads. Other reads of less than 2 MiB fetch the 2 MiB blocks
/// around them and keep the last 16 for the reads that follow.
pub struct ObjectStoreReader {
    store: Arc<dyn ObjectStore>,
    location: Path,
    len: u64,
    /// Where the requests run; `None` only while dropping.
    runtime: Option<Runtime>,
    /// The size of blocks: [`BLOCK`], or less in tests.
    block: u64,
    /// Held blocks, the most recently used last: (block index, bytes).
    blocks: Mutex<VecDeque<(u64, Bytes)>>,
    /// Ranges fetched ahead of their reads.
    prefetcher: Arc<Prefetcher>,
}

impl fmt::Debug for ObjectStoreReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStoreReader")
            .field("store", &self.store.to_string())
            .field("location", &self.location.as_ref())
            .field("len", &self.len)
            .finish()
    }
}

impl ObjectStoreReader {
    /// Opens `location` in `store`. Its first block is fetched at once,
    /// which also tells the object's size (a store that does not answer a
    /// ranged request is asked for the size alone). The requests run on a
    /// runtime of the reader's own, so reads may come from any thread,
    /// inside an async runtime or not.
    pub fn open(store: Arc<dyn ObjectStore>, location: Path) -> Result<Self> {
        Self::with_block(store, location, BLOCK)
    }

    fn with_block(store: Arc<dyn ObjectStore>, location: Path, block: u64) -> Result<Self> {
        let block = block.max(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rntuple-fetch")
            .enable_all()
            .build()?;
        let opened = {
            let (store, location) = (store.clone(), location.clone());
            wait(&runtime, async move {
                first_block(&store, &location, block).await
            })
        };
        let (len, first) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                // As in `drop`: this may run inside async code.
                runtime.shutdown_background();
                return Err(e);
            }
        };
        let prefetcher = Prefetcher::new(
            store.clone(),
            location.clone(),
            len,
            runtime.handle().clone(),
        );
        Ok(Self {
            store,
            location,
            len,
            runtime: Some(runtime),
            block,
            blocks: Mutex::new(first.map(|bytes| (0, bytes)).into_iter().collect()),
            prefetcher: Arc::new(prefetcher),
        })
    }

    /// The blocks `first..=last`, from those held or fetched in one call.
    fn blocks(&self, first: u64, last: u64) -> Result<Vec<Bytes>> {
        let mut found: Vec<Option<Bytes>> = Vec::new();
        {
            let mut held = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
            for index in first..=last {
                let at = held.iter().position(|(i, _)| *i == index);
                found.push(at.and_then(|at| {
                    // Used again: it goes to the back.
                    let block = held.remove(at)?;
                    let bytes = block.1.clone();
                    held.push_back(block);
                    Some(bytes)
                }));
            }
        }
        let missing: Vec<u64> = (first..=last)
            .zip(&found)
            .filter(|(_, b)| b.is_none())
            .map(|(i, _)| i)
            .collect();
        if missing.is_empty() {
            return Ok(found.into_iter().flatten().collect());
        }
        let ranges: Vec<_> = missing
            .iter()
            .map(|&i| i * self.block..((i + 1) * self.block).min(self.len))
            .collect();
        let fetched = {
            let (store, location) = (self.store.clone(), self.location.clone());
            self.wait(async move { store.get_ranges(&location, &ranges).await })?
        };
        let mut fetched = missing.iter().copied().zip(fetched);
        let mut held = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::with_capacity(found.len());
        for block in found {
            let bytes = match block {
                Some(bytes) => bytes,
                None => {
                    let (index, bytes) = fetched.next().ok_or_else(|| {
                        Error::malformed("read", first * self.block, "a block was not fetched")
                    })?;
                    held.push_back((index, bytes.clone()));
                    bytes
                }
            };
            out.push(bytes);
        }
        while held.len() > HELD_BLOCKS {
            held.pop_front();
        }
        Ok(out)
    }

    /// Runs `fetch` on the reader's runtime and waits for it.
    fn wait<T: Send + 'static>(
        &self,
        fetch: impl std::future::Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> Result<T> {
        match &self.runtime {
            Some(runtime) => wait(runtime, fetch),
            None => Err(Error::Io(std::io::Error::other("the reader is closed"))),
        }
    }
}

impl Drop for ObjectStoreReader {
    fn drop(&mut self) {
        // Without waiting for its threads: a reader may be dropped inside
        // async code, where a runtime must not block.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl ReadAt for ObjectStoreReader {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_range(&self, offset: u64, len: usize) -> Result<Bytes> {
        let end = offset.saturating_add(len as u64);
        if len == 0 {
            return Ok(Bytes::new());
        }
        if let Some(read) = self.prefetcher.read(offset, len) {
            return read;
        }
        let short = || Error::UnexpectedEof {
            what: "read",
            offset,
            needed: len as u64,
            available: self.len.saturating_sub(offset),
        };
        if len as u64 >= self.block {
            let (store, location) = (self.store.clone(), self.location.clone());
            let bytes = self.wait(async move { store.get_range(&location, offset..end).await })?;
            // A store that answers with fewer bytes: as a file that ends early.
            return if bytes.len() == len {
                Ok(bytes)
            } else {
                Err(short())
            };
        }
        let (first, last) = (offset / self.block, (end - 1) / self.block);
        let blocks = self.blocks(first, last)?;
        let from = (offset - first * self.block) as usize;
        if let [block] = blocks.as_slice() {
            return block
                .get(from..from + len)
                .map(|_| block.slice(from..from + len))
                .ok_or_else(short);
        }
        // Two blocks: the end of the first and the start of the second.
        let mut joined = BytesMut::with_capacity(len);
        for (k, block) in blocks.iter().enumerate() {
            let start = if k == 0 { from } else { 0 };
            let take = (len - joined.len()).min(block.len().saturating_sub(start));
            joined.extend_from_slice(block.get(start..start + take).ok_or_else(short)?);
        }
        if joined.len() != len {
            return Err(short());
        }
        Ok(joined.freeze())
    }

    fn prefetches(&self) -> bool {
        true
    }

    /// Starts fetching `ranges`, but those whose blocks are held (a small
    /// file is held whole once its metadata is read).
    fn prefetch(&self, ranges: &[PrefetchRange]) {
        let held: Vec<u64> = {
            let blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
            blocks.iter().map(|(index, _)| *index).collect()
        };
        let block = self.block;
        let missing: Vec<PrefetchRange> = ranges
            .iter()
            .filter(|PrefetchRange { range: r, .. }| {
                r.start < r.end
                    && (r.end - r.start >= block
                        || !(r.start / block..=(r.end - 1) / block).all(|i| held.contains(&i)))
            })
            .cloned()
            .collect();
        self.prefetcher.prefetch(&missing);
    }
}

/// The size of the object and its first block, from one ranged GET: every
/// read of a ROOT file starts there. A store that refuses the range (an
/// empty object, a server without ranges) is asked for the size alone, and
/// the block is left to the first read; a missing object is an error at
/// once.
async fn first_block(
    store: &Arc<dyn ObjectStore>,
    location: &Path,
    block: u64,
) -> object_store::Result<(u64, Option<Bytes>)> {
    let options = GetOptions {
        range: Some(GetRange::Bounded(0..block)),
        ..GetOptions::default()
    };
    let fetched = match store.get_opts(location, options).await {
        Ok(result) => {
            let (len, range) = (result.meta.size, result.range.clone());
            result.bytes().await.map(|bytes| (len, range, bytes))
        }
        Err(e) => Err(e),
    };
    match fetched {
        Ok((len, range, bytes))
            if range == (0..block.min(len)) && bytes.len() as u64 == range.end =>
        {
            Ok((len, Some(bytes)))
        }
        Err(e @ object_store::Error::NotFound { .. }) => Err(e),
        _ => Ok((store.head(location).await?.size, None)),
    }
}

/// Runs `fetch` on `runtime` and waits for it on this thread (which may
/// be a thread of another runtime: it blocks, but does not panic).
fn wait<T: Send + 'static>(
    runtime: &Runtime,
    fetch: impl std::future::Future<Output = object_store::Result<T>> + Send + 'static,
) -> Result<T> {
    let task = runtime.spawn(fetch);
    match futures::executor::block_on(task) {
        Ok(result) => result.map_err(|e| Error::Io(std::io::Error::other(e))),
        Err(e) => Err(Error::Io(std::io::Error::other(e))),
    }
}

impl RNTupleFile {
    /// Opens the file at `location` in `store`, read with blocking requests
    /// through an [`ObjectStoreReader`]. For SQL over object stores, register
    /// the files as a table instead: scans fetch each cluster's pages at once.
    pub fn open_object(store: Arc<dyn ObjectStore>, location: Path) -> Result<Self> {
        Self::from_source(Arc::new(ObjectStoreReader::open(store, location)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::RNTupleReaderBuilder;
    use object_store::memory::InMemory;
    use object_store::PutPayload;

    /// A store holding `bytes` at `x.root`.
    fn held(bytes: &[u8]) -> (Arc<dyn ObjectStore>, Path) {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("x.root");
        let payload = PutPayload::from(bytes.to_vec());
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(store.put(&path, payload)).unwrap();
        (store, path)
    }

    #[test]
    fn reads_across_blocks_and_past_the_end() {
        let len = 2 * BLOCK as usize + 1000;
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let (store, path) = held(&bytes);
        let reader = ObjectStoreReader::open(store, path).unwrap();
        assert_eq!(reader.len(), len as u64);
        let cases = [
            (0, 10),
            (BLOCK - 5, 10),
            (2 * BLOCK - 1, 1001),
            (3, BLOCK as usize + 10),
            (BLOCK, 0),
        ];
        for (offset, n) in cases {
            let got = reader.read_range(offset, n).unwrap();
            assert_eq!(
                &got[..],
                &bytes[offset as usize..offset as usize + n],
                "{offset} {n}"
            );
        }
        assert!(crate::io::read_checked(&reader, "read", len as u64 - 1, 2).is_err());
        assert!(reader.blocks.lock().unwrap().len() <= HELD_BLOCKS);
    }

    /// The first block comes with the size; an object too small for a
    /// range (empty) is sized by a HEAD instead, and reads as empty.
    #[test]
    fn the_first_block_tells_the_size() {
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let (store, path) = held(&bytes);
        let reader = ObjectStoreReader::with_block(store, path, 4096).unwrap();
        assert_eq!(reader.len(), 5000);
        let blocks: Vec<u64> = reader.blocks.lock().unwrap().iter().map(|b| b.0).collect();
        assert_eq!(blocks, [0]);
        assert_eq!(&reader.read_range(10, 20).unwrap()[..], &bytes[10..30]);

        let (store, path) = held(&[]);
        let reader = ObjectStoreReader::open(store, path).unwrap();
        assert_eq!(reader.len(), 0);
        assert!(reader.blocks.lock().unwrap().is_empty());
        assert!(crate::io::read_checked(&reader, "read", 0, 1).is_err());
    }

    /// Read and dropped on a thread of an async runtime: it blocks that
    /// thread while it waits, and does not panic.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_and_drops_inside_async_code() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("x.root");
        store
            .put(&path, PutPayload::from(bytes.clone()))
            .await
            .unwrap();
        let reader = ObjectStoreReader::open(store, path).unwrap();
        assert_eq!(
            &reader.read_range(99_990, 10).unwrap()[..],
            &bytes[99_990..]
        );
        drop(reader);
    }

    /// A missing object is an error, also inside async code (where the
    /// reader's runtime must not be dropped by waiting for it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_object_is_an_error_inside_async_code() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let e = ObjectStoreReader::open(store, Path::from("nowhere.root")).unwrap_err();
        assert!(e.to_string().contains("nowhere.root"), "{e}");
    }

    /// Reads of a file of 12 clusters through blocks of 4 KiB: its pages
    /// come from prefetched chunks, and batches equal the local file's,
    /// for whole clusters, part of the entries (collections cut at both
    /// ends) and clusters decoded three at a time (more than the prefetcher
    /// keeps).
    #[test]
    fn reads_of_prefetched_clusters_equal_the_local_file() -> Result<()> {
        let Some(path) = crate::test_util::fixture("adl/nanoaod_clusters.root") else {
            return Ok(());
        };
        let bytes = std::fs::read(&path)?;
        let local = RNTupleFile::open(&path)?;
        let reads: [&dyn Fn(RNTupleReaderBuilder) -> Result<RNTupleReaderBuilder>; 3] = [
            &|b| Ok(b),
            &|b| {
                Ok(b.with_projection(["Jet_pt", "Muon_pt", "nJet", "MET_pt"])?
                    .with_entry_range(1000..3500)
                    .with_batch_size(300))
            },
            &|b| Ok(b.with_clusters_in_flight(3)),
        ];
        for (k, read) in reads.iter().enumerate() {
            let (store, location) = held(&bytes);
            let reader = Arc::new(ObjectStoreReader::with_block(store, location, 4096)?);
            let remote = RNTupleFile::from_source(reader.clone())?;
            let batches = read(remote.reader_builder(None)?)?.build()?;
            let stats = batches.read_stats();
            let got = batches.collect_batches()?;
            let expected = read(local.reader_builder(None)?)?
                .build()?
                .collect_batches()?;
            assert_eq!(got, expected, "read {k}");
            // Most pages: a few lie in the blocks read for the metadata,
            // and with three clusters in flight some chunks are dropped
            // before their reads.
            let (served, pages) = (reader.prefetcher.reads_served(), stats.pages());
            let least = if k == 2 { 1 } else { pages * 3 / 4 };
            assert!(
                served >= least,
                "read {k}: {served} of {pages} pages prefetched"
            );
        }
        Ok(())
    }

    #[test]
    fn a_fixture_opens_and_reads_as_the_local_file() -> Result<()> {
        let Some(path) = crate::test_util::fixture("adl/nanoaod_events.root") else {
            return Ok(());
        };
        let bytes = std::fs::read(&path)?;
        let (store, location) = held(&bytes);
        let remote = RNTupleFile::open_object(store, location)?.reader_builder(None)?;
        let local = RNTupleFile::open(&path)?.reader_builder(None)?;
        assert_eq!(
            remote.build()?.collect_batches()?,
            local.build()?.collect_batches()?
        );
        Ok(())
    }
}
