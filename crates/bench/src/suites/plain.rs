//! `plain`: simple regret against iterations of the plain policies on Branin (40 evaluations), Hartmann-6 (100)
//! and Ackley-6 on [−32.768, 32.768]⁶ (100); 10 seeds (`--quick`: 3, same budgets).

use engine::testfunctions::TestFunction;
use serde_json::json;

use crate::Args;
use crate::format::{Experiment, Latency, Method, Run, SuiteResult};
use crate::plot::{Band, plot_experiment};
use crate::runner::{Outcome, parallel_map, run_loop, unit_parameters, unit_point};

/// The compared algorithms and their roles.
const METHODS: &[(&str, &str)] = &[
    ("gp-ei", "proposed"),
    ("gp-ucb", "proposed"),
    ("gp-mes", "proposed"),
    ("gp-ts", "proposed"),
    ("sobol", "reference"),
    ("random", "reference"),
];

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("plain", args.quick);
    let seeds = args.run_seeds(0, 10, 3);
    let problems = [(TestFunction::branin(), 40), (TestFunction::hartmann6(), 100), (TestFunction::ackley(6), 100)];
    for (f, budget) in problems {
        if !args.selected(&f.name) {
            continue;
        }
        let jobs: Vec<(&str, u64)> = METHODS.iter().flat_map(|(m, _)| seeds.iter().map(move |&s| (*m, s))).collect();
        let runs = parallel_map(&f.name, &jobs, |(method, seed)| one_run(&f, method, *seed, budget));
        let methods = METHODS
            .iter()
            .map(|(name, role)| {
                let rs: Vec<Run> = jobs
                    .iter()
                    .zip(&runs)
                    .filter(|((m, _), _)| m == name)
                    .filter_map(|(_, r)| r.as_ref().ok().cloned())
                    .collect();
                Method::new(name, role, rs)
            })
            .collect();
        for ((m, s), r) in jobs.iter().zip(&runs) {
            if let Err(e) = r {
                eprintln!("[{}] {m} seed {s} failed: {e}", f.name);
            }
        }
        let exp = Experiment {
            name: f.name.clone(),
            description: format!(
                "{} ({}-D), minimised, {budget} evaluations, simple regret of the best observed value",
                f.name,
                f.dim()
            ),
            metric: "simple_regret".into(),
            better: "lower".into(),
            x_axis: "iteration".into(),
            optimum: Some(f.optimum),
            budget: Some(budget as f64),
            methods,
        };
        plot_experiment(&exp, &args.out, &format!("plain_{}", f.name), Band::MedianIqr)?;
        result.experiments.push(exp);
    }
    Ok(result)
}

fn one_run(f: &TestFunction, method: &str, seed: u64, budget: usize) -> anyhow::Result<Run> {
    let spec = serde_json::from_value(json!({
        "parameters": unit_parameters(f.dim()),
        "objective": {"name": f.name, "goal": "minimize"},
        "algorithm": {"name": method},
        "seed": seed,
    }))?;
    let started = std::time::Instant::now();
    let d = f.dim();
    let steps = run_loop(
        spec,
        budget,
        |s| {
            let value = f.eval_unit(&unit_point(&s.assignments, d));
            Outcome { assignments: s.assignments.clone(), value, cost: None }
        },
        |_| false,
    )?;
    let mut best = f64::INFINITY;
    let y: Vec<f64> = steps
        .iter()
        .map(|s| {
            best = best.min(s.value);
            (best - f.optimum).max(0.0)
        })
        .collect();
    let ms: Vec<f64> = steps.iter().map(|s| s.suggest_ms).collect();
    Ok(Run {
        seed,
        x: (1..=y.len()).map(|i| i as f64).collect(),
        y,
        evaluations: Some(steps.len()),
        wall_s: Some(started.elapsed().as_secs_f64()),
        suggest_ms: Some(Latency::of(&ms)),
        ..Default::default()
    })
}
