//! The `rntuple` command: each subcommand on the fixtures of tests/data,
//! every export format read back by an independent reader, and every bad
//! argument or bad file ending in one `rntuple:` line.

#![cfg(feature = "cli")]

mod common;

use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{Schema, SchemaRef};
use assert_cmd::Command;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    common::data_dir().join(name)
}

fn rntuple() -> Command {
    common::rntuple_command()
}

/// Runs the command, expecting success; returns stdout.
fn run_ok(args: &[&str]) -> String {
    let out = rntuple().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "rntuple {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the command, expecting success; returns stdout as bytes.
fn run_bytes(args: &[&str]) -> Vec<u8> {
    let out = rntuple().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "rntuple {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Asserts a failure reported as exactly one `rntuple:` line on stderr;
/// returns that line.
fn assert_one_line_error(out: &Output, args: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "rntuple {args:?} should fail");
    assert!(
        !stderr.contains("panicked"),
        "rntuple {args:?} panicked: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "rntuple {args:?}: expected one line on stderr, got {stderr:?}"
    );
    assert!(
        lines[0].starts_with("rntuple: "),
        "rntuple {args:?}: {stderr:?}"
    );
    lines[0].to_string()
}

/// ROOT's reading of `importer.root`.
fn importer_golden() -> Value {
    serde_json::from_reader(File::open(fixture("importer.json")).unwrap()).unwrap()
}

/// `rntuple cat importer.root ARGS`, expecting success; returns stdout.
fn cat_importer(args: &[&str]) -> String {
    let file = fixture("importer.root");
    let mut all = vec!["cat", path_str(&file)];
    all.extend_from_slice(args);
    run_ok(&all)
}

fn run_err(args: &[&str]) -> String {
    let out = rntuple().args(args).output().unwrap();
    assert_one_line_error(&out, args)
}

/// What the library reads directly: one batch with every entry.
fn direct(file: &Path, ntuple: Option<&str>, columns: &[&str]) -> RecordBatch {
    let file = rntuple::RNTupleFile::open(file).unwrap();
    let mut builder = file.reader_builder(ntuple).unwrap();
    if !columns.is_empty() {
        builder = builder.with_projection(columns).unwrap();
    }
    let schema = builder.schema().clone();
    let batches = builder.build().unwrap().collect_batches().unwrap();
    concat_batches(&schema, &batches).unwrap()
}

fn concat(schema: &SchemaRef, batches: Vec<RecordBatch>) -> RecordBatch {
    concat_batches(schema, &batches).unwrap()
}

/// The batch without schema metadata, for readers that do not keep it.
fn bare(batch: &RecordBatch) -> RecordBatch {
    let fields: Vec<_> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| Arc::new(f.as_ref().clone().with_metadata(Default::default())))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), batch.columns().to_vec()).unwrap()
}

/// `batch` with every field nullable, the schema a text reader reads into.
fn nullable_schema(batch: &RecordBatch) -> SchemaRef {
    let fields: Vec<_> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    Arc::new(Schema::new(fields))
}

