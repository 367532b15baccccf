//! SQL over the same RNTuple file read two ways: from the local file system
//! (pages read from the file where they are needed) and from an object store
//! (pages fetched by byte range into memory first, as for remote storage).
//! Both must give the same batches, whether the object is fetched whole,
//! cluster by cluster, or in parts of clusters.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::UInt64Type;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rntuple::datafusion::{
    session_config, session_context_with_config, RNTupleReadOptions, SessionContextExt,
};

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file)
}

/// An in-memory object store holding the file at `path` as `data/file.root`
/// (`memory:///data/file.root`).
async fn memory_store_holding(path: &std::path::Path) -> Arc<InMemory> {
    let store = Arc::new(InMemory::new());
    let bytes = std::fs::read(path).unwrap();
    store
        .put(&Path::from("data/file.root"), PutPayload::from(bytes))
        .await
        .unwrap();
    store
}

async fn query(
    table: &str,
    options: RNTupleReadOptions,
    sql: &str,
    store: Option<Arc<dyn ObjectStore>>,
) -> RecordBatch {
    // One partition: the rows come in file order, comparable as they are.
    let ctx = session_context_with_config(session_config().with_target_partitions(1));
    if let Some(store) = store {
        let url = url::Url::parse("memory://").unwrap();
        ctx.register_object_store(&url, store);
    }
    ctx.register_rntuple("t", table, options).await.unwrap();
    let df = ctx.sql(sql).await.unwrap();
    let schema = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await.unwrap();
    concat_batches(&schema, &batches).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_file_and_an_object_store_give_the_same_batches() {
    let cases = [
        ("adl/nanoaod_clusters.root", "Events", "SELECT * FROM t"),
        ("clusters.root", "", "SELECT * FROM t"),
    ];
    for (file, ntuple, sql) in cases {
        let path = data(file);
        if !path.exists() {
            eprintln!("skipped: {} is absent", path.display());
            continue;
        }
        let mut options = RNTupleReadOptions::default();
        if !ntuple.is_empty() {
            options = options.with_ntuple(ntuple);
        }
        let local = query(path.to_str().unwrap(), options.clone(), sql, None).await;
        assert!(local.num_rows() > 0, "{file}: no rows");

        let store = memory_store_holding(&path).await;
        // Fetched whole (the default for small objects), then cluster by cluster.
        for limit in [None, Some(0)] {
            let mut options = options.clone();
            if let Some(limit) = limit {
                options.whole_file_limit = limit;
            }
            let remote = query(
                "memory:///data/file.root",
                options,
                sql,
                Some(store.clone() as Arc<dyn ObjectStore>),
            )
            .await;
            assert_eq!(local, remote, "{file}, whole_file_limit {limit:?}");
        }
    }
}

/// One cluster of 5,000 entries cut between three partitions: from an
/// object store each part fetches the pages its entries reach, and the
/// partitions, in order, give the local file's rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_cut_between_partitions_reads_the_same_from_an_object_store() {
    let path = data("adl/nanoaod_events.root");
    if !path.exists() {
        eprintln!("skipped: {} is absent", path.display());
        return;
    }
    let sql = "SELECT * FROM t";
    let options = RNTupleReadOptions::default().with_ntuple("Events");
    let local = query(path.to_str().unwrap(), options.clone(), sql, None).await;

    let store = memory_store_holding(&path).await;
    let mut options = options.with_min_piece_entries(500);
    options.whole_file_limit = 0;
    // Batches smaller than the file, and no least size for a split: else
    // DataFusion keeps this small input in one partition.
    let config = session_config()
        .with_target_partitions(3)
        .with_batch_size(1_000)
        .set_usize("datafusion.optimizer.repartition_file_min_size", 0);
    let ctx = session_context_with_config(config);
    ctx.register_object_store(&url::Url::parse("memory://").unwrap(), store);
    ctx.register_rntuple("t", "memory:///data/file.root", options)
        .await
        .unwrap();
    let text = common::explain(&ctx, sql).await;
    assert!(text.contains("3 groups"), "{text}");
    let df = ctx.sql(sql).await.unwrap();
    let schema = Arc::new(df.schema().as_arrow().clone());
    // Partitions may take each other's pieces: the batches, each a run of
    // entries in order, are put in order by their first event number.
    let mut batches: Vec<RecordBatch> = df
        .collect_partitioned()
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .filter(|b| b.num_rows() > 0)
        .collect();
    let first_event = |b: &RecordBatch| {
        let events = b.column_by_name("event").unwrap();
        events.as_primitive::<UInt64Type>().value(0)
    };
    batches.sort_by_key(first_event);
    let remote = concat_batches(&schema, &batches).unwrap();
    assert_eq!(local, remote);
}

/// `EXPLAIN ANALYZE` counts the rounds of fetches a scan waited for: one a
/// cluster when clusters are fetched whole, none for a local file or an
/// object held whole since it was opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_count_their_rounds_of_fetches() {
    let path = data("adl/nanoaod_clusters.root");
    if !path.exists() {
        eprintln!("skipped: {} is absent", path.display());
        return;
    }
    // `explain` puts EXPLAIN in front.
    let sql = "ANALYZE SELECT sum(MET_pt) FROM t";
    let rounds = |text: &str| -> usize {
        let after = text
            .split("fetch_rounds=")
            .nth(1)
            .unwrap_or_else(|| panic!("no fetch_rounds in {text}"));
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap()
    };
    let store = memory_store_holding(&path).await;
    let run = |table: String, whole_file_limit: u64| {
        let store = store.clone();
        async move {
            let ctx = session_context_with_config(session_config().with_target_partitions(1));
            ctx.register_object_store(&url::Url::parse("memory://").unwrap(), store);
            let options = RNTupleReadOptions {
                whole_file_limit,
                ..Default::default()
            };
            ctx.register_rntuple("t", &table, options).await.unwrap();
            common::explain(&ctx, sql).await
        }
    };
    let remote = || "memory:///data/file.root".to_string();
    let by_cluster = run(remote(), 0).await;
    assert_eq!(rounds(&by_cluster), 12, "{by_cluster}");
    let whole = run(remote(), u64::MAX).await;
    assert_eq!(rounds(&whole), 0, "{whole}");
    let local = run(path.to_str().unwrap().to_string(), 0).await;
    assert_eq!(rounds(&local), 0, "{local}");
}
