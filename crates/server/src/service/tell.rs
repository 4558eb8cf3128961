//! Tell: observations, one at a time (queued for the study's group commit, [`super::group_commit`]) or a batch
//! (all or none). Each is checked under the study lock against its suggestion's state and the engine's spec.

use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use engine::{FieldError, Study};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::group_commit::ObservationQueue;
use super::views::observation_resource;
use super::{Written, conflict_as, engine_study, expire_open, lock_for_write, observation_record, status_for, to_json};
use crate::domain::{AbandonReason, ObservationExtras, SuggestionState, TransitionError};
use crate::error::{ApiError, ApiResult};
use crate::idempotency::Idempotency;
use crate::resources::{CreateObservation, ObservationList};
use crate::state::AppState;
use crate::store::{ObservationRow, StoreError, StoreResult, StudyRow, StudyTx};

/// Stores one observation (in a group with whatever else is queued for the study) and returns its response.
pub async fn tell(
    state: &AppState,
    study_id: Uuid,
    body: CreateObservation,
    idem: Option<Idempotency>,
) -> ApiResult<Response> {
    ObservationQueue::submit(state, study_id, body, idem).await
}

/// Stores a batch of observations in one transaction, all or none. `parse` reads the request's items (1–1000, its
/// check) with the study's engine study, the one the transaction loads: a CSV body needs the study's parameters,
/// and reading them here rather than before the lock reads the study once.
///
/// Errors come in this order: 404 (no study), the stored response of a replayed `Idempotency-Key` (or its 409
/// when the key was used with another body), 409 (archived), then `parse`'s errors (a malformed CSV is 400/422),
/// then each observation's (422, or 409 for a closed suggestion). The study's state comes before the body's
/// contents because judging a CSV needs the study: an archived study refuses a bad CSV with 409, as it refuses a
/// JSON batch with 409 once the body is well-formed JSON of the batch's shape.
pub async fn tell_batch(
    state: &AppState,
    study_id: Uuid,
    parse: impl FnOnce(&Study) -> ApiResult<Vec<CreateObservation>> + Send,
    idem: Option<Idempotency>,
) -> ApiResult<Written> {
    let (mut tx, mut study, engine) = match begin(state, study_id, &idem).await? {
        Ok(parts) => parts,
        Err(replay) => return Ok(Written::Replayed(replay)),
    };
    let observations = parse(&engine)?;
    let now = Utc::now();
    let mut stored = Vec::with_capacity(observations.len());
    for (i, item) in observations.into_iter().enumerate() {
        let row = observe(&mut tx, &mut study, &engine, item, &format!("observations[{i}]"), now).await?;
        stored.push(observation_resource(&row));
    }
    let body = to_json(&ObservationList { observations: stored })?;
    finish(tx, study, &idem, body).await
}

fn prefixed(prefix: &str, errors: Vec<FieldError>) -> ApiError {
    ApiError::validation(
        errors
            .into_iter()
            .map(|e| {
                FieldError::new(if prefix.is_empty() { e.field } else { format!("{prefix}.{}", e.field) }, e.message)
            })
            .collect(),
    )
}

/// Two JSON values are the same assignment: equal numbers (1 and 1.0 alike) or equal values.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// An observation checked under the study lock and ready to write.
pub(crate) struct Prepared {
    pub(crate) row: ObservationRow,
    /// The open suggestion it completes.
    pub(crate) completes: Option<Uuid>,
}

