//! Seed 003 (TRUVAR, Bogunovic et al., NIPS 2016) through `engine::Study`: the `candidates`, `noise_levels`,
//! `cost_model` and `level_set` blocks, and the `truvar` policy (state round trip, level-set classification,
//! noise-level choice, BO on a grid).

use engine::{History, ObservationRecord, PointExtras, PolicyState, Study, StudySpec, SuggestRequest};
use serde_json::{Value, json};

fn study(spec: Value) -> Study {
    Study::new(serde_json::from_value::<StudySpec>(spec).unwrap()).unwrap()
}

fn errors(spec: Value) -> Vec<String> {
    match Study::new(serde_json::from_value::<StudySpec>(spec).unwrap()) {
        Ok(_) => panic!("spec should be rejected"),
        Err(e) => e.into_iter().map(|e| e.field).collect(),
    }
}

fn one() -> SuggestRequest {
    SuggestRequest { count: 1, context: None }
}

/// A 1-D objective with its maximum at x = 0.7.
fn bump(x: f64) -> f64 {
    (-(x - 0.7).powi(2) / 0.02).exp() + 0.3 * (-(x - 0.2).powi(2) / 0.01).exp()
}

/// Runs `steps` ask-tell rounds on `f(x)` (parameter `x`), returning the history and state.
fn run(study: &Study, steps: usize, f: impl Fn(f64) -> f64) -> (History, PolicyState) {
    let (mut history, mut state) = (History::default(), PolicyState::default());
    for _ in 0..steps {
        let out = study.suggest(&history, &state, &one()).unwrap();
        state = out.state;
        let s = &out.suggestions[0];
        let x = s.assignments["x"].as_f64().unwrap();
        history.observations.push(ObservationRecord {
            assignments: s.assignments.clone(),
            value: Some(f(x)),
            extras: PointExtras { noise_level: s.extras.noise_level.clone(), ..PointExtras::default() },
            ..Default::default()
        });
    }
    (history, state)
}

fn grid_spec(algorithm: Value) -> Value {
    json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
        "candidates": {"grid": {"x": {"count": 41}}},
        "algorithm": algorithm,
        "seed": 3
    })
}

fn on_grid(x: f64) -> bool {
    ((x * 40.0).round() - x * 40.0).abs() < 1e-9
}

#[test]
fn invalid_blocks_are_rejected_naming_the_field() {
    let base = || json!({"parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}]});
    let with = |k: &str, v: Value| {
        let mut s = base();
        s[k] = v;
        s
    };
    assert_eq!(errors(with("candidates", json!({"points": [{"x": 2}]}))), ["candidates.points[0].x"]);
    assert_eq!(
        errors(with("candidates", json!({"grid": {"x": {"count": 3}, "y": {"count": 3}}}))),
        ["candidates.grid.y"]
    );
    assert_eq!(
        errors(with("noise_levels", json!([{"name": "a", "noise_variance": -1, "cost": 1}]))),
        ["noise_levels[0].noise_variance"]
    );
    assert_eq!(
        errors(with(
            "noise_levels",
            json!([{"name": "a", "noise_variance": 0, "cost": 1}, {"name": "a", "noise_variance": 1, "cost": 1}])
        )),
        ["noise_levels[1].name"]
    );
    assert_eq!(errors(with("cost_model", json!({"move_weights": {"z": 1}}))), ["cost_model.move_weights.z"]);
    assert_eq!(errors(with("cost_model", json!({"intercept": -2}))), ["cost_model.intercept"]);
    let mut s = with("noise_levels", json!([{"name": "a", "noise_variance": 0, "cost": 1}]));
    s["algorithm"] = json!({"name": "truvar", "options": {"noise_level": "b"}});
    assert_eq!(errors(s), ["algorithm.options.noise_level"]);
    let mut s = base();
    s["algorithm"] = json!({"name": "truvar", "options": {"shrink": 1.5}});
    assert_eq!(errors(s), ["algorithm.options.shrink"]);
}

#[test]
fn gp_policies_choose_from_the_candidate_set() {
    for name in ["gp-ei", "gp-ucb", "truvar", "random"] {
        let s = study(grid_spec(
            json!({"name": name, "options": if name == "random" { json!({}) } else { json!({"initial_design": 3}) }}),
        ));
        let (history, state) = run(&s, 8, bump);
        for o in &history.observations {
            let x = o.assignments["x"].as_f64().unwrap();
            assert!(on_grid(x), "{name} suggested {x}, not a grid point");
        }
        if name != "random" {
            let rec = s.recommend(&history, &state).unwrap().unwrap();
            assert!(on_grid(rec.assignments["x"].as_f64().unwrap()), "{name} recommended off the grid");
        }
    }
}

#[test]
fn noise_levels_reach_the_gp_and_unknown_levels_are_rejected() {
    let s = study(json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
        "noise_levels": [{"name": "precise", "noise_variance": 1e-6, "cost": 10}, {"name": "rough", "noise_variance": 0.5, "cost": 1}],
        "algorithm": {"name": "gp-ei"},
        "seed": 1
    }));
    let obs = |x: f64, level: &str| ObservationRecord {
        assignments: json!({"x": x}).as_object().unwrap().clone(),
        value: Some(bump(x)),
        extras: PointExtras { noise_level: Some(level.into()), ..PointExtras::default() },
        ..Default::default()
    };
    assert_eq!(s.validate_observation(&obs(0.5, "medium")).unwrap_err()[0].field, "noise_level");
    // The first suggestion plays the first level (gp-ei does not choose levels) and costs its cost.
    let out = s.suggest(&History::default(), &PolicyState::default(), &one()).unwrap();
    assert_eq!(out.suggestions[0].extras.noise_level.as_deref(), Some("precise"));
    assert_eq!(out.suggestions[0].extras.expected_cost, Some(10.0));
    // Known noise per level: the posterior is tighter where the precise level observed.
    let mut history = History::default();
    for (i, x) in [0.1, 0.3, 0.5, 0.7, 0.9].into_iter().enumerate() {
        history.observations.push(obs(x, if i % 2 == 0 { "precise" } else { "rough" }));
    }
    let points: Vec<_> = [0.5, 0.7].iter().map(|x| json!({"x": x}).as_object().unwrap().clone()).collect();
    let p = s.predict(&history, &PolicyState::default(), &points).unwrap().unwrap();
    assert!(p[0].stddev < p[1].stddev, "precise {:?} vs rough {:?}", p[0], p[1]);
}

