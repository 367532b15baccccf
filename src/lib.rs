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
//!    -> pages: fetch -> decompress -> decode      compression, encoding
//!    -> Arrow arrays assembled per field tree     arrow: schema mapping + assembly
//!    -> RecordBatch iterator                      reader
//! ```
//!
//! Each layer uses only the layers above it: `container`, `envelope`,
//! `descriptor`, `compression` and `encoding` know nothing of Arrow.

pub mod compression;
pub mod container;
pub mod cursor;
pub mod descriptor;
pub mod encoding;
pub mod envelope;
pub mod error;
pub mod io;

pub use error::{Error, Result};
