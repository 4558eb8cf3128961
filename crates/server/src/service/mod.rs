//! The service layer: the domain rules of every request, between the HTTP handlers (which parse the request and
//! build the response) and the store. It owns the study lock (one transaction of milliseconds per write, [`lock`];
//! models are computed from snapshots read without it), idempotency (keys read and written under that lock), the
//! budget (remaining, reservation by open suggestions, the status a spent budget gives), expiry of open suggestions,
//! `client_id` re-delivery, and the history the engine sees; engine calls run on the compute pool.
//!
//! - [`ask`] — suggestions (ask, abandon)
//! - [`tell`] — observations, one (group commit, [`group_commit`]) or a batch
//! - [`model`] — best point and predictions
//! - [`studies`] — create, get, list, archive
//! - [`pairs`] — uploaded example pairs of indirect studies
//! - [`views`] — the resources of stored rows
//! - [`study_cache`] — validated studies by spec, so a request does not re-validate
//! - [`study_gate`] — one ask of a study at a time in this process

pub mod ask;
pub mod group_commit;
pub mod model;
pub mod pairs;
pub mod studies;
pub mod study_cache;
pub mod study_gate;
pub mod tell;
pub mod views;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use engine::{History, ObservationRecord, PairRecord, PendingRecord, Study};
use serde_json::Value;

use crate::domain::{AbandonReason, StudyStatus, SuggestionState};
use crate::error::{ApiError, ApiResult};
use crate::resources::{Budget, BudgetOverspent, BudgetRemaining};
use crate::state::AppState;
use crate::store::{ObservationRow, StoreError, StudyRow, StudySnapshot, StudyTx, SuggestionRow};

/// The answer of a write that an `Idempotency-Key` may replay: a fresh response (its body stored with the key in the
/// write's transaction), or the stored one.
#[derive(Debug)]
pub enum Written {
    /// A new response: status and JSON body.
    Fresh(StatusCode, Value),
    /// The stored first response to this key.
    Replayed(Response),
}

impl IntoResponse for Written {
    fn into_response(self) -> Response {
        match self {
            Written::Fresh(status, body) => json_response(status, &body),
            Written::Replayed(res) => res,
        }
    }
}

/// A JSON response with a status.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, Json(body)).into_response()
}

/// Serialises a response body.
pub fn to_json<T: serde::Serialize>(v: &T) -> ApiResult<Value> {
    serde_json::to_value(v).map_err(|e| ApiError::internal("serialising a response", e))
}

/// The validated engine study of a stored study (cached by its spec: [`study_cache`]).
pub(crate) fn engine_study(row: &StudyRow) -> ApiResult<std::sync::Arc<Study>> {
    study_cache::STUDIES.get(&row.spec)
}

/// The budget of a stored study.
pub(crate) fn budget_of(row: &StudyRow) -> Option<Budget> {
    row.budget.clone().and_then(|b| serde_json::from_value(b).ok())
}

/// What is left of a study's budget, with the overspend when observations went past it.
pub(crate) fn remaining(row: &StudyRow) -> Option<BudgetRemaining> {
    let b = budget_of(row)?;
    let observations = b.max_observations.map(|m| (m - row.n_observations).max(0));
    let cost = b.max_cost.map(|m| (m - row.total_cost).max(0.0));
    let spent = observations == Some(0) || b.max_cost.is_some_and(|m| row.total_cost >= m);
    let over_observations = b.max_observations.map(|m| row.n_observations - m).filter(|&o| o > 0);
    let over_cost = b.max_cost.map(|m| row.total_cost - m).filter(|&c| c > 0.0);
    let overspent = (over_observations.is_some() || over_cost.is_some())
        .then_some(BudgetOverspent { observations: over_observations, cost: over_cost });
    Some(BudgetRemaining { observations, cost, spent, overspent })
}

/// The status a study should have given its budget (archived stays archived).
pub(crate) fn status_for(row: &StudyRow) -> StudyStatus {
    row.status.after_write(remaining(row).is_some_and(|r| r.spent))
}

