//! [`RNTupleFormat`]: RNTuple files as a DataFusion [`FileFormat`], and its
//! factory for `STORED AS RNTUPLE`.
//!
//! ```text
//!  infer_schema(files) ─ metadata of each file (cached) ─ schemas must agree ─> table schema
//!  infer_stats(file)   ─ exact entry count from the footer, min/max from a sidecar index
//!  create_physical_plan ─ attach each file's metadata ─> DataSourceExec(RNTupleSource)
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow_schema::{FieldRef, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::parsers::CompressionTypeVariant;
use datafusion::common::stats::Precision;
use datafusion::common::{GetExt, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectMeta, ObjectStore};

use super::index;
use super::source::RNTupleSource;
use super::store::{is_local, MetadataCache, NTupleMeta};
use super::RNTupleReadOptions;
use crate::arrow::SkippedField;
use crate::NTupleInfo;

/// How many files' metadata is read at the same time. From an object
/// store, DataFusion's `datafusion.execution.meta_fetch_concurrency` (32 by
/// default), as its own listing tables read Parquet footers: each read
/// waits about one round trip. Local files, read in place, keep the cores
/// busy with two each.
pub(super) fn concurrent_opens(state: &dyn Session, store: &dyn ObjectStore) -> usize {
    let configured = usize::from(state.config_options().execution.meta_fetch_concurrency);
    let local =
        is_local(store).then(|| std::thread::available_parallelism().map_or(2, |n| n.get()) * 2);
    local
        .map_or(configured, |local| local.min(configured))
        .max(1)
}

/// Creates [`RNTupleFormat`]s for `CREATE EXTERNAL TABLE ... STORED AS RNTUPLE`.
///
/// Options: `'ntuple' 'Events'` (which RNTuple of each file), `'index' 'false'`
/// (ignore sidecar indexes).
#[derive(Debug, Default)]
pub struct RNTupleFormatFactory {
    options: RNTupleReadOptions,
}

impl RNTupleFormatFactory {
    /// A factory with the default options.
    pub fn new() -> Self {
        <Self as Default>::default()
    }

    /// A factory whose formats start from these options.
    pub fn with_options(options: RNTupleReadOptions) -> Self {
        Self { options }
    }
}

impl GetExt for RNTupleFormatFactory {
    fn get_ext(&self) -> String {
        "rntuple".to_string()
    }
}

impl FileFormatFactory for RNTupleFormatFactory {
    fn create(
        &self,
        state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        Ok(Arc::new(self.create_rntuple(state, format_options)?))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(RNTupleFormat::new(self.options.clone()))
    }
}

impl RNTupleFormatFactory {
    /// The format of a table with these `OPTIONS`.
    pub(crate) fn create_rntuple(
        &self,
        _state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<RNTupleFormat> {
        let mut options = self.options.clone();
        for (key, value) in format_options {
            let name = match key.strip_prefix("format.") {
                Some(name) => name,
                None if key.contains('.') => continue, // object store options and the like
                None => key.as_str(),
            };
            match name {
                "ntuple" => options.ntuple = Some(value.clone()),
                "index" => {
                    options.use_index = match value.to_ascii_lowercase().as_str() {
                        "true" | "on" | "1" => true,
                        "false" | "off" | "0" => false,
                        other => return Err(DataFusionError::Configuration(format!("option 'index' must be true or false, not {other:?}"))),
                    }
                }
                "file_extension" => options.file_extension = value.clone(),
                "min_piece_entries" => {
                    options.min_piece_entries = value
                        .parse()
                        .map_err(|_| DataFusionError::Configuration(format!("option 'min_piece_entries' must be a number of entries, not {value:?}")))?
                }
                "whole_file_limit" => {
                    options.whole_file_limit = value
                        .parse()
                        .map_err(|_| DataFusionError::Configuration(format!("option 'whole_file_limit' must be a number of bytes, not {value:?}")))?
                }
                other => {
                    return Err(DataFusionError::Configuration(format!(
                        "unknown option {other:?} for STORED AS RNTUPLE (known: 'ntuple', 'index', 'whole_file_limit', 'file_extension', 'min_piece_entries')"
                    )))
                }
            }
        }
        Ok(RNTupleFormat::new(options))
    }
}

/// RNTuple files (`.root`) as a [`FileFormat`]. Clones share the cache of
/// file metadata.
#[derive(Clone)]
pub struct RNTupleFormat {
    options: RNTupleReadOptions,
    cache: Arc<MetadataCache>,
}

impl fmt::Debug for RNTupleFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RNTupleFormat")
            .field("options", &self.options)
            .finish()
    }
}

