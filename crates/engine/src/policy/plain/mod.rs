//! Plain GP Bayesian optimisation: `gp-ei` (LogEI), `gp-ucb`, `gp-pi`, `gp-mes`, `gp-ts`.
//!
//! A scrambled-Sobol initial design of `initial_design` points (default `clamp(2·d + 1, 10, 50)`, d the number of
//! decision parameters), then the standard GP ([`crate::policy::model`]) and the acquisition maximised by
//! [`crate::optim::maximize`] with the five best observations as extra starts. Studies with context parameters
//! average the acquisition over the observed contexts (or use the context given with the request).
//!
//! **Local steps** (`gp-ei` by default). Of every `local_cycle` ([`LOCAL_CYCLE`] = 4) model-based points, counted
//! over the study (observed, failed, pending and earlier in the batch), the first maximises the acquisition over the
//! whole space and the others only within a box around the observation of largest posterior mean, of half-width
//! `max(local_radius · min(ℓ_j, 0.5), 0.1)` ([`LOCAL_RADIUS`] = 0.25, [`LOCAL_MIN_HALF_WIDTH`] = 0.1) per decision
//! dimension of the unit cube (one-hot blocks free). This is a fixed-size form of the trust regions of TuRBO
//! (Eriksson et al. 2019), sized by the fitted lengthscales rather than by success counters, and interleaved with
//! global steps instead of restarts. The floor keeps the box a neighbourhood to search, not only to polish, when
//! the fitted lengthscales are short: on a needle whose far tails the initial design saw (Easom), lengthscales of
//! ~0.05 made a box of ±0.0125 around a tail point, where the local steps refined a ripple of the tail; TuRBO's
//! smallest region is likewise a fixed fraction of the cube. When LogEI expects less than
//! [`LOCAL_MIN_EI`] (10⁻³ standardised units) in the box at a call's first local step, the incumbent's
//! neighbourhood is exhausted (a local optimum found) and the call's local steps are taken globally; later local
//! steps of a batch are not tested, as the batch's own fantasies lower their EI. A batch chooses its lead global
//! pick (the first global one of the call) first, on the incumbent before its own fantasies raise it, as a
//! sequential global step is chosen, then its other points in cycle order (`docs/bench/robust.md`, "The global pick
//! first and beside the local picks", "One lead global pick a call"). Global LogEI alone
//! under-refines the incumbent on ill-conditioned and higher-dimensional problems (`docs/bench/robust.md`, "Local
//! steps": the whole-table ablation, sequential and in batches). Not used with context parameters or a finite
//! `candidates` set, where it was not measured.
//!
//! **Noisy EI** (`gp-ei`). When the fitted noise is real, mean noise variance at least [`NOISY_EI_MIN_NOISE`] of the
//! outputs' (standardised units: a noise standard deviation of 1 % of theirs or more), `gp-ei` maximises the log
//! noisy expected improvement of Letham et al. (2019) over [`NOISY_EI_DRAWS`] joint posterior draws of the latent
//! values at the observations ([`crate::acquisition::LogNei`]) instead of LogEI over the best posterior mean: the
//! plug-in incumbent ignores that the incumbent's own value is uncertain, and so over-rates the points next to it.
//! Below that noise (deterministic objectives, whose learned noise sits at its floor of 10⁻⁶) the draws differ from
//! the observations only by the floor's noise, 10⁻³ of the outputs' spread, which is coarser than the precision
//! deterministic problems are refined to: there LogEI with the plug-in incumbent is kept (`docs/bench/robust.md`,
//! "Noisy EI": noisy EI on every model lost Branin's last digits). Rugged deterministic objectives whose ripples the
//! model explains as noise (Rastrigin, Griewank) cross the threshold and get noisy EI, which costs them precision.
//!
//! **Replicates** (`gp-ei`). On a noisy model ([`is_noisy`]) without declared noise, the first point of a call
//! re-runs the observation of largest posterior mean while the data hold fewer than `replicates` ([`REPLICATES`])
//! degrees of freedom of replicated values, one every `initial_design` model-based points; replicates that agree
//! exactly (a deterministic objective) end it. They are what tells the model's noise into measurement noise and
//! structure, which the recommendation needs ([`crate::policy::replicates`]). Otherwise the first point may re-run a
//! challenger: an unreplicated best observation far above the model's best mean, or one whose re-run still beats
//! it ([`replicates::challenger`]), whose re-runs the recommendation may then trust.
//!
//! **Open points.** Pending points (suggested, not yet observed) and failed runs enter as kriging-believer
//! fantasies (Ginsbourger, Le Riche & Carraro 2010): their posterior mean is observed, and the incumbent of EI/PI
//! becomes the larger of itself and the fantasised values, so the believed value at an open point is no
//! improvement. A batch (`count > 1`) is built the same way, one point after the other. Believing alone still lets
//! UCB or a flat EI surface propose a point right next to an open one, so every new point also keeps out of a
//! ball around each open point (pending, or earlier in the batch): in the lengthscale-scaled metric
//! `‖(x − p) ⊘ ℓ̃‖ ≥ ρ` with `ρ =` [`SEPARATION`] and `ℓ̃_j = min(ℓ_j,` [`LENGTHSCALE_CAP`]`)` the fitted
//! ARD lengthscales, so in the unit cube open points are at least `ρ · min(ℓ_min, cap)` apart. With local steps
//! (`gp-ei`), the model picks of one call, local steps sharing a box of half-width `max(local_radius · ℓ̃, 0.1)`
//! and the lead global pick, keep the box-scaled `ρ · min(local_radius, 1)` from each other (the full ρ from every
//! other open point): the lead global pick may then land beside the local picks, in the incumbent's neighbourhood,
//! as a sequential global step may. A call larger than the cycle (eight points with the default cycle of four)
//! holds later global picks: they keep the full ρ from the call's other points, and those from them, so that they
//! explore. Where that leaves no admissible point (a large batch in a small or discrete space), the radii are
//! halved until one exists, down to exact duplicates only.

