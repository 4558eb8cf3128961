//! Several objectives, outcome constraints and parameter constraints through `engine::Study`: validation and
//! refusals named by field, `auto`'s choice, every suggestion inside the parameter constraints, constrained search
//! reaching the constrained optimum, the Pareto front and its hypervolume.

use std::collections::BTreeMap;

use engine::pareto::hypervolume;
use engine::{History, ObservationRecord, PolicyState, Study, StudySpec, SuggestRequest};
use serde_json::{Value, json};

fn study(spec: Value) -> Study {
    Study::new(serde_json::from_value::<StudySpec>(spec).expect("spec parses")).expect("spec validates")
}

fn refusal(spec: Value) -> Vec<String> {
    let spec: StudySpec = serde_json::from_value(spec).expect("spec parses");
    Study::new(spec).expect_err("refused").into_iter().map(|e| e.field).collect()
}

fn xy(a: &engine::Assignments) -> (f64, f64) {
    (a["x"].as_f64().expect("x"), a["y"].as_f64().expect("y"))
}

fn unit_xy() -> Value {
    json!([{"name": "x", "type": "float", "low": 0, "high": 1}, {"name": "y", "type": "float", "low": 0, "high": 1}])
}

/// Drives `study` for `n` evaluations in batches of `batch`, `f` giving each observation's `values` (and `value`).
fn drive(
    study: &Study,
    n: usize,
    batch: usize,
    f: impl Fn(&engine::Assignments) -> (Option<f64>, BTreeMap<String, f64>),
) -> (History, PolicyState) {
    let (mut history, mut state) = (History::default(), PolicyState::default());
    while history.observations.len() < n {
        let out = study.suggest(&history, &state, &SuggestRequest { count: batch, context: None }).expect("suggest");
        state = out.state;
        for s in out.suggestions {
            let (value, values) = f(&s.assignments);
            let obs = ObservationRecord { assignments: s.assignments, value, values, ..Default::default() };
            study.validate_observation(&obs).expect("a valid observation");
            history.observations.push(obs);
        }
    }
    (history, state)
}

