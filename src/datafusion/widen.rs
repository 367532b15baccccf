//! Casts that widen a number without loss, written once.
//!
//! Analysis queries widen `float` columns to `double` all the time (ROOT's
//! histograms fill doubles; ADL Q1 is `CAST(MET_pt AS DOUBLE)`). Arrow's
//! cast kernel for such a pair (`cast_numeric_arrays`, through
//! `PrimitiveArray::try_unary`) first fills its whole output with zeros
//! and then writes each value over them: for Q1, 16 MB of `memset` before
//! the 16 MB of values. A [`WideningCast`] writes its output once: the
//! same values, bit for bit, and the same nulls (under a null it converts
//! whatever value lies there, where Arrow's leaves a zero).
//!
//! Lists of such numbers widen their values the same way, keeping their
//! offsets and nulls: the HEP functions take lists of `double`s, so
//! `p4(Jet_pt, Jet_eta, Jet_phi, Jet_mass)` casts four `float` lists.
//!
//! The scan puts one in place of each such `CastExpr` in the projection
//! pushed into it ([`widen_casts`]), which is where a `SELECT` of cast
//! columns ends up:
//!
//! ```text
//!  DataSourceExec: ... projection=[CAST(MET_pt@3 AS Float64) as x]
//!                                  └─ a WideningCast, shown as the cast it replaces
//! ```
//!
//! The physical rule [`WidenCasts`] does the same in every `ProjectionExec`
//! left in a plan (the casts above a filter, an aggregate or an unnest:
//! `SELECT CAST(unnest(Jet_pt) AS DOUBLE)`) and in every `FilterExec`'s
//! predicate (ADL Q5's `p4` of four `float` lists).

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, ListArray, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, FieldRef, Schema};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{internal_err, Result};
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::logical_expr::sort_properties::ExprProperties;
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::expressions::CastExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExprs};
use datafusion::physical_plan::ExecutionPlan;

use super::replace_nodes;

/// Puts a [`WideningCast`] in place of each lossless numeric widening
/// `CastExpr` of every `ProjectionExec` and `FilterExec` predicate. The
/// projections keep their schemas, field metadata included.
#[derive(Debug, Default)]
pub(crate) struct WidenCasts;

impl PhysicalOptimizerRule for WidenCasts {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // A node that cannot be built again keeps Arrow's casts.
        let plan = replace_nodes(plan, |projection: &ProjectionExec| {
            widen_projection(projection).ok().flatten()
        })?;
        replace_nodes(plan, |filter: &FilterExec| {
            widen_filter(filter).ok().flatten()
        })
    }

    fn name(&self) -> &str {
        "widen_casts"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `projection` with its widening casts written once, or `None` if it has
/// none.
fn widen_projection(projection: &ProjectionExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let input = projection.input();
    let exprs = projection.projection_expr().clone();
    let widened = widen_casts(exprs.clone(), &input.schema())?;
    if widened == exprs {
        return Ok(None);
    }
    let exec = ProjectionExec::try_new_with_schema_metadata(
        widened.iter().cloned(),
        Arc::clone(input),
        &projection.schema(),
    )?;
    Ok(Some(Arc::new(exec)))
}

/// `filter` with the widening casts of its predicate written once, or
/// `None` if it has none.
fn widen_filter(filter: &FilterExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let predicate = widen_expr(Arc::clone(filter.predicate()), &filter.input().schema())?;
    if !predicate.transformed {
        return Ok(None);
    }
    let exec = FilterExecBuilder::from(filter)
        .with_predicate(predicate.data)
        .build()?;
    Ok(Some(Arc::new(exec)))
}

/// `projection` with each lossless numeric widening `CastExpr` (see
/// [`widens`]) replaced by a [`WideningCast`]; `schema` is the schema the
/// projection's columns refer to.
pub(crate) fn widen_casts(projection: ProjectionExprs, schema: &Schema) -> Result<ProjectionExprs> {
    projection.try_map_exprs(|expr| widen_expr(expr, schema).data())
}

/// `expr` with each widening `CastExpr` replaced by a [`WideningCast`].
/// Inside a lambda, whose variables `schema` does not describe, a cast may
/// be left as it is; a `WideningCast` checks the type of the array it is
/// given either way.
fn widen_expr(
    expr: Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    expr.transform_up(|e| {
        let Some(cast) = e.downcast_ref::<CastExpr>() else {
            return Ok(Transformed::no(e));
        };
        match cast.expr().data_type(schema) {
            Ok(from) if widens(&from, cast.cast_type()) => Ok(Transformed::yes(Arc::new(
                WideningCast { cast: cast.clone() },
            )
                as Arc<dyn PhysicalExpr>)),
            _ => Ok(Transformed::no(e)),
        }
    })
}

/// Whether every value of `from` is exactly a value of `to`, and the pair
/// is one [`WideningCast`] computes.
pub(crate) fn widens(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    match (from, to) {
        // Lists widen their values and keep their offsets and nulls (the
        // HEP functions' arguments: `p4(Jet_pt, ...)` reads `double`s).
        (List(from), List(to)) => {
            widens(from.data_type(), to.data_type()) && (to.is_nullable() || !from.is_nullable())
        }
        _ => matches!(
            (from, to),
            (Float32, Float64)
                | (Int8 | Int16 | Int32, Int64)
                | (UInt8 | UInt16 | UInt32, Int64 | UInt64)
                | (Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32, Float64)
        ),
    }
}

/// A `CastExpr` of a lossless numeric widening (see [`widens`]) that writes
/// its output once. Everything but the evaluation of an array is the cast
/// it holds, its display included, so plans read as before.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WideningCast {
    cast: CastExpr,
}