use std::time::Instant;

use rand::{SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::acquisition::{
    Acquisition, Constrained, Expected, Feasibility, LogEi, LogNei, MaxValueSampler, Mes, Pi, ThompsonSample, Ucb,
    sample_max_values,
};
use crate::error::{FieldError, Result};
use crate::gp::Gp;
use crate::optim::{OptimConfig, Optimum, in_polytope, maximize, maximize_in_box, maximize_over};
use crate::policy::model::{FittedModel, LENGTHSCALE_CAP, ModelOptions, OutputWarping, design_then_model, top_rows};
use crate::policy::{Candidate, Context, Diagnostics, Policy, PolicyState, out_of_range, parse_options, replicates};
use crate::sampling::{Sobol, derive_seed};
use crate::space::{DimKind, Space};

/// Joint posterior draws of `gp-ei`'s noisy EI (`noisy_ei_draws`).
pub const NOISY_EI_DRAWS: usize = 32;

/// Mean noise variance of the observations (standardised units, so a fraction of the outputs' variance) from which
/// `gp-ei` uses noisy EI: noise standard deviations of at least 1 % of the outputs'.
pub const NOISY_EI_MIN_NOISE: f64 = 1e-4;

/// Whether the model's observations are noisy enough for noisy EI ([`NOISY_EI_MIN_NOISE`]).
fn is_noisy(gp: &Gp) -> bool {
    let noise = gp.noise_diag();
    !noise.is_empty() && noise.iter().sum::<f64>() / noise.len() as f64 >= NOISY_EI_MIN_NOISE
}

/// Which acquisition a [`GpBo`] maximises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpAcquisition {
    /// Log expected improvement over the best posterior mean at the observations.
    LogEi,
    /// Upper confidence bound μ + √β σ.
    Ucb,
    /// Probability of improvement.
    Pi,
    /// Max-value entropy search.
    Mes,
    /// Thompson sampling of a pathwise posterior draw.
    Thompson,
}

/// Options of the GP policies (`algorithm.options`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpBoOptions {
    /// Size of the Sobol initial design (default `clamp(2·d + 1, 10, 50)`).
    pub initial_design: Option<usize>,
    /// UCB exploration weight β (σ is multiplied by √β).
    pub beta: f64,
    /// GP-UCB with the theoretical β_t = 2 ln(|D| t² π² / (6δ)) of Srinivas et al. (2010, Thm. 1; δ = 0.1, |D| the
    /// candidate count or 2500 representer points, t the number of points conditioned on + 1) times this factor,
    /// instead of the fixed `beta` (TRUVAR's experiments use 0.2: "theoretical value divided by five").
    pub beta_theoretical_scale: Option<f64>,
    /// Number of max-value samples (MES).
    pub max_value_samples: usize,
    /// `gumbel` (default) or `sampling` (MES).
    pub max_value_sampler: MaxValueSampler,
    /// Random Fourier features per kernel component (Thompson sampling).
    pub thompson_features: usize,
    /// Of every `local_cycle` model-based points, one is global and the others local steps (default
    /// [`LOCAL_CYCLE`] for `gp-ei`, 1 = every point global for the other acquisitions).
    pub local_cycle: Option<usize>,
    /// Half-width of a local step's box in capped lengthscales (default [`LOCAL_RADIUS`]); the model picks of one
    /// call but its later global picks keep `SEPARATION · min(local_radius, 1)` of them from each other.
    pub local_radius: f64,
    /// `gp-ei`: joint posterior draws of the noisy expected improvement (Letham et al. 2019) over the latent values
    /// at the observations; 0 maximises LogEI over the best posterior mean instead (plug-in).
    pub noisy_ei_draws: usize,
    /// `gp-ei`: replicates the engine asks for on a noisy model without declared noise (default [`REPLICATES`]; 0
    /// never, and no challengers either): re-runs of the observation of largest posterior mean, which tell the
    /// recommendation how much of the model's noise is structure (see the module docs).
    pub replicates: usize,
    /// Sobol raw samples of the acquisition optimiser.
    pub raw_samples: usize,
    /// L-BFGS restarts of the acquisition optimiser.
    pub restarts: usize,
    /// Surrogate options.
    #[serde(flatten)]
    pub model: ModelOptions,
}

