//! `pairs(n)` and `triples(n)`: the distinct index combinations of each
//! row's objects.
//!
//! ```text
//!  pairs(3)   -> [{i: 1, j: 2}, {i: 1, j: 3}, {i: 2, j: 3}]
//!  triples(4) -> [{i: 1, j: 2, k: 3}, {i: 1, j: 2, k: 4}, {i: 1, j: 3, k: 4}, {i: 2, j: 3, k: 4}]
//!  pairs(Muon_pt)  = pairs(cardinality(Muon_pt))
//! ```
//!
//! Indices are 1-based, as SQL list access (`Muon_pt[p.i]`) wants them.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, ListArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The most combinations one row may produce.
const MAX_PER_ROW: u64 = 1 << 26;

/// `pairs(n)` (k = 2) or `triples(n)` (k = 3).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Combinations {
    name: &'static str,
    k: usize,
    signature: Signature,
}

impl Combinations {
    /// `pairs(n)`: `List<Struct{i, j}>` with i < j.
    pub fn pairs() -> Self {
        Self::new("pairs", 2)
    }

    /// `triples(n)`: `List<Struct{i, j, k}>` with i < j < k.
    pub fn triples() -> Self {
        Self::new("triples", 3)
    }

    fn new(name: &'static str, k: usize) -> Self {
        Self {
            name,
            k,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    fn fields(&self) -> Fields {
        ["i", "j", "k"]
            .iter()
            .take(self.k)
            .map(|n| Field::new(*n, DataType::Int64, false))
            .collect()
    }

    fn item(&self) -> Arc<Field> {
        Arc::new(Field::new_list_field(DataType::Struct(self.fields()), true))
    }
}

/// The number of combinations of `k` (2 or 3) of `n` objects, saturating.
fn choose(n: u64, k: usize) -> u64 {
    let pairs = n.saturating_mul(n.saturating_sub(1));
    match k {
        2 => pairs / 2,
        _ => pairs.saturating_mul(n.saturating_sub(2)) / 6,
    }
}

impl ScalarUDFImpl for Combinations {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [dt] if dt.is_integer() || dt == &DataType::Null => Ok(vec![DataType::Int64]),
            [dt @ (DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _))] => {
                Ok(vec![dt.clone()])
            }
            _ => Err(DataFusionError::Plan(format!(
                "{}(n) takes one integer or list argument, not ({})",
                self.name,
                arg_types
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(self.item()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(DataFusionError::Internal(format!(
                "{} takes one argument",
                self.name
            )));
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let array = arg
            .clone()
            .into_array(if scalar { 1 } else { args.number_rows })?;
        let counts = counts(&array)?;
        let list = self.build(&counts)?;
        if scalar {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&list, 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(list))
        }
    }
}

/// The number of objects of each row (`None` for null).
fn counts(array: &ArrayRef) -> Result<Vec<Option<u64>>> {
    let len = |i: usize, n: usize| (!array.is_null(i)).then_some(n as u64);
    Ok(match array.data_type() {
        DataType::Int64 => {
            let a = array
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or_else(|| DataFusionError::Internal("expected Int64".into()))?;
            a.iter().map(|v| v.map(|v| v.max(0) as u64)).collect()
        }
        DataType::List(_) => {
            let a = array
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or_else(|| DataFusionError::Internal("expected List".into()))?;
            (0..a.len())
                .map(|i| len(i, a.value_length(i) as usize))
                .collect()
        }
        DataType::LargeList(_) => {
            let a = array
                .as_any()
                .downcast_ref::<arrow_array::LargeListArray>()
                .ok_or_else(|| DataFusionError::Internal("expected LargeList".into()))?;
            (0..a.len())
                .map(|i| len(i, a.value_length(i) as usize))
                .collect()
        }
        DataType::FixedSizeList(_, n) => (0..array.len()).map(|i| len(i, *n as usize)).collect(),
        DataType::Null => vec![None; array.len()],
        other => {
            return Err(DataFusionError::Internal(format!(
                "unexpected argument type {other}"
            )))
        }
    })
}

impl Combinations {
    fn build(&self, counts: &[Option<u64>]) -> Result<ArrayRef> {
        // The sizes first, each row's and the total checked before any
        // combination is made.
        let too_large = || DataFusionError::Execution(format!("{}: result too large", self.name));
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        offsets.push(0i32);
        let mut total = 0i32;
        for &n in counts {
            let n = n.unwrap_or(0);
            let count = choose(n, self.k);
            if count > MAX_PER_ROW {
                return Err(DataFusionError::Execution(format!(
                    "{}({n}) would give {count} combinations",
                    self.name
                )));
            }
            total = i32::try_from(count)
                .ok()
                .and_then(|count| total.checked_add(count))
                .ok_or_else(too_large)?;
            offsets.push(total);
        }
        let mut cols: Vec<Vec<i64>> = (0..self.k)
            .map(|_| Vec::with_capacity(total as usize))
            .collect();
        // The combinations of n objects, made once for each small n met
        // and copied for every row of n.
        let mut made: Vec<Option<Vec<Vec<i64>>>> = Vec::new();
        for &n in counts {
            let n = n.unwrap_or(0);
            if choose(n, self.k) == 0 {
                continue;
            }
            match usize::try_from(n) {
                Ok(small) if small < KEPT => {
                    if made.len() <= small {
                        made.resize_with(small + 1, || None);
                    }
                    if let Some(slot) = made.get_mut(small) {
                        let kept = slot.get_or_insert_with(|| {
                            let mut kept = vec![Vec::new(); self.k];
                            self.push_combinations(n, &mut kept);
                            kept
                        });
                        for (col, kept) in cols.iter_mut().zip(kept.iter()) {
                            col.extend_from_slice(kept);
                        }
                    }
                }
                _ => self.push_combinations(n, &mut cols),
            }
        }
        let columns: Vec<ArrayRef> = cols
            .into_iter()
            .map(|c| Arc::new(Int64Array::from(c)) as ArrayRef)
            .collect();
        let structs = StructArray::try_new(self.fields(), columns, None)?;
        let nulls = NullBuffer::from(counts.iter().map(Option::is_some).collect::<Vec<_>>());
        let list = ListArray::try_new(
            self.item(),
            OffsetBuffer::new(offsets.into()),
            Arc::new(structs),
            Some(nulls),
        )?;
        Ok(Arc::new(list))
    }

    /// Appends the combinations of `n` objects, in order, to `cols` (one
    /// vector per index).
    fn push_combinations(&self, n: u64, cols: &mut [Vec<i64>]) {
        let n = n as i64;
        let [first, second, rest @ ..] = cols else {
            return;
        };
        for i in 1..=n {
            for j in i + 1..=n {
                match rest.first_mut() {
                    None => {
                        first.push(i);
                        second.push(j);
                    }
                    Some(third) => {
                        for k in j + 1..=n {
                            first.push(i);
                            second.push(j);
                            third.push(k);
                        }
                    }
                }
            }
        }
    }
}

/// Rows of fewer objects than this copy combinations made once per batch.
const KEPT: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_of_three() {
        let list = Combinations::pairs()
            .build(&[Some(3), Some(0), None])
            .unwrap();
        let list = list.as_any().downcast_ref::<ListArray>().unwrap();
        assert_eq!(list.value_length(0), 3);
        assert_eq!(list.value_length(1), 0);
        assert!(list.is_null(2));
        assert_eq!(choose(4, 3), 4);
    }

    /// Every row's combinations, in order, from the built array.
    fn rows(list: &ArrayRef) -> Vec<Option<Vec<Vec<i64>>>> {
        let list = list.as_any().downcast_ref::<ListArray>().unwrap();
        (0..list.len())
            .map(|r| {
                list.is_valid(r).then(|| {
                    let row = list.value(r);
                    let row = row.as_any().downcast_ref::<StructArray>().unwrap();
                    (0..row.len())
                        .map(|e| {
                            row.columns()
                                .iter()
                                .map(|c| c.as_any().downcast_ref::<Int64Array>().unwrap().value(e))
                                .collect()
                        })
                        .collect()
                })
            })
            .collect()
    }

    #[test]
    fn rows_of_every_size_list_their_combinations_in_order() {
        // Small rows copy combinations made once; rows of KEPT or more
        // objects are made on their own.
        let counts = [
            Some(3),
            Some(40),
            Some(3),
            Some(0),
            None,
            Some(5),
            Some(1),
            Some(40),
        ];
        for (k, combinations) in [(2, Combinations::pairs()), (3, Combinations::triples())] {
            let built = rows(&combinations.build(&counts).unwrap());
            for (row, count) in built.iter().zip(counts) {
                let Some(n) = count else {
                    assert!(row.is_none());
                    continue;
                };
                let n = n as i64;
                let mut expected = Vec::new();
                for i in 1..=n {
                    for j in i + 1..=n {
                        if k == 2 {
                            expected.push(vec![i, j]);
                        }
                        for l in j + 1..=n {
                            if k == 3 {
                                expected.push(vec![i, j, l]);
                            }
                        }
                    }
                }
                assert_eq!(row.as_ref().unwrap(), &expected, "{k} of {n}");
            }
        }
    }

    #[test]
    fn huge_counts_are_errors() {
        assert_eq!(choose(u64::MAX, 3), u64::MAX / 6);
        for n in [1 << 20, 1 << 40, i64::MAX as u64, u64::MAX] {
            assert!(Combinations::triples().build(&[Some(n)]).is_err(), "{n}");
            assert!(Combinations::pairs().build(&[Some(n)]).is_err(), "{n}");
        }
        // Rows within the per-row bound whose total does not fit in i32 offsets.
        let many = vec![Some(10_000u64); 50];
        assert!(Combinations::pairs().build(&many).is_err());
    }
}
