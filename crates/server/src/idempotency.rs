//! `Idempotency-Key`: the first successful response to a POST is stored with its key (in the same transaction as
//! the change it made) and replayed for retries; a reused key with a different body is refused.

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::store::IdempotencyRow;

/// The header name.
pub const HEADER: &str = "idempotency-key";

/// An idempotent request: scope (method and path), key, body hash.
#[derive(Debug, Clone)]
pub struct Idempotency {
    scope: String,
    key: String,
    hash: String,
}

impl Idempotency {
    /// Reads the header; `None` without one, 400 for a malformed one.
    pub fn from_request(headers: &HeaderMap, scope: String, body: &[u8]) -> ApiResult<Option<Self>> {
        let Some(v) = headers.get(HEADER) else { return Ok(None) };
        let key = v
            .to_str()
            .ok()
            .filter(|k| !k.is_empty() && k.len() <= 255)
            .ok_or_else(|| ApiError::bad_field("Idempotency-Key", "must be 1–255 visible ASCII characters"))?;
        Ok(Some(Self { scope, key: key.to_string(), hash: fnv1a(body) }))
    }

    /// Scope of the key.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The stored response for a replay, or 409 when the key was used with another body.
    pub fn replay(&self, row: &IdempotencyRow) -> ApiResult<Response> {
        if row.request_hash != self.hash {
            return Err(ApiError::conflict(
                "idempotency-key-reused",
                "this Idempotency-Key was used with a different request body; use a new key for a new request",
            ));
        }
        let status = StatusCode::from_u16(row.status as u16).unwrap_or(StatusCode::OK);
        let mut res = (status, axum::Json(row.body.clone())).into_response();
        res.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
        Ok(res)
    }

    /// The record to store with a response.
    pub fn record(&self, status: StatusCode, body: &Value) -> IdempotencyRow {
        IdempotencyRow {
            scope: self.scope.clone(),
            key: self.key.clone(),
            request_hash: self.hash.clone(),
            status: i32::from(status.as_u16()),
            body: body.clone(),
            created_at: Utc::now(),
        }
    }
}

/// 64-bit FNV-1a as hex: a stable (cross-process) fingerprint of the request body.
fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}
