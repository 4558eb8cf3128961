//! Engine calls off the async runtime: `spawn_blocking` behind a semaphore, with a queue wait and a deadline.
//! When no slot frees up within the queue wait, or the call outlives its deadline, the client gets 503 with
//! `Retry-After` (the engine call itself runs to completion and keeps its slot until then).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, ApiResult};
use crate::metrics::Metrics;

/// The compute pool.
#[derive(Debug)]
pub struct Compute {
    slots: usize,
    permits: Arc<Semaphore>,
    queue_wait: Duration,
    deadline: Duration,
    metrics: Arc<Metrics>,
}

impl Compute {
    /// A pool of `permits` slots.
    pub fn new(permits: usize, queue_wait: Duration, deadline: Duration, metrics: Arc<Metrics>) -> Self {
        Self { slots: permits, permits: Arc::new(Semaphore::new(permits)), queue_wait, deadline, metrics }
    }

    /// (slots, slots held by engine calls), for the metrics.
    pub fn usage(&self) -> (usize, usize) {
        (self.slots, self.slots.saturating_sub(self.permits.available_permits()))
    }

    /// Waits for a slot (before any database lock is taken), or 503.
    pub async fn slot(&self) -> ApiResult<OwnedSemaphorePermit> {
        let permits = self.permits.clone();
        let started = Instant::now();
        let waiting = self.metrics.compute_waiting();
        let got = tokio::time::timeout(self.queue_wait, permits.acquire_owned()).await;
        drop(waiting);
        self.metrics.observe_compute_wait(started.elapsed());
        match got {
            Ok(Ok(p)) => Ok(p),
            _ => {
                crate::metrics::note_unavailable("compute_queue");
                Err(ApiError::saturated("every compute slot is busy; retry after the indicated delay", 1))
            }
        }
    }

    /// Runs `f` on the blocking pool holding `slot`; `what` labels the compute-time metric.
    pub async fn run<T: Send + 'static>(
        &self,
        slot: OwnedSemaphorePermit,
        what: &'static str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> ApiResult<T> {
        let started = Instant::now();
        let handle = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            f()
        });
        let out = match tokio::time::timeout(self.deadline, handle).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(ApiError::internal("engine task failed", e)),
            Err(_) => {
                crate::metrics::note_unavailable("compute_deadline");
                Err(ApiError::saturated(
                    format!("the computation exceeded its deadline of {} s; retry later", self.deadline.as_secs()),
                    5,
                ))
            }
        };
        self.metrics.observe_compute(what, started.elapsed());
        out
    }
}
