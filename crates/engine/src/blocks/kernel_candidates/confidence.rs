//! Confidence schedules of HE-GP-UCB (Ziomek et al. 2024): the UCB width β^u_t (σ is multiplied by β directly)
//! and the elimination slack ξ_t.
//!
//! - frequentist (Thm 4.1): `β^u_t = B + R·√(2(γ^u_{t−1} + 1 + ln(2/δ)))`;
//! - Bayesian, finite domain (Thm 4.2 A): `β_t = √(2 ln(|X| π² t²/(3δ)))`;
//! - Bayesian, continuous domain (Thm 4.2 B, Assumption B.1 `P(sup|∂f/∂x_j| > L) ≤ a e^{−L²/b}`, `X ⊂ [0, r]^d`):
//!   `β_t = √(2 ln(2π² t²/(3δ)) + 4d ln(d t b r √(ln(4da/δ))))` (the second logarithm is clamped at 0);
//! - all settings: `ξ_t = 2R² ln(|U| π² t²/(3δ))`. Theorem 4.1 prints `π t²`; Lemma 5.1 and Theorem 4.2 have `π²`,
//!   which we use. (The authors' related LB-GP-UCB code divides by 6δ instead of 3δ; we follow the paper.)
//!
//! Practical scaling: the theoretical β is conservative (Srinivas et al. 2010 shrink it by a constant in their
//! experiments). `beta_scale` multiplies β everywhere (UCB width and the Σβσ term of the elimination test); the
//! default 1 is the theory. γ^u_{t−1} is the greedy information gain on a discretisation (see `info_gain`).

use serde::{Deserialize, Serialize};

use super::CandidateModel;
use crate::error::FieldError;
use crate::space::{Domain, Space};

/// Which theorem the schedules follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ConfidenceSetting {
    /// f in the RKHS of the true kernel with norm ≤ B, R-sub-Gaussian noise (Theorem 4.1).
    #[default]
    Frequentist,
    /// f drawn from the true GP, finite domain (Theorem 4.2 A).
    BayesianFinite,
    /// f drawn from the true GP, continuous domain (Theorem 4.2 B).
    BayesianContinuous,
}

/// Confidence settings of the `kernel` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConfidenceSpec {
    /// `frequentist` (default), `bayesian_finite` or `bayesian_continuous`.
    pub setting: ConfidenceSetting,
    /// B: bound on the RKHS norm of f (frequentist).
    #[cfg_attr(feature = "openapi", schema(example = 1.0))]
    pub rkhs_norm_bound: f64,
    /// R: noise bound (sub-Gaussian parameter or standard deviation); default √ of the largest candidate noise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 0.01))]
    pub noise_bound: Option<f64>,
    /// δ: the bounds hold with probability 1 − δ.
    #[cfg_attr(feature = "openapi", schema(example = 0.1))]
    pub delta: f64,
    /// |X| for `bayesian_finite`; default the number of points of an all-integer/categorical space, else
    /// `info_gain_points`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_size: Option<f64>,
    /// a of Assumption B.1 (`bayesian_continuous`).
    pub gradient_a: f64,
    /// b of Assumption B.1 (`bayesian_continuous`).
    pub gradient_b: f64,
    /// r: side of the domain `[0, r]^d` in encoded units (`bayesian_continuous`; the unit cube: 1).
    pub domain_width: f64,
    /// Multiplies β (practical scaling; 1 = theory).
    #[cfg_attr(feature = "openapi", schema(example = 1.0))]
    pub beta_scale: f64,
    /// Points of the discretisation on which the information gain γ^u_t is computed greedily.
    pub info_gain_points: usize,
}

impl Default for ConfidenceSpec {
    fn default() -> Self {
        Self {
            setting: ConfidenceSetting::Frequentist,
            rkhs_norm_bound: 1.0,
            noise_bound: None,
            delta: 0.1,
            domain_size: None,
            gradient_a: 1.0,
            gradient_b: 1.0,
            domain_width: 1.0,
            beta_scale: 1.0,
            info_gain_points: 256,
        }
    }
}

/// Validated schedules.
#[derive(Debug, Clone, PartialEq)]
pub struct Confidence {
    /// Setting.
    pub setting: ConfidenceSetting,
    /// B.
    pub rkhs_norm_bound: f64,
    /// R.
    pub noise_bound: f64,
    /// δ.
    pub delta: f64,
    /// |X|.
    pub domain_size: f64,
    /// a, b, r of Assumption B.1.
    pub gradient_a: f64,
    /// b.
    pub gradient_b: f64,
    /// r.
    pub domain_width: f64,
    /// Encoded dimension d.
    pub dim: usize,
    /// |U|.
    pub n_candidates: usize,
    /// Practical multiplier of β.
    pub beta_scale: f64,
    /// Discretisation size of the information gain.
    pub info_gain_points: usize,
}

