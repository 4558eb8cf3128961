//! Batches and parallel clients (issue 20): open suggestions (a `count: 4` batch, then another batch with the first
//! one pending) are never closer than the separation the docs state, `SEPARATION · min(ℓ_min, cap)` in the unit
//! cube with ℓ the fitted lengthscales each suggestion reports, for every plain GP policy on a smooth 2-D problem;
//! two points of one gp-ei call (local steps, `diagnostics.extra.search = "local"`, and its global pick) keep the
//! box-scaled `SEPARATION · LOCAL_RADIUS · min(ℓ_min, cap)` from each other, but for a call of eight's later global
//! pick, which keeps the full one.

use engine::data::{History, ObservationRecord, PendingRecord};
use engine::policy::{LENGTHSCALE_CAP, LOCAL_CYCLE, LOCAL_RADIUS, SEPARATION};
use engine::study::Suggestion;
use engine::{PolicyState, Study, StudySpec, SuggestRequest};
use serde_json::json;

use crate::common::call_places;

/// A smooth bowl on [0, 10] × [-1, 1] (the unit-cube optimum at (0.3, 0.7)).
fn smooth(a: &Suggestion) -> f64 {
    let x = a.assignments["x"].as_f64().unwrap() / 10.0;
    let y = (a.assignments["y"].as_f64().unwrap() + 1.0) / 2.0;
    (x - 0.3).powi(2) + 2.0 * (y - 0.7).powi(2) + 0.1 * (3.0 * x).sin()
}

fn unit(a: &Suggestion) -> [f64; 2] {
    [a.assignments["x"].as_f64().unwrap() / 10.0, (a.assignments["y"].as_f64().unwrap() + 1.0) / 2.0]
}

