//! Open an RNTuple file, print its Arrow schema, and iterate over record batches.
//!
//! ```text
//! cargo run --example read_batches [FILE.root] [NTUPLE]
//! ```
//!
//! Without arguments it reads `tests/data/adl/nanoaod_events.root`, a small
//! NanoAOD-style file (event numbers, MET, jets and muons) written by ROOT.

use std::error::Error;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use rntuple::RNTupleFile;

fn main() -> Result<(), Box<dyn Error>> {
    let default = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/adl/nanoaod_events.root"
    );
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| default.to_string());
    let ntuple = std::env::args().nth(2);

    let file = RNTupleFile::open(&path)?;
    for info in file.ntuples() {
        println!("RNTuple {} (format {:?})", info.path, info.version);
    }

    // Metadata only so far: the schema is known before any page is read.
    let builder = file.reader_builder(ntuple.as_deref())?.with_batch_size(5);
    println!("{} entries; Arrow schema:", builder.ntuple().n_entries());
    for field in builder.schema().fields() {
        println!("  {}: {}", field.name(), field.data_type());
    }
    for skipped in &builder.ntuple().mapping().skipped {
        println!(
            "  (left out: {} {}: {})",
            skipped.name, skipped.type_name, skipped.reason
        );
    }

    let reader = builder.build()?;
    for (i, batch) in reader.enumerate() {
        let batch = batch?;
        println!(
            "batch {i}: {} rows, {} columns",
            batch.num_rows(),
            batch.num_columns()
        );
        // Columns are ordinary Arrow arrays; lists (RVec<float>) are ListArrays.
        if let Some(jets) = batch
            .column_by_name("Jet_pt")
            .and_then(|c| c.as_list_opt::<i32>())
        {
            let counts: Vec<usize> = (0..jets.len()).map(|row| jets.value(row).len()).collect();
            println!("  jets per event: {counts:?}");
        }
    }
    Ok(())
}
