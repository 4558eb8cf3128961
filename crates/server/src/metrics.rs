//! Prometheus metrics in a registry of the server's own (not the crate's global one, so that servers in one process
//! stay apart). The crate is tikv's `prometheus`: it has a process collector (CPU, memory, file descriptors, start
//! time, read from /proc on Linux) and writes text format 0.0.4, so the existing series keep their names.
//!
//! Families: `bayesd_http_requests_total` and `bayesd_http_request_duration_seconds` (method, route, status),
//! `bayesd_http_requests_in_flight`, `bayesd_http_connections`, `bayesd_http_unavailable_responses_total` (503s by
//! reason), `bayesd_compute_seconds` (call), `bayesd_compute_wait_seconds`, `bayesd_compute_queue_depth`,
//! `bayesd_compute_slots`/`_in_use`, `bayesd_build_info`, and, read at scrape time, `bayesd_studies`,
//! `bayesd_observations` and `bayesd_db_pool_connections`/`_idle_connections`/`_max_connections`; `process_*`.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use prometheus::core::Collector;
use prometheus::proto::MetricFamily;
use prometheus::{
    Encoder as _, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// Why a request was answered 503: the values of `reason`.
pub const UNAVAILABLE_REASONS: [&str; 5] =
    ["compute_queue", "compute_deadline", "request_timeout", "database", "other"];

tokio::task_local! {
    static UNAVAILABLE: Cell<Option<&'static str>>;
}

/// Notes why the current request is answered 503 (one of [`UNAVAILABLE_REASONS`]); no effect outside a request.
pub fn note_unavailable(reason: &'static str) {
    let _ = UNAVAILABLE.try_with(|r| r.set(Some(reason)));
}

/// The collected metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    durations: HistogramVec,
    in_flight: IntGauge,
    connections: IntGauge,
    unavailable: IntCounterVec,
    compute: HistogramVec,
    compute_wait: Histogram,
    compute_waiting: IntGauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new().expect("the metric definitions are valid and distinct")
    }
}

/// What is read at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scrape {
    /// Studies stored (`None` when the database does not answer).
    pub studies: Option<i64>,
    /// Observations stored.
    pub observations: Option<i64>,
    /// Compute slots.
    pub compute_slots: usize,
    /// Compute slots held by engine calls.
    pub compute_in_use: usize,
    /// The database pool's (open, idle) connections.
    pub pool: Option<(u32, usize)>,
    /// The database pool's size limit.
    pub pool_max: u32,
}

impl Metrics {
    fn new() -> prometheus::Result<Self> {
        let registry = Registry::new();
        let http = ["method", "route", "status"];
        let requests = IntCounterVec::new(
            Opts::new("bayesd_http_requests_total", "HTTP requests by method, route and status."),
            &http,
        )?;
        let durations = HistogramVec::new(
            HistogramOpts::new("bayesd_http_request_duration_seconds", "HTTP request latency.")
                .buckets(BUCKETS.to_vec()),
            &http,
        )?;
        let in_flight = IntGauge::new("bayesd_http_requests_in_flight", "HTTP requests being handled.")?;
        let connections = IntGauge::new("bayesd_http_connections", "Open client connections.")?;
        let unavailable = IntCounterVec::new(
            Opts::new(
                "bayesd_http_unavailable_responses_total",
                "503 responses by reason: compute_queue (no compute slot in time), compute_deadline, request_timeout, \
                 database, other.",
            ),
            &["reason"],
        )?;
        let compute = HistogramVec::new(
            HistogramOpts::new("bayesd_compute_seconds", "Engine compute time (suggest, recommend, predict).")
                .buckets(BUCKETS.to_vec()),
            &["call"],
        )?;
        let compute_wait = Histogram::with_opts(
            HistogramOpts::new("bayesd_compute_wait_seconds", "Time requests waited for a compute slot.")
                .buckets(BUCKETS.to_vec()),
        )?;
        let compute_waiting = IntGauge::new("bayesd_compute_queue_depth", "Requests waiting for a compute slot.")?;
        let build = IntGaugeVec::new(Opts::new("bayesd_build_info", "The running bayesd's version."), &["version"])?;
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        for reason in UNAVAILABLE_REASONS {
            unavailable.with_label_values(&[reason]);
        }
        for c in [
            Box::new(requests.clone()) as Box<dyn Collector>,
            Box::new(durations.clone()),
            Box::new(in_flight.clone()),
            Box::new(connections.clone()),
            Box::new(unavailable.clone()),
            Box::new(compute.clone()),
            Box::new(compute_wait.clone()),
            Box::new(compute_waiting.clone()),
            Box::new(build),
        ] {
            registry.register(c)?;
        }
        #[cfg(target_os = "linux")]
        registry.register(Box::new(prometheus::process_collector::ProcessCollector::for_self()))?;
        Ok(Self {
            registry,
            requests,
            durations,
            in_flight,
            connections,
            unavailable,
            compute,
            compute_wait,
            compute_waiting,
        })
    }

