//! The dashboard (issue 24, ADR 0006): one HTML shell, a style sheet and a script, embedded in the binary. `/` (the
//! study list) and `/studies/{id}` (a study page) answer the same shell; the script reads the path and draws
//! everything from the public `/v1` API with the user's token. None of these routes carries study data, so they
//! are public (`auth::is_public`) and absent from the OpenAPI document.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::state::AppState;

const INDEX_HTML: &str = include_str!("../assets/dashboard/index.html");
const APP_JS: &str = include_str!("../assets/dashboard/app.js");
const APP_CSS: &str = include_str!("../assets/dashboard/app.css");
const FAVICON_SVG: &str = include_str!("../assets/dashboard/favicon.svg");

/// Content-Security-Policy of the dashboard: scripts, styles and images only from this origin (no inline script or
/// style, no `eval`), API calls only to this origin. The CSV download is a `blob:` link, a navigation the policy
/// does not restrict.
const UI_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                      frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// The path prefixes [`crate::auth`] lets through without a token.
pub fn is_ui_path(path: &str) -> bool {
    path == "/" || path.starts_with("/studies/") || path.starts_with("/dashboard/")
}

/// An embedded asset with its content type; `no-cache` makes the browser revalidate, so a new binary's assets are
/// used at once.
fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body)
}

/// The dashboard's routes, with their Content-Security-Policy.
pub fn router() -> Router<AppState> {
    let shell = || async { asset("text/html; charset=utf-8", INDEX_HTML) };
    Router::new()
        .route("/", get(shell))
        .route("/studies/{study_id}", get(shell))
        .route("/dashboard/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/dashboard/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/dashboard/favicon.svg", get(|| async { asset("image/svg+xml", FAVICON_SVG) }))
        .layer(SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(UI_CSP)))
}
