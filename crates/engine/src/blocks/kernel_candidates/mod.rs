//! The `kernel.candidates` study block: a finite set U of complete candidate models (kernel family, lengthscales,
//! period, additive groups, prior mean, noise) of which one is assumed true, and the confidence settings of
//! Ziomek et al., "Beyond Lengthscales: No-regret Bayesian Optimisation With Unknown Hyperparameters Of Any Type"
//! (2024), Theorems 4.1/4.2. Used by `he-gp-ucb`, `he-stableopt` and the baselines `mle-ucb`, `expected-ucb`,
//! `a-gp-ucb` (see `policy::he_gp_ucb`, `policy::he_stableopt` and `policy::candidate_baselines`).
//!
//! Units. Lengthscales, periods and bump widths are in encoded units: a fraction of each parameter's range (of its
//! logarithm for `scale: log`), so a lengthscale of 0.3 on `x ∈ [0, 2]` is 0.6 in `x`. Output scale, noise variance
//! and the prior mean are in the objective's own units (the paper's models are not standardised: the theory needs
//! fixed models, and the elimination test compares raw prediction errors). A minimised objective's prior mean is
//! given in its own sign; the engine flips it with the values. With `standardize: true` (the authors' related
//! LB-GP-UCB code standardises the outputs at every step) each candidate conditions on `(y − m)/s` with m, s the
//! mean and standard deviation of the current observations: `outputscale` is then a multiple of s², the noise
//! variance stays in objective units, and μ, σ, the prediction errors η and β·σ are reported in objective units
//! (each β·σ term with the s of its own step), so the elimination test is unchanged in form.
//!
//! Deviations: an additive kernel divides `outputscale` evenly over its groups, so `k(x, x) = outputscale` for
//! every candidate (the theory assumes k ≤ 1 after scaling); studies with context parameters are not supported
//! (the block is validated against the decision parameters only).

mod confidence;
mod info_gain;
mod mean;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use confidence::{Confidence, ConfidenceSetting, ConfidenceSpec};
pub use info_gain::{InfoGainCache, greedy_information_gain};
pub use mean::{Bump, BumpsMean, MeanSpec};

use crate::error::FieldError;
use crate::gp::{self, Gp, GpConfig, Hyperparameters, MeanModel, NoiseModel};
use crate::kernel::{Component, Kernel, KernelFamily};
use crate::objective::Goal;
use crate::space::{Role, Space};

/// The `kernel` study block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KernelBlock {
    /// Candidate models (at least one; one of them is assumed to be the true model).
    pub candidates: Vec<CandidateModelSpec>,
    /// Confidence settings (β, ξ schedules); default frequentist with B = 1, δ = 0.1.
    #[serde(default)]
    pub confidence: ConfidenceSpec,
    /// Standardise the observations (mean and standard deviation of the data at each step) before conditioning
    /// every candidate, as the authors' related code does; `outputscale` is then relative to the data's variance
    /// and `mean` applies before standardising. Default false: fixed models, as the theory assumes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standardize: bool,
}

/// Lengthscales: one number for every parameter, or one per parameter in the order of `parameters`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Lengthscales {
    /// The same lengthscale for every parameter.
    Isotropic(f64),
    /// One lengthscale per parameter, in the order of `parameters`.
    PerParameter(Vec<f64>),
}

impl Default for Lengthscales {
    fn default() -> Self {
        Lengthscales::Isotropic(0.2)
    }
}

