//! Drives a [`Study`] through an ask-tell loop against an objective, the way a client of the server would, and
//! records what every suite needs: values, costs, suggest latencies.

use std::time::Instant;

use engine::{
    History, ObservationRecord, PointExtras, PolicyState, Study, StudySpec, SuggestRequest, space::Assignments,
};

/// One evaluation of a loop.
#[derive(Debug, Clone)]
#[allow(dead_code, reason = "read by the paper suites, not all of which use every field")]
pub struct Step {
    /// What was suggested.
    pub suggestion: engine::study::Suggestion,
    /// The full assignments that were observed.
    pub assignments: Assignments,
    /// Observed value (client units).
    pub value: f64,
    /// Observed cost, if any.
    pub cost: Option<f64>,
    /// Milliseconds the suggest call took.
    pub suggest_ms: f64,
}

/// What the objective returns for a suggestion: the realised full assignments, the value and an optional cost.
pub struct Outcome {
    /// Realised assignments (every parameter).
    pub assignments: Assignments,
    /// Value.
    pub value: f64,
    /// Cost.
    pub cost: Option<f64>,
}

/// Runs `spec` for `budget` evaluations (or until `stop` says so), calling `objective` on every suggestion.
pub fn run_loop(
    spec: StudySpec,
    budget: usize,
    mut objective: impl FnMut(&engine::study::Suggestion) -> Outcome,
    mut stop: impl FnMut(&[Step]) -> bool,
) -> anyhow::Result<Vec<Step>> {
    let study = Study::new(spec).map_err(|e| anyhow::anyhow!("invalid spec: {e:?}"))?;
    let mut history = History::default();
    let mut state = PolicyState::default();
    let mut steps: Vec<Step> = Vec::with_capacity(budget);
    while steps.len() < budget && !stop(&steps) {
        let started = Instant::now();
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None })?;
        let suggest_ms = started.elapsed().as_secs_f64() * 1e3;
        state = out.state;
        let suggestion = out.suggestions.into_iter().next().ok_or_else(|| anyhow::anyhow!("no suggestion"))?;
        let o = objective(&suggestion);
        history.observations.push(ObservationRecord {
            assignments: o.assignments.clone(),
            value: Some(o.value),
            cost: o.cost,
            // What the suggestion asked to play; its expected cost is not the observation's.
            extras: PointExtras { expected_cost: None, ..suggestion.extras.clone() },
            ..Default::default()
        });
        steps.push(Step { suggestion, assignments: o.assignments, value: o.value, cost: o.cost, suggest_ms });
    }
    Ok(steps)
}

/// Assignments `x0..x{d-1}` from a unit-cube point.
pub fn unit_assignments(u: &[f64]) -> Assignments {
    u.iter().enumerate().map(|(i, v)| (format!("x{i}"), serde_json::Value::from(*v))).collect()
}

/// The unit-cube point of assignments `x0..x{d-1}`.
pub fn unit_point(a: &Assignments, d: usize) -> Vec<f64> {
    (0..d).map(|i| a[&format!("x{i}")].as_f64().unwrap_or(f64::NAN)).collect()
}

/// `d` float parameters `x0..x{d-1}` on [0, 1].
pub fn unit_parameters(d: usize) -> serde_json::Value {
    serde_json::Value::Array(
        (0..d).map(|i| serde_json::json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 1})).collect(),
    )
}

/// Runs `jobs` on every available core (or `BENCH_THREADS`), in order of submission, printing progress to stderr
/// under `label`; results come back in job order.
pub fn parallel_map<J: Sync, R: Send>(label: &str, jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs.len() {
                        break;
                    }
                    let r = f(&jobs[i]);
                    if let Ok(mut v) = results.lock() {
                        v[i] = Some(r);
                    }
                    let k = done.fetch_add(1, Ordering::Relaxed) + 1;
                    eprintln!("[{label}] {k}/{} runs done ({:.0} s)", jobs.len(), started.elapsed().as_secs_f64());
                }
            });
        }
    });
    results.into_inner().unwrap_or_default().into_iter().map(|r| r.expect("every job ran")).collect()
}

/// CPU time of the calling thread in milliseconds (Linux `/proc/thread-self/schedstat`; NaN elsewhere): unlike
/// wall time, other load on the machine does not inflate it.
pub fn thread_cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()))
        .map_or(f64::NAN, |ns| ns * 1e-6)
}

/// One run per repetition: x = n, y = that repetition's time at each n.
pub fn runs_by_repetition(ns: &[usize], per_n: &[Vec<f64>]) -> Vec<crate::format::Run> {
    (0..per_n.iter().map(Vec::len).min().unwrap_or(0))
        .map(|r| crate::format::Run {
            seed: r as u64,
            x: ns.iter().map(|&n| n as f64).collect(),
            y: per_n.iter().map(|t| t[r]).collect(),
            ..Default::default()
        })
        .collect()
}
