//! [`RNTupleOpener`]: one file range -> a stream of record batches.
//!
//! ```text
//!  PartitionedFile (+ its metadata, + byte range)
//!    -> the entries of each cluster that the range reads     (source::cluster_entries_of)
//!    -> minus clusters the sidecar index rules out          (index::prune)
//!    -> up to the entries that make `limit`
//!    -> per cluster, one at a time (from an object store, the next
//!       cluster's pages fetched meanwhile), each a task of its own:
//!         fetch the pages its entries take (fetch_pages, async: a whole
//!         cluster's projected columns, or for a part of one, its offsets
//!         and then the items they reach)
//!         decode them on a blocking thread (RNTupleReaderBuilder), up to
//!         eight of the session's batches at once (DECODE_BYTES), into a
//!         channel of two: whole clusters never sit in memory
//!    -> each decoded read handed on as slices of the session's batch size,
//!       before the projection DataFusion pushes into the scan runs on them
//! ```

use std::collections::{BTreeSet, HashSet};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_schema::DataType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileOpenFuture, FileOpener};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_optimizer::pruning::PruningPredicate;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, Time};
use futures::StreamExt;
use object_store::ObjectStore;

use super::batch_slices;
use super::functions::is_list;
use super::index;
use super::source::cluster_entries_of;
use super::store::{
    self, fetch_cluster, fetch_misses, is_miss, ClusterLease, MetadataCache, NTupleMeta,
};
use super::RNTupleReadOptions;
use crate::descriptor::ClusterDescriptor;
use crate::error::Error;
use crate::RNTupleReaderBuilder;

/// Clusters fetched and decoded at the same time by one partition. A
/// cluster's fetched pages stay in memory until it is decoded, and a second
/// cluster in flight took Q6 and Q7 of the 10M-event benchmark from under
/// 380 MB to 570-600 MB without making them faster: the partitions
/// already keep both cores busy.
const CLUSTERS_IN_FLIGHT: usize = 1;
/// The same for a file of an object store: the next cluster's pages are
/// fetched while this one decodes, so that the wait for the store overlaps
/// the decode. ADL Q5 and Q8 over four copies of the 2M-event benchmark
/// file, from a store that answers in 50 ms at 100 MB/s: 1.23x and 1.25x,
/// for one cluster's pages more in memory (BENCHMARKS.md).
const FETCHED_CLUSTERS_IN_FLIGHT: usize = 2;
/// Decoded batches of one cluster waiting for the consumer.
const BATCHES_IN_FLIGHT: usize = 2;
/// About the decoded bytes one read of the scan makes. Without list
/// columns, a partition decodes up to [`DECODE_BATCHES`] of the session's
/// batches at once (never fewer than one) and hands them on as slices: one
/// read, one hand-over between threads and one wake-up instead of eight,
/// and the reader's per-batch work is spread over more rows. With reads of
/// one batch, ADL Q1 made 245 hand-overs (of 8,192 rows, the session's
/// batch size then).
///
/// The slices are cut here, not by `DataSourceExec` (which also cuts to the
/// session's size, but after the projection pushed into the scan has run):
/// that projection's casts then make arrays of one batch, which the
/// allocator hands back while they are still in the cache. Cut after the
/// projection, Q1 was no faster than with reads of one batch.
const DECODE_BYTES: u64 = 8 << 20;
/// The most batches of the session's size one read of the scan decodes.
const DECODE_BATCHES: u64 = 8;
/// Rounds of fetching what a decode missed (pages split over keys).
const MISS_ROUNDS: usize = 4;
/// Rounds of finding the pages a part of a cluster takes: one, plus one per
/// level of collections nested in the projected fields.
const PART_ROUNDS: usize = 8;

