//! `seed002`: stochastic BO with an unknown context distribution (Huang, Song, Xue, Qian, "Stochastic Bayesian
//! Optimization with Unknown Continuous Context Distribution via Kernel Density Estimation", AAAI 2024).
//!
//! Protocol (App. B.2, code defaults where the paper is silent; `shared/research/seed-experiments.md` §002.3):
//! seeds 100–104; 10 Sobol initial decisions; 350 evaluations in total (the code's `--running_rounds`); noiseless
//! y; after each decision the environment draws a context from the problem's distribution (clipped to [0, 1]) and
//! the client reports it with the value, exactly as a client of the HTTP API would. Metric: cumulative regret
//! Σ_t [F* − F(x_t)] over all evaluations including the initial ones, F by QMC over 2^21 unscrambled Sobol contexts
//! pushed through the inverse CDF (2^18 for the 4-context Ackley), F* the code's constant; Complicated Hartmann:
//! cumulative observed reward Σ_t f(x_t, c_t). Methods: `sbo-kde`, `drbo-kde` (proposed), `stableopt`,
//! `drbo-mmd`, and context-blind `gp-ucb` (a study without the context parameters), all with √β = 1.5.
//! Timing experiment (Table 1): Ackley, 100 evaluations, wall seconds of the whole ask-tell loop per method.
//!
//! `--quick`: 2 seeds, Ackley and Newsvendor, 60 evaluations, and the timing experiment with 1 seed.
//!
//! Portfolio (3 decisions + 2 contexts, uniform and N(0.5, 0.1²)-clipped contexts): f = −(posterior mean of the
//! 3000-point CVXPortfolio GP surrogate), `crate::surrogates::Surrogate::portfolio`, checked against the data
//! file's check pairs to 1e-9 relative.
//!
//! Deviations: the code feeds the unclipped context draw to the learner; our API validates every context against
//! its declared range, so the learner sees the clipped value. Portfolio: F(x) by a tensor 32×32 Gauss–Legendre
//! rule over the 2-D context (normal: the density on [0, 1] as weight plus the two clipped point masses) instead of
//! 2^16 QMC points, which cost ~2 s per decision through the 3000-point surrogate (the rule: 1156 evaluations,
//! ~70 ms); a test checks the rule against the 2^16 QMC value at three decisions per context distribution (observed
//! differences ≤ 2e-5, the QMC error; F spans units) and against a 48-node rule (≤ 4e-9). The code's portfolio F* (20, 22) are
//! placeholders; ours are the multi-start maxima of F (`seed002_problems::PORTFOLIO_UNIFORM_OPTIMUM`). Ackley 2+4
//! has no code constant F*; its F* is F(0.5, 0.5) by the same QMC rule, since that decision maximises f(·, c) for
//! every context (`seed002_problems::ACKLEY_ARGMAX`), so every slice of a sliced run scores against the same F*.

use std::time::Instant;

