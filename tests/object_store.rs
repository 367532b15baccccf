//! SQL over the same RNTuple file read two ways: from the local file system
//! (pages read from the file where they are needed) and from an object store
//! (pages fetched by byte range into memory first, as for remote storage).
//! Both must give the same batches, whether the object is fetched whole or
//! cluster by cluster.

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
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

        let store = Arc::new(InMemory::new());
        let bytes = std::fs::read(&path).unwrap();
        store
            .put(&Path::from("data/file.root"), PutPayload::from(bytes))
            .await
            .unwrap();
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
