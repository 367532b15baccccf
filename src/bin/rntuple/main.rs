//! `rntuple`: list, inspect, print, export and query RNTuple files.
//!
//! ```text
//!  rntuple ls FILE...                 inspect.rs   RNTuples: entries, fields, sizes
//!  rntuple schema FILE                inspect.rs   field tree, C++ / Arrow / column types
//!  rntuple info FILE                  inspect.rs   cluster groups, clusters, pages, columns
//!  rntuple cat FILE                   read.rs      entries as a table, JSON lines or CSV
//!  rntuple export FILE -o OUT         read.rs      Arrow IPC, Parquet, JSON lines, CSV
//!  rntuple sql [FILE...] [-c QUERY]   sql.rs       DataFusion SQL, or an interactive prompt
//!  rntuple index FILE...              index.rs     per-cluster min/max sidecars for SQL pruning
//! ```
//!
//! A thin shell over the library. Every error is one line on stderr,
//! `rntuple: <what went wrong and where>`, and a non-zero exit.

mod allocator;
mod index;
mod inspect;
mod read;
mod sql;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::util::CliResult;

#[derive(Debug, Parser)]
#[command(
    name = "rntuple",
    version,
    about = "Read CERN ROOT RNTuple files: list, inspect, print, export to Arrow/Parquet, query with SQL",
    propagate_version = true
)]
struct Cli {
    /// No progress bars and no warnings.
    #[arg(short, long, global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the RNTuples in files: path, entries, fields, sizes.
    Ls(LsArgs),
    /// Show the field tree: C++ type, Arrow type, columns and encodings.
    Schema(SchemaArgs),
    /// Show cluster groups, clusters, pages and compression per column.
    Info(InfoArgs),
    /// Print entries as a table, JSON lines or CSV.
    Cat(CatArgs),
    /// Write an RNTuple as Arrow IPC, Parquet, JSON lines or CSV.
    Export(ExportArgs),
    /// Run SQL over RNTuple files (an interactive prompt without a query).
    Sql(SqlArgs),
    /// Write per-cluster min/max sidecars (FILE.rntidx) that let SQL filters skip clusters.
    Index(IndexArgs),
}

#[derive(Debug, Args)]
struct IndexArgs {
    /// ROOT files; each gets FILE.rntidx beside it.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The RNTuple to index (its name or directory path); needed when a file holds several.
    #[arg(long)]
    ntuple: Option<String>,
    /// Top-level fields to index, comma-separated: scalars by value, lists and maps by
    /// length (default: every such field).
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    columns: Vec<String>,
}

#[derive(Debug, Args)]
struct LsArgs {
    /// ROOT files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Sizes in bytes instead of KiB/MiB.
    #[arg(long)]
    bytes: bool,
}

#[derive(Debug, Args)]
struct SchemaArgs {
    file: PathBuf,
    /// The RNTuple to show (its name or directory path); needed when the file holds several.
    #[arg(long)]
    ntuple: Option<String>,
}

#[derive(Debug, Args)]
struct InfoArgs {
    file: PathBuf,
    /// The RNTuple to show (its name or directory path); needed when the file holds several.
    #[arg(long)]
    ntuple: Option<String>,
    /// Also list every page of every column in every cluster.
    #[arg(long)]
    pages: bool,
    /// Sizes in bytes instead of KiB/MiB.
    #[arg(long)]
    bytes: bool,
}

/// Output formats of `cat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CatFormat {
    /// A table; records instead when it is wider than the terminal.
    Table,
    /// One field a line, an entry at a time.
    Records,
    Jsonl,
    Csv,
}

#[derive(Debug, Args)]
struct CatArgs {
    file: PathBuf,
    /// The RNTuple to read (its name or directory path); needed when the file holds several.
    #[arg(long)]
    ntuple: Option<String>,
    /// Print at most N entries.
    #[arg(short = 'n', long = "limit", value_name = "N")]
    limit: Option<u64>,
    /// Skip the first N entries.
    #[arg(long, value_name = "N", default_value_t = 0)]
    skip: u64,
    /// Fields to print, comma-separated; nested paths like Jet.pt are allowed.
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    columns: Vec<String>,
    #[arg(long, value_enum, default_value_t = CatFormat::Table)]
    format: CatFormat,
    /// CSV: turn struct members into parent.member columns.
    #[arg(long)]
    flatten: bool,
}

