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
