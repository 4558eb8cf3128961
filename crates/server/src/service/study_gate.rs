//! One gate per study that asks pass one at a time in this process, from the snapshot they compute on to their
//! commit: a second ask of a study waits for the first and then sees its suggestions as pending, instead of
//! computing the same point in parallel. No database lock is held while waiting or computing; across server
//! processes the commit's version check ([`super::ask`]) does the same job.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};

/// The gates of the studies with an ask in flight (an entry lives as long as someone holds or waits for it).
#[derive(Debug, Default)]
pub struct StudyGates {
    gates: Mutex<HashMap<Uuid, Weak<AsyncMutex<()>>>>,
}

impl StudyGates {
    /// Passes the study's gate, waiting at most `wait` (then 503 with `Retry-After`).
    pub async fn enter(&self, study: Uuid, wait: Duration) -> ApiResult<OwnedMutexGuard<()>> {
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match gates.get(&study).and_then(Weak::upgrade) {
                Some(gate) => gate,
                None => {
                    gates.retain(|_, g| g.strong_count() > 0);
                    let gate = Arc::new(AsyncMutex::new(()));
                    gates.insert(study, Arc::downgrade(&gate));
                    gate
                }
            }
        };
        tokio::time::timeout(wait, gate.lock_owned()).await.map_err(|_| {
            ApiError::saturated(
                "another suggestion of this study is being computed; retry after the indicated delay",
                1,
            )
        })
    }

    /// Studies with a gate entry (for tests of the clean-up).
    pub fn len(&self) -> usize {
        self.gates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter(|g| g.strong_count() > 0)
            .count()
    }

    /// No study has an ask in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_ask_of_one_study_waits_and_other_studies_do_not() {
        let gates = StudyGates::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let held = gates.enter(a, Duration::from_secs(1)).await.expect("free gate");
        let waited = gates.enter(a, Duration::from_millis(50)).await;
        let refused = axum::response::IntoResponse::into_response(waited.expect_err("the gate is held"));
        assert_eq!(refused.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
        let other = gates.enter(b, Duration::from_millis(50)).await.expect("another study's gate is free");
        assert_eq!(gates.len(), 2);
        drop((held, other));
        assert!(gates.is_empty(), "entries go with their last holder");
        gates.enter(a, Duration::from_millis(50)).await.expect("free again");
    }
}
