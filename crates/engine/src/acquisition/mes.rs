//! Max-value entropy search (Wang & Jegelka, "Max-value Entropy Search for Efficient Bayesian Optimization",
//! ICML 2017, Eq. 6): `α(x) = (1/K) Σ_k [γ_k φ(γ_k)/(2Φ(γ_k)) − ln Φ(γ_k)]`, `γ_k = (y*_k − μ(x))/σ(x)`,
//! with max-value samples y*_k from a Gumbel fit (their §3.1) or from joint posterior draws on a candidate set.
//! φ/Φ and ln Φ are evaluated in the tails with [`crate::special`], and [`Mes`] returns ln α (see there), so the
//! acquisition stays finite and informative where α underflows.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::Acquisition;
use crate::gp::Gp;
use crate::special::{erfcx, inv_mills, log_norm_cdf, log_norm_cdf_vanishes};

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
        MaxValueSampler::Gumbel => gumbel_max_values(&mu, &sd, floor, eps, count, rng),
    };
    Ok(samples.into_iter().map(|y: f64| y.max(floor + eps)).collect())
}

/// `count` Gumbel samples of max_i f_i for independent marginals N(mu_i, sd_i²): the Gumbel distribution matched to
/// the quartiles of `Π_i Φ((y − μ_i)/σ_i)` (Wang & Jegelka 2017, §3.1); `floor` is the largest mean, `eps` a hair.
pub fn gumbel_max_values(mu: &[f64], sd: &[f64], floor: f64, eps: f64, count: usize, rng: &mut impl Rng) -> Vec<f64> {
    // Terms that are exactly −0 are skipped (bitwise the same sum, far fewer `erfc` calls).
    let log_cdf = |y: f64| {
        mu.iter()
            .zip(sd)
            .map(|(m, s)| (y - m) / s)
            .filter(|&z| !log_norm_cdf_vanishes(z))
            .map(log_norm_cdf)
            .sum::<f64>()
    };
    let hi0 = mu.iter().zip(sd).map(|(m, s)| m + 6.0 * s).fold(f64::NEG_INFINITY, f64::max);
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
            let before = (lo, hi);
            if log_cdf(mid) < target {
                lo = mid
            } else {
                hi = mid
            }
            // A step that changes nothing repeats forever (same mid, same test): the remaining ones are no-ops.
            if (lo.to_bits(), hi.to_bits()) == (before.0.to_bits(), before.1.to_bits()) {
                break;
            }
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

/// One max-value sample's term `α(γ) = γφ(γ)/(2Φ(γ)) − ln Φ(γ)` as `(ln α, d ln α/dγ)`.
///
/// Direct up to γ = 30 (both terms are positive there, and α ≥ φ(30)·15 is far above the underflow limit); beyond,
/// `α = φ(γ)(γ/2 + R(γ))(1 + O(φ))` with the Mills ratio `R = √(π/2)·erfcx(γ/√2)`, exact to rounding since
/// φ(30) ≈ 1e-196. Below γ = −10⁴ (the mean far above the sampled maximum) γ is clamped: α grows only like ln|γ|.
pub(crate) fn log_term(g: f64) -> (f64, f64) {
    if g < -1e4 {
        return (log_term(-1e4).0, 0.0);
    }
    if g < 30.0 {
        let lam = inv_mills(g);
        let a = 0.5 * g * lam - log_norm_cdf(g);
        let da = -0.5 * lam * (1.0 + g * (g + lam));
        (a.ln(), da / a)
    } else {
        let r = (std::f64::consts::PI / 2.0).sqrt() * erfcx(g / std::f64::consts::SQRT_2);
        let ln_phi = -0.5 * g * g - 0.5 * (2.0 * std::f64::consts::PI).ln();
        // R' = γR − 1
        (ln_phi + (0.5 * g + r).ln(), -g + (g * r - 0.5) / (0.5 * g + r))
    }
}

/// Max-value entropy search over a fixed set of max-value samples, in log space: the value is
/// `ln((1/K) Σ_k α(γ_k))`. Far from the incumbent α underflows towards 0 (as EI does) and the optimiser would see
/// a flat surface; its logarithm keeps a useful slope (the same remedy as LogEI, Ament et al. 2023), and the
/// maximiser is unchanged.
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

    fn sigma_floor(&self) -> f64 {
        1e-12 * self.gp.prior_variance().sqrt()
    }

    /// `ln mean_k α(γ_k)` and its derivatives in μ and σ.
    fn value_at(&self, mu: f64, sigma: f64) -> (f64, f64, f64) {
        let terms: Vec<(f64, f64)> = self.max_values.iter().map(|y| log_term((y - mu) / sigma)).collect();
        let top = terms.iter().map(|t| t.0).fold(f64::NEG_INFINITY, f64::max);
        if !top.is_finite() {
            return (top, 0.0, 0.0);
        }
        let weights: Vec<f64> = terms.iter().map(|t| (t.0 - top).exp()).collect();
        let total: f64 = weights.iter().sum();
        let value = top + (total / self.max_values.len() as f64).ln();
        let (mut d_mu, mut d_sigma) = (0.0, 0.0);
        for ((y, (_, dlog)), w) in self.max_values.iter().zip(&terms).zip(&weights) {
            let g = (y - mu) / sigma;
            // γ = (y − μ)/σ: ∂γ/∂μ = −1/σ, ∂γ/∂σ = −γ/σ
            d_mu += w / total * dlog * (-1.0 / sigma);
            d_sigma += w / total * dlog * (-g / sigma);
        }
        (value, d_mu, d_sigma)
    }
}

