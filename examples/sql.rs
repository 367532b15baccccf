//! SQL over RNTuple files.
//!
//! ```text
//! cargo run --example sql -- tests/data/importer.root \
//!     "SELECT nMuon, count(*) AS n FROM events GROUP BY nMuon ORDER BY nMuon"
//! cargo run --example sql -- 'data/*.root' Events "SELECT avg(MET_pt) FROM events"
//! ```
//!
//! The files (a path, a directory, a glob or an object store URL) become the
//! table `events`; the optional second argument names the RNTuple to read.

use rntuple::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};

#[tokio::main]
async fn main() -> datafusion::error::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, ntuple, query) = match args.as_slice() {
        [path] => (path.as_str(), None, "SELECT * FROM events LIMIT 10"),
        [path, query] => (path.as_str(), None, query.as_str()),
        [path, ntuple, query] => (path.as_str(), Some(ntuple.clone()), query.as_str()),
        _ => {
            eprintln!("usage: sql PATH [NTUPLE] [QUERY]");
            std::process::exit(2);
        }
    };
    let ctx = session_context();
    let options = RNTupleReadOptions {
        ntuple,
        ..Default::default()
    };
    ctx.register_rntuple("events", path, options).await?;
    ctx.sql(query).await?.show().await?;
    Ok(())
}