impl Default for GpBoOptions {
    fn default() -> Self {
        Self {
            initial_design: None,
            beta: 4.0,
            beta_theoretical_scale: None,
            max_value_samples: 16,
            max_value_sampler: MaxValueSampler::Gumbel,
            thompson_features: 1024,
            local_cycle: None,
            local_radius: LOCAL_RADIUS,
            noisy_ei_draws: NOISY_EI_DRAWS,
            replicates: REPLICATES,
            raw_samples: OptimConfig::default().raw_samples,
            restarts: OptimConfig::default().restarts,
            model: ModelOptions::default(),
        }
    }
}

/// A plain GP-BO policy.
#[derive(Debug, Clone)]
pub struct GpBo {
    acquisition: GpAcquisition,
    options: GpBoOptions,
}

impl GpBo {
    /// Parses and checks the options.
    pub fn build(acquisition: GpAcquisition, options: Value, encoded_dim: usize) -> Result<Self, Vec<FieldError>> {
        let mut options: GpBoOptions = parse_options(options)?;
        options.model.output_warping.get_or_insert(OutputWarping::Auto);
        let mut errors = Vec::new();
        if options.beta_theoretical_scale.is_some_and(|a| !(a.is_finite() && a > 0.0)) {
            errors.push(FieldError::new("algorithm.options.beta_theoretical_scale", "must be a finite number > 0"));
        }
        if !(options.local_radius.is_finite() && options.local_radius > 0.0 && options.local_radius <= 4.0) {
            errors.push(FieldError::new("algorithm.options.local_radius", "must be a number in (0, 4]"));
        }
        if !(options.beta.is_finite() && options.beta >= 0.0) {
            errors.push(FieldError::new("algorithm.options.beta", "must be a finite number ≥ 0"));
        }
        errors.extend(out_of_range(&[
            ("max_value_samples", options.max_value_samples, 1, 1024),
            ("thompson_features", options.thompson_features, 16, 16384),
            ("raw_samples", options.raw_samples, 1, 65536),
            ("noisy_ei_draws", options.noisy_ei_draws, 0, 1024),
            ("replicates", options.replicates, 0, 100),
            ("restarts", options.restarts, 0, 256),
            ("local_cycle", options.local_cycle.unwrap_or(1), 1, 1000),
        ]));
        errors.extend(options.model.validate(encoded_dim));
        if errors.is_empty() { Ok(Self { acquisition, options }) } else { Err(errors) }
    }

    pub(crate) fn initial_design(&self, d: usize) -> usize {
        self.options.initial_design.unwrap_or(crate::policy::design::default_initial_design(d))
    }

    pub(crate) fn optim_config(&self) -> OptimConfig {
        OptimConfig { raw_samples: self.options.raw_samples, restarts: self.options.restarts, ..OptimConfig::default() }
    }
}

impl Policy for GpBo {
    fn name(&self) -> &'static str {
        match self.acquisition {
            GpAcquisition::LogEi => "gp-ei",
            GpAcquisition::Ucb => "gp-ucb",
            GpAcquisition::Pi => "gp-pi",
            GpAcquisition::Mes => "gp-mes",
            GpAcquisition::Thompson => "gp-ts",
        }
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        self.suggest_with(ctx, state, count, || Ok(None))
    }

    fn model_options(&self) -> ModelOptions {
        self.options.model.clone()
    }
}

impl GpBo {
    /// [`Policy::suggest`] with outcome constraints: `feasibility` gives the constraints' models once the initial
    /// design is done (`None`: unconstrained). The acquisition is then LogEI over the best posterior mean among the
    /// observations that satisfy every constraint, plus the log probability of feasibility ([`Constrained`]); while
    /// none does, the log probability alone. Constrained calls use neither noisy EI nor replicates (not measured
    /// with constraints).
    pub(crate) fn suggest_with(
        &self,
        ctx: &Context<'_>,
        state: &mut PolicyState,
        count: usize,
        feasibility: impl FnOnce() -> Result<Option<Feasibility>>,
    ) -> Result<Vec<Candidate>> {
        let n_init = self.initial_design(ctx.problem.decision.len());
        design_then_model(ctx, state, count, n_init as u64, &self.options.model, |fitted, n| {
            let feasibility = feasibility()?;
            self.model_step(ctx, fitted, n, n_init, feasibility.as_ref())
        })
    }

