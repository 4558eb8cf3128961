//! A study spec and the validated problem the policies see: variables and roles, objective, algorithm choice and
//! the structural blocks ([`crate::blocks`]), with the validation that turns one into the other.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::blocks::control_sets::{ControlSetSpec, ControlSets};
use crate::blocks::indirect::{IndirectProblem, IndirectSpec};
use crate::blocks::measurement::{self, CandidatesSpec, CostModelSpec, LevelSetSpec, Measurement, NoiseLevelSpec};
use crate::error::FieldError;
pub use crate::objective::{ConstraintOp, ConstraintSpec, Goal, Objective, ObjectiveSpec, Outcomes};
pub use crate::polytope::{LinearOp, ParameterConstraintSpec, Polytope};
use crate::space::{ParameterSpec, Role, Space};

/// Algorithm selection as written in a study spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlgorithmSpec {
    /// `auto` (default) or one of the algorithm names, e.g. `gp-ei`, `gp-ucb`, `gp-mes`, `gp-ts`, `random`, `sobol`.
    #[serde(default = "auto")]
    #[cfg_attr(feature = "openapi", schema(example = "auto"))]
    pub name: String,
    /// Algorithm options (see the algorithm's documentation); unknown options are rejected.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub options: Map<String, Value>,
}

fn auto() -> String {
    "auto".into()
}

impl Default for AlgorithmSpec {
    fn default() -> Self {
        Self { name: auto(), options: Map::new() }
    }
}

/// The part of a study the engine needs: variables, objective, algorithm, seed, and the structural blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StudySpec {
    /// The variables.
    pub parameters: Vec<ParameterSpec>,
    /// The objective (default: maximise `value`).
    #[serde(default)]
    pub objective: Objective,
    /// Several objectives instead of one `objective`: the study looks for their Pareto front, and observations
    /// report each in `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objectives: Option<Vec<ObjectiveSpec>>,
    /// Outcome constraints: measured quantities (reported in `values`) that must stay on one side of a bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Vec<ConstraintSpec>>,
    /// Linear constraints over numeric parameters that every suggestion satisfies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_constraints: Option<Vec<ParameterConstraintSpec>>,
    /// The algorithm (default `auto`).
    #[serde(default)]
    pub algorithm: AlgorithmSpec,
    /// Seed of every random choice of the study (the server fills one in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 7))]
    pub seed: Option<u64>,
    /// An explicit finite domain (list of points or a grid) instead of the continuous box (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<CandidatesSpec>,
    /// Measurement modes trading noise for cost; suggestions name the level to use (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_levels: Option<Vec<NoiseLevelSpec>>,
    /// Known cost per run: intercept + Σ weight·|x| + Σ move_weight·|x − previous x| (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_model: Option<CostModelSpec>,
    /// Makes the study a level-set study: find where the objective is above `threshold` (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level_set: Option<LevelSetSpec>,
    /// Candidate kernel/mean models and confidence settings (HE-GP-UCB and its baselines, seed 004).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::blocks::kernel_candidates::KernelBlock>,
    /// Control sets (seed 000): each run the client sets only the parameters of one set, the others follow their
    /// `distribution`; suggestions name the set to play.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_sets: Option<Vec<ControlSetSpec>>,
    /// Indirect queries (seed 001): the client sets a query `a` and observes an aggregate of the objective over
    /// p(x | a); `parameters` are then the target x, where `best` recommends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indirect: Option<IndirectSpec>,
}

/// A validated study as policies see it.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Every parameter, encoded.
    pub space: Space,
    /// Parameters the client sets (role `decision`).
    pub decision: Vec<usize>,
    /// Parameters observed after the run (role `context`).
    pub contexts: Vec<usize>,
    /// Objective direction (of the first objective when there are several).
    pub goal: Goal,
    /// The objectives and outcome constraints.
    pub outcomes: Outcomes,
    /// The feasible set of `parameter_constraints`, if the study has any.
    pub polytope: Option<Arc<Polytope>>,
    /// Candidate set, noise levels, cost model, level set (seed 003).
    pub measurement: Measurement,
    /// Validated `kernel.candidates` block.
    pub kernel_candidates: Option<std::sync::Arc<crate::blocks::kernel_candidates::CandidateSet>>,
    /// Validated control sets, if the study has them.
    pub control_sets: Option<ControlSets>,
    /// The validated `indirect` block.
    pub indirect: Option<Arc<IndirectProblem>>,
}

