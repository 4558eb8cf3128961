//! The conditional mean process (paper §2, Eqs. 10–12; Chau et al. 2021): a GP prior f ~ GP(0, k) on the
//! encoded target space, observed only through aggregates `z_s = g(a_s) + ε_s` with `g(a) = Σ_i w_i(a) f(p_i(a))`
//! (a [`Representer`], see [`super::embedding`]). Everything is Gaussian and linear in f, so
//!
//! - `Q_st = Cov(z_s, z_t) = w_sᵀ K(P_s, P_t) w_t` (+ noise), `c_s(x) = Cov(f(x), z_s) = k(x, P_s) w_s`;
//! - `m_t(x) = c(x)ᵀ (Q + Σ)⁻¹ z`, `k_t(x, x') = k(x, x') − c(x)ᵀ (Q + Σ)⁻¹ c(x')` (Eq. 12 with the CME weights
//!   `W_t`: `c(x) = W_tᵀ k(x, x)` and `Q = W_tᵀ K_xx W_t`);
//! - the posterior of g at a candidate query applies the same functional: `ν_t(a) = c_g(a)ᵀ(Q + Σ)⁻¹z`,
//!   `q_t(a, a) = w_aᵀK w_a − c_g(a)ᵀ(Q + Σ)⁻¹c_g(a)` (the prototype's `Lᵀ K_post L`).
//!
//! Outputs are the caller's (standardised) units and the prior mean is 0 (as in the authors' prototype). The kernel
//! k is RBF with one lengthscale per target dimension and an output scale; [`fit_cmp`] picks them and the noise by
//! maximum marginal likelihood of z over a grid (the prototype fits them by Adam; a grid is deterministic, cheap
//! because Q only changes with the lengthscale, and robust with the few observations of early iterations).

use std::ops::Range;

use faer::{Mat, MatRef};
use serde::{Deserialize, Serialize};

use super::embedding::{Representer, rbf_theta};
use crate::error::{Error, Result};
use crate::kernel::{Kernel, KernelFamily, Prepared, Scaled};
use crate::linalg::Cholesky;

/// Hyperparameters of the CMP (standardised output units).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmpHypers {
    /// RBF lengthscale per encoded target dimension.
    pub lengthscales: Vec<f64>,
    /// Prior variance of f.
    pub outputscale: f64,
    /// Noise variance of observations without a known noise level.
    pub noise_var: f64,
}

/// How the observations' representers share support points.
#[derive(Debug, Clone)]
enum Support {
    /// One support for all (pairs): `W` is `N × t`.
    Shared { w: Mat<f64> },
    /// Each observation has its own block of the support.
    Blocks { ranges: Vec<Range<usize>>, weights: Vec<f64> },
}

/// A fitted conditional mean process.
#[derive(Debug, Clone)]
pub struct Cmp {
    dx: usize,
    prep: Prepared,
    /// All support points (shared support, or every observation's block) and their scaled form.
    u_scaled: Scaled,
    support: Support,
    /// `K(U, U) W` for a shared support (N × t), for candidate queries.
    kuu: Option<Mat<f64>>,
    b: Option<Mat<f64>>,
    chol: Cholesky,
    alpha: Vec<f64>,
    /// `β = W α`: the posterior mean is `k(x, U) β`.
    beta: Vec<f64>,
    hypers: CmpHypers,
}

/// Data the CMP is conditioned on.
#[derive(Debug, Clone, Copy)]
pub struct CmpData<'a> {
    /// Encoded target dimension.
    pub dx: usize,
    /// The shared support of a pairs embedding (row-major), if any.
    pub shared: Option<&'a [f64]>,
    /// Representers of the observed queries.
    pub reps: &'a [Representer],
    /// Observed aggregates.
    pub z: &'a [f64],
    /// Known noise variance of each observation (`None`: the hyperparameter).
    pub noise: &'a [Option<f64>],
}

