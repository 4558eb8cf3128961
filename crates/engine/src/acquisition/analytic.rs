//! Closed-form acquisitions on the marginal posterior: UCB, LogEI, PI.

use super::Acquisition;
use crate::gp::Gp;
use crate::special::{log_h, log_h_with_slope, norm_cdf, norm_pdf};

/// Smallest posterior standard deviation used, relative to the prior one: keeps z finite at training points.
const SIGMA_FLOOR: f64 = 1e-9;

/// σ from a posterior variance, floored at [`SIGMA_FLOOR`] times the prior standard deviation.
pub(super) fn floored_sigma(gp: &Gp, var: f64) -> f64 {
    var.sqrt().max(SIGMA_FLOOR * gp.prior_variance().sqrt()).max(f64::MIN_POSITIVE)
}

/// Shared posterior evaluation with gradients of (μ, σ).
pub(super) fn mean_sigma_grad(gp: &Gp, x: &[f64], dmu: &mut [f64], dsigma: &mut [f64]) -> (f64, f64) {
    let (mu, var) = gp.posterior_with_grad(x, dmu, dsigma);
    let sigma = floored_sigma(gp, var);
    if var.sqrt() < sigma {
        dsigma.iter_mut().for_each(|g| *g = 0.0);
    } else {
        dsigma.iter_mut().for_each(|g| *g /= 2.0 * sigma);
    }
    (mu, sigma)
}

/// Upper confidence bound `μ(x) + √β·σ(x)` (Srinivas et al., ICML 2010; β as in BoTorch, under the root).
#[derive(Debug, Clone)]
pub struct Ucb<'a> {
    gp: &'a Gp,
    sqrt_beta: f64,
}

impl<'a> Ucb<'a> {
    /// UCB with exploration weight β (σ is multiplied by √β).
    pub fn new(gp: &'a Gp, beta: f64) -> Self {
        Self { gp, sqrt_beta: beta.max(0.0).sqrt() }
    }

    /// UCB with σ multiplied by `multiplier` directly (the papers' `μ + β_t σ` notation).
    pub fn with_multiplier(gp: &'a Gp, multiplier: f64) -> Self {
        Self { gp, sqrt_beta: multiplier }
    }
}

impl Acquisition for Ucb<'_> {
    fn dim(&self) -> usize {
        self.gp.d()
    }

    fn value(&self, x: &[f64]) -> f64 {
        let (mu, var) = self.gp.posterior(x);
        mu + self.sqrt_beta * var.sqrt()
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut ds = vec![0.0; grad.len()];
        let (mu, sigma) = mean_sigma_grad(self.gp, x, grad, &mut ds);
        for (g, s) in grad.iter_mut().zip(&ds) {
            *g += self.sqrt_beta * s;
        }
        mu + self.sqrt_beta * sigma
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let (mu, var) = self.gp.posterior_batch(xs);
        mu.iter().zip(&var).map(|(m, v)| m + self.sqrt_beta * v.sqrt()).collect()
    }
}

/// Logarithm of expected improvement over `best` (Ament et al., "Unexpected Improvements to Expected Improvement
/// for Bayesian Optimization", NeurIPS 2023): `ln EI = ln h(z) + ln σ`, z = (μ − best)/σ, finite for every z.
#[derive(Debug, Clone)]
pub struct LogEi<'a> {
    gp: &'a Gp,
    best: f64,
}

impl<'a> LogEi<'a> {
    /// LogEI over the incumbent value `best`.
    pub fn new(gp: &'a Gp, best: f64) -> Self {
        Self { gp, best }
    }
}

impl Acquisition for LogEi<'_> {
    fn dim(&self) -> usize {
        self.gp.d()
    }

    fn value(&self, x: &[f64]) -> f64 {
        let (mu, var) = self.gp.posterior(x);
        let sigma = floored_sigma(self.gp, var);
        log_h((mu - self.best) / sigma) + sigma.ln()
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut ds = vec![0.0; grad.len()];
        let (mu, sigma) = mean_sigma_grad(self.gp, x, grad, &mut ds);
        let z = (mu - self.best) / sigma;
        let (lh, dlh) = log_h_with_slope(z);
        for (g, s) in grad.iter_mut().zip(&ds) {
            *g = dlh * (*g - z * s) / sigma + s / sigma;
        }
        lh + sigma.ln()
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let (mu, var) = self.gp.posterior_batch(xs);
        mu.iter()
            .zip(&var)
            .map(|(m, v)| {
                let s = floored_sigma(self.gp, *v);
                log_h((m - self.best) / s) + s.ln()
            })
            .collect()
    }
}

/// Probability of improvement `Φ((μ − best)/σ)` (Kushner 1964).
#[derive(Debug, Clone)]
pub struct Pi<'a> {
    gp: &'a Gp,
    best: f64,
}

impl<'a> Pi<'a> {
    /// PI over `best`.
    pub fn new(gp: &'a Gp, best: f64) -> Self {
        Self { gp, best }
    }
}

impl Acquisition for Pi<'_> {
    fn dim(&self) -> usize {
        self.gp.d()
    }

    fn value(&self, x: &[f64]) -> f64 {
        let (mu, var) = self.gp.posterior(x);
        norm_cdf((mu - self.best) / floored_sigma(self.gp, var))
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut ds = vec![0.0; grad.len()];
        let (mu, sigma) = mean_sigma_grad(self.gp, x, grad, &mut ds);
        let z = (mu - self.best) / sigma;
        let p = norm_pdf(z);
        for (g, s) in grad.iter_mut().zip(&ds) {
            *g = p * (*g - z * s) / sigma;
        }
        norm_cdf(z)
    }
}
