//! Deterministic ask-tell loop of one policy on a fixed scenario, for profiling (development aid):
//! `cargo run --release -p engine --example policyprof -- <bo|lse|grid> <algorithm> <evaluations> [seed]`.
//! Prints the thread CPU time, a fingerprint of every suggestion (bits of x, level) so that an optimisation can be
//! checked to leave the suggestions unchanged, and the first/last suggestions. `bo`: the seed003 synthetic_bo setup
//! (unit square, 50×50 representer points, known SE prior ℓ = 0.1, σ² = 1e-6) on a fixed smooth function; `lse`:
//! the synthetic LSE setup (50×50 candidate grid, three noise levels with costs, h = 0.6); `grid`: the SVM-grid
//! setup (25×14×4 integer grid, Matérn-5/2 ARD re-learned every 3 samples); `cvs`: 12-D, the 7 control sets of
//! seed 000 (MC samples from the `MC` environment variable, default 32). `expected <n> [M] [controlled]` times the
//! batched expected UCB of the control-set policies alone.
use engine::{History, ObservationRecord, PointExtras, PolicyState, Study, StudySpec, SuggestRequest};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

fn f2(u: &[f64]) -> f64 {
    let bump = |cx: f64, cy: f64, w: f64, a: f64| a * (-((u[0] - cx).powi(2) + (u[1] - cy).powi(2)) / w).exp();
    bump(0.3, 0.7, 0.02, 1.0) + bump(0.75, 0.25, 0.01, 0.8) + 0.3 * (7.0 * u[0]).sin() * (5.0 * u[1]).cos()
}