#[test]
fn refusals_name_the_field() {
    let objectives = json!([{"name": "a"}, {"name": "b", "goal": "minimize"}]);
    // Blocks that several objectives do not combine with.
    let f = refusal(json!({"parameters": unit_xy(), "objectives": objectives, "level_set": {"threshold": 1.0}}));
    assert_eq!(f, ["level_set"]);
    let f = refusal(json!({"parameters": [{"name": "x", "type": "float", "low": 0, "high": 1},
        {"name": "c", "type": "float", "low": 0, "high": 1, "role": "context"}],
        "constraints": [{"name": "c1", "op": "<=", "bound": 1}]}));
    assert_eq!(f, ["parameters"]);
    let f = refusal(
        json!({"parameters": unit_xy(), "objectives": objectives, "candidates": {"points": [{"x": 0.1, "y": 0.2}]}}),
    );
    assert_eq!(f, ["candidates"]);
    let f = refusal(json!({"parameters": unit_xy(),
        "parameter_constraints": [{"terms": {"x": 1}, "op": "<=", "bound": 0.5}], "noise_levels": [{"name": "l", "noise_variance": 1, "cost": 1}]}));
    assert_eq!(f, ["noise_levels"]);
    // Every block that several objectives, outcome constraints or parameter constraints do not combine with.
    let blocks = [
        ("control_sets", json!([{"name": "all", "parameters": ["x", "y"], "cost": 1}])),
        (
            "indirect",
            json!({"query_parameters": [{"name": "a", "type": "float", "low": 0, "high": 1}],
            "conditional": [{"target": "x", "query": "a", "form": "affine", "scale": 1.0, "noise_std": 0.1},
                            {"target": "y", "query": "a", "form": "affine", "scale": 1.0, "noise_std": 0.1}]}),
        ),
        (
            "kernel",
            json!({"candidates": [{"lengthscale": 0.1}, {"lengthscale": 0.3}],
            "confidence": {"rkhs_norm_bound": 1.0, "noise_bound": 0.01, "delta": 0.1}}),
        ),
        ("candidates", json!({"points": [{"x": 0.1, "y": 0.2}]})),
        ("noise_levels", json!([{"name": "l", "noise_variance": 1, "cost": 1}])),
        ("cost_model", json!({"intercept": 1})),
        ("level_set", json!({"threshold": 1.0})),
    ];
    let with = [
        ("objectives", objectives.clone()),
        ("constraints", json!([{"name": "c", "op": "<=", "bound": 1}])),
        ("parameter_constraints", json!([{"terms": {"x": 1, "y": 1}, "op": "<=", "bound": 1}])),
    ];
    for (key, value) in &with {
        for (block, spec) in &blocks {
            let mut s = json!({"parameters": unit_xy()});
            s[key] = value.clone();
            s[block] = spec.clone();
            assert_eq!(refusal(s), [block.to_string()], "{key} with {block}");
        }
    }
    // Both forms of the objective; duplicate names; an empty list.
    let f = refusal(json!({"parameters": unit_xy(), "objective": {"name": "y1"}, "objectives": objectives}));
    assert_eq!(f, ["objectives"]);
    let f = refusal(
        json!({"parameters": unit_xy(), "objectives": objectives, "constraints": [{"name": "a", "op": ">=", "bound": 0}]}),
    );
    assert_eq!(f, ["constraints[0].name"]);
    assert_eq!(refusal(json!({"parameters": unit_xy(), "objectives": []})), ["objectives"]);
    // Algorithms of one objective.
    let f = refusal(json!({"parameters": unit_xy(), "objectives": objectives, "algorithm": {"name": "gp-ucb"}}));
    assert_eq!(f, ["algorithm.name"]);
    let f = refusal(json!({"parameters": unit_xy(), "objectives": objectives, "algorithm": {"name": "gp-cei"}}));
    assert_eq!(f, ["algorithm.name"]);
    let f = refusal(json!({"parameters": unit_xy(), "algorithm": {"name": "gp-parego"}}));
    assert_eq!(f, ["algorithm.name"]);
    // gp-ehvi takes exactly two objectives.
    let three = json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]);
    let f = refusal(json!({"parameters": unit_xy(), "objectives": three, "algorithm": {"name": "gp-ehvi"}}));
    assert_eq!(f, ["algorithm.name"]);
    let f = refusal(json!({"parameters": unit_xy(), "constraints": [{"name": "c", "op": "<=", "bound": 1}],
        "algorithm": {"name": "gp-ehvi"}}));
    assert_eq!(f, ["algorithm.name"]);
    // Parameter constraints: log scale, int, empty feasible set.
    let f = refusal(json!({"parameters": [{"name": "x", "type": "float", "low": 1, "high": 10, "scale": "log"}],
        "parameter_constraints": [{"terms": {"x": 1}, "op": "<=", "bound": 5}]}));
    assert_eq!(f, ["parameter_constraints[0].terms.x"]);
    let f = refusal(json!({"parameters": [{"name": "n", "type": "int", "low": 1, "high": 10}],
        "parameter_constraints": [{"terms": {"n": 1}, "op": "<=", "bound": 5}]}));
    assert_eq!(f, ["parameter_constraints[0].terms.n"]);
    let f = refusal(
        json!({"parameters": unit_xy(), "parameter_constraints": [{"terms": {"x": 1, "y": 1}, "op": ">=", "bound": 3}]}),
    );
    assert_eq!(f, ["parameter_constraints"]);
    // auto picks by the outcomes.
    let s = study(json!({"parameters": unit_xy(), "objectives": objectives}));
    assert_eq!(s.algorithm(), "gp-ehvi");
    let s = study(json!({"parameters": unit_xy(), "objectives": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}));
    assert_eq!(s.algorithm(), "gp-parego");
    let s = study(json!({"parameters": unit_xy(), "constraints": [{"name": "c", "op": "<=", "bound": 1}]}));
    assert_eq!(s.algorithm(), "gp-cei");
}

