//! The standard GP surrogate shared by the GP policies: default model configuration, the refit schedule with
//! warm starts, and default `recommend`/`predict`.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::design::{design_candidate, design_index, initial_design_point};
use super::replicates::{self, best_held_out, groups, model_values, observed_values};
use super::{Candidate, Context, PolicyState, Recommendation};
use crate::acquisition::{Acquisition, Ucb};
use crate::error::Result;
use crate::gp::{self, Gp, GpConfig, Hyperparameters};
use crate::kernel::{Kernel, KernelFamily};
use crate::optim::maximize_near;

/// Model options common to the GP policies (part of `algorithm.options`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelOptions {
    /// Kernel family (ARD over every encoded dimension): `matern52` (default), `matern32`, `matern12`, `rbf`, `periodic`.
    pub kernel: KernelFamily,
    /// Random restarts of the hyperparameter fit beyond the warm and default starts.
    pub fit_restarts: usize,
    /// Refit hyperparameters when this many observations arrived since the last fit; `None` uses the default
    /// schedule (every observation up to 200, then every n/100).
    pub refit_every: Option<usize>,
    /// Known hyperparameters instead of fitting (a GP prior given by the experimenter, as in TRUVAR's synthetic
    /// experiments); the model then exists before the first observation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<FixedHyperparameters>,
    /// Output warping ([`gp::OutputWarp`]): `auto` warps the values when a Yeo–Johnson transform explains them
    /// significantly better, `none` never does. Absent: the family's default (`auto` for the plain GP policies,
    /// `none` for the others, whose papers model the raw values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_warping: Option<OutputWarping>,
}

/// Whether the standard model warps the observed values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputWarping {
    /// A Yeo–Johnson warp where the likelihood-ratio test asks for one.
    Auto,
    /// The raw values.
    None,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self { kernel: KernelFamily::Matern52, fit_restarts: 1, refit_every: None, fixed: None, output_warping: None }
    }
}

impl ModelOptions {
    /// Checks the surrogate options of a study with `encoded_dim` encoded dimensions (every family that uses the
    /// standard model calls this); errors are named `algorithm.options.*`.
    pub fn validate(&self, encoded_dim: usize) -> Vec<crate::error::FieldError> {
        let mut errors = Vec::new();
        if self.fit_restarts > 64 {
            errors.push(crate::error::FieldError::new("algorithm.options.fit_restarts", "must be between 0 and 64"));
        }
        if self.refit_every == Some(0) {
            errors.push(crate::error::FieldError::new("algorithm.options.refit_every", "must be at least 1"));
        }
        if let Some(fixed) = &self.fixed {
            errors.extend(fixed.validate());
            let n = fixed.lengthscales.len();
            if n != 1 && n != encoded_dim {
                errors.push(crate::error::FieldError::new(
                    "algorithm.options.fixed.lengthscales",
                    format!("{n} values for {encoded_dim} encoded dimensions; give 1 or {encoded_dim}"),
                ));
            }
        }
        errors
    }
}

/// Known GP hyperparameters (`algorithm.options.fixed`), on the encoded unit cube.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedHyperparameters {
    /// One lengthscale for every encoded dimension, or one per dimension.
    pub lengthscales: Vec<f64>,
    /// Prior variance k(x, x) (in the objective's units squared unless `standardize`).
    #[serde(default = "one")]
    pub outputscale: f64,
    /// Homoscedastic noise variance (known per-observation noise is added to it).
    #[serde(default)]
    pub noise_variance: f64,
    /// Standardise outputs first (default false: the prior is on the raw objective).
    #[serde(default)]
    pub standardize: bool,
}

fn one() -> f64 {
    1.0
}

impl FixedHyperparameters {
    /// Checks the values; errors are named `algorithm.options.fixed.*`.
    pub fn validate(&self) -> Vec<crate::error::FieldError> {
        let mut errors = Vec::new();
        let field = |f: &str| format!("algorithm.options.fixed.{f}");
        if self.lengthscales.is_empty() || self.lengthscales.iter().any(|l| !(l.is_finite() && *l > 0.0)) {
            errors.push(crate::error::FieldError::new(field("lengthscales"), "give one or more finite numbers > 0"));
        }
        if !(self.outputscale.is_finite() && self.outputscale > 0.0) {
            errors.push(crate::error::FieldError::new(field("outputscale"), "must be a finite number > 0"));
        }
        if !(self.noise_variance.is_finite() && self.noise_variance >= 0.0) {
            errors.push(crate::error::FieldError::new(field("noise_variance"), "must be a finite number ≥ 0"));
        }
        errors
    }

