//! `sql`: DataFusion over RNTuple files, one query or an interactive prompt.
//!
//! ```text
//!  --table NAME=PATH_OR_GLOB ─┐
//!  FILE (under its ntuple's   ├─ RNTupleTable ───────> session (options from DATAFUSION_*)
//!        name)               ─┘                        │
//!  -c QUERY | -f FILE.sql | stdin | prompt ─ statements ┴─> results: table, csv, jsonl, arrow
//! ```

use std::collections::HashMap;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;
use datafusion::sql::sqlparser::dialect::dialect_from_str;
use futures::StreamExt;
use rntuple::arrow::SkippedField;
use rntuple::datafusion::{
    session_config, session_context_with_config, RNTupleFormat, RNTupleReadOptions, RNTupleTable,
};
use rntuple::export::{unwritable_columns, BatchWriter, ExportFormat, ExportOptions};
use rustyline::error::ReadlineError;

use crate::inspect::{open, remote_url};
use crate::util::{
    bulk_stdout, format_rows, name_columns, spinner, warn_left_out, CliError, CliResult, Context,
};
use crate::{SqlArgs, SqlFormat};

/// How results are shown.
#[derive(Clone, Copy)]
struct Output {
    format: SqlFormat,
    quiet: bool,
    /// At the prompt: print row counts and times.
    interactive: bool,
}

pub fn sql(args: &SqlArgs, quiet: bool) -> CliResult {
    if args.format == SqlFormat::Arrow && std::io::stdout().is_terminal() {
        return Err(CliError::new(
            "will not write binary Arrow output to a terminal; pipe stdout",
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format_args!("cannot start the query runtime: {e}")))?;
    let ctx = session_context_with_config(config_from_env()?);
    let tables = runtime.block_on(register_tables(&ctx, args, quiet))?;

    let script = match (&args.command, &args.script) {
        (Some(query), _) => Some(query.clone()),
        (None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| CliError::new(format_args!("cannot read {}: {e}", path.display())))?,
        ),
        (None, None) if !std::io::stdin().is_terminal() => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading the query from stdin")?;
            Some(text)
        }
        (None, None) => None,
    };
    match script {
        Some(text) => {
            let output = Output {
                format: args.format,
                quiet,
                interactive: false,
            };
            runtime.block_on(run_script(&ctx, &text, output))
        }
        None => repl(&runtime, &ctx, &tables, args.format, quiet),
    }
}

/// The session's settings, and any DataFusion option set in the
/// environment, named as DataFusion's own command names them:
/// `datafusion.execution.target_partitions` is
/// `DATAFUSION_EXECUTION_TARGET_PARTITIONS`. Tables are registered before
/// the first statement, so options that act on registering (such as
/// `datafusion.execution.meta_fetch_concurrency`) are set here, not by `SET`.
fn config_from_env() -> CliResult<SessionConfig> {
    let mut config = session_config();
    let options = config.options_mut();
    for key in options.entries().into_iter().map(|e| e.key) {
        let name = key.to_uppercase().replace('.', "_");
        if let Some(value) = std::env::var_os(&name) {
            let value = value.to_string_lossy();
            options
                .set(&key, &value)
                .map_err(|e| CliError::new(format_args!("{name}={value}: {e}")))?;
        }
    }
    Ok(config)
}

