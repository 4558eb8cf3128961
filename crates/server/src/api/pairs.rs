//! `/v1/studies/{study_id}/pairs`: upload example pairs (x, a) to an indirect study (seed 001, "Indirect Query
//! Bayesian Optimization with Integrated Feedback", §2). The engine learns the conditional p(x | a) from the pairs
//! given at creation together with every upload (conditional-mean-embedding estimator); until a study has two
//! pairs, `cmes` keeps suggesting queries of its space-filling design (diagnostics `source: "fallback"`).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use engine::blocks::indirect::spec::MAX_PAIRS;
use uuid::Uuid;

use super::types::{PairsUploaded, UploadPairs};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath};
use crate::idempotency::Idempotency;
use crate::service;
use crate::state::AppState;

/// Uploads example pairs (x, a) to an indirect study whose conditional is learned from pairs.
#[utoipa::path(
    post,
    path = "/v1/studies/{study_id}/pairs",
    tag = "studies",
    request_body = UploadPairs,
    params(
        ("study_id" = Uuid, Path, description = "Study id."),
        ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first response and store nothing.")
    ),
    responses(
        (status = 201, description = "The pairs were stored; suggestions, `best` and `predict` use them from now on.", body = PairsUploaded),
        (status = 400, description = "Malformed JSON, id or header.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The study is archived, has no `indirect` block, or has a known conditional (pairs would be ignored); or the Idempotency-Key was used with another body.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid pairs, each field named (`pairs[i].target.x`, `pairs[i].query.a`), or more than 20000 pairs in the study.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn upload_pairs(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    headers: HeaderMap,
    body: ApiJson<UploadPairs>,
) -> ApiResult<Response> {
    let pairs = body.value.pairs;
    if !(1..=MAX_PAIRS).contains(&pairs.len()) {
        return Err(ApiError::field("pairs", format!("give 1–{MAX_PAIRS} pairs per upload")));
    }
    let idem = Idempotency::from_request(&headers, format!("POST /v1/studies/{study_id}/pairs"), &body.raw)?;
    Ok(service::pairs::upload(&state, study_id, pairs, idem).await?.into_response())
}
