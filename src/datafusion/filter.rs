//! Filtering batches whose columns are lists, a run of values at a time.
//!
//! Arrow's `filter` has fast paths for flat arrays only: a list column goes
//! through `MutableArrayData`, one call per run of kept rows for the
//! offsets and another for the values, through dynamic dispatch. Event
//! selections keep scattered rows of many list columns (`Muon_pt`,
//! `Jet_eta`, ...), and that generic path took a fifth of the time of the
//! ADL query Q8. Here a list is filtered by its offsets and one filter of
//! its values, with a mask that keeps the values of the kept rows: the
//! values are flat, so Arrow's fast paths do that part, and lists of
//! structs or of lists recurse.
//!
//! [`ListFilterExec`] is DataFusion's `FilterExec` with this kernel; the
//! physical rule [`FilterLists`] puts it in place of the filters whose
//! output has a list column. It plans like the filter it wraps (properties,
//! statistics, ordering) and runs the same predicate, projection, batch
//! size and limit.

use std::cell::RefCell;
use std::fmt;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, GenericListArray,
    OffsetSizeTrait, RecordBatch, RecordBatchOptions, StructArray,
};
use datafusion::arrow::buffer::{BooleanBuffer, NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::{prep_null_mask_filter, FilterBuilder, FilterPredicate};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result, Statistics};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce::{LimitedBatchCoalescer, PushBatchStatus};
use datafusion::physical_plan::execution_plan::{
    CardinalityEffect, ChildrenPropertiesMode, ReplaceChildrenOptions,
};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::EmptyRecordBatchStream;
use datafusion::physical_plan::{
    ChildStats, DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr, PlanProperties,
    StatisticsArgs,
};
use futures::{Stream, StreamExt};

use super::replace_nodes;

/// Keeps the rows of `batch` where `mask` is true (null counts as false).
pub(crate) fn filter_batch(batch: &RecordBatch, mask: &BooleanArray) -> Result<RecordBatch> {
    let selection = Selection::new(mask);
    let columns = batch
        .columns()
        .iter()
        .map(|column| selection.filter(column))
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(selection.count()));
    Ok(RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &options,
    )?)
}

/// The rows to keep: a mask without nulls, and Arrow's filter for it.
struct Selection {
    mask: BooleanBuffer,
    predicate: FilterPredicate,
    /// What the lists filtered so far kept, by their offsets: columns of
    /// one collection (`Muon_pt`, `Muon_eta`, ...) share them.
    lists: RefCell<Vec<KeptList>>,
}

/// The kept part of lists with the offsets `offsets`: the offsets of the
/// kept rows, and the selection of their values.
struct KeptList {
    offsets: OffsetBuffer<i32>,
    kept: OffsetBuffer<i32>,
    values: Rc<Selection>,
}

impl Selection {
    /// The rows where `mask` is true (null counts as false).
    fn new(mask: &BooleanArray) -> Self {
        let mask = if mask.null_count() > 0 {
            prep_null_mask_filter(mask)
        } else {
            mask.clone()
        };
        let predicate = FilterBuilder::new(&mask).optimize().build();
        Self {
            mask: mask.values().clone(),
            predicate,
            lists: RefCell::new(Vec::new()),
        }
    }

    fn count(&self) -> usize {
        self.predicate.count()
    }

    /// Keeps the selected elements of `array`.
    fn filter(&self, array: &ArrayRef) -> Result<ArrayRef> {
        Ok(match array.data_type() {
            DataType::List(_) => self.filter_list_shared(array.as_list::<i32>())?,
            DataType::LargeList(_) => {
                let array = array.as_list::<i64>();
                let (kept, values) = self.select_list(array.offsets())?;
                rebuild_list(array, kept, &values, self.filter_nulls(array.nulls())?)?
            }
            DataType::Struct(_) if has_list(array.data_type()) => {
                self.filter_struct(array.as_struct())?
            }
            _ => self.predicate.filter(array)?,
        })
    }

    /// The selected bits of `nulls`, if there are any nulls.
    fn filter_nulls(&self, nulls: Option<&NullBuffer>) -> Result<Option<NullBuffer>> {
        let Some(nulls) = nulls.filter(|n| n.null_count() > 0) else {
            return Ok(None);
        };
        let valid = self
            .predicate
            .filter(&BooleanArray::new(nulls.inner().clone(), None))?;
        Ok(Some(NullBuffer::new(valid.as_boolean().values().clone())))
    }

