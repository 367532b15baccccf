//! Opening files and reading RNTuples as Arrow record batches.
//!
//! ```text
//!  RNTupleFile::open(path) ── ntuples() ──> [NTupleInfo { path, name, version }]
//!        │
//!        └─ reader_builder("Events") ─> RNTupleReaderBuilder
//!              .schema() .descriptor()                  (metadata only: anchor, header, footer)
//!              .with_projection(["Muon_pt", "Jet.pt"])
//!              .with_entry_range(a..b) .with_clusters(..) .with_batch_size(n)
//!              .build() ─> RNTupleRecordBatchReader: Iterator<Item = Result<RecordBatch>>
//!                             .into_stream() ─> RNTupleRecordBatchStream: Stream (feature `async`)
//! ```
//!
//! Page lists are read on first use, per cluster group. Batches never
//! straddle clusters; the top-level fields of a batch decode in parallel.

mod builder;
mod ntuple;
#[cfg(feature = "async")]
mod stream;

pub use builder::{RNTupleReaderBuilder, RNTupleRecordBatchReader};
pub use ntuple::{AttributeSetInfo, NTupleInfo, RNTuple, RNTupleFile};
#[cfg(feature = "async")]
pub use stream::RNTupleRecordBatchStream;
