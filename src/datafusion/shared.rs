//! A physical optimizer rule that computes a repeated subexpression once.
//!
//! Analysis queries repeat themselves: Q8 writes `pairs(n)` six times in one
//! expression, and DataFusion pushes a filter on a column of a CTE below the
//! CTE's projection by copying the column's whole expression into the
//! filter, so the projection above computes it again on the rows that pass.
//! DataFusion's own common-subexpression rule is left out of these sessions
//! (it breaks lambdas that capture columns), and it would not look inside
//! the arguments of higher-order functions anyway.
//!
//! This rule works on the physical plan, where both copies sit in one
//! `ProjectionExec` over one `FilterExec`:
//!
//! ```text
//!  ProjectionExec [f(E), g]            ProjectionExec [f(#E), g]
//!    FilterExec a AND h(E)     ──>       FilterExec h(#E)
//!      input                               ProjectionExec [columns read above, E AS #E]
//!                                            FilterExec a
//!                                              input
//! ```
//!
//! `E` is a largest subexpression met twice or more, once at least in the
//! filter. The conjuncts that do not use it filter first, so `E` is computed
//! on no row the original filter would not have computed it on. A
//! projection alone, or a filter alone, with a repeated subexpression is
//! split the same way. When the filter sits under two projections (a CTE
//! over a CTE, as in Q8), the upper one is read through the lower one, so
//! that the filter's copy matches the upper's column.
//!
//! Only subexpressions that are evaluated for every row of their node are
//! taken: a `CASE`'s first condition but not its branches, not the right
//! side of `AND`/`OR`, not a later argument of a short-circuiting function,
//! never a lambda body, and nothing volatile. Once taken, a subexpression is
//! read from its column wherever it occurs outside lambdas, branches too:
//! `coalesce(e, 0)`, planned as `CASE WHEN e IS NOT NULL THEN e ELSE 0
//! END`, computes a heavy `e` once (Q7).
//!
//! The projection below the second filter passes on only the input columns
//! read above it (filtering list columns is not free), then the shared
//! ones; the columns of the expressions above, those that lambdas capture
//! included, are renumbered to match, and their lambda variables, which
//! come after a batch's columns, move with the new width.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{internal_err, Result};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, Column, IsNotNullExpr, IsNullExpr, LambdaExpr, LambdaVariable,
    Literal, NegativeExpr, NotExpr, TryCastExpr,
};
use datafusion::physical_expr::{
    conjunction, split_conjunction, HigherOrderFunctionExpr, PhysicalExpr, ScalarFunctionExpr,
};
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::ExecutionPlan;

type Expr = Arc<dyn PhysicalExpr>;
type Plan = Arc<dyn ExecutionPlan>;

/// A filter that only filters, and the projection of its columns that it
/// made itself, if any.
type PlainFilter = (Plan, Option<ProjectionExec>);

/// Computes each repeated subexpression of a filter and the projection
/// above it once (see the module documentation).
#[derive(Debug, Default)]
pub struct ShareSubexpressions;

