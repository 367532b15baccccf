//! `array_concat(a, b, ...)` of list columns by one gather of their values.
//!
//! DataFusion's own `array_concat` appends each row's lists one call at a
//! time through `MutableArrayData`; in Q8, which concatenates the muons and
//! electrons of every event into leptons (six lists, four-vectors among
//! them), that took an eighth of the query. When every argument is a list
//! column without null rows and all have the same item type, the result is
//! the values of all arguments side by side, gathered row by row with one
//! `take`: the new offsets are sums of lengths. Every other case (scalars,
//! null rows, mixed types, nesting to align) goes to DataFusion's function,
//! so the results are the same.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, UInt32Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field};
use datafusion::arrow::compute::{concat, take};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::fast_path::{columns, FastPath};

/// `array_concat` (and its aliases), with list columns joined by a gather.
pub fn array_concat() -> ScalarUDF {
    ScalarUDF::from(FastPath::new(
        datafusion::functions_nested::concat::array_concat_udf(),
        list_columns,
    ))
}

/// The concatenation of list columns (see [`lists`]); `None` for other
/// arguments.
fn list_columns(args: &[ColumnarValue]) -> Result<Option<ColumnarValue>> {
    let Some(arrays) = columns(args) else {
        return Ok(None);
    };
    let joined = match arrays.first().map(|a| a.data_type()) {
        Some(DataType::List(_)) => lists::<i32>(&arrays)?,
        Some(DataType::LargeList(_)) => lists::<i64>(&arrays)?,
        _ => None,
    };
    Ok(joined.map(ColumnarValue::Array))
}