#[test]
fn observations_report_every_outcome_by_name() {
    let s = study(json!({"parameters": unit_xy(), "objectives": [{"name": "a"}, {"name": "b"}],
        "constraints": [{"name": "c", "op": "<=", "bound": 1}]}));
    let a: engine::Assignments = serde_json::from_value(json!({"x": 0.5, "y": 0.5})).unwrap();
    let obs = |value: Option<f64>, values: Value| ObservationRecord {
        assignments: a.clone(),
        value,
        values: serde_json::from_value(values).unwrap(),
        ..Default::default()
    };
    let fields = |o: &ObservationRecord| -> Vec<String> {
        s.validate_observation(o).err().unwrap_or_default().into_iter().map(|e| e.field).collect()
    };
    assert!(fields(&obs(None, json!({"a": 1, "b": 2, "c": 0.5}))).is_empty());
    assert_eq!(fields(&obs(None, json!({"a": 1, "c": 0.5}))), ["values.b"]);
    assert_eq!(fields(&obs(None, json!({"a": 1, "b": 2, "c": 0.5, "d": 1}))), ["values.d"]);
    assert_eq!(fields(&obs(Some(1.0), json!({"a": 1, "b": 2, "c": 0.5}))), ["value"]);
    // A failed run needs no values.
    let mut failed = obs(None, json!({}));
    failed.failed = true;
    assert!(fields(&failed).is_empty());
    // One objective with a constraint: the objective in `value`, the constraint in `values`.
    let s = study(json!({"parameters": unit_xy(), "objective": {"name": "yield"},
        "constraints": [{"name": "c", "op": "<=", "bound": 1}]}));
    assert!(s.validate_observation(&obs(Some(1.0), json!({"c": 0.5}))).is_ok());
    assert!(s.validate_observation(&obs(None, json!({"yield": 1.0, "c": 0.5}))).is_ok());
    let e = s.validate_observation(&obs(Some(1.0), json!({}))).unwrap_err();
    assert_eq!(e[0].field, "values.c");
}

/// Within `tol` (relative to the terms' scale) of satisfying `Σ terms op bound`.
fn satisfies(a: &engine::Assignments, terms: &[(&str, f64)], op: &str, bound: f64) -> bool {
    let lhs: f64 = terms.iter().map(|(k, c)| c * a[*k].as_f64().expect("numeric")).sum();
    let tol = 1e-7 * (1.0 + bound.abs());
    match op {
        "<=" => lhs <= bound + tol,
        ">=" => lhs >= bound - tol,
        _ => (lhs - bound).abs() <= tol,
    }
}

#[test]
fn every_suggestion_satisfies_the_parameter_constraints() {
    // A mixture: three fractions summing to one, the first at most 0.6, and an unconstrained temperature.
    let spec = |algorithm: &str| {
        json!({
            "parameters": [
                {"name": "a", "type": "float", "low": 0, "high": 1},
                {"name": "b", "type": "float", "low": 0, "high": 1},
                {"name": "c", "type": "float", "low": 0, "high": 1},
                {"name": "t", "type": "float", "low": 20, "high": 80}
            ],
            "parameter_constraints": [
                {"terms": {"a": 1, "b": 1, "c": 1}, "op": "==", "bound": 1},
                {"terms": {"a": 1}, "op": "<=", "bound": 0.6}
            ],
            "algorithm": {"name": algorithm},
            "seed": 3
        })
    };
    // The best mixture is at a = 0.6 (the inequality active), b = 0.3, c = 0.1, t = 50.
    let f = |a: &engine::Assignments| {
        let v = |k: &str| a[k].as_f64().unwrap();
        -((v("a") - 0.7).powi(2) + (v("b") - 0.3).powi(2) + (v("c") - 0.0).powi(2) + ((v("t") - 50.0) / 60.0).powi(2))
    };
    for algorithm in ["gp-ei", "random", "sobol", "gp-ucb"] {
        let s = study(spec(algorithm));
        let (history, state) = drive(&s, 24, 3, |a| (Some(f(a)), BTreeMap::new()));
        for (i, o) in history.observations.iter().enumerate() {
            let a = &o.assignments;
            assert!(satisfies(a, &[("a", 1.0), ("b", 1.0), ("c", 1.0)], "==", 1.0), "{algorithm} #{i}: {a:?}");
            assert!(satisfies(a, &[("a", 1.0)], "<=", 0.6), "{algorithm} #{i}: {a:?}");
        }
        if algorithm == "gp-ei" {
            let best = history.observations.iter().map(|o| o.value.unwrap()).fold(f64::NEG_INFINITY, f64::max);
            // The constrained optimum's value is −(0.1² + 0.1²) = −0.02; the search gets within 0.01 of it.
            assert!(best > -0.03, "best {best}");
            let rec = s.recommend(&history, &state).unwrap().unwrap();
            let mut a = rec.assignments.clone();
            a.insert("t".into(), json!(50.0));
            assert!(satisfies(&a, &[("a", 1.0), ("b", 1.0), ("c", 1.0)], "==", 1.0), "recommended {a:?}");
        }
    }
}

