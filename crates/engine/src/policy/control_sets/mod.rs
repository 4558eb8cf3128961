//! Policies for studies with control sets (seed 000): the paper's `bocvs` (Hoang, Nguyen, Tran, "Bayesian
//! Optimization for Unknown Cost-Varying Variable Subsets with No-Regret Costs", AAAI 2025, Algorithm 1) and the
//! baselines of its experiments: `ucb-psq` and `ts-psq` (Hayashi, Honda, Kashima 2022), `etc-cvs` (the ETC-50
//! variant of UCB-CVS) and `ucb-cvs` (Tay et al., "Bayesian Optimization with Cost-varying Variable Subsets",
//! NeurIPS 2023).
//!
//! Shared machinery, here: the GP surrogate over the full encoded space (the standard model of
//! [`crate::policy::model`], squared-exponential ARD kernel by default as in the paper), per-set expectations
//! `E[a([x^i, X^{-i}])]` by sample-average approximation over fixed base samples of the uncontrolled parameters
//! ([`crate::blocks::control_sets::ControlSets::samples`], `mc_samples`, default 1024 as in Tay et al.'s code) using
//! [`crate::acquisition::ExpectedUcb`] (batched over the samples), their maximisation over the set's parameters (Sobol raw samples → best starts →
//! L-BFGS), observed-cost statistics, and the candidate a policy returns (only the set's parameters are assigned;
//! the uncontrolled coordinates hold the sample means, which pending and batch fantasies use).
//!
//! Every suggestion before the first observation is the set's point of the study's Sobol design (no model yet);
//! unlike the authors' code there are no free, uncharged initial full queries.

mod bocvs;
mod psq;
mod ucb_cvs;

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use bocvs::Bocvs;
pub use psq::{EtcCvs, Psq};
pub use ucb_cvs::UcbCvs;

use crate::acquisition::{Acquisition, Expected, ExpectedUcb, ThompsonSample};
use crate::blocks::control_sets::{ControlSets, RandomSamples};
use crate::data::PointExtras;
use crate::error::{FieldError, Result};
use crate::gp::{Gp, PathwiseSample};
use crate::kernel::KernelFamily;
use crate::optim::{OptimConfig, maximize};
use crate::policy::design::initial_design_point;
use crate::policy::model::{FittedModel, ModelOptions, ModelState, fit_model, top_rows};
use crate::policy::{Candidate, Context, Diagnostics, Policy, PolicyState, Recommendation, parse_options};
use crate::problem::Problem;
use crate::sampling::{Sobol, derive_seed};
use crate::space::Space;

/// Options shared by the control-set policies (`algorithm.options`); each policy accepts only its own subset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CvsOptions {
    /// Confidence multiplier β_t of `μ ± β σ` (the paper: 2 for every UCB method).
    pub beta: f64,
    /// Monte Carlo samples of the uncontrolled parameters for every expectation.
    pub mc_samples: usize,
    /// Sobol raw samples of each per-set maximisation.
    pub raw_samples: usize,
    /// L-BFGS starts taken from the raw samples.
    pub restarts: usize,
    /// `bocvs`: exploration rounds per control set (τ). At most one of `tau`, `explore_cost` and
    /// `explore_fraction`; without any, `explore_fraction` 0.6 when the study has a cost budget, else τ = 5.
    pub tau: Option<usize>,
    /// `bocvs`: explore until this much cost has been observed (the paper: 60 of a 100-unit budget).
    pub explore_cost: Option<f64>,
    /// `bocvs`: explore until this fraction of the study's `budget.max_cost` has been observed (the paper: 0.6).
    pub explore_fraction: Option<f64>,
    /// `bocvs`: tolerance α at the start of exploitation.
    pub alpha: f64,
    /// `bocvs`: α is halved after every this many exploitation rounds (default: the encoded dimension d).
    pub alpha_halving_every: Option<usize>,
    /// `bocvs`: horizon T in the cost confidence width `sqrt(2 ln T / T_i)` (default: the current round t).
    pub horizon: Option<usize>,
    /// `etc-cvs`: plays per group of equally sized sets before committing to UCB-PSQ (ETC-50: 50).
    pub plays_per_group: usize,
    /// `ucb-cvs`: ε_1 of the schedule ε_t = ε_1 · t^(−epsilon_decay) (default: 0.1 × the range of observed values).
    pub epsilon: Option<f64>,
    /// `ucb-cvs`: decay exponent of the ε-schedule.
    pub epsilon_decay: f64,
    /// `ts-psq`: random Fourier features of the posterior sample.
    pub thompson_features: usize,
    /// Surrogate options (`kernel` defaults to `rbf` here).
    #[serde(flatten)]
    pub model: ModelOptions,
}

