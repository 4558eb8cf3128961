//! The facade the server and the benchmarks call: a validated study spec ([`Study`]), observation validation,
//! suggest / recommend / predict on a [`History`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::blocks::indirect::IndirectProblem;
use crate::blocks::measurement;
use crate::data::{Dataset, History, ObservationRecord, PointExtras};
use crate::error::{Error, FieldError, Result};
use crate::policy::{self, Candidate, Context, Diagnostics, Policy, PolicyState};
pub use crate::problem::{AlgorithmSpec, Goal, Objective, Problem, StudySpec};
use crate::sampling::derive_seed;
use crate::space::Assignments;

/// Posterior of the objective at a point, in the client's units and sign.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Prediction {
    /// Posterior mean.
    pub mean: f64,
    /// Posterior standard deviation (of the latent objective, without observation noise).
    pub stddev: f64,
}

/// What a suggest request asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SuggestRequest {
    /// Number of suggestions.
    pub count: usize,
    /// Context values known before the run (optional; for studies with context parameters).
    pub context: Option<Assignments>,
}

/// One suggestion, decoded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    /// Values of the parameters the client sets.
    pub assignments: Assignments,
    /// Control set to play, noise level to use, indirect query, the cost the algorithm expects (flattened: the
    /// same JSON keys as before it was one struct).
    #[serde(flatten)]
    pub extras: PointExtras,
    /// The context the request gave (studies with context parameters), kept with the suggestion so that, while it
    /// is open, its fantasy sits at that context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Assignments>,
    /// Posterior at the suggestion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Prediction>,
    /// Algorithm that produced it.
    pub algorithm: String,
    /// How it was produced.
    pub diagnostics: Diagnostics,
}

/// Result of [`Study::suggest`]: the suggestions and the policy state to store with them.
#[derive(Debug, Clone)]
pub struct SuggestOutcome {
    /// New suggestions.
    pub suggestions: Vec<Suggestion>,
    /// Updated policy state.
    pub state: PolicyState,
}

/// The model's recommended point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommended {
    /// Values of the recommended decision.
    pub assignments: Assignments,
    /// Posterior there.
    pub predicted: Prediction,
    /// Algorithm-specific extras (e.g. a level-set classification).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One point of the observed Pareto front of a study with several objectives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParetoPoint {
    /// Index of the observation in the history's observations.
    pub observation: usize,
    /// Its assignments.
    pub assignments: Assignments,
    /// Its observed objectives and constraints.
    pub values: BTreeMap<String, f64>,
    /// The model's estimate of each objective there (absent when the model cannot be fitted).
    pub predicted: BTreeMap<String, Prediction>,
}

/// The observed Pareto front: the feasible observations no other feasible observation dominates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParetoFront {
    /// The front's points, in the order they were observed.
    pub points: Vec<ParetoPoint>,
    /// The hypervolume the front dominates above the reference point (in the objectives' units, multiplied).
    pub hypervolume: f64,
    /// The reference point: each objective's `threshold`, else inferred from the data (`docs/algorithms.md`).
    pub reference_point: BTreeMap<String, f64>,
}

/// A validated study with its policy.
#[derive(Debug)]
pub struct Study {
    spec: StudySpec,
    problem: Problem,
    policy: Box<dyn Policy>,
}

impl Study {
    /// Validates `spec` and builds its policy; errors name the field.
    pub fn new(spec: StudySpec) -> Result<Self, Vec<FieldError>> {
        let problem = Problem::new(&spec)?;
        let policy = policy::build(&spec.algorithm, &problem)?;
        Ok(Self { spec, problem, policy })
    }

    /// The spec as given.
    pub fn spec(&self) -> &StudySpec {
        &self.spec
    }

