//! `bench robust-table FILES…`: bayesd against every peer, per problem and variant.
//!
//! A run's score is its final regret: the recommended point's where the run has one (noisy variants), else the
//! last value of its curve. Scores below 10⁻⁶ of the instance's range count as 0 (both solved). For each problem the
//! table gives every method's median score and a paired one-sided Wilcoxon signed-rank test over the seeds both
//! ran (exact distribution, ties by mid-ranks, zero differences dropped): bayesd *wins* when it is lower at
//! p < 0.05, *loses* when it is higher at p < 0.05, else *ties*. Two one-sided tests at 5 % rather than one
//! two-sided test, so that five seeds (Ax's) can still reach a verdict (the smallest exact one-sided p with five
//! pairs is 1/32).
//!
//! Each summary line also judges the whole table, since 26 tests at 5 % each give about one verdict of each kind by
//! chance even between equal methods: how many wins and losses survive Holm's step-down correction over the
//! variant's problems (family-wise error 5 %), and the chance of as many losses or more if on every problem the
//! two methods were exchangeable (a binomial tail with the tests' size of at most 5 %, problems independent; not
//! for the best GP peer, chosen per problem by its median, which favours losses). These are printed beside the
//! per-problem verdicts, which stay what `docs/bench/robust.md` scores.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use super::{all_problems, find};
use crate::format::{Run, SuiteResult};
use crate::stats;

/// Peers that fit a Gaussian process (the "best GP peer" column takes the lowest median among them).
const GP_PEERS: &[&str] = &["optuna-gp", "botorch", "ax"];

/// Significance level of each one-sided test.
const ALPHA: f64 = 0.05;

/// Verdict of bayesd against a peer on one problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Win,
    Tie,
    Loss,
}

impl Verdict {
    fn letter(self) -> &'static str {
        match self {
            Verdict::Win => "W",
            Verdict::Tie => "T",
            Verdict::Loss => "L",
        }
    }
}

/// Scores by method and seed.
type MethodScores = BTreeMap<String, BTreeMap<u64, f64>>;

/// Scores by experiment, method and seed, merged over the input files (a later file's run of the same seed wins).
type Scores = BTreeMap<String, MethodScores>;

/// Smallest distance between two points of one batch, by method, over all its batched runs.
type Distances = BTreeMap<String, Vec<f64>>;

/// Loads the files' runs of the seeds in `seeds` ([`collect`]).
fn load(inputs: &[PathBuf], batch: usize, seeds: &Range<u64>) -> anyhow::Result<(Scores, Distances)> {
    let results = inputs
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let result: SuiteResult =
                serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            anyhow::ensure!(result.suite == "robust", "{}: suite {} is not robust", path.display(), result.suite);
            Ok(result)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(collect(results, batch, seeds))
}

/// The results' runs of the seeds in `seeds`, in order (a later result's run of the same seed wins); with `batch`
/// Q, experiments `p/v/qQ` join `p/v` (their methods are named `…-qQ`), so batched and sequential runs of a problem
/// sit in one row.
fn collect(results: Vec<SuiteResult>, batch: usize, seeds: &Range<u64>) -> (Scores, Distances) {
    let mut scores: Scores = BTreeMap::new();
    let mut distances: Distances = BTreeMap::new();
    let suffix = format!("/q{batch}");
    let mut floors = BTreeMap::new();
    for result in results {
        for e in result.experiments {
            let name = match e.name.strip_suffix(&suffix) {
                Some(base) if batch > 1 => base.to_string(),
                _ if e.name.matches('/').count() > 1 => continue,
                _ => e.name.clone(),
            };
            for mut m in e.methods {
                m.runs.retain(|r| seeds.contains(&r.seed));
                if m.runs.is_empty() {
                    continue;
                }
                for r in &m.runs {
                    if let Some(d) = r.min_batch_distance {
                        distances.entry(m.name.clone()).or_default().push(d);
                    }
                }
                let by_seed = scores.entry(name.clone()).or_default().entry(m.name).or_default();
                for r in m.runs {
                    let s = final_score(&r);
                    by_seed.insert(r.seed, if s < regret_floor(&mut floors, &name, r.seed) { 0.0 } else { s });
                }
            }
        }
    }
    (scores, distances)
}

