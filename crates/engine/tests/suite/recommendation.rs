//! The recommendation (`best`'s `recommended`, `docs/algorithms.md`): the observed point of largest posterior mean
//! among the five best, polished within 0.03 · min(ℓ_j, 0.5) of it; never a point the data do not support.

use engine::data::{History, ObservationRecord};
use engine::{PolicyState, Study, StudySpec};
use serde_json::json;

/// A noisy 2-D study (gp-ei on the unit square) observed only in x0 ≤ 0.5, where the objective still rises
/// steeply towards x0 = 0.5: the posterior mean keeps rising beyond the data, which a maximiser over the whole
/// square would follow.
fn rising_edge() -> (Study, History) {
    let spec: StudySpec = serde_json::from_value(json!({
        "parameters": [
            {"name": "x0", "type": "float", "low": 0, "high": 1},
            {"name": "x1", "type": "float", "low": 0, "high": 1}
        ],
        "objective": {"name": "y", "goal": "maximize"},
        "algorithm": {"name": "gp-ei"},
        "seed": 3
    }))
    .expect("spec parses");
    let study = Study::new(spec).expect("spec validates");
    let observations = (0..30)
        .map(|i| {
            let t = i as f64;
            let (x0, x1) = (0.5 * ((0.13 + 0.618 * t) % 1.0), (0.71 + 0.382 * t) % 1.0);
            // Deterministic "noise" of ±0.05 on a steep rise in x0 and a bump in x1.
            let noise = 0.05 * (7.3 * t).sin();
            let y = 4.0 * x0 - 3.0 * (x1 - 0.4) * (x1 - 0.4) + noise;
            ObservationRecord {
                assignments: serde_json::from_value(json!({"x0": x0, "x1": x1})).unwrap(),
                value: Some(y),
                ..Default::default()
            }
        })
        .collect();
    (study, History { observations, ..Default::default() })
}

#[test]
fn the_recommendation_stays_next_to_an_observed_point() {
    let (study, history) = rising_edge();
    let rec = study.recommend(&history, &PolicyState::default()).expect("recommends").expect("a model exists");
    let at = |a: &engine::Assignments, k: &str| a[k].as_f64().expect("float");
    let (r0, r1) = (at(&rec.assignments, "x0"), at(&rec.assignments, "x1"));
    // On the unit square encoded = raw, and the box is at most 0.03 · 0.5 = 0.015 wide each way.
    let near = history.observations.iter().any(|o| {
        (at(&o.assignments, "x0") - r0).abs() <= 0.015 + 1e-12 && (at(&o.assignments, "x1") - r1).abs() <= 0.015 + 1e-12
    });
    assert!(near, "recommended ({r0}, {r1}) is not within the box of any observation");
    assert!(r0 <= 0.5 + 0.015, "recommended x0 = {r0} extrapolates beyond the data (x0 ≤ 0.5)");
    // And it is one of the good points: its x0 is among the largest observed.
    let mut x0s: Vec<f64> = history.observations.iter().map(|o| at(&o.assignments, "x0")).collect();
    x0s.sort_by(|a, b| b.total_cmp(a));
    assert!(r0 >= x0s[9] - 0.015, "recommended x0 = {r0} is not among the ten largest observed ({:?})", &x0s[..10]);
}