/// The row-by-row concatenation of `arrays`, or `None` unless they are all
/// lists with offsets `O`, of one item type, of one length, without null
/// rows, and of fewer than 2^32 values in all.
fn lists<O: OffsetSizeTrait>(arrays: &[&ArrayRef]) -> Result<Option<ArrayRef>> {
    let lists: Option<Vec<&GenericListArray<O>>> = arrays
        .iter()
        .map(|a| a.as_any().downcast_ref::<GenericListArray<O>>())
        .collect();
    let Some(lists) = lists else {
        return Ok(None);
    };
    let Some(first) = lists.first() else {
        return Ok(None);
    };
    let (rows, item) = (first.len(), first.value_type());
    // DataFusion gives no rows the type of the first argument.
    if rows == 0 {
        return Ok(None);
    }
    if lists
        .iter()
        .any(|l| l.len() != rows || l.null_count() > 0 || l.value_type() != item)
    {
        return Ok(None);
    }
    // Each list's values from its first row's start to its last row's end,
    // and where they begin among all of them.
    let mut values = Vec::with_capacity(lists.len());
    let mut starts = Vec::with_capacity(lists.len());
    let mut total = 0usize;
    for list in &lists {
        let offsets = list.value_offsets();
        let (Some(&lo), Some(&hi)) = (offsets.first(), offsets.last()) else {
            return Ok(None);
        };
        let (lo, hi) = (lo.as_usize(), hi.as_usize());
        values.push(list.values().slice(lo, hi - lo));
        starts.push(total.wrapping_sub(lo));
        total += hi - lo;
    }
    if u32::try_from(total).is_err() {
        return Ok(None);
    }
    // Each list's offsets for these rows (one more than the rows), with
    // its start.
    let mut bounds: Vec<(&[O], usize)> = Vec::with_capacity(lists.len());
    for (list, &start) in lists.iter().zip(&starts) {
        let Some(o) = list.value_offsets().get(..=rows) else {
            return Ok(None);
        };
        bounds.push((o, start));
    }
    let mut indices: Vec<u32> = Vec::with_capacity(total);
    let mut offsets: Vec<O> = Vec::with_capacity(rows + 1);
    offsets.push(O::usize_as(0));
    // `start + k` is below `total`, which fits in u32.
    let take_row = |indices: &mut Vec<u32>, row: &[O], start: usize| {
        if let [from, to] = row {
            let (from, to) = (from.as_usize(), to.as_usize());
            indices.extend((from..to).map(|k| start.wrapping_add(k) as u32));
        }
    };
    if let [(a, sa), (b, sb)] = bounds[..] {
        // Two lists, as in electrons || muons: windows of two offsets give
        // each row's bounds without an index check. This loop was most of
        // the function's time in ADL Q8.
        for (ra, rb) in a.windows(2).zip(b.windows(2)) {
            take_row(&mut indices, ra, sa);
            take_row(&mut indices, rb, sb);
            offsets.push(O::usize_as(indices.len()));
        }
    } else {
        for row in 0..rows {
            for &(o, start) in &bounds {
                take_row(&mut indices, &o[row..row + 2], start);
            }
            offsets.push(O::usize_as(indices.len()));
        }
    }
    let values: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
    let values = take(&concat(&values)?, &UInt32Array::from(indices), None)?;
    let field = Arc::new(Field::new_list_field(item.clone(), true));
    Ok(Some(Arc::new(GenericListArray::<O>::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        values,
        None,
    )?)))
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{Float32Builder, Int64Builder, ListBuilder, StructBuilder};
    use arrow_array::cast::AsArray;
    use arrow_schema::Fields;
    use datafusion::common::ScalarValue;

    use super::super::fast_path::call;
    use super::*;

    /// Lists of floats, with null items when `null_items`, and of every
    /// length from 0 to 3.
    fn floats(seed: u32, rows: usize, null_items: bool) -> ArrayRef {
        let mut b = ListBuilder::new(Float32Builder::new());
        for r in 0..rows as u32 {
            for k in 0..(r * 7 + seed) % 4 {
                match (r + k + seed) % 5 {
                    0 if null_items => b.values().append_null(),
                    v => b.values().append_value((v * 10 + k + seed) as f32 / 3.0),
                }
            }
            b.append(true);
        }
        Arc::new(b.finish())
    }

    /// Lists of `{px, e}` structs.
    fn structs(seed: i64, rows: usize) -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("px", DataType::Int64, true),
            Field::new("e", DataType::Int64, true),
        ]);
        let mut b = ListBuilder::new(StructBuilder::from_fields(fields, 0));
        for r in 0..rows as i64 {
            for k in 0..(r + seed) % 3 {
                let s = b.values();
                s.field_builder::<Int64Builder>(0)
                    .expect("px")
                    .append_value(r * 10 + k);
                s.field_builder::<Int64Builder>(1)
                    .expect("e")
                    .append_value(-r - k);
                s.append(true);
            }
            b.append(true);
        }
        Arc::new(b.finish())
    }

    /// The same lists as DataFusion's `array_concat`, whole and sliced.
    #[test]
    fn joins_lists_as_datafusion_does() {
        let ours = array_concat();
        let theirs = datafusion::functions_nested::concat::array_concat_udf();
        let cases: Vec<Vec<ArrayRef>> = vec![
            vec![floats(1, 50, false), floats(2, 50, true)],
            vec![
                floats(3, 50, true),
                floats(4, 50, false),
                floats(5, 50, true),
            ],
            vec![structs(1, 50), structs(2, 50)],
            vec![floats(6, 50, false)],
        ];
        for arrays in cases {
            for (offset, len) in [(0, 50), (13, 30), (49, 1)] {
                let args: Vec<ColumnarValue> = arrays
                    .iter()
                    .map(|a| ColumnarValue::Array(a.slice(offset, len)))
                    .collect();
                let expected = call(theirs.inner().as_ref(), args.clone(), len);
                let actual = call(ours.inner().as_ref(), args, len);
                assert_eq!(actual.as_ref(), expected.as_ref(), "{offset}+{len}");
                actual.to_data().validate_full().expect("a valid array");
            }
        }
    }

    /// Null rows and scalars take DataFusion's path, with its results.
    #[test]
    fn hands_other_arguments_to_datafusion() {
        let ours = array_concat();
        let theirs = datafusion::functions_nested::concat::array_concat_udf();
        let mut b = ListBuilder::new(Float32Builder::new());
        b.append_value([Some(1.0), Some(2.0)]);
        b.append(false);
        b.append_value([Some(3.0)]);
        let with_null: ArrayRef = Arc::new(b.finish());
        let scalar = ScalarValue::try_from_array(&floats(1, 3, false), 2).expect("a scalar");
        for args in [
            vec![
                ColumnarValue::Array(with_null.clone()),
                ColumnarValue::Array(floats(2, 3, false)),
            ],
            vec![
                ColumnarValue::Array(floats(3, 3, false)),
                ColumnarValue::Scalar(scalar),
            ],
        ] {
            let expected = call(theirs.inner().as_ref(), args.clone(), 3);
            let actual = call(ours.inner().as_ref(), args, 3);
            assert_eq!(actual.as_ref(), expected.as_ref());
        }
        assert!(lists::<i32>(&[&with_null]).expect("no error").is_none());
        let plain = floats(1, 5, true);
        assert!(lists::<i32>(&[&plain, &plain]).expect("no error").is_some());
        let joined = call(
            ours.inner().as_ref(),
            vec![ColumnarValue::Array(floats(0, 4, false))],
            4,
        );
        assert_eq!(joined.as_list::<i32>().value_length(3), 1);
    }
}
