//! HTTP integration tests of the routes `http.rs` does not cover in depth: suggestion expiry, suggestion lists and
//! their state filter, batch import, CSV export, `best`, `predict`, budgets, body limit, compute saturation,
//! `/metrics`, health, and which routes stay public when tokens are configured. SQLite always, Postgres too when
//! `TEST_DATABASE_URL` is set; every server has its own database (file or schema).

use crate::common;

use std::collections::HashMap;
use std::io::{Read, Write};

use common::{TestServer, backends, branin, branin_study};
use serde_json::{Value, json};

fn sobol_study(name: &str) -> Value {
    let mut s = branin_study(name);
    s["algorithm"] = json!({"name": "sobol"});
    s
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key].as_array().expect("a list").iter().map(id).collect()
}

fn problem_type(r: &common::Resp) -> &str {
    r.json["type"].as_str().unwrap_or_default()
}

/// Every suggestion of a study in the given state, following cursors with pages of `limit`.
fn all_pages(srv: &TestServer, sid: &str, state: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut after = String::new();
    loop {
        let p =
            srv.get(&format!("/v1/studies/{sid}/suggestions?state={state}&limit={limit}&after={after}")).expect(200);
        let page = ids(&p.json, "suggestions");
        assert!(page.len() <= limit);
        out.extend(page);
        match p.json["next_cursor"].as_str() {
            Some(c) => after = c.to_string(),
            None => return out,
        }
    }
}

#[test]
fn expired_suggestions_read_as_abandoned_and_observing_one_is_409() {
    for srv in backends() {
        let b = srv.backend;
        let mut spec = sobol_study("ttl");
        spec["suggestion_ttl"] = json!(1);
        let study = srv.create_study(spec);
        assert_eq!(study["suggestion_ttl"], 1, "{b}");
        let sid = id(&study);
        let made = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 2})).expect(201).json;
        let sugs = ids(&made, "suggestions");
        for s in made["suggestions"].as_array().unwrap() {
            assert_eq!(s["state"], "open", "{b}");
            assert!(s["expires_at"].is_string(), "{b}: an expiry is set: {s}");
        }
        // Wait out the one-second time-to-live (the expiry is a wall-clock property of the suggestion).
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // Reads, before any write to the study, already show both as abandoned (reason `expired`).
        for s in &sugs {
            let got = srv.get(&format!("/v1/studies/{sid}/suggestions/{s}")).expect(200).json;
            assert_eq!(got["state"], "abandoned", "{b}: {got}");
            assert_eq!(got["abandon_reason"], "expired", "{b}");
            assert_eq!(got["closed_at"], got["expires_at"], "{b}");
        }
        assert_eq!(all_pages(&srv, &sid, "abandoned", 1), sugs, "{b}");
        assert!(all_pages(&srv, &sid, "open", 1).is_empty(), "{b}");
        // Observing an expired suggestion: 409 saying it expired; nothing stored.
        let r = srv
            .post(&format!("/v1/studies/{sid}/observations"), json!({"suggestion_id": sugs[0], "value": 1.0}))
            .expect(409);
        assert!(problem_type(&r).ends_with("suggestion-abandoned"), "{b}: {}", r.text);
        assert!(r.json["detail"].as_str().unwrap().contains("expired"), "{b}: {}", r.text);
        assert_eq!(r.header("content-type"), Some("application/problem+json"), "{b}");
        // Abandoning an expired suggestion is harmless and keeps its reason.
        let ab = srv.delete(&format!("/v1/studies/{sid}/suggestions/{}", sugs[1])).expect(200).json;
        assert_eq!(ab["abandon_reason"], "expired", "{b}");
        // After that write the expiry is stored; reads agree, and the study goes on.
        assert_eq!(all_pages(&srv, &sid, "abandoned", 1), sugs, "{b}");
        assert!(all_pages(&srv, &sid, "open", 1).is_empty(), "{b}");
        let next = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({})).expect(201).json;
        assert_eq!(next["suggestions"][0]["state"], "open", "{b}");
        assert!(!sugs.contains(&id(&next["suggestions"][0])), "{b}");
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["counts"]["observations"], 0, "{b}");
        assert_eq!(study["counts"]["suggestions"], 3, "{b}");
    }
}

#[test]
fn suggestion_state_filter_is_applied_before_paging() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("filter")));
        let made = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 6})).expect(201).json;
        let sugs = ids(&made, "suggestions");
        // 1–3 completed, 4–5 abandoned, 6 open.
        for s in &sugs[..3] {
            srv.post(&format!("/v1/studies/{sid}/observations"), json!({"suggestion_id": s, "value": 1.0})).expect(201);
        }
        for s in &sugs[3..5] {
            srv.delete(&format!("/v1/studies/{sid}/suggestions/{s}")).expect(200);
        }
        let first = srv.get(&format!("/v1/studies/{sid}/suggestions?state=abandoned&limit=2")).expect(200).json;
        assert_eq!(ids(&first, "suggestions"), sugs[3..5], "{b}: the first page holds the abandoned ones");
        assert_eq!(all_pages(&srv, &sid, "abandoned", 1), sugs[3..5], "{b}");
        assert_eq!(all_pages(&srv, &sid, "completed", 2), sugs[..3], "{b}");
        assert_eq!(all_pages(&srv, &sid, "open", 1), sugs[5..], "{b}");
        let everything: Vec<String> = {
            let mut out = Vec::new();
            let mut after = String::new();
            loop {
                let p = srv.get(&format!("/v1/studies/{sid}/suggestions?limit=4&after={after}")).expect(200).json;
                out.extend(ids(&p, "suggestions"));
                match p["next_cursor"].as_str() {
                    Some(c) => after = c.to_string(),
                    None => break out,
                }
            }
        };
        assert_eq!(everything, sugs, "{b}");
        let states: Vec<Value> = srv.get(&format!("/v1/studies/{sid}/suggestions")).json["suggestions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["state"].clone())
            .collect();
        assert_eq!(states, ["completed", "completed", "completed", "abandoned", "abandoned", "open"], "{b}");
    }
}

