//! `/v1/studies/{study_id}/observations`: tell one observation or a batch, list (JSON pages or CSV), get.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use engine::{FieldError, Study};
use serde::Deserialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::group_commit::ObservationQueue;
use super::types::{CreateObservation, CreateObservationBatch, ObservationList, ObservationPage, ObservationResource};
use super::{
    AppState, conflict_as, engine_study, expire_open, json_response, lock, next_cursor, observation_record,
    observation_resource, page_of, status_for, to_json,
};
use crate::domain::{AbandonReason, SuggestionState, TransitionError};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::Idempotency;
use crate::store::{ObservationRow, Page, StoreError, StoreResult, StudyRow, StudyTx};

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

/// An observation checked under the study lock and ready to write.
pub(super) struct Prepared {
    pub(super) row: ObservationRow,
    /// The open suggestion it completes.
    pub(super) completes: Option<Uuid>,
}

/// Checks one observation inside the study transaction without writing anything: the outer error is a storage
/// failure (the transaction is unusable), the inner one the client's mistake (nothing was written for it).
pub(super) async fn prepare(
    tx: &mut Box<dyn StudyTx>,
    study: &StudyRow,
    engine: &Study,
    body: CreateObservation,
    prefix: &str,
    now: DateTime<Utc>,
) -> StoreResult<ApiResult<Prepared>> {
    let field = |f: &str| if prefix.is_empty() { f.to_string() } else { format!("{prefix}.{f}") };
    let mut assignments = Map::new();
    let mut extra = Map::new();
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
        if let Some(c) = b.control_set {
            extra.insert("control_set".into(), Value::String(c));
        }
        if let Some(n) = b.noise_level {
            extra.insert("noise_level".into(), Value::String(n));
        }
        if let Some(q) = b.query {
            extra.insert("query".into(), Value::Object(q));
        }
    } else if body.assignments.is_none() {
        return Ok(Err(ApiError::field(field("assignments"), "required when there is no suggestion_id")));
    }
    if let Some(a) = body.assignments {
        assignments.extend(a);
    }
    if let Some(c) = body.control_set {
        extra.insert("control_set".into(), Value::String(c));
    }
    if let Some(n) = body.noise_level {
        extra.insert("noise_level".into(), Value::String(n));
    }
    if let Some(q) = body.query {
        extra.insert("query".into(), Value::Object(q));
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
        extra: Value::Object(extra),
        created_at: now,
    };
    if let Err(e) = engine.validate_observation(&observation_record(&row)) {
        return Ok(Err(prefixed(prefix, e)));
    }
    Ok(Ok(Prepared { row, completes: body.suggestion_id }))
}