/// A run's final regret: the recommended point's, else the curve's last value.
fn final_score(r: &Run) -> f64 {
    r.recommended.or_else(|| r.y.last().copied()).unwrap_or(f64::NAN)
}

/// 10⁻⁶ of the range of the instance behind experiment `name` (`problem/variant…`), computed once per instance.
fn regret_floor(cache: &mut BTreeMap<(String, u64), f64>, name: &str, seed: u64) -> f64 {
    let problem = name.split('/').next().unwrap_or_default();
    *cache
        .entry((problem.to_string(), seed))
        .or_insert_with(|| find(problem).map_or(0.0, |p| 1e-6 * p.instance(seed).range))
}

/// Exact one-sided p-values `(P(W⁺ ≤ w), P(W⁺ ≥ w))` of the Wilcoxon signed-rank statistic of `diffs` (zeros
/// dropped, mid-ranks for ties); `None` without a nonzero difference.
pub fn wilcoxon(diffs: &[f64]) -> Option<(f64, f64)> {
    let mut nz: Vec<f64> = diffs.iter().copied().filter(|d| *d != 0.0 && d.is_finite()).collect();
    if nz.is_empty() {
        return None;
    }
    nz.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Doubled mid-ranks are integers.
    let n = nz.len();
    let mut ranks2 = vec![0usize; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nz[j + 1].abs() == nz[i].abs() {
            j += 1;
        }
        for r in &mut ranks2[i..=j] {
            *r = i + j + 2;
        }
        i = j + 1;
    }
    let w: usize = nz.iter().zip(&ranks2).filter(|(d, _)| **d > 0.0).map(|(_, r)| r).sum();
    // Null distribution of the (doubled) statistic: each rank's sign is a fair coin.
    let total: usize = ranks2.iter().sum();
    let mut counts = vec![0f64; total + 1];
    counts[0] = 1.0;
    for &r in &ranks2 {
        for s in (r..=total).rev() {
            counts[s] += counts[s - r];
        }
    }
    let all = 2f64.powi(n as i32);
    let le: f64 = counts[..=w].iter().sum::<f64>() / all;
    let ge: f64 = counts[w..].iter().sum::<f64>() / all;
    Some((le, ge))
}

/// Win below 5 % one way, loss below 5 % the other, else tie.
fn verdict_of(lower: f64, higher: f64) -> Verdict {
    if lower < ALPHA {
        Verdict::Win
    } else if higher < ALPHA {
        Verdict::Loss
    } else {
        Verdict::Tie
    }
}

/// One-sided Wilcoxon p-values `(ours lower, ours higher)` over the common seeds and their number (1, 1 without a
/// nonzero difference).
fn p_values(ours: &BTreeMap<u64, f64>, theirs: &BTreeMap<u64, f64>) -> (f64, f64, usize) {
    let diffs: Vec<f64> = ours.iter().filter_map(|(s, a)| theirs.get(s).map(|b| a - b)).collect();
    let (lower, higher) = wilcoxon(&diffs).unwrap_or((1.0, 1.0));
    (lower, higher, diffs.len())
}

/// `P(X ≥ k)` for `X ~ Binomial(n, p)`: how likely `k` or more verdicts of one kind are among `n` problems if on
/// each the test's chance of that verdict is `p` and the problems are independent.
pub fn binomial_tail(k: usize, n: usize, p: f64) -> f64 {
    use statrs::distribution::{Binomial, DiscreteCDF};
    match k {
        0 => 1.0,
        _ => Binomial::new(p, n as u64).map_or(f64::NAN, |b| b.sf(k as u64 - 1)),
    }
}

/// The indices of `p_values` Holm's step-down procedure rejects at family-wise level `alpha`, smallest p first: the
/// i-th smallest (from 0) is rejected while it and every smaller one is below `alpha / (m − i)`.
pub fn holm_rejections(p_values: &[f64], alpha: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p_values.len()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = order.len();
    order.into_iter().enumerate().take_while(|&(i, j)| p_values[j] < alpha / (m - i) as f64).map(|(_, j)| j).collect()
}

/// Verdicts of one comparison over a variant's problems, with each problem's name and one-sided p-values.
#[derive(Default)]
struct Tally {
    problems: Vec<String>,
    lower: Vec<f64>,
    higher: Vec<f64>,
}

