//! `cardinality(list)` from the offsets of the whole batch.
//!
//! DataFusion's own `cardinality` walks a list column row by row, slicing
//! each row's values to count them, which costs more than reading the list
//! from the file (`WHERE cardinality(array_filter(Jet_pt, pt -> pt > 40)) >= 2`).
//! For a list whose items are not lists themselves the count is the
//! difference of two offsets; this function computes exactly that and hands
//! every other case (nested lists, maps, scalars) to DataFusion's function,
//! so the results are the same.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, UInt64Array};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::fast_path::FastPath;
use super::is_list;

/// `cardinality`, with the flat lists counted from their offsets.
pub fn cardinality() -> ScalarUDF {
    ScalarUDF::from(FastPath::new(
        datafusion::functions_nested::cardinality::cardinality_udf(),
        flat_lengths,
    ))
}

/// The lengths of a column of lists of non-list items; `None` for other
/// arguments.
fn flat_lengths(args: &[ColumnarValue]) -> Result<Option<ColumnarValue>> {
    let [ColumnarValue::Array(array)] = args else {
        return Ok(None);
    };
    let lengths = match array.data_type() {
        DataType::List(item) if !is_list(item.data_type()) => {
            array.as_any().downcast_ref().map(lengths::<i32>)
        }
        DataType::LargeList(item) if !is_list(item.data_type()) => {
            array.as_any().downcast_ref().map(lengths::<i64>)
        }
        _ => None,
    };
    Ok(lengths.map(ColumnarValue::Array))
}

/// Each row's number of items; null for a null row.
fn lengths<O: OffsetSizeTrait>(list: &GenericListArray<O>) -> ArrayRef {
    Arc::new(offset_lengths(list.offsets(), list.nulls()))
}

/// The lengths that `offsets` give, null where `nulls` is: the entries of
/// any list or map array.
pub(crate) fn offset_lengths<O: OffsetSizeTrait>(
    offsets: &OffsetBuffer<O>,
    nulls: Option<&NullBuffer>,
) -> UInt64Array {
    let values = offsets
        .windows(2)
        .map(|w| (w[1] - w[0]).as_usize() as u64)
        .collect::<Vec<_>>();
    UInt64Array::new(values.into(), nulls.cloned())
}
