//! Engine errors. Validation errors name the offending field so the server can report them as-is.

use serde::Serialize;

/// One invalid field of a spec or an observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// JSON path of the field, e.g. `parameters[2].low`.
    pub field: String,
    /// What is wrong and what to do about it.
    pub message: String,
}

impl FieldError {
    /// A field error at `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Errors of the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input (a spec, an observation, a request) is invalid; every offending field is listed.
    #[error("invalid input: {}", join(.0))]
    Invalid(Vec<FieldError>),
    /// The request is valid but cannot be served in the study's current state (e.g. nothing to recommend).
    #[error("{0}")]
    Conflict(String),
    /// A numerical failure that survived every fallback (jitter ladder, restarts).
    #[error("numerical failure: {0}")]
    Numerical(String),
}

fn join(errors: &[FieldError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl Error {
    /// A single-field validation error.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid(vec![FieldError::new(field, message)])
    }
}

/// Result with the engine [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
