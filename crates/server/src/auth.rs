//! Optional bearer-token authentication: when tokens are configured, every route but health, the API
//! documentation and the dashboard's shell and assets needs `Authorization: Bearer <token>`. A browser cannot send
//! a header when it loads a page: Swagger UI's "Authorize" button adds the token to the calls it makes, and the
//! dashboard ([`crate::ui`], no study data in its files) asks for the token and sends it on its `/v1` calls.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

fn is_public(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/openapi.json")
        || path == "/docs"
        || path.starts_with("/docs/")
        || crate::ui::is_ui_path(path)
}

/// Constant-time comparison of two byte strings.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token of an `Authorization: Bearer <token>` value; the scheme is case-insensitive (RFC 9110 §11.1).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once([' ', '\t'])?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Middleware enforcing the tokens.
pub async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let tokens = &state.config.api_tokens;
    if tokens.is_empty() || is_public(req.uri().path()) {
        return next.run(req).await;
    }
    let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
    match given {
        None => ApiError::unauthorized("this server requires 'Authorization: Bearer <token>'").into_response(),
        Some(t) if tokens.iter().any(|k| same(k.as_bytes(), t.as_bytes())) => next.run(req).await,
        Some(_) => ApiError::unauthorized("the bearer token is not valid").into_response(),
    }
}
