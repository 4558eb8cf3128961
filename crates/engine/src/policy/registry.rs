//! The one list of algorithms: name, family, what the family needs from the study, whether it can keep to a
//! finite candidate set, whether `auto` picks it, and its builder. [`build`] and [`auto_choice`] read it; adding an
//! algorithm means one row here and its implementation in its family's folder (ARCHITECTURE.md, "How to add an
//! algorithm").

use serde_json::Value;

use super::Policy;
use super::{contexts, control_sets, indirect, kernel_candidates, measurement, outcomes, plain};
use crate::error::FieldError;
use crate::problem::{AlgorithmSpec, Problem};

/// A policy family: one folder under `policy/`, and the study block it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Plain optimisation over the box or a candidate set: random, Sobol, the GP policies.
    Plain,
    /// `control_sets` studies (seed 000).
    ControlSets,
    /// Studies with `context` parameters (seed 002).
    Contexts,
    /// `indirect` studies (seed 001).
    Indirect,
    /// TRUVAR and the level-set baselines over `candidates`, `noise_levels`, `cost_model`, `level_set` (seed 003).
    Measurement,
    /// `kernel` candidates (seed 004).
    KernelCandidates,
    /// Several objectives or outcome constraints.
    Outcomes,
}

impl Family {
    /// The family whose block `problem` has (the first that applies, in this order), which `auto` chooses from.
    pub fn of(problem: &Problem) -> Self {
        if !problem.outcomes.is_single() {
            Family::Outcomes
        } else if problem.control_sets.is_some() {
            Family::ControlSets
        } else if problem.indirect.is_some() {
            Family::Indirect
        } else if problem.kernel_candidates.is_some() {
            Family::KernelCandidates
        } else if !problem.contexts.is_empty() && problem.measurement.candidates.is_none() {
            Family::Contexts
        } else {
            Family::Plain
        }
    }
}

/// Builds a policy from its name, its options (`algorithm.options`) and the validated problem.
pub type Builder = fn(&'static str, Value, &Problem) -> Result<Box<dyn Policy>, Vec<FieldError>>;

/// One algorithm.
#[derive(Clone, Copy)]
pub struct Algorithm {
    /// `algorithm.name`.
    pub name: &'static str,
    /// Its family (folder).
    pub family: Family,
    /// Chooses among a finite `candidates` set; otherwise it searches the continuous box and is refused with one.
    pub finite_domain: bool,
    /// Whether `auto` picks it for a study of its family, given the study.
    pub auto: Option<fn(&Problem) -> bool>,
    /// Parses the options (the family's options type) and builds the policy.
    pub build: Builder,
}

const fn entry(name: &'static str, family: Family, build: Builder) -> Algorithm {
    let finite_domain = matches!(family, Family::Plain | Family::Measurement | Family::Indirect);
    Algorithm { name, family, finite_domain, auto: None, build }
}

const fn auto(mut a: Algorithm, when: fn(&Problem) -> bool) -> Algorithm {
    a.auto = Some(when);
    a
}

fn always(_: &Problem) -> bool {
    true
}

fn has_tree(p: &Problem) -> bool {
    p.indirect.as_ref().is_some_and(|ip| ip.tree.is_some())
}

fn no_tree(p: &Problem) -> bool {
    !has_tree(p)
}

fn several_objectives(p: &Problem) -> bool {
    p.outcomes.objectives.len() > 1
}

fn two_objectives(p: &Problem) -> bool {
    p.outcomes.objectives.len() == 2
}

/// Every algorithm `build` accepts, besides `auto`, in the order error messages list them.
pub const REGISTRY: &[Algorithm] = &[
    entry("random", Family::Plain, plain::build),
    entry("sobol", Family::Plain, plain::build),
    auto(entry("gp-ei", Family::Plain, plain::build), always),
    entry("gp-ucb", Family::Plain, plain::build),
    entry("gp-mes", Family::Plain, plain::build),
    entry("gp-ts", Family::Plain, plain::build),
    entry("gp-pi", Family::Plain, plain::build),
    auto(entry("sbo-kde", Family::Contexts, contexts::build), always),
    entry("drbo-kde", Family::Contexts, contexts::build),
    entry("stableopt", Family::Contexts, contexts::build),
    entry("drbo-mmd", Family::Contexts, contexts::build),
    entry("truvar", Family::Measurement, measurement::build),
    entry("lse-gchk", Family::Measurement, measurement::build),
    entry("lse-straddle", Family::Measurement, measurement::build),
    entry("lse-var", Family::Measurement, measurement::build),
    auto(entry("he-gp-ucb", Family::KernelCandidates, kernel_candidates::build), always),
    entry("he-stableopt", Family::KernelCandidates, kernel_candidates::build),
    entry("mle-ucb", Family::KernelCandidates, kernel_candidates::build),
    entry("expected-ucb", Family::KernelCandidates, kernel_candidates::build),
    entry("a-gp-ucb", Family::KernelCandidates, kernel_candidates::build),
    auto(entry("bocvs", Family::ControlSets, control_sets::build), always),
    entry("ucb-psq", Family::ControlSets, control_sets::build),
    entry("ts-psq", Family::ControlSets, control_sets::build),
    entry("etc-cvs", Family::ControlSets, control_sets::build),
    entry("ucb-cvs", Family::ControlSets, control_sets::build),
    auto(entry("cmes", Family::Indirect, indirect::build), no_tree),
    auto(entry("cmets", Family::Indirect, indirect::build), has_tree),
    auto(entry("gp-ehvi", Family::Outcomes, outcomes::build), two_objectives),
    auto(entry("gp-parego", Family::Outcomes, outcomes::build), several_objectives),
    auto(entry("gp-cei", Family::Outcomes, outcomes::build), always),
];

/// The names of `family`'s algorithms, comma-separated (for error messages).
pub fn names_of(family: Family) -> String {
    REGISTRY.iter().filter(|a| a.family == family).map(|a| a.name).collect::<Vec<_>>().join(", ")
}

/// The algorithm `auto` resolves to for `problem`: the first of its family's algorithms marked for it.
pub fn auto_choice(problem: &Problem) -> &'static str {
    let family = Family::of(problem);
    REGISTRY.iter().find(|a| a.family == family && a.auto.is_some_and(|when| when(problem))).map_or("gp-ei", |a| a.name)
}

