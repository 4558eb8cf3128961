//! `latency`: engine suggest time (hyperparameter refit + acquisition optimisation, `gp-ei`) against the number
//! of observations n ∈ {25, 50, 100, 200, 500, 1000} and dimension d ∈ {2, 6, 12}; median and 95th percentile over
//! repeats. `--quick` stops at n = 200; `--sizes 25,50` measures only those n.
//!
//! Each repeat is the situation of a running study: n observations of Levy-d (scrambled Sobol points plus uniform
//! ones), the policy state holding the hyperparameters fitted at n − 1 observations (the warm start), and a refit
//! forced for the measured call (`refit_every: 1`), so the time includes a full hyperparameter fit. The state also
//! holds the output warp's choice made at n − 1, so from n = 20 on the measured refit is one between choices (fits
//! the chosen model alone), as most refits of a running study are: the choice is made again once n/10 more
//! observations arrived (`docs/algorithms.md`, `output_warping`) and then costs one more quasi-Newton run.
//!
//! Two numbers per call: wall time (method `gp-ei`, what a client waits for) and the CPU time of the calling
//! thread (method `gp-ei-thread-cpu`, from `/proc/thread-self/schedstat`), which other load on the machine does
//! not inflate. The engine is single-threaded, so on a quiet machine the two agree.
//!
//! Levy's observations are deterministic, but its fine structure makes gp-ei's model noisy, so by default the
//! measured call is a replicate (a re-run of an observed point, no acquisition; `docs/algorithms.md`,
//! "Replicates"). `--options '{"replicates": 0}'` (merged into the studies' `algorithm.options`) measures the
//! acquisition instead.
//!
//! `--noise F` measures a noisy study with replicates instead: Gaussian noise of standard deviation F times the
//! range of the n noiseless values, and every fifth observation a re-run of the one before, so refits also fit the
//! nugget model (`docs/algorithms.md`, "The nugget model").

use engine::{History, ObservationRecord, PolicyState, Study, SuggestRequest, testfunctions::TestFunction};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, StandardNormal};
use serde_json::json;

use crate::Args;
use crate::format::{Experiment, Latency, Method, SuiteResult};
use crate::plot::{Band, plot_experiment};
use crate::runner::{runs_by_repetition, thread_cpu_ms, unit_assignments, unit_parameters};

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("latency", args.quick);
    let ns: Vec<usize> = [25, 50, 100, 200, 500, 1000]
        .into_iter()
        .filter(|&n| (!args.quick || n <= 200) && args.sizes.as_ref().is_none_or(|s| s.contains(&n)))
        .collect();
    anyhow::ensure!(!ns.is_empty(), "--sizes selects none of 25, 50, 100, 200, 500, 1000 (200 at most with --quick)");
    anyhow::ensure!(args.noise.is_finite() && args.noise >= 0.0, "--noise must be a fraction >= 0");
    let mut options = args.algorithm_options()?;
    options.insert("refit_every".into(), json!(1));
    let mut table = Vec::new();
    for d in [2usize, 6, 12] {
        let name = format!("suggest_latency_d{d}");
        if !args.selected(&name) {
            continue;
        }
        let repeats = args.n_seeds(9, 5);
        let mut wall_per_n: Vec<Vec<f64>> = Vec::new();
        let mut cpu_per_n: Vec<Vec<f64>> = Vec::new();
        for &n in &ns {
            let reps = if n >= 500 { repeats.min(5) } else { repeats };
            let (wall, cpu): (Vec<f64>, Vec<f64>) = (0..reps as u64)
                .map(|r| measure(d, n, r, &options, args.noise))
                .collect::<anyhow::Result<Vec<_>>>()?
                .into_iter()
                .unzip();
            let (lat, cpu_lat) = (Latency::of(&wall), Latency::of(&cpu));
            eprintln!(
                "[latency] d={d} n={n}: wall median {:.1} ms, p95 {:.1} ms; thread CPU median {:.1} ms ({reps} repeats)",
                lat.median, lat.p95, cpu_lat.median
            );
            table.push((d, n, lat, cpu_lat));
            wall_per_n.push(wall);
            cpu_per_n.push(cpu);
        }
        let exp = Experiment {
            name: name.clone(),
            description: format!(
                "gp-ei suggest time with a forced warm-started hyperparameter refit, Levy-{d}, by number of observations"
            ),
            metric: "latency_ms".into(),
            better: "lower".into(),
            x_axis: "n_observations".into(),
            optimum: None,
            budget: None,
            methods: vec![
                Method::new("gp-ei", "proposed", runs_by_repetition(&ns, &wall_per_n)),
                Method::new("gp-ei-thread-cpu", "reference", runs_by_repetition(&ns, &cpu_per_n)),
            ],
        };
        plot_experiment(&exp, &args.out, &format!("latency_d{d}"), Band::MedianIqr)?;
        result.experiments.push(exp);
    }
    println!("\nsuggest latency (gp-ei, refit), milliseconds");
    println!("  {:>3} {:>6} {:>12} {:>10} {:>14}", "d", "n", "wall median", "wall p95", "CPU median");
    for (d, n, l, c) in &table {
        println!("  {d:>3} {n:>6} {:>12.1} {:>10.1} {:>14.1}", l.median, l.p95, c.median);
    }
    Ok(result)
}

