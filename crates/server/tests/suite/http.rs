//! HTTP integration tests: a real server on port 0 against real SQLite and (with `TEST_DATABASE_URL`) Postgres,
//! every route's success and failure cases.

use crate::common;

use common::{TestServer, backends, branin_study};
use serde_json::{Value, json};

fn sobol_study(name: &str) -> Value {
    let mut s = branin_study(name);
    s["algorithm"] = json!({"name": "sobol"});
    s
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

#[test]
fn studies_are_created_listed_fetched_and_archived() {
    for srv in backends() {
        let b = srv.backend;
        let created = srv.post("/v1/studies", branin_study("first")).expect(201);
        assert!(created.header("location").is_some_and(|l| l.ends_with(&id(&created.json))), "{b}");
        let s = created.json;
        assert_eq!(s["status"], "active", "{b}");
        assert_eq!(s["algorithm"]["name"], "auto", "{b}");
        assert_eq!(s["algorithm_in_use"], "gp-ei", "{b}");
        assert_eq!(s["objective"]["goal"], "minimize", "{b}");
        assert_eq!(s["seed"], 1, "{b}");
        let got = srv.get(&format!("/v1/studies/{}", id(&s))).expect(200).json;
        assert_eq!(got["parameters"], s["parameters"], "{b}");
        for i in 0..4 {
            srv.create_study(branin_study(&format!("s{i}")));
        }
        let page1 = srv.get("/v1/studies?limit=2").expect(200).json;
        assert_eq!(page1["studies"].as_array().unwrap().len(), 2, "{b}");
        let cursor = page1["next_cursor"].as_str().expect("a cursor").to_string();
        let page2 = srv.get(&format!("/v1/studies?limit=2&after={cursor}")).expect(200).json;
        let page3 = srv.get(&format!("/v1/studies?limit=2&after={}", page2["next_cursor"].as_str().unwrap())).json;
        let names: Vec<&str> = [&page1, &page2, &page3]
            .iter()
            .flat_map(|p| p["studies"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()))
            .collect();
        assert_eq!(names, ["first", "s0", "s1", "s2", "s3"], "{b}");
        assert!(page3["next_cursor"].is_null(), "{b}");
        let archived = srv.delete(&format!("/v1/studies/{}", id(&s))).expect(200).json;
        assert_eq!(archived["status"], "archived", "{b}");
        srv.delete(&format!("/v1/studies/{}", id(&s))).expect(200);
        let r = srv.post(&format!("/v1/studies/{}/suggestions", id(&s)), json!({})).expect(409);
        assert!(r.json["type"].as_str().unwrap().ends_with("study-archived"), "{b}");
        srv.post(&format!("/v1/studies/{}/observations", id(&s)), json!({"assignments": {"x": 0, "y": 0}, "value": 1}))
            .expect(409);
    }
}

#[test]
fn unknown_and_malformed_ids_are_404_and_400() {
    for srv in backends() {
        let missing = uuid::Uuid::new_v4();
        for path in [
            format!("/v1/studies/{missing}"),
            format!("/v1/studies/{missing}/best"),
            format!("/v1/studies/{missing}/suggestions"),
            format!("/v1/studies/{missing}/observations"),
        ] {
            let r = srv.get(&path).expect(404);
            assert_eq!(r.header("content-type"), Some("application/problem+json"));
            assert_eq!(r.json["status"], 404);
        }
        srv.post(&format!("/v1/studies/{missing}/suggestions"), json!({})).expect(404);
        srv.post(&format!("/v1/studies/{missing}/observations"), json!({"assignments": {}, "value": 1})).expect(404);
        srv.delete(&format!("/v1/studies/{missing}")).expect(404);
        let s = srv.create_study(sobol_study("ids"));
        srv.get(&format!("/v1/studies/{}/suggestions/{missing}", id(&s))).expect(404);
        srv.delete(&format!("/v1/studies/{}/suggestions/{missing}", id(&s))).expect(404);
        srv.get(&format!("/v1/studies/{}/observations/{missing}", id(&s))).expect(404);
        let bad = srv.get("/v1/studies/not-a-uuid").expect(400);
        assert!(bad.json["detail"].as_str().unwrap().contains("UUID"));
        srv.get("/v1/nothing-here").expect(404);
        srv.request("PUT", "/v1/studies", None, &[]).expect(405);
        srv.get("/v1/studies?limit=0").expect(400);
        srv.get("/v1/studies?after=zz").expect(400);
    }
}

#[test]
fn invalid_study_specs_are_422_naming_the_field() {
    let srv = TestServer::sqlite();
    let cases = [
        (json!({"parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}]}), "name"),
        (json!({"name": "a", "parameters": [{"name": "x", "type": "float", "low": 5, "high": 1}]}), "parameters[0]"),
        (json!({"name": "a", "parameters": [], "zzz": 1}), "zzz"),
        (
            json!({"name": "a", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
                "algorithm": {"name": "nope"}}),
            "algorithm.name",
        ),
        (
            json!({"name": "a", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
                "budget": {"max_observations": 0}}),
            "budget.max_observations",
        ),
        (
            json!({"name": "a", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
                "suggestion_ttl": -3}),
            "suggestion_ttl",
        ),
        (
            json!({"name": "a", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
                "objective": {"goal": "sideways"}}),
            "objective.goal",
        ),
    ];
    for (body, field) in cases {
        let r = srv.post("/v1/studies", body.clone()).expect(422);
        assert!(
            r.error_fields().iter().any(|f| f.starts_with(field)),
            "{body}: expected a field starting with {field}, got {:?}",
            r.json
        );
    }
    let r = srv.raw("POST", "/v1/studies", Some(b"{\"name\": "), &[("Content-Type", "application/json")]);
    assert_eq!(r.status, 400);
    let r = srv.raw("POST", "/v1/studies", Some(b"{}"), &[]);
    assert_eq!(r.status, 415);
    assert_eq!(r.json["status"], 415);
}

#[test]
fn suggestions_observations_and_their_state_machine() {
    for srv in backends() {
        let b = srv.backend;
        let s = srv.create_study(sobol_study("flow"));
        let sid = id(&s);
        let r = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 3})).expect(201).json;
        let sugs = r["suggestions"].as_array().unwrap().clone();
        assert_eq!(sugs.len(), 3, "{b}");
        let ids: std::collections::HashSet<_> = sugs.iter().map(id).collect();
        assert_eq!(ids.len(), 3, "{b}");
        for sug in &sugs {
            assert_eq!(sug["state"], "open", "{b}");
            let x = sug["assignments"]["x"].as_f64().unwrap();
            assert!((-5.0..=10.0).contains(&x), "{b}");
        }
        let one = srv.get(&format!("/v1/studies/{sid}/suggestions/{}", id(&sugs[0]))).expect(200).json;
        assert_eq!(one["assignments"], sugs[0]["assignments"], "{b}");

        // Observe the first (assignments default to the suggestion's).
        let o = srv
            .post(
                &format!("/v1/studies/{sid}/observations"),
                json!({"suggestion_id": sugs[0]["id"], "value": 3.5,
                "cost": 2.0, "metadata": {"operator": "ada"}}),
            )
            .expect(201)
            .json;
        assert_eq!(o["assignments"], sugs[0]["assignments"], "{b}");
        assert_eq!(o["metadata"]["operator"], "ada", "{b}");
        let got = srv.get(&format!("/v1/studies/{sid}/observations/{}", id(&o))).expect(200).json;
        assert_eq!(got["value"], 3.5, "{b}");
        // Observing it again: 409.
        let again = srv
            .post(&format!("/v1/studies/{sid}/observations"), json!({"suggestion_id": sugs[0]["id"], "value": 1.0}))
            .expect(409);
        assert!(again.json["type"].as_str().unwrap().ends_with("suggestion-completed"), "{b}");
        // Abandon the second; observing it is 409; abandoning twice is fine; a completed one cannot be abandoned.
        let ab = srv.delete(&format!("/v1/studies/{sid}/suggestions/{}", id(&sugs[1]))).expect(200).json;
        assert_eq!(ab["state"], "abandoned", "{b}");
        assert_eq!(ab["abandon_reason"], "deleted", "{b}");
        srv.delete(&format!("/v1/studies/{sid}/suggestions/{}", id(&sugs[1]))).expect(200);
        let r = srv
            .post(&format!("/v1/studies/{sid}/observations"), json!({"suggestion_id": sugs[1]["id"], "value": 1.0}))
            .expect(409);
        assert!(r.json["type"].as_str().unwrap().ends_with("suggestion-abandoned"), "{b}");
        srv.delete(&format!("/v1/studies/{sid}/suggestions/{}", id(&sugs[0]))).expect(409);
        // Unknown suggestion id in a body: 422 naming it.
        let r = srv
            .post(
                &format!("/v1/studies/{sid}/observations"),
                json!({"suggestion_id": uuid::Uuid::new_v4(), "value": 1.0}),
            )
            .expect(422);
        assert_eq!(r.error_fields(), ["suggestion_id"], "{b}");
        // Lists and filters.
        let open = srv.get(&format!("/v1/studies/{sid}/suggestions?state=open")).expect(200).json;
        assert_eq!(open["suggestions"].as_array().unwrap().len(), 1, "{b}");
        let all = srv.get(&format!("/v1/studies/{sid}/suggestions?limit=2")).expect(200).json;
        assert_eq!(all["suggestions"].as_array().unwrap().len(), 2, "{b}");
        assert!(all["next_cursor"].is_string(), "{b}");
        srv.get(&format!("/v1/studies/{sid}/suggestions?state=bogus")).expect(400);
        let study = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
        assert_eq!(study["counts"]["observations"], 1, "{b}");
        assert_eq!(study["counts"]["suggestions"], 3, "{b}");
        assert_eq!(study["total_cost"], 2.0, "{b}");
        // Count limits.
        srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 0})).expect(422);
        let r = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 101})).expect(422);
        assert_eq!(r.error_fields(), ["count"], "{b}");
        let r = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"cnt": 1})).expect(422);
        assert_eq!(r.error_fields(), ["cnt"], "{b}");
    }
}

