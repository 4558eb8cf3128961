//! Example pairs (x, a) uploaded to indirect studies (seed 001): checks (archived, not indirect, known
//! conditional, the study's pair limit) and storage; the pairs of stored uploads for the engine's history.

use axum::http::StatusCode;
use chrono::Utc;
use engine::PairRecord;
use engine::blocks::indirect::spec::MAX_PAIRS;
use serde_json::Value;
use uuid::Uuid;

use super::{Written, engine_study, lock_for_write, to_json};
use crate::error::{ApiError, ApiResult};
use crate::idempotency::Idempotency;
use crate::resources::PairsUploaded;
use crate::state::AppState;
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

/// Stores an upload of pairs (1–MAX_PAIRS, checked by the caller) under the study lock.
pub async fn upload(
    state: &AppState,
    study_id: Uuid,
    pairs: Vec<PairRecord>,
    idem: Option<Idempotency>,
) -> ApiResult<Written> {
    let (mut tx, mut study) = match lock_for_write(state, study_id, idem.as_ref(), "pairs").await? {
        Ok(locked) => locked,
        Err(replayed) => return Ok(Written::Replayed(replayed)),
    };
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
    Ok(Written::Fresh(StatusCode::CREATED, body))
}
