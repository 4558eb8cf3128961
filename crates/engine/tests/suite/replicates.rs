//! Replicates (`gp-ei`'s `replicates`, `docs/algorithms.md`): on a noisy model without declared noise, `gp-ei`
//! re-runs the observation of largest posterior mean a few times (phase `replicate`); the recommendation then gives
//! back the part of the model's noise that the replicates show to be structure, and changes nothing where they show
//! it to be noise. A best observation far above the model's best mean is re-run as a challenger, and recommended
//! when its re-runs, not the lucky first value, show it to be better.

use engine::data::{History, ObservationRecord, PendingRecord};
use engine::{Assignments, PolicyState, SuggestRequest};
use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

use crate::common::{bowl, unit_square_gp_ei};

fn coords(a: &Assignments) -> (f64, f64) {
    (a["x"].as_f64().expect("x"), a["y"].as_f64().expect("y"))
}

/// The bowl plus deterministic structure at a scale far below the data's spacing (a hash of the point, in
/// [0, 0.2)): reproducible, but to a GP on 40–80 points indistinguishable from noise.
fn rippled(x: f64, y: f64) -> f64 {
    let hash = ((12.9898 * x + 78.233 * y).sin() * 43_758.545_3).rem_euclid(1.0);
    bowl(x, y) + 0.2 * hash
}

/// Runs `n` sequential suggestions on `f` plus N(0, noise²) (declared as `value_stddev` if `declare`); returns the
/// history and the phase of every suggestion.
fn run(options: Value, f: fn(f64, f64) -> f64, noise: f64, declare: bool, n: usize) -> (History, Vec<String>) {
    let study = unit_square_gp_ei(options, 5);
    let (mut history, mut state, mut phases) = (History::default(), PolicyState::default(), Vec::new());
    let mut rng = StdRng::seed_from_u64(11);
    let normal = Normal::new(0.0, noise.max(f64::MIN_POSITIVE)).expect("a normal");
    for _ in 0..n {
        let r = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).expect("suggests");
        state = r.state;
        let s = &r.suggestions[0];
        phases.push(s.diagnostics.phase.clone().unwrap_or_default());
        let (x, y) = coords(&s.assignments);
        let e = if noise > 0.0 { normal.sample(&mut rng) } else { 0.0 };
        history.observations.push(ObservationRecord {
            assignments: s.assignments.clone(),
            value: Some(f(x, y) + e),
            value_stddev: declare.then_some(noise),
            ..Default::default()
        });
    }
    (history, phases)
}

fn replicate_indices(phases: &[String]) -> Vec<usize> {
    phases.iter().enumerate().filter(|(_, p)| *p == "replicate").map(|(i, _)| i).collect()
}

#[test]
fn noisy_studies_get_spaced_replicates_of_observed_points() {
    let (history, phases) = run(json!({}), bowl, 0.1, false, 40);
    let reps = replicate_indices(&phases);
    // d = 2: an initial design of 10, then a scheduled replicate at model point 0 and one every 10 model points
    // while fewer than 3 degrees of freedom are replicated; a challenger's re-runs (of a point whose re-run beat the
    // model's best mean, here the scheduled one) count towards them. Every one is a re-run, checked below.
    assert_eq!(reps.first(), Some(&10), "phases {phases:?}");
    assert!((3..=6).contains(&reps.len()), "{} re-runs: {phases:?}", reps.len());
    assert!(reps.windows(2).all(|w| w[1] - w[0] <= 20), "replicates not spaced over the study: {reps:?}");
    for &i in &reps {
        let again = &history.observations[i].assignments;
        assert!(
            history.observations[..i].iter().any(|o| &o.assignments == again),
            "suggestion {i} ({again:?}) is not a re-run of an earlier observation"
        );
    }
}

#[test]
fn no_replicates_when_switched_off_declared_or_deterministic() {
    let (_, phases) = run(json!({"replicates": 0}), bowl, 0.1, false, 40);
    assert!(replicate_indices(&phases).is_empty(), "replicates: 0 still replicated: {phases:?}");
    let (_, phases) = run(json!({}), bowl, 0.1, true, 40);
    assert!(replicate_indices(&phases).is_empty(), "declared value_stddev still replicated: {phases:?}");
    // Deterministic fine structure looks like noise to the model: one replicate agrees exactly, and that settles it.
    let (_, phases) = run(json!({}), rippled, 0.0, false, 40);
    assert_eq!(replicate_indices(&phases).len(), 1, "phases {phases:?}");
}

