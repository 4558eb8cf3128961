//! Policies for studies with context parameters whose distribution is unknown (seed 002): `sbo-kde`, `drbo-kde`
//! and the baselines `stableopt` and `drbo-mmd`.
//!
//! Huang, Song, Xue, Qian, "Stochastic Bayesian Optimization with Unknown Continuous Context Distribution via
//! Kernel Density Estimation", AAAI 2024. Each round: a GP on the joint input (x, c) (the standard model of
//! [`crate::policy::model`], refitted on its schedule); `ucb(x, c) = μ + √β σ` with √β = 1.5 (App. B.1); then x maximises
//! - `sbo-kde` (Algorithm 1): `(1/M) Σ_m ucb(x, ĉ_m)`, ĉ_m ~ p̂ the KDE of the observed contexts ([`crate::kde`]),
//!   M = 1024 fresh samples per round (sample-average approximation, fixed inside the optimiser);
//! - `drbo-kde` (Algorithm 2): the worst case of that expectation over the total-variation ball of radius
//!   `δ_t = t^{−2/(4+D_c)}` (t = number of observations, as the code) around p̂, solved exactly by sorting
//!   ([`crate::acquisition::tv_dro`]); `inf_c ucb(x, c)` is the minimum over a scrambled Sobol set of 1024
//!   contexts of the box (the authors' code maps that set into `[−1, 0]` by a sign slip; we use the box);
//! - `stableopt` (Bogunovic et al., NeurIPS 2018): `min_{c ∈ C_t} ucb(x, c)` over the box
//!   `[mean − std, mean + std]` of the observed contexts (clipped to the context box), by the minimum over 1024
//!   scrambled Sobol points of it (the code's sign slip moved it to `[μ − 3σ, μ − σ]`; we use the paper's box);
//! - `drbo-mmd` (Kirschner et al., AISTATS 2020): the worst case over an MMD ball around the empirical distribution
//!   of the observed contexts snapped to a grid ([`crate::acquisition::mmd_dro`]).
//!
//! When a suggest request carries the context values (known before the run), every method maximises
//! `ucb(x, c_known)` instead. `recommend` maximises the expected posterior mean `(1/M) Σ_m μ(x, ĉ_m)` under the KDE
//! and reports it with the posterior standard deviation of that average.
//!
//! Optimiser (deviation, for speed on a CPU): the authors screen 1024 raw samples with all M contexts (DRBO: 32);
//! we screen `raw_samples` Sobol decisions (drbo-mmd: at most 32, as the authors, and one start) with the first `screening_contexts` samples, then run L-BFGS with all M
//! contexts (at most 60 iterations; 20 for the piecewise-smooth worst cases) from the best `restarts` of them and the two best observed decisions.

use std::time::Instant;

use rand::{SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::acquisition::Acquisition;
use crate::acquisition::context::{Aggregate, ContextAcquisition, ContextUcb, MeanOfFirst, Minimum, WorstCaseTv};
use crate::acquisition::mmd_dro::{MmdBall, WorstCaseMmd};
use crate::error::{FieldError, Result};
use crate::gp::Gp;
use crate::kde::Kde;
use crate::optim::{OptimConfig, maximize};
use crate::policy::model::{FittedModel, ModelOptions, design_then_model, fit_model, stored_model_state, top_rows};
use crate::policy::{
    Candidate, Context, Diagnostics, Policy, PolicyState, Recommendation, out_of_range, parse_options,
};
use crate::sampling::{Sobol, derive_seed};

/// Which context method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextMethod {
    /// Expected UCB under the KDE (Algorithm 1).
    SboKde,
    /// Worst-case expected UCB over a TV ball around the KDE (Algorithm 2).
    DrboKde,
    /// Max-min UCB over the box mean ± std of the observed contexts.
    StableOpt,
    /// Worst-case expected UCB over an MMD ball around the empirical distribution on a grid.
    DrboMmd,
}

impl ContextMethod {
    fn name(self) -> &'static str {
        match self {
            ContextMethod::SboKde => "sbo-kde",
            ContextMethod::DrboKde => "drbo-kde",
            ContextMethod::StableOpt => "stableopt",
            ContextMethod::DrboMmd => "drbo-mmd",
        }
    }
}

