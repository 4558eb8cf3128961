//! `truvar`: Truncated Variance Reduction (Bogunovic, Scarlett, Krause, Cevher, "Truncated Variance Reduction: A
//! Unified Approach to Bayesian Optimization and Level-Set Estimation", NIPS 2016), Algorithms 1–2, for both
//! tasks: BO (the default) and level-set estimation (when the study has a `level_set` block).
//!
//! Each step picks the point (and, with `noise_levels`, the level) maximising Eq. (3), the reduction of the
//! truncated variance Σ_{x̄∈M} max{β_(i) σ²(x̄), η_(i)²} per unit cost, with the O(t²)-per-candidate look-ahead of
//! App. B ([`lookahead`]). After each observation the sets M (potential maximisers, Eq. 5; or ambiguous points,
//! Eq. 6) and H, L (Eq. 7) are updated and the epoch advances while every β^½σ in M is within (1 + δ̄)·η
//! ([`sets`]). Epoch, η, t_(i), M, H and L are the persisted [`PolicyState`].
//!
//! Settings (Sec. 4): β_(i) = a·ln(|D|·t_(i)²) with a = 0.5 for BO and 1 for LSE, η_(1) = 1, r = 0.1, δ̄ = 0.
//! Variants of App. A: `monotonic: false` replaces M_{t−1} by D in Eqs. 5–7 (the default when hyperparameters are
//! learned, as in the paper's SVM experiment); continuous domains use representer points (a 50×50 grid in 2-D).
//! Deviations: (i) the paper maximises Eq. (3) over a continuous box with DIRECT; we maximise over the
//! representer points and polish the best by a compass search. (ii) σ and η are in the GP's standardised units (σ over
//! the output scale), so η_(1) = 1 means one prior standard deviation; with `fixed` hyperparameters and
//! `standardize: false` (the paper's known prior) the units are the paper's. (iii) When several observations
//! arrive between two suggestions, Algorithm 2 is applied once with all of them. (iv) Pending points are
//! fantasised at their posterior mean with the noisiest allowed level (the look-ahead only needs their noise).
//! (v) |D| in β is the number of points, not points × levels. No reference code exists (seed-experiments.md).

mod lookahead;
pub mod sets;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use lookahead::{Lookahead, PriorGram, truncated_reduction};
use sets::{Epoch, Schedule, potential_maximizers, split_level_set};

use crate::blocks::measurement::{self, level_set};
use crate::data::PointExtras;
use crate::error::{FieldError, Result};
use crate::gp::Gp;
use crate::policy::design::{default_initial_design, design_candidate, design_index, initial_design_point};
use crate::policy::model::{ModelOptions, ModelState, fit_model, posterior_at};
use crate::policy::{Candidate, Context, Diagnostics, Policy, PolicyState, Recommendation, parse_options};
use crate::problem::Problem;

/// Options of `truvar` (`algorithm.options`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TruvarOptions {
    /// a in β_(i) = a·ln(|D|·t_(i)²); default 0.5 for BO, 1 for level sets (Sec. 4). With the monotone M_t of BO,
    /// a = 0.5 (β^½ ≈ 2 on 2500 points) can drop the maximiser for good when the function exceeds that confidence
    /// bound: it did on 20 of the 200 functions of `bench seed003` `synthetic_bo` (final regret > 0.01 on 22),
    /// while with a = 1 the final regret exceeded 0.01 on 2 (docs/bench/seed003.md).
    pub beta_scale: Option<f64>,
    /// η_(1) (0 gives pure variance reduction, App. A).
    pub eta: f64,
    /// r: η_(i+1) = r·η_(i).
    pub shrink: f64,
    /// δ̄ of the epoch rule.
    pub delta_bar: f64,
    /// Shrink M monotonically (Eqs. 5–7); default true with `fixed` hyperparameters, false when they are learned.
    pub monotonic: Option<bool>,
    /// Representer points of a continuous domain (a grid when it has ≥ 5 points per axis, else Sobol).
    pub representer_points: usize,
    /// Points chosen from the study's Sobol sequence before the model is used (default 0 with `fixed`
    /// hyperparameters, else `clamp(2·d + 1, 10, 50)`).
    pub initial_design: Option<usize>,
    /// Play only this noise level (default: choose among all, the cost-normalised rule of Eq. 3).
    pub noise_level: Option<String>,
    /// Choose x only among the unclassified points M_{t−1} (App. A: "minimal effect").
    pub select_from_unclassified: bool,
    /// Surrogate options (`kernel`, `fit_restarts`, `refit_every`, `fixed`).
    #[serde(flatten)]
    pub model: ModelOptions,
}

