//! Policies: one [`Policy`] trait, one implementation per algorithm, and [`build`], which turns an
//! `algorithm {name, options}` spec into a policy (`auto` picks one from the study's blocks).
//!
//! A policy is a pure function of (problem, dataset, pending points, policy state, seed). State it carries between
//! steps lives in [`PolicyState`] (JSON), which the server stores with the study and hands back unchanged.

mod candidate_baselines;
mod candidate_models;
mod context_bo;
pub mod cvs;
mod design;
mod elimination;
mod gp_bo;
mod he_gp_ucb;
mod he_stableopt;
mod indirect;
pub mod lse;
mod model;
pub mod truvar;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use candidate_baselines::{BaselineKind, CandidateBaseline};
pub use candidate_models::CandidateOptions;
pub use context_bo::{ContextBo, ContextBoOptions, ContextMethod};
pub use design::{RandomSearch, SobolSearch, initial_design_point};
pub use gp_bo::{GpAcquisition, GpBo, GpBoOptions, SEPARATION, SEPARATION_LENGTHSCALE_CAP};
pub use he_gp_ucb::HeGpUcb;
pub use indirect::{CmesOptions, IndirectPolicy};
pub use model::{FixedHyperparameters, ModelOptions, OutputWarping, fit_model};

use crate::data::Dataset;
use crate::error::{FieldError, Result};
use crate::problem::{AlgorithmSpec, Problem};
use crate::space::{Assignments, Space};

/// Everything a policy may look at.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The validated study.
    pub problem: &'a Problem,
    /// Successful observations, encoded.
    pub data: &'a Dataset,
    /// Pending suggestions' encoded points (full space; uncontrolled coordinates at their centre), row-major.
    pub pending: &'a [f64],
    /// Seed of this call (derived from the study seed and the data size).
    pub seed: u64,
    /// The study's own seed (constant over its life; e.g. for its initial design sequence).
    pub study_seed: u64,
    /// Context values known before suggesting (encoded, full space, with `known_context` marking them).
    pub known_context: Option<&'a [f64]>,
    /// The study's cost budget, if it has one ([`crate::data::History::cost_budget`]).
    pub cost_budget: Option<f64>,
}

impl Context<'_> {
    /// The full encoded space.
    pub fn space(&self) -> &Space {
        &self.problem.space
    }

    /// Number of pending points.
    pub fn n_pending(&self) -> usize {
        self.pending.len() / self.problem.space.dim().max(1)
    }
}

/// A point a policy proposes, in encoded form.
#[derive(Debug, Clone, Default)]
pub struct Candidate {
    /// Full encoded point (coordinates the client does not set are placeholders).
    pub x: Vec<f64>,
    /// Parameters the client must set (indices into the space); `None` means the study's decision parameters.
    pub params: Option<Vec<usize>>,
    /// Control set to play.
    pub control_set: Option<usize>,
    /// Noise level to use.
    pub noise_level: Option<usize>,
    /// Encoded indirect query.
    pub query: Option<Vec<f64>>,
    /// Cost the policy expects.
    pub expected_cost: Option<f64>,
    /// Posterior mean and standard deviation of the objective at the point (maximisation sign).
    pub predicted: Option<(f64, f64)>,
    /// Diagnostics.
    pub diagnostics: Diagnostics,
}

/// What a suggestion cost and why it was chosen; returned to clients for transparency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// `initial_design` or `model` (or an algorithm-specific phase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Acquisition value at the suggestion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquisition_value: Option<f64>,
    /// Jitter the Cholesky factorisation needed (standardised units).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// Hyperparameters of the model used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hyperparameters: Option<Value>,
    /// Whether hyperparameters were refitted for this suggestion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refit: Option<bool>,
    /// Milliseconds spent fitting the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit_ms: Option<f64>,
    /// Milliseconds spent optimising the acquisition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquisition_ms: Option<f64>,
    /// Algorithm-specific extras.
    #[serde(skip_serializing_if = "Map::is_empty", default)]
    pub extra: Map<String, Value>,
}

/// A recommendation of the best point according to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// Encoded point.
    pub x: Vec<f64>,
    /// Parameters to report (indices); `None` means the decision parameters.
    pub params: Option<Vec<usize>>,
    /// Posterior mean and standard deviation (maximisation sign).
    pub predicted: (f64, f64),
    /// Algorithm-specific extras (e.g. a level-set classification).
    pub extra: Map<String, Value>,
}

/// Opaque, serialisable state a policy carries between calls (`null` for a new study).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PolicyState(pub Value);

impl PolicyState {
    /// The state as `T`, or `T::default()` when empty or of another shape (e.g. after an algorithm change).
    pub fn get<T: for<'de> Deserialize<'de> + Default>(&self) -> T {
        serde_json::from_value(self.0.clone()).unwrap_or_default()
    }

