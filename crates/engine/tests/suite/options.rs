//! Algorithm options: an invalid option is refused naming it exactly, whatever the family and the kind of mistake
//! (unknown key, wrong type, out of range, a fixed-hyperparameter field); `best` and `predict` answer with the
//! surrogate the suggestions use (its kernel and fixed hyperparameters), not a default model.

use engine::data::{History, ObservationRecord};
use engine::gp::Data;
use engine::policy::FixedHyperparameters;
use engine::{PolicyState, Study, StudySpec};
use serde_json::{Value, json};

/// Two floats on [0, 1] (encoded = raw), plus whatever block `extra` adds.
fn spec(algorithm: &str, options: Value, extra: Value) -> StudySpec {
    let mut s = json!({
        "parameters": [{"name": "a", "type": "float", "low": 0, "high": 1},
                       {"name": "b", "type": "float", "low": 0, "high": 1}],
        "algorithm": {"name": algorithm, "options": options},
        "seed": 3
    });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    serde_json::from_value(s).expect("spec parses")
}

fn fields(algorithm: &str, options: Value, extra: Value) -> Vec<String> {
    Study::new(spec(algorithm, options, extra)).expect_err("invalid options").into_iter().map(|e| e.field).collect()
}

#[test]
fn invalid_options_are_named_exactly() {
    let none = json!({});
    for (options, field) in [
        (json!({"restarts": -1}), "algorithm.options.restarts"),
        (json!({"restarts": 1.5}), "algorithm.options.restarts"),
        (json!({"kernel": "foo"}), "algorithm.options.kernel"),
        (json!({"beta": "high"}), "algorithm.options.beta"),
        (json!({"nope": 1}), "algorithm.options.nope"),
        (json!({"fixed": {"lengthscales": "x"}}), "algorithm.options.fixed.lengthscales"),
        (json!({"fixed": {"lengthscales": [0.2], "colour": 1}}), "algorithm.options.fixed.colour"),
        (json!({"fixed": {"lengthscales": [0.1, 0.2, 0.3]}}), "algorithm.options.fixed.lengthscales"),
        (json!({"fit_restarts": 100}), "algorithm.options.fit_restarts"),
        (json!({"refit_every": 0}), "algorithm.options.refit_every"),
        (json!({"local_cycle": 0}), "algorithm.options.local_cycle"),
        (json!({"local_radius": 0}), "algorithm.options.local_radius"),
        (json!({"local_radius": 5}), "algorithm.options.local_radius"),
        (json!({"noisy_ei_draws": 2000}), "algorithm.options.noisy_ei_draws"),
    ] {
        assert_eq!(fields("gp-ucb", options.clone(), none.clone()), [field], "{options}");
    }
    // The shared surrogate options are checked the same way in every family that uses the standard model.
    let context = json!({"parameters": [{"name": "a", "type": "float", "low": 0, "high": 1},
                                        {"name": "c", "type": "float", "low": 0, "high": 1, "role": "context"}]});
    let sets = json!({
        "parameters": [{"name": "a", "type": "float", "low": 0, "high": 1},
                       {"name": "b", "type": "float", "low": 0, "high": 1, "distribution": {"type": "uniform"}}],
        "control_sets": [{"name": "a", "parameters": ["a"]}, {"name": "ab", "parameters": ["a", "b"]}]
    });
    let level = json!({"level_set": {"threshold": 0.5}});
    for (algorithm, extra) in [("sbo-kde", &context), ("bocvs", &sets), ("truvar", &none), ("lse-straddle", &level)] {
        for (options, field) in [
            (json!({"fit_restarts": 100}), "algorithm.options.fit_restarts"),
            (json!({"refit_every": 0}), "algorithm.options.refit_every"),
            (json!({"fixed": {"lengthscales": [0.1, 0.2, 0.3]}}), "algorithm.options.fixed.lengthscales"),
            (json!({"fixed": {"lengthscales": [-1.0]}}), "algorithm.options.fixed.lengthscales"),
        ] {
            assert_eq!(fields(algorithm, options.clone(), extra.clone()), [field], "{algorithm} {options}");
        }
    }
    // The design algorithms have no options: any option is refused rather than ignored.
    assert_eq!(fields("random", json!({"initial_design": 3}), none.clone()), ["algorithm.options.initial_design"]);
    assert_eq!(fields("sobol", json!({"x": 1}), none), ["algorithm.options.x"]);
}

