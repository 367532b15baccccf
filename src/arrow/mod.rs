//! The Arrow side: the schema mapping and the assembly of arrays.
//!
//! ```text
//!  Descriptor ─ schema::map_descriptor ─> ArrowMapping { Schema, FieldNode tree, skipped }
//!  FieldNode + cluster ─ assemble::NodeReader ─> ArrayRef per batch
//! ```

pub mod assemble;
pub mod schema;

pub use schema::{map_descriptor, metadata, ArrowMapping, FieldNode, Leaf, NodeKind, SkippedField};
