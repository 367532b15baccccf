//! `list_select(list, positions)`: the elements of each row's list at the
//! 1-based positions of another list, as DuckDB's function of that name.
//!
//! ```text
//!  list_select([10, 20, 30], [3, 1, 1]) -> [30, 10, 10]
//!  list_select([10, 20], [0, 3, NULL])  -> [NULL, NULL, NULL]   (outside the list)
//!  list_select(NULL, [1]) -> NULL,  list_select([1], NULL) -> NULL
//! ```
//!
//! With the index lists of `pairs` and `triples` it gathers the objects of
//! every combination at once, over the whole batch (one `take` of the
//! values), so that the HEP functions can work element by element:
//!
//! ```sql
//! SELECT inv_mass(list_select(Muon_pt, i), list_select(Muon_eta, i), ...,
//!                 list_select(Muon_pt, j), ...)
//! FROM (SELECT *, array_transform(pairs(nMuon), p -> p['i']) AS i, ... FROM events)
//! ```
//!
//! This replaces lambdas that capture list columns (`Jet_pt[c['i']]` inside
//! `array_transform`), which copy each row's lists once per element.

use std::sync::Arc;

use arrow::compute::take;
use arrow_array::{Array, ArrayRef, ListArray, UInt32Array, UInt64Array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field};
use datafusion::common::cast::{as_int64_array, as_list_array};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// `list_select(list, positions)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ListSelect {
    signature: Signature,
    aliases: Vec<String>,
}

impl ListSelect {
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            aliases: vec!["array_select".to_string()],
        }
    }
}

impl Default for ListSelect {
    fn default() -> Self {
        Self::new()
    }
}

fn item_of(dt: &DataType) -> Option<&Arc<Field>> {
    match dt {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => Some(f),
        _ => None,
    }
}