    /// Model-based candidates: fantasise pending and failed points, then maximise the acquisition `count` times
    /// (`n_init`: the initial design's size, from which the local steps' cycle is counted).
    fn model_step(
        &self,
        ctx: &Context<'_>,
        fitted: FittedModel,
        count: usize,
        n_init: usize,
        feasibility: Option<&Feasibility>,
    ) -> Result<Vec<Candidate>> {
        let FittedModel { mut gp, refit, millis: fit_ms, warp, measurement } = fitted;
        let problem = ctx.problem;
        let d = problem.space.dim();
        let means = gp.posterior_batch(&ctx.data.x).0;
        // Observations that satisfy every outcome constraint (all of them without constraints).
        let n_objectives = problem.outcomes.objectives.len();
        let feasible: Vec<usize> = (0..means.len()).filter(|&i| ctx.data.observed_feasible(i, n_objectives)).collect();
        let mut incumbent = feasible.iter().map(|&i| means[i]).fold(f64::NEG_INFINITY, f64::max);
        // The feasible observation of largest posterior mean: the centre of the local steps' box.
        let best_row = feasible.iter().copied().reduce(|b, i| if means[i] > means[b] { i } else { b });
        for p in ctx.pending.chunks_exact(d).chain(ctx.data.failed_x.chunks_exact(d)) {
            let (m, _) = gp.posterior(p);
            let _ = gp.condition(p, m, measurement);
            if best_row.is_some() {
                incumbent = incumbent.max(m);
            }
        }
        let ddims = problem.space.dims_of_params(&problem.decision);
        let lengthscales = gp.kernel().lengthscales(&gp.hyperparameters().theta);
        let scales: Vec<f64> = ddims.iter().map(|&j| lengthscales[j].min(LENGTHSCALE_CAP)).collect();
        let cdims = problem.space.dims_of_params(&problem.contexts);
        let context_samples = self.context_samples(ctx, &cdims);
        let dspace = problem.decision_space();
        let starts: Vec<Vec<f64>> =
            top_rows(ctx, 5).into_iter().map(|r| ddims.iter().map(|&j| r[j]).collect()).collect();
        // Pending points, this call's re-run and its later global picks (decision coordinates): the centres of the
        // balls kept out; this call's other model picks keep out of the smaller balls of the box's scale around each
        // other (see `call_separation`; with local steps off, the full balls).
        let mut taken: Vec<f64> = ctx.pending.chunks_exact(d).flat_map(|p| ddims.iter().map(|&j| p[j])).collect();
        let mut this_call: Vec<f64> = Vec::new();
        let hypers = gp.hyperparameters().describe(gp.kernel());
        // With a `candidates` block the acquisition is maximised over that finite set.
        let finite: Option<Vec<f64>> = problem
            .measurement
            .candidates
            .as_ref()
            .map(|c| c.x.chunks_exact(d.max(1)).flat_map(|r| ddims.iter().map(|&j| r[j])).collect());
        let first_index = (crate::policy::design::design_index(ctx) as usize).max(n_init) - n_init;
        let centre: Option<Vec<f64>> = best_row
            .filter(|_| cdims.is_empty() && finite.is_none())
            .map(|row| ddims.iter().map(|&j| ctx.data.row(row)[j]).collect());
        // A posterior (mean, variance) in the objective's units.
        let raw = |mu: f64, var: f64| warp.map_or((mu, var.sqrt()), |w| w.unwarp(mu, var.sqrt()));
        let mut out = Vec::with_capacity(count);
        let replicate = best_row.filter(|_| centre.is_some() && feasibility.is_none()).and_then(|row| {
            self.replicate_due(ctx, &gp, (warp.as_ref(), measurement), (row, means[row]), first_index, n_init)
        });
        // A re-run keeps to the parameter constraints like any suggestion (an observation may lie outside them).
        let replicate = replicate.filter(|x| problem.polytope.as_ref().is_none_or(|p| p.contains(x)));
        if let Some(x) = replicate {
            let (mu, var) = gp.posterior(&x);
            taken.extend(ddims.iter().map(|&j| x[j]));
            out.push(Candidate {
                x: x.clone(),
                predicted: Some(raw(mu, var)),
                diagnostics: Diagnostics {
                    phase: Some("replicate".into()),
                    jitter: Some(gp.jitter()),
                    hyperparameters: Some(hypers.clone()),
                    refit: Some(refit),
                    fit_ms: Some(fit_ms),
                    extra: [("search".to_string(), Value::from("replicate"))].into_iter().collect(),
                    ..Default::default()
                },
                ..Default::default()
            });
            if count > 1 {
                let _ = gp.condition(&x, mu, measurement);
            }
        }
        let first = out.len();
        // Whether the local box was found exhausted at this call's first local step (see below).
        let mut exhausted: Option<bool> = None;
        // The balls: the full separation around other open points, the box-scaled one around this call's model
        // picks; and the EI below which the box counts as exhausted (LogEI only).
        let radius: Vec<f64> = scales.iter().map(|s| SEPARATION * s).collect();
        // Without a local box (context parameters, a `candidates` set, `local_cycle: 1`) a call's picks are all
        // global: full balls, in cycle order.
        let local_steps = centre.is_some() && self.local_cycle() > 1;
        let call_rho = if local_steps { self.call_separation() } else { SEPARATION };
        let small: Vec<f64> = scales.iter().map(|s| call_rho * s).collect();
        let floor = if self.acquisition == GpAcquisition::LogEi { LOCAL_MIN_EI.ln() } else { f64::MIN };
        // A call's lead global pick (its first global one in cycle order) comes first, on the incumbent before the
        // call's fantasies raise it, as a sequential global step is chosen; the other points follow in cycle order,
        // and every point keeps its place in the cycle and its seed. A later global pick of a larger call keeps the
        // full separation from the call's picks, and they from it (it joins `taken`).
        let mut order: Vec<usize> = (first..count).collect();
        let lead = local_steps.then(|| order.iter().position(|&k| self.is_global_step(first_index + k))).flatten();
        if let Some(at) = lead {
            order[..=at].rotate_right(1);
        }
        for (done, &k) in order.iter().enumerate() {
            let started = Instant::now();
            let wide = local_steps && done > 0 && self.is_global_step(first_index + k);
            let local_box = centre.as_ref().and_then(|c| self.local_box(first_index + k, c, &scales, &dspace));
            let seed = derive_seed(ctx.seed, k as u64);
            let (opt, is_local, used_noisy_ei) = {
                let domain_size = problem
                    .measurement
                    .candidates
                    .as_ref()
                    .map_or(crate::blocks::measurement::DEFAULT_REPRESENTER_POINTS, |c| c.len());
                let (acq, noisy_ei) = self.acquisition_for(&gp, incumbent, seed, domain_size, feasibility.is_none())?;
                let (constrained, expected);
                let inner: &dyn Acquisition = if let Some(f) = feasibility {
                    let objective = best_row.is_some().then_some(acq.as_ref());
                    constrained = Constrained { inner: objective, feasibility: f, dim: gp.d() };
                    &constrained
                } else if cdims.is_empty() {
                    acq.as_ref()
                } else {
                    expected = Expected::new(acq, ddims.clone(), cdims.clone(), context_samples.clone());
                    &expected
                };
                // A point keeps the full separation from open points other than this call's model picks, and the
                // box-scaled one from those; when a local step's box has no admissible point left, the step is
                // global instead. So are all local steps of this call when LogEI expects less than LOCAL_MIN_EI in
                // the box at the call's first one (the box is exhausted); later ones are not tested, as this batch's
                // own fantasies lower their EI.
                let local = local_box.as_ref().filter(|_| exhausted != Some(true)).and_then(|(lower, upper)| {
                    let others = Excluding { inner, excluded: &taken, radius: &radius };
                    let excluding = Excluding { inner: &others, excluded: &this_call, radius: &small };
                    let opt = in_polytope(problem.polytope.as_deref(), &excluding, |acq| {
                        maximize_in_box(acq, &dspace, &self.optim_config(), seed, &starts, (lower, upper))
                    });
                    if exhausted.is_none() {
                        exhausted = Some(opt.value < floor);
                    }
                    (opt.value > f64::NEG_INFINITY && exhausted == Some(false)).then_some(opt)
                });
                let is_local = local.is_some();
                let opt = local.unwrap_or_else(|| {
                    let balls = (taken.as_slice(), this_call.as_slice());
                    let rho = if wide { SEPARATION } else { call_rho };
                    separated_maximum(inner, balls, &scales, rho, |acq| match &finite {
                        Some(rows) => maximize_over(acq, rows),
                        None => in_polytope(problem.polytope.as_deref(), acq, |acq| {
                            maximize(acq, &dspace, &self.optim_config(), seed, &starts)
                        }),
                    })
                });
                (opt, is_local, noisy_ei)
            };
            if wide { &mut taken } else { &mut this_call }.extend_from_slice(&opt.x);
            let x = problem.lift(&opt.x);
            let (mu, var) = gp.posterior(&x);
            out.push(Candidate {
                x: x.clone(),
                predicted: Some(raw(mu, var)),
                diagnostics: Diagnostics {
                    phase: Some("model".into()),
                    acquisition_value: Some(opt.value).filter(|v| v.is_finite()),
                    jitter: Some(gp.jitter()),
                    hyperparameters: Some(hypers.clone()),
                    refit: Some(refit),
                    fit_ms: Some(if k == 0 { fit_ms } else { 0.0 }),
                    acquisition_ms: Some(started.elapsed().as_secs_f64() * 1e3),
                    extra: [("search".to_string(), Value::from(if is_local { "local" } else { "global" }))]
                        .into_iter()
                        .chain(
                            (self.acquisition == GpAcquisition::LogEi)
                                .then(|| ("noisy_ei".to_string(), Value::from(used_noisy_ei))),
                        )
                        .collect(),
                },
                ..Default::default()
            });
            if done + 1 < order.len() {
                let _ = gp.condition(&x, mu, measurement);
                incumbent = incumbent.max(mu);
            }
        }
        Ok(out)
    }

