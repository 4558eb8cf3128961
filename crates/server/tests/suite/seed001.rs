//! Seed 001 over HTTP: an indirect study whose conditional is learned from pairs given at creation runs an
//! ask-tell loop (suggestions carry only the query; observations carry the aggregate) and `best` recommends a
//! point of the target space.

use crate::common;

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

fn indirect_study(pairs_at_creation: Vec<Value>) -> Value {
    json!({
        "name": "indirect-upload",
        "parameters": [
            {"name": "x1", "type": "float", "low": -5.0, "high": 10.0},
            {"name": "x2", "type": "float", "low": 0.0, "high": 15.0}
        ],
        "objective": {"name": "branin", "goal": "minimize"},
        "algorithm": {"name": "cmes", "options": {"candidates": 128, "target_grid": 64, "initial_design": 2}},
        "indirect": {
            "query_parameters": [
                {"name": "a1", "type": "float", "low": 0.0, "high": 1.0},
                {"name": "a2", "type": "float", "low": 0.0, "high": 1.0}
            ],
            "pairs": pairs_at_creation
        },
        "seed": 11
    })
}

/// One cmes round: suggest, report Branin at the conditional mean of the query; returns the suggestion.
fn round(srv: &common::TestServer, id: &str) -> Value {
    let s = srv.post(&format!("/v1/studies/{id}/suggestions"), json!({"count": 1})).expect(201);
    let sug = s.json["suggestions"][0].clone();
    assert!(sug["assignments"].as_object().is_some_and(|a| a.is_empty()), "only the query is set: {sug}");
    let q = &sug["query"];
    let z = branin(15.0 * q["a1"].as_f64().expect("a1") - 5.0, 15.0 * q["a2"].as_f64().expect("a2"));
    srv.post(&format!("/v1/studies/{id}/observations"), json!({"suggestion_id": sug["id"], "query": q, "value": z}))
        .expect(201);
    sug
}

