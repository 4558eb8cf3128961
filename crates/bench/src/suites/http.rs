//! `http`: the release `bayesd` server as a client sees it, on SQLite and on Postgres (each experiment starts its
//! own server process on a fresh database; see [`crate::httpc`]).
//!
//! **Suggest latency** against the number of observations n ∈ {10, 25, 50, 100, 150, 200} at d = 6 (`--quick`:
//! {10, 100, 200}). Each repetition is the situation of a running study: a study over six float parameters on
//! [0, 1] (algorithm `auto`, which resolves to `gp-ei`, with `initial_design: 5` so that n = 10 is past the
//! initial design), n − 1 observations of Hartmann-6 imported with one batch POST, one untimed suggest (which fits
//! the hyperparameters at n − 1, the warm start), the observation of that suggestion (n observations, so the model
//! is stale), then the **timed call**: one `POST /v1/studies/{id}/suggestions` round trip on a kept-alive
//! connection, from writing the request to reading the whole 201 response. It includes HTTP parsing, the study
//! lock and transaction, loading the n observations, the warm-started hyperparameter refit and acquisition
//! optimisation (checked: the response says `refit: true`, phase `model`), storing the suggestion and policy
//! state, and the commit. Method `engine` is the engine's own share of the same calls (`fit_ms + acquisition_ms`
//! from the response's diagnostics); the difference is HTTP, JSON and storage. A fresh study per repetition.
//!
//! **Observe throughput**: C ∈ {1, 4, 8} concurrent clients (`--quick`: 8), each on its own kept-alive
//! connection, post observations with assignments and no suggestion link to one d = 6 study for a fixed time
//! (15 s, `--quick` 4 s) after a short warm-up; reported: successful observations per second and the per-request
//! latency (median, p95). Every response must be 201, and the study's observation count must equal the number of
//! 201s afterwards (exactly once).
//!
//! Targets (issue 3): suggest median ≤ 50 ms at n = 100, d = 6; ≥ 1000 observations/s on Postgres with 8 clients.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use engine::testfunctions::TestFunction;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use crate::Args;
use crate::format::{Experiment, Latency, Method, Run, SuiteResult};
use crate::httpc::{Conn, ServerProcess};
use crate::plot::{Band, plot_experiment};
use crate::runner::{runs_by_repetition, unit_assignments, unit_parameters};