impl Default for CvsOptions {
    fn default() -> Self {
        Self {
            beta: 2.0,
            mc_samples: 1024,
            raw_samples: 256,
            restarts: 2,
            tau: None,
            explore_cost: None,
            explore_fraction: None,
            alpha: 0.1,
            alpha_halving_every: None,
            horizon: None,
            plays_per_group: 50,
            epsilon: None,
            epsilon_decay: 0.5,
            thompson_features: 1024,
            model: ModelOptions { kernel: KernelFamily::Rbf, ..ModelOptions::default() },
        }
    }
}

const COMMON: [&str; 8] =
    ["beta", "mc_samples", "raw_samples", "restarts", "kernel", "fit_restarts", "refit_every", "fixed"];

/// Parses the options of control-set policy `name`, rejecting options of the other policies.
pub fn parse(name: &str, options: Value, problem: &Problem) -> Result<CvsOptions, Vec<FieldError>> {
    let Some(cs) = problem.control_sets.as_ref() else {
        return Err(vec![FieldError::new(
            "algorithm.name",
            format!("'{name}' needs a study with control_sets; add the block or choose another algorithm"),
        )]);
    };
    let own: &[&str] = match name {
        "bocvs" => &["tau", "explore_cost", "explore_fraction", "alpha", "alpha_halving_every", "horizon"],
        "etc-cvs" => &["plays_per_group"],
        "ucb-cvs" => &["epsilon", "epsilon_decay"],
        "ts-psq" => &["thompson_features"],
        _ => &[],
    };
    let mut errors = Vec::new();
    if let Value::Object(map) = &options {
        for k in map.keys() {
            if !COMMON.contains(&k.as_str()) && !own.contains(&k.as_str()) {
                errors.push(FieldError::new(format!("algorithm.options.{k}"), format!("not an option of '{name}'")));
            }
        }
    }
    let kernel_given = options.get("kernel").is_some();
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut o: CvsOptions = parse_options(options)?;
    if !kernel_given {
        o.model.kernel = KernelFamily::Rbf;
    }
    let positive = |v: f64| v.is_finite() && v >= 0.0;
    for (field, ok) in [
        ("beta", positive(o.beta)),
        ("mc_samples", (1..=65536).contains(&o.mc_samples)),
        ("raw_samples", (1..=65536).contains(&o.raw_samples)),
        ("restarts", o.restarts <= 64),
        ("tau", o.tau != Some(0)),
        ("explore_cost", o.explore_cost.is_none_or(positive)),
        ("explore_fraction", o.explore_fraction.is_none_or(|f| f > 0.0 && f <= 1.0)),
        ("alpha", (0.0..1.0).contains(&o.alpha)),
        ("alpha_halving_every", o.alpha_halving_every != Some(0)),
        ("horizon", o.horizon != Some(0)),
        ("plays_per_group", o.plays_per_group >= 1),
        ("epsilon", o.epsilon.is_none_or(positive)),
        ("epsilon_decay", positive(o.epsilon_decay)),
        ("thompson_features", (16..=16384).contains(&o.thompson_features)),
    ] {
        if !ok {
            errors.push(FieldError::new(format!("algorithm.options.{field}"), "out of range; see the documentation"));
        }
    }
    let lengths = [o.tau.is_some(), o.explore_cost.is_some(), o.explore_fraction.is_some()];
    if lengths.iter().filter(|g| **g).count() > 1 {
        errors.push(FieldError::new(
            "algorithm.options",
            "give at most one of tau, explore_cost and explore_fraction (the length of the exploration phase)",
        ));
    }
    errors.extend(o.model.validate(problem.space.dim()));
    if name == "ucb-cvs" {
        for (i, s) in cs.sets.iter().enumerate() {
            if s.cost.is_none() {
                errors.push(FieldError::new(
                    format!("control_sets[{i}].cost"),
                    "ucb-cvs needs the known cost of every set",
                ));
            }
        }
    }
    if errors.is_empty() { Ok(o) } else { Err(errors) }
}