impl Tally {
    /// Judges `ours` against `theirs` on `problem` (the paired test, run once) and records it.
    fn add(&mut self, problem: &str, ours: &BTreeMap<u64, f64>, theirs: &BTreeMap<u64, f64>) -> Verdict {
        let (lower, higher, _) = p_values(ours, theirs);
        self.problems.push(problem.to_string());
        self.lower.push(lower);
        self.higher.push(higher);
        verdict_of(lower, higher)
    }

    /// Wins, ties and losses, from the recorded p-values.
    fn counts(&self) -> [usize; 3] {
        let mut counts = [0; 3];
        for (&lower, &higher) in self.lower.iter().zip(&self.higher) {
            counts[verdict_of(lower, higher) as usize] += 1;
        }
        counts
    }

    /// The problems whose p-values in `p` Holm's correction rejects, e.g. `2 (easom, branin)`, or `0`.
    fn kept(&self, p: &[f64]) -> String {
        let rejected = holm_rejections(p, ALPHA);
        let names: Vec<&str> = rejected.iter().map(|&i| self.problems[i].as_str()).collect();
        if rejected.is_empty() { "0".into() } else { format!("{} ({})", rejected.len(), names.join(", ")) }
    }
}

fn median(v: &BTreeMap<u64, f64>) -> f64 {
    stats::quantile(&v.values().copied().collect::<Vec<_>>(), 0.5)
}

/// Prints the table of `args.inputs` (markdown) with `proposed` (first of `--methods`, default `bayesd`) against
/// every other method; with `batch` Q > 1, the batched experiments next to the sequential ones, and the smallest
/// distances within batches. Only the runs of `seeds` count (`--first-run K --seeds N`: seeds K..K+N), so files of
/// several seed ranges can be judged on one range.
pub fn table(inputs: &[PathBuf], proposed: Option<&str>, batch: usize, seeds: Range<u64>) -> anyhow::Result<()> {
    let (scores, distances) = load(inputs, batch, &seeds)?;
    if !distances.is_empty() {
        println!("\n### Smallest distance between two points of one batch (unit cube), over runs\n");
        println!("| method | runs | minimum | 5th percentile | median |\n|---|---|---|---|---|");
        for (m, d) in &distances {
            println!(
                "| {m} | {} | {} | {} | {} |",
                d.len(),
                fmt(d.iter().copied().fold(f64::INFINITY, f64::min)),
                fmt(stats::quantile(d, 0.05)),
                fmt(stats::quantile(d, 0.5))
            );
        }
    }
    let proposed = proposed.unwrap_or("bayesd");
    // Group experiments by their variant suffix (everything after the problem name).
    let mut by_variant: BTreeMap<String, Vec<(&String, &MethodScores)>> = BTreeMap::new();
    for (name, methods) in &scores {
        let variant = name.split_once('/').map_or("", |(_, v)| v).to_string();
        by_variant.entry(variant).or_default().push((name, methods));
    }
    let problems = all_problems();
    let order: Vec<&str> = problems.iter().map(|p| p.name).collect();
    for (variant, mut exps) in by_variant {
        exps.sort_by_key(|(name, _)| {
            order.iter().position(|p| name.split('/').next() == Some(*p)).unwrap_or(usize::MAX)
        });
        let peers: Vec<String> = {
            let mut all: Vec<String> =
                exps.iter().flat_map(|(_, m)| m.keys().cloned()).filter(|m| m != proposed).collect();
            all.sort();
            all.dedup();
            all
        };
        println!("\n### {variant}: median final regret (runs), and {proposed} against each peer (W/T/L)\n");
        let mut header = format!("| problem | {proposed} |");
        for p in &peers {
            header.push_str(&format!(" {p} |"));
        }
        for p in &peers {
            header.push_str(&format!(" vs {p} |"));
        }
        header.push_str(" vs best GP peer |");
        println!("{header}");
        println!("|{}", "---|".repeat(3 + 2 * peers.len()));
        let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
        for (name, methods) in &exps {
            let Some(ours) = methods.get(proposed) else { continue };
            let problem = name.split('/').next().unwrap_or_default();
            let mut row = format!("| {problem} | {} ({}) |", fmt(median(ours)), ours.len());
            for p in &peers {
                row.push_str(&match methods.get(p) {
                    Some(t) => format!(" {} ({}) |", fmt(median(t)), t.len()),
                    None => " – |".into(),
                });
            }
            for p in &peers {
                row.push_str(&match methods.get(p) {
                    Some(t) => format!(" {} |", tally.entry(p.clone()).or_default().add(problem, ours, t).letter()),
                    None => " – |".into(),
                });
            }
            let best_gp = GP_PEERS
                .iter()
                .filter_map(|g| methods.get(*g).map(|t| (*g, t)))
                .min_by(|a, b| median(a.1).total_cmp(&median(b.1)));
            row.push_str(&match best_gp {
                Some((g, t)) => {
                    let v = tally.entry("best GP peer".into()).or_default().add(problem, ours, t);
                    format!(" {} ({g}) |", v.letter())
                }
                None => " – |".into(),
            });
            println!("{row}");
        }
        println!();
        for (peer, tally) in &tally {
            let [w, t, l] = tally.counts();
            let n = w + t + l;
            // The best GP peer is chosen by its median, which favours losses: no chance is stated for it.
            let chance = if l > 0 && peer != "best GP peer" {
                format!(
                    ", and {l} or more losses of {n} arise by chance alone with p ≤ {:.3}",
                    binomial_tail(l, n, ALPHA)
                )
            } else {
                String::new()
            };
            println!(
                "- {variant}, {proposed} vs {peer}: {w} wins, {t} ties, {l} losses of {n} ({:.0}% no worse); over \
                 the table, Holm's correction keeps {} wins and {} losses{chance}",
                100.0 * (w + t) as f64 / n.max(1) as f64,
                tally.kept(&tally.lower),
                tally.kept(&tally.higher),
            );
        }
    }
    Ok(())
}