impl Cmp {
    /// Conditions the CMP with `hypers` on `data`.
    pub fn new(data: CmpData<'_>, hypers: CmpHypers) -> Result<Self> {
        let t = data.reps.len();
        if data.z.len() != t || data.noise.len() != t || hypers.lengthscales.len() != data.dx {
            return Err(Error::Numerical("CMP data of inconsistent sizes".into()));
        }
        let prep = kernel(data.dx).prepare(&theta(&hypers));
        let (u, support) = support_of(data)?;
        let u_scaled = prep.scale(&u);
        let kuu = prep.gram(&u_scaled);
        let (q, b) = q_matrix(&kuu, &support, t);
        let mut q = q;
        for s in 0..t {
            q[(s, s)] += data.noise[s].unwrap_or(hypers.noise_var);
        }
        let chol = Cholesky::factor(q)?;
        let alpha = chol.solve(data.z);
        let beta = match &support {
            Support::Shared { w } => (0..w.nrows()).map(|i| (0..t).map(|s| w[(i, s)] * alpha[s]).sum()).collect(),
            Support::Blocks { ranges, weights } => {
                let mut beta = vec![0.0; weights.len()];
                for (s, r) in ranges.iter().enumerate() {
                    for i in r.clone() {
                        beta[i] = weights[i] * alpha[s];
                    }
                }
                beta
            }
        };
        let shared = matches!(support, Support::Shared { .. });
        Ok(Self { dx: data.dx, prep, u_scaled, support, kuu: shared.then_some(kuu), b, chol, alpha, beta, hypers })
    }

    /// The hyperparameters in use.
    pub fn hypers(&self) -> &CmpHypers {
        &self.hypers
    }

    /// Number of observations.
    pub fn t(&self) -> usize {
        self.alpha.len()
    }

    /// Jitter the factorisation needed.
    pub fn jitter(&self) -> f64 {
        self.chol.jitter()
    }

    /// `ln p(z)` under the CMP.
    pub fn log_marginal_likelihood(&self, z: &[f64]) -> f64 {
        let fit: f64 = z.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        -0.5 * fit - 0.5 * self.chol.log_det() - 0.5 * z.len() as f64 * (2.0 * std::f64::consts::PI).ln()
    }

    /// `Cov(f(x), z)` for `nx` points: `nx × t`.
    fn cross_f(&self, xs: &[f64]) -> Mat<f64> {
        let kxu = self.prep.cross(&self.prep.scale(xs), &self.u_scaled);
        project(kxu.as_ref(), &self.support)
    }

    /// Posterior mean and variance of f at row-major target points.
    pub fn posterior_f(&self, xs: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let nx = xs.len() / self.dx.max(1);
        let prior = self.prep.prior_variance();
        if self.t() == 0 {
            return (vec![0.0; nx], vec![prior; nx]);
        }
        let c = self.cross_f(xs);
        let mean = (0..nx).map(|i| (0..self.t()).map(|s| c[(i, s)] * self.alpha[s]).sum()).collect();
        let mut ct = c.transpose().to_owned();
        self.chol.solve_l_in_place(ct.as_mut());
        let var = (0..nx).map(|i| (prior - (0..self.t()).map(|s| ct[(s, i)].powi(2)).sum::<f64>()).max(0.0)).collect();
        (mean, var)
    }

    /// Posterior mean and full covariance of f at row-major target points (for joint samples).
    pub fn posterior_f_joint(&self, xs: &[f64]) -> (Vec<f64>, Mat<f64>) {
        let nx = xs.len() / self.dx.max(1);
        let z = self.prep.scale(xs);
        let mut cov = self.prep.gram(&z);
        if self.t() == 0 {
            return (vec![0.0; nx], cov);
        }
        let c = self.cross_f(xs);
        let mean = (0..nx).map(|i| (0..self.t()).map(|s| c[(i, s)] * self.alpha[s]).sum()).collect();
        let mut ct = c.transpose().to_owned();
        self.chol.solve_l_in_place(ct.as_mut());
        cov -= ct.transpose() * &ct;
        (mean, cov)
    }

