//! Reading RNTuples from any [`ObjectStore`] without blocking async code.
//!
//! ```text
//!  ObjectStore ──get_ranges──> SparseSource (fetched byte ranges, in memory)
//!                                   │  ReadAt: serves reads inside fetched ranges,
//!                                   │  records every read outside them as a miss
//!                                   ▼
//!  load_ntuple:  fetch head + tail ─> try to open (file, anchor, header, footer,
//!                page lists) ─> misses? fetch them, try again ─> NTupleMeta
//!  fetch_cluster: page byte ranges of the projected columns of one cluster,
//!                 coalesced, one get_ranges call ─> ClusterLease (dropped after decoding)
//! ```
//!
//! The reader itself is synchronous: it only ever sees the in-memory
//! [`SparseSource`], so nothing waits on the network inside a decode. The
//! exception is the local file system, where nothing is remote: once the
//! metadata and the pages are read from the file where they are needed,
//! with no copy of a cluster's pages in memory.
//! Opening is a deterministic function of the bytes, so repeating it with
//! the missed ranges fetched converges within a few rounds (header, keys
//! list, anchor, envelopes, page lists).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use arrow_schema::SchemaRef;
use bytes::Bytes;
use datafusion::common::{DataFusionError, Result as DfResult};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};

use super::RNTupleReadOptions;
use crate::arrow::SkippedField;
use crate::descriptor::ClusterDescriptor;
use crate::error::{Error, Result};
use crate::io::{FileReader, ReadAt};
use crate::reader::{RNTuple, RNTupleFile, SchemaCache};

/// Bytes fetched from the start and from the end of a larger file.
const HEAD: u64 = 256 << 10;
const TAIL: u64 = 1 << 20;
/// A missed read is widened to at least this many bytes.
const MIN_FETCH: u64 = 256 << 10;
/// Gaps up to this size between two page ranges are fetched with them.
const COALESCE_GAP: u64 = 64 << 10;
/// Rounds of "open, fetch what was missed" before giving up.
const MAX_ROUNDS: usize = 32;

/// Byte ranges of one object held in memory, read through [`ReadAt`].
pub(crate) struct SparseSource {
    len: u64,
    next_id: AtomicU64,
    /// (start, id) -> bytes; the id lets equal starts coexist.
    segments: RwLock<BTreeMap<(u64, u64), Bytes>>,
    misses: Mutex<Vec<Range<u64>>>,
}

impl fmt::Debug for SparseSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.segments.read().map(|s| s.len()).unwrap_or(0);
        f.debug_struct("SparseSource")
            .field("len", &self.len)
            .field("segments", &n)
            .finish()
    }
}

impl SparseSource {
    pub(crate) fn new(len: u64) -> Self {
        Self {
            len,
            next_id: AtomicU64::new(0),
            segments: RwLock::new(BTreeMap::new()),
            misses: Mutex::new(Vec::new()),
        }
    }

    /// Adds fetched ranges; returns their keys.
    fn insert(&self, ranges: &[Range<u64>], data: Vec<Bytes>) -> Vec<(u64, u64)> {
        let mut keys = Vec::with_capacity(ranges.len());
        if let Ok(mut segments) = self.segments.write() {
            for (range, bytes) in ranges.iter().zip(data) {
                let key = (range.start, self.next_id.fetch_add(1, Ordering::Relaxed));
                segments.insert(key, bytes);
                keys.push(key);
            }
        }
        keys
    }

    fn remove(&self, keys: &[(u64, u64)]) {
        if let Ok(mut segments) = self.segments.write() {
            for key in keys {
                segments.remove(key);
            }
        }
    }

    fn clear(&self) {
        if let Ok(mut segments) = self.segments.write() {
            segments.clear();
        }
    }

    /// The ranges read but not held since the last call.
    fn take_misses(&self) -> Vec<Range<u64>> {
        self.misses
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default()
    }