/// Options of the context policies (`algorithm.options`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextBoOptions {
    /// Size of the Sobol initial design over the decisions (default `clamp(2·d + 1, 10, 50)`; the paper uses 10).
    pub initial_design: Option<usize>,
    /// Multiplier of σ in the UCB (the paper's √β_t = 1.5).
    pub sqrt_beta: f64,
    /// Number M of KDE samples per round.
    pub context_samples: usize,
    /// Sobol contexts for `inf_c ucb` (drbo-kde) and StableOpt's inner minimum.
    pub box_samples: usize,
    /// Fixed radius δ instead of the schedule (drbo-kde: TV radius, drbo-mmd: MMD radius).
    pub radius: Option<f64>,
    /// Target number of grid contexts for drbo-mmd (`⌈N^{1/D_c}⌉` per dimension).
    pub grid_size: usize,
    /// Confidence γ of the drbo-mmd radius `(2 + √(2 ln(1/γ)))/√t`.
    pub gamma: f64,
    /// Sobol decisions screened for starts.
    pub raw_samples: usize,
    /// Contexts used when screening.
    pub screening_contexts: usize,
    /// L-BFGS starts from the screening (the best observed decisions come on top).
    pub restarts: usize,
    /// Surrogate options.
    #[serde(flatten)]
    pub model: ModelOptions,
}

impl Default for ContextBoOptions {
    fn default() -> Self {
        Self {
            initial_design: None,
            sqrt_beta: 1.5,
            context_samples: 1024,
            box_samples: 1024,
            radius: None,
            grid_size: 100,
            gamma: 0.1,
            raw_samples: 512,
            screening_contexts: 32,
            restarts: 3,
            model: ModelOptions::default(),
        }
    }
}

/// A context policy.
#[derive(Debug, Clone)]
pub struct ContextBo {
    method: ContextMethod,
    options: ContextBoOptions,
}

/// The contexts an acquisition is evaluated at and how their UCB values are aggregated.
struct Plan {
    contexts: Vec<f64>,
    aggregate: Box<dyn Aggregate>,
    extra: serde_json::Map<String, Value>,
}

impl Aggregate for Box<dyn Aggregate> {
    fn aggregate(&self, u: &[f64]) -> (f64, Vec<f64>) {
        (**self).aggregate(u)
    }
}

impl ContextBo {
    /// Parses and checks the options.
    pub fn build(method: ContextMethod, options: Value, encoded_dim: usize) -> Result<Self, Vec<FieldError>> {
        let options: ContextBoOptions = parse_options(options)?;
        let mut errors = Vec::new();
        if !(options.sqrt_beta.is_finite() && options.sqrt_beta >= 0.0) {
            errors.push(FieldError::new("algorithm.options.sqrt_beta", "must be a finite number ≥ 0"));
        }
        if options.radius.is_some_and(|r| !(r.is_finite() && r >= 0.0)) {
            errors.push(FieldError::new("algorithm.options.radius", "must be a finite number ≥ 0"));
        }
        if !(options.gamma > 0.0 && options.gamma < 1.0) {
            errors.push(FieldError::new("algorithm.options.gamma", "must be in (0, 1)"));
        }
        errors.extend(out_of_range(&[
            ("context_samples", options.context_samples, 1, 16384),
            ("box_samples", options.box_samples, 1, 16384),
            ("grid_size", options.grid_size, 2, 4096),
            ("raw_samples", options.raw_samples, 1, 65536),
            ("screening_contexts", options.screening_contexts, 1, 16384),
            ("restarts", options.restarts, 0, 256),
        ]));
        errors.extend(options.model.validate(encoded_dim));
        if errors.is_empty() { Ok(Self { method, options }) } else { Err(errors) }
    }

    fn initial_design(&self, d: usize) -> usize {
        self.options.initial_design.unwrap_or(crate::policy::design::default_initial_design(d))
    }
}

/// Encoded context dimensions and the observed contexts (`n × cdims` row-major).
fn observed_contexts(ctx: &Context<'_>) -> (Vec<usize>, Vec<f64>) {
    let cdims = ctx.problem.space.dims_of_params(&ctx.problem.contexts);
    let obs = (0..ctx.data.n()).flat_map(|i| cdims.iter().map(move |&j| ctx.data.row(i)[j])).collect();
    (cdims, obs)
}

/// Per-dimension mean and population standard deviation of row-major points.
fn mean_std(points: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = (points.len() / d.max(1)).max(1) as f64;
    let mean: Vec<f64> = (0..d).map(|j| points.chunks_exact(d).map(|p| p[j]).sum::<f64>() / n).collect();
    let sd =
        (0..d).map(|j| (points.chunks_exact(d).map(|p| (p[j] - mean[j]).powi(2)).sum::<f64>() / n).sqrt()).collect();
    (mean, sd)
}

