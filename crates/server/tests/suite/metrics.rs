//! `/metrics`: every family is exposed, and the counters and gauges move with the traffic: requests, requests in
//! flight, connections, the compute queue and its wait, 503s by reason. SQLite always, Postgres too when
//! `TEST_DATABASE_URL` is set.

use crate::common;

use std::time::{Duration, Instant};

use common::{TestServer, backends};
use serde_json::{Value, json};

/// The value of a series `name{labels}` (labels exactly as rendered), if present.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

fn sobol_study(name: &str) -> Value {
    json!({"name": name, "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
           "algorithm": {"name": "sobol"}})
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("id").to_string()
}

const FAMILIES: [(&str, &str); 23] = [
    ("bayesd_http_requests_total", "counter"),
    ("bayesd_http_request_duration_seconds", "histogram"),
    ("bayesd_http_requests_in_flight", "gauge"),
    ("bayesd_http_unavailable_responses_total", "counter"),
    ("bayesd_compute_seconds", "histogram"),
    ("bayesd_compute_wait_seconds", "histogram"),
    ("bayesd_compute_queue_depth", "gauge"),
    ("bayesd_compute_slots", "gauge"),
    ("bayesd_compute_slots_in_use", "gauge"),
    ("bayesd_build_info", "gauge"),
    ("bayesd_studies", "gauge"),
    ("bayesd_observations", "gauge"),
    ("bayesd_http_connections", "gauge"),
    ("process_cpu_seconds_total", "counter"),
    ("process_resident_memory_bytes", "gauge"),
    ("process_virtual_memory_bytes", "gauge"),
    ("process_open_fds", "gauge"),
    ("process_max_fds", "gauge"),
    ("process_start_time_seconds", "gauge"),
    ("process_threads", "gauge"),
    ("bayesd_db_pool_connections", "gauge"),
    ("bayesd_db_pool_idle_connections", "gauge"),
    ("bayesd_db_pool_max_connections", "gauge"),
];

#[test]
fn every_family_is_exposed_and_the_counters_move() {
    for srv in backends() {
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("m")));
        for _ in 0..2 {
            srv.ask_tell(&sid, |a| a["x"].as_f64().unwrap());
        }
        let r = srv.get("/metrics").expect(200);
        assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4"), "{b}");
        let t = &r.text;
        for (family, kind) in FAMILIES {
            assert!(t.contains(&format!("# TYPE {family} {kind}\n")), "{b}: {family} {kind} missing:\n{t}");
        }
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(metric(t, &format!("bayesd_build_info{{version=\"{version}\"}}")), Some(1.0), "{b}");
        // The scrape itself is in flight, over one connection.
        assert_eq!(metric(t, "bayesd_http_requests_in_flight"), Some(1.0), "{b}");
        assert_eq!(metric(t, "bayesd_compute_queue_depth"), Some(0.0), "{b}");
        assert_eq!(metric(t, "bayesd_compute_slots_in_use"), Some(0.0), "{b}");
        assert!(metric(t, "bayesd_compute_slots").is_some_and(|n| n >= 1.0), "{b}");
        assert_eq!(metric(t, "bayesd_compute_wait_seconds_count"), Some(2.0), "{b}: one wait per suggestion\n{t}");
        assert_eq!(metric(t, "bayesd_compute_seconds_count{call=\"suggest\"}"), Some(2.0), "{b}");
        assert_eq!(metric(t, "bayesd_studies"), Some(1.0), "{b}");
        assert_eq!(metric(t, "bayesd_observations"), Some(2.0), "{b}");
        for reason in ["compute_queue", "compute_deadline", "request_timeout", "database", "other"] {
            let series = format!("bayesd_http_unavailable_responses_total{{reason=\"{reason}\"}}");
            assert_eq!(metric(t, &series), Some(0.0), "{b}: {series}");
        }
        // The test servers' pools hold at most 4 connections; the scrape's totals query used one.
        assert_eq!(metric(t, "bayesd_db_pool_max_connections"), Some(4.0), "{b}");
        let open = metric(t, "bayesd_db_pool_connections").expect("pool size");
        let idle = metric(t, "bayesd_db_pool_idle_connections").expect("idle");
        assert!((1.0..=4.0).contains(&open) && (0.0..=open).contains(&idle), "{b}: {open} open, {idle} idle");
        assert!(metric(t, "process_resident_memory_bytes").is_some_and(|v| v > 1e6), "{b}");
        assert!(metric(t, "process_open_fds").is_some_and(|v| v >= 3.0), "{b}");
        assert!(metric(t, "process_cpu_seconds_total").is_some_and(|v| v >= 0.0), "{b}"); // whole seconds
        assert!(metric(t, "process_start_time_seconds").is_some_and(|v| v > 1.6e9), "{b}");
        let scrapes =
            |t: &str| metric(t, "bayesd_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"200\"}");
        assert_eq!(scrapes(t), None, "{b}");
        let again = srv.get("/metrics").expect(200).text;
        assert_eq!(scrapes(&again), Some(1.0), "{b}");
        let sug =
            "bayesd_http_requests_total{method=\"POST\",route=\"/v1/studies/{study_id}/suggestions\",status=\"201\"}";
        assert_eq!(metric(&again, sug), Some(2.0), "{b}");
    }
}

