//! Seed 004 (HE-GP-UCB, HE-StableOpt and baselines over `kernel.candidates`) through `engine::Study`:
//! schedules against the theorem formulas, elimination of a wrong candidate on data drawn from the true one,
//! state round trips, HE-StableOpt's queries inside the ε-box, validation.

use engine::blocks::kernel_candidates::{ConfidenceSetting, KernelBlock};
use engine::kernel::{Kernel, KernelFamily};
use engine::linalg::Cholesky;
use engine::space::{ParameterSpec, Space};
use engine::study::Goal;
use engine::{History, ObservationRecord, PolicyState, Study, StudySpec, SuggestRequest};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;
use serde_json::{Value, json};
use std::f64::consts::PI;

fn one_d_space() -> Space {
    let p: ParameterSpec = serde_json::from_value(json!({"name": "x", "type": "float", "low": 0, "high": 1})).unwrap();
    Space::new(&[p]).unwrap()
}

/// β and ξ of every setting equal the printed formulas (Theorems 4.1, 4.2 A/B; π² in ξ).
#[test]
fn schedules_match_the_theorem_formulas() {
    let space = one_d_space();
    let cands = json!([{"lengthscale": 0.3, "noise": 0.0004}, {"lengthscale": 0.5}, {"lengthscale": 1.0}]);
    let block = |conf: Value| -> KernelBlock {
        serde_json::from_value(json!({"candidates": cands, "confidence": conf})).unwrap()
    };
    let (delta, r, b) = (0.1, 0.05, 2.0);
    let u = 3.0;
    let f = block(json!({"rkhs_norm_bound": b, "noise_bound": r, "delta": delta}))
        .validate(&space, Goal::Maximize)
        .unwrap();
    assert_eq!(f.confidence.setting, ConfidenceSetting::Frequentist);
    for t in [1usize, 2, 7, 50, 400] {
        let tf = t as f64;
        let xi = 2.0 * r * r * (u * PI * PI * tf * tf / (3.0 * delta)).ln();
        assert!((f.confidence.xi(t) - xi).abs() <= 1e-12 * xi.abs());
        for gamma in [0.0, 3.5, 40.0] {
            let beta = b + r * (2.0 * (gamma + 1.0 + (2.0 / delta).ln())).sqrt();
            assert!((f.confidence.beta(t, gamma) - beta).abs() <= 1e-12 * beta);
        }
    }
    let fin = block(json!({"setting": "bayesian_finite", "domain_size": 500.0, "noise_bound": r, "delta": delta}))
        .validate(&space, Goal::Maximize)
        .unwrap();
    let cont =
        block(json!({"setting": "bayesian_continuous", "gradient_a": 2.0, "gradient_b": 3.0, "domain_width": 1.0,
        "delta": delta, "beta_scale": 0.5}))
        .validate(&space, Goal::Maximize)
        .unwrap();
    for t in [1usize, 3, 30, 300] {
        let tf = t as f64;
        let beta = (2.0 * (500.0 * PI * PI * tf * tf / (3.0 * delta)).ln()).sqrt();
        assert!((fin.confidence.beta(t, 123.0) - beta).abs() <= 1e-12 * beta);
        let d = 1.0;
        let inner = d * tf * 3.0 * 1.0 * (4.0 * d * 2.0 / delta).ln().sqrt();
        let beta = (2.0 * (2.0 * PI * PI * tf * tf / (3.0 * delta)).ln() + 4.0 * d * inner.ln().max(0.0)).sqrt();
        assert!((cont.confidence.beta(t, 0.0) - 0.5 * beta).abs() <= 1e-12 * beta);
        // R defaults to √ of the largest candidate noise
        let xi = 2.0 * 0.0004 * (u * PI * PI * tf * tf / (3.0 * delta)).ln();
        assert!((cont.confidence.xi(t) - xi).abs() <= 1e-12 * xi);
    }
}

