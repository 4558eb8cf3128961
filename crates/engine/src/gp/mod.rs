//! Exact Gaussian-process regression.
//!
//! Model, in standardised output units `ỹ = (y − m(x) − shift)/scale` (m an optional fixed prior-mean function,
//! shift/scale the sample mean and standard deviation of `y − m(x)`):
//! `ỹ_i = c + f(x_i) + ε_i`, `f ~ GP(0, k_θ)`, `ε_i ~ N(0, σ²_n + s_i²/scale²)` with a learned homoscedastic
//! variance σ²_n and optional known per-observation variances s_i² (`value_stddev`).
//! Everything the GP returns is in raw units again. Inference is the textbook Cholesky route (Rasmussen &
//! Williams 2006, Alg. 2.1) with a jitter ladder ([`crate::linalg::Cholesky`]); [`Gp::condition`] adds a point in
//! O(n²) by extending the factor instead of refactorising.

mod batch;
mod draws;
mod expected_draw;
mod fit;
mod fixed_samples;
mod pairs;
mod prior;
mod sample;
mod warp;

use std::sync::Arc;

use faer::Mat;
use serde::{Deserialize, Serialize};

pub use batch::BatchPosterior;
pub use draws::{CrossGrad, DrawnModels};
pub use expected_draw::ExpectedDraw;
pub use fit::{FitReport, fit, log_marginal_likelihood};
pub use fixed_samples::FixedSamples;
pub use prior::Bounds;
pub use sample::PathwiseSample;
pub use warp::OutputWarp;

use crate::error::{Error, Result};
use crate::kernel::{Kernel, Prepared, Scaled};
use crate::linalg::{Cholesky, dot};

/// Training data: `n` row-major points of dimension `d`, targets, and optional known noise variances (raw units).
#[derive(Debug, Clone, Default)]
pub struct Data {
    /// Input dimension.
    pub d: usize,
    /// Points, `n × d` row-major.
    pub x: Vec<f64>,
    /// Targets.
    pub y: Vec<f64>,
    /// Known noise variance of each target (raw units), if any.
    pub noise_var: Option<Vec<f64>>,
}

impl Data {
    /// Data without known noise.
    pub fn new(d: usize, x: Vec<f64>, y: Vec<f64>) -> Self {
        Self { d, x, y, noise_var: None }
    }

    /// Number of points.
    pub fn n(&self) -> usize {
        self.y.len()
    }
}

/// A fixed prior-mean function m(x) (raw units), e.g. a domain expert's guess.
pub trait MeanFunction: Send + Sync + std::fmt::Debug {
    /// m(x).
    fn value(&self, x: &[f64]) -> f64;
    /// Adds ∂m/∂x to `grad`.
    fn add_gradient(&self, x: &[f64], grad: &mut [f64]);
}

/// The homoscedastic part of the noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseModel {
    /// Learned, bounded below by `min` (standardised units).
    Learned {
        /// Lower bound of the variance, relative to the output variance.
        min: f64,
    },
    /// Fixed variance in raw output units (0 for exact interpolation up to jitter).
    Fixed(f64),
}

/// The constant mean c.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeanModel {
    /// Learned constant (standardised units).
    Constant,
    /// c = 0.
    Zero,
}

/// Everything that defines a GP model except its data and fitted values.
#[derive(Debug, Clone)]
pub struct GpConfig {
    /// Covariance.
    pub kernel: Kernel,
    /// Homoscedastic noise.
    pub noise: NoiseModel,
    /// Constant mean.
    pub mean: MeanModel,
    /// Optional fixed prior mean m(x), subtracted before standardising.
    pub prior_mean: Option<Arc<dyn MeanFunction>>,
    /// Standardise outputs (shift by the mean, divide by the standard deviation).
    pub standardize: bool,
    /// Add the default log-priors to the marginal likelihood (MAP instead of ML-II).
    pub priors: bool,
    /// Box of the hyperparameters.
    pub bounds: Bounds,
    /// Random restarts of the fit beyond the default start and the warm start.
    pub restarts: usize,
    /// With a warm start, also start from the default (prior-mode) point; without one it always is.
    pub default_start: bool,
    /// L-BFGS iterations per start.
    pub max_iter: usize,
}

