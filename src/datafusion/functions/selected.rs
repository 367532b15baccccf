//! `inv_mass(list_select(v, i), list_select(v, j), ...)` in one pass.
//!
//! The combinations of a collection are summed by gathering the
//! four-vectors of each pair or triple with `list_select` and adding them in
//! `inv_mass` (or `pt_of_sum`):
//!
//! ```text
//!  v (one list per event)   i, j, k (positions, one per triple)
//!        │                        │
//!  list_select x3 ─> 3 x 4 columns of f64, one value per triple   (written, then read)
//!        └──────────> inv_mass ─> one f64 per triple
//! ```
//!
//! [`SelectedSum`] takes `v` and the positions and adds each combination's
//! four-vectors where they are, in the order of the arguments, from zero,
//! as `inv_mass` does: the results are the same bits. [`fuse`] puts it in
//! place of such calls (the rule `use_fast_paths` applies it); arguments
//! it does not take (nulls, positions outside their lists, positions of
//! different shapes) go through the two functions as written.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, ListArray};
use arrow_schema::{DataType, Field, FieldRef};
use datafusion::common::tree_node::Transformed;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::fast_path::columns;
use super::kinematics::{Quantity, P4};
use super::{InvMass, ListSelect};

/// `sum(list_select(v, p1), list_select(v, p2), ...)`, where `sum` is
/// `inv_mass` or `pt_of_sum` and every position list `p` has one shape.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SelectedSum {
    signature: Signature,
    name: String,
    sum: Arc<ScalarUDF>,
    select: Arc<ScalarUDF>,
    quantity: Quantity,
}

impl SelectedSum {
    fn new(sum: Arc<ScalarUDF>, select: Arc<ScalarUDF>, quantity: Quantity) -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            name: format!("{}_of_{}", sum.name(), select.name()),
            sum,
            select,
            quantity,
        }
    }

    /// The type `list_select(v, positions)` gives.
    fn selected_type(&self, list: &DataType, positions: &DataType) -> Result<DataType> {
        self.select.return_type(&[list.clone(), positions.clone()])
    }

    /// The two functions as written: each `list_select`, then the sum.
    fn composed(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (list, list_field) = match (args.args.first(), args.arg_fields.first()) {
            (Some(list), Some(field)) => (list, field),
            _ => return Err(no_arguments()),
        };
        let mut selected = Vec::with_capacity(args.args.len() - 1);
        let mut selected_fields: Vec<FieldRef> = Vec::with_capacity(args.args.len() - 1);
        for (positions, field) in args.args.iter().zip(&args.arg_fields).skip(1) {
            let data_type = self.selected_type(list_field.data_type(), field.data_type())?;
            let return_field = Arc::new(Field::new(self.select.name(), data_type, true));
            selected.push(self.select.invoke_with_args(ScalarFunctionArgs {
                args: vec![list.clone(), positions.clone()],
                arg_fields: vec![list_field.clone(), field.clone()],
                number_rows: args.number_rows,
                return_field: return_field.clone(),
                config_options: args.config_options.clone(),
            })?);
            selected_fields.push(return_field);
        }
        self.sum.invoke_with_args(ScalarFunctionArgs {
            args: selected,
            arg_fields: selected_fields,
            number_rows: args.number_rows,
            return_field: args.return_field,
            config_options: args.config_options,
        })
    }
}

fn no_arguments() -> DataFusionError {
    DataFusionError::Internal("a sum of selected four-vectors without arguments".into())
}

impl ScalarUDFImpl for SelectedSum {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// As `list_select` coerces each pair of a list and positions.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [list, positions @ ..] = arg_types else {
            return Err(no_arguments());
        };
        let mut out = vec![list.clone()];
        for p in positions {
            let mut pair = self
                .select
                .coerce_types(&[list.clone(), p.clone()])?
                .into_iter();
            if let (Some(list), Some(p)) = (pair.next(), pair.next()) {
                out[0] = list;
                out.push(p);
            }
        }
        Ok(out)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let [list, positions @ ..] = arg_types else {
            return Err(no_arguments());
        };
        let selected = positions
            .iter()
            .map(|p| self.selected_type(list, p))
            .collect::<Result<Vec<_>>>()?;
        self.sum.return_type(&selected)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let Some(result) = sum_selected(&args.args, self.quantity)? {
            return Ok(ColumnarValue::Array(result));
        }
        self.composed(args)
    }
}

