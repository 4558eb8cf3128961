//! `robust`: the default algorithm (and, with `--methods`, the other plain ones) on 26 randomly shifted and rotated
//! problems ([`problems`]) that nobody tuned for, noiseless and with 1 % and 10 % observation noise, against the
//! peers (Optuna, BoTorch, Ax) run by `tools/peers/peers.py` on the same instances.
//!
//! - `bench robust [--variants noiseless,noise1] [--methods default,gp-ucb] [--batch Q] [--seeds N] [--only P]
//!   [--options JSON --label NAME]` runs bayesd's engine in process (budget `min(20·d, 200)`, 10 seeds) and writes `robust.json`. `default` is what
//!   a new study gets (`algorithm: auto`); its method is called `bayesd`, others `bayesd-<name>`, and `--batch Q`
//!   suffixes `-qQ`. With noise, each curve is the true regret of the point with the best observed value so far,
//!   and the score is the true regret of the recommended point (`Study::recommend`, `best` over HTTP) at the end
//!   (`runs[].recommended`). `--trace` also writes `DIR/robust_trace.jsonl`: one line per evaluation ([`TraceRow`]),
//!   which `tools/bench/robust_trace.py` summarises (regrets of the evaluated points, re-runs, the best observed
//!   point under redrawn noise); `tools/peers/peers.py --trace FILE` writes the same lines for a peer.
//! - `bench robust-spec --out DIR` writes `DIR/robust_problems.json` (problems, parameters, budgets, seeds) for the
//!   peers' harness; `bench robust-eval` evaluates instances for it over JSON lines on stdin/stdout.
//! - `bench robust-table FILES… [--first-run K --seeds N]` merges bayesd's and the peers' files and prints the
//!   win/tie/loss table ([`table`]), of the seeds K..K+N only when given.

mod functions;
mod problems;
mod table;

use std::io::{BufRead, Write};
use std::time::Instant;

use engine::{History, ObservationRecord, PolicyState, Study, SuggestRequest};
use serde_json::{Value, json};

use crate::Args;
use crate::format::{Experiment, Latency, Method, Run, SuiteResult};
use crate::plot::{Band, plot_experiment};
use crate::runner::parallel_map;
pub use problems::{Instance, ProblemDef, SEEDS, VARIANTS, all_problems, catalogue, find, holdout};
pub use table::table;

/// Runs bayesd on the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("robust", args.quick);
    let seeds = args.run_seeds(0, SEEDS, 3);
    let methods: Vec<String> =
        args.methods.as_deref().unwrap_or("default").split(',').map(|m| m.trim().to_string()).collect();
    let variants = selected_variants(args)?;
    let options = Value::Object(args.algorithm_options()?);
    let q = args.batch.max(1);
    let mut trace = if args.trace {
        Some(std::io::BufWriter::new(std::fs::File::create(args.out.join("robust_trace.jsonl"))?))
    } else {
        None
    };
    for p in if args.holdout { holdout() } else { catalogue() } {
        if !args.selected(p.name) {
            continue;
        }
        for &(variant, level) in &variants {
            let exp_name = experiment_name(p.name, variant, q);
            let jobs: Vec<(&str, u64)> =
                methods.iter().flat_map(|m| seeds.iter().map(move |&s| (m.as_str(), s))).collect();
            let runs = parallel_map(&exp_name, &jobs, |&(method, seed)| {
                one_run(&p, level, method, &options, seed, q, args.quick)
            });
            let mut out = Vec::new();
            for m in &methods {
                let name = match (&args.label, m.as_str()) {
                    (Some(label), "default") if q > 1 => format!("{label}-q{q}"),
                    (Some(label), "default") => label.clone(),
                    _ => method_name(m, q),
                };
                let mut rs = Vec::new();
                for ((_, s), r) in jobs.iter().zip(&runs).filter(|((jm, _), _)| jm == m) {
                    match r {
                        Ok((run, rows)) => {
                            rs.push(run.clone());
                            if let Some(w) = trace.as_mut() {
                                for row in rows {
                                    let line =
                                        json!({"problem": p.name, "variant": variant, "method": name, "seed": s});
                                    write_trace_line(w, line, row)?;
                                }
                            }
                        }
                        Err(e) => eprintln!("[{exp_name}] {m} seed {s} failed: {e}"),
                    }
                }
                out.push(Method::new(&name, "proposed", rs));
            }
            let exp = Experiment {
                name: exp_name.clone(),
                description: format!(
                    "{} ({}-D, {}), randomly shifted and rotated per seed, {variant}, minimised; regret of the \
                     best observed point (noisy: true regret of the point with the best observation; final: of \
                     the recommended point)",
                    p.name,
                    p.dim(),
                    p.family
                ),
                metric: "simple_regret".into(),
                better: "lower".into(),
                x_axis: "iteration".into(),
                optimum: Some(0.0),
                budget: Some(p.budget() as f64),
                methods: out,
            };
            plot_experiment(&exp, &args.out, &format!("robust_{}", exp_name.replace('/', "_")), Band::MedianIqr)?;
            result.experiments.push(exp);
        }
    }
    if let Some(mut w) = trace {
        w.flush()?;
        eprintln!("wrote {}", args.out.join("robust_trace.jsonl").display());
    }
    Ok(result)
}

