//! `best` (best observed and model-recommended point) and `predict` (posterior at given points).

use axum::extract::State;
use axum::http::HeaderMap;
use engine::PolicyState;
use uuid::Uuid;

use super::types::{BestObserved, BestResponse, PredictRequest, PredictResponse, RecommendedPoint};
use super::{AppState, engine_study, history, uploaded_pairs};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath};
use crate::idempotency::Idempotency;
use crate::store::Page;

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
    let study = state.store.get_study(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    let rows = state.store.list_observations(study_id, Page::ALL).await?;
    let engine = engine_study(&study)?;
    let sign = engine.spec().objective.goal.sign();
    let best_observed = rows
        .iter()
        .filter(|o| !o.failed)
        .filter_map(|o| o.value.filter(|v| v.is_finite()).map(|v| (o, v)))
        .max_by(|a, b| (sign * a.1).total_cmp(&(sign * b.1)))
        .map(|(o, v)| BestObserved {
            observation_id: o.id,
            assignments: o.assignments.as_object().cloned().unwrap_or_default(),
            value: v,
        });
    let recommended = if best_observed.is_some() {
        let pairs = uploaded_pairs(state.store.as_ref(), &engine, study_id).await?;
        let slot = state.compute.slot().await?;
        let hist = history(&study, &rows, &[], pairs);
        let policy_state = PolicyState(study.policy_state.clone());
        match state.compute.run(slot, "recommend", move || engine.recommend(&hist, &policy_state)).await? {
            Ok(r) => r.map(|r| RecommendedPoint { assignments: r.assignments, predicted: r.predicted, extra: r.extra }),
            // The best observation stands on its own when the data defeat the model (e.g. values near ±1e300).
            Err(engine::Error::Numerical(e)) => {
                tracing::warn!(error = %e, %study_id, "no recommendation: the model could not be fitted");
                None
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        None
    };
    Ok(axum::Json(BestResponse { best_observed, recommended }))
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
    let study = state.store.get_study(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    let rows = state.store.list_observations(study_id, Page::ALL).await?;
    let engine = engine_study(&study)?;
    let pairs = uploaded_pairs(state.store.as_ref(), &engine, study_id).await?;
    let no_model = no_model_detail(&engine, pairs.len());
    let slot = state.compute.slot().await?;
    let hist = history(&study, &rows, &[], pairs);
    let policy_state = PolicyState(study.policy_state.clone());
    let out = state.compute.run(slot, "predict", move || engine.predict(&hist, &policy_state, &points)).await??;
    let predictions = out.ok_or_else(|| ApiError::conflict("no-model", no_model))?;
    Ok(axum::Json(PredictResponse { predictions }))
}

/// Why a study has no model yet: no successful observation, or (an indirect study learning its conditional from
/// pairs) fewer than two pairs.
fn no_model_detail(engine: &engine::Study, uploaded_pairs: usize) -> String {
    match &engine.spec().indirect {
        Some(b) if b.conditional.is_none() && b.pairs.len() + uploaded_pairs < 2 => {
            "there is no model yet: this indirect study learns p(x | a) from example pairs and has fewer than two; \
             upload them with POST /v1/studies/{study_id}/pairs"
                .into()
        }
        _ => "there is no model yet: tell at least one successful observation first".into(),
    }
}
