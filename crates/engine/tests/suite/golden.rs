//! Behaviour lock (issue 21): for every algorithm name, a small study with its blocks and a fixed seed runs a
//! deterministic ask–tell loop (the observed values, costs, contexts and random variables are functions of the
//! suggestions and the round), with a pending point and a failed run on the way; every suggestion (assignments
//! and extras), the recommendation, predictions at fixed points and the policy's status are recorded in
//! `tests/fixtures/golden.json` and must come out bitwise the same.
//!
//! This is a regression lock, not a reference: the fixture is the engine's own output at the commit that recorded
//! it. Refactors leave it unchanged; a change that alters behaviour on purpose re-records it
//! (`GOLDEN_RECORD=1 cargo test --release -p engine --test suite golden`) and says why in its commit.
//! Timings (`*_ms` diagnostics) are left out: they are the only nondeterministic output.

use engine::data::{History, ObservationRecord, PendingRecord, PointExtras};
use engine::policy::{Family, REGISTRY};
use engine::space::Assignments;
use engine::{PolicyState, Study, StudySpec, SuggestRequest};
use rand::{SeedableRng, rngs::StdRng};
use serde_json::{Map, Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden.json");

/// The family of an algorithm, from the registry.
fn family(algorithm: &str) -> Family {
    REGISTRY.iter().find(|a| a.name == algorithm).map_or(Family::Plain, |a| a.family)
}

/// Every case: each algorithm in its family's study, plus `auto` in each family and the plain family with a
/// candidate set and a cost model.
fn cases() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> =
        REGISTRY.iter().map(|a| (a.name.to_string(), spec(a.name, family(a.name)))).collect();
    for (label, fam) in [
        ("auto/plain", Family::Plain),
        ("auto/contexts", Family::Contexts),
        ("auto/kernel", Family::KernelCandidates),
        ("auto/control_sets", Family::ControlSets),
        ("auto/indirect", Family::Indirect),
        ("auto/outcomes", Family::Outcomes),
    ] {
        out.push((label.to_string(), spec("auto", fam)));
    }
    let mut grid = spec("gp-ei", Family::Plain);
    grid["parameters"] = json!([{"name": "x", "type": "float", "low": 0, "high": 1},
                                {"name": "k", "type": "int", "low": 0, "high": 4}]);
    grid["candidates"] = json!({"grid": {"x": {"count": 21}, "k": {"count": 5}}});
    out.push(("gp-ei/candidates".into(), grid));
    let mut cost = spec("sobol", Family::Plain);
    cost["cost_model"] = json!({"intercept": 4, "weights": {"x": 0.5}, "move_weights": {"k": 0.25}});
    out.push(("sobol/cost_model".into(), cost));
    out
}

