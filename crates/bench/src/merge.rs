//! `bench merge --out DIR a.json b.json …`: joins result files of one suite run in slices (`--first-run K --seeds
//! N`), so that a protocol too long for one sitting can be run piece by piece at a fixed commit.
//!
//! Runs are concatenated per experiment and method (in file order); a (method, seed) present twice is an error, as is
//! mixing suites, quick and full runs, or slices of an experiment scored against different optima. Summaries are
//! recomputed, a checkpoint table in an experiment's description (seed003) is recomputed at the same x values, the SVGs
//! are redrawn, and the result's `git_commit` lists the distinct commits of the inputs joined by `+`. The description
//! text before the table is the first slice's; where a later slice's differs (it may hold per-slice statistics), that
//! text is appended with the seeds it covers, so that nothing in the merged file speaks for runs it was not computed
//! from without saying so.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::format::{CHECKPOINT_HEADER, Experiment, Method, SuiteResult};
use crate::plot::{Band, plot_experiment};

/// Joins `inputs` and writes the SVGs into `out`; the caller writes the JSON.
pub fn merge(inputs: &[PathBuf], out: &Path) -> anyhow::Result<SuiteResult> {
    let mut parts = Vec::with_capacity(inputs.len());
    for path in inputs {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let part: SuiteResult =
            serde_json::from_str(&text).with_context(|| format!("{} is not a bench result", path.display()))?;
        parts.push(part);
    }
    let merged = join(parts)?;
    for exp in &merged.experiments {
        plot_experiment(exp, out, &format!("{}_{}", merged.suite, exp.name.replace('/', "_")), band(exp))?;
    }
    Ok(merged)
}

/// The joined result (no I/O).
fn join(parts: Vec<SuiteResult>) -> anyhow::Result<SuiteResult> {
    let mut parts = parts.into_iter();
    let Some(mut merged) = parts.next() else { bail!("bench merge needs at least one result file") };
    let mut commits = vec![merged.git_commit.clone()];
    // (experiment, description text, seeds) of slices whose text before the table differs from the first slice's.
    let mut notes: Vec<(String, String, Vec<u64>)> = Vec::new();
    for part in parts {
        if part.suite != merged.suite || part.quick != merged.quick {
            bail!(
                "cannot merge suite {} ({}) with {} ({})",
                part.suite,
                quick_word(part.quick),
                merged.suite,
                quick_word(merged.quick)
            );
        }
        if !commits.contains(&part.git_commit) {
            commits.push(part.git_commit.clone());
        }
        for exp in part.experiments {
            match merged.experiments.iter_mut().find(|e| e.name == exp.name) {
                Some(into) => {
                    if exp.optimum != into.optimum {
                        bail!(
                            "{}: the slices score against different optima ({:?} and {:?}); rescore one of them first",
                            exp.name,
                            into.optimum,
                            exp.optimum
                        );
                    }
                    let (text, other) = (header(&exp.description), header(&into.description));
                    if text != other && !notes.iter().any(|(name, t, _)| *name == exp.name && *t == text) {
                        let seeds: Vec<u64> =
                            exp.methods.first().map(|m| m.runs.iter().map(|r| r.seed).collect()).unwrap_or_default();
                        notes.push((exp.name.clone(), text.to_string(), seeds));
                    }
                    add_runs(into, exp)?
                }
                None => merged.experiments.push(exp),
            }
        }
    }
    merged.git_commit = commits.join("+");
    for exp in &mut merged.experiments {
        exp.methods = exp.methods.drain(..).map(|m| Method::new(&m.name, &m.role, m.runs)).collect();
        refresh_table(exp);
        for (_, text, seeds) in notes.iter().filter(|(name, ..)| *name == exp.name) {
            let (lo, hi) = (seeds.iter().min().copied().unwrap_or(0), seeds.iter().max().copied().unwrap_or(0));
            let at = header(&exp.description).len();
            exp.description.insert_str(at, &format!("\n[the slice with seeds {lo}–{hi} says instead: {text}]"));
        }
    }
    Ok(merged)
}

/// The description text before its checkpoint table (all of it when there is none).
fn header(description: &str) -> &str {
    let end = description.find(&format!("\n{CHECKPOINT_HEADER} ")).unwrap_or(description.len());
    &description[..end]
}

fn quick_word(quick: bool) -> &'static str {
    if quick { "quick" } else { "full" }
}

/// Appends `from`'s runs to the same-named methods of `into` (new methods are appended whole).
fn add_runs(into: &mut Experiment, from: Experiment) -> anyhow::Result<()> {
    for m in from.methods {
        let Some(target) = into.methods.iter_mut().find(|t| t.name == m.name) else {
            into.methods.push(m);
            continue;
        };
        let seen: BTreeSet<u64> = target.runs.iter().map(|r| r.seed).collect();
        if let Some(r) = m.runs.iter().find(|r| seen.contains(&r.seed)) {
            bail!("{} / {}: seed {} appears in two files", into.name, m.name, r.seed);
        }
        target.runs.extend(m.runs);
    }
    Ok(())
}