    /// The observation to re-run as this call's first point, if one is due: `gp-ei` on a noisy model
    /// ([`is_noisy`]) without declared noise, and no replicates that agree exactly (a deterministic objective, whose
    /// model noise is all structure). A scheduled replicate while the data hold fewer replicate degrees of freedom
    /// than `replicates` and the model-based points so far (`index`) are at least that number times `n_init`
    /// (replicates spread over the study): `best`, the observation of largest posterior mean (its row and that
    /// mean). Otherwise a challenger ([`replicates::challenger`]; `warp` the model's output warp). Never a point that
    /// is pending already.
    fn replicate_due(
        &self,
        ctx: &Context<'_>,
        gp: &Gp,
        (warp, measurement): (Option<&crate::gp::OutputWarp>, Option<f64>),
        (best_row, top): (usize, f64),
        index: usize,
        n_init: usize,
    ) -> Option<Vec<f64>> {
        let wanted = self.acquisition == GpAcquisition::LogEi && self.options.replicates > 0;
        if !wanted || ctx.data.declares_noise() || !is_noisy(gp) {
            return None;
        }
        let groups = replicates::groups(ctx);
        let dof = match replicates::pooled_variance(&groups, &ctx.data.y) {
            Some((s2, _)) if s2 <= 0.0 => return None,
            Some((_, dof)) => dof,
            None => 0,
        };
        let d = ctx.data.row(best_row).len();
        let open = |row: usize| {
            let x = ctx.data.row(row);
            (!ctx.pending.chunks_exact(d.max(1)).any(|p| replicates::same_point(p, x))).then(|| x.to_vec())
        };
        let scheduled = dof < self.options.replicates && index >= dof * n_init.max(1);
        scheduled.then(|| open(best_row)).flatten().or_else(|| {
            let y = replicates::model_values(ctx, warp);
            open(replicates::challenger(&groups, &y, top, replicates::observation_noise(gp, measurement).sqrt())?)
        })
    }