    /// Posterior mean of f and its gradient at one target point.
    pub fn mean_f_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let n = self.beta.len();
        let (mut k, mut dk) = (vec![0.0; n], vec![0.0; n * self.dx]);
        self.prep.cross_vec_grad(&self.prep.scale(x), &self.u_scaled, &mut k, &mut dk);
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut m = 0.0;
        for i in 0..n {
            m += k[i] * self.beta[i];
            for j in 0..self.dx {
                grad[j] += dk[i * self.dx + j] * self.beta[i];
            }
        }
        m
    }

    /// Posterior mean ν_t and variance q_t of g at candidate queries given by their representers (same
    /// embedding as the observations).
    pub fn posterior_g(&self, reps: &[Representer]) -> (Vec<f64>, Vec<f64>) {
        let t = self.t();
        let nc = reps.len();
        let mut prior = vec![0.0; nc];
        let mut cross = Mat::<f64>::zeros(t.max(1), nc);
        match (&self.kuu, &self.b) {
            (Some(kuu), b) => {
                let n = kuu.nrows();
                let wc = Mat::<f64>::from_fn(n, nc, |i, c| reps[c].weights.get(i).copied().unwrap_or(0.0));
                let kw = kuu * &wc;
                for c in 0..nc {
                    prior[c] = (0..n).map(|i| wc[(i, c)] * kw[(i, c)]).sum();
                }
                if let Some(b) = b
                    && t > 0
                {
                    cross = b.transpose() * &wc;
                }
            }
            (None, _) => {
                for (c, r) in reps.iter().enumerate() {
                    let pts = r.points.as_deref().unwrap_or(&[]);
                    let zc = self.prep.scale(pts);
                    let kcc = self.prep.gram(&zc);
                    let m = r.weights.len();
                    prior[c] =
                        (0..m).map(|i| (0..m).map(|j| r.weights[i] * kcc[(i, j)] * r.weights[j]).sum::<f64>()).sum();
                    if t > 0 {
                        let kcu = self.prep.cross(&zc, &self.u_scaled);
                        let wk = Mat::<f64>::from_fn(1, kcu.ncols(), |_, j| {
                            (0..m).map(|i| r.weights[i] * kcu[(i, j)]).sum()
                        });
                        let proj = project(wk.as_ref(), &self.support);
                        for s in 0..t {
                            cross[(s, c)] = proj[(0, s)];
                        }
                    }
                }
            }
        }
        if t == 0 {
            return (vec![0.0; nc], prior);
        }
        let mean = (0..nc).map(|c| (0..t).map(|s| cross[(s, c)] * self.alpha[s]).sum()).collect();
        self.chol.solve_l_in_place(cross.as_mut());
        let var = (0..nc).map(|c| (prior[c] - (0..t).map(|s| cross[(s, c)].powi(2)).sum::<f64>()).max(0.0)).collect();
        (mean, var)
    }
}

fn kernel(dx: usize) -> Kernel {
    Kernel::ard(KernelFamily::Rbf, dx)
}

fn theta(h: &CmpHypers) -> Vec<f64> {
    let mut t: Vec<f64> = h.lengthscales.iter().map(|l| l.ln()).collect();
    t.push(h.outputscale.ln());
    t
}

/// The stacked support and its layout.
fn support_of(data: CmpData<'_>) -> Result<(Vec<f64>, Support)> {
    let t = data.reps.len();
    match data.shared {
        Some(x1) => {
            let n = x1.len() / data.dx.max(1);
            if data.reps.iter().any(|r| r.weights.len() != n) {
                return Err(Error::Numerical("representer weights do not match the shared support".into()));
            }
            let w = Mat::<f64>::from_fn(n, t, |i, s| data.reps[s].weights[i]);
            Ok((x1.to_vec(), Support::Shared { w }))
        }
        None => {
            let mut u = Vec::new();
            let mut ranges = Vec::with_capacity(t);
            let mut weights = Vec::new();
            for r in data.reps {
                let pts = r.points.as_deref().unwrap_or(&[]);
                if pts.len() != r.weights.len() * data.dx {
                    return Err(Error::Numerical("representer points do not match its weights".into()));
                }
                let start = weights.len();
                u.extend_from_slice(pts);
                weights.extend_from_slice(&r.weights);
                ranges.push(start..weights.len());
            }
            Ok((u, Support::Blocks { ranges, weights }))
        }
    }
}

