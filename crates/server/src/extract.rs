//! Request extractors whose rejections are problem documents: JSON bodies (content type, size limit, syntax → 400,
//! wrong shape → 422 naming the field, NaN/Infinity tokens → 422 naming the field), JSON-or-CSV bodies, path and
//! query parameters.

use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, shape_error};
use crate::state::AppState;

/// A JSON body; the raw bytes are kept for idempotency hashing.
#[derive(Debug)]
pub struct ApiJson<T> {
    /// The parsed body.
    pub value: T,
    /// The body as received.
    pub raw: axum::body::Bytes,
}

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        if !media_type(&req).is_some_and(|m| is_json(&m)) {
            return Err(ApiError::unsupported_media_type());
        }
        let raw = read_body(req, state).await?;
        let value = parse_json(&raw)?;
        Ok(Self { value, raw })
    }
}

/// The media type of the request (`Content-Type` without parameters, lower case).
fn media_type(req: &Request) -> Option<String> {
    let v = req.headers().get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
}

fn is_json(media: &str) -> bool {
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// The body within the configured size limit (413 beyond it, before reading when `Content-Length` says so).
async fn read_body(req: Request, state: &AppState) -> Result<axum::body::Bytes, ApiError> {
    let limit = state.config.max_body_bytes;
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::too_large(limit));
    }
    axum::body::to_bytes(req.into_body(), limit).await.map_err(|e| {
        if e.to_string().contains("length limit") {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request("the request body could not be read")
        }
    })
}

/// The 415 detail of a route taking JSON or CSV.
pub(crate) const JSON_OR_CSV: &str =
    "send the body as JSON ('Content-Type: application/json') or as CSV ('Content-Type: text/csv')";

/// A body sent either as JSON (parsed like [`ApiJson`]) or as CSV (`text/csv`, UTF-8; the raw bytes, parsed by
/// the route, which knows the columns). Other content types are 415; both obey the body size limit.
#[derive(Debug)]
pub enum JsonOrCsv<T> {
    /// `application/json`.
    Json(ApiJson<T>),
    /// `text/csv`: the body as received.
    Csv(axum::body::Bytes),
}

impl<T: DeserializeOwned> FromRequest<AppState> for JsonOrCsv<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        match media_type(&req) {
            Some(m) if is_json(&m) => ApiJson::from_request(req, state).await.map(Self::Json),
            Some(m) if m == "text/csv" => {
                let charset = req
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .into_iter()
                    .flat_map(|v| v.split(';').skip(1))
                    .filter_map(|p| p.split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
                    .map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase());
                if charset.is_some_and(|c| c != "utf-8" && c != "utf8" && c != "us-ascii") {
                    return Err(ApiError::unsupported_media_type_with("CSV bodies must be UTF-8 (charset=utf-8)"));
                }
                read_body(req, state).await.map(Self::Csv)
            }
            _ => Err(ApiError::unsupported_media_type_with(JSON_OR_CSV)),
        }
    }
}

/// Like [`ApiJson`], for bodies whose every field has a default: a request with no body, and no `Content-Type` or a
/// JSON one (generated clients send `Content-Type: application/json` with an unset optional body), gets the
/// defaults (as if it sent `{}`), so `POST …/suggestions` needs no body for one suggestion.
#[derive(Debug)]
pub struct ApiJsonOrDefault<T>(pub ApiJson<T>);

impl<T: DeserializeOwned + Default> FromRequest<AppState> for ApiJsonOrDefault<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let no_type_or_json = media_type(&req).is_none_or(|m| is_json(&m));
        let empty =
            req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).is_none_or(|v| v.trim() == "0")
                && !req.headers().contains_key(header::TRANSFER_ENCODING);
        if no_type_or_json && empty {
            return Ok(Self(ApiJson { value: T::default(), raw: axum::body::Bytes::from_static(b"{}") }));
        }
        ApiJson::from_request(req, state).await.map(Self)
    }
}

