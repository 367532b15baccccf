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
//! straddle clusters. The top-level fields decode in parallel, each running
//! up to two batches ahead of the consumer (see `pipeline`).

mod builder;
mod ntuple;
mod pipeline;
mod schema_cache;
#[cfg(feature = "async")]
mod stream;

pub use builder::{RNTupleReaderBuilder, RNTupleRecordBatchReader};
pub use ntuple::{AttributeSetInfo, NTupleInfo, RNTuple, RNTupleFile};
pub use schema_cache::SchemaCache;
#[cfg(feature = "async")]
pub use stream::RNTupleRecordBatchStream;
