//! `seed003`: TRUVAR (Bogunovic, Scarlett, Krause, Cevher, NIPS 2016), the paper's Sec. 4 protocol.
//!
//! - `synthetic_bo`: 200 functions (`--quick`: 20), each the posterior mean of a GP (SE, ℓ = 0.1, unit variance)
//!   through a joint draw at 200 uniform points of [0,1]²; noise σ² = 1e-6; every method uses that known prior.
//!   Metric: regret of the reported point (the maximiser of the posterior mean: 100×100 grid, then L-BFGS) against
//!   f's maximum found the same way, every 5 evaluations; summary: median and 5%-trimmed mean. TRUVAR (representer points: 50×50 grid) against EI,
//!   GP-UCB with β = theoretical/5, and MES (standing in for ES/MRS).
//! - `truvar_bo_variants`: the same functions and metric for two TRUVAR ablations (not in the paper): a = 1 in β,
//!   and the non-monotonic M_t (App. A).
//! - `synthetic_lse`: one GP draw (SE, ℓ = 0.1) on a 50×50 grid, h = 2.25, noise σ² ∈ {1e-6, 1e-3, 0.05} at costs
//!   {15, 10, 2}; TRUVAR chooses levels, GCHK runs at each fixed level; F1 of {μ ≥ h} against cumulative cost.
//!   100 runs (`--quick`: 5) differing in the first point and the noise.
//! - `svm_grid`: the 25×14×4 SVM grid (shared/data/svm_on_grid.json), noiseless, Matérn-5/2 ARD re-learned every
//!   3 samples, TRUVAR non-monotonic; best validation error so far; 100 random starts (`--quick`: 5).
//! - `lake_unit_cost`, `lake_movement_cost`: stand-in for Lake Zürich (data not public): a 50×50 transect drawn from
//!   a Matérn-5/2 GP (ℓ = 0.25 along, 0.15 in depth, unit variance) on position ∈ [0, 100], depth ∈ [0, 5], h = its
//!   70% quantile, noiseless; unit cost (TRUVAR, GCHK, STR, VAR; F1 against iterations) and the movement cost
//!   `0.25·|x1 − x1'| + 4·(|x2| + 1)` (TRUVAR against cost-blind GCHK; F1 against cost).
//!
//! Every method starts from one point of the study's Sobol sequence (so runs differ in their start).

mod functions;

use std::collections::BTreeMap;

use engine::gp::{Data, Gp};
use engine::kernel::KernelFamily;
use engine::policy::FixedHyperparameters;
use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

use crate::Args;
use crate::format::{Experiment, Latency, Method, Run, SuiteResult};
use crate::plot::{Band, plot_experiment};
use crate::runner::{Outcome, Step, parallel_map, run_loop};
use crate::stats;
use engine::testfunctions::known_gp;
use functions::{PosteriorMeanFunction, argmax_mean, f1, grid_index, sample_gp, unit_grid};

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("seed003", args.quick);
    type Exp = fn(&Args) -> anyhow::Result<(Experiment, Band, Vec<f64>)>;
    let all: [(&str, Exp); 6] = [
        ("synthetic_bo", synthetic_bo),
        ("truvar_bo_variants", truvar_bo_variants),
        ("synthetic_lse", synthetic_lse),
        ("svm_grid", svm_grid),
        ("lake_unit_cost", |a| lake(a, false)),
        ("lake_movement_cost", |a| lake(a, true)),
    ];
    for (name, f) in all {
        if !args.selected(name) {
            continue;
        }
        let (mut exp, band, checkpoints) = f(args)?;
        let table = exp.checkpoint_table(&checkpoints);
        println!("\n{name}: {}\n{table}", exp.description);
        exp.description = format!("{}\n{table}", exp.description);
        plot_experiment(&exp, &args.out, &format!("seed003_{name}"), band)?;
        result.experiments.push(exp);
    }
    Ok(result)
}

/// A labelled method: display name, role, algorithm spec.
struct Entry {
    name: String,
    role: &'static str,
    algorithm: Value,
}

fn entry(name: &str, role: &'static str, algorithm: Value) -> Entry {
    Entry { name: name.into(), role, algorithm }
}

