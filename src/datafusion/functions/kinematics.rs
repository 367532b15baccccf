//! Kinematic functions: `delta_phi`, `delta_r`, `transverse_mass`, `inv_mass`,
//! `pt_of_sum`.
//!
//! ```text
//!  (pt, eta, phi, m) ─> px = pt cos φ, py = pt sin φ, pz = pt sinh η, E = sqrt(p² + m²)
//!  inv_mass  = sqrt((ΣE)² - ((Σpx)² + (Σpy)² + (Σpz)²))      (as ROOT's VecOps::InvariantMass)
//!  pt_of_sum = sqrt((Σpx)² + (Σpy)²)
//! ```

use std::f64::consts::PI;
use std::sync::Arc;

use arrow_array::{Array, Float64Array, ListArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::{broadcast_type, coerce_numeric, Inputs};

/// `phi2 - phi1`, wrapped into [-π, π] as ROOT's `VecOps::DeltaPhi(phi1, phi2)`.
#[inline]
pub fn delta_phi(phi1: f64, phi2: f64) -> f64 {
    let r = (phi2 - phi1) % (2.0 * PI);
    if r < -PI {
        r + 2.0 * PI
    } else if r > PI {
        r - 2.0 * PI
    } else {
        r
    }
}

/// The distance in (η, φ).
#[inline]
pub fn delta_r(eta1: f64, phi1: f64, eta2: f64, phi2: f64) -> f64 {
    let de = eta1 - eta2;
    let dp = delta_phi(phi1, phi2);
    (de * de + dp * dp).sqrt()
}

/// The transverse mass of two objects.
#[inline]
pub fn transverse_mass(pt1: f64, phi1: f64, pt2: f64, phi2: f64) -> f64 {
    (2.0 * pt1 * pt2 * (1.0 - (phi1 - phi2).cos())).sqrt()
}

/// A four-vector sum in Cartesian coordinates.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct P4 {
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) z: f64,
    pub(super) e: f64,
}

impl P4 {
    /// The four-vector of an object of transverse momentum `pt`,
    /// pseudorapidity `eta`, azimuth `phi` and mass `m`.
    #[inline]
    fn from_pt_eta_phi_m(pt: f64, eta: f64, phi: f64, m: f64) -> Self {
        let (x, y, z) = (pt * phi.cos(), pt * phi.sin(), pt * eta.sinh());
        Self {
            x,
            y,
            z,
            e: (x * x + y * y + z * z + m * m).sqrt(),
        }
    }

    #[inline]
    fn add_pt_eta_phi_m(&mut self, pt: f64, eta: f64, phi: f64, m: f64) {
        self.add(&Self::from_pt_eta_phi_m(pt, eta, phi, m));
    }

    #[inline]
    pub(super) fn add(&mut self, p: &P4) {
        self.x += p.x;
        self.y += p.y;
        self.z += p.z;
        self.e += p.e;
    }

    /// The invariant mass; negative (`-sqrt(-m²)`) for a space-like sum, as
    /// ROOT's `LorentzVector::M()`.
    #[inline]
    fn mass(&self) -> f64 {
        let m2 = self.e * self.e - (self.x * self.x + self.y * self.y + self.z * self.z);
        if m2 >= 0.0 {
            m2.sqrt()
        } else {
            -(-m2).sqrt()
        }
    }

    /// The transverse momentum.
    #[inline]
    fn pt(&self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }
}

/// What a four-vector function gives of the sum of its four-vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Quantity {
    Mass,
    Pt,
}

impl Quantity {
    #[inline]
    pub(super) fn of(self, p: &P4) -> f64 {
        match self {
            Quantity::Mass => p.mass(),
            Quantity::Pt => p.pt(),
        }
    }
}

