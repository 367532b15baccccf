//! What the subcommands share: the one-line error, aligned text tables,
//! progress bars, sizes and short Arrow type names.

use std::fmt::{self, Write as _};
use std::io::IsTerminal;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use arrow::util::pretty::pretty_format_batches_with_options;
use arrow_schema::{ArrowError, DataType, SchemaRef};
use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rntuple::export::UnwritableColumn;

/// An error of the command: one line, printed as `rntuple: <message>`.
#[derive(Debug)]
pub struct CliError {
    message: String,
    /// Writing to a closed pipe (`rntuple cat f | head`): end quietly.
    pub broken_pipe: bool,
    /// How to name an RNTuple, after the message, when the file holds
    /// several and none was named.
    ntuple_hint: Option<&'static str>,
}

pub type CliResult<T = ()> = Result<T, CliError>;

impl CliError {
    pub fn new(message: impl fmt::Display) -> Self {
        let message = one_line(&message.to_string());
        let broken_pipe = message.contains("Broken pipe") || message.contains("os error 32");
        Self {
            message,
            broken_pipe,
            ntuple_hint: None,
        }
    }

    /// Puts `context` (a file name, a table) in front of the message.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Self {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }

    /// Replaces how an error of an unnamed RNTuple says to name one
    /// (`with --ntuple NAME`, the way of every command that opens one).
    pub fn with_ntuple_hint(mut self, hint: &'static str) -> Self {
        if self.ntuple_hint.is_some() {
            self.ntuple_hint = Some(hint);
        }
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        f.write_str(self.ntuple_hint.unwrap_or_default())
    }
}

/// Writes `text` to standard output. A reader that stops early (`| head`)
/// ends the command quietly, as a broken pipe does for bulk output.
pub fn print(text: &str) -> CliResult {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Standard output for bulk data (Arrow, CSV, JSON lines): a
/// [`BulkWriter`] over the file descriptor itself. `std::io::stdout()` is
/// line-buffered and writes up to every newline byte, which in binary output
/// means a system call every few kilobytes.
pub fn bulk_stdout() -> std::io::Result<BulkWriter<Box<dyn std::io::Write + Send>>> {
    #[cfg(unix)]
    let raw: Box<dyn std::io::Write + Send> = {
        use std::os::fd::AsFd;
        let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
        Box::new(std::fs::File::from(fd))
    };
    #[cfg(not(unix))]
    let raw: Box<dyn std::io::Write + Send> = Box::new(std::io::stdout());
    Ok(BulkWriter::new(raw))
}

/// A buffered writer for bulk output that does not copy large writes.
///
/// Small writes (a CSV line, an Arrow message header, padding) collect in
/// a buffer of 1 MiB. A write of 64 KiB or more, such as an Arrow array's
/// values, goes to the inner writer as it is, in one vectored write
/// together with the bytes buffered before it. A `BufWriter` of the same
/// size would copy the values into its buffer first: for Q1 of the ADL
/// benchmark, 16 MB copied once more on the way out (BENCHMARKS.md).
pub struct BulkWriter<W: std::io::Write> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: std::io::Write> BulkWriter<W> {
    const CAPACITY: usize = 1 << 20;
    /// Writes at least this long are not copied into the buffer.
    const DIRECT: usize = 64 << 10;

    pub fn new(inner: W) -> Self {
        Self {
            inner,
            buf: Vec::with_capacity(Self::CAPACITY),
        }
    }

    /// Writes the buffered bytes, then `data`, to the inner writer in as
    /// few calls as it takes, and empties the buffer. On an error the
    /// buffer keeps only what was not written.
    fn write_through(&mut self, data: &[u8]) -> std::io::Result<()> {
        use std::io::{ErrorKind, IoSlice};
        let Self { inner, buf } = self;
        let mut both = [IoSlice::new(buf), IoSlice::new(data)];
        let mut left: &mut [IoSlice] = &mut both;
        IoSlice::advance_slices(&mut left, 0);
        let mut written = 0;
        let result = loop {
            if left.is_empty() {
                break Ok(());
            }
            match inner.write_vectored(left) {
                Ok(0) => break Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    written += n;
                    IoSlice::advance_slices(&mut left, n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        buf.drain(..written.min(buf.len()));
        result
    }
}

impl<W: std::io::Write> std::io::Write for BulkWriter<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        if data.len() >= Self::DIRECT {
            return self.write_through(data);
        }
        if self.buf.len() + data.len() > Self::CAPACITY {
            self.write_through(&[])?;
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_through(&[])?;
        self.inner.flush()
    }
}

impl<W: std::io::Write> Drop for BulkWriter<W> {
    /// Writes what is left, as `BufWriter` does; errors are lost here, so
    /// callers flush first.
    fn drop(&mut self) {
        let _ = self.write_through(&[]);
    }
}

/// Joins the lines of a message (DataFusion's can have several) into one.
fn one_line(message: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    parts.join(" ")
}

impl From<rntuple::Error> for CliError {
    fn from(e: rntuple::Error) -> Self {
        let broken = matches!(e.root_cause(), rntuple::Error::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe);
        let ambiguous = matches!(e.root_cause(), rntuple::Error::AmbiguousNTuple { .. });
        let mut e = CliError::new(e);
        if ambiguous {
            e.ntuple_hint = Some(" with --ntuple NAME");
        }
        e.broken_pipe |= broken;
        e
    }
}

impl From<ArrowError> for CliError {
    fn from(e: ArrowError) -> Self {
        CliError::from(rntuple::export::error_from_arrow(e))
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        let mut c = CliError::new(&e);
        c.broken_pipe |= e.kind() == std::io::ErrorKind::BrokenPipe;
        c
    }
}

impl From<datafusion::error::DataFusionError> for CliError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        use datafusion::error::DataFusionError;
        // Reading errors surface as external errors: show them as they were made.
        let mut e = e;
        loop {
            e = match e {
                DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
                    *inner
                }
                DataFusionError::ArrowError(a, _) => return CliError::from(*a),
                DataFusionError::External(inner) => match inner.downcast::<rntuple::Error>() {
                    Ok(r) => return CliError::from(*r),
                    Err(other) => return CliError::new(other),
                },
                // Errors of this crate's tables say what failed themselves.
                DataFusionError::Execution(message) => return CliError::new(message),
                DataFusionError::SchemaError(schema_error, _) => {
                    return CliError::new(short_schema_error(&schema_error));
                }
                other => return CliError::new(other.strip_backtrace()),
            }
        }
    }
}

