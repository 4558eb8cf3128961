//! How an experiment is measured: an explicit finite domain (`candidates`), selectable noise levels
//! (`noise_levels`), a known cost (`cost_model`) and a level-set question (`level_set`). These are the study blocks
//! behind TRUVAR (Bogunovic, Scarlett, Krause, Cevher: "Truncated Variance Reduction: A Unified Approach to Bayesian
//! Optimization and Level-Set Estimation", NIPS 2016), usable by every policy: GP policies choose from the
//! candidate set when there is one, and policies that do not choose a noise level play the first one.
//!
//! Cost of a run: `cost_model(x, x')` (when declared) + the level's cost (when the study has noise levels); 1 when
//! the study declares neither. An observed `cost` overrides it.

pub mod candidates;
pub mod cost_model;
pub mod level_set;
pub mod noise_levels;

pub use candidates::{CandidateSet, CandidatesSpec};
pub use cost_model::{CostModel, CostModelSpec};
pub use level_set::{Class, LevelSetSpec};
pub use noise_levels::NoiseLevelSpec;

use crate::sampling::Sobol;
use crate::space::Space;

/// Default number of representer points of a continuous domain (TRUVAR App. A: a 50×50 grid in [0,1]²).
pub const DEFAULT_REPRESENTER_POINTS: usize = 2500;

/// The validated measurement blocks of a study.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measurement {
    /// Explicit finite domain.
    pub candidates: Option<CandidateSet>,
    /// Noise levels, in the order declared.
    pub noise_levels: Vec<NoiseLevelSpec>,
    /// Known cost model.
    pub cost_model: Option<CostModel>,
    /// Level-set threshold (client units and sign).
    pub level_set: Option<f64>,
}

impl Measurement {
    /// Index of the level called `name`.
    pub fn level_index(&self, name: &str) -> Option<usize> {
        self.noise_levels.iter().position(|l| l.name == name)
    }

    /// Known noise variance of level `i` (client units), if the study has levels.
    pub fn level_variance(&self, i: Option<usize>) -> Option<f64> {
        i.and_then(|i| self.noise_levels.get(i)).map(|l| l.noise_variance)
    }

    /// Whether the study declares any cost (a model or level costs).
    pub fn has_costs(&self) -> bool {
        self.cost_model.is_some() || !self.noise_levels.is_empty()
    }

    /// Known cost of running at `x` (full encoded) with level `level` after `previous` (see the module docs).
    pub fn cost(&self, x: &[f64], level: Option<usize>, previous: Option<&[f64]>) -> f64 {
        if !self.has_costs() {
            return 1.0;
        }
        let model = self.cost_model.as_ref().map_or(0.0, |m| m.cost(x, previous));
        let level = level.and_then(|i| self.noise_levels.get(i)).map_or(0.0, |l| l.cost);
        model + level
    }

    /// The finite domain policies work on, full encoded rows: the candidate set, else `n` representer points of
    /// the decision box (a uniform grid with ⌊n^{1/d}⌋ points per axis when that has at least 5 per axis, else
    /// the first `n` points of an unscrambled Sobol sequence), non-decision coordinates at the centre.
    pub fn domain(&self, space: &Space, decision: &[usize], n: usize) -> Vec<f64> {
        if let Some(c) = &self.candidates {
            return c.x.clone();
        }
        representer_points(space, decision, n)
    }
}

/// Representer points of the decision box (see [`Measurement::domain`]), snapped to the space.
pub fn representer_points(space: &Space, decision: &[usize], n: usize) -> Vec<f64> {
    let dims = space.dims_of_params(decision);
    let q = dims.len().max(1);
    let per_axis = (n as f64).powf(1.0 / q as f64).floor() as usize;
    let per_axis = if (per_axis + 1).checked_pow(q as u32).is_some_and(|m| m <= n) { per_axis + 1 } else { per_axis };
    let units: Vec<Vec<f64>> = if per_axis >= 5 {
        let total = per_axis.pow(q as u32);
        (0..total)
            .map(|mut k| {
                (0..q)
                    .map(|_| {
                        let i = k % per_axis;
                        k /= per_axis;
                        (i as f64 + 0.5) / per_axis as f64
                    })
                    .collect()
            })
            .collect()
    } else {
        let flat = Sobol::new(q).take(n.max(1));
        flat.chunks_exact(q).map(<[f64]>::to_vec).collect()
    };
    let mut out = Vec::with_capacity(units.len() * space.dim());
    for u in units {
        let mut x = space.centre();
        for (v, &j) in u.iter().zip(&dims) {
            x[j] = *v;
        }
        space.snap(&mut x);
        out.extend(x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::ParameterSpec;
    use serde_json::json;

    #[test]
    fn a_two_dimensional_box_gets_a_fifty_by_fifty_grid() {
        let specs: Vec<ParameterSpec> = serde_json::from_value(json!([
            {"name": "a", "type": "float", "low": 0, "high": 1},
            {"name": "b", "type": "float", "low": 0, "high": 1}
        ]))
        .unwrap();
        let space = Space::new(&specs).unwrap();
        let pts = representer_points(&space, &[0, 1], DEFAULT_REPRESENTER_POINTS);
        assert_eq!(pts.len(), 2500 * 2);
        assert!((pts[0] - 0.01).abs() < 1e-12 && (pts[2] - 0.03).abs() < 1e-12);
    }

    #[test]
    fn cost_adds_the_model_and_the_level() {
        let m = Measurement {
            noise_levels: vec![NoiseLevelSpec { name: "a".into(), noise_variance: 0.1, cost: 2.0 }],
            ..Default::default()
        };
        assert_eq!(m.cost(&[0.5], Some(0), None), 2.0);
        assert_eq!(Measurement::default().cost(&[0.5], None, None), 1.0);
    }
}