macro_rules! udf {
    ($ty:ident, $name:literal, $n_args:literal, $doc:literal, |$xs:ident| $body:expr) => {
        #[doc = $doc]
        #[derive(Debug, PartialEq, Eq, Hash)]
        pub struct $ty {
            signature: Signature,
        }

        impl $ty {
            pub fn new() -> Self {
                Self {
                    signature: Signature::user_defined(Volatility::Immutable),
                }
            }
        }

        impl Default for $ty {
            fn default() -> Self {
                Self::new()
            }
        }

        impl ScalarUDFImpl for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn signature(&self) -> &Signature {
                &self.signature
            }

            fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
                if arg_types.len() != $n_args {
                    return Err(DataFusionError::Plan(format!(
                        "{} takes {} arguments, not {}",
                        $name,
                        $n_args,
                        arg_types.len()
                    )));
                }
                coerce_numeric($name, arg_types)
            }

            fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
                Ok(broadcast_type(arg_types))
            }

            fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
                Inputs::new($name, &args.args, args.number_rows)?.map(|$xs| $body)
            }
        }
    };
}

udf!(
    DeltaPhi,
    "delta_phi",
    2,
    "`delta_phi(phi1, phi2)`: `phi2 - phi1` wrapped into [-π, π].",
    |x| delta_phi(x[0], x[1])
);
udf!(
    DeltaR,
    "delta_r",
    4,
    "`delta_r(eta1, phi1, eta2, phi2)`: the distance in (η, φ).",
    |x| delta_r(x[0], x[1], x[2], x[3])
);
udf!(
    TransverseMass,
    "transverse_mass",
    4,
    "`transverse_mass(pt1, phi1, pt2, phi2)`: the transverse mass of two objects.",
    |x| transverse_mass(x[0], x[1], x[2], x[3])
);

/// `inv_mass(pt, eta, phi, m, ...)`: with one (pt, eta, phi, m) group, the
/// invariant mass of all objects of each row; with two or more groups, the
/// invariant mass of their sum, element by element.
///
/// `pt_of_sum` (made by [`InvMass::pt_of_sum`]) takes the same arguments and
/// gives the transverse momentum of the sum instead: the pt of a dijet or
/// trijet system.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct InvMass {
    signature: Signature,
    name: &'static str,
    quantity: Quantity,
}

impl InvMass {
    /// `inv_mass(pt, eta, phi, m[, ...])`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            name: "inv_mass",
            quantity: Quantity::Mass,
        }
    }

    /// `pt_of_sum(pt, eta, phi, m[, ...])`.
    pub fn pt_of_sum() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            name: "pt_of_sum",
            quantity: Quantity::Pt,
        }
    }

    /// What this function gives of a sum of four-vectors.
    pub(super) fn quantity(&self) -> Quantity {
        self.quantity
    }
}

