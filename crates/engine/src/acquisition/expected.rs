//! Expectation of an acquisition over random input dimensions by sample-average approximation with common random
//! numbers: `E_ξ[a([x, ξ])] ≈ (1/M) Σ_m a([x, ξ_m])` with the M samples ξ_m fixed for the whole optimisation, so
//! the optimiser sees a deterministic, differentiable function of the controlled part x. Used for uncontrolled
//! variables (control sets, seed 000) and unknown contexts (seed 002).
//!
//! [`ExpectedUcb`] is `Expected<Ucb>` with the per-sample posteriors at one x (and at many x for the raw-sample
//! stage) computed in one batch over all M samples by [`crate::gp::FixedSamples`] (the sample-only part of the
//! kernel precomputed, one `n × M` cross-covariance block, triangular solves with M right-hand sides), or by
//! [`Gp::posterior_batch_grad`] for kernels that do not split, instead of M single-point posteriors. The result is
//! the same up to floating-point rounding (the sums over samples are taken in the same order). This is the hot
//! path of the control-set policies.

use super::analytic::floored_sigma;
use super::{Acquisition, Ucb};
use crate::gp::{BatchPosterior, FixedSamples, Gp};

/// `E_ξ[a([x, ξ])]` over fixed samples ξ of the dimensions not in `controlled`.
pub struct Expected<A> {
    inner: A,
    controlled: Vec<usize>,
    others: Vec<usize>,
    samples: Vec<f64>,
    m: usize,
}

impl<A: Acquisition> Expected<A> {
    /// `controlled`: dimensions of the inner input set by x (in x's order); `others`: the remaining ones, with
    /// `samples` an `M × others.len()` row-major matrix of their values.
    pub fn new(inner: A, controlled: Vec<usize>, others: Vec<usize>, samples: Vec<f64>) -> Self {
        debug_assert_eq!(controlled.len() + others.len(), inner.dim());
        let m = if others.is_empty() { 1 } else { samples.len() / others.len() };
        Self { inner, controlled, others, samples, m }
    }

    /// Number of samples M.
    pub fn n_samples(&self) -> usize {
        self.m
    }

    /// The full inner inputs `[x, ξ_m]` of every sample, `M × inner.dim()` row-major.
    pub fn points(&self, x: &[f64]) -> Vec<f64> {
        let d = self.inner.dim();
        let mut full = vec![0.0; self.m * d];
        for (s, row) in full.chunks_exact_mut(d.max(1)).enumerate() {
            self.compose(x, s, row);
        }
        full
    }

    /// The full inner input for x and sample `s`.
    fn compose(&self, x: &[f64], s: usize, out: &mut [f64]) {
        for (q, &j) in self.controlled.iter().enumerate() {
            out[j] = x[q];
        }
        let k = self.others.len();
        for (q, &j) in self.others.iter().enumerate() {
            out[j] = self.samples[s * k + q];
        }
    }
}

impl<A: Acquisition> Acquisition for Expected<A> {
    fn dim(&self) -> usize {
        self.controlled.len()
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.values(x)[0]
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let d = self.inner.dim();
        let mut full = vec![0.0; d];
        let mut g = vec![0.0; d];
        grad.iter_mut().for_each(|v| *v = 0.0);
        let mut total = 0.0;
        for s in 0..self.m {
            self.compose(x, s, &mut full);
            total += self.inner.value_and_grad(&full, &mut g);
            for (q, &j) in self.controlled.iter().enumerate() {
                grad[q] += g[j];
            }
        }
        let inv = 1.0 / self.m as f64;
        grad.iter_mut().for_each(|v| *v *= inv);
        total * inv
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let d = self.inner.dim();
        let dc = self.controlled.len().max(1);
        let points = xs.len() / dc;
        let mut full = vec![0.0; points * self.m * d];
        for p in 0..points {
            for s in 0..self.m {
                let row = (p * self.m + s) * d;
                self.compose(&xs[p * dc..(p + 1) * dc], s, &mut full[row..row + d]);
            }
        }
        let v = self.inner.values(&full);
        v.chunks_exact(self.m).map(|c| c.iter().sum::<f64>() / self.m as f64).collect()
    }
}

/// `E_ξ[μ([x, ξ]) + m·σ([x, ξ])]` over fixed samples ξ: [`Expected`] of [`Ucb::with_multiplier`], batched over the
/// samples (see the module docs).
pub struct ExpectedUcb<'a> {
    expected: Expected<Ucb<'a>>,
    gp: &'a Gp,
    multiplier: f64,
    split: Option<FixedSamples<'a>>,
}

impl<'a> ExpectedUcb<'a> {
    /// Arguments as [`Expected::new`] with the inner `Ucb::with_multiplier(gp, multiplier)`.
    pub fn new(gp: &'a Gp, multiplier: f64, controlled: Vec<usize>, others: Vec<usize>, samples: Vec<f64>) -> Self {
        let split = gp.fixed_samples(&controlled, &others, &samples);
        let expected = Expected::new(Ucb::with_multiplier(gp, multiplier), controlled, others, samples);
        Self { expected, gp, multiplier, split }
    }

    /// Per-sample posteriors with gradients in x.
    fn posterior_grad(&self, x: &[f64]) -> BatchPosterior {
        match &self.split {
            Some(split) => split.posterior_grad(x),
            None => self.gp.posterior_batch_grad(&self.expected.points(x), &self.expected.controlled),
        }
    }
}

