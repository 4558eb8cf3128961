//! The default initial design: how many Sobol points a study takes before its model, by the number of decision
//! parameters (`crates/engine/src/policy/design.rs`).

use engine::data::{History, ObservationRecord};
use engine::{PolicyState, Study, StudySpec};
use serde_json::{Value, json};

/// Without `initial_design`, `gp-ei` suggests `clamp(2·d + 1, 10, 50)` Sobol points before its first model-based
/// one: the floor of 10 in 2-D, `2·d + 1` in 6 and 20 dimensions (`bench robust`'s Levy-20 gained from 41 against
/// the former cap of 20), and the cap of 50 in 30.
#[test]
fn the_default_initial_design_grows_with_the_dimension_up_to_its_cap() {
    for (d, expected) in [(2, 10), (6, 13), (20, 41), (30, 50)] {
        let parameters: Vec<Value> =
            (0..d).map(|j| json!({"name": format!("x{j}"), "type": "float", "low": 0, "high": 1})).collect();
        let spec: StudySpec = serde_json::from_value(json!({
            "parameters": parameters, "algorithm": {"name": "gp-ei"}, "seed": 5
        }))
        .expect("spec parses");
        let study = Study::new(spec).expect("valid study");
        let (mut history, mut state) = (History::default(), PolicyState::default());
        let mut design = 0;
        loop {
            let out = study.suggest(&history, &state, &engine::SuggestRequest { count: 1, context: None }).unwrap();
            state = out.state;
            let s = &out.suggestions[0];
            if s.diagnostics.phase.as_deref() != Some("initial_design") {
                let phase = s.diagnostics.phase.as_deref();
                assert!(matches!(phase, Some("model" | "replicate")), "d = {d}: {phase:?}");
                break;
            }
            design += 1;
            assert!(design <= expected, "d = {d}: more than {expected} design points");
            let value: f64 = s.assignments.values().map(|v| (v.as_f64().unwrap() - 0.3).powi(2)).sum();
            history.observations.push(ObservationRecord {
                assignments: s.assignments.clone(),
                value: Some(value),
                ..Default::default()
            });
        }
        assert_eq!(design, expected, "d = {d}");
    }
}
