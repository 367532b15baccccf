//! HEP functions for SQL, vectorised over list columns.
//!
//! ```text
//!  argument:  number  ──┐                       ┌─> number          (no list argument)
//!             column  ──┼─ coerce to Float64 ───┤
//!             list    ──┘  or List<Float64>     └─> List<Float64>   (element by element,
//!                                                    numbers repeat along each row's list)
//! ```
//!
//! Each function works on whole arrays: list arguments are read through
//! their offsets and values buffers, never row by row through scalars. In a
//! row, every list argument must have the same length (or be null, giving
//! null). Angles are in radians; integer arguments are taken as `DOUBLE`.
//!
//! | function | result |
//! |---|---|
//! | `delta_phi(phi1, phi2)` | `phi2 - phi1` wrapped into [-π, π] (as ROOT's `VecOps::DeltaPhi`) |
//! | `delta_r(eta1, phi1, eta2, phi2)` | `sqrt((eta1 - eta2)² + delta_phi(phi1, phi2)²)` |
//! | `transverse_mass(pt1, phi1, pt2, phi2)` | `sqrt(2 pt1 pt2 (1 - cos(phi1 - phi2)))` |
//! | `inv_mass(pt, eta, phi, m)` | invariant mass of the sum of all objects of each row's lists |
//! | `inv_mass(pt1, eta1, phi1, m1, pt2, eta2, phi2, m2, ...)` | invariant mass of the sum of two or more four-vectors, element by element |
//! | `p4(pt, eta, phi, m)` | the Cartesian four-vector `{px, py, pz, e}` (element by element over lists) |
//! | `inv_mass(v1, v2, ...)` | with four-vectors from `p4` (or lists of them): the invariant mass of their sum, element by element |
//! | `pt_of_sum(...)` | the same arguments as `inv_mass`; the transverse momentum of the sum |
//! | `argmin(list)` / `argmax(list)` | 1-based position of each row's smallest / largest element (the first of equals), for `list[argmin(d)]` |
//! | `min_delta_r(eta, phi, other_eta, other_phi)` | per element of the first lists, the smallest `delta_r` to the other lists' elements (`+inf` if none) |
//! | `list_select(list, positions)` | the elements at 1-based `positions` (a list), as DuckDB's; gathers the objects of `pairs`/`triples` |
//! | `pairs(n)` / `triples(n)` | every distinct pair / triple of indices `1..=n` (or of a list's elements), as `List<Struct{i, j[, k]}>`, 1-based for `list[i]` |
//! | `cardinality(list)` | DataFusion's function, with flat lists counted from the batch's offsets (see `length.rs`) |
//! | `array_concat(list, ...)` | DataFusion's function, with list columns joined by one gather of their values (see `concat.rs`) |
//! | `array_element(list, i)`, `list[i]` | DataFusion's function, with list columns gathered at once (see `element.rs`) |
//! | `make_array(a, ...)`, `[a, ...]` | DataFusion's function, with columns of one type gathered at once (see `make.rs`) |
//! | `inv_mass(list_select(v, i), list_select(v, j), ...)` | also `pt_of_sum`: the selected four-vectors summed where they are, without gathering them (see `selected.rs`) |
//!
//! ```sql
//! -- the azimuthal distance of the two leading muons
//! SELECT delta_phi(Muon_phi[1], Muon_phi[2]) FROM events WHERE nMuon >= 2;
//! -- distance of every muon to the leading one
//! SELECT delta_r(Muon_eta, Muon_phi, Muon_eta[1], Muon_phi[1]) FROM events;
//! -- W transverse mass from the leading muon and the missing energy
//! SELECT transverse_mass(Muon_pt[1], Muon_phi[1], MET_pt, MET_phi) FROM events WHERE nMuon >= 1;
//! -- mass of all muons of each event
//! SELECT inv_mass(Muon_pt, Muon_eta, Muon_phi, Muon_mass) FROM events;
//! -- dimuon mass of every opposite-charge pair
//! SELECT inv_mass(Muon_pt[p.i], Muon_eta[p.i], Muon_phi[p.i], Muon_mass[p.i],
//!                 Muon_pt[p.j], Muon_eta[p.j], Muon_phi[p.j], Muon_mass[p.j]) AS m
//! FROM (SELECT *, unnest(pairs(nMuon)) AS p FROM events)
//! WHERE Muon_charge[p.i] <> Muon_charge[p.j];
//! -- how many triples of jets each event has
//! SELECT cardinality(triples(Jet_pt)) FROM events;
//! ```

