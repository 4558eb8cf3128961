//! Conditional max-value entropy search (paper §5.1): the information an aggregate z at query a carries about
//! the *target* optimum f* = max_x f(x), with p(z | f*, a) approximated by p(z | g(a) ≤ f*).
//!
//! - [`CmesVariant::Main`], Eq. 14: `α(a) = (1/|F*|) Σ_{f*} [γψ(γ)/(2Ψ(γ)) − ln Ψ(γ)]`, `γ = (f* − ν_t(a))/√q_t(a,a)`
//!   (MES on g with f* in place of g*; noise-free in g).
//! - [`CmesVariant::Noisy`], Appendix A ("used in our experimental simulation"): `α(a) = ½ ln[2πe(q + σ²)] −
//!   (1/|F*|) Σ H_{f*}(a)`, H the entropy of `p(z | g ≤ f*) = Φ(γ'(z)) φ(ρ_z) / (√(q+σ²) Φ(γ))`, by the
//!   trapezoid rule on 801 points of ρ_z ∈ [−12, 10] (the density's mass lies below ρ = γ·√(q/(q+σ²)) + a few).
//!
//! Max values f* come from joint posterior draws of f on a target grid (Thompson; the prototype's default) or
//! from the Gumbel fit of Wang & Jegelka over the grid's marginals. Both return values in the CMP's units.

use std::f64::consts::PI;

use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::cmp::Cmp;
use crate::acquisition::{gumbel_max_values, mes_log_term};
use crate::error::Result;
use crate::linalg::Cholesky;
use crate::special::{log_norm_cdf, norm_pdf};

/// Which CMES formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmesVariant {
    /// Eq. 14 (default).
    #[default]
    Main,
    /// Appendix A (observation noise included).
    Noisy,
}

/// How f* samples are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetMaxSampler {
    /// Maxima of joint posterior draws of f on the target grid (default).
    #[default]
    Thompson,
    /// Gumbel approximation of the maximum of the grid's marginals.
    Gumbel,
}

/// CMES value at a query with posterior ν, q of g, noise variance σ², for max-value samples `fstar`.
/// Eq. 14 is returned in log space (`ln α`, α ≥ 0 underflows far from the optimum); Appendix A as is.
pub fn cmes_value(variant: CmesVariant, nu: f64, q: f64, noise_var: f64, fstar: &[f64]) -> f64 {
    let sd = q.max(1e-18).sqrt();
    match variant {
        CmesVariant::Main => {
            let logs: Vec<f64> = fstar.iter().map(|f| mes_log_term((f - nu) / sd).0).collect();
            let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !top.is_finite() {
                return top;
            }
            top + (logs.iter().map(|l| (l - top).exp()).sum::<f64>() / fstar.len() as f64).ln()
        }
        CmesVariant::Noisy => {
            let total = q + noise_var;
            let h_z = 0.5 * (2.0 * PI * std::f64::consts::E * total).ln();
            let mean_h: f64 =
                fstar.iter().map(|f| truncated_entropy(nu, q, noise_var, *f)).sum::<f64>() / fstar.len() as f64;
            h_z - mean_h
        }
    }
}

/// Entropy of `p(z | g ≤ f*)` with g ~ N(ν, q), z = g + N(0, σ²) (Appendix A), numerically.
pub fn truncated_entropy(nu: f64, q: f64, noise_var: f64, fstar: f64) -> f64 {
    let q = q.max(1e-18);
    let total = q + noise_var;
    let sz = total.sqrt();
    let gamma = ((fstar - nu) / q.sqrt()).max(-30.0);
    let ln_cdf_gamma = log_norm_cdf(gamma);
    let s = (q * noise_var / total).sqrt();
    // ln p(z) in terms of ρ = (z − ν)/sz, per unit ρ (the Jacobian sz is added at the end).
    let ln_p = |rho: f64| {
        let z = nu + rho * sz;
        let u = q * (z - nu) / total + nu;
        let ln_cdf_inner = if s > 0.0 {
            log_norm_cdf((fstar - u) / s)
        } else if u <= fstar {
            0.0
        } else {
            f64::NEG_INFINITY
        };
        ln_cdf_inner + norm_pdf(rho).ln() - ln_cdf_gamma
    };
    let edge = gamma * (q / total).sqrt();
    let (lo, hi) = ((edge - 12.0).min(-12.0), (edge + 10.0).min(10.0));
    let m = 801;
    let h = (hi - lo) / (m - 1) as f64;
    let mut ent = 0.0;
    for i in 0..m {
        let lp = ln_p(lo + i as f64 * h);
        if lp.is_finite() {
            let w = if i == 0 || i == m - 1 { 0.5 } else { 1.0 };
            ent -= w * h * lp.exp() * lp;
        }
    }
    // H(z) = H(ρ) + ln sz.
    ent + sz.ln()
}

/// `count` samples of f* = max f over the target points `grid` (row-major) from the CMP posterior; each sample is
/// at least the largest posterior mean on the grid plus a hair.
pub fn sample_target_max(
    cmp: &Cmp,
    grid: &[f64],
    count: usize,
    sampler: TargetMaxSampler,
    seed: u64,
) -> Result<Vec<f64>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let scale = cmp.hypers().outputscale.sqrt();
    let eps = 1e-6 * scale;
    let samples = match sampler {
        TargetMaxSampler::Thompson => {
            let (mean, cov) = cmp.posterior_f_joint(grid);
            let floor = mean.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let chol = Cholesky::factor(cov)?;
            let m = mean.len();
            let mut out = Vec::with_capacity(count);
            for _ in 0..count {
                let e: Vec<f64> = (0..m).map(|_| StandardNormal.sample(&mut rng)).collect();
                let l = chol.l();
                let mut best = f64::NEG_INFINITY;
                for i in 0..m {
                    let v = mean[i] + (0..=i).map(|j| l[(i, j)] * e[j]).sum::<f64>();
                    best = best.max(v);
                }
                out.push(best.max(floor + eps));
            }
            out
        }
        TargetMaxSampler::Gumbel => {
            let (mean, var) = cmp.posterior_f(grid);
            let sd: Vec<f64> = var.iter().map(|v| v.sqrt().max(1e-9 * scale)).collect();
            let floor = mean.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            gumbel_max_values(&mean, &sd, floor, eps, count, &mut rng).into_iter().map(|y| y.max(floor + eps)).collect()
        }
    };
    Ok(samples)
}
