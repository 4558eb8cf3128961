//! `bench`: reproductions of the seed papers' experiments and performance benchmarks.
//!
//! `cargo run --release -p bench -- <suite> [--quick] [--seeds N] [--out DIR] [--only NAME]` writes
//! `DIR/<suite>.json` (format: `shared/bench-format.md`) and one SVG per experiment, and prints a summary table.
//! A long protocol can be run in slices (`--first-run K --seeds N` runs the protocol's runs K..K+N) and the slices
//! joined with `bench merge --out DIR a.json b.json …` ([`merge`]).

mod format;
mod httpc;
mod merge;
mod plot;
mod runner;
mod stats;
mod suites;
mod surrogates;

use std::path::PathBuf;

use clap::Parser;

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "bayesd benchmarks: paper reproductions and performance")]
pub struct Args {
    /// Suite to run (`list` prints them; `merge` joins the result files given after it).
    pub suite: String,
    /// `merge`: the result files of one suite to join.
    pub inputs: Vec<PathBuf>,
    /// Reduced protocol (fewer seeds, smaller budgets) that finishes in a few minutes.
    #[arg(long)]
    pub quick: bool,
    /// Override the number of seeds (runs) per method (`robust-table`: judge only seeds `first-run`..+N).
    #[arg(long)]
    pub seeds: Option<usize>,
    /// Skip the protocol's first K runs (seeds) of every method: with `--seeds N`, runs K..K+N (a slice of a long
    /// protocol, to be joined with `bench merge`; `robust-table`: judge only seeds from K).
    #[arg(long, default_value_t = 0)]
    pub first_run: u64,
    /// Output directory.
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,
    /// Only experiments whose name contains this; comma-separated alternatives, and `=NAME` selects exactly NAME
    /// (`--only =ackley` without `ackley_2+4`).
    #[arg(long)]
    pub only: Option<String>,
    /// Only these methods (comma-separated names; suites seed000, seed002 and robust; `robust-table`: the first is
    /// the one compared with the others).
    #[arg(long)]
    pub methods: Option<String>,
    /// Suite robust: the noise variants to run (comma-separated: noiseless, noise1, noise10).
    #[arg(long)]
    pub variants: Option<String>,
    /// Suite robust: suggestions per call (a batch of `count` Q, observed together).
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// Suite robust: the name the default method's results carry instead of `bayesd` (to compare two builds in
    /// one table).
    #[arg(long)]
    pub label: Option<String>,
    /// Suites robust and latency: `algorithm.options` (a JSON object) of every method's studies, for ablations of
    /// a default (`--options '{"replicates": 0}' --label bayesd-norep`).
    #[arg(long)]
    pub options: Option<String>,
    /// Suite robust: also write `DIR/robust_trace.jsonl`, one line per evaluation (problem, variant, method, seed,
    /// index, observed value, true regret, noise sd, the suggestion's phase), for `tools/bench/robust_trace.py`.
    #[arg(long)]
    pub trace: bool,
    /// Suite robust: run the hold-out problems (other base functions and dimensions, not in the table's criteria)
    /// instead of the table's 26.
    #[arg(long)]
    pub holdout: bool,
    /// Suite latency: only these numbers of observations (comma-separated, e.g. `25,50`).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Suite latency: observation noise, its standard deviation this fraction of the noiseless values' range, with
    /// every fifth observation a re-run of the one before (a noisy study with replicates; 0: deterministic).
    #[arg(long, default_value_t = 0.0)]
    pub noise: f64,
}

impl Args {
    /// Whether experiment `name` is selected by `--only`.
    pub fn selected(&self, name: &str) -> bool {
        self.only.as_deref().is_none_or(|o| {
            o.split(',').any(|term| match term.strip_prefix('=') {
                Some(exact) => name == exact,
                None => name.contains(term),
            })
        })
    }

    /// Whether method `name` is selected by `--methods`.
    pub fn method_selected(&self, name: &str) -> bool {
        self.methods.as_deref().is_none_or(|m| m.split(',').any(|x| x.trim() == name))
    }

