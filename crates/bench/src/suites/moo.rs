//! `moo`: several objectives, outcome constraints and parameter constraints, each study run as a user would (the
//! default `auto` algorithm) against random search; 10 seeds (`--quick`: 3).
//!
//! - Several objectives (budget 100): BraninCurrin (2-D), DTLZ2 with d = 6 and 2 or 3 objectives, ZDT1–3 (d = 6),
//!   and BraninCurrin with noise (standard deviations 1.0 and 0.2). Metric: the hypervolume of the true objective
//!   values of the points evaluated so far, above the reference point BoTorch's test problems use (each
//!   objective's `threshold`), higher is better.
//! - Outcome constraints (budget 60): Gardner et al.'s (2014) toy problem, Branin in the disc of radius √50 about
//!   (2.5, 7.5), Hartmann-6 in the unit ball (as BoTorch's `ConstrainedHartmann`), and the pressure-vessel design
//!   (4 variables, 4 constraints; continuous thicknesses). Metric: the best feasible true value so far, lower is
//!   better (before the first feasible point, the largest value of 4096 random points of the domain);
//!   `runs[].feasible_share`: the share of feasible suggestions after the initial design.
//! - Latency (`latency_n100`): one suggestion of a new study (so a cold fit of every model) with d = 6, two
//!   objectives (DTLZ2) and one outcome constraint (x0 + x1 ≤ 1), after 100 random observations; 5 repetitions
//!   with other draws, one after the other. `tools/peers/moo_latency.py` times BoTorch's qLogNEHVI on the same
//!   study; run both in one sitting.
//! - Parameter constraints (budget 40): a mixture of four fractions summing to one, the first at most 0.5, and a
//!   temperature; regret against the known constrained optimum. Every suggestion is checked against both
//!   constraints; the count of violations is in `runs[].violations` (must be 0).
//! - `bench moo-spec --out DIR` writes `DIR/moo_problems.json` (problems, kinds, budgets, reference points, the
//!   mixture's constraints, seeds) for the peers' harness (`tools/peers/moo.py`); `bench moo-eval` answers
//!   `{"problem", "seed", "index", "x"}` lines (x in the unit cube) with `{"objectives", "true_objectives",
//!   "constraints"}`: the same values, and the same noise (drawn from the seed and the index), as bayesd's runs.

use std::f64::consts::PI;

use engine::pareto::hypervolume;
use engine::testfunctions::{branin, hartmann6};
use engine::{History, ObservationRecord, PolicyState, Study, SuggestRequest};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use crate::Args;
use crate::format::{Experiment, Latency, Method, Run, SuiteResult};
use crate::plot::{Band, plot_experiment};
use crate::runner::parallel_map;
use engine::sampling::derive_seed;

/// A problem's objectives (or objective) and constraint values at a unit point.
type Evaluate = fn(&[f64]) -> (Vec<f64>, Vec<f64>);