#[test]
fn best_and_predict_use_the_policys_own_surrogate() {
    let fixed = json!({"lengthscales": [0.3], "outputscale": 2.0, "noise_variance": 1e-6});
    let study = Study::new(spec("gp-ucb", json!({"kernel": "rbf", "fixed": fixed, "initial_design": 3}), json!({})))
        .expect("valid");
    let f = |a: f64, b: f64| (3.0 * a).sin() + b * b;
    let points = [[0.1, 0.2], [0.8, 0.3], [0.4, 0.9], [0.6, 0.6], [0.2, 0.7]];
    let history = History {
        observations: points
            .iter()
            .map(|p| ObservationRecord {
                assignments: json!({"a": p[0], "b": p[1]}).as_object().unwrap().clone(),
                value: Some(f(p[0], p[1])),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    // The model the options describe, built directly.
    let known =
        FixedHyperparameters { lengthscales: vec![0.3], outputscale: 2.0, noise_variance: 1e-6, standardize: false };
    let data = Data::new(2, points.iter().flatten().copied().collect(), points.iter().map(|p| f(p[0], p[1])).collect());
    let gp = known.gp(&data, engine::kernel::KernelFamily::Rbf).expect("gp");
    let at = [0.35, 0.45];
    let (mean, var) = gp.posterior(&at);
    let query = json!({"a": at[0], "b": at[1]}).as_object().unwrap().clone();
    let got = study.predict(&history, &PolicyState::default(), &[query]).expect("predict").expect("a model");
    assert!((got[0].mean - mean).abs() < 1e-9, "predict mean {} vs the fixed RBF model's {mean}", got[0].mean);
    assert!((got[0].stddev - var.sqrt()).abs() < 1e-9, "predict sd {} vs {}", got[0].stddev, var.sqrt());
    let best = study.recommend(&history, &PolicyState::default()).expect("recommend").expect("a recommendation");
    let x: Vec<f64> = ["a", "b"].iter().map(|k| best.assignments[*k].as_f64().unwrap()).collect();
    let (m, _) = gp.posterior(&x);
    assert!(
        (best.predicted.mean - m).abs() < 1e-9,
        "best is scored by the fixed model: {} vs {m}",
        best.predicted.mean
    );
}

#[test]
fn options_and_blocks_a_policy_would_ignore_are_refused() {
    // An indirect study over the targets a, b, queried through q1, q2; with or without a tree.
    let indirect = |tree: bool| {
        let mut block = json!({
            "query_parameters": [{"name": "q1", "type": "float", "low": 0, "high": 1},
                                 {"name": "q2", "type": "float", "low": 0, "high": 1}],
            "conditional": [
                {"target": "a", "query": "q1", "form": "affine", "scale": 1.0, "offset": 0.0, "noise_std": 0.1},
                {"target": "b", "query": "q2", "form": "affine", "scale": 1.0, "offset": 0.0, "noise_std": 0.1}
            ]
        });
        if tree {
            block["tree"] = json!({"height": 2, "cost": [0.5, 1.0, 2.0], "noise_std": [1.0, 0.5, 0.25]});
        }
        json!({ "indirect": block })
    };
    assert_eq!(fields("cmets", json!({"initial_design": 3}), indirect(true)), ["algorithm.options.initial_design"]);
    assert_eq!(fields("cmets", json!({"candidates": 64}), indirect(true)), ["algorithm.options.candidates"]);
    assert_eq!(fields("cmes", json!({"candidates": 64}), indirect(true)), ["algorithm.options.candidates"]);
    Study::new(spec("cmes", json!({"candidates": 64, "initial_design": 2}), indirect(false))).expect("used there");
    Study::new(spec("cmets", json!({"target_grid": 64}), indirect(true))).expect("used by cmets");

    // A finite domain (`candidates` block) is refused by the families that search the continuous box.
    let grid = json!({"grid": {"a": {"count": 5}}});
    let context = json!({"candidates": grid,
                         "parameters": [{"name": "a", "type": "float", "low": 0, "high": 1},
                                        {"name": "c", "type": "float", "low": 0, "high": 1, "role": "context"}]});
    for algorithm in ["sbo-kde", "drbo-kde", "stableopt", "drbo-mmd"] {
        assert_eq!(fields(algorithm, json!({}), context.clone()), ["candidates"], "{algorithm}");
    }
    let sets = json!({
        "candidates": {"grid": {"a": {"count": 5}, "b": {"count": 5}}},
        "parameters": [{"name": "a", "type": "float", "low": 0, "high": 1},
                       {"name": "b", "type": "float", "low": 0, "high": 1, "distribution": {"type": "uniform"}}],
        "control_sets": [{"name": "a", "parameters": ["a"]}, {"name": "ab", "parameters": ["a", "b"]}]
    });
    assert_eq!(fields("bocvs", json!({}), sets.clone()), ["candidates"]);
    assert_eq!(fields("auto", json!({}), sets), ["candidates"], "no control-set algorithm keeps to a finite domain");
    // With contexts and a finite domain, auto takes the GP policy that averages over the observed contexts.
    let study = Study::new(spec("auto", json!({}), context)).expect("valid");
    assert_eq!(study.algorithm(), "gp-ei");
}
