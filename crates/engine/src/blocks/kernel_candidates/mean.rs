//! Prior mean functions of candidate models: a constant, or a constant plus a sum of Gaussian bumps
//! `m(x) = c + Σ_k h_k exp(−‖x − c_k‖²/(2 w_k²))` in encoded coordinates (the "hills" of the paper's unknown-mean
//! experiment, App. J.4).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::FieldError;
use crate::gp::MeanFunction;
use crate::objective::Goal;
use crate::space::{Assignments, Space};

/// One Gaussian bump of a prior mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Bump {
    /// Centre: a value for every parameter (in the parameters' own units).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub center: Assignments,
    /// Width (standard deviation) in encoded units.
    #[cfg_attr(feature = "openapi", schema(example = 0.05))]
    pub width: f64,
    /// Height in objective units (may be negative).
    #[cfg_attr(feature = "openapi", schema(example = 2.0))]
    pub height: f64,
}

/// A prior mean function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum MeanSpec {
    /// A constant `value`.
    Constant {
        /// The constant, in objective units.
        value: f64,
    },
    /// `offset` plus a sum of Gaussian bumps.
    Bumps {
        /// Constant added everywhere (default 0).
        #[serde(default)]
        offset: f64,
        /// The bumps (at most 256).
        bumps: Vec<Bump>,
    },
}

/// `offset + Σ h_k exp(−‖x − c_k‖²/(2w_k²))` over encoded points, in the engine's maximisation sign.
#[derive(Debug, Clone, PartialEq)]
pub struct BumpsMean {
    /// Constant part.
    pub offset: f64,
    /// Encoded centres, widths and heights.
    pub bumps: Vec<(Vec<f64>, f64, f64)>,
}

impl MeanFunction for BumpsMean {
    fn value(&self, x: &[f64]) -> f64 {
        self.offset + self.bumps.iter().map(|(c, w, h)| h * (-sq_dist(x, c) / (2.0 * w * w)).exp()).sum::<f64>()
    }

    fn add_gradient(&self, x: &[f64], grad: &mut [f64]) {
        for (c, w, h) in &self.bumps {
            let e = h * (-sq_dist(x, c) / (2.0 * w * w)).exp();
            for ((g, xi), ci) in grad.iter_mut().zip(x).zip(c) {
                *g -= e * (xi - ci) / (w * w);
            }
        }
    }
}

fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

impl MeanSpec {
    /// The mean function in the engine's sign, or `None` for the zero function.
    pub(crate) fn build(
        &self,
        space: &Space,
        goal: Goal,
        at: &str,
    ) -> Result<Option<Arc<dyn MeanFunction>>, Vec<FieldError>> {
        let s = goal.sign();
        let finite = |v: f64| v.is_finite() && v.abs() <= 1e12;
        match self {
            MeanSpec::Constant { value } if !finite(*value) => {
                Err(vec![FieldError::new(format!("{at}.value"), "must be a finite number")])
            }
            MeanSpec::Constant { value } if *value == 0.0 => Ok(None),
            MeanSpec::Constant { value } => Ok(Some(Arc::new(BumpsMean { offset: s * value, bumps: vec![] }))),
            MeanSpec::Bumps { offset, bumps } => {
                let mut errors = Vec::new();
                if !finite(*offset) {
                    errors.push(FieldError::new(format!("{at}.offset"), "must be a finite number"));
                }
                if bumps.len() > 256 {
                    errors.push(FieldError::new(format!("{at}.bumps"), "at most 256 bumps"));
                }
                let mut out = Vec::new();
                for (k, b) in bumps.iter().enumerate() {
                    let here = format!("{at}.bumps[{k}]");
                    match space.encode(&b.center, &format!("{here}.center")) {
                        Ok(c) => out.push((c, b.width, s * b.height)),
                        Err(mut e) => errors.append(&mut e),
                    }
                    if !(b.width.is_finite() && b.width > 0.0 && b.width <= 1e4) {
                        errors.push(FieldError::new(format!("{here}.width"), "must be in (0, 1e4]"));
                    }
                    if !finite(b.height) {
                        errors.push(FieldError::new(format!("{here}.height"), "must be a finite number"));
                    }
                }
                if errors.is_empty() {
                    Ok(Some(Arc::new(BumpsMean { offset: s * offset, bumps: out })))
                } else {
                    Err(errors)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_matches_central_differences() {
        let m = BumpsMean { offset: 0.3, bumps: vec![(vec![0.2, 0.7], 0.1, 2.0), (vec![0.5, 0.5], 0.3, -1.0)] };
        let x = [0.25, 0.6];
        let mut g = [0.0; 2];
        m.add_gradient(&x, &mut g);
        for j in 0..2 {
            let (mut a, mut b) = (x, x);
            a[j] += 1e-6;
            b[j] -= 1e-6;
            let fd = (m.value(&a) - m.value(&b)) / 2e-6;
            assert!((g[j] - fd).abs() < 1e-6, "{} vs {fd}", g[j]);
        }
    }
}
