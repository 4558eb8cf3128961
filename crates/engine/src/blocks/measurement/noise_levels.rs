//! The `noise_levels` block: a few measurement modes that trade noise for cost (TRUVAR, Bogunovic et al., NIPS
//! 2016, Sec. 4, "synthetic LSE with selectable noise": σ² ∈ {1e-6, 1e-3, 0.05} at costs {15, 10, 2}). A suggestion
//! names the level to use; an observation says which level it used, and its known noise variance enters the GP
//! as heteroscedastic noise (`value_stddev`, when reported, takes precedence).

use serde::{Deserialize, Serialize};

use crate::error::FieldError;

/// One measurement mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NoiseLevelSpec {
    /// Unique name, used in suggestions and observations.
    #[cfg_attr(feature = "openapi", schema(example = "fast"))]
    pub name: String,
    /// Known variance of the measurement noise, in the objective's units squared.
    #[cfg_attr(feature = "openapi", schema(example = 0.05))]
    pub noise_variance: f64,
    /// Cost of one measurement at this level (added to the `cost_model` when the study has one).
    #[cfg_attr(feature = "openapi", schema(example = 2.0))]
    pub cost: f64,
}

/// Checks names, variances and costs; errors are named `noise_levels[i].field`.
pub fn validate(levels: &[NoiseLevelSpec]) -> Result<(), Vec<FieldError>> {
    let mut errors = Vec::new();
    if levels.is_empty() {
        errors.push(FieldError::new("noise_levels", "give at least one level, or leave the block out"));
    }
    for (i, l) in levels.iter().enumerate() {
        let field = |f: &str| format!("noise_levels[{i}].{f}");
        if l.name.trim().is_empty() {
            errors.push(FieldError::new(field("name"), "must not be empty"));
        } else if levels[..i].iter().any(|o| o.name == l.name) {
            errors.push(FieldError::new(field("name"), format!("duplicate level name '{}'", l.name)));
        }
        if !(l.noise_variance.is_finite() && l.noise_variance >= 0.0) {
            errors.push(FieldError::new(field("noise_variance"), "must be a finite number ≥ 0"));
        }
        if !(l.cost.is_finite() && l.cost >= 0.0) {
            errors.push(FieldError::new(field("cost"), "must be a finite number ≥ 0"));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}
