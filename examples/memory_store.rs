//! SQL over an RNTuple file served by an in-memory object store: the reads
//! a remote store (S3, GCS, HTTP) gets, byte range by byte range, without
//! the network. Prints the time to register the table, each run's time and the scan's metrics (the plan's
//! file groups, bytes fetched, pages decoded).
//!
//! ```text
//! cargo run --release --example memory_store -- [OPTIONS] FILE "SELECT ... FROM events"
//!   --copies N           the table is N copies of the file (default 1)
//!   --min-piece N        the scan's `min_piece_entries`
//!                        (18446744073709551615 cuts only between clusters)
//!   --runs N             runs of the query (default 3)
//!   --latency-ms L --mb-per-s B
//!                        every request first waits L ms plus its bytes at
//!                        B MB/s (object_store's `ThrottledStore`), as from
//!                        a remote store
//! ```
//!
//! The file's only RNTuple is the table `events`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::throttle::{ThrottleConfig, ThrottledStore};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rntuple::datafusion::{
    session_config, session_context_with_config, RNTupleReadOptions, SessionContextExt,
};

fn usage() -> ! {
    eprintln!(
        "usage: memory_store [--copies N] [--min-piece N] [--runs N] \
         [--latency-ms L --mb-per-s B] FILE SQL"
    );
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> datafusion::error::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let (mut copies, mut runs) = (1u64, 3u64);
    let (mut min_piece, mut latency_ms, mut mb_per_s) = (None, None, None);
    while let Some(arg) = args.next() {
        let mut value = || -> u64 {
            let v = args.next().and_then(|v| v.parse().ok());
            v.unwrap_or_else(|| usage())
        };
        match arg.as_str() {
            "--copies" => copies = value(),
            "--runs" => runs = value(),
            "--min-piece" => min_piece = Some(value()),
            "--latency-ms" => latency_ms = Some(value()),
            "--mb-per-s" => mb_per_s = Some(value()),
            _ => positional.push(arg),
        }
    }
    let [file, sql] = positional.as_slice() else {
        usage()
    };

    let memory = Arc::new(InMemory::new());
    let bytes = PutPayload::from(std::fs::read(file)?);
    for k in 0..copies.max(1) {
        let path = Path::from(format!("table/file{k}.root"));
        memory.put(&path, bytes.clone()).await?;
    }
    let store: Arc<dyn ObjectStore> = match (latency_ms, mb_per_s) {
        (Some(latency_ms), Some(mb_per_s)) => Arc::new(ThrottledStore::new(
            memory,
            ThrottleConfig {
                wait_get_per_call: Duration::from_millis(latency_ms),
                wait_get_per_byte: Duration::from_secs_f64(1e-6 / mb_per_s.max(1) as f64),
                ..Default::default()
            },
        )),
        (None, None) => memory,
        _ => usage(),
    };
    let ctx = session_context_with_config(session_config());
    ctx.register_object_store(&url::Url::parse("memory://").unwrap(), store);
    let mut options = RNTupleReadOptions {
        // Fetched by ranges, as a large remote file is, not whole.
        whole_file_limit: 0,
        ..Default::default()
    };
    if let Some(min) = min_piece {
        options = options.with_min_piece_entries(min);
    }
    let started = Instant::now();
    ctx.register_rntuple("events", "memory:///table/", options)
        .await?;
    println!(
        "registered {} files in {:.4} s",
        copies.max(1),
        started.elapsed().as_secs_f64()
    );

    for run in 1..=runs {
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
