//! The reader builder and the record batch iterator.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::ntuple::RNTuple;
use super::pipeline::{BatchRanges, Pipeline};
use crate::arrow::assemble::NodeReader;
use crate::arrow::schema::project;
use crate::arrow::FieldNode;
use crate::descriptor::{ClusterDescriptor, Descriptor};
use crate::error::{Error, Result, ResultExt};
use crate::io::PrefetchRange;
use crate::page::{Limits, PageSource, ReadStats};

/// Default number of entries per batch.
pub const DEFAULT_BATCH_SIZE: usize = 65_536;

/// Reads whose batches hold at least this many bytes of arrays write large
/// decoded pages with streaming stores, which bypass the cache: with a
/// couple of such batches in flight and a page of every column kept for the
/// next batches, the values leave the cache before anything reads them, and
/// ordinary stores would first read every line of the fresh output from
/// memory. Smaller batches, such as SQL scans', are read while cached.
const STREAMING_BATCH_BYTES: u64 = 4 << 20;

/// Configures a read of one RNTuple, in the manner of arrow-rs'
/// `ParquetRecordBatchReaderBuilder`: metadata is available before
/// [`build`](Self::build) and every setter consumes and returns the builder.
///
/// ```no_run
/// use rntuple::RNTupleFile;
/// let file = RNTupleFile::open("events.root")?;
/// let reader = file
///     .reader_builder(Some("Events"))?
///     .with_projection(["Muon_pt", "nMuon"])?
///     .with_entry_range(0..1000)
///     .with_batch_size(256)
///     .build()?;
/// for batch in reader {
///     println!("{} rows", batch?.num_rows());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct RNTupleReaderBuilder {
    ntuple: RNTuple,
    /// The fields read; `None` reads every field of the mapping (cloned
    /// only when the reader is built, so a builder that is then projected
    /// never copies a wide mapping).
    nodes: Option<Vec<FieldNode>>,
    schema: SchemaRef,
    entry_range: Option<Range<u64>>,
    clusters: Option<Vec<u64>>,
    clusters_in_flight: usize,
    batches_ahead: Option<usize>,
    batch_size: usize,
    limit: Option<u64>,
    limits: Limits,
}

impl RNTupleReaderBuilder {
    /// A builder reading every field of `ntuple`.
    pub fn new(ntuple: RNTuple) -> Self {
        Self {
            nodes: None,
            schema: ntuple.mapping().schema.clone(),
            entry_range: None,
            clusters: None,
            clusters_in_flight: 1,
            batches_ahead: None,
            batch_size: DEFAULT_BATCH_SIZE,
            limit: None,
            limits: ntuple.limits(),
            ntuple,
        }
    }

    /// The Arrow schema of the batches, with the projection applied.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The RNTuple's descriptor.
    pub fn descriptor(&self) -> &Arc<Descriptor> {
        self.ntuple.descriptor()
    }

    /// The RNTuple being read.
    pub fn ntuple(&self) -> &RNTuple {
        &self.ntuple
    }

    /// Reads only the fields at these paths: top-level names (`"Muon_pt"`)
    /// or nested paths (`"Jet.pt"`), which read only the columns below them.
    pub fn with_projection<I, S>(mut self, paths: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let paths: Vec<String> = paths.into_iter().map(|s| s.as_ref().to_string()).collect();
        let mapping = self.ntuple.mapping();
        let nodes = project(mapping, self.ntuple.descriptor(), &paths)?;
        let fields: Vec<_> = nodes.iter().map(|n| n.arrow.clone()).collect();
        self.nodes = Some(nodes);
        self.schema = Arc::new(Schema::new_with_metadata(
            fields,
            mapping.schema.metadata().clone(),
        ));
        Ok(self)
    }

    /// Reads only entries in `range` (clamped to the entries there are).
    pub fn with_entry_range(mut self, range: Range<u64>) -> Self {
        self.entry_range = Some(range);
        self
    }

