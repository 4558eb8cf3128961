//! Posterior samples: joint draws at finite point sets, and whole approximate function draws for continuous
//! Thompson sampling by pathwise conditioning (Wilson et al., "Efficiently Sampling Functions from Gaussian
//! Process Posteriors", ICML 2020): `f̃(x) = f_prior(x) + k(x, X)(K + Σ)⁻¹(ỹ − c − f_prior(X) − ε)`, with the prior
//! draw from random Fourier features (Rahimi & Recht 2007) — Gaussian spectral density for RBF, multivariate
//! Student-t with 2ν degrees of freedom for Matérn-ν. Periodic components have no such features here, so
//! [`Gp::pathwise_sample`] returns `None` for them and callers fall back to joint samples on a finite set.

use faer::Mat;
use rand::Rng;
use rand_distr::{ChiSquared, Distribution, StandardNormal};

use super::Gp;
use crate::kernel::KernelFamily;
use crate::linalg::Cholesky;
use crate::linalg::dot;

impl Gp {
    /// `count` joint draws of f at `m` row-major points (raw units), each a vector of length m.
    pub fn sample_joint(&self, xs: &[f64], count: usize, rng: &mut impl Rng) -> crate::error::Result<Vec<Vec<f64>>> {
        let (mean, cov) = self.posterior_joint(xs);
        let m = mean.len();
        let chol = Cholesky::factor(cov)?;
        let z = Mat::from_fn(m, count, |_, _| -> f64 { StandardNormal.sample(rng) });
        let draws = chol.l() * &z;
        Ok((0..count).map(|s| (0..m).map(|i| mean[i] + draws[(i, s)]).collect()).collect())
    }

    /// An approximate posterior function draw with `features` random Fourier features per component, or `None`
    /// when a component is periodic.
    pub fn pathwise_sample(&self, features: usize, rng: &mut impl Rng) -> Option<PathwiseSample> {
        let theta = &self.hypers.theta;
        let mut comps = Vec::new();
        let mut off = 0;
        for c in self.kernel.components() {
            let nd = c.dims.len();
            let nu: Option<f64> = match c.family {
                KernelFamily::Matern12 => Some(0.5),
                KernelFamily::Matern32 => Some(1.5),
                KernelFamily::Matern52 => Some(2.5),
                KernelFamily::Rbf => None,
                KernelFamily::Periodic => return None,
            };
            let inv_l: Vec<f64> = theta[off..off + nd].iter().map(|t| (-t).exp()).collect();
            let amp = (2.0 * theta[off + nd].exp() / features as f64).sqrt();
            let mut omega = vec![0.0; features * nd];
            let mut phase = vec![0.0; features];
            let mut weight = vec![0.0; features];
            for f in 0..features {
                let scale = match nu {
                    Some(nu) => (2.0 * nu / ChiSquared::<f64>::new(2.0 * nu).ok()?.sample(rng)).sqrt(),
                    None => 1.0,
                };
                for q in 0..nd {
                    let z: f64 = StandardNormal.sample(rng);
                    omega[f * nd + q] = z * scale * inv_l[q];
                }
                phase[f] = rng.random_range(0.0..std::f64::consts::TAU);
                weight[f] = StandardNormal.sample(rng);
            }
            comps.push(FeatureSet { dims: c.dims.clone(), omega, phase, weight, amp });
            off += c.n_params();
        }
        let prior = PriorDraw { comps };
        let d = self.d.max(1);
        // v = (K + Σ)⁻¹ (r − f_prior(X) − ε)
        let resid: Vec<f64> = (0..self.n())
            .map(|i| {
                let eps: f64 = StandardNormal.sample(rng);
                self.r[i] - prior.value(&self.x[i * d..(i + 1) * d]) - eps * self.noise[i].max(0.0).sqrt()
            })
            .collect();
        let v = self.chol.solve(&resid);
        Some(PathwiseSample { gp: self.clone(), prior, v })
    }
}

#[derive(Debug, Clone)]
pub(super) struct FeatureSet {
    pub(super) dims: Vec<usize>,
    /// features × dims, already divided by the lengthscales.
    pub(super) omega: Vec<f64>,
    pub(super) phase: Vec<f64>,
    pub(super) weight: Vec<f64>,
    pub(super) amp: f64,
}

#[derive(Debug, Clone)]
pub(super) struct PriorDraw {
    pub(super) comps: Vec<FeatureSet>,
}

impl PriorDraw {
    fn value(&self, x: &[f64]) -> f64 {
        self.comps
            .iter()
            .map(|c| {
                let nd = c.dims.len();
                c.amp
                    * (0..c.weight.len())
                        .map(|f| {
                            let arg: f64 =
                                c.dims.iter().enumerate().map(|(q, &j)| c.omega[f * nd + q] * x[j]).sum::<f64>()
                                    + c.phase[f];
                            c.weight[f] * arg.cos()
                        })
                        .sum::<f64>()
            })
            .sum()
    }

    fn add_gradient(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut value = 0.0;
        for c in &self.comps {
            let nd = c.dims.len();
            for f in 0..c.weight.len() {
                let arg: f64 =
                    c.dims.iter().enumerate().map(|(q, &j)| c.omega[f * nd + q] * x[j]).sum::<f64>() + c.phase[f];
                let (s, co) = arg.sin_cos();
                value += c.amp * c.weight[f] * co;
                for (q, &j) in c.dims.iter().enumerate() {
                    grad[j] -= c.amp * c.weight[f] * s * c.omega[f * nd + q];
                }
            }
        }
        value
    }
}

/// One approximate draw from the GP posterior, a deterministic function of x.
#[derive(Debug, Clone)]
pub struct PathwiseSample {
    pub(super) gp: Gp,
    pub(super) prior: PriorDraw,
    pub(super) v: Vec<f64>,
}

impl PathwiseSample {
    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.gp.d
    }

    /// The draw at `x` (raw units).
    pub fn value(&self, x: &[f64]) -> f64 {
        let mut k = vec![0.0; self.gp.n()];
        self.gp.kernel.cross_vec(&self.gp.hypers.theta, x, &self.gp.x, &mut k);
        self.gp.raw_mean(x, self.prior.value(x) + dot(&k, &self.v))
    }

    /// The draw at `x` and its gradient (written into `grad`, length d).
    pub fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let (n, d) = (self.gp.n(), self.gp.d);
        let mut k = vec![0.0; n];
        let mut dk = vec![0.0; n * d];
        self.gp.kernel.cross_vec_grad(&self.gp.hypers.theta, x, &self.gp.x, &mut k, &mut dk);
        grad.iter_mut().for_each(|g| *g = 0.0);
        let f = self.prior.add_gradient(x, grad) + dot(&k, &self.v);
        for i in 0..n {
            for j in 0..d {
                grad[j] += dk[i * d + j] * self.v[i];
            }
        }
        let scale = self.gp.std.scale;
        grad.iter_mut().for_each(|g| *g *= scale);
        if let Some(p) = &self.gp.prior_mean {
            p.add_gradient(x, grad);
        }
        self.gp.raw_mean(x, f)
    }
}
