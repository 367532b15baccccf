//! The validated, immutable description of one RNTuple.

mod column_type;

pub use column_type::{ColumnType, Encoding};
