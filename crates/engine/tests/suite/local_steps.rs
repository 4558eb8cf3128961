//! Local steps of `gp-ei` (issue 20): after the initial design, of every `LOCAL_CYCLE` model-based points the first
//! is global and the others, unless their box is exhausted, local: within `max(LOCAL_RADIUS · min(ℓ_j, 0.5),
//! LOCAL_MIN_HALF_WIDTH)` of the incumbent in every dimension (ℓ the lengthscales the suggestion reports) with an
//! expected improvement of at least `LOCAL_MIN_EI`; `local_cycle: 1` turns them off. Sequentially and in batches.

use engine::data::{History, ObservationRecord};
use engine::policy::{LOCAL_CYCLE, LOCAL_MIN_EI, LOCAL_MIN_HALF_WIDTH, LOCAL_RADIUS};
use engine::study::Suggestion;
use engine::{PolicyState, Study, StudySpec, SuggestRequest};
use serde_json::{Value, json};

use crate::common::call_places;

/// A smooth bowl on [0, 10] × [-1, 1] (the unit-cube optimum at (0.3, 0.7)).
fn bowl(u: [f64; 2]) -> f64 {
    (u[0] - 0.3).powi(2) + 2.0 * (u[1] - 0.7).powi(2) + 0.1 * (3.0 * u[0]).sin()
}

/// The local box's half-width along a dimension of fitted lengthscale `l`.
fn half_width(l: f64) -> f64 {
    (LOCAL_RADIUS * l.min(0.5)).max(LOCAL_MIN_HALF_WIDTH)
}

fn unit(s: &Suggestion) -> [f64; 2] {
    [s.assignments["x"].as_f64().unwrap() / 10.0, (s.assignments["y"].as_f64().unwrap() + 1.0) / 2.0]
}

fn lengthscales(s: &Suggestion) -> Vec<f64> {
    let h = s.diagnostics.hyperparameters.as_ref().expect("model suggestions report their hyperparameters");
    h["components"][0]["lengthscales"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

fn study(options: Value, seed: u64) -> Study {
    let spec: StudySpec = serde_json::from_value(json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 10},
                       {"name": "y", "type": "float", "low": -1, "high": 1}],
        "objective": {"goal": "minimize"},
        "algorithm": {"name": "gp-ei", "options": options},
        "seed": seed,
    }))
    .unwrap();
    Study::new(spec).unwrap()
}

/// Runs `calls` suggest calls of `count` points, observing each batch; returns every model-based suggestion
/// (replicates included: they take their place in the cycle) with the best observed point (unit cube) at the time it
/// was made and its place in the cycle (counted from the end of the initial design). A call lists a re-run first,
/// then its lead global pick (its first global one, chosen before the others), then its other points in cycle order.
fn run(study: &Study, count: usize, calls: usize) -> Vec<(Suggestion, [f64; 2], usize)> {
    let (mut history, mut state, mut out) = (History::default(), PolicyState::default(), Vec::new());
    let mut best: Option<([f64; 2], f64)> = None;
    for _ in 0..calls {
        let r = study.suggest(&history, &state, &SuggestRequest { count, context: None }).unwrap();
        state = r.state;
        let model: Vec<&Suggestion> = r
            .suggestions
            .iter()
            .filter(|s| matches!(s.diagnostics.phase.as_deref(), Some("model" | "replicate")))
            .collect();
        let rerun = usize::from(model.first().is_some_and(|s| s.diagnostics.phase.as_deref() == Some("replicate")));
        let places: Vec<usize> =
            (out.len()..out.len() + rerun).chain(call_places(out.len() + rerun, model.len() - rerun)).collect();
        let at = best.map(|(u, _)| u);
        for (s, place) in model.into_iter().zip(places) {
            out.push((s.clone(), at.expect("the model follows observations"), place));
        }
        for s in r.suggestions {
            history.observations.push(ObservationRecord {
                assignments: s.assignments.clone(),
                value: Some(bowl(unit(&s))),
                ..Default::default()
            });
        }
        // Observed after the whole batch, as a lab would.
        for o in &history.observations {
            let u = [o.assignments["x"].as_f64().unwrap() / 10.0, (o.assignments["y"].as_f64().unwrap() + 1.0) / 2.0];
            let v = o.value.unwrap();
            if best.is_none_or(|(_, b)| v < b) {
                best = Some((u, v));
            }
        }
    }
    out
}

fn search(s: &Suggestion) -> &str {
    s.diagnostics.extra.get("search").and_then(Value::as_str).expect("plain GP suggestions report their search")
}

#[test]
fn local_steps_stay_in_their_box_on_the_stated_cycle() {
    let mut total_locals = 0;
    for count in [1, 4, 8] {
        for seed in 0..3 {
            let model = run(&study(json!({}), seed), count, 28usize.div_ceil(count));
            assert!(model.len() >= 2 * LOCAL_CYCLE, "count {count} seed {seed}: {} model points", model.len());
            let mut locals = 0;
            for (s, incumbent, i) in &model {
                let i = *i;
                if s.diagnostics.phase.as_deref() == Some("replicate") {
                    continue;
                }
                // Every LOCAL_CYCLE-th point is global; the others are local unless their box is exhausted.
                if i.is_multiple_of(LOCAL_CYCLE) || search(s) == "global" {
                    assert_eq!(search(s), "global", "count {count} seed {seed}: model point {i}");
                    continue;
                }
                assert_eq!(search(s), "local");
                locals += 1;
                // Sequentially every local step is tested against the floor (in a batch only the first of a call).
                let log_ei = s.diagnostics.acquisition_value.expect("LogEI value");
                assert!(
                    count > 1 || log_ei >= LOCAL_MIN_EI.ln(),
                    "count {count} seed {seed}: local point {i} has ln EI {log_ei}"
                );
                // On this noiseless bowl the observation of largest posterior mean is the best observed one.
                let u = unit(s);
                for (j, l) in lengthscales(s).iter().enumerate() {
                    let half = half_width(*l);
                    assert!(
                        (u[j] - incumbent[j]).abs() <= half * (1.0 + 1e-9),
                        "count {count} seed {seed}: local point {i} {u:?} is {} from the incumbent {incumbent:?} in \
                         dimension {j}, beyond {half}",
                        (u[j] - incumbent[j]).abs()
                    );
                }
            }
            // Local steps happen until the bowl's minimum is found (then the box is exhausted).
            assert!(locals >= 1, "count {count} seed {seed}: no local step");
            total_locals += locals;
        }
    }
    assert!(total_locals >= 12, "{total_locals} local steps over nine runs");
}

#[test]
fn local_cycle_one_makes_every_step_global() {
    let model = run(&study(json!({"local_cycle": 1}), 0), 1, 20);
    assert!(model.len() >= 8);
    assert!(model.iter().all(|(s, _, _)| matches!(search(s), "global" | "replicate")));
}