/// Compares what came back through CSV with what was written. Text cannot
/// tell an empty string from a null, nor keep the payload of a NaN: those
/// compare equal; everything else must be identical.
fn assert_text_equal(back: &RecordBatch, expected: &RecordBatch) {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type};
    use arrow_array::Array;
    use arrow_schema::DataType;
    assert_eq!(back.num_rows(), expected.num_rows());
    assert_eq!(back.num_columns(), expected.num_columns());
    for (i, field) in expected.schema().fields().iter().enumerate() {
        let (b, e) = (back.column(i), expected.column(i));
        let name = field.name();
        match field.data_type() {
            DataType::Utf8 => {
                let text = |a: &dyn Array| -> Vec<String> {
                    let a = a.as_string::<i32>();
                    (0..a.len())
                        .map(|r| {
                            if a.is_null(r) {
                                String::new()
                            } else {
                                a.value(r).to_string()
                            }
                        })
                        .collect()
                };
                assert_eq!(text(b), text(e), "column {name}");
            }
            DataType::Float32 => {
                let (b, e) = (
                    b.as_primitive::<Float32Type>(),
                    e.as_primitive::<Float32Type>(),
                );
                for r in 0..e.len() {
                    let (x, y) = (b.value(r), e.value(r));
                    assert!(
                        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                        "{name}[{r}]: {x} != {y}"
                    );
                }
            }
            DataType::Float64 => {
                let (b, e) = (
                    b.as_primitive::<Float64Type>(),
                    e.as_primitive::<Float64Type>(),
                );
                for r in 0..e.len() {
                    let (x, y) = (b.value(r), e.value(r));
                    assert!(
                        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                        "{name}[{r}]: {x} != {y}"
                    );
                }
            }
            _ => assert_eq!(b, e, "column {name}"),
        }
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---- ls, schema, info ----

#[test]
fn ls_lists_every_rntuple() {
    let importer = fixture("importer.root");
    let multi = fixture("multi.root");
    let out = run_ok(&["ls", path_str(&importer), path_str(&multi)]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("RNTUPLE")
            && lines[0].contains("ENTRIES")
            && lines[0].contains("COMPRESSED")
    );
    let events = lines
        .iter()
        .find(|l| l.contains("importer.root"))
        .expect("a row for importer.root");
    let cells: Vec<&str> = events.split_whitespace().collect();
    // FILE RNTUPLE ENTRIES FIELDS ...
    assert_eq!(cells[1], "Events");
    assert_eq!(cells[2], "12");
    assert_eq!(cells[3], "18");
    for (name, entries) in [
        ("A", "5"),
        ("B", "3"),
        ("sub/C", "4"),
        ("sub/deeper/A", "2"),
    ] {
        assert!(
            lines.iter().any(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                c.get(1) == Some(&name) && c.get(2) == Some(&entries)
            }),
            "no row for {name} with {entries} entries in\n{out}"
        );
    }
}

#[test]
fn ls_bytes_are_exact() {
    let out = run_ok(&["ls", "--bytes", path_str(&fixture("importer.root"))]);
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    let compressed: u64 = row[6].parse().unwrap();
    let uncompressed: u64 = row[7].parse().unwrap();
    assert!(compressed > 0 && uncompressed > 0);
    assert!(
        compressed < 2877,
        "compressed size {compressed} above the file size"
    );
}

#[test]
fn schema_shows_types_and_columns() {
    let out = run_ok(&["schema", path_str(&fixture("importer.root"))]);
    assert!(out.contains("RNTuple Events"));
    assert!(out.contains("12 entries"));
    let line = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name} in\n{out}"))
    };
    let jet = line("Jet_pt");
    assert!(
        jet.contains("ROOT::VecOps::RVec<float>") && jet.contains("List<Float32>"),
        "{jet}"
    );
    assert!(jet.contains("Index"), "{jet}");
    let met = line("MET_pt");
    assert!(
        met.contains("float") && met.contains("Float32") && met.contains("Real32"),
        "{met}"
    );
    let n = line("nJet");
    assert!(
        n.contains("RNTupleCardinality") && n.contains("UInt32"),
        "{n}"
    );
    // Subfields are drawn as a tree.
    assert!(out.contains("└─ _0"), "{out}");

    // Members have rows of their own, so a wide struct's type names a few.
    let adl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/adl/nanoaod_events.root");
    let out = run_ok(&["schema", path_str(&adl)]);
    let muons = out
        .lines()
        .find(|l| l.contains("Struct{Muon_pt"))
        .unwrap_or_else(|| panic!("no muon collection in\n{out}"));
    assert!(
        muons.contains("Struct{Muon_pt, Muon_eta, Muon_phi, Muon_mass, and 3 more}"),
        "{muons}"
    );
    assert!(out.contains("└─ Muon_tightId"), "{out}");
}

#[test]
fn schema_names_the_ntuple_to_choose() {
    let multi = fixture("multi.root");
    let out = run_ok(&["schema", path_str(&multi), "--ntuple", "sub/C"]);
    assert!(out.contains("RNTuple C") && out.contains("4 entries"));
    assert!(
        out.lines()
            .any(|l| l.starts_with("x ") && l.contains("Float32")),
        "{out}"
    );
    let line = run_err(&["schema", path_str(&multi)]);
    assert!(line.contains("sub/deeper/A"), "{line}");
    assert!(line.ends_with("name one with --ntuple NAME"), "{line}");
}