/// One timed suggest at `n` observations in `d` dimensions, with these `algorithm.options` and noise (a fraction of
/// the values' range; see the module docs): (wall ms, thread CPU ms).
fn measure(
    d: usize,
    n: usize,
    repeat: u64,
    options: &serde_json::Map<String, serde_json::Value>,
    noise: f64,
) -> anyhow::Result<(f64, f64)> {
    let f = TestFunction::levy(d);
    let spec = serde_json::from_value(json!({
        "parameters": unit_parameters(d),
        "objective": {"goal": "minimize"},
        "algorithm": {"name": "gp-ei", "options": options},
        "seed": repeat,
    }))?;
    let study = Study::new(spec).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut history = levy_history(&f, n, repeat, noise);
    // Warm start: the state after a suggest at n − 1 observations.
    let last = history.observations.pop();
    let warm = study.suggest(&history, &PolicyState::default(), &SuggestRequest { count: 1, context: None })?.state;
    history.observations.extend(last);
    let (started, cpu_started) = (std::time::Instant::now(), thread_cpu_ms());
    let out = study.suggest(&history, &warm, &SuggestRequest { count: 1, context: None })?;
    let (ms, cpu_ms) = (started.elapsed().as_secs_f64() * 1e3, thread_cpu_ms() - cpu_started);
    anyhow::ensure!(out.suggestions[0].diagnostics.refit == Some(true), "the measured call did not refit");
    Ok((ms, cpu_ms))
}

/// The `n` observations of a repeat: `f` at uniform points of the unit cube (seeded by `repeat`); with `noise` > 0,
/// Gaussian noise of standard deviation `noise` times the range of the noiseless values, and every fifth point a
/// re-run of the one before (see the module docs). Without noise the points are those of the suite before
/// `--noise` existed (the same draws in the same order).
fn levy_history(f: &TestFunction, n: usize, repeat: u64, noise: f64) -> History {
    let d = f.dim();
    let mut rng = StdRng::seed_from_u64(1000 + repeat);
    let mut points: Vec<Vec<f64>> = Vec::with_capacity(n);
    for i in 0..n {
        let replicate = noise > 0.0 && i % 5 == 4;
        points.push(if replicate { points[i - 1].clone() } else { (0..d).map(|_| rng.random::<f64>()).collect() });
    }
    let values: Vec<f64> = points.iter().map(|u| f.eval_unit(u)).collect();
    let range =
        values.iter().copied().fold(f64::NEG_INFINITY, f64::max) - values.iter().copied().fold(f64::INFINITY, f64::min);
    let mut history = History::default();
    for (u, v) in points.iter().zip(values) {
        let e: f64 = if noise > 0.0 { StandardNormal.sample(&mut rng) } else { 0.0 };
        history.observations.push(ObservationRecord {
            assignments: unit_assignments(u),
            value: Some(v + noise * range * e),
            ..Default::default()
        });
    }
    history
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noisy_history_holds_replicates_whose_values_differ_and_the_deterministic_one_is_exact() {
        let f = TestFunction::levy(3);
        let exact = levy_history(&f, 20, 0, 0.0);
        let noisy = levy_history(&f, 20, 0, 0.1);
        let same = |a: &ObservationRecord, b: &ObservationRecord| a.assignments == b.assignments;
        let obs = &exact.observations;
        // Deterministic: twenty distinct points, each value the function's.
        assert!((0..20).all(|i| (0..i).all(|j| !same(&obs[i], &obs[j]))));
        let mut rng = StdRng::seed_from_u64(1000);
        for o in obs {
            let u: Vec<f64> = (0..3).map(|_| rng.random::<f64>()).collect();
            assert_eq!(o.assignments, unit_assignments(&u));
            assert_eq!(o.value, Some(f.eval_unit(&u)));
        }
        // Noisy: points 4, 9, 14, 19 re-run the one before with another value; no other point repeats.
        let obs = &noisy.observations;
        for i in 0..20 {
            let repeats_previous = i > 0 && same(&obs[i], &obs[i - 1]);
            assert_eq!(repeats_previous, i % 5 == 4, "point {i}");
            if repeats_previous {
                assert_ne!(obs[i].value, obs[i - 1].value);
            }
        }
        // The first four points are the deterministic history's (the same draws), their values noisy ones.
        for (a, b) in obs.iter().zip(&exact.observations).take(4) {
            assert!(same(a, b));
            assert_ne!(a.value, b.value);
        }
    }
}