/// A GP sample path (RBF, lengthscale `l`) on a grid of [0, 1], linearly interpolated.
fn gp_sample(l: f64, seed: u64) -> impl Fn(f64) -> f64 {
    let n = 201;
    let grid: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64).collect();
    let k = Kernel::ard(KernelFamily::Rbf, 1);
    let chol = Cholesky::factor(k.gram(&[l.ln(), 0.0], &grid)).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let z: Vec<f64> = (0..n).map(|_| rng.sample(StandardNormal)).collect();
    let lm = chol.l();
    let f: Vec<f64> = (0..n).map(|i| (0..=i).map(|j| lm[(i, j)] * z[j]).sum()).collect();
    move |x: f64| {
        let p = (x.clamp(0.0, 1.0) * (n - 1) as f64).min((n - 1) as f64 - 1e-9);
        let i = p.floor() as usize;
        f[i] + (p - i as f64) * (f[i + 1] - f[i])
    }
}

fn spec(algorithm: &str, candidates: Value, options: Value, seed: u64) -> StudySpec {
    serde_json::from_value(json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
        "algorithm": {"name": algorithm, "options": options},
        "kernel": {"candidates": candidates, "confidence": {"rkhs_norm_bound": 1.0, "noise_bound": 0.01, "delta": 0.1}},
        "seed": seed
    }))
    .unwrap()
}

/// Runs `steps` suggest/observe rounds; returns the history, final state and every suggestion's diagnostics.
fn run(study: &Study, f: &dyn Fn(f64) -> f64, steps: usize, noise_seed: u64) -> (History, PolicyState, Vec<Value>) {
    let mut rng = StdRng::seed_from_u64(noise_seed);
    let (mut history, mut state) = (History::default(), PolicyState::default());
    let mut diags = Vec::new();
    for _ in 0..steps {
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        state = out.state;
        let s = &out.suggestions[0];
        let x = s.assignments["x"].as_f64().unwrap();
        assert!(x.is_finite() && (0.0..=1.0).contains(&x));
        diags.push(serde_json::to_value(&s.diagnostics).unwrap());
        let noise: f64 = rng.sample::<f64, _>(StandardNormal) * 0.01;
        history.observations.push(ObservationRecord {
            assignments: s.assignments.clone(),
            value: Some(f(x) + noise),
            ..Default::default()
        });
    }
    (history, state, diags)
}