/// `m` samples of the KDE of the observed contexts (encoded box `[0, 1]^D_c`), and its bandwidth.
fn kde_samples(observed: &[f64], dc: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    match Kde::fit(observed, &vec![0.0; dc], &vec![1.0; dc]) {
        Some(kde) => (kde.sample(m, &mut StdRng::seed_from_u64(seed)), kde.bandwidth().to_vec()),
        None => (vec![0.5; m * dc], vec![0.0; dc]),
    }
}

impl Policy for ContextBo {
    fn name(&self) -> &'static str {
        self.method.name()
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let n_init = self.initial_design(ctx.problem.decision.len()) as u64;
        design_then_model(ctx, state, count, n_init, &self.options.model, |fitted, n| self.model_step(ctx, fitted, n))
    }

    fn model_options(&self) -> ModelOptions {
        self.options.model.clone()
    }

    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        let mut ms = stored_model_state(state);
        ms.hold_fit(ctx.data.n());
        let Some(m) = fit_model(ctx, &mut ms, &self.options.model)? else { return Ok(None) };
        let gp = &m.gp;
        let problem = ctx.problem;
        let ddims = problem.space.dims_of_params(&problem.decision);
        let (cdims, observed) = observed_contexts(ctx);
        let base = problem.space.centre();
        let samples = if cdims.is_empty() {
            Vec::new()
        } else {
            kde_samples(&observed, cdims.len(), self.options.context_samples, derive_seed(ctx.seed, 0xBE57)).0
        };
        let k = samples.len() / cdims.len().max(1);
        let mean = ContextAcquisition {
            ucb: ContextUcb::new(gp, 0.0, ddims.clone(), cdims.clone(), samples.clone(), base.clone()),
            aggregate: MeanOfFirst(k.max(1)),
        };
        let starts: Vec<Vec<f64>> =
            top_rows(ctx, 5).into_iter().map(|r| ddims.iter().map(|&j| r[j]).collect()).collect();
        let opt = maximize(
            &mean,
            &problem.decision_space(),
            &OptimConfig { raw_samples: 64, restarts: 2, max_iter: 100 },
            ctx.seed,
            &starts,
        );
        // Posterior standard deviation of the average over (up to) 256 of the samples: 1ᵀΣ1/m².
        let sub = k.clamp(1, 256);
        let mut points = Vec::with_capacity(sub * base.len());
        for s in 0..sub {
            let mut p = base.clone();
            for (q, &j) in ddims.iter().enumerate() {
                p[j] = opt.x[q];
            }
            for (q, &j) in cdims.iter().enumerate() {
                p[j] = samples.get(s * cdims.len() + q).copied().unwrap_or(0.5);
            }
            points.extend(p);
        }
        let (_, cov) = gp.posterior_joint(&points);
        let mut total = 0.0;
        for i in 0..sub {
            for j in 0..sub {
                total += cov[(i, j)];
            }
        }
        let sd = (total.max(0.0)).sqrt() / sub as f64;
        let mut x = problem.lift(&opt.x);
        for (q, &j) in cdims.iter().enumerate() {
            x[j] = mean_std(&observed, cdims.len()).0[q];
        }
        let mut extra = serde_json::Map::new();
        extra.insert("expected_value_over".into(), json!("kde_of_observed_contexts"));
        extra.insert("context_samples".into(), json!(k));
        Ok(Some(Recommendation { x, params: None, predicted: (opt.value, sd), extra }))
    }
}