use engine::sampling::derive_seed;
use rand::{SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use super::seed002_problems::{Problem, Score, problems};
use crate::Args;
use crate::format::{Experiment, Latency, Method, Run, SuiteResult};
use crate::plot::{Band, plot_experiment};
use crate::runner::{Outcome, parallel_map, run_loop, thread_cpu_ms};

/// The compared algorithms and their roles.
const METHODS: &[(&str, &str)] = &[
    ("sbo-kde", "proposed"),
    ("drbo-kde", "proposed"),
    ("stableopt", "baseline"),
    ("gp-ucb", "baseline"),
    ("drbo-mmd", "baseline"),
];

/// The methods to run: all, or those named by `--methods`.
fn methods(args: &Args) -> Vec<(&'static str, &'static str)> {
    METHODS.iter().copied().filter(|(m, _)| args.method_selected(m)).collect()
}

/// Initial Sobol decisions (the code's `--init_size`).
const INITIAL: usize = 10;

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("seed002", args.quick);
    let seeds = args.run_seeds(100, 5, 2);
    let budget = if args.quick { 60 } else { 350 };
    for p in problems() {
        if args.quick && !matches!(p.name, "ackley" | "newsvendor") || !args.selected(p.name) {
            continue;
        }
        let rule = p.rule();
        let jobs: Vec<(&str, u64)> =
            methods(args).into_iter().flat_map(|(m, _)| seeds.iter().map(move |s| (m, *s))).collect();
        let runs = parallel_map(p.name, &jobs, |(method, seed)| one_run(&p, method, *seed, budget));
        let mut runs: Vec<Option<(Run, Vec<f64>)>> = jobs
            .iter()
            .zip(runs)
            .map(|((m, s), r)| r.map_err(|e| eprintln!("[{}] {m} seed {s} failed: {e}", p.name)).ok())
            .collect();
        // Score: F of every decision (QMC), or the observed values.
        let optimum = rule.as_ref().and_then(|rule| p.f_star(rule));
        let mut expectations: Vec<Vec<f64>> = Vec::new();
        if let Some(rule) = &rule {
            expectations = parallel_map(&format!("{} F(x)", p.name), &runs, |r| {
                r.as_ref().map_or(Vec::new(), |(run, _)| {
                    decisions(run, p.dx).iter().map(|x| p.expectation(x, rule)).collect()
                })
            });
        }
        for (i, slot) in runs.iter_mut().enumerate() {
            if let Some((run, values)) = slot {
                let per_step: Vec<f64> = match (p.score, optimum) {
                    (Score::CumulativeRegret, Some(f_star)) => expectations[i].iter().map(|f| f_star - f).collect(),
                    _ => values.clone(),
                };
                run.y = per_step.iter().scan(0.0, |acc, v| Some(*acc + v).inspect(|a| *acc = *a)).collect();
            }
        }
        let methods = methods(args)
            .into_iter()
            .map(|(name, role)| {
                let rs: Vec<Run> = jobs
                    .iter()
                    .zip(&runs)
                    .filter(|((m, _), _)| *m == name)
                    .filter_map(|(_, r)| r.as_ref().map(|(run, _)| run.clone()))
                    .collect();
                Method::new(name, role, rs)
            })
            .collect();
        let (metric, better) = match p.score {
            Score::CumulativeRegret => ("cumulative_regret", "lower"),
            Score::CumulativeReward => ("cumulative_reward", "higher"),
        };
        let f_star_note = match (p.score, p.optimum, p.argmax) {
            (Score::CumulativeRegret, Some(_), _) if p.gauss_legendre.is_some() => {
                "F* = our multi-start maximum of F (the code's constant is a placeholder)".to_string()
            }
            (Score::CumulativeRegret, Some(_), _) => "F* = the code's constant".to_string(),
            (Score::CumulativeRegret, None, Some(x)) => {
                format!("F* = F({x:?}), the maximiser of f(·, c) for every c (no code constant)")
            }
            _ => "observed rewards".to_string(),
        };
        let f_rule = match p.gauss_legendre {
            Some(nodes) => format!("a {nodes}×{nodes}-node Gauss–Legendre rule (the paper: 2^{} QMC)", p.qmc_log2),
            None => format!("2^{} QMC points", p.qmc_log2),
        };
        let exp = Experiment {
            name: p.name.into(),
            description: format!(
                "{}; {} seeds, {budget} evaluations ({INITIAL} Sobol initial), F by {f_rule}; {f_star_note}",
                p.description,
                seeds.len(),
            ),
            metric: metric.into(),
            better: better.into(),
            x_axis: "iteration".into(),
            optimum,
            budget: Some(budget as f64),
            methods,
        };
        plot_experiment(&exp, &args.out, &format!("seed002_{}", p.name), Band::MeanStderr)?;
        result.experiments.push(exp);
    }
    if args.selected("timing") {
        result.experiments.extend(timing(args)?);
    }
    Ok(result)
}

/// The decisions of a run (stored in `x` as a flat list while scoring; see [`one_run`]).
fn decisions(run: &Run, dx: usize) -> Vec<Vec<f64>> {
    run.y.chunks_exact(dx).map(<[f64]>::to_vec).collect()
}

/// The study spec of `method` on `p` (context-blind `gp-ucb` sees only the decisions).
fn spec(p: &Problem, method: &str, seed: u64) -> anyhow::Result<engine::StudySpec> {
    let mut params: Vec<Value> =
        (0..p.dx).map(|i| json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 1})).collect();
    let blind = method == "gp-ucb";
    if !blind {
        params.extend(
            (0..p.dc)
                .map(|i| json!({"name": format!("c{i}"), "type": "float", "low": 0, "high": 1, "role": "context"})),
        );
    }
    let options = if blind {
        json!({"initial_design": INITIAL, "beta": 2.25})
    } else {
        json!({"initial_design": INITIAL, "sqrt_beta": 1.5})
    };
    Ok(serde_json::from_value(json!({
        "parameters": params,
        "objective": {"name": p.name, "goal": "maximize"},
        "algorithm": {"name": method, "options": options},
        "seed": seed,
    }))?)
}

