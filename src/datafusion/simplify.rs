//! DataFusion's expression simplifier, without its cost on wide tables.
//!
//! For a `TableScan`, `SimplifyExpressions` builds a schema of every column
//! of the table (to resolve the filters pushed into the scan) and checks its
//! names for duplicates. It does so in every optimizer pass, even when the
//! scan has no filter and there is nothing to simplify. A NanoAOD file has
//! about a thousand top-level columns, so that is a sizeable part of planning
//! a query over it. [`SimplifyExpressions`] here passes such scans by and
//! hands every other node to DataFusion's rule.

use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::simplify_expressions::SimplifyExpressions as Simplifier;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// DataFusion's `simplify_expressions` rule, which leaves table scans
/// without filters alone instead of building their full schema.
#[derive(Debug, Default)]
pub(crate) struct SimplifyExpressions {
    inner: Simplifier,
}

impl OptimizerRule for SimplifyExpressions {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        self.inner.apply_order()
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        match &plan {
            // A scan's only expressions are its filters.
            LogicalPlan::TableScan(scan) if scan.filters.is_empty() => Ok(Transformed::no(plan)),
            _ => self.inner.rewrite(plan, config),
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::datasource::provider_as_source;
    use datafusion::logical_expr::{ident, lit, LogicalPlanBuilder};
    use datafusion::optimizer::OptimizerContext;

    use super::*;
    use crate::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};

    /// The filters of the only table scan of `plan`.
    fn scan_filters(plan: &LogicalPlan) -> Vec<String> {
        match plan {
            LogicalPlan::TableScan(scan) => scan.filters.iter().map(|f| f.to_string()).collect(),
            other => other.inputs().into_iter().flat_map(scan_filters).collect(),
        }
    }

    /// A scan without filters is passed by untouched; the filters of a scan
    /// are simplified as DataFusion's rule does.
    #[tokio::test]
    async fn only_scans_without_filters_are_passed_by() -> Result<()> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/adl/nanoaod_events.root"
        );
        let ctx = session_context();
        ctx.register_rntuple("events", path, RNTupleReadOptions::default())
            .await?;
        let source = provider_as_source(ctx.table_provider("events").await?);
        let rule = SimplifyExpressions::default();
        let config = OptimizerContext::new();

        let bare = LogicalPlanBuilder::scan("events", source.clone(), None)?.build()?;
        let out = rule.rewrite(bare.clone(), &config)?;
        assert!(!out.transformed);
        assert_eq!(out.data, bare);

        let filter = ident("MET_pt").gt(lit(10.0_f32) + lit(5.0_f32));
        let filtered =
            LogicalPlanBuilder::scan_with_filters("events", source, None, vec![filter])?.build()?;
        let out = rule.rewrite(filtered, &config)?;
        assert!(out.transformed);
        assert_eq!(scan_filters(&out.data), ["MET_pt > Float32(15)"]);
        Ok(())
    }

    /// Sessions of this crate use this rule in place of DataFusion's and
    /// leave common subexpression elimination out.
    #[test]
    fn sessions_use_this_rule() {
        let names: Vec<String> = super::super::optimizer_rules()
            .iter()
            .map(|r| r.name().to_string())
            .collect();
        assert_eq!(
            names
                .iter()
                .filter(|n| *n == "simplify_expressions")
                .count(),
            1
        );
        assert!(!names.iter().any(|n| n == "common_sub_expression_eliminate"));
        let ctx = session_context();
        let state = ctx.state();
        let rule = state
            .optimizers()
            .iter()
            .find(|r| r.name() == "simplify_expressions")
            .expect("a simplifier");
        assert!(format!("{rule:?}").starts_with("SimplifyExpressions { inner"));
    }
}
