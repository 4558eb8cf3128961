//! `seed001`: indirect query BO (paper 001, §7). Branin (minimised) on x1 ∈ [−5, 10], x2 ∈ [0, 15], queried only
//! through a ∈ [0, 1]² with p(x | a) = N(h(a), τ²I), τ² = 0.5, truncated to the box; h linear (LT:
//! x1 = 15a1 − 5, x2 = 15a2) or non-linear (NLT: x1 = 15cos(πa1/2) − 5, x2 = 15cos(πa2/2)).
//!
//! Our choices where the paper is silent (seed-experiments.md 001.4): D1 = 300 pairs with a ~ U[0,1]² and x drawn
//! from the conditional (fresh per run); CMP with RBF k (grid marginal likelihood), RBF ℓ (leave-one-out) and
//! λ = 1e-3; observation noise N(0, 0.1²) in experiment 1; the true aggregate g(a) is computed by a 32 × 32
//! quantile rule of the truncated normal (deterministic, ≈1e-3 accurate). All methods start with the same 5 Sobol
//! queries; recommendations x_t for every method come from the CMP posterior mean (paper's protocol).
//! Metrics: simple regret min_{s≤t} f(x_s) − f* and instant regret min_{s≤t} g(a_s) − f*, f* = 0.397887.
//!
//! Experiment 2 (multi-resolution, LT): quad-tree of height 6; a node is queried through its cell (the conditional
//! integrated over the cell), cost 0.5(l + 1), noise std 1/(l + 1); non-hierarchical methods use the 4096 leaves,
//! CMETS its active set; budget B = 100 (quick 40) cost units; regret against cost.
//!
//! Full: 5 runs, 100 iterations, LT and NLT, and experiment 2. `--quick`: 2 runs, 40 iterations, LT only, and
//! experiment 2 with B = 40.

use engine::blocks::indirect::embedding::truncated_normal;
use engine::testfunctions::branin;
use engine::{History, ObservationRecord, PointExtras, PolicyState, Study, SuggestRequest};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use crate::Args;
use crate::format::{Experiment, Latency, Method, Run, SuiteResult};
use crate::plot::{Band, plot_experiment};
use crate::runner::parallel_map;

const F_STAR: f64 = 0.397_887_357_729_738_2;
const TAU: f64 = std::f64::consts::FRAC_1_SQRT_2;
const N_PAIRS: usize = 300;
const QUAD: usize = 32;

#[derive(Clone, Copy, PartialEq)]
enum Transform {
    Linear,
    NonLinear,
}

impl Transform {
    fn h(self, a: f64) -> f64 {
        match self {
            Transform::Linear => a,
            Transform::NonLinear => (std::f64::consts::FRAC_PI_2 * a).cos(),
        }
    }

    fn means(self, a: &[f64]) -> (f64, f64) {
        (15.0 * self.h(a[0]) - 5.0, 15.0 * self.h(a[1]))
    }

    fn form(self) -> &'static str {
        match self {
            Transform::Linear => "affine",
            Transform::NonLinear => "cosine",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Transform::Linear => "LT",
            Transform::NonLinear => "NLT",
        }
    }
}

/// True aggregate g(a) = E[f(X) | a] by the product quantile rule of the truncated normals.
fn g_point(t: Transform, a: &[f64]) -> f64 {
    let (m1, m2) = t.means(a);
    let q: Vec<f64> = (0..QUAD).map(|i| (i as f64 + 0.5) / QUAD as f64).collect();
    let x1: Vec<f64> = q.iter().map(|u| truncated_normal(m1, TAU, -5.0, 10.0, *u)).collect();
    let x2: Vec<f64> = q.iter().map(|u| truncated_normal(m2, TAU, 0.0, 15.0, *u)).collect();
    let mut s = 0.0;
    for a in &x1 {
        for b in &x2 {
            s += branin(*a, *b);
        }
    }
    s / (QUAD * QUAD) as f64
}

/// The aggregate over a cell of the query cube (4 × 4 points of the cell).
fn g_cell(t: Transform, lo: &[f64], hi: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        for j in 0..4 {
            let a =
                [lo[0] + (i as f64 + 0.5) / 4.0 * (hi[0] - lo[0]), lo[1] + (j as f64 + 0.5) / 4.0 * (hi[1] - lo[1])];
            s += g_point(t, &a);
        }
    }
    s / 16.0
}

