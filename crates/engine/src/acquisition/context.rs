//! UCB over contexts: `ucb(x, c) = μ(x, c) + √β σ(x, c)` at one decision x paired with a fixed set of contexts,
//! and an aggregation of those values into one acquisition of x (expectation, worst case over a total-variation
//! ball, minimum, worst case over an MMD ball).
//!
//! Every aggregation used by the context policies (seed 002: SBO-KDE, DRBO-KDE, StableOpt, DRBO-MMD) is, at a
//! given x, a weighted sum `Σ_i w_i ucb(x, c_i)` with weights that solve an inner problem over the contexts; by
//! Danskin's theorem its gradient in x is `Σ_i w_i ∇_x ucb(x, c_i)`.
//!
//! The UCB values and gradients at all contexts come from one batched posterior over the fixed contexts,
//! [`FixedSamples`] (built once per [`ContextUcb`]: the context and base coordinates are the fixed samples, the
//! decision the free coordinates; their part of the kernel's squared distances is precomputed, the triangular
//! solves take all contexts as right-hand sides). Kernels that do not split that way (periodic components) fall
//! back to [`Gp::posterior_batch`] / [`Gp::posterior_batch_grad`] at the composed points; both give the same
//! values up to floating-point rounding.

use super::Acquisition;
use crate::gp::{BatchPosterior, FixedSamples, Gp};

/// Smallest σ used, relative to the prior standard deviation (σ's gradient is undefined at 0).
const SIGMA_FLOOR: f64 = 1e-9;

/// How the per-context UCB values become one acquisition value: the weights `w` of `Σ_i w_i u_i`.
pub trait Aggregate: Send + Sync {
    /// Value and weights (length `u.len()`).
    fn aggregate(&self, u: &[f64]) -> (f64, Vec<f64>);
}

/// UCB of a GP at decision x (coordinates `ddims` of the GP input) paired with each of a fixed set of contexts
/// (coordinates `cdims`); other coordinates are taken from `base`.
#[derive(Debug, Clone)]
pub struct ContextUcb<'a> {
    gp: &'a Gp,
    sqrt_beta: f64,
    ddims: Vec<usize>,
    cdims: Vec<usize>,
    contexts: Vec<f64>,
    base: Vec<f64>,
    /// The posterior at `[x, context_s, base]` over all contexts, when the kernel splits (module docs).
    split: Option<FixedSamples<'a>>,
}

impl<'a> ContextUcb<'a> {
    /// `contexts`: `k × cdims.len()` row-major; `sqrt_beta` multiplies σ.
    pub fn new(
        gp: &'a Gp,
        sqrt_beta: f64,
        ddims: Vec<usize>,
        cdims: Vec<usize>,
        contexts: Vec<f64>,
        base: Vec<f64>,
    ) -> Self {
        let split = Self::split(gp, &ddims, &cdims, &contexts, &base);
        Self { gp, sqrt_beta, ddims, cdims, contexts, base, split }
    }