    /// Replaces the state.
    pub fn set<T: Serialize>(&mut self, value: &T) {
        self.0 = serde_json::to_value(value).unwrap_or(Value::Null);
    }
}

/// A BO algorithm.
pub trait Policy: Send + Sync + std::fmt::Debug {
    /// Name as in `algorithm.name`.
    fn name(&self) -> &'static str;

    /// `count` new candidates, different from each other and from the pending points; may update `state`.
    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>>;

    /// The point the model currently believes best, if there is a model yet.
    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        model::recommend_by_mean(ctx, state, &self.model_options())
    }

    /// Posterior mean and standard deviation of the objective (maximisation sign) at full encoded points.
    fn predict(&self, ctx: &Context<'_>, state: &PolicyState, xs: &[f64]) -> Result<Option<Vec<(f64, f64)>>> {
        model::predict_default(ctx, state, xs, &self.model_options())
    }

    /// The options of the standard surrogate (kernel, fixed hyperparameters) that the default `recommend` and
    /// `predict` use, so that `best` and `predict` answer with the model the suggestions came from.
    fn model_options(&self) -> model::ModelOptions {
        model::ModelOptions::default()
    }

    /// Policy-specific status for the study resource (e.g. surviving kernel candidates); `None` by default.
    fn describe(&self, _state: &PolicyState) -> Option<Value> {
        None
    }

    /// Whether the policy's options need the study to have a cost budget (`budget.max_cost`); false by default.
    fn needs_cost_budget(&self) -> bool {
        false
    }
}

/// Every algorithm name [`build`] accepts, besides `auto`.
pub const ALGORITHMS: &[&str] = &[
    "random",
    "sobol",
    "gp-ei",
    "gp-ucb",
    "gp-mes",
    "gp-ts",
    "gp-pi",
    "sbo-kde",
    "drbo-kde",
    "stableopt",
    "drbo-mmd",
    "truvar",
    "lse-gchk",
    "lse-straddle",
    "lse-var",
    "he-gp-ucb",
    "he-stableopt",
    "mle-ucb",
    "expected-ucb",
    "a-gp-ucb",
    "bocvs",
    "ucb-psq",
    "ts-psq",
    "etc-cvs",
    "ucb-cvs",
    "cmes",
    "cmets",
];

/// The algorithm `auto` resolves to for `problem`.
pub fn auto_choice(problem: &Problem) -> &'static str {
    if problem.control_sets.is_some() {
        return "bocvs";
    }
    if let Some(ip) = &problem.indirect {
        return if ip.tree.is_some() { "cmets" } else { "cmes" };
    }
    if problem.kernel_candidates.is_some() {
        return "he-gp-ucb";
    }
    if !problem.contexts.is_empty() && problem.measurement.candidates.is_none() {
        return "sbo-kde";
    }
    "gp-ei"
}

/// Whether `name` searches the continuous box and so would ignore a `candidates` block (a finite domain): the
/// context, kernel-candidate and control-set families.
fn continuous_only(name: &str) -> bool {
    matches!(
        name,
        "sbo-kde"
            | "drbo-kde"
            | "stableopt"
            | "drbo-mmd"
            | "he-gp-ucb"
            | "he-stableopt"
            | "mle-ucb"
            | "expected-ucb"
            | "a-gp-ucb"
    ) || cvs::NAMES.contains(&name)
}

