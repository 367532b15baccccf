//! [`RNTupleTable`]: the RNTuple files at a path as one table.
//!
//! ```text
//!  try_new: list the files ─ metadata of each (cached) ─ schemas must agree ─> table schema
//!  scan:    list the files ─ table statistics, file by file ─ files in groups
//!           ─> RNTupleFormat::create_physical_plan ─> DataSourceExec(RNTupleSource)
//! ```
//!
//! DataFusion's `ListingTable` keeps statistics for every file of a scan,
//! one entry per top-level column even when they are all unknown: about
//! 280 KB per file of a NanoAOD schema (a thousand top-level columns),
//! 2.8 GB for a table of 10,000 files. This table adds the files up as it
//! goes and keeps the statistics of the table only: the entry counts, and
//! the bounds of a column while every file bounds it (sidecar indexes,
//! quantized columns).
//!
//! `CREATE EXTERNAL TABLE ... STORED AS RNTUPLE` makes this table too,
//! unless it declares columns or partitions (`PARTITIONED BY`, or
//! directories named `key=value`): those go to a `ListingTable`.

use std::sync::Arc;

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::{ListingTableUrl, PartitionedFile};
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::provider::DefaultTableFactory;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{CreateExternalTable, Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectMeta, ObjectStoreExt};

use super::file_format::{concurrent_opens, RNTupleFormat, RNTupleFormatFactory};
use super::index::{self, TableStatistics};
use super::stores::table_location;
use super::RNTupleReadOptions;

/// The RNTuple files at one path (a file, a directory, a glob or an object
/// store URL) as a table.
#[derive(Debug)]
pub struct RNTupleTable {
    url: ListingTableUrl,
    /// Files of a directory or glob are taken when their names end so.
    extension: String,
    format: RNTupleFormat,
    schema: SchemaRef,
    definition: Option<String>,
}

impl RNTupleTable {
    /// The table of the files at `path`: reads the metadata of every file,
    /// whose schemas must agree.
    pub async fn try_new(
        state: &dyn Session,
        path: &str,
        options: RNTupleReadOptions,
    ) -> Result<Self> {
        Self::at(
            state,
            ListingTableUrl::parse(table_location(path)?)?,
            RNTupleFormat::new(options),
        )
        .await
    }

    async fn at(state: &dyn Session, url: ListingTableUrl, format: RNTupleFormat) -> Result<Self> {
        let extension = format.options().extension_for(&url);
        let mut table = Self {
            url,
            extension,
            format,
            schema: Arc::new(arrow_schema::Schema::empty()),
            definition: None,
        };
        let files = table.list(state).await?;
        if files.is_empty() {
            let ending = match table.extension.as_str() {
                "" => String::new(),
                ext => format!(" (names ending in {ext})"),
            };
            return Err(DataFusionError::Plan(format!(
                "no RNTuple files found at {}{ending}",
                table.url
            )));
        }
        let store = state.runtime_env().object_store(&table.url)?;
        table.schema = table.format.infer_schema(state, &store, &files).await?;
        Ok(table)
    }

    /// The format the files are read with, which holds the metadata of the
    /// files read so far ([`RNTupleFormat::skipped_fields`]).
    pub fn format(&self) -> &RNTupleFormat {
        &self.format
    }

    /// The data files (sidecar indexes left out), in the order of their
    /// locations.
    ///
    /// A web server (`http(s)://`) is asked for a named file only: DataFusion
    /// takes a file it does not find for a directory and lists it, with
    /// WebDAV's PROPFIND, which a plain web server refuses (501, after
    /// retries).
    async fn list(&self, state: &dyn Session) -> Result<Vec<ObjectMeta>> {
        let store = state.runtime_env().object_store(&self.url)?;
        let web = matches!(self.url.scheme(), "http" | "https");
        if web && !self.url.is_collection() && self.url.get_glob().is_none() {
            return match store.head(self.url.prefix()).await {
                Ok(file) => Ok(vec![file]),
                Err(object_store::Error::NotFound { .. }) => Err(DataFusionError::Execution(
                    format!("{}: no such file on the server", self.url.as_str()),
                )),
                Err(e) => Err(e.into()),
            };
        }
        let mut files: Vec<ObjectMeta> = self
            .url
            .list_all_files(state, store.as_ref(), &self.extension)
            .await?
            .try_filter(|o| futures::future::ready(!index::is_sidecar(&o.location)))
            .try_collect()
            .await?;
        files.sort_by(|a, b| a.location.cmp(&b.location));
        files.dedup_by(|a, b| a.location == b.location);
        Ok(files)
    }
}