    /// The box of the model-based point number `index` (counted from the end of the initial design) if it is a
    /// local step: `centre ± max(local_radius · scales, LOCAL_MIN_HALF_WIDTH)` per decision dimension, within the
    /// cube; one-hot blocks are left free. Every `local_cycle`-th point (index 0, cycle, 2·cycle, …) is global
    /// (`None`).
    fn local_box(&self, index: usize, centre: &[f64], scales: &[f64], dspace: &Space) -> Option<(Vec<f64>, Vec<f64>)> {
        if self.is_global_step(index) {
            return None;
        }
        let kinds = dspace.dim_kinds();
        let free = |j: usize| matches!(kinds[j], DimKind::OneHot { .. });
        let half_width = |j: usize| (self.options.local_radius * scales[j]).max(LOCAL_MIN_HALF_WIDTH);
        let lower = (0..centre.len()).map(|j| if free(j) { 0.0 } else { (centre[j] - half_width(j)).max(0.0) });
        let upper = (0..centre.len()).map(|j| if free(j) { 1.0 } else { (centre[j] + half_width(j)).min(1.0) });
        Some((lower.collect(), upper.collect()))
    }

    /// Separation between the model picks of one call with local steps (its later global picks excepted), in capped
    /// lengthscales: ρ scaled to the box as ρ is to the lengthscale, `ρ · min(local_radius, 1)` (0.0625 by default).
    /// With the full ρ a box of half-width 0.25 ℓ̃ holds few admissible points and a batch's local picks are pushed
    /// to its corners, away from the incumbent they are meant to refine; and a call's lead global pick, kept that far
    /// from its local picks, is kept out of the incumbent's neighbourhood, where sequential global steps often land
    /// (`docs/bench/robust.md`, "Batches", "The global pick first and beside the local picks"). A call's later global
    /// picks keep the full ρ: allowed there too, a call of eight explored less ("One lead global pick a call").
    fn call_separation(&self) -> f64 {
        SEPARATION * self.options.local_radius.min(1.0)
    }

    /// Whether the model-based point number `index` (counted from the end of the initial design) maximises the
    /// acquisition over the whole space: every `local_cycle`-th one (index 0, cycle, 2·cycle, …).
    fn is_global_step(&self, index: usize) -> bool {
        let cycle = self.local_cycle();
        cycle <= 1 || index.is_multiple_of(cycle)
    }

    /// `local_cycle`, defaulting to [`LOCAL_CYCLE`] for LogEI (the default algorithm, where it was measured) and to 1
    /// (every point global) for the other acquisitions.
    fn local_cycle(&self) -> usize {
        self.options.local_cycle.unwrap_or(if self.acquisition == GpAcquisition::LogEi { LOCAL_CYCLE } else { 1 })
    }

