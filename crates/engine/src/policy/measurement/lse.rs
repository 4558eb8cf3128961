//! Level-set estimation baselines of TRUVAR's experiments (Bogunovic et al., NIPS 2016, App. B), for studies with
//! a `level_set` block, on the finite domain (the candidate set, or representer points of the box):
//! - `lse-gchk` (Gotovos, Casati, Hitz, Krause, IJCAI 2013): `x_t = argmax_{x∈M_{t−1}} min{u_t(x) − h, h − ℓ_t(x)}`
//!   with `u, ℓ = μ ± β^½σ`, β^½ = 3 (Sec. 4), M the still ambiguous points, updated monotonically as in TRUVAR's
//!   Eqs. (6)–(7);
//! - `lse-straddle` (Bryan et al., NIPS 2005): `x_t = argmax_{x∈D} 1.96σ(x) − |μ(x) − h|`;
//! - `lse-var`: `x_t = argmax_{x∈D} σ(x)`.
//!
//! All are cost-blind and run at one noise level (`noise_level`, default the study's first). Pending points are
//! fantasised at their posterior mean. When GCHK has classified everything it continues with the straddle rule
//! (the paper does not say what happens then).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::truvar::sets::split_level_set;
use crate::blocks::measurement::{self, level_set};
use crate::data::PointExtras;
use crate::error::{FieldError, Result};
use crate::gp::Gp;
use crate::policy::design::{default_initial_design, design_candidate, design_index, initial_design_point};
use crate::policy::model::{ModelOptions, ModelState, fit_model, posterior_at};
use crate::policy::{Candidate, Context, Diagnostics, Policy, PolicyState, Recommendation, parse_options};
use crate::problem::Problem;

/// Which rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LseRule {
    /// Gotovos et al.'s ambiguity over the unclassified points.
    Gchk,
    /// Straddle.
    Straddle,
    /// Maximum variance.
    Var,
}

/// Options of the level-set baselines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LseOptions {
    /// β^½ of GCHK's confidence bounds (3 in TRUVAR's experiments).
    pub beta_sqrt: f64,
    /// Noise level to play (default: the study's first).
    pub noise_level: Option<String>,
    /// Representer points of a continuous domain.
    pub representer_points: usize,
    /// Sobol design points before the model (default 0 with `fixed` hyperparameters, else `clamp(2·d + 1, 10, 50)`).
    pub initial_design: Option<usize>,
    /// Surrogate options.
    #[serde(flatten)]
    pub model: ModelOptions,
}

impl Default for LseOptions {
    fn default() -> Self {
        Self {
            beta_sqrt: 3.0,
            noise_level: None,
            representer_points: measurement::DEFAULT_REPRESENTER_POINTS,
            initial_design: None,
            model: ModelOptions::default(),
        }
    }
}

/// GCHK's sets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct LseState {
    model: ModelState,
    domain_size: usize,
    processed: usize,
    unclassified: Option<Vec<usize>>,
    above: Vec<usize>,
    below: Vec<usize>,
}

/// A level-set baseline.
#[derive(Debug, Clone)]
pub struct Lse {
    rule: LseRule,
    options: LseOptions,
    level: Option<usize>,
}

impl Lse {
    /// Parses the options; the study must have a `level_set` block.
    pub fn build(rule: LseRule, options: Value, problem: &Problem) -> Result<Self, Vec<FieldError>> {
        let options: LseOptions = parse_options(options)?;
        let mut errors = Vec::new();
        if problem.measurement.level_set.is_none() {
            errors.push(FieldError::new("level_set", "the level-set algorithms need a 'level_set' block"));
        }
        if !(options.beta_sqrt.is_finite() && options.beta_sqrt >= 0.0) {
            errors.push(FieldError::new("algorithm.options.beta_sqrt", "must be a finite number ≥ 0"));
        }
        if !(1..=20_000).contains(&options.representer_points) {
            errors.push(FieldError::new("algorithm.options.representer_points", "must be between 1 and 20000"));
        }
        errors.extend(options.model.validate(problem.space.dim()));
        let level = match &options.noise_level {
            None => (!problem.measurement.noise_levels.is_empty()).then_some(0),
            Some(name) => {
                let i = problem.measurement.level_index(name);
                if i.is_none() {
                    errors.push(FieldError::new(
                        "algorithm.options.noise_level",
                        format!("the study has no noise level '{name}'"),
                    ));
                }
                i
            }
        };
        if errors.is_empty() { Ok(Self { rule, options, level }) } else { Err(errors) }
    }