/// The i-th point of a low-discrepancy (additive recurrence) sequence over the unit square.
fn scattered(i: usize) -> (f64, f64) {
    let t = i as f64;
    ((0.13 + 0.618_034 * t) % 1.0, (0.71 + 0.754_878 * t) % 1.0)
}

/// An observation of `value` at (x, y).
fn at(x: f64, y: f64, value: f64) -> ObservationRecord {
    ObservationRecord {
        assignments: serde_json::from_value(json!({"x": x, "y": y})).expect("assignments"),
        value: Some(value),
        ..Default::default()
    }
}

/// 80 scattered points of `rippled` (no noise), the best of them replicated if `replicate`.
fn rippled_history(replicate: bool) -> History {
    let mut observations: Vec<ObservationRecord> = (0..80)
        .map(|i| {
            let (x, y) = scattered(i);
            at(x, y, rippled(x, y))
        })
        .collect();
    if replicate {
        let best = observations.iter().min_by(|a, b| a.value.unwrap().total_cmp(&b.value.unwrap())).unwrap().clone();
        observations.push(best);
    }
    History { observations, ..Default::default() }
}

#[test]
fn exact_replicates_make_the_recommendation_the_best_observed_point() {
    let study = unit_square_gp_ei(json!({}), 5);
    let best = |h: &History| {
        h.observations.iter().min_by(|a, b| a.value.unwrap().total_cmp(&b.value.unwrap())).cloned().unwrap()
    };
    // Without replicates the model explains the ripples as noise and recommends elsewhere: the situation this
    // feature is for.
    let history = rippled_history(false);
    let rec = study.recommend(&history, &PolicyState::default()).expect("recommends").expect("a model");
    assert_ne!(coords(&rec.assignments), coords(&best(&history).assignments), "no smoothing to undo");
    // With the best point re-run and its value reproduced, the nugget is all structure: the observed value counts.
    let history = rippled_history(true);
    let rec = study.recommend(&history, &PolicyState::default()).expect("recommends").expect("a model");
    let top = best(&history);
    assert_eq!(coords(&rec.assignments), coords(&top.assignments));
    let predicted = rec.predicted.mean;
    assert!((predicted - top.value.unwrap()).abs() < 1e-6, "predicted {predicted}, observed {:?}", top.value);
}

#[test]
fn replicates_that_show_real_noise_leave_the_recommendation_to_the_model() {
    // Every point of a noisy bowl run twice (noise sd 0.1, the model's noise): the replicates' spread matches the
    // model's noise, so no observation's value is trusted over the model's mean, and the recommendation is the
    // polished model point, not an observed one.
    let mut rng = StdRng::seed_from_u64(4);
    let normal = Normal::new(0.0, 0.1).expect("a normal");
    let mut observations = Vec::new();
    for i in 0..30 {
        let (x, y) = scattered(i);
        for _ in 0..2 {
            observations.push(at(x, y, bowl(x, y) + normal.sample(&mut rng)));
        }
    }
    let history = History { observations, ..Default::default() };
    let rec = unit_square_gp_ei(json!({}), 5)
        .recommend(&history, &PolicyState::default())
        .expect("recommends")
        .expect("a model");
    let at = coords(&rec.assignments);
    assert!(
        history.observations.iter().all(|o| coords(&o.assignments) != at),
        "recommended an observed point {at:?} although the replicates show the noise is real"
    );
}