    /// Reads only the clusters with these IDs.
    pub fn with_clusters(mut self, clusters: impl IntoIterator<Item = u64>) -> Self {
        self.clusters = Some(clusters.into_iter().collect());
        self
    }

    /// At most `n` entries per batch (at least 1).
    pub fn with_batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// Bounds the memory of the read: the largest page and the bytes one
    /// batch of one column may decompress. A read that would exceed them
    /// fails with [`Error::LimitExceeded`](crate::Error::LimitExceeded).
    /// Defaults to the limits the RNTuple was opened with.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Decodes up to `n` clusters at once, each on a thread of its own;
    /// batches still come in entry order. The default, 1, reads clusters one
    /// after another (fields of a batch are decoded in parallel either way).
    /// More clusters in flight keep more cores busy when few fields are
    /// read, and hold up to that many clusters' decoded batches in memory:
    /// the clusters behind the oldest one are decoded while it is consumed.
    pub fn with_clusters_in_flight(mut self, n: usize) -> Self {
        self.clusters_in_flight = n.max(1);
        self
    }

    /// Lets each field decode up to `n` batches past the one the consumer
    /// waits for. Fields (top-level fields, each on the rayon pool) run
    /// ahead of each other this way instead of meeting at the end of every
    /// batch, and decoding goes on while the consumer works on a batch;
    /// memory holds up to `n` more batches. With 0, batches are decoded one
    /// at a time on the consumer's thread. By default, 2, or 0 for batches
    /// so small (entries times fields) that handing them to the pool costs
    /// more than decoding them.
    pub fn with_batches_ahead(mut self, n: usize) -> Self {
        self.batches_ahead = Some(n);
        self
    }

    /// Stops after `n` entries.
    pub fn with_limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// The reads of clusters the reader will make.
    fn plan(&self) -> Result<Plan> {
        let n_entries = self.ntuple.n_entries();
        let wanted = self.entry_range.clone().unwrap_or(0..n_entries);
        let wanted = wanted.start.min(n_entries)..wanted.end.min(n_entries);
        let mut remaining = self.limit.unwrap_or(u64::MAX);
        let mut plan = Vec::new();
        let clusters = self.ntuple.all_clusters()?;
        for (index, cluster) in clusters.iter().enumerate() {
            if let Some(ids) = &self.clusters {
                if !ids.contains(&cluster.id) {
                    continue;
                }
            }
            let end = cluster.first_entry + cluster.n_entries;
            let start = wanted.start.max(cluster.first_entry);
            let stop = wanted.end.min(end);
            if start >= stop || remaining == 0 {
                continue;
            }
            let take = (stop - start).min(remaining);
            remaining -= take;
            let first = start - cluster.first_entry;
            plan.push((index, first..first + take));
        }
        Ok(Plan {
            clusters,
            reads: plan,
        })
    }

    /// Appends the stored byte ranges of the pages that reading
    /// cluster-relative `entries` of `cluster` decompresses, for a reader
    /// whose pages must be fetched before it runs. Items of collections are
    /// placed by their offsets, read through the RNTuple's page source from
    /// pages for which `held` is true; `false` means some were not held yet:
    /// call again once the pages given so far are (one more call per level of
    /// nested collections).
    #[cfg(feature = "datafusion")]
    pub(crate) fn part_pages(
        &self,
        cluster: &ClusterDescriptor,
        entries: Range<u64>,
        held: &dyn Fn(&Range<u64>) -> bool,
        out: &mut Vec<Range<u64>>,
    ) -> Result<bool> {
        let descriptor = self.ntuple.descriptor();
        let pages = PageSource {
            limits: self.limits,
            ..self.ntuple.page_source()
        };
        let nodes = match &self.nodes {
            Some(nodes) => nodes.as_slice(),
            None => self.ntuple.mapping().nodes.as_slice(),
        };
        nodes_part_pages(descriptor, &pages, nodes, cluster, entries, held, out)
    }

