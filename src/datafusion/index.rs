//! Sidecar cluster indexes: per-cluster min / max / null counts of chosen
//! columns, so that a scan skips clusters a filter cannot match.
//!
//! ```text
//!  events.root          the data, untouched
//!  events.root.rntidx   Arrow IPC file, one row per cluster (entry order):
//!                       first_entry, n_entries, <col>.min, <col>.max, <col>.null_count ...
//!                       schema metadata: file size, header checksum, RNTuple name
//!
//!  scan: WHERE MET_pt > 100 ─ PruningPredicate(min/max per cluster) ─> clusters kept
//! ```
//!
//! The index is used only when the file size, the RNTuple name and the
//! header checksum recorded in it match the file; otherwise it is ignored.
//! Index what is filtered on: top-level numeric, boolean and string fields.
//!
//! ```no_run
//! let sidecar = rntuple::datafusion::index::write_index("events.root", &["MET_pt", "nMuon"])?;
//! # Ok::<(), datafusion::error::DataFusionError>(())
//! ```

use std::collections::HashSet;
use std::io::Cursor;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::stats::Precision;
use datafusion::common::{Column, ColumnStatistics, ScalarValue, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;
use datafusion::physical_optimizer::pruning::PruningPredicate;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::store::NTupleMeta;
use crate::RNTupleFile;

/// The name of an index is the data file's name with this appended.
pub const SIDECAR_SUFFIX: &str = ".rntidx";

const META_FILE_SIZE: &str = "rntuple.index.file_size";
const META_CHECKSUM: &str = "rntuple.index.header_checksum";
const META_NTUPLE: &str = "rntuple.index.ntuple";

/// Whether an object is a sidecar index rather than data.
pub(crate) fn is_sidecar(path: &Path) -> bool {
    path.as_ref().ends_with(SIDECAR_SUFFIX)
}

/// The sidecar path of a data file.
pub fn sidecar_path(file: impl AsRef<FsPath>) -> PathBuf {
    let mut s = file.as_ref().as_os_str().to_owned();
    s.push(SIDECAR_SUFFIX);
    PathBuf::from(s)
}

fn indexable(dt: &DataType) -> bool {
    dt.is_numeric() || matches!(dt, DataType::Boolean | DataType::Utf8)
}

/// Writes the sidecar index of the only RNTuple of a local file for these
/// top-level columns (all indexable ones when `columns` is empty).
pub fn write_index(path: impl AsRef<FsPath>, columns: &[&str]) -> Result<PathBuf> {
    write_index_for(path, None, columns)
}

/// Writes the sidecar index of the RNTuple `ntuple` of a local file.
pub fn write_index_for(
    path: impl AsRef<FsPath>,
    ntuple: Option<&str>,
    columns: &[&str],
) -> Result<PathBuf> {
    let path = path.as_ref();
    let file = RNTupleFile::open(path)?;
    let size = file.source().len();
    let nt = file.ntuple(ntuple)?;
    let schema = nt.mapping().schema.clone();
    let names: Vec<String> = if columns.is_empty() {
        schema
            .fields()
            .iter()
            .filter(|f| indexable(f.data_type()))
            .map(|f| f.name().clone())
            .collect()
    } else {
        columns.iter().map(|c| c.to_string()).collect()
    };
    let mut fields = Vec::new();
    for name in &names {
        let field = schema
            .field_with_name(name)
            .map_err(|_| DataFusionError::Plan(format!("no top-level field {name:?} to index")))?;
        if !indexable(field.data_type()) {
            return Err(DataFusionError::Plan(format!(
                "field {name:?} of type {} cannot be indexed",
                field.data_type()
            )));
        }
        fields.push(field.clone());
    }
    let clusters = nt.clusters()?;
    let mut mins: Vec<Vec<ScalarValue>> = vec![Vec::new(); fields.len()];
    let mut maxs = mins.clone();
    let mut nulls: Vec<Vec<u64>> = vec![Vec::new(); fields.len()];
    for cluster in &clusters {
        let reader = crate::RNTupleReaderBuilder::new(nt.clone())
            .with_projection(&names)?
            .with_clusters([cluster.id])
            .build()?;
        let mut min_acc = fields
            .iter()
            .map(|f| MinAccumulator::try_new(f.data_type()))
            .collect::<Result<Vec<_>>>()?;
        let mut max_acc = fields
            .iter()
            .map(|f| MaxAccumulator::try_new(f.data_type()))
            .collect::<Result<Vec<_>>>()?;
        let mut null_count = vec![0u64; fields.len()];
        for batch in reader {
            let batch = batch?;
            for (i, column) in batch.columns().iter().enumerate() {
                if let (Some(mn), Some(mx), Some(nc)) = (
                    min_acc.get_mut(i),
                    max_acc.get_mut(i),
                    null_count.get_mut(i),
                ) {
                    mn.update_batch(std::slice::from_ref(column))?;
                    mx.update_batch(std::slice::from_ref(column))?;
                    *nc += column.null_count() as u64;
                }
            }
        }
        for i in 0..fields.len() {
            mins[i].push(min_acc[i].evaluate()?);
            maxs[i].push(max_acc[i].evaluate()?);
            nulls[i].push(null_count[i]);
        }
    }
    let mut out_fields = vec![
        Field::new("first_entry", DataType::UInt64, false),
        Field::new("n_entries", DataType::UInt64, false),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(
            clusters.iter().map(|c| c.first_entry),
        )),
        Arc::new(UInt64Array::from_iter_values(
            clusters.iter().map(|c| c.n_entries),
        )),
    ];
    for (i, field) in fields.iter().enumerate() {
        let dt = field.data_type().clone();
        out_fields.push(Field::new(
            format!("{}.min", field.name()),
            dt.clone(),
            true,
        ));
        out_fields.push(Field::new(
            format!("{}.max", field.name()),
            dt.clone(),
            true,
        ));
        out_fields.push(Field::new(
            format!("{}.null_count", field.name()),
            DataType::UInt64,
            false,
        ));
        arrays.push(to_array(&mins[i], &dt)?);
        arrays.push(to_array(&maxs[i], &dt)?);
        arrays.push(Arc::new(UInt64Array::from(nulls[i].clone())));
    }
    let metadata = [
        (META_FILE_SIZE.to_string(), size.to_string()),
        (
            META_CHECKSUM.to_string(),
            nt.descriptor().header_checksum.to_string(),
        ),
        (META_NTUPLE.to_string(), nt.descriptor().name.clone()),
    ]
    .into_iter()
    .collect();
    let schema = Arc::new(Schema::new_with_metadata(out_fields, metadata));
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    let target = sidecar_path(path);
    let tmp = sidecar_path(path.with_extension("rntidx-tmp"));
    {
        let out = std::fs::File::create(&tmp)?;
        let mut writer = arrow::ipc::writer::FileWriter::try_new(out, &schema)?;
        writer.write(&batch)?;
        writer.finish()?;
    }
    std::fs::rename(&tmp, &target)?;
    Ok(target)
}

