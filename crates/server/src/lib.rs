//! bayesd server: the HTTP ask-tell API over studies stored in Postgres or an embedded SQLite file.
//!
//! Request flow: [`api`] handlers parse and validate the request (problem+json errors naming fields, [`error`],
//! [`extract`]), call the [`service`] layer and build the response. The service takes the study's write lock
//! through the [`store`] (one transaction per request; concurrent single observations of one study share one
//! transaction per queued group, `service/group_commit.rs`), applies the domain rules (idempotency, the states and
//! transitions of [`domain`], budget, expiry, re-delivery), runs the engine off the async runtime ([`compute`]),
//! stores the result with the policy state, and commits. [`state`] holds what handlers share. The service takes and
//! returns the types of [`resources`] (re-exported by `api::types`), never the HTTP layer's. No linear algebra.

#![forbid(unsafe_code)]

pub mod api;
pub mod auth;
pub mod compute;
pub mod config;
pub mod connections;
pub mod domain;
pub mod error;
pub mod extract;
pub mod http_layers;
pub mod idempotency;
pub mod metrics;
pub mod resources;
pub mod service;
pub mod state;
pub mod store;
pub mod ui;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use api::{app, openapi};
pub use config::Config;
pub use state::AppState;

/// Checks the configuration (reading the token file), connects to the database, runs migrations, and builds the
/// handlers' state.
pub async fn state(config: Config) -> anyhow::Result<AppState> {
    let config = config.resolve()?;
    let store = store::connect(&config.database_url, config.db_max_connections).await?;
    store.migrate().await?;
    let metrics = Arc::new(metrics::Metrics::default());
    let compute = Arc::new(compute::Compute::new(
        config.permits(),
        Duration::from_millis(config.compute_queue_ms),
        Duration::from_secs(config.compute_deadline_secs),
        metrics.clone(),
    ));
    Ok(AppState {
        store: Arc::from(store),
        config: Arc::new(config),
        compute,
        metrics,
        observations: Arc::default(),
        ask_gates: Arc::default(),
    })
}

/// Serves on `listener` until `shutdown` completes, then drains in-flight requests.
pub async fn serve(
    config: Config,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_state(state(config).await?, listener, shutdown).await
}

/// [`serve`] with the state already built (tests build it first to report a bad configuration before listening).
pub async fn serve_state(
    state: AppState,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let limits = connections::Limits {
        max_connections: state.config.max_connections,
        header_read_timeout: Duration::from_secs(state.config.header_read_timeout_secs),
    };
    tracing::info!(addr = %listener.local_addr()?, database = state.store.backend(), "bayesd listening");
    let metrics = state.metrics.clone();
    connections::serve(listener, app(state), limits, metrics, shutdown).await?;
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