    /// Plans the read and returns the batch iterator.
    pub fn build(self) -> Result<RNTupleRecordBatchReader> {
        let Plan { clusters, reads } = self.plan()?;
        let pages = PageSource {
            limits: self.limits,
            ..self.ntuple.page_source()
        };
        Ok(RNTupleRecordBatchReader {
            pages,
            nodes: self
                .nodes
                .unwrap_or_else(|| self.ntuple.mapping().nodes.clone()),
            ntuple: self.ntuple,
            schema: self.schema,
            batch_size: self.batch_size as u64,
            clusters,
            plan: reads.into_iter(),
            current: None,
            clusters_in_flight: self.clusters_in_flight,
            batches_ahead: self.batches_ahead,
            in_flight: VecDeque::new(),
            next_prefetched: false,
        })
    }
}

/// The clusters of an RNTuple, and the reads of them to make.
struct Plan {
    clusters: Arc<Vec<ClusterDescriptor>>,
    /// (index in `clusters`, cluster-relative entry range)
    reads: Vec<(usize, Range<u64>)>,
}

/// Iterates over the record batches of a read, in entry order.
#[derive(Debug)]
pub struct RNTupleRecordBatchReader {
    ntuple: RNTuple,
    pages: PageSource,
    nodes: Vec<FieldNode>,
    schema: SchemaRef,
    batch_size: u64,
    /// The clusters of the RNTuple, held while the read lasts.
    clusters: Arc<Vec<ClusterDescriptor>>,
    /// The reads still to start: (index in `clusters`, entry range).
    plan: std::vec::IntoIter<(usize, Range<u64>)>,
    /// The cluster being read, when clusters are read one at a time.
    current: Option<ClusterState>,
    clusters_in_flight: usize,
    batches_ahead: Option<usize>,
    /// The clusters being decoded on threads of their own, in entry order.
    in_flight: VecDeque<ClusterThread>,
    /// Whether the read at the head of `plan` has been prefetched.
    next_prefetched: bool,
}

/// A cluster being decoded on a thread of its own: its batches, and the
/// thread, to tell a finished cluster from a thread that died.
#[derive(Debug)]
struct ClusterThread {
    id: u64,
    batches: Receiver<Result<RecordBatch>>,
    thread: std::thread::JoinHandle<()>,
}

/// The bytes of the arrays of a batch of `batch_size` entries of `readers`
/// in `cluster`, estimated from the decompressed bytes of the cluster's
/// pages of the columns they read.
fn batch_bytes(readers: &[NodeReader], cluster: &ClusterDescriptor, batch_size: u64) -> u64 {
    let mut seen = HashSet::new();
    let mut page_bytes = 0u64;
    for reader in readers {
        reader.add_page_bytes(&mut seen, &mut page_bytes);
    }
    let entries = cluster.n_entries.max(1);
    page_bytes.saturating_mul(batch_size.min(entries)) / entries
}

/// The batches of one cluster still to read.
#[derive(Debug)]
struct ClusterState {
    id: u64,
    batches: Pipeline,
}

impl ClusterState {
    fn open(
        descriptor: &Descriptor,
        pages: &PageSource,
        nodes: &[FieldNode],
        cluster: &ClusterDescriptor,
        range: Range<u64>,
        batch_size: u64,
        batches_ahead: Option<usize>,
    ) -> Result<Self> {
        let mut readers = nodes
            .iter()
            .map(|node| NodeReader::new(descriptor, pages, node, cluster))
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("cluster {}", cluster.id))?;
        for reader in &mut readers {
            reader.set_read_end(range.end);
        }
        if batch_bytes(&readers, cluster, batch_size) >= STREAMING_BATCH_BYTES {
            for reader in &mut readers {
                reader.set_streaming(true);
            }
        }
        Ok(Self {
            id: cluster.id,
            batches: Pipeline::new(readers, BatchRanges::new(range, batch_size), batches_ahead),
        })
    }

    /// The next batch of this cluster, `None` at its end.
    fn next_batch(&mut self, schema: &SchemaRef) -> Result<Option<RecordBatch>> {
        let Some((range, columns)) = self.batches.take() else {
            return Ok(None);
        };
        let id = self.id;
        let columns = columns.with_context(|| format!("cluster {id}"))?;
        let options =
            RecordBatchOptions::new().with_row_count(Some((range.end - range.start) as usize));
        Ok(Some(RecordBatch::try_new_with_options(
            schema.clone(),
            columns,
            &options,
        )?))
    }
}