    fn filter_struct(&self, array: &StructArray) -> Result<ArrayRef> {
        let columns = array
            .columns()
            .iter()
            .map(|column| self.filter(column))
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(StructArray::try_new_with_length(
            array.fields().clone(),
            columns,
            self.filter_nulls(array.nulls())?,
            self.count(),
        )?))
    }

    /// Filters a list by its offsets, and its values by one mask that keeps
    /// the values of the kept rows; both are made once for lists with the
    /// same offsets.
    fn filter_list_shared(&self, array: &GenericListArray<i32>) -> Result<ArrayRef> {
        let offsets = array.offsets();
        let same = |known: &OffsetBuffer<i32>| {
            let (a, b) = (known.inner(), offsets.inner());
            (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
        };
        let found = self
            .lists
            .borrow()
            .iter()
            .find(|list| same(&list.offsets))
            .map(|list| (list.kept.clone(), Rc::clone(&list.values)));
        let (kept, values) = match found {
            Some(found) => found,
            None => {
                let (kept, values) = self.select_list(offsets)?;
                let values = Rc::new(values);
                self.lists.borrow_mut().push(KeptList {
                    offsets: offsets.clone(),
                    kept: kept.clone(),
                    values: Rc::clone(&values),
                });
                (kept, values)
            }
        };
        rebuild_list(array, kept, &values, self.filter_nulls(array.nulls())?)
    }

    /// The offsets of the kept rows of lists with `offsets`, and the
    /// selection of their values (relative to the first offset).
    fn select_list<O: OffsetSizeTrait>(
        &self,
        offsets: &OffsetBuffer<O>,
    ) -> Result<(OffsetBuffer<O>, Selection)> {
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            return internal_err!("a list array without offsets");
        };
        if offsets.len() != self.mask.len() + 1 {
            return internal_err!(
                "a filter of {} rows on a list of {}",
                self.mask.len(),
                offsets.len() - 1
            );
        }
        let base = first.as_usize();
        let span = last.as_usize() - base;
        let mut keep_values = BooleanBufferBuilder::new(span);
        let mut out = Vec::with_capacity(self.count() + 1);
        let mut end = O::usize_as(0);
        out.push(end);
        // A run of kept rows keeps one run of values.
        for (start, stop) in self.mask.set_slices() {
            for pair in offsets[start..=stop].windows(2) {
                end += pair[1] - pair[0];
                out.push(end);
            }
            let from = offsets[start].as_usize() - base;
            let to = offsets[stop].as_usize() - base;
            keep_values.append_n(from - keep_values.len(), false);
            keep_values.append_n(to - from, true);
        }
        keep_values.append_n(span - keep_values.len(), false);
        let values = Selection::new(&BooleanArray::new(keep_values.finish(), None));
        Ok((OffsetBuffer::new(out.into()), values))
    }
}

/// `array` with the offsets `kept`, its values filtered by `values`, and
/// the validity `nulls`.
fn rebuild_list<O: OffsetSizeTrait>(
    array: &GenericListArray<O>,
    kept: OffsetBuffer<O>,
    values: &Selection,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let offsets = array.value_offsets();
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
        return internal_err!("a list array without offsets");
    };
    let base = first.as_usize();
    let values = values.filter(&array.values().slice(base, last.as_usize() - base))?;
    let field = match array.data_type() {
        DataType::List(field) | DataType::LargeList(field) => field.clone(),
        other => return internal_err!("not a list: {other}"),
    };
    Ok(Arc::new(GenericListArray::<O>::try_new(
        field, kept, values, nulls,
    )?))
}

/// Whether a list sits anywhere in `data_type` (else Arrow's filter is as
/// good as this one).
fn has_list(data_type: &DataType) -> bool {
    match data_type {
        DataType::List(_) | DataType::LargeList(_) => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_list(f.data_type())),
        _ => false,
    }
}

/// Puts a [`ListFilterExec`] in place of every `FilterExec` whose output
/// has a list column.
#[derive(Debug, Default)]
pub(crate) struct FilterLists;