#[test]
fn pairs_uploaded_after_creation_are_validated_persisted_and_drive_the_model() {
    let all = pairs();
    for srv in backends() {
        let b = srv.backend;
        // Without pairs there is no conditional: cmes suggests its design, then falls back to it (never a 500).
        let study = srv.create_study(indirect_study(Vec::new()));
        let id = study["id"].as_str().expect("study id").to_string();
        let phases: Vec<Value> = (0..3).map(|_| round(&srv, &id)["diagnostics"]["phase"].clone()).collect();
        assert_eq!(phases, [json!("initial_design"), json!("initial_design"), json!("fallback")], "{b}");
        let best = srv.get(&format!("/v1/studies/{id}/best")).expect(200);
        assert!(best.json["recommended"].is_null(), "{b}: no model without pairs: {}", best.text);
        let p = srv.post(&format!("/v1/studies/{id}/predict"), json!({"points": [{"x1": 0.0, "x2": 5.0}]})).expect(409);
        assert!(p.json["detail"].as_str().is_some_and(|d| d.contains("/pairs")), "{b}: {}", p.text);

        // Validation: each bad field named; nothing stored.
        let path = format!("/v1/studies/{id}/pairs");
        let bad = srv.post(
            &path,
            json!({"pairs": [
                {"target": {"x1": 0.0, "x2": 20.0}, "query": {"a1": 0.1, "a2": 0.2}},
                {"target": {"x1": 0.0, "x2": 1.0, "zz": 3.0}, "query": {"a1": 0.1}}
            ]}),
        );
        let bad = bad.expect(422);
        let fields = bad.error_fields();
        for f in ["pairs[0].target.x2", "pairs[1].target.zz", "pairs[1].query.a2"] {
            assert!(fields.iter().any(|g| g == f), "{b}: {f} not in {fields:?}");
        }
        let raw = br#"{"pairs": [{"target": {"x1": NaN, "x2": 1.0}, "query": {"a1": 0.1, "a2": 0.2}}]}"#;
        let nan = srv.raw("POST", &path, Some(raw), &[("Content-Type", "application/json")]).expect(422);
        assert!(nan.error_fields().iter().any(|f| f.contains("x1")), "{b}: {}", nan.text);
        assert_eq!(srv.post(&path, json!({"pairs": []})).expect(422).error_fields(), ["pairs"], "{b}");
        assert_eq!(srv.post(&path, json!({"pair": []})).status, 422, "{b}: unknown field");
        let none = format!("/v1/studies/{}/pairs", uuid_nil());
        srv.post(&none, json!({"pairs": [all[0].clone()]})).expect(404);

        // Idempotency-Key: a retry replays the first response; the same key with another body is refused.
        let first = json!({"pairs": all[..60].to_vec()});
        let key = [("Idempotency-Key", "pairs-1")];
        let up = srv.request("POST", &path, Some(&first), &key).expect(201);
        assert_eq!((up.json["added"].as_i64(), up.json["total_pairs"].as_i64()), (Some(60), Some(60)), "{b}");
        let again = srv.request("POST", &path, Some(&first), &key).expect(201);
        assert_eq!(again.json, up.json, "{b}");
        assert_eq!(again.header("idempotent-replayed"), Some("true"));
        srv.request("POST", &path, Some(&json!({"pairs": all[60..].to_vec()})), &key).expect(409);
        let up2 = srv.post(&path, json!({"pairs": all[60..].to_vec()})).expect(201);
        assert_eq!(up2.json["total_pairs"].as_i64(), Some(100), "{b}: the replay stored nothing: {}", up2.text);

        // With the uploaded pairs the CMP is fitted: the loop runs on the model and `best` is a target point.
        for _ in 0..5 {
            let sug = round(&srv, &id);
            assert_eq!(sug["algorithm"], "cmes");
            assert_eq!(sug["diagnostics"]["phase"], "model", "{b}: {sug}");
            assert_eq!(sug["diagnostics"]["extra"]["pairs"], 100, "{b}: both uploads reach the engine");
        }
        let best = srv.get(&format!("/v1/studies/{id}/best")).expect(200);
        let rec = &best.json["recommended"];
        let (x1, x2) = (rec["assignments"]["x1"].as_f64().expect("x1"), rec["assignments"]["x2"].as_f64().expect("x2"));
        assert!((-5.0..=10.0).contains(&x1) && (0.0..=15.0).contains(&x2), "{b}: {rec}");
        assert!(rec["predicted"]["mean"].as_f64().is_some_and(f64::is_finite), "{b}: {rec}");
        let p = srv.post(&format!("/v1/studies/{id}/predict"), json!({"points": [{"x1": x1, "x2": x2}]})).expect(200);
        assert!(p.json["predictions"][0]["mean"].as_f64().is_some_and(f64::is_finite));

        // Pairs given at creation and uploaded ones are combined.
        let mixed = srv.create_study(indirect_study(all[..30].to_vec()));
        let mid = mixed["id"].as_str().expect("study id").to_string();
        let up = srv.post(&format!("/v1/studies/{mid}/pairs"), json!({"pairs": all[30..50].to_vec()})).expect(201);
        assert_eq!(up.json["total_pairs"], 50, "{b}");
        for _ in 0..3 {
            round(&srv, &mid);
        }
        assert_eq!(round(&srv, &mid)["diagnostics"]["extra"]["pairs"], 50, "{b}");

        // Studies the route does not apply to: 409 with a clear detail.
        let plain = srv.create_study(common::branin_study("plain"));
        let r = srv.post(&format!("/v1/studies/{}/pairs", plain["id"].as_str().unwrap()), first.clone()).expect(409);
        assert!(r.json["detail"].as_str().is_some_and(|d| d.contains("indirect")), "{b}: {}", r.text);
        let mut known = indirect_study(Vec::new());
        known["indirect"]["conditional"] = json!([
            {"target": "x1", "query": "a1", "form": "affine", "scale": 15.0, "offset": -5.0},
            {"target": "x2", "query": "a2", "form": "affine", "scale": 15.0}
        ]);
        let known = srv.create_study(known);
        let r = srv.post(&format!("/v1/studies/{}/pairs", known["id"].as_str().unwrap()), first.clone()).expect(409);
        assert!(r.json["detail"].as_str().is_some_and(|d| d.contains("conditional")), "{b}: {}", r.text);
        srv.delete(&format!("/v1/studies/{mid}")).expect(200);
        srv.post(&format!("/v1/studies/{mid}/pairs"), first.clone()).expect(409);
    }
}

fn uuid_nil() -> &'static str {
    "00000000-0000-0000-0000-000000000000"
}