/// The physical columns the fields at `paths` read.
pub(crate) fn needed_columns(meta: &NTupleMeta, paths: &[String]) -> crate::Result<Vec<u32>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let descriptor = meta.ntuple.descriptor();
    let nodes = crate::arrow::schema::project(meta.ntuple.mapping(), descriptor, paths)?;
    let mut ids = BTreeSet::new();
    for node in &nodes {
        node.visit(&mut |n| {
            if let Some(field) = descriptor.field(n.field_id) {
                for rep in &field.representations {
                    ids.extend(rep.iter().copied());
                }
            }
        });
    }
    Ok(ids.into_iter().collect())
}

#[derive(Clone)]
struct ScanMetrics {
    bytes_scanned: Count,
    pages_decoded: Count,
    clusters_scanned: Count,
    clusters_pruned: Count,
    /// Calls to the object store, each made after the one before it
    /// returned: the round trips a partition waited for.
    fetch_rounds: Count,
    fetch_time: Time,
    decode_time: Time,
}

impl ScanMetrics {
    fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            bytes_scanned: MetricBuilder::new(metrics).counter("bytes_scanned", partition),
            pages_decoded: MetricBuilder::new(metrics).counter("pages_decoded", partition),
            clusters_scanned: MetricBuilder::new(metrics).counter("clusters_scanned", partition),
            clusters_pruned: MetricBuilder::new(metrics).counter("clusters_pruned", partition),
            fetch_rounds: MetricBuilder::new(metrics).counter("fetch_rounds", partition),
            fetch_time: MetricBuilder::new(metrics).subset_time("fetch_time", partition),
            decode_time: MetricBuilder::new(metrics).subset_time("decode_time", partition),
        }
    }
}

/// Opens the file ranges of one partition.
#[derive(Clone)]
pub(crate) struct RNTupleOpener {
    store: Arc<dyn ObjectStore>,
    cache: Arc<MetadataCache>,
    options: RNTupleReadOptions,
    paths: Arc<Vec<String>>,
    batch_size: usize,
    limit: Option<usize>,
    pruning: Option<Arc<PruningPredicate>>,
    metrics: ScanMetrics,
}

impl RNTupleOpener {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        cache: Arc<MetadataCache>,
        options: RNTupleReadOptions,
        paths: Vec<String>,
        batch_size: usize,
        limit: Option<usize>,
        pruning: Option<Arc<PruningPredicate>>,
        metrics: &ExecutionPlanMetricsSet,
        partition: usize,
    ) -> Self {
        Self {
            store,
            cache,
            options,
            paths: Arc::new(paths),
            batch_size,
            limit,
            pruning,
            metrics: ScanMetrics::new(metrics, partition),
        }
    }
}

/// The clusters to read, each with the entries to read of it: up to the
/// one that completes `limit` entries.
fn apply_limit(
    clusters: Vec<(usize, Range<u64>)>,
    limit: Option<usize>,
) -> Vec<(usize, Range<u64>)> {
    let Some(limit) = limit else {
        return clusters;
    };
    let mut remaining = limit as u64;
    let mut out = Vec::new();
    for (c, entries) in clusters {
        if remaining == 0 {
            break;
        }
        let n = remaining.min(entries.end - entries.start);
        out.push((c, entries.start..entries.start + n));
        remaining -= n;
    }
    out
}