impl Default for TruvarOptions {
    fn default() -> Self {
        Self {
            beta_scale: None,
            eta: 1.0,
            shrink: 0.1,
            delta_bar: 0.0,
            monotonic: None,
            representer_points: measurement::DEFAULT_REPRESENTER_POINTS,
            initial_design: None,
            noise_level: None,
            select_from_unclassified: false,
            model: ModelOptions::default(),
        }
    }
}

/// State carried between calls (the paper's epoch i, η_(i), t_(i), M, H, L).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TruvarState {
    /// Surrogate hyperparameters.
    pub model: ModelState,
    /// Current epoch (`None` before the first call).
    pub epoch: Option<Epoch>,
    /// Observations Algorithm 2 has been applied to.
    pub processed: usize,
    /// |D| the sets index into.
    pub domain_size: usize,
    /// M: indices into D of the unclassified points (`None`: all of D).
    pub unclassified: Option<Vec<usize>>,
    /// H (level sets): points classified above h.
    pub above: Vec<usize>,
    /// L (level sets): points classified below h.
    pub below: Vec<usize>,
}

/// The TRUVAR policy.
#[derive(Debug, Clone)]
pub struct Truvar {
    options: TruvarOptions,
    /// Level index when `noise_level` is given.
    level: Option<usize>,
    /// The domain's prior Gram of the last suggestion, reused while the hyperparameters are unchanged (a study
    /// driven in one process, such as a bench loop, then evaluates the kernel on D × D once per hyperparameter
    /// setting instead of once per step).
    prior: std::sync::Arc<std::sync::Mutex<Option<PriorGram>>>,
}

impl Truvar {
    /// Parses and checks the options against the study; errors name `algorithm.options.*`.
    pub fn build(options: Value, problem: &Problem) -> Result<Self, Vec<FieldError>> {
        let options: TruvarOptions = parse_options(options)?;
        let mut errors = Vec::new();
        let field = |f: &str| format!("algorithm.options.{f}");
        if options.beta_scale.is_some_and(|a| !(a.is_finite() && a > 0.0)) {
            errors.push(FieldError::new(field("beta_scale"), "must be a finite number > 0"));
        }
        if !(options.eta.is_finite() && options.eta >= 0.0) {
            errors.push(FieldError::new(field("eta"), "must be a finite number ≥ 0"));
        }
        if !(options.shrink > 0.0 && options.shrink < 1.0) {
            errors.push(FieldError::new(field("shrink"), "must be in (0, 1)"));
        }
        if !(options.delta_bar.is_finite() && options.delta_bar >= 0.0) {
            errors.push(FieldError::new(field("delta_bar"), "must be a finite number ≥ 0"));
        }
        if !(1..=20_000).contains(&options.representer_points) {
            errors.push(FieldError::new(field("representer_points"), "must be between 1 and 20000"));
        }
        errors.extend(options.model.validate(problem.space.dim()));
        let level = match &options.noise_level {
            None => None,
            Some(name) => match problem.measurement.level_index(name) {
                Some(i) => Some(i),
                None => {
                    errors
                        .push(FieldError::new(field("noise_level"), format!("the study has no noise level '{name}'")));
                    None
                }
            },
        };
        if errors.is_empty() { Ok(Self { options, level, prior: Default::default() }) } else { Err(errors) }
    }

    fn level_set(problem: &Problem) -> Option<f64> {
        problem.measurement.level_set.map(|h| problem.goal.sign() * h)
    }

    fn monotonic(&self) -> bool {
        self.options.monotonic.unwrap_or(self.options.model.fixed.is_some())
    }