/// One ask-tell run. Returns the run with its decisions flattened into `y` (replaced by the score later) and the
/// observed values.
fn one_run(p: &Problem, method: &str, seed: u64, budget: usize) -> anyhow::Result<(Run, Vec<f64>)> {
    let spec = spec(p, method, seed)?;
    let mut env = StdRng::seed_from_u64(derive_seed(seed, 0xC0_47E7));
    let started = Instant::now();
    let steps = run_loop(
        spec,
        budget,
        |s| {
            let x: Vec<f64> = (0..p.dx).map(|i| s.assignments[&format!("x{i}")].as_f64().unwrap_or(0.5)).collect();
            let c = p.context.sample(p.dc, &mut env);
            let mut assignments = s.assignments.clone();
            if method != "gp-ucb" {
                for (i, v) in c.iter().enumerate() {
                    assignments.insert(format!("c{i}"), json!(v));
                }
            }
            Outcome { assignments, value: (p.f)(&x, &c), cost: None }
        },
        |_| false,
    )?;
    let wall_s = started.elapsed().as_secs_f64();
    let flat: Vec<f64> = steps
        .iter()
        .flat_map(|s| (0..p.dx).map(move |i| s.assignments[&format!("x{i}")].as_f64().unwrap_or(f64::NAN)))
        .collect();
    let values: Vec<f64> = steps.iter().map(|s| s.value).collect();
    let ms: Vec<f64> = steps.iter().map(|s| s.suggest_ms).collect();
    let run = Run {
        seed,
        x: (1..=steps.len()).map(|i| i as f64).collect(),
        y: flat,
        evaluations: Some(steps.len()),
        wall_s: Some(wall_s),
        suggest_ms: Some(Latency::of(&ms)),
        ..Default::default()
    };
    Ok((run, values))
}

/// Table 1: wall seconds of 100 evaluations on Ackley (2+1) per method; the curve is the cumulative suggest time.
fn timing(args: &Args) -> anyhow::Result<Vec<Experiment>> {
    let p = problems().into_iter().find(|p| p.name == "ackley").ok_or_else(|| anyhow::anyhow!("no ackley"))?;
    let seeds = args.run_seeds(100, 10, 1);
    let jobs: Vec<(&str, u64)> =
        methods(args).into_iter().flat_map(|(m, _)| seeds.iter().map(move |s| (m, *s))).collect();
    let runs = parallel_map("timing", &jobs, |(method, seed)| {
        let spec = spec(&p, method, *seed)?;
        let mut env = StdRng::seed_from_u64(derive_seed(*seed, 0xC0_47E7));
        let (started, cpu_started) = (Instant::now(), thread_cpu_ms());
        let steps = run_loop(
            spec,
            100,
            |s| {
                let x: Vec<f64> = (0..p.dx).map(|i| s.assignments[&format!("x{i}")].as_f64().unwrap_or(0.5)).collect();
                let c = p.context.sample(p.dc, &mut env);
                let mut assignments = s.assignments.clone();
                if *method != "gp-ucb" {
                    assignments.insert("c0".into(), json!(c[0]));
                }
                Outcome { assignments, value: (p.f)(&x, &c), cost: None }
            },
            |_| false,
        )?;
        let wall_s = started.elapsed().as_secs_f64();
        let cpu_s = (thread_cpu_ms() - cpu_started) / 1e3;
        let ms: Vec<f64> = steps.iter().map(|s| s.suggest_ms).collect();
        let y: Vec<f64> = ms.iter().scan(0.0, |acc, v| Some(*acc + v / 1e3).inspect(|a| *acc = *a)).collect();
        let run = Run {
            seed: *seed,
            x: (1..=y.len()).map(|i| i as f64).collect(),
            y,
            evaluations: Some(steps.len()),
            wall_s: Some(wall_s),
            suggest_ms: Some(Latency::of(&ms)),
            ..Default::default()
        };
        let cpu = Run { seed: *seed, x: vec![steps.len() as f64], y: vec![cpu_s], ..Default::default() };
        anyhow::Ok((run, cpu))
    });
    let collect = |pick: fn(&(Run, Run)) -> Run| -> Vec<Method> {
        methods(args)
            .into_iter()
            .map(|(name, role)| {
                let rs: Vec<Run> = jobs
                    .iter()
                    .zip(&runs)
                    .filter(|((m, _), _)| *m == name)
                    .filter_map(|(_, r)| r.as_ref().ok().map(pick))
                    .collect();
                Method::new(name, role, rs)
            })
            .collect()
    };
    let cpu = Experiment {
        name: "timing_ackley_100_thread_cpu".into(),
        description: "Table 1 as CPU seconds of the run's thread (the whole ask-tell loop; insensitive to other load)"
            .into(),
        metric: "cpu_seconds".into(),
        better: "lower".into(),
        x_axis: "iteration".into(),
        optimum: None,
        budget: Some(100.0),
        methods: collect(|r| r.1.clone()),
    };
    let methods = collect(|r| r.0.clone());
    let exp = Experiment {
        name: "timing_ackley_100".into(),
        description: format!(
            "Table 1: seconds spent in suggest over 100 evaluations of Ackley (2+1), {} seed(s); paper (GPU, 10 \
             runs): GP-UCB 11.35, DRBO-MMD 5254.65, StableOpt 32.75, SBO-KDE 30.57, DRBO-KDE 180.61",
            seeds.len()
        ),
        metric: "wall_seconds".into(),
        better: "lower".into(),
        x_axis: "iteration".into(),
        optimum: None,
        budget: Some(100.0),
        methods,
    };
    plot_experiment(&exp, &args.out, "seed002_timing", Band::MeanStderr)?;
    Ok(vec![exp, cpu])
}