/// Fields a "no field named" error still lists; a wider table (NanoAOD has
/// about 1,700) is left to `rntuple schema`.
const LISTED_FIELDS: usize = 20;

/// DataFusion's schema error, without its list of every valid field when
/// that list would be longer than the rest of the message many times over.
fn short_schema_error(e: &datafusion::common::SchemaError) -> String {
    use datafusion::common::SchemaError;
    let message = e.to_string();
    match e {
        SchemaError::FieldNotFound { valid_fields, .. } if valid_fields.len() > LISTED_FIELDS => {
            let head = message
                .split_once("\nValid fields are")
                .map_or(message.as_str(), |(head, _)| head);
            format!(
                "{head} ({} fields in scope; `rntuple schema FILE` lists a file's fields)",
                valid_fields.len()
            )
        }
        _ => message,
    }
}

/// Adds context to errors of any result convertible to [`CliError`].
pub trait Context<T> {
    fn context(self, context: impl fmt::Display) -> CliResult<T>;
}

impl<T, E: Into<CliError>> Context<T> for Result<T, E> {
    fn context(self, context: impl fmt::Display) -> CliResult<T> {
        self.map_err(|e| e.into().context(context))
    }
}

/// Prints a warning on stderr, unless `quiet`.
pub fn warn(quiet: bool, message: impl fmt::Display) {
    if !quiet {
        eprintln!("rntuple: warning: {message}");
    }
}

/// Warns about the top-level fields the reader leaves out.
pub fn warn_skipped(quiet: bool, file: &str, mapping: &rntuple::arrow::ArrowMapping) {
    for field in &mapping.skipped {
        warn_left_out(quiet, file, field, "");
    }
}

/// Warns that `field` of `file` is left out; `also` follows the reason.
pub fn warn_left_out(quiet: bool, file: &str, field: &rntuple::arrow::SkippedField, also: &str) {
    warn(
        quiet,
        format_args!(
            "{file}: field {} ({}) is left out: {}{also}",
            field.name, field.type_name, field.reason
        ),
    );
}

