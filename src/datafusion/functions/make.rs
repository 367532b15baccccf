//! `make_array(a, b, ...)` (`[a, b, ...]`) of columns by one gather.
//!
//! DataFusion's own `make_array` copies each row's elements through
//! `MutableArrayData`, a call per element; Q6 builds `[i[b], j[b], k[b]]`
//! for every event. When every argument is a column of one type, the rows'
//! lists all have one element per argument: the offsets are multiples of
//! their count and the values are the arguments taken row by row with one
//! `take`. Other arguments (numbers, mixed or null types) go to DataFusion's
//! function.

use std::sync::Arc;

use arrow_array::{Array, ListArray, UInt32Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field};
use datafusion::arrow::compute::{concat, take};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::fast_path::{columns, FastPath};

/// `make_array` (and `[a, b, ...]`), with columns gathered at once.
pub fn make_array() -> ScalarUDF {
    ScalarUDF::from(FastPath::new(
        datafusion::functions_nested::make_array::make_array_udf(),
        rows_of_columns,
    ))
}

/// The lists of each row's values of `args`; `None` unless they are all
/// columns of one type (not the null type), of one length, with fewer than
/// 2^31 values in all.
fn rows_of_columns(args: &[ColumnarValue]) -> Result<Option<ColumnarValue>> {
    let Some(arrays) = columns(args) else {
        return Ok(None);
    };
    let Some(first) = arrays.first() else {
        return Ok(None);
    };
    let (rows, item) = (first.len(), first.data_type());
    let n = arrays.len();
    if item == &DataType::Null
        || arrays
            .iter()
            .any(|a| a.len() != rows || a.data_type() != item)
        || rows
            .checked_mul(n)
            .is_none_or(|total| i32::try_from(total).is_err())
    {
        return Ok(None);
    }
    // Row r's k-th value is argument k's r-th, at k * rows + r of them all.
    let positions: UInt32Array = (0..rows)
        .flat_map(|r| (0..n).map(move |k| (k * rows + r) as u32))
        .collect();
    let all: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
    let values = take(&concat(&all)?, &positions, None)?;
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(n, rows));
    let field = Arc::new(Field::new_list_field(item.clone(), true));
    Ok(Some(ColumnarValue::Array(Arc::new(ListArray::try_new(
        field, offsets, values, None,
    )?))))
}

#[cfg(test)]
mod tests {
    use arrow_array::{ArrayRef, Float64Array, Int64Array};
    use datafusion::common::ScalarValue;

    use super::super::fast_path::call;
    use super::*;

    /// The same lists as DataFusion's `make_array`, with null values, one
    /// to three columns, whole and sliced; numbers go to DataFusion's.
    #[test]
    fn builds_what_datafusion_builds() {
        let ours = make_array();
        let theirs = datafusion::functions_nested::make_array::make_array_udf();
        let ints = |seed: i64| -> ArrayRef {
            Arc::new(Int64Array::from_iter(
                (0..40).map(|r| (r % 7 != seed).then_some(r * 10 + seed)),
            ))
        };
        let floats: ArrayRef = Arc::new(Float64Array::from_iter(
            (0..40).map(|r| Some(r as f64 / 3.0)),
        ));
        let cases: Vec<Vec<ArrayRef>> = vec![
            vec![ints(1)],
            vec![ints(1), ints(2), ints(3)],
            vec![floats.clone(), floats],
        ];
        for arrays in cases {
            for (offset, len) in [(0, 40), (9, 20), (39, 1)] {
                let args: Vec<ColumnarValue> = arrays
                    .iter()
                    .map(|a| ColumnarValue::Array(a.slice(offset, len)))
                    .collect();
                assert!(rows_of_columns(&args).expect("no error").is_some());
                let expected = call(theirs.inner().as_ref(), args.clone(), len);
                let actual = call(ours.inner().as_ref(), args, len);
                assert_eq!(actual.as_ref(), expected.as_ref(), "{offset}+{len}");
            }
        }
        let mixed = vec![
            ColumnarValue::Array(ints(1)),
            ColumnarValue::Scalar(ScalarValue::Int64(Some(5))),
        ];
        assert!(rows_of_columns(&mixed).expect("no error").is_none());
        let expected = call(theirs.inner().as_ref(), mixed.clone(), 40);
        assert_eq!(
            call(ours.inner().as_ref(), mixed, 40).as_ref(),
            expected.as_ref()
        );
    }
}