/// Default floor of the learned noise variance (standardised units): small enough for deterministic objectives.
pub const DEFAULT_MIN_NOISE: f64 = 1e-6;

impl GpConfig {
    /// Matérn-5/2 ARD over `d` dimensions, learned noise (≥ 1e-6), learned constant mean, standardised outputs,
    /// default priors, the default start plus one random restart.
    pub fn default_for(d: usize) -> Self {
        Self {
            kernel: Kernel::ard(crate::kernel::KernelFamily::Matern52, d),
            noise: NoiseModel::Learned { min: DEFAULT_MIN_NOISE },
            mean: MeanModel::Constant,
            prior_mean: None,
            standardize: true,
            priors: true,
            bounds: Bounds::default(),
            restarts: 1,
            default_start: true,
            max_iter: 100,
        }
    }
}

/// Fitted (or given) hyperparameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hyperparameters {
    /// Kernel log-vector θ (layout of [`Kernel`]).
    pub theta: Vec<f64>,
    /// Homoscedastic noise variance, standardised units.
    pub noise_variance: f64,
    /// Constant mean c, standardised units.
    pub mean: f64,
}

impl Hyperparameters {
    /// Human-readable form for diagnostics: lengthscales, output scales and periods per component.
    pub fn describe(&self, kernel: &Kernel) -> serde_json::Value {
        let mut off = 0;
        let comps: Vec<serde_json::Value> = kernel
            .components()
            .iter()
            .map(|c| {
                let nd = c.dims.len();
                let th = &self.theta[off..off + c.n_params()];
                off += c.n_params();
                let mut v = serde_json::json!({
                    "family": c.family,
                    "lengthscales": th[..nd].iter().map(|t| t.exp()).collect::<Vec<_>>(),
                    "outputscale": th[nd].exp(),
                });
                if c.n_params() > nd + 1 {
                    v["period"] = serde_json::json!(th[nd + 1].exp());
                }
                v
            })
            .collect();
        serde_json::json!({ "components": comps, "noise_variance": self.noise_variance, "mean": self.mean })
    }
}

/// Output standardisation `ỹ = (y − shift)/scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Standardizer {
    /// Subtracted.
    pub shift: f64,
    /// Divided by.
    pub scale: f64,
}

impl Standardizer {
    /// Sample mean and standard deviation (n − 1 denominator); scale 1 when there is no spread.
    pub fn from_values(y: &[f64], standardize: bool) -> Self {
        if !standardize || y.is_empty() {
            return Self { shift: 0.0, scale: 1.0 };
        }
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        let var = if y.len() > 1 { y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
        let sd = var.sqrt();
        let scale = if sd > 1e-12 * mean.abs().max(f64::MIN_POSITIVE) && sd.is_finite() && sd > 0.0 { sd } else { 1.0 };
        Self { shift: mean, scale }
    }
}

/// A GP conditioned on data.
#[derive(Debug, Clone)]
pub struct Gp {
    kernel: Kernel,
    prior_mean: Option<Arc<dyn MeanFunction>>,
    hypers: Hyperparameters,
    std: Standardizer,
    d: usize,
    x: Vec<f64>,
    /// Standardised targets minus the constant mean.
    r: Vec<f64>,
    /// Diagonal noise of each point, standardised units.
    noise: Vec<f64>,
    chol: Cholesky,
    alpha: Vec<f64>,
    /// The kernel prepared for `hypers.theta` and the training inputs scaled for it, kept so that predictions do
    /// not redo both per call (the same values `Kernel::cross*` would compute).
    prepared: Prepared,
    scaled_x: Scaled,
}

impl Gp {
    /// Conditions the model of `config` with hyperparameters `hypers` on `data` (no fitting).
    /// With [`NoiseModel::Fixed`] the noise in `hypers` is replaced by the fixed value.
    pub fn new(data: &Data, config: &GpConfig, mut hypers: Hyperparameters) -> Result<Self> {
        let (std, r0) = standardize(data, config)?;
        if let NoiseModel::Fixed(v) = config.noise {
            hypers.noise_variance = v / (std.scale * std.scale);
        }
        if config.mean == MeanModel::Zero {
            hypers.mean = 0.0;
        }
        let noise = noise_diag(data, config, &std, hypers.noise_variance);
        Self::assemble(data.d, data.x.clone(), r0, noise, std, config, hypers)
    }

