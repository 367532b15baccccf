//! # rntuple
//!
//! Read CERN ROOT's RNTuple columnar format straight into Apache Arrow.
//!
//! ```text
//!  bytes (file, mmap, memory)                     io: ReadAt
//!    -> ROOT file: header, keys, directories      container: find the anchors
//!    -> anchor (big-endian, XXH3)                 container::anchor
//!    -> header / footer / page-list envelopes     envelope: frames, locators, checksums
//!    -> Descriptor (fields, columns, clusters)    descriptor: validated, Arc-shared
//!    -> pages: fetch -> decompress -> decode      page, compression, encoding
//!    -> Arrow arrays assembled per field tree     arrow: schema mapping + assembly
//!    -> RecordBatch iterator                      reader
//! ```
//!
//! Each layer uses only the layers above it: `container`, `envelope`,
//! `descriptor`, `compression`, `encoding` and `page` know nothing of Arrow.
//!
//! ```no_run
//! use rntuple::RNTupleFile;
//! let file = RNTupleFile::open("events.root")?;
//! let reader = file.reader_builder(None)?.with_projection(["nMuon"])?.build()?;
//! for batch in reader {
//!     let batch = batch?;
//!     println!("{} entries", batch.num_rows());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod arrow;
mod checksum;
pub mod compression;
pub mod container;
pub mod cursor;
#[cfg(feature = "datafusion")]
pub mod datafusion;
pub mod descriptor;
pub mod encoding;
pub mod envelope;
pub mod error;
pub mod export;
pub mod io;
pub mod page;
pub mod reader;
#[cfg(test)]
mod test_util;

pub use error::{Error, Result};
pub use page::{Limits, ReadStats};
#[cfg(feature = "async")]
pub use reader::RNTupleRecordBatchStream;
pub use reader::{
    NTupleInfo, RNTuple, RNTupleFile, RNTupleReaderBuilder, RNTupleRecordBatchReader, SchemaCache,
};