#[test]
fn sql_tables_name_the_ntuple_to_read() {
    let multi = fixture("multi.root");
    let table = format!("t={}", path_str(&multi));
    let count = ["-c", "SELECT count(*) AS n FROM t", "--format", "csv"];
    // Without a name, the error says how to give one.
    let mut args = vec!["sql", "--table", &table];
    args.extend(count);
    let line = run_err(&args);
    assert!(line.contains("(A, B, sub/C, sub/deeper/A)"), "{line}");
    assert!(line.ends_with("name one with --ntuple NAME"), "{line}");
    // B holds 3 entries, sub/C 4.
    for (ntuple, n) in [("B", "3"), ("sub/C", "4")] {
        let mut args = vec!["sql", "--table", &table, "--ntuple", ntuple];
        args.extend(count);
        assert_eq!(run_ok(&args), format!("n\n{n}\n"), "--ntuple {ntuple}");
    }
    // A table made in SQL names it with a table option.
    let create = |options: &str| {
        format!(
            "CREATE EXTERNAL TABLE t STORED AS RNTUPLE LOCATION '{}'{options}; \
             SELECT count(*) AS n FROM t",
            path_str(&multi)
        )
    };
    let line = run_err(&["sql", "-c", &create("")]);
    assert!(
        line.ends_with("name one with OPTIONS ('ntuple' 'NAME')"),
        "{line}"
    );
    let out = run_ok(&[
        "sql",
        "-c",
        &create(" OPTIONS ('ntuple' 'B')"),
        "--format",
        "csv",
    ]);
    assert_eq!(out, "n\n3\n");
}

#[test]
fn info_shows_clusters_and_columns() {
    let out = run_ok(&["info", path_str(&fixture("clusters.root")), "--pages"]);
    for section in [
        "Cluster groups",
        "Clusters",
        "Top-level fields",
        "Columns",
        "Pages",
    ] {
        assert!(
            out.lines().any(|l| l == section),
            "no section {section} in\n{out}"
        );
    }
    let entries = out
        .lines()
        .find(|l| l.trim_start().starts_with("entries:"))
        .unwrap();
    let n: u64 = entries.split_whitespace().nth(1).unwrap().parse().unwrap();
    let file = rntuple::RNTupleFile::open(fixture("clusters.root")).unwrap();
    let ntuple = file.ntuple(None).unwrap();
    assert_eq!(n, ntuple.n_entries());
    let clusters = out
        .lines()
        .find(|l| l.trim_start().starts_with("clusters:"))
        .unwrap();
    let c: u64 = clusters.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(c, ntuple.descriptor().n_clusters);
    assert!(c > 1, "the clusters fixture has several clusters");
    // Every column is listed with its ROOT type name.
    for column in &ntuple.descriptor().columns {
        let name = column.column_type.to_string();
        assert!(
            out.contains(&name),
            "column type {name} missing from\n{out}"
        );
    }
}

#[test]
fn info_of_importer_has_compression() {
    let out = run_ok(&["info", path_str(&fixture("importer.root"))]);
    assert!(out.contains("entries:") && out.contains("12"));
    assert!(out.contains("Muon_pt"));
}

// ---- cat ----

#[test]
fn cat_jsonl_matches_root() {
    let golden = importer_golden();
    let values = &golden["ntuples"][0]["values"];
    let out = cat_importer(&["--format", "jsonl", "--columns", "run,event,nJet,Jet_id"]);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 12);
    for (i, row) in rows.iter().enumerate() {
        for key in ["run", "event", "nJet", "Jet_id"] {
            assert_eq!(row[key], values[key][i], "{key} of entry {i}");
        }
    }
}

#[test]
fn cat_limit_and_skip() {
    let out = cat_importer(&[
        "--format",
        "jsonl",
        "-n",
        "3",
        "--skip",
        "2",
        "--columns",
        "event",
    ]);
    let events: Vec<u64> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        events,
        vec![1_000_000_000_002, 1_000_000_000_003, 1_000_000_000_004]
    );
}

