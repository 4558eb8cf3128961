//! Deterministic ask-tell loop of one context policy (seed 002) for profiling (development aid):
//! `cargo run --release -p engine --example ctxprof -- <sbo-kde|drbo-kde|stableopt|drbo-mmd|gp-ucb> <evaluations>
//! [seed] [dc]`.
//! Scenario: the seed002 Ackley problem (2 decisions + `dc` contexts, default 1; contexts N(0.5, 0.15²) clipped,
//! drawn by a fixed generator after each suggestion and reported with the value), 10 Sobol initial decisions,
//! √β = 1.5. Prints the thread CPU time of the whole loop, the CPU time of the last 10 suggestions (the cost at
//! n ≈ evaluations) with the acquisition evaluations they took (L-BFGS steps vary with rounding, so compare CPU per
//! evaluation across versions) and their wall time in fitting, and a fingerprint of the bits of every suggested decision, so that an optimisation can be
//! checked to leave the suggestions unchanged.
use std::f64::consts::{E, PI};

use engine::{History, ObservationRecord, PolicyState, Study, StudySpec, SuggestRequest};
use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

fn ackley(u: &[f64]) -> f64 {
    let z: Vec<f64> = u.iter().map(|v| 65.536 * v - 32.768).collect();
    let d = z.len() as f64;
    let sq = (z.iter().map(|v| v * v).sum::<f64>() / d).sqrt();
    let cs = z.iter().map(|v| (2.0 * PI * v).cos()).sum::<f64>() / d;
    -(-20.0 * (-0.2 * sq).exp() - cs.exp() + 20.0 + E)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let algo = args.first().map_or("sbo-kde", String::as_str);
    let budget: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(40);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let dc: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let blind = algo == "gp-ucb";
    let mut params: Vec<Value> =
        (0..2).map(|i| json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 1})).collect();
    if !blind {
        params.extend(
            (0..dc).map(|i| json!({"name": format!("c{i}"), "type": "float", "low": 0, "high": 1, "role": "context"})),
        );
    }
    let options = if blind {
        json!({"initial_design": 10, "beta": 2.25})
    } else {
        json!({"initial_design": 10, "sqrt_beta": 1.5})
    };
    let spec: StudySpec = serde_json::from_value(json!({"parameters": params, "objective": {"goal": "maximize"},
        "algorithm": {"name": algo, "options": options}, "seed": seed}))
    .unwrap();
    let study = Study::new(spec).unwrap();
    let mut env = StdRng::seed_from_u64(seed ^ 0xC0_47E7);
    let normal = Normal::<f64>::new(0.5, 0.15).unwrap();
    let mut history = History::default();
    let mut state = PolicyState::default();
    let mut fingerprint: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |v: u64| {
        fingerprint ^= v;
        fingerprint = fingerprint.wrapping_mul(0x0100_0000_01b3);
    };
    let cpu0 = cpu_ms();
    let mut tail_cpu = 0.0;
    let (mut tail_evals, mut tail_fit_ms) = (0u64, 0.0);
    let mut shown = Vec::new();
    for t in 0..budget {
        let before = cpu_ms();
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        if t + 10 >= budget {
            tail_cpu += cpu_ms() - before;
        }
        state = out.state;
        let s = out.suggestions.into_iter().next().unwrap();
        if t + 10 >= budget {
            tail_evals += s.diagnostics.extra.get("acquisition_evaluations").and_then(Value::as_u64).unwrap_or(0);
            tail_fit_ms += s.diagnostics.fit_ms.unwrap_or(0.0);
        }
        let x: Vec<f64> = (0..2).map(|i| s.assignments[&format!("x{i}")].as_f64().unwrap()).collect();
        x.iter().for_each(|v| mix(v.to_bits()));
        let c: Vec<f64> = (0..dc).map(|_| normal.sample(&mut env).clamp(0.0, 1.0)).collect();
        if t < 2 || t + 1 == budget || std::env::var("SHOW_ALL").is_ok() {
            shown.push(format!("{t}: {x:?}"));
        }
        let value = ackley(&[x.clone(), c.clone()].concat());
        let mut assignments = s.assignments.clone();
        if !blind {
            for (i, v) in c.iter().enumerate() {
                assignments.insert(format!("c{i}"), json!(v));
            }
        }
        history.observations.push(ObservationRecord { assignments, value: Some(value), ..Default::default() });
    }
    println!(
        "{algo} n={budget} seed={seed} dc={dc}: cpu {:.0} ms, last 10 suggestions {:.0} ms ({tail_evals} acquisition \
         evaluations, {tail_fit_ms:.0} ms fitting), fingerprint {fingerprint:016x}",
        cpu_ms() - cpu0,
        tail_cpu
    );
    shown.iter().for_each(|s| println!("  {s}"));
}

/// CPU time of this thread in milliseconds from /proc/thread-self/schedstat (insensitive to other load).
fn cpu_ms() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) * 1e-6
}
