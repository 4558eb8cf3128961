//! Shared machinery of the policies over a finite set of candidate models (`kernel.candidates`, seed 004):
//! options, the initial design, conditioning every candidate's GP, pending-point fantasies, and UCB maximisation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::acquisition::{Acquisition, Ucb};
use crate::blocks::kernel_candidates::CandidateSet;
use crate::error::FieldError;
use crate::gp::Gp;
use crate::optim::{OptimConfig, Optimum, maximize, maximize_over};
use crate::policy::design::{design_candidate, design_index, initial_design_point};
use crate::policy::model::top_rows;
use crate::policy::plain::Excluding;
use crate::policy::{Candidate, Context, parse_options};
use crate::problem::Problem;
use crate::space::{Domain, Space};

/// Options of `he-gp-ucb`, `he-stableopt`, `mle-ucb`, `expected-ucb`, `a-gp-ucb` (`algorithm.options`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CandidateOptions {
    /// Points of the Sobol initial design before the models are used (default 3, as in the paper's App. J.1).
    pub initial_design: usize,
    /// Sobol raw samples of the acquisition optimiser (per candidate).
    pub raw_samples: usize,
    /// L-BFGS restarts of the acquisition optimiser (per candidate).
    pub restarts: usize,
    /// Stability radius ε of `he-stableopt`: half-width of the box of perturbations in encoded units.
    pub epsilon: Option<f64>,
}

impl Default for CandidateOptions {
    fn default() -> Self {
        Self { initial_design: 3, raw_samples: 512, restarts: 4, epsilon: None }
    }
}

impl CandidateOptions {
    /// Parses and checks the options for algorithm `name`.
    pub fn parse(options: Value, name: &str) -> Result<Self, Vec<FieldError>> {
        let o: Self = parse_options(options)?;
        let mut errors = Vec::new();
        if o.initial_design > 1000 {
            errors.push(FieldError::new("algorithm.options.initial_design", "must be at most 1000"));
        }
        if !(1..=65536).contains(&o.raw_samples) {
            errors.push(FieldError::new("algorithm.options.raw_samples", "must be between 1 and 65536"));
        }
        if o.restarts > 256 {
            errors.push(FieldError::new("algorithm.options.restarts", "must be at most 256"));
        }
        match (name == "he-stableopt", o.epsilon) {
            (true, Some(e)) if !(e.is_finite() && e > 0.0 && e < 0.5) => {
                errors.push(FieldError::new("algorithm.options.epsilon", "must be in (0, 0.5)"))
            }
            (false, Some(_)) => {
                errors.push(FieldError::new("algorithm.options.epsilon", "only for algorithm 'he-stableopt'"))
            }
            _ => {}
        }
        if errors.is_empty() { Ok(o) } else { Err(errors) }
    }

    pub(crate) fn optim_config(&self) -> OptimConfig {
        OptimConfig { raw_samples: self.raw_samples, restarts: self.restarts, ..OptimConfig::default() }
    }
}

/// The study's candidate set, or an error naming `kernel` when the study has none.
pub(crate) fn require_candidates(problem: &Problem, name: &str) -> Result<(), Vec<FieldError>> {
    if problem.kernel_candidates.is_none() {
        return Err(vec![FieldError::new(
            "kernel",
            format!("algorithm '{name}' needs the kernel.candidates block (a list of candidate models)"),
        )]);
    }
    Ok(())
}

pub(crate) fn candidates<'a>(ctx: &Context<'a>) -> crate::error::Result<&'a CandidateSet> {
    ctx.problem
        .kernel_candidates
        .as_deref()
        .ok_or_else(|| crate::error::Error::invalid("kernel", "the study has no kernel.candidates block"))
}

/// Initial-design candidates while fewer than `n_init` points exist (or there is no data), and the next design
/// index (for fallbacks).
pub(crate) fn design_phase(ctx: &Context<'_>, n_init: usize, count: usize) -> (Vec<Candidate>, u64) {
    let dspace = ctx.problem.decision_space();
    let mut index = design_index(ctx);
    let mut out = Vec::new();
    while out.len() < count && (index < n_init as u64 || ctx.data.n() == 0) {
        out.push(design_candidate(ctx, &initial_design_point(&dspace, index, ctx.study_seed), "initial_design"));
        index += 1;
    }
    (out, index)
}

/// Fills `out` up to `count` with design points (used when no model could be conditioned).
pub(crate) fn fallback(ctx: &Context<'_>, out: &mut Vec<Candidate>, mut index: u64, count: usize) {
    let dspace = ctx.problem.decision_space();
    while out.len() < count {
        out.push(design_candidate(ctx, &initial_design_point(&dspace, index, ctx.study_seed), "fallback"));
        index += 1;
    }
}

/// The BO iteration t of the next query: t = n + 1 for n observations (Algorithm 1 counts from D_0 = ∅).
pub(crate) fn iteration(ctx: &Context<'_>) -> usize {
    ctx.data.n() + 1
}

/// Every listed candidate's GP on the observed data (`None` where conditioning failed).
pub(crate) fn condition(ctx: &Context<'_>, set: &CandidateSet, which: &[usize]) -> Vec<(usize, Gp)> {
    let data = ctx.data.gp_data();
    which.iter().filter_map(|&u| set.models[u].condition(&data).ok().map(|gp| (u, gp))).collect()
}

