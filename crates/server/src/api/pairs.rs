//! `/v1/studies/{study_id}/pairs`: upload example pairs (x, a) to an indirect study (seed 001, "Indirect Query
//! Bayesian Optimization with Integrated Feedback", §2). The engine learns the conditional p(x | a) from the pairs
//! given at creation together with every upload (conditional-mean-embedding estimator); until a study has two
//! pairs, `cmes` keeps suggesting queries of its space-filling design (diagnostics `source: "fallback"`).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::Utc;
use engine::PairRecord;
use engine::blocks::indirect::spec::MAX_PAIRS;
use serde_json::Value;
use uuid::Uuid;

use super::types::{PairsUploaded, UploadPairs};
use super::{AppState, engine_study, json_response, lock, to_json};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath};
use crate::idempotency::Idempotency;
use crate::store::PairBatchRow;

/// The pairs of stored uploads, in order (unreadable rows are an internal error: they were validated when stored).
pub(crate) fn pairs_of(batches: &[PairBatchRow]) -> ApiResult<Vec<PairRecord>> {
    let mut out = Vec::with_capacity(batches.iter().map(|b| b.n_pairs.max(0) as usize).sum());
    for b in batches {
        let pairs: Vec<PairRecord> =
            serde_json::from_value(b.pairs.clone()).map_err(|e| ApiError::internal("stored pairs unreadable", e))?;
        out.extend(pairs);
    }
    Ok(out)
}

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
    let mut tx = lock(&state, study_id).await?;
    if let Some(idem) = &idem
        && let Some(row) = tx.get_idempotency(idem.scope(), idem.key()).await?
    {
        return idem.replay(&row);
    }
    let mut study = tx.study().clone();
    if study.status.accepts_writes().is_err() {
        return Err(ApiError::conflict("study-archived", "the study is archived; it accepts no new pairs"));
    }
    let engine = engine_study(&study)?;
    let Some(block) = &engine.spec().indirect else {
        return Err(ApiError::conflict(
            "not-indirect",
            "this study has no 'indirect' block: example pairs (x, a) belong to indirect studies",
        ));
    };
    if block.conditional.is_some() {
        return Err(ApiError::conflict(
            "conditional-known",
            "this study's conditional p(x | a) is given in indirect.conditional, so pairs would be ignored",
        ));
    }
    engine.validate_pairs(&pairs).map_err(ApiError::validation)?;
    let batches = tx.pair_batches().await?;
    let before = block.pairs.len() as i64 + batches.iter().map(|b| b.n_pairs).sum::<i64>();
    let total = before + pairs.len() as i64;
    if total > MAX_PAIRS as i64 {
        return Err(ApiError::field(
            "pairs",
            format!("the study already holds {before} pairs; at most {MAX_PAIRS} in all (creation and uploads)"),
        ));
    }
    let now = Utc::now();
    let row = PairBatchRow {
        id: Uuid::new_v4(),
        study_id,
        seq: batches.last().map_or(0, |b| b.seq) + 1,
        n_pairs: pairs.len() as i64,
        pairs: to_json(&pairs)?,
        created_at: now,
    };
    tx.insert_pair_batch(&row).await?;
    study.updated_at = now;
    tx.update_study(&study).await?;
    let body: Value =
        to_json(&PairsUploaded { id: row.id, study_id, added: row.n_pairs, total_pairs: total, created_at: now })?;
    if let Some(idem) = &idem {
        tx.put_idempotency(&idem.record(StatusCode::CREATED, &body)).await?;
    }
    tx.commit().await?;
    Ok(json_response(StatusCode::CREATED, &body))
}
