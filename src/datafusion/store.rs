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
use crate::reader::{NTupleInfo, RNTuple, RNTupleFile, SchemaCache};

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

    /// Drops every fetched range but copies of the parts of it that
    /// `ranges` cover (a range held in no single segment is dropped too).
    fn keep_only(&self, ranges: &[Range<u64>]) {
        let Ok(mut segments) = self.segments.write() else {
            return;
        };
        let kept: Vec<(Range<u64>, Bytes)> = ranges
            .iter()
            .filter_map(|r| {
                let len = usize::try_from(r.end.checked_sub(r.start)?).ok()?;
                let (&(start, _), bytes) = segments
                    .range(..=(r.start, u64::MAX))
                    .rev()
                    .find(|(&(start, _), b)| start <= r.start && r.end <= start + b.len() as u64)?;
                let from = usize::try_from(r.start - start).ok()?;
                // A copy: a slice would keep the whole fetched range alive.
                Some((
                    r.clone(),
                    Bytes::copy_from_slice(bytes.get(from..from + len)?),
                ))
            })
            .collect();
        segments.clear();
        for (range, bytes) in kept {
            let key = (range.start, self.next_id.fetch_add(1, Ordering::Relaxed));
            segments.insert(key, bytes);
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
///
/// The page lists are not part of it: a table may hold thousands of files,
/// and a wide file's page lists take tens of kilobytes a cluster parsed.
/// They are read at open for the clusters' summaries, then released, and
/// read again by the scan of each file ([`page_lists`]).
#[derive(Debug)]
pub(crate) struct NTupleMeta {
    pub location: Path,
    pub size: u64,
    /// Which RNTuple of the file this is.
    pub info: NTupleInfo,
    pub ntuple: RNTuple,
    pub schema: SchemaRef,
    /// All clusters in entry order.
    pub clusters: Vec<ClusterSummary>,
    /// Where the byte span of each cluster (of [`clusters`](Self::clusters))
    /// ends: the next cluster's position in the file, or the file's end.
    /// The spans tile the file from the first cluster's position on, and a
    /// file range reads the share of a cluster's entries that it covers of
    /// its span (see `source::cluster_entries_of`).
    pub(crate) span_ends: Vec<u64>,
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

/// The end of each cluster's byte span: the position of the cluster that
/// follows it in the file (clusters sorted by position, ties by index), or
/// `size` for the last. A cluster without pages (position 0) spans nothing
/// when another cluster shares its position.
fn span_ends(clusters: &[ClusterSummary], size: u64) -> Vec<u64> {
    let mut order: Vec<usize> = (0..clusters.len()).collect();
    order.sort_by_key(|&i| (clusters[i].position, i));
    let mut ends = vec![size; clusters.len()];
    for pair in order.windows(2) {
        ends[pair[0]] = clusters[pair[1]].position;
    }
    for (end, c) in ends.iter_mut().zip(clusters) {
        *end = (*end).max(c.position);
    }
    ends
}

/// What planning, statistics and pruning need of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterSummary {
    pub id: u64,
    pub first_entry: u64,
    pub n_entries: u64,
    /// The byte position of the cluster's first page, which decides the
    /// file range it belongs to.
    pub position: u64,
    /// The stored bytes of all its pages.
    pub stored_bytes: u64,
}

impl ClusterSummary {
    fn of(cluster: &ClusterDescriptor) -> Self {
        let pages = || cluster.columns.iter().flat_map(|col| col.pages.iter());
        Self {
            id: cluster.id,
            first_entry: cluster.first_entry,
            n_entries: cluster.n_entries,
            position: pages().map(|p| p.locator.offset).min().unwrap_or(0),
            stored_bytes: pages().map(|p| p.locator.size).fold(0, u64::saturating_add),
        }
    }
}

impl NTupleMeta {
    fn new(
        object: &ObjectMeta,
        opened: Opened,
        source: Arc<SparseSource>,
        fetch_pages: bool,
    ) -> Self {
        let Opened {
            info,
            ntuple,
            clusters: opened_clusters,
            ..
        } = opened;
        let clusters: Vec<ClusterSummary> =
            opened_clusters.iter().map(ClusterSummary::of).collect();
        Self {
            span_ends: span_ends(&clusters, object.size),
            location: object.location.clone(),
            size: object.size,
            schema: ntuple.mapping().schema.clone(),
            quantized: super::index::quantized_fields(&ntuple, &opened_clusters),
            info,
            ntuple,
            clusters,
            index: None,
            source,
            fetch_pages,
        }
    }

    /// Whether each cluster's pages are fetched before it is decoded (an
    /// object store), rather than read in place.
    pub(crate) fn fetches_pages(&self) -> bool {
        self.fetch_pages
    }

    /// Entries of the clusters with these indices.
    pub fn entries(&self, clusters: &[usize]) -> u64 {
        clusters
            .iter()
            .filter_map(|&i| self.clusters.get(i))
            .map(|c| c.n_entries)
            .sum()
    }

    /// The clusters with their page lists, in the order of
    /// [`clusters`](Self::clusters), read again unless some scan of the
    /// file holds them. Reads only bytes held in memory or the local file;
    /// a page list that an object store did not give fails with a miss
    /// (see [`page_lists`]).
    pub fn page_lists_held(&self) -> Result<Arc<Vec<ClusterDescriptor>>> {
        let clusters = self.ntuple.all_clusters()?;
        let agree = clusters.len() == self.clusters.len()
            && clusters
                .iter()
                .zip(&self.clusters)
                .all(|(c, s)| c.id == s.id && c.first_entry == s.first_entry);
        if !agree {
            let groups = &self.ntuple.descriptor().cluster_groups;
            return Err(Error::malformed(
                "page list envelope",
                groups.first().map_or(0, |g| g.page_list.locator.offset),
                "its clusters differ from the ones read when the file was opened",
            ));
        }
        Ok(clusters)
    }
}

/// The clusters of `meta` with their page lists, fetching from the object
/// store what the bytes kept at open do not hold. Usually nothing is
/// fetched: a page list is read from the bytes kept or the local file, in
/// place, as it is small next to the pages it lists.
pub(crate) async fn page_lists(
    store: &Arc<dyn ObjectStore>,
    meta: &NTupleMeta,
) -> DfResult<Arc<Vec<ClusterDescriptor>>> {
    let context = || format!("reading the page lists of {}", meta.location);
    for _ in 0..MAX_ROUNDS {
        match meta.page_lists_held() {
            Err(e) if is_miss(&e) => {
                let misses = meta.source.take_misses();
                if misses.is_empty() {
                    return Err(DataFusionError::from(e).context(context()));
                }
                let ranges = coalesce(misses, 0)
                    .into_iter()
                    .map(|r| r.start.min(meta.size)..r.end.min(meta.size))
                    .collect();
                // Kept with the metadata, as the page lists kept at open.
                fetch_into(store, &meta.location, &meta.source, ranges).await?;
            }
            read => return read.map_err(|e| DataFusionError::from(e).context(context())),
        }
    }
    Err(DataFusionError::Execution(format!(
        "{}: the page lists were still incomplete after {MAX_ROUNDS} rounds of reads",
        meta.location
    )))
}

/// Whether `e` is a read of bytes not fetched from the object store.
pub(crate) fn is_miss(e: &Error) -> bool {
    matches!(e.root_cause(), Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock)
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

/// Whether `store` is the local file system, whose files are read in place.
pub(crate) fn is_local(store: &dyn ObjectStore) -> bool {
    store.to_string().starts_with("LocalFileSystem(")
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
        let opened = tokio::task::spawn_blocking(move || {
            open_ntuple(file, attempt_name.as_deref(), schemas.as_ref())
        })
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
        .map_err(|e| DataFusionError::from(e).context(format!("reading {}", object.location)))?;
        return Ok(NTupleMeta::new(object, opened, source, false));
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
            let opened = attempt.map_err(|e| {
                DataFusionError::from(e).context(format!("reading {}", object.location))
            })?;
            if !whole {
                // Every structure is parsed now; pages are fetched per
                // cluster. The stored page lists stay for the scans.
                source.keep_only(&opened.page_lists);
            }
            return Ok(NTupleMeta::new(object, opened, source, !whole));
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

/// An RNTuple just opened, its page lists released.
struct Opened {
    info: NTupleInfo,
    ntuple: RNTuple,
    /// The clusters read at open: the page lists live as long as these.
    clusters: Arc<Vec<ClusterDescriptor>>,
    /// The stored byte ranges of the page lists.
    page_lists: Vec<Range<u64>>,
}

fn open_ntuple(
    source: Arc<dyn ReadAt>,
    name: Option<&str>,
    schemas: Option<&Arc<SchemaCache>>,
) -> Result<Opened> {
    let mut file = RNTupleFile::from_source(source)?;
    if let Some(schemas) = schemas {
        file = file.with_schema_cache(schemas.clone());
    }
    let info = file.find(name)?;
    let ntuple = file.ntuple(Some(&info.path))?;
    let clusters = ntuple.all_clusters()?;
    ntuple.release_page_lists();
    let page_lists = ntuple
        .descriptor()
        .cluster_groups
        .iter()
        .map(|g| g.page_list.locator)
        .map(|l| l.offset..l.offset.saturating_add(l.size))
        .collect();
    Ok(Opened {
        info,
        ntuple,
        clusters,
        page_lists,
    })
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
        let opening = load_ntuple(
            store,
            object,
            options.ntuple.as_deref(),
            options.whole_file_limit,
            Some(self.schemas.clone()),
        );
        let meta = if options.use_index {
            let (meta, sidecar) = tokio::join!(opening, super::index::fetch(store, object));
            let mut meta = meta?;
            meta.index = sidecar.and_then(|bytes| super::index::load(bytes, &meta));
            meta
        } else {
            opening.await?
        };
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

    /// The RNTuple read from each file so far, by location.
    pub(crate) fn ntuples(&self) -> Vec<(String, NTupleInfo)> {
        let Ok(entries) = self.entries.lock() else {
            return Vec::new();
        };
        let mut out: Vec<(String, NTupleInfo)> = entries
            .iter()
            .map(|(location, (_, meta))| (location.to_string(), meta.info.clone()))
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
    /// Calls to the store that fetched them, each waiting for the one before.
    pub rounds: usize,
}

impl Drop for ClusterLease {
    fn drop(&mut self) {
        self.source.remove(&self.keys);
    }
}

impl ClusterLease {
    /// A lease of nothing yet, on `meta`'s fetched bytes.
    pub(crate) fn new(meta: &NTupleMeta) -> Self {
        Self {
            source: meta.source.clone(),
            keys: Vec::new(),
            fetched: 0,
            rounds: 0,
        }
    }
}

/// The stored byte ranges (with checksums) of `columns` in `cluster`.
pub(crate) fn page_ranges(cluster: &ClusterDescriptor, columns: &[u32]) -> Vec<Range<u64>> {
    let mut ranges = Vec::new();
    for &id in columns {
        if let Some(col) = cluster.column(id) {
            ranges.extend(col.pages.iter().map(|p| p.stored_range()));
        }
    }
    ranges
}

/// The stored bytes (with checksums) of `columns` in `cluster`.
pub(crate) fn stored_bytes(cluster: &ClusterDescriptor, columns: &[u32]) -> u64 {
    page_ranges(cluster, columns)
        .iter()
        .map(|r| r.end - r.start)
        .fold(0, u64::saturating_add)
}

/// Fetches the pages of `columns` in `cluster` of `meta` with one
/// `get_ranges` call (nothing for a file held whole).
pub(crate) async fn fetch_cluster(
    store: &Arc<dyn ObjectStore>,
    meta: &NTupleMeta,
    cluster: &ClusterDescriptor,
    columns: &[u32],
) -> DfResult<ClusterLease> {
    let mut lease = ClusterLease::new(meta);
    if meta.fetch_pages {
        fetch_ranges(store, meta, &mut lease, page_ranges(cluster, columns)).await?;
    }
    Ok(lease)
}

/// Fetches the byte ranges `ranges` of `meta`'s file into `lease` with one
/// `get_ranges` call, ranges less than [`COALESCE_GAP`] apart as one.
pub(crate) async fn fetch_ranges(
    store: &Arc<dyn ObjectStore>,
    meta: &NTupleMeta,
    lease: &mut ClusterLease,
    ranges: Vec<Range<u64>>,
) -> DfResult<()> {
    let ranges: Vec<_> = coalesce(ranges, COALESCE_GAP)
        .into_iter()
        .map(|r| r.start.min(meta.size)..r.end.min(meta.size))
        .collect();
    lease.fetched += ranges.iter().map(|r| r.end - r.start).sum::<u64>();
    lease.rounds += usize::from(!ranges.is_empty());
    let keys = fetch_into(store, &meta.location, &meta.source, ranges).await?;
    lease.keys.extend(keys);
    Ok(())
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
    lease.rounds += 1;
    let keys = fetch_into(store, &meta.location, &meta.source, ranges).await?;
    lease.keys.extend(keys);
    Ok(true)
}

/// Bytes currently held for `meta` (for tests and debugging).
#[allow(dead_code)]
pub(crate) fn held_bytes(meta: &NTupleMeta) -> u64 {
    meta.source.held_bytes()
}

/// An in-memory object store holding the file at `path`, and the RNTuple
/// `name` (or the only one) of it opened from there, its pages to be
/// fetched by ranges (for tests).
#[cfg(test)]
pub(crate) async fn held_in_memory(
    path: &std::path::Path,
    name: Option<&str>,
) -> DfResult<(Arc<dyn ObjectStore>, NTupleMeta)> {
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};

    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let location = Path::from("a.root");
    store
        .put(&location, PutPayload::from(std::fs::read(path)?))
        .await?;
    let object = store.head(&location).await?;
    let meta = load_ntuple(&store, &object, name, 0, None).await?;
    Ok((store, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local file system reads pages from the file; any other store
    /// fetches them; a local object whose size is not the file's is fetched.
    #[tokio::test]
    async fn local_files_are_read_in_place() -> DfResult<()> {
        use object_store::ObjectStoreExt;

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

        let (_, meta) = held_in_memory(&path, None).await?;
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

    /// A file's page lists are not kept parsed: a scan reads them again,
    /// from the local file or, for an object store, from the stored page
    /// lists kept at open, fetching them again only when those are gone.
    #[tokio::test]
    async fn page_lists_are_read_again_for_each_scan() -> DfResult<()> {
        use object_store::ObjectStoreExt;

        let Some(path) = crate::test_util::fixture("clusters.root") else {
            return Ok(());
        };
        let expected = RNTupleFile::open(&path)?.ntuple(None)?.clusters()?;
        let local: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let object = local.head(&Path::from_filesystem_path(&path)?).await?;
        let meta = load_ntuple(&local, &object, None, 0, None).await?;
        let summaries: Vec<ClusterSummary> = expected.iter().map(ClusterSummary::of).collect();
        assert_eq!(meta.clusters, summaries);

        let held = page_lists(&local, &meta).await?;
        assert_eq!(*held, expected);
        let again = page_lists(&local, &meta).await?;
        assert!(Arc::ptr_eq(&held, &again), "shared while a scan holds them");
        let released = Arc::downgrade(&held);
        drop((held, again));
        assert!(released.upgrade().is_none(), "released after the scans");
        assert_eq!(*page_lists(&local, &meta).await?, expected);

        let (memory, meta) = held_in_memory(&path, None).await?;
        let stored: u64 = meta
            .ntuple
            .descriptor()
            .cluster_groups
            .iter()
            .map(|g| g.page_list.locator.size)
            .sum();
        assert_eq!(
            held_bytes(&meta),
            stored,
            "only the stored page lists are kept"
        );
        assert_eq!(*page_lists(&memory, &meta).await?, expected);
        assert_eq!(held_bytes(&meta), stored, "nothing fetched");
        meta.source.keep_only(&[]);
        assert_eq!(*page_lists(&memory, &meta).await?, expected);
        assert!(held_bytes(&meta) >= stored, "fetched again");
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