    fn assemble(
        d: usize,
        x: Vec<f64>,
        r0: Vec<f64>,
        noise: Vec<f64>,
        std: Standardizer,
        config: &GpConfig,
        hypers: Hyperparameters,
    ) -> Result<Self> {
        if hypers.theta.len() != config.kernel.n_params() || hypers.theta.iter().any(|t| !t.is_finite()) {
            return Err(Error::Numerical("hyperparameters do not fit the kernel".into()));
        }
        let mut k = config.kernel.gram(&hypers.theta, &x);
        for (i, s) in noise.iter().enumerate() {
            k[(i, i)] += s;
        }
        let chol = Cholesky::factor(k)?;
        let r: Vec<f64> = r0.iter().map(|v| v - hypers.mean).collect();
        let alpha = chol.solve(&r);
        let prepared = config.kernel.prepare(&hypers.theta);
        let scaled_x = prepared.scale(&x);
        Ok(Self {
            prepared,
            scaled_x,
            kernel: config.kernel.clone(),
            prior_mean: config.prior_mean.clone(),
            hypers,
            std,
            d,
            x,
            r,
            noise,
            chol,
            alpha,
        })
    }

    /// Number of training points (including conditioned ones).
    pub fn n(&self) -> usize {
        self.r.len()
    }

    /// Input dimension.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Training inputs, row-major.
    pub fn x(&self) -> &[f64] {
        &self.x
    }

    /// The hyperparameters.
    pub fn hyperparameters(&self) -> &Hyperparameters {
        &self.hypers
    }

    /// The kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Output standardisation.
    pub fn standardizer(&self) -> Standardizer {
        self.std
    }

    /// Jitter the Cholesky factorisation needed (standardised units).
    pub fn jitter(&self) -> f64 {
        self.chol.jitter()
    }

    /// Homoscedastic noise variance in raw units.
    pub fn noise_variance(&self) -> f64 {
        self.hypers.noise_variance * self.std.scale * self.std.scale
    }

    /// Prior variance of f (raw units).
    pub fn prior_variance(&self) -> f64 {
        self.kernel.prior_variance(&self.hypers.theta) * self.std.scale * self.std.scale
    }

    fn raw_mean(&self, x: &[f64], m_std: f64) -> f64 {
        let m = self.prior_mean.as_ref().map_or(0.0, |p| p.value(x));
        m + self.std.shift + self.std.scale * (m_std + self.hypers.mean)
    }

    /// Posterior mean and variance of the latent f at `x` (raw units).
    pub fn posterior(&self, x: &[f64]) -> (f64, f64) {
        let (k, var) = self.cross_and_variance(x);
        (self.raw_mean(x, dot(&k, &self.alpha)), var)
    }

    /// Posterior mean and variance at `x` with their gradients in x (written into `dmean`, `dvar`, length d).
    pub fn posterior_with_grad(&self, x: &[f64], dmean: &mut [f64], dvar: &mut [f64]) -> (f64, f64) {
        let (k, dk, var) = self.cross_and_variance_with_grad(x, dvar);
        self.mean_grad(x, &dk, &self.alpha, 1.0, dmean);
        (self.raw_mean(x, dot(&k, &self.alpha)), var)
    }

    /// `k(x, X)` (standardised units) and the posterior variance at `x` (raw units, clamped at 0): what this model's
    /// mean and the means of models sharing its covariance ([`DrawnModels`]) are built from.
    fn cross_and_variance(&self, x: &[f64]) -> (Vec<f64>, f64) {
        let mut k = vec![0.0; self.n()];
        self.prepared.cross_vec(&self.prepared.scale(x), &self.scaled_x, &mut k);
        let v = self.chol.solve_l(&k);
        let var = (self.kernel.prior_variance(&self.hypers.theta) - dot(&v, &v)).max(0.0);
        (k, var * self.std.scale * self.std.scale)
    }