/// Checks one observation inside the study transaction without writing anything: the outer error is a storage
/// failure (the transaction is unusable), the inner one the client's mistake (nothing was written for it).
pub(crate) async fn prepare(
    tx: &mut Box<dyn StudyTx>,
    study: &StudyRow,
    engine: &Study,
    body: CreateObservation,
    prefix: &str,
    now: DateTime<Utc>,
) -> StoreResult<ApiResult<Prepared>> {
    let field = |f: &str| if prefix.is_empty() { f.to_string() } else { format!("{prefix}.{f}") };
    let mut assignments = Map::new();
    let mut suggested = ObservationExtras::default();
    if let Some(sid) = body.suggestion_id {
        let Some(s) = tx.suggestion(sid).await? else {
            return Ok(Err(ApiError::field(
                field("suggestion_id"),
                format!("no suggestion with id {sid} in this study"),
            )));
        };
        match s.state.close_to(SuggestionState::Completed) {
            Err(TransitionError::SuggestionCompleted) => {
                return Ok(Err(ApiError::conflict(
                    "suggestion-completed",
                    format!("suggestion {sid} already has an observation; each suggestion is observed once"),
                )));
            }
            Err(TransitionError::SuggestionAbandoned) => {
                let why = if s.abandon_reason == Some(AbandonReason::Expired) { "expired" } else { "was abandoned" };
                return Ok(Err(ApiError::conflict(
                    "suggestion-abandoned",
                    format!("suggestion {sid} {why}; report the run without suggestion_id, or ask for a new one"),
                )));
            }
            Err(e) => return Ok(Err(ApiError::internal("observing a suggestion", e))),
            Ok(_) => {}
        }
        let b = s.body;
        assignments.extend(b.assignments);
        // A context given at suggest time is part of the run: the observation inherits it, and may repeat it but
        // not contradict it.
        for (name, known) in b.context.unwrap_or_default() {
            if let Some(told) = body.assignments.as_ref().and_then(|a| a.get(&name))
                && !same_value(told, &known)
            {
                return Ok(Err(ApiError::field(
                    field(&format!("assignments.{name}")),
                    format!(
                        "the suggestion was made for {name} = {known}; observe it with that context, or report the run without suggestion_id"
                    ),
                )));
            }
            assignments.insert(name, known);
        }
        let e = b.extras;
        suggested = ObservationExtras {
            control_set: e.control_set,
            noise_level: e.noise_level,
            query: e.query,
            ..Default::default()
        };
    } else if body.assignments.is_none() {
        return Ok(Err(ApiError::field(field("assignments"), "required when there is no suggestion_id")));
    }
    if let Some(a) = body.assignments {
        assignments.extend(a);
    }
    // What the observation says overrides what its suggestion said.
    let extra = ObservationExtras {
        control_set: body.control_set.or(suggested.control_set),
        noise_level: body.noise_level.or(suggested.noise_level),
        query: body.query.or(suggested.query),
        values: body.values.unwrap_or_default(),
        values_stddev: body.values_stddev.unwrap_or_default(),
        feasible: None,
    };
    if let Some(cost) = body.cost
        && !(study.total_cost + cost).is_finite()
    {
        return Ok(Err(ApiError::field(
            field("cost"),
            format!("the study's total cost ({}) plus this cost would exceed the largest number", study.total_cost),
        )));
    }
    let row = ObservationRow {
        id: Uuid::new_v4(),
        study_id: study.id,
        seq: study.n_observations + 1,
        suggestion_id: body.suggestion_id,
        assignments: Value::Object(assignments),
        value: body.value,
        value_stddev: body.value_stddev,
        cost: body.cost,
        failed: body.failed.unwrap_or(false),
        metadata: body.metadata.map(Value::Object),
        extra,
        created_at: now,
    };
    let record = observation_record(&row);
    if let Err(e) = engine.validate_observation(&record) {
        return Ok(Err(prefixed(prefix, e)));
    }
    let mut row = row;
    row.extra.feasible = engine.observed_feasible(&record);
    Ok(Ok(Prepared { row, completes: body.suggestion_id }))
}

/// Writes a prepared observation (completing its suggestion) and updates `study`'s counters.
pub(crate) async fn apply(
    tx: &mut Box<dyn StudyTx>,
    study: &mut StudyRow,
    p: &Prepared,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    if let Some(sid) = p.completes {
        tx.close_suggestion(sid, SuggestionState::Completed, now, None).await?;
    }
    tx.insert_observation(&p.row).await.map_err(conflict_as(
        "suggestion-completed",
        "the suggestion already has an observation; each suggestion is observed once",
    ))?;
    count(study, &p.row);
    Ok(())
}

/// Counts a stored observation in the study's counters.
pub(crate) fn count(study: &mut StudyRow, row: &ObservationRow) {
    study.n_observations += 1;
    study.total_cost += row.cost.unwrap_or(0.0);
}

/// Validates and stores one observation inside the study transaction, updating `study`'s counters.
async fn observe(
    tx: &mut Box<dyn StudyTx>,
    study: &mut StudyRow,
    engine: &Study,
    body: CreateObservation,
    prefix: &str,
    now: DateTime<Utc>,
) -> ApiResult<ObservationRow> {
    let p = prepare(tx, study, engine, body, prefix, now).await??;
    apply(tx, study, &p, now).await?;
    Ok(p.row)
}

/// Shared preamble of the two POST routes: lock, replay, refuse archived studies, expire suggestions.
async fn begin(
    state: &AppState,
    study_id: Uuid,
    idem: &Option<Idempotency>,
) -> ApiResult<Result<(Box<dyn StudyTx>, StudyRow, std::sync::Arc<Study>), Response>> {
    let (mut tx, study) = match lock_for_write(state, study_id, idem.as_ref(), "observations").await? {
        Ok(locked) => locked,
        Err(replayed) => return Ok(Err(replayed)),
    };
    expire_open(&mut tx, Utc::now()).await?;
    let engine = engine_study(&study)?;
    Ok(Ok((tx, study, engine)))
}

async fn finish(
    mut tx: Box<dyn StudyTx>,
    mut study: StudyRow,
    idem: &Option<Idempotency>,
    body: Value,
) -> ApiResult<Written> {
    study.status = status_for(&study);
    study.updated_at = Utc::now();
    tx.update_study(&study).await?;
    if let Some(idem) = idem {
        tx.put_idempotency(&idem.record(StatusCode::CREATED, &body)).await?;
    }
    tx.commit().await.map_err(|e| match e {
        StoreError::Conflict(_) => ApiError::conflict("conflict", "a concurrent request changed the study; retry"),
        other => other.into(),
    })?;
    Ok(Written::Fresh(StatusCode::CREATED, body))
}
