//! `ls`, `schema` and `info`: what is in a file, from its metadata only
//! (anchors, header, footer, page lists), without reading any page.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use arrow_schema::DataType;
use datafusion::execution::object_store::ObjectStoreRegistry;
use object_store::path::Path as ObjectPath;
use rntuple::arrow::FieldNode;
use rntuple::datafusion::{web_location, StoreRegistry};
use rntuple::descriptor::{
    ClusterDescriptor, ColumnDescriptor, Descriptor, Encoding, FieldDescriptor,
};
use rntuple::io::FileReader;
use rntuple::{RNTuple, RNTupleFile, SchemaCache};
use url::Url;

use crate::util::{
    brief_type_name, bytes, compression_name, print, ratio, warn, CliError, CliResult, Context,
    Table, BRIEF_MEMBERS,
};
use crate::{InfoArgs, LsArgs, SchemaArgs};

/// Opens a file; the error names the file already.
///
/// The command reads with positioned reads rather than a memory map: a
/// stream over a large file then holds only the clusters in flight, where
/// every mapped page it touched would count in its resident memory.
///
/// A URL (`http(s)://`, `s3://`, `gs://`, `az://`) is read from its object store (see
/// `ObjectStoreReader`: 2 MiB blocks, and the pages of the clusters a
/// batch reader reads fetched ahead).
pub fn open(path: &Path) -> CliResult<RNTupleFile> {
    if let Some(url) = remote_url(path) {
        return open_url(&url).map_err(|e| e.context(path.display()));
    }
    let source = FileReader::open(path).map_err(|e| CliError::from(e).context(path.display()))?;
    RNTupleFile::from_source(Arc::new(source))
        .map_err(|e| CliError::from(e).context(path.display()))
}

/// The URL a file argument names, unless it is a local path (or a
/// `file://` URL); a web URL's path without empty segments (`web_location`).
pub fn remote_url(path: &Path) -> Option<Url> {
    let text = path.to_str().filter(|t| t.contains("://"))?;
    Url::parse(&web_location(text))
        .ok()
        .filter(|url| url.scheme() != "file")
}

fn open_url(url: &Url) -> CliResult<RNTupleFile> {
    let store = StoreRegistry::new().get_store(url)?;
    let location = ObjectPath::from_url_path(url.path())
        .map_err(|e| CliError::new(format_args!("not a path of an object: {e}")))?;
    Ok(RNTupleFile::open_object(store, location)?)
}

/// Opens one RNTuple of a file.
pub fn open_ntuple(path: &Path, name: Option<&str>) -> CliResult<RNTuple> {
    open(path)?.ntuple(name).context(path.display())
}

/// Sizes and counts of one column over the clusters read.
#[derive(Debug, Default, Clone)]
struct ColumnStats {
    elements: u64,
    pages: u64,
    compressed: u64,
    uncompressed: u64,
    compression: BTreeSet<u32>,
}

impl ColumnStats {
    fn add(&mut self, other: &ColumnStats) {
        self.elements += other.elements;
        self.pages += other.pages;
        self.compressed += other.compressed;
        self.uncompressed += other.uncompressed;
        self.compression.extend(&other.compression);
    }

    fn compression_names(&self) -> String {
        if self.compression.is_empty() {
            return "-".to_string();
        }
        let names: Vec<String> = self
            .compression
            .iter()
            .map(|&c| compression_name(c))
            .collect();
        names.join(",")
    }
}

/// Per-column statistics of one cluster, indexed by physical column ID.
fn cluster_stats(descriptor: &Descriptor, cluster: &ClusterDescriptor) -> Vec<ColumnStats> {
    let mut out = vec![ColumnStats::default(); descriptor.columns.len()];
    for (id, stats) in out.iter_mut().enumerate() {
        let Some(range) = u32::try_from(id).ok().and_then(|id| cluster.column(id)) else {
            continue;
        };
        let bits = descriptor
            .columns
            .get(id)
            .map_or(0, |c| u64::from(c.bits_on_storage));
        for page in &range.pages {
            let n = u64::from(page.n_elements);
            stats.elements += n;
            stats.pages += 1;
            stats.compressed += page.locator.size;
            stats.uncompressed += (n * bits).div_ceil(8);
        }
        stats.compression.extend(range.compression);
    }
    out
}

/// Statistics of every column summed over all clusters.
fn total_stats(
    descriptor: &Descriptor,
    clusters: &[ClusterDescriptor],
) -> (Vec<ColumnStats>, ColumnStats) {
    let mut columns = vec![ColumnStats::default(); descriptor.columns.len()];
    for cluster in clusters {
        for (total, s) in columns.iter_mut().zip(cluster_stats(descriptor, cluster)) {
            total.add(&s);
        }
    }
    let mut all = ColumnStats::default();
    columns.iter().for_each(|c| all.add(c));
    (columns, all)
}

