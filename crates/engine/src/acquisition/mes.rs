//! Max-value entropy search (Wang & Jegelka, "Max-value Entropy Search for Efficient Bayesian Optimization",
//! ICML 2017, Eq. 6): `α(x) = (1/K) Σ_k [γ_k φ(γ_k)/(2Φ(γ_k)) − ln Φ(γ_k)]`, `γ_k = (y*_k − μ(x))/σ(x)`,
//! with max-value samples y*_k from a Gumbel fit (their §3.1) or from joint posterior draws on a candidate set.
//! φ/Φ and ln Φ are evaluated in the tails with [`crate::special`], so α stays finite where Φ(γ) underflows.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::Acquisition;
use crate::gp::Gp;
use crate::special::{inv_mills, log_norm_cdf};

/// How max values y* are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxValueSampler {
    /// Gumbel distribution matched to the quartiles of `Π_i Φ((y − μ_i)/σ_i)` over the candidates.
    #[default]
    Gumbel,
    /// Maxima of joint posterior draws over the candidates.
    Sampling,
}

/// `count` samples of y* = max f using `candidates` (row-major points). Every sample is at least the largest
/// posterior mean among the candidates plus a hair, so γ never starts negative at the incumbent.
pub fn sample_max_values(
    gp: &Gp,
    candidates: &[f64],
    count: usize,
    method: MaxValueSampler,
    rng: &mut impl Rng,
) -> crate::error::Result<Vec<f64>> {
    let (mu, var) = gp.posterior_batch(candidates);
    let sd: Vec<f64> = var.iter().map(|v| v.sqrt().max(1e-12 * gp.prior_variance().sqrt())).collect();
    let floor = mu.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let eps = 1e-6 * gp.prior_variance().sqrt().max(f64::MIN_POSITIVE);
    let samples: Vec<f64> = match method {
        MaxValueSampler::Sampling => {
            let draws = gp.sample_joint(candidates, count, rng)?;
            draws.iter().map(|d| d.iter().cloned().fold(f64::NEG_INFINITY, f64::max)).collect()
        }
        MaxValueSampler::Gumbel => {
            let log_cdf = |y: f64| mu.iter().zip(&sd).map(|(m, s)| log_norm_cdf((y - m) / s)).sum::<f64>();
            let hi0 = mu.iter().zip(&sd).map(|(m, s)| m + 6.0 * s).fold(f64::NEG_INFINITY, f64::max);
            let quantile = |p: f64| {
                let target = p.ln();
                let (mut lo, mut hi) = (floor, hi0.max(floor + eps));
                // The step must exceed the float spacing at hi, or hi never moves (outputs of magnitude ≳ 1e16
                // with a spread of order 1: eps is then below one ulp). Doubling steps end in < 1100 rounds.
                let mut rounds = 0;
                while log_cdf(hi) < target && rounds < 1100 {
                    hi += (hi - lo).max(eps).max(4.0 * f64::EPSILON * hi.abs());
                    rounds += 1;
                }
                for _ in 0..100 {
                    let mid = 0.5 * (lo + hi);
                    if log_cdf(mid) < target { lo = mid } else { hi = mid }
                }
                0.5 * (lo + hi)
            };
            let (q1, q2, q3) = (quantile(0.25), quantile(0.5), quantile(0.75));
            // Gumbel quantile y_p = a − b ln(−ln p)
            let lnln = |p: f64| (-p.ln()).ln();
            let b = ((q3 - q1) / (lnln(0.25) - lnln(0.75))).max(eps);
            let a = q2 + b * lnln(0.5);
            (0..count).map(|_| a - b * (-(rng.random::<f64>().max(1e-300)).ln()).ln()).collect()
        }
    };
    Ok(samples.into_iter().map(|y: f64| y.max(floor + eps)).collect())
}

/// Max-value entropy search over a fixed set of max-value samples.
#[derive(Debug, Clone)]
pub struct Mes<'a> {
    gp: &'a Gp,
    max_values: Vec<f64>,
}

impl<'a> Mes<'a> {
    /// MES with the given samples of y*.
    pub fn new(gp: &'a Gp, max_values: Vec<f64>) -> Self {
        Self { gp, max_values }
    }

    fn value_at(&self, mu: f64, sigma: f64) -> f64 {
        let k = self.max_values.len().max(1) as f64;
        self.max_values
            .iter()
            .map(|y| {
                let g = (y - mu) / sigma;
                0.5 * g * inv_mills(g) - log_norm_cdf(g)
            })
            .sum::<f64>()
            / k
    }
}

impl Acquisition for Mes<'_> {
    fn dim(&self) -> usize {
        self.gp.d()
    }

    fn value(&self, x: &[f64]) -> f64 {
        let (mu, var) = self.gp.posterior(x);
        self.value_at(mu, var.sqrt().max(1e-12 * self.gp.prior_variance().sqrt()))
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut dvar = vec![0.0; grad.len()];
        let (mu, var) = self.gp.posterior_with_grad(x, grad, &mut dvar);
        let floor = 1e-12 * self.gp.prior_variance().sqrt();
        let sigma = var.sqrt().max(floor);
        let dsigma: Vec<f64> =
            if var.sqrt() > floor { dvar.iter().map(|v| v / (2.0 * sigma)).collect() } else { vec![0.0; grad.len()] };
        let k = self.max_values.len().max(1) as f64;
        let mut da_dmu = 0.0;
        let mut da_dsigma = 0.0;
        for y in &self.max_values {
            let g = (y - mu) / sigma;
            let lam = inv_mills(g);
            let da_dg = -0.5 * lam * (1.0 + g * (g + lam));
            // γ = (y − μ)/σ: ∂γ/∂μ = −1/σ, ∂γ/∂σ = −γ/σ
            da_dmu += da_dg * (-1.0 / sigma);
            da_dsigma += da_dg * (-g / sigma);
        }
        for (gm, s) in grad.iter_mut().zip(&dsigma) {
            *gm = (da_dmu * *gm + da_dsigma * s) / k;
        }
        self.value_at(mu, sigma)
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let (mu, var) = self.gp.posterior_batch(xs);
        let floor = 1e-12 * self.gp.prior_variance().sqrt();
        mu.iter().zip(&var).map(|(m, v)| self.value_at(*m, v.sqrt().max(floor))).collect()
    }
}
