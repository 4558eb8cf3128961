//! Seed 001 over HTTP: an indirect study whose conditional is learned from pairs given at creation runs an
//! ask-tell loop (suggestions carry only the query; observations carry the aggregate) and `best` recommends a
//! point of the target space.

mod common;

use common::backends;
use serde_json::{Value, json};

fn pairs() -> Vec<Value> {
    // x = h(a) + small deterministic jitter on a 10 × 10 grid of queries (LT of the paper, §7).
    let mut out = Vec::new();
    for i in 0..10 {
        for j in 0..10 {
            let (a1, a2) = ((i as f64 + 0.5) / 10.0, (j as f64 + 0.5) / 10.0);
            let e = ((i * 7 + j * 3) % 5) as f64 * 0.1 - 0.2;
            let x1 = (15.0 * a1 - 5.0 + e).clamp(-5.0, 10.0);
            let x2 = (15.0 * a2 - e).clamp(0.0, 15.0);
            out.push(json!({"target": {"x1": x1, "x2": x2}, "query": {"a1": a1, "a2": a2}}));
        }
    }
    out
}

fn branin(x1: f64, x2: f64) -> f64 {
    let pi = std::f64::consts::PI;
    let b = 5.1 / (4.0 * pi * pi);
    (x2 - b * x1 * x1 + 5.0 / pi * x1 - 6.0).powi(2) + 10.0 * (1.0 - 1.0 / (8.0 * pi)) * x1.cos() + 10.0
}

#[test]
fn indirect_study_with_pairs_runs_a_loop_and_best_is_a_target_point() {
    for srv in backends() {
        let study = srv.create_study(json!({
            "name": "indirect",
            "parameters": [
                {"name": "x1", "type": "float", "low": -5.0, "high": 10.0},
                {"name": "x2", "type": "float", "low": 0.0, "high": 15.0}
            ],
            "objective": {"name": "branin", "goal": "minimize"},
            "algorithm": {"name": "auto", "options": {"candidates": 128, "target_grid": 64}},
            "indirect": {
                "query_parameters": [
                    {"name": "a1", "type": "float", "low": 0.0, "high": 1.0},
                    {"name": "a2", "type": "float", "low": 0.0, "high": 1.0}
                ],
                "pairs": pairs()
            },
            "seed": 3
        }));
        let id = study["id"].as_str().expect("study id").to_string();
        for round in 0..7 {
            let s = srv.post(&format!("/v1/studies/{id}/suggestions"), json!({"count": 1})).expect(201);
            let sug = &s.json["suggestions"][0];
            assert_eq!(sug["algorithm"], "cmes", "{}: auto picks cmes", srv.backend);
            let q = &sug["query"];
            let (a1, a2) = (q["a1"].as_f64().expect("query a1"), q["a2"].as_f64().expect("query a2"));
            // The aggregate: Branin at the conditional mean (a stand-in for the average over p(x | a)).
            let z = branin(15.0 * a1 - 5.0, 15.0 * a2);
            srv.post(
                &format!("/v1/studies/{id}/observations"),
                json!({"suggestion_id": sug["id"], "assignments": {}, "query": q, "value": z}),
            )
            .expect(201);
            assert!(round < 7);
        }
        let best = srv.get(&format!("/v1/studies/{id}/best")).expect(200);
        let rec = &best.json["recommended"];
        let x1 = rec["assignments"]["x1"].as_f64().expect("recommended x1");
        let x2 = rec["assignments"]["x2"].as_f64().expect("recommended x2");
        assert!((-5.0..=10.0).contains(&x1) && (0.0..=15.0).contains(&x2), "{}: {rec}", srv.backend);
        assert!(rec["assignments"].get("a1").is_none(), "best is a target point, not a query");
        assert!(rec["predicted"]["mean"].as_f64().is_some_and(f64::is_finite));
    }
}