fn min_lengthscale(s: &Suggestion) -> f64 {
    let h = s.diagnostics.hyperparameters.as_ref().expect("model suggestions report their hyperparameters");
    h["components"][0]["lengthscales"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .fold(f64::INFINITY, f64::min)
}

/// Sequential observations before the batches.
const SEQUENTIAL: usize = 12;

/// [`SEQUENTIAL`] sequential suggestions of `study`, each observed with `objective`, so that the model is fitted and has
/// found the bowl: the history, the policy state and how many of them were the initial design.
fn observe_sequentially(study: &Study, objective: impl Fn(&Suggestion) -> f64) -> (History, PolicyState, usize) {
    let (mut history, mut state, mut n_init) = (History::default(), PolicyState::default(), 0);
    for _ in 0..SEQUENTIAL {
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        state = out.state;
        let s = &out.suggestions[0];
        n_init += usize::from(!matches!(s.diagnostics.phase.as_deref(), Some("model" | "replicate")));
        history.observations.push(ObservationRecord {
            assignments: s.assignments.clone(),
            value: Some(objective(s)),
            ..Default::default()
        });
    }
    (history, state, n_init)
}

#[test]
fn open_suggestions_keep_the_stated_separation() {
    for algorithm in ["gp-ei", "gp-ucb", "gp-mes", "gp-ts"] {
        let mut local_pairs_over_seeds = 0;
        for seed in 0..3 {
            let spec: StudySpec = serde_json::from_value(json!({
                "parameters": [{"name": "x", "type": "float", "low": 0, "high": 10},
                               {"name": "y", "type": "float", "low": -1, "high": 1}],
                "objective": {"goal": "minimize"},
                "algorithm": {"name": algorithm},
                "seed": seed,
            }))
            .unwrap();
            let study = Study::new(spec).unwrap();
            let (mut history, state, _) = observe_sequentially(&study, smooth);
            let first = study.suggest(&history, &state, &SuggestRequest { count: 4, context: None }).unwrap();
            for s in &first.suggestions {
                history.pending.push(PendingRecord { assignments: s.assignments.clone(), ..Default::default() });
            }
            let second = study.suggest(&history, &first.state, &SuggestRequest { count: 4, context: None }).unwrap();
            // (call, suggestion) of every open point.
            let open: Vec<(usize, &Suggestion)> =
                first.suggestions.iter().map(|s| (0, s)).chain(second.suggestions.iter().map(|s| (1, s))).collect();
            assert!(open.iter().all(|(_, s)| s.diagnostics.phase.as_deref() == Some("model")));
            let ell = open.iter().map(|(_, s)| min_lengthscale(s)).fold(LENGTHSCALE_CAP, f64::min);
            let local = |s: &Suggestion| s.diagnostics.extra.get("search").and_then(|v| v.as_str()) == Some("local");
            let mut local_pairs = 0;
            for (i, (call_a, a)) in open.iter().enumerate() {
                for (call_b, b) in &open[i + 1..] {
                    let same_call = call_a == call_b && algorithm == "gp-ei";
                    local_pairs += usize::from(same_call && local(a) && local(b));
                    let floor = if same_call { SEPARATION * LOCAL_RADIUS * ell } else { SEPARATION * ell };
                    let (ua, ub) = (unit(a), unit(b));
                    let dist = ((ua[0] - ub[0]).powi(2) + (ua[1] - ub[1]).powi(2)).sqrt();
                    assert!(
                        dist >= floor * (1.0 - 1e-9),
                        "{algorithm} seed {seed}: open points {ua:?} and {ub:?} are {dist} apart, below {floor}"
                    );
                }
            }
            local_pairs_over_seeds += local_pairs;
        }
        // gp-ei's batches hold local steps (up to three of every four points; none where the box is exhausted), so
        // the box-scaled floor was exercised; the other policies take none.
        assert_eq!(
            local_pairs_over_seeds > 0,
            algorithm == "gp-ei",
            "{algorithm}: {local_pairs_over_seeds} local pairs"
        );
    }
}

/// A gp-ei call of eight holds two global picks: the lead one, chosen first, keeps the box-scaled floor from the
/// call's other points like a local step; the later one, chosen at its place in the cycle, keeps the full
/// `SEPARATION · min(ℓ, cap)` from every other point of the call. On a 1-D bowl, where the call's fantasies crowd the
/// incumbent's neighbourhood and the acquisition is largest just beside them.
#[test]
fn a_call_s_later_global_pick_keeps_the_full_separation() {
    let bowl = |s: &Suggestion| {
        let u = s.assignments["x"].as_f64().unwrap() / 10.0;
        (u - 0.3).powi(2) + 0.1 * (3.0 * u).sin()
    };
    let unit = |s: &Suggestion| s.assignments["x"].as_f64().unwrap() / 10.0;
    for seed in 0..3 {
        let spec: StudySpec = serde_json::from_value(json!({
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 10}],
            "objective": {"goal": "minimize"},
            "algorithm": {"name": "gp-ei"},
            "seed": seed,
        }))
        .unwrap();
        let study = Study::new(spec).unwrap();
        let (history, state, n_init) = observe_sequentially(&study, bowl);
        let call = study.suggest(&history, &state, &SuggestRequest { count: 8, context: None }).unwrap().suggestions;
        assert!(call.iter().all(|s| s.diagnostics.phase.as_deref() == Some("model")), "seed {seed}: a re-run");
        // Places in the cycle, counted from the end of the initial design, in the call's order: the lead global
        // pick first, then the others in cycle order.
        let places = call_places(SEQUENTIAL - n_init, 8);
        let later = places.iter().rposition(|p| p.is_multiple_of(LOCAL_CYCLE)).unwrap();
        assert!(later > 0, "seed {seed}: a call of eight holds two global places");
        let global = |s: &Suggestion| s.diagnostics.extra.get("search").and_then(|v| v.as_str()) == Some("global");
        assert!(global(&call[0]) && global(&call[later]), "seed {seed}: the global places are global");
        let ell = call.iter().map(min_lengthscale).fold(LENGTHSCALE_CAP, f64::min);
        for (i, a) in call.iter().enumerate() {
            for (j, b) in call.iter().enumerate().skip(i + 1) {
                let floor = if i == later || j == later { SEPARATION * ell } else { SEPARATION * LOCAL_RADIUS * ell };
                let dist = (unit(a) - unit(b)).abs();
                assert!(
                    dist >= floor * (1.0 - 1e-9),
                    "seed {seed}: points {i} and {j} are {dist} apart, below {floor}"
                );
            }
        }
    }
}