fn pairs(t: Transform, seed: u64) -> Vec<Value> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xD1);
    (0..N_PAIRS)
        .map(|_| {
            let a = [rng.random::<f64>(), rng.random::<f64>()];
            let (m1, m2) = t.means(&a);
            let x1 = truncated_normal(m1, TAU, -5.0, 10.0, rng.random());
            let x2 = truncated_normal(m2, TAU, 0.0, 15.0, rng.random());
            json!({"target": {"x1": x1, "x2": x2}, "query": {"a1": a[0], "a2": a[1]}})
        })
        .collect()
}

fn spec(t: Transform, method: &str, seed: u64, tree: bool) -> anyhow::Result<engine::StudySpec> {
    let mut block = json!({
        "query_parameters": [
            {"name": "a1", "type": "float", "low": 0.0, "high": 1.0},
            {"name": "a2", "type": "float", "low": 0.0, "high": 1.0}
        ],
        "pairs": pairs(t, seed),
        "regularizer": 1e-3
    });
    if tree {
        let levels: Vec<f64> = (0..=6).map(f64::from).collect();
        block["tree"] = json!({
            "height": 6,
            "cost": levels.iter().map(|l| 0.5 * (l + 1.0)).collect::<Vec<_>>(),
            "noise_std": levels.iter().map(|l| 1.0 / (l + 1.0)).collect::<Vec<_>>()
        });
    }
    let _ = t.form();
    Ok(serde_json::from_value(json!({
        "parameters": [
            {"name": "x1", "type": "float", "low": -5.0, "high": 10.0},
            {"name": "x2", "type": "float", "low": 0.0, "high": 15.0}
        ],
        "objective": {"name": "branin", "goal": "minimize"},
        "algorithm": {"name": method},
        "indirect": block,
        "seed": seed
    }))?)
}

struct Curves {
    simple: Run,
    instant: Run,
}

/// One run: `budget` iterations (experiment 1) or until the cost budget is spent (experiment 2).
fn one_run(
    t: Transform,
    method: &str,
    seed: u64,
    iterations: usize,
    cost_budget: Option<f64>,
) -> anyhow::Result<Curves> {
    let tree = cost_budget.is_some();
    let study = Study::new(spec(t, method, seed, tree)?).map_err(|e| anyhow::anyhow!("invalid spec: {e:?}"))?;
    let mut rng = StdRng::seed_from_u64(seed ^ 0x2015E);
    let (mut history, mut state) = (History::default(), PolicyState::default());
    let started = std::time::Instant::now();
    let (mut xs, mut simple, mut instant, mut ms) = (vec![], vec![], vec![], vec![]);
    let (mut best_f, mut best_g, mut spent) = (f64::INFINITY, f64::INFINITY, 0.0);
    let noise_sd = |level: Option<u32>| level.map_or(0.1, |l| 1.0 / (f64::from(l) + 1.0));
    loop {
        if xs.len() >= iterations || cost_budget.is_some_and(|b| spent >= b) {
            break;
        }
        let t0 = std::time::Instant::now();
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None })?;
        ms.push(t0.elapsed().as_secs_f64() * 1e3);
        state = out.state;
        let s = &out.suggestions[0];
        let q = s.extras.query.clone().ok_or_else(|| anyhow::anyhow!("no query"))?;
        let a = [q["a1"].as_f64().unwrap_or(0.5), q["a2"].as_f64().unwrap_or(0.5)];
        let level = s.diagnostics.extra.get("level").and_then(Value::as_u64).map(|l| l as u32);
        let g = match (tree, level) {
            (true, Some(l)) => {
                let w = 1.0 / f64::from(1u32 << l);
                let lo = [
                    (a[0] / w).floor().min(f64::from((1u32 << l) - 1)) * w,
                    (a[1] / w).floor().min(f64::from((1u32 << l) - 1)) * w,
                ];
                g_cell(t, &lo, &[lo[0] + w, lo[1] + w])
            }
            _ => g_point(t, &a),
        };
        let normal: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
        let z = g + noise_sd(level) * normal;
        spent += s.extras.expected_cost.unwrap_or(1.0);
        history.observations.push(ObservationRecord {
            extras: PointExtras { query: Some(q), ..PointExtras::default() },
            value: Some(z),
            ..Default::default()
        });
        let rec = study.recommend(&history, &state)?.ok_or_else(|| anyhow::anyhow!("no recommendation"))?;
        let f = branin(rec.assignments["x1"].as_f64().unwrap_or(0.0), rec.assignments["x2"].as_f64().unwrap_or(0.0));
        best_f = best_f.min(f);
        best_g = best_g.min(g);
        xs.push(if tree { spent } else { xs.len() as f64 + 1.0 });
        simple.push((best_f - F_STAR).max(0.0));
        instant.push((best_g - F_STAR).max(0.0));
    }
    let wall = started.elapsed().as_secs_f64();
    let run = |y: Vec<f64>| Run {
        seed,
        x: xs.clone(),
        y,
        evaluations: Some(xs.len()),
        wall_s: Some(wall),
        suggest_ms: Some(Latency::of(&ms)),
        ..Default::default()
    };
    Ok(Curves { simple: run(simple), instant: run(instant) })
}