impl RNTupleRecordBatchReader {
    /// The pages this read has decompressed so far, and their stored bytes.
    pub fn read_stats(&self) -> Arc<ReadStats> {
        self.pages.stats.clone()
    }

    /// The next batch, with this crate's error (the iterator gives
    /// [`ArrowError`]s).
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.clusters_in_flight > 1 {
            return self.next_parallel_batch();
        }
        loop {
            if let Some(state) = &mut self.current {
                if let Some(batch) = state.next_batch(&self.schema)? {
                    return Ok(Some(batch));
                }
                self.current = None;
            }
            let Some((index, range)) = self.plan.next() else {
                return Ok(None);
            };
            let descriptor = self.ntuple.descriptor();
            if self.pages.source.prefetches() {
                // This read's pages, unless asked for as the next one,
                // then the next read's, which arrive while this one decodes.
                if !std::mem::take(&mut self.next_prefetched) {
                    self.prefetch(index, &range);
                }
                if let Some((next, entries)) = self.plan.as_slice().first() {
                    self.prefetch(*next, entries);
                    self.next_prefetched = true;
                }
            }
            self.current = Some(ClusterState::open(
                descriptor,
                &self.pages,
                &self.nodes,
                planned(&self.clusters, index)?,
                range,
                self.batch_size,
                self.batches_ahead,
            )?);
        }
    }

    /// The next batch when several clusters are decoded at once: the
    /// oldest cluster's thread gives it; a finished cluster makes room for
    /// the next one in the plan.
    fn next_parallel_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            while self.in_flight.len() < self.clusters_in_flight {
                let Some((index, range)) = self.plan.next() else {
                    break;
                };
                let thread = self.spawn_cluster(index, range)?;
                self.in_flight.push_back(thread);
            }
            let Some(oldest) = self.in_flight.front() else {
                return Ok(None);
            };
            if let Ok(batch) = oldest.batches.recv() {
                return batch.map(Some);
            }
            // The thread has sent the whole cluster, or died.
            if let Some(done) = self.in_flight.pop_front() {
                if done.thread.join().is_err() {
                    return Err(Error::Io(std::io::Error::other(format!(
                        "the thread decoding cluster {} stopped",
                        done.id
                    ))));
                }
            }
        }
    }

    /// [`prefetch`] for the read of `entries` of cluster `index`.
    fn prefetch(&self, index: usize, entries: &Range<u64>) {
        let descriptor = self.ntuple.descriptor();
        prefetch(
            descriptor,
            &self.pages,
            &self.nodes,
            &self.clusters,
            index,
            entries,
        );
    }

    /// Starts a thread that decodes `range` of cluster `index` into an
    /// unbounded channel; it stops early when the receiver is dropped.
    fn spawn_cluster(&self, index: usize, range: Range<u64>) -> Result<ClusterThread> {
        // Room for the whole cluster: a thread behind the oldest cluster
        // must not stop after a few batches, or it would hardly run at the
        // same time as the others. The channel grows with the batches sent,
        // not with the entry count the file claims.
        let (tx, rx) = channel();
        let descriptor = self.ntuple.descriptor().clone();
        let pages = self.pages.clone();
        let nodes = self.nodes.clone();
        let schema = self.schema.clone();
        let batch_size = self.batch_size;
        let ahead = self.batches_ahead;
        let clusters = self.clusters.clone();
        let id = planned(&clusters, index)?.id;
        let thread = std::thread::Builder::new()
            .name(format!("rntuple-cluster-{id}"))
            .spawn(move || {
                if pages.source.prefetches() {
                    prefetch(&descriptor, &pages, &nodes, &clusters, index, &range);
                }
                let state = planned(&clusters, index).and_then(|cluster| {
                    ClusterState::open(
                        &descriptor,
                        &pages,
                        &nodes,
                        cluster,
                        range,
                        batch_size,
                        ahead,
                    )
                });
                let mut state = match state {
                    Ok(state) => state,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                loop {
                    let batch = state.next_batch(&schema).transpose();
                    let Some(batch) = batch else { return };
                    let failed = batch.is_err();
                    if tx.send(batch).is_err() || failed {
                        return;
                    }
                }
            })?;
        Ok(ClusterThread {
            id,
            batches: rx,
            thread,
        })
    }

    /// Reads all remaining batches.
    pub fn collect_batches(self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        let mut reader = self;
        while let Some(batch) = reader.next_batch()? {
            out.push(batch);
        }
        Ok(out)
    }
}

