//! The resources (the API's JSON) of stored rows.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{budget_of, engine_study, remaining};
use crate::error::ApiResult;
use crate::resources::{ObservationResource, StudyCounts, StudyResource, SuggestionResource};
use crate::store::{ObservationRow, StudyRow, SuggestionRow};

/// The study resource of a row.
pub(crate) fn study_resource(row: &StudyRow) -> ApiResult<StudyResource> {
    let study = engine_study(row)?;
    let policy = study.describe(&engine::PolicyState(row.policy_state.clone()));
    Ok(StudyResource {
        id: row.id,
        name: row.name.clone(),
        status: row.status.as_str().to_string(),
        spec: study.spec().clone(),
        budget: budget_of(row),
        suggestion_ttl: row.suggestion_ttl_seconds,
        algorithm_in_use: study.algorithm().to_string(),
        counts: StudyCounts { observations: row.n_observations, suggestions: row.n_suggestions },
        total_cost: row.total_cost,
        budget_remaining: remaining(row),
        policy,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// The suggestion resource of a row (an open suggestion past its expiry shows as abandoned).
pub(crate) fn suggestion_resource(s: &SuggestionRow, now: DateTime<Utc>) -> SuggestionResource {
    let b = &s.body;
    let (state, reason, closed) = crate::domain::shown_state(s.state, s.expires_at, s.closed_at, s.abandon_reason, now);
    SuggestionResource {
        id: s.id,
        study_id: s.study_id,
        state: state.as_str().to_string(),
        client_id: s.client_id.clone(),
        assignments: b.assignments.clone(),
        control_set: b.extras.control_set.clone(),
        noise_level: b.extras.noise_level.clone(),
        query: b.extras.query.clone().map(Value::Object),
        context: b.context.clone(),
        expected_cost: b.extras.expected_cost,
        predicted: b.predicted,
        algorithm: b.algorithm.clone(),
        diagnostics: b.diagnostics.clone(),
        created_at: s.created_at,
        expires_at: s.expires_at,
        closed_at: closed,
        abandon_reason: reason.map(|r| r.as_str().to_string()),
    }
}

/// The observation resource of a row.
pub(crate) fn observation_resource(o: &ObservationRow) -> ObservationResource {
    ObservationResource {
        id: o.id,
        study_id: o.study_id,
        suggestion_id: o.suggestion_id,
        assignments: o.assignments.as_object().cloned().unwrap_or_default(),
        value: o.value,
        value_stddev: o.value_stddev,
        values: o.extra.values.clone(),
        values_stddev: o.extra.values_stddev.clone(),
        feasible: o.extra.feasible,
        cost: o.cost,
        failed: o.failed,
        metadata: o.metadata.clone(),
        control_set: o.extra.control_set.clone(),
        noise_level: o.extra.noise_level.clone(),
        query: o.extra.query.clone().map(Value::Object),
        created_at: o.created_at,
    }
}
