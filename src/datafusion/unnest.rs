//! Unnesting lists by their values.
//!
//! DataFusion's `UnnestExec` builds each unnested column with `take`, from
//! indices it computes element by element, and repeats the other columns
//! the same way. For a list without null entries the unnested column is the
//! list's values between its first and last offset, and when every list
//! unnested has the same length in each row (fields of one collection, as
//! `Jet_pt` and `Jet_eta`) no row is padded. [`ListUnnestExec`] hands such
//! values on as slices, without a copy, and repeats the other columns by one
//! set of indices; any other batch (null lists, lists of different lengths)
//! goes through DataFusion's own unnest. The physical rule [`UnnestLists`]
//! puts it in place of every `UnnestExec` that unnests lists one level deep
//! and no structs.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{NullHandling, Result};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::unnest::UnnestExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr, PlanProperties,
};
use futures::{Stream, StreamExt};

use super::{batch_slices, replace_nodes};

/// Puts a [`ListUnnestExec`] in place of every `UnnestExec` that unnests
/// lists one level deep into as many columns as it reads, and no structs.
#[derive(Debug, Default)]
pub(crate) struct UnnestLists;

impl PhysicalOptimizerRule for UnnestLists {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        replace_nodes(plan, |unnest: &UnnestExec| {
            ListUnnestExec::try_new(unnest).map(|exec| Arc::new(exec) as Arc<dyn ExecutionPlan>)
        })
    }

    fn name(&self) -> &str {
        "unnest_lists"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// DataFusion's `UnnestExec` of lists one level deep, with the values of
/// lists that need no padding handed on as slices. It plans as the unnest
/// it holds.
#[derive(Debug, Clone)]
pub(crate) struct ListUnnestExec {
    unnest: UnnestExec,
    /// Whether each input column is unnested.
    unnested: Vec<bool>,
    metrics: ExecutionPlanMetricsSet,
}

impl ListUnnestExec {
    /// The fast form of `unnest`, if it unnests only lists, each one level
    /// deep and once, into as many columns as its input has.
    fn try_new(unnest: &UnnestExec) -> Option<Self> {
        let input = unnest.input().schema();
        let n = input.fields().len();
        // The depths are in the list indices (the options' recursions are
        // what SQL asked for, and do not change the execution).
        if !unnest.struct_column_indices().is_empty() || unnest.schema().fields().len() != n {
            return None;
        }
        let mut unnested = vec![false; n];
        for list in unnest.list_column_indices() {
            let index = list.index_in_input_schema;
            let is_list = input
                .fields()
                .get(index)
                .is_some_and(|f| matches!(f.data_type(), DataType::List(_)));
            if list.depth != 1 || !is_list || std::mem::replace(&mut unnested[index], true) {
                return None;
            }
        }
        if !unnested.contains(&true) {
            return None;
        }
        Some(Self {
            unnest: unnest.clone(),
            unnested,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for ListUnnestExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ListUnnestExec")
    }
}

impl ExecutionPlan for ListUnnestExec {
    fn name(&self) -> &'static str {
        "ListUnnestExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.unnest.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.unnest.children()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.unnest.maintains_input_order()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.unnest.apply_expressions(f)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = Arc::new(self.unnest.clone()).replace_children(children, options)?;
        match plan.downcast_ref::<UnnestExec>().and_then(Self::try_new) {
            Some(exec) => Ok(Arc::new(exec)),
            None => Ok(plan),
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(children, recompute())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let batch_size = context.session_config().batch_size().max(1);
        Ok(Box::pin(ListUnnestStream {
            schema: self.unnest.schema(),
            unnest: self.unnest.clone(),
            unnested: self.unnested.clone(),
            input: self.unnest.input().execute(partition, context.clone())?,
            context,
            batch_size,
            ready: VecDeque::new(),
            general: None,
            metrics: BaselineMetrics::new(&self.metrics, partition),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// Options that have the plan's properties computed again.
fn recompute() -> ReplaceChildrenOptions {
    ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute)
}

/// The offsets of `list`, from zero.
fn relative(list: &ListArray) -> impl Iterator<Item = i32> + '_ {
    let offsets = list.offsets();
    let base = offsets.first().copied().unwrap_or(0);
    offsets.iter().map(move |&o| o - base)
}

/// The batches of a [`ListUnnestExec`] partition.
struct ListUnnestStream {
    schema: SchemaRef,
    unnest: UnnestExec,
    unnested: Vec<bool>,
    input: SendableRecordBatchStream,
    context: Arc<TaskContext>,
    batch_size: usize,
    /// Output batches of at most `batch_size` rows, to hand out.
    ready: VecDeque<RecordBatch>,
    /// DataFusion's unnest of one input batch the fast form cannot take.
    general: Option<SendableRecordBatchStream>,
    metrics: BaselineMetrics,
}

impl ListUnnestStream {
    /// The unnest of `batch` by slices of its lists' values, or `None` if a
    /// list has null entries or the lists differ in length in some row.
    fn by_slices(&self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        let mut lists = Vec::new();
        for (column, &unnested) in batch.columns().iter().zip(&self.unnested) {
            if unnested {
                let Some(list) = column.as_list_opt::<i32>() else {
                    return Ok(None);
                };
                lists.push(list);
            }
        }
        let Some(first) = lists.first() else {
            return Ok(None);
        };
        let offsets = first.offsets();
        let same_lengths = |list: &ListArray| {
            list.offsets().inner().ptr_eq(offsets.inner())
                || list.offsets().len() == offsets.len() && relative(list).eq(relative(first))
        };
        let sizes = || offsets.lengths();
        let empty_is_null = matches!(
            self.unnest.options().null_handling,
            NullHandling::PreserveAndExpandEmpty
        );
        if lists.iter().any(|l| l.null_count() > 0)
            || !lists.iter().all(|l| same_lengths(l))
            || empty_is_null && sizes().any(|size| size == 0)
        {
            return Ok(None);
        }
        // Offsets of a valid list array do not decrease.
        let len = sizes().sum::<usize>();
        // The row of each element, for the columns that are repeated.
        let mut rows: Option<UInt32Array> = None;
        let mut repeated = |column: &ArrayRef| -> Result<ArrayRef> {
            let rows = rows.get_or_insert_with(|| {
                let mut rows = Vec::with_capacity(len);
                for (row, size) in sizes().enumerate() {
                    rows.extend(std::iter::repeat_n(row as u32, size));
                }
                UInt32Array::from(rows)
            });
            Ok(take(column.as_ref(), rows, None)?)
        };
        let mut columns = Vec::with_capacity(batch.num_columns());
        let mut lists = lists.iter();
        for (column, &unnested) in batch.columns().iter().zip(&self.unnested) {
            let list = if unnested { lists.next() } else { None };
            columns.push(match list {
                Some(list) => {
                    let from = list.offsets().first().copied().unwrap_or(0);
                    list.values().slice(usize::try_from(from).unwrap_or(0), len)
                }
                None => repeated(column)?,
            });
        }
        match RecordBatch::try_new(self.schema.clone(), columns) {
            Ok(batch) => Ok(Some(batch)),
            // A type or nullability the output schema does not take.
            Err(_) => Ok(None),
        }
    }

    /// Cuts `batch` into batches of at most `batch_size` rows.
    fn push_ready(&mut self, batch: RecordBatch) {
        let size = self.batch_size;
        self.ready.extend(batch_slices(&batch, size));
    }

    /// DataFusion's unnest of `batch` alone.
    fn general(&self, batch: RecordBatch) -> Result<SendableRecordBatchStream> {
        let input = MemorySourceConfig::try_new_exec(&[vec![batch]], self.input.schema(), None)?;
        let unnest = Arc::new(self.unnest.clone()).replace_children(vec![input], recompute())?;
        unnest.execute(0, self.context.clone())
    }
}

impl Stream for ListUnnestStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                return self.metrics.record_poll(Poll::Ready(Some(Ok(batch))));
            }
            if let Some(general) = self.general.as_mut() {
                match ready!(general.poll_next_unpin(cx)) {
                    Some(result) => return self.metrics.record_poll(Poll::Ready(Some(result))),
                    None => self.general = None,
                }
            }
            let batch = match ready!(self.input.poll_next_unpin(cx)) {
                Some(Ok(batch)) => batch,
                other => return self.metrics.record_poll(Poll::Ready(other)),
            };
            let timer = self.metrics.elapsed_compute().timer();
            let result = self.by_slices(&batch);
            timer.done();
            match result {
                Ok(Some(out)) => self.push_ready(out),
                Ok(None) => match self.general(batch) {
                    Ok(stream) => self.general = Some(stream),
                    Err(e) => return Poll::Ready(Some(Err(e))),
                },
                Err(e) => return Poll::Ready(Some(Err(e))),
            }
        }
    }
}

impl RecordBatchStream for ListUnnestStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Float32Builder, Int64Array, ListBuilder, StringArray};
    use datafusion::arrow::compute::concat_batches;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::common::tree_node::TreeNode;
    use datafusion::physical_plan::collect;
    use datafusion::physical_plan::unnest::ListUnnest;
    use datafusion::prelude::SessionContext;

    use super::*;

    /// SQL's unnest of collection fields plans the fast form and gives the
    /// rows of DataFusion's own plan, with other columns repeated.
    #[tokio::test]
    async fn sql_unnest_of_collections_plans_the_fast_form() {
        use crate::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/adl/nanoaod_events.root"
        );
        let sql = "SELECT event, unnest(Jet_pt) AS pt, unnest(Jet_eta) AS eta, nJet \
                   FROM events ORDER BY event, pt, eta";
        let ours = session_context();
        ours.register_rntuple("events", path, RNTupleReadOptions::default())
            .await
            .unwrap();
        let frame = ours.sql(sql).await.unwrap();
        let plan = frame.clone().create_physical_plan().await.unwrap();
        let mut names = Vec::new();
        plan.apply(|node| {
            names.push(node.name().to_string());
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        assert!(names.iter().any(|n| n == "ListUnnestExec"), "{names:?}");
        assert!(!names.iter().any(|n| n == "UnnestExec"), "{names:?}");
        let ours = frame.collect().await.unwrap();
        // The same query without this crate's physical rules.
        let plain = SessionContext::new_with_config(crate::datafusion::session_config());
        plain
            .register_rntuple("events", path, RNTupleReadOptions::default())
            .await
            .unwrap();
        let theirs = plain.sql(sql).await.unwrap().collect().await.unwrap();
        let rows = |b: &[RecordBatch]| b.iter().map(|b| b.num_rows()).sum::<usize>();
        assert!(rows(&ours) > 1000, "{} jets", rows(&ours));
        let schema = ours[0].schema();
        assert_eq!(
            concat_batches(&schema, &ours).unwrap(),
            concat_batches(&schema, &theirs).unwrap()
        );
    }

    /// A list of `rows` rows drawn by `next`: null rows where `nulls`, and
    /// row lengths from `length`.
    fn list(next: &mut impl FnMut() -> u64, lengths: &[usize], nulls: bool) -> ArrayRef {
        let mut builder = ListBuilder::new(Float32Builder::new());
        for &n in lengths {
            for _ in 0..n {
                match next() % 10 {
                    0 => builder.values().append_null(),
                    v => builder.values().append_value(v as f32),
                }
            }
            builder.append(!(nulls && next() % 4 == 0));
        }
        Arc::new(builder.finish())
    }

    /// DataFusion's unnest and this crate's, of the same batches, give the
    /// same rows: lists that share offsets or have equal ones, lists of
    /// other lengths, null lists, empty lists, sliced batches, columns
    /// repeated, under every way of handling nulls.
    #[tokio::test]
    async fn unnest_by_slices_gives_the_rows_of_datafusion() {
        let mut next = crate::test_util::xorshift(0x9E37_79B9_7F4A_7C15);
        let ctx = SessionContext::new();
        let mut fast_batches = 0;
        for round in 0..60 {
            let rows = 1 + (next() % 40) as usize;
            let lengths: Vec<usize> = (0..rows).map(|_| (next() % 5) as usize).collect();
            let pt = list(&mut next, &lengths, round % 5 == 1);
            // Same lengths: the same offsets buffer, or equal offsets.
            let eta = match round % 3 {
                0 => Arc::new(pt.as_list::<i32>().clone()) as ArrayRef,
                1 => list(&mut next, &lengths, false),
                _ => {
                    let other: Vec<usize> = (0..rows).map(|_| (next() % 5) as usize).collect();
                    list(&mut next, &other, false)
                }
            };
            let event = Arc::new(Int64Array::from_iter_values(
                (0..rows as i64).map(|i| 10 * i),
            ));
            let name = Arc::new(StringArray::from_iter_values(
                (0..rows).map(|i| format!("e{i}")),
            ));
            let list_field = |n: &str| {
                Field::new(
                    n,
                    DataType::List(Arc::new(Field::new_list_field(DataType::Float32, true))),
                    true,
                )
            };
            let input_schema = Arc::new(Schema::new(vec![
                Field::new("event", DataType::Int64, false),
                list_field("pt"),
                Field::new("name", DataType::Utf8, false),
                list_field("eta"),
            ]));
            let batch =
                RecordBatch::try_new(input_schema.clone(), vec![event, pt, name, eta]).unwrap();
            let batch = match round % 4 {
                3 if rows > 2 => batch.slice(1, rows - 2),
                _ => batch,
            };
            let output_schema = Arc::new(Schema::new(vec![
                Field::new("event", DataType::Int64, false),
                Field::new("pt", DataType::Float32, true),
                Field::new("name", DataType::Utf8, false),
                Field::new("eta", DataType::Float32, true),
            ]));
            let lists = vec![
                ListUnnest {
                    index_in_input_schema: 1,
                    depth: 1,
                },
                ListUnnest {
                    index_in_input_schema: 3,
                    depth: 1,
                },
            ];
            for null_handling in [
                NullHandling::Drop,
                NullHandling::Preserve,
                NullHandling::PreserveAndExpandEmpty,
            ] {
                let options = datafusion::common::UnnestOptions {
                    null_handling,
                    recursions: vec![],
                };
                let input = MemorySourceConfig::try_new_exec(
                    &[vec![batch.clone()]],
                    input_schema.clone(),
                    None,
                )
                .unwrap();
                let unnest =
                    UnnestExec::new(input, lists.clone(), vec![], output_schema.clone(), options)
                        .unwrap();
                let theirs = collect(Arc::new(unnest.clone()), ctx.task_ctx())
                    .await
                    .unwrap();
                let ours = ListUnnestExec::try_new(&unnest).expect("lists one level deep");
                let stream = ours.execute(0, ctx.task_ctx()).unwrap();
                let ours = datafusion::physical_plan::common::collect(stream)
                    .await
                    .unwrap();
                let theirs = concat_batches(&output_schema, &theirs).unwrap();
                let all = concat_batches(&output_schema, &ours).unwrap();
                assert_eq!(all, theirs, "round {round}, {null_handling:?}");
                // Lists of equal lengths without null rows come out as
                // slices of the input's values.
                let slices = round % 3 != 2 && round % 5 != 1;
                if slices && null_handling != NullHandling::PreserveAndExpandEmpty {
                    if let Some(out) = ours.first().filter(|b| b.num_rows() > 0) {
                        let values = batch.column(1).as_list::<i32>().values().to_data();
                        let range = values.buffers()[0].as_slice().as_ptr_range();
                        let at = out.column(1).to_data().buffers()[0].as_ptr();
                        assert!(range.contains(&at), "round {round}: a slice");
                        fast_batches += 1;
                    }
                }
            }
        }
        assert!(fast_batches > 20, "{fast_batches} batches of the fast form");
    }
}
