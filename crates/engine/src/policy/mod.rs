//! Policies: one [`Policy`] trait, one folder per family (plain, control sets, contexts, indirect, measurement,
//! kernel candidates) with one implementation per algorithm, the shared surrogate ([`model`]) and initial design
//! ([`design`]), and the [`registry`], which turns an `algorithm {name, options}` spec into a policy (`auto` picks
//! one from the study's blocks).
//!
//! A policy is a pure function of (problem, dataset, pending points, policy state, seed). State it carries between
//! steps lives in [`PolicyState`] (JSON), which the server stores with the study and hands back unchanged.

pub mod contexts;
pub mod control_sets;
mod design;
pub mod indirect;
pub mod kernel_candidates;
pub mod measurement;
mod model;
pub mod outcomes;
pub mod plain;
pub mod registry;
mod replicates;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use contexts::{ContextBo, ContextBoOptions, ContextMethod};
pub use design::{RandomSearch, SobolSearch, initial_design_point};
pub use indirect::{CmesOptions, IndirectPolicy};
pub use kernel_candidates::candidate_baselines::{BaselineKind, CandidateBaseline};
pub use kernel_candidates::candidate_models::CandidateOptions;
pub use kernel_candidates::he_gp_ucb::HeGpUcb;
pub use model::{FixedHyperparameters, LENGTHSCALE_CAP, ModelOptions, OutputWarping, fit_model};
pub use plain::{
    GpAcquisition, GpBo, GpBoOptions, LOCAL_CYCLE, LOCAL_MIN_EI, LOCAL_MIN_HALF_WIDTH, LOCAL_RADIUS, SEPARATION,
};
pub use registry::{Algorithm, Family, REGISTRY, auto_choice, build};

use crate::data::{Dataset, PointExtras};
use crate::error::{FieldError, Result};
use crate::problem::Problem;
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
    /// Control set (index) to play, noise level (index) to use, encoded indirect query, expected cost.
    pub extras: PointExtras<usize, Vec<f64>>,
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

/// Posterior `(mean, sd)` of every metric at each point: one row of metrics per point.
pub type MetricPosteriors = Vec<Vec<(f64, f64)>>;

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

    /// Posterior mean and standard deviation of every metric (objectives maximised, then the constraints' slacks;
    /// [`crate::objective::Outcomes`]) at full encoded points: one row of metrics per point. Policies of one
    /// unconstrained objective answer with that objective alone.
    fn predict_metrics(&self, ctx: &Context<'_>, state: &PolicyState, xs: &[f64]) -> Result<Option<MetricPosteriors>> {
        if ctx.problem.outcomes.is_single() {
            return Ok(self.predict(ctx, state, xs)?.map(|p| p.into_iter().map(|m| vec![m]).collect()));
        }
        // Policies without models of their own (random, sobol) on outcome studies: a fresh standard model per metric.
        let options = model::ModelOptions { output_warping: Some(model::OutputWarping::None), ..Default::default() };
        model::predict_metrics(ctx, &[], xs, &options)
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

/// An `algorithm.options.<name>` error "must be between lo and hi" for each `(name, value, lo, hi)` out of range.
pub(crate) fn out_of_range(checks: &[(&str, usize, usize, usize)]) -> Vec<FieldError> {
    checks
        .iter()
        .filter(|(_, v, lo, hi)| !(lo..=hi).contains(&v))
        .map(|(name, _, lo, hi)| {
            FieldError::new(format!("algorithm.options.{name}"), format!("must be between {lo} and {hi}"))
        })
        .collect()
}

/// Decodes the parameters a candidate asks the client to set.
pub fn assignments_of(space: &Space, decision: &[usize], c: &Candidate) -> Assignments {
    space.decode_some(&c.x, c.params.as_deref().unwrap_or(decision))
}
