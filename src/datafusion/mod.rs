//! SQL over RNTuple files with DataFusion: the `rntuple` table format and
//! HEP functions.
//!
//! ```text
//!  CREATE EXTERNAL TABLE events STORED AS RNTUPLE LOCATION 'data/' OPTIONS ('ntuple' 'Events')
//!  ctx.register_rntuple("events", "data/*.root", RNTupleReadOptions::default())
//!        │
//!        ▼
//!  RNTupleTable (table.rs) ── RNTupleFormat (file_format.rs)  metadata of every file, schemas must agree;
//!        │                                                   exact entry counts from the footers, summed
//!        │   (a table with partitions: DataFusion's ListingTable over the same format)
//!        ▼
//!  DataSourceExec(FileScanConfig)
//!        │   RNTupleSource (source.rs)   repartitioned: cluster ranges of all files, balanced by bytes
//!        ▼
//!  RNTupleOpener (opener.rs), per file range:
//!        clusters in range ─ sidecar index pruning (index.rs) ─ limit
//!        per cluster: fetch pages of the projected columns (store.rs, one get_ranges)
//!                     ─> decode on a blocking thread (reader) ─> RecordBatches
//! ```
//!
//! A session made by [`session_context`] knows the format and the HEP
//! functions of [`functions`], and keeps unquoted identifiers as written
//! (HEP names are mixed-case: `SELECT MET_pt, nMuon FROM events`).
//!
//! ```no_run
//! # async fn example() -> datafusion::error::Result<()> {
//! use rntuple::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};
//! let ctx = session_context();
//! ctx.register_rntuple("events", "data/", RNTupleReadOptions::default().with_ntuple("Events")).await?;
//! ctx.sql("SELECT nMuon, count(*) FROM events GROUP BY nMuon").await?.show().await?;
//! # Ok(())
//! # }
//! ```

mod file_format;
mod filter;
pub mod functions;
pub mod index;
mod opener;
mod prefetch;
mod projection;
mod remote;
mod shared;
mod simplify;
mod source;
mod store;
mod stores;
mod table;
mod unnest;
mod widen;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::optimizer::{Optimizer, OptimizerRule};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};

pub use file_format::{RNTupleFormat, RNTupleFormatFactory};
pub use remote::ObjectStoreReader;
pub use source::RNTupleSource;
pub use stores::{web_location, StoreRegistry};
pub use table::{RNTupleTable, RNTupleTableFactory};

/// Files up to this size are fetched whole (see [`RNTupleReadOptions::whole_file_limit`]).
pub const DEFAULT_WHOLE_FILE_LIMIT: u64 = 4 << 20;

/// The file extension of RNTuple files.
pub const DEFAULT_EXTENSION: &str = ".root";