/// Output formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ExportFormatArg {
    /// Arrow IPC file (.arrow, Feather v2).
    Arrow,
    /// Arrow IPC stream.
    ArrowStream,
    /// Parquet with zstd.
    Parquet,
    /// JSON lines.
    Jsonl,
    /// CSV (flat columns only; see --flatten).
    Csv,
}

impl From<ExportFormatArg> for rntuple::export::ExportFormat {
    fn from(f: ExportFormatArg) -> Self {
        use rntuple::export::ExportFormat;
        match f {
            ExportFormatArg::Arrow => ExportFormat::ArrowFile,
            ExportFormatArg::ArrowStream => ExportFormat::ArrowStream,
            ExportFormatArg::Parquet => ExportFormat::Parquet,
            ExportFormatArg::Jsonl => ExportFormat::JsonLines,
            ExportFormatArg::Csv => ExportFormat::Csv,
        }
    }
}

#[derive(Debug, Args)]
struct ExportArgs {
    file: PathBuf,
    /// The RNTuple to export (its name or directory path); needed when the file holds several.
    #[arg(long)]
    ntuple: Option<String>,
    /// Fields to export, comma-separated; nested paths like Jet.pt are allowed.
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    columns: Vec<String>,
    #[arg(long, value_enum)]
    format: ExportFormatArg,
    /// Output file, or - for stdout.
    #[arg(short, long, value_name = "OUT")]
    output: String,
    /// Export at most N entries.
    #[arg(short = 'n', long = "limit", value_name = "N")]
    limit: Option<u64>,
    /// Skip the first N entries.
    #[arg(long, value_name = "N", default_value_t = 0)]
    skip: u64,
    /// Entries per batch (and per IPC record batch).
    #[arg(long, value_name = "N")]
    batch_size: Option<usize>,
    /// CSV: turn struct members into parent.member columns.
    #[arg(long)]
    flatten: bool,
}

/// Output formats of `sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SqlFormat {
    /// A table; records instead when it is wider than the terminal.
    Table,
    /// One column a line, a row at a time.
    Records,
    Csv,
    Jsonl,
    /// Arrow IPC stream.
    Arrow,
}

#[derive(Debug, Args)]
struct SqlArgs {
    /// Register a table: NAME=PATH_OR_GLOB (repeatable).
    #[arg(long = "table", value_name = "NAME=PATH_OR_GLOB")]
    tables: Vec<String>,
    /// Files to register under the names of their RNTuples.
    files: Vec<PathBuf>,
    /// The RNTuple the tables of --table read (its name or directory
    /// path); needed when their files hold several.
    #[arg(long)]
    ntuple: Option<String>,
    /// The query (several statements may be separated by ;).
    #[arg(
        short = 'c',
        long = "command",
        value_name = "QUERY",
        conflicts_with = "script"
    )]
    command: Option<String>,
    /// Read the query from a file.
    #[arg(short = 'f', long = "file", value_name = "FILE.sql")]
    script: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = SqlFormat::Table)]
    format: SqlFormat,
}

fn run(cli: Cli) -> CliResult {
    let quiet = cli.quiet;
    match cli.command {
        Command::Ls(a) => inspect::ls(&a, quiet),
        Command::Schema(a) => inspect::schema(&a, quiet),
        Command::Info(a) => inspect::info(&a),
        Command::Cat(a) => read::cat(&a, quiet),
        Command::Export(a) => read::export(&a, quiet),
        Command::Sql(a) => sql::sql(&a, quiet),
        Command::Index(a) => index::index(&a, quiet),
    }
}

fn main() -> ExitCode {
    allocator::tune();
    // A bug must still end in one line, not a panic report.
    std::panic::set_hook(Box::new(|info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" ({}:{})", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("rntuple: internal error: {payload}{at}; please report it");
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.broken_pipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rntuple: {e}");
            ExitCode::FAILURE
        }
    }
}
