//! SQL over an RNTuple file served by an in-memory object store: the reads
//! a remote store (S3, GCS, HTTP) gets, byte range by byte range, without
//! the network. Prints each run's time and the scan's metrics (bytes
//! fetched, pages decoded, the plan's file groups).
//!
//! ```text
//! cargo run --release --example memory_store -- FILE "SELECT ..." [MIN_PIECE_ENTRIES] [RUNS]
//! ```
//!
//! The file's only RNTuple is the table `events`.
//! `MIN_PIECE_ENTRIES` is the scan's `min_piece_entries`
//! (18446744073709551615 cuts only between clusters).

use std::sync::Arc;
use std::time::Instant;

use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use rntuple::datafusion::{
    session_config, session_context_with_config, RNTupleReadOptions, SessionContextExt,
};

#[tokio::main]
async fn main() -> datafusion::error::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, sql, rest @ ..] = args.as_slice() else {
        eprintln!("usage: memory_store FILE SQL [MIN_PIECE_ENTRIES] [RUNS]");
        std::process::exit(2);
    };
    let number = |i: usize| rest.get(i).and_then(|s| s.parse::<u64>().ok());
    let store = Arc::new(InMemory::new());
    store
        .put(
            &Path::from("file.root"),
            PutPayload::from(std::fs::read(file)?),
        )
        .await?;
    let ctx = session_context_with_config(session_config());
    ctx.register_object_store(&url::Url::parse("memory://").unwrap(), store);
    let mut options = RNTupleReadOptions {
        // Fetched by ranges, as a large remote file is, not whole.
        whole_file_limit: 0,
        ..Default::default()
    };
    if let Some(min) = number(0) {
        options = options.with_min_piece_entries(min);
    }
    ctx.register_rntuple("events", "memory:///file.root", options)
        .await?;
    for run in 1..=number(1).unwrap_or(3) {
        let started = Instant::now();
        let batches = ctx.sql(sql).await?.collect().await?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        println!(
            "run {run}: {rows} rows in {:.4} s",
            started.elapsed().as_secs_f64()
        );
    }
    let plan = ctx
        .sql(&format!("EXPLAIN ANALYZE {sql}"))
        .await?
        .collect()
        .await?;
    let text = arrow::util::pretty::pretty_format_batches(&plan)?.to_string();
    for line in text.lines().filter(|l| l.contains("DataSourceExec")) {
        let pick = |key: &str| {
            let at = line.find(key)?;
            let end = line[at..]
                .find([',', '}'])
                .map_or(line.len(), |e| at + e + 1);
            Some(&line[at..end])
        };
        for key in ["file_groups=", "bytes_scanned=", "pages_decoded="] {
            if let Some(found) = pick(key) {
                println!("{found}");
            }
        }
    }
    Ok(())
}
