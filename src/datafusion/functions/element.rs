//! `list[i]` (`array_element`) of a list column by one gather.
//!
//! DataFusion's own `array_element` copies each row's element through
//! `MutableArrayData`, a dynamic call per row; ADL queries pick elements of
//! whole columns (`pt[l]`, `i[b]`, `Muon_phi[1]`). For a list column with
//! 32-bit offsets and an `Int64` index (a column or a number), the element
//! of each row is found from the offsets and all are gathered with one
//! `take`, with DataFusion's rules: 1-based, negative from the end, null
//! when out of range or when the row or the index is null. Other arguments
//! go to DataFusion's function.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, UInt32Array};
use arrow_schema::DataType;
use datafusion::arrow::compute::take;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::fast_path::FastPath;

/// `array_element` (and `list[i]`), with list columns gathered at once.
pub fn array_element() -> ScalarUDF {
    ScalarUDF::from(FastPath::new(
        datafusion::functions_nested::extract::array_element_udf(),
        element_column,
    ))
}

/// The elements of a list column at `Int64` indices; `None` for other
/// arguments and for indices beyond 32 bits (DataFusion's function refuses
/// them with its error).
fn element_column(args: &[ColumnarValue]) -> Result<Option<ColumnarValue>> {
    let [ColumnarValue::Array(list), index] = args else {
        return Ok(None);
    };
    let Some(list) = list.as_list_opt::<i32>() else {
        return Ok(None);
    };
    if list.values().data_type() == &DataType::Null {
        return Ok(None);
    }
    let rows = list.len();
    let indices: Vec<Option<i64>> = match index {
        ColumnarValue::Scalar(ScalarValue::Int64(i)) => vec![*i; rows],
        ColumnarValue::Array(a) if a.len() == rows => match a.as_primitive_opt::<Int64Type>() {
            Some(a) => a.iter().collect(),
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    if indices.iter().flatten().any(|&i| i32::try_from(i).is_err()) {
        return Ok(None);
    }
    let offsets = list.value_offsets();
    let positions: UInt32Array = indices
        .iter()
        .zip(offsets.windows(2))
        .enumerate()
        .map(|(row, (&i, w))| {
            let (start, len) = (i64::from(w[0]), i64::from(w[1] - w[0]));
            let i = i.filter(|_| list.is_valid(row))?;
            let k = if i < 0 { i + len } else { i - 1 };
            // Within the row, so within the values, which 32-bit offsets
            // keep below 2^31.
            (0..len).contains(&k).then(|| (start + k) as u32)
        })
        .collect();
    Ok(Some(ColumnarValue::Array(take(
        list.values().as_ref(),
        &positions,
        None,
    )?)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Float32Builder, ListBuilder};
    use arrow_array::{ArrayRef, Int64Array};

    use super::super::fast_path::call;
    use super::*;

    /// Rows of 0 to 4 floats, some of them null, some rows null.
    fn lists(rows: usize) -> ArrayRef {
        let mut b = ListBuilder::new(Float32Builder::new());
        for r in 0..rows {
            for k in 0..(r * 3) % 5 {
                match (r + k) % 7 {
                    0 => b.values().append_null(),
                    v => b.values().append_value((v * 10 + k) as f32),
                }
            }
            b.append(r % 11 != 5);
        }
        Arc::new(b.finish())
    }

    /// The same elements as DataFusion's `array_element`, for indices in and
    /// out of range, negative, zero and null, as columns and as numbers, on
    /// whole and sliced lists.
    #[test]
    fn picks_what_datafusion_picks() {
        let ours = array_element();
        let theirs = datafusion::functions_nested::extract::array_element_udf();
        let all = lists(60);
        let index_column: ArrayRef = Arc::new(Int64Array::from_iter((0..60).map(|r| {
            (r % 13 != 4).then_some((r as i64 % 9) - 5) // -5..=3, with nulls
        })));
        for (offset, len) in [(0, 60), (7, 40), (59, 1)] {
            let list = ColumnarValue::Array(all.slice(offset, len));
            let mut indices = vec![ColumnarValue::Array(index_column.slice(offset, len))];
            for i in [Some(1), Some(2), Some(-1), Some(0), Some(9), None] {
                indices.push(ColumnarValue::Scalar(ScalarValue::Int64(i)));
            }
            for index in indices {
                let args = vec![list.clone(), index];
                assert!(element_column(&args).expect("no error").is_some());
                let expected = call(theirs.inner().as_ref(), args.clone(), len);
                let actual = call(ours.inner().as_ref(), args, len);
                assert_eq!(actual.as_ref(), expected.as_ref(), "{offset}+{len}");
            }
        }
    }

    /// Indices beyond 32 bits get DataFusion's error.
    #[test]
    fn leaves_wide_indices_to_datafusion() {
        let args = vec![
            ColumnarValue::Array(lists(3)),
            ColumnarValue::Scalar(ScalarValue::Int64(Some(1 << 40))),
        ];
        assert!(element_column(&args).expect("no error").is_none());
    }
}