/// `Q = WᵀK_UU W` (t × t) and, for a shared support, `B = K_UU W`.
fn q_matrix(kuu: &Mat<f64>, support: &Support, t: usize) -> (Mat<f64>, Option<Mat<f64>>) {
    match support {
        Support::Shared { w } => {
            let b = kuu * w;
            (w.transpose() * &b, Some(b))
        }
        Support::Blocks { ranges, weights } => {
            let mut q = Mat::<f64>::zeros(t, t);
            for s in 0..t {
                for r in 0..=s {
                    let mut v = 0.0;
                    for i in ranges[s].clone() {
                        for j in ranges[r].clone() {
                            v += weights[i] * kuu[(i, j)] * weights[j];
                        }
                    }
                    q[(s, r)] = v;
                    q[(r, s)] = v;
                }
            }
            (q, None)
        }
    }
}

/// `M W` for a matrix `M` with one column per support point.
fn project(m: MatRef<'_, f64>, support: &Support) -> Mat<f64> {
    match support {
        Support::Shared { w } => m * w,
        Support::Blocks { ranges, weights } => {
            Mat::from_fn(m.nrows(), ranges.len(), |i, s| ranges[s].clone().map(|j| m[(i, j)] * weights[j]).sum())
        }
    }
}

/// Lengthscales (encoded target units) tried by [`fit_cmp`].
const LENGTHSCALES: [f64; 8] = [0.05, 0.08, 0.12, 0.18, 0.27, 0.4, 0.6, 1.0];
/// Output scales (standardised units) tried by [`fit_cmp`].
const OUTPUTSCALES: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
/// Noise variances (standardised units) tried by [`fit_cmp`] when no observation has a known noise level.
const NOISES: [f64; 5] = [1e-4, 1e-3, 1e-2, 5e-2, 2e-1];
/// Hyperparameters used with fewer than three observations.
pub const DEFAULT_LENGTHSCALE: f64 = 0.2;

/// The CMP with hyperparameters of largest marginal likelihood over the grid (the defaults below three
/// observations). The lengthscale is shared by every target dimension.
pub fn fit_cmp(data: CmpData<'_>) -> Result<Cmp> {
    let t = data.reps.len();
    let default = CmpHypers { lengthscales: vec![DEFAULT_LENGTHSCALE; data.dx], outputscale: 1.0, noise_var: 1e-2 };
    if t < 3 {
        return Cmp::new(data, default);
    }
    let (u, support) = support_of(data)?;
    let unknown_noise = data.noise.iter().any(Option::is_none);
    let noises: &[f64] = if unknown_noise { &NOISES } else { &[0.0] };
    let mut best: Option<(f64, CmpHypers)> = None;
    for &l in &LENGTHSCALES {
        let prep = kernel(data.dx).prepare(&rbf_theta(data.dx, l, 1.0));
        let kuu = prep.gram(&prep.scale(&u));
        let (q0, _) = q_matrix(&kuu, &support, t);
        for &s2 in &OUTPUTSCALES {
            for &nv in noises {
                let q = Mat::<f64>::from_fn(t, t, |i, j| {
                    s2 * q0[(i, j)] + if i == j { data.noise[i].unwrap_or(nv) } else { 0.0 }
                });
                let Ok(chol) = Cholesky::factor(q) else { continue };
                let alpha = chol.solve(data.z);
                let lml = -0.5 * data.z.iter().zip(&alpha).map(|(a, b)| a * b).sum::<f64>() - 0.5 * chol.log_det();
                if lml.is_finite() && best.as_ref().is_none_or(|b| lml > b.0) {
                    best = Some((lml, CmpHypers { lengthscales: vec![l; data.dx], outputscale: s2, noise_var: nv }));
                }
            }
        }
    }
    Cmp::new(data, best.map_or(default, |b| b.1))
}