    fn h(problem: &Problem) -> f64 {
        problem.goal.sign() * problem.measurement.level_set.unwrap_or(0.0)
    }

    fn domain(&self, problem: &Problem) -> Vec<f64> {
        problem.measurement.domain(&problem.space, &problem.decision, self.options.representer_points)
    }

    fn model(&self, ctx: &Context<'_>, ms: &mut ModelState) -> Option<Gp> {
        fit_model(ctx, ms, &self.options.model).ok().flatten().map(|m| m.gp)
    }

    /// GCHK's sets brought up to date with the posterior `mean`, `sd` of the data on the domain (Eqs. 6–7 with
    /// β^½ fixed).
    fn update(&self, ctx: &Context<'_>, mut st: LseState, mean: &[f64], sd: &[f64]) -> LseState {
        let n_dom = mean.len();
        if st.domain_size != n_dom {
            st = LseState { model: st.model, domain_size: n_dom, ..Default::default() };
        }
        if ctx.data.n() > st.processed {
            let base = st.unclassified.clone().unwrap_or_else(|| (0..n_dom).collect());
            let (m, above, below) = split_level_set(&base, mean, sd, self.options.beta_sqrt, Self::h(ctx.problem));
            st.above.extend(above);
            st.below.extend(below);
            st.above.sort_unstable();
            st.below.sort_unstable();
            st.unclassified = Some(m);
            st.processed = ctx.data.n();
        }
        st
    }
}

/// Posterior means and standard deviations on the `domain` points.
fn posterior_sd(gp: &Gp, domain: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (mean, var) = gp.posterior_batch(domain);
    (mean, var.iter().map(|v| v.max(0.0).sqrt()).collect())
}

