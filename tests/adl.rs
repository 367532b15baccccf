//! The ADL benchmark queries (`benches/adl/*.sql`) against ROOT's answers.
//!
//! ```text
//!  tests/data/adl/nanoaod_events.root ─ SQL (q1 … q8) ─> x values ─> 100-bin histogram
//!  tests/data/adl/answers.json        ─ ROOT RDataFrame's histogram of the same query
//!  counts must agree bin by bin; a value within float rounding of a bin edge
//!  may sit in the neighbouring bin
//! ```
//!
//! The same queries also run over `nanoaod_clusters.root` (the same events
//! in 12 clusters) split into four partitions.

#![cfg(feature = "datafusion")]

mod common;

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type};
use rntuple::datafusion::{
    session_config, session_context_with_config, RNTupleReadOptions, SessionContextExt,
};
use serde_json::Value;

const QUERIES: [&str; 9] = ["q1", "q2", "q3", "q4", "q5", "q6a", "q6b", "q7", "q8"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// ROOT's histogram of one query.
struct Histogram {
    lo: f64,
    hi: f64,
    bins: usize,
    counts: Vec<u64>,
    underflow: u64,
    overflow: u64,
    fills: u64,
}

impl Histogram {
    fn from_json(v: &Value) -> Self {
        let num = |k: &str| {
            v[k].as_u64()
                .unwrap_or_else(|| panic!("{k} in answers.json"))
        };
        Self {
            lo: v["lo"].as_f64().unwrap(),
            hi: v["hi"].as_f64().unwrap(),
            bins: num("bins") as usize,
            counts: v["counts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect(),
            underflow: num("underflow"),
            overflow: num("overflow"),
            fills: num("fills"),
        }
    }

    /// The bin of `x`: -1 for underflow, `bins` for overflow (as ROOT fills a TH1D).
    fn bin(&self, x: f64) -> i64 {
        if x < self.lo {
            return -1;
        }
        if x >= self.hi {
            return self.bins as i64;
        }
        ((self.bins as f64) * (x - self.lo) / (self.hi - self.lo)).floor() as i64
    }

    /// Whether `x` lies within float rounding of a bin edge: a relative
    /// change of 1e-9 moves it to another bin.
    fn near_edge(&self, x: f64) -> bool {
        let eps = 1e-9 * x.abs().max(1e-300);
        self.bin(x - eps) != self.bin(x + eps)
    }
}

/// Runs `benches/adl/<q>.sql` over `path` and returns the `x` column.
async fn run_query(query: &str, path: &Path, partitions: usize) -> Vec<f64> {
    run_query_with(query, path, partitions, RNTupleReadOptions::default()).await
}

/// [`run_query`] with these read options (the RNTuple is always `Events`).
async fn run_query_with(
    query: &str,
    path: &Path,
    partitions: usize,
    options: RNTupleReadOptions,
) -> Vec<f64> {
    let ctx = events_context(path, partitions, options).await;
    let sql =
        std::fs::read_to_string(root().join("benches/adl").join(format!("{query}.sql"))).unwrap();
    let df = ctx
        .sql(&sql)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    let batches = df
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    let mut out = Vec::new();
    for batch in &batches {
        assert_eq!(batch.num_columns(), 1, "{query} returns one column");
        assert_eq!(batch.schema().field(0).name(), "x", "{query}'s column is x");
        let column = batch.column(0);
        assert_eq!(
            column.data_type(),
            &DataType::Float64,
            "{query}: x is a DOUBLE"
        );
        let values = column.as_primitive::<Float64Type>();
        assert_eq!(values.null_count(), 0, "{query}: x is never NULL");
        out.extend(values.values().iter().copied());
    }
    out
}

/// A session of `partitions` that splits even small scans, with `path`
/// registered as `events`.
async fn events_context(
    path: &Path,
    partitions: usize,
    options: RNTupleReadOptions,
) -> datafusion::prelude::SessionContext {
    let mut config = session_config().with_target_partitions(partitions);
    if options.min_piece_entries < 5_000 {
        // Batches smaller than the file's 5,000 entries: DataFusion keeps
        // an input it knows to fit in one batch in one partition.
        config = config.with_batch_size(1_000);
    }
    let config = config.set_usize("datafusion.optimizer.repartition_file_min_size", 0);
    let ctx = session_context_with_config(config);
    ctx.register_rntuple(
        "events",
        path.to_str().unwrap(),
        options.with_ntuple("Events"),
    )
    .await
    .unwrap();
    ctx
}

/// Compares our fills with ROOT's histogram; returns a description of any
/// disagreement.
fn compare(query: &str, ours: &[f64], root: &Histogram) -> Result<(), String> {
    if ours.len() as u64 != root.fills {
        return Err(format!(
            "{query}: {} fills, ROOT has {}",
            ours.len(),
            root.fills
        ));
    }
    let n = root.bins + 2; // underflow, bins, overflow
    let mut counts = vec![0u64; n];
    let mut loose = vec![0u64; n];
    for &x in ours {
        let slot = (root.bin(x) + 1) as usize;
        counts[slot] += 1;
        if root.near_edge(x) {
            // It may belong to either side of the edge.
            loose[slot] += 1;
            loose[slot.saturating_sub(1)] += 1;
            if slot + 1 < n {
                loose[slot + 1] += 1;
            }
        }
    }
    let expected: Vec<u64> = std::iter::once(root.underflow)
        .chain(root.counts.iter().copied())
        .chain(std::iter::once(root.overflow))
        .collect();
    let mut problems = Vec::new();
    for slot in 0..n {
        let diff = counts[slot].abs_diff(expected[slot]);
        if diff > loose[slot] {
            problems.push(format!(
                "bin {}: {} against ROOT's {}",
                slot as i64 - 1,
                counts[slot],
                expected[slot]
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{query}: {}", problems.join("; ")))
    }
}

fn answers() -> Value {
    let text = std::fs::read_to_string(root().join("tests/data/adl/answers.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn check_file(file: &str, partitions: usize) {
    check_file_with(file, partitions, RNTupleReadOptions::default()).await;
}

async fn check_file_with(file: &str, partitions: usize, options: RNTupleReadOptions) {
    let answers = answers();
    let path = root().join("tests/data/adl").join(file);
    let mut failures = Vec::new();
    for query in QUERIES {
        let expected = Histogram::from_json(&answers[query]);
        let ours = run_query_with(query, &path, partitions, options.clone()).await;
        if let Err(e) = compare(query, &ours, &expected) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{file}:\n{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adl_queries_agree_with_root() {
    check_file("nanoaod_events.root", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adl_queries_agree_with_root_over_cluster_partitions() {
    check_file("nanoaod_clusters.root", 4).await;
}

/// The file's one cluster of 5,000 entries cut into three partitions, each
/// reading a share of its entries and decompressing the pages that straddle
/// its cuts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adl_queries_agree_with_root_over_pieces_of_one_cluster() {
    let options = RNTupleReadOptions::default().with_min_piece_entries(500);
    let path = root().join("tests/data/adl/nanoaod_events.root");
    let ctx = events_context(&path, 3, options.clone()).await;
    let text = common::explain(&ctx, "SELECT sum(MET_pt) FROM events").await;
    assert!(text.contains("3 groups"), "{text}");
    check_file_with("nanoaod_events.root", 3, options).await;
}

/// The values themselves, where ROOT recorded them: every query's fills in
/// order, equal to ROOT's within a few units in the last place (the
/// histograms above are the contract; this shows how close we are).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adl_values_agree_with_root() {
    let answers = answers();
    let path = root().join("tests/data/adl/nanoaod_events.root");
    for query in QUERIES {
        let Some(values) = answers[query]["values"].as_array() else {
            eprintln!("{query}: answers.json holds no values; skipped");
            continue;
        };
        let expected: Vec<f64> = values
            .iter()
            .map(|v| {
                let hex = v.as_str().unwrap().trim_start_matches("0x");
                f64::from_bits(u64::from_str_radix(hex, 16).unwrap())
            })
            .collect();
        let ours = run_query(query, &path, 1).await;
        assert_eq!(ours.len(), expected.len(), "{query}: number of fills");
        let mut worst = 0.0f64;
        for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
            let rel = (a - b).abs() / b.abs().max(1e-12);
            assert!(rel < 1e-12, "{query}: fill {i} is {a}, ROOT has {b}");
            worst = worst.max(rel);
        }
        eprintln!(
            "{query}: {} fills, largest relative difference {worst:e}",
            ours.len()
        );
    }
}

/// `q6.sql` answers Q6a and Q6b in one pass: its columns x and y are the
/// values of q6a.sql and q6b.sql, bit for bit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q6_in_one_pass_equals_q6a_and_q6b() {
    let path = root().join("tests/data/adl/nanoaod_events.root");
    let ctx = session_context_with_config(session_config());
    ctx.register_rntuple(
        "events",
        path.to_str().unwrap(),
        RNTupleReadOptions::default().with_ntuple("Events"),
    )
    .await
    .unwrap();
    let sql = std::fs::read_to_string(root().join("benches/adl/q6.sql")).unwrap();
    let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for batch in &batches {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .unwrap()
                .as_primitive::<Float64Type>()
                .values()
                .to_vec()
        };
        x.extend(column("x"));
        y.extend(column("y"));
    }
    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert!(!x.is_empty());
    assert_eq!(bits(&x), bits(&run_query("q6a", &path, 1).await));
    assert_eq!(bits(&y), bits(&run_query("q6b", &path, 1).await));
}
