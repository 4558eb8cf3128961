//! UCB over contexts: `ucb(x, c) = μ(x, c) + √β σ(x, c)` at one decision x paired with a fixed set of contexts,
//! and an aggregation of those values into one acquisition of x (expectation, worst case over a total-variation
//! ball, minimum, worst case over an MMD ball).
//!
//! Every aggregation used by the context policies (seed 002: SBO-KDE, DRBO-KDE, StableOpt, DRBO-MMD) is, at a
//! given x, a weighted sum `Σ_i w_i ucb(x, c_i)` with weights that solve an inner problem over the contexts; by
//! Danskin's theorem its gradient in x is `Σ_i w_i ∇_x ucb(x, c_i)`. The UCB values and gradients at all contexts
//! come from one batched posterior call ([`Gp::posterior_batch_grad`]).

use super::Acquisition;
use crate::gp::Gp;

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
        Self { gp, sqrt_beta, ddims, cdims, contexts, base }
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

    /// UCB at each decision of `xs` (row-major) and every context: `points × k`, decision-major.
    pub fn values_many(&self, xs: &[f64]) -> Vec<f64> {
        let (mu, var) = self.gp.posterior_batch(&self.points(xs));
        mu.iter().zip(&var).map(|(m, v)| m + self.sqrt_beta * v.sqrt()).collect()
    }

    /// UCB at decision x and every context, and the gradients in x (`k × dim` row-major).
    pub fn values_and_grads(&self, x: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let b = self.gp.posterior_batch_grad(&self.points(x), &self.ddims);
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
        let (u, g) = self.ucb.values_and_grads(x);
        let (value, w) = self.aggregate.aggregate(&u);
        let q = self.dim();
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