impl Policy for Lse {
    fn name(&self) -> &'static str {
        match self.rule {
            LseRule::Gchk => "lse-gchk",
            LseRule::Straddle => "lse-straddle",
            LseRule::Var => "lse-var",
        }
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let problem = ctx.problem;
        let dspace = problem.decision_space();
        let n_init = self.options.initial_design.unwrap_or(if self.options.model.fixed.is_some() {
            0
        } else {
            default_initial_design(problem.decision.len())
        }) as u64;
        let mut index = design_index(ctx);
        let mut out = Vec::with_capacity(count);
        let mut st: LseState = state.get();
        let gp = self.model(ctx, &mut st.model);
        while out.len() < count && (index < n_init || gp.is_none()) {
            let mut c = design_candidate(ctx, &initial_design_point(&dspace, index, ctx.study_seed), "initial_design");
            c.extras.noise_level = self.level;
            out.push(c);
            index += 1;
        }
        let Some(mut gp) = gp else {
            state.set(&st);
            return Ok(out);
        };
        let domain = self.domain(problem);
        // The posterior of the data serves both the set update and, without pending points, the first pick.
        let (mean, sd) = posterior_sd(&gp, &domain);
        let st = self.update(ctx, st, &mean, &sd);
        let mut posterior = Some((mean, sd));
        let d = problem.space.dim().max(1);
        let noise = self.level.and_then(|i| problem.measurement.noise_levels.get(i)).map(|l| l.noise_variance);
        for p in ctx.pending.chunks_exact(d) {
            let (mu, _) = gp.posterior(p);
            let _ = gp.condition(p, mu, noise);
            posterior = None;
        }
        let h = Self::h(problem);
        let n_dom = domain.len() / d;
        while out.len() < count {
            let (mean, sd) = posterior.take().unwrap_or_else(|| posterior_sd(&gp, &domain));
            let straddle = |i: usize| 1.96 * sd[i] - (mean[i] - h).abs();
            let b = self.options.beta_sqrt;
            let m: Vec<usize> = st.unclassified.clone().unwrap_or_else(|| (0..n_dom).collect());
            let pick = |score: &dyn Fn(usize) -> f64, set: &[usize]| {
                set.iter()
                    .copied()
                    .map(|i| (i, score(i)))
                    .filter(|(_, v)| v.is_finite())
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            };
            let all: Vec<usize> = (0..n_dom).collect();
            let best = match self.rule {
                LseRule::Gchk if !m.is_empty() => {
                    pick(&|i| ((mean[i] + b * sd[i]) - h).min(h - (mean[i] - b * sd[i])), &m)
                }
                LseRule::Gchk | LseRule::Straddle => pick(&straddle, &all),
                LseRule::Var => pick(&|i| sd[i], &all),
            };
            let Some((i, value)) = best else { break };
            let x = domain[i * d..(i + 1) * d].to_vec();
            out.push(Candidate {
                x: x.clone(),
                extras: PointExtras { noise_level: self.level, ..PointExtras::default() },
                predicted: Some((mean[i], sd[i])),
                diagnostics: Diagnostics {
                    phase: Some("model".into()),
                    acquisition_value: Some(value),
                    jitter: Some(gp.jitter()),
                    ..Default::default()
                },
                ..Default::default()
            });
            let _ = gp.condition(&x, mean[i], noise);
        }
        state.set(&st);
        Ok(out)
    }

    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        if ctx.data.n() == 0 {
            return Ok(None);
        }
        let mut st: LseState = state.get();
        st.model.hold_fit(ctx.data.n());
        let Some(gp) = self.model(ctx, &mut st.model) else { return Ok(None) };
        let problem = ctx.problem;
        let domain = self.domain(problem);
        let d = problem.space.dim().max(1);
        let (mean, sd) = posterior_sd(&gp, &domain);
        let h = Self::h(problem);
        let classes: Vec<level_set::Class> = if self.rule == LseRule::Gchk {
            let st = self.update(ctx, st, &mean, &sd);
            let mut c = vec![level_set::Class::Unclassified; st.domain_size];
            st.above.iter().for_each(|&i| c[i] = level_set::Class::Above);
            st.below.iter().for_each(|&i| c[i] = level_set::Class::Below);
            c
        } else {
            mean.iter().zip(&sd).map(|(&m, &s)| level_set::classify(m, s, h, self.options.beta_sqrt)).collect()
        };
        let Some(best) = (0..mean.len()).max_by(|&a, &b| mean[a].total_cmp(&mean[b])) else { return Ok(None) };
        let report = level_set::Report {
            space: &problem.space,
            decision: &problem.decision,
            points: &domain,
            classes: &classes,
            means: &mean,
            threshold: problem.measurement.level_set.unwrap_or(0.0),
            goal: problem.goal,
            beta_sqrt: self.options.beta_sqrt,
        };
        let mut extra = serde_json::Map::new();
        extra.insert("level_set".into(), report.to_json());
        Ok(Some(Recommendation {
            x: domain[best * d..(best + 1) * d].to_vec(),
            params: None,
            predicted: (mean[best], sd[best]),
            extra,
        }))
    }

    fn predict(&self, ctx: &Context<'_>, state: &PolicyState, xs: &[f64]) -> Result<Option<Vec<(f64, f64)>>> {
        let mut st: LseState = state.get();
        st.model.hold_fit(ctx.data.n());
        let Some(gp) = self.model(ctx, &mut st.model) else { return Ok(None) };
        Ok(Some(posterior_at(&gp, xs)))
    }

    fn describe(&self, state: &PolicyState) -> Option<Value> {
        let st: LseState = state.get();
        (self.rule == LseRule::Gchk && st.domain_size > 0).then(|| {
            json!({
                "domain_size": st.domain_size,
                "unclassified": st.unclassified.as_ref().map_or(st.domain_size, Vec::len),
                "above": st.above.len(),
                "below": st.below.len(),
            })
        })
    }
}