/// Tells the source of `pages`, one that fetches ahead (an object store),
/// the pages that the read of `entries` of cluster `index` will decompress,
/// and how far into the read each is needed ([`when_needed`]). A read of
/// part of a cluster reads the offsets of its collections here to find
/// their items' pages. Nothing is reported: the read itself meets any error
/// again.
///
/// An object store's reader keeps what its last two calls asked for (until
/// used up): a sequential read asks for the read it starts and the next;
/// with more clusters in flight than two, the oldest ones' pages are
/// dropped and fetched again as they are read.
fn prefetch(
    descriptor: &Descriptor,
    pages: &PageSource,
    nodes: &[FieldNode],
    clusters: &[ClusterDescriptor],
    index: usize,
    entries: &Range<u64>,
) {
    let Ok(cluster) = planned(clusters, index) else {
        return;
    };
    // Pages read here to find items are not the read's.
    let pages = PageSource {
        stats: Arc::default(),
        ..pages.clone()
    };
    let mut ranges = Vec::new();
    if entries.start == 0 && entries.end >= cluster.n_entries {
        // The whole cluster: every page, without reading offsets.
        for node in nodes {
            let Ok(reader) = NodeReader::new(descriptor, &pages, node, cluster) else {
                return;
            };
            reader.all_pages(&mut ranges);
        }
    } else {
        // First the pages known without reading anything, the offsets of
        // collections among them, all at once; then the items that the
        // offsets place, read here from the chunks on their way (the
        // second call continues the first: it asks for its pages again).
        let part = |held: &dyn Fn(&Range<u64>) -> bool, out: &mut Vec<Range<u64>>| {
            nodes_part_pages(
                descriptor,
                &pages,
                nodes,
                cluster,
                entries.clone(),
                held,
                out,
            )
        };
        match part(&|_| false, &mut ranges) {
            Ok(true) => {}
            Ok(false) => {
                pages.source.prefetch(&when_needed(cluster, ranges.clone()));
                ranges.clear();
                if part(&|_| true, &mut ranges).is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
    pages.source.prefetch(&when_needed(cluster, ranges));
}

/// Each of `ranges`, pages of `cluster`, with how far into the read it is
/// first needed: the share of the elements that its column's read passes
/// before the page starts. The first page of every column is needed at
/// once; a column's later pages as the read reaches them. A page that
/// several fields read (projections), or that several columns share, is
/// needed when the first of them needs it.
fn when_needed(cluster: &ClusterDescriptor, ranges: Vec<Range<u64>>) -> Vec<PrefetchRange> {
    let asked: HashSet<u64> = ranges.iter().map(|r| r.start).collect();
    let mut at_of: HashMap<u64, f32> = HashMap::new();
    let mut firsts = Vec::new();
    for column in cluster
        .columns
        .iter()
        .filter(|c| c.element_offset.is_some())
    {
        // The asked pages of the column and the elements before each.
        firsts.clear();
        let mut first = 0u64;
        let mut end = 0u64;
        for page in column.pages.iter() {
            let next = first.saturating_add(u64::from(page.n_elements));
            let start = page.stored_range().start;
            if asked.contains(&start) {
                firsts.push((start, first));
                end = next;
            }
            first = next;
        }
        let Some(&(_, read_start)) = firsts.first() else {
            continue;
        };
        let len = end.saturating_sub(read_start).max(1) as f32;
        for &(start, first) in &firsts {
            let at = first.saturating_sub(read_start) as f32 / len;
            at_of
                .entry(start)
                .and_modify(|a| *a = a.min(at))
                .or_insert(at);
        }
    }
    ranges
        .into_iter()
        .map(|range| PrefetchRange {
            at: at_of.get(&range.start).copied().unwrap_or(0.0),
            range,
        })
        .collect()
}

/// [`NodeReader::part_pages`] of each of `nodes` in `cluster`: whether all
/// the pages are known (see [`RNTupleReaderBuilder::part_pages`]).
fn nodes_part_pages(
    descriptor: &Descriptor,
    pages: &PageSource,
    nodes: &[FieldNode],
    cluster: &ClusterDescriptor,
    entries: Range<u64>,
    held: &dyn Fn(&Range<u64>) -> bool,
    out: &mut Vec<Range<u64>>,
) -> Result<bool> {
    let mut complete = true;
    for node in nodes {
        let mut reader = NodeReader::new(descriptor, pages, node, cluster)?;
        complete &= reader.part_pages(entries.clone(), held, out)?;
    }
    Ok(complete)
}

/// Cluster `index` of a plan.
fn planned(clusters: &[ClusterDescriptor], index: usize) -> Result<&ClusterDescriptor> {
    clusters
        .get(index)
        .ok_or_else(|| Error::InvalidArgument(format!("no cluster at index {index}")))
}

impl Iterator for RNTupleRecordBatchReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => None,
            Err(e) => {
                // After an error the read is over.
                self.plan = Vec::new().into_iter();
                self.current = None;
                self.in_flight.clear();
                Some(Err(e.into()))
            }
        }
    }
}