/// Records: a title per entry, numbered in the file, then one
/// `name | value` line per field, in the schema's order.
#[test]
fn cat_records_print_a_field_a_line() {
    let golden = importer_golden();
    let values = &golden["ntuples"][0]["values"];
    let out = cat_importer(&[
        "--format",
        "records",
        "--skip",
        "3",
        "-n",
        "2",
        "--columns",
        "event,nJet,Jet_pt",
    ]);
    let records: Vec<&str> = out.split("-[ entry ").skip(1).collect();
    assert_eq!(records.len(), 2, "{out}");
    for (k, record) in records.iter().enumerate() {
        let i = 3 + k;
        let mut lines = record.lines();
        assert!(
            lines.next().unwrap().starts_with(&format!("{i} ]---")),
            "{record}"
        );
        let fields: Vec<(&str, &str)> = lines
            .map(|l| l.split_once(" | ").expect("name | value"))
            .map(|(name, value)| (name.trim_end(), value))
            .collect();
        let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["event", "nJet", "Jet_pt"]);
        assert_eq!(fields[0].1, values["event"][i].to_string());
        assert_eq!(fields[1].1, values["nJet"][i].to_string());
        let jets: Vec<f64> = serde_json::from_str(fields[2].1).unwrap();
        // The golden file holds floats as their bits: "0x41c00000".
        let expected: Vec<f64> = values["Jet_pt"][i]
            .as_array()
            .unwrap()
            .iter()
            .map(|bits| {
                let hex = bits.as_str().unwrap().trim_start_matches("0x");
                f64::from(f32::from_bits(u32::from_str_radix(hex, 16).unwrap()))
            })
            .collect();
        assert!(
            k == 0 || !expected.is_empty(),
            "entry {i} has jets to compare"
        );
        assert_eq!(jets, expected);
    }
    // No entries: said in words.
    let out = cat_importer(&["--format", "records", "-n", "0"]);
    assert_eq!(out, "(0 entries)\n");
    // SQL rows count from 1.
    let out = run_ok(&[
        "sql",
        path_str(&fixture("importer.root")),
        "-c",
        "SELECT event FROM Events ORDER BY event LIMIT 2",
        "--format",
        "records",
    ]);
    let first = values["event"][0].to_string();
    let second = values["event"][1].to_string();
    assert_eq!(
        out,
        format!("-[ row 1 ]---\nevent | {first}\n-[ row 2 ]---\nevent | {second}\n")
    );
}

#[test]
fn cat_table_shows_names_and_values() {
    let out = cat_importer(&["-n", "2", "--columns", "event,Jet_pt"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("event") && l.contains("Jet_pt")),
        "{out}"
    );
    assert!(out.contains("1000000000001"), "{out}");
    assert!(
        !out.contains("1000000000002"),
        "-n 2 shows two entries:\n{out}"
    );
}

#[test]
fn cat_csv_reads_back() {
    let file = fixture("importer.root");
    let columns = ["run", "event", "MET_pt", "flag", "small", "big", "nJet"];
    let out = run_ok(&[
        "cat",
        path_str(&file),
        "--format",
        "csv",
        "--columns",
        &columns.join(","),
    ]);
    let expected = direct(&file, None, &columns);
    let schema = nullable_schema(&expected);
    let reader = arrow::csv::ReaderBuilder::new(schema.clone())
        .with_header(true)
        .build(Cursor::new(out.into_bytes()))
        .unwrap();
    let back = concat(&schema, reader.collect::<Result<_, _>>().unwrap());
    assert_text_equal(&back, &expected);
}

#[test]
fn cat_csv_flattens_structs() {
    let file = fixture("containers.root");
    let out = run_ok(&[
        "cat",
        path_str(&file),
        "--format",
        "csv",
        "--columns",
        "pair,tuple",
        "--flatten",
    ]);
    assert_eq!(
        out.lines().next(),
        Some("pair._0,pair._1,tuple._0,tuple._1,tuple._2")
    );
    let direct = direct(&file, None, &["pair", "tuple"]);
    let flat_schema = rntuple::export::flatten_schema(&direct.schema());
    let expected = bare(&rntuple::export::flatten_batch(&direct, &flat_schema).unwrap());
    let schema = nullable_schema(&expected);
    let reader = arrow::csv::ReaderBuilder::new(schema.clone())
        .with_header(true)
        .build(Cursor::new(out.into_bytes()))
        .unwrap();
    let back = concat(&schema, reader.collect::<Result<_, _>>().unwrap());
    assert_text_equal(&back, &expected);
    // And the values are ROOT's.
    let golden: Value =
        serde_json::from_reader(File::open(fixture("containers.json")).unwrap()).unwrap();
    let pairs = golden["ntuples"][0]["values"]["pair"].as_array().unwrap();
    assert_eq!(back.num_rows(), pairs.len());
    let strings = back
        .column(1)
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap();
    use arrow_array::Array;
    for (i, pair) in pairs.iter().enumerate() {
        let value = if strings.is_null(i) {
            ""
        } else {
            strings.value(i)
        };
        assert_eq!(Some(value), pair["_1"].as_str(), "pair._1 of entry {i}");
    }
}