/// Parses `bytes` as `T`: syntax errors are 400, shape errors 422 naming the field path, and non-finite number
/// tokens (`NaN`, `Infinity`, which some JSON encoders emit) 422 naming the field that holds them.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let syntax = |e: &serde_json::Error| {
        if let Some(field) = non_finite_field(bytes) {
            return ApiError::field(field, "must be a finite number (NaN and Infinity are not allowed)");
        }
        ApiError::bad_request(format!("the body is not valid JSON: {e}"))
    };
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(v) => {
            de.end().map_err(|e| syntax(&e))?;
            if let Some(field) = nul_field(bytes) {
                return Err(ApiError::field(field, "must not contain the NUL character (U+0000)"));
            }
            Ok(v)
        }
        Err(e) if e.inner().is_data() => Err(shape_error(&e.path().to_string(), e.inner())),
        Err(e) => Err(syntax(e.inner())),
    }
}

/// Finds the field holding a `NaN`/`Infinity` token by replacing such tokens with marker strings and re-parsing.
fn non_finite_field(bytes: &[u8]) -> Option<String> {
    const MARK: &str = "__bayesd_non_finite__";
    let text = std::str::from_utf8(bytes).ok()?;
    let mut out = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escaped, mut found) = (false, false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let token = ["-Infinity", "Infinity", "NaN", "-inf", "inf", "nan"].into_iter().find(|t| rest.starts_with(t));
        if let Some(t) = token {
            out.push('"');
            out.push_str(MARK);
            out.push('"');
            rest = &rest[t.len()..];
            found = true;
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !found {
        return None;
    }
    let value: Value = serde_json::from_str(&out).ok()?;
    fn find(v: &Value, path: String) -> Option<String> {
        match v {
            Value::String(s) if s == MARK => Some(path),
            Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| find(x, format!("{path}[{i}]"))),
            Value::Object(o) => {
                o.iter().find_map(|(k, x)| find(x, if path.is_empty() { k.clone() } else { format!("{path}.{k}") }))
            }
            _ => None,
        }
    }
    find(&value, String::new()).map(|p| if p.is_empty() { "body".into() } else { p })
}

/// The path of the first string or object key holding U+0000 (`\u0000` in JSON), which Postgres cannot store in
/// text or JSONB: refused at the edge, so both backends answer 422 and no commit group carries it.
pub(crate) fn nul_field(bytes: &[u8]) -> Option<String> {
    // JSON can only spell U+0000 as an escape; skip the second parse for the bodies that cannot hold one.
    if !bytes.windows(6).any(|w| w.eq_ignore_ascii_case(b"\\u0000")) {
        return None;
    }
    let value: Value = serde_json::from_slice(bytes).ok()?;
    fn find(v: &Value, path: String) -> Option<String> {
        let at = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
        match v {
            Value::String(s) if s.contains('\0') => Some(path),
            Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| find(x, format!("{path}[{i}]"))),
            Value::Object(o) => {
                o.iter().find_map(
                    |(k, x)| {
                        if k.contains('\0') { Some(at(&k.replace('\0', "\\u0000"))) } else { find(x, at(k)) }
                    },
                )
            }
            _ => None,
        }
    }
    find(&value, String::new()).map(|p| if p.is_empty() { "body".into() } else { p })
}

/// Path parameters; a malformed id is a 400 problem.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|e| ApiError::bad_request(format!("{}; ids are UUIDs", e.body_text())))
    }
}

/// Query parameters; a malformed one is a 400 problem.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| ApiQuery(v))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        a: f64,
        b: Option<Vec<f64>>,
    }

    #[test]
    fn nan_tokens_are_reported_at_their_field() {
        let e = parse_json::<Body>(br#"{"a": 1, "b": [1, NaN]}"#).unwrap_err();
        assert_eq!(e.status(), axum::http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(e.problem().errors[0].field, "b[1]");
    }

    #[test]
    fn unknown_and_missing_fields_are_named() {
        assert_eq!(parse_json::<Body>(br#"{"a": 1, "zz": 2}"#).unwrap_err().problem().errors[0].field, "zz");
        assert_eq!(parse_json::<Body>(br#"{"b": null}"#).unwrap_err().problem().errors[0].field, "a");
        assert_eq!(parse_json::<Body>(br#"{"a": "x"}"#).unwrap_err().problem().errors[0].field, "a");
    }

    #[test]
    fn syntax_errors_are_bad_requests() {
        assert_eq!(parse_json::<Body>(b"{\"a\": ").unwrap_err().status(), axum::http::StatusCode::BAD_REQUEST);
        assert_eq!(parse_json::<Body>(br#"{"a": 1} x"#).unwrap_err().status(), axum::http::StatusCode::BAD_REQUEST);
    }
}
