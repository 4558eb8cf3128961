//! The result file of a suite (`shared/bench-format.md`): one JSON document per suite run.

use serde::{Deserialize, Serialize};

use crate::stats;

/// A whole suite run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteResult {
    /// Suite name, e.g. `plain`.
    pub suite: String,
    /// `git rev-parse HEAD` at run time (with `-dirty` when the tree has changes).
    pub git_commit: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Reduced protocol.
    pub quick: bool,
    /// Where it ran.
    pub machine: Machine,
    /// The experiments.
    pub experiments: Vec<Experiment>,
}

/// Machine description.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    /// Logical CPUs.
    pub cpus: usize,
    /// Operating system.
    pub os: String,
}

/// One experiment: a problem/setting with every method's runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Experiment {
    /// Name, e.g. `hartmann6`.
    pub name: String,
    /// One sentence on the setting.
    pub description: String,
    /// `simple_regret`, `cumulative_regret`, `latency_ms`, …
    pub metric: String,
    /// `lower` or `higher`.
    pub better: String,
    /// `iteration`, `cost` or `n_observations`.
    pub x_axis: String,
    /// Optimal value, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimum: Option<f64>,
    /// Budget in x-axis units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// The methods compared.
    pub methods: Vec<Method>,
}

/// One method's runs in an experiment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Method {
    /// Algorithm name.
    pub name: String,
    /// `proposed`, `baseline` or `reference`.
    pub role: String,
    /// Individual runs.
    pub runs: Vec<Run>,
    /// Summary over runs.
    pub summary: Summary,
}

/// One run's curve.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Run {
    /// Seed.
    pub seed: u64,
    /// x-axis values.
    pub x: Vec<f64>,
    /// Metric after each x.
    pub y: Vec<f64>,
    /// Function evaluations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluations: Option<usize>,
    /// Wall seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// Suggest latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggest_ms: Option<Latency>,
    /// Final score of the point the method recommends, where it differs from the curve's last value (suite
    /// robust, noisy variants: the true regret of the recommended point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended: Option<f64>,
    /// Smallest distance between two points of one batch, in the unit cube (batched runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_batch_distance: Option<f64>,
    /// Share of the suggestions after the initial design that satisfied every outcome constraint (suite moo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feasible_share: Option<f64>,
    /// Suggestions that violated a parameter constraint (suite moo; must be 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<usize>,
}

/// Median and 95th percentile.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub median: f64,
    /// 95th percentile.
    pub p95: f64,
}

impl Latency {
    /// From raw samples.
    pub fn of(samples: &[f64]) -> Self {
        Self { median: stats::quantile(samples, 0.5), p95: stats::quantile(samples, 0.95) }
    }
}

/// Final-value summary over runs (plus the median, which regret tables quote).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// Mean of the final values.
    pub final_mean: f64,
    /// Standard error of the mean.
    pub final_stderr: f64,
    /// Median of the final values.
    pub final_median: f64,
    /// Number of runs.
    pub n_runs: usize,
}

impl Method {
    /// A method with its summary computed from the runs' last values.
    pub fn new(name: &str, role: &str, runs: Vec<Run>) -> Self {
        let finals: Vec<f64> = runs.iter().filter_map(|r| r.y.last().copied()).collect();
        let summary = Summary {
            final_mean: stats::mean(&finals),
            final_stderr: stats::stderr(&finals),
            final_median: stats::quantile(&finals, 0.5),
            n_runs: finals.len(),
        };
        Self { name: name.into(), role: role.into(), runs, summary }
    }
}

impl Experiment {
    /// Median, mean, 5%-trimmed mean and s.e. of every method's curve at the given x values (last value carried),
    /// as a text table (the rows start with [`CHECKPOINT_HEADER`]'s columns).
    pub fn checkpoint_table(&self, xs: &[f64]) -> String {
        let mut out = format!(
            "{CHECKPOINT_HEADER:<24} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
            self.x_axis, "median", "mean", "trim5%", "s.e."
        );
        for m in &self.methods {
            for &x in xs {
                let vals: Vec<f64> =
                    m.runs.iter().filter_map(|r| r.x.iter().rposition(|&v| v <= x).map(|i| r.y[i])).collect();
                out.push_str(&format!(
                    "  {:<22} {:>10} {:>10.4e} {:>10.4e} {:>10.4e} {:>10.2e}\n",
                    m.name,
                    x,
                    stats::quantile(&vals, 0.5),
                    stats::mean(&vals),
                    stats::trimmed_mean(&vals, 0.05),
                    stats::stderr(&vals)
                ));
            }
        }
        out
    }
}

/// The start of a checkpoint table's header line.
pub const CHECKPOINT_HEADER: &str = "  method";

impl SuiteResult {
    /// An empty result stamped with commit, time and machine.
    pub fn new(suite: &str, quick: bool) -> Self {
        Self {
            suite: suite.into(),
            git_commit: git_commit(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            quick,
            machine: Machine {
                cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
                os: std::env::consts::OS.into(),
            },
            experiments: Vec::new(),
        }
    }
}

/// The commit the bench binary was built from, `-dirty` when its tracked files differed from it, `unknown` when
/// built outside a git checkout: stamped by `build.rs` at build time, so a run names its build even after the
/// checkout has moved on.
fn git_commit() -> String {
    env!("BENCH_GIT_COMMIT").to_string()
}
