//! The HTTP API: router, OpenAPI document, and the conversions between stored rows and resources.

pub(crate) mod group_commit;
mod insight;
mod observations;
mod pairs;
mod studies;
mod suggestions;
mod system;
pub mod types;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use engine::{History, ObservationRecord, PairRecord, PendingRecord, Study, StudySpec};
use serde_json::Value;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

use crate::domain::{AbandonReason, StudyStatus, SuggestionState};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store::{ObservationRow, Page, Store, StoreError, StudyRow, StudyTx, SuggestionRow};
use types::{Budget, BudgetRemaining, ObservationResource, PageQuery, StudyCounts, StudyResource, SuggestionResource};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "bayesd",
        description = "Bayesian optimisation as an ask-tell HTTP service: create a study, ask for suggestions, \
                       tell observations. Errors are RFC 9457 problem documents (application/problem+json) whose \
                       `errors[].field` names each invalid field.",
        license(name = "MIT", identifier = "MIT")
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "studies", description = "Create, list, get and archive studies."),
        (name = "suggestions", description = "Ask: points to evaluate next."),
        (name = "observations", description = "Tell: what happened, one at a time or in bulk."),
        (name = "model", description = "Best point and posterior predictions."),
        (name = "system", description = "Health, readiness, metrics.")
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("Required on every route but health and docs when the server has API tokens."))
                    .build(),
            ),
        );
        openapi.security =
            Some(vec![utoipa::openapi::security::SecurityRequirement::new("bearer", Vec::<String>::new())]);
    }
}

fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(studies::create_study, studies::list_studies))
        .routes(routes!(studies::get_study, studies::archive_study))
        .routes(routes!(suggestions::create_suggestions, suggestions::list_suggestions))
        .routes(routes!(suggestions::get_suggestion, suggestions::abandon_suggestion))
        .routes(routes!(observations::create_observation, observations::list_observations))
        .routes(routes!(observations::create_observation_batch))
        .routes(routes!(observations::get_observation))
        .routes(routes!(pairs::upload_pairs))
        .routes(routes!(insight::best))
        .routes(routes!(insight::predict))
        .routes(routes!(system::healthz))
        .routes(routes!(system::readyz))
        .routes(routes!(system::metrics))
}

/// The OpenAPI document the server serves.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api_router().split_for_parts().1
}

/// The complete application.
pub fn app(state: AppState) -> Router {
    let (router, doc) = api_router().split_for_parts();
    router
        .merge(SwaggerUi::new("/docs").url("/openapi.json", doc))
        .fallback(|| async { ApiError::no_route() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::auth::require_token))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::metrics::track))
        .with_state(state)
}

/// A JSON response with a status.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, Json(body)).into_response()
}

/// Serialises a response body.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> ApiResult<Value> {
    serde_json::to_value(v).map_err(|e| ApiError::internal("serialising a response", e))
}

/// The engine study of a stored study.
pub(crate) fn engine_study(row: &StudyRow) -> ApiResult<Study> {
    let spec: StudySpec =
        serde_json::from_value(row.spec.clone()).map_err(|e| ApiError::internal("stored spec unreadable", e))?;
    Study::new(spec).map_err(|e| {
        ApiError::internal(
            "stored spec no longer validates",
            e.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
        )
    })
}

/// The budget of a stored study.
pub(crate) fn budget_of(row: &StudyRow) -> Option<Budget> {
    row.budget.clone().and_then(|b| serde_json::from_value(b).ok())
}

/// What is left of a study's budget.
pub(crate) fn remaining(row: &StudyRow) -> Option<BudgetRemaining> {
    let b = budget_of(row)?;
    let observations = b.max_observations.map(|m| (m - row.n_observations).max(0));
    let cost = b.max_cost.map(|m| (m - row.total_cost).max(0.0));
    let spent = observations == Some(0) || b.max_cost.is_some_and(|m| row.total_cost >= m);
    Some(BudgetRemaining { observations, cost, spent })
}

/// The status a study should have given its budget (archived stays archived).
pub(crate) fn status_for(row: &StudyRow) -> StudyStatus {
    row.status.after_write(remaining(row).is_some_and(|r| r.spent))
}

