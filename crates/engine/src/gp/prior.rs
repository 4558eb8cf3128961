//! Default log-priors and bounds of the hyperparameters (inputs in the unit cube, outputs standardised).
//!
//! - Lengthscales of stationary components: `LogNormal(√2 + ½ ln d_c, √3)` with `d_c` the number of dimensions
//!   of the component — BoTorch's dimension-scaled prior (Hvarfner, Hellsten & Nardi, "Vanilla Bayesian
//!   Optimization Performs Great in High Dimensions", ICML 2024). Its mode is 0.29 in 2-D, 0.5 in 6-D.
//! - Periodic lengthscales: `LogNormal(0, 1.5)`; periods: no prior (bounded).
//! - Output scale: `Gamma(2, 1)` (mode 1 for standardised outputs), as Optuna's GP sampler.
//! - Noise variance: `Gamma(1.1, 30)`, Optuna's: mild, lets a deterministic objective reach the floor.
//! - Constant mean: `Normal(0, 2²)`.
//!
//! As in BoTorch and Optuna the densities are of the natural values (no log-Jacobian), evaluated and differentiated
//! with respect to the log-parameters the optimiser moves.

use serde::{Deserialize, Serialize};

use crate::kernel::{Kernel, KernelFamily};

/// Box of the hyperparameters (natural units; noise in standardised units).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    /// Lengthscales.
    pub lengthscale: (f64, f64),
    /// Output scales (variances).
    pub outputscale: (f64, f64),
    /// Periods.
    pub period: (f64, f64),
    /// Upper bound of the learned noise variance (the lower bound is the noise model's `min`).
    pub noise_max: f64,
    /// Constant mean.
    pub mean: (f64, f64),
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            lengthscale: (0.01, 100.0),
            outputscale: (0.01, 100.0),
            period: (0.01, 10.0),
            noise_max: 2.0,
            mean: (-10.0, 10.0),
        }
    }
}

/// Which natural quantity each kernel log-parameter is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Slot {
    Lengthscale { family: KernelFamily, dims: usize },
    Outputscale,
    Period,
}

pub(crate) fn slots(kernel: &Kernel) -> Vec<Slot> {
    let mut out = Vec::with_capacity(kernel.n_params());
    for c in kernel.components() {
        out.extend(c.dims.iter().map(|_| Slot::Lengthscale { family: c.family, dims: c.dims.len() }));
        out.push(Slot::Outputscale);
        if c.family == KernelFamily::Periodic {
            out.push(Slot::Period);
        }
    }
    out
}

impl Slot {
    pub(crate) fn bounds(self, b: &Bounds) -> (f64, f64) {
        let (lo, hi) = match self {
            Slot::Lengthscale { .. } => b.lengthscale,
            Slot::Outputscale => b.outputscale,
            Slot::Period => b.period,
        };
        (lo.ln(), hi.ln())
    }

    /// Default starting value (log).
    pub(crate) fn start(self) -> f64 {
        match self {
            Slot::Lengthscale { family: KernelFamily::Periodic, .. } => 0.0,
            Slot::Lengthscale { dims, .. } => (lengthscale_prior(dims).0 - 3.0).clamp(0.05f64.ln(), 1.0f64.ln()),
            Slot::Outputscale => 0.0,
            Slot::Period => 0.3f64.ln(),
        }
    }

    /// Log-prior and its derivative in the log-parameter z.
    pub(crate) fn log_prior(self, z: f64) -> (f64, f64) {
        match self {
            Slot::Lengthscale { family, dims } => {
                let (mu, sigma) = if family == KernelFamily::Periodic { (0.0, 1.5) } else { lengthscale_prior(dims) };
                log_normal(z, mu, sigma)
            }
            Slot::Outputscale => gamma(z, 2.0, 1.0),
            Slot::Period => (0.0, 0.0),
        }
    }
}

/// `(μ, σ)` of the dimension-scaled lengthscale log-normal.
fn lengthscale_prior(dims: usize) -> (f64, f64) {
    (std::f64::consts::SQRT_2 + 0.5 * (dims.max(1) as f64).ln(), 3f64.sqrt())
}

/// ln LogNormal(e^z; μ, σ) (up to a constant) and d/dz.
pub(crate) fn log_normal(z: f64, mu: f64, sigma: f64) -> (f64, f64) {
    let s2 = sigma * sigma;
    (-(z - mu).powi(2) / (2.0 * s2) - z, -(z - mu) / s2 - 1.0)
}

/// ln Gamma(e^z; shape a, rate b) (up to a constant) and d/dz.
pub(crate) fn gamma(z: f64, a: f64, b: f64) -> (f64, f64) {
    let v = z.exp();
    ((a - 1.0) * z - b * v, (a - 1.0) - b * v)
}

/// Noise-variance prior (log-parameter z).
pub(crate) fn noise_log_prior(z: f64) -> (f64, f64) {
    gamma(z, 1.1, 30.0)
}

/// Constant-mean prior.
pub(crate) fn mean_log_prior(c: f64) -> (f64, f64) {
    (-c * c / 8.0, -c / 4.0)
}