/// Builds the policy named in `spec` for `problem`; errors name `algorithm.name` or `algorithm.options.*`.
pub fn build(spec: &AlgorithmSpec, problem: &Problem) -> Result<Box<dyn Policy>, Vec<FieldError>> {
    let name = if spec.name == "auto" { auto_choice(problem) } else { spec.name.as_str() };
    let options = Value::Object(spec.options.clone());
    if problem.control_sets.is_some() && !cvs::NAMES.contains(&name) {
        return Err(vec![FieldError::new(
            "algorithm.name",
            format!("'{name}' cannot choose control sets; use 'auto' or one of {}", cvs::NAMES.join(", ")),
        )]);
    }
    if problem.measurement.candidates.is_some() && continuous_only(name) {
        return Err(vec![FieldError::new(
            "candidates",
            format!(
                "'{name}' searches the continuous box and cannot keep to a candidate set; remove the block, or use \
                 gp-ei, gp-ucb, gp-mes, gp-ts, gp-pi, truvar or lse-* (they choose among the candidates)"
            ),
        )]);
    }
    if problem.indirect.is_some() {
        return IndirectPolicy::build(name, options, problem).map(|p| Box::new(p) as _);
    }
    match name {
        "random" | "sobol" if !spec.options.is_empty() => Err(spec
            .options
            .keys()
            .map(|k| {
                FieldError::new(format!("algorithm.options.{k}"), format!("not an option of '{name}' (it has none)"))
            })
            .collect()),
        "random" => Ok(Box::new(RandomSearch)),
        "sobol" => Ok(Box::new(SobolSearch)),
        "gp-ei" => GpBo::build(GpAcquisition::LogEi, options, problem.space.dim()).map(|p| Box::new(p) as _),
        "gp-ucb" => GpBo::build(GpAcquisition::Ucb, options, problem.space.dim()).map(|p| Box::new(p) as _),
        "gp-mes" => GpBo::build(GpAcquisition::Mes, options, problem.space.dim()).map(|p| Box::new(p) as _),
        "gp-ts" => GpBo::build(GpAcquisition::Thompson, options, problem.space.dim()).map(|p| Box::new(p) as _),
        "gp-pi" => GpBo::build(GpAcquisition::Pi, options, problem.space.dim()).map(|p| Box::new(p) as _),
        "sbo-kde" | "drbo-kde" | "stableopt" | "drbo-mmd" => {
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
        "truvar" => truvar::Truvar::build(options, problem).map(|p| Box::new(p) as _),
        "lse-gchk" => lse::Lse::build(lse::LseRule::Gchk, options, problem).map(|p| Box::new(p) as _),
        "lse-straddle" => lse::Lse::build(lse::LseRule::Straddle, options, problem).map(|p| Box::new(p) as _),
        "lse-var" => lse::Lse::build(lse::LseRule::Var, options, problem).map(|p| Box::new(p) as _),
        "he-gp-ucb" | "he-stableopt" | "mle-ucb" | "expected-ucb" | "a-gp-ucb" => {
            build_candidate_policy(name, options, problem)
        }
        n if cvs::NAMES.contains(&n) => cvs::build(n, options, problem),
        "cmes" | "cmets" => Err(vec![FieldError::new("algorithm.name", format!("'{name}' needs an 'indirect' block"))]),
        other => Err(vec![FieldError::new(
            "algorithm.name",
            format!("unknown algorithm '{other}'; choose 'auto' or one of {}", ALGORITHMS.join(", ")),
        )]),
    }
}

/// The policies over `kernel.candidates` (seed 004).
fn build_candidate_policy(name: &str, options: Value, problem: &Problem) -> Result<Box<dyn Policy>, Vec<FieldError>> {
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

/// Parses algorithm options into `T` (which should deny unknown fields), naming the offending option:
/// `algorithm.options.<path>` from the deserialiser's path. Fields inside a `#[serde(flatten)]` struct (the shared
/// surrogate options) lose that path, so for an error at the root each option is tried alone to find the culprit.
pub fn parse_options<T: for<'de> Deserialize<'de>>(options: Value) -> Result<T, Vec<FieldError>> {
    let err = match serde_path_to_error::deserialize::<_, T>(options.clone()) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let msg = err.inner().to_string();
    let unknown = |m: &str| m.strip_prefix("unknown field `").and_then(|r| r.split('`').next()).map(str::to_string);
    let join = |a: &str, b: &str| if a.is_empty() { b.to_string() } else { format!("{a}.{b}") };
    let root = |p: String| if p == "." { String::new() } else { p };
    let mut path = root(err.path().to_string());
    if let Some(key) = unknown(&msg).filter(|_| !path.is_empty()) {
        path = join(&path, &key);
    }
    if path.is_empty()
        && let Value::Object(map) = &options
    {
        // Find the one option that fails on its own.
        for (k, v) in map {
            let alone = Value::Object(serde_json::Map::from_iter([(k.clone(), v.clone())]));
            if let Err(e) = serde_path_to_error::deserialize::<_, T>(alone) {
                let inner = root(e.path().to_string());
                let m = e.inner().to_string();
                path = match (inner.is_empty(), unknown(&m)) {
                    (false, Some(key)) => join(&inner, &key),
                    (false, None) => inner,
                    (true, Some(key)) if key != *k => join(k, &key),
                    // `fixed`, the one nested option object, sits in the flattened surrogate options.
                    (true, _) if k == "fixed" => {
                        match serde_path_to_error::deserialize::<_, Option<FixedHyperparameters>>(v.clone()) {
                            Err(e) if e.path().to_string() != "." => join(k, &e.path().to_string()),
                            _ => k.clone(),
                        }
                    }
                    (true, _) => k.clone(),
                };
                break;
            }
        }
    }
    Err(vec![FieldError::new(join("algorithm.options", &path), msg)])
}

/// Decodes the parameters a candidate asks the client to set.
pub fn assignments_of(space: &Space, decision: &[usize], c: &Candidate) -> Assignments {
    space.decode_some(&c.x, c.params.as_deref().unwrap_or(decision))
}