/// One benchmark problem on the unit cube.
struct Problem {
    name: &'static str,
    dim: usize,
    kind: Kind,
    budget: usize,
    /// The objectives' (or the objective's) true values at a unit point, and the constraint values.
    eval: Evaluate,
    /// Observation noise standard deviation of each objective.
    noise: &'static [f64],
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Objectives minimised, the reference point.
    Pareto(&'static [f64]),
    /// One objective minimised; constraints `c ≤ 0`.
    Constrained,
    /// The mixture: one objective maximised, parameter constraints.
    Mixture,
}

fn branin_currin(u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let b = branin(15.0 * u[0] - 5.0, 15.0 * u[1]);
    let (x, y) = (u[0], u[1]);
    let factor = if y > 0.0 { 1.0 - (-1.0 / (2.0 * y)).exp() } else { 1.0 };
    let c = factor * (2300.0 * x.powi(3) + 1900.0 * x * x + 2092.0 * x + 60.0)
        / (100.0 * x.powi(3) + 500.0 * x * x + 4.0 * x + 20.0);
    (vec![b, c], vec![])
}

fn dtlz2(u: &[f64], m: usize) -> Vec<f64> {
    let g: f64 = u[m - 1..].iter().map(|x| (x - 0.5).powi(2)).sum();
    (0..m)
        .map(|i| {
            let mut f = 1.0 + g;
            for x in &u[..m - 1 - i] {
                f *= (x * PI / 2.0).cos();
            }
            if i > 0 {
                f *= (u[m - 1 - i] * PI / 2.0).sin();
            }
            f
        })
        .collect()
}

fn zdt(u: &[f64], which: u8) -> (Vec<f64>, Vec<f64>) {
    let f1 = u[0];
    let g = 1.0 + 9.0 / (u.len() - 1) as f64 * u[1..].iter().sum::<f64>();
    let r = f1 / g;
    let h = match which {
        1 => 1.0 - r.sqrt(),
        2 => 1.0 - r * r,
        _ => 1.0 - r.sqrt() - r * (10.0 * PI * f1).sin(),
    };
    (vec![f1, g * h], vec![])
}

fn gardner(u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (x, y) = (6.0 * u[0], 6.0 * u[1]);
    (vec![(2.0 * x).cos() * y.cos() + x.sin()], vec![x.cos() * y.cos() - x.sin() * y.sin() - 0.5])
}

fn branin_disc(u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (x, y) = (15.0 * u[0] - 5.0, 15.0 * u[1]);
    (vec![branin(x, y)], vec![(x - 2.5).powi(2) + (y - 7.5).powi(2) - 50.0])
}

fn hartmann_ball(u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    // `hartmann6` is the maximisation form; minimised here as in BoTorch.
    (vec![-hartmann6(u)], vec![u.iter().map(|x| x * x).sum::<f64>() - 1.0])
}

fn pressure_vessel(u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let t = |k: usize, lo: f64, hi: f64| lo + u[k] * (hi - lo);
    let (ts, th, r, l) = (t(0, 0.0625, 6.1875), t(1, 0.0625, 6.1875), t(2, 10.0, 200.0), t(3, 10.0, 200.0));
    let f = 0.6224 * ts * r * l + 1.7781 * th * r * r + 3.1661 * ts * ts * l + 19.84 * ts * ts * r;
    let c = vec![
        -ts + 0.0193 * r,
        -th + 0.00954 * r,
        // In units of 10⁶ so that the constraints' scales are comparable.
        (-PI * r * r * l - 4.0 / 3.0 * PI * r.powi(3) + 1_296_000.0) / 1e6,
        l - 240.0,
    ];
    (vec![f], c)
}

/// The mixture's fractions' target (the first above its bound of 0.5) and the temperature's.
const MIXTURE_TARGET: [f64; 4] = [0.6, 0.2, 0.15, 0.05];

fn mixture(u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let misfit: f64 = u[..4].iter().zip(MIXTURE_TARGET).map(|(f, t)| (f - t).powi(2)).sum();
    (vec![-10.0 * misfit - (u[4] - 0.3).powi(2)], vec![])
}

/// The mixture's optimum: the first fraction at its bound, the other three shifted equally onto the simplex.
fn mixture_optimum() -> f64 {
    let shift = (0.5 - MIXTURE_TARGET[1..].iter().sum::<f64>()) / 3.0;
    -10.0 * ((0.5 - MIXTURE_TARGET[0]).powi(2) + 3.0 * shift * shift)
}

fn problems() -> Vec<Problem> {
    let p = |name, dim, kind, budget, eval, noise| Problem { name, dim, kind, budget, eval, noise };
    vec![
        p("branin_currin", 2, Kind::Pareto(&[18.0, 6.0]), 100, branin_currin, &[]),
        p("dtlz2_2obj", 6, Kind::Pareto(&[1.1, 1.1]), 100, |u| (dtlz2(u, 2), vec![]), &[]),
        p("dtlz2_3obj", 6, Kind::Pareto(&[1.1, 1.1, 1.1]), 100, |u| (dtlz2(u, 3), vec![]), &[]),
        p("zdt1", 6, Kind::Pareto(&[11.0, 11.0]), 100, |u| zdt(u, 1), &[]),
        p("zdt2", 6, Kind::Pareto(&[11.0, 11.0]), 100, |u| zdt(u, 2), &[]),
        p("zdt3", 6, Kind::Pareto(&[11.0, 11.0]), 100, |u| zdt(u, 3), &[]),
        p("branin_currin_noisy", 2, Kind::Pareto(&[18.0, 6.0]), 100, branin_currin, &[1.0, 0.2]),
        p("gardner", 2, Kind::Constrained, 60, gardner, &[]),
        p("branin_disc", 2, Kind::Constrained, 60, branin_disc, &[]),
        p("hartmann6_ball", 6, Kind::Constrained, 60, hartmann_ball, &[]),
        p("pressure_vessel", 4, Kind::Constrained, 60, pressure_vessel, &[]),
        p("mixture", 5, Kind::Mixture, 40, mixture, &[]),
    ]
}

/// The methods: what a new study gets (`auto`: `gp-ehvi` for two objectives, `gp-parego` for more, `gp-cei` with
/// constraints, `gp-ei` on the mixture), ParEGO on the two-objective problems, and random search.
const METHODS: &[(&str, &str, &str)] =
    &[("bayesd", "auto", "proposed"), ("bayesd-parego", "gp-parego", "proposed"), ("random", "random", "reference")];

/// Whether `algorithm` is run on problem `p` (`gp-parego` beside the default where the default is `gp-ehvi`).
fn applies(algorithm: &str, p: &Problem) -> bool {
    algorithm != "gp-parego" || matches!(p.kind, Kind::Pareto(r) if r.len() == 2)
}

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("moo", args.quick);
    let seeds = args.run_seeds(0, 10, 3);
    for p in problems() {
        if !args.selected(p.name) {
            continue;
        }
        let worst = worst_value(&p);
        let methods: Vec<(&str, &str, &str)> = METHODS.iter().copied().filter(|m| applies(m.1, &p)).collect();
        let jobs: Vec<(&str, &str, u64)> =
            methods.iter().flat_map(|&(m, a, _)| seeds.iter().map(move |&s| (m, a, s))).collect();
        let runs = parallel_map(p.name, &jobs, |&(_, algorithm, seed)| one_run(&p, algorithm, seed, worst));
        let methods = methods
            .iter()
            .map(|&(name, _, role)| {
                let rs = jobs
                    .iter()
                    .zip(&runs)
                    .filter(|((m, _, _), _)| *m == name)
                    .filter_map(|((_, _, s), r)| match r {
                        Ok(run) => Some(run.clone()),
                        Err(e) => {
                            eprintln!("[{}] {name} seed {s} failed: {e}", p.name);
                            None
                        }
                    })
                    .collect();
                Method::new(name, role, rs)
            })
            .collect();
        let (metric, better, what) = match p.kind {
            Kind::Pareto(r) => ("hypervolume", "higher", format!("hypervolume of the evaluated points above {r:?}")),
            Kind::Constrained => ("best_feasible_value", "lower", "best feasible true value".to_string()),
            Kind::Mixture => ("simple_regret", "lower", "regret of the best value, all suggestions checked".into()),
        };
        let exp = Experiment {
            name: p.name.into(),
            description: format!("{} ({}-D), {} evaluations: {what}", p.name, p.dim, p.budget),
            metric: metric.into(),
            better: better.into(),
            x_axis: "iteration".into(),
            optimum: (p.kind == Kind::Mixture).then_some(0.0),
            budget: Some(p.budget as f64),
            methods,
        };
        plot_experiment(&exp, &args.out, &format!("moo_{}", p.name), Band::MedianIqr)?;
        result.experiments.push(exp);
    }
    if args.selected("latency_n100") {
        result.experiments.push(latency(100, if args.quick { 2 } else { 5 })?);
    }
    Ok(result)
}

