//! Stamps the bench binary with the commit it is built from (`BENCH_GIT_COMMIT`, read by `format::git_commit`), so
//! a result names its build even when the checkout has moved on since. `-dirty` when tracked files differ from
//! that commit; `unknown` outside a git checkout (e.g. a Docker build context without `.git`).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Rebuild the stamp when HEAD moves (a commit, a checkout) or when any crate's sources change (dirty or clean
    // again). Not on the index, which `git status` may rewrite without any change to the tree.
    for dir in ["crates/engine", "crates/bench/src", "crates/server/src", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    // A worktree has its own HEAD; branches live in the common directory, loose (refs/heads, watched recursively) or
    // packed. Only existing paths are watched: cargo reruns a build script whose watched path is missing every time.
    let dirs =
        ["--absolute-git-dir", "--git-common-dir"].map(|flag| git(&["rev-parse", "--path-format=absolute", flag]));
    if let [Some(git_dir), Some(common)] = dirs.map(|d| d.map(std::path::PathBuf::from)) {
        for path in [git_dir.join("HEAD"), common.join("refs/heads"), common.join("packed-refs")] {
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(head) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            if dirty { format!("{head}-dirty") } else { head }
        }
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=BENCH_GIT_COMMIT={commit}");
}
