//! What the server hands the engine: observations and pending suggestions as the client wrote them, and their
//! encoded form ([`Dataset`]) that policies work on. Engine values are always maximised: the study flips the sign
//! of minimised objectives on the way in and out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::space::Assignments;

/// What a point carries besides its coordinates: the control set to play (seed 000), the noise level to use (seed
/// 003), the indirect query (seed 001), the cost expected. One struct, so that a block that adds something to a
/// point adds a field here. Suggestions and the records of observations and pending suggestions carry it by name
/// (`PointExtras<String, Assignments>`, flattened into their JSON); a policy's [`crate::policy::Candidate`] and the
/// [`Dataset`]'s rows carry it encoded (`PointExtras<usize, Vec<f64>>`: indices into the spec's sets and levels,
/// the encoded query). Absent ones are left out of its JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointExtras<L = String, Q = Assignments> {
    /// Control set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_set: Option<L>,
    /// Noise level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_level: Option<L>,
    /// Indirect query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<Q>,
    /// Cost the policy expects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_cost: Option<f64>,
}

impl<L, Q> Default for PointExtras<L, Q> {
    fn default() -> Self {
        Self { control_set: None, noise_level: None, query: None, expected_cost: None }
    }
}

/// One stored observation, as the client reported it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservationRecord {
    /// What actually happened: every parameter's value (decisions as set, random and context variables as observed).
    pub assignments: Assignments,
    /// The objective value; `None` when the run failed.
    pub value: Option<f64>,
    /// Known standard deviation of `value`, if the instrument reports one.
    pub value_stddev: Option<f64>,
    /// Observed cost of the run.
    pub cost: Option<f64>,
    /// The run failed (no value).
    pub failed: bool,
    /// Values of the study's objectives (with `objectives`) and outcome constraints, by name; the single
    /// objective's may come here or in `value`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, f64>,
    /// Known standard deviations of some of `values`, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values_stddev: BTreeMap<String, f64>,
    /// Control set played (seed 000), from the suggestion or the observation; noise level used (seed 003);
    /// indirect query `a` whose aggregate was observed (seed 001). (`expected_cost` is a suggestion's.)
    #[serde(flatten)]
    pub extras: PointExtras,
}

/// A suggestion handed out and not yet observed, so that concurrent clients get different points.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingRecord {
    /// The suggestion's assignments.
    pub assignments: Assignments,
    /// Its control set, noise level and indirect query, if any.
    #[serde(flatten)]
    pub extras: PointExtras,
    /// The context it was suggested for (a suggest request that gave one), if any: its fantasy sits there.
    pub context: Option<Assignments>,
}

/// One example pair (x, a) of an indirect study (seed 001): a target point `x` drawn from p(x | a) for a query `a`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PairRecord {
    /// Values of the study's (target) parameters.
    #[cfg_attr(feature = "openapi", schema(value_type = Object, example = json!({"x1": 2.5, "x2": 7.0})))]
    pub target: Assignments,
    /// Values of the indirect block's query parameters.
    #[cfg_attr(feature = "openapi", schema(value_type = Object, example = json!({"a1": 0.5, "a2": 0.47})))]
    pub query: Assignments,
}

/// Everything the study has seen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Observations in the order they were made.
    pub observations: Vec<ObservationRecord>,
    /// Open suggestions.
    pub pending: Vec<PendingRecord>,
    /// Example pairs (x, a) uploaded after creation (indirect studies); pairs given in the spec come on top.
    #[serde(default)]
    pub pairs: Vec<PairRecord>,
    /// The study's cost budget (`budget.max_cost`), for policies that plan by it (`bocvs`'s `explore_fraction`).
    #[serde(default)]
    pub cost_budget: Option<f64>,
}

/// Observations encoded for the models: rows of the full encoded space, values in maximisation sign.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// Encoded dimension.
    pub d: usize,
    /// Successful observations' points, `n × d` row-major.
    pub x: Vec<f64>,
    /// Their values (maximised; the first objective's when there are several).
    pub y: Vec<f64>,
    /// Studies with several objectives or outcome constraints: each successful observation's metrics in the
    /// engine's form (objectives maximised, then the constraints' slacks, ≥ 0 feasible; [`crate::objective::Outcomes`]),
    /// row-aligned with `y`; empty otherwise.
    pub metrics: Vec<Vec<f64>>,
    /// Known noise variance of each metric of each row (`values_stddev`), row-aligned with `metrics`.
    pub metric_noise: Vec<Vec<Option<f64>>>,
    /// Known noise variance of each value (raw units), if reported.
    pub noise_var: Vec<Option<f64>>,
    /// Observed cost of each successful observation.
    pub cost: Vec<Option<f64>>,
    /// Control-set index, noise-level index and encoded query (indirect studies) of each successful observation.
    pub extras: Vec<PointExtras<usize, Vec<f64>>>,
    /// Points of failed runs, `× d` row-major (kept away from, never modelled).
    pub failed_x: Vec<f64>,
    /// Costs of every run in order, failed ones included (budget accounting).
    pub all_costs: Vec<Option<f64>>,
    /// Encoded point of the most recent run, failed or not (empty before the first): the previous point of a
    /// movement cost (seed 003).
    pub last_x: Vec<f64>,
    /// Encoded queries of pending suggestions (indirect studies).
    pub pending_query: Vec<Vec<f64>>,
    /// Example pairs of an indirect study, encoded: (target point, query).
    pub pairs: Vec<(Vec<f64>, Vec<f64>)>,
}

impl Dataset {
    /// Number of successful observations.
    pub fn n(&self) -> usize {
        self.y.len()
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// Whether any observation reports its noise (`value_stddev`).
    pub fn declares_noise(&self) -> bool {
        self.noise_var.iter().any(Option::is_some)
    }

    /// Training data for a GP over the full encoded space (known noise included when any is reported).
    pub fn gp_data(&self) -> crate::gp::Data {
        let noise = self.declares_noise().then(|| self.noise_var.iter().map(|v| v.unwrap_or(0.0)).collect());
        crate::gp::Data { d: self.d, x: self.x.clone(), y: self.y.clone(), noise_var: noise }
    }

    /// Whether row `i` satisfies every outcome constraint as observed (true without constraints); `n_objectives`
    /// metrics come first in a row of `metrics`.
    pub fn observed_feasible(&self, i: usize, n_objectives: usize) -> bool {
        self.metrics.get(i).is_none_or(|m| m[n_objectives..].iter().all(|&s| s >= 0.0))
    }

    /// The dataset of metric `k` (its engine values and known noise) at the same points ([`Dataset::metrics`]).
    pub fn metric(&self, k: usize) -> Dataset {
        let y = self.metrics.iter().map(|m| m[k]).collect();
        let noise = self.metric_noise.iter().map(|m| m[k]).collect();
        self.with_values(y, noise)
    }

    /// This dataset with `y` (and its known noise) replaced: a model of another quantity at the same points.
    pub fn with_values(&self, y: Vec<f64>, noise_var: Vec<Option<f64>>) -> Dataset {
        Dataset { y, noise_var, ..self.clone() }
    }

    /// Index of the largest value.
    pub fn best_index(&self) -> Option<usize> {
        (0..self.n()).max_by(|&a, &b| self.y[a].total_cmp(&self.y[b]))
    }
}