/// Conditions `gp` on pending and failed points at its own posterior mean (kriging believer: σ shrinks there,
/// μ is unchanged), so parallel suggestions spread out.
pub(crate) fn fantasise(ctx: &Context<'_>, gp: &mut Gp) {
    let d = ctx.problem.space.dim();
    for p in ctx.pending.chunks_exact(d).chain(ctx.data.failed_x.chunks_exact(d)) {
        let (m, _) = gp.posterior(p);
        let _ = gp.condition(p, m, None);
    }
}

/// Pending points' decision coordinates (row-major), never proposed again.
pub(crate) fn taken_points(ctx: &Context<'_>) -> Vec<f64> {
    let d = ctx.problem.space.dim();
    let ddims = ctx.problem.space.dims_of_params(&ctx.problem.decision);
    ctx.pending.chunks_exact(d).flat_map(|p| ddims.iter().map(|&j| p[j]).collect::<Vec<_>>()).collect()
}

/// Largest finite domain that is enumerated instead of optimised.
pub(crate) const MAX_ENUMERATED: usize = 4096;

/// Every point of a space whose parameters are all integer or categorical (encoded, row-major), or `None` when a
/// parameter is continuous or the domain has more than [`MAX_ENUMERATED`] points.
pub(crate) fn finite_domain(space: &Space) -> Option<Vec<f64>> {
    let mut axes: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut size = 1usize;
    for (i, p) in space.params().iter().enumerate() {
        let values: Vec<Value> = match &p.domain {
            Domain::Int { low, high, .. } if high - low < MAX_ENUMERATED as i64 => {
                (*low..=*high).map(Value::from).collect()
            }
            Domain::Categorical { choices } => choices.iter().map(|c| Value::from(c.as_str())).collect(),
            _ => return None,
        };
        size = size.checked_mul(values.len()).filter(|s| *s <= MAX_ENUMERATED)?;
        axes.push(values.iter().map(|v| space.encode_param(i, v)).collect::<Result<_, _>>().ok()?);
    }
    let mut rows: Vec<Vec<f64>> = vec![Vec::new()];
    for axis in &axes {
        rows = rows.iter().flat_map(|r| axis.iter().map(move |a| [r.as_slice(), a].concat())).collect();
    }
    Some(rows.concat())
}

/// Maximises `acq` (over the full encoded space, which equals the decision space for these studies) with the
/// `taken` points excluded. A finite domain of at most [`MAX_ENUMERATED`] points is enumerated (the exact argmax,
/// as the authors' code does on finite domains); otherwise Sobol raw samples and L-BFGS restarts, started also
/// from the five best observations.
pub(crate) fn maximize_excluding(
    ctx: &Context<'_>,
    acq: &dyn Acquisition,
    taken: &[f64],
    options: &CandidateOptions,
    seed: u64,
) -> Optimum {
    let acq = Excluding { inner: acq, excluded: taken, radius: &[] };
    if let Some(points) = finite_domain(&ctx.problem.space) {
        return maximize_over(&acq, &points);
    }
    let starts: Vec<Vec<f64>> = top_rows(ctx, 5).into_iter().map(<[f64]>::to_vec).collect();
    maximize(&acq, &ctx.problem.space, &options.optim_config(), seed, &starts)
}

/// `μ + β σ` maximised for one GP.
pub(crate) fn maximize_ucb(
    ctx: &Context<'_>,
    gp: &Gp,
    beta: f64,
    taken: &[f64],
    options: &CandidateOptions,
    seed: u64,
) -> Optimum {
    maximize_excluding(ctx, &Ucb::with_multiplier(gp, beta), taken, options, seed)
}

/// Σ_u w_u (μ_u + β_u σ_u): the ExpectedUCB acquisition.
pub(crate) struct WeightedUcb<'a> {
    pub(crate) terms: Vec<(f64, Ucb<'a>)>,
    pub(crate) dim: usize,
}

impl Acquisition for WeightedUcb<'_> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.terms.iter().map(|(w, a)| w * a.value(x)).sum()
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut g = vec![0.0; grad.len()];
        let mut v = 0.0;
        for (w, a) in &self.terms {
            v += w * a.value_and_grad(x, &mut g);
            for (o, gi) in grad.iter_mut().zip(&g) {
                *o += w * gi;
            }
        }
        v
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; xs.len() / self.dim.max(1)];
        for (w, a) in &self.terms {
            for (o, v) in out.iter_mut().zip(a.values(xs)) {
                *o += w * v;
            }
        }
        out
    }
}

/// Posterior weights P(u | D) ∝ exp(log evidence) (uniform prior), computed stably.
pub(crate) fn posterior_weights(log_evidence: &[f64]) -> Vec<f64> {
    let m = log_evidence.iter().copied().filter(|v| v.is_finite()).fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return vec![1.0 / log_evidence.len().max(1) as f64; log_evidence.len()];
    }
    let e: Vec<f64> = log_evidence.iter().map(|v| if v.is_finite() { (v - m).exp() } else { 0.0 }).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}
