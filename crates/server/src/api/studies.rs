//! `/v1/studies`: create, list, get, archive.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use uuid::Uuid;

use super::types::{CreateStudy, PageQuery, StudyPage, StudyResource};
use super::{next_cursor, page_of};
use crate::error::{ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::Idempotency;
use crate::service;
use crate::state::AppState;

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
    let (written, created) = service::studies::create(&state, body.value, idem).await?;
    let mut res = written.into_response();
    if let Some(id) = created
        && let Ok(v) = format!("/v1/studies/{id}").parse()
    {
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
    let (studies, last_seq) = service::studies::list(&state, page).await?;
    let next_cursor = next_cursor(page, studies.len(), last_seq);
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
    Ok(axum::Json(service::studies::get(&state, study_id).await?))
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
    Ok(axum::Json(service::studies::archive(&state, study_id).await?))
}
