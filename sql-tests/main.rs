//! Runs the `sql-tests/*.slt` files with the `sqllogictest` crate against a
//! session made by `rntuple::datafusion::session_context()`.
//!
//! ```text
//!  cargo test --test sqllogictests [-- FILTER]
//!    for each *.slt (matching FILTER): fresh session, variables
//!      $DATA    tests/data (ROOT's fixtures)         $CORPUS  the real-file corpus
//!      $TABLES  a temporary directory of multi-file tables built from the fixtures
//!      $MEM     mem://fixtures, the fixtures in an in-memory object store
//!    -> "N passed, M failed, K skipped"; exit code 1 on any failure
//! ```
//!
//! A file whose first lines hold `# requires: corpus` is skipped, with a
//! message, when the corpus is absent. Cells are printed as: NULL, numbers
//! as Rust prints them (shortest round-trip), lists `[a, b]`, structs
//! `{x: 1, y: a}`, maps `{k: v}`, unions `{tag: i, value: v}`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float32Type, Float64Type};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use async_trait::async_trait;
use datafusion::error::DataFusionError;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::SessionContext;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sqllogictest::{DBOutput, DefaultColumnType};

struct Env {
    data: PathBuf,
    corpus: Option<PathBuf>,
    tables: tempfile::TempDir,
}

struct Db {
    ctx: SessionContext,
}

#[async_trait]
impl sqllogictest::AsyncDB for Db {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let df = self.ctx.sql(sql).await?;
        let schema = df.schema().inner().clone();
        let batches = df.collect().await?;
        let types = schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        let is_statement = schema.fields().is_empty()
            || (schema.fields().len() == 1
                && schema.field(0).name() == "count"
                && sql.trim_start().to_ascii_lowercase().starts_with("create"));
        if is_statement {
            return Ok(DBOutput::StatementComplete(0));
        }
        let mut rows = Vec::new();
        for batch in &batches {
            rows.extend(format_batch(batch)?);
        }
        if sql.trim_start().to_ascii_lowercase().starts_with("explain") {
            // One row per line of each plan, so that .slt files can show them.
            rows = rows
                .into_iter()
                .flat_map(|row| {
                    let (kind, plan) = (
                        row.first().cloned().unwrap_or_default(),
                        row.get(1).cloned().unwrap_or_default(),
                    );
                    plan.replace("\\n", "\n")
                        .lines()
                        .map(|l| vec![kind.clone(), l.trim_end().to_string()])
                        .collect::<Vec<_>>()
                })
                .collect();
        }
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "rntuple-datafusion"
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }
}

fn column_type(dt: &DataType) -> DefaultColumnType {
    if dt.is_integer() {
        DefaultColumnType::Integer
    } else if dt.is_floating() {
        DefaultColumnType::FloatingPoint
    } else {
        DefaultColumnType::Text
    }
}

fn format_batch(batch: &RecordBatch) -> Result<Vec<Vec<String>>, DataFusionError> {
    let mut rows = vec![Vec::with_capacity(batch.num_columns()); batch.num_rows()];
    for column in batch.columns() {
        for (r, row) in rows.iter_mut().enumerate() {
            row.push(cell(column, r)?);
        }
    }
    Ok(rows)
}

/// One value, printed the way the .slt files expect it.
fn cell(array: &ArrayRef, i: usize) -> Result<String, DataFusionError> {
    if array.is_null(i) {
        return Ok("NULL".to_string());
    }
    let join = |items: Vec<String>| items.join(", ");
    Ok(match array.data_type() {
        DataType::Float32 => format!("{}", array.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => format!("{}", array.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())?
                .value(i)
                .to_string();
            if s.is_empty() {
                "(empty)".to_string()
            } else {
                s.replace('\n', "\\n").replace('\t', "\\t")
            }
        }
        DataType::List(_) => {
            let v = array.as_list::<i32>().value(i);
            format!(
                "[{}]",
                join(
                    (0..v.len())
                        .map(|j| cell(&v, j))
                        .collect::<Result<_, _>>()?
                )
            )
        }
        DataType::LargeList(_) => {
            let v = array.as_list::<i64>().value(i);
            format!(
                "[{}]",
                join(
                    (0..v.len())
                        .map(|j| cell(&v, j))
                        .collect::<Result<_, _>>()?
                )
            )
        }
        DataType::FixedSizeList(_, _) => {
            let v = array.as_fixed_size_list().value(i);
            format!(
                "[{}]",
                join(
                    (0..v.len())
                        .map(|j| cell(&v, j))
                        .collect::<Result<_, _>>()?
                )
            )
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let items = fields
                .iter()
                .zip(s.columns())
                .map(|(f, c)| Ok(format!("{}: {}", f.name(), cell(c, i)?)))
                .collect::<Result<Vec<_>, DataFusionError>>()?;
            format!("{{{}}}", join(items))
        }
        DataType::Map(_, _) => {
            let m = array.as_map();
            let entries = m.value(i);
            let (k, v) = (entries.column(0).clone(), entries.column(1).clone());
            let items = (0..entries.len())
                .map(|j| Ok(format!("{}: {}", cell(&k, j)?, cell(&v, j)?)))
                .collect::<Result<Vec<_>, DataFusionError>>()?;
            format!("{{{}}}", join(items))
        }
        DataType::Union(_, _) => {
            let u = array.as_union();
            let tag = u.type_id(i);
            let child = u.child(tag).clone();
            format!(
                "{{tag: {tag}, value: {}}}",
                cell(&child, u.value_offset(i))?
            )
        }
        _ => ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())?
            .value(i)
            .to_string(),
    })
}