/// The engine record of a stored observation.
pub(crate) fn observation_record(o: &ObservationRow) -> ObservationRecord {
    ObservationRecord {
        assignments: o.assignments.as_object().cloned().unwrap_or_default(),
        value: o.value,
        value_stddev: o.value_stddev,
        cost: o.cost,
        failed: o.failed,
        values: o.extra.values.clone(),
        values_stddev: o.extra.values_stddev.clone(),
        extras: o.extra.to_engine(),
    }
}

/// The engine record of an open suggestion.
pub(crate) fn pending_record(s: &SuggestionRow) -> PendingRecord {
    s.body.pending()
}

/// The history the engine sees (`pairs`: those uploaded to an indirect study; pairs of the spec come on top), with
/// the study's cost budget.
pub(crate) fn history(
    study: &StudyRow,
    observations: &[ObservationRow],
    pending: &[SuggestionRow],
    pairs: Vec<PairRecord>,
) -> History {
    History {
        observations: observations.iter().map(observation_record).collect(),
        pending: pending.iter().map(pending_record).collect(),
        pairs,
        cost_budget: budget_of(study).and_then(|b| b.max_cost),
    }
}

/// The pairs uploaded to a study, for indirect studies (others have none that matter).
pub(crate) fn snapshot_pairs(snap: &StudySnapshot, study: &Study) -> ApiResult<Vec<PairRecord>> {
    if study.spec().indirect.is_none() {
        return Ok(Vec::new());
    }
    pairs::pairs_of(&snap.pair_batches)
}

/// Abandons expired open suggestions inside a study transaction; returns the ones still open.
pub(crate) async fn expire_open(tx: &mut Box<dyn StudyTx>, now: DateTime<Utc>) -> ApiResult<Vec<SuggestionRow>> {
    let open = tx.open_suggestions().await?;
    let mut still = Vec::with_capacity(open.len());
    for s in open {
        if crate::domain::is_expired(s.state, s.expires_at, now) {
            let at = s.expires_at.unwrap_or(now);
            tx.close_suggestion(s.id, SuggestionState::Abandoned, at, Some(AbandonReason::Expired)).await?;
        } else {
            still.push(s);
        }
    }
    Ok(still)
}

/// Locks a study for writing, or 404.
pub(crate) async fn lock(state: &AppState, id: uuid::Uuid) -> ApiResult<Box<dyn StudyTx>> {
    state.store.lock_study(id).await?.ok_or_else(|| ApiError::not_found("study", id))
}

/// Locks a study for a write of `what` ("suggestions", "observations", …): the stored first response when the
/// `Idempotency-Key` was answered before, a 409 when the study is archived, else the transaction and the study.
pub(crate) async fn lock_for_write(
    state: &AppState,
    id: uuid::Uuid,
    idem: Option<&crate::idempotency::Idempotency>,
    what: &str,
) -> ApiResult<Result<(Box<dyn StudyTx>, StudyRow), Response>> {
    let mut tx = lock(state, id).await?;
    if let Some(idem) = idem
        && let Some(row) = tx.get_idempotency(idem.scope(), idem.key()).await?
    {
        return Ok(Err(idem.replay(&row)?));
    }
    let study = tx.study().clone();
    if study.status.accepts_writes().is_err() {
        return Err(archived(what));
    }
    Ok(Ok((tx, study)))
}

/// The 409 of a write of `what` to an archived study.
pub(crate) fn archived(what: &str) -> ApiError {
    ApiError::conflict("study-archived", format!("the study is archived; it accepts no new {what}"))
}

/// Maps a store conflict to a 409 of the given kind.
pub(crate) fn conflict_as<'a>(kind: &'static str, detail: &'a str) -> impl FnOnce(StoreError) -> ApiError + 'a {
    move |e| match e {
        StoreError::Conflict(_) => ApiError::conflict(kind, detail.to_string()),
        other => other.into(),
    }
}