/// The sums, when every argument is an array without nulls, `v` a list of
/// `Struct{px, py, pz, e: Float64}`, and the position lists share one shape
/// and lie within their rows' lists; `None` otherwise.
fn sum_selected(args: &[ColumnarValue], quantity: Quantity) -> Result<Option<ArrayRef>> {
    let Some(arrays) = columns(args) else {
        return Ok(None);
    };
    let [list, positions @ ..] = arrays.as_slice() else {
        return Ok(None);
    };
    let Some(list) = list.as_list_opt::<i32>() else {
        return Ok(None);
    };
    let Some(components) = components(list) else {
        return Ok(None);
    };
    let Some(shape) = positions.first().and_then(|p| p.as_list_opt::<i32>()) else {
        return Ok(None);
    };
    let mut position_values = Vec::with_capacity(positions.len());
    for p in positions {
        let Some(p) = p.as_list_opt::<i32>() else {
            return Ok(None);
        };
        let Some(values) = p.values().as_primitive_opt::<Int64Type>() else {
            return Ok(None);
        };
        if p.len() != list.len()
            || p.null_count() > 0
            || values.null_count() > 0
            || p.offsets() != shape.offsets()
        {
            return Ok(None);
        }
        position_values.push(values.values().as_ref());
    }
    let [x, y, z, e] = components;
    let offsets = shape.offsets();
    let total = offsets.last().copied().unwrap_or(0) - offsets.first().copied().unwrap_or(0);
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for (row, combinations) in list.offsets().windows(2).zip(offsets.windows(2)) {
        let (start, len) = (i64::from(row[0]), i64::from(row[1] - row[0]));
        for at in combinations[0] as usize..combinations[1] as usize {
            let mut p = P4::default();
            for values in &position_values {
                let Some(&position) = values.get(at) else {
                    return Ok(None);
                };
                if position < 1 || position > len {
                    return Ok(None);
                }
                let i = (start + position - 1) as usize;
                let (Some(&x), Some(&y), Some(&z), Some(&e)) =
                    (x.get(i), y.get(i), z.get(i), e.get(i))
                else {
                    return Ok(None);
                };
                p.add(&P4 { x, y, z, e });
            }
            out.push(quantity.of(&p));
        }
    }
    super::flat_list(offsets, out).map(Some)
}

/// The px, py, pz and e values of a list of four-vectors without nulls.
fn components(list: &ListArray) -> Option<[&[f64]; 4]> {
    let structs = list.values().as_struct_opt()?;
    if list.null_count() > 0 || structs.null_count() > 0 {
        return None;
    }
    let mut out: [&[f64]; 4] = [&[]; 4];
    let fields = structs.fields().iter().zip(super::kinematics::P4_FIELDS);
    if structs.num_columns() != 4 || !fields.clone().all(|(f, name)| f.name() == name) {
        return None;
    }
    for (slot, column) in out.iter_mut().zip(structs.columns()) {
        let column = column.as_primitive_opt::<Float64Type>()?;
        if column.null_count() > 0 {
            return None;
        }
        *slot = column.values().as_ref();
    }
    Some(out)
}

/// `inv_mass(list_select(v, p1), ..., list_select(v, pn))` (or `pt_of_sum`)
/// of two or more four-vectors selected from one list `v`, as one
/// [`SelectedSum`]; any other expression as it is.
pub(crate) fn fuse(expr: Expr) -> Result<Transformed<Expr>> {
    let Expr::ScalarFunction(call) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let Some(sum) = call.func.inner().downcast_ref::<InvMass>() else {
        return Ok(Transformed::no(expr));
    };
    if call.args.len() < 2 {
        return Ok(Transformed::no(expr));
    }
    let mut list = None;
    let mut select = None;
    let mut args = Vec::with_capacity(call.args.len() + 1);
    for arg in &call.args {
        let Expr::ScalarFunction(inner) = arg else {
            return Ok(Transformed::no(expr));
        };
        let ([v, positions], true) = (
            inner.args.as_slice(),
            inner.func.inner().downcast_ref::<ListSelect>().is_some(),
        ) else {
            return Ok(Transformed::no(expr));
        };
        match list {
            None => {
                list = Some(v);
                select = Some(inner.func.clone());
                args.push(v.clone());
            }
            Some(list) if list == v => {}
            Some(_) => return Ok(Transformed::no(expr)),
        }
        args.push(positions.clone());
    }
    let Some(select) = select else {
        return Ok(Transformed::no(expr));
    };
    let fused = SelectedSum::new(call.func.clone(), select, sum.quantity());
    Ok(Transformed::yes(Expr::ScalarFunction(
        ScalarFunction::new_udf(Arc::new(ScalarUDF::from(fused)), args),
    )))
}