/// Builds the multi-file tables from the fixtures.
fn build_tables(data: &Path, dir: &Path) -> std::io::Result<()> {
    let copy = |from: &str, to: &str| -> std::io::Result<()> {
        let target = dir.join(to);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(data.join(from), target).map(|_| ())
    };
    // Two copies of the same RNTuple: one table of 2 x 190 entries.
    copy("clusters.root", "twice/a.root")?;
    copy("clusters.root", "twice/b.root")?;
    // A file that is not an RNTuple file sits beside them, ignored by extension.
    std::fs::write(dir.join("twice/README.txt"), b"not a ROOT file")?;
    // "Events" in both, with different fields: the schemas disagree.
    copy("attributes.root", "disagree/attributes.root")?;
    copy("importer.root", "disagree/importer.root")?;
    // A file with a sidecar cluster index, and a copy whose index is stale.
    copy("clusters.root", "indexed/clusters.root")?;
    rntuple::datafusion::index::write_index(
        dir.join("indexed/clusters.root"),
        &["index", "float", "string", "bool", "vec", "vec_vec"],
    )
    .map_err(std::io::Error::other)?;
    copy("clusters.root", "stale/clusters.root")?;
    copy("importer.root", "stale/importer.root")?;
    // importer's index beside clusters.root: it does not match, so it is ignored.
    rntuple::datafusion::index::write_index(dir.join("stale/importer.root"), &["run"])
        .map_err(std::io::Error::other)?;
    std::fs::rename(
        dir.join("stale/importer.root.rntidx"),
        dir.join("stale/clusters.root.rntidx"),
    )?;
    std::fs::remove_file(dir.join("stale/importer.root"))?;
    // A file named .root that is not a ROOT file.
    std::fs::create_dir_all(dir.join("garbage"))?;
    std::fs::write(
        dir.join("garbage/bad.root"),
        b"this is not a ROOT file, just some text",
    )?;
    // A directory with no RNTuple files.
    std::fs::create_dir_all(dir.join("nothing"))?;
    std::fs::write(dir.join("nothing/notes.txt"), b"no data")?;
    Ok(())
}

async fn make_session(env: &Env) -> Result<Db, DataFusionError> {
    let ctx = rntuple::datafusion::session_context();
    let store = Arc::new(InMemory::new());
    for entry in std::fs::read_dir(&env.data)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "root") {
            let bytes = std::fs::read(&path)?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            store
                .put(&ObjectPath::from(name), PutPayload::from(bytes))
                .await?;
        }
    }
    let url = ObjectStoreUrl::parse("mem://fixtures")?;
    ctx.register_object_store(url.as_ref(), store as Arc<dyn ObjectStore>);
    Ok(Db { ctx })
}

fn requires_corpus(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .map(|s| s.lines().take(10).any(|l| l.trim() == "# requires: corpus"))
        .unwrap_or(false)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpus = std::env::var_os("RNTUPLE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/corpus"));
    let tables = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot make a temporary directory: {e}");
            std::process::exit(2);
        }
    };
    let env = Env {
        data: root.join("tests/data"),
        corpus: corpus.is_dir().then_some(corpus),
        tables,
    };
    if let Err(e) = build_tables(&env.data, env.tables.path()) {
        eprintln!(
            "cannot build the multi-file tables from {}: {e}",
            env.data.display()
        );
        std::process::exit(2);
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("sql-tests"))
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "slt"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.retain(|f| {
        filters.is_empty()
            || filters
                .iter()
                .any(|flt| f.to_string_lossy().contains(flt.as_str()))
    });

    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for file in &files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if requires_corpus(file) && env.corpus.is_none() {
            println!("skip {name}: the corpus is absent (set RNTUPLE_CORPUS to ../shared/corpus or another directory)");
            skipped += 1;
            continue;
        }
        let started = Instant::now();
        let db = match make_session(&env).await {
            Ok(db) => db,
            Err(e) => {
                println!("FAIL {name}: cannot make a session: {e}");
                failed += 1;
                continue;
            }
        };
        let mut db = Some(db);
        let mut runner = sqllogictest::Runner::new(move || {
            let db = db.take();
            async move { db.ok_or_else(|| DataFusionError::Execution("one connection per file".into())) }
        });
        runner.set_var("DATA".to_string(), env.data.display().to_string());
        runner.set_var(
            "TABLES".to_string(),
            env.tables.path().display().to_string(),
        );
        runner.set_var("MEM".to_string(), "mem://fixtures".to_string());
        if let Some(c) = &env.corpus {
            runner.set_var("CORPUS".to_string(), c.display().to_string());
        }
        match runner.run_file_async(file).await {
            Ok(()) => {
                println!("ok   {name} ({:.2}s)", started.elapsed().as_secs_f64());
                passed += 1;
            }
            Err(e) => {
                println!("FAIL {name}:\n{}", e.display(false));
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if failed > 0 {
        std::process::exit(1);
    }
}
