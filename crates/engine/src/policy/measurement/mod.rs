//! The measurement family (seed 003, Bogunovic et al., NIPS 2016): TRUVAR over candidate sets, noise levels and
//! costs ([`truvar`]), and the level-set baselines GCHK, straddle and variance ([`lse`]).

pub mod lse;
pub mod truvar;

use serde_json::Value;

use crate::error::FieldError;
use crate::policy::Policy;
use crate::problem::Problem;

/// `truvar`, `lse-gchk`, `lse-straddle` or `lse-var`.
pub fn build(name: &str, options: Value, problem: &Problem) -> Result<Box<dyn Policy>, Vec<FieldError>> {
    let rule = match name {
        "truvar" => return truvar::Truvar::build(options, problem).map(|p| Box::new(p) as _),
        "lse-gchk" => lse::LseRule::Gchk,
        "lse-straddle" => lse::LseRule::Straddle,
        _ => lse::LseRule::Var,
    };
    lse::Lse::build(rule, options, problem).map(|p| Box::new(p) as _)
}
