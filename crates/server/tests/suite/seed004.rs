//! Seed 004 over HTTP: a `he-gp-ucb` study with three lengthscale candidates (`kernel.candidates`) runs an
//! ask-tell loop on a function of the medium candidate's RKHS, and `GET /v1/studies/{id}` shows which candidates survive and at which
//! iteration each eliminated one was removed (Ziomek et al. 2024, Algorithm 1). The long-lengthscale candidate is
//! confidently wrong on this function (its interpolant overshoots between the observations), so the doubly
//! optimistic argmax picks it, its prediction error exceeds its confidence width and it is eliminated; the
//! candidate matching the function's wiggles survives. Everything is seeded, so the run is deterministic.

use crate::common;

use common::backends;
use serde_json::{Value, json};

/// The objective: an element of the RKHS of the "medium" candidate (RBF, ℓ = 0.1) with norm ≈ 0.95 ≤ B = 1,
/// `f = Σ_j a_j k(·, c_j)`, so the medium model's confidence bounds hold at every step (Theorem 3.1) and it is
/// never eliminated; its variation on a scale of 0.1 is what the long lengthscale cannot follow.
fn f(x: f64) -> f64 {
    let k = |c: f64| (-(x - c).powi(2) / (2.0 * 0.1 * 0.1)).exp();
    0.6 * k(0.2) - 0.5 * k(0.5) + 0.55 * k(0.8)
}

const ROUNDS: usize = 15;
const N_INIT: usize = 3;

fn spec() -> Value {
    json!({
        "name": "seed004 lengthscale candidates",
        "parameters": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0}],
        "algorithm": {"name": "he-gp-ucb", "options": {"initial_design": N_INIT}},
        "kernel": {
            "candidates": [
                {"name": "short", "family": "rbf", "lengthscale": 0.05},
                {"name": "medium", "family": "rbf", "lengthscale": 0.1},
                {"name": "long", "family": "rbf", "lengthscale": 1.0}
            ],
            "confidence": {"setting": "frequentist", "rkhs_norm_bound": 1.0, "noise_bound": 0.01, "delta": 0.1}
        },
        "seed": 11
    })
}

fn candidate<'a>(policy: &'a Value, name: &str) -> &'a Value {
    policy["candidates"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("candidate {name} missing from {policy}"))
}

#[test]
fn he_gp_ucb_study_eliminates_the_wrong_lengthscale_and_shows_when() {
    for srv in backends() {
        let b = srv.backend;
        let study = srv.create_study(spec());
        let id = study["id"].as_str().expect("study id").to_string();
        assert_eq!(study["algorithm_in_use"], "he-gp-ucb", "{b}");

        // chosen candidate (None during the initial design) and survivors announced with every suggestion
        let mut chosen: Vec<Option<String>> = Vec::new();
        for round in 0..ROUNDS {
            let (sug, _) = srv.ask_tell(&id, |a| f(a["x"].as_f64().expect("x")));
            let d = &sug["diagnostics"];
            if round < N_INIT {
                assert_eq!(d["phase"], "initial_design", "{b} round {round}: {sug}");
                chosen.push(None);
            } else {
                let c = d["extra"]["candidate"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{b} round {round}: no candidate in {sug}"));
                let surviving: Vec<&str> = d["extra"]["surviving_candidates"]
                    .as_array()
                    .expect("survivors")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                assert!(surviving.contains(&c), "{b} round {round}: chose {c}, not among survivors {surviving:?}");
                chosen.push(Some(c.to_string()));
            }
        }

        let got = srv.get(&format!("/v1/studies/{id}")).expect(200).json;
        assert_eq!(got["counts"]["observations"], ROUNDS, "{b}");
        let policy = &got["policy"];
        let surviving: Vec<&str> = policy["surviving_candidates"]
            .as_array()
            .expect("surviving list")
            .iter()
            .filter_map(Value::as_str)
            .collect();

        // the long lengthscale was chosen, was wrong and is gone; the iteration of its removal is reported
        let long = candidate(policy, "long");
        assert_eq!(long["surviving"], false, "{b}: {policy}");
        assert!(!surviving.contains(&"long"), "{b}: {surviving:?}");
        let at = long["eliminated_at_iteration"].as_u64().unwrap_or_else(|| panic!("{b}: no iteration in {long}"));
        // iterations count observations from 1: the first model-based query is iteration N_INIT + 1
        assert!((N_INIT as u64 + 1..=ROUNDS as u64).contains(&at), "{b}: eliminated at {at}");
        assert!(long["selected"].as_u64().is_some_and(|n| n >= 1), "{b}: {long}");
        // its summed error exceeds its summed confidence widths (the test of Algorithm 1, line 12)
        let (err, width) =
            (long["error_sum"].as_f64().expect("error sum"), long["beta_sigma_sum"].as_f64().expect("width sum"));
        assert!(err.abs() > width, "{b}: |{err}| ≤ {width}");
        // it was picked at iteration `at` and never again
        assert_eq!(chosen[at as usize - 1].as_deref(), Some("long"), "{b}: {chosen:?}");
        assert!(chosen[at as usize..].iter().all(|c| c.as_deref() != Some("long")), "{b}: {chosen:?}");

        // the candidate matching the function survives and reports no elimination
        let medium = candidate(policy, "medium");
        assert_eq!(medium["surviving"], true, "{b}: {policy}");
        assert!(medium["eliminated_at_iteration"].is_null(), "{b}: {medium}");
        assert!(surviving.contains(&"medium"), "{b}: {surviving:?}");
        for c in policy["candidates"].as_array().expect("candidates") {
            assert_eq!(c["surviving"] == true, c["eliminated_at_iteration"].is_null(), "{b}: {c}");
        }
    }
}
