//! The `cost_model` block: a known pointwise cost
//! `c(x) = intercept + Σ_j weight_j·|x_j| + Σ_j move_weight_j·|x_j − x'_j|`, x' the previous point (the last run, or
//! the last open suggestion when one is pending), in the parameters' own units. It covers the movement cost of
//! TRUVAR's Lake Zürich experiment, `0.25·|x1 − x1'| + 4·(|x2| + 1)` (Bogunovic et al., NIPS 2016, Sec. 4):
//! `{"intercept": 4, "weights": {"x2": 4}, "move_weights": {"x1": 0.25}}`. A cost reported on an observation
//! overrides the model for that run.

use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::error::FieldError;
use crate::space::{Domain, Space};

/// A known cost model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CostModelSpec {
    /// Constant cost of every run.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = 4.0))]
    pub intercept: f64,
    /// Cost per unit of |x_j| for numeric decision parameters.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object, example = json!({"depth": 4.0})))]
    pub weights: Map<String, serde_json::Value>,
    /// Cost per unit of movement |x_j − x'_j| from the previous point.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object, example = json!({"position": 0.25})))]
    pub move_weights: Map<String, serde_json::Value>,
}

/// A validated cost model over the full encoded space.
#[derive(Debug, Clone, PartialEq)]
pub struct CostModel {
    intercept: f64,
    /// (parameter index, weight) pairs.
    weights: Vec<(usize, f64)>,
    move_weights: Vec<(usize, f64)>,
    space: Space,
}

impl CostModelSpec {
    /// Validates against the space; errors are named `cost_model.weights.name`, ….
    pub fn validate(&self, space: &Space, decision: &[usize]) -> Result<CostModel, Vec<FieldError>> {
        let mut errors = Vec::new();
        if !(self.intercept.is_finite() && self.intercept >= 0.0) {
            errors.push(FieldError::new("cost_model.intercept", "must be a finite number ≥ 0"));
        }
        let mut parse = |block: &str, map: &Map<String, serde_json::Value>| {
            let mut out = Vec::new();
            for (name, w) in map {
                let field = format!("cost_model.{block}.{name}");
                let Some(i) = space.index_of(name).filter(|i| decision.contains(i)) else {
                    errors.push(FieldError::new(field, "not a decision parameter of this study"));
                    continue;
                };
                if matches!(space.params()[i].domain, Domain::Categorical { .. }) {
                    errors.push(FieldError::new(field, "a categorical parameter has no magnitude"));
                    continue;
                }
                match w.as_f64() {
                    Some(w) if w.is_finite() && w >= 0.0 => out.push((i, w)),
                    _ => errors.push(FieldError::new(field, "must be a finite number ≥ 0")),
                }
            }
            out
        };
        let weights = parse("weights", &self.weights);
        let move_weights = parse("move_weights", &self.move_weights);
        if errors.is_empty() {
            Ok(CostModel { intercept: self.intercept, weights, move_weights, space: space.clone() })
        } else {
            Err(errors)
        }
    }
}

impl CostModel {
    fn value_of(&self, x: &[f64], i: usize) -> f64 {
        self.space.decode_some(x, &[i]).values().next().and_then(serde_json::Value::as_f64).unwrap_or(0.0)
    }

    /// Cost of running at `x` (full encoded) after `previous` (full encoded; no movement term without one).
    pub fn cost(&self, x: &[f64], previous: Option<&[f64]>) -> f64 {
        let mut c = self.intercept;
        for &(i, w) in &self.weights {
            c += w * self.value_of(x, i).abs();
        }
        if let Some(p) = previous {
            for &(i, w) in &self.move_weights {
                c += w * (self.value_of(x, i) - self.value_of(p, i)).abs();
            }
        }
        c
    }

    /// Whether the cost depends on the previous point.
    pub fn has_movement(&self) -> bool {
        !self.move_weights.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::ParameterSpec;
    use serde_json::json;

    #[test]
    fn the_lake_movement_cost_is_expressible() {
        let specs: Vec<ParameterSpec> = serde_json::from_value(json!([
            {"name": "x1", "type": "float", "low": 0, "high": 100},
            {"name": "x2", "type": "float", "low": -5, "high": 0}
        ]))
        .unwrap();
        let space = Space::new(&specs).unwrap();
        let spec: CostModelSpec =
            serde_json::from_value(json!({"intercept": 4, "weights": {"x2": 4}, "move_weights": {"x1": 0.25}}))
                .unwrap();
        let model = spec.validate(&space, &[0, 1]).unwrap();
        let enc = |a: f64, b: f64| space.encode(&json!({"x1": a, "x2": b}).as_object().unwrap().clone(), "p").unwrap();
        let (x, prev) = (enc(60.0, -2.0), enc(20.0, -1.0));
        let expected = 0.25 * 40.0 + 4.0 * (2.0 + 1.0);
        assert!((model.cost(&x, Some(&prev)) - expected).abs() < 1e-9);
        assert!((model.cost(&x, None) - 12.0).abs() < 1e-9);
    }

    #[test]
    fn unknown_parameters_are_named() {
        let specs: Vec<ParameterSpec> =
            serde_json::from_value(json!([{"name": "x", "type": "float", "low": 0, "high": 1}])).unwrap();
        let space = Space::new(&specs).unwrap();
        let spec: CostModelSpec = serde_json::from_value(json!({"weights": {"y": 1}})).unwrap();
        assert_eq!(spec.validate(&space, &[0]).unwrap_err()[0].field, "cost_model.weights.y");
    }
}