/// Runs every (method, seed) job and groups the runs by method.
fn run_methods(
    label: &str,
    entries: &[Entry],
    seeds: &[u64],
    one: impl Fn(&Entry, u64) -> anyhow::Result<Run> + Sync,
) -> Vec<Method> {
    let jobs: Vec<(usize, u64)> = (0..entries.len()).flat_map(|m| seeds.iter().map(move |&s| (m, s))).collect();
    let runs = parallel_map(label, &jobs, |(m, s)| one(&entries[*m], *s));
    entries
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let rs: Vec<Run> = jobs
                .iter()
                .zip(&runs)
                .filter(|((m, _), _)| *m == k)
                .filter_map(|((_, s), r)| match r {
                    Ok(r) => Some(r.clone()),
                    Err(err) => {
                        eprintln!("[{label}] {} seed {s} failed: {err}", e.name);
                        None
                    }
                })
                .collect();
            Method::new(&e.name, e.role, rs)
        })
        .collect()
}

fn latency(steps: &[Step]) -> Latency {
    Latency::of(&steps.iter().map(|s| s.suggest_ms).collect::<Vec<_>>())
}

fn unit(a: &engine::Assignments, k: &str) -> f64 {
    a.get(k).and_then(Value::as_f64).unwrap_or(0.5)
}

/// The known prior every method of the synthetic experiments uses.
fn known_prior(family: &str, lengthscales: &[f64], noise: f64) -> Value {
    json!({"kernel": family, "fixed": {"lengthscales": lengthscales, "outputscale": 1.0, "noise_variance": noise}})
}

fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    base
}

// ---------------------------------------------------------------------------------------------------------------

/// Options of every `synthetic_bo` method: the known prior, one initial point, then `extra`.
fn bo_options(extra: Value) -> Value {
    with(with(known_prior("rbf", &[0.1], 1e-6), json!({"initial_design": 1})), extra)
}

fn synthetic_bo(args: &Args) -> anyhow::Result<(Experiment, Band, Vec<f64>)> {
    let entries = [
        entry("truvar", "proposed", json!({"name": "truvar", "options": bo_options(json!({}))})),
        entry("gp-ei", "baseline", json!({"name": "gp-ei", "options": bo_options(json!({}))})),
        entry(
            "gp-ucb (β/5)",
            "baseline",
            json!({"name": "gp-ucb", "options": bo_options(json!({"beta_theoretical_scale": 0.2}))}),
        ),
        entry("gp-mes", "baseline", json!({"name": "gp-mes", "options": bo_options(json!({}))})),
    ];
    bo_functions(args, "synthetic_bo", &entries)
}

/// `synthetic_bo`'s functions with TRUVAR's two ablations (not in the paper): a = 1 in β_(i) = a·ln(|D| t_(i)²)
/// instead of the paper's 0.5, and the non-monotonic M_t of App. A. Both keep the maximiser in M_t on functions
/// whose maximum exceeds the β^½ ≈ 2 confidence bound of the paper's a = 0.5 (see docs/bench/seed003.md).
fn truvar_bo_variants(args: &Args) -> anyhow::Result<(Experiment, Band, Vec<f64>)> {
    let entries = [
        entry(
            "truvar (a = 1)",
            "proposed",
            json!({"name": "truvar", "options": bo_options(json!({"beta_scale": 1.0}))}),
        ),
        entry(
            "truvar (non-monotonic M)",
            "proposed",
            json!({"name": "truvar", "options": bo_options(json!({"monotonic": false}))}),
        ),
    ];
    bo_functions(args, "truvar_bo_variants", &entries)
}

