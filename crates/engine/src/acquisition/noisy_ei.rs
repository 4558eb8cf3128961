//! Log noisy expected improvement (Letham, Karrer, Ottoni & Bakshy, "Constrained Bayesian Optimization with Noisy
//! Experiments", Bayesian Analysis 2019, eq. 6–7), in the log form of Ament et al. (NeurIPS 2023):
//! `NEI(x) = E_{f(X) | y}[ EI(x | f(X)) ]`, the expected improvement over the best *latent* value at the observed
//! inputs, averaged over the posterior of those latent values instead of plugging in one incumbent. Estimated with
//! S fixed joint draws ([`crate::gp::DrawnModels`], common random numbers, so the optimiser sees a deterministic,
//! differentiable function): `ln NEI ≈ logsumexp_s(ln EI_s(x)) − ln S`, with `EI_s` the closed-form EI of draw s's
//! noiseless model over that draw's largest value. Without noise every draw equals the observations and NEI is EI
//! over the best observation; with noise it discounts points next to an incumbent whose value is itself uncertain.

use super::Acquisition;
use super::analytic::floored_sigma;
use crate::gp::DrawnModels;
use crate::special::{d_log_h, log_h};

/// `ln NEI(x)` over S posterior draws at the observed inputs.
#[derive(Debug, Clone)]
pub struct LogNei {
    draws: DrawnModels,
}

impl LogNei {
    /// LogNEI of the draws' models.
    pub fn new(draws: DrawnModels) -> Self {
        Self { draws }
    }

    /// `(ln EI_s)` of every draw from its mean, the shared σ, into `terms`; returns their log-mean.
    fn combine(&self, means: &[f64], sigma: f64, terms: &mut [f64]) -> f64 {
        for ((t, m), b) in terms.iter_mut().zip(means).zip(self.draws.best()) {
            *t = log_h((m - b) / sigma) + sigma.ln();
        }
        let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = terms.iter().map(|t| (t - top).exp()).sum();
        top + (sum / terms.len() as f64).ln()
    }
}

impl Acquisition for LogNei {
    fn dim(&self) -> usize {
        self.draws.model().d()
    }

    fn value(&self, x: &[f64]) -> f64 {
        let s = self.draws.count();
        let mut means = vec![0.0; s];
        let var = self.draws.posterior(x, &mut means);
        let sigma = floored_sigma(self.draws.model(), var);
        self.combine(&means, sigma, &mut vec![0.0; s])
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let (s, d) = (self.draws.count(), grad.len());
        let mut means = vec![0.0; s];
        let mut dmeans = vec![0.0; s * d];
        let mut dsigma = vec![0.0; d];
        let var = self.draws.posterior_with_grad(x, &mut means, &mut dmeans, &mut dsigma);
        let sigma = floored_sigma(self.draws.model(), var);
        if var.sqrt() < sigma {
            dsigma.iter_mut().for_each(|g| *g = 0.0);
        } else {
            dsigma.iter_mut().for_each(|g| *g /= 2.0 * sigma);
        }
        let mut terms = vec![0.0; s];
        let value = self.combine(&means, sigma, &mut terms);
        // ∂ ln NEI = Σ_s w_s ∂ ln EI_s with w_s = EI_s / Σ EI (the softmax of the terms).
        grad.iter_mut().for_each(|g| *g = 0.0);
        let log_total = value + (s as f64).ln();
        for (k, (t, (m, b))) in terms.iter().zip(means.iter().zip(self.draws.best())).enumerate() {
            let w = (t - log_total).exp();
            let z = (m - b) / sigma;
            let dlh = d_log_h(z);
            for j in 0..d {
                let dm = dmeans[k * d + j];
                grad[j] += w * (dlh * (dm - z * dsigma[j]) / sigma + dsigma[j] / sigma);
            }
        }
        value
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let (means, vars) = self.draws.posterior_batch(xs);
        let mut terms = vec![0.0; self.draws.count()];
        let mut row = vec![0.0; self.draws.count()];
        (0..vars.len())
            .map(|p| {
                row.iter_mut().enumerate().for_each(|(s, v)| *v = means[(p, s)]);
                self.combine(&row, floored_sigma(self.draws.model(), vars[p]), &mut terms)
            })
            .collect()
    }
}
