//! Sidecar cluster indexes: per-cluster min / max / null counts of chosen
//! columns, so that a scan skips clusters a filter cannot match.
//!
//! ```text
//!  events.root          the data, untouched
//!  events.root.rntidx   Arrow IPC file, one row per cluster (entry order):
//!                       first_entry, n_entries, <col>.min, <col>.max, <col>.null_count ...
//!                       <list>.len.min, <list>.len.max, <list>.len.null_count ...
//!                       schema metadata: file size, header checksum, RNTuple name
//!
//!  scan: WHERE MET_pt > 100 ─ PruningPredicate(min/max per cluster) ─> clusters kept
//!        WHERE cardinality(Jet) >= 2 ─ rewritten to the column `Jet.len` ─> same
//! ```
//!
//! The index is used only when the file size, the RNTuple name and the
//! header checksum recorded in it match the file; otherwise it is ignored.
//! Index what is filtered on: top-level numeric, boolean and string fields
//! by value, top-level lists and maps by length (`cardinality(x)`).
//!
//! Without a sidecar, the file still bounds some columns: a top-level
//! Real32Quant column holds values within the range its column description
//! gives, so a filter outside that range prunes every cluster written with it.
//!
//! ```no_run
//! let sidecar = rntuple::datafusion::index::write_index("events.root", &["MET_pt", "nMuon"])?;
//! # Ok::<(), datafusion::error::DataFusionError>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::io::Cursor;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use bytes::Bytes;
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, ColumnStatistics, ScalarValue, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;
use datafusion::physical_expr::expressions::Column as ColumnExpr;
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_optimizer::pruning::PruningPredicate;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::store::NTupleMeta;
use crate::descriptor::ClusterDescriptor;
use crate::{RNTupleFile, SchemaCache};

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

/// The sidecar column prefix of the lengths of list `name`: RNTuple field
/// names have no dots, so it cannot clash with a field.
const LENGTH_SUFFIX: &str = ".len";

fn indexed_by_value(dt: &DataType) -> bool {
    dt.is_numeric() || matches!(dt, DataType::Boolean | DataType::Utf8)
}

fn indexed_by_length(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _)
    )
}

/// What one group of sidecar columns describes.
struct Indexed {
    /// The top-level field.
    field: String,
    /// Prefix of its sidecar columns: the field name, or `<field>.len`.
    key: String,
    by_length: bool,
    /// The type of the values indexed (`UInt64` for lengths).
    data_type: DataType,
}

/// The narrowest projection that still gives a list field's lengths: the
/// list with only the first member of its items, down through structs.
fn length_path(name: &str, dt: &DataType) -> String {
    let mut path = name.to_string();
    let mut item = match dt {
        DataType::List(f) | DataType::LargeList(f) => f.data_type(),
        _ => return path,
    };
    while let DataType::Struct(fields) = item {
        let Some(first) = fields.first() else { break };
        path.push('.');
        path.push_str(first.name());
        item = first.data_type();
    }
    path
}

/// The lengths of the lists of `array` (null where the list is null).
fn list_lengths(array: &ArrayRef) -> Option<UInt64Array> {
    use super::functions::length::offset_lengths;
    use arrow_array::cast::AsArray;
    match array.data_type() {
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            Some(offset_lengths(l.offsets(), l.nulls()))
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            Some(offset_lengths(l.offsets(), l.nulls()))
        }
        DataType::Map(_, _) => {
            let m = array.as_map();
            Some(offset_lengths(m.offsets(), m.nulls()))
        }
        _ => None,
    }
}

/// Writes the sidecar index of the only RNTuple of a local file for these
/// top-level columns: scalars by value, lists and maps by length (all such
/// fields when `columns` is empty).
pub fn write_index(path: impl AsRef<FsPath>, columns: &[&str]) -> Result<PathBuf> {
    write_index_for(path, None, columns)
}

/// Writes the sidecar index of the RNTuple `ntuple` of a local file.
pub fn write_index_for(
    path: impl AsRef<FsPath>,
    ntuple: Option<&str>,
    columns: &[&str],
) -> Result<PathBuf> {
    write_index_with_cache(path, ntuple, columns, &Arc::new(SchemaCache::new()))
}