/// Recomputes a checkpoint table at the end of the description at the x values its rows name.
fn refresh_table(exp: &mut Experiment) {
    let Some(at) = exp.description.find(&format!("\n{CHECKPOINT_HEADER} ")) else { return };
    let first = exp.methods.first().map(|m| m.name.clone()).unwrap_or_default();
    let xs: Vec<f64> = exp.description[at..]
        .lines()
        .skip(2)
        .filter_map(|line| line.strip_prefix("  ")?.strip_prefix(first.as_str()))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect();
    if xs.is_empty() {
        return;
    }
    let base = exp.description[..at].to_string();
    exp.description = format!("{base}\n{}", exp.checkpoint_table(&xs));
}

/// The band the suites draw: median and IQR for seed003's regret and F1 curves (except the SVM grid) and for the
/// latency suites, mean ± s.e. otherwise.
fn band(exp: &Experiment) -> Band {
    let median = exp.description.contains(&format!("\n{CHECKPOINT_HEADER} ")) && exp.name != "svm_grid"
        || exp.metric.contains("latency")
        || exp.metric.contains("_ms");
    if median { Band::MedianIqr } else { Band::MeanStderr }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Machine, Run};

    fn result(commit: &str, seeds: &[u64], quick: bool) -> SuiteResult {
        let runs = seeds
            .iter()
            .map(|&s| Run {
                seed: s,
                x: vec![1.0, 2.0],
                y: vec![10.0, s as f64],
                evaluations: Some(2),
                wall_s: None,
                suggest_ms: None,
                ..Default::default()
            })
            .collect();
        let mut exp = Experiment {
            name: "e".into(),
            description: "test".into(),
            metric: "simple_regret".into(),
            better: "lower".into(),
            x_axis: "iteration".into(),
            optimum: None,
            budget: None,
            methods: vec![Method::new("a", "proposed", runs)],
        };
        exp.description = format!("test\n{}", exp.checkpoint_table(&[2.0]));
        SuiteResult {
            suite: "s".into(),
            git_commit: commit.into(),
            created_at: String::new(),
            quick,
            machine: Machine { cpus: 2, os: "linux".into() },
            experiments: vec![exp],
        }
    }

    #[test]
    fn slices_join_into_one_result_with_recomputed_summary_and_table() {
        let m = join(vec![result("c1", &[0, 1], false), result("c2", &[2, 3], false)]).unwrap();
        assert_eq!(m.git_commit, "c1+c2");
        let method = &m.experiments[0].methods[0];
        assert_eq!(method.runs.iter().map(|r| r.seed).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(method.summary.n_runs, 4);
        assert_eq!(method.summary.final_mean, 1.5);
        // The table's mean at x = 2 is over all four runs now.
        let row = m.experiments[0].description.lines().find(|l| l.trim_start().starts_with("a ")).unwrap();
        assert!(row.contains("1.5000e0"), "{row}");
    }

    #[test]
    fn a_slice_with_another_description_is_quoted_with_its_seeds() {
        let mut second = result("c1", &[2, 3], false);
        let d = &mut second.experiments[0].description;
        *d = d.replacen("test", "spend 7", 1);
        let m = join(vec![result("c1", &[0, 1], false), second, result("c1", &[4], false)]).unwrap();
        let d = &m.experiments[0].description;
        assert!(d.starts_with("test\n[the slice with seeds 2–3 says instead: spend 7]\n"), "{d}");
        assert_eq!(d.matches("says instead").count(), 1, "{d}");
        // The recomputed table follows.
        assert!(d.lines().any(|l| l.trim_start().starts_with("a ") && l.contains("2.0000e0")), "{d}");
    }

    #[test]
    fn duplicate_seeds_and_mixed_protocols_are_refused() {
        let dup = join(vec![result("c1", &[0, 1], false), result("c1", &[1, 2], false)]);
        assert!(dup.unwrap_err().to_string().contains("seed 1"));
        assert!(join(vec![result("c1", &[0], false), result("c1", &[1], true)]).is_err());
        assert!(join(Vec::new()).is_err());
    }

    #[test]
    fn slices_scored_against_different_optima_are_refused() {
        let mut other = result("c2", &[2], false);
        other.experiments[0].optimum = Some(21.5);
        let err = join(vec![result("c1", &[0, 1], false), other]).unwrap_err().to_string();
        assert!(err.contains("different optima"), "{err}");
    }
}