#[test]
fn suggestion_routes_reject_bad_queries_and_foreign_ids() {
    for srv in backends() {
        let b = srv.backend;
        let a = id(&srv.create_study(sobol_study("a")));
        let other = id(&srv.create_study(sobol_study("b")));
        let sug = id(&srv.post(&format!("/v1/studies/{a}/suggestions"), json!({})).expect(201).json["suggestions"][0]);
        // A suggestion is only reachable through its own study.
        srv.get(&format!("/v1/studies/{other}/suggestions/{sug}")).expect(404);
        srv.delete(&format!("/v1/studies/{other}/suggestions/{sug}")).expect(404);
        let r = srv
            .post(&format!("/v1/studies/{other}/observations"), json!({"suggestion_id": sug, "value": 1.0}))
            .expect(422);
        assert_eq!(r.error_fields(), ["suggestion_id"], "{b}");
        srv.get(&format!("/v1/studies/{a}/suggestions/{sug}")).expect(200);
        // Malformed ids and queries: 400 naming the parameter.
        srv.get(&format!("/v1/studies/{a}/suggestions/nope")).expect(400);
        srv.delete(&format!("/v1/studies/{a}/suggestions/nope")).expect(400);
        for (q, field) in
            [("limit=0", "limit"), ("limit=1001", "limit"), ("after=-1", "after"), ("state=OPEN", "state")]
        {
            let r = srv.get(&format!("/v1/studies/{a}/suggestions?{q}")).expect(400);
            assert_eq!(r.error_fields(), [field], "{b} {q}");
        }
        let r = srv.get(&format!("/v1/studies/{a}/suggestions?limit=ten")).expect(400);
        assert_eq!(r.header("content-type"), Some("application/problem+json"), "{b}");
        srv.get(&format!("/v1/studies/{}/suggestions", uuid::Uuid::new_v4())).expect(404);
        // An abandoned suggestion stays listed (as abandoned); the last page has no cursor.
        srv.delete(&format!("/v1/studies/{a}/suggestions/{sug}")).expect(200);
        let list = srv.get(&format!("/v1/studies/{a}/suggestions")).expect(200).json;
        assert_eq!(ids(&list, "suggestions"), std::slice::from_ref(&sug), "{b}");
        assert!(list["next_cursor"].is_null(), "{b}");
    }
}

#[test]
fn batch_import_stores_all_or_nothing_and_names_the_bad_item() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("batch")));
        let path = format!("/v1/studies/{sid}/observations/batch");
        // An invalid item: 422 naming it, nothing stored.
        let bad = json!({"observations": [
            {"assignments": {"x": 1.0, "y": 2.0}, "value": 3.0},
            {"assignments": {"x": 11.0, "y": 2.0}, "value": 4.0},
            {"assignments": {"x": 2.0, "y": 3.0}, "value": 5.0}
        ]});
        let r = srv.post(&path, bad).expect(422);
        assert_eq!(r.error_fields(), ["observations[1].assignments.x"], "{b}: {}", r.text);
        let r = srv
            .post(
                &path,
                json!({"observations": [{"assignments": {"x": 1.0, "y": 2.0}, "value": 3.0}, {"assignments": {"x": 1.0}, "value": 1.0}]}),
            )
            .expect(422);
        assert_eq!(r.error_fields(), ["observations[1].assignments.y"], "{b}: {}", r.text);
        let r = srv
            .post(&path, json!({"observations": [{"assignments": {"x": 1.0, "y": 2.0}, "valeur": 3.0}]}))
            .expect(422);
        assert_eq!(r.error_fields(), ["observations[0].valeur"], "{b}: {}", r.text);
        let r = srv.post(&path, json!({"observations": []})).expect(422);
        assert_eq!(r.error_fields(), ["observations"], "{b}");
        let r = srv.post(&path, json!({})).expect(422);
        assert_eq!(r.error_fields(), ["observations"], "{b}");
        let empty = srv.get(&format!("/v1/studies/{sid}/observations")).expect(200).json;
        assert!(empty["observations"].as_array().unwrap().is_empty(), "{b}");
        assert_eq!(srv.get(&format!("/v1/studies/{sid}")).json["counts"]["observations"], 0, "{b}");
        // The same suggestion twice in one batch: 409, and neither is stored.
        let sug =
            srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({})).expect(201).json["suggestions"][0]["id"]
                .clone();
        let r = srv
            .post(
                &path,
                json!({"observations": [{"suggestion_id": sug, "value": 1.0}, {"suggestion_id": sug, "value": 2.0}]}),
            )
            .expect(409);
        assert!(problem_type(&r).ends_with("suggestion-completed"), "{b}: {}", r.text);
        let still = srv.get(&format!("/v1/studies/{sid}/suggestions/{}", sug.as_str().unwrap())).expect(200).json;
        assert_eq!(still["state"], "open", "{b}: the failed batch rolled back");
        // Success: stored in order, with counters, suggestion completed.
        let good = json!({"observations": [
            {"assignments": {"x": 1.0, "y": 2.0}, "value": 3.0, "cost": 0.5},
            {"suggestion_id": sug, "value": 4.0, "metadata": {"run": 7}},
            {"assignments": {"x": 2.0, "y": 3.0}, "failed": true}
        ]});
        let r = srv.post(&path, good.clone()).expect(201).json;
        let stored = r["observations"].as_array().unwrap();
        assert_eq!(stored.len(), 3, "{b}");
        assert_eq!(stored[1]["suggestion_id"], sug, "{b}");
        assert_eq!(stored[2]["failed"], true, "{b}");
        let listed = srv.get(&format!("/v1/studies/{sid}/observations")).expect(200).json;
        assert_eq!(ids(&listed, "observations"), ids(&r, "observations"), "{b}");
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["counts"]["observations"], 3, "{b}");
        assert_eq!(study["total_cost"], 0.5, "{b}");
        assert_eq!(
            srv.get(&format!("/v1/studies/{sid}/suggestions/{}", sug.as_str().unwrap())).json["state"],
            "completed"
        );
        // Idempotent retry of a batch: the same response, nothing stored twice.
        let more = json!({"observations": [{"assignments": {"x": 5.0, "y": 5.0}, "value": 9.0}]});
        let one = srv.request("POST", &path, Some(&more), &[("Idempotency-Key", "batch-1")]).expect(201);
        let two = srv.request("POST", &path, Some(&more), &[("Idempotency-Key", "batch-1")]).expect(201);
        assert_eq!(one.json, two.json, "{b}");
        assert_eq!(srv.get(&format!("/v1/studies/{sid}")).json["counts"]["observations"], 4, "{b}");
        srv.post(&format!("/v1/studies/{}/observations/batch", uuid::Uuid::new_v4()), more).expect(404);
    }
}

