//! Writing record batches out: Arrow IPC (file and stream), Parquet, CSV
//! and JSON lines.
//!
//! ```text
//!  RNTupleRecordBatchReader ──┐
//!  any RecordBatchReader ─────┼─ batch ─> BatchWriter ─> impl Write (file, stdout, Vec<u8>)
//!  DataFusion result stream ──┘   one at a time          ipc::FileWriter / StreamWriter,
//!                                                        parquet::ArrowWriter (zstd),
//!                                                        csv::Writer, json::LineDelimitedWriter
//!                                                        (a slice of a batch per task)
//! ```
//!
//! Export streams: every batch goes to the writer as soon as the reader
//! makes it and is dropped before the next one is read, so memory stays at
//! about one batch (plus, for Parquet, the compressed row group being
//! built). Arrow IPC writes the decoded buffers as they are.
//!
//! CSV holds only flat columns. Nested columns are refused with an error
//! naming them, unless [`ExportOptions::flatten`] is set: then the members
//! of structs become columns named `parent.member` (recursively); lists,
//! maps and unions are refused even then.
//!
//! ```no_run
//! use rntuple::export::{export, ExportFormat, ExportOptions};
//! let file = rntuple::RNTupleFile::open("events.root")?;
//! let reader = file.reader_builder(None)?.build()?;
//! let out = std::fs::File::create("events.arrow")?;
//! let stats = export(reader, out, ExportFormat::ArrowFile, &ExportOptions::default())?;
//! println!("{} rows in {} batches", stats.rows, stats.batches);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::Arc;

use arrow::csv;
use arrow::ipc::writer::{FileWriter, StreamWriter};
use arrow::json::{writer::LineDelimited, WriterBuilder as JsonWriterBuilder};
use arrow_array::{
    make_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader, StructArray,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn,
    ArrowRowGroupWriterFactory,
};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use parquet::basic::{Compression, Type as PhysicalType, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Most rows per Parquet row group (a row group is buffered, encoded and
/// compressed, until it is complete).
pub const PARQUET_ROW_GROUP_ROWS: usize = 128 * 1024;

/// Estimated encoded bytes at which a Parquet row group ends, whatever the
/// width of a row: the bound on what the writer buffers (an entry of a 1,680-field NanoAOD
/// RNTuple is far wider than one of a few dozen fields).
pub const PARQUET_ROW_GROUP_BYTES: usize = 64 << 20;

/// Most bytes of arrays encoded at a time into a Parquet row group, which
/// ends once its estimated size reaches [`PARQUET_ROW_GROUP_BYTES`]: a
/// batch larger than a row group (an entry range of a wide RNTuple) goes in
/// pieces, so that a row group passes the cap by a piece at most.
const PARQUET_PIECE_BYTES: usize = PARQUET_ROW_GROUP_BYTES / 8;

/// `batch` in slices of at most [`PARQUET_PIECE_BYTES`] of arrays each (as
/// far as a row allows). A column that shares buffers with another (a
/// projected field and the field it names) counts once for each: the
/// writer encodes both.
fn parquet_pieces(batch: &RecordBatch) -> impl Iterator<Item = RecordBatch> + '_ {
    let rows = batch.num_rows();
    let bytes: usize = batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum();
    let pieces = bytes.div_ceil(PARQUET_PIECE_BYTES).clamp(1, rows.max(1));
    let step = rows.div_ceil(pieces).max(1);
    (0..rows.max(1))
        .step_by(step)
        .map(move |start| batch.slice(start, step.min(rows - start)))
}

/// The Parquet paths of the floating-point columns of `schema`.
///
/// These are written without a dictionary: measured values rarely repeat,
/// so the writer would only fall back to plain encoding once the dictionary
/// is full, having held a dictionary and its hash table per column until
/// then (with the 1,300 leaves of a NanoAOD file, several times the data of
/// a row group).
fn floating_point_columns(schema: &Schema) -> Result<Vec<ColumnPath>> {
    let parquet = ArrowSchemaConverter::new()
        .convert(schema)
        .map_err(parquet_error)?;
    Ok(parquet
        .columns()
        .iter()
        .filter(|c| {
            matches!(
                c.physical_type(),
                PhysicalType::FLOAT | PhysicalType::DOUBLE
            )
        })
        .map(|c| c.path().clone())
        .collect())
}

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The Arrow IPC file format (`.arrow`, Feather v2), with a footer.
    ArrowFile,
    /// The Arrow IPC stream format.
    ArrowStream,
    /// Parquet, compressed with zstd.
    Parquet,
    /// One JSON object per line.
    JsonLines,
    /// Comma-separated values with a header line.
    Csv,
}

impl ExportFormat {
    /// Every format, in the order the command line lists them.
    pub const ALL: [ExportFormat; 5] = [
        ExportFormat::ArrowFile,
        ExportFormat::ArrowStream,
        ExportFormat::Parquet,
        ExportFormat::JsonLines,
        ExportFormat::Csv,
    ];

