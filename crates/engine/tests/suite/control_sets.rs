//! Control sets (seed 000, issue 4) through [`engine::Study`]: validation of the block, suggestions that name a set
//! and assign only its parameters, and the behaviour of `bocvs` (Hoang et al., AAAI 2025, Algorithm 1) on small
//! seeded problems: exploration visits every set; once a cheap set is known to be within the tolerance of the
//! best it is played and the expensive full set is not; the cost LCB uses observed costs only; the policy state
//! survives a JSON round trip with identical next suggestions. Baselines: `ucb-psq` plays the full set,
//! `etc-cvs` plays its groups in order, `ucb-cvs` needs known costs.

use engine::data::{History, ObservationRecord, PointExtras};
use engine::study::Suggestion;
use engine::{PolicyState, Study, StudySpec, SuggestRequest};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

/// Two parameters on [0, 1]; f depends on `a` only: f = 1 − 4 (a − 0.3)².
fn spec(algorithm: Value, sets: Value) -> StudySpec {
    serde_json::from_value(json!({
        "parameters": [
            {"name": "a", "type": "float", "low": 0, "high": 1,
             "distribution": {"type": "truncated_normal", "mean": 0.5, "variance": 0.02}},
            {"name": "b", "type": "float", "low": 0, "high": 1, "distribution": {"type": "uniform"}}
        ],
        "algorithm": algorithm,
        "control_sets": sets,
        "seed": 5
    }))
    .expect("spec parses")
}

fn three_sets(costs: [f64; 3]) -> Value {
    json!([
        {"name": "cheap", "parameters": ["a"], "cost": costs[0]},
        {"name": "useless", "parameters": ["b"], "cost": costs[1]},
        {"name": "full", "parameters": ["a", "b"], "cost": costs[2]}
    ])
}

/// Observed cost of each set (the declared costs may differ on purpose).
const TRUE_COST: [f64; 3] = [0.05, 0.05, 1.0];

fn objective(a: &engine::Assignments) -> f64 {
    let x = a["a"].as_f64().unwrap();
    1.0 - 4.0 * (x - 0.3) * (x - 0.3)
}

/// Runs `rounds` ask-tell rounds, the environment drawing the uncontrolled parameters; returns the suggestions.
fn run(
    study: &Study,
    history: &mut History,
    state: &mut PolicyState,
    rounds: usize,
    rng: &mut StdRng,
) -> Vec<Suggestion> {
    let cs = study.problem().control_sets.as_ref().unwrap();
    let mut out = Vec::new();
    for _ in 0..rounds {
        let o = study.suggest(history, state, &SuggestRequest { count: 1, context: None }).unwrap();
        *state = o.state;
        let s = o.suggestions.into_iter().next().unwrap();
        let set = cs.index_of(s.extras.control_set.as_deref().expect("a control set is named")).unwrap();
        let expected: Vec<&str> =
            cs.sets[set].params.iter().map(|&k| study.problem().space.params()[k].name.as_str()).collect();
        let mut keys: Vec<&str> = s.assignments.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, expected, "only the set's parameters are assigned");
        let realised = cs.realise(&study.problem().space, set, &s.assignments, rng);
        let cost = TRUE_COST[set] + 0.001 * rng.random::<f64>();
        let obs = ObservationRecord {
            value: Some(objective(&realised)),
            assignments: realised,
            cost: Some(cost),
            extras: PointExtras { control_set: s.extras.control_set.clone(), ..PointExtras::default() },
            ..Default::default()
        };
        study.validate_observation(&obs).unwrap();
        history.observations.push(obs);
        out.push(s);
    }
    out
}

fn bocvs(tau: usize) -> Value {
    json!({"name": "bocvs", "options": {"tau": tau, "mc_samples": 64, "raw_samples": 64}})
}