#[test]
fn a_pending_replicate_is_not_asked_for_again() {
    let study = unit_square_gp_ei(json!({}), 5);
    let (mut history, _) = run(json!({}), bowl, 0.1, false, 10);
    let ask = |history: &History| {
        let r = study.suggest(history, &PolicyState::default(), &SuggestRequest { count: 1, context: None });
        r.expect("suggests").suggestions.remove(0)
    };
    let first = ask(&history);
    assert_eq!(first.diagnostics.phase.as_deref(), Some("replicate"));
    // Another worker asks while the replicate runs: it gets a model point, not the same re-run.
    history.pending.push(PendingRecord { assignments: first.assignments.clone(), ..Default::default() });
    let second = ask(&history);
    assert_eq!(second.diagnostics.phase.as_deref(), Some("model"));
    assert_ne!(coords(&second.assignments), coords(&first.assignments));
}

/// 40 scattered points of the bowl plus N(0, 0.1²), three of them run twice (so the scheduled replicates are
/// done), and one more at `DIP` whose value is 0.8 below the bowl: luck or a narrow dip, the model cannot tell.
fn history_with_a_dip() -> History {
    let mut rng = StdRng::seed_from_u64(8);
    let normal = Normal::new(0.0, 0.1).expect("a normal");
    let mut observations = Vec::new();
    for i in 0..40 {
        let (x, y) = scattered(i);
        for _ in 0..(if i < 3 { 2 } else { 1 }) {
            observations.push(at(x, y, bowl(x, y) + normal.sample(&mut rng)));
        }
    }
    observations.push(at(DIP.0, DIP.1, bowl(DIP.0, DIP.1) - 0.8));
    History { observations, ..Default::default() }
}

const DIP: (f64, f64) = (0.62, 0.41);

fn ask(history: &History) -> engine::study::Suggestion {
    let study = unit_square_gp_ei(json!({}), 5);
    let r = study.suggest(history, &PolicyState::default(), &SuggestRequest { count: 1, context: None });
    r.expect("suggests").suggestions.remove(0)
}

fn recommended(history: &History) -> (f64, f64) {
    let rec = unit_square_gp_ei(json!({}), 5).recommend(history, &PolicyState::default()).expect("recommends");
    coords(&rec.expect("a model").assignments)
}

#[test]
fn a_dip_confirmed_by_two_re_runs_is_recommended() {
    let mut history = history_with_a_dip();
    assert_ne!(recommended(&history), DIP, "one lucky value alone must not be recommended");
    // The challenger is re-run, and again while its re-run still beats the model's best mean.
    for k in 0..2 {
        let s = ask(&history);
        assert_eq!(s.diagnostics.phase.as_deref(), Some("replicate"), "re-run {k}");
        assert_eq!(coords(&s.assignments), DIP, "re-run {k}");
        history.observations.push(at(DIP.0, DIP.1, bowl(DIP.0, DIP.1) - 0.8 + 0.05 * k as f64));
    }
    // Two re-runs are enough: the next point is the model's, and the recommendation is the dip.
    assert_eq!(ask(&history).diagnostics.phase.as_deref(), Some("model"));
    assert_eq!(recommended(&history), DIP);
}

#[test]
fn a_lucky_value_that_a_re_run_does_not_reproduce_is_dropped() {
    let mut history = history_with_a_dip();
    let s = ask(&history);
    assert_eq!((s.diagnostics.phase.as_deref(), coords(&s.assignments)), (Some("replicate"), DIP));
    // The re-run gives the bowl's value: luck, not a dip. No second re-run, and not recommended.
    history.observations.push(at(DIP.0, DIP.1, bowl(DIP.0, DIP.1) + 0.02));
    let next = ask(&history);
    assert_ne!(coords(&next.assignments), DIP, "re-ran a challenger its re-run refuted");
    assert_ne!(recommended(&history), DIP);
}

#[test]
fn no_challenger_without_an_outlier_or_when_switched_off() {
    // The same history without the dip: the best observation is within the noise of the model's best mean.
    let mut history = history_with_a_dip();
    history.observations.pop();
    assert_eq!(ask(&history).diagnostics.phase.as_deref(), Some("model"));
    let r = unit_square_gp_ei(json!({"replicates": 0}), 5)
        .suggest(&history_with_a_dip(), &PolicyState::default(), &SuggestRequest { count: 1, context: None })
        .expect("suggests");
    assert_eq!(r.suggestions[0].diagnostics.phase.as_deref(), Some("model"), "replicates: 0 still re-ran");
}