    fn schedule(&self, problem: &Problem, domain_size: usize) -> Schedule {
        let a = self.options.beta_scale.unwrap_or(if Self::level_set(problem).is_some() { 1.0 } else { 0.5 });
        Schedule { a, domain_size, shrink: self.options.shrink, delta_bar: self.options.delta_bar }
    }

    fn domain(&self, problem: &Problem) -> Vec<f64> {
        problem.measurement.domain(&problem.space, &problem.decision, self.options.representer_points)
    }

    fn initial_design(&self, ctx: &Context<'_>) -> usize {
        let d = ctx.problem.decision.len();
        self.options.initial_design.unwrap_or(if self.options.model.fixed.is_some() {
            0
        } else {
            default_initial_design(d)
        })
    }

    /// Levels the policy may choose (`None` when the study has none).
    fn levels(&self, problem: &Problem) -> Vec<Option<usize>> {
        match self.level {
            Some(i) => vec![Some(i)],
            None if problem.measurement.noise_levels.is_empty() => vec![None],
            None => (0..problem.measurement.noise_levels.len()).map(Some).collect(),
        }
    }

    /// A fresh state for a domain of `n` points.
    fn initial_state(&self, model: ModelState, n: usize) -> TruvarState {
        TruvarState {
            model,
            epoch: Some(Epoch { index: 1, eta: self.options.eta, start: 1 }),
            processed: 0,
            domain_size: n,
            unclassified: None,
            above: Vec::new(),
            below: Vec::new(),
        }
    }

