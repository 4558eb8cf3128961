//! `/v1/studies/{study_id}/observations`: tell one observation or a batch, list (JSON pages or CSV), get.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::types::{
    CreateObservation, CreateObservationBatch, MAX_BATCH, ObservationList, ObservationPage, ObservationResource,
};
use super::{csv_import, next_cursor, page_of};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery, JsonOrCsv};
use crate::idempotency::Idempotency;
use crate::service::{self, engine_study, views::observation_resource};
use crate::state::AppState;
use crate::store::{ObservationRow, Page};

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
    service::tell::tell(&state, study_id, body.value, idem).await
}

/// Imports observations in bulk, all or none: a JSON batch, or CSV with the columns of the CSV export.
///
/// CSV (`Content-Type: text/csv`, UTF-8): a header line, then one row per observation, 1–1000 rows. The columns are
/// those of `GET …/observations?format=csv`, in any order: `id`, `seq`, `suggestion_id`, `created_at` (optional and
/// ignored: new observations are stored in row order, tied to no suggestion), one column per parameter and
/// `value` (required), `value_stddev`, `cost`, `failed` (`true`/`false`), `control_set`, `noise_level`, `metadata`
/// (a JSON object) (optional). An empty cell is no value. An export therefore imports into a study with the same
/// parameters (the export has no `query` column: observations of indirect studies are imported as JSON). Errors name `columns.<name>` for the header and `rows[i].<column>` for a cell (`i` counts data rows
/// from 0), e.g. `rows[3].temperature`.
#[utoipa::path(
    post,
    path = "/v1/studies/{study_id}/observations/batch",
    tag = "observations",
    request_body(
        description = "The observations, as JSON or as CSV (the columns of the CSV export; see the operation's description).",
        content(
            (CreateObservationBatch = "application/json"),
            (String = "text/csv", example = json!("id,seq,suggestion_id,created_at,temperature,catalyst_ppm,stir_rpm,solvent,value,value_stddev,cost,failed,control_set,noise_level,metadata\n,,,,61.2,30,400,ethanol,0.74,,1,false,,,\"{\"\"operator\"\": \"\"ada\"\"}\"\n,,,,35,120,800,water,0.52,,1,false,,,\n,,,,70,5,250,dmso,,,1,true,,,\n"))
        )
    ),
    params(
        ("study_id" = Uuid, Path, description = "Study id."),
        ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first response and store nothing.")
    ),
    responses(
        (status = 201, description = "The stored observations.", body = ObservationList),
        (status = 400, description = "Malformed JSON or CSV, id or header.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "A bearer token is required.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such study.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A suggestion is completed or abandoned, or the study is archived.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is neither JSON nor UTF-8 CSV.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, each named: `observations[i].field` for JSON; `columns.<name>` and `rows[i].<column>` for CSV.", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn create_observation_batch(
    State(state): State<AppState>,
    ApiPath(study_id): ApiPath<Uuid>,
    headers: HeaderMap,
    body: JsonOrCsv<CreateObservationBatch>,
) -> ApiResult<Response> {
    // The JSON batch is checked here; a CSV body is parsed by the service under the study lock with the study it
    // reads there (one read; the study's 404/409 come before the CSV's 400/422, see `tell_batch`), and its errors,
    // the CSV parser's and the observations', name `rows[i].<column>`.
    match body {
        JsonOrCsv::Json(body) => {
            let n = body.value.observations.len();
            if !(1..=MAX_BATCH).contains(&n) {
                return Err(ApiError::field("observations", format!("give 1–{MAX_BATCH} observations per batch")));
            }
            let idem = idempotency(&headers, study_id, &body.raw)?;
            let items = body.value.observations;
            Ok(service::tell::tell_batch(&state, study_id, |_| Ok(items), idem).await?.into_response())
        }
        JsonOrCsv::Csv(raw) => {
            let idem = idempotency(&headers, study_id, &raw)?;
            let parse = |engine: &engine::Study| {
                csv_import::parse(&raw, &engine.spec().parameters, &csv_import::metric_columns(engine))
            };
            match service::tell::tell_batch(&state, study_id, parse, idem).await {
                Ok(written) => Ok(written.into_response()),
                Err(e) => Err(e.rename_fields(csv_import::csv_error_field)),
            }
        }
    }
}

fn idempotency(headers: &HeaderMap, study_id: Uuid, raw: &[u8]) -> ApiResult<Option<Idempotency>> {
    Idempotency::from_request(headers, format!("POST /v1/studies/{study_id}/observations/batch"), raw)
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
        (status = 200, description = "A page of observations (JSON), or every observation as CSV with `format=csv`: one column per parameter; `POST …/observations/batch` imports the same columns.", content(
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
        let mut res = to_csv(&names, &csv_import::metric_columns(&engine), &rows).into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8"));
        return Ok(res);
    }
    let next_cursor = next_cursor(page, rows.len(), rows.last().map(|r| r.seq));
    let body = ObservationPage { observations: rows.iter().map(observation_resource).collect(), next_cursor };
    Ok(axum::Json(body).into_response())
}

/// Quotes a CSV field when needed (RFC 4180).
fn csv_quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => csv_quote(s),
        Some(other) => csv_quote(&other.to_string()),
    }
}

/// The export: the leading columns, one per parameter, the trailing ones, then `values.<name>` and
/// `values_stddev.<name>` for each objective and outcome constraint of a study that has several or constraints.
fn to_csv(names: &[String], metrics: &[String], rows: &[ObservationRow]) -> String {
    let mut out = String::from("id,seq,suggestion_id,created_at,");
    for n in names {
        out.push_str(&csv_quote(n));
        out.push(',');
    }
    out.push_str("value,value_stddev,cost,failed,control_set,noise_level,metadata");
    for prefix in ["values", "values_stddev"] {
        for m in metrics {
            out.push(',');
            out.push_str(&csv_quote(&format!("{prefix}.{m}")));
        }
    }
    out.push('\n');
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
            "{},{},{},{},{},{},{}",
            num(r.value),
            num(r.value_stddev),
            num(r.cost),
            r.failed,
            r.extra.control_set.as_deref().map(csv_quote).unwrap_or_default(),
            r.extra.noise_level.as_deref().map(csv_quote).unwrap_or_default(),
            cell(r.metadata.as_ref())
        ));
        for map in [&r.extra.values, &r.extra.values_stddev] {
            for m in metrics {
                out.push(',');
                out.push_str(&num(map.get(m).copied()));
            }
        }
        out.push('\n');
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
    fn csv_values_with_commas_and_quotes_are_quoted() {
        assert_eq!(csv_quote("a,b"), "\"a,b\"");
        assert_eq!(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell(Some(&json!(1.5))), "1.5");
    }
}