fn fmt(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.is_nan() {
        "nan".into()
    } else {
        format!("{v:.3e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Experiment, Method};

    /// Verdict of `ours` against `theirs` over their common seeds, and their number.
    fn verdict(ours: &BTreeMap<u64, f64>, theirs: &BTreeMap<u64, f64>) -> (Verdict, usize) {
        let (lower, higher, n) = p_values(ours, theirs);
        (verdict_of(lower, higher), n)
    }

    /// Exact p-values printed by `tools/bench/robust_reference.py` (scipy.stats.wilcoxon with its exact permutation
    /// method): for
    /// d = [-1, -2, -3, -4, -5] "less" gives 0.03125; for d = [1, -2, 3, 4, 5, 6, 7, -8, 9, 10] "greater" gives
    /// 0.0419921875; with tied magnitudes, d = [1, -1, 2, 2, 3, -3, 4] "greater" gives 0.15625.
    #[test]
    fn wilcoxon_exact_matches_scipy() {
        let (le, ge) = wilcoxon(&[-1.0, -2.0, -3.0, -4.0, -5.0]).unwrap();
        assert!((le - 1.0 / 32.0).abs() < 1e-15 && (ge - 1.0).abs() < 1e-15);
        let (_, ge) = wilcoxon(&[1.0, -2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -8.0, 9.0, 10.0]).unwrap();
        assert!((ge - 0.041_992_187_5).abs() < 1e-15, "{ge}");
        let (_, ge) = wilcoxon(&[1.0, -1.0, 2.0, 2.0, 3.0, -3.0, 4.0]).unwrap();
        assert!((ge - 0.15625).abs() < 1e-12, "{ge}");
        assert!(wilcoxon(&[0.0, 0.0]).is_none());
    }

    /// `tools/bench/robust_reference.py` prints scipy's `binom.sf(k − 1, n, p)` for these: 0.13863237820062044,
    /// 0.7364799055342577, 0.4012630607616211, 0.0015105606511217227; and the p-values statsmodels' Holm procedure
    /// rejects: the first four of the first list, indices 1, 2 and 3 of the second (here smallest p first).
    #[test]
    fn table_level_chances_match_scipy_and_statsmodels() {
        for (k, n, want) in [
            (3, 26, 0.138_632_378_200_620_44),
            (1, 26, 0.736_479_905_534_257_7),
            (1, 10, 0.401_263_060_761_621_6),
            (6, 26, 0.001_510_560_651_121_722_7),
        ] {
            let got = binomial_tail(k, n, ALPHA);
            assert!((got - want).abs() < 1e-12, "{k} of {n}: {got}");
        }
        assert_eq!(binomial_tail(0, 26, ALPHA), 1.0);
        assert_eq!(holm_rejections(&[0.001, 0.0019, 0.002, 0.01, 0.04, 0.3], ALPHA).len(), 4);
        assert_eq!(holm_rejections(&[0.2, 0.0125, 0.011, 0.0005], ALPHA), [3, 2, 1]);
        assert!(holm_rejections(&[], ALPHA).is_empty());
    }

    /// Ten seeds all worse give p = 2⁻¹⁰, which Holm keeps among three problems (below 0.05 / 3); six worse of ten
    /// in rank order give 0.0419921875 (scipy's exact `wilcoxon` of diffs −1, …, −4, 5, …, 10, "greater", printed by
    /// `tools/bench/robust_reference.py`), a loss of its own but above Holm's next threshold 0.05 / 2.
    #[test]
    fn holm_names_the_losses_it_keeps() {
        let seeds = |f: &dyn Fn(u64) -> f64| -> BTreeMap<u64, f64> { (0..10).map(|s| (s, f(s))).collect() };
        let theirs = seeds(&|_| 0.0);
        let mut tally = Tally::default();
        assert_eq!(tally.add("worse", &seeds(&|s| 1.0 + s as f64), &theirs), Verdict::Loss);
        let mostly = seeds(&|s| if s < 4 { -1.0 - s as f64 } else { 1.0 + s as f64 });
        assert_eq!(tally.add("mostly", &mostly, &theirs), Verdict::Loss);
        assert_eq!(tally.add("mixed", &seeds(&|s| if s % 2 == 0 { 1.0 } else { -1.0 }), &theirs), Verdict::Tie);
        assert_eq!(tally.counts(), [0, 1, 2]);
        assert!((tally.higher[1] - 0.041_992_187_5).abs() < 1e-12, "{}", tally.higher[1]);
        assert_eq!(tally.kept(&tally.higher), "1 (worse)");
        assert_eq!(tally.kept(&tally.lower), "0");
    }

    #[test]
    fn verdicts_need_a_consistent_difference() {
        let a: BTreeMap<u64, f64> = (0..10).map(|s| (s, 1.0)).collect();
        let better: BTreeMap<u64, f64> = (0..10).map(|s| (s, 2.0 + s as f64)).collect();
        let mixed: BTreeMap<u64, f64> = (0..10).map(|s| (s, if s % 2 == 0 { 0.5 } else { 1.5 })).collect();
        assert_eq!(verdict(&a, &better).0, Verdict::Win);
        assert_eq!(verdict(&better, &a).0, Verdict::Loss);
        assert_eq!(verdict(&a, &mixed).0, Verdict::Tie);
    }

    /// `--first-run K --seeds N` judges seeds K..K+N only: a file holding seeds 0–19 then gives the verdicts of the
    /// seeds asked for, here a win on seeds 0–9 and a loss on 10–19.
    #[test]
    fn the_seed_range_selects_runs() {
        let run = |seed: u64, y: f64| Run { seed, x: vec![1.0], y: vec![y], ..Default::default() };
        let method =
            |name: &str, f: &dyn Fn(u64) -> f64| Method::new(name, "baseline", (0..20).map(|s| run(s, f(s))).collect());
        let mut result = SuiteResult::new("robust", false);
        result.experiments.push(Experiment {
            name: "branin/noiseless".into(),
            description: String::new(),
            metric: "simple_regret".into(),
            better: "lower".into(),
            x_axis: "n_observations".into(),
            optimum: None,
            budget: None,
            methods: vec![
                method("bayesd", &|s| if s < 10 { 1.0 + s as f64 } else { 100.0 + s as f64 }),
                method("peer", &|_| 50.0),
            ],
        });
        let verdict_of = |seeds: Range<u64>| {
            let (scores, _) = collect(vec![result.clone()], 1, &seeds);
            let methods = &scores["branin/noiseless"];
            verdict(&methods["bayesd"], &methods["peer"])
        };
        assert_eq!(verdict_of(0..10), (Verdict::Win, 10));
        assert_eq!(verdict_of(10..20), (Verdict::Loss, 10));
        assert_eq!(verdict_of(0..u64::MAX).1, 20);
    }
}