/// A table of text, printed with aligned columns.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles; titles starting with `>` are
    /// right-aligned (numbers).
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header
                .iter()
                .map(|h| h.trim_start_matches('>').to_string())
                .collect(),
            right: header.iter().map(|h| h.starts_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as lines, indented by `indent` spaces.
    pub fn render(&self, indent: usize) -> String {
        let n = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = " ".repeat(indent);
            for (i, cell) in row.iter().enumerate().take(n) {
                let w = widths.get(i).copied().unwrap_or(0);
                let right = self.right.get(i).copied().unwrap_or(false);
                let last = i + 1 == n;
                if right {
                    line.push_str(&format!("{cell:>w$}"));
                } else if last {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}"));
                }
                if !last {
                    line.push_str("  ");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A byte count, exact or in binary units.
pub fn bytes(n: u64, exact: bool) -> String {
    if exact {
        n.to_string()
    } else {
        HumanBytes(n).to_string()
    }
}

/// Uncompressed / compressed, to two decimals.
pub fn ratio(uncompressed: u64, compressed: u64) -> String {
    if compressed == 0 {
        "-".to_string()
    } else {
        format!("{:.2}", uncompressed as f64 / compressed as f64)
    }
}

/// ROOT's compression setting (algorithm * 100 + level) as `zstd/5`.
pub fn compression_name(setting: u32) -> String {
    let (algorithm, level) = (setting / 100, setting % 100);
    let name = match algorithm {
        _ if level == 0 => return "none".to_string(),
        0 | 1 => "zlib",
        2 => "lzma",
        3 => "old-zlib",
        4 => "lz4",
        5 => "zstd",
        _ => return format!("unknown ({setting})"),
    };
    format!("{name}/{level}")
}

/// The most columns an error names; it counts the others.
const NAMED_COLUMNS: usize = 8;

/// Members of a struct that an Arrow type names in the command's tables and
/// messages; it counts the rest.
pub const BRIEF_MEMBERS: usize = 4;

/// Columns a format cannot hold, as an error names them: a file of a
/// thousand fields must not make an error of a thousand names, so the
/// first few with their types, and how many more.
pub fn name_columns(columns: &[UnwritableColumn]) -> String {
    some_of(columns, NAMED_COLUMNS, |c| {
        format!(
            "{} ({})",
            c.path,
            brief_type_name(&c.data_type, BRIEF_MEMBERS)
        )
    })
}

/// `items` named by `name` and joined by commas, at most `most` of them and
/// the rest counted: `a, b, and 5 more`. The one item left over is named
/// rather than counted.
pub fn some_of<T>(items: &[T], most: usize, name: impl Fn(&T) -> String) -> String {
    let shown = if items.len() > most.saturating_add(1) {
        most
    } else {
        items.len()
    };
    let mut names: Vec<String> = items.iter().take(shown).map(name).collect();
    if items.len() > shown {
        names.push(format!("and {} more", items.len() - shown));
    }
    names.join(", ")
}

/// An Arrow type in short form (`List<Float32>`, `Struct{pt, eta}`),
/// naming at most `members` members of each struct and counting the rest
/// (`Struct{pt, eta, and 5 more}`).
pub fn brief_type_name(dt: &DataType, members: usize) -> String {
    let name = |dt: &DataType| brief_type_name(dt, members);
    match dt {
        DataType::List(f) | DataType::LargeList(f) => format!("List<{}>", name(f.data_type())),
        DataType::FixedSizeList(f, n) => {
            format!("FixedSizeList<{}, {n}>", name(f.data_type()))
        }
        DataType::Struct(fields) => {
            format!(
                "Struct{{{}}}",
                some_of(fields, members, |f| f.name().clone())
            )
        }
        DataType::Map(f, _) => match f.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                format!(
                    "Map<{}, {}>",
                    name(kv[0].data_type()),
                    name(kv[1].data_type())
                )
            }
            other => format!("Map<{}>", name(other)),
        },
        DataType::Union(fields, _) => {
            let alts: Vec<String> = fields.iter().map(|(_, f)| name(f.data_type())).collect();
            format!("Union<{}>", alts.join(", "))
        }
        other => format!("{other:?}"),
    }
}

/// Whether a progress bar may be drawn: stderr is a terminal and not `quiet`.
pub fn show_progress(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A progress bar over `total` entries on stderr, hidden in pipes.
pub fn entry_progress(total: u64, quiet: bool, what: &str) -> ProgressBar {
    if !show_progress(quiet) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template = format!("{{spinner}} {what} [{{elapsed_precise}}] {{wide_bar}} {{human_pos}}/{{human_len}} entries ({{per_sec}}, {{eta}} left)");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// A spinner with the elapsed time, for work of unknown length.
pub fn spinner(quiet: bool, message: &str) -> ProgressBar {
    if !show_progress(quiet) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}] {human_pos} rows")
    {
        bar.set_style(style);
    }
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Rows as text for a person, and whether as records: a table (with only
/// its header if there are no `batches`), or, if `records` or if the table
/// is wider than the terminal, [`format_records`] (nothing if there are no
/// rows), their rows counted from `first`.
pub fn format_rows(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    records: bool,
    first: u64,
    what: &str,
) -> Result<(String, bool), ArrowError> {
    let options = FormatOptions::default().with_null("null");
    if !records {
        let empty = [RecordBatch::new_empty(schema.clone())];
        let shown = if batches.is_empty() {
            &empty[..]
        } else {
            batches
        };
        let table = format!("{}\n", pretty_format_batches_with_options(shown, &options)?);
        // Wider than the terminal (a NanoAOD file has about a thousand
        // top-level fields): records instead.
        if !terminal_width().is_some_and(|width| wider_than(&table, width)) {
            return Ok((table, false));
        }
    }
    let mut text = String::new();
    let mut first = first;
    for batch in batches {
        text.push_str(&format_records(batch, first, what, &options)?);
        first += batch.num_rows() as u64;
    }
    Ok((text, true))
}

/// The width of the terminal standard output writes to; `None` when it
/// writes elsewhere.
fn terminal_width() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_rows, columns)| usize::from(columns))
}

