//! Request and response bodies of the HTTP API (design.md §3). The resources and the bodies the service layer
//! takes live below it, in [`crate::resources`], and are re-exported here; this module adds the envelopes only the
//! handlers build or parse (pages, the batch, predictions, pair uploads, health, the page query).

pub use crate::resources::{
    BestObserved, BestResponse, Budget, BudgetOverspent, BudgetRemaining, CreateObservation, CreateSuggestions,
    ObservationList, ObservationResource, PairsUploaded, RecommendedPoint, StudyCounts, StudyResource, SuggestionList,
    SuggestionResource,
};

use engine::StudySpec;
use engine::study::Prediction;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Body of `POST /v1/studies`: the engine's study spec plus server-level fields.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({
    "name": "reaction-yield",
    "objective": {"name": "yield", "goal": "maximize"},
    "parameters": [
        {"name": "temperature", "type": "float", "low": 20, "high": 80},
        {"name": "catalyst_ppm", "type": "float", "low": 1, "high": 1000, "scale": "log"},
        {"name": "stir_rpm", "type": "int", "low": 100, "high": 1000},
        {"name": "solvent", "type": "categorical", "choices": ["water", "ethanol", "dmso"]}
    ],
    "algorithm": {"name": "auto"},
    "budget": {"max_observations": 60},
    "suggestion_ttl": 3600,
    "seed": 7
}))]
pub struct CreateStudy {
    /// Display name (1–200 characters).
    #[schema(example = "reaction-yield")]
    pub name: String,
    /// Optional budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Seconds after which an open suggestion expires (becomes `abandoned`); none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = 3600, minimum = 1)]
    pub suggestion_ttl: Option<i64>,
    /// The engine study spec (parameters, objective, algorithm, seed and structural blocks).
    #[serde(flatten)]
    pub spec: StudySpec,
}

/// A page of studies.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StudyPage {
    /// Studies in creation order.
    pub studies: Vec<StudyResource>,
    /// Pass as `after` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "25")]
    pub next_cursor: Option<String>,
}

/// A page of suggestions.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SuggestionPage {
    /// Suggestions in order.
    pub suggestions: Vec<SuggestionResource>,
    /// Pass as `after` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "100")]
    pub next_cursor: Option<String>,
}

/// Most observations a batch takes, as JSON items or CSV rows (the document's `max_items` below says the same).
pub const MAX_BATCH: usize = 1000;

/// Body of `POST /v1/studies/{study_id}/observations/batch`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateObservationBatch {
    /// Observations to import (1–1000), stored all or none.
    #[schema(min_items = 1, max_items = 1000)]
    pub observations: Vec<CreateObservation>,
}

/// A page of observations.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ObservationPage {
    /// Observations in order.
    pub observations: Vec<ObservationResource>,
    /// Pass as `after` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "100")]
    pub next_cursor: Option<String>,
}

/// Body of `POST /v1/studies/{study_id}/predict`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PredictRequest {
    /// Complete assignments (every parameter) at which to evaluate the posterior (1–1000).
    #[schema(value_type = Vec<Object>, example = json!([{"temperature": 50.0}]))]
    #[schema(min_items = 1, max_items = 1000)]
    pub points: Vec<Map<String, Value>>,
}

/// Response of `POST /v1/studies/{study_id}/predict`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PredictResponse {
    /// Posterior mean and standard deviation at each point, in order (of the first objective in studies with
    /// several objectives).
    pub predictions: Vec<Prediction>,
    /// Studies with several objectives or outcome constraints: the posterior of every objective and constraint at
    /// each point, by name, in their own units.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<std::collections::HashMap<String, Prediction>>>)]
    pub outcomes: Option<Vec<std::collections::BTreeMap<String, Prediction>>>,
}

/// Body of `POST /v1/studies/{study_id}/pairs`: example pairs (x, a) of an indirect study's conditional p(x | a).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"pairs": [
    {"target": {"x1": 2.5, "x2": 7.0}, "query": {"a1": 0.5, "a2": 0.47}},
    {"target": {"x1": -3.1, "x2": 1.2}, "query": {"a1": 0.12, "a2": 0.08}}
]}))]
pub struct UploadPairs {
    /// 1–20000 pairs: each gives every target parameter (the study's `parameters`) under `target` and every query
    /// parameter (`indirect.query_parameters`) under `query`, inside their ranges.
    #[schema(min_items = 1, max_items = 20000)]
    pub pairs: Vec<engine::PairRecord>,
}

/// Response of `/healthz` and `/readyz`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`, or `unavailable`.
    #[schema(example = "ok")]
    pub status: String,
    /// Storage backend (`postgres` or `sqlite`), on `/readyz`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "postgres")]
    pub database: Option<String>,
}

/// Pagination query of list routes.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size (1–1000, default 100).
    #[param(example = 100, minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// Cursor from the previous page's `next_cursor`.
    #[param(example = "100")]
    pub after: Option<String>,
}