/// `expected <n> [M] [controlled]`: CPU time of value-and-gradient evaluations of the batched expected UCB
/// (`ExpectedUcb`) on a 12-D RBF GP with n random points, M samples, the first `controlled` inputs controlled.
fn expected(args: &[String]) {
    use engine::acquisition::{Acquisition, ExpectedUcb};
    use engine::gp::{Data, Gp, GpConfig, Hyperparameters};
    let arg = |i: usize, default: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    let (n, m, q, d) = (arg(1, 300), arg(2, 64), arg(3, 6), 12);
    let mut rng = StdRng::seed_from_u64(1);
    let x: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
    let y: Vec<f64> = x.chunks_exact(d).map(|p| f2(p) - (p[2] - 0.3).powi(2)).collect();
    let mut config = GpConfig::default_for(d);
    config.kernel = engine::kernel::Kernel::ard(engine::kernel::KernelFamily::Rbf, d);
    let hypers = Hyperparameters { theta: vec![-0.7; d + 1], noise_variance: 1e-4, mean: 0.0 };
    let gp = Gp::new(&Data::new(d, x, y), &config, hypers).unwrap();
    let samples: Vec<f64> = (0..m * (d - q)).map(|_| rng.random::<f64>()).collect();
    let acq = ExpectedUcb::new(&gp, 2.0, (0..q).collect(), (q..d).collect(), samples);
    let evals = 200;
    let points: Vec<f64> = (0..evals * q).map(|_| rng.random::<f64>()).collect();
    let mut grad = vec![0.0; q];
    let mut check = 0.0;
    let cpu0 = cpu_ms();
    for x in points.chunks_exact(q) {
        check += acq.value_and_grad(x, &mut grad) + grad[0];
    }
    let per_grad = (cpu_ms() - cpu0) / evals as f64;
    let cpu0 = cpu_ms();
    let values = acq.values(&points);
    let per_value = (cpu_ms() - cpu0) / evals as f64;
    check += values.iter().sum::<f64>();
    println!(
        "expected n={n} M={m} q={q}: {per_grad:.3} ms per value+gradient, {per_value:.3} ms per value (check {check:.6e})"
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scenario = args.first().map_or("bo", String::as_str);
    if scenario == "expected" {
        return expected(&args);
    }
    let algo = args.get(1).map_or("truvar", String::as_str);
    let budget: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(30);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
    let prior = json!({"kernel": "rbf", "fixed": {"lengthscales": [0.1], "outputscale": 1.0, "noise_variance": 1e-6},
        "initial_design": 1});
    let unit2 = json!([{"name": "x0", "type": "float", "low": 0, "high": 1},
        {"name": "x1", "type": "float", "low": 0, "high": 1}]);
    let spec: Value = match scenario {
        "bo" => json!({"parameters": unit2, "algorithm": {"name": algo, "options": prior}, "seed": seed}),
        "lse" => {
            let mut p = prior.clone();
            p["fixed"]["noise_variance"] = json!(0.0);
            json!({"parameters": unit2, "candidates": {"grid": {"x0": {"count": 50}, "x1": {"count": 50}}},
                "level_set": {"threshold": 0.6},
                "noise_levels": [{"name": "precise", "noise_variance": 1e-6, "cost": 15},
                    {"name": "medium", "noise_variance": 1e-3, "cost": 10},
                    {"name": "rough", "noise_variance": 0.05, "cost": 2}],
                "algorithm": {"name": algo, "options": p}, "seed": seed})
        }
        "grid" => json!({"parameters": [{"name": "x0", "type": "int", "low": 0, "high": 24},
                {"name": "x1", "type": "int", "low": 0, "high": 13}, {"name": "x2", "type": "int", "low": 0, "high": 3}],
            "objective": {"goal": "minimize"},
            "candidates": {"grid": {"x0": {"count": 25}, "x1": {"count": 14}, "x2": {"count": 4}}},
            "algorithm": {"name": algo, "options": {"refit_every": 3, "initial_design": 1}}, "seed": seed}),
        "cvs" => {
            let params: Vec<Value> = (0..12)
                .map(|i| {
                    json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 1,
                    "distribution": {"type": "truncated_normal", "mean": 0.5, "variance": 0.02}})
                })
                .collect();
            let sets = [
                vec![0, 1, 2],
                vec![3, 4, 5],
                vec![6, 7, 8],
                vec![9, 10, 11],
                (0..6).collect(),
                (6..12).collect(),
                (0..12).collect::<Vec<usize>>(),
            ];
            let costs = [0.01, 0.01, 0.01, 0.1, 0.1, 0.1, 1.0];
            let sets: Vec<Value> = sets
                .iter()
                .zip(costs)
                .enumerate()
                .map(|(k, (s, c))| {
                    json!({"name": format!("s{k}"),
                    "parameters": s.iter().map(|i| format!("x{i}")).collect::<Vec<_>>(), "cost": c})
                })
                .collect();
            let samples: usize = std::env::var("MC").ok().and_then(|v| v.parse().ok()).unwrap_or(32);
            json!({"parameters": params, "control_sets": sets,
                "algorithm": {"name": algo, "options": {"mc_samples": samples, "raw_samples": samples, "restarts": 1,
                    "refit_every": 10, "explore_cost": 15.0}}, "seed": seed})
        }
        other => panic!("unknown scenario {other}"),
    };
    let spec: StudySpec = serde_json::from_value(spec).unwrap();
    let study = Study::new(spec).unwrap();
    let mut rng = StdRng::seed_from_u64(seed ^ 0xF00D);
    let mut history = History::default();
    let mut state = PolicyState::default();
    let mut fingerprint: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |v: u64| {
        fingerprint ^= v;
        fingerprint = fingerprint.wrapping_mul(0x0100_0000_01b3);
    };
    let cpu0 = cpu_ms();
    let wall0 = std::time::Instant::now();
    let mut shown = Vec::new();
    for t in 0..budget {
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        state = out.state;
        let s = out.suggestions.into_iter().next().unwrap();
        let get = |k: &str| s.assignments.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let x: Vec<f64> = match scenario {
            "grid" => vec![get("x0"), get("x1"), get("x2")],
            // Uncontrolled parameters are drawn by the objective (here: their mean plus a fixed perturbation).
            "cvs" => (0..12)
                .map(|i| {
                    s.assignments
                        .get(&format!("x{i}"))
                        .and_then(Value::as_f64)
                        .unwrap_or(0.5 + 0.1 * rng.random::<f64>() - 0.05)
                })
                .collect(),
            _ => vec![get("x0"), get("x1")],
        };
        x.iter().for_each(|v| mix(v.to_bits()));
        s.extras.noise_level.as_deref().unwrap_or("").bytes().for_each(|b| mix(u64::from(b)));
        if t < 3 || t + 1 == budget || std::env::var("SHOW_ALL").is_ok() {
            shown.push(format!("{t}: {x:?} {:?}", s.extras.noise_level));
        }
        let value = match scenario {
            "grid" => -f2(&[x[0] / 24.0, x[1] / 13.0]) + 0.05 * x[2],
            "cvs" => f2(&x[..2]) - x[2..6].iter().map(|v| (v - 0.3).powi(2)).sum::<f64>(),
            _ => f2(&x) + 1e-3 * rng.random::<f64>(),
        };
        let assignments = match scenario {
            "cvs" => x.iter().enumerate().map(|(i, v)| (format!("x{i}"), json!(v))).collect(),
            _ => s.assignments.clone(),
        };
        history.observations.push(ObservationRecord {
            assignments,
            value: Some(value),
            cost: s.extras.expected_cost,
            extras: PointExtras {
                control_set: s.extras.control_set.clone(),
                noise_level: s.extras.noise_level.clone(),
                ..PointExtras::default()
            },
            ..Default::default()
        });
    }
    println!(
        "{scenario} {algo} n={budget} seed={seed}: cpu {:.0} ms, wall {:.0} ms, fingerprint {fingerprint:016x}",
        cpu_ms() - cpu0,
        wall0.elapsed().as_secs_f64() * 1e3
    );
    shown.iter().for_each(|s| println!("  {s}"));
}

/// CPU time of this thread in milliseconds from /proc/thread-self/schedstat (insensitive to other load).
fn cpu_ms() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) * 1e-6
}