/// Whether the rendered `table` is wider than `width` characters.
fn wider_than(table: &str, width: usize) -> bool {
    table.lines().any(|line| line.chars().count() > width)
}

/// The most a name is padded to in [`format_records`].
const RECORD_NAME_WIDTH: usize = 40;

/// The rows of `batch` as records, for tables too wide to read: a title
/// line per row (`-[ entry 7 ]---`, counting from `first`), then one line
/// per column, its name and its value.
fn format_records(
    batch: &RecordBatch,
    first: u64,
    what: &str,
    options: &FormatOptions,
) -> Result<String, ArrowError> {
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    // Names pad to the longest, up to a point: a few trigger names of NanoAOD
    // run to 80 characters, and would push every value that far right.
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .min(RECORD_NAME_WIDTH);
    let values = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), options))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = String::new();
    for row in 0..batch.num_rows() {
        let title = format!("-[ {what} {} ]", first + row as u64);
        let rule = (width + 3).saturating_sub(title.chars().count()).max(3);
        let _ = writeln!(out, "{title}{}", "-".repeat(rule));
        for (name, value) in names.iter().zip(&values) {
            let _ = writeln!(out, "{name:<width$} | {}", value.value(row));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_counts_characters_of_the_widest_line() {
        let table = "+----+\n| é… |\n+----+";
        assert!(!wider_than(table, 6));
        assert!(wider_than(table, 5));
        assert!(!wider_than("", 0));
    }

    /// A writer that takes at most `most` bytes per call, as a pipe may.
    #[derive(Default)]
    struct Slow {
        got: Vec<u8>,
        most: usize,
        calls: usize,
    }

    impl std::io::Write for Slow {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.write_vectored(&[std::io::IoSlice::new(data)])
        }

        fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            self.calls += 1;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.most - n);
                self.got.extend_from_slice(&b[..take]);
                n += take;
            }
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn bulk_writer_passes_large_writes_on_with_what_it_holds() {
        use std::io::Write;
        let mut out = BulkWriter::new(Slow {
            most: usize::MAX,
            ..Slow::default()
        });
        let large: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        out.write_all(b"head").unwrap();
        assert!(out.inner.got.is_empty(), "small writes are held");
        out.write_all(&large).unwrap();
        // One vectored call took both, and nothing is left held.
        assert_eq!(out.inner.calls, 1);
        assert_eq!(out.inner.got.len(), 4 + large.len());
        assert!(out.buf.is_empty());
        out.write_all(b"tail").unwrap();
        out.flush().unwrap();
        let expected = [&b"head"[..], &large, b"tail"].concat();
        assert_eq!(out.inner.got, expected);
    }

    #[test]
    fn bulk_writer_keeps_what_a_failed_write_left() {
        use std::io::Write;
        /// Takes 2 bytes, then fails.
        struct Failing(usize);
        impl std::io::Write for Failing {
            fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::ErrorKind::BrokenPipe.into());
                }
                self.0 = 0;
                Ok(data.len().min(2))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut out = BulkWriter::new(Failing(1));
        out.write_all(b"head").unwrap();
        let err = out.flush().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
        assert_eq!(out.buf, b"ad");
    }

    #[test]
    fn bulk_writer_keeps_every_byte_in_order_through_short_writes() {
        use std::io::Write;
        let mut expected = Vec::new();
        let got = {
            let mut out = BulkWriter::new(Slow {
                most: 7_001,
                ..Slow::default()
            });
            for (i, len) in [10, 70_000, 3, 1 << 20, 65_535, 65_536, 5, 200_000]
                .into_iter()
                .enumerate()
            {
                let piece = vec![i as u8; len];
                out.write_all(&piece).unwrap();
                expected.extend_from_slice(&piece);
            }
            out.flush().unwrap();
            std::mem::take(&mut out.inner.got)
        };
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "bytes out of order or lost");
    }
}