#[test]
fn same_client_id_with_an_open_suggestion_gets_the_same_suggestion() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("robots")));
        let path = format!("/v1/studies/{sid}/suggestions");
        let first = srv.post(&path, json!({"client_id": "robot-1"})).expect(201).json;
        let again = srv.post(&path, json!({"client_id": "robot-1"})).expect(200).json;
        assert_eq!(id(&first["suggestions"][0]), id(&again["suggestions"][0]), "{b}");
        let other = srv.post(&path, json!({"client_id": "robot-2"})).expect(201).json;
        assert_ne!(id(&first["suggestions"][0]), id(&other["suggestions"][0]), "{b}");
        // Once observed, robot-1 gets a new one.
        srv.post(
            &format!("/v1/studies/{sid}/observations"),
            json!({"suggestion_id": first["suggestions"][0]["id"], "value": 1.0}),
        )
        .expect(201);
        let next = srv.post(&path, json!({"client_id": "robot-1"})).expect(201).json;
        assert_ne!(id(&first["suggestions"][0]), id(&next["suggestions"][0]), "{b}");
    }
}

#[test]
fn invalid_assignments_are_422_naming_the_field() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(json!({
            "name": "types",
            "parameters": [
                {"name": "t", "type": "float", "low": 20, "high": 80},
                {"name": "n", "type": "int", "low": 1, "high": 5},
                {"name": "c", "type": "categorical", "choices": ["a", "b"]}
            ],
            "algorithm": {"name": "random"}
        })));
        let path = format!("/v1/studies/{sid}/observations");
        let ok = json!({"t": 30.0, "n": 2, "c": "a"});
        srv.post(&path, json!({"assignments": ok, "value": 1.0})).expect(201);
        let cases = [
            (json!({"assignments": {"t": 90.0, "n": 2, "c": "a"}, "value": 1.0}), "assignments.t"),
            (json!({"assignments": {"t": 30.0, "n": 2.5, "c": "a"}, "value": 1.0}), "assignments.n"),
            (json!({"assignments": {"t": 30.0, "n": 2, "c": "z"}, "value": 1.0}), "assignments.c"),
            (json!({"assignments": {"t": "hot", "n": 2, "c": "a"}, "value": 1.0}), "assignments.t"),
            (json!({"assignments": {"n": 2, "c": "a"}, "value": 1.0}), "assignments.t"),
            (json!({"assignments": {"t": 30.0, "n": 2, "c": "a", "zz": 1}, "value": 1.0}), "assignments.zz"),
            (json!({"assignments": ok, "value": "high"}), "value"),
            (json!({"assignments": ok}), "value"),
            (json!({"assignments": ok, "value": 1.0, "value_stddev": -1}), "value_stddev"),
            (json!({"assignments": ok, "value": 1.0, "cost": -1}), "cost"),
            (json!({"value": 1.0}), "assignments"),
        ];
        for (body, field) in cases {
            let r = srv.post(&path, body.clone()).expect(422);
            assert!(r.error_fields().iter().any(|f| f == field), "{b} {body}: wanted {field}, got {}", r.text);
        }
        // NaN and Infinity tokens (as Python's json.dumps writes them) are 422 naming the field, not 400.
        for token in ["NaN", "Infinity", "-Infinity"] {
            let body = format!(r#"{{"assignments": {{"t": {token}, "n": 2, "c": "a"}}, "value": 1.0}}"#);
            let r = srv.raw("POST", &path, Some(body.as_bytes()), &[("Content-Type", "application/json")]);
            assert_eq!(r.status, 422, "{b} {token}: {}", r.text);
            assert_eq!(r.error_fields(), ["assignments.t"], "{b}");
            let body = format!(r#"{{"assignments": {{"t": 30, "n": 2, "c": "a"}}, "value": {token}}}"#);
            let r = srv.raw("POST", &path, Some(body.as_bytes()), &[("Content-Type", "application/json")]);
            assert_eq!(r.error_fields(), ["value"], "{b}");
        }
        // A failed run needs no value.
        srv.post(&path, json!({"assignments": ok, "failed": true})).expect(201);
        let study = srv.get(&format!("/v1/studies/{sid}")).json;
        assert_eq!(study["counts"]["observations"], 2, "{b}");
    }
}

