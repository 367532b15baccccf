//! The SQL scan decodes flat columns several batches at a time and cuts
//! them to the session's batch size; lists are read batch by batch. Either
//! way the batches must not exceed the session's size and must hold what the
//! library reads.

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::compute::concat_batches;
use rntuple::datafusion::{
    session_config, session_context_with_config, RNTupleReadOptions, SessionContextExt,
};
use rntuple::RNTupleFile;

/// 5,000 events in 12 clusters of 417-470 entries.
fn file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/adl/nanoaod_clusters.root")
}

fn library(fields: &[&str]) -> RecordBatch {
    let file = RNTupleFile::open(file()).unwrap();
    let reader = file
        .reader_builder(Some("Events"))
        .unwrap()
        .with_projection(fields.iter().copied())
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches = reader.collect_batches().unwrap();
    concat_batches(&schema, &batches).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_batches_keep_the_session_size_and_the_library_values() {
    let projections: [&[&str]; 3] = [
        &["MET_pt", "run", "event", "HLT_IsoMu24"],
        &["nJet"],
        &["MET_pt", "Jet_pt", "Muon_charge"],
    ];
    for fields in projections {
        let expected = library(fields);
        for batch_size in [1, 100, 333, 8192] {
            // One partition: the rows come in file order.
            let config = session_config()
                .with_target_partitions(1)
                .with_batch_size(batch_size);
            let ctx = session_context_with_config(config);
            let options = RNTupleReadOptions::default().with_ntuple("Events");
            ctx.register_rntuple("t", file().to_str().unwrap(), options)
                .await
                .unwrap();
            let sql = format!("SELECT {} FROM t", fields.join(", "));
            let df = ctx.sql(&sql).await.unwrap();
            let schema = Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await.unwrap();
            let what = format!("{fields:?} in batches of {batch_size}");
            assert!(
                batches.iter().all(|b| b.num_rows() <= batch_size),
                "{what}: {:?}",
                batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>()
            );
            // Clusters of at least 417 entries give full batches of 333.
            if batch_size == 333 {
                assert!(batches.iter().any(|b| b.num_rows() == 333), "{what}");
            }
            let got = concat_batches(&schema, &batches).unwrap();
            assert_eq!(got.num_rows(), 5000, "{what}");
            for (i, name) in fields.iter().enumerate() {
                assert_eq!(got.column(i), expected.column(i), "{what}: {name}");
            }
        }
    }
}
