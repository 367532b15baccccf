//! Export an RNTuple to an Arrow IPC file, batch by batch, and read it back.
//!
//! ```text
//! cargo run --example export_ipc [FILE.root] [OUT.arrow]
//! ```
//!
//! Without arguments it exports `tests/data/adl/nanoaod_events.root` to
//! `nanoaod_events.arrow` in the system's temporary directory. The IPC file
//! opens directly in pyarrow (`pyarrow.ipc.open_file`), polars
//! (`pl.read_ipc`) or DuckDB.
//!
//! The batches are plain arrow-rs `RecordBatch`es, so they go straight into
//! arrow-rs' own IPC writer, buffers as they are. (`rntuple::export` wraps
//! the same loop for every format: `write_ipc_file(reader, out)`.)

use std::error::Error;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use arrow::ipc::reader::FileReader;
use arrow::ipc::writer::FileWriter;
use rntuple::RNTupleFile;

fn main() -> Result<(), Box<dyn Error>> {
    let default = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/adl/nanoaod_events.root"
    );
    let input = std::env::args()
        .nth(1)
        .unwrap_or_else(|| default.to_string());
    let output = std::env::args()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("nanoaod_events.arrow"));

    let reader = RNTupleFile::open(&input)?.reader_builder(None)?.build()?;

    // Stream every batch from the reader into the IPC writer as it is
    // decoded: memory stays at one batch, whatever the size of the file.
    let schema = arrow::record_batch::RecordBatchReader::schema(&reader);
    let mut writer = FileWriter::try_new(BufWriter::new(File::create(&output)?), &schema)?;
    let (mut rows, mut batches) = (0, 0);
    for batch in reader {
        let batch = batch?;
        rows += batch.num_rows();
        batches += 1;
        writer.write(&batch)?;
    }
    writer.finish()?;
    println!(
        "wrote {rows} entries in {batches} batches to {}",
        output.display()
    );

    // Read it back with arrow-rs' IPC reader: the RNTuple metadata travels along.
    let back = FileReader::try_new(File::open(&output)?, None)?;
    println!(
        "the file has {} record batches; schema:",
        back.num_batches()
    );
    let schema = back.schema();
    let mut metadata: Vec<_> = schema.metadata().iter().collect();
    metadata.sort();
    for (key, value) in metadata {
        println!("  [{key} = {value}]");
    }
    for field in back.schema().fields() {
        println!("  {}: {}", field.name(), field.data_type());
    }
    let read: usize = back
        .map(|b| b.map(|b| b.num_rows()))
        .sum::<Result<_, _>>()?;
    println!("{read} rows read back");
    Ok(())
}