impl RecordBatchReader for RNTupleRecordBatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::RNTupleFile;

    /// Every column's pages are needed in order, its first at once; a
    /// page asked twice (a projection reads its column again) is needed
    /// when the first asker needs it.
    #[test]
    fn pages_are_needed_in_their_columns_order() -> Result<()> {
        let Some(path) = crate::test_util::fixture("adl/nanoaod_clusters.root") else {
            return Ok(());
        };
        let file = RNTupleFile::open(&path)?;
        let clusters = file.reader_builder(None)?.plan()?.clusters;
        let cluster = clusters.first().expect("a cluster");
        let columns: Vec<Vec<Range<u64>>> = cluster
            .columns
            .iter()
            .map(|c| c.pages.iter().map(|p| p.stored_range()).collect())
            .collect();
        let mut ranges: Vec<Range<u64>> = columns.iter().flatten().cloned().collect();
        let again = ranges.clone();
        ranges.extend(again);
        let needed = when_needed(cluster, ranges);
        let at = |r: &Range<u64>| {
            let found = needed.iter().filter(|n| &n.range == r);
            found.map(|n| n.at).collect::<Vec<_>>()
        };
        let mut later_pages = 0;
        for pages in columns.iter().filter(|p| p.len() > 1) {
            let ats: Vec<f32> = pages.iter().map(|r| at(r)[0]).collect();
            assert_eq!(ats[0], 0.0);
            assert!(ats.windows(2).all(|w| w[0] <= w[1]), "{ats:?}");
            assert!(ats.iter().all(|&a| (0.0..1.0).contains(&a)), "{ats:?}");
            for r in pages {
                let both = at(r);
                assert!(both.len() >= 2 && both.iter().all(|&a| a == both[0]));
            }
            later_pages += ats.iter().filter(|&&a| a > 0.0).count();
        }
        assert!(later_pages > 0, "some pages are needed after the start");
        Ok(())
    }
}