/// Splits CSV text (RFC 4180 quoting) into rows of fields.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(field.is_empty() && row.is_empty(), "the CSV ends with a newline");
    rows
}

#[test]
fn csv_export_has_a_header_and_one_row_per_observation_that_round_trips() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("csv")));
        let values = [0.1, 1.0 / 3.0, -2.5e-7, 123456.789];
        let mut sent = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let x = -5.0 + 15.0 * (i as f64 + 0.5) / values.len() as f64;
            let y = std::f64::consts::PI * (i as f64 + 1.0);
            let body = json!({"assignments": {"x": x, "y": y}, "value": v, "value_stddev": 0.01,
                              "cost": i as f64, "metadata": {"note": format!("run \"{i}\", ok")}});
            sent.push(srv.post(&format!("/v1/studies/{sid}/observations"), body).expect(201).json);
        }
        srv.post(
            &format!("/v1/studies/{sid}/observations"),
            json!({"assignments": {"x": 0.0, "y": 0.0}, "failed": true}),
        )
        .expect(201);
        let r = srv.get(&format!("/v1/studies/{sid}/observations?format=csv")).expect(200);
        assert!(r.header("content-type").is_some_and(|c| c.starts_with("text/csv")), "{b}: {:?}", r.headers);
        let rows = parse_csv(&r.text);
        assert_eq!(
            rows[0],
            [
                "id",
                "seq",
                "suggestion_id",
                "created_at",
                "x",
                "y",
                "value",
                "value_stddev",
                "cost",
                "failed",
                "control_set",
                "noise_level",
                "metadata"
            ],
            "{b}"
        );
        assert_eq!(rows.len(), 1 + values.len() + 1, "{b}: one row per observation");
        let col: HashMap<&str, usize> = rows[0].iter().enumerate().map(|(i, h)| (h.as_str(), i)).collect();
        for (row, obs) in rows[1..].iter().zip(&sent) {
            assert_eq!(row.len(), rows[0].len(), "{b}");
            assert_eq!(row[col["id"]], id(obs), "{b}");
            let num = |name: &str| row[col[name]].parse::<f64>().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(num("x"), obs["assignments"]["x"].as_f64().unwrap(), "{b}: x round-trips exactly");
            assert_eq!(num("y"), obs["assignments"]["y"].as_f64().unwrap(), "{b}");
            assert_eq!(num("value"), obs["value"].as_f64().unwrap(), "{b}");
            assert_eq!(num("value_stddev"), 0.01, "{b}");
            assert_eq!(num("cost"), obs["cost"].as_f64().unwrap(), "{b}");
            assert_eq!(row[col["failed"]], "false", "{b}");
            let meta: Value = serde_json::from_str(&row[col["metadata"]]).expect("metadata is JSON");
            assert_eq!(meta, obs["metadata"], "{b}");
        }
        let failed = rows.last().unwrap();
        assert_eq!(failed[col["failed"]], "true", "{b}");
        assert_eq!(failed[col["value"]], "", "{b}");
        // A limit pages the CSV too; an unknown format is 400.
        let page = srv.get(&format!("/v1/studies/{sid}/observations?format=csv&limit=2")).expect(200);
        assert_eq!(parse_csv(&page.text).len(), 3, "{b}");
        let r = srv.get(&format!("/v1/studies/{sid}/observations?format=xml")).expect(400);
        assert_eq!(r.error_fields(), ["format"], "{b}");
        srv.get(&format!("/v1/studies/{}/observations?format=csv", uuid::Uuid::new_v4())).expect(404);
    }
}

/// Imports Branin observations at `n` scrambled points (values negated for a maximised study).
fn import_branin(srv: &TestServer, sid: &str, n: usize, negate: bool) -> Vec<(f64, f64, f64)> {
    let pts: Vec<(f64, f64, f64)> = (0..n)
        .map(|i| {
            let u = (i as f64 * 0.618_034 + 0.1) % 1.0;
            let v = (i as f64 * 0.414_214 + 0.3) % 1.0;
            let (x, y) = (-5.0 + 15.0 * u, 15.0 * v);
            (x, y, if negate { -branin(x, y) } else { branin(x, y) })
        })
        .collect();
    let items: Vec<Value> = pts.iter().map(|(x, y, v)| json!({"assignments": {"x": x, "y": y}, "value": v})).collect();
    srv.post(&format!("/v1/studies/{sid}/observations/batch"), json!({"observations": items})).expect(201);
    pts
}