fn surviving(study: &Study, state: &PolicyState) -> Vec<String> {
    let d = study.describe(state).expect("he-gp-ucb describes its candidates");
    d["surviving_candidates"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

/// On data drawn from the true model, a candidate whose prior mean is far off is eliminated and the true one
/// survives (three seeds).
#[test]
fn elimination_removes_a_far_off_candidate_and_keeps_the_true_one() {
    let cands = json!([
        {"name": "true", "family": "rbf", "lengthscale": 0.1, "noise": 0.0001},
        {"name": "far-off", "family": "rbf", "lengthscale": 0.1, "noise": 0.0001, "mean": {"type": "constant", "value": 6.0}}
    ]);
    for seed in [1u64, 2, 3] {
        let study = Study::new(spec("he-gp-ucb", cands.clone(), json!({}), seed)).unwrap();
        let f = gp_sample(0.1, seed);
        let (_, state, _) = run(&study, &f, 15, seed);
        assert_eq!(surviving(&study, &state), vec!["true".to_string()], "seed {seed}");
        let d = study.describe(&state).unwrap();
        let far = &d["candidates"][1];
        assert_eq!(far["surviving"], json!(false));
        assert!(far["eliminated_at_iteration"].as_u64().is_some_and(|t| t >= 4), "{d}");
        assert_eq!(d["candidates"][0]["eliminated_at_iteration"], Value::Null);
    }
}

/// Serialising the policy state (as the server stores it) and reading it back gives the same next suggestion,
/// for every algorithm of the block.
#[test]
fn state_round_trip_gives_identical_next_suggestions() {
    let cands = json!([{"lengthscale": 0.1}, {"lengthscale": 0.3}, {"lengthscale": 1.0}]);
    let f = |x: f64| (6.0 * x).sin() + 0.5 * x;
    for alg in ["he-gp-ucb", "he-stableopt", "mle-ucb", "expected-ucb", "a-gp-ucb"] {
        let study = Study::new(spec(alg, cands.clone(), json!({}), 11)).unwrap();
        let (history, state, _) = run(&study, &f, 8, 5);
        let stored: PolicyState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        let req = SuggestRequest { count: 1, context: None };
        // both branches continue for three rounds with the same observations
        let (mut h, mut sa, mut sb) = (history, state, stored);
        for _ in 0..3 {
            let a = study.suggest(&h, &sa, &req).unwrap();
            let b = study.suggest(&h, &sb, &req).unwrap();
            assert_eq!(a.suggestions[0].assignments, b.suggestions[0].assignments, "{alg}");
            (sa, sb) = (a.state, serde_json::from_str(&serde_json::to_string(&b.state).unwrap()).unwrap());
            let x = a.suggestions[0].assignments["x"].as_f64().unwrap();
            h.observations.push(ObservationRecord {
                assignments: a.suggestions[0].assignments.clone(),
                value: Some(f(x)),
                ..Default::default()
            });
        }
        assert_eq!(study.describe(&sa), study.describe(&sb), "{alg}");
    }
}

/// HE-StableOpt evaluates x_t + δ_t with δ_t inside the ε-box, and `recommend` reports the robust x_t.
#[test]
fn he_stableopt_queries_inside_the_epsilon_box() {
    let cands = json!([{"lengthscale": 0.1}, {"lengthscale": 0.3}]);
    let eps = 0.08;
    let study = Study::new(spec("he-stableopt", cands, json!({"epsilon": eps}), 4)).unwrap();
    let f = |x: f64| (-(x - 0.3).powi(2) / 0.002).exp() + 0.8 * (-(x - 0.75).powi(2) / 0.05).exp();
    let (history, state, diags) = run(&study, &f, 14, 9);
    let mut checked = 0;
    for (obs, d) in history.observations.iter().zip(&diags) {
        if let Some(r) = d["extra"].get("robust_point") {
            let (q, xr) = (obs.assignments["x"].as_f64().unwrap(), r["x"].as_f64().unwrap());
            assert!((q - xr).abs() <= eps + 1e-9, "query {q} outside the box around {xr}");
            checked += 1;
        }
    }
    assert!(checked >= 10);
    let rec = study.recommend(&history, &state).unwrap().unwrap();
    let last_robust = diags.last().unwrap()["extra"]["robust_point"]["x"].as_f64().unwrap();
    assert!((rec.assignments["x"].as_f64().unwrap() - last_robust).abs() < 1e-9);
}

/// Every baseline runs a loop and reports the model it used.
#[test]
fn baselines_run_and_report_their_model() {
    let cands = json!([{"name": "l0.1", "lengthscale": 0.1}, {"name": "l0.5", "lengthscale": 0.5}]);
    let f = |x: f64| (8.0 * x).sin();
    for alg in ["mle-ucb", "expected-ucb", "a-gp-ucb"] {
        let study = Study::new(spec(alg, cands.clone(), json!({"initial_design": 2}), 3)).unwrap();
        let (history, state, diags) = run(&study, &f, 6, 1);
        assert!(diags[3]["extra"].get("model").is_some(), "{alg}: {}", diags[3]);
        assert!(study.describe(&state).is_some());
        assert!(study.recommend(&history, &state).unwrap().unwrap().predicted.mean.is_finite());
    }
    // A-GP-UCB moves to the shortest lengthscale as t grows
    let study = Study::new(spec("a-gp-ucb", cands, json!({"initial_design": 2}), 3)).unwrap();
    let (_, _, diags) = run(&study, &f, 8, 1);
    assert_eq!(diags[7]["extra"]["model"], json!("l0.1"));
}

#[test]
fn algorithms_without_the_block_and_bad_options_name_the_field() {
    let no_block: StudySpec = serde_json::from_value(json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
        "algorithm": {"name": "he-gp-ucb"}
    }))
    .unwrap();
    let e = Study::new(no_block).unwrap_err();
    assert_eq!(e[0].field, "kernel");
    let e = Study::new(spec("he-gp-ucb", json!([{}]), json!({"epsilon": 0.1}), 1)).unwrap_err();
    assert_eq!(e[0].field, "algorithm.options.epsilon");
    let e = Study::new(spec("he-stableopt", json!([{}]), json!({"epsilon": 0.9}), 1)).unwrap_err();
    assert_eq!(e[0].field, "algorithm.options.epsilon");
    let e = Study::new(spec("he-gp-ucb", json!([]), json!({}), 1)).unwrap_err();
    assert_eq!(e[0].field, "kernel.candidates");
    // auto picks HE-GP-UCB when the block is present
    let mut s = spec("auto", json!([{}]), json!({}), 1);
    s.algorithm.options.clear();
    assert_eq!(Study::new(s).unwrap().algorithm(), "he-gp-ucb");
}

