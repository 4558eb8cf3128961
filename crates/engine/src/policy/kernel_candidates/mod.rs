//! The kernel-candidates family (seed 004): HE-GP-UCB and HE-StableOpt ([`he_gp_ucb`], [`he_stableopt`]) with
//! their hyperparameter elimination ([`elimination`]), and the baselines MLE-UCB, Expected-UCB and A-GP-UCB
//! ([`candidate_baselines`]), over the models of [`crate::blocks::kernel_candidates`] ([`candidate_models`]).

pub mod candidate_baselines;
pub mod candidate_models;
pub mod elimination;
pub mod he_gp_ucb;
pub mod he_stableopt;

use serde_json::Value;

use crate::error::FieldError;
use crate::policy::Policy;
use crate::problem::Problem;
use candidate_baselines::{BaselineKind, CandidateBaseline};
use candidate_models::CandidateOptions;
use he_gp_ucb::HeGpUcb;

/// The policies over `kernel.candidates` (seed 004).
pub fn build(name: &str, options: Value, problem: &Problem) -> Result<Box<dyn Policy>, Vec<FieldError>> {
    candidate_models::require_candidates(problem, name)?;
    let o = CandidateOptions::parse(options, name)?;
    let names: Vec<String> =
        problem.kernel_candidates.iter().flat_map(|s| s.models.iter().map(|m| m.name.clone())).collect();
    Ok(match name {
        "he-gp-ucb" => Box::new(HeGpUcb::new(o, names)),
        "he-stableopt" => {
            if !problem.space.is_continuous() {
                return Err(vec![FieldError::new("algorithm.name", "he-stableopt needs float parameters only")]);
            }
            let eps = o.epsilon.unwrap_or(0.05);
            Box::new(HeGpUcb::stable(o, eps, names))
        }
        "mle-ucb" => Box::new(CandidateBaseline::new(BaselineKind::Mle, o)),
        "expected-ucb" => Box::new(CandidateBaseline::new(BaselineKind::ExpectedUcb, o)),
        _ => Box::new(CandidateBaseline::new(BaselineKind::AGpUcb, o)),
    })
}
