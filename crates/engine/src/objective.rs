//! The objective of a study: its name and direction. Below the blocks, which need the goal's sign.

use serde::{Deserialize, Serialize};

/// Direction of the objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Goal {
    /// Larger is better (the default).
    #[default]
    Maximize,
    /// Smaller is better.
    Minimize,
}

impl Goal {
    /// +1 or −1: multiplies client values into the engine's maximisation sign and back.
    pub fn sign(self) -> f64 {
        match self {
            Goal::Maximize => 1.0,
            Goal::Minimize => -1.0,
        }
    }
}

/// The objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Objective {
    /// Name of the measured quantity.
    #[serde(default = "default_objective_name")]
    #[cfg_attr(feature = "openapi", schema(example = "yield"))]
    pub name: String,
    /// `maximize` or `minimize`.
    #[serde(default)]
    pub goal: Goal,
}

fn default_objective_name() -> String {
    "value".into()
}

impl Default for Objective {
    fn default() -> Self {
        Self { name: default_objective_name(), goal: Goal::Maximize }
    }
}

/// One entry of a study's `objectives` (several objectives, a Pareto front to find).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ObjectiveSpec {
    /// Name of the measured quantity: the key of its value in an observation's `values`.
    #[cfg_attr(feature = "openapi", schema(example = "yield"))]
    pub name: String,
    /// `maximize` (default) or `minimize`.
    #[serde(default)]
    pub goal: Goal,
    /// The worst value still of interest (the reference point's coordinate for the hypervolume); absent: inferred
    /// from the data (see `docs/algorithms.md`, "Several objectives").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 0.5))]
    pub threshold: Option<f64>,
}

/// The comparison of an outcome constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ConstraintOp {
    /// The value must be at most the bound.
    #[serde(rename = "<=")]
    AtMost,
    /// The value must be at least the bound.
    #[serde(rename = ">=")]
    AtLeast,
}

/// One entry of a study's `constraints`: a measured quantity, not an objective, that must stay on one side of a
/// bound (reported in an observation's `values`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConstraintSpec {
    /// Name of the measured quantity.
    #[cfg_attr(feature = "openapi", schema(example = "purity"))]
    pub name: String,
    /// `<=` or `>=`.
    pub op: ConstraintOp,
    /// The bound.
    #[cfg_attr(feature = "openapi", schema(example = 0.99))]
    pub bound: f64,
}

impl ConstraintSpec {
    /// The slack of `value`: ≥ 0 exactly when the constraint holds (`bound − value` for `<=`, `value − bound` for
    /// `>=`). The engine models slacks, so every constraint reads "slack ≥ 0".
    pub fn slack(&self, value: f64) -> f64 {
        match self.op {
            ConstraintOp::AtMost => self.bound - value,
            ConstraintOp::AtLeast => value - self.bound,
        }
    }
}

/// The validated outcomes of a study: its objectives (one, or several) and its outcome constraints. The engine's
/// metrics are the objectives in order, then the constraints in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcomes {
    /// The objectives (at least one).
    pub objectives: Vec<ObjectiveSpec>,
    /// The outcome constraints.
    pub constraints: Vec<ConstraintSpec>,
    /// Whether the study wrote `objectives` (values come in `values`), not a single `objective`.
    pub listed: bool,
}

/// Most objectives a study may have: the hypervolume and the Pareto filter grow quickly with their number.
pub const MAX_OBJECTIVES: usize = 4;

/// Most outcome constraints a study may have (one GP each).
pub const MAX_CONSTRAINTS: usize = 8;

impl Outcomes {
    /// Validates `objective` / `objectives` / `constraints`; errors name the field.
    pub fn new(
        objective: &Objective,
        objectives: Option<&[ObjectiveSpec]>,
        constraints: Option<&[ConstraintSpec]>,
    ) -> Result<Self, Vec<crate::error::FieldError>> {
        use crate::error::FieldError;
        let mut errors = Vec::new();
        let (objectives, listed) = match objectives {
            Some(list) => {
                if *objective != Objective::default() {
                    errors.push(FieldError::new("objectives", "give either 'objective' or 'objectives', not both"));
                }
                if list.is_empty() || list.len() > MAX_OBJECTIVES {
                    errors.push(FieldError::new("objectives", format!("give 1 to {MAX_OBJECTIVES} objectives")));
                }
                (list.to_vec(), true)
            }
            None => {
                (vec![ObjectiveSpec { name: objective.name.clone(), goal: objective.goal, threshold: None }], false)
            }
        };
        let constraints = constraints.map(<[_]>::to_vec).unwrap_or_default();
        if constraints.len() > MAX_CONSTRAINTS {
            errors.push(FieldError::new("constraints", format!("give at most {MAX_CONSTRAINTS} constraints")));
        }
        let prefix = if listed { "objectives" } else { "objective" };
        let mut names: Vec<&str> = Vec::new();
        let named = objectives
            .iter()
            .enumerate()
            .map(|(i, o)| (if listed { format!("{prefix}[{i}]") } else { prefix.to_string() }, &o.name))
            .chain(constraints.iter().enumerate().map(|(i, c)| (format!("constraints[{i}]"), &c.name)));
        for (field, name) in named {
            if name.trim().is_empty() {
                errors.push(FieldError::new(format!("{field}.name"), "must not be empty"));
            } else if names.contains(&name.as_str()) {
                errors.push(FieldError::new(format!("{field}.name"), format!("duplicate outcome name '{name}'")));
            } else if name.contains('\0') || name.len() > 200 {
                errors.push(FieldError::new(format!("{field}.name"), "at most 200 characters, no NUL"));
            }
            names.push(name);
        }
        for (i, o) in objectives.iter().enumerate() {
            if o.threshold.is_some_and(|t| !t.is_finite()) {
                errors.push(FieldError::new(format!("objectives[{i}].threshold"), "must be a finite number"));
            }
        }
        for (i, c) in constraints.iter().enumerate() {
            if !c.bound.is_finite() {
                errors.push(FieldError::new(format!("constraints[{i}].bound"), "must be a finite number"));
            }
        }
        if errors.is_empty() { Ok(Self { objectives, constraints, listed }) } else { Err(errors) }
    }

    /// Whether the study is plain single-objective optimisation (one objective, no constraints).
    pub fn is_single(&self) -> bool {
        self.objectives.len() == 1 && self.constraints.is_empty()
    }

    /// Number of metrics (objectives and constraints).
    pub fn n_metrics(&self) -> usize {
        self.objectives.len() + self.constraints.len()
    }

    /// The metrics' names: objectives, then constraints.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.objectives.iter().map(|o| o.name.as_str()).chain(self.constraints.iter().map(|c| c.name.as_str()))
    }

    /// The engine's value of metric `k` for the client's `value`: objectives in maximisation sign, constraints as
    /// slacks (≥ 0 feasible).
    pub fn engine_value(&self, k: usize, value: f64) -> f64 {
        match self.objectives.get(k) {
            Some(o) => o.goal.sign() * value,
            None => self.constraints[k - self.objectives.len()].slack(value),
        }
    }
}