#[test]
fn a_noisy_default_study_asks_for_a_replicate_that_is_observed_like_any_suggestion() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(branin_study("replicates")));
        let mut rng = common::Rng(7);
        let mut replicate = None;
        let mut seen: Vec<Value> = Vec::new();
        // Branin with noise of standard deviation 5 (its values span ~0–300): after the initial design of 10 the
        // model is noisy, and its first model-based point re-runs an observed one.
        for _ in 0..12 {
            let (sug, _) = srv.ask_tell(&sid, |a| {
                common::branin(a["x"].as_f64().unwrap(), a["y"].as_f64().unwrap()) + 5.0 * rng.normal()
            });
            if sug["diagnostics"]["phase"] == "replicate" {
                replicate = Some(sug["assignments"].clone());
                break;
            }
            seen.push(sug["assignments"].clone());
        }
        let again = replicate.unwrap_or_else(|| panic!("{b}: no replicate in 12 suggestions"));
        // The same point, up to the rounding of decoding it from the unit cube.
        let at = |a: &Value| (a["x"].as_f64().unwrap(), a["y"].as_f64().unwrap());
        let same_point = |a: &Value| {
            let ((x0, y0), (x1, y1)) = (at(a), at(&again));
            (x0 - x1).abs() <= 1e-9 && (y0 - y1).abs() <= 1e-9
        };
        assert!(seen.iter().any(same_point), "{b}: the replicate {again} is not an observed point");
        let obs = srv.get(&format!("/v1/studies/{sid}/observations")).expect(200).json;
        let same = obs["observations"].as_array().unwrap().iter().filter(|o| same_point(&o["assignments"])).count();
        assert_eq!(same, 2, "{b}: both runs of the point are stored: {obs}");
        let best = srv.get(&format!("/v1/studies/{sid}/best")).expect(200).json;
        assert!(best["recommended"]["predicted"]["mean"].as_f64().unwrap().is_finite(), "{b}: {best}");
    }
}

#[test]
fn best_reports_the_best_observed_and_a_model_recommendation_for_either_goal() {
    for srv in backends() {
        let b = srv.backend;
        // Empty study: both null.
        let sid = id(&srv.create_study(branin_study("best-min")));
        let empty = srv.get(&format!("/v1/studies/{sid}/best")).expect(200).json;
        assert!(empty["best_observed"].is_null() && empty["recommended"].is_null(), "{b}: {empty}");
        // Only failed runs: still nothing.
        srv.post(&format!("/v1/studies/{sid}/observations"), json!({"assignments": {"x": 0, "y": 0}, "failed": true}))
            .expect(201);
        let failed = srv.get(&format!("/v1/studies/{sid}/best")).expect(200).json;
        assert!(failed["best_observed"].is_null(), "{b}: {failed}");

        let pts = import_branin(&srv, &sid, 12, false);
        let min = pts.iter().cloned().fold((0.0, 0.0, f64::INFINITY), |a, p| if p.2 < a.2 { p } else { a });
        let best = srv.get(&format!("/v1/studies/{sid}/best")).expect(200).json;
        assert_eq!(best["best_observed"]["value"].as_f64(), Some(min.2), "{b}: the smallest value when minimising");
        assert_eq!(best["best_observed"]["assignments"]["x"].as_f64(), Some(min.0), "{b}");
        let rec = &best["recommended"];
        let (rx, ry) = (rec["assignments"]["x"].as_f64().unwrap(), rec["assignments"]["y"].as_f64().unwrap());
        assert!((-5.0..=10.0).contains(&rx) && (0.0..=15.0).contains(&ry), "{b}: {rec}");
        assert!(rec["predicted"]["mean"].as_f64().unwrap().is_finite(), "{b}: {rec}");
        assert!(rec["predicted"]["stddev"].as_f64().unwrap() >= 0.0, "{b}: {rec}");

        // The same data negated and maximised: the best is the largest value, the same point.
        let mut spec = branin_study("best-max");
        spec["objective"]["goal"] = json!("maximize");
        let sid = id(&srv.create_study(spec));
        let pts = import_branin(&srv, &sid, 12, true);
        let max = pts.iter().cloned().fold((0.0, 0.0, f64::NEG_INFINITY), |a, p| if p.2 > a.2 { p } else { a });
        assert_eq!(max.2, -min.2, "{b}");
        let best = srv.get(&format!("/v1/studies/{sid}/best")).expect(200).json;
        assert_eq!(best["best_observed"]["value"].as_f64(), Some(max.2), "{b}: the largest value when maximising");
        assert_eq!(best["best_observed"]["assignments"]["x"].as_f64(), Some(max.0), "{b}");
        assert!(best["recommended"]["predicted"]["mean"].as_f64().unwrap().is_finite(), "{b}");
        // The recommendation's predicted mean is on the objective's own scale (negative here, as every value is).
        assert!(best["recommended"]["predicted"]["mean"].as_f64().unwrap() < 0.0, "{b}: {best}");
    }
}