fn spec(algorithm: &str, fam: Family) -> Value {
    let options = |o: Value| if algorithm == "auto" { json!({}) } else { o };
    match fam {
        Family::Plain => json!({
            "parameters": [
                {"name": "x", "type": "float", "low": -5, "high": 10},
                {"name": "ppm", "type": "float", "low": 1e-3, "high": 1e2, "scale": "log"},
                {"name": "k", "type": "int", "low": 0, "high": 10},
                {"name": "solvent", "type": "categorical", "choices": ["water", "ethanol", "dmso"]}
            ],
            "objective": {"name": "y", "goal": "minimize"},
            "algorithm": {"name": algorithm, "options": if matches!(algorithm, "random" | "sobol" | "auto") {
                json!({}) } else { json!({"initial_design": 4, "raw_samples": 256, "restarts": 4}) }},
            "seed": 17
        }),
        Family::Outcomes => json!({
            "parameters": [
                {"name": "a", "type": "float", "low": 0, "high": 1},
                {"name": "b", "type": "float", "low": 0, "high": 2},
                {"name": "t", "type": "float", "low": -5, "high": 10}
            ],
            "objectives": if algorithm == "gp-cei" { Value::Null } else {
                json!([{"name": "f1"}, {"name": "f2", "goal": "minimize", "threshold": 3.0}]) },
            "objective": if algorithm == "gp-cei" { json!({"name": "f1"}) } else { json!({"name": "value"}) },
            "constraints": [{"name": "load", "op": "<=", "bound": 0.7}],
            "parameter_constraints": [{"terms": {"a": 1, "b": 0.5}, "op": "<=", "bound": 1.2}],
            "algorithm": {"name": algorithm, "options": options(json!({"initial_design": 4, "raw_samples": 256, "restarts": 4}))},
            "seed": 13
        }),
        Family::Contexts => json!({
            "parameters": [
                {"name": "x", "type": "float", "low": 0, "high": 10},
                {"name": "demand", "type": "float", "low": 0, "high": 10, "role": "context"}
            ],
            "objective": {"name": "profit", "goal": "maximize"},
            "algorithm": {"name": algorithm, "options": options(json!(
                {"context_samples": 64, "box_samples": 64, "raw_samples": 64, "initial_design": 4}))},
            "seed": 3
        }),
        Family::Measurement => json!({
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
            "candidates": {"grid": {"x": {"count": 31}}},
            "noise_levels": [
                {"name": "precise", "noise_variance": 1e-6, "cost": 15},
                {"name": "medium", "noise_variance": 1e-3, "cost": 10},
                {"name": "rough", "noise_variance": 0.05, "cost": 2}
            ],
            "level_set": {"threshold": 0.5},
            "algorithm": {"name": algorithm, "options": if algorithm == "truvar" {
                json!({"initial_design": 3}) } else { json!({"noise_level": "medium", "initial_design": 3}) }},
            "seed": 5
        }),
        Family::KernelCandidates => json!({
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
            "algorithm": {"name": algorithm, "options": {}},
            "kernel": {"candidates": [{"lengthscale": 0.1}, {"lengthscale": 0.3}, {"lengthscale": 1.0}],
                       "confidence": {"rkhs_norm_bound": 1.0, "noise_bound": 0.01, "delta": 0.1}},
            "seed": 11
        }),
        Family::ControlSets => json!({
            "parameters": [
                {"name": "a", "type": "float", "low": 0, "high": 1,
                 "distribution": {"type": "truncated_normal", "mean": 0.5, "variance": 0.02}},
                {"name": "b", "type": "float", "low": 0, "high": 1, "distribution": {"type": "uniform"}}
            ],
            "control_sets": [
                {"name": "cheap", "parameters": ["a"], "cost": 0.05},
                {"name": "useless", "parameters": ["b"], "cost": 0.05},
                {"name": "full", "parameters": ["a", "b"], "cost": 1.0}
            ],
            "algorithm": {"name": algorithm, "options": if algorithm == "bocvs" {
                json!({"tau": 2, "mc_samples": 32, "raw_samples": 32}) } else { json!({}) }},
            "seed": 5
        }),
        Family::Indirect => json!({
            "parameters": [
                {"name": "x1", "type": "float", "low": -5.0, "high": 10.0},
                {"name": "x2", "type": "float", "low": 0.0, "high": 15.0}
            ],
            "objective": {"goal": "minimize"},
            "algorithm": {"name": algorithm},
            "indirect": {
                "query_parameters": [{"name": "a1", "type": "float", "low": 0.0, "high": 1.0},
                                     {"name": "a2", "type": "float", "low": 0.0, "high": 1.0}],
                "conditional": [
                    {"target": "x1", "query": "a1", "form": "affine", "scale": 15.0, "offset": -5.0, "noise_std": 0.7},
                    {"target": "x2", "query": "a2", "form": "cosine", "scale": 15.0, "noise_std": 0.7}
                ],
                "samples": 6,
                "tree": if algorithm == "cmets" || algorithm == "auto" {
                    json!({"height": 2, "cost": [0.5, 1.0, 2.0], "noise_std": [1.0, 0.5, 0.25]}) } else { Value::Null }
            },
            "seed": 5
        }),
    }
}

/// A smooth, deterministic objective of the encoded (unit-cube) point.
fn objective(u: &[f64]) -> f64 {
    u.iter().enumerate().map(|(j, v)| (3.0 * v + j as f64).sin() + 0.3 * (v - 0.4).powi(2)).sum()
}

/// Complete assignments of the study at a unit-cube point (the study's own space decodes it).
fn at(study: &Study, u: f64) -> Assignments {
    let space = &study.problem().space;
    let mut x: Vec<f64> = (0..space.dim()).map(|j| (u + 0.37 * j as f64) % 1.0).collect();
    space.snap(&mut x);
    space.decode(&x)
}