impl ContextBo {
    fn model_step(&self, ctx: &Context<'_>, fitted: FittedModel, count: usize) -> Result<Vec<Candidate>> {
        let FittedModel { mut gp, refit, millis: fit_ms, .. } = fitted;
        let problem = ctx.problem;
        let d = problem.space.dim();
        let ddims = problem.space.dims_of_params(&problem.decision);
        let (cdims, observed) = observed_contexts(ctx);
        let (ctx_mean, _) = mean_std(&observed, cdims.len());
        // Kriging believer: pending points at the context they were suggested for (else the mean observed one, as
        // `Study` encodes them), failed points at the mean observed context.
        for p in ctx.pending.chunks_exact(d) {
            let (m, _) = gp.posterior(p);
            let _ = gp.condition(p, m, None);
        }
        for p in ctx.data.failed_x.chunks_exact(d) {
            let mut p = p.to_vec();
            for (q, &j) in cdims.iter().enumerate() {
                p[j] = ctx_mean[q];
            }
            let (m, _) = gp.posterior(&p);
            let _ = gp.condition(&p, m, None);
        }
        let dspace = problem.decision_space();
        let base = problem.space.centre();
        let hypers = gp.hyperparameters().describe(gp.kernel());
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            let started = Instant::now();
            let seed = derive_seed(ctx.seed, k as u64);
            let plan = self.plan(ctx, &gp, &cdims, &observed, seed, false);
            let coarse = self.plan(ctx, &gp, &cdims, &observed, seed, true);
            let full = ContextAcquisition {
                ucb: ContextUcb::new(
                    &gp,
                    self.options.sqrt_beta,
                    ddims.clone(),
                    cdims.clone(),
                    plan.contexts,
                    base.clone(),
                ),
                aggregate: plan.aggregate,
            };
            let screen = ContextAcquisition {
                ucb: ContextUcb::new(
                    &gp,
                    self.options.sqrt_beta,
                    ddims.clone(),
                    cdims.clone(),
                    coarse.contexts,
                    base.clone(),
                ),
                aggregate: coarse.aggregate,
            };
            // Each MMD worst case is an iterative solve: screen few decisions, as the authors do (32).
            let (raw, restarts) = match self.method {
                ContextMethod::DrboMmd => (self.options.raw_samples.min(32), self.options.restarts.min(1)),
                _ => (self.options.raw_samples, self.options.restarts),
            };
            let mut starts = screened_starts(&screen, &dspace, raw, restarts, seed);
            starts.extend(top_rows(ctx, 2).into_iter().map(|r| ddims.iter().map(|&j| r[j]).collect::<Vec<f64>>()));
            // The worst-case aggregations are only piecewise smooth and L-BFGS stalls on their kinks: fewer
            // iterations for them (the expectation of sbo-kde is smooth).
            let max_iter = if self.method == ContextMethod::SboKde { 60 } else { 20 };
            let config = OptimConfig { raw_samples: 1, restarts: 0, max_iter };
            let opt = maximize(&full, &dspace, &config, seed, &starts);
            let mut x = problem.lift(&opt.x);
            // Predicted: posterior mean and root-mean variance over the contexts of the plan (or the known one).
            let (mu, var) = {
                let (m, v) = full.ucb.posterior_many(&opt.x);
                let n = m.len().max(1) as f64;
                (m.iter().sum::<f64>() / n, v.iter().sum::<f64>() / n)
            };
            let fantasy_context: Vec<f64> = match ctx.known_context {
                Some(known) => cdims.iter().map(|&j| known[j]).collect(),
                None => ctx_mean.clone(),
            };
            for (q, &j) in cdims.iter().enumerate() {
                x[j] = fantasy_context[q];
            }
            out.push(Candidate {
                x: x.clone(),
                predicted: Some((mu, var.sqrt())),
                diagnostics: Diagnostics {
                    phase: Some("model".into()),
                    acquisition_value: Some(opt.value).filter(|v| v.is_finite()),
                    jitter: Some(gp.jitter()),
                    hyperparameters: Some(hypers.clone()),
                    refit: Some(refit),
                    fit_ms: Some(if k == 0 { fit_ms } else { 0.0 }),
                    acquisition_ms: Some(started.elapsed().as_secs_f64() * 1e3),
                    extra: {
                        let mut e = plan.extra;
                        e.insert("acquisition_evaluations".into(), json!(opt.evaluations));
                        e
                    },
                },
                ..Default::default()
            });
            if k + 1 < count {
                let (m, _) = gp.posterior(&x);
                let _ = gp.condition(&x, m, None);
            }
        }
        Ok(out)
    }

    /// Contexts and aggregation of this round; `coarse` takes the screening subset.
    fn plan(&self, ctx: &Context<'_>, gp: &Gp, cdims: &[usize], observed: &[f64], seed: u64, coarse: bool) -> Plan {
        let o = &self.options;
        let dc = cdims.len();
        let mut extra = serde_json::Map::new();
        if let Some(known) = ctx.known_context {
            extra.insert("context".into(), json!("known"));
            return Plan {
                contexts: cdims.iter().map(|&j| known[j]).collect(),
                aggregate: Box::new(MeanOfFirst(1)),
                extra,
            };
        }
        let t = ctx.data.n().max(1) as f64;
        let m = if coarse { o.screening_contexts.min(o.context_samples) } else { o.context_samples };
        let s = if coarse { o.screening_contexts.min(o.box_samples) } else { o.box_samples };
        let box_sobol = |lo: &[f64], hi: &[f64]| -> Vec<f64> {
            let mut pts = Sobol::scrambled(dc, derive_seed(seed, 0xB0C5)).take(o.box_samples);
            pts.truncate(s * dc);
            for p in pts.chunks_exact_mut(dc) {
                for j in 0..dc {
                    p[j] = lo[j] + p[j] * (hi[j] - lo[j]);
                }
            }
            pts
        };
        match self.method {
            ContextMethod::SboKde => {
                let (mut samples, h) = kde_samples(observed, dc, o.context_samples, derive_seed(seed, 0xCDE));
                samples.truncate(m * dc);
                extra.insert("bandwidth".into(), json!(h));
                extra.insert("context_samples".into(), json!(m));
                Plan { contexts: samples, aggregate: Box::new(MeanOfFirst(m)), extra }
            }
            ContextMethod::DrboKde => {
                let (mut samples, h) = kde_samples(observed, dc, o.context_samples, derive_seed(seed, 0xCDE));
                samples.truncate(m * dc);
                let delta = o.radius.unwrap_or_else(|| t.powf(-2.0 / (4.0 + dc as f64)));
                samples.extend(box_sobol(&vec![0.0; dc], &vec![1.0; dc]));
                extra.insert("bandwidth".into(), json!(h));
                extra.insert("radius".into(), json!(delta));
                extra.insert("context_samples".into(), json!(m));
                Plan { contexts: samples, aggregate: Box::new(WorstCaseTv { m, delta }), extra }
            }
            ContextMethod::StableOpt => {
                let (mean, sd) = mean_std(observed, dc);
                let lo: Vec<f64> = (0..dc).map(|j| (mean[j] - sd[j]).clamp(0.0, 1.0)).collect();
                let hi: Vec<f64> = (0..dc).map(|j| (mean[j] + sd[j]).clamp(0.0, 1.0)).collect();
                extra.insert("context_box".into(), json!({"low": lo, "high": hi}));
                Plan { contexts: box_sobol(&lo, &hi), aggregate: Box::new(Minimum), extra }
            }
            ContextMethod::DrboMmd => {
                let ball = MmdBall::new(gp, cdims, observed, o.grid_size);
                let delta = o.radius.unwrap_or_else(|| (2.0 + (2.0 * (1.0 / o.gamma).ln()).sqrt()) / t.sqrt());
                extra.insert("radius".into(), json!(delta));
                extra.insert("grid_contexts".into(), json!(ball.n()));
                let contexts = ball.grid().to_vec();
                Plan { contexts, aggregate: Box::new(WorstCaseMmd::new(ball, delta)), extra }
            }
        }
    }
}