    /// The [`FixedSamples`] with free coordinates `ddims` and fixed ones `cdims` followed by the remaining
    /// coordinates, sample s = context s followed by the base values of the remaining coordinates.
    fn split(gp: &'a Gp, ddims: &[usize], cdims: &[usize], contexts: &[f64], base: &[f64]) -> Option<FixedSamples<'a>> {
        let dc = cdims.len();
        if dc == 0 || contexts.is_empty() || !contexts.len().is_multiple_of(dc) || base.len() != gp.d() {
            return None;
        }
        let rest: Vec<usize> = (0..base.len()).filter(|j| !ddims.contains(j) && !cdims.contains(j)).collect();
        let fixed: Vec<usize> = cdims.iter().chain(&rest).copied().collect();
        let samples: Vec<f64> =
            contexts.chunks_exact(dc).flat_map(|c| c.iter().copied().chain(rest.iter().map(|&j| base[j]))).collect();
        gp.fixed_samples(ddims, &fixed, &samples)
    }

    /// Number of contexts.
    pub fn n_contexts(&self) -> usize {
        self.contexts.len() / self.cdims.len().max(1)
    }

    /// Decision dimension.
    pub fn dim(&self) -> usize {
        self.ddims.len()
    }

    /// The GP inputs for decisions `xs` (row-major) × every context, decision-major.
    pub fn points(&self, xs: &[f64]) -> Vec<f64> {
        let (k, dx, dc) = (self.n_contexts(), self.ddims.len().max(1), self.cdims.len());
        let mut out = Vec::with_capacity(xs.len() / dx * k * self.base.len());
        for x in xs.chunks_exact(dx) {
            for s in 0..k {
                let start = out.len();
                out.extend_from_slice(&self.base);
                for (q, &j) in self.ddims.iter().enumerate() {
                    out[start + j] = x[q];
                }
                for (q, &j) in self.cdims.iter().enumerate() {
                    out[start + j] = self.contexts[s * dc + q];
                }
            }
        }
        out
    }

    /// UCB at decision x and every context.
    pub fn values(&self, x: &[f64]) -> Vec<f64> {
        self.values_many(x)
    }

    /// Posterior means and variances (raw units) at each decision of `xs` (row-major) and every context,
    /// decision-major.
    pub fn posterior_many(&self, xs: &[f64]) -> (Vec<f64>, Vec<f64>) {
        match &self.split {
            Some(split) => split.posterior_many(xs),
            None => self.gp.posterior_batch(&self.points(xs)),
        }
    }

    /// UCB at each decision of `xs` (row-major) and every context: `points × k`, decision-major.
    pub fn values_many(&self, xs: &[f64]) -> Vec<f64> {
        let (mu, var) = self.posterior_many(xs);
        self.ucb_values(&mu, &var)
    }

    /// UCB at decision x and every context, and the gradients in x (`k × dim` row-major).
    pub fn values_and_grads(&self, x: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let b = match &self.split {
            Some(split) => split.posterior_grad(x),
            None => self.gp.posterior_batch_grad(&self.points(x), &self.ddims),
        };
        self.ucb_from(b)
    }

    /// `aggregate(u)` of the UCB values u at decision x, and its gradient `Σ_i w_i ∇u_i` written into `grad`. With
    /// [`FixedSamples`], the gradients are computed only at the contexts of non-zero weight (a minimum needs one).
    pub fn aggregate_and_grad<G: Aggregate + ?Sized>(&self, x: &[f64], aggregate: &G, grad: &mut [f64]) -> f64 {
        let (value, w, g) = match &self.split {
            Some(split) => {
                let mut solved = None;
                let b = split.posterior_grad_selected(x, |mean, var| {
                    let u = self.ucb_values(mean, var);
                    let (value, w) = aggregate.aggregate(&u);
                    let selected = (0..w.len()).filter(|&i| w[i] != 0.0).collect();
                    solved = Some((value, w));
                    selected
                });
                let (value, w) = solved.expect("the selection ran");
                (value, w, self.ucb_from(b).1)
            }
            None => {
                let (u, g) = self.values_and_grads(x);
                let (value, w) = aggregate.aggregate(&u);
                (value, w, g)
            }
        };
        let q = self.ddims.len();
        grad.iter_mut().for_each(|v| *v = 0.0);
        for (i, wi) in w.iter().enumerate() {
            if *wi != 0.0 {
                for c in 0..q {
                    grad[c] += wi * g[i * q + c];
                }
            }
        }
        value
    }

    /// `μ + √β σ` of each posterior.
    fn ucb_values(&self, mean: &[f64], var: &[f64]) -> Vec<f64> {
        mean.iter().zip(var).map(|(m, v)| m + self.sqrt_beta * v.sqrt()).collect()
    }

    /// UCB values and gradients from the posteriors at the contexts.
    fn ucb_from(&self, b: BatchPosterior) -> (Vec<f64>, Vec<f64>) {
        let q = self.ddims.len();
        let floor = SIGMA_FLOOR * self.gp.prior_variance().sqrt();
        let mut grads = b.dmean;
        let values = b
            .mean
            .iter()
            .zip(&b.var)
            .enumerate()
            .map(|(p, (m, v))| {
                let sigma = v.sqrt();
                if sigma > floor {
                    for c in 0..q {
                        grads[p * q + c] += self.sqrt_beta * b.dvar[p * q + c] / (2.0 * sigma);
                    }
                }
                m + self.sqrt_beta * sigma
            })
            .collect();
        (values, grads)
    }
}

/// An acquisition of the decision x: the aggregate of the context UCB values.
pub struct ContextAcquisition<'a, G: Aggregate> {
    /// The per-context UCB.
    pub ucb: ContextUcb<'a>,
    /// The aggregation.
    pub aggregate: G,
}

impl<G: Aggregate> Acquisition for ContextAcquisition<'_, G> {
    fn dim(&self) -> usize {
        self.ucb.dim()
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.aggregate.aggregate(&self.ucb.values(x)).0
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        self.ucb.aggregate_and_grad(x, &self.aggregate, grad)
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let k = self.ucb.n_contexts().max(1);
        // Bounded blocks keep the cross-covariance matrix small.
        let per_block = (65_536 / k).max(1) * self.dim().max(1);
        xs.chunks(per_block)
            .flat_map(|block| {
                let u = self.ucb.values_many(block);
                u.chunks_exact(k).map(|c| self.aggregate.aggregate(c).0).collect::<Vec<_>>()
            })
            .collect()
    }
}

/// The sample mean of the first `m` values (SBO-KDE: SAA of `E_{p̂}[ucb]`).
#[derive(Debug, Clone, Copy)]
pub struct MeanOfFirst(pub usize);