/// The synthetic BO protocol (see the module docs) for `entries`.
fn bo_functions(args: &Args, name: &str, entries: &[Entry]) -> anyhow::Result<(Experiment, Band, Vec<f64>)> {
    let seeds = args.run_seeds(0, 200, 20);
    let n_functions = seeds.len();
    let budget = 100;
    let eval_grid = unit_grid(100);
    let methods = run_methods(name, entries, &seeds, |e, seed| {
        let f = PosteriorMeanFunction::new(seed, 200);
        let fstar = f.eval(&argmax_mean(f.gp(), &eval_grid));
        let spec = serde_json::from_value(json!({
            "parameters": crate::runner::unit_parameters(2),
            "algorithm": e.algorithm,
            "seed": seed,
        }))?;
        let noise = Normal::new(0.0, 1e-3)?;
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5EED_0003);
        let started = std::time::Instant::now();
        let steps = run_loop(
            spec,
            budget,
            |s| {
                let x = [unit(&s.assignments, "x0"), unit(&s.assignments, "x1")];
                Outcome { assignments: s.assignments.clone(), value: f.eval(&x) + noise.sample(&mut rng), cost: None }
            },
            |_| false,
        )?;
        let (mut xs, mut ys, mut x_axis, mut regret) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (t, s) in steps.iter().enumerate() {
            xs.extend([unit(&s.assignments, "x0"), unit(&s.assignments, "x1")]);
            ys.push(s.value);
            if (t + 1) % 5 == 0 {
                let gp = known_gp(&Data::new(2, xs.clone(), ys.clone()), 0.1, 1e-6)?;
                let reported = argmax_mean(&gp, &eval_grid);
                x_axis.push((t + 1) as f64);
                regret.push((fstar - f.eval(&reported)).max(0.0));
            }
        }
        Ok(Run {
            seed,
            x: x_axis,
            y: regret,
            evaluations: Some(steps.len()),
            wall_s: Some(started.elapsed().as_secs_f64()),
            suggest_ms: Some(latency(&steps)),
            ..Default::default()
        })
    });
    let exp = Experiment {
        name: name.into(),
        description: format!(
            "{n_functions} GP-posterior-mean functions on [0,1]² (SE ℓ = 0.1, 200 points), σ² = 1e-6, known prior; regret of the maximiser of the posterior mean (100×100 grid polished by L-BFGS) against f's maximum found the same way; {budget} evaluations"
        ),
        metric: "simple_regret".into(),
        better: "lower".into(),
        x_axis: "iteration".into(),
        optimum: None,
        budget: Some(budget as f64),
        methods,
    };
    Ok((exp, Band::MedianIqr, vec![20.0, 40.0, 60.0, 80.0, 100.0]))
}

// ---------------------------------------------------------------------------------------------------------------