/// One evaluation of a run, for `--trace`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TraceRow {
    /// 0-based evaluation index in the run.
    index: usize,
    /// The observed (noisy) value.
    value: f64,
    /// True regret of the evaluated point.
    regret: f64,
    /// Standard deviation of the observation noise (0 noiseless).
    noise_sd: f64,
    /// The suggestion's `diagnostics.phase` (`initial_design`, `model`, `replicate`, …).
    phase: Option<String>,
}

/// Writes `head` (problem, variant, method, seed) merged with `row` as one JSON line.
fn write_trace_line(w: &mut impl Write, mut head: Value, row: &TraceRow) -> anyhow::Result<()> {
    if let (Value::Object(h), Value::Object(r)) = (&mut head, serde_json::to_value(row)?) {
        h.extend(r);
    }
    writeln!(w, "{head}")?;
    Ok(())
}

/// `noiseless` unless `--variants` names others.
fn selected_variants(args: &Args) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let wanted = args.variants.as_deref().unwrap_or("noiseless");
    wanted
        .split(',')
        .map(|w| {
            VARIANTS.iter().copied().find(|(n, _)| *n == w.trim()).ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown variant {w:?}; choose from {:?}",
                    VARIANTS.iter().map(|v| v.0).collect::<Vec<_>>()
                )
            })
        })
        .collect()
}

/// `problem/variant`, with `/qQ` for batches.
pub fn experiment_name(problem: &str, variant: &str, q: usize) -> String {
    if q > 1 { format!("{problem}/{variant}/q{q}") } else { format!("{problem}/{variant}") }
}

fn method_name(method: &str, q: usize) -> String {
    let base = if method == "default" { "bayesd".to_string() } else { format!("bayesd-{method}") };
    if q > 1 { format!("{base}-q{q}") } else { base }
}

/// One optimisation loop of bayesd's engine: `q` suggestions per call (one batch), observed together.
fn one_run(
    p: &ProblemDef,
    level: f64,
    method: &str,
    options: &Value,
    seed: u64,
    q: usize,
    quick: bool,
) -> anyhow::Result<(Run, Vec<TraceRow>)> {
    let inst = p.instance(seed);
    let algorithm = if method == "default" { "auto" } else { method };
    let spec = serde_json::from_value(json!({
        "parameters": p.parameters(),
        "objective": {"name": "f", "goal": "minimize"},
        "algorithm": {"name": algorithm, "options": options},
        "seed": seed,
    }))?;
    let study = Study::new(spec).map_err(|e| anyhow::anyhow!("invalid spec: {e:?}"))?;
    let budget = if quick { p.budget().min(10 * p.dim()) } else { p.budget() };
    let started = Instant::now();
    let mut history = History::default();
    let mut state = PolicyState::default();
    let mut ms = Vec::new();
    let mut y = Vec::with_capacity(budget);
    let (mut best_true, mut best_observed, mut regret_at_best_observed) = (f64::INFINITY, f64::INFINITY, f64::NAN);
    let mut min_distance: Option<f64> = None;
    let mut rows = Vec::with_capacity(budget);
    while y.len() < budget {
        let k = q.min(budget - y.len());
        let t = Instant::now();
        let out = study.suggest(&history, &state, &SuggestRequest { count: k, context: None })?;
        ms.push(t.elapsed().as_secs_f64() * 1e3 / k as f64);
        state = out.state;
        let units: Vec<Vec<f64>> = out
            .suggestions
            .iter()
            .map(|s| inst.unit_of(&s.assignments))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?;
        if k > 1 {
            let d = min_pairwise_distance(&units);
            min_distance = Some(min_distance.map_or(d, |m: f64| m.min(d)));
        }
        for (s, u) in out.suggestions.iter().zip(&units) {
            let index = y.len() as i64;
            let observed = inst.observe(u, level, index);
            let truth = inst.eval_unit(u);
            best_true = best_true.min(truth);
            if observed < best_observed {
                best_observed = observed;
                regret_at_best_observed = inst.regret(truth);
            }
            y.push(if level == 0.0 { inst.regret(best_true) } else { regret_at_best_observed });
            rows.push(TraceRow {
                index: index as usize,
                value: observed,
                regret: inst.regret(truth),
                noise_sd: inst.noise_sd(level),
                phase: s.diagnostics.phase.clone(),
            });
            history.observations.push(ObservationRecord {
                assignments: s.assignments.clone(),
                value: Some(observed),
                ..Default::default()
            });
        }
    }
    let recommended = if level > 0.0 {
        let rec = study.recommend(&history, &state)?.ok_or_else(|| anyhow::anyhow!("no recommendation"))?;
        Some(inst.regret(inst.eval_unit(&inst.unit_of(&rec.assignments).map_err(anyhow::Error::msg)?)))
    } else {
        None
    };
    let run = Run {
        seed,
        x: (1..=y.len()).map(|i| i as f64).collect(),
        y,
        evaluations: Some(budget),
        wall_s: Some(started.elapsed().as_secs_f64()),
        suggest_ms: Some(Latency::of(&ms)),
        recommended,
        min_batch_distance: min_distance,
        ..Default::default()
    };
    Ok((run, rows))
}