/// One control set as the optimiser sees it.
pub(crate) struct SetView {
    /// Index of the set.
    pub set: usize,
    /// Encoded dimensions the set controls (in the set's parameter order).
    pub dims: Vec<usize>,
    /// The space of the set's parameters.
    pub space: Space,
    /// Fixed samples of the other dimensions.
    pub samples: RandomSamples,
}

/// The best controlled point of a set for one acquisition.
#[derive(Debug, Clone)]
pub(crate) struct SetOptimum {
    /// Maximiser (the set's encoded coordinates).
    pub x: Vec<f64>,
    /// `max E[a]`.
    pub value: f64,
}

/// Everything a control-set policy needs in one suggest call.
pub(crate) struct Setting<'a> {
    pub ctx: &'a Context<'a>,
    pub cs: &'a ControlSets,
    pub views: Vec<SetView>,
    pub options: &'a CvsOptions,
}

impl<'a> Setting<'a> {
    pub fn new(ctx: &'a Context<'a>, options: &'a CvsOptions) -> Result<Self> {
        let cs = ctx
            .problem
            .control_sets
            .as_ref()
            .ok_or_else(|| crate::error::Error::Conflict("this study has no control sets".into()))?;
        let space = ctx.space();
        let views = (0..cs.len())
            .map(|i| {
                let params = &cs.sets[i].params;
                SetView {
                    set: i,
                    dims: space.dims_of_params(params),
                    space: space.subspace(params),
                    samples: cs.samples(space, i, options.mc_samples, ctx.study_seed),
                }
            })
            .collect();
        Ok(Self { ctx, cs, views, options })
    }

    /// Round number (0-based) of the `k`-th suggestion of this call: every run so far, pending included.
    pub fn round(&self, k: usize) -> usize {
        let d = self.ctx.space().dim().max(1);
        self.ctx.data.n() + self.ctx.data.failed_x.len() / d + self.ctx.n_pending() + k
    }

    /// The surrogate with pending points fantasised at their posterior mean (kriging believer).
    pub fn model(&self, state: &mut ModelState) -> Result<Option<FittedModel>> {
        let Some(mut fitted) = fit_model(self.ctx, state, &self.options.model)? else { return Ok(None) };
        let d = self.ctx.space().dim();
        for p in self.ctx.pending.chunks_exact(d) {
            let (m, _) = fitted.gp.posterior(p);
            let _ = fitted.gp.condition(p, m, None);
        }
        Ok(Some(fitted))
    }

    fn optim_config(&self) -> OptimConfig {
        OptimConfig { raw_samples: self.options.raw_samples, restarts: self.options.restarts, max_iter: 100 }
    }

    /// `max_{x^i} E[inner([x^i, X^{-i}])]` over set `view` (sample-average approximation).
    pub fn maximize<A: Acquisition>(&self, inner: A, view: &SetView, seed: u64) -> SetOptimum {
        let expected = Expected::new(inner, view.dims.clone(), view.samples.dims.clone(), view.samples.values.clone());
        self.maximize_expected(&expected, view, seed)
    }

    /// `max_{x^i}` of an expectation `expected` over set `view`'s parameters.
    fn maximize_expected(&self, expected: &dyn Acquisition, view: &SetView, seed: u64) -> SetOptimum {
        let cfg = self.optim_config();
        let dc = view.dims.len();
        let mut raw = Sobol::scrambled(dc, seed).take(cfg.raw_samples);
        for row in raw.chunks_exact_mut(dc) {
            view.space.snap(row);
        }
        // Score the raw samples in chunks so that points × samples stays bounded in memory.
        let per_chunk = (16384 / view.samples.m).max(1);
        let values: Vec<f64> = raw.chunks(per_chunk * dc).flat_map(|c| expected.values(c)).collect();
        let mut order: Vec<usize> = (0..values.len()).filter(|&i| values[i].is_finite()).collect();
        order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
        let mut starts: Vec<Vec<f64>> =
            order.iter().take(cfg.restarts.max(1)).map(|&i| raw[i * dc..(i + 1) * dc].to_vec()).collect();
        starts.extend(top_rows(self.ctx, 2).into_iter().map(|r| view.dims.iter().map(|&j| r[j]).collect()));
        let local = maximize(expected, &view.space, &OptimConfig { raw_samples: 1, restarts: 0, ..cfg }, seed, &starts);
        match order.first() {
            Some(&i) if values[i] > local.value || !local.value.is_finite() => {
                SetOptimum { x: raw[i * dc..(i + 1) * dc].to_vec(), value: values[i] }
            }
            _ => SetOptimum { x: local.x, value: local.value },
        }
    }