pub fn ls(args: &LsArgs, quiet: bool) -> CliResult {
    let mut table = Table::new(&[
        "FILE",
        "RNTUPLE",
        ">ENTRIES",
        ">FIELDS",
        ">COLUMNS",
        ">CLUSTERS",
        ">COMPRESSED",
        ">UNCOMPRESSED",
        ">RATIO",
    ]);
    let mut failures: Vec<CliError> = Vec::new();
    // The files of one dataset make their schema once.
    let schemas = Arc::new(SchemaCache::new());
    for path in &args.files {
        match ls_file(path, args.bytes, quiet, &schemas, &mut table) {
            Ok(()) => {}
            Err(e) => {
                if let Some(previous) = failures.last() {
                    eprintln!("rntuple: {previous}");
                }
                failures.push(e);
            }
        }
    }
    if !table.is_empty() {
        print(&table.render(0))?;
    }
    match failures.pop() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn ls_file(
    path: &Path,
    exact: bool,
    quiet: bool,
    schemas: &Arc<SchemaCache>,
    table: &mut Table,
) -> CliResult {
    let file = open(path)?.with_schema_cache(schemas.clone());
    let infos = file.ntuples();
    if infos.is_empty() {
        warn(
            quiet,
            format_args!("{}: no RNTuple in the file", path.display()),
        );
    }
    for info in infos {
        let ntuple = file.ntuple(Some(&info.path)).context(path.display())?;
        let d = ntuple.descriptor();
        let clusters = ntuple.all_clusters().context(format_args!(
            "{}: RNTuple {}",
            path.display(),
            info.path
        ))?;
        let (_, all) = total_stats(d, &clusters);
        table.row(vec![
            path.display().to_string(),
            info.path.clone(),
            d.n_entries.to_string(),
            d.top_level.len().to_string(),
            d.columns.len().to_string(),
            d.n_clusters.to_string(),
            bytes(all.compressed, exact),
            bytes(all.uncompressed, exact),
            ratio(all.uncompressed, all.compressed),
        ]);
    }
    Ok(())
}

/// A column's type with its width and range where these vary, and its encoding.
fn column_text(c: &ColumnDescriptor) -> String {
    let mut s = c.column_type.to_string();
    if matches!(c.column_type.bits_range(), Some((lo, hi)) if lo != hi) {
        let _ = write!(s, " {} bits", c.bits_on_storage);
    }
    if let Some((lo, hi)) = c.value_range {
        let _ = write!(s, " [{lo}, {hi}]");
    }
    let encoding = match c.column_type.encoding() {
        Encoding::Plain => "plain",
        Encoding::Split => "split",
        Encoding::SplitDelta => "split+delta",
        Encoding::SplitZigzag => "split+zigzag",
        Encoding::BitPacked => "bit-packed",
    };
    let _ = write!(s, " ({encoding})");
    match c.first_element_index {
        Some(i) if i < 0 => {
            let _ = write!(s, " suppressed from {}", i.unsigned_abs());
        }
        Some(i) if i > 0 => {
            let _ = write!(s, " deferred from {i}");
        }
        _ => {}
    }
    s
}

/// The columns of a field, representations separated by `|`.
fn columns_text(d: &Descriptor, field: &FieldDescriptor) -> String {
    let reps: Vec<String> = field
        .representations
        .iter()
        .map(|rep| {
            let cols: Vec<String> = rep
                .iter()
                .filter_map(|&id| d.column(id))
                .map(column_text)
                .collect();
            cols.join(", ")
        })
        .collect();
    let text = reps.join(" | ");
    match (field.projection_source, text.is_empty()) {
        (Some(src), true) => format!("alias of {}", d.field_path(src)),
        (Some(src), false) => format!("{text}, alias of {}", d.field_path(src)),
        (None, _) => text,
    }
}

pub fn schema(args: &SchemaArgs, _quiet: bool) -> CliResult {
    let ntuple = open_ntuple(&args.file, args.ntuple.as_deref())?;
    let d = ntuple.descriptor();
    let mapping = ntuple.mapping();

    let mut arrow_types: HashMap<u32, DataType> = HashMap::new();
    for node in &mapping.nodes {
        node.visit(&mut |n: &FieldNode| {
            arrow_types
                .entry(n.field_id)
                .or_insert_with(|| n.arrow.data_type().clone());
        });
    }
    let skipped: HashMap<&str, &str> = mapping
        .skipped
        .iter()
        .map(|s| (s.name.as_str(), s.reason.as_str()))
        .collect();

    let mut out = String::new();
    let _ = writeln!(out, "RNTuple {} in {}", d.name, args.file.display());
    let _ = writeln!(
        out,
        "  {} entries, {} top-level fields ({} in all), {} columns; format {}; writer {:?}",
        d.n_entries,
        d.top_level.len(),
        d.fields.len(),
        d.columns.len(),
        d.version.map(|v| v.to_string()).join("."),
        d.writer
    );
    if !d.description.is_empty() {
        let _ = writeln!(out, "  description: {}", d.description);
    }
    out.push('\n');

    let with_descriptions = d.fields.iter().any(|f| !f.description.is_empty());
    let mut header = vec!["FIELD", "C++ TYPE", "ARROW TYPE", "COLUMNS"];
    if with_descriptions {
        header.push("DESCRIPTION");
    }
    let mut table = Table::new(&header);
    for &id in &d.top_level {
        let Some(field) = d.field(id) else { continue };
        let left_out = skipped
            .get(field.name.as_str())
            .map(|r| format!("(left out: {r})"));
        field_rows(
            d,
            field,
            "",
            None,
            &arrow_types,
            left_out.as_deref(),
            with_descriptions,
            &mut table,
        );
    }
    out.push_str(&table.render(0));
    print(&out)
}

/// Adds the rows of a field and its subfields, drawn as a tree.
#[allow(clippy::too_many_arguments)]
fn field_rows(
    d: &Descriptor,
    field: &FieldDescriptor,
    prefix: &str,
    branch: Option<bool>,
    arrow_types: &HashMap<u32, DataType>,
    left_out: Option<&str>,
    with_descriptions: bool,
    table: &mut Table,
) {
    let name = match branch {
        None => field.name.clone(),
        Some(last) => format!("{prefix}{}{}", if last { "└─ " } else { "├─ " }, field.name),
    };
    let mut cxx = field.type_name.clone();
    if !field.type_alias.is_empty() {
        let _ = write!(cxx, " ({})", field.type_alias);
    }
    let arrow = match (left_out, arrow_types.get(&field.id)) {
        (Some(reason), _) => reason.to_string(),
        // Members have rows of their own: a struct names a few and counts the
        // rest, or NanoAOD's collections would widen the table to a thousand
        // columns of text.
        (None, Some(dt)) => brief_type_name(dt, BRIEF_MEMBERS),
        (None, None) => "-".to_string(),
    };
    let mut row = vec![name, cxx, arrow, columns_text(d, field)];
    if with_descriptions {
        row.push(field.description.clone());
    }
    table.row(row);

    let child_prefix = match branch {
        None => String::new(),
        Some(last) => format!("{prefix}{}", if last { "   " } else { "│  " }),
    };
    let n = field.children.len();
    for (i, &child) in field.children.iter().enumerate() {
        if let Some(c) = d.field(child) {
            let last = i + 1 == n;
            let left_out = left_out.map(|_| "(left out)");
            field_rows(
                d,
                c,
                &child_prefix,
                Some(last),
                arrow_types,
                left_out,
                with_descriptions,
                table,
            );
        }
    }
}

pub fn info(args: &InfoArgs) -> CliResult {
    let ntuple = open_ntuple(&args.file, args.ntuple.as_deref())?;
    let d = ntuple.descriptor();
    let exact = args.bytes;
    let clusters =
        ntuple
            .clusters()
            .context(format_args!("{}: RNTuple {}", args.file.display(), d.name))?;
    let (columns, all) = total_stats(d, &clusters);

    let mut out = String::new();
    let _ = writeln!(out, "RNTuple {} in {}", d.name, args.file.display());
    let mut summary = Table::new(&["", ""]);
    let mut line = |k: &str, v: String| summary.row(vec![format!("{k}:"), v]);
    line("format", d.version.map(|v| v.to_string()).join("."));
    line("writer", d.writer.clone());
    if !d.description.is_empty() {
        line("description", d.description.clone());
    }
    line("entries", d.n_entries.to_string());
    line(
        "fields",
        format!("{} ({} top-level)", d.fields.len(), d.top_level.len()),
    );
    line("columns", d.columns.len().to_string());
    line("cluster groups", d.cluster_groups.len().to_string());
    line("clusters", d.n_clusters.to_string());
    line("pages", all.pages.to_string());
    line("compressed", bytes(all.compressed, exact));
    line("uncompressed", bytes(all.uncompressed, exact));
    line("ratio", ratio(all.uncompressed, all.compressed));
    line("compression", all.compression_names());
    let flags: Vec<String> = d.feature_flags.iter().map(|f| f.to_string()).collect();
    line(
        "feature flags",
        if flags.is_empty() {
            "none".to_string()
        } else {
            flags.join(", ")
        },
    );
    let sets = ntuple.attribute_sets();
    if !sets.is_empty() {
        let names: Vec<String> = sets
            .iter()
            .map(|s| {
                format!(
                    "{} (schema {}.{})",
                    s.name, s.schema_version.0, s.schema_version.1
                )
            })
            .collect();
        line("attribute sets", names.join(", "));
    }
    let skipped = &ntuple.mapping().skipped;
    if !skipped.is_empty() {
        let names: Vec<String> = skipped
            .iter()
            .map(|s| format!("{} ({})", s.name, s.reason))
            .collect();
        line("left out", names.join("; "));
    }
    // The summary has no header line.
    let rendered = summary.render(2);
    out.extend(rendered.lines().skip(1).map(|l| format!("{l}\n")));

    let _ = writeln!(out, "\nCluster groups");
    let mut groups = Table::new(&[">GROUP", "ENTRIES", ">CLUSTERS", ">PAGE LIST", ">AT OFFSET"]);
    for g in &d.cluster_groups {
        groups.row(vec![
            g.index.to_string(),
            format!(
                "{}..{}",
                g.min_entry,
                g.min_entry.saturating_add(g.entry_span)
            ),
            g.n_clusters.to_string(),
            bytes(g.page_list.locator.size, exact),
            g.page_list.locator.offset.to_string(),
        ]);
    }
    out.push_str(&groups.render(2));

    let _ = writeln!(out, "\nClusters");
    let mut ct = Table::new(&[
        ">CLUSTER",
        "ENTRIES",
        ">PAGES",
        ">COMPRESSED",
        ">UNCOMPRESSED",
        ">RATIO",
    ]);
    for c in &clusters {
        let mut s = ColumnStats::default();
        cluster_stats(d, c).iter().for_each(|x| s.add(x));
        ct.row(vec![
            c.id.to_string(),
            format!("{}..{}", c.first_entry, c.first_entry + c.n_entries),
            s.pages.to_string(),
            bytes(s.compressed, exact),
            bytes(s.uncompressed, exact),
            ratio(s.uncompressed, s.compressed),
        ]);
    }
    out.push_str(&ct.render(2));

    let _ = writeln!(out, "\nTop-level fields");
    let mut ft = Table::new(&[
        "FIELD",
        ">COLUMNS",
        ">COMPRESSED",
        ">UNCOMPRESSED",
        ">RATIO",
        ">SHARE",
    ]);
    for &top in &d.top_level {
        // Projected fields own no columns.
        let Some(field) = d.field(top).filter(|f| !f.is_projected()) else {
            continue;
        };
        let mut s = ColumnStats::default();
        let mut n = 0;
        for (c, stats) in d.columns.iter().zip(&columns) {
            if d.top_level_of(c.field_id) == top {
                s.add(stats);
                n += 1;
            }
        }
        let share = if all.compressed == 0 {
            "-".to_string()
        } else {
            format!(
                "{:.1}%",
                100.0 * s.compressed as f64 / all.compressed as f64
            )
        };
        ft.row(vec![
            field.name.clone(),
            n.to_string(),
            bytes(s.compressed, exact),
            bytes(s.uncompressed, exact),
            ratio(s.uncompressed, s.compressed),
            share,
        ]);
    }
    out.push_str(&ft.render(2));

    let _ = writeln!(out, "\nColumns");
    let mut table = Table::new(&[
        ">COLUMN",
        "FIELD",
        "TYPE",
        ">BITS",
        ">ELEMENTS",
        ">PAGES",
        ">COMPRESSED",
        ">UNCOMPRESSED",
        ">RATIO",
        "COMPRESSION",
    ]);
    for (c, s) in d.columns.iter().zip(&columns) {
        let mut field = d.field_path(c.field_id);
        if c.representation_index > 0 {
            let _ = write!(field, " (repr. {})", c.representation_index);
        }
        table.row(vec![
            c.id.to_string(),
            field,
            c.column_type.to_string(),
            c.bits_on_storage.to_string(),
            s.elements.to_string(),
            s.pages.to_string(),
            bytes(s.compressed, exact),
            bytes(s.uncompressed, exact),
            ratio(s.uncompressed, s.compressed),
            s.compression_names(),
        ]);
    }
    out.push_str(&table.render(2));

    if args.pages {
        let _ = writeln!(out, "\nPages");
        let mut pt = Table::new(&[
            ">CLUSTER",
            ">COLUMN",
            ">PAGE",
            ">ELEMENTS",
            ">AT OFFSET",
            ">SIZE",
            "CHECKSUM",
        ]);
        for cluster in &clusters {
            for (id, range) in cluster.columns.iter().enumerate() {
                for (i, p) in range.pages.iter().enumerate() {
                    pt.row(vec![
                        cluster.id.to_string(),
                        id.to_string(),
                        i.to_string(),
                        p.n_elements.to_string(),
                        p.locator.offset.to_string(),
                        p.locator.size.to_string(),
                        if p.has_checksum { "xxh3" } else { "-" }.to_string(),
                    ]);
                }
            }
        }
        out.push_str(&pt.render(2));
    }
    print(&out)
}
