//! Real `bayesd` processes: two servers on one Postgres with eight concurrent clients, and a SIGKILL in the middle
//! of a client loop.

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use common::{Client, Process, branin, branin_study, fresh_postgres_url, fresh_sqlite_url};
use serde_json::{Value, json};

fn all_observations(c: &Client, sid: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = String::new();
    loop {
        let p = c.get(&format!("/v1/studies/{sid}/observations?limit=1000&after={after}")).expect(200).json;
        out.extend(p["observations"].as_array().unwrap().iter().cloned());
        match p["next_cursor"].as_str() {
            Some(cur) => after = cur.to_string(),
            None => return out,
        }
    }
}

#[test]
fn two_servers_on_one_postgres_with_eight_clients_store_every_observation_exactly_once() {
    let Some((url, base, schema)) = fresh_postgres_url() else { return };
    let a = Process::spawn(&url, &[]);
    let b = Process::spawn(&url, &[]);
    let (ca, cb) = (a.client(), b.client());
    let mut spec = branin_study("concurrent");
    spec["algorithm"] = json!({"name": "gp-ei"});
    let sid = ca.create_study(spec)["id"].as_str().unwrap().to_string();
    const CLIENTS: usize = 8;
    const ROUNDS: usize = 25;
    let handed: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
    let stored: Arc<Mutex<Vec<String>>> = Arc::default();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (me, other) = if i % 2 == 0 { (ca.clone(), cb.clone()) } else { (cb.clone(), ca.clone()) };
            let (sid, handed, stored) = (sid.clone(), handed.clone(), stored.clone());
            std::thread::spawn(move || {
                for r in 0..ROUNDS {
                    let s = me
                        .post(&format!("/v1/studies/{sid}/suggestions"), json!({"client_id": format!("client-{i}")}))
                        .expect(201)
                        .json;
                    let sug = &s["suggestions"][0];
                    let a = &sug["assignments"];
                    let value = branin(a["x"].as_f64().unwrap(), a["y"].as_f64().unwrap());
                    handed.lock().unwrap().push((i, sug["id"].as_str().unwrap().to_string()));
                    let body = json!({"suggestion_id": sug["id"], "value": value});
                    let key = format!("obs-{i}-{r}");
                    let path = format!("/v1/studies/{sid}/observations");
                    let first = me.request("POST", &path, Some(&body), &[("Idempotency-Key", &key)]).expect(201);
                    // A retry of the same request through the other server changes nothing.
                    let retry = other.request("POST", &path, Some(&body), &[("Idempotency-Key", &key)]).expect(201);
                    assert_eq!(first.json, retry.json);
                    stored.lock().unwrap().push(first.json["id"].as_str().unwrap().to_string());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let handed = handed.lock().unwrap().clone();
    let distinct: HashSet<&String> = handed.iter().map(|(_, id)| id).collect();
    assert_eq!(handed.len(), CLIENTS * ROUNDS);
    assert_eq!(distinct.len(), CLIENTS * ROUNDS, "a suggestion id was handed to two clients");
    let observations = all_observations(&ca, &sid);
    assert_eq!(observations.len(), CLIENTS * ROUNDS, "observations stored exactly once");
    let obs_ids: HashSet<&str> = observations.iter().map(|o| o["id"].as_str().unwrap()).collect();
    let acked = stored.lock().unwrap().clone();
    assert!(acked.iter().all(|id| obs_ids.contains(id.as_str())), "every acknowledged observation is stored");
    let linked: HashSet<&str> = observations.iter().map(|o| o["suggestion_id"].as_str().unwrap()).collect();
    assert_eq!(linked.len(), CLIENTS * ROUNDS, "each suggestion observed once");
    let study = cb.get(&format!("/v1/studies/{sid}")).expect(200).json;
    assert_eq!(study["counts"]["observations"], (CLIENTS * ROUNDS) as i64);
    assert_eq!(study["counts"]["suggestions"], (CLIENTS * ROUNDS) as i64);
    let open = ca.get(&format!("/v1/studies/{sid}/suggestions?state=open")).expect(200).json;
    assert!(open["suggestions"].as_array().unwrap().is_empty());
    drop((a, b));
    common::drop_schema(&base, &schema);
}

/// Ask-tell rounds against a server that is SIGKILLed after `kill_after` acknowledged observations and restarted.
fn crash_and_resume(url: &str) {
    let mut server = Process::spawn(url, &[]);
    let mut client = server.client();
    let mut spec = branin_study("crash");
    spec["algorithm"] = json!({"name": "gp-ei"});
    let sid = client.create_study(spec)["id"].as_str().unwrap().to_string();
    let (total, kill_after) = (12, 5);
    let mut acked: Vec<String> = Vec::new();
    let mut pending: Option<(String, Value)> = None; // an observation sent but not acknowledged
    let mut killer: Option<std::thread::JoinHandle<()>> = None;
    let mut restarts = 0;
    let mut round = 0;
    while acked.len() < total {
        if acked.len() == kill_after && killer.is_none() && restarts == 0 {
            // Kill while the next round's requests are in flight.
            let pid = server.child.id();
            killer = Some(std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(15));
                let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
            }));
        }
        let step = (|| -> std::io::Result<String> {
            let (key, body) = match pending.clone() {
                Some(p) => p,
                None => {
                    let req = serde_json::to_vec(&json!({"client_id": "robot"})).unwrap();
                    let s = client.try_raw(
                        "POST",
                        &format!("/v1/studies/{sid}/suggestions"),
                        Some(&req),
                        &[("Content-Type", "application/json")],
                    )?;
                    assert!(s.status == 201 || s.status == 200, "suggest: {}", s.text);
                    let sug = &s.json["suggestions"][0];
                    let (x, y) = (sug["assignments"]["x"].as_f64().unwrap(), sug["assignments"]["y"].as_f64().unwrap());
                    assert!((-5.0..=10.0).contains(&x) && (0.0..=15.0).contains(&y), "valid suggestion");
                    let p = (format!("round-{round}"), json!({"suggestion_id": sug["id"], "value": branin(x, y)}));
                    pending = Some(p.clone());
                    p
                }
            };
            let raw = serde_json::to_vec(&body).unwrap();
            let o = client.try_raw(
                "POST",
                &format!("/v1/studies/{sid}/observations"),
                Some(&raw),
                &[("Content-Type", "application/json"), ("Idempotency-Key", &key)],
            )?;
            assert_eq!(o.status, 201, "observe: {}", o.text);
            Ok(o.json["id"].as_str().unwrap().to_string())
        })();
        match step {
            Ok(id) => {
                // If the round finished before the kill landed, wait for it: the next request then meets a dead
                // server, so the restart path is exercised however loaded the machine is.
                if let Some(k) = killer.take() {
                    k.join().unwrap();
                }
                acked.push(id);
                pending = None;
                round += 1;
            }
            Err(_) => {
                if let Some(k) = killer.take() {
                    k.join().unwrap();
                }
                server.kill();
                server = Process::spawn(url, &[]);
                client = server.client();
                restarts += 1;
                assert!(restarts <= 2, "the server kept failing");
            }
        }
    }
    assert!(restarts >= 1, "the server was killed and restarted");
    for id in &acked {
        client.get(&format!("/v1/studies/{sid}/observations/{id}")).expect(200);
    }
    let observations = all_observations(&client, &sid);
    assert_eq!(observations.len(), total, "every acknowledged observation is there, none twice");
    let study = client.get(&format!("/v1/studies/{sid}")).expect(200).json;
    assert_eq!(study["counts"]["observations"], total as i64);
    let next = client.post(&format!("/v1/studies/{sid}/suggestions"), json!({})).expect(201).json;
    let a = &next["suggestions"][0]["assignments"];
    assert!(a["x"].as_f64().unwrap().is_finite() && a["y"].as_f64().unwrap().is_finite());
    assert_eq!(next["suggestions"][0]["diagnostics"]["phase"], "model", "the model continues after the restart");
}

#[test]
fn sigkill_mid_loop_loses_no_acknowledged_observation_on_sqlite() {
    let (url, path) = fresh_sqlite_url();
    crash_and_resume(&url);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[test]
fn sigkill_mid_loop_loses_no_acknowledged_observation_on_postgres() {
    let Some((url, base, schema)) = fresh_postgres_url() else { return };
    crash_and_resume(&url);
    common::drop_schema(&base, &schema);
}