    /// As [`Gp::cross_and_variance`], with `∂k/∂x` (returned, `n × d` row-major) and the variance's gradient (into
    /// `dvar`, raw units; 0 where the variance is clamped at 0).
    fn cross_and_variance_with_grad(&self, x: &[f64], dvar: &mut [f64]) -> (Vec<f64>, Vec<f64>, f64) {
        let (n, d) = (self.n(), self.d);
        let mut k = vec![0.0; n];
        let mut dk = vec![0.0; n * d];
        self.prepared.cross_vec_grad(&self.prepared.scale(x), &self.scaled_x, &mut k, &mut dk);
        let mut v = crate::linalg::col(&k);
        self.chol.solve_l_in_place(v.as_mut());
        let var_std =
            self.kernel.prior_variance(&self.hypers.theta) - v.col_as_slice(0).iter().map(|a| a * a).sum::<f64>();
        dvar.iter_mut().for_each(|g| *g = 0.0);
        if var_std <= 0.0 {
            return (k, dk, 0.0);
        }
        self.chol.solve_lt_in_place(v.as_mut());
        for (row, w) in dk.chunks_exact(d.max(1)).zip(v.col_as_slice(0)) {
            for (g, r) in dvar.iter_mut().zip(row) {
                *g -= 2.0 * r * w;
            }
        }
        let s2 = self.std.scale * self.std.scale;
        dvar.iter_mut().for_each(|g| *g *= s2);
        (k, dk, var_std * s2)
    }

    /// Gradient in x of the raw mean with weights `alpha` (`raw_mean(x, k(x, X)·alpha)`) into `dmean`, from `∂k/∂x`
    /// (`dk`, `n × d` row-major); the prior mean's gradient enters `prior_weight` times (a sum of means' gradients,
    /// as in [`DrawnModels::weighted_mean_grad`], adds it once per mean).
    fn mean_grad(&self, x: &[f64], dk: &[f64], alpha: &[f64], prior_weight: f64, dmean: &mut [f64]) {
        dmean.iter_mut().for_each(|g| *g = 0.0);
        for (row, a) in dk.chunks_exact(self.d.max(1)).zip(alpha) {
            for (g, r) in dmean.iter_mut().zip(row) {
                *g += r * a;
            }
        }
        dmean.iter_mut().for_each(|g| *g *= self.std.scale);
        if let Some(p) = &self.prior_mean {
            let mut prior = vec![0.0; self.d];
            p.add_gradient(x, &mut prior);
            dmean.iter_mut().zip(&prior).for_each(|(g, p)| *g += prior_weight * p);
        }
    }

    /// Posterior means and variances at `m` row-major points (one triangular solve with m right-hand sides).
    pub fn posterior_batch(&self, xs: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let d = self.d.max(1);
        let m = xs.len() / d;
        if self.n() == 0 {
            let pv = self.prior_variance();
            return (xs.chunks_exact(d).map(|x| self.raw_mean(x, 0.0)).collect(), vec![pv; m]);
        }
        let kt = self.batch_cross(xs);
        let means: Vec<f64> =
            (0..m).map(|j| self.raw_mean(&xs[j * d..(j + 1) * d], dot(kt.col_as_slice(j), &self.alpha))).collect();
        (means, self.batch_variances(kt))
    }

    /// `k(X, xs)` (`n × m`, standardised units) at `m` row-major points: the batch form of the cross-covariance that
    /// this model's means and those of models sharing its covariance ([`DrawnModels`]) are built from.
    fn batch_cross(&self, xs: &[f64]) -> Mat<f64> {
        self.prepared.cross(&self.scaled_x, &self.prepared.scale(xs))
    }

    /// The posterior variances (raw units, clamped at 0) from `k(X, xs)` of [`Gp::batch_cross`], by one triangular
    /// solve with m right-hand sides (in place, so `kt` is consumed).
    fn batch_variances(&self, mut kt: Mat<f64>) -> Vec<f64> {
        self.chol.solve_l_in_place(kt.as_mut());
        let pv = self.kernel.prior_variance(&self.hypers.theta);
        let s2 = self.std.scale * self.std.scale;
        (0..kt.ncols()).map(|j| (pv - kt.col_as_slice(j).iter().map(|a| a * a).sum::<f64>()).max(0.0) * s2).collect()
    }

    /// A raw value `y` at `x` in the units the GP fits: standardised, less the prior and constant means (the inverse
    /// of [`Gp::raw_mean`]).
    fn standardised_target(&self, x: &[f64], y: f64) -> f64 {
        let m = self.prior_mean.as_ref().map_or(0.0, |p| p.value(x));
        (y - m - self.std.shift) / self.std.scale - self.hypers.mean
    }