    fn held_bytes(&self) -> u64 {
        self.segments
            .read()
            .map(|s| s.values().map(|b| b.len() as u64).sum())
            .unwrap_or(0)
    }
}

impl ReadAt for SparseSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_range(&self, offset: u64, len: usize) -> Result<Bytes> {
        let end = offset.saturating_add(len as u64);
        if let Ok(segments) = self.segments.read() {
            for (&(start, _), bytes) in segments.range(..=(offset, u64::MAX)).rev() {
                let seg_end = start + bytes.len() as u64;
                if start <= offset && end <= seg_end {
                    let from = (offset - start) as usize;
                    return Ok(bytes.slice(from..from + len));
                }
            }
        }
        if let Ok(mut misses) = self.misses.lock() {
            misses.push(offset..end);
        }
        Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            format!("bytes {offset}..{end} have not been fetched from the object store"),
        )))
    }
}

/// Sorts and merges ranges whose gap is at most `gap` bytes.
pub(crate) fn coalesce(mut ranges: Vec<Range<u64>>, gap: u64) -> Vec<Range<u64>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Everything the scan needs to know about one RNTuple in one object.
#[derive(Debug)]
pub(crate) struct NTupleMeta {
    pub location: Path,
    pub size: u64,
    pub ntuple: RNTuple,
    pub schema: SchemaRef,
    /// All clusters in entry order.
    pub clusters: Arc<Vec<ClusterDescriptor>>,
    /// The byte position of each cluster (its first page), which decides
    /// the file range it belongs to.
    pub positions: Vec<u64>,
    /// The sidecar index, when there is one that matches the file.
    pub(crate) index: Option<super::index::ClusterIndex>,
    /// The top-level fields whose Real32Quant ranges bound their values.
    pub(crate) quantized: HashMap<String, super::index::QuantizedField>,
    source: Arc<SparseSource>,
    /// Whether each cluster's pages are fetched before it is decoded: not
    /// for a small object held whole, nor for a local file, which `ntuple`
    /// reads in place.
    fetch_pages: bool,
}

