//! Linear parameter constraints (`parameter_constraints`): inequalities `Σ c_p · x_p ≤ b` (or `≥`) and equalities
//! (`==`, e.g. mixture fractions that sum to one) over numeric parameters, validated into a polytope of the encoded
//! unit cube, with the Euclidean projection onto it that the initial design and the acquisition optimiser use so
//! that every suggestion satisfies them.
//!
//! Only linear-scale `float` parameters may appear: the encoding `u = (x − low)/(high − low)` keeps a constraint
//! linear, where a log scale would not, and an `int` parameter's rounding could push a point out of the polytope.
//! Both are refused with the reason. The projection is Dykstra's alternating-projection algorithm (Boyle & Dykstra
//! 1986) over the cube and each constraint's half-space or hyperplane: it converges to the nearest feasible point,
//! where plain alternating projections stop at some feasible point. A study whose constraints leave no point of
//! the cube is refused with a 422 naming `parameter_constraints`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::FieldError;
use crate::space::{Domain, Role, Space};

/// The comparison of a linear parameter constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum LinearOp {
    /// `Σ terms ≤ bound`.
    #[serde(rename = "<=")]
    AtMost,
    /// `Σ terms ≥ bound`.
    #[serde(rename = ">=")]
    AtLeast,
    /// `Σ terms = bound` (to a relative tolerance of 10⁻⁹).
    #[serde(rename = "==")]
    Equal,
}

/// One linear constraint over numeric parameters, as written in a study spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParameterConstraintSpec {
    /// Coefficient of each parameter (linear-scale `float` parameters of role `decision`).
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::HashMap<String, f64>, example = json!({"a": 1.0, "b": 1.0})))]
    pub terms: BTreeMap<String, f64>,
    /// `<=`, `>=` or `==`.
    pub op: LinearOp,
    /// The right-hand side.
    #[cfg_attr(feature = "openapi", schema(example = 1.0))]
    pub bound: f64,
}

/// Most parameter constraints a study may have.
pub const MAX_PARAMETER_CONSTRAINTS: usize = 32;

/// One constraint in encoded coordinates: `a · u ≤ b`, or `= b` when `equality`.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    a: Vec<f64>,
    b: f64,
    equality: bool,
    /// `‖a‖²`.
    norm2: f64,
    /// Scale of the row's terms for tolerances: `|b| + ‖a‖₁ + 1`.
    scale: f64,
}

impl Row {
    fn residual(&self, u: &[f64]) -> f64 {
        self.a.iter().zip(u).map(|(a, x)| a * x).sum::<f64>() - self.b
    }

    fn violation(&self, u: &[f64]) -> f64 {
        let r = self.residual(u);
        if self.equality { r.abs() } else { r.max(0.0) }
    }

    /// Projects `u` onto the row's hyperplane (equality) or its half-space tightened by [`INEQUALITY_MARGIN`], so
    /// that a projected point satisfies an inequality strictly, also after decoding to the parameters' units.
    fn project(&self, u: &mut [f64]) {
        let r = self.residual(u) + if self.equality { 0.0 } else { INEQUALITY_MARGIN * self.scale };
        if self.equality || r > 0.0 {
            let t = r / self.norm2;
            u.iter_mut().zip(&self.a).for_each(|(x, a)| *x -= t * a);
        }
    }
}

/// The validated constraints: a polytope of the encoded unit cube.
#[derive(Debug, Clone, PartialEq)]
pub struct Polytope {
    d: usize,
    rows: Vec<Row>,
}

/// Largest violation (in units of a row's scale) a feasible point may have: the projection's own rounding.
pub const FEASIBILITY_TOLERANCE: f64 = 1e-9;

/// How far inside an inequality (in units of its row's scale) the projection puts a point: float rounding when the
/// point is decoded stays on the feasible side.
const INEQUALITY_MARGIN: f64 = 1e-12;

/// Sweeps of Dykstra's algorithm at most per projection.
const MAX_SWEEPS: usize = 5000;