#[test]
fn same_idempotency_key_twice_stores_one_observation_and_replays_the_response() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("idem")));
        let path = format!("/v1/studies/{sid}/observations");
        let body = json!({"assignments": {"x": 1.0, "y": 2.0}, "value": 5.0});
        let first = srv.request("POST", &path, Some(&body), &[("Idempotency-Key", "k-1")]).expect(201);
        let second = srv.request("POST", &path, Some(&body), &[("Idempotency-Key", "k-1")]).expect(201);
        assert_eq!(first.json, second.json, "{b}");
        assert_eq!(second.header("idempotent-replayed"), Some("true"), "{b}");
        let list = srv.get(&path).expect(200).json;
        assert_eq!(list["observations"].as_array().unwrap().len(), 1, "{b}");
        // Same key, different body: 409.
        let other = json!({"assignments": {"x": 1.0, "y": 2.0}, "value": 6.0});
        srv.request("POST", &path, Some(&other), &[("Idempotency-Key", "k-1")]).expect(409);
        // Suggestions and studies too.
        let sp = format!("/v1/studies/{sid}/suggestions");
        let a = srv.request("POST", &sp, Some(&json!({})), &[("Idempotency-Key", "s-1")]).expect(201).json;
        let c = srv.request("POST", &sp, Some(&json!({})), &[("Idempotency-Key", "s-1")]).expect(201).json;
        assert_eq!(a, c, "{b}");
        let study = sobol_study("idem-create");
        let s1 = srv.request("POST", "/v1/studies", Some(&study), &[("Idempotency-Key", "c-1")]).expect(201).json;
        let s2 = srv.request("POST", "/v1/studies", Some(&study), &[("Idempotency-Key", "c-1")]).expect(201).json;
        assert_eq!(s1["id"], s2["id"], "{b}");
        let all = srv.get("/v1/studies").json;
        assert_eq!(all["studies"].as_array().unwrap().len(), 2, "{b}");
    }
}

