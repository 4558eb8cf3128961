//! `gp-ei` maximises noisy EI (Letham et al. 2019) once the fitted noise is at least `NOISY_EI_MIN_NOISE` of the
//! outputs' variance, and LogEI over the best posterior mean on deterministic values or with `noisy_ei_draws: 0`;
//! each suggestion says which in `diagnostics.extra.noisy_ei`. The first fits on a few deterministic values may still
//! explain part of them as noise, so the checks look at the last ten model-based suggestions of each run.

use engine::data::{History, ObservationRecord};
use engine::{PolicyState, SuggestRequest};

use crate::common::{bowl, unit_square_gp_ei};
use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

/// `noisy_ei` of every model-based suggestion of a 40-evaluation run (replicates, which have no acquisition, aside),
/// with observations `bowl + N(0, noise²)`.
fn flags(options: Value, noise: f64, seed: u64) -> Vec<bool> {
    let study = unit_square_gp_ei(options, seed);
    let (mut history, mut state, mut out) = (History::default(), PolicyState::default(), Vec::new());
    let mut rng = StdRng::seed_from_u64(seed);
    let normal = Normal::new(0.0, noise.max(f64::MIN_POSITIVE)).unwrap();
    for _ in 0..40 {
        let r = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        state = r.state;
        let s = &r.suggestions[0];
        if s.diagnostics.phase.as_deref() == Some("model") {
            out.push(s.diagnostics.extra.get("noisy_ei").and_then(Value::as_bool).expect("gp-ei reports noisy_ei"));
        }
        let (x, y) = (s.assignments["x"].as_f64().unwrap(), s.assignments["y"].as_f64().unwrap());
        let noise = if noise > 0.0 { normal.sample(&mut rng) } else { 0.0 };
        history.observations.push(ObservationRecord {
            assignments: s.assignments.clone(),
            value: Some(bowl(x, y) + noise),
            ..Default::default()
        });
    }
    out
}

#[test]
fn noisy_values_get_noisy_ei_and_deterministic_ones_logei() {
    for seed in 0..3 {
        let deterministic = flags(json!({}), 0.0, seed);
        assert!(deterministic.len() >= 15, "seed {seed}: {} model suggestions", deterministic.len());
        // The first fits on a few points may still explain part of the bowl as noise; once it is resolved, none.
        let tail = &deterministic[deterministic.len() - 10..];
        assert!(tail.iter().all(|f| !f), "seed {seed}: noisy EI on deterministic values: {deterministic:?}");
        // Noise of standard deviation 0.1 against outputs spread over ~1: the fitted noise is far above 1e-4.
        let noisy = flags(json!({}), 0.1, seed);
        let tail = &noisy[noisy.len() - 10..];
        assert!(tail.iter().all(|f| *f), "seed {seed}: the last ten noisy suggestions should use noisy EI: {noisy:?}");
        let off = flags(json!({"noisy_ei_draws": 0}), 0.1, seed);
        assert!(off.iter().all(|f| !f), "seed {seed}: noisy_ei_draws 0 must keep LogEI: {off:?}");
    }
}
