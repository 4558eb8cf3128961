//! `/v1/studies/{study_id}/suggestions`: ask for points (with `client_id` re-delivery), list, get, abandon.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{Duration, Utc};
use engine::PolicyState;
use engine::study::SuggestRequest;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::types::{CreateSuggestions, SuggestionList, SuggestionPage, SuggestionResource};
use super::{
    AppState, engine_study, expire_open, history, json_response, lock, next_cursor, page_of, remaining,
    suggestion_resource, to_json,
};
use crate::domain::{AbandonReason, StoredSuggestion, SuggestionState, TransitionError};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::Idempotency;
use crate::store::SuggestionRow;

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
    body: ApiJson<CreateSuggestions>,
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
    let slot = state.compute.slot().await?;
    let mut tx = lock(&state, study_id).await?;
    if let Some(idem) = &idem
        && let Some(row) = tx.get_idempotency(idem.scope(), idem.key()).await?
    {
        return idem.replay(&row);
    }
    let mut study = tx.study().clone();
    if study.status.accepts_writes().is_err() {
        return Err(ApiError::conflict("study-archived", "the study is archived; it accepts no new suggestions"));
    }
    let now = Utc::now();
    let open = expire_open(&mut tx, now).await?;
    if let Some(cid) = &req.client_id {
        let mine: Vec<SuggestionResource> =
            open.iter().filter(|s| s.client_id.as_deref() == Some(cid)).map(|s| suggestion_resource(s, now)).collect();
        if !mine.is_empty() {
            let body = to_json(&SuggestionList { suggestions: mine })?;
            if let Some(idem) = &idem {
                tx.put_idempotency(&idem.record(StatusCode::OK, &body)).await?;
            }
            tx.commit().await?;
            return Ok(json_response(StatusCode::OK, &body));
        }
    }
    let mut count = count as usize;
    if let Some(left) = remaining(&study) {
        if left.spent {
            tx.commit().await?;
            return Err(ApiError::conflict(
                "budget-spent",
                "the study's budget is spent (see budget_remaining on the study); it makes no more suggestions",
            ));
        }
        if let Some(obs_left) = left.observations {
            let free = obs_left - open.len() as i64;
            if free <= 0 {
                tx.commit().await?;
                return Err(ApiError::conflict(
                    "budget-reserved",
                    "every observation left in the budget is promised to an open suggestion; observe or abandon one",
                ));
            }
            count = count.min(free as usize);
        }
    }
    let observations = tx.observations().await?;
    let engine = engine_study(&study)?;
    let pairs =
        if engine.spec().indirect.is_some() { super::pairs::pairs_of(&tx.pair_batches().await?)? } else { Vec::new() };
    let hist = history(&study, &observations, &open, pairs);
    let policy_state = PolicyState(study.policy_state.clone());
    let request = SuggestRequest { count, context: req.context.clone() };
    let outcome = state.compute.run(slot, "suggest", move || engine.suggest(&hist, &policy_state, &request)).await??;
    let expires_at = study.suggestion_ttl_seconds.map(|t| now + Duration::seconds(t));
    let mut made = Vec::with_capacity(outcome.suggestions.len());
    for (i, s) in outcome.suggestions.iter().enumerate() {
        let row = SuggestionRow {
            id: Uuid::new_v4(),
            study_id,
            seq: study.n_suggestions + i as i64 + 1,
            state: SuggestionState::Open,
            client_id: req.client_id.clone(),
            body: StoredSuggestion::from_engine(s).map_err(|e| ApiError::internal("storing a suggestion", e))?,
            created_at: now,
            expires_at,
            closed_at: None,
            abandon_reason: None,
        };
        tx.insert_suggestion(&row).await?;
        made.push(suggestion_resource(&row, now));
    }
    study.n_suggestions += made.len() as i64;
    study.policy_state = outcome.state.0;
    study.updated_at = now;
    tx.update_study(&study).await?;
    let body = to_json(&SuggestionList { suggestions: made })?;
    if let Some(idem) = &idem {
        tx.put_idempotency(&idem.record(StatusCode::CREATED, &body)).await?;
    }
    tx.commit().await?;
    Ok(json_response(StatusCode::CREATED, &body))
}

/// Query of the suggestion list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SuggestionQuery {
    /// Only suggestions in this state: `open`, `completed` or `abandoned`.
    #[param(example = "open")]
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
    let mut tx = lock(&state, study_id).await?;
    let now = Utc::now();
    expire_open(&mut tx, now).await?;
    let mut row =
        tx.suggestion(suggestion_id).await?.ok_or_else(|| ApiError::not_found("suggestion", suggestion_id))?;
    match row.state.close_to(SuggestionState::Abandoned) {
        Err(TransitionError::SuggestionCompleted) => {
            return Err(ApiError::conflict("suggestion-completed", "the suggestion already has an observation"));
        }
        Err(e) => return Err(ApiError::internal("abandoning a suggestion", e)),
        Ok(true) => {
            tx.close_suggestion(row.id, SuggestionState::Abandoned, now, Some(AbandonReason::Deleted)).await?;
            row.state = SuggestionState::Abandoned;
            row.closed_at = Some(now);
            row.abandon_reason = Some(AbandonReason::Deleted);
            let mut study = tx.study().clone();
            study.updated_at = now;
            tx.update_study(&study).await?;
        }
        Ok(false) => {}
    }
    tx.commit().await?;
    Ok(axum::Json(suggestion_resource(&row, now)))
}

#[allow(dead_code)]
fn _value(_: Value) {}