    /// The GP with these hyperparameters conditioned on `data` (any size, including none).
    pub fn gp(&self, data: &gp::Data, family: KernelFamily) -> Result<Gp> {
        let d = data.d;
        let mut config = GpConfig::default_for(d);
        config.kernel = Kernel::ard(family, d);
        config.mean = gp::MeanModel::Zero;
        config.noise = gp::NoiseModel::Fixed(self.noise_variance);
        config.standardize = self.standardize;
        let ls: Vec<f64> = match self.lengthscales.len() {
            1 => vec![self.lengthscales[0]; d],
            n if n == d => self.lengthscales.clone(),
            n => {
                return Err(crate::error::Error::invalid(
                    "algorithm.options.fixed.lengthscales",
                    format!("{n} values for {d} encoded dimensions; give 1 or {d}"),
                ));
            }
        };
        let mut theta: Vec<f64> = ls.iter().map(|l| l.ln()).collect();
        theta.push(self.outputscale.ln());
        Gp::new(data, &config, Hyperparameters { theta, noise_variance: self.noise_variance, mean: 0.0 })
    }
}

/// Model state kept between calls: the last hyperparameters and the data size they were fitted on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelState {
    /// Last fitted hyperparameters.
    pub hypers: Option<Hyperparameters>,
    /// Number of observations at that fit.
    pub fitted_at: usize,
    /// Whether that fit chose the warped model over the raw one ([`choose_warp`]); absent in states stored before
    /// the choice existed, which then warp whenever the warp's own test asks for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warped: Option<bool>,
    /// Number of observations at the last warp choice ([`warp_choice_due`]); 0 in states stored before the
    /// schedule existed, which then choose at their next refit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warp_chosen_at: usize,
    /// Whether the last refit chose the nugget model, replicate groups entered as their means
    /// ([`choose_nugget_model`]); absent when it had no replicates to choose with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collapsed: Option<bool>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ModelState {
    /// Counts the stored fit as current at `n` observations, so that a read-only call (`recommend`, `predict`)
    /// uses the stored hyperparameters instead of refitting (it still fits when none are stored).
    pub fn hold_fit(&mut self, n: usize) {
        self.fitted_at = n.max(self.fitted_at);
    }
}

/// Posterior mean and standard deviation of `gp` at the rows of `xs` (the model's own units).
pub(crate) fn posterior_at(gp: &Gp, xs: &[f64]) -> Vec<(f64, f64)> {
    let (mu, var) = gp.posterior_batch(xs);
    mu.into_iter().zip(var).map(|(m, v)| (m, v.max(0.0).sqrt())).collect()
}

/// State of a policy whose only state is its model (`gp_bo`, `context_bo`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ModelPolicyState {
    model: ModelState,
}

/// The suggest skeleton of the model-based policies: the Sobol initial design for the first `n_init` points, then
/// `model_step(fitted, remaining)` on the fitted standard GP. A model that cannot be fitted must not stop the study:
/// the design sequence continues instead (phase `fallback`).
pub(crate) fn design_then_model(
    ctx: &Context<'_>,
    state: &mut PolicyState,
    count: usize,
    n_init: u64,
    options: &ModelOptions,
    model_step: impl FnOnce(FittedModel, usize) -> Result<Vec<Candidate>>,
) -> Result<Vec<Candidate>> {
    design_then(ctx, count, n_init, |remaining| {
        let mut st: ModelPolicyState = state.get();
        let Ok(Some(fitted)) = fit_model(ctx, &mut st.model, options) else { return Ok(None) };
        state.set(&st);
        model_step(fitted, remaining).map(Some)
    })
}

