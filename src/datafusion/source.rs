//! [`RNTupleSource`]: the [`FileSource`] of RNTuple scans, and the split of
//! files into cluster ranges.
//!
//! ```text
//!  file a.root: clusters 0 1 2 3 4 5      file b.root: clusters 0 1
//!  weights (projected bytes) ─ greedy, in order ─> target_partitions pieces
//!  piece = PartitionedFile + byte range; a cluster belongs to the piece
//!          whose range holds its first page      a.root:0..812  a.root:812..2048  b.root
//! ```

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileOpener, FileScanConfig, FileSource};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result;
use datafusion::physical_expr::utils::conjunction;
use datafusion::physical_expr::{LexOrdering, PhysicalExpr};
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::projection::ProjectionExprs;
use datafusion::physical_plan::DisplayFormatType;
use object_store::ObjectStore;

use super::index;
use super::opener::{needed_columns, RNTupleOpener};
use super::projection::reader_paths;
use super::store::{stored_bytes, MetadataCache, NTupleMeta};
use super::widen::widen_casts;
use super::RNTupleReadOptions;

/// Scans of up to this many files weigh their clusters by the bytes of the
/// projected columns; larger scans by the clusters' whole stored bytes, so
/// that planning does not read the page lists of every file again.
const WEIGHED_FILES: usize = 16;

/// Scans RNTuple files: projection (nested too), cluster ranges, limit and
/// cluster pruning by a sidecar index.
#[derive(Clone)]
pub struct RNTupleSource {
    table_schema: TableSchema,
    /// The projection pushed into the scan; `None` reads every column.
    /// Built only when pushed: splitting the identity projection of a table
    /// of thousands of fields costs more than the rest of planning a scan.
    projection: Option<SplitProjection>,
    options: RNTupleReadOptions,
    cache: Arc<MetadataCache>,
    metrics: ExecutionPlanMetricsSet,
    batch_size: Option<usize>,
    predicate: Option<Arc<dyn PhysicalExpr>>,
}

impl RNTupleSource {
    pub(crate) fn new(
        table_schema: TableSchema,
        options: RNTupleReadOptions,
        cache: Arc<MetadataCache>,
    ) -> Self {
        Self {
            projection: None,
            table_schema,
            options,
            cache,
            metrics: ExecutionPlanMetricsSet::new(),
            batch_size: None,
            predicate: None,
        }
    }

    /// The field paths the reader reads (`Jet.pt` for `get_field(Jet, 'pt')`).
    pub fn reader_paths(&self) -> Vec<String> {
        let schema = self.table_schema.file_schema();
        let Some(projection) = &self.projection else {
            return schema.fields().iter().map(|f| f.name().clone()).collect();
        };
        let exprs: Vec<_> = projection.source.iter().map(|p| p.expr.clone()).collect();
        reader_paths(schema, &projection.file_indices, &exprs)
    }

    /// The projection of the scan, the identity when none was pushed.
    fn split_projection(&self) -> SplitProjection {
        self.projection
            .clone()
            .unwrap_or_else(|| SplitProjection::unprojected(&self.table_schema))
    }

    /// The stored bytes of the projected columns in each cluster of each
    /// file, from their page lists, when the scan has at most
    /// [`WEIGHED_FILES`] files and their page lists can be read without
    /// waiting on an object store; `None` otherwise, when each cluster
    /// weighs its whole stored bytes.
    fn cluster_weights(&self, metas: &[&Arc<NTupleMeta>]) -> Option<Vec<Vec<u64>>> {
        if metas.len() > WEIGHED_FILES {
            return None;
        }
        let paths = self.reader_paths();
        metas
            .iter()
            .map(|meta| {
                let columns = needed_columns(meta, &paths).unwrap_or_default();
                let clusters = meta.page_lists_held().ok()?;
                Some(clusters.iter().map(|c| stored_bytes(c, &columns)).collect())
            })
            .collect()
    }
}