impl Default for InvMass {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for InvMass {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if !arg_types.is_empty() && arg_types.iter().all(is_four_vector) {
            return Ok(arg_types
                .iter()
                .map(|dt| {
                    if super::is_list(dt) {
                        four_vector_list_type()
                    } else {
                        four_vector_type()
                    }
                })
                .collect());
        }
        if arg_types.is_empty() || arg_types.len() % 4 != 0 {
            return Err(DataFusionError::Plan(format!(
                "{} takes groups of four arguments (pt, eta, phi, mass), not {}",
                self.name,
                arg_types.len()
            )));
        }
        coerce_numeric(self.name, arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if arg_types.iter().all(is_four_vector) {
            // One list of four-vectors sums each row's; more go element by element.
            return Ok(if arg_types.len() == 1 {
                DataType::Float64
            } else {
                broadcast_type(arg_types)
            });
        }
        Ok(if arg_types.len() == 4 {
            DataType::Float64
        } else {
            broadcast_type(arg_types)
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let quantity = self.quantity;
        if args
            .arg_fields
            .iter()
            .all(|f| is_four_vector(f.data_type()))
        {
            // Four-vectors (from `p4`): their components, summed in order.
            let components = four_vector_components(&args.args, args.number_rows)?;
            let inputs = Inputs::new(self.name, &components, args.number_rows)?;
            if args.args.len() == 1 && super::is_list(args.arg_fields[0].data_type()) {
                // One list: the sum of each row's four-vectors.
                return sum_rows(&inputs, |x, y, z, e| {
                    let mut p = P4::default();
                    for i in 0..x.len() {
                        p.add(&P4 {
                            x: x[i],
                            y: y[i],
                            z: z[i],
                            e: e[i],
                        });
                    }
                    quantity.of(&p)
                });
            }
            if let Some((offsets, columns)) = inputs.flat() {
                // Lists of one shape (as gathered for pairs and triples):
                // summed column by column.
                let values = of_sums(&columns, quantity);
                return inputs.finish(super::flat_list(offsets, values)?);
            }
            return inputs.map(|x| {
                let mut p = P4::default();
                for g in x.chunks_exact(4) {
                    p.add(&P4 {
                        x: g[0],
                        y: g[1],
                        z: g[2],
                        e: g[3],
                    });
                }
                quantity.of(&p)
            });
        }
        let inputs = Inputs::new(self.name, &args.args, args.number_rows)?;
        if args.args.len() != 4 {
            return inputs.map(|x| {
                let mut p = P4::default();
                for g in x.chunks_exact(4) {
                    p.add_pt_eta_phi_m(g[0], g[1], g[2], g[3]);
                }
                quantity.of(&p)
            });
        }
        // One group: sum over each row's elements.
        sum_rows_pt_eta_phi_m(&inputs, quantity)
    }
}

/// `quantity` of the sums of four-vectors given as columns of components
/// (px, py, pz, e of the first four-vector, then of the second, ...), all of
/// one length: element by element, in blocks whose sums stay in the cache
/// and vectorise. The sums are taken in the order of the arguments from
/// zero, as [`P4::add`] does, so the results are the same bits.
fn of_sums(columns: &[&[f64]], quantity: Quantity) -> Vec<f64> {
    const BLOCK: usize = 256;
    let total = columns.first().map_or(0, |c| c.len());
    let mut out = Vec::with_capacity(total);
    let mut sums = [[0.0f64; BLOCK]; 4];
    let mut start = 0;
    while start < total {
        let len = BLOCK.min(total - start);
        for sum in &mut sums {
            sum.fill(0.0);
        }
        for group in columns.chunks_exact(4) {
            for (sum, column) in sums.iter_mut().zip(group) {
                let part = column.get(start..start + len).unwrap_or_default();
                for (s, &c) in sum.iter_mut().zip(part) {
                    *s += c;
                }
            }
        }
        let [x, y, z, e] = &sums;
        let p = |i: usize| P4 {
            x: x[i],
            y: y[i],
            z: z[i],
            e: e[i],
        };
        match quantity {
            Quantity::Mass => out.extend((0..len).map(|i| p(i).mass())),
            Quantity::Pt => out.extend((0..len).map(|i| p(i).pt())),
        }
        start += len;
    }
    out
}

/// Per row, `f` of the row's elements of the four list arguments (null
/// when an argument or element is null).
fn sum_rows(
    inputs: &Inputs,
    f: impl Fn(&[f64], &[f64], &[f64], &[f64]) -> f64,
) -> Result<ColumnarValue> {
    let n = inputs.n_rows();
    let mut values = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    let mut cols: [Vec<f64>; 4] = Default::default();
    for row in 0..n {
        let Some(len) = inputs.row_len(row)? else {
            values.push(0.0);
            valid.push(false);
            continue;
        };
        let mut ok = true;
        for (a, col) in cols.iter_mut().enumerate() {
            col.clear();
            for j in 0..len {
                match inputs.value(a, row, j) {
                    Some(v) => col.push(v),
                    None => ok = false,
                }
            }
        }
        values.push(if ok {
            f(&cols[0], &cols[1], &cols[2], &cols[3])
        } else {
            0.0
        });
        valid.push(ok);
    }
    inputs.finish(Arc::new(Float64Array::new(
        values.into(),
        Some(NullBuffer::from(valid)),
    )))
}

/// Per row, `quantity` of the sum of the row's (pt, eta, phi, m) objects.
fn sum_rows_pt_eta_phi_m(inputs: &Inputs, quantity: Quantity) -> Result<ColumnarValue> {
    sum_rows(inputs, |pt, eta, phi, m| {
        let mut p = P4::default();
        for i in 0..pt.len() {
            p.add_pt_eta_phi_m(pt[i], eta[i], phi[i], m[i]);
        }
        quantity.of(&p)
    })
}

/// The names of a four-vector's components, as `p4` makes them.
pub(super) const P4_FIELDS: [&str; 4] = ["px", "py", "pz", "e"];

/// `Struct{px, py, pz, e: Float64}`.
fn four_vector_type() -> DataType {
    DataType::Struct(
        P4_FIELDS
            .iter()
            .map(|n| arrow_schema::Field::new(*n, DataType::Float64, true))
            .collect(),
    )
}

fn four_vector_list_type() -> DataType {
    DataType::List(Arc::new(arrow_schema::Field::new_list_field(
        four_vector_type(),
        true,
    )))
}

/// A struct with the components px, py, pz, e (or a list of them).
fn is_four_vector(dt: &DataType) -> bool {
    let dt = match dt {
        DataType::List(f) | DataType::LargeList(f) => f.data_type(),
        other => other,
    };
    match dt {
        DataType::Struct(fields) => {
            fields.len() == 4
                && fields
                    .iter()
                    .zip(P4_FIELDS)
                    .all(|(f, n)| f.name() == n && f.data_type().is_numeric())
        }
        _ => false,
    }
}

/// Each four-vector argument as its four components (numbers, or lists of
/// the same shape).
fn four_vector_components(args: &[ColumnarValue], n_rows: usize) -> Result<Vec<ColumnarValue>> {
    let all_scalar = args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let n = if all_scalar { 1 } else { n_rows };
    let mut out = Vec::with_capacity(4 * args.len());
    for arg in args {
        let array = arg.clone().into_array(n)?;
        let (structs, list) = match array.data_type() {
            DataType::List(_) => {
                let list = datafusion::common::cast::as_list_array(&array)?;
                (
                    datafusion::common::cast::as_struct_array(list.values())?.clone(),
                    Some(list),
                )
            }
            _ => (
                datafusion::common::cast::as_struct_array(&array)?.clone(),
                None,
            ),
        };
        for child in structs.columns() {
            let child = arrow::compute::cast(child, &DataType::Float64)?;
            // A null four-vector has null components.
            let child = match structs.nulls() {
                Some(nulls) => {
                    let data = child
                        .to_data()
                        .into_builder()
                        .nulls(NullBuffer::union(Some(nulls), child.nulls()))
                        .build()?;
                    arrow_array::make_array(data)
                }
                None => child,
            };
            let value: arrow_array::ArrayRef = match list {
                Some(list) => Arc::new(ListArray::try_new(
                    Arc::new(arrow_schema::Field::new_list_field(DataType::Float64, true)),
                    list.offsets().clone(),
                    child,
                    list.nulls().cloned(),
                )?),
                None => child,
            };
            out.push(if all_scalar {
                ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&value, 0)?)
            } else {
                ColumnarValue::Array(value)
            });
        }
    }
    Ok(out)
}

/// `p4(pt, eta, phi, m)`: the Cartesian four-vector `{px, py, pz, e}` of an
/// object, element by element over lists. Computing the four-vectors of a
/// collection once and gathering them for every pair or triple
/// (`list_select`) spares recomputing the sines for each combination;
/// `inv_mass` and `pt_of_sum` take such four-vectors directly:
///
/// ```sql
/// SELECT inv_mass(list_select(v, i), list_select(v, j), list_select(v, k))
/// FROM (SELECT p4(Jet_pt, Jet_eta, Jet_phi, Jet_mass) AS v, ... FROM events)
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FourVector {
    signature: Signature,
}

impl FourVector {
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl Default for FourVector {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for FourVector {
    fn name(&self) -> &str {
        "p4"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 4 {
            return Err(DataFusionError::Plan(
                "p4 takes four arguments: pt, eta, phi, mass".into(),
            ));
        }
        coerce_numeric("p4", arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(if arg_types.iter().any(super::is_list) {
            four_vector_list_type()
        } else {
            four_vector_type()
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let inputs = Inputs::new("p4", &args.args, args.number_rows)?;
        let parts = inputs.map_n(4, |x, out| {
            let p = P4::from_pt_eta_phi_m(x[0], x[1], x[2], x[3]);
            out.copy_from_slice(&[p.x, p.y, p.z, p.e]);
        })?;
        let DataType::Struct(fields) = four_vector_type() else {
            return Err(DataFusionError::Internal("p4: not a struct".into()));
        };
        // Lists of structs: the components share the lists' offsets.
        let first = parts
            .first()
            .ok_or_else(|| DataFusionError::Internal("p4: no components".into()))?;
        let array: arrow_array::ArrayRef = match first.data_type() {
            DataType::List(_) => {
                let lists = parts
                    .iter()
                    .map(|a| datafusion::common::cast::as_list_array(a))
                    .collect::<Result<Vec<_>>>()?;
                let values: Vec<arrow_array::ArrayRef> =
                    lists.iter().map(|l| l.values().clone()).collect();
                let structs = arrow_array::StructArray::try_new(fields, values, None)?;
                Arc::new(ListArray::try_new(
                    Arc::new(arrow_schema::Field::new_list_field(
                        four_vector_type(),
                        true,
                    )),
                    lists[0].offsets().clone(),
                    Arc::new(structs),
                    lists[0].nulls().cloned(),
                )?)
            }
            _ => {
                let nulls = first.nulls().cloned();
                Arc::new(arrow_array::StructArray::try_new(fields, parts, nulls)?)
            }
        };
        inputs.finish(array)
    }
}

/// `min_delta_r(eta, phi, other_eta, other_phi)`: for every element of the
/// first lists, the smallest `delta_r` to any element of the other lists of
/// the same row (`+inf` when the other lists are empty): the distance to
/// the nearest other object, for overlap removal and matching.
///
/// ```sql
/// -- jets farther than 0.4 from every muon
/// SELECT array_filter(arrays_zip(Jet_pt, min_delta_r(Jet_eta, Jet_phi, Muon_eta, Muon_phi)),
///                     z -> z['2'] >= 0.4) FROM events
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MinDeltaR {
    signature: Signature,
}

impl MinDeltaR {
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl Default for MinDeltaR {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for MinDeltaR {
    fn name(&self) -> &str {
        "min_delta_r"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 4 || !arg_types.iter().all(super::is_list) {
            return Err(DataFusionError::Plan(
                "min_delta_r takes four lists: eta, phi, other_eta, other_phi".into(),
            ));
        }
        coerce_numeric("min_delta_r", arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(super::float_list())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { args.number_rows };
        let arrays = args
            .args
            .iter()
            .map(|a| a.clone().into_array(n))
            .collect::<Result<Vec<_>>>()?;
        let lists = arrays
            .iter()
            .map(|a| datafusion::common::cast::as_list_array(a))
            .collect::<Result<Vec<_>>>()?;
        let values = lists
            .iter()
            .map(|l| datafusion::common::cast::as_float64_array(l.values()))
            .collect::<Result<Vec<_>>>()?;
        let [eta, phi, oeta, ophi] = [0, 1, 2, 3].map(|i| values[i].values());
        let [lo, _, lo2, _] = [0, 1, 2, 3].map(|i| lists[i].offsets());
        let mut out = Vec::with_capacity(eta.len());
        let mut offsets = Vec::with_capacity(n + 1);
        let mut valid = Vec::with_capacity(n);
        offsets.push(0i32);
        for row in 0..n {
            let ok = lists.iter().all(|l| l.is_valid(row));
            let (a0, a1) = (lo[row] as usize, lo[row + 1] as usize);
            let (b0, b1) = (lo2[row] as usize, lo2[row + 1] as usize);
            let same = |l: &ListArray, start: usize, end: usize| {
                l.offsets()[row + 1] - l.offsets()[row] == (end - start) as i32
            };
            if ok && !(same(lists[1], a0, a1) && same(lists[3], b0, b1)) {
                return Err(DataFusionError::Execution(format!(
                    "min_delta_r: eta and phi lists of row {row} have different lengths"
                )));
            }
            if ok {
                let (p0, q0) = (
                    lists[1].offsets()[row] as usize,
                    lists[3].offsets()[row] as usize,
                );
                // A null coordinate gives a null distance; other objects with
                // a null coordinate are passed over.
                for a in 0..a1 - a0 {
                    if values[0].is_null(a0 + a) || values[1].is_null(p0 + a) {
                        out.push(None);
                        continue;
                    }
                    let mut best = f64::INFINITY;
                    for b in 0..b1 - b0 {
                        if values[2].is_null(b0 + b) || values[3].is_null(q0 + b) {
                            continue;
                        }
                        let d = delta_r(eta[a0 + a], phi[p0 + a], oeta[b0 + b], ophi[q0 + b]);
                        if d < best {
                            best = d;
                        }
                    }
                    out.push(Some(best));
                }
            }
            valid.push(ok);
            offsets.push(
                i32::try_from(out.len()).map_err(|_| {
                    DataFusionError::Execution("min_delta_r: result too large".into())
                })?,
            );
        }
        let list = ListArray::try_new(
            Arc::new(arrow_schema::Field::new_list_field(DataType::Float64, true)),
            arrow_buffer::OffsetBuffer::new(offsets.into()),
            Arc::new(out.into_iter().collect::<Float64Array>()),
            Some(NullBuffer::from(valid)),
        )?;
        if all_scalar {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&list, 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(Arc::new(list)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_phi_wraps() {
        assert!((delta_phi(3.0, -3.0) - (2.0 * PI - 6.0)).abs() < 1e-12);
        assert!((delta_phi(-3.0, 3.0) + (2.0 * PI - 6.0)).abs() < 1e-12);
        assert_eq!(delta_phi(0.5, 0.25), -0.25);
    }

    #[test]
    fn mass_of_back_to_back_massless_pair() {
        let mut p = P4::default();
        p.add_pt_eta_phi_m(45.0, 0.0, 0.0, 0.0);
        p.add_pt_eta_phi_m(45.0, 0.0, PI, 0.0);
        assert!((p.mass() - 90.0).abs() < 1e-9);
        assert!((transverse_mass(45.0, 0.0, 45.0, PI) - 90.0).abs() < 1e-9);
        assert!(p.pt().abs() < 1e-9);
    }

    #[test]
    fn space_like_sum_has_negative_mass() {
        let p = P4 {
            x: 3.0,
            y: 0.0,
            z: 4.0,
            e: 3.0,
        };
        assert_eq!(p.mass(), -4.0);
        assert_eq!(p.pt(), 3.0);
    }

    /// The component columns of `groups` four-vectors, `n` of each, from a
    /// fixed sequence (time-like and space-like sums alike).
    fn component_columns(groups: usize, n: usize) -> Vec<Vec<f64>> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 200.0 - 100.0
        };
        (0..4 * groups)
            .map(|_| (0..n).map(|_| next()).collect())
            .collect()
    }

    #[test]
    fn column_sums_give_the_bits_of_element_by_element_sums() {
        // Lengths around the block size, and every group count in use.
        for n in [0, 1, 255, 256, 257, 1000] {
            for groups in 1..=3 {
                let columns = component_columns(groups, n);
                let slices: Vec<&[f64]> = columns.iter().map(Vec::as_slice).collect();
                for quantity in [Quantity::Mass, Quantity::Pt] {
                    let sums = of_sums(&slices, quantity);
                    assert_eq!(sums.len(), n);
                    for (i, sum) in sums.iter().enumerate() {
                        let mut p = P4::default();
                        for g in columns.chunks_exact(4) {
                            p.add(&P4 {
                                x: g[0][i],
                                y: g[1][i],
                                z: g[2][i],
                                e: g[3][i],
                            });
                        }
                        assert_eq!(sum.to_bits(), quantity.of(&p).to_bits(), "{quantity:?} {i}");
                    }
                }
            }
        }
    }
}