/// Smallest Euclidean distance between two of `points`.
fn min_pairwise_distance(points: &[Vec<f64>]) -> f64 {
    let mut m = f64::INFINITY;
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            m = m.min(a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt());
        }
    }
    m
}

/// `bench robust-spec`: the problems for the peers' harness, written to `DIR/robust_problems.json`.
pub fn write_spec(args: &Args) -> anyhow::Result<()> {
    let problems: Vec<Value> = catalogue()
        .iter()
        .map(|p| {
            json!({"name": p.name, "family": p.family, "dim": p.dim(), "budget": p.budget(), "parameters": p.parameters()})
        })
        .collect();
    let doc = json!({
        "problems": problems,
        "variants": VARIANTS.iter().map(|v| v.0).collect::<Vec<_>>(),
        "seeds": SEEDS,
        "evaluator": "bench robust-eval",
    });
    let path = args.out.join("robust_problems.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// `bench robust-eval`: answers `{"problem", "variant", "seed", "index", "assignments"}` lines on stdin with
/// `{"value", "true_value", "regret", "noise_sd"}` (or `{"error"}`) lines on stdout. Index −1 evaluates without noise.
pub fn serve_eval() -> anyhow::Result<()> {
    let problems = all_problems();
    let mut cache: std::collections::HashMap<(String, u64), Instance> = Default::default();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = evaluate_request(&line, &problems, &mut cache).unwrap_or_else(|e| json!({"error": e}));
        writeln!(stdout, "{answer}")?;
        stdout.flush()?;
    }
    Ok(())
}

fn evaluate_request(
    line: &str,
    problems: &[ProblemDef],
    cache: &mut std::collections::HashMap<(String, u64), Instance>,
) -> Result<Value, String> {
    let req: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let name = req["problem"].as_str().ok_or("missing problem")?;
    let seed = req["seed"].as_u64().ok_or("missing seed")?;
    let variant = req["variant"].as_str().unwrap_or("noiseless");
    let level = VARIANTS.iter().find(|v| v.0 == variant).ok_or_else(|| format!("unknown variant {variant:?}"))?.1;
    let index = req["index"].as_i64().ok_or("missing index")?;
    let a = req["assignments"].as_object().ok_or("missing assignments")?;
    let p = problems.iter().find(|p| p.name == name).ok_or_else(|| format!("unknown problem {name:?}"))?;
    let inst = cache.entry((name.to_string(), seed)).or_insert_with(|| p.instance(seed));
    let u = inst.unit_of(a)?;
    let truth = inst.eval_unit(&u);
    Ok(json!({
        "value": inst.observe(&u, level, index),
        "true_value": truth,
        "regret": inst.regret(truth),
        "noise_sd": inst.noise_sd(level),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_rows_reproduce_the_noisy_curve_and_carry_the_phases() {
        let p = find("branin").expect("branin");
        let (run, rows) = one_run(&p, 0.1, "default", &json!({}), 0, 1, true).expect("a run");
        assert_eq!(rows.len(), run.y.len());
        let mut best = 0;
        for (t, row) in rows.iter().enumerate() {
            assert_eq!(row.index, t);
            if row.value < rows[best].value {
                best = t;
            }
            assert_eq!(run.y[t], rows[best].regret, "evaluation {t}: the regret of the best observed point");
            assert!(row.regret >= 0.0 && row.noise_sd == p.instance(0).noise_sd(0.1));
        }
        let phase = |name: &str| rows.iter().any(|r| r.phase.as_deref() == Some(name));
        assert!(phase("initial_design") && phase("model"));

        let mut line = Vec::new();
        write_trace_line(&mut line, json!({"problem": "branin", "seed": 0}), &rows[3]).expect("written");
        let parsed: Value = serde_json::from_slice(&line).expect("one JSON line");
        assert_eq!(parsed["problem"], "branin");
        assert_eq!(parsed["index"], 3);
        assert_eq!(parsed["value"].as_f64(), Some(rows[3].value));
        assert!(line.ends_with(b"\n") && line.iter().filter(|&&b| b == b'\n').count() == 1);
    }
}