/// The suggest skeleton without the standard model: the Sobol initial design for the first `n_init` points, then
/// `model_step(remaining)` for the others; where it answers `None` (no model could be fitted) the design sequence
/// continues instead (phase `fallback`).
pub(crate) fn design_then(
    ctx: &Context<'_>,
    count: usize,
    n_init: u64,
    model_step: impl FnOnce(usize) -> Result<Option<Vec<Candidate>>>,
) -> Result<Vec<Candidate>> {
    let dspace = ctx.problem.decision_space();
    let mut out = Vec::with_capacity(count);
    let mut index = design_index(ctx);
    while out.len() < count && (index < n_init || ctx.data.n() == 0) {
        out.push(design_candidate(ctx, &initial_design_point(&dspace, index, ctx.study_seed), "initial_design"));
        index += 1;
    }
    if out.len() == count {
        return Ok(out);
    }
    match model_step(count - out.len())? {
        Some(model) => out.extend(model),
        None => {
            while out.len() < count {
                out.push(design_candidate(ctx, &initial_design_point(&dspace, index, ctx.study_seed), "fallback"));
                index += 1;
            }
        }
    }
    Ok(out)
}

/// A GP ready for use, and how it was obtained.
#[derive(Debug, Clone)]
pub struct FittedModel {
    /// The model (of the warped values when `warp` is set).
    pub gp: Gp,
    /// Whether hyperparameters were refitted now.
    pub refit: bool,
    /// Milliseconds spent.
    pub millis: f64,
    /// The output warp the model's values went through, if any.
    pub warp: Option<gp::OutputWarp>,
    /// With the nugget model ([`choose_nugget_model`]), the replicates' pooled variance (model units): the GP's
    /// learned noise is then the nugget alone, and an observation's noise is the two together.
    pub measurement: Option<f64>,
}

