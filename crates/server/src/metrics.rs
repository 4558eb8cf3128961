//! Prometheus text metrics: request counts and latency histograms by route and status, engine compute time,
//! and (read at scrape time) the numbers of studies and observations.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    n: u64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        for (c, b) in self.counts.iter_mut().zip(BUCKETS) {
            if secs <= b {
                *c += 1;
            }
        }
        self.sum += secs;
        self.n += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (c, b) in self.counts.iter().zip(BUCKETS) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {c}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.n);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.n);
    }
}

/// Collected metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), Histogram>>,
    compute: Mutex<BTreeMap<&'static str, Histogram>>,
}

impl Metrics {
    /// Records one request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        if let Ok(mut m) = self.requests.lock() {
            m.entry((method.to_string(), route.to_string(), status)).or_default().observe(elapsed.as_secs_f64());
        }
    }

    /// Records one engine call.
    pub fn observe_compute(&self, what: &'static str, elapsed: Duration) {
        if let Ok(mut m) = self.compute.lock() {
            m.entry(what).or_default().observe(elapsed.as_secs_f64());
        }
    }

    /// The Prometheus text exposition, with the given study and observation totals.
    pub fn render(&self, studies: Option<i64>, observations: Option<i64>) -> String {
        let mut out = String::new();
        out.push_str("# HELP bayesd_http_requests_total HTTP requests by method, route and status.\n");
        out.push_str("# TYPE bayesd_http_requests_total counter\n");
        let requests = self.requests.lock().map(|m| m.clone()).unwrap_or_default();
        for ((method, route, status), h) in &requests {
            let _ = writeln!(
                out,
                "bayesd_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {}",
                h.n
            );
        }
        out.push_str("# HELP bayesd_http_request_duration_seconds HTTP request latency.\n");
        out.push_str("# TYPE bayesd_http_request_duration_seconds histogram\n");
        for ((method, route, status), h) in &requests {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{status}\"");
            h.render(&mut out, "bayesd_http_request_duration_seconds", &labels);
        }
        out.push_str("# HELP bayesd_compute_seconds Engine compute time (suggest, recommend, predict).\n");
        out.push_str("# TYPE bayesd_compute_seconds histogram\n");
        for (what, h) in self.compute.lock().map(|m| m.clone()).unwrap_or_default() {
            h.render(&mut out, "bayesd_compute_seconds", &format!("call=\"{what}\""));
        }
        if let Some(n) = studies {
            out.push_str("# HELP bayesd_studies Studies stored.\n# TYPE bayesd_studies gauge\n");
            let _ = writeln!(out, "bayesd_studies {n}");
        }
        if let Some(n) = observations {
            out.push_str("# HELP bayesd_observations Observations stored.\n# TYPE bayesd_observations gauge\n");
            let _ = writeln!(out, "bayesd_observations {n}");
        }
        out
    }
}

/// Middleware recording every request under its route template.
pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    let route = req.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_string(), |p| p.as_str().into());
    let res = next.run(req).await;
    state.metrics.observe_request(&method, &route, res.status().as_u16(), started.elapsed());
    res
}
