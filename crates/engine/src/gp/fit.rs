//! Hyperparameter fitting: maximise log marginal likelihood plus log-priors (MAP) over the log-parameters with
//! multi-start bounded L-BFGS and analytic gradients (Rasmussen & Williams 2006, Eq. 5.9):
//! `∂L/∂θ = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ)`, `α = K⁻¹(ỹ − c)`, `∂L/∂c = Σ αᵢ`.
//!
//! Starts: the warm start (last fit) when given, the default start (prior modes; optional with a warm start),
//! and `restarts` random ones. Each start runs L-BFGS until the objective moves by less than 1e-9 relative.

use std::time::Instant;

use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::Serialize;

use super::pairs::PairCache;
use super::prior::{Slot, mean_log_prior, noise_log_prior, slots};
use super::{Data, Gp, GpConfig, Hyperparameters, MeanModel, NoiseModel, noise_diag, standardize};
use crate::error::{Error, Result};
use crate::linalg::Cholesky;
use crate::linalg::dot;
use crate::quasi_newton;

/// What a fit did.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// Number of starts run.
    pub starts: usize,
    /// Likelihood evaluations over all starts.
    pub evaluations: usize,
    /// Log marginal likelihood at the chosen hyperparameters (standardised units).
    pub log_marginal_likelihood: f64,
    /// Wall time in milliseconds.
    pub millis: f64,
}

/// The free parameters of a fit: kernel θ, then ln σ²_n if learned, then c if learned.
struct Layout {
    nk: usize,
    learn_noise: bool,
    learn_mean: bool,
}

impl Layout {
    fn new(config: &GpConfig) -> Self {
        Self {
            nk: config.kernel.n_params(),
            learn_noise: matches!(config.noise, NoiseModel::Learned { .. }),
            learn_mean: config.mean == MeanModel::Constant,
        }
    }

    fn len(&self) -> usize {
        self.nk + usize::from(self.learn_noise) + usize::from(self.learn_mean)
    }

    fn pack(&self, h: &Hyperparameters) -> Vec<f64> {
        let mut p = h.theta.clone();
        if self.learn_noise {
            p.push(h.noise_variance.max(f64::MIN_POSITIVE).ln());
        }
        if self.learn_mean {
            p.push(h.mean);
        }
        p
    }

    fn unpack(&self, p: &[f64], fixed_noise: f64) -> Hyperparameters {
        Hyperparameters {
            theta: p[..self.nk].to_vec(),
            noise_variance: if self.learn_noise { p[self.nk].exp() } else { fixed_noise },
            mean: if self.learn_mean { p[self.len() - 1] } else { 0.0 },
        }
    }
}

/// Standardised problem shared by every evaluation of one fit.
struct Problem<'a> {
    config: &'a GpConfig,
    x: &'a [f64],
    r0: Vec<f64>,
    /// Known per-point noise (standardised), without the homoscedastic part.
    known: Vec<f64>,
    fixed_noise: f64,
    layout: Layout,
    pairs: Option<PairCache>,
}

impl Problem<'_> {
    /// Log marginal likelihood and its gradient in the free parameters; None where K cannot be factored.
    fn lml(&self, p: &[f64]) -> Option<(f64, Vec<f64>)> {
        let h = self.layout.unpack(p, self.fixed_noise);
        let n = self.r0.len();
        let (mut k, pair_values) = match &self.pairs {
            Some(pc) => {
                let (k, v) = pc.gram(&h.theta);
                (k, Some(v))
            }
            None => (self.config.kernel.gram(&h.theta, self.x), None),
        };
        for i in 0..n {
            k[(i, i)] += h.noise_variance + self.known[i];
        }
        let chol = Cholesky::factor(k).ok()?;
        let r: Vec<f64> = self.r0.iter().map(|v| v - h.mean).collect();
        let alpha = chol.solve(&r);
        let lml = -0.5 * dot(&r, &alpha) - 0.5 * chol.log_det() - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
        // W = ααᵀ − K⁻¹; both contractions read only its lower triangle.
        let mut w = chol.inverse();
        for j in 0..n {
            for i in j..n {
                w[(i, j)] = alpha[i] * alpha[j] - w[(i, j)];
            }
        }
        let contracted = match (&self.pairs, &pair_values) {
            (Some(pc), Some(v)) => pc.contract(&h.theta, &w, v),
            _ => self.config.kernel.contract_grad(&h.theta, self.x, &w),
        };
        let mut grad: Vec<f64> = contracted.iter().map(|g| 0.5 * g).collect();
        if self.layout.learn_noise {
            grad.push(0.5 * h.noise_variance * (0..n).map(|i| w[(i, i)]).sum::<f64>());
        }
        if self.layout.learn_mean {
            grad.push(alpha.iter().sum());
        }
        lml.is_finite().then_some((lml, grad))
    }

    /// Negative (log marginal likelihood + log prior) and its gradient, for the minimiser.
    fn objective(&self, p: &[f64], grad: &mut [f64], slots: &[Slot]) -> f64 {
        let Some((lml, g)) = self.lml(p) else { return f64::INFINITY };
        let mut value = lml;
        grad.copy_from_slice(&g);
        if self.config.priors {
            for (q, slot) in slots.iter().enumerate() {
                let (lp, dlp) = slot.log_prior(p[q]);
                value += lp;
                grad[q] += dlp;
            }
            let mut q = self.layout.nk;
            if self.layout.learn_noise {
                let (lp, dlp) = noise_log_prior(p[q]);
                value += lp;
                grad[q] += dlp;
                q += 1;
            }
            if self.layout.learn_mean {
                let (lp, dlp) = mean_log_prior(p[q]);
                value += lp;
                grad[q] += dlp;
            }
        }
        grad.iter_mut().for_each(|v| *v = -*v);
        -value
    }
}

