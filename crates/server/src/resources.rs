//! The API's resources and the request bodies the service takes: the JSON the [`crate::service`] layer consumes
//! and produces, below both it and the HTTP handlers (which re-export them from `api::types`, so the OpenAPI
//! document names them as before). The engine's `StudySpec` is flattened into the study resource, so study blocks
//! added to the engine appear in the API without changes here.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use engine::StudySpec;
use engine::study::Prediction;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

/// Limits on how much a study may spend; suggestions are refused (409) once it is spent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Maximum number of observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = 60, minimum = 1)]
    pub max_observations: Option<i64>,
    /// Maximum sum of observed costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = 100.0)]
    pub max_cost: Option<f64>,
}

/// Observations and suggestions a study has.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StudyCounts {
    /// Observations stored.
    #[schema(example = 12)]
    pub observations: i64,
    /// Suggestions ever made.
    #[schema(example = 14)]
    pub suggestions: i64,
}

/// What is left of the budget.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BudgetRemaining {
    /// Observations left (when `max_observations` is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 48)]
    pub observations: Option<i64>,
    /// Cost left (when `max_cost` is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 88.5)]
    pub cost: Option<f64>,
    /// The budget is spent: suggestions are refused.
    #[schema(example = false)]
    pub spent: bool,
    /// How far the stored observations go past the budget, when they do. Observations told after the budget is
    /// spent (runs that happened anyway, e.g. of suggestions handed out before) are stored, never refused, and
    /// counted here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overspent: Option<BudgetOverspent>,
}

/// Observations and cost beyond the budget.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BudgetOverspent {
    /// Observations beyond `max_observations`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 2)]
    pub observations: Option<i64>,
    /// Cost beyond `max_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 3.5)]
    pub cost: Option<f64>,
}

/// A study.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({
    "id": "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
    "name": "reaction-yield",
    "status": "active",
    "objective": {"name": "yield", "goal": "maximize"},
    "parameters": [
        {"name": "temperature", "type": "float", "low": 20.0, "high": 80.0},
        {"name": "catalyst_ppm", "type": "float", "low": 1.0, "high": 1000.0, "scale": "log"},
        {"name": "stir_rpm", "type": "int", "low": 100.0, "high": 1000.0},
        {"name": "solvent", "type": "categorical", "choices": ["water", "ethanol", "dmso"]}
    ],
    "algorithm": {"name": "auto", "options": {}},
    "seed": 7,
    "budget": {"max_observations": 60},
    "suggestion_ttl": 3600,
    "algorithm_in_use": "gp-ei",
    "counts": {"observations": 12, "suggestions": 14},
    "total_cost": 12.0,
    "budget_remaining": {"observations": 48, "spent": false},
    "created_at": "2026-01-01T12:00:00Z",
    "updated_at": "2026-01-01T13:30:00Z"
}))]
pub struct StudyResource {
    /// Study id.
    pub id: Uuid,
    /// Display name.
    #[schema(example = "reaction-yield")]
    pub name: String,
    /// `active`, `completed` (budget spent) or `archived`.
    #[schema(example = "active")]
    #[schema(value_type = crate::domain::StudyStatus)]
    pub status: String,
    /// The study spec with defaults filled in.
    #[serde(flatten)]
    pub spec: StudySpec,
    /// The budget, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Suggestion time-to-live in seconds, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 3600)]
    pub suggestion_ttl: Option<i64>,
    /// Algorithm in use (`auto` resolved).
    #[schema(example = "gp-ei")]
    pub algorithm_in_use: String,
    /// Counts.
    pub counts: StudyCounts,
    /// Sum of observed costs.
    #[schema(example = 0.0)]
    pub total_cost: f64,
    /// What is left of the budget (when there is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_remaining: Option<BudgetRemaining>,
    /// Policy-specific status (e.g. surviving kernel candidates), when the algorithm reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub policy: Option<Value>,
    /// Creation time (RFC 3339 UTC).
    pub created_at: DateTime<Utc>,
    /// Last change (RFC 3339 UTC).
    pub updated_at: DateTime<Utc>,
}

/// Body of `POST /v1/studies/{study_id}/suggestions`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSuggestions {
    /// Number of suggestions (1–100, default 1); fewer are returned when the budget has fewer observations left.
    #[serde(default)]
    #[schema(example = 1, minimum = 1, maximum = 100)]
    pub count: Option<i64>,
    /// The asking client; while it has open suggestions, the same ones are returned (a restarted robot does not
    /// burn budget).
    #[serde(default)]
    #[schema(example = "robot-1")]
    pub client_id: Option<String>,
    /// Values of the context parameters, when they are known before the run (studies with parameters of role
    /// `context`; optional in every such study). With it the suggestion is optimised for that context, keeps it
    /// (`context` on the suggestion), and an observation by `suggestion_id` inherits it (an explicit different value
    /// is 422 naming `assignments.<name>`). Without it the suggestion is for the context the environment will set,
    /// and the observation must report that context in `assignments`. Give every context parameter, or none.
    #[serde(default)]
    #[schema(value_type = Option<Object>, example = json!({}))]
    pub context: Option<Map<String, Value>>,
}