/// Writes a prepared observation (completing its suggestion) and updates `study`'s counters.
pub(super) async fn apply(
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
pub(super) fn count(study: &mut StudyRow, row: &ObservationRow) {
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
) -> ApiResult<Result<(Box<dyn StudyTx>, StudyRow, Study), Response>> {
    let mut tx = lock(state, study_id).await?;
    if let Some(idem) = idem
        && let Some(row) = tx.get_idempotency(idem.scope(), idem.key()).await?
    {
        return Ok(Err(idem.replay(&row)?));
    }
    let study = tx.study().clone();
    if study.status.accepts_writes().is_err() {
        return Err(ApiError::conflict("study-archived", "the study is archived; it accepts no new observations"));
    }
    expire_open(&mut tx, Utc::now()).await?;
    let engine = engine_study(&study)?;
    Ok(Ok((tx, study, engine)))
}

async fn finish(
    mut tx: Box<dyn StudyTx>,
    mut study: StudyRow,
    idem: &Option<Idempotency>,
    body: &Value,
) -> ApiResult<Response> {
    study.status = status_for(&study);
    study.updated_at = Utc::now();
    tx.update_study(&study).await?;
    if let Some(idem) = idem {
        tx.put_idempotency(&idem.record(StatusCode::CREATED, body)).await?;
    }
    tx.commit().await.map_err(|e| match e {
        StoreError::Conflict(_) => ApiError::conflict("conflict", "a concurrent request changed the study; retry"),
        other => other.into(),
    })?;
    Ok(json_response(StatusCode::CREATED, body))
}

/// Tells one observation.
#[utoipa::path(
    post,
    path = "/v1/studies/{study_id}/observations",
    tag = "observations",
    request_body = CreateObservation,
    params(
        ("study_id" = Uuid, Path, description = "Study id."),
        ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first response and store nothing.")
    ),
    responses(
        (status = 201, description = "The stored observation.", body = ObservationResource),
        (status = 400, description = "Malformed JSON, id or header.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The suggestion is completed or abandoned, or the study is archived.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, each named (assignments must match the study's parameters).", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn create_observation(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    headers: HeaderMap,
    body: ApiJson<CreateObservation>,
) -> ApiResult<Response> {
    let idem = Idempotency::from_request(&headers, format!("POST /v1/studies/{study_id}/observations"), &body.raw)?;
    ObservationQueue::submit(&state, study_id, body.value, idem).await
}

/// Imports observations in bulk, all or none.
#[utoipa::path(
    post,
    path = "/v1/studies/{study_id}/observations/batch",
    tag = "observations",
    request_body = CreateObservationBatch,
    params(
        ("study_id" = Uuid, Path, description = "Study id."),
        ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first response and store nothing.")
    ),
    responses(
        (status = 201, description = "The stored observations.", body = ObservationList),
        (status = 400, description = "Malformed JSON, id or header.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A suggestion is completed or abandoned, or the study is archived.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, each named (observations[i].field).", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn create_observation_batch(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    headers: HeaderMap,
    body: ApiJson<CreateObservationBatch>,
) -> ApiResult<Response> {
    let n = body.value.observations.len();
    if !(1..=1000).contains(&n) {
        return Err(ApiError::field("observations", "give 1–1000 observations per batch"));
    }
    let idem =
        Idempotency::from_request(&headers, format!("POST /v1/studies/{study_id}/observations/batch"), &body.raw)?;
    let (mut tx, mut study, engine) = match begin(&state, study_id, &idem).await? {
        Ok(parts) => parts,
        Err(replay) => return Ok(replay),
    };
    let now = Utc::now();
    let mut stored = Vec::with_capacity(n);
    for (i, item) in body.value.observations.into_iter().enumerate() {
        let row = observe(&mut tx, &mut study, &engine, item, &format!("observations[{i}]"), now).await?;
        stored.push(observation_resource(&row));
    }
    let body = to_json(&ObservationList { observations: stored })?;
    finish(tx, study, &idem, &body).await
}

/// Query of the observation list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ObservationQuery {
    /// Page size (1–1000, default 100; CSV exports everything when absent).
    #[param(example = 100)]
    pub limit: Option<i64>,
    /// Cursor from the previous page's `next_cursor`.
    #[param(example = "100")]
    pub after: Option<String>,
    /// `json` (default) or `csv`.
    #[param(example = "csv")]
    pub format: Option<String>,
}

/// Lists a study's observations in order, as JSON pages or as CSV.
#[utoipa::path(
    get,
    path = "/v1/studies/{study_id}/observations",
    tag = "observations",
    params(("study_id" = Uuid, Path, description = "Study id."), ObservationQuery),
    responses(
        (status = 200, description = "A page of observations (JSON), or every observation as CSV with `format=csv`: one column per parameter.", content(
            (ObservationPage = "application/json"),
            (String = "text/csv")
        )),
        (status = 400, description = "Malformed id, limit, cursor or format.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn list_observations(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    ApiQuery(q): ApiQuery<ObservationQuery>,
) -> ApiResult<Response> {
    let csv = match q.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(_) => return Err(ApiError::bad_field("format", "must be json or csv")),
    };
    let mut page = page_of(&super::types::PageQuery { limit: q.limit, after: q.after.clone() })?;
    if csv && q.limit.is_none() {
        page = Page { after: page.after, limit: i64::MAX };
    }
    let study = state.store.get_study(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    let rows = state.store.list_observations(study_id, page).await?;
    if csv {
        let engine = engine_study(&study)?;
        let names: Vec<String> = engine.spec().parameters.iter().map(|p| p.name.clone()).collect();
        let mut res = to_csv(&names, &rows).into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8"));
        return Ok(res);
    }
    let next_cursor = next_cursor(page, rows.len(), rows.last().map(|r| r.seq));
    let body = ObservationPage { observations: rows.iter().map(observation_resource).collect(), next_cursor };
    Ok(axum::Json(body).into_response())
}

/// Quotes a CSV field when needed (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => csv_field(s),
        Some(other) => csv_field(&other.to_string()),
    }
}

fn to_csv(names: &[String], rows: &[ObservationRow]) -> String {
    let mut out = String::from("id,seq,suggestion_id,created_at,");
    for n in names {
        out.push_str(&csv_field(n));
        out.push(',');
    }
    out.push_str("value,value_stddev,cost,failed,control_set,noise_level,metadata\n");
    for r in rows {
        let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "{},{},{},{},",
            r.id,
            r.seq,
            r.suggestion_id.map(|s| s.to_string()).unwrap_or_default(),
            r.created_at.to_rfc3339()
        ));
        for n in names {
            out.push_str(&cell(r.assignments.get(n)));
            out.push(',');
        }
        out.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            num(r.value),
            num(r.value_stddev),
            num(r.cost),
            r.failed,
            cell(r.extra.get("control_set")),
            cell(r.extra.get("noise_level")),
            cell(r.metadata.as_ref())
        ));
    }
    out
}

/// Gets one observation.
#[utoipa::path(
    get,
    path = "/v1/studies/{study_id}/observations/{observation_id}",
    tag = "observations",
    params(("study_id" = Uuid, Path, description = "Study id."), ("observation_id" = Uuid, Path, description = "Observation id.")),
    responses(
        (status = 200, description = "The observation.", body = ObservationResource),
        (status = 400, description = "An id is not a UUID.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study or observation.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn get_observation(
    State(state): State<AppState>,
    ApiPath((study_id, observation_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<axum::Json<ObservationResource>> {
    let row = state
        .store
        .get_observation(study_id, observation_id)
        .await?
        .ok_or_else(|| ApiError::not_found("observation", observation_id))?;
    Ok(axum::Json(observation_resource(&row)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn csv_fields_with_commas_and_quotes_are_quoted() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell(Some(&json!(1.5))), "1.5");
    }
}