impl PhysicalOptimizerRule for FilterLists {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        replace_nodes(plan, |filter: &FilterExec| {
            let lists = filter
                .schema()
                .fields()
                .iter()
                .any(|f| has_list(f.data_type()));
            lists.then(|| Arc::new(ListFilterExec::new(filter.clone())) as Arc<dyn ExecutionPlan>)
        })
    }

    fn name(&self) -> &str {
        "filter_lists"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// DataFusion's `FilterExec`, filtering list columns with
/// [`filter_batch`]. It plans as the filter it holds.
#[derive(Debug, Clone)]
pub(crate) struct ListFilterExec {
    filter: FilterExec,
    metrics: ExecutionPlanMetricsSet,
}

impl ListFilterExec {
    pub(crate) fn new(filter: FilterExec) -> Self {
        Self {
            filter,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for ListFilterExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        /// The filter's own line, to be renamed.
        struct Line<'a>(&'a FilterExec, DisplayFormatType);
        impl fmt::Display for Line<'_> {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                self.0.fmt_as(self.1, f)
            }
        }
        let line = Line(&self.filter, t).to_string();
        let rest = line.strip_prefix("FilterExec").unwrap_or(&line);
        write!(f, "ListFilterExec{rest}")
    }
}

impl ExecutionPlan for ListFilterExec {
    fn name(&self) -> &'static str {
        "ListFilterExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.filter.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.filter.children()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.filter.apply_expressions(f)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.filter.maintains_input_order()
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = Arc::new(self.filter.clone()).replace_children(children, options)?;
        match plan.downcast_ref::<FilterExec>() {
            Some(filter) => Ok(Arc::new(Self::new(filter.clone()))),
            None => internal_err!("a FilterExec with new children is not a FilterExec"),
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let filter = &self.filter;
        Ok(Box::pin(ListFilterStream {
            schema: filter.schema(),
            predicate: filter.predicate().clone(),
            projection: filter.projection().as_ref().map(|p| p.to_vec()),
            input: filter.input().execute(partition, context)?,
            coalescer: LimitedBatchCoalescer::new(
                filter.schema(),
                filter.batch_size(),
                filter.fetch(),
            ),
            metrics: BaselineMetrics::new(&self.metrics, partition),
            finished: false,
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        self.filter.child_stats_requests(partition)
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        self.filter.statistics_from_inputs(input_stats, args)
    }

    fn cardinality_effect(&self) -> CardinalityEffect {
        self.filter.cardinality_effect()
    }

    fn fetch(&self) -> Option<usize> {
        self.filter.fetch()
    }
}

/// The batches of a [`ListFilterExec`] partition.
struct ListFilterStream {
    schema: SchemaRef,
    predicate: Arc<dyn PhysicalExpr>,
    projection: Option<Vec<usize>>,
    input: SendableRecordBatchStream,
    coalescer: LimitedBatchCoalescer,
    metrics: BaselineMetrics,
    /// The input is read to its end or to the limit.
    finished: bool,
}

impl ListFilterStream {
    /// Filters `batch` into the coalescer.
    fn push(&mut self, batch: RecordBatch) -> Result<PushBatchStatus> {
        let mask = self
            .predicate
            .evaluate(&batch)?
            .into_array(batch.num_rows())?;
        let Some(mask) = mask.as_boolean_opt() else {
            return internal_err!("a filter predicate of type {}", mask.data_type());
        };
        let batch = match &self.projection {
            Some(columns) => batch.project(columns)?,
            None => batch,
        };
        self.coalescer.push_batch(filter_batch(&batch, mask)?)
    }

    /// Flushes the coalescer and lets go of the input.
    fn finish(&mut self) -> Result<()> {
        self.coalescer.finish()?;
        self.finished = true;
        self.input = Box::pin(EmptyRecordBatchStream::new(self.input.schema()));
        Ok(())
    }
}

impl Stream for ListFilterStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(batch) = self.coalescer.next_completed_batch() {
                return self.metrics.record_poll(Poll::Ready(Some(Ok(batch))));
            }
            if self.finished {
                return Poll::Ready(None);
            }
            match ready!(self.input.poll_next_unpin(cx)) {
                Some(Ok(batch)) => {
                    let elapsed = self.metrics.elapsed_compute().clone();
                    let timer = elapsed.timer();
                    let status = self.push(batch);
                    timer.done();
                    if let PushBatchStatus::LimitReached = status? {
                        self.finish()?;
                    }
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => self.finish()?,
            }
        }
    }
}

impl RecordBatchStream for ListFilterStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{
        Float32Builder, Int32Array, Int32Builder, LargeListBuilder, ListArray, ListBuilder,
        StructBuilder,
    };
    use datafusion::arrow::compute::filter_record_batch;
    use datafusion::arrow::datatypes::{Field, Fields, Schema};