impl From<crate::Error> for DataFusionError {
    fn from(e: crate::Error) -> Self {
        match e {
            crate::Error::Arrow(a) => DataFusionError::ArrowError(Box::new(a), None),
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

/// The default of [`RNTupleReadOptions::min_piece_entries`].
pub const DEFAULT_MIN_PIECE_ENTRIES: u64 = 65_536;

/// How RNTuple files are read as a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RNTupleReadOptions {
    /// The RNTuple to read (name or `dir/name`); `None` takes the only one of each file.
    pub ntuple: Option<String>,
    /// Files in a directory are taken when their names end with this.
    pub file_extension: String,
    /// Whether a sidecar index next to a file is used to skip clusters.
    pub use_index: bool,
    /// Files up to this many bytes are fetched whole when first opened;
    /// larger ones are read by ranges: metadata first, then the pages each
    /// cluster needs.
    /// Files on the local file system are neither: they are read in place.
    pub whole_file_limit: u64,
    /// A scan split over several partitions may cut a cluster between two
    /// of them where both parts hold at least this many entries, so that a
    /// file of a few large clusters still keeps every partition busy. Each
    /// part decompresses (and from an object store, fetches) the pages that
    /// straddle the cut. `u64::MAX` cuts only between clusters.
    pub min_piece_entries: u64,
}

impl Default for RNTupleReadOptions {
    fn default() -> Self {
        Self {
            ntuple: None,
            file_extension: DEFAULT_EXTENSION.to_string(),
            use_index: true,
            whole_file_limit: DEFAULT_WHOLE_FILE_LIMIT,
            min_piece_entries: DEFAULT_MIN_PIECE_ENTRIES,
        }
    }
}

impl RNTupleReadOptions {
    /// Reads the RNTuple with this name.
    pub fn with_ntuple(mut self, name: impl Into<String>) -> Self {
        self.ntuple = Some(name.into());
        self
    }

    /// Takes files ending with this extension from directories.
    pub fn with_file_extension(mut self, ext: impl Into<String>) -> Self {
        self.file_extension = ext.into();
        self
    }

    /// Cuts clusters between partitions only where both parts hold at
    /// least `n` entries (see [`Self::min_piece_entries`]).
    pub fn with_min_piece_entries(mut self, n: u64) -> Self {
        self.min_piece_entries = n;
        self
    }

    /// Uses (or ignores) sidecar indexes.
    pub fn with_index(mut self, use_index: bool) -> Self {
        self.use_index = use_index;
        self
    }

    /// The extension files at `path` must have: a single file is read
    /// whatever its name; directories and globs take the files with
    /// [`Self::file_extension`].
    pub(crate) fn extension_for(&self, path: &ListingTableUrl) -> String {
        if path.is_collection() || path.get_glob().is_some() {
            self.file_extension.clone()
        } else {
            String::new()
        }
    }
}

/// RNTuple tables on a [`SessionContext`].
#[async_trait]
pub trait SessionContextExt {
    /// Registers the files at `path` (a file, a directory, a glob or an
    /// object store URL) as table `name`.
    async fn register_rntuple(
        &self,
        name: &str,
        path: &str,
        options: RNTupleReadOptions,
    ) -> Result<()>;

    /// A DataFrame over the files at `path`.
    async fn read_rntuple(&self, path: &str, options: RNTupleReadOptions) -> Result<DataFrame>;
}

#[async_trait]
impl SessionContextExt for SessionContext {
    async fn register_rntuple(
        &self,
        name: &str,
        path: &str,
        options: RNTupleReadOptions,
    ) -> Result<()> {
        let table = RNTupleTable::try_new(&self.state(), path, options).await?;
        self.register_table(name, Arc::new(table))?;
        Ok(())
    }

    async fn read_rntuple(&self, path: &str, options: RNTupleReadOptions) -> Result<DataFrame> {
        let table = RNTupleTable::try_new(&self.state(), path, options).await?;
        self.read_table(Arc::new(table))
    }
}

/// The session configuration RNTuple queries want: identifiers keep their
/// case, and information_schema is on (`SHOW TABLES`, `DESCRIBE`). SQL is
/// parsed in DuckDB's dialect, which has lambdas: list filters such as
/// `array_filter(Jet_pt, pt -> pt > 40)` keep analysis queries short.
/// Batches hold [`SESSION_BATCH_SIZE`] rows.
pub fn session_config() -> SessionConfig {
    SessionConfig::new()
        .with_batch_size(SESSION_BATCH_SIZE)
        .set_bool("datafusion.sql_parser.enable_ident_normalization", false)
        .set_str("datafusion.sql_parser.dialect", "duckdb")
        .with_information_schema(true)
}

/// Rows per batch in the sessions of [`session_config`], twice DataFusion's
/// default. Events of NanoAOD are small: a batch of 8,192 rows of a few
/// columns is tens of KiB, and its fixed costs (hand-offs between threads,
/// allocations, a message of the output) showed. Against 8,192 on the
/// ADL queries through `rntuple sql` (2,000,000 events, alternating
/// rounds): Q1 1.06-1.14x, Q2 1.28-1.36x, Q3 1.20x, Q4 1.17x, Q5-Q8 within
/// 2%; 32,768 made Q8 15% slower. Peak memory grew by 3-23 MB
/// (BENCHMARKS.md).
pub const SESSION_BATCH_SIZE: usize = 16_384;

/// A session with the `rntuple` format and the HEP functions, configured
/// by [`session_config`].
pub fn session_context() -> SessionContext {
    session_context_with_config(session_config())
}

/// A session with the `rntuple` format and the HEP functions.
///
/// Besides the logical rules of `optimizer_rules`, four physical rules
/// of this crate run after DataFusion's: a repeated subexpression is
/// computed once (`shared.rs`), filters of list columns keep lists by their
/// offsets (`filter.rs`), unnests of lists that need no padding hand on
/// slices of the lists' values (`unnest.rs`), and casts that widen numbers
/// write their output once (`widen.rs`).
///
/// Its object stores come from a [`StoreRegistry`]: the stores of
/// `http(s)://`, `s3://`, `gs://` and `az://` locations are made when a
/// table first reads them (feature `remote`).
pub fn session_context_with_config(config: SessionConfig) -> SessionContext {
    let runtime = RuntimeEnv {
        object_store_registry: Arc::new(StoreRegistry::new()),
        ..RuntimeEnv::default()
    };
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(Arc::new(runtime))
        .with_default_features()
        .with_optimizer_rules(optimizer_rules())
        .with_physical_optimizer_rule(Arc::new(shared::ShareSubexpressions))
        .with_physical_optimizer_rule(Arc::new(filter::FilterLists))
        .with_physical_optimizer_rule(Arc::new(unnest::UnnestLists))
        .with_physical_optimizer_rule(Arc::new(widen::WidenCasts))
        .build();
    let ctx = SessionContext::new_with_state(state);
    register(&ctx);
    ctx
}

/// `plan` with each node of type `T` for which `replace` gives a plan put
/// in its place, from the leaves up: the body of this crate's physical rules
/// that swap one of DataFusion's operators for a faster form of it.
pub(crate) fn replace_nodes<T: ExecutionPlan>(
    plan: Arc<dyn ExecutionPlan>,
    replace: impl Fn(&T) -> Option<Arc<dyn ExecutionPlan>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
    plan.transform_up(|node| {
        Ok(match node.downcast_ref::<T>().and_then(&replace) {
            Some(faster) => Transformed::yes(faster),
            None => Transformed::no(node),
        })
    })
    .data()
}

/// `batch` as consecutive slices of at most `size` rows (`size` at least
/// 1), without copies.
pub(crate) fn batch_slices(
    batch: &RecordBatch,
    size: usize,
) -> impl Iterator<Item = RecordBatch> + '_ {
    let rows = batch.num_rows();
    (0..rows)
        .step_by(size)
        .map(move |at| batch.slice(at, size.min(rows - at)))
}

/// DataFusion's logical optimizer rules, with three changes.
///
/// - First, the functions that SQL syntax plans directly (`list[i]`,
///   `a || b`, `[a, b]`) become this crate's faster versions
///   (`functions::FastPath`), and sums of four-vectors selected from one
///   list become one function (`functions/selected.rs`).
/// - Common subexpression elimination is left out. It moves expressions that
///   a lambda captures (`array_transform(o, k -> pt[k])` with `pt` computed
///   in a CTE) into a projection below it, and the lambda then reads the
///   wrong column ("Field of physical LambdaVariable ... doesn't match").
///   Analysis queries lean on lambdas; the physical rule of `shared.rs`
///   computes repeated subexpressions once instead.
/// - The expression simplifier skips table scans without filters
///   (`simplify.rs`): wide NanoAOD tables made it rebuild a schema of a
///   thousand columns in every pass.
fn optimizer_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    let fast: Arc<dyn OptimizerRule + Send + Sync> = Arc::new(functions::UseFastPaths::new());
    std::iter::once(fast)
        .chain(Optimizer::new().rules)
        .filter(|rule| rule.name() != "common_sub_expression_eliminate")
        .map(|rule| match rule.name() {
            "simplify_expressions" => Arc::new(simplify::SimplifyExpressions::default())
                as Arc<dyn OptimizerRule + Send + Sync>,
            _ => rule,
        })
        .collect()
}

/// Adds the `rntuple` format (`STORED AS RNTUPLE`) and the HEP functions to
/// an existing session.
pub fn register(ctx: &SessionContext) {
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        // Registering with `overwrite` cannot fail.
        let _ = state.register_file_format(Arc::new(RNTupleFormatFactory::new()), true);
        state
            .table_factories_mut()
            .insert("RNTUPLE".to_string(), Arc::new(RNTupleTableFactory));
    }
    for udf in functions::all() {
        ctx.register_udf(udf);
    }
}
