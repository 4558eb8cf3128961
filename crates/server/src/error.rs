//! The one error type of the HTTP layer, rendered as RFC 9457 `application/problem+json`. Client mistakes name the
//! offending fields; internal failures are logged and answered with a generic 500 that reveals nothing.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use engine::FieldError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::store::StoreError;

/// One invalid field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProblemField {
    /// JSON path of the field, e.g. `parameters[2].low` or `assignments.temperature`.
    #[schema(example = "assignments.temperature")]
    pub field: String,
    /// What is wrong and what to do about it.
    #[schema(example = "must be between 20 and 80")]
    pub message: String,
}

/// An RFC 9457 problem detail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI reference naming the problem type.
    #[serde(rename = "type")]
    #[schema(example = "https://bayesd.dev/problems/validation")]
    pub kind: String,
    /// Short summary of the problem type.
    #[schema(example = "Invalid request")]
    pub title: String,
    /// HTTP status code.
    #[schema(example = 422)]
    pub status: u16,
    /// What happened in this request.
    #[schema(example = "1 field is invalid")]
    pub detail: String,
    /// Invalid fields (validation problems only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ProblemField>,
}

/// An error answered to a client.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    title: &'static str,
    detail: String,
    errors: Vec<ProblemField>,
    retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        Self { status, kind, title, detail: detail.into(), errors: Vec::new(), retry_after: None }
    }

    /// 422: fields failed validation.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let n = errors.len();
        let mut e = Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            "Invalid request",
            format!("{n} field{} invalid", if n == 1 { " is" } else { "s are" }),
        );
        e.errors = errors.into_iter().map(|f| ProblemField { field: f.field, message: f.message }).collect();
        e
    }

    /// 422 for one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(field, message)])
    }

    /// 400: the request is malformed (not JSON, bad header, bad path or query).
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", "Malformed request", detail)
    }

    /// 400 naming the malformed field.
    pub fn bad_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        let mut e = Self::bad_request(message.clone());
        e.errors = vec![ProblemField { field: field.into(), message }];
        e
    }

    /// 404 for an unknown resource.
    pub fn not_found(what: &str, id: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", format!("no {what} with id {id}"))
    }

    /// 404 for an unknown route.
    pub fn no_route() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", "no such route; see /docs for the API")
    }

    /// 405 for a wrong method.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            "Method not allowed",
            "this route does not accept that method; see /docs for the API",
        )
    }

    /// 409: the request conflicts with the resource's state.
    pub fn conflict(kind: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, kind, "Conflict", detail)
    }

    /// 401: a token is required.
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized", detail)
    }

    /// 413: the body is too large.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload-too-large",
            "Request body too large",
            format!("the request body exceeds the limit of {limit} bytes; send fewer items per request"),
        )
    }

    /// 415: not JSON.
    pub fn unsupported_media_type() -> Self {
        Self::unsupported_media_type_with("send the body as JSON with the header 'Content-Type: application/json'")
    }

    /// 415 saying what the route accepts.
    pub fn unsupported_media_type_with(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type", "Unsupported media type", detail)
    }

    /// 503 with `Retry-After`: compute is saturated or took too long.
    pub fn saturated(detail: impl Into<String>, retry_after: u64) -> Self {
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, "saturated", "Service busy", detail);
        e.retry_after = Some(retry_after);
        e
    }

    /// 503: the database is unreachable.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Service unavailable", detail);
        e.retry_after = Some(1);
        e
    }

    /// 500: logged, answered generically.
    pub fn internal(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "{context}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            "the server failed to handle the request; it has been logged",
        )
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The same error with each field name passed through `rename` (e.g. from a JSON path to a CSV cell).
    pub fn rename_fields(mut self, rename: impl Fn(&str) -> String) -> Self {
        for e in &mut self.errors {
            e.field = rename(&e.field);
        }
        self
    }

    /// The problem document.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: format!("https://bayesd.dev/problems/{}", self.kind),
            title: self.title.into(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            errors: self.errors.clone(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Db(sqlx::Error::PoolTimedOut) | StoreError::Db(sqlx::Error::Io(_)) => {
                tracing::warn!(error = %e, "database unavailable");
                Self::unavailable("the database is unavailable; retry shortly")
            }
            e if e.is_contention() => {
                tracing::warn!(error = %e, "database lock contention");
                Self::saturated("the database is busy with other writes; retry after the indicated delay", 1)
            }
            other => Self::internal("storage failed", other),
        }
    }
}

impl From<engine::Error> for ApiError {
    fn from(e: engine::Error) -> Self {
        match e {
            engine::Error::Invalid(errors) => Self::validation(errors),
            engine::Error::Conflict(msg) => Self::conflict("engine-conflict", msg),
            // Client data can cause this (e.g. values near ±1e300 overflow the standardisation): not a 500.
            engine::Error::Numerical(msg) => {
                tracing::warn!(error = %msg, "the model could not be fitted");
                Self::conflict(
                    "model-failed",
                    format!(
                        "the model could not be fitted to this study's observations ({msg}); extreme or degenerate \
                         values can cause this"
                    ),
                )
            }
            other => Self::internal("engine failed", other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut res = (self.status, body).into_response();
        let headers = res.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        res
    }
}

/// Result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

/// Converts a value already parsed as JSON (a request body, a stored document) into `T`, naming fields below `prefix`.
pub fn from_value<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        let path = match (prefix.is_empty(), path.as_str()) {
            (true, _) => path,
            (false, ".") => prefix.to_string(),
            (false, p) if p.starts_with('[') => format!("{prefix}{p}"),
            (false, p) => format!("{prefix}.{p}"),
        };
        shape_error(&path, e.inner())
    })
}

/// The 422 of a JSON value of the wrong shape at `path`, naming the field (an unknown or missing one by its name).
pub(crate) fn shape_error(path: &str, inner: &impl std::fmt::Display) -> ApiError {
    let msg = inner.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    let base = if path == "." { String::new() } else { path.to_string() };
    let join = |name: &str| if base.is_empty() { name.to_string() } else { format!("{base}.{name}") };
    let field = if let Some(rest) = msg.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or_default();
        if base == name || base.ends_with(&format!(".{name}")) { base.clone() } else { join(name) }
    } else if let Some(rest) = msg.strip_prefix("missing field `") {
        join(rest.split('`').next().unwrap_or_default())
    } else if base.is_empty() {
        "body".to_string()
    } else {
        base
    };
    ApiError::field(field, msg)
}
