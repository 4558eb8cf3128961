//! Log noisy expected improvement (Letham, Karrer, Ottoni & Bakshy, "Constrained Bayesian Optimization with Noisy
//! Experiments", Bayesian Analysis 2019, eq. 6–7), in the log form of Ament et al. (NeurIPS 2023):
//! `NEI(x) = E_{f(X) | y}[ EI(x | f(X)) ]`, the expected improvement over the best *latent* value at the observed
//! inputs, averaged over the posterior of those latent values instead of plugging in one incumbent. Estimated with
//! S fixed joint draws ([`crate::gp::DrawnModels`], common random numbers, so the optimiser sees a deterministic,
//! differentiable function): `ln NEI ≈ logsumexp_s(ln EI_s(x)) − ln S`, with `EI_s` the closed-form EI of draw s's
//! noiseless model over that draw's largest value. Without noise every draw equals the observations and NEI is EI
//! over the best observation; with noise it discounts points next to an incumbent whose value is itself uncertain.
//!
//! Cost: a draw whose `ln EI_s` lies more than [`NEGLIGIBLE`] below the largest adds less than `e^−40` of it to
//! the sum (32 such draws together ~10⁻¹⁶, f64's rounding), so it is skipped before its `ln h` is computed. `ln h`
//! is concave (h = ∫Φ is log-concave) with slope `Φ/h = 1/(z + φ/Φ)`, so `ln h(z) ≤ ln h(z_max) − g (z_max − z)`
//! for any g at most the slope at `z_max`: below 0 at least `−z` (the Mills-ratio bound `Φ(z)/φ(z) ≥ −z/(z² + 1)`)
//! and at least the slope at 0, `Φ(0)/h(0) ≈ 1.2533`; above 0 at least `1/(z + 0.8)` (`φ/Φ ≤ φ(0)/Φ(0) < 0.8`).
//! How many draws it skips depends on how widely their z spread, i.e. on σ being small against the spread of the
//! draws' means and incumbents. The optimiser's raw samples are screened by branch and bound on the same tangent
//! (`best_values` below).

use super::Acquisition;
use super::analytic::floored_sigma;
use crate::gp::DrawnModels;
use crate::special::{log_h, log_h_with_slope};

/// Terms of the log-sum this far (in ln) below the largest are dropped: they add less than `e^−40` of it.
const NEGLIGIBLE: f64 = 40.0;

/// Steps per unit (in ln) of the table `e^{−k/DECAY_STEPS}` to which `best_values` rounds its bound's decay
/// factors up: the bound is loose by at most `1/DECAY_STEPS` per term.
const DECAY_STEPS: f64 = 16.0;

/// Relative slack added to the screening bound of `best_values` against rounding in `ln h`.
const BOUND_MARGIN: f64 = 1e-6;