fn to_array(values: &[ScalarValue], dt: &DataType) -> Result<ArrayRef> {
    if values.is_empty() {
        return Ok(arrow_array::new_empty_array(dt));
    }
    ScalarValue::iter_to_array(values.iter().cloned())
}

/// A sidecar index that matches its data file.
#[derive(Debug)]
pub(crate) struct ClusterIndex {
    batch: RecordBatch,
}

impl ClusterIndex {
    fn column(&self, name: &str, what: &str) -> Option<&ArrayRef> {
        self.batch.column_by_name(&format!("{name}.{what}"))
    }
}

/// Reads the sidecar of `object`, if there is one and it matches `meta`.
pub(crate) async fn load(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    meta: &NTupleMeta,
) -> Option<ClusterIndex> {
    let path = Path::from(format!("{}{SIDECAR_SUFFIX}", object.location));
    let bytes = store.get(&path).await.ok()?.bytes().await.ok()?;
    let reader = arrow::ipc::reader::FileReader::try_new(Cursor::new(bytes), None).ok()?;
    let schema = reader.schema();
    let md = schema.metadata();
    let descriptor = meta.ntuple.descriptor();
    let matches = md.get(META_FILE_SIZE) == Some(&meta.size.to_string())
        && md.get(META_CHECKSUM) == Some(&descriptor.header_checksum.to_string())
        && md.get(META_NTUPLE) == Some(&descriptor.name);
    if !matches {
        return None;
    }
    let batches: Vec<RecordBatch> = reader.collect::<std::result::Result<_, _>>().ok()?;
    let batch = arrow::compute::concat_batches(&schema, &batches).ok()?;
    // The clusters must be the ones of the file, in the same order.
    let first = batch
        .column_by_name("first_entry")?
        .as_any()
        .downcast_ref::<UInt64Array>()?;
    if first.len() != meta.clusters.len()
        || meta
            .clusters
            .iter()
            .zip(first.values())
            .any(|(c, &f)| c.first_entry != f)
    {
        return None;
    }
    Some(ClusterIndex { batch })
}

/// Statistics of the clusters `clusters` of a file: exact entry counts, and
/// min / max / null counts of the indexed columns.
pub(crate) fn statistics(
    meta: &NTupleMeta,
    table_schema: &SchemaRef,
    clusters: &[usize],
) -> Statistics {
    let mut stats = Statistics::new_unknown(table_schema)
        .with_num_rows(Precision::Exact(meta.entries(clusters) as usize));
    let Some(index) = &meta.index else {
        return stats;
    };
    let rows = UInt64Array::from_iter_values(clusters.iter().map(|&c| c as u64));
    for (field, col) in table_schema
        .fields()
        .iter()
        .zip(stats.column_statistics.iter_mut())
    {
        if let Some(s) = column_statistics(index, field.name(), &rows) {
            *col = s;
        }
    }
    stats
}