mod combinations;
mod concat;
mod element;
mod fast_path;
mod kinematics;
pub(crate) mod length;
mod make;
mod position;
mod select;
mod selected;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, ListArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field};
use datafusion::common::cast::{as_float64_array, as_list_array};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

pub use combinations::Combinations;
pub use concat::array_concat;
pub use element::array_element;
pub(crate) use fast_path::UseFastPaths;
pub use fast_path::{FastPath, Kernel};
pub use kinematics::{DeltaPhi, DeltaR, FourVector, InvMass, MinDeltaR, TransverseMass};
pub use length::cardinality;
pub use make::make_array;
pub use position::ArgExtreme;
pub use select::ListSelect;

/// Every HEP function, ready to register with a session, and a vectorised
/// `cardinality` in place of DataFusion's (same results).
pub fn all() -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::from(DeltaPhi::new()),
        ScalarUDF::from(DeltaR::new()),
        ScalarUDF::from(TransverseMass::new()),
        ScalarUDF::from(InvMass::new()),
        ScalarUDF::from(InvMass::pt_of_sum()),
        ScalarUDF::from(Combinations::pairs()),
        ScalarUDF::from(Combinations::triples()),
        ScalarUDF::from(ArgExtreme::argmin()),
        ScalarUDF::from(ArgExtreme::argmax()),
        ScalarUDF::from(MinDeltaR::new()),
        ScalarUDF::from(FourVector::new()),
        ScalarUDF::from(ListSelect::new()),
        cardinality(),
        array_concat(),
        array_element(),
        make_array(),
    ]
}

/// `List<Float64>` with a nullable item, the list type of the results.
pub(crate) fn float_list() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
}

pub(crate) fn is_list(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(_, _)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
    )
}

fn list_item(dt: &DataType) -> Option<&DataType> {
    match dt {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => Some(f.data_type()),
        _ => None,
    }
}

fn is_number(dt: &DataType) -> bool {
    dt.is_numeric() || matches!(dt, DataType::Null | DataType::Boolean)
}

/// Coerces numbers to `Float64` and lists of numbers to `List<Float64>`.
pub(crate) fn coerce_numeric(name: &str, arg_types: &[DataType]) -> Result<Vec<DataType>> {
    arg_types
        .iter()
        .enumerate()
        .map(|(i, dt)| match list_item(dt) {
            Some(item) if is_number(item) => Ok(float_list()),
            None if is_number(dt) => Ok(DataType::Float64),
            _ => Err(DataFusionError::Plan(format!(
                "{name}: argument {} must be a number or a list of numbers, not {dt}",
                i + 1
            ))),
        })
        .collect()
}

/// The result type for these (coerced) argument types: a list when any is.
pub(crate) fn broadcast_type(arg_types: &[DataType]) -> DataType {
    if arg_types.iter().any(is_list) {
        float_list()
    } else {
        DataType::Float64
    }
}

/// One argument, as arrays of `n_rows`.
enum Input {
    Values(Float64Array),
    List {
        offsets: OffsetBuffer<i32>,
        values: Float64Array,
        nulls: Option<NullBuffer>,
    },
}

/// Arguments of a call, read without per-row scalars.
pub(crate) struct Inputs {
    inputs: Vec<Input>,
    n_rows: usize,
    all_scalar: bool,
    any_list: bool,
    name: &'static str,
}