    /// `max E[f̃]` of a posterior draw f̃ for set `view` (Thompson sampling), factorised over the samples when the
    /// model allows ([`PathwiseSample::expected`]), else averaged per sample.
    pub fn maximize_draw(&self, draw: &PathwiseSample, view: &SetView, seed: u64) -> SetOptimum {
        match draw.expected(&view.dims, &view.samples.dims, &view.samples.values) {
            Some(expected) => self.maximize_expected(&expected, view, seed),
            None => self.maximize(ThompsonSample::new(draw.clone(), draw.dim()), view, seed),
        }
    }

    /// `max E[μ + m σ]` for set `view` (m = β for the UCB, −β for the LCB).
    pub fn maximize_bound(&self, gp: &Gp, view: &SetView, multiplier: f64, seed: u64) -> SetOptimum {
        self.maximize_expected(&self.expected_ucb(gp, view, multiplier), view, seed)
    }

    /// `E[μ + m σ]` over set `view`'s samples as a function of its controlled coordinates.
    fn expected_ucb<'g>(&self, gp: &'g Gp, view: &SetView, multiplier: f64) -> ExpectedUcb<'g> {
        ExpectedUcb::new(gp, multiplier, view.dims.clone(), view.samples.dims.clone(), view.samples.values.clone())
    }

    /// The full encoded point of a set's controlled coordinates, the others at their sample means.
    pub fn full_point(&self, view: &SetView, x: &[f64]) -> Vec<f64> {
        let mut full = self.ctx.space().centre();
        for (q, &j) in view.dims.iter().enumerate() {
            full[j] = x[q];
        }
        for (q, &j) in view.samples.dims.iter().enumerate() {
            full[j] = view.samples.means()[q];
        }
        full
    }

    /// `(E[μ], E[σ])` at a set's controlled point.
    pub fn expected_posterior(&self, gp: &Gp, view: &SetView, x: &[f64]) -> (f64, f64) {
        let mean = self.expected_ucb(gp, view, 0.0);
        let ucb = self.expected_ucb(gp, view, 1.0);
        let m = mean.value(x);
        (m, ucb.value(x) - m)
    }

    /// A design candidate for set `set` (before any observation).
    pub fn design(&self, set: usize, round: usize, phase: &str) -> Candidate {
        let view = &self.views[set];
        let x = initial_design_point(&view.space, round as u64, derive_seed(self.ctx.study_seed, set as u64));
        self.candidate(None, view, &x, phase, Map::new())
    }

    /// The candidate playing `view` at `x`; `gp` gives the prediction.
    pub fn candidate(
        &self,
        gp: Option<&Gp>,
        view: &SetView,
        x: &[f64],
        phase: &str,
        extra: Map<String, Value>,
    ) -> Candidate {
        let set = &self.cs.sets[view.set];
        Candidate {
            x: self.full_point(view, x),
            params: Some(set.params.clone()),
            extras: PointExtras {
                control_set: Some(view.set),
                expected_cost: set.cost.or_else(|| self.cost_stats()[view.set].mean()),
                ..PointExtras::default()
            },
            predicted: gp.map(|g| self.expected_posterior(g, view, x)),
            diagnostics: Diagnostics {
                phase: Some(phase.into()),
                jitter: gp.map(Gp::jitter),
                hyperparameters: gp.map(|g| g.hyperparameters().describe(g.kernel())),
                extra,
                ..Default::default()
            },
        }
    }

    /// Observed-cost statistics of every set (successful observations that name their set and report a cost).
    pub fn cost_stats(&self) -> Vec<CostStats> {
        let data = self.ctx.data;
        let mut out = vec![CostStats::default(); self.cs.len()];
        for (set, cost) in data.extras.iter().map(|e| &e.control_set).zip(&data.cost) {
            if let (Some(i), Some(c)) = (set, cost)
                && let Some(s) = out.get_mut(*i)
            {
                s.count += 1;
                s.sum += c;
            }
        }
        out
    }

    /// Total observed cost (failed runs included).
    pub fn spent(&self) -> f64 {
        self.ctx.data.all_costs.iter().flatten().sum()
    }
}