fn column_statistics(
    index: &ClusterIndex,
    name: &str,
    rows: &UInt64Array,
) -> Option<ColumnStatistics> {
    let take = |a: &ArrayRef| arrow::compute::take(a.as_ref(), rows, None).ok();
    let mins = take(index.column(name, "min")?)?;
    let maxs = take(index.column(name, "max")?)?;
    let nulls = take(index.column(name, "null_count")?)?;
    let min = fold(&mins, |a, b| if b < a { b } else { a })?;
    let max = fold(&maxs, |a, b| if b > a { b } else { a })?;
    let nulls = nulls
        .as_any()
        .downcast_ref::<UInt64Array>()?
        .values()
        .iter()
        .sum::<u64>();
    Some(
        ColumnStatistics::new_unknown()
            .with_min_value(min)
            .with_max_value(max)
            .with_null_count(Precision::Exact(nulls as usize)),
    )
}

fn fold(
    array: &ArrayRef,
    pick: impl Fn(ScalarValue, ScalarValue) -> ScalarValue,
) -> Option<Precision<ScalarValue>> {
    let mut acc: Option<ScalarValue> = None;
    for i in 0..array.len() {
        if array.is_null(i) {
            continue;
        }
        let v = ScalarValue::try_from_array(array, i).ok()?;
        acc = Some(match acc {
            None => v,
            Some(a) => pick(a, v),
        });
    }
    // Per-cluster values are exact, so is their min / max.
    Some(acc.map_or(Precision::Absent, Precision::Exact))
}

/// The clusters among `candidates` that `predicate` may match.
pub(crate) fn prune(
    predicate: &PruningPredicate,
    meta: &NTupleMeta,
    candidates: Vec<usize>,
) -> Vec<usize> {
    let Some(index) = &meta.index else {
        return candidates;
    };
    let stats = IndexStatistics {
        index,
        meta,
        rows: UInt64Array::from_iter_values(candidates.iter().map(|&c| c as u64)),
    };
    match predicate.prune(&stats) {
        Ok(keep) if keep.len() == candidates.len() => candidates
            .into_iter()
            .zip(keep)
            .filter_map(|(c, k)| k.then_some(c))
            .collect(),
        _ => candidates,
    }
}

/// The index rows of some clusters, as DataFusion's pruning sees them.
struct IndexStatistics<'a> {
    index: &'a ClusterIndex,
    meta: &'a NTupleMeta,
    rows: UInt64Array,
}

impl IndexStatistics<'_> {
    fn take(&self, name: &str, what: &str) -> Option<ArrayRef> {
        arrow::compute::take(self.index.column(name, what)?.as_ref(), &self.rows, None).ok()
    }
}

impl PruningStatistics for IndexStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.take(&column.name, "min")
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.take(&column.name, "max")
    }

    fn num_containers(&self) -> usize {
        self.rows.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.take(&column.name, "null_count")
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let counts = self
            .rows
            .values()
            .iter()
            .map(|&r| self.meta.clusters.get(r as usize).map(|c| c.n_entries));
        Some(Arc::new(UInt64Array::from_iter(counts)))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{binary, col, lit};
    use object_store::local::LocalFileSystem;

    #[tokio::test]
    async fn index_prunes_clusters_and_goes_stale() -> Result<()> {
        let fixture =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/clusters.root");
        if !fixture.exists() {
            eprintln!("skipped: {} is absent", fixture.display());
            return Ok(());
        }
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("clusters.root");
        std::fs::copy(&fixture, &path)?;
        let sidecar = write_index(&path, &["index", "string"])?;
        assert!(sidecar.ends_with("clusters.root.rntidx"));

        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let object = store.head(&Path::from_filesystem_path(&path)?).await?;
        let mut meta = super::super::store::load_ntuple(&store, &object, None, 0).await?;
        meta.index = load(&store, &object, &meta).await;
        assert!(meta.index.is_some());

        // `index` is the entry number, so only the last cluster can hold 180.
        let schema = meta.schema.clone();
        let expr = binary(col("index", &schema)?, Operator::GtEq, lit(180u64), &schema)?;
        #[allow(deprecated)]
        let predicate = PruningPredicate::try_new(expr, schema.clone())?;
        let all: Vec<usize> = (0..meta.clusters.len()).collect();
        let kept = prune(&predicate, &meta, all.clone());
        assert_eq!(kept.len(), 1);
        let last = &meta.clusters[kept[0]];
        assert!(last.first_entry <= 180 && last.first_entry + last.n_entries > 180);

        let stats = statistics(&meta, &schema, &all);
        assert_eq!(
            stats.num_rows,
            Precision::Exact(meta.ntuple.n_entries() as usize)
        );
        let index_col = schema.index_of("index")?;
        assert_eq!(
            stats.column_statistics[index_col].min_value,
            Precision::Exact(ScalarValue::UInt64(Some(0)))
        );

        // A changed file no longer matches its index.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"x"))?;
        let object = store.head(&Path::from_filesystem_path(&path)?).await?;
        let meta = super::super::store::load_ntuple(&store, &object, None, 0).await?;
        assert!(load(&store, &object, &meta).await.is_none());
        Ok(())
    }
}