    /// Algorithm 2 (and Algorithm 1, line 5) with the posterior after `t` observations.
    fn update(&self, problem: &Problem, st: &mut TruvarState, gp: &Gp, domain: &[f64], t: usize) {
        let n_dom = st.domain_size;
        let schedule = self.schedule(problem, n_dom);
        let Some(mut epoch) = st.epoch else { return };
        let beta_sqrt = schedule.beta(&epoch).sqrt();
        let (mean, var) = gp.posterior_batch(domain);
        let sd: Vec<f64> = var.iter().map(|v| v.max(0.0).sqrt()).collect();
        let all: Vec<usize> = (0..n_dom).collect();
        let base = if self.monotonic() { st.unclassified.clone().unwrap_or_else(|| all.clone()) } else { all };
        let m = match Self::level_set(problem) {
            None => potential_maximizers(&base, &mean, &sd, beta_sqrt),
            Some(h) => {
                let (m, above, below) = split_level_set(&base, &mean, &sd, beta_sqrt, h);
                if self.monotonic() {
                    st.above.extend(above);
                    st.below.extend(below);
                    st.above.sort_unstable();
                    st.below.sort_unstable();
                } else {
                    st.above = above;
                    st.below = below;
                }
                m
            }
        };
        let scale = gp.standardizer().scale;
        let max_sd =
            m.iter().map(|&i| sd[i] / scale).fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))));
        schedule.advance(&mut epoch, max_sd, t);
        st.epoch = Some(epoch);
        st.unclassified = if m.len() == n_dom { None } else { Some(m) };
        st.processed = t;
    }

    /// The state brought up to date with the data (reset when the domain changed).
    fn current_state(&self, ctx: &Context<'_>, mut st: TruvarState, gp: Option<&Gp>, domain: &[f64]) -> TruvarState {
        let d = ctx.space().dim().max(1);
        let n_dom = domain.len() / d;
        if st.epoch.is_none() || st.domain_size != n_dom {
            st = self.initial_state(st.model, n_dom);
        }
        if let Some(gp) = gp
            && ctx.data.n() > st.processed
        {
            self.update(ctx.problem, &mut st, gp, domain, ctx.data.n());
        }
        st
    }

    /// The model: known prior, or fitted with the stored hyperparameters and the refit schedule.
    fn model(&self, ctx: &Context<'_>, model_state: &mut ModelState) -> Option<Gp> {
        fit_model(ctx, model_state, &self.options.model).ok().flatten().map(|m| m.gp)
    }

    /// Eq. (3) over the candidates, `count` greedy picks (App. A, batch setting).
    fn select(&self, ctx: &Context<'_>, st: &TruvarState, mut gp: Gp, domain: &[f64], count: usize) -> Vec<Candidate> {
        let problem = ctx.problem;
        let meas = &problem.measurement;
        let d = problem.space.dim().max(1);
        let n_dom = st.domain_size;
        let schedule = self.schedule(problem, n_dom);
        let epoch = st.epoch.unwrap_or(Epoch { index: 1, eta: self.options.eta, start: 1 });
        let (beta, eta2) = (schedule.beta(&epoch), epoch.eta * epoch.eta);
        let levels = self.levels(problem);
        let s2 = gp.standardizer().scale.powi(2);
        // Pending points: fantasised at their mean with the noisiest allowed level.
        let pending_var = levels
            .iter()
            .filter_map(|&l| meas.level_variance(l))
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        for p in ctx.pending.chunks_exact(d) {
            let (mu, _) = gp.posterior(p);
            let _ = gp.condition(p, mu, pending_var);
        }
        let m_idx: Vec<usize> = st.unclassified.clone().unwrap_or_else(|| (0..n_dom).collect());
        let cand_idx: Vec<usize> = if self.options.select_from_unclassified && !m_idx.is_empty() {
            m_idx.clone()
        } else {
            (0..n_dom).collect()
        };
        let mut previous: Option<Vec<f64>> = ctx.pending.rchunks_exact(d).next().map(<[f64]>::to_vec);
        if previous.is_none() && !ctx.data.last_x.is_empty() {
            previous = Some(ctx.data.last_x.clone());
        }
        // The cached prior covariances k(S, D) (see `PriorGram`); `None`: domain too large.
        let mut slot = self.prior.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let started = std::time::Instant::now();
            let hom = gp.hyperparameters().noise_variance;
            // Only points whose truncated variance exceeds η² can contribute to Eq. (3).
            let (_, var_m) = gp.posterior_batch(&rows(domain, &m_idx, d));
            let active: Vec<usize> =
                m_idx.iter().zip(&var_m).filter(|(_, v)| beta * *v / s2 > eta2).map(|(&i, _)| i).collect();
            let mut look = Lookahead::new(&gp, &rows(domain, &active, d));
            if slot.as_ref().is_none_or(|g| !g.serves(&gp, domain, &active)) {
                // Rows: this step's M and those of the Gram being replaced if it had the same hyperparameters
                // (so that a set M that grows back in the non-monotonic variant does not rebuild it every step).
                let mut s = active.clone();
                if let Some(g) = slot.as_ref().filter(|g| g.serves(&gp, domain, &[])) {
                    s.extend(g.rows());
                    s.sort_unstable();
                    s.dedup();
                }
                *slot = PriorGram::new(&gp, domain, &s);
            }
            if let Some(g) = slot.as_mut() {
                g.ensure_columns(&cand_idx);
            }
            if let Some(g) = slot.as_ref() {
                look = look.with_prior(g, &active);
            }
            let noises: Vec<f64> =
                levels.iter().map(|&level| hom + meas.level_variance(level).unwrap_or(0.0) / s2).collect();
            let mut best: Option<(f64, usize, Option<usize>, f64, f64)> = None; // score, index, level, reduction, cost
            let mut fallback: Option<(f64, usize, Option<usize>, f64)> = None; // variance per cost
            for chunk in cand_idx.chunks(256) {
                let xs = rows(domain, chunk, d);
                let (var_x, reductions) = look.truncated_reductions(&xs, chunk, &noises, beta, eta2);
                for (k, &i) in chunk.iter().enumerate() {
                    let x = &domain[i * d..(i + 1) * d];
                    for (l, (&level, &noise)) in levels.iter().zip(&noises).enumerate() {
                        let cost = meas.cost(x, level, previous.as_deref()).max(1e-12);
                        let r = if look.is_empty() { 0.0 } else { reductions[k * noises.len() + l] };
                        let score = r / cost;
                        if score > 0.0 && best.is_none_or(|b| score > b.0) {
                            best = Some((score, i, level, r, cost));
                        }
                        let v = var_x[k] * var_x[k] / (var_x[k] + noise).max(1e-300) / cost;
                        if fallback.is_none_or(|f| v > f.0) {
                            fallback = Some((v, i, level, cost));
                        }
                    }
                }
            }
            // Nothing left to reduce (every point classified): the largest variance reduction at x itself per cost.
            let (i, level, score, r, cost, phase) = match (best, fallback) {
                (Some((s, i, l, r, c)), _) => (i, l, s, r, c, "truvar"),
                (None, Some((s, i, l, c))) => (i, l, s, 0.0, c, "variance_fallback"),
                (None, None) => break,
            };
            let mut x = domain[i * d..(i + 1) * d].to_vec();
            let mut score = score;
            if phase == "truvar" && problem.measurement.candidates.is_none() {
                // Continuous domain: polish the representer point by a compass search on Eq. (3) (the paper uses
                // DIRECT over the box).
                let eval = |y: &[f64]| {
                    let (var_y, cov) = look.cross(y);
                    let noise = hom + meas.level_variance(level).unwrap_or(0.0) / s2;
                    let cost = meas.cost(y, level, previous.as_deref()).max(1e-12);
                    truncated_reduction(&look.var_m, cov.col_as_slice(0), var_y[0], noise, beta, eta2) / cost
                };
                (x, score) =
                    compass_search(&problem.space, &problem.space.dims_of_params(&problem.decision), x, score, eval);
            }
            let (mu, var) = gp.posterior(&x);
            let mut extra = serde_json::Map::new();
            extra.insert("epoch".into(), json!(epoch.index));
            extra.insert("eta".into(), json!(epoch.eta));
            extra.insert("beta".into(), json!(beta));
            extra.insert("unclassified".into(), json!(m_idx.len()));
            extra.insert("variance_reduction".into(), json!(r));
            out.push(Candidate {
                x: x.clone(),
                extras: PointExtras { noise_level: level, expected_cost: Some(cost), ..PointExtras::default() },
                predicted: Some((mu, var.sqrt())),
                diagnostics: Diagnostics {
                    phase: Some(phase.into()),
                    acquisition_value: Some(score).filter(|v| v.is_finite()),
                    jitter: Some(gp.jitter()),
                    acquisition_ms: Some(started.elapsed().as_secs_f64() * 1e3),
                    extra,
                    ..Default::default()
                },
                ..Default::default()
            });
            let _ = gp.condition(&x, mu, meas.level_variance(level));
            previous = Some(x);
        }
        out
    }

    fn status(st: &TruvarState) -> Value {
        json!({
            "epoch": st.epoch.map(|e| e.index),
            "eta": st.epoch.map(|e| e.eta),
            "epoch_start": st.epoch.map(|e| e.start),
            "domain_size": st.domain_size,
            "unclassified": st.unclassified.as_ref().map_or(st.domain_size, Vec::len),
            "above": st.above.len(),
            "below": st.below.len(),
            "processed": st.processed,
        })
    }
}