    /// The name used on the command line (`arrow`, `arrow-stream`, `parquet`, `jsonl`, `csv`).
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::ArrowFile => "arrow",
            ExportFormat::ArrowStream => "arrow-stream",
            ExportFormat::Parquet => "parquet",
            ExportFormat::JsonLines => "jsonl",
            ExportFormat::Csv => "csv",
        }
    }

    /// Whether the output is binary (not meant for a terminal).
    pub fn is_binary(self) -> bool {
        matches!(
            self,
            ExportFormat::ArrowFile | ExportFormat::ArrowStream | ExportFormat::Parquet
        )
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ExportFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "arrow" | "ipc" | "feather" => ExportFormat::ArrowFile,
            "arrow-stream" | "ipc-stream" => ExportFormat::ArrowStream,
            "parquet" => ExportFormat::Parquet,
            "jsonl" | "json" | "ndjson" => ExportFormat::JsonLines,
            "csv" => ExportFormat::Csv,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown export format {other:?} (choose arrow, arrow-stream, parquet, jsonl or csv)"
                )))
            }
        })
    }
}

/// Settings of an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// Turn struct members into `parent.member` columns (CSV only; the
    /// other formats hold nested data as it is).
    pub flatten: bool,
    /// The zstd level of Parquet output.
    pub zstd_level: i32,
    /// Write the header line of CSV output.
    pub csv_header: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        Self {
            flatten: false,
            zstd_level: 3,
            csv_header: true,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    pub rows: u64,
    pub batches: u64,
}

/// A column a format cannot hold: its `.`-separated path and Arrow type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwritableColumn {
    pub path: String,
    pub data_type: DataType,
}

/// The columns of `schema` that `format` cannot hold: for CSV every nested
/// column (with `flatten`, the non-struct ones under the flattened
/// structs); for Parquet the unions and the empty structs (classes without
/// members); for JSON lines the unions.
pub fn unwritable_columns(
    schema: &Schema,
    format: ExportFormat,
    flatten: bool,
) -> Vec<UnwritableColumn> {
    let mut out = Vec::new();
    for field in schema.fields() {
        match format {
            ExportFormat::Csv => collect_nested(field, field.name(), flatten, &mut out),
            ExportFormat::Parquet => collect_unwritable(field, field.name(), true, &mut out),
            ExportFormat::JsonLines => collect_unwritable(field, field.name(), false, &mut out),
            ExportFormat::ArrowFile | ExportFormat::ArrowStream => {}
        }
    }
    out
}

/// What the columns `bad` are that a format other than CSV cannot hold, for
/// messages: "union (std::variant)", "empty struct" or both.
pub fn unwritable_kinds(bad: &[UnwritableColumn]) -> &'static str {
    let unions = bad
        .iter()
        .any(|c| matches!(c.data_type, DataType::Union(..)));
    let empty = bad
        .iter()
        .any(|c| matches!(&c.data_type, DataType::Struct(f) if f.is_empty()));
    match (unions, empty) {
        (true, true) => "union (std::variant) and empty struct",
        (false, true) => "empty struct (a class without members)",
        _ => "union (std::variant)",
    }
}

fn collect_nested(field: &Field, path: &str, flatten: bool, out: &mut Vec<UnwritableColumn>) {
    match field.data_type() {
        DataType::Struct(children) if flatten => {
            for child in children {
                collect_nested(child, &format!("{path}.{}", child.name()), flatten, out);
            }
        }
        dt if dt.is_nested() => out.push(UnwritableColumn {
            path: path.to_string(),
            data_type: dt.clone(),
        }),
        _ => {}
    }
}

/// Collects the unions under `field`, and with `empty_structs` the structs
/// without members.
fn collect_unwritable(
    field: &Field,
    path: &str,
    empty_structs: bool,
    out: &mut Vec<UnwritableColumn>,
) {
    match field.data_type() {
        DataType::Union(..) => out.push(UnwritableColumn {
            path: path.to_string(),
            data_type: field.data_type().clone(),
        }),
        DataType::Struct(children) if children.is_empty() && empty_structs => {
            out.push(UnwritableColumn {
                path: path.to_string(),
                data_type: field.data_type().clone(),
            })
        }
        DataType::Struct(children) => {
            for child in children {
                let path = format!("{path}.{}", child.name());
                collect_unwritable(child, &path, empty_structs, out);
            }
        }
        DataType::List(child)
        | DataType::LargeList(child)
        | DataType::FixedSizeList(child, _)
        | DataType::Map(child, _) => collect_unwritable(child, path, empty_structs, out),
        _ => {}
    }
}

/// A short name of an Arrow type for messages: `list`, `struct`, `map` ...
fn kind(dt: &DataType) -> &'static str {
    match dt {
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_) => "list",
        DataType::FixedSizeList(..) => "fixed-size list",
        DataType::Struct(fields) if fields.is_empty() => "empty struct",
        DataType::Struct(_) => "struct",
        DataType::Map(..) => "map",
        DataType::Union(..) => "union",
        _ => "nested",
    }
}

/// The most columns a refusal names; it counts the others.
const NAMED_COLUMNS: usize = 8;

