//! The suites. Each is a function from the command line to a [`SuiteResult`]; it writes its own SVGs.

mod http;
mod latency;
pub mod moo;
mod plain;
pub mod robust;
mod seed000;
mod seed001;
mod seed002;
mod seed002_problems;
mod seed003;
mod seed004;
mod soak;

use crate::Args;
use crate::format::SuiteResult;

/// A suite entry point.
pub type SuiteFn = fn(&Args) -> anyhow::Result<SuiteResult>;

/// Every suite with a one-line description.
pub const SUITES: &[(&str, &str)] = &[
    ("seed001", "indirect queries (paper 001 §7): CMES/CMETS vs MES/UCB/EI on Branin through LT/NLT and a quad-tree"),
    ("plain", "simple regret of the plain policies on Branin, Hartmann-6, Ackley-6"),
    ("seed004", "unknown kernel hyperparameters: HE-GP-UCB vs MLE, ExpectedUCB, A-GP-UCB (paper 004, App. J)"),
    ("http", "release server on SQLite and Postgres: suggest latency against n (d = 6), observe throughput"),
    (
        "soak",
        "release server under 8 mixed clients, SIGKILLed and restarted at random: lost, duplicates, 5xx, latency, RSS",
    ),
    ("latency", "engine suggest time (gp-ei with refit) against observations and dimension"),
    ("seed000", "control sets with unknown random costs (bocvs vs UCB-PSQ, TS-PSQ, ETC-50): regret against cost"),
    ("seed003", "TRUVAR (NIPS 2016): synthetic BO, LSE with noise levels, SVM grid, lake-like LSE with movement cost"),
    (
        "robust",
        "default and plain algorithms on 26 shifted, rotated problems (noiseless/noisy); robust-spec, robust-eval, robust-table",
    ),
    (
        "moo",
        "several objectives (hypervolume), outcome constraints (best feasible value), parameter constraints (mixture)",
    ),
    ("seed002", "unknown context distribution (SBO-KDE, DRBO-KDE vs StableOpt, GP-UCB, DRBO-MMD): cumulative regret"),
];

/// The entry point of `name`.
pub fn find(name: &str) -> Option<SuiteFn> {
    match name {
        "seed001" => Some(seed001::run),
        "plain" => Some(plain::run),
        "http" => Some(http::run),
        "soak" => Some(soak::run),
        "latency" => Some(latency::run),
        "seed000" => Some(seed000::run),
        "seed004" => Some(seed004::run),
        "seed003" => Some(seed003::run),
        "seed002" => Some(seed002::run),
        "robust" => Some(robust::run),
        "moo" => Some(moo::run),
        _ => None,
    }
}

/// Prints one line per experiment and method: final mean ± s.e. and median.
pub fn print_summary(result: &SuiteResult) {
    println!("suite {} ({}) at {}", result.suite, if result.quick { "quick" } else { "full" }, result.git_commit);
    for e in &result.experiments {
        println!("\n{} — {} ({} is better)", e.name, e.metric, e.better);
        println!("  {:<18} {:>14} {:>12} {:>14} {:>6}", "method", "final mean", "± s.e.", "median", "runs");
        for m in &e.methods {
            let s = &m.summary;
            println!(
                "  {:<18} {:>14.6e} {:>12.3e} {:>14.6e} {:>6}",
                m.name, s.final_mean, s.final_stderr, s.final_median, s.n_runs
            );
        }
    }
}