// ---- export ----

fn export_to(
    file: &Path,
    format: &str,
    columns: &[&str],
    extra: &[&str],
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("out.{format}"));
    let mut args = vec![
        "export",
        path_str(file),
        "--format",
        format,
        "-o",
        path_str(&out),
    ];
    let cols = columns.join(",");
    if !columns.is_empty() {
        args.extend(["--columns", &cols]);
    }
    args.extend(extra);
    run_ok(&args);
    (dir, out)
}

#[test]
fn export_arrow_file_equals_direct_read() {
    let cases = [
        ("importer.root", None),
        ("containers.root", None),
        ("clusters.root", None),
        ("classes.root", None),
        ("fundamentals.root", Some("Reprs")),
        ("reals.root", Some("Reals")),
        ("extension.root", Some("Extension")),
    ];
    for (name, ntuple) in cases {
        let file = fixture(name);
        let expected = direct(&file, ntuple, &[]);
        let mut extra = vec!["--batch-size", "5"];
        if let Some(n) = ntuple {
            extra.extend(["--ntuple", n]);
        }
        let (_dir, out) = export_to(&file, "arrow", &[], &extra);
        let reader =
            arrow::ipc::reader::FileReader::try_new(File::open(&out).unwrap(), None).unwrap();
        let schema = reader.schema();
        assert_eq!(schema, expected.schema(), "{name}: schema and metadata");
        let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
        assert!(
            batches.iter().all(|b| b.num_rows() <= 5),
            "{name}: batch size honoured"
        );
        assert_eq!(concat(&schema, batches), expected, "{name}");
    }
}

#[test]
fn export_arrow_stream_to_stdout_equals_direct_read() {
    let file = fixture("containers.root");
    let expected = direct(&file, None, &[]);
    let bytes = run_bytes(&[
        "export",
        path_str(&file),
        "--format",
        "arrow-stream",
        "-o",
        "-",
    ]);
    let reader = arrow::ipc::reader::StreamReader::try_new(Cursor::new(bytes), None).unwrap();
    let schema = reader.schema();
    let back = concat(&schema, reader.collect::<Result<_, _>>().unwrap());
    assert_eq!(back, expected);
}

#[test]
fn export_parquet_equals_direct_read() {
    let file = fixture("importer.root");
    let expected = direct(&file, None, &[]);
    let (_dir, out) = export_to(&file, "parquet", &[], &[]);
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&out).unwrap()).unwrap();
    let compression = builder.metadata().row_group(0).column(0).compression();
    assert!(
        matches!(compression, parquet::basic::Compression::ZSTD(_)),
        "{compression:?}"
    );
    assert_eq!(
        builder
            .schema()
            .metadata()
            .get("rntuple.name")
            .map(String::as_str),
        Some("Events"),
        "schema metadata kept"
    );
    let reader = builder.build().unwrap();
    let schema = reader.schema();
    let back = concat(&schema, reader.collect::<Result<_, _>>().unwrap());
    assert_eq!(bare(&back), bare(&expected));
}

#[test]
fn export_parquet_nested_projection() {
    let file = fixture("importer.root");
    let columns = ["_collection0.Jet_pt", "nJet"];
    let expected = direct(&file, None, &columns);
    let (_dir, out) = export_to(&file, "parquet", &columns, &[]);
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&out).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let back = concat(&schema, reader.collect::<Result<_, _>>().unwrap());
    assert_eq!(bare(&back), bare(&expected));
}