/// Compass search from `x` (value `fx`) over the continuous coordinates `dims`: steps ±h per coordinate,
/// h from 1/64 halving six times, keeping every improvement (clamped to [0, 1] and snapped to the space).
fn compass_search(
    space: &crate::space::Space,
    dims: &[usize],
    mut x: Vec<f64>,
    mut fx: f64,
    f: impl Fn(&[f64]) -> f64,
) -> (Vec<f64>, f64) {
    let kinds = space.dim_kinds();
    let free: Vec<usize> = dims.iter().copied().filter(|&j| kinds[j] == crate::space::DimKind::Continuous).collect();
    let mut h = 1.0 / 64.0;
    for _ in 0..6 {
        let mut improved = true;
        let mut rounds = 0;
        while improved && rounds < 8 {
            improved = false;
            rounds += 1;
            for &j in &free {
                for sgn in [-1.0, 1.0] {
                    let mut y = x.clone();
                    y[j] = (y[j] + sgn * h).clamp(0.0, 1.0);
                    space.snap(&mut y);
                    let fy = f(&y);
                    if fy > fx {
                        (x, fx) = (y, fy);
                        improved = true;
                    }
                }
            }
        }
        h /= 2.0;
    }
    (x, fx)
}

/// The rows `idx` of a row-major matrix with `d` columns.
fn rows(m: &[f64], idx: &[usize], d: usize) -> Vec<f64> {
    idx.iter().flat_map(|&i| m[i * d..(i + 1) * d].iter().copied()).collect()
}