/// One candidate model: a complete kernel and mean specification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CandidateModelSpec {
    /// Label shown in diagnostics (default `candidate-<index>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = "short-lengthscale"))]
    pub name: Option<String>,
    /// Kernel family: `matern52` (default), `matern32`, `matern12`, `rbf`, `periodic`.
    #[serde(default)]
    pub family: KernelFamily,
    /// Lengthscale(s) in encoded units (fraction of each parameter's range); default 0.2.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = 0.3))]
    pub lengthscale: Lengthscales,
    /// Period of a `periodic` kernel in encoded units (required for it, rejected otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 0.5))]
    pub period: Option<f64>,
    /// Additive decomposition: groups of parameter names, one kernel component per group (default: one group of
    /// every parameter). Parameters in no group do not influence the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<Vec<String>>>,
    /// Prior variance k(x, x) in squared objective units (default 1).
    #[serde(default = "one")]
    #[cfg_attr(feature = "openapi", schema(example = 1.0))]
    pub outputscale: f64,
    /// Observation noise variance in squared objective units (default 1e-4).
    #[serde(default = "default_noise")]
    #[cfg_attr(feature = "openapi", schema(example = 0.0001))]
    pub noise: f64,
    /// Prior mean function (default zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<MeanSpec>,
}

fn one() -> f64 {
    1.0
}

fn default_noise() -> f64 {
    1e-4
}

/// A validated candidate model: GP configuration and fixed hyperparameters.
#[derive(Debug, Clone)]
pub struct CandidateModel {
    /// Label.
    pub name: String,
    /// Configuration (fixed noise, zero constant mean, optional prior mean; standardised only on request).
    pub config: GpConfig,
    /// The fixed hyperparameters.
    pub hypers: Hyperparameters,
    /// Geometric mean of the lengthscales (used by `a-gp-ucb` to order candidates).
    pub mean_lengthscale: f64,
}

impl CandidateModel {
    /// The GP of this candidate conditioned on `data`.
    pub fn condition(&self, data: &gp::Data) -> crate::error::Result<Gp> {
        Gp::new(data, &self.config, self.hypers.clone())
    }

    /// Noise variance (objective units).
    pub fn noise(&self) -> f64 {
        self.hypers.noise_variance
    }
}

/// The validated block: candidate models and confidence schedule.
#[derive(Debug, Clone)]
pub struct CandidateSet {
    /// The candidates, in the order given.
    pub models: Vec<CandidateModel>,
    /// β and ξ schedules.
    pub confidence: Confidence,
}

