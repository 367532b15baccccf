//! `argmin(list)` and `argmax(list)`: the 1-based position of each row's
//! smallest or largest element, ready for list access (`t[argmin(d)]`).
//!
//! ```text
//!  argmin([3.5, 1.0, 2.0, 1.0]) -> 2        (the first of equal elements)
//!  argmax([3.5, 1.0, 2.0])      -> 1
//!  argmin([]) -> NULL,  argmin(NULL) -> NULL,  NULL and NaN elements are passed over
//! ```
//!
//! Like ROOT's `VecOps::ArgMin`/`ArgMax`, but 1-based: the position of the
//! trijet mass closest to the top mass is `argmin(array_transform(triples(nJet), ...))`.

use std::sync::Arc;

use arrow_array::{Array, Int64Array, ListArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use datafusion::common::cast::{as_float64_array, as_list_array};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::{coerce_numeric, is_list};

/// `argmin(list)` or `argmax(list)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ArgExtreme {
    name: &'static str,
    largest: bool,
    signature: Signature,
}

impl ArgExtreme {
    /// `argmin(list)`: the position of the smallest element.
    pub fn argmin() -> Self {
        Self::new("argmin", false)
    }

    /// `argmax(list)`: the position of the largest element.
    pub fn argmax() -> Self {
        Self::new("argmax", true)
    }

    fn new(name: &'static str, largest: bool) -> Self {
        Self {
            name,
            largest,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ArgExtreme {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [dt] if is_list(dt) => coerce_numeric(self.name, arg_types),
            _ => Err(DataFusionError::Plan(format!(
                "{} takes one list of numbers",
                self.name
            ))),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
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
        let list: &ListArray = as_list_array(&array)?;
        let result = if list.null_count() == 0 && list.values().null_count() == 0 {
            self.positions_dense(list)?
        } else {
            self.positions(list)?
        };
        if scalar {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&result, 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(Arc::new(result)))
        }
    }
}

impl ArgExtreme {
    /// Each row's position of its extreme, skipping nulls and NaNs (null for
    /// a null row or one without a number).
    fn positions(&self, list: &ListArray) -> Result<Int64Array> {
        let values = as_float64_array(list.values())?;
        let offsets = list.offsets();
        Ok((0..list.len())
            .map(|row| {
                if list.is_null(row) {
                    return None;
                }
                let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
                let mut best: Option<(usize, f64)> = None;
                for k in start..end {
                    if values.is_null(k) {
                        continue;
                    }
                    let v = values.value(k);
                    let better = match best {
                        None => !v.is_nan(),
                        Some((_, b)) if self.largest => v > b,
                        Some((_, b)) => v < b,
                    };
                    if better {
                        best = Some((k, v));
                    }
                }
                best.map(|(k, _)| (k - start + 1) as i64)
            })
            .collect())
    }

    /// [`positions`](Self::positions) of a list without nulls, row by row
    /// over slices of the values.
    fn positions_dense(&self, list: &ListArray) -> Result<Int64Array> {
        let values = as_float64_array(list.values())?.values();
        let mut out = Vec::with_capacity(list.len());
        let mut valid = Vec::with_capacity(list.len());
        for row in list.offsets().windows(2) {
            let row = values
                .get(row[0] as usize..row[1] as usize)
                .unwrap_or_default();
            let position = match row.iter().position(|v| !v.is_nan()) {
                Some(first) => {
                    let mut best = (first, row[first]);
                    for (k, &v) in row.iter().enumerate().skip(first + 1) {
                        if (self.largest && v > best.1) || (!self.largest && v < best.1) {
                            best = (k, v);
                        }
                    }
                    Some(best.0 as i64 + 1)
                }
                None => None,
            };
            out.push(position.unwrap_or(0));
            valid.push(position.is_some());
        }
        let nulls = NullBuffer::from(valid);
        let nulls = (nulls.null_count() > 0).then_some(nulls);
        Ok(Int64Array::new(out.into(), nulls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Float64Type;
    use arrow_schema::Field;
    use datafusion::config::ConfigOptions;

    fn call(f: &ArgExtreme, rows: Vec<Option<Vec<Option<f64>>>>) -> Vec<Option<i64>> {
        let list = ListArray::from_iter_primitive::<Float64Type, _, _>(rows);
        let n = list.len();
        let args = ScalarFunctionArgs {
            args: vec![ColumnarValue::Array(Arc::new(list))],
            arg_fields: vec![Arc::new(Field::new("d", super::super::float_list(), true))],
            number_rows: n,
            return_field: Arc::new(Field::new("p", DataType::Int64, true)),
            config_options: Arc::new(ConfigOptions::default()),
        };
        let ColumnarValue::Array(out) = f.invoke_with_args(args).unwrap() else {
            panic!("an array");
        };
        out.as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .iter()
            .collect()
    }

    #[test]
    fn first_extreme_skipping_nulls_and_nans() {
        let rows = vec![
            Some(vec![Some(3.5), Some(1.0), Some(2.0), Some(1.0)]),
            Some(vec![]),
            None,
            Some(vec![None, Some(f64::NAN), Some(7.0), Some(9.0)]),
        ];
        assert_eq!(
            call(&ArgExtreme::argmin(), rows.clone()),
            vec![Some(2), None, None, Some(3)]
        );
        assert_eq!(
            call(&ArgExtreme::argmax(), rows),
            vec![Some(1), None, None, Some(4)]
        );
    }

    /// Lists without nulls take the dense path, with the same positions:
    /// ties keep the first, NaNs never win, rows of NaNs or of nothing
    /// are null.
    #[test]
    fn dense_lists_give_the_general_positions() {
        let mut next = crate::test_util::xorshift(0x9E37_79B9_7F4A_7C15);
        let rows: Vec<Option<Vec<Option<f64>>>> = (0..500)
            .map(|_| {
                let n = (next() % 7) as usize;
                Some(
                    (0..n)
                        .map(|_| match next() % 10 {
                            0 => Some(f64::NAN),
                            k => Some((k % 4) as f64 - 1.5),
                        })
                        .collect(),
                )
            })
            .collect();
        let list = ListArray::from_iter_primitive::<Float64Type, _, _>(rows);
        assert_eq!(list.null_count() + list.values().null_count(), 0);
        for f in [ArgExtreme::argmin(), ArgExtreme::argmax()] {
            let dense = f.positions_dense(&list).unwrap();
            assert_eq!(dense, f.positions(&list).unwrap());
            assert!(dense.null_count() > 0 && dense.null_count() < dense.len());
        }
    }
}
