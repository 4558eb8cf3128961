//! Concurrent single-observation POSTs to one study are stored in shared transactions (group commit); each request
//! must still get its own answer: retries racing each other with one Idempotency-Key store one observation, a
//! suggestion observed twice at once is stored once (the other gets 409), invalid observations in a group are 422
//! without failing the others.

use crate::common;

use std::sync::{Arc, Barrier};

use common::{Resp, backends};
use serde_json::{Value, json};

/// Runs `bodies` as concurrent POSTs (each with its optional Idempotency-Key) and returns the responses in order.
fn concurrently(client: &common::Client, path: &str, bodies: Vec<(Value, Option<String>)>) -> Vec<Resp> {
    let barrier = Arc::new(Barrier::new(bodies.len()));
    std::thread::scope(|s| {
        let handles: Vec<_> = bodies
            .into_iter()
            .map(|(body, key)| {
                let barrier = barrier.clone();
                s.spawn(move || {
                    barrier.wait();
                    let headers: Vec<(&str, &str)> =
                        key.as_deref().map(|k| vec![("Idempotency-Key", k)]).unwrap_or_default();
                    client.request("POST", path, Some(&body), &headers)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("client thread")).collect()
    })
}

fn study(srv: &common::TestServer) -> String {
    let s = srv.create_study(json!({
        "name": "group",
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
        "algorithm": {"name": "sobol"}
    }));
    s["id"].as_str().expect("id").to_string()
}

fn count(srv: &common::TestServer, sid: &str) -> i64 {
    let s = srv.get(&format!("/v1/studies/{sid}")).expect(200).json;
    let list = srv.get(&format!("/v1/studies/{sid}/observations?limit=1000")).expect(200).json;
    let listed = list["observations"].as_array().expect("observations").len() as i64;
    assert_eq!(s["counts"]["observations"].as_i64(), Some(listed), "study count and stored rows agree");
    listed
}

#[test]
fn concurrent_posts_with_one_idempotency_key_store_one_observation() {
    for srv in backends() {
        let sid = study(&srv);
        let path = format!("/v1/studies/{sid}/observations");
        let body = json!({"assignments": {"x": 0.25}, "value": 1.0});
        let mut bodies: Vec<(Value, Option<String>)> = (0..8).map(|_| (body.clone(), Some("same".into()))).collect();
        // Others without a key in the same burst are each stored.
        bodies.extend((0..4).map(|i| (json!({"assignments": {"x": 0.1 * f64::from(i)}, "value": 2.0}), None)));
        let res = concurrently(&srv.client, &path, bodies);
        let keyed: Vec<&Resp> = res[..8].iter().collect();
        for r in &keyed {
            assert_eq!(r.status, 201, "{}: {}", srv.backend, r.text);
            assert_eq!(r.json["id"], keyed[0].json["id"], "{}: every retry gets the first response", srv.backend);
        }
        for r in &res[8..] {
            assert_eq!(r.status, 201, "{}: {}", srv.backend, r.text);
        }
        assert_eq!(count(&srv, &sid), 5, "{}", srv.backend);
    }
}

#[test]
fn one_suggestion_observed_concurrently_is_stored_once_and_bad_items_fail_alone() {
    for srv in backends() {
        let sid = study(&srv);
        let s = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 1})).expect(201).json;
        let sug = s["suggestions"][0]["id"].clone();
        let path = format!("/v1/studies/{sid}/observations");
        let mut bodies: Vec<(Value, Option<String>)> =
            (0..4).map(|i| (json!({"suggestion_id": sug, "value": f64::from(i)}), None)).collect();
        bodies.push((json!({"assignments": {"x": 7.0}, "value": 1.0}), None));
        bodies.push((json!({"assignments": {"x": 0.5}, "value": 1.0}), None));
        let res = concurrently(&srv.client, &path, bodies);
        let statuses: Vec<u16> = res[..4].iter().map(|r| r.status).collect();
        assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{}: {statuses:?}", srv.backend);
        assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 3, "{}: {statuses:?}", srv.backend);
        assert_eq!(res[4].status, 422, "{}: {}", srv.backend, res[4].text);
        assert_eq!(res[4].error_fields(), ["assignments.x"], "{}", srv.backend);
        assert_eq!(res[5].status, 201, "{}: {}", srv.backend, res[5].text);
        assert_eq!(count(&srv, &sid), 2, "{}", srv.backend);
    }
}

/// U+0000, which Postgres cannot store in text or JSONB, is refused at the edge with 422 naming the field on both
/// backends; a client sending it among eight valid concurrent observations fails alone (issue 23, item 1: before,
/// on Postgres, it was a 500 that failed the valid requests of its commit group).
#[test]
fn a_nul_character_is_422_and_fails_no_other_client_in_the_group() {
    for srv in backends() {
        let sid = study(&srv);
        let path = format!("/v1/studies/{sid}/observations");
        for round in 0..3 {
            let mut bodies: Vec<(Value, Option<String>)> = (0..8)
                .map(|i| {
                    let x = (f64::from(i) + 0.5) / 8.0;
                    (json!({"assignments": {"x": x}, "value": f64::from(round * 8 + i)}), None)
                })
                .collect();
            bodies.insert(4, (json!({"assignments": {"x": 0.3}, "value": 1.0, "metadata": {"note": "a\u{0}b"}}), None));
            let res = concurrently(&srv.client, &path, bodies);
            assert_eq!(res[4].status, 422, "{}: {}", srv.backend, res[4].text);
            assert_eq!(res[4].error_fields(), ["metadata.note"], "{}", srv.backend);
            let failed: Vec<String> = res
                .iter()
                .enumerate()
                .filter(|(i, r)| *i != 4 && r.status != 201)
                .map(|(_, r)| format!("{} {}", r.status, r.text))
                .collect();
            assert!(failed.is_empty(), "{}: valid requests failed: {failed:?}", srv.backend);
        }
        assert_eq!(count(&srv, &sid), 24, "{}", srv.backend);
        // Every other place a client's string reaches the database.
        let nul = "x\u{0}y";
        let bad_name = srv.post(
            "/v1/studies",
            json!({"name": nul, "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}]}),
        );
        assert_eq!((bad_name.status, bad_name.error_fields()), (422, vec!["name".to_string()]), "{}", srv.backend);
        let bad_param =
            srv.post("/v1/studies", json!({"parameters": [{"name": nul, "type": "float", "low": 0, "high": 1}]}));
        assert_eq!(bad_param.status, 422, "{}: {}", srv.backend, bad_param.text);
        assert_eq!(bad_param.error_fields(), ["parameters[0].name"], "{}", srv.backend);
        let bad_client = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"client_id": nul}));
        assert_eq!(
            (bad_client.status, bad_client.error_fields()),
            (422, vec!["client_id".to_string()]),
            "{}",
            srv.backend
        );
        let bad_key = srv.post(&path, json!({"assignments": {"x": 0.5}, "value": 1.0, "metadata": {nul: 1}}));
        assert_eq!(bad_key.status, 422, "{}: {}", srv.backend, bad_key.text);
        assert_eq!(bad_key.error_fields(), ["metadata.x\\u0000y"], "{}", srv.backend);
        assert_eq!(count(&srv, &sid), 24, "{}: nothing of the refused requests was stored", srv.backend);
    }
}