impl FileOpener for RNTupleOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let this = self.clone();
        Ok(Box::pin(async move {
            let meta = match file.extension::<Arc<NTupleMeta>>() {
                Some(meta) => meta.clone(),
                None => {
                    this.cache
                        .get(&this.store, &file.object_meta, &this.options)
                        .await?
                }
            };
            let mut clusters = cluster_entries_of(&meta, &file);
            if let Some(pruning) = &this.pruning {
                let before = clusters.len();
                let kept = index::prune(pruning, &meta, clusters.iter().map(|(c, _)| *c).collect());
                let kept: BTreeSet<usize> = kept.into_iter().collect();
                clusters.retain(|(c, _)| kept.contains(c));
                this.metrics.clusters_pruned.add(before - clusters.len());
            }
            let plan = apply_limit(clusters, this.limit);
            // Held while the file is scanned; read again by the next scan.
            let page_lists = if plan.is_empty() {
                Arc::default()
            } else {
                store::page_lists(&this.store, &meta).await?
            };
            let columns = Arc::new(needed_columns(&meta, &this.paths)?);
            let builder = RNTupleReaderBuilder::new(meta.ntuple.clone())
                .with_projection(this.paths.iter())?
                .with_batch_size(this.batch_size);
            // Each cluster is fetched and decoded by a task of its own that
            // runs ahead of the consumer by a few batches.
            let in_flight = match meta.fetches_pages() {
                true => FETCHED_CLUSTERS_IN_FLIGHT,
                false => CLUSTERS_IN_FLIGHT,
            };
            let stream = futures::stream::iter(plan)
                .map(move |(cluster, entries)| {
                    futures::future::ready(spawn_cluster(
                        this.clone(),
                        meta.clone(),
                        page_lists.clone(),
                        builder.clone(),
                        columns.clone(),
                        cluster,
                        entries,
                    ))
                })
                .buffered(in_flight)
                .flatten();
            Ok(stream.boxed())
        }))
    }
}

/// Starts fetching and decoding one cluster; its batches arrive through the
/// returned stream as they are decoded, at most [`BATCHES_IN_FLIGHT`] ahead
/// of the consumer, so a partition holds a few batches of each cluster in
/// flight rather than whole clusters. Dropping the stream stops the decode.
fn spawn_cluster(
    this: RNTupleOpener,
    meta: Arc<NTupleMeta>,
    page_lists: Arc<Vec<ClusterDescriptor>>,
    builder: RNTupleReaderBuilder,
    columns: Arc<Vec<u32>>,
    index: usize,
    entries: Range<u64>,
) -> futures::stream::BoxStream<'static, Result<RecordBatch>> {
    let (tx, rx) = tokio::sync::mpsc::channel(BATCHES_IN_FLIGHT);
    let batch_size = this.batch_size.max(1);
    tokio::spawn(async move {
        let errors = tx.clone();
        let read = read_cluster(
            this,
            meta,
            &page_lists,
            builder,
            columns,
            index,
            entries,
            tx,
        );
        if let Err(e) = read.await {
            let _ = errors.send(Err(e)).await;
        }
    });
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .flat_map(move |item| futures::stream::iter(in_batches(item, batch_size)))
    .boxed()
}

/// A decoded read as batches of at most `size` rows: slices of it, without
/// copies.
fn in_batches(item: Result<RecordBatch>, size: usize) -> Vec<Result<RecordBatch>> {
    match item {
        Ok(batch) if batch.num_rows() > size => batch_slices(&batch, size).map(Ok).collect(),
        other => vec![other],
    }
}

/// Whether values of type `dt` hold lists (or maps) at any depth.
fn has_list(dt: &DataType) -> bool {
    match dt {
        dt if is_list(dt) => true,
        DataType::Map(_, _) => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_list(f.data_type())),
        DataType::Union(fields, _) => fields.iter().any(|(_, f)| has_list(f.data_type())),
        DataType::Dictionary(_, values) => has_list(values),
        _ => false,
    }
}

/// The entries one read of cluster `cluster` decodes: a multiple of
/// `batch_size`, as many batches as fit in [`DECODE_BYTES`] by the stored
/// size of `columns` in the cluster (from its page list, before any
/// decoding), between 1 and [`DECODE_BATCHES`].
fn decode_entries(
    meta: &NTupleMeta,
    cluster: &ClusterDescriptor,
    columns: &[u32],
    batch_size: usize,
) -> usize {
    let descriptor = meta.ntuple.descriptor();
    let bytes = columns
        .iter()
        .filter_map(|&id| {
            let bits = u64::from(descriptor.column(id)?.bits_on_storage);
            let pages = &cluster.column(id)?.pages;
            let elements = pages.iter().map(|p| u64::from(p.n_elements)).sum::<u64>();
            Some(elements.saturating_mul(bits) / 8)
        })
        .fold(0u64, u64::saturating_add);
    let per_batch = (bytes / cluster.n_entries.max(1))
        .max(1)
        .saturating_mul(batch_size as u64);
    let batches = (DECODE_BYTES / per_batch).clamp(1, DECODE_BATCHES);
    batch_size.saturating_mul(batches as usize)
}

