//! `cat` and `export`: entries out of a file, one batch at a time.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;

use arrow_schema::{DataType, Schema};
use rntuple::export::{
    unwritable_columns, unwritable_kinds, BatchWriter, ExportFormat, ExportOptions,
};
use rntuple::RNTupleRecordBatchReader;

use crate::inspect::open;
use crate::util::{
    bulk_stdout, entry_progress, format_rows, name_columns, warn_skipped, BulkWriter, CliError,
    CliResult, Context,
};
use crate::{CatArgs, CatFormat, ExportArgs};

/// Entries per batch when printing a table: one table per batch.
const TABLE_BATCH: usize = 1000;

/// What to read from a file.
struct ReadRequest<'a> {
    file: &'a Path,
    ntuple: Option<&'a str>,
    columns: &'a [String],
    skip: u64,
    limit: Option<u64>,
    batch_size: Option<usize>,
}

/// The batch reader of a request and the number of entries it will give.
fn reader(req: &ReadRequest, quiet: bool) -> CliResult<(RNTupleRecordBatchReader, u64)> {
    let file = open(req.file)?;
    let at = req.file.display();
    let mut builder = file.reader_builder(req.ntuple).context(&at)?;
    if req.columns.is_empty() {
        warn_skipped(quiet, &at.to_string(), builder.ntuple().mapping());
    } else {
        builder = builder.with_projection(req.columns).context(&at)?;
    }
    let n_entries = builder.ntuple().n_entries();
    let mut total = n_entries.saturating_sub(req.skip);
    if req.skip > 0 {
        builder = builder.with_entry_range(req.skip..n_entries.max(req.skip));
    }
    if let Some(limit) = req.limit {
        builder = builder.with_limit(limit);
        total = total.min(limit);
    }
    if let Some(n) = req.batch_size {
        builder = builder.with_batch_size(n);
    }
    Ok((builder.build().context(&at)?, total))
}

/// Refuses, naming them, the columns `format` cannot hold.
fn check_columns(schema: &Schema, format: ExportFormat, flatten: bool) -> CliResult {
    let bad = unwritable_columns(schema, format, flatten);
    if bad.is_empty() {
        return Ok(());
    }
    let names = name_columns(&bad);
    Err(CliError::new(match format {
        ExportFormat::Csv if !flatten && bad.iter().all(|c| matches!(c.data_type, DataType::Struct(_))) => format!(
            "CSV cannot hold nested columns: {names}; add --flatten to write struct members as parent.member columns, or use --format jsonl"
        ),
        ExportFormat::Csv => format!(
            "CSV cannot hold nested columns: {names}; leave them out with --columns, or use --format jsonl (export: also arrow or parquet)"
        ),
        _ => format!(
            "{format} cannot hold {} columns: {names}; leave them out with --columns, or use --format arrow",
            unwritable_kinds(&bad)
        ),
    }))
}

pub fn cat(args: &CatArgs, quiet: bool) -> CliResult {
    let req = ReadRequest {
        file: &args.file,
        ntuple: args.ntuple.as_deref(),
        columns: &args.columns,
        skip: args.skip,
        limit: args.limit,
        batch_size: (args.format == CatFormat::Table).then_some(TABLE_BATCH),
    };
    let (reader, _) = reader(&req, quiet)?;
    let at = args.file.display();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout);
    match args.format {
        CatFormat::Table | CatFormat::Records => {
            let schema = reader.schema_ref();
            // Once a table is wider than the terminal, records from then on.
            let mut records = args.format == CatFormat::Records;
            let mut first = args.skip;
            let mut printed = false;
            for batch in reader {
                let batch = batch.context(&at)?;
                if batch.num_rows() == 0 && printed {
                    continue;
                }
                let (text, as_records) = format_rows(
                    &schema,
                    std::slice::from_ref(&batch),
                    records,
                    first,
                    "entry",
                )?;
                out.write_all(text.as_bytes())?;
                records = as_records;
                first += batch.num_rows() as u64;
                printed |= !text.is_empty();
            }
            if !printed {
                match format_rows(&schema, &[], records, first, "entry")? {
                    (_, true) => writeln!(out, "(0 entries)")?,
                    (table, false) => out.write_all(table.as_bytes())?,
                }
            }
            out.flush()?;
        }
        CatFormat::Jsonl | CatFormat::Csv => {
            let format = if args.format == CatFormat::Csv {
                ExportFormat::Csv
            } else {
                ExportFormat::JsonLines
            };
            check_columns(&reader.schema_ref(), format, args.flatten)?;
            let options = ExportOptions {
                flatten: args.flatten,
                ..ExportOptions::default()
            };
            let mut writer = BatchWriter::try_new(out, &reader.schema_ref(), format, &options)?;
            for batch in reader {
                writer.write(&batch.context(&at)?)?;
            }
            writer.finish()?;
        }
    }
    Ok(())
}

/// Where export output goes.
enum Output {
    Stdout,
    File(std::path::PathBuf),
}

pub fn export(args: &ExportArgs, quiet: bool) -> CliResult {
    let format = ExportFormat::from(args.format);
    let output = if args.output == "-" {
        if format.is_binary() && std::io::stdout().is_terminal() {
            return Err(CliError::new(format!(
                "will not write binary {format} output to a terminal; give -o FILE or pipe stdout"
            )));
        }
        Output::Stdout
    } else {
        Output::File(args.output.clone().into())
    };
    let req = ReadRequest {
        file: &args.file,
        ntuple: args.ntuple.as_deref(),
        columns: &args.columns,
        skip: args.skip,
        limit: args.limit,
        batch_size: args.batch_size,
    };
    let (reader, total) = reader(&req, quiet)?;
    let schema = reader.schema_ref();
    check_columns(&schema, format, args.flatten)?;
    let options = ExportOptions {
        flatten: args.flatten,
        ..ExportOptions::default()
    };
    match output {
        Output::Stdout => {
            let out = bulk_stdout()?;
            write_all(reader, out, format, &options, total, quiet, args)
        }
        Output::File(path) => {
            let file =
                File::create(&path).context(format_args!("cannot create {}", path.display()))?;
            let result = write_all(
                reader,
                BulkWriter::new(file),
                format,
                &options,
                total,
                quiet,
                args,
            );
            if result.is_err() {
                // Leave no half-written file behind.
                let _ = std::fs::remove_file(&path);
            }
            result
        }
    }
}

fn write_all<W: Write + Send>(
    reader: RNTupleRecordBatchReader,
    out: W,
    format: ExportFormat,
    options: &ExportOptions,
    total: u64,
    quiet: bool,
    args: &ExportArgs,
) -> CliResult {
    let at = args.file.display();
    let target = if args.output == "-" {
        "stdout".to_string()
    } else {
        args.output.clone()
    };
    let schema = reader.schema_ref();
    let mut writer = BatchWriter::try_new(out, &schema, format, options)
        .context(format_args!("writing {target}"))?;
    let bar = entry_progress(total, quiet, "export");
    for batch in reader {
        let batch = batch.context(&at)?;
        writer
            .write(&batch)
            .context(format_args!("writing {target}"))?;
        bar.inc(batch.num_rows() as u64);
    }
    writer.finish().context(format_args!("writing {target}"))?;
    bar.finish_and_clear();
    Ok(())
}

/// The schema of a reader, as a `SchemaRef`.
trait SchemaOf {
    fn schema_ref(&self) -> arrow_schema::SchemaRef;
}

impl SchemaOf for RNTupleRecordBatchReader {
    fn schema_ref(&self) -> arrow_schema::SchemaRef {
        arrow_array::RecordBatchReader::schema(self)
    }
}