    /// The acquisition over the full encoded space, and whether it is `gp-ei`'s noisy EI: on a noisy model
    /// ([`is_noisy`]) unless `noisy_ei_draws` is 0 or the draws cannot be factorised (then LogEI over the best
    /// posterior mean, as on a deterministic one).
    fn acquisition_for<'a>(
        &self,
        gp: &'a Gp,
        incumbent: f64,
        seed: u64,
        domain_size: usize,
        noisy_ei_allowed: bool,
    ) -> Result<(Box<dyn Acquisition + 'a>, bool)> {
        let beta = match self.options.beta_theoretical_scale {
            Some(a) => {
                let t = (gp.n() + 1) as f64;
                let pi2 = std::f64::consts::PI.powi(2);
                a * 2.0 * (domain_size.max(1) as f64 * t * t * pi2 / (6.0 * 0.1)).ln()
            }
            None => self.options.beta,
        };
        let mut rng = StdRng::seed_from_u64(seed);
        if self.acquisition == GpAcquisition::LogEi
            && noisy_ei_allowed
            && self.options.noisy_ei_draws > 0
            && is_noisy(gp)
            && let Ok(draws) = gp.drawn_models(self.options.noisy_ei_draws, &mut rng)
        {
            return Ok((Box::new(LogNei::new(draws)), true));
        }
        let acq: Box<dyn Acquisition + 'a> = match self.acquisition {
            GpAcquisition::LogEi => Box::new(LogEi::new(gp, incumbent)),
            GpAcquisition::Ucb => Box::new(Ucb::new(gp, beta)),
            GpAcquisition::Pi => Box::new(Pi::new(gp, incumbent)),
            GpAcquisition::Mes => {
                let mut cands = Sobol::scrambled(gp.d(), seed).take(1000);
                cands.extend_from_slice(gp.x());
                let ys = sample_max_values(
                    gp,
                    &cands,
                    self.options.max_value_samples,
                    self.options.max_value_sampler,
                    &mut rng,
                )?;
                Box::new(Mes::new(gp, ys))
            }
            GpAcquisition::Thompson => match gp.pathwise_sample(self.options.thompson_features, &mut rng) {
                Some(s) => Box::new(ThompsonSample::new(s, gp.d())),
                // Periodic kernels have no Fourier features here: fall back to UCB with `beta`.
                None => Box::new(Ucb::new(gp, self.options.beta)),
            },
        };
        Ok((acq, false))
    }

    /// Context values to average over: the known context of the request, else the observed ones (≤ 128 latest).
    fn context_samples(&self, ctx: &Context<'_>, cdims: &[usize]) -> Vec<f64> {
        if cdims.is_empty() {
            return Vec::new();
        }
        if let Some(known) = ctx.known_context {
            return cdims.iter().map(|&j| known[j]).collect();
        }
        let n = ctx.data.n();
        (n.saturating_sub(128)..n).flat_map(|i| cdims.iter().map(move |&j| ctx.data.row(i)[j])).collect()
    }
}

/// Of every this many model-based points of `gp-ei`, one maximises the acquisition over the whole space and the
/// others within the local box (see the module docs).
pub const LOCAL_CYCLE: usize = 4;

/// Replicate degrees of freedom `gp-ei` asks for on a noisy model (`replicates`; see the module docs).
pub const REPLICATES: usize = 3;

/// Half-width of the local box in units of the capped lengthscales `min(ℓ_j, 0.5)`.
pub const LOCAL_RADIUS: f64 = 0.25;

/// Smallest half-width of the local box, in the unit cube: `bench robust`'s noiseless table with 0.1 against none
/// (`docs/bench/robust.md`, "The local box's floor"): Easom's needle found in 6 of 10 seeds instead of 4 and no
/// problem worse; 0.2 lost Dixon–Price-10 and, against the peers, Shekel-4 and Levy-20.
pub const LOCAL_MIN_HALF_WIDTH: f64 = 0.1;

/// When LogEI's best expected improvement in the box at a call's first local step is below this (standardised units
/// of the model's possibly warped outputs), the neighbourhood is exhausted and the call's local steps are global.
pub const LOCAL_MIN_EI: f64 = 1e-3;

/// Minimum distance between open points in lengthscale units (ρ; see the module docs).
pub const SEPARATION: f64 = 0.25;

/// The maximum of `maximise(acq)` outside the balls of radius `ρ·scales` around the `others` points and
/// `ρ_call·scales` around `this_call`'s (`ρ_call` = `call_rho`), halving both radii while no point is admissible
/// (after eight halvings: exact duplicates only).
pub(crate) fn separated_maximum(
    acq: &dyn Acquisition,
    (others, this_call): (&[f64], &[f64]),
    scales: &[f64],
    call_rho: f64,
    maximise: impl Fn(&dyn Acquisition) -> Optimum,
) -> Optimum {
    let mut factor = 1.0;
    loop {
        let radius: Vec<f64> = scales.iter().map(|s| factor * SEPARATION * s).collect();
        let call_radius: Vec<f64> = scales.iter().map(|s| factor * call_rho * s).collect();
        let own = Excluding { inner: acq, excluded: this_call, radius: &call_radius };
        let opt = maximise(&Excluding { inner: &own, excluded: others, radius: &radius });
        if opt.value > f64::NEG_INFINITY || (others.is_empty() && this_call.is_empty()) || factor == 0.0 {
            return opt;
        }
        factor = if factor < 1.0 / 200.0 { 0.0 } else { factor / 2.0 };
    }
}

/// `inner` with balls around a few points (decision coordinates, row-major) excluded: −∞ there, so the optimiser
/// never returns a pending point, one already in the batch, or (with a radius) one next to them. The
/// kriging-believer fantasy alone does not ensure that: in small discrete spaces a Thompson draw or an EI surface
/// can keep its maximum at the fantasised point, and UCB's mean term keeps it next to one.
pub(crate) struct Excluding<'a> {
    pub(crate) inner: &'a dyn Acquisition,
    pub(crate) excluded: &'a [f64],
    /// Per-dimension radius of the excluded ellipsoids; empty or all zero: exact duplicates only.
    pub(crate) radius: &'a [f64],
}

