//! Noiseless models of joint posterior draws at the training inputs, the inner models of noisy expected
//! improvement (Letham, Karrer, Ottoni & Bakshy, "Constrained Bayesian Optimization with Noisy Experiments",
//! Bayesian Analysis 2019, §4): draw the latent `f(X)` at the observed inputs S times from the posterior, and
//! condition a noise-free GP with the same hyperparameters on each draw. Since `f(x)` is independent of the noisy
//! observations given `f(X)`, the draw's model is exactly the posterior of `f(x)` given that draw. The S models
//! share one covariance (the noise-free one at X), so they share the posterior variance and differ only in the
//! weights `α_s = K⁻¹ (f_s − c)`: one cross-covariance vector per point serves all S means.

use faer::Mat;
use rand::Rng;

use super::Gp;
use crate::error::Result;
use crate::linalg::Cholesky;
use crate::linalg::dot;

/// `∂k(x, X)/∂x` at one point, from [`DrawnModels::posterior_with_grad`].
#[derive(Debug)]
pub struct CrossGrad {
    dk: Vec<f64>,
}

/// S noiseless models, one per joint posterior draw of f at the training inputs.
#[derive(Debug, Clone)]
pub struct DrawnModels {
    /// The noise-free model at the training inputs (its own targets unused).
    twin: Gp,
    /// `n × S` weights `K⁻¹ (f_s − c)` in standardised units.
    alphas: Mat<f64>,
    /// The largest value of each draw at the training inputs (raw units): the draw's incumbent.
    best: Vec<f64>,
}

impl Gp {
    /// `count` joint posterior draws of f at the training inputs and the noiseless model of each.
    pub fn drawn_models(&self, count: usize, rng: &mut impl Rng) -> Result<DrawnModels> {
        let n = self.n();
        let draws = if n > 0 { self.sample_joint(&self.x, count, rng)? } else { vec![Vec::new(); count] };
        let mut twin = self.clone();
        let gram = self.kernel.gram(&self.hypers.theta, &self.x);
        twin.chol = Cholesky::factor(gram)?;
        twin.noise = vec![0.0; n];
        let mut alphas = Mat::<f64>::zeros(n, count);
        let mut best = Vec::with_capacity(count);
        for (s, draw) in draws.iter().enumerate() {
            best.push(draw.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            let r: Vec<f64> = draw
                .iter()
                .zip(self.x.chunks_exact(self.d.max(1)))
                .map(|(f, x)| self.standardised_target(x, *f))
                .collect();
            alphas.col_as_slice_mut(s).copy_from_slice(&twin.chol.solve(&r));
        }
        twin.alpha = vec![0.0; n];
        Ok(DrawnModels { twin, alphas, best })
    }
}

impl DrawnModels {
    /// Number of draws S.
    pub fn count(&self) -> usize {
        self.best.len()
    }

    /// Each draw's largest value at the training inputs (raw units).
    pub fn best(&self) -> &[f64] {
        &self.best
    }

    /// The model of the draws (shared kernel, standardisation and prior variance).
    pub fn model(&self) -> &Gp {
        &self.twin
    }

    /// Every draw's mean at `x` into `means` (length S, raw units); returns the shared variance (raw units).
    pub fn posterior(&self, x: &[f64], means: &mut [f64]) -> f64 {
        let (k, var) = self.twin.cross_and_variance(x);
        self.means_into(x, &k, means);
        var
    }

    /// As [`DrawnModels::posterior`], with the variance's gradient in x (`dvar`, length d; 0 where the variance is
    /// clamped at 0). The returned [`CrossGrad`] gives weighted sums of the means' gradients
    /// ([`DrawnModels::weighted_mean_grad`]): one n-vector per sum instead of S gradients.
    pub fn posterior_with_grad(&self, x: &[f64], means: &mut [f64], dvar: &mut [f64]) -> (f64, CrossGrad) {
        let (k, dk, var) = self.twin.cross_and_variance_with_grad(x, dvar);
        self.means_into(x, &k, means);
        (var, CrossGrad { dk })
    }

    /// `Σ_s weights_s ∂mean_s/∂x` at the point of `cross` (`x`) into `grad` (length d).
    pub fn weighted_mean_grad(&self, x: &[f64], cross: &CrossGrad, weights: &[f64], grad: &mut [f64]) {
        let mut alpha = vec![0.0; self.twin.n()];
        for (s, w) in weights.iter().enumerate() {
            alpha.iter_mut().zip(self.alphas.col_as_slice(s)).for_each(|(a, b)| *a += w * b);
        }
        self.twin.mean_grad(x, &cross.dk, &alpha, weights.iter().sum(), grad);
    }

    fn means_into(&self, x: &[f64], k: &[f64], means: &mut [f64]) {
        for (s, m) in means.iter_mut().enumerate() {
            *m = self.twin.raw_mean(x, dot(k, self.alphas.col_as_slice(s)));
        }
    }

    /// Every draw's mean (an `m × S` matrix) and the shared variance at `m` row-major points (raw units).
    pub fn posterior_batch(&self, xs: &[f64]) -> (Mat<f64>, Vec<f64>) {
        let g = &self.twin;
        let d = g.d.max(1);
        let m = xs.len() / d;
        let (s_count, n) = (self.count(), g.n());
        if n == 0 {
            let means = Mat::from_fn(m, s_count, |p, _| g.raw_mean(&xs[p * d..(p + 1) * d], 0.0));
            return (means, vec![g.prior_variance(); m]);
        }
        let kt = g.batch_cross(xs); // n × m
        let mut means = kt.transpose() * &self.alphas; // m × S, standardised, then raw in place
        for s in 0..s_count {
            for (v, x) in means.col_as_slice_mut(s).iter_mut().zip(xs.chunks_exact(d)) {
                *v = g.raw_mean(x, *v);
            }
        }
        (means, g.batch_variances(kt))
    }
}