impl Polytope {
    /// Validates `specs` against `space`; errors name `parameter_constraints[i].…`.
    pub fn new(specs: &[ParameterConstraintSpec], space: &Space) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        if specs.len() > MAX_PARAMETER_CONSTRAINTS {
            errors.push(FieldError::new(
                "parameter_constraints",
                format!("give at most {MAX_PARAMETER_CONSTRAINTS} constraints"),
            ));
        }
        let d = space.dim();
        let mut rows = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let field = |f: &str| format!("parameter_constraints[{i}].{f}");
            if !spec.bound.is_finite() {
                errors.push(FieldError::new(field("bound"), "must be a finite number"));
            }
            if spec.terms.is_empty() {
                errors.push(FieldError::new(field("terms"), "give at least one parameter and its coefficient"));
            }
            let mut a = vec![0.0; d];
            let mut b = spec.bound;
            for (name, &c) in &spec.terms {
                let at = field(&format!("terms.{name}"));
                if !c.is_finite() {
                    errors.push(FieldError::new(at, "the coefficient must be a finite number"));
                    continue;
                }
                let Some(p) = space.index_of(name).map(|k| &space.params()[k]) else {
                    errors.push(FieldError::new(at, format!("unknown parameter '{name}'")));
                    continue;
                };
                match p.domain {
                    _ if p.role != Role::Decision => {
                        errors.push(FieldError::new(at, "only parameters of role 'decision' can be constrained"))
                    }
                    Domain::Float { low, high, log: false } => {
                        // x = low + u · (high − low)
                        a[p.offset] += c * (high - low);
                        b -= c * low;
                    }
                    Domain::Float { log: true, .. } => errors.push(FieldError::new(
                        at,
                        "a log-scaled parameter cannot be in a linear constraint (the constraint would not be linear \
                         in the scale the optimiser searches); use a linear scale",
                    )),
                    Domain::Int { .. } => errors.push(FieldError::new(
                        at,
                        "an int parameter cannot be in a linear constraint (rounding could leave it); use a float",
                    )),
                    Domain::Categorical { .. } => {
                        errors.push(FieldError::new(at, "a categorical parameter has no numeric value to constrain"))
                    }
                }
            }
            let norm2: f64 = a.iter().map(|x| x * x).sum();
            if errors.is_empty() && norm2 == 0.0 {
                errors.push(FieldError::new(field("terms"), "every coefficient is zero"));
                continue;
            }
            let sign = if spec.op == LinearOp::AtLeast { -1.0 } else { 1.0 };
            let a: Vec<f64> = a.into_iter().map(|x| sign * x).collect();
            let b = sign * b;
            let scale = b.abs() + a.iter().map(|x| x.abs()).sum::<f64>() + 1.0;
            rows.push(Row { a, b, equality: spec.op == LinearOp::Equal, norm2, scale });
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let polytope = Self { d, rows };
        let mut probe = space.centre();
        polytope.project(&mut probe);
        if !polytope.contains(&probe) {
            return Err(vec![FieldError::new(
                "parameter_constraints",
                "no point within the parameters' bounds satisfies every constraint",
            )]);
        }
        Ok(polytope)
    }

    /// Number of encoded dimensions.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Whether `u` (encoded) satisfies every constraint and the cube, to [`FEASIBILITY_TOLERANCE`].
    pub fn contains(&self, u: &[f64]) -> bool {
        let cube = u.iter().all(|x| (-1e-12..=1.0 + 1e-12).contains(x));
        cube && self.rows.iter().all(|r| r.violation(u) <= FEASIBILITY_TOLERANCE * r.scale)
    }

    /// The indices of the constraints `u` violates (beyond [`FEASIBILITY_TOLERANCE`]).
    pub fn violated(&self, u: &[f64]) -> Vec<usize> {
        (0..self.rows.len())
            .filter(|&i| self.rows[i].violation(u) > FEASIBILITY_TOLERANCE * self.rows[i].scale)
            .collect()
    }

    /// Replaces `u` by its Euclidean projection onto the polytope (within the unit cube), by Dykstra's algorithm.
    pub fn project(&self, u: &mut [f64]) {
        let inside = |u: &[f64]| {
            u.iter().all(|x| (0.0..=1.0).contains(x))
                && self.rows.iter().all(|r| {
                    let res = r.residual(u);
                    if r.equality { res.abs() <= 1e-14 * r.scale } else { res <= 0.0 }
                })
        };
        if inside(u) {
            return;
        }
        let d = self.d;
        // One increment per set: the cube, then each row (affine sets need none, but keeping them is harmless).
        let mut increments = vec![0.0; d * (self.rows.len() + 1)];
        let mut y = vec![0.0; d];
        for _ in 0..MAX_SWEEPS {
            let mut moved = 0.0_f64;
            for (s, inc) in increments.chunks_exact_mut(d.max(1)).enumerate() {
                for j in 0..d {
                    y[j] = u[j] + inc[j];
                }
                let before: Vec<f64> = y.clone();
                match s {
                    0 => y.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0)),
                    _ => self.rows[s - 1].project(&mut y),
                }
                for j in 0..d {
                    inc[j] = before[j] - y[j];
                    moved = moved.max((y[j] - u[j]).abs());
                    u[j] = y[j];
                }
            }
            if moved < 1e-15 || (moved < 1e-12 && inside(u)) {
                break;
            }
        }
        // The cube exactly (the last set of a sweep may be a row).
        u.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
    }

    /// Projects `g` (a gradient at the projection `p` of `u`) onto the directions along which the projection moves
    /// with `u`: it removes the components along the normals of the equalities, of the inequalities and cube faces
    /// `p` lies on while `u` is beyond them. Where the projection is differentiable this is its Jacobian applied to
    /// `g` (the orthogonal projector onto the active face).
    pub fn tangent(&self, u: &[f64], p: &[f64], g: &mut [f64]) {
        let d = self.d;
        let mut normals: Vec<Vec<f64>> = Vec::new();
        for j in 0..d {
            if (p[j] <= 0.0 && u[j] < 0.0) || (p[j] >= 1.0 && u[j] > 1.0) {
                let mut e = vec![0.0; d];
                e[j] = 1.0;
                normals.push(e);
            }
        }
        for r in &self.rows {
            let beyond = r.a.iter().zip(u.iter().zip(p)).map(|(a, (x, q))| a * (x - q)).sum::<f64>() > 0.0;
            if r.equality || (r.residual(p).abs() <= 1e-9 * r.scale && beyond) {
                normals.push(r.a.clone());
            }
        }
        // Modified Gram–Schmidt; dependent normals drop out.
        let mut basis: Vec<Vec<f64>> = Vec::new();
        for mut v in normals {
            for q in &basis {
                let c: f64 = v.iter().zip(q).map(|(a, b)| a * b).sum();
                v.iter_mut().zip(q).for_each(|(a, b)| *a -= c * b);
            }
            let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            if norm > 1e-10 {
                v.iter_mut().for_each(|a| *a /= norm);
                basis.push(v);
            }
        }
        for q in &basis {
            let c: f64 = g.iter().zip(q).map(|(a, b)| a * b).sum();
            g.iter_mut().zip(q).for_each(|(a, b)| *a -= c * b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::ParameterSpec;

    fn space(n: usize) -> Space {
        let specs: Vec<ParameterSpec> = (0..n)
            .map(|i| {
                serde_json::from_value(
                    serde_json::json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 2}),
                )
                .expect("spec")
            })
            .collect();
        Space::new(&specs).expect("space")
    }

    fn spec(terms: &[(&str, f64)], op: LinearOp, bound: f64) -> ParameterConstraintSpec {
        ParameterConstraintSpec { terms: terms.iter().map(|(k, v)| (k.to_string(), *v)).collect(), op, bound }
    }

    #[test]
    fn projects_onto_a_simplex_face_in_encoded_units() {
        // x0 + x1 + x2 = 1 with x in [0, 2]³: u0 + u1 + u2 = 0.5 in the cube.
        let s = space(3);
        let p = Polytope::new(&[spec(&[("x0", 1.0), ("x1", 1.0), ("x2", 1.0)], LinearOp::Equal, 1.0)], &s).unwrap();
        let mut u = vec![0.9, 0.1, 0.0];
        p.project(&mut u);
        assert!(p.contains(&u), "{u:?}");
        // Nearest: no point of a fine grid over the face is closer to u than the projection.
        let dist = |v: &[f64]| v.iter().zip([0.9, 0.1, 0.0]).map(|(a, b)| (a - b) * (a - b)).sum::<f64>();
        let mut best = f64::INFINITY;
        for i in 0..=500 {
            for j in 0..=(500 - i) {
                let v = [i as f64 / 1000.0, j as f64 / 1000.0, 0.5 - (i + j) as f64 / 1000.0];
                best = best.min(dist(&v));
            }
        }
        assert!(dist(&u) <= best + 1e-9, "projection {u:?} at {} is not the nearest ({best})", dist(&u));
    }

    #[test]
    fn refuses_what_it_cannot_keep_and_empty_sets() {
        let s = space(2);
        let empty =
            [spec(&[("x0", 1.0), ("x1", 1.0)], LinearOp::AtLeast, 5.0), spec(&[("x0", 1.0)], LinearOp::AtMost, 1.0)];
        let e = Polytope::new(&empty, &s).unwrap_err();
        assert_eq!(e[0].field, "parameter_constraints");
        let e = Polytope::new(&[spec(&[("nope", 1.0)], LinearOp::AtMost, 1.0)], &s).unwrap_err();
        assert_eq!(e[0].field, "parameter_constraints[0].terms.nope");
        let e = Polytope::new(&[spec(&[("x0", f64::NAN)], LinearOp::AtMost, 1.0)], &s).unwrap_err();
        assert_eq!(e[0].field, "parameter_constraints[0].terms.x0");
    }

    #[test]
    fn tangent_removes_the_active_normals_only() {
        let s = space(2);
        let p = Polytope::new(&[spec(&[("x0", 1.0), ("x1", 1.0)], LinearOp::AtMost, 1.0)], &s).unwrap();
        // Outside: u0 + u1 = 0.8 > 0.5; the projection moves along the face, the gradient loses its normal part.
        let u = [0.4, 0.4];
        let mut q = u;
        p.project(&mut q);
        let mut g = [1.0, 0.0];
        p.tangent(&u, &q, &mut g);
        assert!((g[0] - 0.5).abs() < 1e-12 && (g[1] + 0.5).abs() < 1e-12, "{g:?}");
        // Inside: untouched.
        let mut g = [1.0, 0.0];
        p.tangent(&[0.1, 0.1], &[0.1, 0.1], &mut g);
        assert_eq!(g, [1.0, 0.0]);
    }
}
