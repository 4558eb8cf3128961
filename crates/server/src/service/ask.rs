//! Ask: new suggestions (idempotency, `client_id` re-delivery, budget reservation by open suggestions, expiry, the
//! engine call, the policy state stored with the suggestions) and abandoning one.

use axum::http::StatusCode;
use chrono::{Duration, Utc};
use engine::PolicyState;
use engine::study::SuggestRequest;
use uuid::Uuid;

use super::views::suggestion_resource;
use super::{Written, engine_study, expire_open, history, lock, lock_for_write, remaining, to_json};
use crate::api::types::{CreateSuggestions, SuggestionList, SuggestionResource};
use crate::domain::{AbandonReason, StoredSuggestion, SuggestionState, TransitionError};
use crate::error::{ApiError, ApiResult};
use crate::idempotency::Idempotency;
use crate::state::AppState;
use crate::store::SuggestionRow;

/// Asks for `count` suggestions (already checked to be 1–100): the client's still-open ones again (200) when it
/// has any, otherwise new ones (201), as many as the budget leaves free.
pub async fn ask(
    state: &AppState,
    study_id: Uuid,
    count: usize,
    req: CreateSuggestions,
    idem: Option<Idempotency>,
) -> ApiResult<Written> {
    let slot = state.compute.slot().await?;
    let (mut tx, mut study) = match lock_for_write(state, study_id, idem.as_ref(), "suggestions").await? {
        Ok(locked) => locked,
        Err(replayed) => return Ok(Written::Replayed(replayed)),
    };
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
            return Ok(Written::Fresh(StatusCode::OK, body));
        }
    }
    let mut count = count;
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
    Ok(Written::Fresh(StatusCode::CREATED, body))
}

/// Abandons an open suggestion (harmless when already abandoned; 409 when completed).
pub async fn abandon(state: &AppState, study_id: Uuid, suggestion_id: Uuid) -> ApiResult<SuggestionResource> {
    let mut tx = lock(state, study_id).await?;
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
    Ok(suggestion_resource(&row, now))
}