/// Suggest time of a new study with two objectives and one constraint after `n` random observations (see the
/// module docs): one run per repetition, its `y` the milliseconds.
fn latency(n: usize, reps: u64) -> anyhow::Result<Experiment> {
    let mut runs = Vec::new();
    for rep in 0..reps {
        let p = Problem {
            name: "latency",
            dim: 6,
            kind: Kind::Pareto(&[1.1, 1.1]),
            budget: n,
            eval: |u| (dtlz2(u, 2), vec![]),
            noise: &[],
        };
        let mut spec = spec(&p, "auto", rep);
        spec["constraints"] = json!([{"name": "load", "op": "<=", "bound": 1.0}]);
        let study = Study::new(serde_json::from_value(spec)?).map_err(|e| anyhow::anyhow!("invalid spec: {e:?}"))?;
        let mut rng = StdRng::seed_from_u64(rep);
        let mut history = History::default();
        for _ in 0..n {
            let u: Vec<f64> = (0..6).map(|_| rng.random::<f64>()).collect();
            let f = dtlz2(&u, 2);
            let mut record = ObservationRecord::default();
            for (j, x) in u.iter().enumerate() {
                record.assignments.insert(format!("x{j}"), json!(x));
            }
            record.values = [("f0".to_string(), f[0]), ("f1".to_string(), f[1]), ("load".to_string(), u[0] + u[1])]
                .into_iter()
                .collect();
            history.observations.push(record);
        }
        let t = std::time::Instant::now();
        let out = study.suggest(&history, &PolicyState::default(), &SuggestRequest { count: 1, context: None })?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        anyhow::ensure!(out.suggestions.len() == 1, "no suggestion");
        runs.push(Run { seed: rep, x: vec![n as f64], y: vec![ms], ..Default::default() });
    }
    Ok(Experiment {
        name: format!("latency_n{n}"),
        description: format!(
            "one suggestion (cold fit) of a study with d = 6, two objectives and one outcome constraint after {n} \
             random observations, milliseconds"
        ),
        metric: "suggest_ms".into(),
        better: "lower".into(),
        x_axis: "observations".into(),
        optimum: None,
        budget: None,
        methods: vec![Method::new("bayesd", "proposed", runs)],
    })
}