#[test]
fn export_jsonl_equals_direct_read() {
    let file = fixture("importer.root");
    let columns = [
        "run",
        "event",
        "MET_pt",
        "flag",
        "big",
        "Jet_pt",
        "Muon_charge",
        "nMuon",
        "_collection1",
    ];
    let expected = bare(&direct(&file, None, &columns));
    let (_dir, out) = export_to(&file, "jsonl", &columns, &[]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 12);
    let reader = arrow::json::ReaderBuilder::new(expected.schema())
        .build(Cursor::new(text.into_bytes()))
        .unwrap();
    let back = concat(
        &expected.schema(),
        reader.collect::<Result<_, _>>().unwrap(),
    );
    assert_eq!(back, expected);
}

#[test]
fn export_csv_equals_direct_read() {
    let file = fixture("fundamentals.root");
    let expected = bare(&direct(&file, Some("Split"), &[]));
    let flat = expected
        .schema()
        .fields()
        .iter()
        .all(|f| !f.data_type().is_nested());
    assert!(flat, "fundamentals.root has flat columns only");
    let (_dir, out) = export_to(&file, "csv", &[], &["--ntuple", "Split"]);
    let schema = nullable_schema(&expected);
    let reader = arrow::csv::ReaderBuilder::new(schema.clone())
        .with_header(true)
        .build(File::open(&out).unwrap())
        .unwrap();
    let back = concat(&schema, reader.collect::<Result<_, _>>().unwrap());
    assert_text_equal(&back, &expected);
}

#[test]
fn a_refusal_names_a_few_columns_and_counts_the_rest() {
    // 23 list columns, three of them lists of structs of 6-7 members.
    let file = fixture("adl/nanoaod_events.root");
    let args = ["export", path_str(&file), "--format", "csv", "-o", "-"];
    let line = run_err(&args);
    assert!(
        line.contains(
            "_collection1 (List<Struct{Jet_pt, Jet_eta, Jet_phi, Jet_mass, and 2 more}>)"
        ),
        "{line}"
    );
    assert!(
        line.contains("Electron_charge (List<Int32>), and 15 more; leave them out"),
        "{line}"
    );
    assert!(!line.contains("Muon_tightId"), "{line}");
}

#[test]
fn export_limit_and_ntuple() {
    let file = fixture("multi.root");
    let bytes = run_bytes(&[
        "export",
        path_str(&file),
        "--ntuple",
        "B",
        "--format",
        "arrow-stream",
        "-o",
        "-",
        "-n",
        "2",
    ]);
    let reader = arrow::ipc::reader::StreamReader::try_new(Cursor::new(bytes), None).unwrap();
    let schema = reader.schema();
    let back = concat(&schema, reader.collect::<Result<_, _>>().unwrap());
    let expected = direct(&file, Some("B"), &[]);
    assert_eq!(back, expected.slice(0, 2));
}

// ---- sql ----

#[test]
fn sql_counts_entries() {
    let file = fixture("importer.root");
    let out = run_ok(&[
        "sql",
        path_str(&file),
        "-c",
        "SELECT count(*) AS n, sum(nJet) AS jets FROM Events",
        "--format",
        "csv",
    ]);
    let golden = importer_golden();
    let jets: u64 = golden["ntuples"][0]["values"]["nJet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(out, format!("n,jets\n12,{jets}\n"));
}

/// A misspelt column of a wide table names the closest field and counts the
/// others instead of listing them all (a NanoAOD file has about 1,700).
#[test]
fn a_missing_column_of_a_wide_table_is_named_not_listed() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/adl/nanoaod_events.root");
    let line = run_err(&["sql", path_str(&file), "-c", "SELECT MET_ptt FROM Events"]);
    assert!(line.contains("No field named"), "{line}");
    assert!(
        line.contains("Did you mean '\"Events\".\"MET_pt\"'"),
        "{line}"
    );
    assert!(!line.contains("Valid fields are"), "{line}");
    assert!(!line.contains("Jet_btag"), "{line}");
    assert!(line.contains("fields in scope"), "{line}");

    // A narrow table still lists its fields.
    let narrow = fixture("importer.root");
    let line = run_err(&["sql", path_str(&narrow), "-c", "SELECT nope FROM Events"]);
    assert!(line.contains("Valid fields are"), "{line}");
}

