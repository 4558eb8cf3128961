//! `he-gp-ucb` and `he-stableopt`: Hyperparameter Elimination GP-UCB and StableOpt (Ziomek et al., "Beyond
//! Lengthscales: No-regret Bayesian Optimisation With Unknown Hyperparameters Of Any Type", 2024, Algorithms 1
//! and 2) over the study's `kernel.candidates`.
//!
//! HE-GP-UCB, per suggestion: absorb new observations into the elimination sums (see [`super::elimination`]);
//! condition the GP of every surviving candidate u on the data; `(x_t, u_t) = argmax_{x, u} μ^u + β^u_t σ^u`
//! ("doubly optimistic", maximised per candidate, the best pair taken); record μ^{u_t}(x_t) and β^{u_t}_t σ^{u_t}
//! for the test once y_t arrives. HE-StableOpt (App. I): `x_t, u_t = argmax_{x,u} min_{δ∈Δε(x)} UCB^u(x + δ)`,
//! `δ_t, v_t = argmin_{δ,u} LCB^u(x_t + δ)`; the suggestion is the point to evaluate, `x_t + δ_t`; `recommend`
//! reports the robust point x_t; both u_t (set S) and v_t (set Ŝ) are tested.
//!
//! Algorithm 1 line by line, and where the paper, the authors' related code (LB-GP-UCB, same first author and
//! toy; the HE-GP-UCB code itself is not public) and we differ:
//! - lines 3–5, β^u_t: Theorem 4.1/4.2 exactly (`kernel_candidates::Confidence`), δ_A = δ_B = δ/2 folded in
//!   (ln(2/δ), 3δ); t = n + 1 for n observations, so the initial design counts as iterations (the paper starts
//!   from D_0 = ∅; the code counts t from 1 after its initial points). γ^u_{t−1} is greedy on a discretisation
//!   (the code: the exact solver of Hong et al.). `beta_scale` (default 1) is the only practical scaling.
//! - line 7, the argmax over X × U_{t−1}: per surviving candidate, the UCB is maximised (a finite domain of at most
//!   4096 points is enumerated, as the code does on finite domains; otherwise Sobol raw samples and L-BFGS
//!   restarts, the code: BoTorch `optimize_acqf`), then the best pair is taken (ties: the earlier candidate).
//! - σ is the latent posterior standard deviation (the code uses the predictive one, which adds the noise
//!   variance 1e-4 under the square root, both in the UCB and in the stored widths).
//! - lines 8–11: u_t enters S^{u_t}; η_t = y_t − μ^{u_t}_{t−1}(x_t) with the model conditioned on D_{t−1} only
//!   (never on pending fantasies); β^{u_t}_t σ^{u_t}_{t−1}(x_t) is stored at suggestion time. Line 12 prints
//!   σ_i(x_i); Theorem 3.1, on which the proof of line 12 rests, bounds |f(x_i) − μ_{i−1}(x_i)| by β_i σ_{i−1}(x_i),
//!   so σ_{i−1} (at the time of the query) is what we store.
//! - line 12: `|Σ_{S^{u_t}} η_i| > √(ξ_t |S^{u_t}|) + Σ_{S^{u_t}} β_i σ_{i−1}(x_i)`, only u_t is tested, with ξ_t of
//!   the paper (3δ; the code: 6δ); we never remove the last survivor (the paper's proof never needs to).
//! - outputs: not standardised by default (the theory needs fixed models); `kernel.standardize` reproduces the
//!   code's per-step standardisation.
//!
//! Further deviations: we first evaluate `initial_design` Sobol points (default 3, the paper's App. J.1 protocol),
//! which enter no index set. Batches (`count > 1`) and pending points are handled by kriging-believer fantasies
//! (σ shrinks, μ is unchanged) and exclusion; each batch point is its own iteration. `recommend` and `predict` use
//! the surviving candidate with the largest marginal likelihood.

use serde_json::{Value, json};

use super::candidate_models::{
    CandidateOptions, candidates, condition, design_phase, fallback, fantasise, iteration, maximize_excluding,
    maximize_ucb, taken_points,
};
use super::elimination::{EliminationState, Issued, Prediction};
use super::he_stableopt::{pessimistic_perturbation, robust_ucb_maximizer};
use crate::acquisition::Ucb;
use crate::blocks::kernel_candidates::CandidateSet;
use crate::error::Result;
use crate::gp::Gp;
use crate::policy::{Candidate, Context, Diagnostics, Policy, PolicyState, Recommendation};
use crate::sampling::derive_seed;