/// The largest objective value of 4096 random points (a constrained run's curve before its first feasible point).
fn worst_value(p: &Problem) -> f64 {
    let mut rng = StdRng::seed_from_u64(0x0B5E);
    (0..4096)
        .map(|_| {
            let u: Vec<f64> = (0..p.dim).map(|_| rng.random::<f64>()).collect();
            (p.eval)(&u).0[0]
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The study spec of `p` run by `algorithm`.
fn spec(p: &Problem, algorithm: &str, seed: u64) -> Value {
    let parameters: Vec<Value> =
        (0..p.dim).map(|j| json!({"name": format!("x{j}"), "type": "float", "low": 0, "high": 1})).collect();
    let mut spec = json!({"parameters": parameters, "algorithm": {"name": algorithm}, "seed": seed});
    match p.kind {
        Kind::Pareto(reference) => {
            spec["objectives"] = reference
                .iter()
                .enumerate()
                .map(|(k, r)| json!({"name": format!("f{k}"), "goal": "minimize", "threshold": r}))
                .collect();
        }
        Kind::Constrained => {
            let c = (p.eval)(&vec![0.5; p.dim]).1.len();
            spec["objective"] = json!({"name": "f", "goal": "minimize"});
            spec["constraints"] = (0..c).map(|k| json!({"name": format!("c{k}"), "op": "<=", "bound": 0.0})).collect();
        }
        Kind::Mixture => {
            spec["objective"] = json!({"name": "f", "goal": "maximize"});
            spec["parameter_constraints"] = json!([
                {"terms": {"x0": 1, "x1": 1, "x2": 1, "x3": 1}, "op": "==", "bound": 1},
                {"terms": {"x0": 1}, "op": "<=", "bound": 0.5}
            ]);
        }
    }
    spec
}

/// The observed objectives at evaluation `index` of a run with `seed`: the true ones plus the problem's noise,
/// drawn from (seed, index) so that every method of the suite and of the peers' harness sees the same noise.
fn observe(p: &Problem, objectives: &[f64], seed: u64, index: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(derive_seed(derive_seed(seed, 0x4015E), index));
    objectives
        .iter()
        .enumerate()
        .map(|(k, f)| f + p.noise.get(k).map_or(0.0, |sd| sd * standard_normal(&mut rng)))
        .collect()
}

/// `bench moo-spec`: the problems for the peers' harness (see the module docs).
pub fn write_spec(args: &Args) -> anyhow::Result<()> {
    let problems: Vec<Value> = problems()
        .iter()
        .map(|p| {
            let probe = (p.eval)(&vec![0.5; p.dim]);
            let (kind, reference) = match p.kind {
                Kind::Pareto(r) => ("pareto", Some(r.to_vec())),
                Kind::Constrained => ("constrained", None),
                Kind::Mixture => ("mixture", None),
            };
            let s = spec(p, "auto", 0);
            json!({"name": p.name, "dim": p.dim, "kind": kind, "budget": p.budget, "reference": reference,
                   "objectives": probe.0.len(), "constraints": probe.1.len(), "noise": p.noise,
                   "worst": worst_value(p), "optimum": (p.kind == Kind::Mixture).then(mixture_optimum),
                   "parameter_constraints": s.get("parameter_constraints")})
        })
        .collect();
    let doc = json!({"problems": problems, "seeds": 10, "evaluator": "bench moo-eval"});
    let path = args.out.join("moo_problems.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// `bench moo-eval`: evaluates points for the peers' harness over JSON lines (see the module docs).
pub fn serve_eval() -> anyhow::Result<()> {
    use std::io::{BufRead, Write};
    let problems = problems();
    let mut stdout = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = (|| -> Result<Value, String> {
            let req: Value = serde_json::from_str(&line).map_err(|e| format!("not JSON: {e}"))?;
            let name = req["problem"].as_str().ok_or("missing problem")?;
            let p = problems.iter().find(|p| p.name == name).ok_or_else(|| format!("unknown problem {name:?}"))?;
            let (seed, index) =
                (req["seed"].as_u64().ok_or("missing seed")?, req["index"].as_u64().ok_or("missing index")?);
            let x: Vec<f64> = req["x"].as_array().ok_or("missing x")?.iter().filter_map(Value::as_f64).collect();
            if x.len() != p.dim || x.iter().any(|v| !(0.0..=1.0).contains(v)) {
                return Err(format!("x must be {} numbers in [0, 1]", p.dim));
            }
            let (objectives, constraints) = (p.eval)(&x);
            Ok(json!({"objectives": observe(p, &objectives, seed, index), "true_objectives": objectives,
                      "constraints": constraints}))
        })()
        .unwrap_or_else(|e| json!({"error": e}));
        writeln!(stdout, "{answer}")?;
        stdout.flush()?;
    }
    Ok(())
}

fn one_run(p: &Problem, algorithm: &str, seed: u64, worst: f64) -> anyhow::Result<Run> {
    let study = Study::new(serde_json::from_value(spec(p, algorithm, seed))?)
        .map_err(|e| anyhow::anyhow!("invalid spec: {e:?}"))?;
    let (mut history, mut state) = (History::default(), PolicyState::default());
    let started = std::time::Instant::now();
    let (mut y, mut ms) = (Vec::new(), Vec::new());
    let mut truths: Vec<Vec<f64>> = Vec::new();
    let (mut best, mut feasible_after, mut model_points, mut violations) = (worst, 0usize, 0usize, 0usize);
    // The default initial design's size, `clamp(2·d + 1, 10, 50)` (docs/algorithms.md).
    let n_init = (2 * p.dim + 1).clamp(10, 50);
    while history.observations.len() < p.budget {
        let t = std::time::Instant::now();
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None })?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        state = out.state;
        let s = &out.suggestions[0];
        let u: Vec<f64> = (0..p.dim).map(|j| s.assignments[&format!("x{j}")].as_f64().unwrap_or(f64::NAN)).collect();
        let (objectives, constraints) = (p.eval)(&u);
        let mut record = ObservationRecord { assignments: s.assignments.clone(), ..Default::default() };
        match p.kind {
            Kind::Pareto(reference) => {
                let observed = observe(p, &objectives, seed, history.observations.len() as u64);
                for (k, f) in observed.iter().enumerate() {
                    record.values.insert(format!("f{k}"), *f);
                }
                truths.push(objectives.iter().map(|f| -f).collect());
                let r: Vec<f64> = reference.iter().map(|r| -r).collect();
                y.push(hypervolume(&truths, &r));
            }
            Kind::Constrained => {
                record.value = Some(objectives[0]);
                record.values = constraints.iter().enumerate().map(|(k, c)| (format!("c{k}"), *c)).collect();
                let feasible = constraints.iter().all(|c| *c <= 0.0);
                if history.observations.len() >= n_init {
                    model_points += 1;
                    feasible_after += usize::from(feasible);
                }
                if feasible {
                    best = best.min(objectives[0]);
                }
                y.push(best);
            }
            Kind::Mixture => {
                let sum: f64 = u[..4].iter().sum();
                if (sum - 1.0).abs() > 1e-9 || u[0] > 0.5 {
                    violations += 1;
                }
                record.value = Some(objectives[0]);
                best = if history.observations.is_empty() { objectives[0] } else { best.max(objectives[0]) };
                y.push(mixture_optimum() - best);
            }
        }
        history.observations.push(record);
    }
    Ok(Run {
        seed,
        x: (1..=y.len()).map(|i| i as f64).collect(),
        y,
        evaluations: Some(p.budget),
        wall_s: Some(started.elapsed().as_secs_f64()),
        suggest_ms: Some(Latency::of(&ms)),
        feasible_share: (p.kind == Kind::Constrained && model_points > 0)
            .then(|| feasible_after as f64 / model_points as f64),
        violations: (p.kind == Kind::Mixture).then_some(violations),
        ..Default::default()
    })
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut StdRng) -> f64 {
    let (a, b): (f64, f64) = (rng.random::<f64>().max(f64::MIN_POSITIVE), rng.random());
    (-2.0 * a.ln()).sqrt() * (2.0 * PI * b).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_of_the_problems() {
        // DTLZ2's front is the unit sphere's quadrant (g = 0 when the distance variables are 0.5).
        let f = dtlz2(&[0.3, 0.7, 0.5, 0.5, 0.5, 0.5], 3);
        assert!((f.iter().map(|v| v * v).sum::<f64>() - 1.0).abs() < 1e-12);
        // ZDT1 on its front (g = 1): f2 = 1 − √f1.
        let (z, _) = zdt(&[0.25, 0.0, 0.0, 0.0, 0.0, 0.0], 1);
        assert!((z[1] - 0.5).abs() < 1e-12);
        // BraninCurrin at BoTorch's reference values: Branin's minimum 0.397887 at (π, 2.275).
        let (bc, _) = branin_currin(&[(PI + 5.0) / 15.0, 2.275 / 15.0]);
        assert!((bc[0] - 0.397887).abs() < 1e-5);
        // The pressure vessel's best known design (Coello 2000, continuous) is feasible up to rounding.
        let u =
            [(0.7782 - 0.0625) / 6.125, (0.3846 - 0.0625) / 6.125, (40.3196 - 10.0) / 190.0, (200.0 - 10.0) / 190.0];
        let (f, c) = pressure_vessel(&u);
        assert!((f[0] - 5885.3).abs() < 1.0 && c.iter().all(|c| *c < 1e-3), "{f:?} {c:?}");
        assert!((mixture_optimum() + 0.133_333_333).abs() < 1e-6);
        // Hartmann-6's global minimum −3.32237, inside the ball (squared norm 0.896).
        let (h, c) = hartmann_ball(&[0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]);
        assert!((h[0] + 3.32237).abs() < 1e-4 && c[0] < 0.0, "{h:?} {c:?}");
    }
}
