//! Sixteen SQL queries at once in one session give the same results as the
//! same queries run one by one, and the reader types can be shared between
//! threads.

#![cfg(feature = "datafusion")]

use std::path::PathBuf;

use arrow::util::pretty::pretty_format_batches;
use rntuple::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};

fn adl(query: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("benches/adl")
        .join(format!("{query}.sql"));
    std::fs::read_to_string(path).unwrap()
}

/// The queries: the nine ADL queries, each summarised so that the results
/// compare exactly whatever order the rows come in, and a few more. Sums
/// are of whole numbers (x rounded to 1/1000), exact in any order.
fn queries() -> Vec<String> {
    let mut out: Vec<String> = ["q1", "q2", "q3", "q4", "q5", "q6a", "q6b", "q7", "q8"]
        .iter()
        .map(|q| {
            format!(
                "SELECT count(*), sum(round(x * 1000)), min(x), max(x) FROM ({})",
                adl(q)
            )
        })
        .collect();
    out.extend(
        [
            "SELECT nJet, count(*), sum(round(MET_pt * 1000)) FROM events GROUP BY nJet ORDER BY nJet",
            "SELECT count(*) FROM events WHERE HLT_IsoMu24",
            "SELECT sum(cardinality(Muon_pt)), sum(nMuon) FROM events",
            "SELECT event FROM events ORDER BY MET_pt DESC LIMIT 5",
            "SELECT max(Jet_pt[1]), min(Electron_eta[1]) FROM events",
            "SELECT count(DISTINCT run), count(DISTINCT luminosityBlock) FROM events",
            "SELECT a.event FROM events a JOIN events b ON a.event = b.event + 1 ORDER BY a.event LIMIT 3",
        ]
        .map(String::from),
    );
    out
}

async fn context() -> datafusion::prelude::SessionContext {
    let ctx = session_context();
    for (name, file) in [("events", "nanoaod_clusters.root")] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/adl")
            .join(file);
        ctx.register_rntuple(
            name,
            path.to_str().unwrap(),
            RNTupleReadOptions::default().with_ntuple("Events"),
        )
        .await
        .unwrap();
    }
    ctx
}

async fn run(ctx: &datafusion::prelude::SessionContext, sql: &str) -> String {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_queries_at_once_agree_with_one_by_one() {
    let queries = queries();
    assert_eq!(queries.len(), 16);
    let ctx = context().await;
    let mut alone = Vec::new();
    for q in &queries {
        alone.push(run(&ctx, q).await);
    }
    let handles: Vec<_> = queries
        .iter()
        .cloned()
        .map(|q| {
            let ctx = ctx.clone();
            tokio::spawn(async move { run(&ctx, &q).await })
        })
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        let together = handle.await.unwrap();
        assert_eq!(together, alone[i], "query {i}: {}", queries[i]);
    }
}

#[test]
fn reader_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<rntuple::RNTupleFile>();
    send_sync::<rntuple::RNTuple>();
    send_sync::<rntuple::RNTupleReaderBuilder>();
    send::<rntuple::RNTupleRecordBatchReader>();
    send_sync::<rntuple::datafusion::RNTupleFormat>();
}