/// The clusters of `meta` that `file` reads, in entry order.
#[cfg(test)]
pub(crate) fn clusters_of(meta: &NTupleMeta, file: &PartitionedFile) -> Vec<usize> {
    cluster_entries_of(meta, file)
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// The clusters of `meta` that `file` reads, in entry order, each with the
/// entries it reads of it.
///
/// A cluster spans the bytes from its first page to the next cluster's
/// first page (the last one, to the end of the file), and a byte range reads
/// the share of the cluster's entries that it covers of that span: a range
/// that ends 40% into the span reads the first 40% of the entries. So ranges
/// cut at clusters' first pages read whole clusters (each the one whose
/// first page it holds), and ranges that tile the file read every entry
/// once, wherever they are cut.
pub(crate) fn cluster_entries_of(
    meta: &NTupleMeta,
    file: &PartitionedFile,
) -> Vec<(usize, Range<u64>)> {
    if file.range.is_none() {
        // The whole file: every cluster, whatever its pages' positions.
        return (meta.clusters.iter().enumerate())
            .map(|(c, d)| (c, d.first_entry..d.first_entry + d.n_entries))
            .collect();
    }
    let (lo, hi) = byte_range(meta, file);
    (0..meta.clusters.len())
        .filter_map(|c| {
            let entries = entry_at(meta, c, lo)..entry_at(meta, c, hi);
            (!entries.is_empty()).then_some((c, entries))
        })
        .collect()
}

/// The entries `file` reads.
pub(crate) fn entries_of(meta: &NTupleMeta, file: &PartitionedFile) -> u64 {
    cluster_entries_of(meta, file)
        .iter()
        .map(|(_, r)| r.end - r.start)
        .sum()
}

/// The bytes of the file that `file` covers.
fn byte_range(meta: &NTupleMeta, file: &PartitionedFile) -> (u64, u64) {
    match &file.range {
        Some(r) => (
            u64::try_from(r.start).unwrap_or(0),
            u64::try_from(r.end).unwrap_or(0),
        ),
        None => (0, meta.size),
    }
}

/// The first entry of cluster `c` that a range starting at byte `at` reads
/// (the cluster's end when `at` is past its span).
fn entry_at(meta: &NTupleMeta, c: usize, at: u64) -> u64 {
    let (Some(cluster), Some(&end)) = (meta.clusters.get(c), meta.span_ends.get(c)) else {
        return 0;
    };
    let (start, n) = (cluster.position, cluster.n_entries);
    let into = if at <= start {
        0
    } else if at >= end {
        n
    } else {
        // at - start < end - start, so the share is below n.
        (u128::from(n) * u128::from(at - start) / u128::from(end - start)) as u64
    };
    cluster.first_entry + into
}

/// The byte at which to cut cluster `c` so that the range starting there
/// reads its entries from about `entry` on (exactly when the span has at
/// least as many bytes as the cluster has entries); `None` when the
/// cluster's span is empty.
fn byte_at(meta: &NTupleMeta, c: usize, entry: u64) -> Option<u64> {
    let cluster = meta.clusters.get(c)?;
    let end = *meta.span_ends.get(c)?;
    let span = end.checked_sub(cluster.position).filter(|&s| s > 0)?;
    let into = entry.checked_sub(cluster.first_entry)?;
    let n = cluster.n_entries.max(1);
    let bytes = (u128::from(into) * u128::from(span)).div_ceil(u128::from(n));
    Some(cluster.position + u64::try_from(bytes).ok()?.min(span))
}

/// One unit of work for the split: the entries a file reads of one
/// cluster, and their weight.
struct Unit {
    file: usize,
    cluster: usize,
    entries: Range<u64>,
    weight: u64,
}

/// Where a partition starts: at the start of a file's range, or at a byte
/// inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cut {
    file: usize,
    byte: Option<u64>,
}