/// The study resource of a row.
pub(crate) fn study_resource(row: &StudyRow) -> ApiResult<StudyResource> {
    let study = engine_study(row)?;
    let policy = study.describe(&engine::PolicyState(row.policy_state.clone()));
    Ok(StudyResource {
        id: row.id,
        name: row.name.clone(),
        status: row.status.as_str().to_string(),
        spec: study.spec().clone(),
        budget: budget_of(row),
        suggestion_ttl: row.suggestion_ttl_seconds,
        algorithm_in_use: study.algorithm().to_string(),
        counts: StudyCounts { observations: row.n_observations, suggestions: row.n_suggestions },
        total_cost: row.total_cost,
        budget_remaining: remaining(row),
        policy,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

fn string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

/// True when an open suggestion's time-to-live has passed.
pub(crate) fn is_expired(s: &SuggestionRow, now: DateTime<Utc>) -> bool {
    crate::domain::is_expired(s.state, s.expires_at, now)
}

/// The suggestion resource of a row (an open suggestion past its expiry shows as abandoned).
pub(crate) fn suggestion_resource(s: &SuggestionRow, now: DateTime<Utc>) -> SuggestionResource {
    let b = &s.body;
    let (state, reason, closed) = crate::domain::shown_state(s.state, s.expires_at, s.closed_at, s.abandon_reason, now);
    SuggestionResource {
        id: s.id,
        study_id: s.study_id,
        state: state.as_str().to_string(),
        client_id: s.client_id.clone(),
        assignments: b.assignments.clone(),
        control_set: b.control_set.clone(),
        noise_level: b.noise_level.clone(),
        query: b.query.clone().map(Value::Object),
        expected_cost: b.expected_cost,
        predicted: b.predicted,
        algorithm: b.algorithm.clone(),
        diagnostics: b.diagnostics.clone(),
        created_at: s.created_at,
        expires_at: s.expires_at,
        closed_at: closed,
        abandon_reason: reason.map(|r| r.as_str().to_string()),
    }
}

/// The observation resource of a row.
pub(crate) fn observation_resource(o: &ObservationRow) -> ObservationResource {
    ObservationResource {
        id: o.id,
        study_id: o.study_id,
        suggestion_id: o.suggestion_id,
        assignments: o.assignments.as_object().cloned().unwrap_or_default(),
        value: o.value,
        value_stddev: o.value_stddev,
        cost: o.cost,
        failed: o.failed,
        metadata: o.metadata.clone(),
        control_set: string(o.extra.get("control_set")),
        noise_level: string(o.extra.get("noise_level")),
        query: o.extra.get("query").filter(|q| !q.is_null()).cloned(),
        created_at: o.created_at,
    }
}

/// The engine record of a stored observation.
pub(crate) fn observation_record(o: &ObservationRow) -> ObservationRecord {
    ObservationRecord {
        assignments: o.assignments.as_object().cloned().unwrap_or_default(),
        value: o.value,
        value_stddev: o.value_stddev,
        cost: o.cost,
        failed: o.failed,
        control_set: string(o.extra.get("control_set")),
        noise_level: string(o.extra.get("noise_level")),
        query: o.extra.get("query").and_then(Value::as_object).cloned(),
    }
}

/// The engine record of an open suggestion.
pub(crate) fn pending_record(s: &SuggestionRow) -> PendingRecord {
    s.body.pending()
}

/// The history the engine sees (`pairs`: those uploaded to an indirect study; pairs of the spec come on top), with
/// the study's cost budget.
pub(crate) fn history(
    study: &StudyRow,
    observations: &[ObservationRow],
    pending: &[SuggestionRow],
    pairs: Vec<PairRecord>,
) -> History {
    History {
        observations: observations.iter().map(observation_record).collect(),
        pending: pending.iter().map(pending_record).collect(),
        pairs,
        cost_budget: budget_of(study).and_then(|b| b.max_cost),
    }
}

/// The pairs uploaded to a study, read only for indirect studies.
pub(crate) async fn uploaded_pairs(store: &dyn Store, study: &Study, id: uuid::Uuid) -> ApiResult<Vec<PairRecord>> {
    if study.spec().indirect.is_none() {
        return Ok(Vec::new());
    }
    pairs::pairs_of(&store.list_pair_batches(id).await?)
}

/// Abandons expired open suggestions inside a study transaction; returns the ones still open.
pub(crate) async fn expire_open(tx: &mut Box<dyn StudyTx>, now: DateTime<Utc>) -> ApiResult<Vec<SuggestionRow>> {
    let open = tx.open_suggestions().await?;
    let mut still = Vec::with_capacity(open.len());
    for s in open {
        if is_expired(&s, now) {
            let at = s.expires_at.unwrap_or(now);
            tx.close_suggestion(s.id, SuggestionState::Abandoned, at, Some(AbandonReason::Expired)).await?;
        } else {
            still.push(s);
        }
    }
    Ok(still)
}

/// Locks a study for writing, or 404.
pub(crate) async fn lock(state: &AppState, id: uuid::Uuid) -> ApiResult<Box<dyn StudyTx>> {
    state.store.lock_study(id).await?.ok_or_else(|| ApiError::not_found("study", id))
}

/// A page request from the query (`limit` 1–1000, default 100; `after` a cursor).
pub(crate) fn page_of(q: &PageQuery) -> ApiResult<Page> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_field("limit", "must be between 1 and 1000"));
    }
    let after = match q.after.as_deref() {
        None | Some("") => 0,
        Some(c) => c
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(|| ApiError::bad_field("after", "not a cursor returned by this API (use next_cursor)"))?,
    };
    Ok(Page { after, limit })
}

/// The next cursor after a page of `len` rows ending at `last_seq`.
pub(crate) fn next_cursor(page: Page, len: usize, last_seq: Option<i64>) -> Option<String> {
    (len as i64 == page.limit).then_some(last_seq).flatten().map(|s| s.to_string())
}

/// Maps a store conflict to a 409 of the given kind.
pub(crate) fn conflict_as<'a>(kind: &'static str, detail: &'a str) -> impl FnOnce(StoreError) -> ApiError + 'a {
    move |e| match e {
        StoreError::Conflict(_) => ApiError::conflict(kind, detail.to_string()),
        other => other.into(),
    }
}