    /// The validated problem.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Name of the algorithm in use (`auto` resolved).
    pub fn algorithm(&self) -> &'static str {
        self.policy.name()
    }

    fn seed(&self) -> u64 {
        self.spec.seed.unwrap_or(0)
    }

    /// Checks an observation before it is stored; errors name the field (`value`, `assignments.x`, …).
    pub fn validate_observation(&self, obs: &ObservationRecord) -> Result<(), Vec<FieldError>> {
        let mut errors = self.validate_values(obs);
        let outcomes = &self.problem.outcomes;
        match (obs.failed, obs.value) {
            (false, None) if !outcomes.listed && !obs.values.contains_key(&outcomes.objectives[0].name) => {
                errors.push(FieldError::new("value", "required unless the observation is marked failed"))
            }
            (_, Some(v)) if !v.is_finite() => errors.push(FieldError::new("value", "must be a finite number")),
            _ => {}
        }
        if obs.value_stddev.is_some_and(|s| !(s.is_finite() && s >= 0.0)) {
            errors.push(FieldError::new("value_stddev", "must be a finite number ≥ 0"));
        }
        if obs.cost.is_some_and(|c| !(c.is_finite() && c >= 0.0)) {
            errors.push(FieldError::new("cost", "must be a finite number ≥ 0"));
        }
        if let Some(name) = &obs.extras.control_set
            && self.problem.control_set_index(name).is_none()
        {
            errors.push(FieldError::new("control_set", format!("unknown control set '{name}'")));
        }
        match &self.problem.indirect {
            // The target point is never observed: an indirect observation carries its query.
            Some(ip) => match &obs.extras.query {
                None => {
                    errors.push(FieldError::new("query", "required: the indirect query whose aggregate was observed"))
                }
                Some(q) => {
                    if let Err(mut e) = ip.query_space.encode(q, "query") {
                        errors.append(&mut e);
                    }
                }
            },
            None => {
                if let Err(mut e) = self.problem.space.encode(&obs.assignments, "assignments") {
                    errors.append(&mut e);
                }
            }
        }
        if let Some(level) = &obs.extras.noise_level
            && self.problem.measurement.level_index(level).is_none()
        {
            errors.push(FieldError::new("noise_level", format!("unknown noise level '{level}'")));
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }

    /// Checks `values` and `values_stddev` against the study's objectives and outcome constraints.
    fn validate_values(&self, obs: &ObservationRecord) -> Vec<FieldError> {
        let outcomes = &self.problem.outcomes;
        let mut errors = Vec::new();
        let known = |k: &str| outcomes.names().any(|n| n == k);
        for (k, v) in &obs.values {
            if !known(k) {
                let names: Vec<&str> = outcomes.names().collect();
                errors.push(FieldError::new(
                    format!("values.{k}"),
                    format!("not an objective or constraint of this study (it has {})", names.join(", ")),
                ));
            } else if !v.is_finite() {
                errors.push(FieldError::new(format!("values.{k}"), "must be a finite number"));
            }
        }
        for (k, s) in &obs.values_stddev {
            if !known(k) {
                errors.push(FieldError::new(
                    format!("values_stddev.{k}"),
                    "not an objective or constraint of this study",
                ));
            } else if !(s.is_finite() && *s >= 0.0) {
                errors.push(FieldError::new(format!("values_stddev.{k}"), "must be a finite number ≥ 0"));
            }
        }
        if outcomes.listed && obs.value.is_some() {
            errors.push(FieldError::new("value", "this study has several objectives: report each in 'values'"));
        }
        if outcomes.listed && obs.value_stddev.is_some() {
            errors.push(FieldError::new("value_stddev", "this study has several objectives: use 'values_stddev'"));
        }
        let single = &outcomes.objectives[0].name;
        if !outcomes.listed && obs.value.is_some() && obs.values.contains_key(single) {
            errors.push(FieldError::new(format!("values.{single}"), "the objective is given in 'value' already"));
        }
        if !obs.failed {
            let missing = outcomes.names().filter(|n| !obs.values.contains_key(*n) && (outcomes.listed || n != single));
            for name in missing {
                errors.push(FieldError::new(
                    format!("values.{name}"),
                    "required unless the observation is marked failed (every objective and constraint)",
                ));
            }
        }
        errors
    }

    /// Encodes the history (observations that no longer validate are skipped, never fatal).
    pub fn dataset(&self, history: &History) -> Dataset {
        let space = &self.problem.space;
        let sign = self.problem.goal.sign();
        let mut ds = Dataset { d: space.dim(), ..Default::default() };
        let m = &self.problem.measurement;
        if let Some(ip) = &self.problem.indirect {
            self.indirect_dataset(ip, history, &mut ds);
            return ds;
        }
        for obs in &history.observations {
            ds.all_costs.push(obs.cost);
            let Ok(x) = space.encode(&obs.assignments, "assignments") else { continue };
            ds.last_x.clone_from(&x);
            let level = obs.extras.noise_level.as_deref().and_then(|l| m.level_index(l));
            if !self.problem.outcomes.is_single() {
                match self.metrics_of(obs) {
                    Some((metrics, noise)) => {
                        ds.x.extend_from_slice(&x);
                        ds.y.push(metrics[0]);
                        ds.noise_var.push(noise[0]);
                        ds.cost.push(obs.cost);
                        ds.extras.push(PointExtras::default());
                        ds.metrics.push(metrics);
                        ds.metric_noise.push(noise);
                    }
                    None => ds.failed_x.extend_from_slice(&x),
                }
                continue;
            }
            match obs
                .value
                .or_else(|| obs.values.get(&self.spec.objective.name).copied())
                .filter(|v| v.is_finite() && !obs.failed)
            {
                Some(v) => {
                    ds.x.extend_from_slice(&x);
                    ds.y.push(sign * v);
                    ds.noise_var.push(
                        obs.value_stddev
                            .or_else(|| obs.values_stddev.get(&self.spec.objective.name).copied())
                            .map(|s| s * s)
                            .or(m.level_variance(level)),
                    );
                    ds.cost.push(obs.cost);
                    ds.extras.push(PointExtras {
                        control_set: obs.extras.control_set.as_deref().and_then(|n| self.problem.control_set_index(n)),
                        noise_level: level,
                        ..PointExtras::default()
                    });
                }
                None => ds.failed_x.extend_from_slice(&x),
            }
        }
        ds
    }

    /// An observation's metrics in the engine's form (objectives maximised, constraints as slacks) and their known
    /// noise variances, or `None` for a failed run or one missing a metric.
    fn metrics_of(&self, obs: &ObservationRecord) -> Option<(Vec<f64>, Vec<Option<f64>>)> {
        if obs.failed {
            return None;
        }
        let outcomes = &self.problem.outcomes;
        let mut metrics = Vec::with_capacity(outcomes.n_metrics());
        let mut noise = Vec::with_capacity(outcomes.n_metrics());
        for (k, name) in outcomes.names().enumerate() {
            let in_value = k == 0 && !outcomes.listed;
            let v = if in_value {
                obs.value.or_else(|| obs.values.get(name).copied())
            } else {
                obs.values.get(name).copied()
            };
            let v = v.filter(|v| v.is_finite())?;
            let s = if in_value {
                obs.value_stddev.or_else(|| obs.values_stddev.get(name).copied())
            } else {
                obs.values_stddev.get(name).copied()
            };
            metrics.push(outcomes.engine_value(k, v));
            noise.push(s.map(|s| s * s));
        }
        Some((metrics, noise))
    }

    /// The dataset of an indirect study: rows at the target centre (the target point is never observed), the
    /// encoded queries, the pending queries and the uploaded pairs.
    fn indirect_dataset(&self, ip: &IndirectProblem, history: &History, ds: &mut Dataset) {
        let space = &self.problem.space;
        let sign = self.problem.goal.sign();
        let centre = space.centre();
        for obs in &history.observations {
            ds.all_costs.push(obs.cost);
            let Some(a) = obs.extras.query.as_ref().and_then(|q| ip.query_space.encode(q, "query").ok()) else {
                continue;
            };
            match obs.value.filter(|v| v.is_finite() && !obs.failed) {
                Some(v) => {
                    ds.x.extend_from_slice(&centre);
                    ds.y.push(sign * v);
                    ds.noise_var.push(obs.value_stddev.map(|s| s * s));
                    ds.cost.push(obs.cost);
                    ds.extras.push(PointExtras { query: Some(a), ..PointExtras::default() });
                }
                None => ds.failed_x.extend_from_slice(&centre),
            }
        }
        ds.pending_query = history
            .pending
            .iter()
            .filter_map(|p| p.extras.query.as_ref().and_then(|q| ip.query_space.encode(q, "query").ok()))
            .collect();
        ds.pairs = history
            .pairs
            .iter()
            .filter_map(|p| crate::blocks::indirect::spec::encode_pair(p, space, &ip.query_space, "pairs").ok())
            .collect();
    }

    /// Checks pairs before they are stored (indirect studies); errors name `pairs[i].target.x` / `pairs[i].query.a`.
    pub fn validate_pairs(&self, pairs: &[crate::data::PairRecord]) -> Result<(), Vec<FieldError>> {
        let Some(ip) = &self.problem.indirect else {
            return Err(vec![FieldError::new("pairs", "this study has no 'indirect' block")]);
        };
        let mut errors = Vec::new();
        if pairs.is_empty() {
            errors.push(FieldError::new("pairs", "at least one pair is required"));
        }
        for (i, p) in pairs.iter().enumerate() {
            if let Err(mut e) = crate::blocks::indirect::spec::encode_pair(
                p,
                &self.problem.space,
                &ip.query_space,
                &format!("pairs[{i}]"),
            ) {
                errors.append(&mut e);
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }

    /// Encoded pending points (partial assignments; missing coordinates at the centre).
    /// Encoded open suggestions. Their context parameters (unknown until the run) sit at the context they were
    /// suggested for when the request gave one, else at the mean observed context (the centre before any).
    fn pending(&self, history: &History, data: &Dataset) -> Vec<f64> {
        let space = &self.problem.space;
        let cdims = space.dims_of_params(&self.problem.contexts);
        let n = data.n();
        let mean_context: Vec<f64> = cdims
            .iter()
            .map(|&j| if n == 0 { 0.5 } else { (0..n).map(|i| data.row(i)[j]).sum::<f64>() / n as f64 })
            .collect();
        history
            .pending
            .iter()
            .filter_map(|p| {
                let mut values = p.assignments.clone();
                if let Some(c) = &p.context {
                    values.extend(c.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                let which: Vec<usize> = values.keys().filter_map(|k| space.index_of(k)).collect();
                let mut x = space.encode_some(&values, &which, "pending").ok()?;
                let known: Vec<usize> = space.dims_of_params(&which);
                for (q, &j) in cdims.iter().enumerate() {
                    if !known.contains(&j) {
                        x[j] = mean_context[q];
                    }
                }
                Some(x)
            })
            .flatten()
            .collect()
    }

    fn with_context<T>(&self, history: &History, known: Option<&[f64]>, f: impl FnOnce(&Context<'_>) -> T) -> T {
        let data = self.dataset(history);
        let pending = self.pending(history, &data);
        let seed =
            derive_seed(derive_seed(self.seed(), history.observations.len() as u64), history.pending.len() as u64);
        let ctx = Context {
            problem: &self.problem,
            data: &data,
            pending: &pending,
            seed,
            study_seed: self.seed(),
            known_context: known,
            cost_budget: history.cost_budget,
        };
        f(&ctx)
    }

    /// New suggestions for `history`, and the policy state to store.
    pub fn suggest(&self, history: &History, state: &PolicyState, request: &SuggestRequest) -> Result<SuggestOutcome> {
        if request.count == 0 {
            return Err(Error::invalid("count", "must be at least 1"));
        }
        let known = match &request.context {
            Some(c) if !c.is_empty() => Some(self.encode_known_context(c)?),
            _ => None,
        };
        let mut state = state.clone();
        // The previous point of a movement cost: the last open suggestion, else the last run; then each batch pick.
        let (candidates, mut previous) = self.with_context(history, known.as_deref(), |ctx| {
            let previous = ctx
                .pending
                .rchunks_exact(self.problem.space.dim().max(1))
                .next()
                .map(<[f64]>::to_vec)
                .or_else(|| Some(ctx.data.last_x.clone()).filter(|x| !x.is_empty()));
            Ok::<_, Error>((self.policy.suggest(ctx, &mut state, request.count)?, previous))
        })?;
        let mut suggestions = Vec::with_capacity(candidates.len());
        let context = request.context.clone().filter(|c| !c.is_empty());
        for c in candidates {
            let x = c.x.clone();
            let mut s = self.decode_candidate(c, previous.as_deref())?;
            s.context.clone_from(&context);
            suggestions.push(s);
            previous = Some(x);
        }
        Ok(SuggestOutcome { suggestions, state })
    }

    fn encode_known_context(&self, c: &Assignments) -> Result<Vec<f64>> {
        let space = &self.problem.space;
        let mut which = Vec::new();
        for k in c.keys() {
            match space.index_of(k) {
                Some(i) if self.problem.contexts.contains(&i) => which.push(i),
                _ => return Err(Error::invalid(format!("context.{k}"), "not a context parameter of this study")),
            }
        }
        // A known context fixes every context parameter (the policy optimises the decision for those values).
        let missing: Vec<FieldError> = self
            .problem
            .contexts
            .iter()
            .filter(|i| !which.contains(i))
            .map(|&i| FieldError::new(format!("context.{}", space.params()[i].name), "missing value"))
            .collect();
        if !missing.is_empty() {
            return Err(Error::Invalid(missing));
        }
        space.encode_some(c, &which, "context").map_err(Error::Invalid)
    }

    fn decode_candidate(&self, c: Candidate, previous: Option<&[f64]>) -> Result<Suggestion> {
        if c.x.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical("a policy proposed a non-finite point".into()));
        }
        let space = &self.problem.space;
        let sign = self.problem.goal.sign();
        let assignments = policy::assignments_of(space, &self.problem.decision, &c);
        let m = &self.problem.measurement;
        // Policies that do not choose a noise level play the first one.
        let level = c.extras.noise_level.or((!m.noise_levels.is_empty()).then_some(0));
        Ok(Suggestion {
            assignments,
            extras: PointExtras {
                control_set: c.extras.control_set.and_then(|i| self.problem.control_set_name(i)),
                noise_level: level.and_then(|i| m.noise_levels.get(i)).map(|l| l.name.clone()),
                query: match (&self.problem.indirect, &c.extras.query) {
                    (Some(ip), Some(q)) => Some(ip.query_space.decode(q)),
                    _ => None,
                },
                expected_cost: c.extras.expected_cost.or_else(|| m.has_costs().then(|| m.cost(&c.x, level, previous))),
            },
            context: None,
            predicted: c
                .predicted
                .filter(|(m, s)| m.is_finite() && s.is_finite())
                .map(|(m, s)| Prediction { mean: sign * m, stddev: s }),
            algorithm: self.policy.name().to_string(),
            diagnostics: c.diagnostics,
        })
    }

    /// The model's recommended decision, or `None` before there is a model.
    pub fn recommend(&self, history: &History, state: &PolicyState) -> Result<Option<Recommended>> {
        let sign = self.problem.goal.sign();
        let rec = self.with_context(history, None, |ctx| {
            let mut rec = self.policy.recommend(ctx, state)?;
            if let (Some(r), Some(threshold)) = (rec.as_mut(), self.problem.measurement.level_set)
                && !r.extra.contains_key("level_set")
                && let Some(report) = self.level_set_report(ctx, state, threshold)?
            {
                r.extra.insert("level_set".into(), report);
            }
            Ok::<_, Error>(rec)
        })?;
        Ok(rec.map(|r| Recommended {
            assignments: self.problem.space.decode_some(&r.x, r.params.as_deref().unwrap_or(&self.problem.decision)),
            predicted: Prediction { mean: sign * r.predicted.0, stddev: r.predicted.1 },
            extra: r.extra,
        }))
    }

    /// Classification of the domain for policies without their own: confidence bounds with β^½ = 3 (GCHK's value,
    /// TRUVAR Sec. 4) on the policy's posterior.
    fn level_set_report(
        &self,
        ctx: &Context<'_>,
        state: &PolicyState,
        threshold: f64,
    ) -> Result<Option<serde_json::Value>> {
        let p = &self.problem;
        let points = p.measurement.domain(&p.space, &p.decision, measurement::DEFAULT_REPRESENTER_POINTS);
        let Some(post) = self.policy.predict(ctx, state, &points)? else { return Ok(None) };
        let h = p.goal.sign() * threshold;
        let beta_sqrt = 3.0;
        let classes: Vec<_> = post.iter().map(|&(m, s)| measurement::level_set::classify(m, s, h, beta_sqrt)).collect();
        let means: Vec<f64> = post.iter().map(|&(m, _)| m).collect();
        let report = measurement::level_set::Report {
            space: &p.space,
            decision: &p.decision,
            points: &points,
            classes: &classes,
            means: &means,
            threshold,
            goal: p.goal,
            beta_sqrt,
        };
        Ok(Some(report.to_json()))
    }

    /// Posterior at complete assignments (every parameter given); errors name `points[i].name`.
    pub fn predict(
        &self,
        history: &History,
        state: &PolicyState,
        points: &[Assignments],
    ) -> Result<Option<Vec<Prediction>>> {
        let space = &self.problem.space;
        let mut xs = Vec::with_capacity(points.len() * space.dim());
        let mut errors = Vec::new();
        for (i, p) in points.iter().enumerate() {
            match space.encode(p, &format!("points[{i}]")) {
                Ok(x) => xs.extend(x),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        let sign = self.problem.goal.sign();
        let out = self.with_context(history, None, |ctx| self.policy.predict(ctx, state, &xs))?;
        Ok(out.map(|v| v.into_iter().map(|(m, s)| Prediction { mean: sign * m, stddev: s }).collect()))
    }

    /// Whether an observation satisfies every outcome constraint as observed: `None` without constraints or for a
    /// failed run.
    pub fn observed_feasible(&self, obs: &ObservationRecord) -> Option<bool> {
        let outcomes = &self.problem.outcomes;
        if outcomes.constraints.is_empty() {
            return None;
        }
        let (metrics, _) = self.metrics_of(obs)?;
        Some(metrics[outcomes.objectives.len()..].iter().all(|&s| s >= 0.0))
    }

    /// The observed Pareto front of a study with several objectives (`None` for one objective, or before a feasible
    /// observation), its hypervolume and reference point, and the model's estimates at its points.
    pub fn pareto(&self, history: &History, state: &PolicyState) -> Result<Option<ParetoFront>> {
        let outcomes = &self.problem.outcomes;
        let k = outcomes.objectives.len();
        if k < 2 {
            return Ok(None);
        }
        let space = &self.problem.space;
        // (observation index, metrics, encoded point) of the feasible observations.
        let mut rows: Vec<(usize, Vec<f64>, Vec<f64>)> = Vec::new();
        for (i, obs) in history.observations.iter().enumerate() {
            if let (Some((m, _)), Ok(x)) = (self.metrics_of(obs), space.encode(&obs.assignments, "assignments"))
                && m[k..].iter().all(|&s| s >= 0.0)
            {
                rows.push((i, m, x));
            }
        }
        let objectives: Vec<Vec<f64>> = rows.iter().map(|(_, m, _)| m[..k].to_vec()).collect();
        let front = crate::pareto::non_dominated(&objectives);
        if front.is_empty() {
            return Ok(None);
        }
        let data = self.dataset(history);
        let Some(reference) = policy::outcomes::reference_point(&self.problem, &data) else { return Ok(None) };
        let front_objectives: Vec<Vec<f64>> = front.iter().map(|&j| objectives[j].clone()).collect();
        let hypervolume = crate::pareto::hypervolume(&front_objectives, &reference);
        let xs: Vec<f64> = front.iter().flat_map(|&j| rows[j].2.iter().copied()).collect();
        let predicted = self.with_context(history, None, |ctx| self.policy.predict_metrics(ctx, state, &xs));
        // The front stands on its own when the data defeat the model.
        let predicted = match predicted {
            Ok(p) => p,
            Err(Error::Numerical(_)) => None,
            Err(e) => return Err(e),
        };
        let points = front
            .iter()
            .enumerate()
            .map(|(q, &j)| {
                let obs = &history.observations[rows[j].0];
                let predicted = predicted
                    .as_ref()
                    .map(|p| {
                        outcomes
                            .objectives
                            .iter()
                            .zip(&p[q])
                            .map(|(o, &(m, s))| (o.name.clone(), Prediction { mean: o.goal.sign() * m, stddev: s }))
                    })
                    .into_iter()
                    .flatten()
                    .collect();
                ParetoPoint {
                    observation: rows[j].0,
                    assignments: space.decode_some(&rows[j].2, &self.problem.decision),
                    values: obs.values.clone(),
                    predicted,
                }
            })
            .collect();
        let reference_point =
            outcomes.objectives.iter().zip(&reference).map(|(o, r)| (o.name.clone(), o.goal.sign() * r)).collect();
        Ok(Some(ParetoFront { points, hypervolume, reference_point }))
    }

    /// The posterior of every objective and outcome constraint (in their own units) at complete assignments, for
    /// studies with several objectives or outcome constraints (`None` for the others, and before there is a model).
    pub fn predict_outcomes(
        &self,
        history: &History,
        state: &PolicyState,
        points: &[Assignments],
    ) -> Result<Option<Vec<BTreeMap<String, Prediction>>>> {
        let outcomes = &self.problem.outcomes;
        if outcomes.is_single() {
            return Ok(None);
        }
        let space = &self.problem.space;
        let mut xs = Vec::with_capacity(points.len() * space.dim());
        for (i, p) in points.iter().enumerate() {
            xs.extend(space.encode(p, &format!("points[{i}]")).map_err(Error::Invalid)?);
        }
        let out = self.with_context(history, None, |ctx| self.policy.predict_metrics(ctx, state, &xs))?;
        let k = outcomes.objectives.len();
        Ok(out.map(|rows| {
            rows.into_iter()
                .map(|row| {
                    outcomes
                        .names()
                        .enumerate()
                        .zip(row)
                        .map(|((j, name), (m, s))| {
                            let mean = match outcomes.objectives.get(j) {
                                Some(o) => o.goal.sign() * m,
                                None => {
                                    let c = &outcomes.constraints[j - k];
                                    match c.op {
                                        crate::objective::ConstraintOp::AtMost => c.bound - m,
                                        crate::objective::ConstraintOp::AtLeast => m + c.bound,
                                    }
                                }
                            };
                            (name.to_string(), Prediction { mean, stddev: s })
                        })
                        .collect()
                })
                .collect()
        }))
    }

    /// Policy-specific status for the study resource.
    pub fn describe(&self, state: &PolicyState) -> Option<serde_json::Value> {
        self.policy.describe(state)
    }

    /// Whether the algorithm's options need a cost budget (`budget.max_cost`, handed in as
    /// [`History::cost_budget`]); the server refuses to create such a study without one.
    pub fn needs_cost_budget(&self) -> bool {
        self.policy.needs_cost_budget()
    }
}