/// The best `restarts` of `raw` scrambled Sobol decisions under `acq`.
fn screened_starts(
    acq: &dyn Acquisition,
    space: &crate::space::Space,
    raw: usize,
    restarts: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    let d = space.dim().max(1);
    let mut pts = Sobol::scrambled(space.dim(), derive_seed(seed, 0x5C4)).take(raw);
    for p in pts.chunks_exact_mut(d) {
        space.snap(p);
    }
    let v = acq.values(&pts);
    let mut order: Vec<usize> = (0..v.len()).filter(|&i| v[i].is_finite()).collect();
    order.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
    order.into_iter().take(restarts.max(1)).map(|i| pts[i * d..(i + 1) * d].to_vec()).collect()
}

/// `sbo-kde`, `drbo-kde`, `stableopt` or `drbo-mmd`; the study needs a parameter with role `context`.
pub fn build(
    name: &str,
    options: Value,
    problem: &crate::problem::Problem,
) -> std::result::Result<Box<dyn Policy>, Vec<FieldError>> {
    let method = match name {
        "sbo-kde" => ContextMethod::SboKde,
        "drbo-kde" => ContextMethod::DrboKde,
        "stableopt" => ContextMethod::StableOpt,
        _ => ContextMethod::DrboMmd,
    };
    if problem.contexts.is_empty() {
        return Err(vec![FieldError::new(
            "algorithm.name",
            format!("'{name}' needs at least one parameter with role 'context'"),
        )]);
    }
    ContextBo::build(method, options, problem.space.dim()).map(|p| Box::new(p) as _)
}