#[test]
fn sql_tables_and_formats() {
    let file = fixture("importer.root");
    let table = format!("ev={}", path_str(&file));
    let out = run_ok(&[
        "sql",
        "--table",
        &table,
        "-c",
        "SELECT event FROM ev WHERE nMuon >= 2 ORDER BY event LIMIT 2",
        "--format",
        "jsonl",
    ]);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["event"], 1_000_000_000_002u64);

    let out = run_ok(&[
        "sql",
        path_str(&file),
        "-c",
        "SELECT nMuon, count(*) AS n FROM Events GROUP BY nMuon ORDER BY nMuon",
    ]);
    assert!(
        out.contains("nMuon") && out.contains('|'),
        "table output:\n{out}"
    );

    let bytes = run_bytes(&[
        "sql",
        path_str(&file),
        "-c",
        "SELECT run, event FROM Events",
        "--format",
        "arrow",
    ]);
    let reader = arrow::ipc::reader::StreamReader::try_new(Cursor::new(bytes), None).unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 12);
}

#[test]
fn sql_script_with_several_statements() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("q.sql");
    std::fs::write(
        &script,
        "SELECT count(*) AS a FROM A;\n-- the nested one\nSELECT count(*) AS y FROM \"sub/deeper/A\";\n",
    )
    .unwrap();
    let out = run_ok(&[
        "sql",
        path_str(&fixture("multi.root")),
        "-f",
        path_str(&script),
        "--format",
        "csv",
    ]);
    assert_eq!(out, "a\n5\ny\n2\n");
}

/// DataFusion's options come from the environment, named as DataFusion's
/// own command names them; a value it refuses is a one-line error naming
/// the variable.
#[test]
fn sql_takes_datafusion_options_from_the_environment() {
    let file = fixture("adl/nanoaod_events.root");
    let query = "SELECT value FROM information_schema.df_settings \
                 WHERE name = 'datafusion.execution.meta_fetch_concurrency'";
    let args = ["sql", path_str(&file), "-c", query, "--format", "csv"];
    let run = |value: &str| {
        rntuple()
            .env("DATAFUSION_EXECUTION_META_FETCH_CONCURRENCY", value)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run("7");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "value\n7\n");
    assert_eq!(run_ok(&args), "value\n32\n", "DataFusion's default");
    let line = assert_one_line_error(&run("many"), &args);
    assert!(
        line.contains("DATAFUSION_EXECUTION_META_FETCH_CONCURRENCY=many"),
        "{line}"
    );
}

// ---- errors: one line, non-zero exit, never a panic ----

#[test]
fn bad_arguments_and_files_give_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let not_root = dir.path().join("notes.root");
    std::fs::write(&not_root, "these are not the bytes of a ROOT file\n").unwrap();
    let truncated = dir.path().join("truncated.root");
    let bytes = std::fs::read(fixture("importer.root")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let missing = dir.path().join("missing.root");
    let importer = fixture("importer.root");
    let containers = fixture("containers.root");
    let out_file = dir.path().join("out.csv");

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["ls", path_str(&missing)], "missing.root"),
        (vec!["schema", path_str(&missing)], "missing.root"),
        (vec!["ls", path_str(&not_root)], "notes.root"),
        (vec!["info", path_str(&not_root)], "notes.root"),
        (vec!["cat", path_str(&truncated)], "truncated.root"),
        (
            vec![
                "export",
                path_str(&truncated),
                "--format",
                "arrow",
                "-o",
                path_str(&out_file),
            ],
            "truncated.root",
        ),
        (
            vec!["schema", path_str(&importer), "--ntuple", "Nope"],
            "Nope",
        ),
        (
            vec!["cat", path_str(&importer), "--columns", "nope"],
            "nope",
        ),
        (
            vec![
                "export",
                path_str(&importer),
                "--columns",
                "Jet_pt.nope",
                "--format",
                "csv",
                "-o",
                "-",
            ],
            "Jet_pt.nope",
        ),
        (
            vec![
                "export",
                path_str(&importer),
                "--format",
                "csv",
                "-o",
                path_str(&out_file),
            ],
            "Jet_pt",
        ),
        (
            vec![
                "cat",
                path_str(&containers),
                "--format",
                "csv",
                "--columns",
                "pair",
            ],
            "--flatten",
        ),
        (
            vec![
                "cat",
                path_str(&containers),
                "--format",
                "csv",
                "--columns",
                "vec_int",
                "--flatten",
            ],
            "vec_int",
        ),
        (
            vec!["sql", path_str(&importer), "-c", "SELECT nope FROM Events"],
            "nope",
        ),
        (vec!["sql", path_str(&importer), "-c", "SELEC 1"], "SELEC"),
        (
            vec!["sql", "--table", "novalue", "-c", "SELECT 1"],
            "NAME=PATH",
        ),
        (
            vec!["sql", path_str(&missing), "-c", "SELECT 1"],
            "missing.root",
        ),
    ];
    for (args, needle) in cases {
        let line = run_err(&args);
        assert!(
            line.contains(needle),
            "rntuple {args:?}: {line:?} should name {needle:?}"
        );
    }
    assert!(!out_file.exists(), "no half-written output is left behind");
}