#[test]
fn predict_returns_the_posterior_and_names_invalid_fields() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(branin_study("predict")));
        let path = format!("/v1/studies/{sid}/predict");
        // No model yet: 409 (after the points validate).
        let r = srv.post(&path, json!({"points": [{"x": 0.0, "y": 0.0}]})).expect(409);
        assert!(problem_type(&r).ends_with("no-model"), "{b}: {}", r.text);
        let pts = import_branin(&srv, &sid, 15, false);
        let at: Vec<Value> = pts.iter().map(|(x, y, _)| json!({"x": x, "y": y})).collect();
        let r = srv.post(&path, json!({"points": at})).expect(200).json;
        let preds = r["predictions"].as_array().unwrap();
        assert_eq!(preds.len(), pts.len(), "{b}");
        let spread = pts.iter().map(|p| p.2).fold(f64::NEG_INFINITY, f64::max)
            - pts.iter().map(|p| p.2).fold(f64::INFINITY, f64::min);
        for (p, (_, _, v)) in preds.iter().zip(&pts) {
            let (m, s) = (p["mean"].as_f64().unwrap(), p["stddev"].as_f64().unwrap());
            assert!(s >= 0.0 && s.is_finite(), "{b}: {p}");
            // At observed points the posterior mean is close to the observation (noise-free data).
            assert!((m - v).abs() < 0.1 * spread, "{b}: mean {m} at an observation of {v} (spread {spread})");
        }
        // Far from the data the uncertainty is larger than at an observed point.
        let r = srv.post(&path, json!({"points": [at[0], {"x": -5.0, "y": 15.0}, {"x": 10.0, "y": 0.0}]})).expect(200);
        let s: Vec<f64> =
            r.json["predictions"].as_array().unwrap().iter().map(|p| p["stddev"].as_f64().unwrap()).collect();
        assert!(s[1].max(s[2]) > s[0], "{b}: {s:?}");
        // Invalid points: 422 naming points[i].name.
        let cases = [
            (json!({"points": [{"x": 0.0, "y": 0.0}, {"x": 50.0, "y": 0.0}]}), "points[1].x"),
            (json!({"points": [{"x": 0.0}]}), "points[0].y"),
            (json!({"points": [{"x": 0.0, "y": "high"}]}), "points[0].y"),
            (json!({"points": [{"x": 0.0, "y": 1.0, "z": 2.0}]}), "points[0].z"),
            (json!({"points": []}), "points"),
            (json!({"points": [[1.0, 2.0]]}), "points[0]"),
            (json!({}), "points"),
            (json!({"points": [{"x": 0.0, "y": 0.0}], "extra": 1}), "extra"),
        ];
        for (body, field) in cases {
            let r = srv.post(&path, body.clone()).expect(422);
            assert!(r.error_fields().iter().any(|f| f == field), "{b} {body}: wanted {field}, got {}", r.text);
        }
        for token in ["NaN", "Infinity", "-Infinity"] {
            let body = format!(r#"{{"points": [{{"x": {token}, "y": 1.0}}]}}"#);
            let r = srv.raw("POST", &path, Some(body.as_bytes()), &[("Content-Type", "application/json")]);
            assert_eq!(r.status, 422, "{b} {token}: {}", r.text);
            assert_eq!(r.error_fields(), ["points[0].x"], "{b} {token}");
        }
        srv.post(&format!("/v1/studies/{}/predict", uuid::Uuid::new_v4()), json!({"points": [{"x": 0, "y": 0}]}))
            .expect(404);
    }
}

#[test]
fn a_spent_budget_refuses_suggestions_with_a_clear_problem_and_completes_the_study() {
    for srv in backends() {
        let b = srv.backend;
        // max_observations: 3.
        let mut spec = sobol_study("budget-n");
        spec["budget"] = json!({"max_observations": 3});
        let sid = id(&srv.create_study(spec));
        let sp = format!("/v1/studies/{sid}/suggestions");
        let made = srv.post(&sp, json!({"count": 5})).expect(201).json;
        let sugs = ids(&made, "suggestions");
        assert_eq!(sugs.len(), 3, "{b}: no more suggestions than the budget has observations left");
        let r = srv.post(&sp, json!({})).expect(409);
        assert!(problem_type(&r).ends_with("budget-reserved"), "{b}: {}", r.text);
        for (i, s) in sugs.iter().enumerate() {
            let study = srv.get(&format!("/v1/studies/{sid}")).json;
            assert_eq!(study["status"], "active", "{b}");
            assert_eq!(study["budget_remaining"]["observations"], 3 - i, "{b}");
            srv.post(&format!("/v1/studies/{sid}/observations"), json!({"suggestion_id": s, "value": i as f64}))
                .expect(201);
        }
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["status"], "completed", "{b}: {study}");
        assert_eq!(study["budget_remaining"]["spent"], true, "{b}");
        assert_eq!(study["budget_remaining"]["observations"], 0, "{b}");
        let r = srv.post(&sp, json!({"count": 1})).expect(409);
        assert_eq!(r.header("content-type"), Some("application/problem+json"), "{b}");
        assert!(problem_type(&r).ends_with("budget-spent"), "{b}: {}", r.text);
        assert!(r.json["detail"].as_str().unwrap().contains("budget is spent"), "{b}: {}", r.text);
        assert_eq!(r.json["status"], 409, "{b}");
        // A client_id asking again is refused the same way (it has nothing open).
        srv.post(&sp, json!({"client_id": "robot"})).expect(409);

        // max_cost: 2.5, observations cost 1 each; the third one spends it.
        let mut spec = sobol_study("budget-cost");
        spec["budget"] = json!({"max_cost": 2.5});
        let sid = id(&srv.create_study(spec));
        let sp = format!("/v1/studies/{sid}/suggestions");
        for i in 0..3 {
            let study = srv.get(&format!("/v1/studies/{sid}")).json;
            assert_eq!(study["status"], "active", "{b}");
            assert_eq!(study["budget_remaining"]["cost"].as_f64(), Some(2.5 - i as f64).map(|c| c.max(0.0)), "{b}");
            let s = srv.post(&sp, json!({})).expect(201).json;
            srv.post(
                &format!("/v1/studies/{sid}/observations"),
                json!({"suggestion_id": s["suggestions"][0]["id"], "value": 1.0, "cost": 1.0}),
            )
            .expect(201);
        }
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["status"], "completed", "{b}: {study}");
        assert_eq!(study["total_cost"], 3.0, "{b}");
        assert_eq!(study["budget_remaining"]["cost"], 0.0, "{b}");
        let r = srv.post(&sp, json!({})).expect(409);
        assert!(problem_type(&r).ends_with("budget-spent"), "{b}: {}", r.text);
        // The listing shows the status too.
        let list = srv.get("/v1/studies").expect(200).json;
        let statuses: Vec<&str> =
            list["studies"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
        assert_eq!(statuses, ["completed", "completed"], "{b}");
    }
}

