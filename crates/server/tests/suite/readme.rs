//! The README's curl walkthroughs work when pasted into a shell: the `sh` blocks under "A session with curl" and
//! "Several objectives and constraints" run with bash against a live server (only the address line is changed);
//! the first gets a stored observation, a best point and the CSV export, the second a Pareto front.

use crate::common;

/// Runs the first `sh` block under the README heading `heading` against a fresh server; returns the server and what
/// the block printed.
fn run_walkthrough(heading: &str) -> (common::TestServer, String) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).expect("README");
    let section = readme.split(heading).nth(1).unwrap_or_else(|| panic!("the section {heading}"));
    let block = section.split("```sh\n").nth(1).and_then(|b| b.split("\n```").next()).expect("its sh block");
    assert!(block.starts_with("B=http://127.0.0.1:8080\n"), "the block starts with the address line: {block}");
    let srv = common::TestServer::sqlite();
    let script = block.replacen("B=http://127.0.0.1:8080", &format!("B=http://{}", srv.client.addr), 1);
    let out = std::process::Command::new("bash").args(["-euo", "pipefail", "-c", &script]).output().expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "the walkthrough failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    (srv, stdout)
}

#[test]
fn the_readme_curl_walkthrough_runs_as_pasted() {
    let (srv, stdout) = run_walkthrough("## A session with curl");
    assert!(stdout.contains(r#""value":55.2"#), "the observation is stored: {stdout}");
    assert!(stdout.contains(r#""best_observed""#), "best answers: {stdout}");
    assert!(stdout.contains("temperature,catalyst_ppm,stir_rpm,solvent,value"), "the CSV export: {stdout}");
    let studies = srv.get("/v1/studies").expect(200).json;
    assert_eq!(studies["studies"][0]["counts"]["observations"], 1, "{studies}");
}

#[test]
fn the_readme_multi_objective_walkthrough_runs_as_pasted() {
    let (_srv, stdout) = run_walkthrough("## Several objectives and constraints");
    assert!(stdout.contains(r#""feasible":true"#), "the observation is stored as feasible: {stdout}");
    assert!(stdout.contains(r#""hypervolume""#) && stdout.contains(r#""pareto""#), "best answers the front: {stdout}");
}