#[test]
fn constrained_search_finds_the_constrained_optimum_and_seeks_feasibility_first() {
    // Maximise −(x − 0.8)² − (y − 0.8)² subject to x + y ≤ 1: the optimum is (0.5, 0.5), value −0.18.
    let s = study(json!({
        "parameters": unit_xy(),
        "objective": {"name": "f"},
        "constraints": [{"name": "load", "op": "<=", "bound": 1.0}],
        "seed": 5
    }));
    assert_eq!(s.algorithm(), "gp-cei");
    let f = |a: &engine::Assignments| {
        let (x, y) = xy(a);
        let values = BTreeMap::from([("load".to_string(), x + y)]);
        (Some(-(x - 0.8).powi(2) - (y - 0.8).powi(2)), values)
    };
    let (history, state) = drive(&s, 30, 1, f);
    let feasible: Vec<&ObservationRecord> = history.observations.iter().filter(|o| o.values["load"] <= 1.0).collect();
    let best = feasible.iter().map(|o| o.value.unwrap()).fold(f64::NEG_INFINITY, f64::max);
    assert!(best > -0.19, "best feasible {best}");
    // After the initial design most suggestions are feasible or on the boundary, where the optimum is.
    let loads: Vec<f64> = history.observations[10..].iter().map(|o| o.values["load"]).collect();
    assert!(loads.iter().filter(|l| **l <= 1.0 + 1e-3).count() * 3 >= loads.len() * 2, "{loads:?}");
    // `best` recommends a point believed feasible and says how likely.
    let rec = s.recommend(&history, &state).unwrap().expect("a recommendation");
    let (x, y) = xy(&rec.assignments);
    assert!(x + y <= 1.0 + 1e-9, "recommended ({x}, {y})");
    assert!(rec.extra["feasibility_probability"].as_f64().unwrap() >= 0.5);
    // Predictions cover the objective and the constraint, in their own units.
    let p = s.predict_outcomes(&history, &state, std::slice::from_ref(&rec.assignments)).unwrap().unwrap();
    assert!((p[0]["load"].mean - (x + y)).abs() < 0.05, "{:?}", p[0]["load"]);

    // With every observation infeasible, the next suggestion seeks the feasible region.
    let s = study(json!({
        "parameters": unit_xy(),
        "constraints": [{"name": "load", "op": "<=", "bound": 0.3}],
        "algorithm": {"name": "gp-cei", "options": {"initial_design": 6}},
        "seed": 2
    }));
    let mut history = History::default();
    for (x, y) in [(0.9, 0.9), (0.7, 0.5), (0.5, 0.8), (0.95, 0.3), (0.4, 0.6), (0.8, 0.75)] {
        history.observations.push(ObservationRecord {
            assignments: serde_json::from_value(json!({"x": x, "y": y})).unwrap(),
            value: Some(x),
            values: BTreeMap::from([("load".to_string(), x + y)]),
            ..Default::default()
        });
    }
    let out = s.suggest(&history, &PolicyState::default(), &SuggestRequest { count: 1, context: None }).unwrap();
    let (x, y) = xy(&out.suggestions[0].assignments);
    assert!(x + y < 0.6, "seeking feasibility, got ({x}, {y})");
}