impl Aggregate for MeanOfFirst {
    fn aggregate(&self, u: &[f64]) -> (f64, Vec<f64>) {
        let m = self.0.min(u.len()).max(1);
        let mut w = vec![0.0; u.len()];
        w[..m].iter_mut().for_each(|v| *v = 1.0 / m as f64);
        (u[..m].iter().sum::<f64>() / m as f64, w)
    }
}

/// The minimum of all values (StableOpt's inner min over a context set).
#[derive(Debug, Clone, Copy)]
pub struct Minimum;

impl Aggregate for Minimum {
    fn aggregate(&self, u: &[f64]) -> (f64, Vec<f64>) {
        let (i, v) = u.iter().enumerate().fold((0, f64::INFINITY), |b, (i, v)| if *v < b.1 { (i, *v) } else { b });
        let mut w = vec![0.0; u.len()];
        if let Some(wi) = w.get_mut(i) {
            *wi = 1.0;
        }
        (v, w)
    }
}

/// DRBO-KDE: the first `m` values are KDE samples, the rest a set over the box whose minimum approximates
/// `inf_c ucb(x, c)`; the worst case over the TV ball of radius `delta` ([`super::tv_dro`]).
#[derive(Debug, Clone, Copy)]
pub struct WorstCaseTv {
    /// Number of KDE samples (leading values).
    pub m: usize,
    /// Radius δ (`∫|q − p̂| ≤ δ`).
    pub delta: f64,
}

