//! `bench`: reproductions of the seed papers' experiments and performance benchmarks.
//!
//! `cargo run --release -p bench -- <suite> [--quick] [--seeds N] [--out DIR] [--only NAME]` writes
//! `DIR/<suite>.json` (format: `shared/bench-format.md`) and one SVG per experiment, and prints a summary table.

mod format;
mod httpc;
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
    /// Suite to run (`list` prints them).
    pub suite: String,
    /// Reduced protocol (fewer seeds, smaller budgets) that finishes in a few minutes.
    #[arg(long)]
    pub quick: bool,
    /// Override the number of seeds (runs) per method.
    #[arg(long)]
    pub seeds: Option<usize>,
    /// Output directory.
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,
    /// Only experiments whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}

impl Args {
    /// Whether experiment `name` is selected by `--only`.
    pub fn selected(&self, name: &str) -> bool {
        self.only.as_deref().is_none_or(|o| name.contains(o))
    }

    /// Seeds to run: `--seeds` or the suite's default for the protocol.
    pub fn n_seeds(&self, full: usize, quick: usize) -> usize {
        self.seeds.unwrap_or(if self.quick { quick } else { full })
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
    let Some(run) = suites::find(&args.suite) else {
        anyhow::bail!("unknown suite '{}'; `bench list` shows the suites", args.suite);
    };
    std::fs::create_dir_all(&args.out)?;
    let result = run(&args)?;
    let path = args.out.join(format!("{}.json", result.suite));
    std::fs::write(&path, serde_json::to_string_pretty(&result)?)?;
    suites::print_summary(&result);
    eprintln!("wrote {}", path.display());
    Ok(())
}