impl NTupleMeta {
    fn new(
        object: &ObjectMeta,
        ntuple: RNTuple,
        clusters: Arc<Vec<ClusterDescriptor>>,
        source: Arc<SparseSource>,
        fetch_pages: bool,
    ) -> Self {
        let positions = clusters
            .iter()
            .map(|c| {
                c.columns
                    .iter()
                    .flat_map(|col| col.pages.iter())
                    .map(|p| p.locator.offset)
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        Self {
            location: object.location.clone(),
            size: object.size,
            schema: ntuple.mapping().schema.clone(),
            quantized: super::index::quantized_fields(&ntuple),
            ntuple,
            clusters,
            positions,
            index: None,
            source,
            fetch_pages,
        }
    }

    /// Entries of the clusters with these indices.
    pub fn entries(&self, clusters: &[usize]) -> u64 {
        clusters
            .iter()
            .filter_map(|&i| self.clusters.get(i))
            .map(|c| c.n_entries)
            .sum()
    }
}

async fn fetch_into(
    store: &Arc<dyn ObjectStore>,
    location: &Path,
    source: &SparseSource,
    ranges: Vec<Range<u64>>,
) -> DfResult<Vec<(u64, u64)>> {
    if ranges.is_empty() {
        return Ok(Vec::new());
    }
    let data = store.get_ranges(location, &ranges).await?;
    Ok(source.insert(&ranges, data))
}

/// The file behind `object` when `store` is the local file system (as
/// registered for `file://` URLs), opened for positioned reads; `None` for
/// any other store, or when the file found is not the object listed (its
/// size differs).
fn local_file(store: &dyn ObjectStore, object: &ObjectMeta) -> Option<FileReader> {
    let shown = store.to_string();
    let root = shown.strip_prefix("LocalFileSystem(")?.strip_suffix(')')?;
    let root = url::Url::parse(root).ok()?.to_file_path().ok()?;
    let local = LocalFileSystem::new_with_prefix(root).ok()?;
    let path = local.path_to_filesystem(&object.location).ok()?;
    let file = FileReader::open(path).ok()?;
    (file.len() == object.size).then_some(file)
}

/// Opens the RNTuple `name` (or the only one) of `object`, fetching just the
/// metadata: ROOT file header, directory, anchor, header, footer, page lists.
pub(crate) async fn load_ntuple(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    name: Option<&str>,
    whole_file_limit: u64,
    schemas: Option<Arc<SchemaCache>>,
) -> DfResult<NTupleMeta> {
    let size = object.size;
    let source = Arc::new(SparseSource::new(size));
    let name = name.map(str::to_string);
    if let Some(file) = local_file(store.as_ref(), object) {
        // Nothing to fetch: the metadata is read from the file as needed.
        let file: Arc<dyn ReadAt> = Arc::new(file);
        let attempt_name = name.clone();
        let (ntuple, clusters) = tokio::task::spawn_blocking(move || {
            open_ntuple(file, attempt_name.as_deref(), schemas.as_ref())
        })
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
        .map_err(|e| DataFusionError::from(e).context(format!("reading {}", object.location)))?;
        return Ok(NTupleMeta::new(object, ntuple, clusters, source, false));
    }
    let whole = size <= whole_file_limit;
    let first = if whole {
        std::iter::once(0..size).collect()
    } else {
        coalesce(vec![0..HEAD.min(size), size.saturating_sub(TAIL)..size], 0)
    };
    fetch_into(store, &object.location, &source, first).await?;
    for _ in 0..MAX_ROUNDS {
        let src: Arc<dyn ReadAt> = source.clone();
        let attempt_name = name.clone();
        let attempt_schemas = schemas.clone();
        let attempt = tokio::task::spawn_blocking(move || {
            open_ntuple(src, attempt_name.as_deref(), attempt_schemas.as_ref())
        })
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let misses = source.take_misses();
        if misses.is_empty() {
            let (ntuple, clusters) = attempt.map_err(|e| {
                DataFusionError::from(e).context(format!("reading {}", object.location))
            })?;
            if !whole {
                // Every structure is parsed now; pages are fetched per cluster.
                source.clear();
            }
            return Ok(NTupleMeta::new(object, ntuple, clusters, source, !whole));
        }
        let widened = misses
            .into_iter()
            .map(|r| r.start.min(size)..r.end.max(r.start.saturating_add(MIN_FETCH)).min(size))
            .collect();
        fetch_into(store, &object.location, &source, coalesce(widened, 0)).await?;
    }
    Err(DataFusionError::Execution(format!(
        "{}: the metadata was still incomplete after {MAX_ROUNDS} rounds of reads",
        object.location
    )))
}

fn open_ntuple(
    source: Arc<dyn ReadAt>,
    name: Option<&str>,
    schemas: Option<&Arc<SchemaCache>>,
) -> Result<(RNTuple, Arc<Vec<ClusterDescriptor>>)> {
    let mut file = RNTupleFile::from_source(source)?;
    if let Some(schemas) = schemas {
        file = file.with_schema_cache(schemas.clone());
    }
    let ntuple = file.ntuple(name)?;
    let clusters = ntuple.all_clusters()?;
    Ok((ntuple, clusters))
}

/// Opened metadata of the files of one table, so that schema inference,
/// statistics, planning and every partition share one read of each file.
#[derive(Debug, Default)]
pub(crate) struct MetadataCache {
    entries: Mutex<HashMap<Path, (CacheKey, Arc<NTupleMeta>)>>,
    /// The files of a table share their schema when their headers agree.
    schemas: Arc<SchemaCache>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CacheKey {
    size: u64,
    last_modified_us: i64,
    e_tag: Option<String>,
}

impl MetadataCache {
    /// The metadata of `object`, read on first use (again when the object changed).
    pub(crate) async fn get(
        &self,
        store: &Arc<dyn ObjectStore>,
        object: &ObjectMeta,
        options: &RNTupleReadOptions,
    ) -> DfResult<Arc<NTupleMeta>> {
        let key = CacheKey {
            size: object.size,
            last_modified_us: object.last_modified.timestamp_micros(),
            e_tag: object.e_tag.clone(),
        };
        if let Ok(entries) = self.entries.lock() {
            if let Some((k, meta)) = entries.get(&object.location) {
                if *k == key {
                    return Ok(meta.clone());
                }
            }
        }
        let mut meta = load_ntuple(
            store,
            object,
            options.ntuple.as_deref(),
            options.whole_file_limit,
            Some(self.schemas.clone()),
        )
        .await?;
        if options.use_index {
            meta.index = super::index::load(store, object, &meta).await;
        }
        let meta = Arc::new(meta);
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(object.location.clone(), (key, meta.clone()));
        }
        Ok(meta)
    }

    /// The fields left out of the Arrow schema in each file read so far,
    /// by location.
    pub(crate) fn skipped_fields(&self) -> Vec<(String, SkippedField)> {
        let Ok(entries) = self.entries.lock() else {
            return Vec::new();
        };
        let mut out: Vec<(String, SkippedField)> = entries
            .iter()
            .flat_map(|(location, (_, meta))| {
                meta.ntuple
                    .mapping()
                    .skipped
                    .iter()
                    .map(|s| (location.to_string(), s.clone()))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// The bytes of one cluster held in memory while it is decoded.
#[derive(Debug)]
pub(crate) struct ClusterLease {
    source: Arc<SparseSource>,
    keys: Vec<(u64, u64)>,
    /// Bytes fetched for the cluster.
    pub fetched: u64,
}

impl Drop for ClusterLease {
    fn drop(&mut self) {
        self.source.remove(&self.keys);
    }
}

/// The stored byte ranges (with checksums) of `columns` in `cluster`.
pub(crate) fn page_ranges(cluster: &ClusterDescriptor, columns: &[u32]) -> Vec<Range<u64>> {
    let mut ranges = Vec::new();
    for &id in columns {
        if let Some(col) = cluster.column(id) {
            for page in &col.pages {
                let len = page.locator.size + if page.has_checksum { 8 } else { 0 };
                ranges.push(page.locator.offset..page.locator.offset.saturating_add(len));
            }
        }
    }
    ranges
}

/// Fetches the pages of `columns` in cluster `index` of `meta` with one
/// `get_ranges` call (nothing for a file held whole).
pub(crate) async fn fetch_cluster(
    store: &Arc<dyn ObjectStore>,
    meta: &NTupleMeta,
    index: usize,
    columns: &[u32],
) -> DfResult<ClusterLease> {
    let mut lease = ClusterLease {
        source: meta.source.clone(),
        keys: Vec::new(),
        fetched: 0,
    };
    if !meta.fetch_pages {
        return Ok(lease);
    }
    let Some(cluster) = meta.clusters.get(index) else {
        return Ok(lease);
    };
    let ranges = page_ranges(cluster, columns);
    let ranges: Vec<_> = coalesce(ranges, COALESCE_GAP)
        .into_iter()
        .map(|r| r.start.min(meta.size)..r.end.min(meta.size))
        .collect();
    lease.fetched = ranges.iter().map(|r| r.end - r.start).sum();
    lease.keys = fetch_into(store, &meta.location, &meta.source, ranges).await?;
    Ok(lease)
}

/// Fetches what a failed decode missed (pages split over several keys);
/// returns false when nothing was missed, so the failure is real.
pub(crate) async fn fetch_misses(
    store: &Arc<dyn ObjectStore>,
    meta: &NTupleMeta,
    lease: &mut ClusterLease,
) -> DfResult<bool> {
    let misses = meta.source.take_misses();
    if misses.is_empty() {
        return Ok(false);
    }
    let ranges: Vec<_> = coalesce(misses, 0)
        .into_iter()
        .map(|r| r.start.min(meta.size)..r.end.min(meta.size))
        .collect();
    lease.fetched += ranges.iter().map(|r| r.end - r.start).sum::<u64>();
    let keys = fetch_into(store, &meta.location, &meta.source, ranges).await?;
    lease.keys.extend(keys);
    Ok(true)
}

/// Bytes currently held for `meta` (for tests and debugging).
#[allow(dead_code)]
pub(crate) fn held_bytes(meta: &NTupleMeta) -> u64 {
    meta.source.held_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local file system reads pages from the file; any other store
    /// fetches them; a local object whose size is not the file's is fetched.
    #[tokio::test]
    async fn local_files_are_read_in_place() -> DfResult<()> {
        use object_store::memory::InMemory;
        use object_store::{ObjectStoreExt, PutPayload};

        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let path = dir.join("clusters.root");
        if !path.exists() {
            eprintln!("skipped: {} is absent", path.display());
            return Ok(());
        }
        let local: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let location = Path::from_filesystem_path(&path)?;
        let object = local.head(&location).await?;
        let meta = load_ntuple(&local, &object, None, 0, None).await?;
        assert!(!meta.fetch_pages, "read in place from {local}");
        assert_eq!(held_bytes(&meta), 0, "nothing fetched is kept");

        let prefixed: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(&dir)?);
        let object = prefixed.head(&Path::from("clusters.root")).await?;
        let meta = load_ntuple(&prefixed, &object, None, u64::MAX, None).await?;
        assert!(!meta.fetch_pages, "read in place from {prefixed}");

        let mut wrong = object.clone();
        wrong.size += 1;
        assert!(local_file(prefixed.as_ref(), &wrong).is_none());

        let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        memory
            .put(
                &Path::from("a.root"),
                PutPayload::from(std::fs::read(&path)?),
            )
            .await?;
        let object = memory.head(&Path::from("a.root")).await?;
        let meta = load_ntuple(&memory, &object, None, 0, None).await?;
        assert!(meta.fetch_pages);
        Ok(())
    }

    /// The files of one table that have the same header share one schema.
    #[tokio::test]
    async fn files_of_a_table_share_their_schema() -> DfResult<()> {
        use object_store::ObjectStoreExt;

        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(&dir)?);
        let cache = MetadataCache::default();
        let options = RNTupleReadOptions::default();
        let mut metas = Vec::new();
        for name in [
            "adl/nanoaod_events.root",
            "adl/nanoaod_clusters.root",
            "clusters.root",
        ] {
            let object = store.head(&Path::from(name)).await?;
            metas.push(cache.get(&store, &object, &options).await?);
        }
        assert!(Arc::ptr_eq(&metas[0].schema, &metas[1].schema));
        assert_eq!((metas[0].clusters.len(), metas[1].clusters.len()), (1, 12));
        assert!(!Arc::ptr_eq(&metas[0].schema, &metas[2].schema));
        assert_eq!(cache.schemas.len(), 2);
        Ok(())
    }

    #[test]
    fn coalesce_merges_close_ranges() {
        let r = coalesce(vec![10..20, 0..5, 22..30, 100..110], 2);
        assert_eq!(r, vec![0..5, 10..30, 100..110]);
    }

    #[test]
    fn sparse_reads_inside_and_records_misses() {
        let s = SparseSource::new(100);
        s.insert(
            std::slice::from_ref(&(10..20)),
            vec![Bytes::from_static(b"0123456789")],
        );
        assert_eq!(&s.read_range(12, 3).unwrap()[..], b"234");
        assert!(s.read_range(15, 10).is_err());
        assert_eq!(s.take_misses(), vec![15..25]);
        assert!(s.take_misses().is_empty());
    }
}
