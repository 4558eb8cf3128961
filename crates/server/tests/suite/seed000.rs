//! Seed 000 over HTTP (control sets with unknown random costs): each suggestion names the control set to play and
//! sets only its parameters; the client (the environment here) draws the uncontrolled parameters from their declared
//! distributions, reports every realised value and the observed cost; the study spends a cost budget and then
//! refuses suggestions.

use crate::common;

use std::collections::BTreeSet;

use common::{Rng, backends};
use serde_json::{Value, json};

/// Mean cost of each set (the server does not know them: `bocvs` learns them from observed costs).
const SETS: [(&str, &[&str], f64); 3] =
    [("x1", &["x1"], 0.5), ("x1x2", &["x1", "x2"], 0.7), ("all", &["x1", "x2", "x3"], 1.0)];
/// Cost noise: observed cost = mean · (1 ± 5%).
const COST_NOISE: f64 = 0.05;
/// 30 rounds always fit (30 · 1.05 ≤ 31.5); the budget is spent after at most 31.5 / 0.475 < 67 rounds.
const MAX_COST: f64 = 31.5;

fn objective(x1: f64, x2: f64, x3: f64) -> f64 {
    -((x1 - 0.3).powi(2) + (x2 - 0.6).powi(2) + 0.5 * (x3 - 0.4).powi(2))
}

fn study_body() -> Value {
    json!({
        "name": "control-sets",
        "parameters": [
            {"name": "x1", "type": "float", "low": 0.0, "high": 1.0},
            {"name": "x2", "type": "float", "low": 0.0, "high": 1.0,
             "distribution": {"type": "truncated_normal", "mean": 0.5, "std": 0.15}},
            {"name": "x3", "type": "float", "low": 0.0, "high": 1.0, "distribution": {"type": "uniform"}}
        ],
        "control_sets": SETS.iter().map(|(n, p, _)| json!({"name": n, "parameters": p})).collect::<Vec<_>>(),
        "objective": {"name": "yield", "goal": "maximize"},
        "algorithm": {"name": "auto", "options": {"tau": 3, "mc_samples": 128}},
        "budget": {"max_cost": MAX_COST},
        "seed": 17
    })
}