#[async_trait]
impl TableProvider for RNTupleTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.definition.as_deref()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // The scan skips clusters by them; rows are filtered above it.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let store = state.runtime_env().object_store(&self.url)?;
        // Without filters, a limit needs only the files that hold that many
        // entries.
        let enough = limit.filter(|_| filters.is_empty());
        let mut statistics = TableStatistics::new(&self.schema);
        let mut files = Vec::new();
        // In order, several at a time: files added since the table was made
        // are read here for the first time.
        let mut metas = futures::stream::iter(self.list(state).await?)
            .map(|object| {
                let store = &store;
                async move {
                    let meta = self.format.meta(store, &object).await?;
                    Ok::<_, DataFusionError>((object, meta))
                }
            })
            .buffered(concurrent_opens(state, store.as_ref()));
        while let Some((object, meta)) = metas.try_next().await? {
            if enough.is_some_and(|n| statistics.rows() >= n as u64) {
                statistics.leave_out_the_rest();
                break;
            }
            statistics.add(&meta, &self.schema);
            files.push(PartitionedFile::from(object));
        }
        drop(metas);
        if files.is_empty() {
            let schema = datafusion::common::project_schema(&self.schema, projection)?;
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        let groups = FileGroup::new(files).split_files(state.config().target_partitions().max(1));
        let source = self
            .format
            .file_source(TableSchema::from(Arc::clone(&self.schema)));
        let config = FileScanConfigBuilder::new(self.url.object_store(), source)
            .with_file_groups(groups)
            .with_statistics(statistics.finish())
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        self.format.create_physical_plan(state, config).await
    }
}

/// Makes tables for `CREATE EXTERNAL TABLE ... STORED AS RNTUPLE`: an
/// [`RNTupleTable`], or DataFusion's `ListingTable` for a table with
/// declared columns or partitions.
#[derive(Debug, Default)]
pub struct RNTupleTableFactory;