/// Registers `--table` and bare files; returns table name -> what it reads.
async fn register_tables(
    ctx: &SessionContext,
    args: &SqlArgs,
    quiet: bool,
) -> CliResult<Vec<(String, String)>> {
    let mut tables: Vec<(String, String)> = Vec::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut claim = |name: &str, source: &str| -> CliResult {
        if let Some(previous) = seen.insert(name.to_string(), source.to_string()) {
            return Err(CliError::new(format!(
                "table {name} is given twice ({previous} and {source}); name them apart or put both in one --table {name}=GLOB"
            )));
        }
        tables.push((name.to_string(), source.to_string()));
        Ok(())
    };
    for spec in &args.tables {
        let Some((name, path)) = spec
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        else {
            return Err(CliError::new(format!(
                "--table wants NAME=PATH_OR_GLOB, got {spec:?}"
            )));
        };
        claim(name, path)?;
        let mut options = RNTupleReadOptions::default();
        if let Some(ntuple) = &args.ntuple {
            options = options.with_ntuple(ntuple.clone());
        }
        let format = register(ctx, name, path, options)
            .await
            .context(format_args!("table {name} ({path})"))?;
        // From the metadata the table has read already: no file is opened
        // a second time for the warnings.
        warn_skipped_fields(quiet, path, &format.skipped_fields());
    }
    for path in &args.files {
        let shown = path.display().to_string();
        let location = match remote_url(path) {
            Some(url) => url.to_string(),
            None => location(path)?,
        };
        // The file's only RNTuple, under its name: the metadata is read once
        // (a file at a URL waits for its requests once).
        let (provider, format) = match table(ctx, &location, RNTupleReadOptions::default()).await {
            Ok(table) => table,
            Err(e) if several_ntuples(&e) => {
                register_each(ctx, path, &location, quiet, &mut claim).await?;
                continue;
            }
            Err(e) => {
                let e = CliError::from(e);
                // Named once: some errors name the file already.
                let message = e.to_string();
                let named = message.contains(&location) || message.contains(&shown);
                return Err(if named { e } else { e.context(&shown) });
            }
        };
        let Some((_, info)) = format.ntuples_read().into_iter().next() else {
            return Err(CliError::new(format!("{shown}: no RNTuple was read")));
        };
        claim(&info.name, &shown)?;
        for (_, field) in format.skipped_fields() {
            warn_left_out(quiet, &shown, &field, "");
        }
        ctx.register_table(TableReference::bare(info.name.as_str()), provider)?;
    }
    Ok(tables)
}

/// Registers every RNTuple of a file that holds several, each under its
/// name, or its path where two share a name (A and sub/A).
async fn register_each(
    ctx: &SessionContext,
    path: &Path,
    location: &str,
    quiet: bool,
    claim: &mut impl FnMut(&str, &str) -> CliResult,
) -> CliResult {
    let shown = path.display().to_string();
    let file = open(path)?;
    let infos = file.ntuples();
    for info in &infos {
        let twice = infos.iter().filter(|i| i.name == info.name).count() > 1;
        let name = if twice { &info.path } else { &info.name };
        claim(name, &shown)?;
        let options = RNTupleReadOptions::default().with_ntuple(info.path.clone());
        let format = register(ctx, name, location, options)
            .await
            .context(format_args!("table {name} ({shown})"))?;
        for (_, field) in format.skipped_fields() {
            warn_left_out(quiet, &shown, &field, "");
        }
    }
    Ok(())
}

/// Whether reading a file failed because it holds several RNTuples and
/// none was named.
fn several_ntuples(e: &DataFusionError) -> bool {
    match e.find_root() {
        DataFusionError::External(inner) => inner
            .downcast_ref::<rntuple::Error>()
            .is_some_and(|e| matches!(e.root_cause(), rntuple::Error::AmbiguousNTuple { .. })),
        _ => false,
    }
}

/// Registers the files at `path` as table `name`, spelt exactly so (the
/// session keeps identifiers' case: `SELECT ... FROM Events`). Returns the
/// table's format, which holds the metadata of the files read so far.
async fn register(
    ctx: &SessionContext,
    name: &str,
    path: &str,
    options: RNTupleReadOptions,
) -> CliResult<RNTupleFormat> {
    let (provider, format) = table(ctx, path, options).await?;
    ctx.register_table(TableReference::bare(name), provider)?;
    Ok(format)
}

/// The table of the files at `path`, not yet registered, and its format.
async fn table(
    ctx: &SessionContext,
    path: &str,
    options: RNTupleReadOptions,
) -> datafusion::error::Result<(Arc<dyn TableProvider>, RNTupleFormat)> {
    let table = RNTupleTable::try_new(&ctx.state(), path, options).await?;
    let format = table.format().clone();
    Ok((Arc::new(table), format))
}