#[test]
fn a_saturated_compute_pool_shows_in_the_queue_and_the_503s_by_reason() {
    for backend in ["sqlite", "postgres"] {
        // No compute slot; a suggestion waits 2 s for one, longer than the 1 s request timeout.
        let Some(srv) = TestServer::with_config(backend, |c| {
            c.compute_permits = Some(0);
            c.compute_queue_ms = 2_000;
            c.request_timeout_secs = 1;
        }) else {
            continue;
        };
        let b = srv.backend;
        let sid = id(&srv.create_study(sobol_study("busy")));
        let client = srv.client.clone();
        let path = format!("/v1/studies/{sid}/suggestions");
        let waiting = std::thread::spawn(move || client.post(&path, json!({"count": 1})));
        // While it waits: one request queued for compute, two in flight (it and the scrape).
        let started = Instant::now();
        let t = loop {
            let t = srv.get("/metrics").expect(200).text;
            if metric(&t, "bayesd_compute_queue_depth") == Some(1.0) {
                break t;
            }
            assert!(started.elapsed() < Duration::from_secs(5), "{b}: no request seen waiting:\n{t}");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(metric(&t, "bayesd_http_requests_in_flight"), Some(2.0), "{b}");
        assert_eq!(metric(&t, "bayesd_compute_slots"), Some(0.0), "{b}");
        let r = waiting.join().unwrap().expect(503);
        assert!(r.json["detail"].as_str().is_some_and(|d| d.contains("longer than 1 s")), "{b}: {}", r.text);
        let t = srv.get("/metrics").expect(200).text;
        let reason = |r: &str| metric(&t, &format!("bayesd_http_unavailable_responses_total{{reason=\"{r}\"}}"));
        assert_eq!(reason("request_timeout"), Some(1.0), "{b}:\n{t}");
        assert_eq!(reason("compute_queue"), Some(0.0), "{b}");
        assert_eq!(metric(&t, "bayesd_compute_queue_depth"), Some(0.0), "{b}: the cut request left the queue");
        assert_eq!(metric(&t, "bayesd_http_requests_in_flight"), Some(1.0), "{b}");
        drop(srv);

        // A queue wait shorter than the request timeout: 503 for want of a slot, its wait observed.
        let srv = TestServer::with_config(backend, |c| {
            c.compute_permits = Some(0);
            c.compute_queue_ms = 50;
        })
        .unwrap();
        let sid = id(&srv.create_study(sobol_study("busy")));
        for _ in 0..2 {
            srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 1})).expect(503);
        }
        let t = srv.get("/metrics").expect(200).text;
        let reason = |r: &str| metric(&t, &format!("bayesd_http_unavailable_responses_total{{reason=\"{r}\"}}"));
        assert_eq!(reason("compute_queue"), Some(2.0), "{b}:\n{t}");
        assert_eq!(reason("request_timeout"), Some(0.0), "{b}");
        assert_eq!(metric(&t, "bayesd_compute_wait_seconds_count"), Some(2.0), "{b}");
        assert!(metric(&t, "bayesd_compute_wait_seconds_sum").is_some_and(|s| s >= 0.09), "{b}:\n{t}");
        let unavailable =
            "bayesd_http_requests_total{method=\"POST\",route=\"/v1/studies/{study_id}/suggestions\",status=\"503\"}";
        assert_eq!(metric(&t, unavailable), Some(2.0), "{b}");
    }
}
