//! The output warp's choice (`policy::model::choose_warp`) on its schedule: at every refit up to 19 observations,
//! then once a tenth more observations arrived since the last choice; between choices a refit keeps the chosen
//! model, and the policy state records where the choice was made.

use engine::data::{History, ObservationRecord};
use engine::{PolicyState, Study, StudySpec, SuggestRequest};
use serde_json::{Value, json};

/// Values spanning orders of magnitude around a smooth optimum: the warp's own test proposes a warp and the GP's
/// evidence keeps it (the log of the values is a smooth bowl).
fn heavy_tail(u: [f64; 2]) -> f64 {
    (8.0 * ((u[0] - 0.3).powi(2) + (u[1] - 0.6).powi(2))).exp()
}

fn study() -> Study {
    let spec: StudySpec = serde_json::from_value(json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1},
                       {"name": "y", "type": "float", "low": 0, "high": 1}],
        "objective": {"goal": "minimize"},
        "algorithm": {"name": "gp-ei"},
        "seed": 5,
    }))
    .unwrap();
    Study::new(spec).unwrap()
}

fn observation(u: [f64; 2]) -> ObservationRecord {
    ObservationRecord {
        assignments: [("x".to_string(), json!(u[0])), ("y".to_string(), json!(u[1]))].into_iter().collect(),
        value: Some(heavy_tail(u)),
        ..Default::default()
    }
}

/// `n` observations at a fixed quasi-random sequence.
fn history(n: usize) -> History {
    let mut h = History::default();
    for i in 0..n {
        let t = i as f64;
        h.observations.push(observation([(0.37 + t * 0.618_034).fract(), (0.11 + t * 0.754_878).fract()]));
    }
    h
}

/// The `model` entry of the policy state after one suggest at `n` observations from `state`.
fn model_after(study: &Study, n: usize, state: &PolicyState) -> (Value, PolicyState) {
    let r = study.suggest(&history(n), state, &SuggestRequest { count: 1, context: None }).unwrap();
    let model = r.state.0.get("model").cloned().expect("gp-ei keeps its model state");
    (model, r.state)
}

#[test]
fn the_warp_choice_is_kept_between_refits_until_a_tenth_more_observations_arrived() {
    let study = study();
    let (model, state) = model_after(&study, 40, &PolicyState::default());
    assert_eq!(model["warped"], json!(true), "{model}");
    assert_eq!(model["warp_chosen_at"], json!(40), "{model}");
    // Refits at 41..43 observations keep the choice made at 40 (a choice is due at 40 + 4).
    let mut state = state;
    for n in 41..44 {
        let (model, next) = model_after(&study, n, &state);
        assert_eq!(model["fitted_at"], json!(n), "a refit at every observation up to 200: {model}");
        assert_eq!(model["warp_chosen_at"], json!(40), "n = {n}: {model}");
        assert_eq!(model["warped"], json!(true), "n = {n}: {model}");
        state = next;
    }
    let (model, _) = model_after(&study, 44, &state);
    assert_eq!(model["warp_chosen_at"], json!(44), "{model}");
}

#[test]
fn small_studies_choose_at_every_refit_and_old_states_choose_at_their_next() {
    let study = study();
    let (_, state) = model_after(&study, 15, &PolicyState::default());
    let (model, _) = model_after(&study, 16, &state);
    assert_eq!(model["warp_chosen_at"], json!(16), "{model}");
    // A state stored before the schedule existed has no `warp_chosen_at`: it chooses at its next refit.
    let (_, mut state) = model_after(&study, 40, &PolicyState::default());
    state.0["model"].as_object_mut().unwrap().remove("warp_chosen_at");
    let (model, _) = model_after(&study, 41, &state);
    assert_eq!(model["warp_chosen_at"], json!(41), "{model}");
}