/// `POST …/suggestions` needs no body for one suggestion; a body still needs its JSON content type.
#[test]
fn a_suggestion_can_be_asked_for_without_a_body() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("no-body")));
        let path = format!("/v1/studies/{sid}/suggestions");
        let r = srv.request("POST", &path, None, &[]).expect(201);
        assert_eq!(r.json["suggestions"].as_array().map(Vec::len), Some(1), "{b}: {}", r.text);
        let typed = srv.raw("POST", &path, Some(br#"{"count": 2}"#), &[]);
        assert_eq!(typed.status, 415, "{b}: a body without Content-Type: {}", typed.text);
        // openapi-python-client sends `Content-Type: application/json` with an empty body when the body is unset.
        let r = srv.raw("POST", &path, Some(b""), &[("Content-Type", "application/json")]);
        assert_eq!(r.status, 201, "{b}: an empty body declared as JSON: {}", r.text);
        let r = srv.raw("POST", &path, Some(b""), &[("Content-Type", "text/plain")]);
        assert_eq!(r.status, 415, "{b}: an empty body declared as text: {}", r.text);
    }
}

/// Observations past the budget are stored (the runs happened) and the study shows by how much it is overspent.
#[test]
fn observations_past_the_budget_are_stored_and_the_overspend_is_shown() {
    for srv in backends() {
        let b = srv.backend;
        let mut spec = sobol_study("overspent");
        spec["budget"] = json!({"max_observations": 2, "max_cost": 1.0});
        let sid = id(&srv.create_study(spec));
        let op = format!("/v1/studies/{sid}/observations");
        srv.post(&op, json!({"assignments": {"x": 0.1, "y": 1.0}, "value": 1.0, "cost": 0.4})).expect(201);
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert!(study["budget_remaining"].get("overspent").is_none(), "{b}: {study}");
        for i in 1..8 {
            srv.post(&op, json!({"assignments": {"x": 0.1 * f64::from(i), "y": 1.0}, "value": 1.0, "cost": 0.4}))
                .expect(201);
        }
        let batch: Vec<Value> =
            (0..2).map(|i| json!({"assignments": {"x": 0.05 * f64::from(i), "y": 2.0}, "value": 2.0})).collect();
        srv.post(&format!("{op}/batch"), json!({"observations": batch})).expect(201);
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["counts"]["observations"], 10, "{b}: every observation is stored");
        let left = &study["budget_remaining"];
        assert_eq!(left["spent"], true, "{b}: {study}");
        assert_eq!(left["observations"], 0, "{b}: {study}");
        assert_eq!(left["overspent"]["observations"], 8, "{b}: {study}");
        let over_cost = left["overspent"]["cost"].as_f64().expect("cost overspend");
        assert!((over_cost - 2.2).abs() < 1e-9, "{b}: 8 × 0.4 − 1.0 = 2.2, got {over_cost}");
        let listed = srv.get("/v1/studies").expect(200).json;
        assert_eq!(listed["studies"][0]["budget_remaining"]["overspent"]["observations"], 8, "{b}: {listed}");
    }
}

/// Sends a request with a chunked body (no Content-Length), returning the status line and the body.
fn post_chunked(addr: std::net::SocketAddr, path: &str, chunk: &[u8], times: usize) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).expect("write head");
    for _ in 0..times {
        // The server may answer and close before reading everything; ignore write errors after that.
        if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).is_err()
            || stream.write_all(chunk).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_ascii_lowercase(), body.to_string())
}

#[test]
fn a_body_over_the_limit_is_413_in_problem_json() {
    for backend in ["sqlite", "postgres"] {
        let Some(srv) = TestServer::with_config(backend, |c| c.max_body_bytes = 2048) else { continue };
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("limit")));
        let note = "n".repeat(4000);
        for path in [
            "/v1/studies".to_string(),
            format!("/v1/studies/{sid}/observations"),
            format!("/v1/studies/{sid}/observations/batch"),
            format!("/v1/studies/{sid}/suggestions"),
            format!("/v1/studies/{sid}/predict"),
        ] {
            let r = srv.post(&path, json!({"metadata": {"note": note}})).expect(413);
            assert_eq!(r.header("content-type"), Some("application/problem+json"), "{b} {path}");
            assert_eq!(r.json["status"], 413, "{b} {path}");
            assert!(r.json["detail"].as_str().unwrap().contains("2048"), "{b}: {}", r.text);
        }
        // Without a Content-Length (chunked), the limit holds while reading.
        let (status, head, body) = post_chunked(srv.addr, &format!("/v1/studies/{sid}/observations"), &[b' '; 512], 8);
        assert_eq!(status, 413, "{b}: {head}\n{body}");
        assert!(head.contains("content-type: application/problem+json"), "{b}: {head}");
        // Just under the limit is fine; nothing was stored by the refused requests.
        let ok = json!({"assignments": {"x": 1.0, "y": 1.0}, "value": 1.0, "metadata": {"note": "n".repeat(1500)}});
        srv.post(&format!("/v1/studies/{sid}/observations"), ok).expect(201);
        assert_eq!(srv.get(&format!("/v1/studies/{sid}")).json["counts"]["observations"], 1, "{b}");
    }
}

#[test]
fn saturated_compute_is_503_with_retry_after_and_other_routes_keep_working() {
    for backend in ["sqlite", "postgres"] {
        // No compute slot at all, and a short queue wait: every engine call is refused.
        let Some(srv) = TestServer::with_config(backend, |c| {
            c.compute_permits = Some(0);
            c.compute_queue_ms = 20;
        }) else {
            continue;
        };
        let b = srv.backend;
        let sid = id(&srv.create_study(branin_study("busy")));
        let path = format!("/v1/studies/{sid}/observations");
        for i in 0..3 {
            srv.post(&path, json!({"assignments": {"x": i as f64, "y": 1.0}, "value": i as f64})).expect(201);
        }
        for (method, route, body) in [
            ("POST", format!("/v1/studies/{sid}/suggestions"), Some(json!({}))),
            ("GET", format!("/v1/studies/{sid}/best"), None),
            ("POST", format!("/v1/studies/{sid}/predict"), Some(json!({"points": [{"x": 0, "y": 0}]}))),
        ] {
            let r = srv.request(method, &route, body.as_ref(), &[]).expect(503);
            assert_eq!(r.header("content-type"), Some("application/problem+json"), "{b} {route}");
            let retry: u64 = r.header("retry-after").expect("Retry-After").parse().expect("seconds");
            assert!(retry >= 1, "{b}");
            assert_eq!(r.json["status"], 503, "{b}");
            assert!(problem_type(&r).ends_with("saturated"), "{b}: {}", r.text);
        }
        // Nothing was suggested; reads and writes that need no engine call still work.
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["counts"]["suggestions"], 0, "{b}");
        assert_eq!(study["counts"]["observations"], 3, "{b}");
        srv.get(&format!("/v1/studies/{sid}/observations")).expect(200);
        srv.get("/readyz").expect(200);
    }
}