fn role(m: &str) -> &'static str {
    if m == "cmes" || m == "cmets" { "proposed" } else { "baseline" }
}

#[allow(clippy::too_many_arguments)]
fn experiment(
    args: &Args,
    result: &mut SuiteResult,
    name: &str,
    description: &str,
    t: Transform,
    methods: &[&str],
    seeds: &[u64],
    iterations: usize,
    cost_budget: Option<f64>,
) -> anyhow::Result<()> {
    let jobs: Vec<(&str, u64)> = methods.iter().flat_map(|m| seeds.iter().map(move |&s| (*m, s))).collect();
    let runs = parallel_map(name, &jobs, |(m, s)| one_run(t, m, *s, iterations, cost_budget));
    for ((m, s), r) in jobs.iter().zip(&runs) {
        if let Err(e) = r {
            eprintln!("[{name}] {m} seed {s} failed: {e}");
        }
    }
    for (metric, pick) in [("simple_regret", 0), ("instant_regret", 1)] {
        let ms = methods
            .iter()
            .map(|m| {
                let rs: Vec<Run> = jobs
                    .iter()
                    .zip(&runs)
                    .filter(|((n, _), _)| n == m)
                    .filter_map(|(_, r)| r.as_ref().ok())
                    .map(|c| if pick == 0 { c.simple.clone() } else { c.instant.clone() })
                    .collect();
                Method::new(m, role(m), rs)
            })
            .collect();
        let exp = Experiment {
            name: format!("{name}/{metric}"),
            description: description.into(),
            metric: metric.into(),
            better: "lower".into(),
            x_axis: if cost_budget.is_some() { "cost".into() } else { "iteration".into() },
            optimum: Some(F_STAR),
            budget: Some(cost_budget.unwrap_or(iterations as f64)),
            methods: ms,
        };
        plot_experiment(&exp, &args.out, &format!("seed001_{}_{metric}", name.replace('/', "_")), Band::MeanStderr)?;
        result.experiments.push(exp);
    }
    Ok(())
}

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("seed001", args.quick);
    let seeds = args.run_seeds(0, 5, 2);
    let iterations = if args.quick { 40 } else { 100 };
    let transforms: &[Transform] =
        if args.quick { &[Transform::Linear] } else { &[Transform::Linear, Transform::NonLinear] };
    for &t in transforms {
        let name = format!("branin-{}", t.name());
        if !args.selected(&name) {
            continue;
        }
        let description = format!(
            "Branin through indirect queries ({}; tau^2 = 0.5; {N_PAIRS} pairs; noise sd 0.1), {iterations} iterations",
            t.name()
        );
        experiment(
            args,
            &mut result,
            &name,
            &description,
            t,
            &["cmes", "gp-mes", "gp-ucb", "gp-ei"],
            &seeds,
            iterations,
            None,
        )?;
    }
    let name = "branin-LT-tree";
    if args.selected(name) {
        let budget = if args.quick { 40.0 } else { 100.0 };
        let description = format!(
            "Branin (LT) on a quad-tree of height 6, cost 0.5(l+1), noise sd 1/(l+1), budget {budget}; regret vs cost"
        );
        experiment(
            args,
            &mut result,
            name,
            &description,
            Transform::Linear,
            &["cmets", "cmes", "gp-mes", "gp-ucb", "gp-ei"],
            &seeds,
            usize::MAX,
            Some(budget),
        )?;
    }
    Ok(result)
}