impl ScalarUDFImpl for ListSelect {
    fn name(&self) -> &str {
        "list_select"
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [list, positions] = arg_types else {
            return Err(DataFusionError::Plan(
                "list_select takes a list and a list of positions".into(),
            ));
        };
        let (Some(item), Some(pos)) = (item_of(list), item_of(positions)) else {
            return Err(DataFusionError::Plan(format!(
                "list_select takes a list and a list of positions, not {list} and {positions}"
            )));
        };
        if !(pos.data_type().is_integer() || pos.data_type() == &DataType::Null) {
            return Err(DataFusionError::Plan(format!(
                "list_select: positions must be integers, not {}",
                pos.data_type()
            )));
        }
        Ok(vec![
            DataType::List(Arc::new(Field::new_list_field(
                item.data_type().clone(),
                true,
            ))),
            DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
        ])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let item = arg_types
            .first()
            .and_then(item_of)
            .map_or(DataType::Null, |f| f.data_type().clone());
        Ok(DataType::List(Arc::new(Field::new_list_field(item, true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [list, positions] = args.args.as_slice() else {
            return Err(DataFusionError::Internal(
                "list_select takes two arguments".into(),
            ));
        };
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { args.number_rows };
        let list = list.clone().into_array(n)?;
        let positions = positions.clone().into_array(n)?;
        let result = select(as_list_array(&list)?, as_list_array(&positions)?)?;
        if all_scalar {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&result, 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(result))
        }
    }
}

/// The gather itself: one index into `list`'s values per position, then
/// one `take`.
fn select(list: &ListArray, positions: &ListArray) -> Result<ArrayRef> {
    if list.len() != positions.len() {
        return Err(DataFusionError::Internal(format!(
            "list_select: {} lists but {} position lists",
            list.len(),
            positions.len()
        )));
    }
    let (values, nulls) = match gather_in_range(list, positions)? {
        // Every position inside its list (the usual case): no null masks.
        Some(indices) => (take(list.values().as_ref(), &indices, None)?, None),
        None => {
            let (indices, valid) = gather_checked(list, positions)?;
            let values = take(list.values().as_ref(), &indices, None)?;
            (values, Some(NullBuffer::from(valid)))
        }
    };
    // The positions' offsets, rebased to zero, shape the result.
    let item = Arc::new(Field::new_list_field(values.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(
        item,
        super::rebased(positions.offsets()),
        values,
        nulls,
    )?))
}

/// The indices into `list`'s values of every position, when there are no
/// nulls and every position lies within its row's list; `None` otherwise.
fn gather_in_range(list: &ListArray, positions: &ListArray) -> Result<Option<UInt32Array>> {
    let pos = as_int64_array(positions.values())?;
    if list.null_count() > 0 || positions.null_count() > 0 || pos.null_count() > 0 {
        return Ok(None);
    }
    // Offsets are i32, so every index fits in a u32.
    let (list_offsets, pos_offsets, pos) = (list.offsets(), positions.offsets(), pos.values());
    let first = pos_offsets.first().copied().unwrap_or(0) as usize;
    let last = pos_offsets.last().copied().unwrap_or(0) as usize;
    let mut indices: Vec<u32> = Vec::with_capacity(last - first);
    for (list_range, pos_range) in list_offsets.windows(2).zip(pos_offsets.windows(2)) {
        let (start, len) = (list_range[0] as i64, (list_range[1] - list_range[0]) as i64);
        let row = pos
            .get(pos_range[0] as usize..pos_range[1] as usize)
            .unwrap_or_default();
        for &p in row {
            if p < 1 || p > len {
                return Ok(None);
            }
            indices.push((start + p - 1) as u32);
        }
    }
    Ok(Some(UInt32Array::from(indices)))
}

/// The indices into `list`'s values of every position, null for a null
/// position or one outside its list, and whether each row is valid.
fn gather_checked(list: &ListArray, positions: &ListArray) -> Result<(UInt64Array, Vec<bool>)> {
    let pos = as_int64_array(positions.values())?;
    let (list_offsets, pos_offsets) = (list.offsets(), positions.offsets());
    let mut indices: Vec<Option<u64>> = Vec::with_capacity(pos.len());
    let mut valid = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        let row_valid = list.is_valid(row) && positions.is_valid(row);
        valid.push(row_valid);
        let (start, end) = (list_offsets[row] as i64, list_offsets[row + 1] as i64);
        let len = end - start;
        for k in pos_offsets[row] as usize..pos_offsets[row + 1] as usize {
            let p = pos.is_valid(k).then(|| pos.value(k));
            indices.push(match p {
                Some(p) if row_valid && p >= 1 && p <= len => Some((start + p - 1) as u64),
                _ => None,
            });
        }
    }
    Ok((UInt64Array::from(indices), valid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Int64Type};

    #[test]
    fn gathers_by_one_based_position() {
        let list = ListArray::from_iter_primitive::<Float32Type, _, _>(vec![
            Some(vec![Some(10.0), Some(20.0), Some(30.0)]),
            Some(vec![Some(1.0)]),
            None,
        ]);
        let positions = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(3), Some(1), Some(1)]),
            Some(vec![Some(0), Some(2), None, Some(1)]),
            Some(vec![Some(1)]),
        ]);
        let out = select(&list, &positions).unwrap();
        let out = out.as_list::<i32>();
        assert_eq!(out.len(), 3);
        let row = |r: usize| -> Vec<Option<f32>> {
            out.value(r).as_primitive::<Float32Type>().iter().collect()
        };
        assert_eq!(row(0), vec![Some(30.0), Some(10.0), Some(10.0)]);
        assert_eq!(row(1), vec![None, None, None, Some(1.0)]);
        assert!(out.is_null(2));
    }

    #[test]
    fn slices_of_lists_gather_from_their_own_rows() {
        // Positions all inside their lists (the gather without null masks),
        // on arrays sliced so that their offsets do not start at zero.
        let list = ListArray::from_iter_primitive::<Float32Type, _, _>(vec![
            Some(vec![Some(-1.0)]),
            Some(vec![Some(10.0), Some(20.0), Some(30.0)]),
            Some(vec![]),
            Some(vec![Some(1.0), Some(2.0)]),
        ])
        .slice(1, 3);
        let positions = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(9)]),
            Some(vec![Some(3), Some(1)]),
            Some(vec![]),
            Some(vec![Some(2), Some(2), Some(1)]),
        ])
        .slice(1, 3);
        let out = select(&list, &positions).unwrap();
        let out = out.as_list::<i32>();
        assert_eq!(out.null_count(), 0);
        let rows: Vec<Vec<Option<f32>>> = (0..out.len())
            .map(|r| out.value(r).as_primitive::<Float32Type>().iter().collect())
            .collect();
        assert_eq!(
            rows,
            vec![
                vec![Some(30.0), Some(10.0)],
                vec![],
                vec![Some(2.0), Some(2.0), Some(1.0)]
            ]
        );
        // One position outside its list: that element alone is null.
        let positions = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(3), Some(4)]),
            Some(vec![]),
            Some(vec![Some(1)]),
        ]);
        let out = select(&list, &positions).unwrap();
        let out = out.as_list::<i32>();
        let first: Vec<Option<f32>> = out.value(0).as_primitive::<Float32Type>().iter().collect();
        assert_eq!(first, vec![Some(30.0), None]);
        assert_eq!(out.value(2).as_primitive::<Float32Type>().value(0), 1.0);
    }
}