/// Builds the policy named in `spec` for `problem`; errors name `algorithm.name`, `algorithm.options.*` or the
/// block that rules the algorithm out.
pub fn build(spec: &AlgorithmSpec, problem: &Problem) -> Result<Box<dyn Policy>, Vec<FieldError>> {
    let name = if spec.name == "auto" { auto_choice(problem) } else { spec.name.as_str() };
    let options = Value::Object(spec.options.clone());
    let algorithm = REGISTRY.iter().find(|a| a.name == name);
    if problem.control_sets.is_some() && algorithm.is_none_or(|a| a.family != Family::ControlSets) {
        return Err(vec![FieldError::new(
            "algorithm.name",
            format!("'{name}' cannot choose control sets; use 'auto' or one of {}", names_of(Family::ControlSets)),
        )]);
    }
    let model_free = matches!(name, "random" | "sobol");
    if !problem.outcomes.is_single() && !model_free && algorithm.is_some_and(|a| a.family != Family::Outcomes) {
        return Err(vec![FieldError::new(
            "algorithm.name",
            format!(
                "'{name}' optimises one objective without outcome constraints; use 'auto', one of {}, 'random' or \
                 'sobol'",
                names_of(Family::Outcomes)
            ),
        )]);
    }
    if problem.measurement.candidates.is_some() && algorithm.is_some_and(|a| !a.finite_domain) {
        return Err(vec![FieldError::new(
            "candidates",
            format!(
                "'{name}' searches the continuous box and cannot keep to a candidate set; remove the block, or use \
                 gp-ei, gp-ucb, gp-mes, gp-ts, gp-pi, truvar or lse-* (they choose among the candidates)"
            ),
        )]);
    }
    if problem.indirect.is_some() {
        // Indirect studies run their own policies and the GP baselines over the query space.
        return indirect::IndirectPolicy::build(name, options, problem).map(|p| Box::new(p) as _);
    }
    match algorithm {
        Some(a) => (a.build)(a.name, options, problem),
        None => Err(vec![FieldError::new(
            "algorithm.name",
            format!(
                "unknown algorithm '{name}'; choose 'auto' or one of {}",
                REGISTRY.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
            ),
        )]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_family_has_an_auto_choice() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
        for family in [
            Family::Plain,
            Family::ControlSets,
            Family::Contexts,
            Family::Indirect,
            Family::KernelCandidates,
            Family::Outcomes,
        ] {
            assert!(REGISTRY.iter().any(|a| a.family == family && a.auto.is_some()), "{family:?}");
        }
    }
}