/// Level-set runs on an `n × n` grid: the objective looks up `truth` (plus the level's noise); the F1 of
/// {μ ≥ h} under `model` is recorded after every evaluation against iteration or cumulative cost.
struct LseSetting<'a> {
    truth: &'a [f64],
    n: usize,
    h: f64,
    model: FixedHyperparameters,
    family: KernelFamily,
    /// Parameter names and their upper bounds (lower bounds 0).
    params: [(&'static str, f64); 2],
    extra_spec: Value,
    cost_axis: bool,
    budget: f64,
}

impl LseSetting<'_> {
    fn run(&self, e: &Entry, seed: u64) -> anyhow::Result<(Run, BTreeMap<String, f64>)> {
        let [(p0, hi0), (p1, hi1)] = self.params;
        let mut spec = json!({
            "parameters": [
                {"name": p0, "type": "float", "low": 0, "high": hi0},
                {"name": p1, "type": "float", "low": 0, "high": hi1}
            ],
            "candidates": {"grid": {p0: {"count": self.n}, p1: {"count": self.n}}},
            "level_set": {"threshold": self.h},
            "algorithm": e.algorithm,
            "seed": seed,
        });
        spec = with(spec, self.extra_spec.clone());
        let levels: BTreeMap<String, f64> = self.extra_spec["noise_levels"]
            .as_array()
            .map(|ls| {
                ls.iter()
                    .map(|l| {
                        (l["name"].as_str().unwrap_or("").to_string(), l["noise_variance"].as_f64().unwrap_or(0.0))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let truth_above: Vec<bool> = self.truth.iter().map(|&v| v > self.h).collect();
        let grid = unit_grid(self.n);
        let mut rng = StdRng::seed_from_u64(seed ^ 0x1E5E);
        let started = std::time::Instant::now();
        let spent = std::cell::Cell::new(0.0);
        let steps = run_loop(
            serde_json::from_value(spec)?,
            100_000,
            |s| {
                let i = grid_index(self.n, unit(&s.assignments, p0) / hi0, unit(&s.assignments, p1) / hi1);
                let var = s.extras.noise_level.as_ref().and_then(|l| levels.get(l)).copied().unwrap_or(0.0);
                let noise =
                    if var > 0.0 { Normal::new(0.0, var.sqrt()).map_or(0.0, |d| d.sample(&mut rng)) } else { 0.0 };
                let cost = if self.cost_axis { s.extras.expected_cost.unwrap_or(1.0) } else { 1.0 };
                spent.set(spent.get() + cost);
                Outcome { assignments: s.assignments.clone(), value: self.truth[i] + noise, cost: Some(cost) }
            },
            |steps| steps.iter().filter_map(|s| s.cost).sum::<f64>() >= self.budget,
        )?;
        let mut gp: Gp = self.model.gp(&Data::new(2, Vec::new(), Vec::new()), self.family)?;
        let (mut x, mut y, mut cum) = (Vec::new(), Vec::new(), 0.0);
        let mut per_level: BTreeMap<String, f64> = BTreeMap::new();
        for (t, s) in steps.iter().enumerate() {
            let i = grid_index(self.n, unit(&s.assignments, p0) / hi0, unit(&s.assignments, p1) / hi1);
            let var = s.suggestion.extras.noise_level.as_ref().and_then(|l| levels.get(l)).copied();
            gp.condition(&grid[2 * i..2 * i + 2], s.value, var)?;
            let c = s.cost.unwrap_or(1.0);
            cum += c;
            if let Some(l) = &s.suggestion.extras.noise_level {
                *per_level.entry(l.clone()).or_default() += c;
            }
            // F1 after every step early on, then every 5th (the posterior on 2500 points costs O(n²) each).
            if t < 50 || (t + 1) % 5 == 0 || t + 1 == steps.len() {
                let (mean, _) = gp.posterior_batch(&grid);
                let est: Vec<bool> = mean.iter().map(|&m| m >= self.h).collect();
                x.push(if self.cost_axis { cum } else { (t + 1) as f64 });
                y.push(f1(&est, &truth_above));
            }
        }
        let run = Run {
            seed,
            x,
            y,
            evaluations: Some(steps.len()),
            wall_s: Some(started.elapsed().as_secs_f64()),
            suggest_ms: Some(latency(&steps)),
            ..Default::default()
        };
        Ok((run, per_level))
    }
}

fn lse_methods(label: &str, setting: &LseSetting<'_>, entries: &[Entry], seeds: &[u64]) -> (Vec<Method>, String) {
    let spend = std::sync::Mutex::new(BTreeMap::<String, Vec<f64>>::new());
    let methods = run_methods(label, entries, seeds, |e, seed| {
        let (run, per_level) = setting.run(e, seed)?;
        if e.role == "proposed"
            && let Ok(mut s) = spend.lock()
        {
            for (l, c) in per_level {
                s.entry(l).or_default().push(c);
            }
        }
        Ok(run)
    });
    let spend = spend.into_inner().unwrap_or_default();
    let note = spend.iter().map(|(l, v)| format!("{l}: {:.0}", stats::mean(v))).collect::<Vec<_>>().join(", ");
    (methods, note)
}

fn synthetic_lse(args: &Args) -> anyhow::Result<(Experiment, Band, Vec<f64>)> {
    let runs = args.run_seeds(0, 100, 5);
    let (n, h) = (50, 2.25);
    let grid = unit_grid(n);
    // One function for every run (as in the paper): the first draw with a super-level set of 2–30 % of the grid.
    let (draw, truth) = (0..200u64)
        .map(|s| (s, sample_gp(&grid, KernelFamily::Rbf, [0.1, 0.1], 1000 + s)))
        .find(|(_, f)| {
            let frac = f.iter().filter(|&&v| v > h).count() as f64 / f.len() as f64;
            (0.02..=0.3).contains(&frac)
        })
        .ok_or_else(|| anyhow::anyhow!("no GP draw with a usable super-level set"))?;
    let levels = json!([
        {"name": "precise", "noise_variance": 1e-6, "cost": 15},
        {"name": "medium", "noise_variance": 1e-3, "cost": 10},
        {"name": "rough", "noise_variance": 0.05, "cost": 2}
    ]);
    let budget = if args.quick { 600.0 } else { 1500.0 };
    let prior = with(known_prior("rbf", &[0.1], 0.0), json!({"initial_design": 1}));
    let mut entries = vec![entry("truvar", "proposed", json!({"name": "truvar", "options": prior}))];
    for (l, v) in [("precise", "1e-6"), ("medium", "1e-3"), ("rough", "0.05")] {
        entries.push(entry(
            &format!("gchk σ²={v}"),
            "baseline",
            json!({"name": "lse-gchk", "options": with(prior.clone(), json!({"noise_level": l}))}),
        ));
    }
    let setting = LseSetting {
        truth: &truth,
        n,
        h,
        model: FixedHyperparameters {
            lengthscales: vec![0.1],
            outputscale: 1.0,
            noise_variance: 0.0,
            standardize: false,
        },
        family: KernelFamily::Rbf,
        params: [("x0", 1.0), ("x1", 1.0)],
        extra_spec: json!({"noise_levels": levels}),
        cost_axis: true,
        budget,
    };
    let (methods, spend) = lse_methods("synthetic_lse", &setting, &entries, &runs);
    let frac = truth.iter().filter(|&&v| v > h).count() as f64 / truth.len() as f64;
    let exp = Experiment {
        name: "synthetic_lse".into(),
        description: format!(
            "GP draw #{draw} (SE ℓ = 0.1) on a 50×50 grid, h = {h} ({:.1}% above), noise levels σ² 1e-6/1e-3/0.05 at cost 15/10/2, cost budget {budget}; F1 of {{μ ≥ h}}; TRUVAR's mean spend per level: {spend}",
            100.0 * frac
        ),
        metric: "f1".into(),
        better: "higher".into(),
        x_axis: "cost".into(),
        optimum: Some(1.0),
        budget: Some(budget),
        methods,
    };
    let cps = [0.1, 0.25, 0.5, 0.75, 1.0].iter().map(|f| f * budget).collect();
    Ok((exp, Band::MedianIqr, cps))
}

// ---------------------------------------------------------------------------------------------------------------

fn lake(args: &Args, movement: bool) -> anyhow::Result<(Experiment, Band, Vec<f64>)> {
    let runs = args.run_seeds(0, 100, 5);
    let n = 50;
    let grid = unit_grid(n);
    let truth = sample_gp(&grid, KernelFamily::Matern52, [0.25, 0.15], 7);
    let h = stats::quantile(&truth, 0.7);
    let model = FixedHyperparameters {
        lengthscales: vec![0.25, 0.15],
        outputscale: 1.0,
        noise_variance: 1e-6,
        standardize: false,
    };
    let prior = with(
        json!({"kernel": "matern52", "fixed": {"lengthscales": [0.25, 0.15], "outputscale": 1.0, "noise_variance": 1e-6}}),
        json!({"initial_design": 1}),
    );
    let mut entries = vec![
        entry("truvar", "proposed", json!({"name": "truvar", "options": prior})),
        entry("gchk", "baseline", json!({"name": "lse-gchk", "options": prior})),
    ];
    if !movement {
        entries.push(entry("straddle", "baseline", json!({"name": "lse-straddle", "options": prior})));
        entries.push(entry("var", "baseline", json!({"name": "lse-var", "options": prior})));
    }
    let budget = match (movement, args.quick) {
        (false, true) => 60.0,
        (false, false) => 120.0,
        (true, true) => 600.0,
        (true, false) => 1200.0,
    };
    let setting = LseSetting {
        truth: &truth,
        n,
        h,
        model,
        family: KernelFamily::Matern52,
        params: [("position", 100.0), ("depth", 5.0)],
        extra_spec: if movement {
            json!({"cost_model": {"intercept": 4, "weights": {"depth": 4}, "move_weights": {"position": 0.25}}})
        } else {
            json!({})
        },
        cost_axis: movement,
        budget,
    };
    let name = if movement { "lake_movement_cost" } else { "lake_unit_cost" };
    let (methods, _) = lse_methods(name, &setting, &entries, &runs);
    let exp = Experiment {
        name: name.into(),
        description: format!(
            "Lake-like stand-in: Matérn-5/2 GP draw (ℓ = 0.25, 0.15) on a 50×50 position×depth grid, h = 70% quantile ({h:.3}), noiseless; {}; F1 of {{μ ≥ h}}",
            if movement {
                format!("cost 0.25·|Δposition| + 4·(depth + 1), budget {budget}")
            } else {
                format!("unit cost, {budget} evaluations")
            }
        ),
        metric: "f1".into(),
        better: "higher".into(),
        x_axis: if movement { "cost" } else { "iteration" }.into(),
        optimum: Some(1.0),
        budget: Some(budget),
        methods,
    };
    let cps = [0.1, 0.25, 0.5, 0.75, 1.0].iter().map(|f| f * budget).collect();
    Ok((exp, Band::MedianIqr, cps))
}

// ---------------------------------------------------------------------------------------------------------------

/// Validation error by (C index, α index, ε index), indices in the order of `grid_axes`.
type SvmTable = BTreeMap<(usize, usize, usize), f64>;

/// The SVM table, the axis sizes and the best error.
fn svm_table() -> anyhow::Result<(Vec<usize>, SvmTable, f64)> {
    let path = std::env::var("SEED003_SVM").ok().map(std::path::PathBuf::from).into_iter().chain(
        ["../shared/data/svm_on_grid.json", "../../shared/data/svm_on_grid.json", "/work/shared/data/svm_on_grid.json"]
            .into_iter()
            .map(std::path::PathBuf::from),
    );
    let text = path
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .next()
        .ok_or_else(|| anyhow::anyhow!("svm_on_grid.json not found (set SEED003_SVM)"))?;
    let v: Value = serde_json::from_str(&text)?;
    let axes: Vec<Vec<f64>> = ["C", "alpha", "epsilon"]
        .iter()
        .map(|k| v["grid_axes"][k].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default())
        .collect();
    let pos = |a: usize, x: f64| axes[a].iter().position(|&y| (y - x).abs() <= 1e-9 * x.abs().max(1e-12));
    let mut table = BTreeMap::new();
    for r in v["rows"].as_array().into_iter().flatten() {
        let r: Vec<f64> = r.as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
        if let (Some(i), Some(j), Some(k)) = (pos(0, r[0]), pos(1, r[1]), pos(2, r[2])) {
            table.insert((i, j, k), r[3]);
        }
    }
    let best = table.values().copied().fold(f64::INFINITY, f64::min);
    anyhow::ensure!(table.len() == 1400, "expected 1400 SVM configurations, found {}", table.len());
    Ok((axes.iter().map(Vec::len).collect(), table, best))
}

fn svm_grid(args: &Args) -> anyhow::Result<(Experiment, Band, Vec<f64>)> {
    let runs = args.run_seeds(0, 100, 5);
    let budget = if args.quick { 40 } else { 60 };
    let (sizes, table, best) = svm_table()?;
    let common = json!({"refit_every": 3, "initial_design": 1});
    let entries = [
        entry("truvar", "proposed", json!({"name": "truvar", "options": common})),
        entry("gp-ei", "baseline", json!({"name": "gp-ei", "options": common})),
        entry(
            "gp-ucb (β/5)",
            "baseline",
            json!({"name": "gp-ucb", "options": with(common.clone(), json!({"beta_theoretical_scale": 0.2}))}),
        ),
    ];
    let methods = run_methods("svm_grid", &entries, &runs, |e, seed| {
        let spec = serde_json::from_value(json!({
            "parameters": [
                {"name": "c", "type": "int", "low": 0, "high": sizes[0] - 1},
                {"name": "alpha", "type": "int", "low": 0, "high": sizes[1] - 1},
                {"name": "epsilon", "type": "int", "low": 0, "high": sizes[2] - 1}
            ],
            "objective": {"name": "validation_error", "goal": "minimize"},
            "candidates": {"grid": {"c": {"count": sizes[0]}, "alpha": {"count": sizes[1]}, "epsilon": {"count": sizes[2]}}},
            "algorithm": e.algorithm,
            "seed": seed,
        }))?;
        let started = std::time::Instant::now();
        let idx = |a: &engine::Assignments, k: &str| a.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
        let steps = run_loop(
            spec,
            budget,
            |s| {
                let a = &s.assignments;
                let v = table.get(&(idx(a, "c"), idx(a, "alpha"), idx(a, "epsilon"))).copied().unwrap_or(f64::NAN);
                Outcome { assignments: a.clone(), value: v, cost: None }
            },
            |_| false,
        )?;
        let mut so_far = f64::INFINITY;
        let y: Vec<f64> = steps
            .iter()
            .map(|s| {
                so_far = so_far.min(s.value);
                so_far
            })
            .collect();
        Ok(Run {
            seed,
            x: (1..=y.len()).map(|i| i as f64).collect(),
            y,
            evaluations: Some(steps.len()),
            wall_s: Some(started.elapsed().as_secs_f64()),
            suggest_ms: Some(latency(&steps)),
            ..Default::default()
        })
    });
    let exp = Experiment {
        name: "svm_grid".into(),
        description: format!(
            "SVM on grid (25×14×4, HPOlib), minimise validation error (best {best}), Matérn-5/2 ARD re-learned every 3 samples, {budget} evaluations; best error so far"
        ),
        metric: "best_value".into(),
        better: "lower".into(),
        x_axis: "iteration".into(),
        optimum: Some(best),
        budget: Some(budget as f64),
        methods,
    };
    let cps = [10.0, 20.0, 30.0, budget as f64];
    Ok((exp, Band::MeanStderr, cps.to_vec()))
}
