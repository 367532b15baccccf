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

/// The clusters of `meta` that belong to `file` (its byte range), in entry order.
pub(crate) fn clusters_of(meta: &NTupleMeta, file: &PartitionedFile) -> Vec<usize> {
    (0..meta.clusters.len())
        .filter(|&i| match &file.range {
            None => true,
            Some(r) => meta
                .clusters
                .get(i)
                .is_some_and(|c| r.contains(c.position as i64)),
        })
        .collect()
}

/// One unit of work for the split: a cluster of a file and its weight.
struct Unit {
    file: usize,
    position: i64,
    weight: u64,
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
            let mut clusters = clusters_of(meta, file);
            // Byte ranges cut the file in position order.
            clusters.sort_by_key(|&ci| meta.clusters.get(ci).map_or(0, |c| c.position));
            for ci in clusters {
                let Some(cluster) = meta.clusters.get(ci) else {
                    continue;
                };
                let weight = weights.as_ref().and_then(|w| w.get(fi)?.get(ci).copied());
                units.push(Unit {
                    file: fi,
                    position: cluster.position as i64,
                    weight: weight.unwrap_or(cluster.stored_bytes) + 1,
                });
            }
        }
        let total: u64 = units.iter().map(|u| u.weight).sum();
        if target_partitions <= 1 || units.len() <= 1 || total < repartition_file_min_size as u64 {
            return Ok(None);
        }
        let per_partition = total.div_ceil(target_partitions as u64);
        // Cut the units, in order, into runs of about `per_partition` bytes;
        // a run never spans two files.
        let mut groups: Vec<Vec<PartitionedFile>> = vec![Vec::new()];
        let mut filled = 0u64;
        let mut at = 0;
        while at < units.len() {
            let file = units[at].file;
            let first_in_file = at == 0 || units[at - 1].file != file;
            let mut end = at;
            while end < units.len()
                && units[end].file == file
                && (end == at || filled < per_partition || groups.len() >= target_partitions)
            {
                filled += units[end].weight;
                end += 1;
            }
            let next = units
                .get(end)
                .filter(|u| u.file == file)
                .map(|u| u.position);
            if let (Some(pf), Some(group)) = (files.get(file), groups.last_mut()) {
                if let Some(meta) = pf.extension::<Arc<NTupleMeta>>() {
                    let start = (!first_in_file).then_some(units[at].position);
                    group.push(piece(pf, meta, start, next));
                }
            }
            if filled >= per_partition && groups.len() < target_partitions {
                groups.push(Vec::new());
                filled = 0;
            }
            at = end;
        }
        groups.retain(|g| !g.is_empty());
        // Files without clusters still count their (zero) entries.
        for (fi, file) in files.iter().enumerate() {
            if !units.iter().any(|u| u.file == fi) {
                if let Some(g) = groups.last_mut() {
                    g.push((*file).clone());
                }
            }
        }
        let file_groups: Vec<FileGroup> = groups
            .into_iter()
            .map(|files| {
                let rows: u64 = files
                    .iter()
                    .filter_map(|f| {
                        let meta = f.extension::<Arc<NTupleMeta>>()?;
                        Some(meta.entries(&clusters_of(meta, f)))
                    })
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

/// The part of `file` from byte `start` (its own start when `None`) to
/// byte `end` (its own end when `None`). It carries no statistics of its
/// own: one set per piece is a few hundred KB for a wide schema, and the
/// plan needs only its group's entry count.
fn piece(
    file: &PartitionedFile,
    meta: &NTupleMeta,
    start: Option<i64>,
    end: Option<i64>,
) -> PartitionedFile {
    let (lo, hi) = match &file.range {
        Some(r) => (r.start, r.end),
        None => (0, meta.size as i64),
    };
    let (start, end) = (start.unwrap_or(lo), end.unwrap_or(hi));
    let mut out = file.clone();
    out.statistics = None;
    if start != 0 || end != meta.size as i64 || file.range.is_some() {
        out.range = Some(datafusion::datasource::listing::FileRange { start, end });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::datasource::physical_plan::FileScanConfigBuilder;
    use datafusion::execution::object_store::ObjectStoreUrl;
    use object_store::local::LocalFileSystem;
    use object_store::path::Path;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn cluster_ranges_cover_every_cluster_once() -> Result<()> {
        let path =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/clusters.root");
        if !path.exists() {
            eprintln!("skipped: {} is absent", path.display());
            return Ok(());
        }
        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let location = Path::from_filesystem_path(&path)?;
        let object = store.head(&location).await?;
        let options = RNTupleReadOptions::default();
        let meta =
            Arc::new(super::super::store::load_ntuple(&store, &object, None, 0, None).await?);
        let n_clusters = meta.clusters.len();
        assert!(n_clusters > 4);
        let source = RNTupleSource::new(
            TableSchema::from(meta.schema.clone()),
            options,
            Arc::new(MetadataCache::default()),
        );
        let file = PartitionedFile::new_from_meta(object).with_extension(meta.clone());
        let config = FileScanConfigBuilder::new(
            ObjectStoreUrl::local_filesystem(),
            Arc::new(source.clone()),
        )
        .with_file_groups(vec![FileGroup::new(vec![file])])
        .build();
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
            let rows: usize = split
                .file_groups
                .iter()
                .filter_map(|g| g.file_statistics(None))
                .filter_map(|s| s.num_rows.get_value().copied())
                .sum();
            assert_eq!(rows as u64, meta.ntuple.n_entries());
        }
        Ok(())
    }

    /// Scans of a few files weigh clusters by the pages the scan reads;
    /// scans of many files by the clusters' stored bytes, without reading
    /// every page list again, and still cover every cluster once.
    #[tokio::test]
    async fn many_files_are_weighed_without_their_page_lists() -> Result<()> {
        let Some(path) = crate::test_util::fixture("clusters.root") else {
            return Ok(());
        };
        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let object = store.head(&Path::from_filesystem_path(&path)?).await?;
        let meta =
            Arc::new(super::super::store::load_ntuple(&store, &object, None, 0, None).await?);
        let source = RNTupleSource::new(
            TableSchema::from(meta.schema.clone()),
            RNTupleReadOptions::default(),
            Arc::new(MetadataCache::default()),
        );
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

        let files: Vec<PartitionedFile> = (0..WEIGHED_FILES + 1)
            .map(|_| PartitionedFile::new_from_meta(object.clone()).with_extension(meta.clone()))
            .collect();
        let config = FileScanConfigBuilder::new(
            ObjectStoreUrl::local_filesystem(),
            Arc::new(source.clone()),
        )
        .with_file_groups(vec![FileGroup::new(files)])
        .build();
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