impl Acquisition for ExpectedUcb<'_> {
    fn dim(&self) -> usize {
        self.expected.dim()
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.values(x)[0]
    }

    /// As `Expected::value_and_grad`, with sample s's `(μ, σ²)` and their gradients in the controlled coordinates
    /// from one batched posterior; per sample the same floored σ as [`Ucb`].
    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let b = self.posterior_grad(x);
        let (m, q) = (self.expected.m, self.expected.controlled.len());
        grad.iter_mut().for_each(|v| *v = 0.0);
        let mut total = 0.0;
        for s in 0..m {
            let sigma = floored_sigma(self.gp, b.var[s]);
            let flat = b.var[s].sqrt() < sigma;
            total += b.mean[s] + self.multiplier * sigma;
            let rows = b.dmean[s * q..(s + 1) * q].iter().zip(&b.dvar[s * q..(s + 1) * q]);
            for (g, (dm, dv)) in grad.iter_mut().zip(rows) {
                let ds = if flat { 0.0 } else { dv / (2.0 * sigma) };
                *g += dm + self.multiplier * ds;
            }
        }
        let inv = 1.0 / m as f64;
        grad.iter_mut().for_each(|v| *v *= inv);
        total * inv
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let Some(split) = &self.split else { return self.expected.values(xs) };
        let m = self.expected.m;
        let (mu, var) = split.posterior_many(xs);
        let u: Vec<f64> = mu.iter().zip(&var).map(|(a, v)| a + self.multiplier * v.sqrt()).collect();
        u.chunks_exact(m).map(|c| c.iter().sum::<f64>() / m as f64).collect()
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;
    use crate::gp::{Data, GpConfig, Hyperparameters};
    use crate::kernel::KernelFamily;

    /// A 5-D GP on 40 random points with a noise small enough for near-interpolation.
    fn model(rng: &mut StdRng, family: KernelFamily) -> Gp {
        let d = 5;
        let x: Vec<f64> = (0..40 * d).map(|_| rng.random::<f64>()).collect();
        let y: Vec<f64> = x.chunks_exact(d).map(|p| (4.0 * p[0]).sin() + p[1] * p[2] - (p[3] - 0.3).powi(2)).collect();
        let mut config = GpConfig::default_for(d);
        config.kernel = crate::kernel::Kernel::ard(family, d);
        let theta: Vec<f64> = (0..config.kernel.n_params())
            .map(|i| rng.random_range(if i < d { -1.5..0.0 } else { -0.5..0.5 }))
            .collect();
        let hypers = Hyperparameters { theta, noise_variance: 1e-5, mean: 0.2 };
        Gp::new(&Data::new(d, x, y), &config, hypers).unwrap()
    }

    fn close(a: f64, b: f64, scale: f64) -> bool {
        (a - b).abs() <= 1e-10 * scale.max(a.abs()).max(b.abs())
    }

    #[test]
    fn batched_expected_ucb_equals_the_per_sample_expectation() {
        let mut rng = StdRng::seed_from_u64(7);
        for (trial, family) in
            [KernelFamily::Rbf, KernelFamily::Matern52, KernelFamily::Periodic].into_iter().enumerate()
        {
            let gp = model(&mut rng, family);
            // Periodic kernels do not split: the batch falls back to `Gp::posterior_batch_grad`.
            assert_eq!(gp.fixed_samples(&[0, 1, 2], &[3, 4], &[0.5, 0.5]).is_some(), family != KernelFamily::Periodic);
            let (controlled, others) =
                if trial != 1 { (vec![3, 0], vec![1, 2, 4]) } else { (vec![4], vec![0, 1, 2, 3]) };
            let m = 17;
            let samples: Vec<f64> = (0..m * others.len()).map(|_| rng.random::<f64>()).collect();
            for multiplier in [-2.0, 0.0, 1.0, 2.0] {
                let per_sample = Expected::new(
                    Ucb::with_multiplier(&gp, multiplier),
                    controlled.clone(),
                    others.clone(),
                    samples.clone(),
                );
                let batched = ExpectedUcb::new(&gp, multiplier, controlled.clone(), others.clone(), samples.clone());
                assert_eq!(batched.dim(), controlled.len());
                for _ in 0..20 {
                    let x: Vec<f64> = (0..controlled.len()).map(|_| rng.random::<f64>()).collect();
                    let (mut g1, mut g2) = (vec![0.0; x.len()], vec![0.0; x.len()]);
                    let v1 = per_sample.value_and_grad(&x, &mut g1);
                    let v2 = batched.value_and_grad(&x, &mut g2);
                    assert!(close(v1, v2, 1.0), "value {v1} vs {v2}");
                    assert!(close(v2, batched.value(&x), 1.0));
                    let gscale = g1.iter().fold(1.0f64, |a, b| a.max(b.abs()));
                    for (a, b) in g1.iter().zip(&g2) {
                        assert!(close(*a, *b, gscale), "gradient {g1:?} vs {g2:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn batched_gradient_matches_central_differences() {
        let mut rng = StdRng::seed_from_u64(11);
        let gp = model(&mut rng, KernelFamily::Rbf);
        let samples: Vec<f64> = (0..9 * 2).map(|_| rng.random::<f64>()).collect();
        let acq = ExpectedUcb::new(&gp, 2.0, vec![0, 1, 2], vec![3, 4], samples);
        let x = [0.3, 0.6, 0.45];
        let mut g = [0.0; 3];
        acq.value_and_grad(&x, &mut g);
        for j in 0..3 {
            let h = 1e-6;
            let (mut a, mut b) = (x, x);
            a[j] += h;
            b[j] -= h;
            let fd = (acq.value(&a) - acq.value(&b)) / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-5 * (1.0 + fd.abs()), "dim {j}: {fd} vs {}", g[j]);
        }
    }
}