impl FittedModel {
    /// A posterior `(mean, sd)` of the model in the objective's (maximised) units.
    pub fn raw(&self, mean: f64, sd: f64) -> (f64, f64) {
        match &self.warp {
            Some(w) => w.unwarp(mean, sd),
            None => (mean, sd),
        }
    }
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
/// stored hyperparameters and the stored choices of output warp ([`choose_warp`]) and noise model
/// ([`choose_nugget_model`]). `None` when there are no observations.
pub fn fit_model(ctx: &Context<'_>, state: &mut ModelState, options: &ModelOptions) -> Result<Option<FittedModel>> {
    let n = ctx.data.n();
    let started = Instant::now();
    if let Some(fixed) = &options.fixed {
        let gp = fixed.gp(&ctx.data.gp_data(), options.kernel)?;
        return Ok(Some(FittedModel {
            gp,
            refit: false,
            millis: started.elapsed().as_secs_f64() * 1e3,
            warp: None,
            measurement: None,
        }));
    }
    if n == 0 {
        return Ok(None);
    }
    let raw = ctx.data.gp_data();
    let proposed = match options.output_warping {
        Some(OutputWarping::Auto) => gp::OutputWarp::fit(&raw.y),
        _ => None,
    };
    let warped_data = |w: &gp::OutputWarp| {
        let mut data = raw.clone();
        w.warp_data(&mut data);
        data
    };
    let config = model_config(raw.d, options);
    if let Some(h) = state.hypers.clone().filter(|h| h.theta.len() == config.kernel.n_params())
        && !refit_due(n, state.fitted_at, options.refit_every)
    {
        let warp = proposed.filter(|_| state.warped.unwrap_or(true));
        let warped = warp.as_ref().map(warped_data);
        let data = warped.as_ref().unwrap_or(&raw);
        let collapsed = state.collapsed.unwrap_or(false).then(|| replicates::collapse(data)).flatten();
        let fitted = Gp::new(collapsed.as_ref().map_or(data, |c| &c.data), &config, h);
        if let Ok(gp) = fitted {
            let millis = started.elapsed().as_secs_f64() * 1e3;
            let measurement = collapsed.map(|c| c.measurement);
            return Ok(Some(FittedModel { gp, refit: false, millis, warp, measurement }));
        }
    }
    let mut config = config;
    if n > MULTISTART_MAX_N && state.hypers.is_some() {
        config.restarts = 0;
        config.default_start = false;
    }
    let choose = state.warped.is_none() || warp_choice_due(n, state.warp_chosen_at);
    let (gp, warp) = match proposed {
        Some(w) if choose => {
            state.warp_chosen_at = n;
            choose_warp(&raw, &warped_data(&w), w, &config, state.hypers.as_ref(), state.warped, ctx.seed)?
        }
        Some(w) if state.warped == Some(true) => {
            (gp::fit(&warped_data(&w), &config, state.hypers.as_ref(), ctx.seed)?.0, Some(w))
        }
        _ => (gp::fit(&raw, &config, state.hypers.as_ref(), ctx.seed)?.0, None),
    };
    let warped = warp.as_ref().map(warped_data);
    let collapsed = replicates::collapse(warped.as_ref().unwrap_or(&raw));
    let has_groups = collapsed.is_some();
    let (gp, measurement) = match collapsed {
        Some(c) => choose_nugget_model(gp, c, &config, ctx.seed),
        None => (gp, None),
    };
    state.collapsed = has_groups.then_some(measurement.is_some());
    state.hypers = Some(gp.hyperparameters().clone());
    state.fitted_at = n;
    state.warped = proposed.map(|_| warp.is_some());
    Ok(Some(FittedModel { gp, refit: true, millis: started.elapsed().as_secs_f64() * 1e3, warp, measurement }))
}

/// A GP's log marginal likelihood in the units of its data (taken back through its output standardisation).
fn evidence(gp: &Gp) -> f64 {
    gp.log_marginal_likelihood() - gp.n() as f64 * gp.standardizer().scale.ln()
}

/// The fitted homoscedastic model `plain`, or the nugget model fitted to `collapsed` (the same data with each
/// replicate group entered once) if it explains every observation better; with the nugget model also the
/// replicates' pooled variance s².
///
/// The homoscedastic model gives every observation one noise variance σ²_n. With replicates that variance is pulled
/// towards their spread (the measurement noise), so where the function varies below the data's resolution (a
/// nugget, [`super::replicates`]) the model chases that variation as signal: on `bench robust`'s Schaffer F7 at
/// 10 % noise it recommended worse points than with no replicates at all (`docs/bench/robust.md`, "The nugget
/// model"). The nugget model `y = g + s + e` (Cressie 1993, §3.2.1) enters each replicate group once, as its mean
/// with the known variance s²/n ([`replicates::collapse`]), so its learned noise is the nugget τ² alone. The two are
/// compared by the log likelihood of all observations: the nugget model's is its GP's evidence for the group means
/// plus the groups' within-group term. It is fitted from the homoscedastic fit's optimum alone (one quasi-Newton
/// run), so a refit with replicates costs one start more.
fn choose_nugget_model(plain: Gp, collapsed: replicates::Collapsed, config: &GpConfig, seed: u64) -> (Gp, Option<f64>) {
    let single = GpConfig { restarts: 0, default_start: false, ..config.clone() };
    match gp::fit(&collapsed.data, &single, Some(plain.hyperparameters()), seed) {
        Ok((nugget, _)) if evidence(&nugget) + collapsed.within > evidence(&plain) => {
            (nugget, Some(collapsed.measurement))
        }
        _ => (plain, None),
    }
}

/// Whether a refit at `n` observations chooses between the raw and the warped model again ([`choose_warp`]) after
/// a choice at `chosen_at`: at every refit up to 19 observations, then whenever a tenth more arrived since. Between
/// choices a refit fits the chosen model alone. One observation rarely turns the choice, and its second fit is
/// about a quarter of a refit's cost (at d = 12, n = 100: 1065 likelihood evaluations against 753 without it;
/// `docs/bench/robust.md`, "Suggest latency").
fn warp_choice_due(n: usize, chosen_at: usize) -> bool {
    n < chosen_at || n - chosen_at >= (n / 10).max(1)
}

/// The raw or the warped model, whichever has the larger evidence for the *raw* values: the warped GP's log
/// marginal likelihood plus the log-Jacobian `Σ ln ψ'(yᵢ)` against the raw GP's (Snelson et al. 2004, "Warped
/// Gaussian processes"), both taken back through their output standardisation (`− n ln scale`). The warp's own test
/// ([`gp::OutputWarp::fit`]) looks at the values alone; this one also asks whether the GP explains them better
/// warped (a quadratic bowl with a few large values is smooth as it is and rugged once its tail is compressed).
///
/// Cost: the model the previous refit chose (`warped_before`; the warped one at the first choice) gets the full
/// multi-start fit; the other is fitted from that fit's optimum alone (one quasi-Newton run, no other starts), so a
/// refit costs about one start more than without the choice, not twice as much.
fn choose_warp(
    raw: &gp::Data,
    warped: &gp::Data,
    warp: gp::OutputWarp,
    config: &GpConfig,
    warm: Option<&gp::Hyperparameters>,
    warped_before: Option<bool>,
    seed: u64,
) -> Result<(Gp, Option<gp::OutputWarp>)> {
    let jacobian: f64 = raw.y.iter().map(|&y| warp.derivative(y).ln()).sum();
    let first_warped = warped_before.unwrap_or(true);
    let (first_data, second_data) = if first_warped { (warped, raw) } else { (raw, warped) };
    let (first, _) = gp::fit(first_data, config, warm, seed)?;
    let single = GpConfig { restarts: 0, default_start: false, ..config.clone() };
    let Ok((second, _)) = gp::fit(second_data, &single, Some(first.hyperparameters()), seed) else {
        return Ok((first, first_warped.then_some(warp)));
    };
    let (with_warp, plain) = if first_warped { (first, second) } else { (second, first) };
    if evidence(&with_warp) + jacobian > evidence(&plain) { Ok((with_warp, Some(warp))) } else { Ok((plain, None)) }
}

/// The model state stored under `model` in a policy state object.
pub(crate) fn stored_model_state(state: &PolicyState) -> ModelState {
    state.0.get("model").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
}

/// Default `predict`: the standard GP of `options` with the stored hyperparameters (fitted if none).
pub(crate) fn predict_default(
    ctx: &Context<'_>,
    state: &PolicyState,
    xs: &[f64],
    options: &ModelOptions,
) -> Result<Option<Vec<(f64, f64)>>> {
    let mut ms = stored_model_state(state);
    ms.hold_fit(ctx.data.n());
    let Some(m) = fit_model(ctx, &mut ms, options)? else { return Ok(None) };
    let (mu, var) = m.gp.posterior_batch(xs);
    Ok(Some(mu.into_iter().zip(var).map(|(mean, v)| m.raw(mean, v.sqrt())).collect()))
}

/// The posterior `(mean, sd)` of every metric of an outcome study at `xs`, each from the standard model of `options`
/// on that metric's data ([`crate::data::Dataset::metric`]) with its stored state `states[k]` (fitted anew where
/// there is none); `None` before there is a model.
pub(crate) fn predict_metrics(
    ctx: &Context<'_>,
    states: &[ModelState],
    xs: &[f64],
    options: &ModelOptions,
) -> Result<Option<super::MetricPosteriors>> {
    let n_metrics = ctx.problem.outcomes.n_metrics();
    let mut rows = vec![Vec::with_capacity(n_metrics); xs.len() / ctx.space().dim().max(1)];
    for k in 0..n_metrics {
        let data = ctx.data.metric(k);
        let mut state = states.get(k).cloned().unwrap_or_default();
        state.hold_fit(data.n());
        let Some(m) = fit_model(&Context { data: &data, ..*ctx }, &mut state, options)? else { return Ok(None) };
        let (mu, var) = m.gp.posterior_batch(xs);
        for (row, (mean, v)) in rows.iter_mut().zip(mu.into_iter().zip(var)) {
            row.push(m.raw(mean, v.max(0.0).sqrt()));
        }
    }
    Ok(Some(rows))
}

/// Default `recommend`: the point of largest posterior mean (contexts at their observed mean; the standard GP of
/// `options`) among the [`RECOMMEND_STARTS`] observed points of largest mean, each polished by a local ascent of the
/// mean confined to a box of half-width [`RECOMMEND_RADIUS`] · min(ℓ_j, [`LENGTHSCALE_CAP`]) around it.
/// With a `candidates` block, the candidate of largest mean.
///
/// Not the mean's maximiser over the whole space: a stationary GP smooths a sharp or rippled optimum away and its
/// mean ascends, confidently, along long-lengthscale directions to points no observation supports (on `bench robust`
/// at 1 % noise, Ackley-5's median regret was 12.3 that way against 3.5 for the best observation). Observed points
/// are where the model is checked by data, as in BoTorch's and Ax's in-sample recommendation; the small polish keeps
/// the model's averaging of noisy neighbours, which the bare in-sample choice loses at 10 % noise (the ablation in
/// `docs/bench/robust.md`). Where replicates or declared noise show part of the model's noise to be structure, an
/// observed point whose value estimate with that part given back beats the polished point is recommended instead,
/// and so is a challenger whose re-runs' mean, less half a standard error, beats it ([`super::replicates`]).
pub(crate) fn recommend_by_mean(
    ctx: &Context<'_>,
    state: &PolicyState,
    options: &ModelOptions,
) -> Result<Option<Recommendation>> {
    let mut ms = stored_model_state(state);
    ms.hold_fit(ctx.data.n());
    let Some(m) = fit_model(ctx, &mut ms, options)? else { return Ok(None) };
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
    let opt = match &problem.measurement.candidates {
        // A finite domain: the candidate with the largest posterior mean.
        Some(set) => {
            let rows: Vec<f64> = set.x.chunks_exact(set.d.max(1)).flat_map(|r| ddims.iter().map(|&j| r[j])).collect();
            crate::optim::maximize_over(&mean, &rows)
        }
        // The observed points of largest posterior mean, each polished within a small box (see the doc comment).
        None => {
            let mut observed: Vec<(f64, Vec<f64>)> = (0..ctx.data.n())
                .map(|i| {
                    let r: Vec<f64> = ddims.iter().map(|&j| ctx.data.row(i)[j]).collect();
                    (mean.value(&r), r)
                })
                .collect();
            observed.sort_by(|a, b| b.0.total_cmp(&a.0));
            let starts: Vec<Vec<f64>> = observed.into_iter().take(RECOMMEND_STARTS).map(|o| o.1).collect();
            let lengthscales = gp.kernel().lengthscales(&gp.hyperparameters().theta);
            let half_width: Vec<f64> =
                ddims.iter().map(|&j| RECOMMEND_RADIUS * lengthscales[j].min(LENGTHSCALE_CAP)).collect();
            crate::optim::in_polytope(problem.polytope.as_deref(), &mean, |acq| {
                maximize_near(acq, &dspace, &starts, &half_width, 100)
            })
        }
    };
    // An observed point whose value replicates or declared noise show to be partly structure the model smooths
    // away, or a challenger whose re-runs (free of the selection that chose it) beat the polished point, is
    // recommended instead ([`super::replicates`]). Not with a finite domain or context parameters.
    let observed = (problem.measurement.candidates.is_none() && cdims.is_empty()).then(|| {
        let (groups, y) = (groups(ctx), model_values(ctx, m.warp.as_ref()));
        let nugget =
            observed_values(ctx, &m, &groups, &y).and_then(|v| v.into_iter().max_by(|a, b| a.mean.total_cmp(&b.mean)));
        nugget.filter(|best| best.mean > opt.value).or_else(|| {
            best_held_out(ctx, &m, &groups, &y).filter(|(_, lower)| *lower > opt.value).map(|(best, _)| best)
        })
    });
    if let Some(best) = observed.flatten() {
        let x = ctx.data.row(best.row).to_vec();
        let predicted = m.raw(best.mean, best.variance.sqrt());
        return Ok(Some(Recommendation { x, params: None, predicted, extra: Default::default() }));
    }
    let mut x = base.clone();
    for (q, &j) in ddims.iter().enumerate() {
        x[j] = opt.x[q];
    }
    let (mu, var) = gp.posterior(&x);
    Ok(Some(Recommendation { x, params: None, predicted: m.raw(mu, var.sqrt()), extra: Default::default() }))
}

/// Observed points (of largest posterior mean) the recommendation starts from.
pub const RECOMMEND_STARTS: usize = 5;

/// Half-width of the box around each start within which the recommendation polishes it, in fitted lengthscales
/// (capped at [`LENGTHSCALE_CAP`]): 0.03 · min(ℓ_j, 0.5) along encoded dimension j.
pub const RECOMMEND_RADIUS: f64 = 0.03;

/// Lengthscales above this (in the unit cube) count as this wherever a radius is measured in fitted lengthscales
/// (the recommendation's polish box here; the separation of open points and the local steps' box in
/// [`crate::policy::plain`]), so that a nearly flat dimension cannot stretch a ball or box beyond the cube.
pub const LENGTHSCALE_CAP: f64 = 0.5;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::Sobol;

