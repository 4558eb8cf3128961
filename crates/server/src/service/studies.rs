//! Studies: create (validating the server's fields and the engine spec), get, list, archive.

use axum::http::StatusCode;
use chrono::Utc;
use engine::{FieldError, Study, StudySpec};
use serde_json::Value;
use uuid::Uuid;

use super::views::study_resource;
use super::{Written, lock, status_for, to_json};
use crate::domain::StudyStatus;
use crate::error::{ApiError, ApiResult, from_value};
use crate::idempotency::Idempotency;
use crate::resources::{Budget, StudyResource};
use crate::state::AppState;
use crate::store::{Page, StudyRow};

/// Splits the create body into the server's fields and the engine spec, validating both.
pub(crate) fn parse_create(body: Value) -> ApiResult<(String, Option<Budget>, Option<i64>, StudySpec)> {
    let Value::Object(mut map) = body else {
        return Err(ApiError::field("body", "must be a JSON object describing the study"));
    };
    let mut errors = Vec::new();
    let name = match map.remove("name") {
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= 200 => Some(s),
        Some(Value::String(_)) => {
            errors.push(FieldError::new("name", "must be 1–200 characters"));
            None
        }
        Some(_) => {
            errors.push(FieldError::new("name", "must be a string"));
            None
        }
        None => {
            errors.push(FieldError::new("name", "required: a name for the study"));
            None
        }
    };
    let budget = match map.remove("budget") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let b: Budget = from_value(v, "budget")?;
            if b.max_observations.is_none() && b.max_cost.is_none() {
                errors.push(FieldError::new("budget", "give max_observations and/or max_cost"));
            }
            if b.max_observations.is_some_and(|m| m < 1) {
                errors.push(FieldError::new("budget.max_observations", "must be at least 1"));
            }
            if b.max_cost.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
                errors.push(FieldError::new("budget.max_cost", "must be a finite number > 0"));
            }
            Some(b)
        }
    };
    let ttl = match map.remove("suggestion_ttl") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64().filter(|t| *t >= 1) {
            Some(t) => Some(t),
            None => {
                errors.push(FieldError::new("suggestion_ttl", "must be a whole number of seconds ≥ 1"));
                None
            }
        },
    };
    let spec: StudySpec = from_value(Value::Object(map), "")?;
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    Ok((name.unwrap_or_default(), budget, ttl, spec))
}

/// Creates a study from the create body; returns the answer and, when a study was created, its id.
pub async fn create(state: &AppState, body: Value, idem: Option<Idempotency>) -> ApiResult<(Written, Option<Uuid>)> {
    if let Some(idem) = &idem
        && let Some(row) = state.store.get_idempotency(idem.scope(), idem.key()).await?
    {
        return Ok((Written::Replayed(idem.replay(&row)?), None));
    }
    let (name, budget, ttl, mut spec) = parse_create(body)?;
    let id = Uuid::new_v4();
    if spec.seed.is_none() {
        spec.seed = Some(id.as_u64_pair().0 >> 33);
    }
    let study = Study::new(spec).map_err(ApiError::validation)?;
    if study.needs_cost_budget() && budget.as_ref().and_then(|b| b.max_cost).is_none() {
        return Err(ApiError::field(
            "budget.max_cost",
            format!("required: '{}' with explore_fraction explores a share of the cost budget", study.algorithm()),
        ));
    }
    let now = Utc::now();
    let mut row = StudyRow {
        id,
        seq: 0,
        name,
        status: StudyStatus::Active,
        spec: to_json(study.spec())?,
        budget: budget.as_ref().map(to_json).transpose()?,
        suggestion_ttl_seconds: ttl,
        policy_state: Value::Null,
        n_observations: 0,
        n_suggestions: 0,
        total_cost: 0.0,
        created_at: now,
        updated_at: now,
    };
    row.status = status_for(&row);
    let body = to_json(&study_resource(&row)?)?;
    let record = idem.as_ref().map(|i| i.record(StatusCode::CREATED, &body));
    if let Some(existing) = state.store.create_study(&row, record.as_ref()).await? {
        let replay = idem
            .as_ref()
            .map_or_else(|| Err(ApiError::internal("idempotency", "record without key")), |i| i.replay(&existing))?;
        return Ok((Written::Replayed(replay), None));
    }
    Ok((Written::Fresh(StatusCode::CREATED, body), Some(id)))
}

/// One study's resource.
pub async fn get(state: &AppState, study_id: Uuid) -> ApiResult<StudyResource> {
    let row = state.store.get_study(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    study_resource(&row)
}

/// A page of studies' resources in creation order, with the last row's `seq` (the cursor).
pub async fn list(state: &AppState, page: Page) -> ApiResult<(Vec<StudyResource>, Option<i64>)> {
    let rows = state.store.list_studies(page).await?;
    let studies = rows.iter().map(study_resource).collect::<ApiResult<Vec<_>>>()?;
    Ok((studies, rows.last().map(|r| r.seq)))
}

/// Archives a study (harmless when already archived).
pub async fn archive(state: &AppState, study_id: Uuid) -> ApiResult<StudyResource> {
    let mut tx = lock(state, study_id).await?;
    let mut row = tx.study().clone();
    if row.status.archive() != row.status {
        row.status = row.status.archive();
        row.updated_at = Utc::now();
        tx.update_study(&row).await?;
    }
    tx.commit().await?;
    study_resource(&row)
}