impl Policy for Truvar {
    fn name(&self) -> &'static str {
        "truvar"
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let problem = ctx.problem;
        let dspace = problem.decision_space();
        let n_init = self.initial_design(ctx) as u64;
        let mut index = design_index(ctx);
        let mut out = Vec::with_capacity(count);
        let design = |index: u64, phase: &str| {
            let mut c = design_candidate(ctx, &initial_design_point(&dspace, index, ctx.study_seed), phase);
            c.extras.noise_level = self.level;
            c
        };
        while out.len() < count && index < n_init {
            out.push(design(index, "initial_design"));
            index += 1;
        }
        if out.len() == count {
            return Ok(out);
        }
        let domain = self.domain(problem);
        let mut st: TruvarState = state.get();
        let gp = self.model(ctx, &mut st.model);
        let mut st = self.current_state(ctx, st, gp.as_ref(), &domain);
        let Some(gp) = gp else {
            // No model yet (learned hyperparameters without data): keep to the design sequence.
            while out.len() < count {
                out.push(design(index, "fallback"));
                index += 1;
            }
            state.set(&st);
            return Ok(out);
        };
        let remaining = count - out.len();
        out.extend(self.select(ctx, &st, gp, &domain, remaining));
        st.processed = st.processed.max(ctx.data.n());
        state.set(&st);
        Ok(out)
    }

    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        let mut ms: TruvarState = state.get();
        ms.model.hold_fit(ctx.data.n());
        let Some(gp) = self.model(ctx, &mut ms.model) else { return Ok(None) };
        if ctx.data.n() == 0 {
            return Ok(None);
        }
        let problem = ctx.problem;
        let domain = self.domain(problem);
        let st = self.current_state(ctx, ms, Some(&gp), &domain);
        let d = problem.space.dim().max(1);
        let (mean, var) = gp.posterior_batch(&domain);
        // The reported point: the largest posterior mean over D (Sec. 4).
        let Some(best) = (0..mean.len()).max_by(|&a, &b| mean[a].total_cmp(&mean[b])) else { return Ok(None) };
        let mut extra = serde_json::Map::new();
        extra.insert("truvar".into(), Self::status(&st));
        if let Some(threshold) = problem.measurement.level_set {
            let mut classes = vec![level_set::Class::Unclassified; st.domain_size];
            st.above.iter().for_each(|&i| classes[i] = level_set::Class::Above);
            st.below.iter().for_each(|&i| classes[i] = level_set::Class::Below);
            let epoch = st.epoch.unwrap_or(Epoch { index: 1, eta: self.options.eta, start: 1 });
            let report = level_set::Report {
                space: &problem.space,
                decision: &problem.decision,
                points: &domain,
                classes: &classes,
                means: &mean,
                threshold,
                goal: problem.goal,
                beta_sqrt: self.schedule(problem, st.domain_size).beta(&epoch).sqrt(),
            };
            extra.insert("level_set".into(), report.to_json());
        }
        Ok(Some(Recommendation {
            x: domain[best * d..(best + 1) * d].to_vec(),
            params: None,
            predicted: (mean[best], var[best].max(0.0).sqrt()),
            extra,
        }))
    }

    fn predict(&self, ctx: &Context<'_>, state: &PolicyState, xs: &[f64]) -> Result<Option<Vec<(f64, f64)>>> {
        let mut ms: TruvarState = state.get();
        ms.model.hold_fit(ctx.data.n());
        let Some(gp) = self.model(ctx, &mut ms.model) else { return Ok(None) };
        Ok(Some(posterior_at(&gp, xs)))
    }

    fn describe(&self, state: &PolicyState) -> Option<Value> {
        let st: TruvarState = state.get();
        st.epoch.map(|_| Self::status(&st))
    }
}
