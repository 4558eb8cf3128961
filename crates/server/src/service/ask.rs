//! Ask: new suggestions (idempotency, `client_id` re-delivery, budget reservation by open suggestions, expiry, the
//! engine call, the policy state stored with the suggestions) and abandoning one.
//!
//! No database lock is held during the engine call. An ask passes its study's gate ([`super::study_gate`]) and,
//! on Postgres, an advisory lock that orders the asks of several server processes ([`crate::store::Store::ask_lock`];
//! it blocks no other write), computes from a snapshot read without the write lock, then takes the lock for a transaction of milliseconds that
//! re-checks what may have changed meanwhile: the idempotency key, the status, expiries, the budget (the batch is cut
//! to what is left) and the study's suggestion count. Observations told during the computation are stored at once
//! and seen by the next ask. When another server process made suggestions of the study meanwhile (the count moved;
//! possible only on SQLite shared by several processes), the ask computes again on a new snapshot; after
//! [`ATTEMPTS`] such races it answers 503 with `Retry-After`.

use std::time::Duration as StdDuration;

use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use engine::PolicyState;
use engine::study::SuggestRequest;
use uuid::Uuid;

use super::views::suggestion_resource;
use super::{
    Written, archived, engine_study, expire_open, history, lock, lock_for_write, remaining, snapshot_pairs, to_json,
};
use crate::domain::{AbandonReason, StoredSuggestion, SuggestionState, TransitionError};
use crate::error::{ApiError, ApiResult};
use crate::idempotency::Idempotency;
use crate::resources::{CreateSuggestions, SuggestionList, SuggestionResource};
use crate::state::AppState;
use crate::store::{StudyRow, SuggestionRow};

/// How often an ask recomputes when other server processes keep suggesting for the same study.
pub const ATTEMPTS: usize = 5;

/// Asks for `count` suggestions (already checked to be 1–100): the client's still-open ones again (200) when it
/// has any, otherwise new ones (201), as many as the budget leaves free.
pub async fn ask(
    state: &AppState,
    study_id: Uuid,
    count: usize,
    req: CreateSuggestions,
    idem: Option<Idempotency>,
) -> ApiResult<Written> {
    let wait = StdDuration::from_millis(state.config.compute_queue_ms);
    let _gate = state.ask_gates.enter(study_id, wait).await?;
    let _replicas = state.store.ask_lock(study_id, wait).await?;
    for _ in 0..ATTEMPTS {
        if let Some(written) = attempt(state, study_id, count, &req, idem.as_ref()).await? {
            return Ok(written);
        }
    }
    Err(ApiError::saturated(
        "other server processes kept suggesting for this study while this suggestion was computed; retry",
        1,
    ))
}

/// One read–compute–commit round; `None` when the study's suggestions changed under it (compute again).
async fn attempt(
    state: &AppState,
    study_id: Uuid,
    count: usize,
    req: &CreateSuggestions,
    idem: Option<&Idempotency>,
) -> ApiResult<Option<Written>> {
    let snap = state.store.snapshot(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    if let Some(idem) = idem
        && let Some(row) = state.store.get_idempotency(idem.scope(), idem.key()).await?
    {
        return Ok(Some(Written::Replayed(idem.replay(&row)?)));
    }
    if snap.study.status.accepts_writes().is_err() {
        return Err(archived("suggestions"));
    }
    let now = Utc::now();
    let open: Vec<SuggestionRow> =
        snap.open.iter().filter(|s| !crate::domain::is_expired(s.state, s.expires_at, now)).cloned().collect();
    let redeliver = !mine(&open, req, now).is_empty();
    let computed = if redeliver {
        None
    } else {
        let count = free_count(&snap.study, open.len(), count)?;
        let engine = engine_study(&snap.study)?;
        let pairs = snapshot_pairs(&snap, &engine)?;
        let hist = history(&snap.study, &snap.observations, &open, pairs);
        let policy_state = PolicyState(snap.study.policy_state.clone());
        let request = SuggestRequest { count, context: req.context.clone() };
        let slot = state.compute.slot().await?;
        Some(state.compute.run(slot, "suggest", move || engine.suggest(&hist, &policy_state, &request)).await??)
    };

    let (mut tx, mut study) = match lock_for_write(state, study_id, idem, "suggestions").await? {
        Ok(locked) => locked,
        Err(replayed) => return Ok(Some(Written::Replayed(replayed))),
    };
    if study.n_suggestions != snap.study.n_suggestions {
        return Ok(None);
    }
    let now = Utc::now();
    let open = expire_open(&mut tx, now).await?;
    let Some(outcome) = computed else {
        let mine = mine(&open, req, now);
        if mine.is_empty() {
            return Ok(None); // observed or abandoned meanwhile: compute new ones
        }
        let body = to_json(&SuggestionList { suggestions: mine })?;
        if let Some(idem) = idem {
            tx.put_idempotency(&idem.record(StatusCode::OK, &body)).await?;
        }
        tx.commit().await?;
        return Ok(Some(Written::Fresh(StatusCode::OK, body)));
    };
    let free = match free_count(&study, open.len(), outcome.suggestions.len()) {
        Ok(free) => free,
        Err(e) => {
            tx.commit().await?; // keeps the expiries
            return Err(e);
        }
    };
    let expires_at = study.suggestion_ttl_seconds.map(|t| now + Duration::seconds(t));
    let mut made = Vec::with_capacity(free);
    for (i, s) in outcome.suggestions.iter().take(free).enumerate() {
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
    if let Some(idem) = idem {
        tx.put_idempotency(&idem.record(StatusCode::CREATED, &body)).await?;
    }
    tx.commit().await?;
    Ok(Some(Written::Fresh(StatusCode::CREATED, body)))
}

/// The requesting client's open suggestions.
fn mine(open: &[SuggestionRow], req: &CreateSuggestions, now: DateTime<Utc>) -> Vec<SuggestionResource> {
    let Some(cid) = &req.client_id else { return Vec::new() };
    open.iter().filter(|s| s.client_id.as_deref() == Some(cid)).map(|s| suggestion_resource(s, now)).collect()
}

/// How many of `count` new suggestions the budget leaves room for, next to `open` open ones (409 when none).
fn free_count(study: &StudyRow, open: usize, count: usize) -> ApiResult<usize> {
    let Some(left) = remaining(study) else { return Ok(count) };
    if left.spent {
        return Err(ApiError::conflict(
            "budget-spent",
            "the study's budget is spent (see budget_remaining on the study); it makes no more suggestions",
        ));
    }
    let Some(obs_left) = left.observations else { return Ok(count) };
    let free = obs_left - open as i64;
    if free <= 0 {
        return Err(ApiError::conflict(
            "budget-reserved",
            "every observation left in the budget is promised to an open suggestion; observe or abandon one",
        ));
    }
    Ok(count.min(free as usize))
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