impl CandidateSet {
    /// Number of candidates |U|.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether there are no candidates (never true after validation).
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

impl KernelBlock {
    /// Validates the block against the space and builds the candidate models; errors name `kernel.…` fields.
    pub fn validate(&self, space: &Space, goal: Goal) -> Result<Arc<CandidateSet>, Vec<FieldError>> {
        let mut errors = Vec::new();
        if space.params().iter().any(|p| p.role != Role::Decision) {
            errors.push(FieldError::new("kernel", "kernel.candidates supports decision parameters only"));
        }
        if self.candidates.is_empty() {
            errors.push(FieldError::new("kernel.candidates", "give at least one candidate model"));
        }
        if self.candidates.len() > 64 {
            errors.push(FieldError::new("kernel.candidates", "at most 64 candidate models"));
        }
        let mut models = Vec::new();
        for (i, c) in self.candidates.iter().enumerate() {
            match c.build(space, goal, &format!("kernel.candidates[{i}]"), i, self.standardize) {
                Ok(m) => models.push(m),
                Err(mut e) => errors.append(&mut e),
            }
        }
        let confidence = match self.confidence.validate(space, &models) {
            Ok(c) => Some(c),
            Err(mut e) => {
                errors.append(&mut e);
                None
            }
        };
        match confidence {
            Some(confidence) if errors.is_empty() => Ok(Arc::new(CandidateSet { models, confidence })),
            _ => Err(errors),
        }
    }
}

impl CandidateModelSpec {
    fn build(
        &self,
        space: &Space,
        goal: Goal,
        at: &str,
        index: usize,
        standardize: bool,
    ) -> Result<CandidateModel, Vec<FieldError>> {
        let mut errors = Vec::new();
        let n_params = space.params().len();
        let per_param: Vec<f64> = match &self.lengthscale {
            Lengthscales::Isotropic(l) => vec![*l; n_params],
            Lengthscales::PerParameter(v) => {
                if v.len() != n_params {
                    errors.push(FieldError::new(
                        format!("{at}.lengthscale"),
                        format!("give one number or one per parameter ({n_params})"),
                    ));
                }
                v.clone()
            }
        };
        if per_param.iter().any(|l| !(positive(*l) && *l <= 1e4)) {
            errors.push(FieldError::new(format!("{at}.lengthscale"), "lengthscales must be in (0, 1e4]"));
        }
        let periodic = self.family == KernelFamily::Periodic;
        match (periodic, self.period) {
            (true, None) => errors.push(FieldError::new(format!("{at}.period"), "required for family 'periodic'")),
            (true, Some(p)) if !(positive(p) && p <= 1e4) => {
                errors.push(FieldError::new(format!("{at}.period"), "must be in (0, 1e4]"))
            }
            (false, Some(_)) => errors.push(FieldError::new(format!("{at}.period"), "only for family 'periodic'")),
            _ => {}
        }
        if !(positive(self.outputscale) && self.outputscale <= 1e12) {
            errors.push(FieldError::new(format!("{at}.outputscale"), "must be in (0, 1e12]"));
        }
        if !(self.noise.is_finite() && self.noise >= 0.0 && self.noise <= 1e12) {
            errors.push(FieldError::new(format!("{at}.noise"), "must be a number in [0, 1e12]"));
        }
        let groups: Vec<Vec<usize>> = match &self.groups {
            None => vec![(0..n_params).collect()],
            Some(gs) => {
                if gs.is_empty() {
                    errors.push(FieldError::new(format!("{at}.groups"), "give at least one group"));
                }
                let mut out = Vec::new();
                for (g, names) in gs.iter().enumerate() {
                    let mut idx = Vec::new();
                    if names.is_empty() {
                        errors.push(FieldError::new(format!("{at}.groups[{g}]"), "must not be empty"));
                    }
                    for name in names {
                        match space.index_of(name) {
                            Some(i) if !idx.contains(&i) => idx.push(i),
                            Some(_) => errors.push(FieldError::new(
                                format!("{at}.groups[{g}]"),
                                format!("parameter '{name}' appears twice"),
                            )),
                            None => errors.push(FieldError::new(
                                format!("{at}.groups[{g}]"),
                                format!("unknown parameter '{name}'"),
                            )),
                        }
                    }
                    out.push(idx);
                }
                out
            }
        };
        let mean = match &self.mean {
            Some(m) => match m.build(space, goal, &format!("{at}.mean")) {
                Ok(f) => f,
                Err(mut e) => {
                    errors.append(&mut e);
                    None
                }
            },
            None => None,
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let n_comp = groups.len() as f64;
        let mut components = Vec::new();
        let mut theta = Vec::new();
        let mut log_l_sum = 0.0;
        let mut n_l = 0usize;
        for g in &groups {
            let mut dims = Vec::new();
            let mut ls = Vec::new();
            for &p in g {
                for j in space.dims_of(p) {
                    dims.push(j);
                    ls.push(per_param[p]);
                }
            }
            let comp = Component { family: self.family, dims };
            theta.extend(ls.iter().map(|l| l.ln()));
            log_l_sum += ls.iter().map(|l| l.ln()).sum::<f64>();
            n_l += ls.len();
            theta.push((self.outputscale / n_comp).ln());
            if periodic {
                theta.push(self.period.unwrap_or(1.0).ln());
            }
            components.push(comp);
        }
        let kernel = Kernel::additive(components, space.dim());
        let mut config = GpConfig::default_for(space.dim());
        config.kernel = kernel;
        config.noise = NoiseModel::Fixed(self.noise);
        config.mean = MeanModel::Zero;
        config.prior_mean = mean;
        config.standardize = standardize;
        config.priors = false;
        config.restarts = 0;
        Ok(CandidateModel {
            name: self.name.clone().unwrap_or_else(|| format!("candidate-{index}")),
            config,
            hypers: Hyperparameters { theta, noise_variance: self.noise, mean: 0.0 },
            mean_lengthscale: (log_l_sum / n_l.max(1) as f64).exp(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::ParameterSpec;
    use serde_json::json;

    fn space(n: usize) -> Space {
        let specs: Vec<ParameterSpec> = (0..n)
            .map(|i| {
                serde_json::from_value(json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 2})).unwrap()
            })
            .collect();
        Space::new(&specs).unwrap()
    }

    fn block(v: serde_json::Value) -> KernelBlock {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn additive_candidate_splits_the_outputscale_over_its_groups() {
        let b = block(json!({"candidates": [{"groups": [["x0", "x1"], ["x2"]], "lengthscale": [0.1, 0.2, 0.3],
            "outputscale": 2.0}]}));
        let set = b.validate(&space(3), Goal::Maximize).unwrap();
        let m = &set.models[0];
        assert_eq!(m.config.kernel.components().len(), 2);
        assert!((m.config.kernel.prior_variance(&m.hypers.theta) - 2.0).abs() < 1e-12);
        let expect = [0.1f64.ln(), 0.2f64.ln(), 1f64.ln(), 0.3f64.ln(), 1f64.ln()];
        for (a, b) in m.hypers.theta.iter().zip(expect) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn errors_name_the_offending_fields() {
        let b = block(json!({"candidates": [
            {"lengthscale": [0.1]},
            {"family": "periodic"},
            {"groups": [["nope"]], "noise": -1.0},
            {"mean": {"type": "bumps", "bumps": [{"center": {"x0": 5.0}, "width": 0.1, "height": 1.0}]}}
        ], "confidence": {"delta": 2.0}}));
        let fields: Vec<String> =
            b.validate(&space(2), Goal::Maximize).unwrap_err().into_iter().map(|e| e.field).collect();
        for f in [
            "kernel.candidates[0].lengthscale",
            "kernel.candidates[1].period",
            "kernel.candidates[2].groups[0]",
            "kernel.candidates[2].noise",
            "kernel.candidates[3].mean.bumps[0].center",
            "kernel.confidence.delta",
        ] {
            assert!(fields.iter().any(|x| x.starts_with(f)), "{f} missing from {fields:?}");
        }
    }

    /// With `standardize`, a candidate's posterior is equivariant to affine changes of the objective's units
    /// (as the authors' standardised models are); without it the prior variance is fixed in objective units.
    #[test]
    fn standardised_candidates_scale_with_the_data() {
        let sp = space(1);
        let data = |a: f64, b: f64| {
            let xs = vec![0.1, 0.35, 0.6, 0.9];
            let ys = xs.iter().map(|x: &f64| a * (6.0 * x).sin() + b).collect();
            gp::Data::new(1, xs, ys)
        };
        let post = |standardize: bool, a: f64, b: f64| {
            let v = json!({"candidates": [{"lengthscale": 0.2, "noise": 1e-10}], "standardize": standardize});
            let set = block(v).validate(&sp, Goal::Maximize).unwrap();
            assert_eq!(set.models[0].config.standardize, standardize);
            set.models[0].condition(&data(a, b)).unwrap().posterior(&[0.48])
        };
        let ((m1, v1), (m2, v2)) = (post(true, 1.0, 0.0), post(true, 10.0, 3.0));
        assert!((m2 - (10.0 * m1 + 3.0)).abs() < 1e-6 && (v2.sqrt() - 10.0 * v1.sqrt()).abs() < 1e-6);
        let ((_, r1), (_, r2)) = (post(false, 1.0, 0.0), post(false, 10.0, 3.0));
        assert!((r1 - r2).abs() < 1e-12, "raw models: σ does not depend on y");
    }

    #[test]
    fn periodic_candidate_carries_its_period() {
        let b = block(json!({"candidates": [{"family": "periodic", "period": 0.5, "lengthscale": 0.7}]}));
        let set = b.validate(&space(1), Goal::Maximize).unwrap();
        let k = &set.models[0].config.kernel;
        let th = &set.models[0].hypers.theta;
        // one period apart the kernel is back at its prior variance
        assert!((k.eval(th, &[0.1], &[0.6]) - 1.0).abs() < 1e-12);
        assert!(k.eval(th, &[0.1], &[0.35]) < 0.9);
    }
}