#[async_trait]
impl TableProviderFactory for RNTupleTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        let listing = DefaultTableFactory::new();
        let [location] = cmd.locations.as_slice() else {
            return listing.create(state, cmd).await;
        };
        if !cmd.schema.fields().is_empty()
            || !cmd.constraints.is_empty()
            || !cmd.table_partition_cols.is_empty()
            || !cmd.order_exprs.is_empty()
            || cmd.unbounded
        {
            return listing.create(state, cmd).await;
        }
        let url =
            ListingTableUrl::parse(table_location(location)?)?.with_table_ref(cmd.name.clone());
        let format = RNTupleFormatFactory::new().create_rntuple(state, &cmd.options)?;
        // Directories named `key=value` are partitions, which ListingTable
        // reads as columns.
        if state
            .config_options()
            .execution
            .listing_table_factory_infer_partitions
            && url.is_collection()
        {
            let options =
                datafusion::datasource::listing::ListingOptions::new(Arc::new(format.clone()))
                    .with_file_extension(format.options().extension_for(&url));
            if !options.infer_partitions(state, &url).await?.is_empty() {
                return listing.create(state, cmd).await;
            }
        }
        let mut table = RNTupleTable::at(state, url, format).await?;
        table.definition = cmd.definition.clone();
        Ok(Arc::new(table))
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use datafusion::common::stats::Precision;
    use datafusion::common::{ScalarValue, Statistics};
    use datafusion::datasource::listing::ListingTable;

    use super::*;
    use crate::datafusion::index::write_index;
    use crate::datafusion::session_context;
    use crate::test_util::fixture;

    /// Copies `fixture` to each of `names` under `dir`.
    fn copies(fixture: &Path, dir: &Path, names: &[&str]) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for name in names {
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(fixture, &path)?;
            out.push(path);
        }
        Ok(out)
    }

    async fn statistics(
        table: &RNTupleTable,
        limit: Option<usize>,
    ) -> Result<(Statistics, Arc<dyn ExecutionPlan>)> {
        let ctx = session_context();
        let plan = table.scan(&ctx.state(), None, &[], limit).await?;
        use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
        let stats = StatisticsContext::new().compute(plan.as_ref(), &StatisticsArgs::new())?;
        Ok((stats.as_ref().clone(), plan))
    }

    /// The scan's statistics are the table's, added up file by file: exact
    /// entry counts, bounds only where every file gives them, and lower
    /// bounds when a limit leaves files out.
    #[tokio::test]
    async fn a_table_adds_up_the_statistics_of_its_files() -> Result<()> {
        let Some(fixture) = fixture("clusters.root") else {
            return Ok(());
        };
        let dir = tempfile::tempdir()?;
        let files = copies(&fixture, dir.path(), &["a.root", "b.root", "c.root"])?;
        for file in &files {
            write_index(file, &["index"])?;
        }
        let ctx = session_context();
        let path = format!("{}/", dir.path().display());
        let table = RNTupleTable::try_new(&ctx.state(), &path, Default::default()).await?;
        let index = table.schema().index_of("index")?;

        let (stats, _) = statistics(&table, None).await?;
        assert_eq!(stats.num_rows, Precision::Exact(3 * 190));
        let column = &stats.column_statistics[index];
        assert_eq!(
            column.min_value,
            Precision::Exact(ScalarValue::UInt64(Some(0)))
        );
        assert_eq!(
            column.max_value,
            Precision::Exact(ScalarValue::UInt64(Some(189)))
        );
        assert_eq!(column.null_count, Precision::Exact(0));

        // A file without an index bounds nothing, so the table bounds nothing.
        std::fs::remove_file(files[1].with_extension("root.rntidx"))?;
        let table = RNTupleTable::try_new(&ctx.state(), &path, Default::default()).await?;
        let (stats, _) = statistics(&table, None).await?;
        assert_eq!(stats.num_rows, Precision::Exact(3 * 190));
        assert_eq!(stats.column_statistics[index].min_value, Precision::Absent);
        assert_eq!(stats.column_statistics[index].max_value, Precision::Absent);

        // Ten entries are in the first file: the others are not scanned.
        let (stats, plan) = statistics(&table, Some(10)).await?;
        assert_eq!(stats.num_rows, Precision::Inexact(190));
        let shown = datafusion::physical_plan::displayable(plan.as_ref())
            .indent(true)
            .to_string();
        assert!(
            shown.contains("a.root") && !shown.contains("b.root"),
            "{shown}"
        );
        Ok(())
    }

    /// `CREATE EXTERNAL TABLE` makes an [`RNTupleTable`], and a
    /// `ListingTable` for partitions, which it reads as columns.
    #[tokio::test]
    async fn create_external_table_leaves_partitions_to_listing_tables() -> Result<()> {
        let Some(fixture) = fixture("clusters.root") else {
            return Ok(());
        };
        let plain = tempfile::tempdir()?;
        copies(&fixture, plain.path(), &["a.root", "b.root"])?;
        let parted = tempfile::tempdir()?;
        copies(&fixture, parted.path(), &["run=1/a.root", "run=2/b.root"])?;

        let ctx = session_context();
        for (name, dir) in [("plain", &plain), ("parted", &parted)] {
            let sql = format!(
                "CREATE EXTERNAL TABLE {name} STORED AS RNTUPLE LOCATION '{}/'",
                dir.path().display()
            );
            ctx.sql(&sql).await?.collect().await?;
        }
        let provider = |name: &'static str| {
            let ctx = &ctx;
            async move { ctx.table_provider(name).await }
        };
        assert!(provider("plain")
            .await?
            .downcast_ref::<RNTupleTable>()
            .is_some());
        assert!(provider("parted")
            .await?
            .downcast_ref::<ListingTable>()
            .is_some());

        let counts = ctx
            .sql("SELECT CAST(run AS INT) AS run, count(*) AS n FROM parted GROUP BY run ORDER BY run")
            .await?
            .collect()
            .await?;
        let shown = arrow::util::pretty::pretty_format_batches(&counts)?.to_string();
        assert!(
            shown.contains("| 1   | 190 |") && shown.contains("| 2   | 190 |"),
            "{shown}"
        );
        let all = ctx
            .sql("SELECT count(*) FROM plain")
            .await?
            .collect()
            .await?;
        let shown = arrow::util::pretty::pretty_format_batches(&all)?.to_string();
        assert!(shown.contains("| 380 "), "{shown}");
        Ok(())
    }
}