#[cfg(test)]
mod tests {
    use arrow_array::{Float64Array, Int64Array, StructArray};
    use arrow_buffer::{NullBuffer, OffsetBuffer};

    use super::*;
    use crate::datafusion::functions::fast_path::{call, try_call};
    use crate::test_util::xorshift;

    /// A list of random four-vectors of the given lengths.
    fn four_vectors(lengths: &[usize], next: &mut impl FnMut() -> u64) -> ListArray {
        let n: usize = lengths.iter().sum();
        let mut column = || -> ArrayRef {
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|_| (next() % 100_000) as f64 / 37.0 - 500.0),
            ))
        };
        let fields = super::super::kinematics::P4_FIELDS
            .map(|name| Arc::new(Field::new(name, DataType::Float64, true)));
        let columns = vec![column(), column(), column(), column()];
        let structs = StructArray::new(fields.to_vec().into(), columns, None);
        ListArray::new(
            Arc::new(Field::new_list_field(structs.data_type().clone(), true)),
            OffsetBuffer::from_lengths(lengths.iter().copied()),
            Arc::new(structs),
            None,
        )
    }

    /// Position lists of the given lengths, within lists of `within`.
    fn positions(lengths: &[usize], within: &[usize], next: &mut impl FnMut() -> u64) -> ListArray {
        let values: Vec<i64> = lengths
            .iter()
            .zip(within)
            .flat_map(|(&n, &len)| {
                (0..n)
                    .map(|_| 1 + (next() % len.max(1) as u64) as i64)
                    .collect::<Vec<_>>()
            })
            .collect();
        ListArray::new(
            Arc::new(Field::new_list_field(DataType::Int64, true)),
            OffsetBuffer::from_lengths(lengths.iter().copied()),
            Arc::new(Int64Array::from(values)),
            None,
        )
    }

    /// Sums of selected four-vectors are the bits of `list_select` then
    /// `inv_mass` (or `pt_of_sum`): in one pass when the arguments allow
    /// it, through the two functions when they do not.
    #[test]
    fn fused_sums_are_the_composed_ones_bit_for_bit() {
        let mut next = xorshift(0x1234_5678_9ABC_DEF1);
        for case in 0..12 {
            let rows = 1 + (next() % 50) as usize;
            let lengths: Vec<usize> = (0..rows).map(|_| 1 + (next() % 6) as usize).collect();
            let combos: Vec<usize> = (0..rows).map(|_| (next() % 5) as usize).collect();
            let mut v = four_vectors(&lengths, &mut next);
            let mut ps: Vec<ListArray> = (0..2 + case % 2)
                .map(|_| positions(&combos, &lengths, &mut next))
                .collect();
            let fast = match case / 2 {
                0 | 1 => true,
                2 => {
                    // A position past its list: null there, as list_select gives.
                    let (field, offsets, values, nulls) = ps[0].clone().into_parts();
                    let mut values = values.as_primitive::<Int64Type>().values().to_vec();
                    if let Some(first) = values.first_mut() {
                        *first = 99;
                    }
                    ps[0] =
                        ListArray::new(field, offsets, Arc::new(Int64Array::from(values)), nulls);
                    ps[0].values().is_empty()
                }
                3 => {
                    // A null list.
                    let (field, offsets, values, _) = v.clone().into_parts();
                    let valid = (0..rows).map(|r| r != 0);
                    v = ListArray::new(field, offsets, values, Some(NullBuffer::from_iter(valid)));
                    false
                }
                4 => {
                    // Positions of another shape.
                    let other: Vec<usize> = combos.iter().map(|&c| c + 1).collect();
                    ps[1] = positions(&other, &lengths, &mut next);
                    false
                }
                _ => {
                    // A null position list.
                    let (field, offsets, values, _) = ps[1].clone().into_parts();
                    let valid = (0..rows).map(|r| r + 1 != rows);
                    ps[1] =
                        ListArray::new(field, offsets, values, Some(NullBuffer::from_iter(valid)));
                    false
                }
            };
            let mut args = vec![ColumnarValue::Array(Arc::new(v.clone()))];
            args.extend(ps.iter().map(|p| ColumnarValue::Array(Arc::new(p.clone()))));
            let select = Arc::new(ScalarUDF::from(ListSelect::new()));
            for sum in [InvMass::new(), InvMass::pt_of_sum()] {
                let quantity = sum.quantity();
                let sum = Arc::new(ScalarUDF::from(sum));
                let fused = SelectedSum::new(sum.clone(), select.clone(), quantity);
                assert_eq!(
                    sum_selected(&args, quantity).unwrap().is_some(),
                    fast,
                    "case {case}"
                );
                let got = try_call(&fused, args.clone(), rows);
                let selected = ps
                    .iter()
                    .map(|p| {
                        let args = vec![args[0].clone(), ColumnarValue::Array(Arc::new(p.clone()))];
                        ColumnarValue::Array(call(select.inner().as_ref(), args, rows))
                    })
                    .collect();
                let want = try_call(sum.inner().as_ref(), selected, rows);
                let (got, want) = match (got, want) {
                    (Ok(got), Ok(want)) => (got, want),
                    (got, want) => {
                        // Lists of different lengths in a row: the same error.
                        let message = |r: Result<ArrayRef>| r.err().map(|e| e.to_string());
                        assert_eq!(message(got), message(want), "case {case}");
                        assert_eq!(case / 2, 4, "case {case}");
                        continue;
                    }
                };
                assert_eq!(got.data_type(), want.data_type(), "case {case}");
                let (got, want) = (got.as_list::<i32>(), want.as_list::<i32>());
                assert_eq!(got.offsets(), want.offsets(), "case {case}");
                assert_eq!(got.nulls(), want.nulls(), "case {case}");
                let bits = |a: &ListArray| -> Vec<Option<u64>> {
                    a.values()
                        .as_primitive::<Float64Type>()
                        .iter()
                        .map(|x| x.map(f64::to_bits))
                        .collect()
                };
                assert_eq!(bits(got), bits(want), "case {case}");
            }
        }
    }

    /// In SQL, the sum of four-vectors selected from one list runs as one
    /// function, and the result keeps the name the query gave it.
    #[tokio::test]
    async fn sql_sums_of_selections_are_fused() -> Result<()> {
        use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};

        use crate::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};

        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/adl/nanoaod_events.root"
        );
        let ctx = session_context();
        let options = RNTupleReadOptions::default().with_ntuple("Events");
        ctx.register_rntuple("events", path, options).await?;
        let sql = "WITH p AS (SELECT p4(Muon_pt, Muon_eta, Muon_phi, Muon_mass) AS v, \
                   array_transform(pairs(Muon_pt), c -> c['i']) AS i, \
                   array_transform(pairs(Muon_pt), c -> c['j']) AS j FROM events) \
                   SELECT inv_mass(list_select(v, i), list_select(v, j)), \
                   pt_of_sum(list_select(v, i), list_select(v, j)) AS pt FROM p";
        let frame = ctx.sql(sql).await?;
        let names: Vec<String> = frame
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let plan = frame.clone().into_optimized_plan()?;
        let mut functions = Vec::new();
        plan.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::ScalarFunction(call) = e {
                    functions.push(call.func.name().to_string());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        assert!(
            functions.contains(&"inv_mass_of_list_select".to_string()),
            "{functions:?}"
        );
        assert!(
            functions.contains(&"pt_of_sum_of_list_select".to_string()),
            "{functions:?}"
        );
        assert!(
            !functions.contains(&"list_select".to_string()),
            "{functions:?}"
        );
        let batches = frame.collect().await?;
        let schema = batches.first().map(|b| b.schema()).expect("a batch");
        let got: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(got, names);
        assert!(names[0].starts_with("inv_mass(list_select("), "{names:?}");
        assert_eq!(names[1], "pt");
        let pairs: usize = batches
            .iter()
            .map(|b| b.column(0).as_list::<i32>().values().len())
            .sum();
        assert!(pairs > 0, "the file has events with two muons");
        Ok(())
    }
}