/// Warns once per field left out of a table, naming the first file that
/// lacks it and how many others do (`skipped` as from
/// [`RNTupleFormat::skipped_fields`], by location). A table of one file
/// names it as given.
fn warn_skipped_fields(quiet: bool, path: &str, skipped: &[(String, SkippedField)]) {
    let mut seen: Vec<(&SkippedField, &str, usize)> = Vec::new();
    for (location, field) in skipped {
        match seen.iter_mut().find(|(f, _, _)| *f == field) {
            Some((_, _, others)) => *others += 1,
            None => seen.push((field, location, 0)),
        }
    }
    let single = Path::new(path).is_file();
    for (field, location, others) in seen {
        let file = if single {
            path.to_string()
        } else if path.contains("://") {
            location.to_string()
        } else {
            format!("/{location}")
        };
        let also = match others {
            0 => String::new(),
            1 => " (and in 1 other file)".to_string(),
            n => format!(" (and in {n} other files)"),
        };
        warn_left_out(quiet, &file, field, &also);
    }
}

/// A local file as a location DataFusion reads whatever its name.
fn location(path: &Path) -> CliResult<String> {
    let absolute: PathBuf = std::fs::canonicalize(path).context(path.display())?;
    absolute
        .to_str()
        .map(str::to_string)
        .ok_or_else(|| CliError::new(format!("{}: the path is not valid UTF-8", path.display())))
}

/// Runs every statement of `text`, printing the results in order.
async fn run_script(ctx: &SessionContext, text: &str, output: Output) -> CliResult {
    // The session's dialect (DuckDB's, for lambdas), as `ctx.sql` would use.
    let name = ctx.state().config().options().sql_parser.dialect;
    let dialect = dialect_from_str(name)
        .ok_or_else(|| CliError::new(format!("unsupported SQL dialect {name}")))?;
    let statements = DFParser::parse_sql_with_dialect(text, dialect.as_ref())?;
    for statement in statements {
        let started = Instant::now();
        let plan = ctx.state().statement_to_plan(statement).await?;
        // The table a CREATE EXTERNAL TABLE makes opens its files now.
        let creates = matches!(plan, LogicalPlan::Ddl(DdlStatement::CreateExternalTable(_)));
        let frame = ctx.execute_logical_plan(plan).await.map_err(|e| {
            let e = CliError::from(e);
            if creates {
                // It names its RNTuple with a table option, not --ntuple.
                e.with_ntuple_hint(" with OPTIONS ('ntuple' 'NAME')")
            } else {
                e
            }
        })?;
        let stream = frame.execute_stream().await?;
        print_stream(stream, output, started).await?;
    }
    Ok(())
}