/// A suggestion.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SuggestionResource {
    /// Suggestion id.
    pub id: Uuid,
    /// Its study.
    pub study_id: Uuid,
    /// `open`, `completed` or `abandoned`.
    #[schema(example = "open")]
    #[schema(value_type = crate::domain::SuggestionState)]
    pub state: String,
    /// The client it was handed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "robot-1")]
    pub client_id: Option<String>,
    /// Values of the parameters the client sets.
    #[schema(value_type = Object, example = json!({"temperature": 61.2, "solvent": "ethanol"}))]
    pub assignments: Map<String, Value>,
    /// Control set to play (studies with `control_sets`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "cheap")]
    pub control_set: Option<String>,
    /// Noise level to use (studies with `noise_levels`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "fast")]
    pub noise_level: Option<String>,
    /// Indirect query (studies with `indirect`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub query: Option<Value>,
    /// The context it was made for, when the request gave one (studies with context parameters); an observation
    /// by `suggestion_id` inherits it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, example = json!({"humidity": 0.4}))]
    pub context: Option<Map<String, Value>>,
    /// Cost the algorithm expects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 1.5)]
    pub expected_cost: Option<f64>,
    /// Posterior of the objective at the suggestion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Prediction>,
    /// Algorithm that produced it.
    #[schema(example = "gp-ei")]
    pub algorithm: String,
    /// How it was produced (phase, acquisition value, jitter, hyperparameters, timings).
    #[schema(value_type = Object)]
    pub diagnostics: Value,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// When it expires while open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was completed or abandoned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<DateTime<Utc>>,
    /// Why it was abandoned: `deleted` or `expired`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "expired")]
    #[schema(value_type = Option<crate::domain::AbandonReason>)]
    pub abandon_reason: Option<String>,
}

/// Suggestions made by one request.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SuggestionList {
    /// The suggestions.
    pub suggestions: Vec<SuggestionResource>,
}

/// Body of `POST /v1/studies/{study_id}/observations`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateObservation {
    /// The suggestion this observation answers (absent when importing data).
    #[serde(default)]
    pub suggestion_id: Option<Uuid>,
    /// What actually happened: every parameter's value. With a `suggestion_id` it defaults to the suggestion's
    /// assignments, and values given here override them.
    #[serde(default)]
    #[schema(value_type = Option<Object>, example = json!({"temperature": 61.2, "catalyst_ppm": 30, "stir_rpm": 400, "solvent": "ethanol"}))]
    pub assignments: Option<Map<String, Value>>,
    /// Objective value (required unless `failed`, or given in `values`; absent in studies with `objectives`).
    #[serde(default)]
    #[schema(example = 0.74)]
    pub value: Option<f64>,
    /// Known standard deviation of the value.
    #[serde(default)]
    #[schema(example = 0.01)]
    pub value_stddev: Option<f64>,
    /// Values of the study's `objectives` and `constraints` by name (each required unless `failed`).
    #[serde(default)]
    #[schema(value_type = Option<HashMap<String, f64>>, example = json!({"purity": 0.995}))]
    pub values: Option<BTreeMap<String, f64>>,
    /// Known standard deviations of some of `values`, by name.
    #[serde(default)]
    #[schema(value_type = Option<HashMap<String, f64>>, example = json!({}))]
    pub values_stddev: Option<BTreeMap<String, f64>>,
    /// Observed cost of the run.
    #[serde(default)]
    #[schema(example = 1.0)]
    pub cost: Option<f64>,
    /// The run failed (no value).
    #[serde(default)]
    #[schema(example = false)]
    pub failed: Option<bool>,
    /// Free-form client metadata (an object).
    #[serde(default)]
    #[schema(value_type = Option<Object>, example = json!({"operator": "ada"}))]
    pub metadata: Option<Map<String, Value>>,
    /// Control set played (defaults to the suggestion's).
    #[serde(default)]
    pub control_set: Option<String>,
    /// Noise level used (defaults to the suggestion's).
    #[serde(default)]
    pub noise_level: Option<String>,
    /// Indirect query whose aggregate was observed (defaults to the suggestion's).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub query: Option<Map<String, Value>>,
}

