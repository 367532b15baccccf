//! DataFusion functions with a faster path for the arguments that allow one.
//!
//! Some of DataFusion's list functions work row by row where a whole batch
//! can be done at once (`cardinality`, `array_concat`). [`FastPath`] keeps
//! such a function as it is (name, aliases, signature, types, coercion,
//! documentation) and tries a kernel of this crate first: the kernel takes
//! the arguments it can do, and every other call goes to DataFusion's
//! function, so the results are the same.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::logical_expr::preimage::PreimageResult;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ExpressionPlacement, LogicalPlan, ReturnFieldArgs,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, StructFieldMapping,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// A kernel for some arguments of a function: their result, or `None` for
/// arguments it leaves to DataFusion's function.
pub type Kernel = fn(&[ColumnarValue]) -> Result<Option<ColumnarValue>>;

/// DataFusion's function `inner`, with `kernel` tried first.
#[derive(Debug)]
pub struct FastPath {
    inner: Arc<ScalarUDF>,
    kernel: Kernel,
}

impl FastPath {
    pub fn new(inner: Arc<ScalarUDF>, kernel: Kernel) -> Self {
        Self { inner, kernel }
    }
}

/// One function whatever its kernel: the same name, signature and results.
impl PartialEq for FastPath {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl Eq for FastPath {}

impl Hash for FastPath {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inner.hash(state);
    }
}