#[test]
fn parego_and_ehvi_cover_the_pareto_front_and_best_reports_it() {
    // Two objectives over the unit square: maximise −(x² + y²) and −((x − 1)² + y²); the front is y = 0.
    let spec = |algorithm: &str| {
        json!({
            "parameters": unit_xy(),
            "objectives": [{"name": "f1", "threshold": -1.0}, {"name": "f2", "threshold": -1.0}],
            "algorithm": {"name": algorithm},
            "seed": 11
        })
    };
    let f = |a: &engine::Assignments| {
        let (x, y) = xy(a);
        let values =
            BTreeMap::from([("f1".to_string(), -(x * x + y * y)), ("f2".to_string(), -((x - 1.0).powi(2) + y * y))]);
        (None, values)
    };
    // The largest hypervolume over (−1, −1): the area under the front f2 = −(1 − √−f1)², f1 ∈ [−1, 0].
    let m = 20_000;
    let best_hv: f64 = (0..m)
        .map(|i| {
            let x = (i as f64 + 0.5) / m as f64;
            // Along the front parametrised by x: f1 = −x², df1 = 2x dx, height f2 + 1 = 1 − (1 − x)².
            2.0 * x * (1.0 - (1.0 - x).powi(2)) / m as f64
        })
        .sum();
    let mut finals = BTreeMap::new();
    for algorithm in ["gp-parego", "gp-ehvi", "random"] {
        let s = study(spec(algorithm));
        let (history, state) = drive(&s, 30, 2, f);
        let front = s.pareto(&history, &state).unwrap().expect("a front");
        // Every front point is undominated by every observation, and the hypervolume is the front's.
        let objs = |o: &ObservationRecord| [o.values["f1"], o.values["f2"]];
        for p in &front.points {
            let v = objs(&history.observations[p.observation]);
            for o in &history.observations {
                let w = objs(o);
                assert!(!(w[0] >= v[0] && w[1] >= v[1] && (w[0] > v[0] || w[1] > v[1])), "{v:?} dominated by {w:?}");
            }
            assert!(p.predicted.contains_key("f1") && p.predicted.contains_key("f2"), "{algorithm}: {:?}", p.predicted);
        }
        let pts: Vec<Vec<f64>> =
            front.points.iter().map(|p| objs(&history.observations[p.observation]).to_vec()).collect();
        assert!((hypervolume(&pts, &[-1.0, -1.0]) - front.hypervolume).abs() < 1e-12);
        assert_eq!(front.reference_point["f1"], -1.0);
        assert!(front.hypervolume <= best_hv + 1e-9);
        finals.insert(algorithm, front.hypervolume);
    }
    assert!(finals["gp-parego"] >= 0.9 * best_hv, "{finals:?}, best {best_hv}");
    assert!(finals["gp-parego"] > finals["random"], "{finals:?}");
    assert!(finals["gp-ehvi"] >= 0.9 * best_hv && finals["gp-ehvi"] > finals["random"], "{finals:?}, best {best_hv}");
}

#[test]
fn a_batch_of_several_objectives_keeps_its_points_apart() {
    // A batch of six after the initial design: each point is chosen with the earlier ones pending, so no two are
    // closer than the separation of open points, at least ρ_call · min(ℓ_min, 0.5) with ρ_call = 0.0625
    // (docs/algorithms.md, "Plain GP BO"; gp-ehvi keeps the full 0.25), ℓ the lengthscales its model reports.
    for algorithm in ["gp-parego", "gp-ehvi"] {
        batch_keeps_apart(algorithm);
    }
}

fn batch_keeps_apart(algorithm: &str) {
    let s = study(json!({
        "parameters": unit_xy(),
        "objectives": [{"name": "f1"}, {"name": "f2"}],
        "algorithm": {"name": algorithm},
        "seed": 21
    }));
    let f = |a: &engine::Assignments| {
        let (x, y) = xy(a);
        (None, BTreeMap::from([("f1".to_string(), -(x * x + y * y)), ("f2".to_string(), -((x - 1.0).powi(2) + y * y))]))
    };
    let (history, state) = drive(&s, 12, 1, f);
    let out = s.suggest(&history, &state, &SuggestRequest { count: 6, context: None }).unwrap();
    assert_eq!(out.suggestions.len(), 6);
    let points: Vec<(f64, f64)> = out.suggestions.iter().map(|s| xy(&s.assignments)).collect();
    for (i, s) in out.suggestions.iter().enumerate() {
        assert_eq!(s.diagnostics.phase.as_deref(), Some("model"));
        let ls = &s.diagnostics.hyperparameters.as_ref().unwrap()["components"][0]["lengthscales"];
        let l_min = ls.as_array().unwrap().iter().filter_map(Value::as_f64).fold(f64::INFINITY, f64::min);
        let radius = 0.0625 * l_min.min(0.5);
        for &(x, y) in &points[..i] {
            let d = ((points[i].0 - x).powi(2) + (points[i].1 - y).powi(2)).sqrt();
            assert!(d >= radius * (1.0 - 1e-9), "points {i} and an earlier one are {d} apart (radius {radius})");
        }
        assert_eq!(s.diagnostics.extra.contains_key("scalarisation_weights"), algorithm == "gp-parego");
    }
}