/// On a finite domain (an integer parameter) the doubly optimistic argmax of Algorithm 1, line 7, is exact: the
/// suggestion maximises max_u μ^u + β^u σ^u over every point of the domain (enumerated, as the authors' code does
/// on finite domains), for HE-GP-UCB and for the baselines' single-model UCB.
#[test]
fn finite_domain_argmax_is_exact() {
    let n_grid = 61i64;
    let cands = json!([
        {"name": "short", "family": "rbf", "lengthscale": 0.05},
        {"name": "long", "family": "rbf", "lengthscale": 0.4, "mean": {"type": "constant", "value": 0.5}}
    ]);
    let conf = json!({"setting": "bayesian_finite", "noise_bound": 0.01, "delta": 0.1});
    let spec_json = |alg: &str| {
        json!({
            "parameters": [{"name": "k", "type": "int", "low": 0, "high": n_grid - 1}],
            "algorithm": {"name": alg, "options": {"initial_design": 3}},
            "kernel": {"candidates": cands, "confidence": conf},
            "seed": 7
        })
    };
    let f = |k: f64| (k / 6.0).sin() + 0.3 * (k / 17.0).cos();
    let param: ParameterSpec =
        serde_json::from_value(json!({"name": "k", "type": "int", "low": 0, "high": n_grid - 1})).unwrap();
    let space = Space::new(&[param]).unwrap();
    let block: KernelBlock = serde_json::from_value(json!({"candidates": cands, "confidence": conf})).unwrap();
    let set = block.validate(&space, Goal::Maximize).unwrap();
    let enc = |k: f64| (k + 0.5) / n_grid as f64;
    for alg in ["he-gp-ucb", "mle-ucb"] {
        let study = Study::new(serde_json::from_value(spec_json(alg)).unwrap()).unwrap();
        let (mut history, mut state) = (History::default(), PolicyState::default());
        for step in 0..9 {
            let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
            state = out.state;
            let s = &out.suggestions[0];
            let k = s.assignments["k"].as_f64().unwrap();
            if step >= 3 {
                // every candidate's UCB on the observed data, with β of iteration t = n + 1
                let xs: Vec<f64> =
                    history.observations.iter().map(|o| enc(o.assignments["k"].as_f64().unwrap())).collect();
                let ys: Vec<f64> = history.observations.iter().map(|o| o.value.unwrap()).collect();
                let data = engine::gp::Data::new(1, xs, ys);
                let beta = set.confidence.beta(history.observations.len() + 1, 0.0);
                let gps: Vec<_> = set.models.iter().map(|m| m.condition(&data).unwrap()).collect();
                let ucb = |g: &engine::gp::Gp, v: f64| {
                    let (m, var) = g.posterior(&[enc(v)]);
                    m + beta * var.sqrt()
                };
                let score = |v: f64| match alg {
                    "he-gp-ucb" => gps.iter().map(|g| ucb(g, v)).fold(f64::NEG_INFINITY, f64::max),
                    _ => {
                        let best = gps
                            .iter()
                            .max_by(|a, b| a.log_marginal_likelihood().total_cmp(&b.log_marginal_likelihood()))
                            .unwrap();
                        ucb(best, v)
                    }
                };
                let top = (0..n_grid).map(|v| score(v as f64)).fold(f64::NEG_INFINITY, f64::max);
                assert!(score(k) >= top - 1e-9, "{alg} step {step}: suggested {k} scores {} < {top}", score(k));
            }
            history.observations.push(ObservationRecord {
                assignments: s.assignments.clone(),
                value: Some(f(k)),
                ..Default::default()
            });
        }
    }
}