impl Inputs {
    /// Reads the (coerced) arguments of a call.
    pub(crate) fn new(name: &'static str, args: &[ColumnarValue], n_rows: usize) -> Result<Self> {
        let all_scalar = args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n_rows = if all_scalar { 1 } else { n_rows };
        let mut inputs = Vec::with_capacity(args.len());
        for arg in args {
            let array: ArrayRef = arg.clone().into_array(n_rows)?;
            let input = match array.data_type() {
                DataType::Float64 => Input::Values(as_float64_array(&array)?.clone()),
                DataType::List(_) => {
                    let list: &ListArray = as_list_array(&array)?;
                    Input::List {
                        offsets: list.offsets().clone(),
                        values: as_float64_array(list.values())?.clone(),
                        nulls: list.nulls().cloned(),
                    }
                }
                other => {
                    return Err(DataFusionError::Internal(format!(
                        "{name}: argument of type {other} was not coerced"
                    )))
                }
            };
            inputs.push(input);
        }
        let any_list = inputs.iter().any(|i| matches!(i, Input::List { .. }));
        Ok(Self {
            inputs,
            n_rows,
            all_scalar,
            any_list,
            name,
        })
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// The number of elements of `row` (1 without list arguments), or
    /// `None` when an argument is null there.
    pub(crate) fn row_len(&self, row: usize) -> Result<Option<usize>> {
        let mut len: Option<usize> = None;
        for input in &self.inputs {
            match input {
                Input::Values(v) => {
                    if v.is_null(row) {
                        return Ok(None);
                    }
                }
                Input::List { offsets, nulls, .. } => {
                    if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                        return Ok(None);
                    }
                    let n = (offsets[row + 1] - offsets[row]) as usize;
                    match len {
                        Some(l) if l != n => {
                            return Err(DataFusionError::Execution(format!(
                                "{}: the list arguments of row {row} have different lengths ({l} and {n})",
                                self.name
                            )))
                        }
                        _ => len = Some(n),
                    }
                }
            }
        }
        Ok(Some(len.unwrap_or(1)))
    }

    /// Argument `arg` at element `j` of `row` (numbers repeat along the row).
    #[inline]
    pub(crate) fn value(&self, arg: usize, row: usize, j: usize) -> Option<f64> {
        match self.inputs.get(arg)? {
            Input::Values(v) => Some(v.value(row)),
            Input::List {
                offsets, values, ..
            } => {
                let k = offsets[row] as usize + j;
                (!values.is_null(k)).then(|| values.value(k))
            }
        }
    }

    /// Applies `f` element by element: numbers in, a number (or a list per row) out.
    pub(crate) fn map(&self, f: impl Fn(&[f64]) -> f64) -> Result<ColumnarValue> {
        let mut arrays = self.map_n(1, |xs, out| out[0] = f(xs))?;
        let array = arrays
            .pop()
            .ok_or_else(|| DataFusionError::Internal(format!("{}: no result array", self.name)))?;
        self.finish(array)
    }