#[test]
fn exploration_plays_every_set_round_robin() {
    let study = Study::new(spec(bocvs(2), three_sets([0.05, 0.05, 1.0]))).unwrap();
    assert_eq!(study.algorithm(), "bocvs");
    let (mut h, mut st, mut rng) = (History::default(), PolicyState::default(), StdRng::seed_from_u64(1));
    let played: Vec<String> =
        run(&study, &mut h, &mut st, 6, &mut rng).into_iter().map(|s| s.extras.control_set.unwrap()).collect();
    assert_eq!(played, ["cheap", "useless", "full", "cheap", "useless", "full"]);
    assert_eq!(study.describe(&st).unwrap()["phase"], "exploration");
}

#[test]
fn cheap_set_within_tolerance_is_played_not_the_full_set_and_costs_come_from_observations() {
    // The declared costs are wrong on purpose (the full set claims to be free): bocvs must learn from the
    // observed costs alone.
    // Tolerance α = 0.3, not halved during the test: the cheap set's upper bound, averaged over the random `b`
    // the GP has not yet learnt to ignore, stays within 30 % of the best lower bound.
    let options = json!({"tau": 8, "mc_samples": 64, "raw_samples": 64, "alpha": 0.3, "alpha_halving_every": 100});
    let study = Study::new(spec(json!({"name": "bocvs", "options": options}), three_sets([5.0, 5.0, 0.0]))).unwrap();
    let (mut h, mut st, mut rng) = (History::default(), PolicyState::default(), StdRng::seed_from_u64(2));
    run(&study, &mut h, &mut st, 24, &mut rng);
    let exploit = run(&study, &mut h, &mut st, 8, &mut rng);
    for (k, s) in exploit.iter().enumerate() {
        assert_eq!(s.diagnostics.phase.as_deref(), Some("exploitation"));
        assert_eq!(s.extras.control_set.as_deref(), Some("cheap"), "round {k}: {:?}", s.diagnostics.extra);
        let feasible = s.diagnostics.extra["feasible"].as_array().unwrap();
        assert!(feasible.iter().any(|f| f == "full"), "the full set is feasible too, only dearer: {feasible:?}");
        // Cost LCBs recomputed from the observations made before this suggestion.
        let before = &h.observations[..24 + k];
        let t = (24 + k + 1) as f64;
        for (i, name) in ["cheap", "useless", "full"].into_iter().enumerate() {
            let costs: Vec<f64> = before
                .iter()
                .filter(|o| o.extras.control_set.as_deref() == Some(name))
                .map(|o| o.cost.unwrap())
                .collect();
            let mean = costs.iter().sum::<f64>() / costs.len() as f64;
            let lcb = (mean - (2.0 * t.ln() / costs.len() as f64).sqrt()).max(0.0);
            let got = s.diagnostics.extra["cost_lcb"][i].as_f64().unwrap();
            assert!((got - lcb).abs() < 1e-12, "round {k} set {name}: {got} vs {lcb}");
        }
        assert!(s.diagnostics.extra["cost_lcb"][2].as_f64().unwrap() > 0.0);
    }
    let a: Vec<f64> = exploit.iter().map(|s| s.assignments["a"].as_f64().unwrap()).collect();
    assert!(a.iter().any(|x| (x - 0.3).abs() < 0.1), "the cheap set is played near the optimum a = 0.3: {a:?}");
}

#[test]
fn state_round_trip_gives_identical_next_suggestions() {
    let study = Study::new(spec(bocvs(2), three_sets([0.05, 0.05, 1.0]))).unwrap();
    let (mut h, mut st, mut rng) = (History::default(), PolicyState::default(), StdRng::seed_from_u64(3));
    run(&study, &mut h, &mut st, 9, &mut rng);
    let text = serde_json::to_string(&st).unwrap();
    let back: PolicyState = serde_json::from_str(&text).unwrap();
    let req = SuggestRequest { count: 2, context: None };
    let a = study.suggest(&h, &st, &req).unwrap();
    let b = study.suggest(&h, &back, &req).unwrap();
    for (x, y) in a.suggestions.iter().zip(&b.suggestions) {
        assert_eq!((&x.extras.control_set, &x.assignments), (&y.extras.control_set, &y.assignments));
    }
    assert_eq!(a.state, b.state);
    assert_eq!(study.describe(&back).unwrap()["phase"], "exploitation");
}