#[test]
fn the_movement_cost_is_the_expected_cost() {
    let s = study(json!({
        "parameters": [{"name": "x1", "type": "float", "low": 0, "high": 100}, {"name": "x2", "type": "float", "low": -5, "high": 0}],
        "cost_model": {"intercept": 4, "weights": {"x2": 4}, "move_weights": {"x1": 0.25}},
        "algorithm": {"name": "sobol"},
        "seed": 2
    }));
    let mut history = History::default();
    history.observations.push(ObservationRecord {
        assignments: json!({"x1": 10.0, "x2": -1.0}).as_object().unwrap().clone(),
        value: Some(1.0),
        ..Default::default()
    });
    let out = s.suggest(&history, &PolicyState::default(), &SuggestRequest { count: 2, context: None }).unwrap();
    let a = &out.suggestions[0].assignments;
    let (x1, x2) = (a["x1"].as_f64().unwrap(), a["x2"].as_f64().unwrap());
    let expected = 0.25 * (x1 - 10.0).abs() + 4.0 * (x2.abs() + 1.0);
    assert!((out.suggestions[0].extras.expected_cost.unwrap() - expected).abs() < 1e-9);
    // The second of a batch moves from the first.
    let b = &out.suggestions[1].assignments;
    let expected = 0.25 * (b["x1"].as_f64().unwrap() - x1).abs() + 4.0 * (b["x2"].as_f64().unwrap().abs() + 1.0);
    assert!((out.suggestions[1].extras.expected_cost.unwrap() - expected).abs() < 1e-9);
}

#[test]
fn truvar_finds_the_maximum_of_a_grid_function() {
    let s = study(grid_spec(json!({"name": "truvar", "options": {"fixed": {"lengthscales": [0.1]}}})));
    let (history, state) = run(&s, 15, bump);
    let rec = s.recommend(&history, &state).unwrap().unwrap();
    let x = rec.assignments["x"].as_f64().unwrap();
    assert!((x - 0.7).abs() <= 0.026, "recommended {x}");
    let status = s.describe(&state).unwrap();
    assert!(status["epoch"].as_u64().unwrap() >= 2, "epochs should advance: {status}");
    assert!(status["unclassified"].as_u64().unwrap() < 41, "M should shrink: {status}");
}

#[test]
fn truvar_state_round_trip_gives_identical_suggestions() {
    for spec in [
        grid_spec(json!({"name": "truvar", "options": {"fixed": {"lengthscales": [0.1]}}})),
        grid_spec(json!({"name": "truvar", "options": {"initial_design": 3}})),
    ] {
        let s = study(spec);
        let (history, state) = run(&s, 7, bump);
        let stored = serde_json::to_string(&state).unwrap();
        let restored: PolicyState = serde_json::from_str(&stored).unwrap();
        let a = s.suggest(&history, &state, &one()).unwrap();
        let b = s.suggest(&history, &restored, &one()).unwrap();
        assert_eq!(a.suggestions[0].assignments, b.suggestions[0].assignments);
        assert_eq!(a.state, b.state);
        // A restarted study (state rebuilt from storage) continues exactly as the uninterrupted one.
        let s2 = study(grid_spec(serde_json::to_value(s.spec().algorithm.clone()).unwrap()));
        let c = s2.suggest(&history, &restored, &one()).unwrap();
        assert_eq!(a.suggestions[0].assignments, c.suggestions[0].assignments);
    }
}