    /// `n` Sobol points in the unit square and `f` at them.
    fn data(n: usize, f: impl Fn(&[f64]) -> f64) -> gp::Data {
        let x = Sobol::scrambled(2, 7).take(n);
        let y = x.chunks_exact(2).map(f).collect();
        gp::Data::new(2, x, y)
    }

    fn choice(raw: &gp::Data) -> Option<gp::OutputWarp> {
        let warp = gp::OutputWarp::fit(&raw.y).expect("the values' own test proposes a warp");
        let mut warped = raw.clone();
        warp.warp_data(&mut warped);
        let config = model_config(2, &ModelOptions::default());
        choose_warp(raw, &warped, warp, &config, None, None, 3).expect("both fits succeed").1
    }

    #[test]
    fn evidence_keeps_the_warp_where_the_gp_explains_the_warped_values_better() {
        // ln(−y) is a smooth bowl; y itself spans orders of magnitude.
        let raw = data(30, |x| -(8.0 * ((x[0] - 0.3).powi(2) + (x[1] - 0.6).powi(2))).exp());
        assert!(choice(&raw).is_some());
    }

    #[test]
    fn evidence_rejects_the_warp_where_the_gp_explains_the_raw_values_better() {
        // A smooth wave on a cubic trend: skewed enough for the values' own test (λ = 2), but compressing the bad
        // tail bends the trend into a kink the GP explains worse than the values as they are.
        let raw = data(40, |x| (8.0 * x[0]).sin() * (6.0 * x[1]).cos() - 2.0 * (x[0] + x[1]).powi(3));
        assert!(choice(&raw).is_none());
    }
    /// `n` points of a smooth bowl in 2-D plus `micro` times a value drawn once per point (variation below the
    /// points' spacing, which a re-run reproduces) and measurement noise of standard deviation `sd`; the first
    /// eight points are run three times each, with noise of standard deviation `replicate_sd`.
    fn replicated(n: usize, micro: f64, sd: f64, replicate_sd: f64) -> gp::Data {
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let base = data(n, |x| (x[0] - 0.4).powi(2) + (x[1] - 0.6).powi(2));
        let mut out = gp::Data::new(2, Vec::new(), Vec::new());
        for (i, (x, f)) in base.x.chunks_exact(2).zip(&base.y).enumerate() {
            let nugget: f64 = StandardNormal.sample(&mut rng);
            let (runs, sd) = if i < 8 { (3, replicate_sd) } else { (1, sd) };
            for _ in 0..runs {
                let e: f64 = StandardNormal.sample(&mut rng);
                out.x.extend_from_slice(x);
                out.y.push(f + micro * nugget + sd * e);
            }
        }
        out
    }

    fn nugget_chosen(data: &gp::Data) -> bool {
        let config = model_config(2, &ModelOptions::default());
        let (plain, _) = gp::fit(data, &config, None, 3).expect("fit");
        let collapsed = replicates::collapse(data).expect("replicates whose values differ");
        choose_nugget_model(plain, collapsed, &config, 3).1.is_some()
    }

    #[test]
    fn the_nugget_model_where_replicates_agree_but_the_points_scatter() {
        // Measurement noise 0.01; the points scatter by 0.1 about the bowl, which a re-run reproduces.
        assert!(nugget_chosen(&replicated(100, 0.1, 0.01, 0.01)));
    }

    #[test]
    fn the_homoscedastic_model_where_the_replicates_spread_more_than_the_points_scatter() {
        // The nugget model would give every observation the replicates' measurement variance (0.1²), which the
        // points' scatter about the bowl (0.01) refutes; one noise variance for all explains the data better.
        assert!(!nugget_chosen(&replicated(60, 0.0, 0.01, 0.1)));
    }
}