    /// Records one request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let status = status.to_string();
        let labels = [method, route, status.as_str()];
        self.requests.with_label_values(&labels).inc();
        self.durations.with_label_values(&labels).observe(elapsed.as_secs_f64());
    }

    /// Records one engine call.
    pub fn observe_compute(&self, what: &'static str, elapsed: Duration) {
        self.compute.with_label_values(&[what]).observe(elapsed.as_secs_f64());
    }

    /// Records how long a request waited for a compute slot (whether it got one or not).
    pub fn observe_compute_wait(&self, waited: Duration) {
        self.compute_wait.observe(waited.as_secs_f64());
    }

    /// Counts a request waiting for a compute slot until the guard drops.
    pub fn compute_waiting(&self) -> GaugeGuard {
        GaugeGuard::new(&self.compute_waiting)
    }

    /// Counts an open client connection until the guard drops.
    pub fn connection_opened(&self) -> GaugeGuard {
        GaugeGuard::new(&self.connections)
    }

    /// The text exposition, with what is read at scrape time.
    pub fn render(&self, scrape: Scrape) -> String {
        let mut families = self.registry.gather();
        let mut gauge = |name: &str, help: &str, value: Option<i64>| {
            if let Some(v) = value
                && let Ok(g) = IntGauge::new(name, help)
            {
                g.set(v);
                families.extend(g.collect());
            }
        };
        gauge("bayesd_studies", "Studies stored.", scrape.studies);
        gauge("bayesd_observations", "Observations stored.", scrape.observations);
        gauge("bayesd_compute_slots", "Compute slots (engine calls at once).", Some(scrape.compute_slots as i64));
        gauge("bayesd_compute_slots_in_use", "Compute slots held by engine calls.", Some(scrape.compute_in_use as i64));
        gauge("bayesd_db_pool_connections", "Open database connections.", scrape.pool.map(|(n, _)| i64::from(n)));
        gauge("bayesd_db_pool_idle_connections", "Idle database connections.", scrape.pool.map(|(_, n)| n as i64));
        gauge("bayesd_db_pool_max_connections", "The database pool's size limit.", Some(i64::from(scrape.pool_max)));
        render(&families)
    }
}

fn render(families: &[MetricFamily]) -> String {
    let mut out = Vec::new();
    if let Err(e) = TextEncoder::new().encode(families, &mut out) {
        tracing::error!(error = %e, "metrics encoding failed");
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Increments a gauge, and decrements it on drop.
#[derive(Debug)]
pub struct GaugeGuard(IntGauge);

impl GaugeGuard {
    fn new(gauge: &IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Middleware recording every request under its route template, the requests in flight, and why a 503 was one.
pub async fn track(State(metrics): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    let route = req.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_string(), |p| p.as_str().into());
    let _in_flight = GaugeGuard::new(&metrics.in_flight);
    let (res, reason) = UNAVAILABLE
        .scope(Cell::new(None), async {
            let res = next.run(req).await;
            (res, UNAVAILABLE.with(Cell::get))
        })
        .await;
    if res.status() == StatusCode::SERVICE_UNAVAILABLE {
        metrics.unavailable.with_label_values(&[reason.unwrap_or("other")]).inc();
    }
    metrics.observe_request(&method, &route, res.status().as_u16(), started.elapsed());
    res
}