/// Fetches one cluster's pages, then decodes its `entries` on a blocking
/// thread and sends each batch to `tx`.
#[allow(clippy::too_many_arguments)]
async fn read_cluster(
    this: RNTupleOpener,
    meta: Arc<NTupleMeta>,
    page_lists: &[ClusterDescriptor],
    builder: RNTupleReaderBuilder,
    columns: Arc<Vec<u32>>,
    index: usize,
    entries: Range<u64>,
    tx: tokio::sync::mpsc::Sender<Result<RecordBatch>>,
) -> Result<()> {
    let Some(cluster) = page_lists.get(index) else {
        return Ok(());
    };
    let id = cluster.id;
    let batch_size = this.batch_size.max(1);
    // A slice of a list array keeps its whole child array, and kernels such
    // as Arrow's list cast work on all of it for every slice: lists are
    // read in the session's batches.
    let per_read = if builder
        .schema()
        .fields()
        .iter()
        .any(|f| has_list(f.data_type()))
    {
        batch_size
    } else {
        decode_entries(&meta, cluster, &columns, batch_size)
    };
    let started = Instant::now();
    let mut lease = fetch_pages(&this.store, &meta, &builder, cluster, &columns, &entries).await?;
    this.metrics.fetch_time.add_elapsed(started);
    let runtime = tokio::runtime::Handle::current();
    let metrics = this.metrics.clone();
    metrics.clusters_scanned.add(1);
    // Bytes fetched from an object store count as scanned; a file read in
    // place counts the stored bytes of the pages the reads take.
    metrics.bytes_scanned.add(lease.fetched as usize);
    metrics.fetch_rounds.add(lease.rounds);
    let in_place = lease.fetched == 0;
    let one_field = builder.schema().fields().len() == 1;
    let location = meta.location.clone();
    tokio::task::spawn_blocking(move || {
        // Entries sent so far: after a miss, the read resumes there.
        let mut sent = 0u64;
        let mut rounds = 0;
        loop {
            let mut b = builder
                .clone()
                .with_batch_size(per_read)
                .with_clusters([id])
                .with_entry_range(entries.start + sent..entries.end);
            if one_field {
                // One field is one lane: the pool would decode it one read
                // at a time too, while this thread waited. Decoded here, the
                // read overlaps the consumer through the channel all the
                // same, without the hand-offs or the reads the lane runs
                // ahead (Q1: 1.11x, 470 fewer page faults).
                b = b.with_batches_ahead(0);
            }
            let mut reader = match b.build() {
                Ok(reader) => reader,
                Err(e) => return Err(cluster_error(e, &location, id)),
            };
            // The pages this round has read, recorded after every batch so
            // that a consumer that stops early sees what was read until then.
            let stats = reader.read_stats();
            let mut recorded = (0u64, 0u64);
            let mut record = || {
                let (pages, bytes) = (stats.pages(), stats.bytes());
                metrics
                    .pages_decoded
                    .add(pages.saturating_sub(recorded.0) as usize);
                if in_place {
                    metrics
                        .bytes_scanned
                        .add(bytes.saturating_sub(recorded.1) as usize);
                }
                recorded = (pages, bytes);
            };
            let outcome = loop {
                let started = Instant::now();
                let next = reader.next_batch();
                metrics.decode_time.add_elapsed(started);
                record();
                match next {
                    Ok(Some(batch)) => {
                        sent += batch.num_rows() as u64;
                        if tx.blocking_send(Ok(batch)).is_err() {
                            // The consumer is gone: nothing more to do.
                            return Ok(());
                        }
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            match outcome {
                Ok(()) => return Ok(()),
                Err(e) if is_miss(&e) && rounds < MISS_ROUNDS => {
                    rounds += 1;
                    let before = (lease.fetched, lease.rounds);
                    runtime.block_on(fetch_misses(&this.store, &meta, &mut lease))?;
                    metrics
                        .bytes_scanned
                        .add(lease.fetched.saturating_sub(before.0) as usize);
                    metrics
                        .fetch_rounds
                        .add(lease.rounds.saturating_sub(before.1));
                }
                Err(e) => return Err(cluster_error(e, &location, id)),
            }
        }
    })
    .await
    .map_err(|e| DataFusionError::External(Box::new(e)))?
}

/// Fetches the pages that reading `entries` of `cluster` takes, for a file
/// of an object store (nothing for one read in place): the projected
/// columns' pages in the cluster when it is read whole. A part of a
/// cluster (cut between partitions, or short of its end by a limit)
/// fetches the pages its entries reach,
/// found in rounds: each level of collections needs its offsets' pages
/// before its items can be placed (`RNTupleReaderBuilder::part_pages`).
/// The first round also takes the pages the part would reach if every
/// column's elements were spread evenly over the cluster
/// ([`ClusterDescriptor::even_share_pages`]), so that the rounds after it usually find
/// every page held: a part waits for one round trip, not one per level.
/// Past [`PART_ROUNDS`], or if the offsets cannot be read, the rest of the
/// cluster's pages are fetched too, and the decode reports what is wrong.
async fn fetch_pages(
    store: &Arc<dyn ObjectStore>,
    meta: &Arc<NTupleMeta>,
    builder: &RNTupleReaderBuilder,
    cluster: &ClusterDescriptor,
    columns: &[u32],
    entries: &Range<u64>,
) -> Result<ClusterLease> {
    let relative = entries.start.saturating_sub(cluster.first_entry)
        ..entries.end.saturating_sub(cluster.first_entry);
    if !meta.fetches_pages() || relative == (0..cluster.n_entries) {
        return fetch_cluster(store, meta, cluster, columns).await;
    }
    let mut lease = ClusterLease::new(meta);
    let mut held = HashSet::new();
    let mut guess: Vec<Range<u64>> = columns
        .iter()
        .flat_map(|&id| cluster.even_share_pages(id, &relative))
        .collect();
    for _ in 0..PART_ROUNDS {
        let (b, c, r) = (builder.clone(), cluster.clone(), relative.clone());
        let round = tokio::task::spawn_blocking(move || {
            let mut wanted = Vec::new();
            let planned = b.part_pages(&c, r, &|p| held.contains(p), &mut wanted);
            (planned, wanted, held)
        });
        let (planned, wanted, returned) = round
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        held = returned;
        let Ok(complete) = planned else {
            break;
        };
        let new: Vec<Range<u64>> = wanted
            .into_iter()
            .chain(std::mem::take(&mut guess))
            .filter(|p| held.insert(p.clone()))
            .collect();
        let progress = !new.is_empty();
        store::fetch_ranges(store, meta, &mut lease, new).await?;
        if complete {
            return Ok(lease);
        }
        if !progress {
            break;
        }
    }
    let rest = store::page_ranges(cluster, columns)
        .into_iter()
        .filter(|p| !held.contains(p))
        .collect();
    store::fetch_ranges(store, meta, &mut lease, rest).await?;
    Ok(lease)
}

fn cluster_error(e: Error, location: &impl std::fmt::Display, id: u64) -> DataFusionError {
    DataFusionError::from(e).context(format!("{location}: cluster {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RNTupleFile;

    /// The RNTuples whose clusters are cut into parts below: nested
    /// collections, variants, optionals, strings, streamed objects, deferred
    /// columns and merged files, most of them with several pages per column
    /// in a cluster.
    const CASES: &[(&str, &str)] = &[
        ("nested.root", "OptionalVariant"),
        ("nested.root", "VectorOfVectors"),
        ("nested.root", "OptionalsInVectors"),
        ("nested.root", "VariantsOfVariants"),
        ("nested.root", "ArraysOfCollections"),
        ("nested.root", "OptionalRecordsOfVariants"),
        ("containers.root", "Containers"),
        ("classes.root", "Classes"),
        ("extension.root", "Extension"),
        ("merged.root", "Late"),
        ("merged_fast.root", "Union"),
        ("clusters.root", "Clusters"),
        ("big_pages.root", "BigPages"),
        ("adl/nanoaod_clusters.root", "Events"),
    ];

    /// The parts of `n` entries that a test reads: thirds, and a cut of
    /// its own for each cluster.
    fn parts(n: u64, salt: u64) -> Vec<Range<u64>> {
        let cut = (salt.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % n.max(1);
        let mut parts = vec![0..n / 3, n / 3..2 * n / 3, 2 * n / 3..n, 0..cut, cut..n];
        parts.retain(|p| p.start < p.end && *p != (0..n));
        parts
    }

    /// An RNTuple of a fixture held in an in-memory object store, and the
    /// same RNTuple of the local file.
    struct Remote {
        store: Arc<dyn ObjectStore>,
        meta: Arc<NTupleMeta>,
        /// A builder of the store's metadata.
        builder: RNTupleReaderBuilder,
        local: RNTupleReaderBuilder,
        /// Every column of the RNTuple.
        columns: Vec<u32>,
        clusters: Arc<Vec<ClusterDescriptor>>,
    }

    impl Remote {
        async fn load(path: &std::path::Path, name: Option<&str>) -> Result<Self> {
            let (store, meta) = store::held_in_memory(path, name).await?;
            let meta = Arc::new(meta);
            assert!(meta.fetches_pages());
            let clusters = store::page_lists(&store, &meta).await?;
            Ok(Self {
                local: RNTupleFile::open(path)?.reader_builder(name)?,
                builder: RNTupleReaderBuilder::new(meta.ntuple.clone()),
                columns: (0..meta.ntuple.descriptor().columns.len() as u32).collect(),
                clusters,
                store,
                meta,
            })
        }

        /// Fetches the pages of `entries` of `cluster` as a scan does and
        /// asserts that they decode, with no page missed, to what the local
        /// file reads; returns the lease of the fetched bytes.
        async fn fetch_and_read(
            &self,
            cluster: &ClusterDescriptor,
            columns: &[u32],
            entries: &Range<u64>,
            context: &str,
        ) -> Result<ClusterLease> {
            let (store, meta) = (&self.store, &self.meta);
            let mut lease =
                fetch_pages(store, meta, &self.builder, cluster, columns, entries).await?;
            let read = |b: &RNTupleReaderBuilder| -> crate::Result<Vec<RecordBatch>> {
                b.clone()
                    .with_clusters([cluster.id])
                    .with_entry_range(entries.clone())
                    .build()?
                    .map(|b| b.map_err(Error::from))
                    .collect()
            };
            let remote = read(&self.builder);
            assert!(
                !fetch_misses(store, meta, &mut lease).await?,
                "{context}: a page was missed"
            );
            assert_eq!(
                remote.map_err(|e| format!("{context}: {e}")).unwrap(),
                read(&self.local)?,
                "{context}"
            );
            Ok(lease)
        }
    }

    /// A part of a cluster of an object store's file fetches the pages its
    /// entries reach, found from its offsets, and decodes from them alone
    /// (no page is missed) the same batches as the local file; it leaves
    /// pages of the cluster out where it can.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn parts_of_clusters_fetch_the_pages_they_read() -> Result<()> {
        let mut parts_read = 0;
        let (mut part_pages, mut cluster_pages) = (0usize, 0usize);
        for &(file, name) in CASES {
            let Some(path) = crate::test_util::fixture(file) else {
                continue;
            };
            let remote = Remote::load(&path, Some(name)).await?;
            for (k, cluster) in remote.clusters.iter().enumerate() {
                let all = store::page_ranges(cluster, &remote.columns);
                for part in parts(cluster.n_entries, k as u64) {
                    let entries = cluster.first_entry + part.start..cluster.first_entry + part.end;
                    let context =
                        format!("{file} {name} cluster {} entries {entries:?}", cluster.id);
                    // No columns to fall back to: what is fetched is what
                    // the rounds of `part_pages` found.
                    let lease = remote
                        .fetch_and_read(cluster, &[], &entries, &context)
                        .await?;
                    drop(lease);

                    let mut pages = Vec::new();
                    let complete = remote
                        .local
                        .part_pages(cluster, part, &|_| true, &mut pages)?;
                    assert!(complete, "{context}");
                    assert!(pages.iter().all(|p| all.contains(p)), "{context}");
                    pages.sort_by_key(|p| p.start);
                    pages.dedup();
                    part_pages += pages.len();
                    cluster_pages += all.len();
                    parts_read += 1;
                }
            }
        }
        if parts_read == 0 {
            eprintln!("skipped: no fixtures");
            return Ok(());
        }
        eprintln!("{parts_read} parts took {part_pages} of their clusters' {cluster_pages} pages");
        assert!(
            part_pages * 4 < cluster_pages * 3,
            "{part_pages} of {cluster_pages}"
        );
        Ok(())
    }

    /// With its columns named, a part of a cluster of NanoAOD-style events
    /// (collections of a few objects an event) fetches its items' pages in
    /// the round of its offsets: the even share guesses them. It decodes
    /// as the local file does, and fetches little more than its pages.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn parts_of_clusters_take_one_round_of_fetches() -> Result<()> {
        let Some(path) = crate::test_util::fixture("adl/nanoaod_clusters.root") else {
            return Ok(());
        };
        let remote = Remote::load(&path, None).await?;
        let columns = &remote.columns;
        let (mut parts_read, mut one_round) = (0, 0);
        for (k, cluster) in remote.clusters.iter().enumerate() {
            let all = store::page_ranges(cluster, columns);
            let size = |ranges: &[Range<u64>]| ranges.iter().map(|r| r.end - r.start).sum::<u64>();
            let largest = all.iter().map(|r| r.end - r.start).max().unwrap_or(0);
            for part in parts(cluster.n_entries, k as u64) {
                let entries = cluster.first_entry + part.start..cluster.first_entry + part.end;
                let context = format!("cluster {} entries {entries:?}", cluster.id);
                let lease = remote
                    .fetch_and_read(cluster, columns, &entries, &context)
                    .await?;
                let mut needed = Vec::new();
                remote
                    .local
                    .part_pages(cluster, part, &|_| true, &mut needed)?;
                needed.sort_by_key(|p| p.start);
                needed.dedup();
                // A guess misses by at most a page at each end of a column.
                let slack = 2 * columns.len() as u64 * largest;
                assert!(
                    lease.fetched <= size(&needed) + slack,
                    "{context}: fetched {} for {} of pages",
                    lease.fetched,
                    size(&needed)
                );
                assert!(lease.rounds <= 2, "{context}: {} rounds", lease.rounds);
                one_round += usize::from(lease.rounds == 1);
                parts_read += 1;
            }
        }
        eprintln!("{one_round} of {parts_read} parts took one round");
        assert!(parts_read > 20);
        assert!(
            one_round * 10 >= parts_read * 9,
            "{one_round} of {parts_read}"
        );
        Ok(())
    }
}