#[test]
fn control_set_study_runs_a_cost_budgeted_loop_with_client_reported_costs() {
    for srv in backends() {
        let b = srv.backend;
        let study = srv.create_study(study_body());
        let id = study["id"].as_str().expect("study id").to_string();
        assert_eq!(study["algorithm_in_use"], "bocvs", "{b}: auto picks bocvs for control sets");
        let mut rng = Rng(99);
        let mut reported: Vec<(String, f64, Value)> = Vec::new();
        let mut refused = None;
        for round in 0..80 {
            let s = srv.post(&format!("/v1/studies/{id}/suggestions"), json!({"count": 1}));
            if s.status == 409 {
                refused = Some((round, s));
                break;
            }
            let s = s.expect(201);
            let sug = &s.json["suggestions"][0];
            assert_eq!(sug["algorithm"], "bocvs");
            let set = sug["control_set"].as_str().unwrap_or_else(|| panic!("{b}: no control_set in {sug}"));
            let (_, params, mean_cost) = SETS.iter().find(|(n, _, _)| *n == set).expect("a declared control set");
            let given: BTreeSet<&str> = sug["assignments"].as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(given, params.iter().copied().collect(), "{b}: only the set's parameters are assigned");
            // The environment: controlled values as suggested, the others drawn from their distributions.
            let get = |k: &str| sug["assignments"].get(k).and_then(Value::as_f64);
            let x1 = get("x1").expect("x1 is in every set");
            assert!((0.0..=1.0).contains(&x1));
            let x2 = get("x2").unwrap_or_else(|| rng.truncated_normal(0.5, 0.15));
            let x3 = get("x3").unwrap_or_else(|| rng.uniform());
            let cost = mean_cost * (1.0 + COST_NOISE * (2.0 * rng.uniform() - 1.0));
            let realised = json!({"x1": x1, "x2": x2, "x3": x3});
            let obs = json!({"suggestion_id": sug["id"], "assignments": realised, "value": objective(x1, x2, x3),
                             "cost": cost});
            if round == 0 {
                // The uncontrolled values must be reported: without them the observation is refused, naming them.
                let partial =
                    json!({"suggestion_id": sug["id"], "assignments": {"x1": x1}, "value": 0.0, "cost": cost});
                let r = srv.post(&format!("/v1/studies/{id}/observations"), partial).expect(422);
                let want: Vec<String> =
                    ["x2", "x3"].iter().filter(|k| get(k).is_none()).map(|k| format!("assignments.{k}")).collect();
                for f in &want {
                    assert!(r.error_fields().contains(f), "{b}: {f} not named: {}", r.text);
                }
            }
            let o = srv.post(&format!("/v1/studies/{id}/observations"), obs).expect(201);
            assert_eq!(o.json["control_set"], set, "{b}: the observation keeps the suggestion's set");
            assert_eq!(o.json["cost"].as_f64(), Some(cost));
            reported.push((set.to_string(), cost, realised));
        }
        let (rounds, refusal) = refused.unwrap_or_else(|| panic!("{b}: the cost budget was never spent"));
        assert!(rounds >= 30, "{b}: 30 rounds fit in the budget, refused after {rounds}");
        assert!(refusal.json["type"].as_str().is_some_and(|t| t.ends_with("/budget-spent")), "{}", refusal.text);
        // Exploration (τ = 3): the sets in turn, three times, before any exploitation.
        let first: Vec<&str> = reported[..9].iter().map(|r| r.0.as_str()).collect();
        assert_eq!(first, ["x1", "x1x2", "all"].repeat(3), "{b}: round-robin exploration");

        // Costs, sets and realised values are stored as reported.
        let list = srv.get(&format!("/v1/studies/{id}/observations?limit=1000")).expect(200);
        let stored = list.json["observations"].as_array().expect("observations");
        assert_eq!(stored.len(), reported.len());
        for (o, (set, cost, realised)) in stored.iter().zip(&reported) {
            assert_eq!(o["control_set"], set.as_str());
            assert_eq!(o["cost"].as_f64(), Some(*cost));
            assert_eq!(&o["assignments"], realised);
        }
        // The study's spend and status agree with the observations.
        let total: f64 = reported.iter().map(|r| r.1).sum();
        let st = srv.get(&format!("/v1/studies/{id}")).expect(200).json;
        assert!((st["total_cost"].as_f64().unwrap() - total).abs() < 1e-9, "{b}: {st}");
        assert!(total >= MAX_COST && total - reported.last().unwrap().1 < MAX_COST, "{b}: spent by the last run");
        assert_eq!(st["status"], "completed", "{b}");
        assert_eq!(st["counts"]["observations"], reported.len());
        assert_eq!(st["budget_remaining"]["cost"].as_f64(), Some(0.0));
        assert_eq!(st["budget_remaining"]["spent"], true);
        // The recommendation is a decision of the study's parameters with a finite posterior.
        let best = srv.get(&format!("/v1/studies/{id}/best")).expect(200);
        assert!(best.json["recommended"]["predicted"]["mean"].as_f64().is_some_and(f64::is_finite), "{}", best.text);
        // Still refused on a retry: the budget stays spent.
        srv.post(&format!("/v1/studies/{id}/suggestions"), json!({"count": 1})).expect(409);
    }
}

/// `explore_fraction` explores a share of the study's cost budget, so a study without one is refused at creation;
/// with one, exploitation begins once that share has been observed.
#[test]
fn exploration_by_a_fraction_of_the_cost_budget() {
    for srv in backends() {
        let b = srv.backend;
        let mut body = study_body();
        body["algorithm"]["options"] = json!({"explore_fraction": 0.5, "mc_samples": 64});
        body.as_object_mut().unwrap().remove("budget");
        let r = srv.post("/v1/studies", body.clone()).expect(422);
        assert_eq!(r.error_fields(), ["budget.max_cost"], "{b}: {}", r.text);
        body["budget"] = json!({"max_cost": 3.0});
        let id = srv.create_study(body)["id"].as_str().expect("study id").to_string();
        let mut phases = Vec::new();
        for _ in 0..4 {
            let s = srv.post(&format!("/v1/studies/{id}/suggestions"), json!({"count": 1})).expect(201);
            let sug = &s.json["suggestions"][0];
            phases.push(sug["diagnostics"]["phase"].as_str().unwrap_or_default().to_string());
            let set = sug["control_set"].as_str().expect("a control set");
            let (_, _, cost) = SETS.iter().find(|(n, _, _)| *n == set).expect("a declared set");
            let get = |k: &str| sug["assignments"].get(k).and_then(Value::as_f64).unwrap_or(0.5);
            let obs = json!({"suggestion_id": sug["id"], "value": objective(get("x1"), get("x2"), get("x3")),
                             "assignments": {"x1": get("x1"), "x2": get("x2"), "x3": get("x3")}, "cost": cost});
            srv.post(&format!("/v1/studies/{id}/observations"), obs).expect(201);
        }
        // One round robin costs 0.5 + 0.7 + 1.0 = 2.2 ≥ 0.5 · 3.0: the fourth suggestion exploits.
        assert_ne!(phases[2], "exploitation", "{b}: {phases:?}");
        assert_eq!(phases[3], "exploitation", "{b}: {phases:?}");
    }
}