impl Aggregate for WorstCaseTv {
    fn aggregate(&self, u: &[f64]) -> (f64, Vec<f64>) {
        let m = self.m.min(u.len()).max(1);
        let (arg, box_min) = u[m..]
            .iter()
            .enumerate()
            .fold((None, f64::INFINITY), |b, (i, v)| if *v < b.1 { (Some(m + i), *v) } else { b });
        let r = super::tv_dro::worst_case_tv(&u[..m], box_min, self.delta);
        let mut w = r.weights;
        w.resize(u.len(), 0.0);
        // The infimum is the box minimum or a sample value, whichever is smaller.
        let at = match arg {
            Some(i) if box_min <= r.u_min => i,
            _ => (0..m).fold(0, |b, i| if u[i] < u[b] { i } else { b }),
        };
        w[at] += r.min_weight;
        (r.value, w)
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;
    use crate::gp::{Data, GpConfig, Hyperparameters};
    use crate::kernel::{Kernel, KernelFamily};

    /// A GP on 5 inputs with random data and hyperparameters.
    fn model(rng: &mut StdRng, family: KernelFamily, n: usize) -> Gp {
        let d = 5;
        let x: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
        let y: Vec<f64> = x.chunks_exact(d).map(|p| (4.0 * p[0]).sin() + p[1] * p[2] - p[3] + 0.5 * p[4]).collect();
        let mut config = GpConfig::default_for(d);
        config.kernel = Kernel::ard(family, d);
        let theta: Vec<f64> = (0..config.kernel.n_params()).map(|_| rng.random_range(-1.2..0.2)).collect();
        Gp::new(&Data::new(d, x, y), &config, Hyperparameters { theta, noise_variance: 1e-4, mean: 0.1 }).unwrap()
    }

    fn close(a: f64, b: f64, scale: f64) -> bool {
        (a - b).abs() <= 1e-10 * scale.max(a.abs()).max(b.abs())
    }

    /// Values and gradients through [`FixedSamples`] equal those from [`Gp::posterior_batch_grad`] and
    /// [`Gp::posterior_batch`] at the composed points (decisions at coordinates 3 and 0, contexts at 1 or 1 and 4,
    /// the other coordinates from `base`).
    #[test]
    fn fixed_sample_path_equals_the_batched_posterior_at_the_composed_points() {
        let mut rng = StdRng::seed_from_u64(17);
        for family in [KernelFamily::Rbf, KernelFamily::Matern52] {
            for cdims in [vec![1], vec![1, 4]] {
                let gp = model(&mut rng, family, 40);
                let ddims = vec![3, 0];
                let k = 37;
                let contexts: Vec<f64> = (0..k * cdims.len()).map(|_| rng.random::<f64>()).collect();
                let base: Vec<f64> = (0..5).map(|_| rng.random::<f64>()).collect();
                let fast = ContextUcb::new(&gp, 1.5, ddims.clone(), cdims.clone(), contexts, base);
                assert!(fast.split.is_some(), "{family:?}: the kernel splits");
                let mut slow = fast.clone();
                slow.split = None;
                let xs: Vec<f64> = (0..4 * 2).map(|_| rng.random::<f64>()).collect();
                let (vf, vs) = (fast.values_many(&xs), slow.values_many(&xs));
                assert_eq!(vf.len(), 4 * k);
                let (mu, var) = gp.posterior_batch(&fast.points(&xs));
                let scale = vs.iter().fold(1.0f64, |a, v| a.max(v.abs()));
                for (i, (a, b)) in vf.iter().zip(&vs).enumerate() {
                    assert!(close(*a, *b, scale), "{family:?} {cdims:?}: value {a} vs {b}");
                    assert!(close(*b, mu[i] + 1.5 * var[i].sqrt(), scale));
                }
                for x in xs.chunks_exact(2) {
                    let ((uf, gf), (us, gs)) = (fast.values_and_grads(x), slow.values_and_grads(x));
                    let reference = gp.posterior_batch_grad(&fast.points(x), &ddims);
                    let (ur, gr) = fast.ucb_from(reference);
                    assert_eq!((uf.len(), gf.len()), (k, 2 * k));
                    assert_eq!((&us, &gs), (&ur, &gr), "the fallback is the batched posterior");
                    for (a, b) in uf.iter().zip(&ur) {
                        assert!(close(*a, *b, scale), "{family:?} {cdims:?}: value {a} vs {b}");
                    }
                    let gscale = gr.iter().fold(1.0f64, |a, v| a.max(v.abs()));
                    for (a, b) in gf.iter().zip(&gr) {
                        assert!(close(*a, *b, gscale), "{family:?} {cdims:?}: gradient {a} vs {b}");
                    }
                    // And the same values as the value-only path.
                    let single = fast.values(x);
                    for (a, b) in uf.iter().zip(&single) {
                        assert!(close(*a, *b, scale));
                    }
                }
            }
        }
    }

    /// The aggregated value and gradient with gradients at the non-zero weights only equal the aggregation of all
    /// values and gradients from the composed points (minimum, TV worst case, mean; a prior mean-free GP and n = 0).
    #[test]
    fn selected_gradients_give_the_aggregate_gradient_of_all_contexts() {
        let mut rng = StdRng::seed_from_u64(23);
        for (family, n) in [(KernelFamily::Matern52, 30), (KernelFamily::Rbf, 25), (KernelFamily::Matern32, 0)] {
            let gp = model(&mut rng, family, n);
            let k = 60;
            let contexts: Vec<f64> = (0..k * 2).map(|_| rng.random::<f64>()).collect();
            let fast = ContextUcb::new(&gp, 1.5, vec![3, 0], vec![1, 4], contexts, vec![0.3; 5]);
            assert!(fast.split.is_some());
            let mut slow = fast.clone();
            slow.split = None;
            let aggregates: [Box<dyn Aggregate>; 4] = [
                Box::new(Minimum),
                Box::new(WorstCaseTv { m: 40, delta: 0.37 }),
                Box::new(MeanOfFirst(k)),
                Box::new(MeanOfFirst(7)),
            ];
            for aggregate in &aggregates {
                for _ in 0..3 {
                    let x = [rng.random::<f64>(), rng.random::<f64>()];
                    let (mut gf, mut gs) = ([0.0; 2], [0.0; 2]);
                    let vf = fast.aggregate_and_grad(&x, aggregate.as_ref(), &mut gf);
                    let vs = slow.aggregate_and_grad(&x, aggregate.as_ref(), &mut gs);
                    let (u, g) = slow.values_and_grads(&x);
                    let (vr, w) = aggregate.aggregate(&u);
                    let gr: Vec<f64> =
                        (0..2).map(|c| w.iter().enumerate().map(|(i, wi)| wi * g[i * 2 + c]).sum()).collect();
                    assert_eq!(vs, vr);
                    assert!(close(vf, vr, 1.0), "{family:?} n={n}: value {vf} vs {vr}");
                    let scale = gr.iter().fold(1.0f64, |a, v| a.max(v.abs()));
                    for c in 0..2 {
                        assert!(close(gs[c], gr[c], scale));
                        assert!(close(gf[c], gr[c], scale), "{family:?} n={n}: gradient {} vs {}", gf[c], gr[c]);
                    }
                }
            }
        }
    }

    #[test]
    fn periodic_kernels_fall_back_to_the_composed_points() {
        let mut rng = StdRng::seed_from_u64(4);
        let gp = model(&mut rng, KernelFamily::Periodic, 20);
        let contexts: Vec<f64> = (0..9).map(|_| rng.random::<f64>()).collect();
        let ucb = ContextUcb::new(&gp, 1.5, vec![0, 2], vec![1], contexts, vec![0.5; 5]);
        assert!(ucb.split.is_none());
        let x = [0.3, 0.8];
        let (u, _) = ucb.values_and_grads(&x);
        let (mu, var) = gp.posterior_batch(&ucb.points(&x));
        for (i, v) in u.iter().enumerate() {
            assert!(close(*v, mu[i] + 1.5 * var[i].sqrt(), 1.0));
        }
    }
}
