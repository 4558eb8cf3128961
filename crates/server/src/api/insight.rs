//! `best` (best observed and model-recommended point) and `predict` (posterior at given points).

use axum::extract::State;
use axum::http::HeaderMap;
use uuid::Uuid;

use super::types::{BestResponse, PredictRequest, PredictResponse};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath};
use crate::idempotency::Idempotency;
use crate::service;
use crate::state::AppState;

/// The best observed point and the model's recommendation.
#[utoipa::path(
    get,
    path = "/v1/studies/{study_id}/best",
    tag = "model",
    params(("study_id" = Uuid, Path, description = "Study id.")),
    responses(
        (status = 200, description = "Best observed and recommended points (each null until available; the recommendation is also null when the model cannot be fitted to the data).", body = BestResponse),
        (status = 400, description = "The id is not a UUID.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Compute is saturated; retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn best(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
) -> ApiResult<axum::Json<BestResponse>> {
    Ok(axum::Json(service::model::best(&state, study_id).await?))
}

/// The posterior mean and standard deviation of the objective at given points.
#[utoipa::path(
    post,
    path = "/v1/studies/{study_id}/predict",
    tag = "model",
    request_body = PredictRequest,
    params(
        ("study_id" = Uuid, Path, description = "Study id."),
        ("Idempotency-Key" = Option<String>, Header, description = "Accepted for uniformity; predictions change nothing.")
    ),
    responses(
        (status = 200, description = "Posterior at each point.", body = PredictResponse),
        (status = 400, description = "Malformed JSON, id or header.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "There is no model yet (no successful observation, or an indirect study without two example pairs), or it cannot be fitted to the data (model-failed).", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid points, each field named (points[i].name).", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Compute is saturated; retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn predict(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    headers: HeaderMap,
    body: ApiJson<PredictRequest>,
) -> ApiResult<axum::Json<PredictResponse>> {
    Idempotency::from_request(&headers, String::new(), &[])?;
    let points = body.value.points;
    if !(1..=1000).contains(&points.len()) {
        return Err(ApiError::field("points", "give 1–1000 points"));
    }
    let (predictions, outcomes) = service::model::predict(&state, study_id, points).await?;
    Ok(axum::Json(PredictResponse { predictions, outcomes }))
}