impl fmt::Display for WideningCast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.cast, f)
    }
}

impl PhysicalExpr for WideningCast {
    fn data_type(&self, input_schema: &Schema) -> Result<DataType> {
        self.cast.data_type(input_schema)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.cast.nullable(input_schema)
    }

    fn return_field(&self, input_schema: &Schema) -> Result<FieldRef> {
        self.cast.return_field(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        // The input is evaluated once; what `widen` leaves (a scalar, or an
        // array of another type) takes Arrow's cast, as the `CastExpr` would.
        let value = self.cast.expr().evaluate(batch)?;
        if let ColumnarValue::Array(array) = &value {
            if let Some(wide) = widen(array, self.cast.cast_type()) {
                return Ok(ColumnarValue::Array(wide));
            }
        }
        value.cast_to(self.cast.cast_type(), Some(self.cast.cast_options()))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![self.cast.expr()]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        let cast = Arc::new(self.cast.clone()).with_new_children(children)?;
        match cast.downcast_ref::<CastExpr>() {
            Some(cast) => Ok(Arc::new(WideningCast { cast: cast.clone() })),
            None => internal_err!("a cast with new children is not a cast"),
        }
    }

    fn evaluate_bounds(&self, children: &[&Interval]) -> Result<Interval> {
        self.cast.evaluate_bounds(children)
    }

    fn propagate_constraints(
        &self,
        interval: &Interval,
        children: &[&Interval],
    ) -> Result<Option<Vec<Interval>>> {
        self.cast.propagate_constraints(interval, children)
    }

    fn get_properties(&self, children: &[ExprProperties]) -> Result<ExprProperties> {
        self.cast.get_properties(children)
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.cast.fmt_sql(f)
    }
}

/// `array` widened to `to`, or `None` for a pair [`WideningCast`] leaves
/// to Arrow's cast.
fn widen(array: &ArrayRef, to: &DataType) -> Option<ArrayRef> {
    use DataType::*;
    macro_rules! each {
        ($from:ty => $to:ty) => {{
            let array = array.as_any().downcast_ref::<PrimitiveArray<$from>>()?;
            Some(Arc::new(array.unary::<_, $to>(|v| v.into())) as ArrayRef)
        }};
    }
    match (array.data_type(), to) {
        (List(_), List(item)) => {
            let list = array.as_list_opt::<i32>()?;
            let values = widen(list.values(), item.data_type())?;
            let nulls = list.nulls().cloned();
            let wide = ListArray::try_new(Arc::clone(item), list.offsets().clone(), values, nulls);
            Some(Arc::new(wide.ok()?) as ArrayRef)
        }
        (Float32, Float64) => each!(Float32Type => Float64Type),
        (Int8, Int64) => each!(Int8Type => Int64Type),
        (Int16, Int64) => each!(Int16Type => Int64Type),
        (Int32, Int64) => each!(Int32Type => Int64Type),
        (UInt8, Int64) => each!(UInt8Type => Int64Type),
        (UInt16, Int64) => each!(UInt16Type => Int64Type),
        (UInt32, Int64) => each!(UInt32Type => Int64Type),
        (UInt8, UInt64) => each!(UInt8Type => UInt64Type),
        (UInt16, UInt64) => each!(UInt16Type => UInt64Type),
        (UInt32, UInt64) => each!(UInt32Type => UInt64Type),
        (Int8, Float64) => each!(Int8Type => Float64Type),
        (Int16, Float64) => each!(Int16Type => Float64Type),
        (Int32, Float64) => each!(Int32Type => Float64Type),
        (UInt8, Float64) => each!(UInt8Type => Float64Type),
        (UInt16, Float64) => each!(UInt16Type => Float64Type),
        (UInt32, Float64) => each!(UInt32Type => Float64Type),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float32Array, Int32Array, UInt32Array};
    use arrow_schema::Field;
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::physical_expr::expressions::Column;
    use datafusion::physical_plan::projection::ProjectionExpr;

    /// The cast of column 0 of `array` to `to`, by Arrow and by a
    /// [`WideningCast`]: the same type, nulls and value bits.
    fn same_as_arrow(array: ArrayRef, to: DataType) {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "a",
            array.data_type().clone(),
            true,
        )]));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![array]).unwrap();
        let cast = CastExpr::new(Arc::new(Column::new("a", 0)), to.clone(), None);
        let projection = ProjectionExprs::new([ProjectionExpr::new(
            Arc::new(cast.clone()) as Arc<dyn PhysicalExpr>,
            "x",
        )]);
        let widened = widen_casts(projection, &schema).unwrap();
        let expr = &widened.iter().next().unwrap().expr;
        assert!(
            expr.downcast_ref::<WideningCast>().is_some(),
            "{to} not widened"
        );
        assert_eq!(expr.to_string(), cast.to_string(), "shown as the cast");
        let ours = expr
            .evaluate(&batch)
            .unwrap()
            .into_array(batch.num_rows())
            .unwrap();
        let arrow = cast
            .evaluate(&batch)
            .unwrap()
            .into_array(batch.num_rows())
            .unwrap();
        assert_eq!(ours.data_type(), &to);
        assert_eq!(ours.nulls(), arrow.nulls());
        assert_eq!(ours.to_data().buffers()[0], arrow.to_data().buffers()[0]);
    }

    #[test]
    fn widened_floats_keep_every_bit_and_null() {
        let values = Float32Array::from(vec![
            Some(1.5),
            None,
            Some(-0.0),
            Some(f32::NAN),
            Some(-f32::NAN),
            Some(f32::INFINITY),
            Some(f32::MIN_POSITIVE / 8.0),
            Some(f32::MAX),
            Some(3.4e-39),
        ]);
        same_as_arrow(Arc::new(values), DataType::Float64);
    }

    #[test]
    fn widened_integers_match_arrow() {
        let ints = Int32Array::from(vec![
            Some(i32::MIN),
            None,
            Some(-1),
            Some(0),
            Some(i32::MAX),
        ]);
        same_as_arrow(Arc::new(ints.clone()), DataType::Int64);
        same_as_arrow(Arc::new(ints), DataType::Float64);
        let unsigned = UInt32Array::from(vec![Some(u32::MAX), None, Some(0), Some(7)]);
        same_as_arrow(Arc::new(unsigned.clone()), DataType::Int64);
        same_as_arrow(Arc::new(unsigned.clone()), DataType::UInt64);
        same_as_arrow(Arc::new(unsigned), DataType::Float64);
    }

    async fn physical_plan(
        ctx: &datafusion::prelude::SessionContext,
        sql: &str,
    ) -> Arc<dyn ExecutionPlan> {
        let frame = ctx.sql(sql).await.unwrap();
        frame.create_physical_plan().await.unwrap()
    }

    #[test]
    fn widened_lists_keep_offsets_and_nulls() {
        use arrow_array::builder::{Float32Builder, ListBuilder};
        use datafusion::arrow::compute::cast;
        let mut builder = ListBuilder::new(Float32Builder::new());
        builder.values().append_value(1.5);
        builder.values().append_null();
        builder.append(true);
        builder.append(false);
        builder.append(true);
        builder.values().append_value(-0.0);
        builder.values().append_value(f32::NAN);
        builder.values().append_value(3.4e-39);
        builder.append(true);
        let list: ArrayRef = Arc::new(builder.finish());
        let item = Arc::new(Field::new("item", DataType::Float64, true));
        let to = DataType::List(item);
        let values = |a: &ArrayRef| a.as_list::<i32>().values().to_data().buffers()[0].clone();
        for list in [Arc::clone(&list), list.slice(1, 3)] {
            let ours = widen(&list, &to).expect("a list of floats widens");
            let arrow = cast(&list, &to).unwrap();
            assert_eq!(ours.data_type(), &to);
            assert_eq!(ours.to_data(), arrow.to_data());
            assert_eq!(values(&ours), values(&arrow), "every value bit");
        }
        // A list of nullable items does not widen into one of non-null items.
        let strict = DataType::List(Arc::new(Field::new("item", DataType::Float64, false)));
        assert!(!widens(list.data_type(), &strict));
    }

    /// The widening casts that stay above a scan (over an unnest, a filter
    /// of unnested values, an aggregate, a function's list arguments)
    /// become `WideningCast`s, with
    /// schemas and rows those of DataFusion's own plan, bit for bit.
    #[tokio::test]
    async fn casts_above_the_scan_are_widened_too() {
        use crate::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};
        use datafusion::arrow::compute::concat_batches;
        use datafusion::physical_plan::collect;
        use datafusion::prelude::SessionContext;
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/adl/nanoaod_events.root"
        );
        // DataFusion's own physical rules, with this crate's functions.
        let plain = SessionContext::new_with_config(crate::datafusion::session_config());
        crate::datafusion::register(&plain);
        let ours = session_context();
        for ctx in [&plain, &ours] {
            ctx.register_rntuple("events", path, RNTupleReadOptions::default())
                .await
                .unwrap();
        }
        let q5 = format!(
            "{} ORDER BY x",
            include_str!("../../benches/adl/q5.sql").trim_end()
        );
        for (sql, casts) in [
            (
                "SELECT CAST(unnest(Jet_pt) AS DOUBLE) AS x FROM events ORDER BY x",
                1,
            ),
            (
                "SELECT CAST(pt AS DOUBLE) AS x, CAST(n AS BIGINT) AS n \
                 FROM (SELECT unnest(Jet_pt) AS pt, nJet AS n FROM events) WHERE pt > 40 \
                 ORDER BY x, n",
                2,
            ),
            (
                "SELECT CAST(max(MET_pt) AS DOUBLE) AS x, CAST(nJet AS DOUBLE) AS n \
                 FROM events GROUP BY nJet ORDER BY nJet",
                2,
            ),
            // The four `float` lists cast to the `double` lists p4 takes.
            (
                "SELECT event, p4(Jet_pt, Jet_eta, Jet_phi, Jet_mass) AS v FROM events \
                 WHERE nJet >= 3 ORDER BY event",
                4,
            ),
            // ADL Q5: p4's casts in a filter's predicate, `pairs(nMuon)`'s
            // and the histogram's.
            (&q5, 6),
        ] {
            let plan = physical_plan(&ours, sql).await;
            let mut widened = 0;
            let mut count = |expr: &Arc<dyn PhysicalExpr>| {
                expr.apply(|e| {
                    widened += e.downcast_ref::<WideningCast>().is_some() as usize;
                    Ok(TreeNodeRecursion::Continue)
                })
            };
            plan.apply(|node| {
                if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
                    for expr in projection.expr() {
                        count(&expr.expr)?;
                    }
                }
                if let Some(filter) = node.downcast_ref::<FilterExec>() {
                    count(filter.predicate())?;
                }
                Ok(TreeNodeRecursion::Continue)
            })
            .unwrap();
            assert_eq!(widened, casts, "{sql}");
            let theirs_plan = physical_plan(&plain, sql).await;
            assert_eq!(plan.schema(), theirs_plan.schema(), "{sql}");
            let ours = collect(plan, ours.task_ctx()).await.unwrap();
            let theirs = collect(theirs_plan, plain.task_ctx()).await.unwrap();
            let schema = ours[0].schema();
            let (ours, theirs) = (
                concat_batches(&schema, &ours).unwrap(),
                concat_batches(&schema, &theirs).unwrap(),
            );
            assert!(ours.num_rows() > 10, "{sql}: {} rows", ours.num_rows());
            for (a, b) in ours.columns().iter().zip(theirs.columns()) {
                assert_eq!(a.to_data(), b.to_data(), "{sql}");
                assert_eq!(a.to_data().buffers(), b.to_data().buffers(), "{sql}");
                assert_eq!(a.nulls(), b.nulls(), "{sql}");
            }
        }
    }

    #[test]
    fn narrowing_and_lossy_casts_stay_arrows() {
        use DataType::*;
        for (from, to) in [
            (Float64, Float32),
            (Int64, Float64),
            (Int64, Int32),
            (Int32, UInt32),
            (Int32, UInt64),
            (Float32, Int64),
            (Utf8, Float64),
        ] {
            assert!(!widens(&from, &to), "{from} -> {to}");
        }
        let schema = Schema::new(vec![Field::new("a", Int64, true)]);
        let cast = CastExpr::new(Arc::new(Column::new("a", 0)), Float64, None);
        let projection = ProjectionExprs::new([ProjectionExpr::new(
            Arc::new(cast) as Arc<dyn PhysicalExpr>,
            "x",
        )]);
        let kept = widen_casts(projection, &schema).unwrap();
        assert!(kept
            .iter()
            .next()
            .unwrap()
            .expr
            .downcast_ref::<CastExpr>()
            .is_some());
    }
}
