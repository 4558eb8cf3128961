//! `/v1/studies`: create, list, get, archive.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::Utc;
use engine::{FieldError, Study, StudySpec};
use serde_json::Value;
use uuid::Uuid;

use super::types::{Budget, CreateStudy, PageQuery, StudyPage, StudyResource};
use super::{AppState, json_response, lock, next_cursor, page_of, study_resource, to_json};
use crate::domain::StudyStatus;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery, from_value};
use crate::idempotency::Idempotency;
use crate::store::StudyRow;

/// Splits the create body into the server's fields and the engine spec, validating both.
fn parse_create(body: Value) -> ApiResult<(String, Option<Budget>, Option<i64>, StudySpec)> {
    let Value::Object(mut map) = body else {
        return Err(ApiError::field("body", "must be a JSON object describing the study"));
    };
    let mut errors = Vec::new();
    let name = match map.remove("name") {
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= 200 => Some(s),
        Some(Value::String(_)) => {
            errors.push(FieldError::new("name", "must be 1–200 characters"));
            None
        }
        Some(_) => {
            errors.push(FieldError::new("name", "must be a string"));
            None
        }
        None => {
            errors.push(FieldError::new("name", "required: a name for the study"));
            None
        }
    };
    let budget = match map.remove("budget") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let b: Budget = from_value(v, "budget")?;
            if b.max_observations.is_none() && b.max_cost.is_none() {
                errors.push(FieldError::new("budget", "give max_observations and/or max_cost"));
            }
            if b.max_observations.is_some_and(|m| m < 1) {
                errors.push(FieldError::new("budget.max_observations", "must be at least 1"));
            }
            if b.max_cost.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
                errors.push(FieldError::new("budget.max_cost", "must be a finite number > 0"));
            }
            Some(b)
        }
    };
    let ttl = match map.remove("suggestion_ttl") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64().filter(|t| *t >= 1) {
            Some(t) => Some(t),
            None => {
                errors.push(FieldError::new("suggestion_ttl", "must be a whole number of seconds ≥ 1"));
                None
            }
        },
    };
    let spec: StudySpec = from_value(Value::Object(map), "")?;
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    Ok((name.unwrap_or_default(), budget, ttl, spec))
}

/// Creates a study.
#[utoipa::path(
    post,
    path = "/v1/studies",
    tag = "studies",
    request_body = CreateStudy,
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first response and create nothing.")),
    responses(
        (status = 201, description = "The study was created.", body = StudyResource),
        (status = 400, description = "Malformed JSON or header.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The Idempotency-Key was used with another body.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, each named.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn create_study(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: ApiJson<Value>,
) -> ApiResult<Response> {
    let idem = Idempotency::from_request(&headers, "POST /v1/studies".into(), &body.raw)?;
    if let Some(idem) = &idem
        && let Some(row) = state.store.get_idempotency(idem.scope(), idem.key()).await?
    {
        return idem.replay(&row);
    }
    let (name, budget, ttl, mut spec) = parse_create(body.value)?;
    let id = Uuid::new_v4();
    if spec.seed.is_none() {
        spec.seed = Some(id.as_u64_pair().0 >> 33);
    }
    let study = Study::new(spec).map_err(ApiError::validation)?;
    if study.needs_cost_budget() && budget.as_ref().and_then(|b| b.max_cost).is_none() {
        return Err(ApiError::field(
            "budget.max_cost",
            format!("required: '{}' with explore_fraction explores a share of the cost budget", study.algorithm()),
        ));
    }
    let now = Utc::now();
    let mut row = StudyRow {
        id,
        seq: 0,
        name,
        status: StudyStatus::Active,
        spec: to_json(study.spec())?,
        budget: budget.as_ref().map(to_json).transpose()?,
        suggestion_ttl_seconds: ttl,
        policy_state: Value::Null,
        n_observations: 0,
        n_suggestions: 0,
        total_cost: 0.0,
        created_at: now,
        updated_at: now,
    };
    row.status = super::status_for(&row);
    let body = to_json(&study_resource(&row)?)?;
    let record = idem.as_ref().map(|i| i.record(StatusCode::CREATED, &body));
    if let Some(existing) = state.store.create_study(&row, record.as_ref()).await? {
        return idem
            .as_ref()
            .map_or_else(|| Err(ApiError::internal("idempotency", "record without key")), |i| i.replay(&existing));
    }
    let mut res = json_response(StatusCode::CREATED, &body);
    if let Ok(v) = format!("/v1/studies/{id}").parse() {
        res.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    Ok(res)
}

/// Lists studies in creation order.
#[utoipa::path(
    get,
    path = "/v1/studies",
    tag = "studies",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of studies.", body = StudyPage),
        (status = 400, description = "Malformed limit or cursor.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn list_studies(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<axum::Json<StudyPage>> {
    let page = page_of(&q)?;
    let rows = state.store.list_studies(page).await?;
    let studies = rows.iter().map(study_resource).collect::<ApiResult<Vec<_>>>()?;
    let next_cursor = next_cursor(page, rows.len(), rows.last().map(|r| r.seq));
    Ok(axum::Json(StudyPage { studies, next_cursor }))
}

/// Gets a study with its counts, budget and status.
#[utoipa::path(
    get,
    path = "/v1/studies/{study_id}",
    tag = "studies",
    params(("study_id" = Uuid, Path, description = "Study id.")),
    responses(
        (status = 200, description = "The study.", body = StudyResource),
        (status = 400, description = "The id is not a UUID.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn get_study(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
) -> ApiResult<axum::Json<StudyResource>> {
    let row = state.store.get_study(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    Ok(axum::Json(study_resource(&row)?))
}

/// Archives a study: it keeps its data but refuses new suggestions and observations.
#[utoipa::path(
    delete,
    path = "/v1/studies/{study_id}",
    tag = "studies",
    params(("study_id" = Uuid, Path, description = "Study id.")),
    responses(
        (status = 200, description = "The archived study (archiving twice is harmless).", body = StudyResource),
        (status = 400, description = "The id is not a UUID.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn archive_study(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
) -> ApiResult<axum::Json<StudyResource>> {
    let mut tx = lock(&state, study_id).await?;
    let mut row = tx.study().clone();
    if row.status.archive() != row.status {
        row.status = row.status.archive();
        row.updated_at = Utc::now();
        tx.update_study(&row).await?;
    }
    tx.commit().await?;
    Ok(axum::Json(study_resource(&row)?))
}