/// [`write_index_for`], taking the schema of a header seen before from
/// `schemas`: the files of a dataset usually share one, and indexing many
/// files of a wide schema then builds it once.
pub fn write_index_with_cache(
    path: impl AsRef<FsPath>,
    ntuple: Option<&str>,
    columns: &[&str],
    schemas: &Arc<SchemaCache>,
) -> Result<PathBuf> {
    let path = path.as_ref();
    let file = RNTupleFile::open(path)?.with_schema_cache(Arc::clone(schemas));
    let size = file.source().len();
    let nt = file.ntuple(ntuple)?;
    let schema = nt.mapping().schema.clone();
    let names: Vec<String> = if columns.is_empty() {
        schema
            .fields()
            .iter()
            .filter(|f| indexed_by_value(f.data_type()) || indexed_by_length(f.data_type()))
            .map(|f| f.name().clone())
            .collect()
    } else {
        columns.iter().map(|c| c.to_string()).collect()
    };
    let fields: HashMap<&str, &FieldRef> = schema
        .fields()
        .iter()
        .rev()
        .map(|f| (f.name().as_str(), f))
        .collect();
    let mut indexed = Vec::new();
    let mut paths = Vec::new();
    for name in &names {
        let field = fields.get(name.as_str()).ok_or_else(|| {
            DataFusionError::Plan(format!("no top-level field {name:?} to index"))
        })?;
        let dt = field.data_type();
        let by_length = indexed_by_length(dt);
        if !by_length && !indexed_by_value(dt) {
            return Err(DataFusionError::Plan(format!(
                "field {name:?} of type {dt} cannot be indexed"
            )));
        }
        indexed.push(Indexed {
            field: name.clone(),
            key: if by_length {
                format!("{name}{LENGTH_SUFFIX}")
            } else {
                name.clone()
            },
            by_length,
            data_type: if by_length {
                DataType::UInt64
            } else {
                dt.clone()
            },
        });
        paths.push(if by_length {
            length_path(name, dt)
        } else {
            name.clone()
        });
    }
    let clusters = nt.all_clusters()?;
    let mut mins: Vec<Vec<ScalarValue>> = vec![Vec::new(); indexed.len()];
    let mut maxs = mins.clone();
    let mut nulls: Vec<Vec<u64>> = vec![Vec::new(); indexed.len()];
    for cluster in clusters.iter() {
        let reader = crate::RNTupleReaderBuilder::new(nt.clone())
            .with_projection(&paths)?
            .with_clusters([cluster.id])
            .build()?;
        let mut min_acc = indexed
            .iter()
            .map(|x| MinAccumulator::try_new(&x.data_type))
            .collect::<Result<Vec<_>>>()?;
        let mut max_acc = indexed
            .iter()
            .map(|x| MaxAccumulator::try_new(&x.data_type))
            .collect::<Result<Vec<_>>>()?;
        let mut null_count = vec![0u64; indexed.len()];
        // Where each indexed field is in the reader's batches.
        let positions: Vec<Option<usize>> = {
            let schema = arrow::record_batch::RecordBatchReader::schema(&reader);
            let by_name: HashMap<&str, usize> = schema
                .fields()
                .iter()
                .enumerate()
                .rev()
                .map(|(k, f)| (f.name().as_str(), k))
                .collect();
            indexed
                .iter()
                .map(|x| by_name.get(x.field.as_str()).copied())
                .collect()
        };
        for batch in reader {
            let batch = batch?;
            for (i, x) in indexed.iter().enumerate() {
                let Some(column) = positions
                    .get(i)
                    .copied()
                    .flatten()
                    .and_then(|k| batch.columns().get(k))
                else {
                    continue;
                };
                let column = match x.by_length {
                    true => Arc::new(list_lengths(column).ok_or_else(|| {
                        DataFusionError::Internal(format!("{} is not a list", x.field))
                    })?) as ArrayRef,
                    false => column.clone(),
                };
                if let (Some(mn), Some(mx), Some(nc)) = (
                    min_acc.get_mut(i),
                    max_acc.get_mut(i),
                    null_count.get_mut(i),
                ) {
                    mn.update_batch(std::slice::from_ref(&column))?;
                    mx.update_batch(std::slice::from_ref(&column))?;
                    *nc += column.null_count() as u64;
                }
            }
        }
        for i in 0..indexed.len() {
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
    for (i, x) in indexed.iter().enumerate() {
        let dt = x.data_type.clone();
        out_fields.push(Field::new(format!("{}.min", x.key), dt.clone(), true));
        out_fields.push(Field::new(format!("{}.max", x.key), dt.clone(), true));
        out_fields.push(Field::new(
            format!("{}.null_count", x.key),
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
        // The writer writes each buffer of each column on its own.
        let out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        let mut writer = arrow::ipc::writer::FileWriter::try_new(out, &schema)?;
        writer.write(&batch)?;
        writer.finish()?;
        writer
            .into_inner()?
            .into_inner()
            .map_err(|e| e.into_error())?;
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
    /// Column positions by name: statistics look up every field of a wide
    /// table, which a scan of the schema per lookup makes quadratic.
    by_name: HashMap<String, usize>,
}

impl ClusterIndex {
    fn new(batch: RecordBatch) -> Self {
        let by_name = batch
            .schema_ref()
            .fields()
            .iter()
            .enumerate()
            .map(|(k, f)| (f.name().clone(), k))
            .collect();
        Self { batch, by_name }
    }

    fn column(&self, name: &str, what: &str) -> Option<&ArrayRef> {
        let k = *self.by_name.get(&format!("{name}.{what}"))?;
        self.batch.columns().get(k)
    }
}

/// The bytes of the sidecar of `object`, if there is one. Fetched while the
/// file's metadata is read, which [`load`] checks it against: a file at a
/// URL waits for one round of requests less.
pub(crate) async fn fetch(store: &Arc<dyn ObjectStore>, object: &ObjectMeta) -> Option<Bytes> {
    let path = Path::from(format!("{}{SIDECAR_SUFFIX}", object.location));
    store.get(&path).await.ok()?.bytes().await.ok()
}

/// The sidecar fetched for a file ([`fetch`]), if it matches `meta`.
pub(crate) fn load(bytes: Bytes, meta: &NTupleMeta) -> Option<ClusterIndex> {
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
    Some(ClusterIndex::new(batch))
}

/// Statistics of the clusters `clusters` of a file: exact entry counts,
/// min / max / null counts of the indexed columns, and the bounds of
/// Real32Quant columns (inexact: a bound, not a value that occurs).
pub(crate) fn statistics(
    meta: &NTupleMeta,
    table_schema: &SchemaRef,
    clusters: &[usize],
) -> Statistics {
    let mut stats = Statistics::new_unknown(table_schema)
        .with_num_rows(Precision::Exact(meta.entries(clusters) as usize));
    let rows = UInt64Array::from_iter_values(clusters.iter().map(|&c| c as u64));
    for (field, col) in table_schema
        .fields()
        .iter()
        .zip(stats.column_statistics.iter_mut())
    {
        let indexed = meta
            .index
            .as_ref()
            .and_then(|index| column_statistics(index, field.name(), &rows));
        if let Some(s) = indexed.or_else(|| quantized_statistics(meta, field.name(), &rows)) {
            *col = s;
        }
    }
    stats
}

/// The statistics of a table, added up file by file: the entry counts,
/// and a column's bounds and null count while every file gives them (from
/// its sidecar index or its quantized columns). Only the table's
/// statistics are kept, never one set per file.
#[derive(Debug)]
pub(crate) struct TableStatistics {
    stats: Statistics,
    files: usize,
    /// Whether the columns' statistics may still be known: false once a
    /// file gives none.
    columns: bool,
    /// Whether files were left out (a limit was met).
    partial: bool,
}

impl TableStatistics {
    pub(crate) fn new(schema: &SchemaRef) -> Self {
        Self {
            stats: Statistics::new_unknown(schema).with_num_rows(Precision::Exact(0)),
            files: 0,
            columns: true,
            partial: false,
        }
    }

    /// The entries counted so far.
    pub(crate) fn rows(&self) -> u64 {
        match self.stats.num_rows {
            Precision::Exact(n) | Precision::Inexact(n) => n as u64,
            Precision::Absent => 0,
        }
    }

    /// Adds a file of the table.
    pub(crate) fn add(&mut self, meta: &NTupleMeta, schema: &SchemaRef) {
        let all: Vec<usize> = (0..meta.clusters.len()).collect();
        let rows = Precision::Exact(meta.entries(&all) as usize);
        self.stats.num_rows = self.stats.num_rows.add(&rows);
        self.files += 1;
        if !self.columns {
            return;
        }
        if meta.index.is_none() && meta.quantized.is_empty() {
            // Nothing bounds this file's columns, so nothing bounds the table's.
            self.columns = false;
            self.stats.column_statistics = Statistics::unknown_column(schema);
            return;
        }
        let file = statistics(meta, schema, &all);
        if self.files == 1 {
            self.stats.column_statistics = file.column_statistics;
            return;
        }
        for (table, file) in self
            .stats
            .column_statistics
            .iter_mut()
            .zip(file.column_statistics)
        {
            table.null_count = table.null_count.add(&file.null_count);
            table.min_value = table.min_value.min(&file.min_value);
            table.max_value = table.max_value.max(&file.max_value);
            table.sum_value = Precision::Absent;
            table.distinct_count = Precision::Absent;
            table.byte_size = Precision::Absent;
        }
    }

    /// The files after this point are not read (a limit is met): the counts
    /// become lower bounds.
    pub(crate) fn leave_out_the_rest(&mut self) {
        self.partial = true;
    }

    pub(crate) fn finish(self) -> Statistics {
        match self.partial {
            true => self.stats.to_inexact(),
            false => self.stats,
        }
    }
}

fn quantized_statistics(
    meta: &NTupleMeta,
    name: &str,
    rows: &UInt64Array,
) -> Option<ColumnStatistics> {
    let (mins, maxs) = quantized_bounds(meta, name, rows)?;
    if mins.null_count() > 0 {
        return None;
    }
    let inexact = |p: Precision<ScalarValue>| match p {
        Precision::Exact(v) => Precision::Inexact(v),
        other => other,
    };
    let min = fold(&mins, |a, b| if b < a { b } else { a })?;
    let max = fold(&maxs, |a, b| if b > a { b } else { a })?;
    Some(
        ColumnStatistics::new_unknown()
            .with_min_value(inexact(min))
            .with_max_value(inexact(max)),
    )
}

/// A top-level floating-point field with a Real32Quant representation: the
/// value range each of its representations guarantees (`None` for one that
/// is not quantized).
#[derive(Debug, Clone)]
pub(crate) struct QuantizedField {
    data_type: DataType,
    /// The bounds of each cluster's values, by the column representation
    /// the cluster was written with.
    bounds: Vec<Option<(f64, f64)>>,
}

/// The quantized top-level fields of `ntuple`, whose clusters with their
/// page lists are `clusters`, by name: found once per file so that
/// statistics over thousands of fields look each one up in constant time.
pub(crate) fn quantized_fields(
    ntuple: &crate::RNTuple,
    clusters: &[ClusterDescriptor],
) -> HashMap<String, QuantizedField> {
    use crate::descriptor::ColumnType;
    let descriptor = ntuple.descriptor();
    let schema = &ntuple.mapping().schema;
    let mut out = HashMap::new();
    for &id in &descriptor.top_level {
        let Some(field) = descriptor.fields.get(id as usize) else {
            continue;
        };
        if !field.children.is_empty() || out.contains_key(&field.name) {
            continue;
        }
        let ranges: Vec<Option<(f64, f64)>> = field
            .representations
            .iter()
            .map(|columns| {
                let [id] = columns.as_slice() else {
                    return None;
                };
                let column = descriptor.columns.get(*id as usize)?;
                let (lo, hi) = column.value_range?;
                let ordered = lo.partial_cmp(&hi).is_some_and(|o| o.is_le());
                if column.column_type != ColumnType::Real32Quant || !ordered {
                    return None;
                }
                let deferred = column.first_element_index.is_some_and(|i| i != 0);
                Some(if deferred {
                    (lo.min(0.0), hi.max(0.0))
                } else {
                    (lo, hi)
                })
            })
            .collect();
        if ranges.iter().all(Option::is_none) {
            continue;
        }
        let Ok(arrow) = schema.field_with_name(&field.name) else {
            continue;
        };
        if !matches!(arrow.data_type(), DataType::Float32 | DataType::Float64) {
            continue;
        }
        let bounds = clusters
            .iter()
            .map(|cluster| {
                // The representation this cluster was written with.
                let active = field
                    .representations
                    .iter()
                    .position(|columns| columns.iter().all(|&c| cluster.column(c).is_some()))?;
                ranges.get(active).copied().flatten()
            })
            .collect();
        let data_type = arrow.data_type().clone();
        out.insert(field.name.clone(), QuantizedField { data_type, bounds });
    }
    out
}

/// Per-cluster bounds of a top-level floating-point field that the file
/// itself gives: in a cluster whose active column representation is
/// Real32Quant, every value lies within the column's value range (ROOT
/// clamps to its maximum), and a deferred column adds the zeros it reads as
/// before its first element. Null where a cluster gives no bound; `None`
/// when no cluster does.
fn quantized_bounds(
    meta: &NTupleMeta,
    name: &str,
    rows: &UInt64Array,
) -> Option<(ArrayRef, ArrayRef)> {
    let quantized = meta.quantized.get(name)?;
    let data_type = &quantized.data_type;
    let bounds: Vec<Option<(f64, f64)>> = rows
        .values()
        .iter()
        .map(|&r| quantized.bounds.get(r as usize).copied().flatten())
        .collect();
    // A float field's values are the doubles rounded to float, and rounding
    // keeps their order: the bounds are rounded the same way.
    let side = |pick: fn((f64, f64)) -> f64| {
        let bound = arrow_array::Float64Array::from_iter(bounds.iter().map(|b| b.map(pick)));
        arrow::compute::cast(&bound, data_type).ok()
    };
    Some((side(|(lo, _)| lo)?, side(|(_, hi)| hi)?))
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

/// The pruning predicate of a scan's filter. `cardinality(list)` of a
/// top-level list becomes the column `<list>.len`, whose per-cluster bounds
/// the sidecar holds, because DataFusion prunes on plain columns only.
pub(crate) fn pruning_predicate(
    filter: &Arc<dyn PhysicalExpr>,
    file_schema: &SchemaRef,
) -> Option<Arc<PruningPredicate>> {
    let mut fields: Vec<FieldRef> = file_schema.fields().iter().cloned().collect();
    let rewritten = filter
        .clone()
        .transform(|expr| {
            let Some(length) = list_length_column(&expr, file_schema) else {
                return Ok(Transformed::no(expr));
            };
            let name = length.name().clone();
            let index = match fields.iter().position(|f| f.name() == &name) {
                Some(i) => i,
                None => {
                    fields.push(Arc::new(length));
                    fields.len() - 1
                }
            };
            let column: Arc<dyn PhysicalExpr> = Arc::new(ColumnExpr::new(&name, index));
            Ok(Transformed::yes(column))
        })
        .ok()?
        .data;
    #[allow(deprecated)]
    let predicate = PruningPredicate::try_new(rewritten, Arc::new(Schema::new(fields))).ok()?;
    Some(Arc::new(predicate))
}

/// The `<list>.len` column that stands for `expr` if it is
/// `cardinality(<top-level list>)`.
fn list_length_column(expr: &Arc<dyn PhysicalExpr>, file_schema: &SchemaRef) -> Option<Field> {
    let call = expr.downcast_ref::<ScalarFunctionExpr>()?;
    let [arg] = call.args() else {
        return None;
    };
    let column = arg.downcast_ref::<ColumnExpr>()?;
    let list = file_schema.field_with_name(column.name()).ok()?;
    (call.name() == "cardinality" && indexed_by_length(list.data_type())).then(|| {
        Field::new(
            format!("{}{LENGTH_SUFFIX}", column.name()),
            call.return_type().clone(),
            true,
        )
    })
}

/// The clusters among `candidates` that `predicate` may match, by the
/// sidecar index and the bounds the file gives.
pub(crate) fn prune(
    predicate: &PruningPredicate,
    meta: &NTupleMeta,
    candidates: Vec<usize>,
) -> Vec<usize> {
    let stats = ClusterStatistics {
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

/// What is known of some clusters, as DataFusion's pruning sees it.
struct ClusterStatistics<'a> {
    meta: &'a NTupleMeta,
    rows: UInt64Array,
}

impl ClusterStatistics<'_> {
    fn indexed(&self, name: &str, what: &str) -> Option<ArrayRef> {
        let column = self.meta.index.as_ref()?.column(name, what)?;
        arrow::compute::take(column.as_ref(), &self.rows, None).ok()
    }
}

impl PruningStatistics for ClusterStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.indexed(&column.name, "min")
            .or_else(|| Some(quantized_bounds(self.meta, &column.name, &self.rows)?.0))
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.indexed(&column.name, "max")
            .or_else(|| Some(quantized_bounds(self.meta, &column.name, &self.rows)?.1))
    }

    fn num_containers(&self) -> usize {
        self.rows.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.indexed(&column.name, "null_count")
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
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type};
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{binary, col, lit};
    use object_store::local::LocalFileSystem;

    use crate::test_util::fixture;

    /// Real32Quant columns bound their values by their column's range, as
    /// floats for float fields and as doubles for double fields; other
    /// columns give no bound. The bounds are inexact statistics.
    #[tokio::test]
    async fn quantized_columns_give_their_value_range() -> Result<()> {
        let Some(fixture) = fixture("reals.root") else {
            return Ok(());
        };
        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let object = store.head(&Path::from_filesystem_path(&fixture)?).await?;
        let meta =
            super::super::store::load_ntuple(&store, &object, Some("Reals"), 0, None).await?;
        let all: Vec<usize> = (0..meta.clusters.len()).collect();
        let rows = UInt64Array::from_iter_values(all.iter().map(|&c| c as u64));

        let (mins, maxs) = quantized_bounds(&meta, "quant24_tiny", &rows).unwrap();
        let (mins, maxs) = (
            mins.as_primitive::<Float32Type>(),
            maxs.as_primitive::<Float32Type>(),
        );
        assert_eq!(mins.len(), meta.clusters.len());
        assert!(mins.iter().all(|v| v == Some(1e-6_f64 as f32)));
        assert!(maxs.iter().all(|v| v == Some(2e-6_f64 as f32)));

        let (mins, maxs) = quantized_bounds(&meta, "double_quant16", &rows).unwrap();
        assert_eq!(mins.data_type(), &DataType::Float64);
        assert!(maxs
            .as_primitive::<Float64Type>()
            .iter()
            .all(|v| v.is_some()));

        for plain in ["half", "trunc10", "double32", "vec_quant"] {
            assert!(quantized_bounds(&meta, plain, &rows).is_none(), "{plain}");
        }

        let stats = statistics(&meta, &meta.schema, &all);
        let quant8 = &stats.column_statistics[meta.schema.index_of("quant8")?];
        assert_eq!(
            quant8.min_value,
            Precision::Inexact(ScalarValue::Float32(Some(0.0)))
        );
        assert_eq!(
            quant8.max_value,
            Precision::Inexact(ScalarValue::Float32(Some(1.0)))
        );
        let half = &stats.column_statistics[meta.schema.index_of("half")?];
        assert_eq!(half.max_value, Precision::Absent);
        Ok(())
    }

    #[tokio::test]
    async fn index_prunes_clusters_and_goes_stale() -> Result<()> {
        let Some(fixture) = fixture("clusters.root") else {
            return Ok(());
        };
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("clusters.root");
        std::fs::copy(&fixture, &path)?;
        let sidecar = write_index(&path, &["index", "string"])?;
        assert!(sidecar.ends_with("clusters.root.rntidx"));

        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let object = store.head(&Path::from_filesystem_path(&path)?).await?;
        let mut meta = super::super::store::load_ntuple(&store, &object, None, 0, None).await?;
        let bytes = fetch(&store, &object).await;
        meta.index = bytes.and_then(|bytes| load(bytes, &meta));
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
        let meta = super::super::store::load_ntuple(&store, &object, None, 0, None).await?;
        let bytes = fetch(&store, &object).await;
        assert!(bytes.is_some(), "the sidecar is still there");
        assert!(bytes.and_then(|bytes| load(bytes, &meta)).is_none());
        Ok(())
    }

    /// The files of a dataset indexed through one schema cache (as `rntuple
    /// index` does) get the sidecars they get alone, every indexable field
    /// included, and the schema is built once.
    #[test]
    fn indexes_through_a_schema_cache_are_the_indexes_alone() -> Result<()> {
        let names = ["adl/nanoaod_events.root", "adl/nanoaod_clusters.root"];
        let Some(fixtures) = names.iter().map(|n| fixture(n)).collect::<Option<Vec<_>>>() else {
            return Ok(());
        };
        let alone = tempfile::tempdir()?;
        let cached = tempfile::tempdir()?;
        let schemas = Arc::new(SchemaCache::new());
        for fixture in &fixtures {
            let name = fixture.file_name().unwrap_or_default();
            let (a, c) = (alone.path().join(name), cached.path().join(name));
            std::fs::copy(fixture, &a)?;
            std::fs::copy(fixture, &c)?;
            let a = std::fs::read(write_index_for(&a, None, &[])?)?;
            let c = std::fs::read(write_index_with_cache(&c, None, &[], &schemas)?)?;
            assert_eq!(a, c, "{}", fixture.display());
            let reader = arrow::ipc::reader::FileReader::try_new(Cursor::new(c), None)?;
            // first_entry, n_entries and three columns per indexed field.
            assert!(reader.schema().fields().len() > 30);
        }
        assert_eq!(schemas.len(), 1);
        Ok(())
    }
}