/// The error refusing the columns `format` cannot hold, or `None`.
fn refusal(schema: &Schema, format: ExportFormat, flatten: bool) -> Option<Error> {
    let bad = unwritable_columns(schema, format, flatten);
    if bad.is_empty() {
        return None;
    }
    // A file of a thousand fields must not make an error of a thousand
    // names: the first few, and how many more.
    let shown = if bad.len() > NAMED_COLUMNS + 1 {
        NAMED_COLUMNS
    } else {
        bad.len()
    };
    let mut names: Vec<String> = bad
        .iter()
        .take(shown)
        .map(|c| format!("{} ({})", c.path, kind(&c.data_type)))
        .collect();
    if bad.len() > shown {
        names.push(format!("and {} more", bad.len() - shown));
    }
    let message = match format {
        ExportFormat::Csv => {
            let only_structs = bad
                .iter()
                .all(|c| matches!(c.data_type, DataType::Struct(_)));
            let hint = if only_structs && !flatten {
                "; flatten the structs into parent.member columns, or choose jsonl, arrow or parquet"
            } else {
                "; leave them out or choose jsonl, arrow or parquet"
            };
            format!("CSV cannot hold nested columns: {}{hint}", names.join(", "))
        }
        _ => format!(
            "{} cannot hold {} columns: {}; leave them out or choose arrow",
            if format == ExportFormat::Parquet {
                "Parquet"
            } else {
                "JSON"
            },
            unwritable_kinds(&bad),
            names.join(", ")
        ),
    };
    Some(Error::InvalidArgument(message))
}

/// The schema that JSON lines write for `schema`, when it differs: JSON
/// objects have only string keys, so the keys of maps (`std::map<int, T>`)
/// that are numbers or booleans are written as their text. `None` when no
/// map needs it.
fn text_keys_schema(schema: &Schema) -> Option<SchemaRef> {
    let mut changed = false;
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|f| match text_keys_type(f.data_type()) {
            Some(dt) => {
                changed = true;
                Arc::new(f.as_ref().clone().with_data_type(dt))
            }
            None => Arc::clone(f),
        })
        .collect();
    changed.then(|| Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

/// `dt` with the scalar keys of its maps as strings, or `None` if unchanged.
fn text_keys_type(dt: &DataType) -> Option<DataType> {
    let field = |f: &FieldRef| {
        text_keys_type(f.data_type()).map(|dt| Arc::new(f.as_ref().clone().with_data_type(dt)))
    };
    match dt {
        DataType::List(item) => field(item).map(DataType::List),
        DataType::LargeList(item) => field(item).map(DataType::LargeList),
        DataType::FixedSizeList(item, n) => field(item).map(|f| DataType::FixedSizeList(f, *n)),
        DataType::Struct(members) => {
            let changed: Vec<Option<FieldRef>> = members.iter().map(field).collect();
            changed.iter().any(Option::is_some).then(|| {
                DataType::Struct(
                    members
                        .iter()
                        .zip(changed)
                        .map(|(m, c)| c.unwrap_or_else(|| Arc::clone(m)))
                        .collect(),
                )
            })
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return None;
            };
            let [key, value] = &kv[..] else {
                return None;
            };
            let text_key = (key.data_type().is_primitive()
                || *key.data_type() == DataType::Boolean)
                .then(|| Arc::new(key.as_ref().clone().with_data_type(DataType::Utf8)));
            let value_changed = field(value);
            if text_key.is_none() && value_changed.is_none() {
                return None;
            }
            let kv = Fields::from(vec![
                text_key.unwrap_or_else(|| Arc::clone(key)),
                value_changed.unwrap_or_else(|| Arc::clone(value)),
            ]);
            let entries = entries
                .as_ref()
                .clone()
                .with_data_type(DataType::Struct(kv));
            Some(DataType::Map(Arc::new(entries), *sorted))
        }
        _ => None,
    }
}