/// JSON of `v` without the timing diagnostics.
fn without_timings(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|k, _| !k.ends_with("_ms"));
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// The recorded behaviour of one case.
fn record(label: &str, spec: &Value) -> Value {
    let parsed: StudySpec = serde_json::from_value(spec.clone()).unwrap_or_else(|e| panic!("{label}: {e}"));
    let study = Study::new(parsed).unwrap_or_else(|e| panic!("{label}: {e:?}"));
    let fam = family(study.algorithm());
    let space = study.problem().space.clone();
    let mut rng = StdRng::seed_from_u64(7);
    let mut history = History { cost_budget: Some(100.0), ..Default::default() };
    let mut state = PolicyState::default();
    let mut rounds = Vec::new();
    let (n_rounds, count) = match fam {
        Family::Plain | Family::Outcomes => (6, 2),
        _ => (7, 1),
    };
    for round in 0..n_rounds {
        let context = (fam == Family::Contexts && round == n_rounds - 1)
            .then(|| json!({"demand": 6.5}).as_object().cloned().expect("an object"));
        let request = SuggestRequest { count, context: context.clone() };
        let out = study.suggest(&history, &state, &request).unwrap_or_else(|e| panic!("{label} round {round}: {e}"));
        state = out.state;
        rounds.push(without_timings(serde_json::to_value(&out.suggestions).expect("suggestions serialise")));
        for (k, s) in out.suggestions.iter().enumerate() {
            // Round 2's second point stays open; round 3's first fails.
            if fam == Family::Plain && round == 2 && k == 1 {
                history.pending.push(PendingRecord { assignments: s.assignments.clone(), ..Default::default() });
                continue;
            }
            let mut assignments = s.assignments.clone();
            if fam == Family::Contexts && !assignments.contains_key("demand") {
                assignments.insert("demand".into(), json!(2.0 + (round as f64 * 1.7) % 5.0));
            }
            if let (Some(cs), Some(name)) = (&study.problem().control_sets, &s.extras.control_set) {
                assignments = cs.realise(&space, cs.index_of(name).expect("a known set"), &assignments, &mut rng);
            }
            let value = match (&s.extras.query, fam) {
                (Some(q), Family::Indirect) => {
                    let (a1, a2) = (q["a1"].as_f64().expect("a1"), q["a2"].as_f64().expect("a2"));
                    objective(&[a1, a2]) * 10.0
                }
                _ => objective(&space.encode(&assignments, "a").expect("own assignments encode")),
            };
            let failed = fam == Family::Plain && round == 3 && k == 0;
            // Outcome studies: a load of the point, and a second objective when there are several.
            let mut values = std::collections::BTreeMap::new();
            let mut value = Some(value);
            if fam == Family::Outcomes {
                let u = space.encode(&assignments, "a").expect("own assignments encode");
                values.insert("load".to_string(), u.iter().sum::<f64>() / u.len() as f64);
                if study.problem().outcomes.objectives.len() > 1 {
                    let reversed: Vec<f64> = u.iter().rev().copied().collect();
                    values.insert("f1".to_string(), value.take().expect("a value"));
                    values.insert("f2".to_string(), objective(&reversed));
                }
            }
            history.observations.push(ObservationRecord {
                assignments: if fam == Family::Indirect { Map::new() } else { assignments },
                value: value.filter(|_| !failed),
                values,
                failed,
                cost: s.extras.control_set.as_ref().map(|_| 0.05 + 0.01 * round as f64),
                extras: PointExtras { expected_cost: None, ..s.extras.clone() },
                ..Default::default()
            });
        }
    }
    let recommended = study.recommend(&history, &state).unwrap_or_else(|e| panic!("{label}: recommend: {e}"));
    let points: Vec<Assignments> = [0.15, 0.5, 0.85].iter().map(|&u| at(&study, u)).collect();
    let predicted = study.predict(&history, &state, &points).unwrap_or_else(|e| panic!("{label}: predict: {e}"));
    let mut out = json!({
        "algorithm": study.algorithm(),
        "suggestions": rounds,
        "recommended": serde_json::to_value(recommended).expect("serialises"),
        "predicted": serde_json::to_value(predicted).expect("serialises"),
        "status": study.describe(&state),
    });
    if fam == Family::Outcomes {
        let pareto = study.pareto(&history, &state).unwrap_or_else(|e| panic!("{label}: pareto: {e}"));
        let outcomes = study.predict_outcomes(&history, &state, &points).unwrap_or_else(|e| panic!("{label}: {e}"));
        out["pareto"] = serde_json::to_value(pareto).expect("serialises");
        out["predicted_outcomes"] = serde_json::to_value(outcomes).expect("serialises");
    }
    without_timings(out)
}

/// The first path where `got` and `want` differ.
fn first_difference(got: &Value, want: &Value, path: String) -> Option<String> {
    match (got, want) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|k| match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => first_difference(x, y, format!("{path}.{k}")),
                (x, y) => Some(format!("{path}.{k}: {x:?} vs recorded {y:?}")),
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| first_difference(x, y, format!("{path}[{i}]")))
        }
        _ => (got != want).then(|| format!("{path}: {got} vs recorded {want}")),
    }
}

#[test]
fn golden_behaviour_is_unchanged() {
    let got: Map<String, Value> =
        cases().into_iter().map(|(label, spec)| (label.clone(), record(&label, &spec))).collect();
    if std::env::var_os("GOLDEN_RECORD").is_some() {
        let text = serde_json::to_string_pretty(&got).expect("serialises");
        std::fs::write(FIXTURE, text + "\n").expect("fixture written");
        return;
    }
    let text = std::fs::read_to_string(FIXTURE).expect("tests/fixtures/golden.json (record with GOLDEN_RECORD=1)");
    let want: Map<String, Value> = serde_json::from_str(&text).expect("fixture parses");
    let names: Vec<&String> = got.keys().collect();
    assert_eq!(names, want.keys().collect::<Vec<_>>(), "the cases changed: re-record and say why");
    let diffs: Vec<String> = got.iter().filter_map(|(k, v)| first_difference(v, &want[k], k.clone())).collect();
    assert!(diffs.is_empty(), "behaviour changed in {} of {} cases:\n{}", diffs.len(), got.len(), diffs.join("\n"));
}