const PI2: f64 = std::f64::consts::PI * std::f64::consts::PI;

impl Confidence {
    /// ξ_t = 2R² ln(|U| π² t²/(3δ)) (t ≥ 1).
    pub fn xi(&self, t: usize) -> f64 {
        let t = t.max(1) as f64;
        2.0 * self.noise_bound.powi(2) * (self.n_candidates as f64 * PI2 * t * t / (3.0 * self.delta)).ln()
    }

    /// β^u_t as in the theorem (before `beta_scale`); `gamma_prev` is γ^u_{t−1} (used by the frequentist setting).
    pub fn beta_theory(&self, t: usize, gamma_prev: f64) -> f64 {
        let tf = t.max(1) as f64;
        let delta = self.delta;
        match self.setting {
            ConfidenceSetting::Frequentist => {
                self.rkhs_norm_bound
                    + self.noise_bound * (2.0 * (gamma_prev.max(0.0) + 1.0 + (2.0 / delta).ln())).sqrt()
            }
            ConfidenceSetting::BayesianFinite => (2.0 * (self.domain_size * PI2 * tf * tf / (3.0 * delta)).ln()).sqrt(),
            ConfidenceSetting::BayesianContinuous => {
                let d = self.dim.max(1) as f64;
                let inner =
                    d * tf * self.gradient_b * self.domain_width * (4.0 * d * self.gradient_a / delta).ln().sqrt();
                let second = (4.0 * d * inner.ln()).max(0.0);
                (2.0 * (2.0 * PI2 * tf * tf / (3.0 * delta)).ln() + second).max(0.0).sqrt()
            }
        }
    }

    /// The β used: `beta_scale · beta_theory`.
    pub fn beta(&self, t: usize, gamma_prev: f64) -> f64 {
        self.beta_scale * self.beta_theory(t, gamma_prev)
    }

    /// Whether β depends on the information gain.
    pub fn needs_information_gain(&self) -> bool {
        self.setting == ConfidenceSetting::Frequentist && self.noise_bound > 0.0
    }
}

/// Number of points of a space whose parameters are all integer or categorical.
fn discrete_size(space: &Space) -> Option<f64> {
    space.params().iter().try_fold(1.0, |acc, p| match &p.domain {
        Domain::Int { low, high, .. } => Some(acc * (high - low + 1) as f64),
        Domain::Categorical { choices } => Some(acc * choices.len() as f64),
        Domain::Float { .. } => None,
    })
}

impl ConfidenceSpec {
    pub(super) fn validate(&self, space: &Space, models: &[CandidateModel]) -> Result<Confidence, Vec<FieldError>> {
        let mut errors = Vec::new();
        let at = |f: &str| format!("kernel.confidence.{f}");
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            errors.push(FieldError::new(at("delta"), "must be in (0, 1)"));
        }
        if !(self.rkhs_norm_bound.is_finite() && self.rkhs_norm_bound >= 0.0) {
            errors.push(FieldError::new(at("rkhs_norm_bound"), "must be a finite number ≥ 0"));
        }
        if self.noise_bound.is_some_and(|r| !(r.is_finite() && r >= 0.0)) {
            errors.push(FieldError::new(at("noise_bound"), "must be a finite number ≥ 0"));
        }
        if self.domain_size.is_some_and(|s| !(s.is_finite() && s >= 1.0)) {
            errors.push(FieldError::new(at("domain_size"), "must be a finite number ≥ 1"));
        }
        for (name, v) in
            [("gradient_a", self.gradient_a), ("gradient_b", self.gradient_b), ("domain_width", self.domain_width)]
        {
            if !pos(v) {
                errors.push(FieldError::new(at(name), "must be a finite number > 0"));
            }
        }
        if !(self.beta_scale.is_finite() && self.beta_scale > 0.0 && self.beta_scale <= 100.0) {
            errors.push(FieldError::new(at("beta_scale"), "must be in (0, 100]"));
        }
        if !(16..=4096).contains(&self.info_gain_points) {
            errors.push(FieldError::new(at("info_gain_points"), "must be between 16 and 4096"));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let max_noise = models.iter().map(CandidateModel::noise).fold(0.0, f64::max);
        Ok(Confidence {
            setting: self.setting,
            rkhs_norm_bound: self.rkhs_norm_bound,
            noise_bound: self.noise_bound.unwrap_or(max_noise.sqrt()),
            delta: self.delta,
            domain_size: self.domain_size.or_else(|| discrete_size(space)).unwrap_or(self.info_gain_points as f64),
            gradient_a: self.gradient_a,
            gradient_b: self.gradient_b,
            domain_width: self.domain_width,
            dim: space.dim(),
            n_candidates: models.len().max(1),
            beta_scale: self.beta_scale,
            info_gain_points: self.info_gain_points,
        })
    }
}