/// `batch` with its columns cast to the types of `schema`.
fn cast_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| arrow::compute::cast(c, f.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// The schema with struct columns replaced by their members, named
/// `parent.member`, recursively. Members of a nullable struct become
/// nullable.
pub fn flatten_schema(schema: &Schema) -> SchemaRef {
    let mut fields = Vec::new();
    for field in schema.fields() {
        flatten_field(field, field.name(), false, &mut fields);
    }
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn flatten_field(field: &FieldRef, path: &str, parent_nullable: bool, out: &mut Vec<FieldRef>) {
    match field.data_type() {
        DataType::Struct(children) => {
            let nullable = parent_nullable || field.is_nullable();
            for child in children {
                flatten_field(child, &format!("{path}.{}", child.name()), nullable, out);
            }
        }
        _ if path == field.name() && !parent_nullable => out.push(field.clone()),
        _ => out.push(Arc::new(
            field
                .as_ref()
                .clone()
                .with_name(path)
                .with_nullable(field.is_nullable() || parent_nullable),
        )),
    }
}

/// The batch with struct columns replaced by their members (see
/// [`flatten_schema`]); `schema` is the flattened schema. A null struct
/// slot makes its members null there.
pub fn flatten_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut columns = Vec::with_capacity(schema.fields().len());
    for column in batch.columns() {
        flatten_array(column.clone(), None, &mut columns)?;
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

fn flatten_array(
    array: ArrayRef,
    parent_nulls: Option<&NullBuffer>,
    out: &mut Vec<ArrayRef>,
) -> Result<()> {
    let array = match parent_nulls {
        Some(nulls) => with_nulls(
            &array,
            NullBuffer::union(Some(nulls), array.logical_nulls().as_ref()),
        )?,
        None => array,
    };
    match array.as_any().downcast_ref::<StructArray>() {
        Some(s) => {
            for child in s.columns() {
                flatten_array(child.clone(), s.nulls(), out)?;
            }
        }
        None => out.push(array),
    }
    Ok(())
}

fn with_nulls(array: &ArrayRef, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let data = array.to_data().into_builder().nulls(nulls).build()?;
    Ok(make_array(data))
}

/// A Parquet file written a row group at a time, its columns encoded and
/// compressed in parallel (the writer of the `parquet` crate encodes one
/// column after another, on one core).
struct ParquetSink<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The column writers of the row group being written, one per leaf.
    group: Vec<ArrowColumnWriter>,
    /// Rows in `group`.
    rows: usize,
}

impl<W: Write + Send> ParquetSink<W> {
    fn try_new(writer: W, schema: &SchemaRef, props: WriterProperties) -> Result<Self> {
        // The crate's own writer builds the file's schema and metadata (the
        // Arrow schema among them); rows go through its parts.
        let (file, factory) = ArrowWriter::try_new(writer, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(parquet_error)?;
        let group = factory.create_column_writers(0).map_err(parquet_error)?;
        Ok(Self {
            file,
            factory,
            schema: schema.clone(),
            group,
            rows: 0,
        })
    }

    /// Appends `batch`, in pieces of [`PARQUET_PIECE_BYTES`]; a row group
    /// ends at [`PARQUET_ROW_GROUP_ROWS`] rows, or after the piece that
    /// takes its estimated size to [`PARQUET_ROW_GROUP_BYTES`].
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        for piece in parquet_pieces(batch) {
            let mut start = 0;
            while start < piece.num_rows() {
                let len = (PARQUET_ROW_GROUP_ROWS - self.rows).min(piece.num_rows() - start);
                self.write_rows(&piece.slice(start, len))?;
                start += len;
                let bytes: usize = self
                    .group
                    .iter()
                    .map(|w| w.get_estimated_total_bytes())
                    .sum();
                if self.rows >= PARQUET_ROW_GROUP_ROWS || bytes >= PARQUET_ROW_GROUP_BYTES {
                    self.end_row_group()?;
                }
            }
        }
        Ok(())
    }

    fn write_rows(&mut self, batch: &RecordBatch) -> Result<()> {
        let leaves: Vec<Vec<ArrowLeafColumn>> = self
            .schema
            .fields()
            .par_iter()
            .zip(batch.columns())
            .map(|(field, column)| compute_leaves(field, column))
            .collect::<std::result::Result<_, _>>()
            .map_err(parquet_error)?;
        let leaves: Vec<ArrowLeafColumn> = leaves.into_iter().flatten().collect();
        self.group
            .par_iter_mut()
            .zip(&leaves)
            .try_for_each(|(writer, leaf)| writer.write(leaf))
            .map_err(parquet_error)?;
        self.rows += batch.num_rows();
        Ok(())
    }

    /// Closes the columns of the row group (their last pages compressed in
    /// parallel) and writes them out.
    fn end_row_group(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let next = self.file.flushed_row_groups().len() + 1;
        let writers = std::mem::replace(
            &mut self.group,
            self.factory
                .create_column_writers(next)
                .map_err(parquet_error)?,
        );
        let chunks: Vec<ArrowColumnChunk> = writers
            .into_par_iter()
            .map(ArrowColumnWriter::close)
            .collect::<std::result::Result<_, _>>()
            .map_err(parquet_error)?;
        let mut row_group = self.file.next_row_group().map_err(parquet_error)?;
        for chunk in chunks {
            chunk
                .append_to_row_group(&mut row_group)
                .map_err(parquet_error)?;
        }
        row_group.close().map_err(parquet_error)?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last row group and the footer; returns the writer.
    fn finish(mut self) -> Result<W> {
        self.end_row_group()?;
        self.file.into_inner().map_err(parquet_error)
    }
}

/// Text encoded at a time per slice of a batch, in bytes: the slices of a
/// round are encoded in parallel and then written in order, so a round
/// holds about this much per thread, twice.
const TEXT_SLICE_BYTES: usize = 4 << 20;

/// CSV or JSON lines, encoded a slice of a batch per task on the rayon
/// pool (arrow's writers encode a row after another on one core), and
/// written in order.
struct TextSink<W: Write> {
    out: W,
    /// CSV with or without a header (`Some`), or JSON lines (`None`).
    csv_header: Option<bool>,
    /// Text and rows written so far, which size the next slices.
    bytes: usize,
    rows: usize,
}

impl<W: Write> TextSink<W> {
    fn new(out: W, csv_header: Option<bool>) -> Self {
        Self {
            out,
            csv_header,
            bytes: 0,
            rows: 0,
        }
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            // CSV's header comes with the first batch, even an empty one.
            if self.csv_header == Some(true) {
                self.out.write_all(&encode_text(batch, Some(true))?)?;
                self.csv_header = Some(false);
            }
            return Ok(());
        }
        let tasks = 2 * rayon::current_num_threads().max(1);
        let mut start = 0;
        while start < n {
            // Slices of TEXT_SLICE_BYTES by the text per row so far, but
            // small enough that the batch is shared out.
            let rows = match self.bytes.checked_div(self.rows) {
                Some(per_row) => TEXT_SLICE_BYTES / per_row.max(1),
                None => 1024,
            };
            let rows = rows.min((n - start).div_ceil(tasks)).max(256);
            let slices: Vec<(usize, usize)> = (0..tasks)
                .map(|k| start + k * rows)
                .take_while(|&at| at < n)
                .map(|at| (at, rows.min(n - at)))
                .collect();
            let csv = self.csv_header;
            let texts: Vec<Vec<u8>> = slices
                .par_iter()
                .enumerate()
                .map(|(k, &(at, len))| {
                    // The header, if any is still due, goes with the first slice.
                    let csv = csv.map(|header| header && k == 0);
                    encode_text(&batch.slice(at, len), csv)
                })
                .collect::<Result<_>>()?;
            for text in &texts {
                self.out.write_all(text)?;
                self.bytes += text.len();
            }
            if csv.is_some() {
                self.csv_header = Some(false);
            }
            let end = slices.last().map_or(n, |&(at, len)| at + len);
            self.rows += end - start;
            start = end;
        }
        Ok(())
    }
}

/// `batch` as CSV (`Some`, with the header line if `true`) or as JSON lines.
fn encode_text(batch: &RecordBatch, csv_header: Option<bool>) -> Result<Vec<u8>> {
    let mut text = Vec::new();
    match csv_header {
        Some(header) => csv::WriterBuilder::new()
            .with_header(header)
            .build(&mut text)
            .write(batch)?,
        None => {
            let mut w = JsonWriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, LineDelimited>(&mut text);
            w.write(batch)?;
            w.finish()?;
        }
    }
    Ok(text)
}

/// Turns an error from a batch iterator back into the crate's error, so
/// that a reading error reads as it was made.
pub fn error_from_arrow(e: ArrowError) -> Error {
    match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(e) => *e,
            Err(other) => Error::Arrow(ArrowError::ExternalError(other)),
        },
        ArrowError::IoError(_, io) => Error::Io(io),
        other => Error::Arrow(other),
    }
}