const D: usize = 6;
const BACKENDS: [&str; 2] = ["sqlite", "postgres"];

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let mut result = SuiteResult::new("http", args.quick);
    let ns: Vec<usize> = if args.quick { vec![10, 100, 200] } else { vec![10, 25, 50, 100, 150, 200] };
    let reps = args.n_seeds(9, 3);
    let clients: Vec<usize> = if args.quick { vec![8] } else { vec![1, 4, 8] };
    let duration = Duration::from_secs(if args.quick { 4 } else { 15 });

    let mut latency_methods = Vec::new();
    let mut engine_methods = Vec::new();
    let mut latency_table = Vec::new();
    for backend in BACKENDS {
        if !args.selected(&format!("suggest_latency/{backend}")) {
            continue;
        }
        let server = ServerProcess::start(backend)?;
        let mut wall = vec![Vec::new(); ns.len()];
        let mut engine_ms = vec![Vec::new(); ns.len()];
        for (i, &n) in ns.iter().enumerate() {
            for r in 0..reps {
                let (w, e) = timed_suggest(&server, n, r as u64)
                    .with_context(|| format!("suggest latency on {backend} at n = {n}, repetition {r}"))?;
                wall[i].push(w);
                engine_ms[i].push(e);
            }
            let (l, le) = (Latency::of(&wall[i]), Latency::of(&engine_ms[i]));
            eprintln!(
                "[http] {backend} suggest n={n}: median {:.1} ms, p95 {:.1} ms (engine median {:.1} ms; {reps} repetitions)",
                l.median, l.p95, le.median
            );
            latency_table.push((backend, n, l, le));
        }
        drop(server);
        latency_methods.push(Method::new(backend, "proposed", runs_by_repetition(&ns, &wall)));
        engine_methods.push(Method::new(
            &format!("engine ({backend})"),
            "reference",
            runs_by_repetition(&ns, &engine_ms),
        ));
    }
    if !latency_methods.is_empty() {
        latency_methods.extend(engine_methods);
        let exp = Experiment {
            name: "suggest_latency_d6".into(),
            description: "POST /suggestions round trip (HTTP, storage, warm-started refit, acquisition) on a study \
                          over 6 floats by number of Hartmann-6 observations; engine = fit_ms + acquisition_ms"
                .into(),
            metric: "latency_ms".into(),
            better: "lower".into(),
            x_axis: "n_observations".into(),
            optimum: None,
            budget: None,
            methods: latency_methods,
        };
        plot_experiment(&exp, &args.out, "http_suggest_latency_d6", Band::MedianIqr)?;
        result.experiments.push(exp);
    }

    let mut tput_methods = Vec::new();
    let mut obs_latency_methods = Vec::new();
    let mut tput_table = Vec::new();
    for backend in BACKENDS {
        if !args.selected(&format!("observe_throughput/{backend}")) {
            continue;
        }
        let mut rps = Vec::new();
        let (mut p50, mut p95) = (Vec::new(), Vec::new());
        for &c in &clients {
            let server = ServerProcess::start(backend)?;
            let t = throughput(&server, c, duration)
                .with_context(|| format!("observe throughput on {backend} with {c} clients"))?;
            eprintln!(
                "[http] {backend} observe, {c} clients: {:.0} observations/s, median {:.2} ms, p95 {:.2} ms ({} in {:.1} s)",
                t.per_second, t.latency.median, t.latency.p95, t.count, t.seconds
            );
            rps.push(t.per_second);
            p50.push(t.latency.median);
            p95.push(t.latency.p95);
            tput_table.push((backend, c, t));
        }
        let x: Vec<f64> = clients.iter().map(|&c| c as f64).collect();
        let one = |y: Vec<f64>| vec![Run { seed: 0, x: x.clone(), y, ..Default::default() }];
        tput_methods.push(Method::new(backend, "proposed", one(rps)));
        obs_latency_methods.push(Method::new(&format!("{backend} median"), "proposed", one(p50)));
        obs_latency_methods.push(Method::new(&format!("{backend} p95"), "reference", one(p95)));
    }
    if !tput_methods.is_empty() {
        let secs = duration.as_secs();
        let tput = Experiment {
            name: "observe_throughput".into(),
            description: format!(
                "observations/s of C concurrent keep-alive clients posting observations (assignments, no \
                 suggestion) to one study over 6 floats for {secs} s"
            ),
            metric: "throughput_rps".into(),
            better: "higher".into(),
            x_axis: "clients".into(),
            optimum: None,
            budget: None,
            methods: tput_methods,
        };
        plot_experiment(&tput, &args.out, "http_observe_throughput", Band::MedianIqr)?;
        result.experiments.push(tput);
        let lat = Experiment {
            name: "observe_latency".into(),
            description: format!("per-request latency of the observe POSTs of observe_throughput ({secs} s per C)"),
            metric: "latency_ms".into(),
            better: "lower".into(),
            x_axis: "clients".into(),
            optimum: None,
            budget: None,
            methods: obs_latency_methods,
        };
        plot_experiment(&lat, &args.out, "http_observe_latency", Band::MedianIqr)?;
        result.experiments.push(lat);
    }

    if !latency_table.is_empty() {
        println!("\nsuggest latency over HTTP (d = {D}, auto = gp-ei, warm-started refit), milliseconds");
        println!("  {:<9} {:>5} {:>9} {:>9} {:>15}", "backend", "n", "median", "p95", "engine median");
        for (b, n, l, le) in &latency_table {
            println!("  {b:<9} {n:>5} {:>9.1} {:>9.1} {:>15.1}", l.median, l.p95, le.median);
        }
    }
    if !tput_table.is_empty() {
        println!("\nobserve throughput ({} s per row)", duration.as_secs());
        println!(
            "  {:<9} {:>7} {:>10} {:>11} {:>9} {:>8}",
            "backend", "clients", "obs/s", "median ms", "p95 ms", "count"
        );
        for (b, c, t) in &tput_table {
            println!(
                "  {b:<9} {c:>7} {:>10.0} {:>11.2} {:>9.2} {:>8}",
                t.per_second, t.latency.median, t.latency.p95, t.count
            );
        }
    }
    Ok(result)
}

fn study_body(name: &str, seed: u64) -> Value {
    json!({
        "name": name,
        "parameters": unit_parameters(D),
        "objective": {"name": "hartmann6", "goal": "minimize"},
        "algorithm": {"name": "auto", "options": {"initial_design": 5}},
        "seed": seed,
    })
}

fn create_study(conn: &mut Conn, name: &str, seed: u64) -> anyhow::Result<String> {
    let study = conn.post("/v1/studies", &study_body(name, seed))?.expect(201, "create study")?;
    study["id"].as_str().map(str::to_string).context("study without id")
}

fn point_of(assignments: &Value) -> anyhow::Result<Vec<f64>> {
    (0..D).map(|i| assignments[format!("x{i}")].as_f64().with_context(|| format!("no x{i} in {assignments}"))).collect()
}

