//! Baselines that ignore costs: `ucb-psq` and `ts-psq` (Hayashi, Honda, Kashima, "Bayesian optimization with
//! partially specified queries", Machine Learning 2022) and `etc-cvs`, the ETC-50 variant of UCB-CVS used in the
//! seed paper's experiments (Hoang et al., AAAI 2025; Tay et al., NeurIPS 2023).
//!
//! - `ucb-psq`: for every set, `max_x E[μ + βσ]` (β = 2); play the set with the largest value at its maximiser.
//! - `ts-psq`: the same with one posterior function draw (1024 random Fourier features) in place of the UCB; its
//!   expectation over a set's random variables is factorised ([`crate::gp::ExpectedDraw`], exact up to rounding).
//! - `etc-cvs`: `plays_per_group` (50) rounds restricted to each group of sets with the same number of variables, in
//!   increasing size (the paper's grouping), then `ucb-psq` over all sets.
//!
//! When a set leaves nothing random (a full query set), `max_x g(x) ≥ max_{x^i} E[g([x^i, X^{−i}])]` for every other
//! set, so these methods always play it; like Tay et al.'s code we then skip the other sets' expectations (the
//! result is the same up to optimiser error). Tay et al.'s code groups ETC by cost (`[[0,1,2],[3,4,5]]`) and
//! BO-uCVS's by `[[4,0,1,2],[5,3,6]]`; we follow the paper's text (groups of equal size).

use rand::{SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CvsOptions, Setting, suggest_with};
use crate::error::Result;
use crate::gp::Gp;
use crate::policy::model::{ModelOptions, ModelState};
use crate::policy::{Candidate, Context, Policy, PolicyState, Recommendation};
use crate::sampling::derive_seed;

/// State of the PSQ baselines.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct PsqState {
    #[serde(default)]
    model: ModelState,
}

/// `ucb-psq` or `ts-psq`.
#[derive(Debug, Clone)]
pub struct Psq {
    options: CvsOptions,
    thompson: bool,
}

impl Psq {
    /// UCB-PSQ.
    pub fn ucb(options: CvsOptions) -> Self {
        Self { options, thompson: false }
    }

    /// TS-PSQ.
    pub fn thompson(options: CvsOptions) -> Self {
        Self { options, thompson: true }
    }
}

/// Plays the best of `sets` by `max E[μ + βσ]` (or a posterior draw), the full set alone when it is among them.
pub(crate) fn best_of(
    s: &Setting<'_>,
    gp: &Gp,
    sets: &[usize],
    thompson: Option<usize>,
    seed: u64,
    phase: &str,
) -> Candidate {
    let full = s.cs.full_set().filter(|f| sets.contains(f));
    let sets: Vec<usize> = full.map_or_else(|| sets.to_vec(), |f| vec![f]);
    let draw = thompson.and_then(|features| gp.pathwise_sample(features, &mut StdRng::seed_from_u64(seed)));
    let best = sets
        .iter()
        .map(|&i| {
            let v = &s.views[i];
            let seed = derive_seed(seed, i as u64);
            let opt = match &draw {
                Some(d) => s.maximize_draw(d, v, seed),
                None => s.maximize_bound(gp, v, s.options.beta, seed),
            };
            (i, opt)
        })
        .max_by(|a, b| a.1.value.total_cmp(&b.1.value));
    let (i, opt) =
        best.unwrap_or_else(|| (0, super::SetOptimum { x: vec![0.5; s.views[0].dims.len()], value: f64::NAN }));
    let mut extra = Map::new();
    extra.insert("acquisition".into(), Value::from(opt.value));
    s.candidate(Some(gp), &s.views[i], &opt.x, phase, extra)
}

impl Policy for Psq {
    fn name(&self) -> &'static str {
        if self.thompson { "ts-psq" } else { "ucb-psq" }
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let setting = Setting::new(ctx, &self.options)?;
        let mut st: PsqState = state.get();
        let all: Vec<usize> = (0..setting.cs.len()).collect();
        let features = self.thompson.then_some(self.options.thompson_features);
        let out = suggest_with(&setting, &mut st.model, count, |s, gp, k| {
            Ok(best_of(s, gp, &all, features, derive_seed(ctx.seed, k as u64), "model"))
        })?;
        state.set(&st);
        Ok(out)
    }

    fn model_options(&self) -> ModelOptions {
        self.options.model.clone()
    }

    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        super::recommend(ctx, &self.options, state)
    }
}

/// ETC-50: groups of equally sized sets, then UCB-PSQ.
#[derive(Debug, Clone)]
pub struct EtcCvs {
    options: CvsOptions,
}

impl EtcCvs {
    /// With validated options.
    pub fn new(options: CvsOptions) -> Self {
        Self { options }
    }

    /// Groups of set indices with the same number of parameters, by increasing size.
    fn groups(s: &Setting<'_>) -> Vec<Vec<usize>> {
        let mut sizes: Vec<usize> = s.cs.sets.iter().map(|c| c.params.len()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes.iter().map(|&n| (0..s.cs.len()).filter(|&i| s.cs.sets[i].params.len() == n).collect()).collect()
    }
}

impl Policy for EtcCvs {
    fn name(&self) -> &'static str {
        "etc-cvs"
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let setting = Setting::new(ctx, &self.options)?;
        let mut st: PsqState = state.get();
        let groups = Self::groups(&setting);
        let all: Vec<usize> = (0..setting.cs.len()).collect();
        let per = self.options.plays_per_group;
        let out = suggest_with(&setting, &mut st.model, count, |s, gp, k| {
            let round = s.round(k);
            let (sets, phase) = match groups.get(round / per) {
                Some(g) => (g, format!("group_{}", round / per)),
                None => (&all, "commit".to_string()),
            };
            Ok(best_of(s, gp, sets, None, derive_seed(ctx.seed, k as u64), &phase))
        })?;
        state.set(&st);
        Ok(out)
    }

    fn model_options(&self) -> ModelOptions {
        self.options.model.clone()
    }

    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        super::recommend(ctx, &self.options, state)
    }
}