fn parquet_error(e: parquet::errors::ParquetError) -> Error {
    match e {
        parquet::errors::ParquetError::External(inner) => {
            match inner.downcast::<std::io::Error>() {
                Ok(io) => Error::Io(*io),
                Err(other) => Error::Arrow(ArrowError::ParquetError(other.to_string())),
            }
        }
        other => Error::Arrow(ArrowError::ParquetError(other.to_string())),
    }
}

enum Sink<W: Write + Send> {
    ArrowFile(FileWriter<W>),
    ArrowStream(StreamWriter<W>),
    Parquet(Box<ParquetSink<W>>),
    /// CSV and JSON lines.
    Text(TextSink<W>),
}

/// What a [`BatchWriter`] does to a batch before writing it.
#[derive(Debug)]
enum Convert {
    /// Structs flattened into `parent.member` columns (CSV), giving this
    /// schema.
    Flatten(SchemaRef),
    /// Columns cast to this schema (JSON lines: map keys as text).
    Cast(SchemaRef),
}

/// Writes batches of one schema to `W` in one format, one batch at a time.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{Int32Array, RecordBatch};
/// use rntuple::export::{BatchWriter, ExportFormat, ExportOptions};
/// let batch = RecordBatch::try_from_iter([("x", Arc::new(Int32Array::from(vec![1, 2])) as _)])?;
/// let mut writer = BatchWriter::try_new(Vec::new(), &batch.schema(), ExportFormat::Csv, &ExportOptions::default())?;
/// writer.write(&batch)?;
/// let csv = writer.finish()?;
/// assert_eq!(String::from_utf8(csv)?, "x\n1\n2\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BatchWriter<W: Write + Send> {
    sink: Sink<W>,
    /// How batches change before they are written, if they do.
    convert: Option<Convert>,
    stats: ExportStats,
}