impl PhysicalOptimizerRule for ShareSubexpressions {
    fn optimize(&self, plan: Plan, _config: &ConfigOptions) -> Result<Plan> {
        plan.transform_down(|node| {
            Ok(match share(&node)? {
                Some(shared) => Transformed::yes(shared),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "share_subexpressions"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `node` with its repeated subexpressions computed once, or `None`.
fn share(node: &Plan) -> Result<Option<Plan>> {
    let Some(projection) = node.downcast_ref::<ProjectionExec>() else {
        // A filter alone, or with its own choice of columns.
        return match as_plain_filter(node)? {
            Some((filter, columns)) => share_filter(&filter, columns.as_ref()),
            None => Ok(None),
        };
    };
    if let Some((filter, columns)) = as_plain_filter(projection.input())? {
        let above = match &columns {
            None => Some(projection.clone()),
            Some(columns) => merge(projection, columns)?,
        };
        if let Some(above) = above {
            if let Some(shared) = share_filter(&filter, Some(&above))? {
                return Ok(Some(shared));
            }
        }
    }
    // A CTE that computes a column with a filter on a column of the CTE
    // below it: the filter repeats what the lower projection's columns are
    // made of, so it is matched against both projections in one.
    if let Some(lower) = projection.input().downcast_ref::<ProjectionExec>() {
        if let Some((filter, None)) = as_plain_filter(lower.input())? {
            if let Some(merged) = merge(projection, lower)? {
                if let Some(shared) = share_filter(&filter, Some(&merged))? {
                    return Ok(Some(shared));
                }
            }
        }
    }
    share_projection(projection)
}

/// `node` as a filter that only filters, with the projection of its
/// columns that it makes itself, if any; `None` for anything else (a
/// filter with a limit of its own too).
fn as_plain_filter(node: &Plan) -> Result<Option<PlainFilter>> {
    let Some(filter) = node.downcast_ref::<FilterExec>() else {
        return Ok(None);
    };
    if filter.fetch().is_some() {
        return Ok(None);
    }
    let Some(indices) = filter.projection() else {
        return Ok(Some((Arc::clone(node), None)));
    };
    let plain = filter_like(
        filter,
        Arc::clone(filter.predicate()),
        Arc::clone(filter.input()),
    )?;
    let schema = plain.schema();
    let columns = indices
        .iter()
        .map(|&i| pass_column(&schema, i))
        .collect::<Vec<_>>();
    let columns = ProjectionExec::try_new(columns, Arc::clone(&plain))?;
    Ok(Some((plain, Some(columns))))
}

/// A filter of `predicate` over `input` with the settings of `like`.
fn filter_like(like: &FilterExec, predicate: Expr, input: Plan) -> Result<Plan> {
    filter_projecting(like, predicate, input, None)
}

/// A filter of `predicate` over `input` with the settings of `like` that
/// passes on only the columns `projection`, if given.
fn filter_projecting(
    like: &FilterExec,
    predicate: Expr,
    input: Plan,
    projection: Option<Vec<usize>>,
) -> Result<Plan> {
    let filter = FilterExecBuilder::new(predicate, input)
        .apply_projection(projection)?
        .with_default_selectivity(like.default_selectivity())
        .with_batch_size(like.batch_size())
        .build()?;
    Ok(Arc::new(filter))
}

/// `upper` over `lower` as one projection over `lower`'s input, or `None`
/// when a lambda of `upper` captures a column that `lower` computes.
fn merge(upper: &ProjectionExec, lower: &ProjectionExec) -> Result<Option<ProjectionExec>> {
    match inline(upper, lower)? {
        Some(exprs) => Ok(Some(ProjectionExec::try_new_with_schema_metadata(
            exprs,
            Arc::clone(lower.input()),
            &upper.schema(),
        )?)),
        None => Ok(None),
    }
}

/// Splits `filter` (and `projection` above it, if any) around the largest
/// subexpressions that the filter uses and that occur twice or more.
fn share_filter(node: &Plan, projection: Option<&ProjectionExec>) -> Result<Option<Plan>> {
    let Some(filter) = node.downcast_ref::<FilterExec>() else {
        return Ok(None);
    };
    let input = Arc::clone(filter.input());
    let schema = input.schema();
    // Conjuncts that only compare and count filter first, on their own:
    // what they would share is not worth computing for the rows they drop.
    let (light, heavy): (Vec<Expr>, Vec<Expr>) = split_conjunction(filter.predicate())
        .into_iter()
        .cloned()
        .partition(|c| !is_heavy(c, &schema));
    let projected: Vec<&ProjectionExpr> = projection
        .map(|p| p.expr().iter().collect())
        .unwrap_or_default();
    let mut counts = Counts::default();
    for c in &heavy {
        counts.add(c, true);
    }
    for p in &projected {
        counts.add(&p.expr, false);
    }
    let roots = heavy.iter().chain(projected.iter().map(|p| &p.expr));
    let shared = counts.largest_repeated(roots, true, &schema);
    if shared.is_empty() {
        return Ok(None);
    }
    let (costly, rest): (Vec<Expr>, Vec<Expr>) =
        heavy.into_iter().partition(|c| uses_any(c, &shared));
    let cheap: Vec<Expr> = light.into_iter().chain(rest).collect();
    let width = schema.fields().len();
    let first = if cheap.is_empty() {
        input
    } else {
        filter_like(filter, conjunction(cheap), input)?
    };
    // The shared values as columns after the input's, then only the input
    // columns read above (a filter of lists costs per column it carries).
    let names = shared_names(&schema, shared.len());
    let placeholders = placeholders(&names, width);
    let costly = costly
        .iter()
        .map(|e| replace(e, &shared, &placeholders))
        .collect::<Result<Vec<_>>>()?;
    let projected = projected
        .iter()
        .map(|e| Ok((replace(&e.expr, &shared, &placeholders)?, e.alias.clone())))
        .collect::<Result<Vec<_>>>()?;
    let kept: Vec<usize> = match projection {
        Some(_) => {
            let mut used = vec![false; width];
            for e in costly.iter().chain(projected.iter().map(|(e, _)| e)) {
                mark_columns(e, &mut used)?;
            }
            (0..width).filter(|&i| used[i]).collect()
        }
        None => (0..width).collect(),
    };
    let below = compute_below(first, &kept, &shared, &names)?;
    let below_width = kept.len() + shared.len();
    let positions = positions_after(width, &kept, shared.len());
    let renumbered = |e: Expr| renumber(e, &positions, width, below_width);
    let costly = costly
        .into_iter()
        .map(renumbered)
        .collect::<Result<Vec<_>>>()?;
    let top = match projection {
        Some(p) => {
            let projected = projected
                .into_iter()
                .map(|(e, alias)| Ok((renumbered(e)?, alias)))
                .collect::<Result<Vec<_>>>()?;
            // The filter passes on only what the projection reads.
            let mut used = vec![false; below_width];
            for (e, _) in &projected {
                mark_columns(e, &mut used)?;
            }
            let passed: Vec<usize> = (0..below_width).filter(|&i| used[i]).collect();
            let mut positions = vec![None; below_width];
            for (p, &i) in passed.iter().enumerate() {
                positions[i] = Some(p);
            }
            let filtered =
                filter_projecting(filter, conjunction(costly), below, Some(passed.clone()))?;
            let exprs = projected
                .into_iter()
                .map(|(e, alias)| {
                    let e = renumber(e, &positions, below_width, passed.len())?;
                    Ok(ProjectionExpr::new(e, alias))
                })
                .collect::<Result<Vec<_>>>()?;
            ProjectionExec::try_new_with_schema_metadata(exprs, filtered, &p.schema())?
        }
        // The filter's own columns, without the shared ones.
        None => {
            let schema = filter.schema();
            let columns: Vec<usize> = (0..width).collect();
            let filtered = filter_projecting(filter, conjunction(costly), below, Some(columns))?;
            let exprs = (0..width).map(|i| pass_column(&schema, i));
            ProjectionExec::try_new_with_schema_metadata(exprs, filtered, &schema)?
        }
    };
    // What the projection alone repeats.
    Ok(Some(match share_projection(&top)? {
        Some(shared) => shared,
        None => Arc::new(top),
    }))
}

/// Splits `projection` around the largest subexpressions it repeats.
fn share_projection(projection: &ProjectionExec) -> Result<Option<Plan>> {
    let mut counts = Counts::default();
    for p in projection.expr() {
        counts.add(&p.expr, false);
    }
    let input = Arc::clone(projection.input());
    let schema = input.schema();
    let roots = projection.expr().iter().map(|p| &p.expr);
    let shared = counts.largest_repeated(roots, false, &schema);
    if shared.is_empty() {
        return Ok(None);
    }
    let width = schema.fields().len();
    let names = shared_names(&schema, shared.len());
    let placeholders = placeholders(&names, width);
    let all: Vec<usize> = (0..width).collect();
    let below = compute_below(input, &all, &shared, &names)?;
    let positions = positions_after(width, &all, shared.len());
    let exprs = projection
        .expr()
        .iter()
        .map(|e| {
            let expr = replace(&e.expr, &shared, &placeholders)?;
            let expr = renumber(expr, &positions, width, width + shared.len())?;
            Ok(ProjectionExpr::new(expr, e.alias.clone()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(Arc::new(
        ProjectionExec::try_new_with_schema_metadata(exprs, below, &projection.schema())?,
    )))
}

/// Column `i` of `schema`, passed on under its own name.
fn pass_column(schema: &Schema, i: usize) -> ProjectionExpr {
    let name = schema.field(i).name();
    ProjectionExpr::new(Arc::new(Column::new(name, i)) as Expr, name.clone())
}

/// Names for `n` shared columns that none of `schema`'s fields has.
fn shared_names(schema: &Schema, n: usize) -> Vec<String> {
    (0..n)
        .map(|k| {
            let mut name = format!("__shared_{k}");
            while schema.fields().iter().any(|f| *f.name() == name) {
                name.insert(0, '_');
            }
            name
        })
        .collect()
}

/// Columns standing for the shared values while the expressions above are
/// rewritten: after the `width` columns of the input.
fn placeholders(names: &[String], width: usize) -> Vec<Expr> {
    names
        .iter()
        .enumerate()
        .map(|(k, name)| Arc::new(Column::new(name, width + k)) as Expr)
        .collect()
}

/// A projection over `input` that passes its columns `kept` through and
/// adds a column `names[k]` for each of `shared`.
fn compute_below(input: Plan, kept: &[usize], shared: &[Expr], names: &[String]) -> Result<Plan> {
    let schema = input.schema();
    let passed = kept.iter().map(|&i| pass_column(&schema, i));
    let computed = shared
        .iter()
        .zip(names)
        .map(|(e, name)| ProjectionExpr::new(Arc::clone(e), name.clone()));
    let exprs: Vec<ProjectionExpr> = passed.chain(computed).collect();
    Ok(Arc::new(ProjectionExec::try_new(exprs, input)?))
}

/// Marks the input columns (below `used.len()`) that `e` reads, inside
/// lambdas too.
fn mark_columns(e: &Expr, used: &mut [bool]) -> Result<()> {
    e.apply(|node| {
        if let Some(column) = node.downcast_ref::<Column>() {
            if let Some(slot) = used.get_mut(column.index()) {
                *slot = true;
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .map(|_| ())
}

/// Where each of the `width` input columns and then the `shared` columns
/// after them lands in the projection of [`compute_below`] that passes on
/// the input columns `kept`.
fn positions_after(width: usize, kept: &[usize], shared: usize) -> Vec<Option<usize>> {
    let mut positions = vec![None; width];
    for (p, &i) in kept.iter().enumerate() {
        positions[i] = Some(p);
    }
    positions.extend((0..shared).map(|k| Some(kept.len() + k)));
    positions
}

/// `e` made to read column `positions[i]` where it read column `i`, inside
/// lambdas too. Lambda variables sit after all of a batch's columns: those
/// from `lambda_base` on move to start at `new_width`, and the lambdas are
/// made again around them.
fn renumber(
    e: Expr,
    positions: &[Option<usize>],
    lambda_base: usize,
    new_width: usize,
) -> Result<Expr> {
    e.transform_up(|node| {
        if let Some(column) = node.downcast_ref::<Column>() {
            let i = column.index();
            return match positions.get(i).copied().flatten() {
                Some(to) if to == i => Ok(Transformed::no(node)),
                Some(to) => Ok(Transformed::yes(
                    Arc::new(Column::new(column.name(), to)) as Expr
                )),
                None => internal_err!("column {i} is read but not passed on"),
            };
        }
        Ok(match node.downcast_ref::<LambdaVariable>() {
            Some(v) if v.index() >= lambda_base && lambda_base != new_width => {
                Transformed::yes(Arc::new(LambdaVariable::new(
                    v.index() - lambda_base + new_width,
                    Arc::clone(v.field()),
                )) as Expr)
            }
            _ => Transformed::no(node),
        })
    })
    .data()
}

/// The expressions of `upper` over the input of `lower`, with `lower`'s
/// expressions in place of the columns it makes; `None` when a lambda of
/// `upper` captures a column that `lower` computes.
fn inline(upper: &ProjectionExec, lower: &ProjectionExec) -> Result<Option<Vec<ProjectionExpr>>> {
    let lower_exprs: Vec<Expr> = lower.expr().iter().map(|p| Arc::clone(&p.expr)).collect();
    let from = lower_exprs.len();
    let to = lower.input().schema().fields().len();
    let same: Vec<Option<usize>> = (0..from).map(Some).collect();
    let mut inlined = Vec::with_capacity(upper.expr().len());
    for p in upper.expr() {
        // The lambda variables of `upper` first, while every lambda
        // variable is one of its own.
        let moved = renumber(Arc::clone(&p.expr), &same, from, to)?;
        match substitute(&moved, &lower_exprs, false)? {
            Some(e) => inlined.push(ProjectionExpr::new(e, p.alias.clone())),
            None => return Ok(None),
        }
    }
    Ok(Some(inlined))
}

/// `e` with `lower[i]` in place of each column `i`; `None` when such a
/// column, inside a lambda, is not a plain column of `lower`'s input, or is
/// an expression that sharing could not take back out if it were copied
/// (a `CASE`, say).
fn substitute(e: &Expr, lower: &[Expr], in_lambda: bool) -> Result<Option<Expr>> {
    if let Some(column) = e.downcast_ref::<Column>() {
        let plain = |target: &&Expr| target.is::<Column>() || target.is::<Literal>();
        let shareable = |target: &&Expr| unconditional_children(target).is_some();
        return Ok(lower
            .get(column.index())
            .filter(|target| plain(target) || (!in_lambda && shareable(target)))
            .cloned());
    }
    let in_lambda = in_lambda || e.is::<LambdaExpr>();
    let children = e.children();
    if children.is_empty() {
        return Ok(Some(Arc::clone(e)));
    }
    let mut new_children = Vec::with_capacity(children.len());
    for child in children {
        match substitute(child, lower, in_lambda)? {
            Some(new) => new_children.push(new),
            None => return Ok(None),
        }
    }
    Arc::clone(e).with_new_children(new_children).map(Some)
}

/// `e` with each occurrence of `shared[k]` replaced by `columns[k]`, also
/// where it is evaluated for some rows only (a `CASE` branch): each shared
/// value is computed for every row, where the node computed it anyway.
fn replace(e: &Expr, shared: &[Expr], columns: &[Expr]) -> Result<Expr> {
    if let Some(k) = shared.iter().position(|s| s == e) {
        return Ok(Arc::clone(&columns[k]));
    }
    let Some(positions) = known_children(e) else {
        return Ok(Arc::clone(e));
    };
    let children: Vec<Expr> = e.children().into_iter().cloned().collect();
    let mut changed = false;
    let mut new_children = Vec::with_capacity(children.len());
    for (i, child) in children.iter().enumerate() {
        let new = if positions.contains(&i) {
            replace(child, shared, columns)?
        } else {
            Arc::clone(child)
        };
        changed |= !Arc::ptr_eq(&new, child);
        new_children.push(new);
    }
    if changed {
        Arc::clone(e).with_new_children(new_children)
    } else {
        Ok(Arc::clone(e))
    }
}

/// How often each subexpression that may be computed ahead occurs, and
/// whether it occurs in a filter.
#[derive(Default)]
struct Counts {
    seen: HashMap<Expr, Count>,
}

#[derive(Default)]
struct Count {
    /// Occurrences evaluated for every row of their node.
    unconditional: usize,
    /// Occurrences anywhere outside lambdas (a `CASE` branch too).
    anywhere: usize,
    /// Whether an unconditional occurrence is in a filter.
    in_filter: bool,
}

impl Counts {
    fn add(&mut self, root: &Expr, in_filter: bool) {
        visit(root, &mut |e| {
            let count = self.seen.entry(Arc::clone(e)).or_default();
            count.unconditional += 1;
            count.in_filter |= in_filter;
            true
        });
        visit_known(root, &mut |e| {
            self.seen.entry(Arc::clone(e)).or_default().anywhere += 1;
        });
    }

    /// The subexpressions met twice or more where they are evaluated for
    /// every row (and in a filter, if `from_filter`), or once there and
    /// again in a `CASE` branch if they are heavy (`coalesce(e, 0)` is
    /// `CASE WHEN e IS NOT NULL THEN e ELSE 0 END`), taken from the top:
    /// none inside another, in the order they are first met. `schema` is
    /// the input's.
    fn largest_repeated<'a>(
        &self,
        roots: impl IntoIterator<Item = &'a Expr>,
        from_filter: bool,
        schema: &Schema,
    ) -> Vec<Expr> {
        let mut shared: Vec<Expr> = Vec::new();
        for root in roots {
            visit(root, &mut |e| {
                let repeated = self.seen.get(e).is_some_and(|count| {
                    let twice =
                        count.unconditional >= 2 || (count.anywhere >= 2 && is_heavy(e, schema));
                    twice && (count.in_filter || !from_filter)
                });
                if repeated && !shared.contains(e) {
                    shared.push(Arc::clone(e));
                }
                !repeated
            });
        }
        shared
    }
}

/// Whether `root` uses one of `shared` where it may be computed ahead.
fn uses_any(root: &Expr, shared: &[Expr]) -> bool {
    let mut found = false;
    visit(root, &mut |e| {
        found |= shared.contains(e);
        !found
    });
    found
}

/// Calls `f` on each subexpression of `e` (from the top) that may be
/// computed ahead, for every row, and goes below it when `f` says so.
fn visit(e: &Expr, f: &mut impl FnMut(&Expr) -> bool) {
    let Some(positions) = unconditional_children(e) else {
        return;
    };
    if !is_volatile(e) && !f(e) {
        return;
    }
    let children = e.children();
    for i in positions {
        if let Some(child) = children.get(i) {
            visit(child, f);
        }
    }
}

/// Calls `f` on each subexpression of `e` outside lambdas, evaluated for
/// every row or not, from the top.
fn visit_known(e: &Expr, f: &mut impl FnMut(&Expr)) {
    let Some(positions) = known_children(e) else {
        return;
    };
    if !is_volatile(e) {
        f(e);
    }
    let children = e.children();
    for i in positions {
        if let Some(child) = children.get(i) {
            visit_known(child, f);
        }
    }
}

/// The children of `e` that this rule looks into, evaluated for every row
/// `e` is or not: all but lambdas; `None` where [`unconditional_children`]
/// is.
fn known_children(e: &Expr) -> Option<Vec<usize>> {
    unconditional_children(e)?;
    let children = e.children();
    Some(
        (0..children.len())
            .filter(|&i| !children.get(i).is_some_and(|c| wraps_lambda(c)))
            .collect(),
    )
}

/// The children of `e` that are evaluated for every row `e` is, or `None`
/// for an expression this rule does not take apart or compute ahead
/// (columns, literals, lambdas and anything else it does not know). Of a
/// `CASE`, the operand and the first condition see every row.
fn unconditional_children(e: &Expr) -> Option<Vec<usize>> {
    let n = e.children().len();
    if let Some(case) = e.downcast_ref::<CaseExpr>() {
        return Some(if case.expr().is_some() {
            vec![0, 1]
        } else {
            vec![0]
        });
    }
    if let Some(f) = e.downcast_ref::<ScalarFunctionExpr>() {
        return Some(if f.fun().short_circuits() {
            vec![0]
        } else {
            (0..n).collect()
        });
    }
    if e.is::<HigherOrderFunctionExpr>() {
        return Some(
            e.children()
                .iter()
                .enumerate()
                .filter(|(_, arg)| !wraps_lambda(arg))
                .map(|(i, _)| i)
                .collect(),
        );
    }
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        return Some(match b.op() {
            Operator::And | Operator::Or => vec![0],
            _ => vec![0, 1],
        });
    }
    let unary = e.is::<CastExpr>()
        || e.is::<TryCastExpr>()
        || e.is::<NotExpr>()
        || e.is::<NegativeExpr>()
        || e.is::<IsNullExpr>()
        || e.is::<IsNotNullExpr>();
    unary.then(|| vec![0])
}

/// Whether `e` builds lists or structs (with a function, not a cast), or
/// calls a higher-order function, anywhere in it: the work worth sharing.
fn is_heavy(e: &Expr, schema: &Schema) -> bool {
    let nested = |e: &Expr| e.data_type(schema).is_ok_and(|t| t.is_nested());
    if e.is::<HigherOrderFunctionExpr>() || (e.is::<ScalarFunctionExpr>() && nested(e)) {
        return true;
    }
    e.children().into_iter().any(|c| is_heavy(c, schema))
}

/// Whether `e` is a lambda, or wraps one outside any higher-order function.
fn wraps_lambda(e: &Expr) -> bool {
    if e.is::<LambdaExpr>() {
        return true;
    }
    if e.is::<HigherOrderFunctionExpr>() {
        return false;
    }
    e.children().into_iter().any(wraps_lambda)
}