#[test]
fn baselines_choose_sets_as_documented() {
    let (mut rng, sets) = (StdRng::seed_from_u64(4), three_sets([0.05, 0.05, 1.0]));
    let opts = json!({"mc_samples": 32, "raw_samples": 32});
    let psq = Study::new(spec(json!({"name": "ucb-psq", "options": opts}), sets.clone())).unwrap();
    let (mut h, mut st) = (History::default(), PolicyState::default());
    let played = run(&psq, &mut h, &mut st, 5, &mut rng);
    assert!(
        played[1..].iter().all(|s| s.extras.control_set.as_deref() == Some("full")),
        "UCB-PSQ dominates with the full set"
    );

    let etc = json!({"name": "etc-cvs", "options": {"mc_samples": 32, "raw_samples": 32, "plays_per_group": 3}});
    let etc = Study::new(spec(etc, sets.clone())).unwrap();
    let (mut h, mut st) = (History::default(), PolicyState::default());
    let played = run(&etc, &mut h, &mut st, 8, &mut rng);
    assert!(
        played[1..3].iter().all(|s| s.extras.control_set.as_deref() != Some("full")),
        "group of one-parameter sets first"
    );
    assert!(played[3..].iter().all(|s| s.extras.control_set.as_deref() == Some("full")));

    let cvs = Study::new(spec(json!({"name": "ucb-cvs", "options": opts}), sets.clone())).unwrap();
    let (mut h, mut st) = (History::default(), PolicyState::default());
    let played = run(&cvs, &mut h, &mut st, 6, &mut rng);
    assert!(played.iter().all(|s| s.extras.expected_cost.is_some()));

    let ts = Study::new(spec(json!({"name": "ts-psq", "options": opts}), sets)).unwrap();
    let (mut h, mut st) = (History::default(), PolicyState::default());
    let played = run(&ts, &mut h, &mut st, 4, &mut rng);
    assert!(played[1..].iter().all(|s| s.extras.control_set.as_deref() == Some("full")));
}

#[test]
fn invalid_specs_name_the_field() {
    let field_of = |s: StudySpec| Study::new(s).unwrap_err()[0].field.clone();
    let sets = three_sets([0.05, 0.05, 1.0]);
    assert_eq!(field_of(spec(json!({"name": "gp-ei"}), sets.clone())), "algorithm.name");
    let no_cost = json!([{"name": "a", "parameters": ["a"]}, {"name": "ab", "parameters": ["a", "b"], "cost": 1}]);
    assert_eq!(field_of(spec(json!({"name": "ucb-cvs"}), no_cost)), "control_sets[0].cost");
    assert_eq!(
        field_of(spec(json!({"name": "bocvs", "options": {"plays_per_group": 3}}), sets.clone())),
        "algorithm.options.plays_per_group"
    );
    assert_eq!(field_of(spec(json!({"name": "bocvs", "options": {"alpha": 1.5}}), sets)), "algorithm.options.alpha");
    let mut s = spec(json!({"name": "auto"}), json!([]));
    assert_eq!(field_of(s.clone()), "control_sets");
    s.control_sets = None;
    s.algorithm.name = "gp-ei".into();
    assert_eq!(field_of(s), "parameters[0].distribution");
    let bad_obs = ObservationRecord {
        assignments: json!({"a": 0.1, "b": 0.2}).as_object().unwrap().clone(),
        value: Some(1.0),
        extras: PointExtras { control_set: Some("nope".into()), ..PointExtras::default() },
        ..Default::default()
    };
    let study = Study::new(spec(json!({"name": "auto"}), three_sets([0.05, 0.05, 1.0]))).unwrap();
    assert_eq!(study.validate_observation(&bad_obs).unwrap_err()[0].field, "control_set");
}

