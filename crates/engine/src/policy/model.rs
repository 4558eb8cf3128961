//! The standard GP surrogate shared by the GP policies: default model configuration, the refit schedule with
//! warm starts, and default `recommend`/`predict`.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{Context, PolicyState, Recommendation};
use crate::acquisition::{Acquisition, Ucb};
use crate::error::Result;
use crate::gp::{self, Gp, GpConfig, Hyperparameters};
use crate::kernel::{Kernel, KernelFamily};
use crate::optim::{OptimConfig, maximize};

/// Model options common to the GP policies (part of `algorithm.options`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelOptions {
    /// Kernel family (ARD over every encoded dimension): `matern52` (default), `matern32`, `matern12`, `rbf`.
    pub kernel: KernelFamily,
    /// Random restarts of the hyperparameter fit beyond the warm and default starts.
    pub fit_restarts: usize,
    /// Refit hyperparameters when this many observations arrived since the last fit; `None` uses the default
    /// schedule (every observation up to 200, then every n/100).
    pub refit_every: Option<usize>,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self { kernel: KernelFamily::Matern52, fit_restarts: 1, refit_every: None }
    }
}

/// Model state kept between calls: the last hyperparameters and the data size they were fitted on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelState {
    /// Last fitted hyperparameters.
    pub hypers: Option<Hyperparameters>,
    /// Number of observations at that fit.
    pub fitted_at: usize,
}

/// A GP ready for use, and how it was obtained.
#[derive(Debug, Clone)]
pub struct FittedModel {
    /// The model.
    pub gp: Gp,
    /// Whether hyperparameters were refitted now.
    pub refit: bool,
    /// Milliseconds spent.
    pub millis: f64,
}

/// Whether the schedule asks for a refit at `n` observations after a fit at `fitted_at`.
fn refit_due(n: usize, fitted_at: usize, every: Option<usize>) -> bool {
    let every = every.unwrap_or(if n <= 200 { 1 } else { n / 100 }).max(1);
    n < fitted_at || n - fitted_at >= every
}

/// GP configuration of the standard model over `d` encoded dimensions.
pub fn model_config(d: usize, options: &ModelOptions) -> GpConfig {
    let mut config = GpConfig::default_for(d);
    config.kernel = Kernel::ard(options.kernel, d);
    config.restarts = options.fit_restarts;
    // Zero mean on standardised outputs: unexplored regions revert to the average observation. A learned
    // constant drifts below the data on needle-like objectives (Ackley) and makes EI purely exploitative.
    config.mean = gp::MeanModel::Zero;
    config
}

/// Above this many observations a warm-started refit runs from the warm start alone (the likelihood surface
/// changes little per observation; each extra start costs O(n³) per iteration).
const MULTISTART_MAX_N: usize = 300;

/// The standard GP on the full dataset: refits (warm-started) when the schedule says so, otherwise reuses the
/// stored hyperparameters. `None` when there are no observations.
pub fn fit_model(ctx: &Context<'_>, state: &mut ModelState, options: &ModelOptions) -> Result<Option<FittedModel>> {
    let n = ctx.data.n();
    if n == 0 {
        return Ok(None);
    }
    let started = Instant::now();
    let data = ctx.data.gp_data();
    let config = model_config(data.d, options);
    if let Some(h) = state.hypers.clone().filter(|h| h.theta.len() == config.kernel.n_params())
        && !refit_due(n, state.fitted_at, options.refit_every)
        && let Ok(gp) = Gp::new(&data, &config, h)
    {
        return Ok(Some(FittedModel { gp, refit: false, millis: started.elapsed().as_secs_f64() * 1e3 }));
    }
    let mut config = config;
    if n > MULTISTART_MAX_N && state.hypers.is_some() {
        config.restarts = 0;
        config.default_start = false;
    }
    let (gp, _) = gp::fit(&data, &config, state.hypers.as_ref(), ctx.seed)?;
    state.hypers = Some(gp.hyperparameters().clone());
    state.fitted_at = n;
    Ok(Some(FittedModel { gp, refit: true, millis: started.elapsed().as_secs_f64() * 1e3 }))
}

