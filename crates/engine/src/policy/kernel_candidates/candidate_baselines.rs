//! Baselines of the seed-004 experiments over the study's `kernel.candidates` (Ziomek et al. 2024, §6):
//! - `mle-ucb`: u_t = argmax_u p(D | u) (log marginal likelihood over the finite U), then GP-UCB with that model;
//! - `expected-ucb`: maximise Σ_u P(u | D) UCB^u(x), uniform prior P(u) = 1/|U|;
//! - `a-gp-ucb` (Berkenkamp et al., JMLR 2019, Eq. 18 with g(t) = t^0.9): the lengthscale ℓ_MLE/g(t), snapped to
//!   the candidate whose (geometric-mean) lengthscale is nearest. We follow the authors' related LB-GP-UCB code
//!   (`berkenkamp`: ℓ_MLE/max(1, t^0.9), nearest in linear distance), with t the number of BO iterations after the
//!   initial design. Meant for candidates that differ only in lengthscale.
//!
//! All three use the same β^u_t schedule as HE-GP-UCB, so the comparison isolates the model choice.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::candidate_models::{
    CandidateOptions, WeightedUcb, candidates, condition, design_phase, fallback, fantasise, iteration,
    maximize_excluding, posterior_weights, taken_points,
};
use super::he_gp_ucb::{best_evidence, recommend_best_evidence};
use crate::acquisition::Ucb;
use crate::blocks::kernel_candidates::InfoGainCache;
use crate::error::Result;
use crate::policy::{Candidate, Context, Diagnostics, Policy, PolicyState, Recommendation};
use crate::sampling::derive_seed;

/// Which baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineKind {
    /// `mle-ucb`.
    Mle,
    /// `expected-ucb`.
    ExpectedUcb,
    /// `a-gp-ucb`.
    AGpUcb,
}

/// A baseline policy over the candidate models.
#[derive(Debug, Clone)]
pub struct CandidateBaseline {
    kind: BaselineKind,
    options: CandidateOptions,
}

impl CandidateBaseline {
    /// The baseline `kind` with `options`.
    pub fn new(kind: BaselineKind, options: CandidateOptions) -> Self {
        Self { kind, options }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct BaselineState {
    info_gain: InfoGainCache,
    /// Candidate used (mle-ucb, a-gp-ucb) or posterior weights (expected-ucb) at the last suggestion.
    #[serde(default)]
    last: Value,
}

impl Policy for CandidateBaseline {
    fn name(&self) -> &'static str {
        match self.kind {
            BaselineKind::Mle => "mle-ucb",
            BaselineKind::ExpectedUcb => "expected-ucb",
            BaselineKind::AGpUcb => "a-gp-ucb",
        }
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let set = candidates(ctx)?;
        let (mut out, index) = design_phase(ctx, self.options.initial_design, count);
        if out.len() == count {
            return Ok(out);
        }
        let mut st: BaselineState = state.get();
        let all: Vec<usize> = (0..set.len()).collect();
        let mut models = condition(ctx, set, &all);
        if models.is_empty() {
            fallback(ctx, &mut out, index, count);
            return Ok(out);
        }
        let t = iteration(ctx);
        let evidence: Vec<f64> = models.iter().map(|(_, gp)| gp.log_marginal_likelihood()).collect();
        let betas: Vec<f64> = models
            .iter()
            .map(|(u, _)| set.confidence.beta(t, st.info_gain.gamma(set, &ctx.problem.space, *u, t - 1)))
            .collect();
        let argmax = |v: &[f64]| (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap_or(0);
        let mle = argmax(&evidence);
        // index into `models` of the single model used (None: the posterior-weighted mixture)
        let single = match self.kind {
            BaselineKind::Mle => Some(mle),
            BaselineKind::ExpectedUcb => None,
            BaselineKind::AGpUcb => {
                let bo_t = (ctx.data.n() + 1).saturating_sub(self.options.initial_design).max(1) as f64;
                let target = set.models[models[mle].0].mean_lengthscale / bo_t.powf(0.9).max(1.0);
                (0..models.len()).min_by(|&a, &b| {
                    let da = (set.models[models[a].0].mean_lengthscale - target).abs();
                    let db = (set.models[models[b].0].mean_lengthscale - target).abs();
                    da.total_cmp(&db)
                })
            }
        };
        let weights = posterior_weights(&evidence);
        for (_, gp) in &mut models {
            fantasise(ctx, gp);
        }
        st.last = match single {
            Some(i) => json!(set.models[models[i].0].name),
            None => json!(
                models
                    .iter()
                    .zip(&weights)
                    .map(|((u, _), w)| (set.models[*u].name.clone(), json!(w)))
                    .collect::<serde_json::Map<_, _>>()
            ),
        };
        let mut taken = taken_points(ctx);
        for k in out.len()..count {
            let seed = derive_seed(ctx.seed, k as u64);
            let opt = match single {
                Some(i) => {
                    maximize_excluding(ctx, &Ucb::with_multiplier(&models[i].1, betas[i]), &taken, &self.options, seed)
                }
                None => {
                    let terms = models
                        .iter()
                        .zip(&weights)
                        .zip(&betas)
                        .filter(|((_, w), _)| **w > 1e-12)
                        .map(|(((_, gp), w), b)| (*w, Ucb::with_multiplier(gp, *b)))
                        .collect();
                    let acq = WeightedUcb { terms, dim: ctx.problem.space.dim() };
                    maximize_excluding(ctx, &acq, &taken, &self.options, seed)
                }
            };
            let (mu, var) = models[single.unwrap_or(mle)].1.posterior(&opt.x);
            let mut extra = serde_json::Map::new();
            extra.insert("model".into(), st.last.clone());
            out.push(Candidate {
                x: opt.x.clone(),
                predicted: Some((mu, var.max(0.0).sqrt())),
                diagnostics: Diagnostics {
                    phase: Some("model".into()),
                    acquisition_value: Some(opt.value).filter(|v| v.is_finite()),
                    extra,
                    ..Default::default()
                },
                ..Default::default()
            });
            taken.extend_from_slice(&opt.x);
            if k + 1 < count {
                for (_, gp) in &mut models {
                    let (m, _) = gp.posterior(&opt.x);
                    let _ = gp.condition(&opt.x, m, None);
                }
            }
        }
        state.set(&st);
        Ok(out)
    }

    fn recommend(&self, ctx: &Context<'_>, _state: &PolicyState) -> Result<Option<Recommendation>> {
        let set = candidates(ctx)?;
        let all: Vec<usize> = (0..set.len()).collect();
        recommend_best_evidence(ctx, set, &all, &self.options)
    }

    fn predict(&self, ctx: &Context<'_>, _state: &PolicyState, xs: &[f64]) -> Result<Option<Vec<(f64, f64)>>> {
        let set = candidates(ctx)?;
        let all: Vec<usize> = (0..set.len()).collect();
        Ok(best_evidence(ctx, set, &all).map(|(_, gp)| {
            let (m, v) = gp.posterior_batch(xs);
            m.into_iter().zip(v).map(|(m, v)| (m, v.max(0.0).sqrt())).collect()
        }))
    }

    fn describe(&self, state: &PolicyState) -> Option<Value> {
        let st: BaselineState = state.get();
        (!st.last.is_null()).then(|| json!({ "last_model": st.last }))
    }
}