#[test]
fn fixed_hyperparameters_are_validated_and_used() {
    let sets = three_sets([0.05, 0.05, 1.0]);
    let with = |fixed: Value| json!({"name": "bocvs", "options": {"tau": 1, "mc_samples": 32, "raw_samples": 32, "fixed": fixed}});
    let err = Study::new(spec(with(json!({"lengthscales": [-1.0]})), sets.clone())).unwrap_err();
    assert_eq!(err[0].field, "algorithm.options.fixed.lengthscales");
    let fixed = json!({"lengthscales": [0.2], "outputscale": 1.0, "noise_variance": 1e-4, "standardize": true});
    let study = Study::new(spec(with(fixed), sets)).unwrap();
    let (mut h, mut st, mut rng) = (History::default(), PolicyState::default(), StdRng::seed_from_u64(2));
    let played = run(&study, &mut h, &mut st, 5, &mut rng);
    let hypers = played[4].diagnostics.hyperparameters.as_ref().expect("a model-based suggestion reports its model");
    assert_eq!(hypers["components"][0]["lengthscales"], json!([0.2, 0.2]), "the given lengthscales, not a fit");
    assert_eq!(hypers["components"][0]["outputscale"], json!(1.0));
}

#[test]
fn exploration_length_follows_a_fraction_of_the_cost_budget() {
    let sets = three_sets([0.05, 0.05, 1.0]);
    let phases = |options: Value, budget: Option<f64>, rounds: usize| -> Vec<String> {
        let mut opts = json!({"mc_samples": 32, "raw_samples": 32});
        opts.as_object_mut().unwrap().extend(options.as_object().unwrap().clone());
        let study = Study::new(spec(json!({"name": "bocvs", "options": opts}), sets.clone())).unwrap();
        let mut h = History { cost_budget: budget, ..Default::default() };
        let (mut st, mut rng) = (PolicyState::default(), StdRng::seed_from_u64(3));
        run(&study, &mut h, &mut st, rounds, &mut rng)
            .into_iter()
            .map(|s| s.diagnostics.phase.unwrap_or_default())
            .collect()
    };
    // The three sets cost ≈ 0.05, 0.05 and 1.0: one round robin costs ≈ 1.1 (its first play is the design point).
    // 10% of a budget of 10 is spent after the first round robin; the 4th suggestion exploits.
    let p = phases(json!({"explore_fraction": 0.1}), Some(10.0), 5);
    assert!(p[..3].iter().all(|x| x != "exploitation") && p[3..].iter().all(|x| x == "exploitation"), "{p:?}");
    // Default under a cost budget: 60 % of it (0.9 of 1.5), so again exploitation from the 4th suggestion.
    let p = phases(json!({}), Some(1.5), 5);
    assert!(p[..3].iter().all(|x| x != "exploitation") && p[3..].iter().all(|x| x == "exploitation"), "{p:?}");
    // Without a cost budget the default is τ = 5 rounds per set.
    assert!(phases(json!({}), None, 5).iter().all(|x| x != "exploitation"));
    // A fraction without a budget cannot be followed; two exploration lengths at once are refused.
    let study = Study::new(spec(json!({"name": "bocvs", "options": {"explore_fraction": 0.5}}), sets.clone())).unwrap();
    assert!(study.needs_cost_budget());
    let err = study.suggest(&History::default(), &PolicyState::default(), &SuggestRequest { count: 1, context: None });
    assert!(err.unwrap_err().to_string().contains("budget.max_cost"));
    let both = spec(json!({"name": "bocvs", "options": {"tau": 2, "explore_fraction": 0.5}}), sets);
    assert_eq!(Study::new(both).unwrap_err()[0].field, "algorithm.options");
}