#[test]
fn missing_or_wrong_token_is_401_when_tokens_are_configured() {
    let srv = TestServer::sqlite_with(|c| c.api_tokens = vec!["secret-1".into(), "secret-2".into()]);
    let r = srv.get("/v1/studies").expect(401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    assert_eq!(r.json["status"], 401);
    srv.request("GET", "/v1/studies", None, &[("Authorization", "Bearer nope")]).expect(401);
    srv.post("/v1/studies", sobol_study("x")).expect(401);
    srv.request("GET", "/v1/studies", None, &[("Authorization", "Bearer secret-2")]).expect(200);
    srv.get("/healthz").expect(200);
    srv.get("/readyz").expect(200);
    srv.get("/openapi.json").expect(200);
    let mut client = srv.client.clone();
    client.token = Some("secret-1".into());
    client.create_study(sobol_study("authorised"));
}

#[test]
fn observations_paginate_with_a_cursor() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("pages")));
        let path = format!("/v1/studies/{sid}/observations");
        for i in 0..7 {
            srv.post(&path, json!({"assignments": {"x": i as f64, "y": 1.0}, "value": i as f64})).expect(201);
        }
        let mut seen = Vec::new();
        let mut after = String::new();
        loop {
            let p = srv.get(&format!("{path}?limit=3&after={after}")).expect(200).json;
            seen.extend(p["observations"].as_array().unwrap().iter().map(|o| o["value"].as_f64().unwrap()));
            match p["next_cursor"].as_str() {
                Some(c) => after = c.to_string(),
                None => break,
            }
        }
        assert_eq!(seen, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "{b}");
    }
}
