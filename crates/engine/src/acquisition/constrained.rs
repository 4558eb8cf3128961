//! Outcome constraints in the acquisition: the probability that a point is feasible under independent GP models
//! of the constraints' slacks (feasible where the slack is ≥ 0), multiplying an acquisition, in logs (Gardner et
//! al., "Bayesian Optimization with Inequality Constraints", ICML 2014; Gelbart, Snoek & Adams, UAI 2014). With a
//! log acquisition (LogEI: Ament et al. 2023) the product is a sum, finite where the probability underflows.

use super::Acquisition;
use super::analytic::{floored_sigma, mean_sigma_grad};
use crate::gp::Gp;
use crate::special::{inv_mills, log_norm_cdf};

/// GP models of the constraints' slacks (raw units: the slack itself, no warp).
#[derive(Debug, Clone, Default)]
pub struct Feasibility {
    /// One model per constraint.
    pub models: Vec<Gp>,
}

impl Feasibility {
    /// `ln P(every slack ≥ 0)` at `x`: `Σ_c ln Φ(μ_c / σ_c)`.
    pub fn log_probability(&self, x: &[f64]) -> f64 {
        self.models
            .iter()
            .map(|gp| {
                let (mu, var) = gp.posterior(x);
                log_norm_cdf(mu / floored_sigma(gp, var))
            })
            .sum()
    }

    /// The probability of feasibility of each constraint at `x`.
    pub fn probabilities(&self, x: &[f64]) -> Vec<f64> {
        self.models
            .iter()
            .map(|gp| {
                let (mu, var) = gp.posterior(x);
                log_norm_cdf(mu / floored_sigma(gp, var)).exp()
            })
            .collect()
    }

    /// [`Feasibility::log_probability`] with its gradient added into `grad`.
    pub fn add_log_probability_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let d = grad.len();
        let (mut dmu, mut ds) = (vec![0.0; d], vec![0.0; d]);
        let mut total = 0.0;
        for gp in &self.models {
            let (mu, sigma) = mean_sigma_grad(gp, x, &mut dmu, &mut ds);
            let z = mu / sigma;
            // d ln Φ(z) = φ(z)/Φ(z) · dz, dz = dμ/σ − z dσ/σ.
            let slope = inv_mills(z);
            for j in 0..d {
                grad[j] += slope * (dmu[j] - z * ds[j]) / sigma;
            }
            total += log_norm_cdf(z);
        }
        total
    }
}

/// `inner + ln P(feasible)`, or `ln P(feasible)` alone while no observation is feasible (the search then seeks
/// feasibility, as in Gelbart et al.). `inner` must be a log acquisition.
pub struct Constrained<'a> {
    /// The log acquisition of the objective, if there is a feasible incumbent.
    pub inner: Option<&'a dyn Acquisition>,
    /// The constraints' models.
    pub feasibility: &'a Feasibility,
    /// Input dimension.
    pub dim: usize,
}

impl Acquisition for Constrained<'_> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.inner.map_or(0.0, |a| a.value(x)) + self.feasibility.log_probability(x)
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let v = match self.inner {
            Some(a) => a.value_and_grad(x, grad),
            None => {
                grad.iter_mut().for_each(|g| *g = 0.0);
                0.0
            }
        };
        v + self.feasibility.add_log_probability_grad(x, grad)
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let d = self.dim.max(1);
        let inner = self.inner.map(|a| a.values(xs));
        let mut out: Vec<f64> = inner.unwrap_or_else(|| vec![0.0; xs.len() / d]);
        for gp in &self.feasibility.models {
            let (mu, var) = gp.posterior_batch(xs);
            for ((o, m), v) in out.iter_mut().zip(mu).zip(var) {
                *o += log_norm_cdf(m / floored_sigma(gp, v));
            }
        }
        out
    }
}
