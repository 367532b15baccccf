//! Opening a wide file and planning a narrow scan: the metadata path.
//!
//! ```text
//! RNTUPLE_CORPUS=../shared/corpus cargo bench --bench open
//! ```
//!
//! Reads the CMS NanoAOD file of the corpus (1,680 fields, written by
//! RNTupleImporter): open the file, parse header and footer, map the schema
//! to Arrow, and plan a read of three columns, with the library and with
//! SQL (register the table, plan `SELECT` of three columns). Without the
//! corpus the benchmarks say so and do nothing.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use rntuple::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};
use rntuple::RNTupleFile;

const NANOAOD: &str = "cmsopendata2015_ttbar_19980_NANOAOD_RNTupleImporter_rntuple_v1-0-0-1.root";
const COLUMNS: [&str; 3] = ["nMuon", "Muon_pt", "MET_pt"];

fn corpus_file() -> Option<PathBuf> {
    let dir = std::env::var_os("RNTUPLE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus")));
    let path = dir.join(NANOAOD);
    path.exists().then_some(path)
}

fn open(c: &mut Criterion) {
    let Some(path) = corpus_file() else {
        eprintln!("open: {NANOAOD} not found (set RNTUPLE_CORPUS); nothing measured");
        return;
    };
    let mut group = c.benchmark_group("open_1680_fields");
    group.bench_function("library: open + project 3 + build", |b| {
        b.iter(|| {
            let reader = RNTupleFile::open(&path)
                .and_then(|f| f.reader_builder(None))
                .and_then(|r| r.with_projection(COLUMNS))
                .and_then(|r| r.build())
                .expect("a reader");
            std::hint::black_box(reader);
        })
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let query = format!("SELECT {} FROM events", COLUMNS.join(", "));
    let location = path.to_string_lossy().into_owned();
    // The session and the plan are dropped outside the timed part: letting
    // go of a thousand columns' metadata is not opening or planning.
    group.bench_function("sql: register + plan SELECT of 3 columns", |b| {
        b.iter_with_large_drop(|| {
            runtime.block_on(async {
                let ctx = session_context();
                ctx.register_rntuple("events", &location, RNTupleReadOptions::default())
                    .await
                    .expect("registered");
                let plan = ctx
                    .sql(&query)
                    .await
                    .expect("planned")
                    .create_physical_plan()
                    .await
                    .expect("a physical plan");
                (ctx, plan)
            })
        })
    });
    group.finish();
}

criterion_group!(benches, open);
criterion_main!(benches);