fn problem<'a>(data: &'a Data, config: &'a GpConfig) -> Result<(Problem<'a>, super::Standardizer)> {
    let (std, r0) = standardize(data, config)?;
    let known = noise_diag(data, config, &std, 0.0);
    let fixed_noise = match config.noise {
        NoiseModel::Fixed(v) => v / (std.scale * std.scale),
        NoiseModel::Learned { .. } => 0.0,
    };
    let known =
        if let NoiseModel::Fixed(_) = config.noise { known.iter().map(|v| v - fixed_noise).collect() } else { known };
    let pairs = PairCache::new(&config.kernel, &data.x);
    Ok((Problem { config, x: &data.x, r0, known, fixed_noise, layout: Layout::new(config), pairs }, std))
}

/// Log marginal likelihood of `data` under `hypers` and its gradient in the free log-parameters
/// (kernel θ, then ln σ²_n if the noise is learned, then c if the mean is learned). No priors.
pub fn log_marginal_likelihood(data: &Data, config: &GpConfig, hypers: &Hyperparameters) -> Result<(f64, Vec<f64>)> {
    let (prob, _) = problem(data, config)?;
    prob.lml(&prob.layout.pack(hypers))
        .ok_or_else(|| Error::Numerical("covariance matrix not positive definite".into()))
}

/// Fits the hyperparameters of `config` to `data`, starting from `warm` (a previous fit) when given.
pub fn fit(data: &Data, config: &GpConfig, warm: Option<&Hyperparameters>, seed: u64) -> Result<(Gp, FitReport)> {
    let started = Instant::now();
    let (prob, _) = problem(data, config)?;
    let layout = &prob.layout;
    let slots = slots(&config.kernel);
    let (mut lower, mut upper): (Vec<f64>, Vec<f64>) = slots.iter().map(|s| s.bounds(&config.bounds)).unzip();
    if let NoiseModel::Learned { min } = config.noise {
        lower.push(min.max(f64::MIN_POSITIVE).ln());
        upper.push(config.bounds.noise_max.max(min * 10.0).ln());
    }
    if layout.learn_mean {
        lower.push(config.bounds.mean.0);
        upper.push(config.bounds.mean.1);
    }
    let mut default: Vec<f64> = slots.iter().map(|s| s.start()).collect();
    if layout.learn_noise {
        default.push(1e-3f64.ln());
    }
    if layout.learn_mean {
        default.push(0.0);
    }
    let mut starts = Vec::new();
    let warm = warm.filter(|w| w.theta.len() == layout.nk);
    if let Some(w) = warm {
        starts.push(layout.pack(w));
    }
    if warm.is_none() || config.default_start {
        starts.push(default);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..config.restarts {
        let mut p: Vec<f64> = slots
            .iter()
            .map(|s| match s {
                Slot::Lengthscale { .. } => rng.random_range(0.05f64.ln()..2f64.ln()),
                Slot::Outputscale => rng.random_range(0.2f64.ln()..5f64.ln()),
                Slot::Period => rng.random_range(0.05f64.ln()..1f64.ln()),
            })
            .collect();
        if layout.learn_noise {
            p.push(rng.random_range(1e-5f64.ln()..1e-1f64.ln()));
        }
        if layout.learn_mean {
            p.push(rng.random_range(-0.5..0.5));
        }
        starts.push(p);
    }
    let cfg = quasi_newton::Config { max_iter: config.max_iter, pgtol: 1e-5, ftol: 1e-9, ..Default::default() };
    let mut best: Option<quasi_newton::Minimum> = None;
    let mut evaluations = 0;
    for s in &starts {
        let s: Vec<f64> = s.iter().zip(lower.iter().zip(&upper)).map(|(v, (lo, hi))| v.clamp(*lo, *hi)).collect();
        let m = quasi_newton::minimize(|p, g| prob.objective(p, g, &slots), &s, &lower, &upper, &cfg);
        evaluations += m.evaluations;
        if m.f.is_finite() && best.as_ref().is_none_or(|b| m.f < b.f) {
            best = Some(m);
        }
    }
    let best = best.ok_or_else(|| Error::Numerical("no hyperparameter start gave a finite likelihood".into()))?;
    let hypers = layout.unpack(&best.x, prob.fixed_noise);
    let gp = Gp::new(data, config, hypers)?;
    let report = FitReport {
        starts: starts.len(),
        evaluations,
        log_marginal_likelihood: gp.log_marginal_likelihood(),
        millis: started.elapsed().as_secs_f64() * 1e3,
    };
    Ok((gp, report))
}