/// One repetition at `n` observations: (round-trip ms, engine ms) of the timed suggest.
fn timed_suggest(server: &ServerProcess, n: usize, rep: u64) -> anyhow::Result<(f64, f64)> {
    let f = TestFunction::hartmann6();
    let mut conn = server.conn();
    let id = create_study(&mut conn, &format!("latency n={n} rep={rep}"), rep)?;
    let mut rng = StdRng::seed_from_u64(1000 * n as u64 + rep);
    let observations: Vec<Value> = (0..n - 1)
        .map(|_| {
            let u: Vec<f64> = (0..D).map(|_| rng.random::<f64>()).collect();
            json!({"assignments": unit_assignments(&u), "value": f.eval_unit(&u)})
        })
        .collect();
    conn.post(&format!("/v1/studies/{id}/observations/batch"), &json!({"observations": observations}))?
        .expect(201, "batch import")?;
    let suggest_path = format!("/v1/studies/{id}/suggestions");
    let suggest_body = serde_json::to_vec(&json!({"count": 1}))?;
    // Warm-up: the fit at n − 1 observations, then its observation makes the model stale.
    let warm = conn.request("POST", &suggest_path, Some(&suggest_body))?.expect(201, "warm-up suggest")?;
    let s = &warm["suggestions"][0];
    let value = f.eval_unit(&point_of(&s["assignments"])?);
    conn.post(&format!("/v1/studies/{id}/observations"), &json!({"suggestion_id": s["id"], "value": value}))?
        .expect(201, "observe the warm-up suggestion")?;
    let started = Instant::now();
    let resp = conn.request("POST", &suggest_path, Some(&suggest_body))?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let out = resp.expect(201, "timed suggest")?;
    let diag = &out["suggestions"][0]["diagnostics"];
    ensure!(diag["refit"] == true && diag["phase"] == "model", "the timed suggest did not refit the model: {diag}");
    let engine_ms = diag["fit_ms"].as_f64().unwrap_or(f64::NAN) + diag["acquisition_ms"].as_f64().unwrap_or(f64::NAN);
    let study = conn.get(&format!("/v1/studies/{id}"))?.expect(200, "get study")?;
    ensure!(study["counts"]["observations"] == n, "the study has {} observations, not {n}", study["counts"]);
    Ok((ms, engine_ms))
}

/// Result of one throughput run.
#[derive(Debug, Clone, Copy)]
struct Throughput {
    per_second: f64,
    latency: Latency,
    count: usize,
    seconds: f64,
}

/// `clients` threads posting observations to one study for `duration`.
fn throughput(server: &ServerProcess, clients: usize, duration: Duration) -> anyhow::Result<Throughput> {
    let f = TestFunction::hartmann6();
    let mut conn = server.conn();
    let id = create_study(&mut conn, &format!("throughput {clients} clients"), 0)?;
    let path = format!("/v1/studies/{id}/observations");
    const WARMUP: usize = 10;
    let barrier = Arc::new(Barrier::new(clients));
    let outcomes: Vec<anyhow::Result<(Vec<f64>, usize, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let (path, barrier, f) = (&path, barrier.clone(), &f);
                s.spawn(move || -> anyhow::Result<(Vec<f64>, usize, f64)> {
                    let mut rng = StdRng::seed_from_u64(77 + c as u64);
                    let mut body = || -> anyhow::Result<Vec<u8>> {
                        let u: Vec<f64> = (0..D).map(|_| rng.random::<f64>()).collect();
                        Ok(serde_json::to_vec(&json!({"assignments": unit_assignments(&u), "value": f.eval_unit(&u)}))?)
                    };
                    let mut conn = server.conn();
                    for _ in 0..WARMUP {
                        let b = body()?;
                        conn.request("POST", path, Some(&b))?.expect(201, "warm-up observe")?;
                    }
                    let bodies: Vec<Vec<u8>> = (0..1000).map(|_| body()).collect::<anyhow::Result<_>>()?;
                    barrier.wait();
                    let started = Instant::now();
                    let mut lat = Vec::with_capacity(16_384);
                    for b in bodies.iter().cycle() {
                        if started.elapsed() >= duration {
                            break;
                        }
                        let t = Instant::now();
                        let resp = conn.request("POST", path, Some(b))?;
                        lat.push(t.elapsed().as_secs_f64() * 1e3);
                        resp.expect(201, "observe")?;
                    }
                    Ok((lat, WARMUP, started.elapsed().as_secs_f64()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("client thread panicked"))))
            .collect()
    });
    let mut all = Vec::new();
    let (mut warm, mut seconds) = (0, 0.0_f64);
    for o in outcomes {
        let (lat, w, s) = o?;
        all.extend(lat);
        warm += w;
        seconds = seconds.max(s);
    }
    let study = conn.get(&format!("/v1/studies/{id}"))?.expect(200, "get study")?;
    let stored = study["counts"]["observations"].as_u64().context("no observation count")? as usize;
    ensure!(stored == all.len() + warm, "{stored} observations stored for {} answered 201", all.len() + warm);
    Ok(Throughput { per_second: all.len() as f64 / seconds, latency: Latency::of(&all), count: all.len(), seconds })
}