    /// Seeds to run: `--seeds` or the suite's default for the protocol.
    pub fn n_seeds(&self, full: usize, quick: usize) -> usize {
        self.seeds.unwrap_or(if self.quick { quick } else { full })
    }

    /// `--options` as a JSON object (empty without it).
    pub fn algorithm_options(&self) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        match &self.options {
            Some(o) => match serde_json::from_str(o) {
                Ok(serde_json::Value::Object(map)) => Ok(map),
                Ok(_) => anyhow::bail!("--options must be a JSON object of algorithm options"),
                Err(e) => anyhow::bail!("--options is not JSON: {e}"),
            },
            None => Ok(serde_json::Map::new()),
        }
    }

    /// The seeds of the runs to do: `base + first_run ..` for [`Args::n_seeds`] runs (`base`: the protocol's first
    /// seed).
    pub fn run_seeds(&self, base: u64, full: usize, quick: usize) -> Vec<u64> {
        let start = base + self.first_run;
        (start..start + self.n_seeds(full, quick) as u64).collect()
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.suite == "list" {
        for (name, about) in suites::SUITES {
            println!("{name:10} {about}");
        }
        return Ok(());
    }
    match args.suite.as_str() {
        "robust-eval" => return suites::robust::serve_eval(),
        "robust-table" => {
            let proposed = args.methods.as_deref().and_then(|m| m.split(',').next());
            let last = args.seeds.map_or(u64::MAX, |n| args.first_run.saturating_add(n as u64));
            return suites::robust::table(&args.inputs, proposed, args.batch, args.first_run..last);
        }
        "moo-eval" => return suites::moo::serve_eval(),
        "moo-spec" => {
            std::fs::create_dir_all(&args.out)?;
            return suites::moo::write_spec(&args);
        }
        "robust-spec" => {
            std::fs::create_dir_all(&args.out)?;
            return suites::robust::write_spec(&args);
        }
        _ => {}
    }
    std::fs::create_dir_all(&args.out)?;
    let result = if args.suite == "merge" {
        merge::merge(&args.inputs, &args.out)?
    } else {
        let Some(run) = suites::find(&args.suite) else {
            anyhow::bail!("unknown suite '{}'; `bench list` shows the suites", args.suite);
        };
        run(&args)?
    };
    let path = args.out.join(format!("{}.json", result.suite));
    std::fs::write(&path, serde_json::to_string_pretty(&result)?)?;
    suites::print_summary(&result);
    eprintln!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_and_methods_select_by_substring_exact_name_and_list() {
        let args = Args::parse_from(["bench", "seed002", "--only", "=ackley,branin", "--methods", "sbo-kde, gp-ucb"]);
        assert!(args.selected("ackley") && args.selected("modified_branin"));
        assert!(!args.selected("ackley_2+4") && !args.selected("hartmann"));
        assert!(args.method_selected("sbo-kde") && args.method_selected("gp-ucb"));
        assert!(!args.method_selected("drbo-kde"));
        let all = Args::parse_from(["bench", "seed002"]);
        assert!(all.selected("anything") && all.method_selected("anything"));
        assert_eq!(all.sizes, None);
        assert_eq!(Args::parse_from(["bench", "latency", "--sizes", "25,50"]).sizes, Some(vec![25, 50]));
    }

    #[test]
    fn options_must_be_a_json_object() {
        let parsed = |o: &str| Args::parse_from(["bench", "latency", "--options", o]).algorithm_options();
        let map = parsed(r#"{"replicates": 0}"#).expect("an object");
        assert_eq!(map.get("replicates"), Some(&serde_json::json!(0)));
        assert!(Args::parse_from(["bench", "latency"]).algorithm_options().expect("no options").is_empty());
        assert!(parsed("[1]").unwrap_err().to_string().contains("must be a JSON object"));
        assert!(parsed("{replicates").unwrap_err().to_string().contains("is not JSON"));
    }
}