    /// Applies `f` element by element, `f` writing `k` numbers: `k` arrays
    /// out (numbers, or lists of the same shape).
    pub(crate) fn map_n(&self, k: usize, f: impl Fn(&[f64], &mut [f64])) -> Result<Vec<ArrayRef>> {
        if let Some(out) = self.map_flat(k, &f)? {
            return Ok(out);
        }
        let n_args = self.inputs.len();
        let mut xs = vec![0.0; n_args];
        let mut ys = vec![0.0; k];
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); k];
        let mut valid: Vec<bool> = Vec::new();
        let mut offsets: Vec<i32> = Vec::with_capacity(self.n_rows + 1);
        let mut row_valid: Vec<bool> = Vec::with_capacity(self.n_rows);
        offsets.push(0);
        for row in 0..self.n_rows {
            let len = self.row_len(row)?;
            row_valid.push(len.is_some());
            let len = if self.any_list { len.unwrap_or(0) } else { 1 };
            for j in 0..len {
                let mut ok = row_valid[row];
                for (a, x) in xs.iter_mut().enumerate() {
                    match self.value(a, row, j) {
                        Some(v) => *x = v,
                        None => ok = false,
                    }
                }
                if ok {
                    f(&xs, &mut ys);
                } else {
                    ys.fill(0.0);
                }
                for (v, y) in values.iter_mut().zip(&ys) {
                    v.push(*y);
                }
                valid.push(ok);
            }
            let end = i32::try_from(valid.len()).map_err(|_| {
                DataFusionError::Execution(format!("{}: result too large", self.name))
            })?;
            offsets.push(end);
        }
        let nulls = NullBuffer::from(valid);
        let offsets = OffsetBuffer::new(offsets.into());
        let row_nulls = NullBuffer::from(row_valid);
        values
            .into_iter()
            .map(|v| {
                let values = Float64Array::new(v.into(), Some(nulls.clone()));
                if !self.any_list {
                    return Ok(Arc::new(values) as ArrayRef);
                }
                Ok(Arc::new(ListArray::try_new(
                    Arc::new(Field::new_list_field(DataType::Float64, true)),
                    offsets.clone(),
                    Arc::new(values),
                    Some(row_nulls.clone()),
                )?) as ArrayRef)
            })
            .collect()
    }

    /// The common case of [`map_n`](Self::map_n) in one pass over the
    /// values: every argument a list of the same shape without nulls (see
    /// [`flat`](Self::flat)). `None` when the arguments are not like that.
    fn map_flat(&self, k: usize, f: &impl Fn(&[f64], &mut [f64])) -> Result<Option<Vec<ArrayRef>>> {
        let Some((offsets, columns)) = self.flat() else {
            return Ok(None);
        };
        let total = columns.first().map_or(0, |c| c.len());
        let mut xs = vec![0.0; columns.len()];
        let mut ys = vec![0.0; k];
        let mut values: Vec<Vec<f64>> = (0..k).map(|_| Vec::with_capacity(total)).collect();
        for e in 0..total {
            for (x, column) in xs.iter_mut().zip(&columns) {
                *x = column[e];
            }
            f(&xs, &mut ys);
            for (v, y) in values.iter_mut().zip(&ys) {
                v.push(*y);
            }
        }
        values
            .into_iter()
            .map(|v| flat_list(offsets, v))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// The arguments when every one is a list, all with the same offsets,
    /// and there are no nulls (as the lists `list_select` gathers for pairs
    /// and triples): the shared offsets and each argument's values, all of
    /// the same length, for kernels that work on whole columns. `None` when
    /// the arguments are not like that.
    pub(crate) fn flat(&self) -> Option<(&OffsetBuffer<i32>, Vec<&[f64]>)> {
        let mut columns = Vec::with_capacity(self.inputs.len());
        let mut shape: Option<&OffsetBuffer<i32>> = None;
        for input in &self.inputs {
            let Input::List {
                offsets,
                values,
                nulls,
            } = input
            else {
                return None;
            };
            if nulls.as_ref().is_some_and(|n| n.null_count() > 0) || values.null_count() > 0 {
                return None;
            }
            match shape {
                // Lists gathered by the same positions share one buffer.
                Some(s) if !same_offsets(s, offsets) => return None,
                _ => shape = Some(offsets),
            }
            let (start, end) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
            columns.push(values.values().get(start..end)?);
        }
        shape.map(|offsets| (offsets, columns))
    }

    /// A scalar result for an all-scalar call, an array otherwise.
    pub(crate) fn finish(&self, array: ArrayRef) -> Result<ColumnarValue> {
        if self.all_scalar {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&array, 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(array))
        }
    }
}

/// Whether two offset buffers are equal, by identity first.
fn same_offsets(a: &OffsetBuffer<i32>, b: &OffsetBuffer<i32>) -> bool {
    (a.inner().as_ptr() == b.inner().as_ptr() && a.len() == b.len()) || a.inner() == b.inner()
}

/// `offsets` moved to start at zero, as the offsets of a list whose values
/// begin at the first element they address.
pub(crate) fn rebased(offsets: &OffsetBuffer<i32>) -> OffsetBuffer<i32> {
    let first = offsets[0];
    if first == 0 {
        return offsets.clone();
    }
    OffsetBuffer::new(offsets.iter().map(|o| o - first).collect::<Vec<_>>().into())
}

/// A list of `values` in the shape of `offsets` (which need not start at
/// zero), without nulls: the result of a kernel over [`Inputs::flat`].
pub(crate) fn flat_list(offsets: &OffsetBuffer<i32>, values: Vec<f64>) -> Result<ArrayRef> {
    Ok(Arc::new(ListArray::try_new(
        Arc::new(Field::new_list_field(DataType::Float64, true)),
        rebased(offsets),
        Arc::new(Float64Array::from(values)),
        None,
    )?))
}
