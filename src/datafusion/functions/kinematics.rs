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

use arrow_array::Float64Array;
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
struct P4 {
    x: f64,
    y: f64,
    z: f64,
    e: f64,
}

impl P4 {
    #[inline]
    fn add_pt_eta_phi_m(&mut self, pt: f64, eta: f64, phi: f64, m: f64) {
        let (x, y, z) = (pt * phi.cos(), pt * phi.sin(), pt * eta.sinh());
        self.x += x;
        self.y += y;
        self.z += z;
        self.e += (x * x + y * y + z * z + m * m).sqrt();
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
enum Quantity {
    Mass,
    Pt,
}

impl Quantity {
    #[inline]
    fn of(self, p: &P4) -> f64 {
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
        Ok(if arg_types.len() == 4 {
            DataType::Float64
        } else {
            broadcast_type(arg_types)
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let quantity = self.quantity;
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
        let n = inputs.n_rows();
        let mut values = Vec::with_capacity(n);
        let mut valid = Vec::with_capacity(n);
        for row in 0..n {
            let Some(len) = inputs.row_len(row)? else {
                values.push(0.0);
                valid.push(false);
                continue;
            };
            let mut p = P4::default();
            let mut ok = true;
            for j in 0..len {
                match (
                    inputs.value(0, row, j),
                    inputs.value(1, row, j),
                    inputs.value(2, row, j),
                    inputs.value(3, row, j),
                ) {
                    (Some(pt), Some(eta), Some(phi), Some(m)) => {
                        p.add_pt_eta_phi_m(pt, eta, phi, m)
                    }
                    _ => ok = false,
                }
            }
            values.push(if ok { quantity.of(&p) } else { 0.0 });
            valid.push(ok);
        }
        inputs.finish(Arc::new(Float64Array::new(
            values.into(),
            Some(NullBuffer::from(valid)),
        )))
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
}