/// An observation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ObservationResource {
    /// Observation id.
    pub id: Uuid,
    /// Its study.
    pub study_id: Uuid,
    /// The suggestion it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion_id: Option<Uuid>,
    /// What actually happened.
    #[schema(value_type = Object, example = json!({"temperature": 61.2}))]
    pub assignments: Map<String, Value>,
    /// Objective value.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 0.74)]
    pub value: Option<f64>,
    /// Known standard deviation of the value.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 0.01)]
    pub value_stddev: Option<f64>,
    /// Values of the study's objectives and outcome constraints, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    #[schema(value_type = HashMap<String, f64>)]
    pub values: BTreeMap<String, f64>,
    /// Known standard deviations of some of `values`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    #[schema(value_type = HashMap<String, f64>)]
    pub values_stddev: BTreeMap<String, f64>,
    /// Whether the run satisfied every outcome constraint (studies with `constraints`; absent for failed runs).
    /// An infeasible run is a measurement; a failed one has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = true)]
    pub feasible: Option<bool>,
    /// Observed cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 1.0)]
    pub cost: Option<f64>,
    /// The run failed.
    #[schema(example = false)]
    pub failed: bool,
    /// Client metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Control set played.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_set: Option<String>,
    /// Noise level used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_level: Option<String>,
    /// Indirect query.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub query: Option<Value>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}

/// Observations stored by a batch import.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ObservationList {
    /// The stored observations, in order.
    pub observations: Vec<ObservationResource>,
}

/// The best observation so far.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BestObserved {
    /// Its id.
    pub observation_id: Uuid,
    /// Its assignments.
    #[schema(value_type = Object, example = json!({"temperature": 61.2}))]
    pub assignments: Map<String, Value>,
    /// Its value.
    #[schema(example = 0.74)]
    pub value: f64,
}

/// The model's recommended point.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RecommendedPoint {
    /// Values of the recommended decision.
    #[schema(value_type = Object, example = json!({"temperature": 63.0}))]
    pub assignments: Map<String, Value>,
    /// Posterior there.
    pub predicted: Prediction,
    /// Algorithm-specific extras (e.g. a level-set classification).
    #[serde(skip_serializing_if = "Map::is_empty", default)]
    #[schema(value_type = Object)]
    pub extra: Map<String, Value>,
}

/// One point of the observed Pareto front.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ParetoPoint {
    /// The observation.
    pub observation_id: Uuid,
    /// Its assignments.
    #[schema(value_type = Object, example = json!({"temperature": 61.2}))]
    pub assignments: Map<String, Value>,
    /// Its observed objectives and constraints.
    #[schema(value_type = HashMap<String, f64>, example = json!({"yield": 0.8, "cost": 12.0}))]
    pub values: BTreeMap<String, f64>,
    /// The model's estimate of each objective there (empty when the model cannot be fitted).
    #[schema(value_type = HashMap<String, Prediction>)]
    pub predicted: BTreeMap<String, Prediction>,
}

/// The observed Pareto front of a study with several objectives.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ParetoFront {
    /// The feasible observations no other feasible observation dominates, in the order observed.
    pub points: Vec<ParetoPoint>,
    /// Hypervolume the front dominates above the reference point.
    #[schema(example = 0.42)]
    pub hypervolume: f64,
    /// The reference point: each objective's `threshold`, else inferred from the data.
    #[schema(value_type = HashMap<String, f64>, example = json!({"yield": 0.1, "cost": 30.0}))]
    pub reference_point: BTreeMap<String, f64>,
}

/// Response of `GET /v1/studies/{study_id}/best`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BestResponse {
    /// Best observed point (null before the first successful observation; with outcome constraints the best
    /// feasible one; null in studies with several objectives, see `pareto`).
    pub best_observed: Option<BestObserved>,
    /// The model's recommendation (null before there is a model; with outcome constraints only a point the model
    /// believes feasible, its probability in `extra.feasibility_probability`; null with several objectives).
    pub recommended: Option<RecommendedPoint>,
    /// The observed Pareto front (studies with several objectives; null before a feasible observation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pareto: Option<ParetoFront>,
}

/// Response of `POST /v1/studies/{study_id}/pairs`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PairsUploaded {
    /// Id of this upload.
    #[schema(example = "0b6f1d8e-6a53-4f5e-9a3e-2f1c4d5b6a7c")]
    pub id: Uuid,
    /// Its study.
    #[schema(example = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f")]
    pub study_id: Uuid,
    /// Pairs stored by this upload.
    #[schema(example = 2)]
    pub added: i64,
    /// Pairs the study's conditional is now learned from: those given at creation plus every upload.
    #[schema(example = 102)]
    pub total_pairs: i64,
    /// Upload time (RFC 3339 UTC).
    #[schema(example = "2026-01-01T12:00:00Z")]
    pub created_at: DateTime<Utc>,
}
