//! The HTTP layers around the router, outermost first: security headers, the request id (a sane incoming
//! `X-Request-Id` or a new UUID, echoed in the response), the request's tracing span and its one access-log line
//! (target `bayesd::access`), metrics, CORS (only with `--cors-origin`), and the whole-request timeout.

use std::time::Duration;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::error::ApiError;
use crate::state::AppState;

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// Content-Security-Policy of every response but the API documentation: JSON and text are never a page.
const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

/// Content-Security-Policy of Swagger UI under `/docs`: its scripts and style sheets are files it serves itself
/// (no inline script), React sets inline `style` attributes, its CSS has `data:` images, and "Try it out" calls
/// this origin.
const DOCS_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                        img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
                        form-action 'none'";

/// Wraps the application's router (auth already applied) in the layers.
pub fn around(router: Router<AppState>, state: &AppState) -> Router<AppState> {
    let config = &state.config;
    let mut router = router
        .layer(axum::middleware::from_fn_with_state(Duration::from_secs(config.request_timeout_secs), request_timeout));
    if let Some(cors) = cors(&config.cors_origins) {
        router = router.layer(cors);
    }
    router
        .layer(axum::middleware::from_fn_with_state(state.metrics.clone(), crate::metrics::track))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_request(())
                .on_response(access_log)
                .on_body_chunk(())
                .on_eos(())
                .on_failure(()),
        )
        .layer(PropagateRequestIdLayer::new(X_REQUEST_ID))
        .layer(SetRequestIdLayer::new(X_REQUEST_ID, MakeRequestUuid))
        .layer(axum::middleware::map_request(drop_insane_request_id))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(API_CSP),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
        .layer(SetResponseHeaderLayer::if_not_present(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")))
        .layer(SetSensitiveRequestHeadersLayer::new([header::AUTHORIZATION]))
}

/// The Content-Security-Policy that lets Swagger UI run, for the documentation routes.
pub fn docs_csp() -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(DOCS_CSP))
}

/// An incoming request id is kept when it is 1–128 characters of letters, digits and `-_.:+/=@`.
fn sane_request_id(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    (1..=128).contains(&b.len()) && b.iter().all(|c| c.is_ascii_alphanumeric() || b"-_.:+/=@".contains(c))
}

/// Removes an incoming `X-Request-Id` that is not sane, so that a new one is generated.
async fn drop_insane_request_id(mut req: Request) -> Request {
    let headers = req.headers_mut();
    if headers.get_all(&X_REQUEST_ID).iter().count() > 1
        || headers.get(&X_REQUEST_ID).is_some_and(|v| !sane_request_id(v))
    {
        headers.remove(&X_REQUEST_ID);
    }
    req
}

/// The request's span: request id, method, route template, and the study id when the route has one.
fn request_span(req: &Request) -> Span {
    let route = req.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str);
    let id = req.extensions().get::<RequestId>().and_then(|id| id.header_value().to_str().ok()).unwrap_or("-");
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        route = %route,
        study_id = tracing::field::Empty
    );
    if let Some(study) = study_id(route, req.uri().path()) {
        span.record("study_id", tracing::field::display(study));
    }
    span
}

/// The `{study_id}` segment of `path` under the route template `route`, when it is a UUID.
fn study_id(route: &str, path: &str) -> Option<uuid::Uuid> {
    let at = route.split('/').position(|s| s == "{study_id}")?;
    path.split('/').nth(at).and_then(|s| uuid::Uuid::parse_str(s).ok())
}

/// The access-log line, logged in the request's span.
fn access_log(res: &Response, latency: Duration, _span: &Span) {
    tracing::info!(
        target: "bayesd::access",
        status = res.status().as_u16(),
        latency_ms = latency.as_micros() as f64 / 1000.0,
        "request finished"
    );
}

/// CORS for the configured origins (`*` for any), or none.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE, IDEMPOTENCY_KEY, X_REQUEST_ID])
            .expose_headers([X_REQUEST_ID, header::RETRY_AFTER, header::LOCATION])
            .max_age(Duration::from_secs(3600)),
    )
}

/// Answers 503 (problem+json) when the request, body upload included, outlasts `limit`.
async fn request_timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(res) => res,
        Err(_) => {
            tracing::warn!(timeout_secs = limit.as_secs(), "request timed out");
            crate::metrics::note_unavailable("request_timeout");
            let detail = format!("the request took longer than {} s and was stopped; retry later", limit.as_secs());
            ApiError::unavailable(detail).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_and_study_ids() {
        for ok in ["abc", "0f1e-22_x.y:z", "a+b/c=@d", &"x".repeat(128)] {
            assert!(sane_request_id(&HeaderValue::from_str(ok).unwrap()), "{ok}");
        }
        for bad in ["", "a b", "a\"b", "<script>", &"x".repeat(129), "é"] {
            let v = HeaderValue::from_bytes(bad.as_bytes()).unwrap();
            assert!(!sane_request_id(&v), "{bad}");
        }
        let sid = uuid::Uuid::new_v4();
        let route = "/v1/studies/{study_id}/suggestions/{suggestion_id}";
        assert_eq!(study_id(route, &format!("/v1/studies/{sid}/suggestions/x")), Some(sid));
        assert_eq!(study_id(route, "/v1/studies/nope/suggestions/x"), None);
        assert_eq!(study_id("/v1/studies", "/v1/studies"), None);
    }
}