impl<W: Write + Send> fmt::Debug for BatchWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchWriter")
            .field("convert", &self.convert)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<W: Write + Send> BatchWriter<W> {
    /// Starts writing batches of `schema` to `writer`. Fails, naming the
    /// columns, when the format cannot hold some of them.
    pub fn try_new(
        writer: W,
        schema: &SchemaRef,
        format: ExportFormat,
        options: &ExportOptions,
    ) -> Result<Self> {
        let flatten = options.flatten && format == ExportFormat::Csv;
        if let Some(e) = refusal(schema, format, flatten) {
            return Err(e);
        }
        let convert = if flatten {
            Some(Convert::Flatten(flatten_schema(schema)))
        } else if format == ExportFormat::JsonLines {
            text_keys_schema(schema).map(Convert::Cast)
        } else {
            None
        };
        let sink = match format {
            ExportFormat::ArrowFile => Sink::ArrowFile(FileWriter::try_new(writer, schema)?),
            ExportFormat::ArrowStream => Sink::ArrowStream(StreamWriter::try_new(writer, schema)?),
            ExportFormat::Parquet => {
                let level = ZstdLevel::try_new(options.zstd_level).map_err(parquet_error)?;
                // Row groups are cut by `ParquetSink`, not by these properties.
                let mut props =
                    WriterProperties::builder().set_compression(Compression::ZSTD(level));
                for path in floating_point_columns(schema)? {
                    props = props.set_column_dictionary_enabled(path, false);
                }
                let props = props.build();
                Sink::Parquet(Box::new(ParquetSink::try_new(writer, schema, props)?))
            }
            ExportFormat::JsonLines => Sink::Text(TextSink::new(writer, None)),
            ExportFormat::Csv => Sink::Text(TextSink::new(writer, Some(options.csv_header))),
        };
        Ok(Self {
            sink,
            convert,
            stats: ExportStats::default(),
        })
    }

    /// Writes one batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let converted;
        let batch = match &self.convert {
            Some(Convert::Flatten(schema)) => {
                converted = flatten_batch(batch, schema)?;
                &converted
            }
            Some(Convert::Cast(schema)) => {
                converted = cast_batch(batch, schema)?;
                &converted
            }
            None => batch,
        };
        match &mut self.sink {
            Sink::ArrowFile(w) => w.write(batch)?,
            Sink::ArrowStream(w) => w.write(batch)?,
            Sink::Parquet(w) => w.write(batch)?,
            Sink::Text(w) => w.write(batch)?,
        }
        self.stats.rows += batch.num_rows() as u64;
        self.stats.batches += 1;
        Ok(())
    }

    /// What has been written so far.
    pub fn stats(&self) -> ExportStats {
        self.stats
    }

    /// Writes the end of the output (IPC footer, Parquet metadata), flushes
    /// and returns the writer.
    pub fn finish(self) -> Result<W> {
        let mut w = match self.sink {
            Sink::ArrowFile(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
            Sink::ArrowStream(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
            Sink::Parquet(w) => w.finish()?,
            Sink::Text(w) => w.out,
        };
        w.flush()?;
        Ok(w)
    }
}

/// Writes every batch of `batches` (of `schema`) to `writer` as it comes,
/// then finishes the output.
pub fn write_batches<W, I>(
    schema: &SchemaRef,
    batches: I,
    writer: W,
    format: ExportFormat,
    options: &ExportOptions,
) -> Result<ExportStats>
where
    W: Write + Send,
    I: IntoIterator<Item = std::result::Result<RecordBatch, ArrowError>>,
{
    let mut out = BatchWriter::try_new(writer, schema, format, options)?;
    for batch in batches {
        out.write(&batch.map_err(error_from_arrow)?)?;
    }
    let stats = out.stats();
    out.finish()?;
    Ok(stats)
}

/// Writes everything `reader` gives to `writer`.
pub fn export<R, W>(
    reader: R,
    writer: W,
    format: ExportFormat,
    options: &ExportOptions,
) -> Result<ExportStats>
where
    R: RecordBatchReader,
    W: Write + Send,
{
    let schema = reader.schema();
    write_batches(&schema, reader, writer, format, options)
}

/// Writes `reader` as an Arrow IPC file.
pub fn write_ipc_file<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
) -> Result<ExportStats> {
    export(
        reader,
        writer,
        ExportFormat::ArrowFile,
        &ExportOptions::default(),
    )
}

/// Writes `reader` as an Arrow IPC stream.
pub fn write_ipc_stream<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
) -> Result<ExportStats> {
    export(
        reader,
        writer,
        ExportFormat::ArrowStream,
        &ExportOptions::default(),
    )
}

/// Writes `reader` as Parquet, compressed with zstd.
pub fn write_parquet<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
) -> Result<ExportStats> {
    export(
        reader,
        writer,
        ExportFormat::Parquet,
        &ExportOptions::default(),
    )
}

/// Writes `reader` as JSON lines.
pub fn write_json_lines<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
) -> Result<ExportStats> {
    export(
        reader,
        writer,
        ExportFormat::JsonLines,
        &ExportOptions::default(),
    )
}

