//! `cardinality(list)` from the offsets of the whole batch.
//!
//! DataFusion's own `cardinality` walks a list column row by row, slicing
//! each row's values to count them, which costs more than reading the list
//! from the file (`WHERE cardinality(array_filter(Jet_pt, pt -> pt > 40)) >= 2`).
//! For a list whose items are not lists themselves the count is the
//! difference of two offsets; this function computes exactly that and hands
//! every other case (nested lists, maps, scalars) to DataFusion's function,
//! so the results are the same.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, UInt64Array};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// `cardinality`, with a vectorised path for lists of non-list items.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Cardinality {
    inner: Arc<ScalarUDF>,
}

impl Cardinality {
    pub fn new() -> Self {
        Self {
            inner: datafusion::functions_nested::cardinality::cardinality_udf(),
        }
    }
}

impl Default for Cardinality {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for Cardinality {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let [ColumnarValue::Array(array)] = args.args.as_slice() {
            let lengths = match array.data_type() {
                DataType::List(item) if !is_list(item.data_type()) => {
                    array.as_any().downcast_ref().map(lengths::<i32>)
                }
                DataType::LargeList(item) if !is_list(item.data_type()) => {
                    array.as_any().downcast_ref().map(lengths::<i64>)
                }
                _ => None,
            };
            if let Some(lengths) = lengths {
                return Ok(ColumnarValue::Array(lengths));
            }
        }
        self.inner.invoke_with_args(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

fn is_list(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
    )
}

/// Each row's number of items; null for a null row.
fn lengths<O: OffsetSizeTrait>(list: &GenericListArray<O>) -> ArrayRef {
    Arc::new(offset_lengths(list.offsets(), list.nulls()))
}

/// The lengths that `offsets` give, null where `nulls` is: the entries of
/// any list or map array.
pub(crate) fn offset_lengths<O: OffsetSizeTrait>(
    offsets: &OffsetBuffer<O>,
    nulls: Option<&NullBuffer>,
) -> UInt64Array {
    let values = offsets
        .windows(2)
        .map(|w| (w[1] - w[0]).as_usize() as u64)
        .collect::<Vec<_>>();
    UInt64Array::new(values.into(), nulls.cloned())
}