/// The model state stored under `model` in a policy state object.
pub(crate) fn stored_model_state(state: &PolicyState) -> ModelState {
    state.0.get("model").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
}

/// Default `predict`: the standard GP with the stored hyperparameters (fitted if none).
pub(crate) fn predict_default(ctx: &Context<'_>, state: &PolicyState, xs: &[f64]) -> Result<Option<Vec<(f64, f64)>>> {
    let mut ms = stored_model_state(state);
    ms.fitted_at = ctx.data.n().max(ms.fitted_at);
    let Some(m) = fit_model(ctx, &mut ms, &ModelOptions::default())? else { return Ok(None) };
    let (mu, var) = m.gp.posterior_batch(xs);
    Ok(Some(mu.into_iter().zip(var).map(|(m, v)| (m, v.sqrt())).collect()))
}

/// Default `recommend`: the maximiser of the posterior mean over the decision space (contexts at their observed
/// mean), started from the best observations.
pub(crate) fn recommend_by_mean(ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
    let mut ms = stored_model_state(state);
    ms.fitted_at = ctx.data.n().max(ms.fitted_at);
    let Some(m) = fit_model(ctx, &mut ms, &ModelOptions::default())? else { return Ok(None) };
    let gp = &m.gp;
    let problem = ctx.problem;
    let dspace = problem.decision_space();
    let ddims = problem.space.dims_of_params(&problem.decision);
    let mut base = problem.space.centre();
    let cdims = problem.space.dims_of_params(&problem.contexts);
    for &j in &cdims {
        base[j] = (0..ctx.data.n()).map(|i| ctx.data.row(i)[j]).sum::<f64>() / ctx.data.n() as f64;
    }
    let mean = MeanOnDecision { gp, base: &base, ddims: &ddims };
    let starts = top_rows(ctx, 5).into_iter().map(|r| ddims.iter().map(|&j| r[j]).collect()).collect::<Vec<Vec<f64>>>();
    let opt =
        maximize(&mean, &dspace, &OptimConfig { raw_samples: 256, restarts: 4, max_iter: 100 }, ctx.seed, &starts);
    let mut x = base.clone();
    for (q, &j) in ddims.iter().enumerate() {
        x[j] = opt.x[q];
    }
    let (mu, var) = gp.posterior(&x);
    Ok(Some(Recommendation { x, params: None, predicted: (mu, var.sqrt()), extra: Default::default() }))
}

/// The `k` observed rows with the largest values.
pub(crate) fn top_rows<'a>(ctx: &'a Context<'_>, k: usize) -> Vec<&'a [f64]> {
    let mut idx: Vec<usize> = (0..ctx.data.n()).collect();
    idx.sort_by(|&a, &b| ctx.data.y[b].total_cmp(&ctx.data.y[a]));
    idx.into_iter().take(k).map(|i| ctx.data.row(i)).collect()
}

/// Posterior mean as a function of the decision coordinates, other coordinates fixed at `base`.
struct MeanOnDecision<'a> {
    gp: &'a Gp,
    base: &'a [f64],
    ddims: &'a [usize],
}

impl MeanOnDecision<'_> {
    fn full(&self, x: &[f64]) -> Vec<f64> {
        let mut f = self.base.to_vec();
        for (q, &j) in self.ddims.iter().enumerate() {
            f[j] = x[q];
        }
        f
    }
}

impl Acquisition for MeanOnDecision<'_> {
    fn dim(&self) -> usize {
        self.ddims.len()
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.gp.posterior(&self.full(x)).0
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut g = vec![0.0; self.gp.d()];
        let v = Ucb::with_multiplier(self.gp, 0.0).value_and_grad(&self.full(x), &mut g);
        for (q, &j) in self.ddims.iter().enumerate() {
            grad[q] = g[j];
        }
        v
    }
}
