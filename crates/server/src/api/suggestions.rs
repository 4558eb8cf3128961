//! `/v1/studies/{study_id}/suggestions`: ask for points (with `client_id` re-delivery), list, get, abandon.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;
use uuid::Uuid;

use super::types::{CreateSuggestions, SuggestionList, SuggestionPage, SuggestionResource};
use super::{next_cursor, page_of};
use crate::domain::SuggestionState;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJsonOrDefault, ApiPath, ApiQuery};
use crate::idempotency::Idempotency;
use crate::service::{self, views::suggestion_resource};
use crate::state::AppState;

/// Asks for suggestions.
#[utoipa::path(
    post,
    path = "/v1/studies/{study_id}/suggestions",
    tag = "suggestions",
    request_body = CreateSuggestions,
    params(
        ("study_id" = Uuid, Path, description = "Study id."),
        ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first response.")
    ),
    responses(
        (status = 201, description = "New open suggestions.", body = SuggestionList),
        (status = 200, description = "The client's still-open suggestions, handed out again (client_id re-delivery).", body = SuggestionList),
        (status = 400, description = "Malformed JSON, id or header.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The study is archived, its budget is spent or promised to open suggestions, or the model cannot be fitted to the data (model-failed).", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, each named.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Compute is saturated; retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn create_suggestions(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJsonOrDefault(body): ApiJsonOrDefault<CreateSuggestions>,
) -> ApiResult<Response> {
    let req = body.value;
    let count = req.count.unwrap_or(1);
    if !(1..=100).contains(&count) {
        return Err(ApiError::field("count", "must be between 1 and 100"));
    }
    if let Some(c) = &req.client_id
        && (c.is_empty() || c.chars().count() > 200)
    {
        return Err(ApiError::field("client_id", "must be 1–200 characters"));
    }
    let idem = Idempotency::from_request(&headers, format!("POST /v1/studies/{study_id}/suggestions"), &body.raw)?;
    Ok(service::ask::ask(&state, study_id, count as usize, req, idem).await?.into_response())
}

/// Query of the suggestion list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SuggestionQuery {
    /// Only suggestions in this state: `open`, `completed` or `abandoned`.
    #[param(example = "open", value_type = Option<crate::domain::SuggestionState>)]
    pub state: Option<String>,
    /// Page size (1–1000, default 100).
    #[param(example = 100)]
    pub limit: Option<i64>,
    /// Cursor from the previous page's `next_cursor`.
    #[param(example = "100")]
    pub after: Option<String>,
}

/// Lists a study's suggestions in order.
#[utoipa::path(
    get,
    path = "/v1/studies/{study_id}/suggestions",
    tag = "suggestions",
    params(("study_id" = Uuid, Path, description = "Study id."), SuggestionQuery),
    responses(
        (status = 200, description = "A page of suggestions.", body = SuggestionPage),
        (status = 400, description = "Malformed id, state, limit or cursor.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn list_suggestions(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    ApiQuery(q): ApiQuery<SuggestionQuery>,
) -> ApiResult<axum::Json<SuggestionPage>> {
    let shown = q
        .state
        .as_deref()
        .map(str::parse::<SuggestionState>)
        .transpose()
        .map_err(|_| ApiError::bad_field("state", "must be open, completed or abandoned"))?;
    let page = page_of(&super::types::PageQuery { limit: q.limit, after: q.after.clone() })?;
    if state.store.get_study(study_id).await?.is_none() {
        return Err(ApiError::not_found("study", study_id));
    }
    // The store filters on the state shown (expired open suggestions count as abandoned) before paging.
    let now = Utc::now();
    let rows = state.store.list_suggestions(study_id, shown, now, page).await?;
    let next_cursor = next_cursor(page, rows.len(), rows.last().map(|r| r.seq));
    let suggestions = rows.iter().map(|r| suggestion_resource(r, now)).collect();
    Ok(axum::Json(SuggestionPage { suggestions, next_cursor }))
}

/// Gets one suggestion.
#[utoipa::path(
    get,
    path = "/v1/studies/{study_id}/suggestions/{suggestion_id}",
    tag = "suggestions",
    params(("study_id" = Uuid, Path, description = "Study id."), ("suggestion_id" = Uuid, Path, description = "Suggestion id.")),
    responses(
        (status = 200, description = "The suggestion.", body = SuggestionResource),
        (status = 400, description = "An id is not a UUID.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study or suggestion.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn get_suggestion(
    State(state): State<AppState>,
    ApiPath((study_id, suggestion_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<axum::Json<SuggestionResource>> {
    let row = state
        .store
        .get_suggestion(study_id, suggestion_id)
        .await?
        .ok_or_else(|| ApiError::not_found("suggestion", suggestion_id))?;
    Ok(axum::Json(suggestion_resource(&row, Utc::now())))
}

/// Abandons an open suggestion (the client will not run it); its point is no longer held back.
#[utoipa::path(
    delete,
    path = "/v1/studies/{study_id}/suggestions/{suggestion_id}",
    tag = "suggestions",
    params(("study_id" = Uuid, Path, description = "Study id."), ("suggestion_id" = Uuid, Path, description = "Suggestion id.")),
    responses(
        (status = 200, description = "The abandoned suggestion (abandoning twice is harmless).", body = SuggestionResource),
        (status = 400, description = "An id is not a UUID.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study or suggestion.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The suggestion is already completed.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn abandon_suggestion(
    State(state): State<AppState>,
    ApiPath((study_id, suggestion_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<axum::Json<SuggestionResource>> {
    Ok(axum::Json(service::ask::abandon(&state, study_id, suggestion_id).await?))
}