    use super::*;

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Lists of floats with null lists and null values, large lists of
    /// ints, lists of structs that hold lists, and lists of lists.
    fn batch(rng: &mut Rng, rows: usize) -> RecordBatch {
        let mut floats = ListBuilder::new(Float32Builder::new());
        let mut large = LargeListBuilder::new(Int32Builder::new());
        let inner = Fields::from(vec![
            Field::new("pt", DataType::Float32, true),
            Field::new(
                "hits",
                DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
                true,
            ),
        ]);
        let mut structs = ListBuilder::new(StructBuilder::from_fields(inner, 0));
        let mut nested = ListBuilder::new(ListBuilder::new(Int32Builder::new()));
        for _ in 0..rows {
            for _ in 0..rng.below(5) {
                match rng.below(6) {
                    0 => floats.values().append_null(),
                    _ => floats.values().append_value(rng.below(1000) as f32 / 7.0),
                }
                large.values().append_value(rng.below(100) as i32);
                let s = structs.values();
                s.field_builder::<Float32Builder>(0)
                    .expect("pt")
                    .append_value(rng.below(50) as f32);
                let hits = s
                    .field_builder::<ListBuilder<Box<dyn datafusion::arrow::array::ArrayBuilder>>>(
                        1,
                    )
                    .expect("hits");
                for _ in 0..rng.below(3) {
                    hits.values()
                        .as_any_mut()
                        .downcast_mut::<Int32Builder>()
                        .expect("ints")
                        .append_value(rng.below(9) as i32);
                }
                hits.append(true);
                s.append(rng.below(8) != 0);
                let inner = nested.values();
                for _ in 0..rng.below(3) {
                    inner.values().append_value(rng.below(9) as i32);
                }
                inner.append(rng.below(5) != 0);
            }
            floats.append(rng.below(7) != 0);
            large.append(true);
            structs.append(true);
            nested.append(rng.below(9) != 0);
        }
        let floats = floats.finish();
        // Lists of the same collection: the same offsets (one buffer, or
        // equal ones), other values and other null rows.
        let values = |rng: &mut Rng| -> ArrayRef {
            let n = floats.values().len();
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|_| rng.below(50) as i32),
            ))
        };
        let item = Arc::new(Field::new_list_field(DataType::Int32, true));
        let nulls = |rng: &mut Rng| NullBuffer::from_iter((0..rows).map(|_| rng.below(6) != 0));
        let same = ListArray::new(item.clone(), floats.offsets().clone(), values(rng), None);
        let copied = OffsetBuffer::new(floats.offsets().to_vec().into());
        let equal = ListArray::new(item, copied, values(rng), Some(nulls(rng)));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(floats),
            Arc::new(large.finish()),
            Arc::new(structs.finish()),
            Arc::new(nested.finish()),
            Arc::new(same),
            Arc::new(equal),
        ];
        let fields: Vec<Field> = ["floats", "large", "structs", "nested", "same", "equal"]
            .iter()
            .zip(&columns)
            .map(|(name, c)| Field::new(*name, c.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("a batch")
    }

    /// A mask keeping about `percent` of the rows, with some nulls.
    fn mask(rng: &mut Rng, rows: usize, percent: u64) -> BooleanArray {
        (0..rows)
            .map(|_| match rng.below(100) {
                r if r < 3 => None,
                r => Some(r < percent),
            })
            .collect()
    }

    /// The same rows as Arrow's filter keeps, for masks from none to all,
    /// on whole and sliced batches.
    #[test]
    fn keeps_what_arrows_filter_keeps() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let whole = batch(&mut rng, 600);
        for (offset, rows) in [(0, 600), (37, 411), (599, 1), (250, 0)] {
            let batch = whole.slice(offset, rows);
            for percent in [0, 2, 20, 50, 90, 101] {
                let mask = mask(&mut rng, rows, percent);
                let expected = filter_record_batch(&batch, &mask).expect("arrow's filter");
                let actual = filter_batch(&batch, &mask).expect("a filter");
                assert_eq!(actual, expected, "slice {offset}+{rows}, {percent}%");
                for column in actual.columns() {
                    column.to_data().validate_full().expect("valid arrays");
                }
            }
        }
    }

    /// A batch without columns keeps its row count.
    #[test]
    fn counts_rows_of_batches_without_columns() {
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(3)),
        )
        .expect("a batch");
        let mask = BooleanArray::from(vec![true, false, true]);
        assert_eq!(filter_batch(&batch, &mask).expect("a filter").num_rows(), 2);
    }
}
