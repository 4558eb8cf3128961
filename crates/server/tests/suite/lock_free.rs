//! No database lock is held while the engine computes a suggestion: observations of the same study and writes to
//! other studies go through during a slow suggestion; asks of one study from two server processes on one database
//! never collide; lock contention is 503 with `Retry-After`, never 500.

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::response::IntoResponse;
use common::{Client, Process, backends};
use serde_json::{Value, json};
use server::error::ApiError;
use server::store::StoreError;

/// A study whose next suggestion takes seconds: 100 parameters, 100 observations, a batch of 40 (2.5 s in a release
/// build on one core).
fn slow_study(c: &Client) -> String {
    let d = 100;
    let params: Vec<Value> =
        (0..d).map(|i| json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 1})).collect();
    let sid = c.create_study(json!({"name": "slow", "parameters": params, "algorithm": {"name": "gp-ei"}}))["id"]
        .as_str()
        .expect("id")
        .to_string();
    let observations: Vec<Value> = (0..100)
        .map(|k| {
            let a: serde_json::Map<String, Value> =
                (0..d).map(|i| (format!("x{i}"), json!(((k * 37 + i * 11) % 101) as f64 / 100.0))).collect();
            json!({"assignments": a, "value": ((k * 7) % 13) as f64})
        })
        .collect();
    c.post(&format!("/v1/studies/{sid}/observations/batch"), json!({"observations": observations})).expect(201);
    sid
}

#[test]
fn a_slow_suggestion_blocks_no_observation_of_its_own_or_another_study() {
    for srv in backends() {
        let slow = slow_study(&srv.client);
        let other = srv.create_study(json!({"name": "other", "parameters": [
            {"name": "x", "type": "float", "low": 0, "high": 1}], "algorithm": {"name": "sobol"}}))["id"]
            .as_str()
            .expect("id")
            .to_string();
        let answered = Arc::new(AtomicBool::new(false));
        let asker = {
            let (c, slow, answered) = (srv.client.clone(), slow.clone(), answered.clone());
            std::thread::spawn(move || {
                let r = c.post(&format!("/v1/studies/{slow}/suggestions"), json!({"count": 40}));
                answered.store(true, Ordering::SeqCst);
                r
            })
        };
        // Set-up, not a measurement: let the ask read its snapshot and start computing.
        std::thread::sleep(Duration::from_millis(300));
        let assignments: serde_json::Map<String, Value> = (0..100).map(|i| (format!("x{i}"), json!(0.5))).collect();
        let own =
            srv.post(&format!("/v1/studies/{slow}/observations"), json!({"assignments": assignments, "value": 1.0}));
        let elsewhere =
            srv.post(&format!("/v1/studies/{other}/observations"), json!({"assignments": {"x": 0.5}, "value": 2.0}));
        let created = srv.post(
            "/v1/studies",
            json!({"name": "new", "parameters": [
            {"name": "x", "type": "float", "low": 0, "high": 1}]}),
        );
        let still_computing = !answered.load(Ordering::SeqCst);
        own.expect(201);
        elsewhere.expect(201);
        created.expect(201);
        assert!(still_computing, "{}: the writes waited for the suggestion's computation", srv.backend);
        let asked = asker.join().expect("asker").expect(201);
        assert_eq!(asked.json["suggestions"].as_array().map(Vec::len), Some(40), "{}", srv.backend);
        let study = srv.get(&format!("/v1/studies/{slow}")).expect(200).json;
        assert_eq!(study["counts"]["observations"], 101, "{}: {study}", srv.backend);
    }
}

