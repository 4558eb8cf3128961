//! The shared state of the handlers and middleware.

use std::sync::Arc;

use crate::compute::Compute;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::service::group_commit::ObservationQueue;
use crate::service::study_gate::StudyGates;
use crate::store::Store;

/// Shared state of the handlers.
#[derive(Clone)]
pub struct AppState {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The configuration.
    pub config: Arc<Config>,
    /// The compute pool.
    pub compute: Arc<Compute>,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// Single observations waiting for their study's group commit.
    pub observations: Arc<ObservationQueue>,
    /// The studies' gates for asks (one ask of a study at a time in this process).
    pub ask_gates: Arc<StudyGates>,
}