/// HE-GP-UCB (`epsilon: None`) or HE-StableOpt (`epsilon: Some(ε)`).
#[derive(Debug, Clone)]
pub struct HeGpUcb {
    options: CandidateOptions,
    epsilon: Option<f64>,
    /// Candidate names, for `describe`.
    names: Vec<String>,
}

impl HeGpUcb {
    /// HE-GP-UCB over candidates named `names`.
    pub fn new(options: CandidateOptions, names: Vec<String>) -> Self {
        Self { options, epsilon: None, names }
    }

    /// HE-StableOpt with stability radius `epsilon` (encoded units, L∞ box).
    pub fn stable(options: CandidateOptions, epsilon: f64, names: Vec<String>) -> Self {
        Self { options, epsilon: Some(epsilon), names }
    }
}

/// One surviving candidate's GPs at iteration t: on the data (for the recorded predictions) and with the
/// pending fantasies (for the acquisition), and β^u_t.
pub(crate) struct Surviving {
    pub u: usize,
    pub data_gp: Gp,
    pub gp: Gp,
    pub beta: f64,
}

pub(crate) fn surviving_models(ctx: &Context<'_>, set: &CandidateSet, st: &mut EliminationState) -> Vec<Surviving> {
    let t = iteration(ctx);
    let space = &ctx.problem.space;
    condition(ctx, set, &st.survivors())
        .into_iter()
        .map(|(u, data_gp)| {
            let gamma = st.info_gain.gamma(set, space, u, t - 1);
            let mut gp = data_gp.clone();
            fantasise(ctx, &mut gp);
            Surviving { u, data_gp, gp, beta: set.confidence.beta(t, gamma) }
        })
        .collect()
}

fn predict_with(m: &Surviving, x: &[f64]) -> Prediction {
    let (mu, var) = m.data_gp.posterior(x);
    Prediction { u: m.u, mu, beta_sigma: m.beta * var.max(0.0).sqrt() }
}