/// The value of a metric line `name{labels} value` (labels exactly as rendered), if present.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

#[test]
fn metrics_count_requests_by_route_and_status_and_report_compute_studies_and_observations() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("m1")));
        srv.create_study(sobol_study("m2"));
        for _ in 0..3 {
            srv.ask_tell(&sid, |a| a["x"].as_f64().unwrap());
        }
        srv.get(&format!("/v1/studies/{}", uuid::Uuid::new_v4())).expect(404);
        srv.get("/v1/nowhere").expect(404);
        let r = srv.get("/metrics").expect(200);
        assert!(r.header("content-type").is_some_and(|c| c.starts_with("text/plain")), "{b}");
        let t = &r.text;
        let req = |m: &str, route: &str, status: u16| {
            metric(t, &format!("bayesd_http_requests_total{{method=\"{m}\",route=\"{route}\",status=\"{status}\"}}"))
        };
        assert_eq!(req("POST", "/v1/studies", 201), Some(2.0), "{b}:\n{t}");
        assert_eq!(req("POST", "/v1/studies/{study_id}/suggestions", 201), Some(3.0), "{b}:\n{t}");
        assert_eq!(req("POST", "/v1/studies/{study_id}/observations", 201), Some(3.0), "{b}:\n{t}");
        assert_eq!(req("GET", "/v1/studies/{study_id}", 404), Some(1.0), "{b}:\n{t}");
        assert_eq!(req("GET", "unmatched", 404), Some(1.0), "{b}:\n{t}");
        let lat = "bayesd_http_request_duration_seconds";
        let labels = "method=\"POST\",route=\"/v1/studies/{study_id}/suggestions\",status=\"201\"";
        assert_eq!(metric(t, &format!("{lat}_count{{{labels}}}")), Some(3.0), "{b}:\n{t}");
        assert_eq!(metric(t, &format!("{lat}_bucket{{{labels},le=\"+Inf\"}}")), Some(3.0), "{b}");
        assert!(metric(t, &format!("{lat}_sum{{{labels}}}")).is_some_and(|s| s > 0.0), "{b}");
        assert_eq!(metric(t, "bayesd_compute_seconds_count{call=\"suggest\"}"), Some(3.0), "{b}:\n{t}");
        assert!(metric(t, "bayesd_compute_seconds_sum{call=\"suggest\"}").is_some_and(|s| s > 0.0), "{b}");
        assert_eq!(metric(t, "bayesd_studies"), Some(2.0), "{b}:\n{t}");
        assert_eq!(metric(t, "bayesd_observations"), Some(3.0), "{b}:\n{t}");
        assert!(t.contains("# TYPE bayesd_http_requests_total counter"), "{b}");
        assert!(t.contains("# TYPE bayesd_http_request_duration_seconds histogram"), "{b}");
        // The scrape itself shows up in the next one.
        let again = srv.get("/metrics").expect(200).text;
        assert_eq!(
            metric(&again, "bayesd_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"200\"}"),
            Some(1.0)
        );
    }
}

#[test]
fn health_and_readiness_answer_with_the_backend() {
    for srv in backends() {
        let b = srv.backend;
        let h = srv.get("/healthz").expect(200);
        assert_eq!(h.json, json!({"status": "ok"}), "{b}");
        let r = srv.get("/readyz").expect(200);
        assert_eq!(r.json, json!({"status": "ok", "database": b}), "{b}");
        srv.post("/healthz", json!({})).expect(405);
    }
}

#[test]
fn with_tokens_only_health_and_the_api_docs_are_public() {
    let srv = TestServer::sqlite_with(|c| c.api_tokens = vec!["t0k3n".into()]);
    // Deliberate exceptions: health for orchestrators, the API description and Swagger UI for browsers (which
    // cannot attach a bearer header when loading a page; the UI's Authorize button adds it to the calls it makes).
    srv.get("/healthz").expect(200);
    srv.get("/readyz").expect(200);
    srv.get("/openapi.json").expect(200);
    let docs = srv.get("/docs/");
    assert_eq!(docs.status, 200, "{}", docs.text);
    assert!(docs.text.contains("swagger"), "Swagger UI page");
    // Everything else needs the token, metrics and unknown routes included.
    let sid = uuid::Uuid::new_v4();
    for path in ["/metrics".to_string(), "/v1/studies".into(), format!("/v1/studies/{sid}/best"), "/v1/nowhere".into()]
    {
        let r = srv.get(&path).expect(401);
        assert_eq!(r.header("content-type"), Some("application/problem+json"), "{path}");
    }
    let r = srv.request("GET", "/metrics", None, &[("Authorization", "Bearer t0k3n")]).expect(200);
    assert!(r.text.contains("bayesd_http_requests_total"));
}

/// Asserts a response is not a server error and returns it.
#[track_caller]
fn not_5xx(r: common::Resp, what: &str) -> common::Resp {
    assert!(r.status < 500, "{what}: {} {}", r.status, r.text);
    r
}

