//! Opens an RNTuple file, prints its RNTuples, the Arrow schema of the
//! first one and its first entries.
//!
//!     cargo run --release --example quickstart -- tests/data/importer.root

use arrow::util::pretty::pretty_format_batches;
use rntuple::RNTupleFile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tests/data/importer.root".to_string());
    let file = RNTupleFile::open(&path)?;
    let ntuples = file.ntuples();
    for info in &ntuples {
        println!("{}: RNTuple format {:?}", info.path, info.version);
    }
    let Some(first) = ntuples.first() else {
        return Ok(());
    };
    let builder = file.reader_builder(Some(&first.path))?;
    println!("{} entries; schema:", builder.descriptor().n_entries);
    for field in builder.schema().fields() {
        println!("  {}: {}", field.name(), field.data_type());
    }
    let batches = builder.with_limit(5).build()?.collect_batches()?;
    println!("{}", pretty_format_batches(&batches)?);
    Ok(())
}