impl Excluding<'_> {
    fn is_excluded(&self, x: &[f64]) -> bool {
        let exact = self.radius.iter().all(|r| *r <= 0.0);
        self.excluded.chunks_exact(x.len().max(1)).any(|p| {
            if exact {
                p.iter().zip(x).all(|(a, b)| (a - b).abs() <= 1e-12)
            } else {
                p.iter().zip(x).zip(self.radius).map(|((a, b), r)| ((a - b) / r).powi(2)).sum::<f64>() < 1.0
            }
        })
    }
}

impl Acquisition for Excluding<'_> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn value(&self, x: &[f64]) -> f64 {
        if self.is_excluded(x) { f64::NEG_INFINITY } else { self.inner.value(x) }
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        if self.is_excluded(x) {
            grad.iter_mut().for_each(|g| *g = 0.0);
            return f64::NEG_INFINITY;
        }
        self.inner.value_and_grad(x, grad)
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let mut v = self.inner.values(xs);
        for (value, x) in v.iter_mut().zip(xs.chunks_exact(self.dim().max(1))) {
            if self.is_excluded(x) {
                *value = f64::NEG_INFINITY;
            }
        }
        v
    }

    /// The inner acquisition screens the admissible points only, so its best `keep` are the best admissible ones.
    fn best_values(&self, xs: &[f64], keep: usize) -> Vec<f64> {
        let d = self.dim().max(1);
        let admissible: Vec<usize> =
            (0..xs.len() / d).filter(|&i| !self.is_excluded(&xs[i * d..(i + 1) * d])).collect();
        let kept: Vec<f64> = admissible.iter().flat_map(|&i| xs[i * d..(i + 1) * d].iter().copied()).collect();
        let mut v = vec![f64::NEG_INFINITY; xs.len() / d];
        for (&i, value) in admissible.iter().zip(self.inner.best_values(&kept, keep)) {
            v[i] = value;
        }
        v
    }
}

/// `random`, `sobol` (no options) or one of the GP policies.
pub fn build(
    name: &str,
    options: Value,
    problem: &crate::problem::Problem,
) -> std::result::Result<Box<dyn Policy>, Vec<FieldError>> {
    let acquisition = match name {
        "random" | "sobol" => {
            if let Value::Object(m) = &options
                && !m.is_empty()
            {
                return Err(m
                    .keys()
                    .map(|k| {
                        FieldError::new(
                            format!("algorithm.options.{k}"),
                            format!("not an option of '{name}' (it has none)"),
                        )
                    })
                    .collect());
            }
            return Ok(if name == "random" {
                Box::new(crate::policy::RandomSearch)
            } else {
                Box::new(crate::policy::SobolSearch)
            });
        }
        "gp-ei" => GpAcquisition::LogEi,
        "gp-ucb" => GpAcquisition::Ucb,
        "gp-mes" => GpAcquisition::Mes,
        "gp-ts" => GpAcquisition::Thompson,
        _ => GpAcquisition::Pi,
    };
    GpBo::build(acquisition, options, problem.space.dim()).map(|p| Box::new(p) as _)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::ParameterSpec;

    #[test]
    fn the_local_box_is_the_lengthscale_box_with_a_floor() {
        let specs: Vec<ParameterSpec> = serde_json::from_value(serde_json::json!([
            {"name": "a", "type": "float", "low": 0, "high": 1},
            {"name": "b", "type": "float", "low": 0, "high": 1},
            {"name": "c", "type": "float", "low": 0, "high": 1},
        ]))
        .expect("specs parse");
        let space = Space::new(&specs).expect("specs validate");
        let policy = GpBo::build(GpAcquisition::LogEi, serde_json::json!({}), 3).expect("default options");
        // Capped lengthscales 0.04 (a ripple), 0.5 and 0.5, the incumbent near the cube's edge in c.
        let (lower, upper) = policy.local_box(1, &[0.5, 0.5, 0.95], &[0.04, 0.5, 0.5], &space).expect("a local step");
        let expect_lower = [0.5 - LOCAL_MIN_HALF_WIDTH, 0.5 - LOCAL_RADIUS * 0.5, 0.95 - LOCAL_RADIUS * 0.5];
        let expect_upper = [0.5 + LOCAL_MIN_HALF_WIDTH, 0.5 + LOCAL_RADIUS * 0.5, 1.0];
        for j in 0..3 {
            assert!((lower[j] - expect_lower[j]).abs() < 1e-12, "lower {lower:?}, expected {expect_lower:?}");
            assert!((upper[j] - expect_upper[j]).abs() < 1e-12, "upper {upper:?}, expected {expect_upper:?}");
        }
        // Every LOCAL_CYCLE-th model point is global.
        assert!(policy.local_box(LOCAL_CYCLE, &[0.5; 3], &[0.04, 0.5, 0.5], &space).is_none());
    }
}