/// Writes `reader` as CSV; with `flatten`, struct members become columns.
pub fn write_csv<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
    flatten: bool,
) -> Result<ExportStats> {
    let options = ExportOptions {
        flatten,
        ..ExportOptions::default()
    };
    export(reader, writer, ExportFormat::Csv, &options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Float32Type;
    use arrow_array::{Float32Array, Int32Array, ListArray};
    use arrow_buffer::BooleanBuffer;

    fn nested_batch() -> RecordBatch {
        let x = Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef;
        let pt = Arc::new(Float32Array::from(vec![1.5, 2.5, 3.5])) as ArrayRef;
        let eta = Arc::new(Int32Array::from(vec![Some(7), None, Some(9)])) as ArrayRef;
        let s = StructArray::try_new(
            vec![
                Field::new("pt", DataType::Float32, false),
                Field::new("eta", DataType::Int32, true),
            ]
            .into(),
            vec![pt, eta],
            Some(NullBuffer::new(BooleanBuffer::from(vec![
                true, true, false,
            ]))),
        )
        .unwrap();
        RecordBatch::try_from_iter([("x", x), ("jet", Arc::new(s) as ArrayRef)]).unwrap()
    }

    /// What a [`BatchWriter`] with the default options writes for `batches`.
    fn written(format: ExportFormat, batches: &[RecordBatch]) -> Vec<u8> {
        let mut w = BatchWriter::try_new(
            Vec::new(),
            &batches[0].schema(),
            format,
            &ExportOptions::default(),
        )
        .unwrap();
        for batch in batches {
            w.write(batch).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn csv_refuses_structs_unless_flattened() {
        let batch = nested_batch();
        let err = BatchWriter::try_new(
            Vec::new(),
            &batch.schema(),
            ExportFormat::Csv,
            &ExportOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("jet (struct)")));

        let options = ExportOptions {
            flatten: true,
            ..ExportOptions::default()
        };
        let mut w =
            BatchWriter::try_new(Vec::new(), &batch.schema(), ExportFormat::Csv, &options).unwrap();
        w.write(&batch).unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        assert_eq!(text, "x,jet.pt,jet.eta\n1,1.5,7\n2,2.5,\n3,,\n");
    }

    /// A list of maps from `uint8` keys to floats: `[{1: 0.5, 200: -1}, null]`.
    fn maps_of_number_keys() -> RecordBatch {
        use arrow_array::{MapArray, UInt8Array};
        let keys = Arc::new(UInt8Array::from(vec![1, 200])) as ArrayRef;
        let values = Arc::new(Float32Array::from(vec![0.5, -1.0])) as ArrayRef;
        let entries = StructArray::try_new(
            vec![
                Field::new("key", DataType::UInt8, false),
                Field::new("value", DataType::Float32, true),
            ]
            .into(),
            vec![keys, values],
            None,
        )
        .unwrap();
        let entries_field = Arc::new(Field::new("entries", entries.data_type().clone(), false));
        let map = MapArray::try_new(
            entries_field,
            arrow_buffer::OffsetBuffer::new(vec![0, 2].into()),
            entries,
            None,
            false,
        )
        .unwrap();
        let item = Arc::new(Field::new("item", map.data_type().clone(), true));
        let list = ListArray::try_new(
            item,
            arrow_buffer::OffsetBuffer::new(vec![0, 1, 1].into()),
            Arc::new(map),
            Some(NullBuffer::new(BooleanBuffer::from(vec![true, false]))),
        )
        .unwrap();
        RecordBatch::try_from_iter([("m", Arc::new(list) as ArrayRef)]).unwrap()
    }

    #[test]
    fn json_writes_number_keys_of_maps_as_text() {
        let batch = maps_of_number_keys();
        let text = String::from_utf8(written(ExportFormat::JsonLines, &[batch])).unwrap();
        assert_eq!(text, "{\"m\":[{\"1\":0.5,\"200\":-1.0}]}\n{\"m\":null}\n");
    }

    #[test]
    fn parquet_refuses_empty_structs() {
        let empty = StructArray::new_empty_fields(2, None);
        let batch = RecordBatch::try_from_iter([("c", Arc::new(empty) as ArrayRef)]).unwrap();
        let err = BatchWriter::try_new(
            Vec::new(),
            &batch.schema(),
            ExportFormat::Parquet,
            &ExportOptions::default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(ref m)
                if m.contains("empty struct (a class without members) columns: c (empty struct)")),
            "{err}"
        );
        // JSON and Arrow hold them.
        for format in [ExportFormat::JsonLines, ExportFormat::ArrowFile] {
            written(format, std::slice::from_ref(&batch));
        }
    }

    #[test]
    fn csv_refuses_lists_even_flattened() {
        let list = ListArray::from_iter_primitive::<Float32Type, _, _>(vec![
            Some(vec![Some(1.0)]),
            Some(vec![]),
        ]);
        let batch = RecordBatch::try_from_iter([("v", Arc::new(list) as ArrayRef)]).unwrap();
        let options = ExportOptions {
            flatten: true,
            ..ExportOptions::default()
        };
        let err = BatchWriter::try_new(Vec::new(), &batch.schema(), ExportFormat::Csv, &options)
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("v (list)")));
    }

    #[test]
    fn a_refusal_names_a_few_columns_and_counts_the_rest() {
        let list = DataType::List(Arc::new(Field::new_list_field(DataType::Float32, true)));
        let refused = |n: usize| {
            let fields: Vec<Field> = (0..n)
                .map(|i| Field::new(format!("v{i}"), list.clone(), false))
                .collect();
            match refusal(&Schema::new(fields), ExportFormat::Csv, false) {
                Some(Error::InvalidArgument(m)) => m,
                other => panic!("expected a refusal of {n} columns, got {other:?}"),
            }
        };
        // One more than the limit is named rather than counted.
        let nine = refused(NAMED_COLUMNS + 1);
        assert!(
            nine.contains("v8 (list)") && !nine.contains("more"),
            "{nine}"
        );
        let many = refused(1_000);
        assert!(many.contains("v7 (list), and 992 more;"), "{many}");
        assert!(!many.contains("v8 "), "{many}");
    }

    #[test]
    fn formats_parse_by_name() {
        for f in ExportFormat::ALL {
            assert_eq!(f.name().parse::<ExportFormat>().unwrap(), f);
        }
        assert!("xml".parse::<ExportFormat>().is_err());
    }

    #[test]
    fn ipc_stream_round_trips() {
        let batch = nested_batch();
        let schema = batch.schema();
        let bytes = Vec::new();
        let mut w = BatchWriter::try_new(
            bytes,
            &schema,
            ExportFormat::ArrowStream,
            &ExportOptions::default(),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.write(&batch).unwrap();
        assert_eq!(
            w.stats(),
            ExportStats {
                rows: 6,
                batches: 2
            }
        );
        let bytes = w.finish().unwrap();
        let reader =
            arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
        let back: Vec<RecordBatch> = reader.collect::<std::result::Result<_, _>>().unwrap();
        assert_eq!(back, vec![batch.clone(), batch]);
    }

    #[test]
    fn large_batches_reach_parquet_in_pieces_of_bounded_bytes() {
        let rows = 3 * PARQUET_PIECE_BYTES / 8 + 5;
        let values = arrow_array::Int64Array::from_iter_values(0..rows as i64);
        let batch = RecordBatch::try_from_iter([("v", Arc::new(values) as ArrayRef)]).unwrap();
        let pieces: Vec<RecordBatch> = parquet_pieces(&batch).collect();
        assert_eq!(pieces.len(), 4);
        for p in &pieces {
            let bytes = p.column(0).to_data().get_slice_memory_size().unwrap();
            assert!(bytes <= PARQUET_PIECE_BYTES, "{bytes}");
        }
        let back = arrow::compute::concat_batches(&batch.schema(), &pieces).unwrap();
        assert_eq!(back, batch);
        // A small batch goes whole; an empty one still goes (as one empty piece).
        let small = batch.slice(0, 10);
        assert_eq!(
            parquet_pieces(&small).collect::<Vec<_>>(),
            vec![small.clone()]
        );
        let empty = batch.slice(0, 0);
        assert_eq!(parquet_pieces(&empty).count(), 1);
    }

    #[test]
    fn parquet_floats_are_written_without_a_dictionary() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let bytes = bytes::Bytes::from(written(ExportFormat::Parquet, &[nested_batch()]));
        let file = SerializedFileReader::new(bytes).unwrap();
        let group = file.metadata().row_group(0);
        let dictionary: Vec<(String, bool)> = group
            .columns()
            .iter()
            .map(|c| {
                (
                    c.column_path().string(),
                    c.dictionary_page_offset().is_some(),
                )
            })
            .collect();
        assert_eq!(
            dictionary,
            vec![
                ("x".to_string(), true),
                ("jet.pt".to_string(), false),
                ("jet.eta".to_string(), true),
            ]
        );
    }

    #[test]
    fn parquet_row_groups_end_at_the_cap_on_rows() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let rows = PARQUET_ROW_GROUP_ROWS + 10;
        let values = Int32Array::from_iter_values(0..rows as i32);
        let batch = RecordBatch::try_from_iter([("v", Arc::new(values) as ArrayRef)]).unwrap();
        // In three writes, the second crossing the cap.
        let parts = [
            batch.slice(0, 100),
            batch.slice(100, rows - 105),
            batch.slice(rows - 5, 5),
        ];
        let bytes = bytes::Bytes::from(written(ExportFormat::Parquet, &parts));
        let file = SerializedFileReader::new(bytes.clone()).unwrap();
        let groups: Vec<i64> = file
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(groups, vec![PARQUET_ROW_GROUP_ROWS as i64, 10]);
        let back: Vec<RecordBatch> =
            parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(bytes, 1 << 20)
                .unwrap()
                .collect::<std::result::Result<_, _>>()
                .unwrap();
        let back = arrow::compute::concat_batches(&batch.schema(), &back).unwrap();
        assert_eq!(back, batch);
    }

    #[test]
    fn text_in_parallel_slices_reads_as_one_writer_writes_it() {
        let rows = 10_000;
        let x = Int32Array::from_iter_values(0..rows);
        let name: arrow_array::StringArray = (0..rows)
            .map(|i| Some(format!("n{}", i * 7919 % 1000)))
            .collect();
        let batch = RecordBatch::try_from_iter([
            ("x", Arc::new(x) as ArrayRef),
            ("name", Arc::new(name) as ArrayRef),
        ])
        .unwrap();
        let parts = [
            batch.slice(0, 3_000),
            batch.slice(3_000, 0),
            batch.slice(3_000, 7_000),
        ];

        let mut expected = Vec::new();
        let mut one = csv::WriterBuilder::new()
            .with_header(true)
            .build(&mut expected);
        for part in &parts {
            one.write(part).unwrap();
        }
        drop(one);
        let text = written(ExportFormat::Csv, &parts);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            String::from_utf8(expected).unwrap()
        );

        let mut expected = Vec::new();
        let mut one = JsonWriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, LineDelimited>(&mut expected);
        for part in &parts {
            one.write(part).unwrap();
        }
        one.finish().unwrap();
        drop(one);
        assert_eq!(written(ExportFormat::JsonLines, &parts), expected);
    }
}