/// Sobol suggestions of one study asked concurrently through two server processes on one database: every
/// suggestion is stored once with its own sequence number and its own point (a clear 503 may ask a client to retry).
fn two_processes_ask_one_study(url: &str) {
    let (a, b) = (Process::spawn(url, &[]), Process::spawn(url, &[]));
    let sid = a.client().create_study(json!({"name": "race", "parameters": [
        {"name": "x", "type": "float", "low": 0, "high": 1},
        {"name": "y", "type": "float", "low": 0, "high": 1}], "algorithm": {"name": "sobol"}}))["id"]
        .as_str()
        .expect("id")
        .to_string();
    let clients: Vec<Client> = (0..8).map(|i| if i % 2 == 0 { a.client() } else { b.client() }).collect();
    let made: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .map(|c| {
                let sid = sid.clone();
                s.spawn(move || {
                    let mut mine = Vec::new();
                    while mine.len() < 5 {
                        let r = c.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 1}));
                        match r.status {
                            201 => mine.extend(r.json["suggestions"].as_array().expect("suggestions").clone()),
                            503 => {
                                assert!(r.header("retry-after").is_some(), "503 without Retry-After: {}", r.text);
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            other => panic!("ask answered {other}: {}", r.text),
                        }
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("client")).collect()
    });
    assert_eq!(made.len(), 40);
    let ids: HashSet<&str> = made.iter().map(|s| s["id"].as_str().expect("id")).collect();
    let points: HashSet<String> = made.iter().map(|s| s["assignments"].to_string()).collect();
    assert_eq!(ids.len(), 40, "every suggestion stored once");
    assert_eq!(points.len(), 40, "no two asks computed from the same policy state");
    let listed = a.client().get(&format!("/v1/studies/{sid}/suggestions?limit=1000")).expect(200).json;
    let listed: HashSet<&str> =
        listed["suggestions"].as_array().expect("list").iter().map(|s| s["id"].as_str().expect("id")).collect();
    assert_eq!(listed, ids, "the stored suggestions are the ones handed out");
    let study = b.client().get(&format!("/v1/studies/{sid}")).expect(200).json;
    assert_eq!(study["counts"]["suggestions"], 40, "{study}");
}

#[test]
fn asks_of_one_study_through_two_processes_never_collide_on_sqlite() {
    let (url, path) = common::fresh_sqlite_url();
    two_processes_ask_one_study(&url);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[test]
fn asks_of_one_study_through_two_processes_never_collide_on_postgres() {
    let Some((url, base, schema)) = common::fresh_postgres_url() else { return };
    two_processes_ask_one_study(&url);
    common::drop_schema(&base, &schema);
}

/// Maps a real lock-contention error of each backend to the answer a client gets.
fn answer_to(e: sqlx::Error) -> (u16, Option<String>) {
    let e = StoreError::Db(e);
    assert!(e.is_contention(), "not recognised as contention: {e}");
    let res = ApiError::from(e).into_response();
    let retry = res.headers().get("retry-after").map(|v| v.to_str().expect("ascii").to_string());
    (res.status().as_u16(), retry)
}

#[test]
fn lock_contention_is_503_with_retry_after_on_both_backends() {
    use sqlx::{ConnectOptions, Connection};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (url, path) = common::fresh_sqlite_url();
    rt.block_on(async {
        let opts: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("url");
        let opts = opts.create_if_missing(true).busy_timeout(Duration::ZERO);
        let mut holder = opts.connect().await.expect("connect");
        let mut other = opts.connect().await.expect("connect");
        sqlx::query("BEGIN IMMEDIATE").execute(&mut holder).await.expect("write lock");
        let busy = sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.expect_err("the file is locked");
        assert_eq!(answer_to(busy), (503, Some("1".into())));
        holder.close().await.expect("close");
    });
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let Some((url, base, schema)) = common::fresh_postgres_url() else { return };
    rt.block_on(async {
        let mut holder = sqlx::PgConnection::connect(&url).await.expect("connect");
        let mut other = sqlx::PgConnection::connect(&url).await.expect("connect");
        sqlx::query("CREATE TABLE contended (id int)").execute(&mut holder).await.expect("table");
        sqlx::query("BEGIN").execute(&mut holder).await.expect("begin");
        sqlx::query("LOCK TABLE contended IN ACCESS EXCLUSIVE MODE").execute(&mut holder).await.expect("lock");
        sqlx::query("SET lock_timeout = '50ms'").execute(&mut other).await.expect("lock timeout");
        let busy = sqlx::query("SELECT * FROM contended").execute(&mut other).await.expect_err("the table is locked");
        assert_eq!(answer_to(busy), (503, Some("1".into())));
        let _ = holder.close().await;
    });
    common::drop_schema(&base, &schema);
}