#[test]
fn usage_errors_exit_with_2() {
    let out = rntuple().args(["export", "x.root"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn quiet_silences_warnings() {
    // classes.root has a field the reader leaves out (a streamed class or
    // similar) in some versions; with --quiet nothing but data is printed.
    let out = rntuple()
        .args([
            "--quiet",
            "cat",
            path_str(&fixture("importer.root")),
            "--format",
            "jsonl",
            "-n",
            "1",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Files written by ROOT and other writers, when the corpus is present.
fn corpus_files() -> Option<Vec<PathBuf>> {
    let dir = std::env::var_os("RNTUPLE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "root"))
        .collect();
    files.sort();
    Some(files)
}

#[test]
fn corpus_ls_and_schema_never_panic() {
    let Some(files) = corpus_files() else {
        eprintln!("skipping: no corpus (set RNTUPLE_CORPUS)");
        return;
    };
    for file in files {
        for sub in ["ls", "info"] {
            let out = rntuple()
                .args(["--quiet", sub, path_str(&file)])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !stderr.contains("panicked") && !stderr.contains("internal error"),
                "{sub} {}: {stderr}",
                file.display()
            );
            if !out.status.success() {
                assert_one_line_error(&out, &[sub, path_str(&file)]);
            }
        }
    }
}

#[test]
fn index_writes_a_sidecar_that_sql_prunes_with() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nano.root");
    std::fs::copy(fixture("adl/nanoaod_clusters.root"), &data).unwrap();
    let data = data.to_str().unwrap();
    let out = run_ok(&["index", data, "--columns", "event,MET_pt"]);
    let sidecar = format!("{data}.rntidx");
    assert_eq!(out.trim(), sidecar);
    assert!(Path::new(&sidecar).exists());
    // Events are numbered in order, so a cut on `event` excludes all but
    // the clusters holding the first hundred events.
    let plan = run_ok(&[
        "sql",
        "--table",
        &format!("events={data}"),
        "-c",
        "EXPLAIN ANALYZE SELECT count(*) FROM events WHERE event < 100",
    ]);
    let pruned: u64 = plan
        .split("clusters_pruned=")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no clusters_pruned in {plan}"));
    assert!(pruned >= 10, "only {pruned} of 12 clusters pruned:\n{plan}");
    // An unknown field is one clear error.
    let args = ["index", data, "--columns", "nope"];
    let out = rntuple().args(args).output().unwrap();
    let line = assert_one_line_error(&out, &args);
    assert!(line.contains("nope"), "{line}");
}

/// A reader that stops early (`rntuple info FILE | head`) ends every command
/// quietly: no error, a zero exit status.
#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    let file = fixture("adl/nanoaod_events.root");
    let file = file.to_str().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("rntuple");
    let commands: [&[&str]; 6] = [
        &["info", file, "--pages"],
        &["schema", file],
        &["ls", file],
        &["cat", file],
        &["sql", file, "-c", "SELECT MET_pt FROM Events"],
        &[
            "sql",
            file,
            "-c",
            "SELECT MET_pt FROM Events",
            "--format",
            "csv",
        ],
    ];
    for args in commands {
        let mut child = std::process::Command::new(&bin)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Nobody reads: every write to standard output fails.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?}, {stderr}", out.status);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