/// A lower bound of `(ln h)'(z)`, the slope of the concave `ln h` (module docs).
fn log_h_slope_bound(z: f64) -> f64 {
    if z < 0.0 { (-z).max(1.25) } else { 1.0 / (z + 0.8) }
}

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

    /// `(ln EI_s)` of every draw from its mean, the shared σ, into `terms` (−∞ where negligible, see the module
    /// docs), and with `slopes` each draw's `(ln h)'(z_s)`; returns their log-mean.
    fn combine(&self, means: &[f64], sigma: f64, terms: &mut [f64], mut slopes: Option<&mut [f64]>) -> f64 {
        for ((t, m), b) in terms.iter_mut().zip(means).zip(self.draws.best()) {
            *t = (m - b) / sigma;
        }
        let z_max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let bound = log_h_slope_bound(z_max);
        let ln_sigma = sigma.ln();
        for (s, t) in terms.iter_mut().enumerate() {
            if bound * (z_max - *t) > NEGLIGIBLE {
                *t = f64::NEG_INFINITY;
            } else if let Some(slopes) = slopes.as_deref_mut() {
                let (lh, slope) = log_h_with_slope(*t);
                (*t, slopes[s]) = (lh + ln_sigma, slope);
            } else {
                *t = log_h(*t) + ln_sigma;
            }
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
        self.combine(&means, sigma, &mut vec![0.0; s], None)
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let s = self.draws.count();
        let mut means = vec![0.0; s];
        let mut dsigma = vec![0.0; grad.len()];
        let (var, cross) = self.draws.posterior_with_grad(x, &mut means, &mut dsigma);
        let sigma = floored_sigma(self.draws.model(), var);
        if var.sqrt() < sigma {
            dsigma.iter_mut().for_each(|g| *g = 0.0);
        } else {
            dsigma.iter_mut().for_each(|g| *g /= 2.0 * sigma);
        }
        let (mut terms, mut slopes) = (vec![0.0; s], vec![0.0; s]);
        let value = self.combine(&means, sigma, &mut terms, Some(&mut slopes));
        // ∂ ln NEI = Σ_s w_s ∂ ln EI_s, w_s = EI_s / Σ EI (the softmax of the terms), and with z_s = (m_s − b_s)/σ
        // ∂ ln EI_s = (ln h)'(z_s) (∂m_s − z_s ∂σ)/σ + ∂σ/σ: the means enter through one weighted sum of their
        // gradients, σ through one coefficient.
        let log_total = value + (s as f64).ln();
        let mut sigma_coef = 0.0;
        for ((t, slope), (m, b)) in terms.iter_mut().zip(&slopes).zip(means.iter().zip(self.draws.best())) {
            if *t == f64::NEG_INFINITY {
                *t = 0.0;
                continue;
            }
            let w = (*t - log_total).exp();
            let z = (m - b) / sigma;
            sigma_coef += w * (1.0 - slope * z) / sigma;
            *t = w * slope / sigma; // the weight of ∂m_s
        }
        self.draws.weighted_mean_grad(x, &cross, &terms, grad);
        grad.iter_mut().zip(&dsigma).for_each(|(g, ds)| *g += sigma_coef * ds);
        value
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let (means, vars) = self.draws.posterior_batch(xs);
        let mut terms = vec![0.0; self.draws.count()];
        let mut row = vec![0.0; self.draws.count()];
        (0..vars.len())
            .map(|p| {
                row.iter_mut().enumerate().for_each(|(s, v)| *v = means[(p, s)]);
                self.combine(&row, floored_sigma(self.draws.model(), vars[p]), &mut terms, None)
            })
            .collect()
    }

    /// Branch and bound: points are evaluated exactly in decreasing order of an upper bound of `ln NEI` until the
    /// next bound falls below the `keep`-th best exact value; the points left cannot be among the best `keep`
    /// (their value is at most their bound), so they get −∞, and the best `keep` are exactly those of `values`.
    /// The bound is the tangent of the concave `ln h` at the largest z (module docs),
    /// `ln h(z_s) ≤ ln h(z_max) − g (z_max − z_s)` with g a lower bound of its slope there, each `e^{−g Δ}` rounded
    /// up to the next step of [`DECAY_STEPS`]: one `ln h` per point instead of S.
    fn best_values(&self, xs: &[f64], keep: usize) -> Vec<f64> {
        let (means, vars) = self.draws.posterior_batch(xs);
        let count = self.draws.count();
        let sigmas: Vec<f64> = vars.iter().map(|v| floored_sigma(self.draws.model(), *v)).collect();
        let decay: Vec<f64> =
            (0..=(NEGLIGIBLE * DECAY_STEPS) as usize).map(|k| (-(k as f64) / DECAY_STEPS).exp()).collect();
        let mut gains = vec![0.0; count]; // m_s − b_s, raw units
        let upper: Vec<f64> = (0..vars.len())
            .map(|p| {
                let sigma = sigmas[p];
                gains.iter_mut().zip(self.draws.best()).enumerate().for_each(|(s, (g, b))| *g = means[(p, s)] - b);
                let largest = gains.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let slope = log_h_slope_bound(largest / sigma) * DECAY_STEPS / sigma;
                let step = |g: &f64| ((slope * (largest - g)) as usize).min(decay.len() - 1);
                let sum: f64 = gains.iter().map(|g| decay[step(g)]).sum();
                let lh = log_h(largest / sigma);
                lh + sigma.ln() + (sum / count as f64).ln() + BOUND_MARGIN * (1.0 + lh.abs())
            })
            .collect();
        let mut order: Vec<usize> = (0..vars.len()).collect();
        order.sort_by(|&a, &b| upper[b].total_cmp(&upper[a]));
        let keep = if keep == 0 { vars.len() } else { keep };
        let mut values = vec![f64::NEG_INFINITY; vars.len()];
        let mut best: Vec<f64> = Vec::with_capacity(keep + 1); // the best `keep` exact values so far, decreasing
        let (mut terms, mut row) = (vec![0.0; count], vec![0.0; count]);
        for p in order {
            if best.len() == keep && upper[p] < best[keep - 1] {
                break;
            }
            row.iter_mut().enumerate().for_each(|(s, v)| *v = means[(p, s)]);
            let value = self.combine(&row, sigmas[p], &mut terms, None);
            values[p] = value;
            best.insert(best.partition_point(|t| t.total_cmp(&value).is_ge()), value);
            best.truncate(keep);
        }
        values
    }
}