impl Problem {
    /// Validates everything of `spec` but the algorithm: parameters and roles, the objective and the structural
    /// blocks; errors name the field.
    pub fn new(spec: &StudySpec) -> Result<Self, Vec<FieldError>> {
        let space = Space::new(&spec.parameters)?;
        let decision = space.with_role(Role::Decision);
        let contexts = space.with_role(Role::Context);
        if decision.is_empty() {
            return Err(vec![FieldError::new("parameters", "at least one parameter must have role 'decision'")]);
        }
        // The outcomes, and the blocks they do not combine with, before the blocks' own validation.
        let outcomes = Outcomes::new(&spec.objective, spec.objectives.as_deref(), spec.constraints.as_deref())?;
        refuse_combinations(spec, &outcomes, !contexts.is_empty())?;
        let control_sets = match &spec.control_sets {
            Some(c) => Some(ControlSets::new(c, &space, &spec.parameters)?),
            None => {
                if let Some(k) = spec.parameters.iter().position(|p| p.distribution.is_some()) {
                    return Err(vec![FieldError::new(
                        format!("parameters[{k}].distribution"),
                        "only used with control_sets; add the block or remove the distribution",
                    )]);
                }
                None
            }
        };
        let measurement = validate_measurement(spec, &space, &decision)?;
        let kernel_candidates = match &spec.kernel {
            Some(block) => Some(block.validate(&space, spec.objective.goal)?),
            None => None,
        };
        let indirect = match &spec.indirect {
            Some(block) => {
                if !contexts.is_empty() {
                    return Err(vec![FieldError::new("indirect", "an indirect study cannot have context parameters")]);
                }
                let others = spec.candidates.is_some()
                    || spec.control_sets.is_some()
                    || spec.kernel.is_some()
                    || spec.noise_levels.is_some()
                    || spec.cost_model.is_some()
                    || spec.level_set.is_some();
                if others {
                    return Err(vec![FieldError::new(
                        "indirect",
                        "cannot be combined with candidates, control_sets, kernel, noise_levels, cost_model or level_set (use indirect.tree)",
                    )]);
                }
                Some(Arc::new(block.validate(&space)?))
            }
            None => None,
        };
        let polytope = match &spec.parameter_constraints {
            Some(c) => Some(Arc::new(Polytope::new(c, &space)?)),
            None => None,
        };
        let problem = Problem {
            space,
            decision,
            contexts,
            goal: outcomes.objectives[0].goal,
            outcomes,
            polytope,
            measurement,
            kernel_candidates,
            control_sets,
            indirect,
        };
        Ok(problem)
    }
    /// Index of the control set called `name`.
    pub fn control_set_index(&self, name: &str) -> Option<usize> {
        self.control_sets.as_ref().and_then(|c| c.index_of(name))
    }

    /// Name of control set `i`.
    pub fn control_set_name(&self, i: usize) -> Option<String> {
        self.control_sets.as_ref().and_then(|c| c.sets.get(i)).map(|s| s.name.clone())
    }

    /// The space of the decision parameters alone.
    pub fn decision_space(&self) -> Space {
        self.space.subspace(&self.decision)
    }

    /// A full encoded point from a decision-space point (other coordinates at the centre).
    pub fn lift(&self, decision_x: &[f64]) -> Vec<f64> {
        let mut x = self.space.centre();
        for (q, j) in self.space.dims_of_params(&self.decision).into_iter().enumerate() {
            x[j] = decision_x[q];
        }
        x
    }
}

/// Refuses the structural blocks that several objectives, outcome constraints or parameter constraints do not
/// combine with (`docs/algorithms.md`, "What combines with what"), naming the block.
fn refuse_combinations(spec: &StudySpec, outcomes: &Outcomes, has_contexts: bool) -> Result<(), Vec<FieldError>> {
    let blocks: [(&str, bool); 8] = [
        ("control_sets", spec.control_sets.is_some()),
        ("indirect", spec.indirect.is_some()),
        ("kernel", spec.kernel.is_some()),
        ("candidates", spec.candidates.is_some()),
        ("noise_levels", spec.noise_levels.is_some()),
        ("cost_model", spec.cost_model.is_some()),
        ("level_set", spec.level_set.is_some()),
        ("parameters", has_contexts),
    ];
    let mut errors = Vec::new();
    for (what, present) in [
        ("several objectives or outcome constraints", !outcomes.is_single()),
        ("parameter_constraints", spec.parameter_constraints.is_some()),
    ] {
        if !present {
            continue;
        }
        for (block, _) in blocks.iter().filter(|b| b.1) {
            let message = if *block == "parameters" {
                format!("context parameters (role 'context') cannot be combined with {what}")
            } else {
                format!("cannot be combined with {what}; remove one of them")
            };
            if !errors.iter().any(|e: &FieldError| e.field == *block) {
                errors.push(FieldError::new(*block, message));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// Validates the seed-003 blocks (`candidates`, `noise_levels`, `cost_model`, `level_set`); errors name the field.
fn validate_measurement(spec: &StudySpec, space: &Space, decision: &[usize]) -> Result<Measurement, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut m = Measurement::default();
    if let Some(c) = &spec.candidates {
        match c.validate(space, decision) {
            Ok(set) => m.candidates = Some(set),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if let Some(levels) = &spec.noise_levels {
        match measurement::noise_levels::validate(levels) {
            Ok(()) => m.noise_levels.clone_from(levels),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if let Some(c) = &spec.cost_model {
        match c.validate(space, decision) {
            Ok(model) => m.cost_model = Some(model),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if let Some(l) = &spec.level_set {
        match l.validate() {
            Ok(()) => m.level_set = Some(l.threshold),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() { Ok(m) } else { Err(errors) }
}