#[test]
fn extreme_but_valid_inputs_never_give_a_server_error() {
    for srv in backends() {
        let b = srv.backend;
        // Values at the edges of f64, identical values, repeated points, a huge stddev and cost.
        let sid = id(&srv.create_study(branin_study("extreme")));
        let obs = format!("/v1/studies/{sid}/observations");
        for (i, v) in [1e300, -1e300, 0.0, 1e-300, 1e300].iter().enumerate() {
            let body =
                json!({"assignments": {"x": i as f64, "y": 1.0}, "value": v, "value_stddev": 1e300, "cost": 1e300});
            not_5xx(srv.post(&obs, body), &format!("{b} observe {v}"));
        }
        // A cost whose sum with the study's total overflows is refused, naming the field (the total stays a number).
        let r = srv.post(&obs, json!({"assignments": {"x": 0.5, "y": 1.0}, "value": 1.0, "cost": f64::MAX}));
        assert_eq!(r.clone().expect(422).error_fields(), ["cost"], "{b}: {}", r.text);
        for what in ["suggestions", "best", "predict"] {
            let path = format!("/v1/studies/{sid}/{what}");
            let r = match what {
                "best" => srv.get(&path),
                "predict" => srv.post(&path, json!({"points": [{"x": 0.0, "y": 0.0}]})),
                _ => srv.post(&path, json!({"count": 3})),
            };
            not_5xx(r, &format!("{b} {what} after extreme values"));
        }
        // The best observation stands even when the model cannot be fitted (its recommendation is then null).
        let best = srv.get(&format!("/v1/studies/{sid}/best")).expect(200).json;
        assert_eq!(best["best_observed"]["value"], -1e300, "{b}: {best}");
        let p = srv.post(&format!("/v1/studies/{sid}/predict"), json!({"points": [{"x": 0.0, "y": 0.0}]}));
        assert!(p.status == 200 || problem_type(&p).ends_with("model-failed"), "{b}: {} {}", p.status, p.text);
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["total_cost"].as_f64(), Some(5e300), "{b}: {study}");
        not_5xx(srv.get(&format!("{obs}?format=csv")), &format!("{b} csv"));

        let sid = id(&srv.create_study(branin_study("flat")));
        let obs = format!("/v1/studies/{sid}/observations");
        for i in 0..6 {
            srv.post(&obs, json!({"assignments": {"x": 1.0, "y": 1.0 + (i % 2) as f64}, "value": 5.0})).expect(201);
        }
        for what in ["suggestions", "best", "predict"] {
            let path = format!("/v1/studies/{sid}/{what}");
            let r = match what {
                "best" => srv.get(&path),
                "predict" => srv.post(&path, json!({"points": [{"x": 1.0, "y": 1.0}]})),
                _ => srv.post(&path, json!({"count": 2})),
            };
            not_5xx(r, &format!("{b} {what} with constant values at repeated points"));
        }

        // The widest float range there is.
        let wide = json!({"name": "wide", "parameters": [{"name": "x", "type": "float", "low": -1e308, "high": 1e308}],
                          "algorithm": {"name": "gp-ei"}});
        let r = not_5xx(srv.post("/v1/studies", wide), &format!("{b} create wide"));
        if r.status == 201 {
            let sid = id(&r.json);
            for i in 0..4 {
                let s =
                    not_5xx(srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({})), &format!("{b} wide {i}"));
                if s.status != 201 {
                    break;
                }
                let x = &s.json["suggestions"][0]["assignments"]["x"];
                assert!(x.as_f64().is_some_and(f64::is_finite), "{b}: a wide-range suggestion must be a number: {x}");
                not_5xx(
                    srv.post(
                        &format!("/v1/studies/{sid}/observations"),
                        json!({"suggestion_id": s.json["suggestions"][0]["id"], "value": i as f64}),
                    ),
                    &format!("{b} wide observe"),
                );
            }
            not_5xx(srv.get(&format!("/v1/studies/{sid}/best")), &format!("{b} wide best"));
        }

        // Deeply nested metadata, long strings, odd headers and queries.
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!({"a": deep});
        }
        let sid = id(&srv.create_study(sobol_study("odd")));
        let obs = format!("/v1/studies/{sid}/observations");
        not_5xx(srv.post(&obs, json!({"assignments": {"x": 0, "y": 0}, "value": 1, "metadata": {"d": deep}})), "deep");
        not_5xx(
            srv.request(
                "POST",
                &obs,
                Some(&json!({"assignments": {"x": 0, "y": 0}, "value": 1})),
                &[("Idempotency-Key", &"k".repeat(5000))],
            ),
            "long idempotency key",
        );
        not_5xx(
            srv.request(
                "POST",
                &obs,
                Some(&json!({"assignments": {"x": 0, "y": 0}, "value": 1})),
                &[("Idempotency-Key", "")],
            ),
            "empty key",
        );
        for q in [
            "limit=99999999999999999999",
            "after=99999999999999999999",
            "after=9223372036854775807",
            "limit=1&limit=2",
            "format=csv&limit=1&after=1",
        ] {
            not_5xx(srv.get(&format!("{obs}?{q}")), q);
            not_5xx(srv.get(&format!("/v1/studies/{sid}/suggestions?{q}")), q);
            not_5xx(srv.get(&format!("/v1/studies?{q}")), q);
        }
        not_5xx(
            srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"client_id": "c".repeat(300)})),
            "long client id",
        );
        not_5xx(srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"context": {"nope": 1}})), "context");
        not_5xx(srv.post(&obs, json!({"assignments": {"x": 0, "y": 0}, "value": 1, "control_set": "zz", "noise_level": "q", "query": {"a": 1}})), "extras");
        let big = json!({"name": "n".repeat(10_000), "parameters": [{"name": "p".repeat(1000), "type": "float", "low": 0, "high": 1}]});
        not_5xx(srv.post("/v1/studies", big), "long names");
        let raw = srv.raw("POST", &obs, Some(b"\xff\xfe{}"), &[("Content-Type", "application/json")]);
        not_5xx(raw, "invalid UTF-8");
    }
}