impl Policy for HeGpUcb {
    fn name(&self) -> &'static str {
        if self.epsilon.is_some() { "he-stableopt" } else { "he-gp-ucb" }
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let set = candidates(ctx)?;
        let mut st: EliminationState = state.get();
        st.ensure(set.len());
        st.absorb(ctx, set);
        let (mut out, index) = design_phase(ctx, self.options.initial_design, count);
        if out.len() == count {
            state.set(&st);
            return Ok(out);
        }
        let mut models = surviving_models(ctx, set, &mut st);
        if models.is_empty() {
            fallback(ctx, &mut out, index, count);
            state.set(&st);
            return Ok(out);
        }
        let mut taken = taken_points(ctx);
        let t0 = iteration(ctx);
        let first = out.len();
        for k in first..count {
            let seed = derive_seed(ctx.seed, k as u64);
            let (query, issued, value, robust) = match self.epsilon {
                None => {
                    let (best, opt) = models
                        .iter()
                        .enumerate()
                        .map(|(i, m)| (i, maximize_ucb(ctx, &m.gp, m.beta, &taken, &self.options, seed)))
                        .fold(None::<(usize, crate::optim::Optimum)>, |acc, (i, o)| match acc {
                            Some((_, ref b)) if b.value >= o.value => acc,
                            _ => Some((i, o)),
                        })
                        .expect("at least one surviving model");
                    let m = &models[best];
                    let issued = Issued {
                        x: opt.x.clone(),
                        t: t0 + k - first,
                        chosen: predict_with(m, &opt.x),
                        pessimistic: None,
                    };
                    (opt.x, issued, opt.value, None)
                }
                Some(eps) => {
                    let (best, robust) = models
                        .iter()
                        .enumerate()
                        .map(|(i, m)| (i, robust_ucb_maximizer(ctx, &m.gp, m.beta, eps, &taken, &self.options, seed)))
                        .fold(None::<(usize, crate::optim::Optimum)>, |acc, (i, o)| match acc {
                            Some((_, ref b)) if b.value >= o.value => acc,
                            _ => Some((i, o)),
                        })
                        .expect("at least one surviving model");
                    let (v, q) = models
                        .iter()
                        .enumerate()
                        .map(|(i, m)| (i, pessimistic_perturbation(ctx, &m.gp, m.beta, eps, &robust.x, seed)))
                        .fold(None::<(usize, (Vec<f64>, f64))>, |acc, (i, o)| match acc {
                            Some((_, ref b)) if b.1 <= o.1 => acc,
                            _ => Some((i, o)),
                        })
                        .map(|(i, (q, _))| (i, q))
                        .expect("at least one surviving model");
                    let issued = Issued {
                        x: q.clone(),
                        t: t0 + k - first,
                        chosen: predict_with(&models[best], &q),
                        pessimistic: Some(predict_with(&models[v], &q)),
                    };
                    (q, issued, robust.value, Some((robust.x, models[best].u)))
                }
            };
            let chosen = &models[models.iter().position(|m| m.u == issued.chosen.u).unwrap_or(0)];
            let (mu, var) = chosen.data_gp.posterior(&query);
            let mut extra = serde_json::Map::new();
            extra.insert("candidate".into(), json!(set.models[issued.chosen.u].name));
            extra.insert("beta".into(), json!(chosen.beta));
            extra.insert("iteration".into(), json!(issued.t));
            let surviving: Vec<&str> = models.iter().map(|m| set.models[m.u].name.as_str()).collect();
            extra.insert("surviving_candidates".into(), json!(surviving));
            if let Some((rx, _)) = &robust {
                extra.insert("robust_point".into(), json!(ctx.problem.space.decode(rx)));
            }
            if let Some(p) = &issued.pessimistic {
                extra.insert("pessimistic_candidate".into(), json!(set.models[p.u].name));
            }
            out.push(Candidate {
                x: query.clone(),
                predicted: Some((mu, var.max(0.0).sqrt())),
                diagnostics: Diagnostics {
                    phase: Some("model".into()),
                    acquisition_value: Some(value).filter(|v| v.is_finite()),
                    jitter: Some(chosen.data_gp.jitter()),
                    extra,
                    ..Default::default()
                },
                ..Default::default()
            });
            if robust.is_some() {
                st.robust = robust;
            }
            st.open.push(issued);
            taken.extend_from_slice(&query);
            if k + 1 < count {
                for m in &mut models {
                    let (mq, _) = m.gp.posterior(&query);
                    let _ = m.gp.condition(&query, mq, None);
                }
            }
        }
        state.set(&st);
        Ok(out)
    }

    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        let set = candidates(ctx)?;
        let mut st: EliminationState = state.get();
        st.ensure(set.len());
        if let Some((x, u)) = st.robust.clone().filter(|_| self.epsilon.is_some())
            && let Some((_, gp)) = condition(ctx, set, &[u]).into_iter().next()
        {
            let (mu, var) = gp.posterior(&x);
            let extra = [("candidate".to_string(), json!(set.models[u].name))].into_iter().collect();
            return Ok(Some(Recommendation { x, params: None, predicted: (mu, var.max(0.0).sqrt()), extra }));
        }
        recommend_best_evidence(ctx, set, &st.survivors(), &self.options)
    }

    fn predict(&self, ctx: &Context<'_>, state: &PolicyState, xs: &[f64]) -> Result<Option<Vec<(f64, f64)>>> {
        let set = candidates(ctx)?;
        let mut st: EliminationState = state.get();
        st.ensure(set.len());
        Ok(best_evidence(ctx, set, &st.survivors()).map(|(_, gp)| {
            let (m, v) = gp.posterior_batch(xs);
            m.into_iter().zip(v).map(|(m, v)| (m, v.max(0.0).sqrt())).collect()
        }))
    }

    fn describe(&self, state: &PolicyState) -> Option<Value> {
        let st: EliminationState = state.get();
        (!st.alive.is_empty()).then(|| st.describe(&self.names))
    }
}

/// The candidate (among `which`) with the largest log marginal likelihood, and its GP.
pub(crate) fn best_evidence(ctx: &Context<'_>, set: &CandidateSet, which: &[usize]) -> Option<(usize, Gp)> {
    if ctx.data.n() == 0 {
        return None;
    }
    condition(ctx, set, which)
        .into_iter()
        .map(|(u, gp)| (gp.log_marginal_likelihood(), u, gp))
        .filter(|(l, _, _)| l.is_finite())
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, u, gp)| (u, gp))
}

/// Maximiser of the posterior mean of the best-evidence candidate among `which`.
pub(crate) fn recommend_best_evidence(
    ctx: &Context<'_>,
    set: &CandidateSet,
    which: &[usize],
    options: &CandidateOptions,
) -> Result<Option<Recommendation>> {
    let Some((u, gp)) = best_evidence(ctx, set, which) else { return Ok(None) };
    let opt = maximize_excluding(ctx, &Ucb::with_multiplier(&gp, 0.0), &[], options, ctx.seed);
    let (mu, var) = gp.posterior(&opt.x);
    let extra = [("candidate".to_string(), json!(set.models[u].name))].into_iter().collect();
    Ok(Some(Recommendation { x: opt.x, params: None, predicted: (mu, var.max(0.0).sqrt()), extra }))
}