    /// Joint posterior of f at `m` points: means and the `m × m` covariance (raw units).
    pub fn posterior_joint(&self, xs: &[f64]) -> (Vec<f64>, Mat<f64>) {
        let d = self.d.max(1);
        let m = xs.len() / d;
        let mut cov = self.kernel.gram(&self.hypers.theta, xs);
        let mut kt = self.kernel.cross(&self.hypers.theta, &self.x, xs);
        let means: Vec<f64> =
            (0..m).map(|j| self.raw_mean(&xs[j * d..(j + 1) * d], dot(kt.col_as_slice(j), &self.alpha))).collect();
        if self.n() > 0 {
            self.chol.solve_l_in_place(kt.as_mut());
            cov -= kt.transpose() * &kt;
        }
        let s2 = self.std.scale * self.std.scale;
        cov *= faer::Scale(s2);
        (means, cov)
    }

    /// Adds the observation `(x, y)` (raw units, optional known noise variance) by extending the Cholesky factor in
    /// O(n²). Hyperparameters and standardisation stay fixed.
    pub fn condition(&mut self, x: &[f64], y: f64, known_noise_var: Option<f64>) -> Result<()> {
        if x.len() != self.d || !y.is_finite() || x.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical("conditioning on a non-finite point".into()));
        }
        let mut k = vec![0.0; self.n()];
        self.prepared.cross_vec(&self.prepared.scale(x), &self.scaled_x, &mut k);
        let s2 = self.std.scale * self.std.scale;
        let noise = self.hypers.noise_variance + known_noise_var.unwrap_or(0.0) / s2;
        let k_nn = self.kernel.prior_variance(&self.hypers.theta) + noise;
        self.chol.extend(&k, k_nn)?;
        let target = self.standardised_target(x, y);
        self.x.extend_from_slice(x);
        self.prepared.scale_into(x, &mut self.scaled_x);
        self.r.push(target);
        self.noise.push(noise);
        self.alpha = self.chol.solve(&self.r);
        Ok(())
    }

    /// Log marginal likelihood of the standardised targets under the current hyperparameters.
    pub fn log_marginal_likelihood(&self) -> f64 {
        -0.5 * dot(&self.r, &self.alpha)
            - 0.5 * self.chol.log_det()
            - 0.5 * self.n() as f64 * (2.0 * std::f64::consts::PI).ln()
    }

    /// `(K + Σ)⁻¹ v` for a vector in standardised units (used by samplers and look-aheads).
    pub fn solve(&self, v: &[f64]) -> Vec<f64> {
        self.chol.solve(v)
    }

    /// The Cholesky factor of `K + Σ` (standardised units).
    pub fn cholesky(&self) -> &Cholesky {
        &self.chol
    }

    /// Standardised noise variance of every training point.
    pub fn noise_diag(&self) -> &[f64] {
        &self.noise
    }
}

/// Standardised targets (before the constant mean is subtracted) and the standardiser.
fn standardize(data: &Data, config: &GpConfig) -> Result<(Standardizer, Vec<f64>)> {
    if data.x.len() != data.n() * data.d {
        return Err(Error::Numerical("inputs and targets disagree in length".into()));
    }
    if data.y.iter().chain(&data.x).any(|v| !v.is_finite()) {
        return Err(Error::Numerical("non-finite training data".into()));
    }
    let resid: Vec<f64> = match &config.prior_mean {
        Some(p) => data.y.iter().zip(data.x.chunks_exact(data.d.max(1))).map(|(y, x)| y - p.value(x)).collect(),
        None => data.y.clone(),
    };
    let std = Standardizer::from_values(&resid, config.standardize);
    Ok((std, resid.iter().map(|v| (v - std.shift) / std.scale).collect()))
}

/// Diagonal noise (standardised units) of every training point.
fn noise_diag(data: &Data, config: &GpConfig, std: &Standardizer, learned: f64) -> Vec<f64> {
    let s2 = std.scale * std.scale;
    let hom = match config.noise {
        NoiseModel::Learned { .. } => learned,
        NoiseModel::Fixed(v) => v / s2,
    };
    (0..data.n()).map(|i| hom + data.noise_var.as_ref().map_or(0.0, |v| v[i].max(0.0) / s2)).collect()
}
