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

/// Number of k-combinations of n.
fn choose(n: u64, k: usize) -> u64 {
    match k {
        2 => n * n.saturating_sub(1) / 2,
        _ => n * n.saturating_sub(1) * n.saturating_sub(2) / 6,
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
        let mut cols: Vec<Vec<i64>> = vec![Vec::new(); self.k];
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        offsets.push(0i32);
        for &n in counts {
            let n = n.unwrap_or(0);
            if choose(n, self.k) > MAX_PER_ROW {
                return Err(DataFusionError::Execution(format!(
                    "{}({n}) would give {} combinations",
                    self.name,
                    choose(n, self.k)
                )));
            }
            let n = n as i64;
            if self.k == 2 {
                for i in 1..=n {
                    for j in i + 1..=n {
                        cols[0].push(i);
                        cols[1].push(j);
                    }
                }
            } else {
                for i in 1..=n {
                    for j in i + 1..=n {
                        for k in j + 1..=n {
                            cols[0].push(i);
                            cols[1].push(j);
                            cols[2].push(k);
                        }
                    }
                }
            }
            let end = i32::try_from(cols[0].len()).map_err(|_| {
                DataFusionError::Execution(format!("{}: result too large", self.name))
            })?;
            offsets.push(end);
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
}

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
}
