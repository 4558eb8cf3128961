//! `/healthz`, `/readyz`, `/metrics`.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::types::Health;
use crate::error::Problem;
use crate::metrics::Scrape;

/// The process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "system",
    security(()),
    responses((status = 200, description = "The process is up.", body = Health))
)]
pub async fn healthz() -> axum::Json<Health> {
    axum::Json(Health { status: "ok".into(), database: None })
}

/// The database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "system",
    security(()),
    responses(
        (status = 200, description = "The database answers.", body = Health),
        (status = 503, description = "The database does not answer.", body = Health)
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Response {
    let backend = state.store.backend().to_string();
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, axum::Json(Health { status: "ok".into(), database: Some(backend) })).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            crate::metrics::note_unavailable("database");
            let body = Health { status: "unavailable".into(), database: Some(backend) };
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
        }
    }
}

/// Prometheus text metrics.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "system",
    responses(
        (status = 200, description = "Prometheus text exposition: request counts and latencies by route and status, engine compute time, studies, observations.", body = String, content_type = "text/plain"),
        (status = 401, description = "A bearer token is required (when the server has API tokens).", body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let (studies, observations) = match state.store.totals().await {
        Ok((s, o)) => (Some(s), Some(o)),
        Err(_) => (None, None),
    };
    let (compute_slots, compute_in_use) = state.compute.usage();
    let scrape = Scrape {
        studies,
        observations,
        compute_slots,
        compute_in_use,
        pool: state.store.pool_connections(),
        pool_max: state.config.db_max_connections,
    };
    let mut res = state.metrics.render(scrape).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    res
}