/// Everything but the call is DataFusion's function's (but the two methods
/// DataFusion no longer calls, `display_name` and `is_nullable`).
impl ScalarUDFImpl for FastPath {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.schema_name(args)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn with_updated_config(&self, config: &ConfigOptions) -> Option<ScalarUDF> {
        let inner = self.inner.inner().with_updated_config(config)?;
        Some(ScalarUDF::from(Self::new(Arc::new(inner), self.kernel)))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn is_strict(&self) -> bool {
        self.inner.is_strict()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match (self.kernel)(&args.args)? {
            Some(result) => Ok(result),
            None => self.inner.invoke_with_args(args),
        }
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn preimage(
        &self,
        args: &[Expr],
        lit_expr: &Expr,
        info: &SimplifyContext,
    ) -> Result<PreimageResult> {
        self.inner.preimage(args, lit_expr, info)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn conditional_arguments<'a>(
        &self,
        args: &'a [Expr],
    ) -> Option<(Vec<&'a Expr>, Vec<&'a Expr>)> {
        self.inner.inner().conditional_arguments(args)
    }

    fn evaluate_bounds(&self, input: &[&Interval]) -> Result<Interval> {
        self.inner.evaluate_bounds(input)
    }

    fn propagate_constraints(
        &self,
        interval: &Interval,
        inputs: &[&Interval],
    ) -> Result<Option<Vec<Interval>>> {
        self.inner.propagate_constraints(interval, inputs)
    }

    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn preserves_lex_ordering(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }

    fn strictly_order_preserving(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.strictly_order_preserving(inputs)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn struct_field_mapping(
        &self,
        literal_args: &[Option<ScalarValue>],
    ) -> Option<StructFieldMapping> {
        self.inner.struct_field_mapping(literal_args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        self.inner.placement(args)
    }
}

/// The arguments as arrays, or `None` if one of them is a scalar.
pub(crate) fn columns(args: &[ColumnarValue]) -> Option<Vec<&ArrayRef>> {
    args.iter()
        .map(|arg| match arg {
            ColumnarValue::Array(array) => Some(array),
            ColumnarValue::Scalar(_) => None,
        })
        .collect()
}

/// Calls `udf` on `args` of `rows` rows, as a plan would; for tests.
#[cfg(test)]
pub(crate) fn call(udf: &dyn ScalarUDFImpl, args: Vec<ColumnarValue>, rows: usize) -> ArrayRef {
    try_call(udf, args, rows).expect("a result")
}

/// [`call`], with its error.
#[cfg(test)]
pub(crate) fn try_call(
    udf: &dyn ScalarUDFImpl,
    args: Vec<ColumnarValue>,
    rows: usize,
) -> Result<ArrayRef> {
    let arg_fields = args
        .iter()
        .map(|a| Arc::new(arrow_schema::Field::new("a", a.data_type(), true)))
        .collect::<Vec<_>>();
    let types: Vec<DataType> = args.iter().map(|a| a.data_type()).collect();
    let return_type = udf.return_type(&types)?;
    udf.invoke_with_args(ScalarFunctionArgs {
        args,
        arg_fields,
        number_rows: rows,
        return_field: Arc::new(arrow_schema::Field::new("out", return_type, true)),
        config_options: Arc::new(ConfigOptions::default()),
    })?
    .into_array(rows)
}

/// Puts this crate's [`FastPath`] functions in place of DataFusion's in a
/// plan. SQL's `list[i]`, `a || b` and `[a, b]` are planned with DataFusion's own
/// `array_element`, `array_concat` and `make_array`, not with the functions registered
/// under those names; the results, names and types stay the same. Sums of
/// four-vectors selected from one list (`inv_mass(list_select(v, i),
/// list_select(v, j))`) become one function that does both (`selected.rs`).
#[derive(Debug)]
pub(crate) struct UseFastPaths {
    functions: HashMap<String, Arc<ScalarUDF>>,
}

impl UseFastPaths {
    pub(crate) fn new() -> Self {
        let functions = [
            super::cardinality(),
            super::array_concat(),
            super::array_element(),
            super::make_array(),
        ]
        .into_iter()
        .map(|f| (f.name().to_string(), Arc::new(f)))
        .collect();
        Self { functions }
    }

    /// The fast version of `expr`'s function, if it has one and is not it.
    fn swap(&self, expr: Expr) -> Result<Transformed<Expr>> {
        let Expr::ScalarFunction(call) = expr else {
            return Ok(Transformed::no(expr));
        };
        match self.functions.get(call.func.name()) {
            Some(fast) if !Arc::ptr_eq(fast, &call.func) => Ok(Transformed::yes(
                Expr::ScalarFunction(ScalarFunction::new_udf(fast.clone(), call.args)),
            )),
            _ => Ok(Transformed::no(Expr::ScalarFunction(call))),
        }
    }
}

impl OptimizerRule for UseFastPaths {
    fn name(&self) -> &str {
        "use_fast_paths"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        // A fused sum has a name of its own: the plan's columns keep theirs.
        let names = NamePreserver::new(&plan);
        plan.map_expressions(|expr| {
            let name = names.save(&expr);
            let fused =
                expr.transform_up(|e| self.swap(e)?.transform_data(super::selected::fuse))?;
            Ok(fused.update_data(|e| name.restore(e)))
        })
    }
}

#[cfg(test)]
mod tests {
    use datafusion::common::tree_node::TreeNodeRecursion;

    use super::*;
    use crate::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};

    /// The scalar functions of the optimized plan of `sql` over the
    /// importer fixture, each with whether it is a `FastPath`.
    async fn planned_functions(sql: &str) -> Result<Vec<(String, bool)>> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/importer.root");
        let ctx = session_context();
        let options = RNTupleReadOptions::default().with_ntuple("Events");
        ctx.register_rntuple("events", path, options).await?;
        let plan = ctx.sql(sql).await?.into_optimized_plan()?;
        let mut found = Vec::new();
        plan.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::ScalarFunction(call) = e {
                    let fast = call.func.inner().downcast_ref::<FastPath>().is_some();
                    found.push((call.func.name().to_string(), fast));
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(found)
    }

    /// `list[i]`, `a || b` and `cardinality` in SQL run this crate's kernels.
    #[tokio::test]
    async fn sql_syntax_gets_the_fast_functions() -> Result<()> {
        let sql = "SELECT Muon_pt[1], Muon_pt || Muon_eta, cardinality(Muon_pt) FROM events";
        let mut found = planned_functions(sql).await?;
        found.sort();
        assert_eq!(
            found,
            [
                ("array_concat".to_string(), true),
                ("array_element".to_string(), true),
                ("cardinality".to_string(), true),
            ]
        );
        Ok(())
    }

    /// `[a, b]` in SQL runs this crate's `make_array`.
    #[tokio::test]
    async fn sql_list_brackets_get_the_fast_make_array() -> Result<()> {
        let found = planned_functions("SELECT [MET_pt, MET_pt] FROM events").await?;
        assert_eq!(found, [("make_array".to_string(), true)]);
        Ok(())
    }
}