/// Observed costs of one set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CostStats {
    /// Number of observed costs.
    pub count: usize,
    /// Their sum.
    pub sum: f64,
}

impl CostStats {
    /// Mean observed cost.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

/// Suggests `count` candidates by calling `step` with a model fantasised on the earlier picks; before the first
/// observation (or when no model can be fitted) the sets' design points are played round robin.
pub(crate) fn suggest_with(
    setting: &Setting<'_>,
    model_state: &mut ModelState,
    count: usize,
    mut step: impl FnMut(&Setting<'_>, &Gp, usize) -> Result<Candidate>,
) -> Result<Vec<Candidate>> {
    let started = Instant::now();
    let fitted = if setting.ctx.data.n() == 0 { None } else { setting.model(model_state).ok().flatten() };
    let Some(FittedModel { mut gp, refit, millis, .. }) = fitted else {
        return Ok((0..count)
            .map(|k| {
                let round = setting.round(k);
                setting.design(round % setting.cs.len(), round / setting.cs.len(), "initial_design")
            })
            .collect());
    };
    let mut out = Vec::with_capacity(count);
    for k in 0..count {
        let mut c = step(setting, &gp, k)?;
        c.diagnostics.refit = Some(refit && k == 0);
        c.diagnostics.fit_ms = Some(if k == 0 { millis } else { 0.0 });
        c.diagnostics.acquisition_ms = Some(started.elapsed().as_secs_f64() * 1e3 - millis);
        if k + 1 < count {
            let (m, _) = gp.posterior(&c.x);
            let _ = gp.condition(&c.x, m, None);
        }
        out.push(c);
    }
    Ok(out)
}

/// Recommendation shared by the control-set policies: the set and point with the largest `E[μ]`.
pub(crate) fn recommend(
    ctx: &Context<'_>,
    options: &CvsOptions,
    state: &PolicyState,
) -> Result<Option<Recommendation>> {
    let options = CvsOptions { mc_samples: options.mc_samples.min(256), ..options.clone() };
    let setting = Setting::new(ctx, &options)?;
    let mut ms: ModelState =
        state.0.get("model").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
    ms.hold_fit(ctx.data.n());
    let Some(fitted) = fit_model(ctx, &mut ms, &options.model)? else { return Ok(None) };
    let gp = &fitted.gp;
    let best = setting
        .views
        .iter()
        .map(|v| (v, setting.maximize_bound(gp, v, 0.0, derive_seed(ctx.seed, 0xBE57 + v.set as u64))))
        .max_by(|a, b| a.1.value.total_cmp(&b.1.value));
    Ok(best.map(|(view, opt)| {
        let (mu, sd) = setting.expected_posterior(gp, view, &opt.x);
        let mut extra = Map::new();
        extra.insert("control_set".into(), Value::from(setting.cs.sets[view.set].name.clone()));
        Recommendation {
            x: setting.full_point(view, &opt.x),
            params: Some(setting.cs.sets[view.set].params.clone()),
            predicted: (mu, sd),
            extra,
        }
    }))
}

/// Builds control-set policy `name`.
pub fn build(name: &str, options: Value, problem: &Problem) -> Result<Box<dyn Policy>, Vec<FieldError>> {
    let o = parse(name, options, problem)?;
    Ok(match name {
        "bocvs" => Box::new(Bocvs::new(o)),
        "ucb-psq" => Box::new(Psq::ucb(o)),
        "ts-psq" => Box::new(Psq::thompson(o)),
        "etc-cvs" => Box::new(EtcCvs::new(o)),
        _ => Box::new(UcbCvs::new(o)),
    })
}