impl RNTupleFormat {
    /// A format reading with these options.
    pub fn new(options: RNTupleReadOptions) -> Self {
        Self {
            options,
            cache: Arc::new(MetadataCache::default()),
        }
    }

    /// The read options.
    pub fn options(&self) -> &RNTupleReadOptions {
        &self.options
    }

    /// The fields left out of the table's Arrow schema (see
    /// [`crate::arrow::ArrowMapping::skipped`]), for each file whose metadata
    /// this format has read so far (schema inference reads every file of a
    /// table): (the file's object store location, the field), by location.
    pub fn skipped_fields(&self) -> Vec<(String, SkippedField)> {
        self.cache.skipped_fields()
    }

    /// The RNTuple read from each file whose metadata this format has read
    /// so far: (the file's object store location, which RNTuple), by
    /// location. With no RNTuple named in the options, it tells which one a
    /// file held (its only one).
    pub fn ntuples_read(&self) -> Vec<(String, NTupleInfo)> {
        self.cache.ntuples()
    }

    pub(super) async fn meta(
        &self,
        store: &Arc<dyn ObjectStore>,
        object: &ObjectMeta,
    ) -> Result<Arc<NTupleMeta>> {
        self.cache.get(store, object, &self.options).await
    }
}

/// Describes how `b` differs from `a`, field by field; `None` when they agree
/// (field names, types and nullability; metadata may differ).
fn schema_difference(a: &Schema, b: &Schema) -> Option<String> {
    let same = a.fields().len() == b.fields().len()
        && a.fields().iter().zip(b.fields()).all(|(x, y)| {
            x.name() == y.name()
                && x.is_nullable() == y.is_nullable()
                && x.data_type().equals_datatype(y.data_type())
        });
    if same {
        return None;
    }
    // Lookups by name: tables of thousands of wide files land here only
    // when a file differs.
    let (in_a, in_b) = (fields_by_name(a), fields_by_name(b));
    let mut diffs = Vec::new();
    for fa in a.fields() {
        match in_b.get(fa.name().as_str()) {
            None => diffs.push(format!("field {} is missing", fa.name())),
            Some(fb) if !fa.data_type().equals_datatype(fb.data_type()) => diffs.push(format!(
                "field {} is {} instead of {}",
                fa.name(),
                fb.data_type(),
                fa.data_type()
            )),
            Some(fb) if fa.is_nullable() != fb.is_nullable() => {
                diffs.push(format!("field {} differs in nullability", fa.name()))
            }
            Some(_) => {}
        }
    }
    for fb in b.fields() {
        if !in_a.contains_key(fb.name().as_str()) {
            diffs.push(format!("field {} is extra", fb.name()));
        }
    }
    let order_differs = diffs.is_empty()
        && a.fields()
            .iter()
            .zip(b.fields())
            .any(|(x, y)| x.name() != y.name());
    if order_differs {
        diffs.push("the fields are in another order".to_string());
    }
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

fn fields_by_name(schema: &Schema) -> HashMap<&str, &FieldRef> {
    schema
        .fields()
        .iter()
        .map(|f| (f.name().as_str(), f))
        .collect()
}

#[async_trait]
impl FileFormat for RNTupleFormat {
    fn get_ext(&self) -> String {
        self.options
            .file_extension
            .trim_start_matches('.')
            .to_string()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        match compression.get_variant() {
            CompressionTypeVariant::UNCOMPRESSED => Ok(self.get_ext()),
            _ => Err(DataFusionError::Configuration(
                "RNTuple files compress their pages themselves; no file compression applies".into(),
            )),
        }
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        // `Some` makes directories default to `*.root` rather than `*.rntuple`.
        Some(FileCompressionType::UNCOMPRESSED)
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        let data: Vec<ObjectMeta> = objects
            .iter()
            .filter(|o| !index::is_sidecar(&o.location))
            .cloned()
            .collect();
        // In order, the next file started as soon as one is read.
        let metas: Vec<Arc<NTupleMeta>> = futures::stream::iter(data)
            .map(|object| async move { self.meta(store, &object).await })
            .buffered(concurrent_opens(state, store.as_ref()))
            .try_collect()
            .await?;
        let Some(first) = metas.first() else {
            return Err(DataFusionError::Plan("no RNTuple files to read".into()));
        };
        let mut disagreements = Vec::new();
        for other in &metas[1..] {
            if let Some(diff) = schema_difference(&first.schema, &other.schema) {
                disagreements.push(format!(
                    "{} against {}: {diff}",
                    other.location, first.location
                ));
            }
        }
        if !disagreements.is_empty() {
            return Err(DataFusionError::Plan(format!(
                "the RNTuple schemas of the files disagree: {}",
                disagreements.join("; ")
            )));
        }
        Ok(first.schema.clone())
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        if index::is_sidecar(&object.location) {
            return Ok(Statistics::new_unknown(&table_schema).with_num_rows(Precision::Exact(0)));
        }
        let meta = self.meta(store, object).await?;
        let all: Vec<usize> = (0..meta.clusters.len()).collect();
        Ok(index::statistics(&meta, &table_schema, &all))
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let store = state.runtime_env().object_store(&conf.object_store_url)?;
        let mut groups = Vec::with_capacity(conf.file_groups.len());
        for group in &conf.file_groups {
            let mut files = Vec::with_capacity(group.len());
            for file in group.iter() {
                if index::is_sidecar(&file.object_meta.location) {
                    continue;
                }
                let meta = self.meta(&store, &file.object_meta).await?;
                files.push(file.clone().with_extension(meta));
            }
            let mut new_group = datafusion::datasource::physical_plan::FileGroup::new(files);
            if let Some(stats) = group.file_statistics(None) {
                new_group = new_group.with_statistics(Arc::new(stats.clone()));
            }
            groups.push(new_group);
        }
        let config = FileScanConfigBuilder::from(conf)
            .with_file_groups(groups)
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(RNTupleSource::new(
            table_schema,
            self.options.clone(),
            self.cache.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    /// Object stores take DataFusion's setting; local files at most two a
    /// core, and never more than the setting.
    #[test]
    fn files_are_opened_as_many_at_once_as_the_session_says() {
        use datafusion::prelude::{SessionConfig, SessionContext};
        use object_store::local::LocalFileSystem;
        use object_store::memory::InMemory;
        let state = |n: usize| {
            let config =
                SessionConfig::new().set_usize("datafusion.execution.meta_fetch_concurrency", n);
            SessionContext::new_with_config(config).state()
        };
        let (remote, local) = (InMemory::new(), LocalFileSystem::new());
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        assert_eq!(concurrent_opens(&state(32), &remote), 32);
        assert_eq!(concurrent_opens(&state(100), &remote), 100);
        assert_eq!(concurrent_opens(&state(100), &local), 2 * cores);
        assert_eq!(concurrent_opens(&state(1), &local), 1);
    }

    #[test]
    fn schema_difference_names_fields() {
        let a = Schema::new(vec![
            Field::new("x", DataType::Int32, false),
            Field::new("y", DataType::Float32, false),
        ]);
        let b = Schema::new(vec![
            Field::new("x", DataType::Int64, false),
            Field::new("z", DataType::Float32, false),
        ]);
        let d = schema_difference(&a, &b).unwrap_or_default();
        assert!(d.contains("field x is Int64 instead of Int32"), "{d}");
        assert!(d.contains("field y is missing"), "{d}");
        assert!(d.contains("field z is extra"), "{d}");
        assert!(schema_difference(&a, &a).is_none());
    }
}