impl Acquisition for Mes<'_> {
    fn dim(&self) -> usize {
        self.gp.d()
    }

    fn value(&self, x: &[f64]) -> f64 {
        let (mu, var) = self.gp.posterior(x);
        self.value_at(mu, var.sqrt().max(self.sigma_floor())).0
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut dvar = vec![0.0; grad.len()];
        let (mu, var) = self.gp.posterior_with_grad(x, grad, &mut dvar);
        let floor = self.sigma_floor();
        let sigma = var.sqrt().max(floor);
        let (value, d_mu, d_sigma) = self.value_at(mu, sigma);
        let moving = var.sqrt() > floor;
        for (gm, dv) in grad.iter_mut().zip(&dvar) {
            let ds = if moving { dv / (2.0 * sigma) } else { 0.0 };
            *gm = d_mu * *gm + d_sigma * ds;
        }
        value
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let (mu, var) = self.gp.posterior_batch(xs);
        let floor = self.sigma_floor();
        mu.iter().zip(&var).map(|(m, v)| self.value_at(*m, v.sqrt().max(floor)).0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alpha(g: f64) -> f64 {
        0.5 * g * inv_mills(g) - log_norm_cdf(g)
    }

    #[test]
    fn log_term_is_the_log_of_the_mes_term_and_continuous_at_the_switch() {
        for g in [-50.0, -3.0, 0.0, 2.0, 10.0, 29.0] {
            assert!((log_term(g).0 - alpha(g).ln()).abs() < 1e-12 * alpha(g).ln().abs().max(1.0), "g = {g}");
        }
        let (below, above) = (log_term(30.0 - 1e-9), log_term(30.0));
        assert!((below.0 - above.0).abs() < 1e-9 * above.0.abs());
        assert!((below.1 - above.1).abs() < 1e-6 * above.1.abs());
    }

    #[test]
    fn log_term_derivative_matches_finite_differences() {
        for g in [-20.0f64, -1.0, 0.5, 5.0, 25.0, 35.0, 300.0] {
            let h = 1e-6 * g.abs().max(1.0);
            let fd = (log_term(g + h).0 - log_term(g - h).0) / (2.0 * h);
            assert!((log_term(g).1 - fd).abs() < 1e-6 * fd.abs().max(1.0), "g = {g}: {} vs {fd}", log_term(g).1);
        }
    }

    #[test]
    fn log_term_stays_finite_where_alpha_underflows() {
        assert!(alpha(40.0) < 1e-300);
        assert!(log_term(40.0).0.is_finite() && log_term(1e6).0.is_finite());
        assert!(log_term(1e6).0 < log_term(40.0).0);
    }
}