impl FileSource for RNTupleSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema().clone();
        // Without a sidecar (or with `index` off) the file's own bounds
        // still prune.
        let pruning = self
            .predicate
            .as_ref()
            .and_then(|p| index::pruning_predicate(p, &file_schema));
        let opener = RNTupleOpener::new(
            object_store,
            self.cache.clone(),
            self.options.clone(),
            self.reader_paths(),
            self.batch_size.unwrap_or(8192),
            base_config.limit,
            pruning,
            &self.metrics,
            partition,
        );
        ProjectionOpener::try_new(self.split_projection(), Arc::new(opener), &file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        let mut s = self.clone();
        s.batch_size = Some(batch_size);
        Arc::new(s)
    }

    fn filter(&self) -> Option<Arc<dyn PhysicalExpr>> {
        self.predicate.clone()
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        self.projection.as_ref().map(|p| &p.source)
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "rntuple"
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let paths = self.reader_paths().join(", ");
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                if let Some(n) = &self.options.ntuple {
                    write!(f, ", ntuple={n}")?;
                }
                write!(f, ", fields=[{paths}]")?;
                if let Some(p) = &self.predicate {
                    write!(f, ", pruning_predicate={p}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                if let Some(n) = &self.options.ntuple {
                    writeln!(f, "ntuple={n}")?;
                }
                writeln!(f, "fields=[{paths}]")
            }
        }
    }

    fn repartitioned(
        &self,
        target_partitions: usize,
        repartition_file_min_size: usize,
        output_ordering: Option<LexOrdering>,
        config: &FileScanConfig,
    ) -> Result<Option<FileScanConfig>> {
        let _ = output_ordering; // pieces keep entry order within a partition either way
        let files: Vec<&PartitionedFile> =
            config.file_groups.iter().flat_map(|g| g.iter()).collect();
        let Some(metas) = files
            .iter()
            .map(|f| f.extension::<Arc<NTupleMeta>>())
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None); // planned without metadata: keep the groups
        };
        let weights = self.cluster_weights(&metas);
        let mut units = Vec::new();
        for (fi, (file, meta)) in files.iter().zip(&metas).enumerate() {
            let mut read = cluster_entries_of(meta, file);
            // Byte ranges cut the file in position order.
            read.sort_by_key(|(c, _)| (meta.clusters.get(*c).map_or(0, |c| c.position), *c));
            for (ci, entries) in read {
                let Some(cluster) = meta.clusters.get(ci) else {
                    continue;
                };
                let whole = weights
                    .as_ref()
                    .and_then(|w| w.get(fi)?.get(ci).copied())
                    .unwrap_or(cluster.stored_bytes);
                let share = u128::from(whole) * u128::from(entries.end - entries.start)
                    / u128::from(cluster.n_entries.max(1));
                units.push(Unit {
                    file: fi,
                    cluster: ci,
                    entries,
                    weight: u64::try_from(share).unwrap_or(u64::MAX).saturating_add(1),
                });
            }
        }
        let total = units.iter().map(|u| u.weight).fold(0, u64::saturating_add);
        if target_partitions <= 1 || total < repartition_file_min_size as u64 {
            return Ok(None);
        }
        let cuts = cuts(
            &units,
            &metas,
            target_partitions,
            total,
            self.options.min_piece_entries,
        );
        // Each file's range is cut at its cuts' bytes, and the pieces go to
        // the groups in order: a cut starts the next group.
        let mut groups: Vec<Vec<PartitionedFile>> = vec![Vec::new()];
        let mut next = cuts.iter().peekable();
        for (fi, (file, meta)) in files.iter().zip(&metas).enumerate() {
            let (lo, hi) = byte_range(meta, file);
            let mut at = lo;
            while let Some(cut) = next.next_if(|c| c.file == fi) {
                match cut.byte {
                    None if groups.last().is_some_and(|g| !g.is_empty()) => {
                        groups.push(Vec::new());
                    }
                    Some(byte) if byte > at && byte < hi => {
                        if let Some(group) = groups.last_mut() {
                            group.push(piece(file, meta, at, byte));
                        }
                        groups.push(Vec::new());
                        at = byte;
                    }
                    _ => {}
                }
            }
            if let Some(group) = groups.last_mut() {
                group.push(piece(file, meta, at, hi));
            }
        }
        groups.retain(|g| !g.is_empty());
        if groups.len() <= 1 {
            return Ok(None);
        }
        let file_groups: Vec<FileGroup> = groups
            .into_iter()
            .map(|files| {
                let rows: u64 = files
                    .iter()
                    .filter_map(|f| Some(entries_of(f.extension::<Arc<NTupleMeta>>()?, f)))
                    .sum();
                let rows = usize::try_from(rows).unwrap_or(usize::MAX);
                let stats = Statistics::new_unknown(self.table_schema.table_schema())
                    .with_num_rows(Precision::Exact(rows));
                FileGroup::new(files).with_statistics(Arc::new(stats))
            })
            .collect();
        let mut out = config.clone();
        out.file_groups = file_groups;
        Ok(Some(out))
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        // The filters only skip clusters (an Inexact pushdown): the rows of
        // the clusters read are still filtered above the scan.
        let verdict = vec![PushedDown::No; filters.len()];
        if !self.options.use_index || filters.is_empty() {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(
                verdict,
            ));
        }
        let mut source = self.clone();
        let all = self.predicate.iter().cloned().chain(filters);
        source.predicate = Some(conjunction(all));
        Ok(
            FilterPushdownPropagation::with_parent_pushdown_result(verdict)
                .with_updated_node(Arc::new(source) as Arc<dyn FileSource>),
        )
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        let merged = match &self.projection {
            Some(inner) => inner.source.try_merge(projection)?,
            None => projection.clone(),
        };
        let merged = widen_casts(merged, self.table_schema.table_schema())?;
        source.projection = Some(SplitProjection::new(
            self.table_schema.file_schema(),
            &merged,
        ));
        Ok(Some(Arc::new(source)))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for p in self.projection.iter().flat_map(|p| p.source.iter()) {
            if f(&p.expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        if let Some(p) = &self.predicate {
            if f(p)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }
}

/// The part of `file` from byte `start` to byte `end`. It carries no
/// statistics of its own: one set per piece is a few hundred KB for a wide
/// schema, and the plan needs only its group's entry count.
fn piece(file: &PartitionedFile, meta: &NTupleMeta, start: u64, end: u64) -> PartitionedFile {
    let mut out = file.clone();
    out.statistics = None;
    if start != 0 || end != meta.size || file.range.is_some() {
        let byte = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
        out.range = Some(datafusion::datasource::listing::FileRange {
            start: byte(start),
            end: byte(end),
        });
    }
    out
}

/// Where the partitions after the first start, for `partitions` of about
/// equal weight: each where its share of `total` begins. That is at the
/// nearer edge of the unit it falls in when the edge is within an eighth of
/// a partition's share; else inside the unit where both parts read at
/// least `min_entries` entries; else at the nearer edge.
fn cuts(
    units: &[Unit],
    metas: &[&Arc<NTupleMeta>],
    partitions: usize,
    total: u64,
    min_entries: u64,
) -> Vec<Cut> {
    let mut cuts: Vec<Cut> = Vec::new();
    // The weight of the units before `u`.
    let (mut before, mut u) = (0u64, 0usize);
    for k in 1..partitions {
        let goal = u128::from(total) * k as u128 / partitions as u128;
        let goal = u64::try_from(goal).unwrap_or(u64::MAX);
        while let Some(unit) = units.get(u).filter(|unit| before + unit.weight <= goal) {
            before += unit.weight;
            u += 1;
        }
        let (Some(unit), Some(meta)) = (units.get(u), units.get(u).and_then(|x| metas.get(x.file)))
        else {
            break;
        };
        let n = unit.entries.end - unit.entries.start;
        let (to_start, to_end) = (goal - before, before + unit.weight - goal);
        let edge = if to_start < to_end { u } else { u + 1 };
        let near_edge = to_start.min(to_end) <= total / partitions as u64 / 8;
        let into = u128::from(n) * u128::from(to_start) / u128::from(unit.weight);
        let into = u64::try_from(into).unwrap_or(n);
        let inside = (!near_edge && into >= min_entries && n - into >= min_entries)
            .then(|| byte_at(meta, unit.cluster, unit.entries.start + into))
            .flatten();
        let cut = match inside {
            Some(byte) => Cut {
                file: unit.file,
                byte: Some(byte),
            },
            None => match edge_cut(units, metas, edge) {
                Some(cut) => cut,
                None => continue,
            },
        };
        if cuts.last() != Some(&cut) {
            cuts.push(cut);
        }
    }
    cuts
}

/// The cut before unit `at`: at the start of its file's range when it is
/// the file's first unit, else at its cluster's first page.
fn edge_cut(units: &[Unit], metas: &[&Arc<NTupleMeta>], at: usize) -> Option<Cut> {
    let unit = units.get(at)?;
    let first_in_file = at == 0 || units.get(at - 1).is_some_and(|u| u.file != unit.file);
    let position = metas.get(unit.file)?.clusters.get(unit.cluster)?.position;
    Some(Cut {
        file: unit.file,
        byte: (!first_in_file).then_some(position),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::datasource::physical_plan::FileScanConfigBuilder;
    use datafusion::execution::object_store::ObjectStoreUrl;
    use object_store::local::LocalFileSystem;
    use object_store::path::Path;
    use object_store::ObjectStoreExt;

    /// The `Clusters` fixture (14 clusters of 190 entries), its metadata
    /// attached to the file as the table attaches it.
    async fn clusters_file() -> Result<Option<(Arc<NTupleMeta>, PartitionedFile)>> {
        let Some(path) = crate::test_util::fixture("clusters.root") else {
            return Ok(None);
        };
        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let object = store.head(&Path::from_filesystem_path(&path)?).await?;
        let meta =
            Arc::new(super::super::store::load_ntuple(&store, &object, None, 0, None).await?);
        let file = PartitionedFile::new_from_meta(object).with_extension(meta.clone());
        Ok(Some((meta, file)))
    }

    /// The entries each cluster is read for by `files`, asserted to be
    /// each of its entries exactly once.
    fn assert_read_once(meta: &NTupleMeta, files: &[PartitionedFile], what: &str) {
        let mut read: Vec<Vec<Range<u64>>> = vec![Vec::new(); meta.clusters.len()];
        for f in files {
            for (c, entries) in cluster_entries_of(meta, f) {
                read[c].push(entries);
            }
        }
        for (c, (cluster, mut ranges)) in meta.clusters.iter().zip(read).enumerate() {
            ranges.sort_by_key(|r| r.start);
            let mut at = cluster.first_entry;
            for r in ranges {
                assert_eq!(r.start, at, "{what}: cluster {c} read from {} on", r.start);
                at = r.end;
            }
            let end = cluster.first_entry + cluster.n_entries;
            assert_eq!(at, end, "{what}: cluster {c} read up to {at}");
        }
    }

    fn with_range(file: &PartitionedFile, start: u64, end: u64) -> PartitionedFile {
        let mut out = file.clone();
        out.range = Some(datafusion::datasource::listing::FileRange {
            start: start as i64,
            end: end as i64,
        });
        out
    }

    /// Byte ranges that tile the file read every entry once, wherever they
    /// are cut: inside clusters, at their first pages, or past the end of
    /// the pages.
    #[tokio::test]
    async fn ranges_that_tile_the_file_read_each_entry_once() -> Result<()> {
        let Some((meta, file)) = clusters_file().await? else {
            return Ok(());
        };
        assert_read_once(&meta, std::slice::from_ref(&file), "whole file");
        let size = meta.size;
        let positions: Vec<u64> = meta.clusters.iter().map(|c| c.position).collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..200 {
            let mut cuts: Vec<u64> = (0..round % 9)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    if seed % 3 == 0 {
                        positions[(seed >> 33) as usize % positions.len()]
                    } else {
                        (seed >> 20) % size
                    }
                })
                .collect();
            cuts.extend([0, size]);
            cuts.sort();
            cuts.dedup();
            let pieces: Vec<PartitionedFile> = cuts
                .windows(2)
                .map(|w| with_range(&file, w[0], w[1]))
                .collect();
            assert_read_once(&meta, &pieces, &format!("cuts {cuts:?}"));
        }
        // A range cut at first pages reads whole clusters, each the one
        // whose first page it holds.
        let (a, b) = (positions[3], positions[6]);
        let read = cluster_entries_of(&meta, &with_range(&file, a, b));
        assert_eq!(read.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [3, 4, 5]);
        for (c, entries) in read {
            let cluster = &meta.clusters[c];
            assert_eq!(
                entries,
                cluster.first_entry..cluster.first_entry + cluster.n_entries
            );
        }
        Ok(())
    }

    /// The entries of the groups of a split, and the entry counts their
    /// statistics give.
    fn group_entries(meta: &NTupleMeta, split: &FileScanConfig) -> Vec<(u64, u64)> {
        split
            .file_groups
            .iter()
            .map(|g| {
                let read: u64 = g.iter().map(|f| entries_of(meta, f)).sum();
                let stated = g
                    .file_statistics(None)
                    .and_then(|s| s.num_rows.get_value().copied())
                    .unwrap_or(usize::MAX);
                (read, stated as u64)
            })
            .collect()
    }

    /// A scan of every field of `meta` that cuts clusters where both parts
    /// keep `min_piece_entries`.
    fn source_of(meta: &NTupleMeta, min_piece_entries: u64) -> RNTupleSource {
        RNTupleSource::new(
            TableSchema::from(meta.schema.clone()),
            RNTupleReadOptions::default().with_min_piece_entries(min_piece_entries),
            Arc::new(MetadataCache::default()),
        )
    }

    /// Every piece of every group of `split`.
    fn pieces(split: &FileScanConfig) -> Vec<PartitionedFile> {
        split
            .file_groups
            .iter()
            .flat_map(|g| g.iter().cloned())
            .collect()
    }

    fn scan_config(source: &RNTupleSource, files: Vec<PartitionedFile>) -> FileScanConfig {
        FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source.clone()))
            .with_file_groups(vec![FileGroup::new(files)])
            .build()
    }

    /// Split at clusters' first pages only, every cluster is read once, by
    /// one group.
    #[tokio::test]
    async fn cluster_ranges_cover_every_cluster_once() -> Result<()> {
        let Some((meta, file)) = clusters_file().await? else {
            return Ok(());
        };
        let n_clusters = meta.clusters.len();
        assert!(n_clusters > 4);
        let source = source_of(&meta, u64::MAX);
        let config = scan_config(&source, vec![file]);
        for target in [2, 3, 4, 7] {
            let Some(split) = source.repartitioned(target, 0, None, &config)? else {
                panic!("no split into {target}");
            };
            assert!(split.file_groups.len() <= target && split.file_groups.len() > 1);
            let mut seen: Vec<usize> = split
                .file_groups
                .iter()
                .flat_map(|g| g.iter())
                .flat_map(|f| clusters_of(&meta, f))
                .collect();
            seen.sort();
            assert_eq!(seen, (0..n_clusters).collect::<Vec<_>>(), "target {target}");
            for (read, stated) in group_entries(&meta, &split) {
                assert_eq!(read, stated, "target {target}");
            }
            let rows: u64 = group_entries(&meta, &split).iter().map(|g| g.0).sum();
            assert_eq!(rows, meta.ntuple.n_entries());
        }
        Ok(())
    }

    /// With clusters cut inside, a split gives as many groups as asked,
    /// of about equal weight (within a quarter of a share and the weight
    /// of an entry or two), and reads every entry once, also when the file
    /// was split before.
    #[tokio::test]
    async fn clusters_are_cut_to_balance_the_groups() -> Result<()> {
        let Some((meta, file)) = clusters_file().await? else {
            return Ok(());
        };
        let source = source_of(&meta, 2);
        let weights = source.cluster_weights(&[&meta]).expect("weights")[0].clone();
        let weight_of = |f: &PartitionedFile| -> f64 {
            cluster_entries_of(&meta, f)
                .iter()
                .map(|(c, r)| {
                    weights[*c] as f64 * (r.end - r.start) as f64
                        / meta.clusters[*c].n_entries as f64
                })
                .sum()
        };
        let total = weight_of(&file);
        for target in [2, 3, 5, 16, 40] {
            let config = scan_config(&source, vec![file.clone()]);
            let Some(split) = source.repartitioned(target, 0, None, &config)? else {
                panic!("no split into {target}");
            };
            assert_eq!(split.file_groups.len(), target, "target {target}");
            assert_read_once(&meta, &pieces(&split), &format!("target {target}"));
            for (read, stated) in group_entries(&meta, &split) {
                assert_eq!(read, stated, "target {target}");
            }
            let share = total / target as f64;
            // Forty groups of 190 entries hold about five entries each:
            // too few for their weights to come out even.
            for g in split.file_groups.iter().filter(|_| target <= 16) {
                let w: f64 = g.iter().map(weight_of).sum();
                assert!(
                    (w - share).abs() <= share / 4.0 + 2.0 * total / 190.0,
                    "target {target}: a group weighs {w}, a share is {share}"
                );
            }
            // Split again, as a second pass of the optimizer would.
            if let Some(again) = source.repartitioned(target + 1, 0, None, &split)? {
                let what = format!("target {target}, again");
                assert_read_once(&meta, &pieces(&again), &what);
            }
        }
        Ok(())
    }

    /// Scans of a few files weigh clusters by the pages the scan reads;
    /// scans of many files by the clusters' stored bytes, without reading
    /// every page list again, and still cover every cluster once.
    #[tokio::test]
    async fn many_files_are_weighed_without_their_page_lists() -> Result<()> {
        let Some((meta, file)) = clusters_file().await? else {
            return Ok(());
        };
        // Cut only between clusters, so that each is read by one piece.
        let source = source_of(&meta, u64::MAX);
        let columns = needed_columns(&meta, &source.reader_paths())?;
        let clusters = meta.page_lists_held()?;
        let pages: Vec<u64> = clusters.iter().map(|c| stored_bytes(c, &columns)).collect();
        let few = vec![&meta; WEIGHED_FILES];
        assert_eq!(
            source.cluster_weights(&few),
            Some(vec![pages; WEIGHED_FILES])
        );
        let many = vec![&meta; WEIGHED_FILES + 1];
        assert_eq!(source.cluster_weights(&many), None);

        let files = vec![file; WEIGHED_FILES + 1];
        let config = scan_config(&source, files);
        let Some(split) = source.repartitioned(2, 0, None, &config)? else {
            panic!("no split");
        };
        assert_eq!(split.file_groups.len(), 2);
        let seen: usize = split
            .file_groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|f| clusters_of(&meta, f).len())
            .sum();
        assert_eq!(seen, (WEIGHED_FILES + 1) * meta.clusters.len());
        Ok(())
    }
}