fn lse_spec(algorithm: Value) -> Value {
    json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
        "candidates": {"grid": {"x": {"count": 51}}},
        "noise_levels": [
            {"name": "precise", "noise_variance": 1e-6, "cost": 15},
            {"name": "medium", "noise_variance": 1e-3, "cost": 10},
            {"name": "rough", "noise_variance": 0.05, "cost": 2}
        ],
        "level_set": {"threshold": 0.5},
        "algorithm": algorithm,
        "seed": 5
    })
}

#[test]
fn truvar_level_sets_use_cheap_levels_first_and_classify_the_domain() {
    let s = study(lse_spec(json!({"name": "truvar", "options": {"fixed": {"lengthscales": [0.1]}}})));
    let (history, state) = run(&s, 30, bump);
    // The prior variance is 1: a rough measurement removes nearly as much of it as a precise one, at 2/15 the cost.
    assert_eq!(history.observations[0].extras.noise_level.as_deref(), Some("rough"));
    let rec = s.recommend(&history, &state).unwrap().unwrap();
    let ls = &rec.extra["level_set"];
    let counts = &ls["counts"];
    let total = counts["above"].as_u64().unwrap()
        + counts["below"].as_u64().unwrap()
        + counts["unclassified"].as_u64().unwrap();
    assert_eq!(total, 51);
    assert!(counts["above"].as_u64().unwrap() > 0 && counts["below"].as_u64().unwrap() > 0, "{ls}");
    // Every point classified above really is above h, every point below really below.
    for (class, above) in [("above", true), ("below", false)] {
        for p in ls[class].as_array().unwrap() {
            let x = p["x"].as_f64().unwrap();
            assert_eq!(bump(x) > 0.5, above, "{x} classified {class}, f = {}", bump(x));
        }
    }
}

#[test]
fn any_policy_on_a_level_set_study_reports_a_classification() {
    let s = study(lse_spec(json!({"name": "gp-ucb", "options": {"initial_design": 4}})));
    let (history, state) = run(&s, 10, bump);
    let rec = s.recommend(&history, &state).unwrap().unwrap();
    let ls = &rec.extra["level_set"];
    assert_eq!(ls["domain_size"], json!(51));
    assert_eq!(ls["beta_sqrt"], json!(3.0));
}

#[test]
fn a_minimised_level_set_study_reports_in_the_clients_sign() {
    let mut spec = lse_spec(json!({"name": "truvar", "options": {"fixed": {"lengthscales": [0.1]}}}));
    spec["objective"] = json!({"name": "loss", "goal": "minimize"});
    let s = study(spec);
    let (history, state) = run(&s, 30, bump);
    let rec = s.recommend(&history, &state).unwrap().unwrap();
    let ls = &rec.extra["level_set"];
    for (class, above) in [("above", true), ("below", false)] {
        for p in ls[class].as_array().unwrap() {
            let x = p["x"].as_f64().unwrap();
            assert_eq!(bump(x) > 0.5, above, "{x} classified {class}");
        }
    }
}

#[test]
fn level_set_baselines_run_at_a_fixed_noise_level() {
    for name in ["lse-gchk", "lse-straddle", "lse-var"] {
        let s = study(lse_spec(
            json!({"name": name, "options": {"noise_level": "medium", "fixed": {"lengthscales": [0.1]}}}),
        ));
        let (history, state) = run(&s, 25, bump);
        assert!(history.observations.iter().all(|o| o.extras.noise_level.as_deref() == Some("medium")), "{name}");
        let rec = s.recommend(&history, &state).unwrap().unwrap();
        let ls = &rec.extra["level_set"];
        assert_eq!(ls["domain_size"], json!(51), "{name}");
        for (class, above) in [("above", true), ("below", false)] {
            for p in ls[class].as_array().unwrap() {
                let x = p["x"].as_f64().unwrap();
                assert_eq!(bump(x) > 0.5, above, "{name}: {x} classified {class}");
            }
        }
    }
    // GCHK classifies the whole 51-point grid of this smooth function within 25 noiseless-ish steps.
    let s = study(lse_spec(
        json!({"name": "lse-gchk", "options": {"noise_level": "precise", "fixed": {"lengthscales": [0.1]}}}),
    ));
    let (history, state) = run(&s, 25, bump);
    let counts = s.recommend(&history, &state).unwrap().unwrap().extra["level_set"]["counts"].clone();
    assert!(counts["unclassified"].as_u64().unwrap() <= 5, "{counts}");
}

#[test]
fn level_set_baselines_need_a_level_set_block() {
    let spec = grid_spec(json!({"name": "lse-straddle"}));
    assert_eq!(errors(spec), ["level_set"]);
    // GP-UCB with the theoretical β schedule runs on a grid.
    let s =
        study(grid_spec(json!({"name": "gp-ucb", "options": {"beta_theoretical_scale": 0.2, "initial_design": 2}})));
    let (history, _) = run(&s, 6, bump);
    assert_eq!(history.observations.len(), 6);
}
