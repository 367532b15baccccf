//! The sessions compute a subexpression that a filter and a projection (or
//! one of them) repeat once. The answers must be those of the same plan
//! without that rule; conditional parts, lambdas and volatile functions must
//! keep their meaning.

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::util::pretty::pretty_format_batches;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::displayable;
use datafusion::prelude::SessionContext;
use rntuple::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};

const RULE: &str = "share_subexpressions";

/// 2,000 NanoAOD-like events written by ROOT (the ADL test file).
fn events() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/adl/nanoaod_events.root")
        .to_string_lossy()
        .into_owned()
}

async fn with_events() -> SessionContext {
    let ctx = session_context();
    ctx.register_rntuple("events", &events(), RNTupleReadOptions::default())
        .await
        .unwrap();
    ctx
}

/// The same session without the rule.
fn without_rule(ctx: &SessionContext) -> SessionContext {
    let state = ctx.state();
    let rules = state
        .physical_optimizers()
        .iter()
        .filter(|rule| rule.name() != RULE)
        .cloned()
        .collect();
    let state = SessionStateBuilder::new_from_existing(state)
        .with_physical_optimizer_rules(rules)
        .build();
    SessionContext::new_with_state(state)
}

/// The rows of the answer, printed and sorted (partitions interleave).
async fn rows(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// The physical plan, without the scan's line (which shows the filter
/// given to it for pruning, as written).
async fn plan(ctx: &SessionContext, sql: &str) -> String {
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let text = displayable(plan.as_ref()).indent(true).to_string();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.contains("DataSourceExec"))
        .collect();
    lines.join("\n")
}

fn adl(query: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("benches/adl/{query}.sql"));
    std::fs::read_to_string(path).unwrap()
}

#[tokio::test]
async fn adl_queries_compute_each_repeated_function_once() {
    let ctx = with_events().await;
    let plain = without_rule(&ctx);
    // Q5 writes pairs(nMuon) four times, Q8 pairs(n) six times; DataFusion
    // copies them into the filter it pushes down. (Q5's p4(...), written
    // twice, is one argument of the fused inv_mass: functions/selected.rs.)
    // Q7's coalesce(array_sum(...), 0.0) is a CASE that tests the sum and
    // then gives it.
    for (query, calls) in [
        ("q5", &["pairs("][..]),
        ("q7", &["array_sum("][..]),
        ("q8", &["pairs(", "array_repeat(0"][..]),
    ] {
        let sql = adl(query);
        let before = plan(&plain, &sql).await;
        let after = plan(&ctx, &sql).await;
        for call in calls {
            assert!(before.matches(call).count() >= 2, "{query}: {before}");
            assert_eq!(after.matches(call).count(), 1, "{query}: {after}");
        }
        let expected = rows(&plain, &sql).await;
        assert!(expected.len() > 10, "{query} selects events");
        assert_eq!(rows(&ctx, &sql).await, expected, "{query}");
    }
}

#[tokio::test]
async fn every_adl_query_gives_the_answer_of_the_plain_plan() {
    let ctx = with_events().await;
    let plain = without_rule(&ctx);
    for query in ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8"] {
        let sql = adl(query);
        assert_eq!(rows(&ctx, &sql).await, rows(&plain, &sql).await, "{query}");
    }
}

#[tokio::test]
async fn lambdas_that_capture_columns_read_their_own_columns() {
    let ctx = with_events().await;
    let plain = without_rule(&ctx);
    // The shared columns are added after the input's: the captured
    // `Muon_pt` keeps its place, the lambda variables move.
    let sql = "
        WITH c AS (
          SELECT event, Muon_pt AS pt, array_transform(pairs(nMuon), p -> p['i']) AS i
          FROM events
        )
        SELECT event, array_transform(i, k -> pt[k] * 2) AS doubled,
               array_transform(i, k -> k + 1) AS next
        FROM c
        WHERE cardinality(array_filter(array_transform(i, k -> pt[k]), x -> x > 20)) > 0";
    let after = plan(&ctx, sql).await;
    assert_eq!(after.matches("pairs(").count(), 1, "{after}");
    let expected = rows(&plain, sql).await;
    assert!(expected.len() > 10);
    assert_eq!(rows(&ctx, sql).await, expected);
}

fn numbers(ctx: &SessionContext) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int64, false),
        Field::new("d", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![2, 3, 1 << 40, 4, 0])),
            Arc::new(Int64Array::from(vec![1, 0, 2, 5, 0])),
        ],
    )
    .unwrap();
    ctx.register_batch("t", batch).unwrap();
}

#[tokio::test]
async fn conditional_parts_are_not_computed_ahead() {
    let ctx = session_context();
    numbers(&ctx);
    // `10 / d` fails where d = 0; only the CASE as a whole may be shared.
    let sql = "SELECT n, CASE WHEN d <> 0 THEN 10 / d END AS a,
                      CASE WHEN d <> 0 THEN 10 / d END + 1 AS b,
                      coalesce(n, 10 / d) AS c
               FROM t ORDER BY n";
    let expected = rows(&without_rule(&ctx), sql).await;
    assert_eq!(rows(&ctx, sql).await, expected);
    assert!(expected.iter().any(|r| r.contains("| 11 ")), "{expected:?}");
}

#[tokio::test]
async fn shared_work_waits_for_the_light_conditions() {
    let ctx = session_context();
    numbers(&ctx);
    // pairs(2^40) is an error. The filter repeats pairs(n), so it is
    // computed once, after the light condition on n has dropped that row;
    // without the rule, DataFusion computes it on every row and fails.
    let sql = "SELECT n FROM t
               WHERE n < 100 AND cardinality(pairs(n)) > 2 AND cardinality(pairs(n)) < 10";
    assert!(without_rule(&ctx)
        .sql(sql)
        .await
        .unwrap()
        .collect()
        .await
        .is_err());
    let got = rows(&ctx, sql).await.join("\n");
    assert!(got.contains("| 3 |") && got.contains("| 4 |"), "{got}");
    assert!(!got.contains("| 2 |") && !got.contains("| 0 |"), "{got}");
    assert_eq!(plan(&ctx, sql).await.matches("pairs(").count(), 1);
}

#[tokio::test]
async fn volatile_functions_are_not_shared() {
    let ctx = session_context();
    numbers(&ctx);
    let sql = "SELECT random() + n AS a, random() + n AS b FROM t";
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    // Two draws per row: the columns differ.
    let differ = text
        .lines()
        .skip(3)
        .filter(|l| l.starts_with('|'))
        .any(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            cells.get(1) != cells.get(2)
        });
    assert!(differ, "{text}");
}