async fn print_stream(
    mut stream: SendableRecordBatchStream,
    output: Output,
    started: Instant,
) -> CliResult {
    let schema = stream.schema();
    // Statements without results (CREATE, SET) print nothing.
    if schema.fields().is_empty() {
        while let Some(batch) = stream.next().await {
            batch?;
        }
        return Ok(());
    }
    // At the prompt, rows printed as they come would mix with a spinner.
    let bar = spinner(
        output.quiet
            || (output.interactive
                && !matches!(output.format, SqlFormat::Table | SqlFormat::Records)),
        "query",
    );
    let format = match output.format {
        SqlFormat::Table | SqlFormat::Records => None,
        SqlFormat::Csv => Some(ExportFormat::Csv),
        SqlFormat::Jsonl => Some(ExportFormat::JsonLines),
        SqlFormat::Arrow => Some(ExportFormat::ArrowStream),
    };
    let mut rows = 0u64;
    match format {
        None => {
            let mut batches = Vec::new();
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                rows += batch.num_rows() as u64;
                bar.inc(batch.num_rows() as u64);
                batches.push(batch);
            }
            bar.finish_and_clear();
            let (mut text, records) = format_rows(
                &schema,
                &batches,
                output.format == SqlFormat::Records,
                1,
                "row",
            )?;
            if records && text.is_empty() {
                text.push_str("(0 rows)\n");
            }
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(format) => {
            let bad = unwritable_columns(&schema, format, false);
            if !bad.is_empty() {
                let names = name_columns(&bad);
                return Err(CliError::new(format!(
                    "{format} cannot hold the columns {names}; select their members or use another --format",
                )));
            }
            let out = bulk_stdout()?;
            let mut writer = BatchWriter::try_new(out, &schema, format, &ExportOptions::default())?;
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                rows += batch.num_rows() as u64;
                bar.inc(batch.num_rows() as u64);
                writer.write(&batch)?;
            }
            writer.finish()?;
            bar.finish_and_clear();
        }
    }
    if output.interactive {
        let plural = if rows == 1 { "" } else { "s" };
        eprintln!(
            "{rows} row{plural} in {:.3} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Where the prompt keeps its history.
fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(".rntuple_history"))
}

const HELP: &str = "\
End a statement with ; (it may span lines). Commands:
  \\d          list the tables
  \\d TABLE    describe a table
  \\?          this help
  \\q          quit (also Ctrl-D)
Example: SELECT nMuon, count(*) AS n FROM Events GROUP BY nMuon ORDER BY nMuon;";

fn repl(
    runtime: &tokio::runtime::Runtime,
    ctx: &SessionContext,
    tables: &[(String, String)],
    format: SqlFormat,
    quiet: bool,
) -> CliResult {
    let mut editor = rustyline::DefaultEditor::new()
        .map_err(|e| CliError::new(format_args!("cannot start the prompt: {e}")))?;
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    if tables.is_empty() {
        eprintln!("No tables: give FILE or --table NAME=PATH, or CREATE EXTERNAL TABLE ... STORED AS RNTUPLE LOCATION '...'.");
    } else {
        let names: Vec<String> = tables.iter().map(|(n, s)| format!("{n} ({s})")).collect();
        eprintln!("Tables: {}", names.join(", "));
    }
    eprintln!("\\? for help, \\q to quit.");
    let output = Output {
        format,
        quiet,
        interactive: true,
    };
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "rntuple> "
        } else {
            "     ..> "
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(CliError::new(format_args!("prompt: {e}"))),
        };
        let trimmed = line.trim();
        if buffer.is_empty() && trimmed.starts_with('\\') {
            let _ = editor.add_history_entry(trimmed);
            let mut parts = trimmed.splitn(2, char::is_whitespace);
            let command = parts.next().unwrap_or_default();
            let arg = parts.next().map(str::trim).unwrap_or_default();
            let query = match command {
                "\\q" => break,
                "\\?" | "\\h" => {
                    eprintln!("{HELP}");
                    continue;
                }
                "\\d" if arg.is_empty() => "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name".to_string(),
                "\\d" => format!("DESCRIBE \"{}\"", arg.replace('"', "\"\"")),
                other => {
                    eprintln!("rntuple: unknown command {other}; \\? for help");
                    continue;
                }
            };
            if let Err(e) = runtime.block_on(run_script(ctx, &query, output)) {
                eprintln!("rntuple: {e}");
            }
            continue;
        }
        if buffer.is_empty() && matches!(trimmed, "quit" | "exit" | "help") {
            if trimmed == "help" {
                eprintln!("{HELP}");
                continue;
            }
            break;
        }
        if trimmed.is_empty() && buffer.is_empty() {
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        if !trimmed.ends_with(';') {
            continue;
        }
        let text = std::mem::take(&mut buffer);
        let _ = editor.add_history_entry(text.trim());
        if let Err(e) = runtime.block_on(run_script(ctx, &text, output)) {
            if e.broken_pipe {
                break;
            }
            eprintln!("rntuple: {e}");
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}
