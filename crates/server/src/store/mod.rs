//! Storage: one [`Store`] trait with a Postgres and an SQLite implementation (the same SQL, generated for both
//! backends by the macro in `sql.rs`), migrations embedded from `migrations/postgres` and `migrations/sqlite`.
//!
//! Every write to a study goes through a [`StudyTx`]: a database transaction that first takes the study's write lock
//! (`SELECT … FOR UPDATE` in Postgres, `BEGIN IMMEDIATE` in SQLite), so several server processes sharing one
//! database serialise per study, never through an in-process mutex alone. Such a transaction lasts milliseconds: a
//! model is computed from a [`StudySnapshot`], read without the write lock, before the lock is taken.

mod sql;

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::domain::{AbandonReason, ObservationExtras, StoredSuggestion, StudyStatus, SuggestionState};

pub use sql::{PgStore, SqliteStore};

/// A boxed, sendable future (the store is used as `dyn Store`).
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Storage errors; the message is for logs only, never for clients.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed or is unreachable.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A unique constraint was violated (e.g. a second observation of one suggestion).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The database URL is not one we understand.
    #[error("{0}")]
    Config(String),
}

impl StoreError {
    /// Lock contention worth a retry, never a 500: SQLite busy or locked (after its busy timeout), a Postgres
    /// serialization failure, deadlock or lock timeout.
    pub fn is_contention(&self) -> bool {
        let StoreError::Db(sqlx::Error::Database(d)) = self else { return false };
        let code = d.code();
        if d.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
            // Extended result codes keep the primary code in the low byte: SQLITE_BUSY 5, SQLITE_LOCKED 6.
            return code.and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| matches!(c & 0xff, 5 | 6));
        }
        matches!(code.as_deref(), Some("40001" | "40P01" | "55P03"))
    }
}

/// Result with [`StoreError`].
pub type StoreResult<T> = Result<T, StoreError>;

/// A stored study.
#[derive(Debug, Clone)]
pub struct StudyRow {
    /// Study id.
    pub id: Uuid,
    /// Creation order (list cursor).
    pub seq: i64,
    /// Display name.
    pub name: String,
    /// `active`, `completed` or `archived`.
    pub status: StudyStatus,
    /// The engine `StudySpec` as JSON, seed filled in.
    pub spec: Value,
    /// Budget as JSON, if any.
    pub budget: Option<Value>,
    /// Suggestion time-to-live in seconds.
    pub suggestion_ttl_seconds: Option<i64>,
    /// Engine policy state.
    pub policy_state: Value,
    /// Number of observations.
    pub n_observations: i64,
    /// Number of suggestions ever made.
    pub n_suggestions: i64,
    /// Sum of observed costs.
    pub total_cost: f64,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A stored suggestion.
#[derive(Debug, Clone)]
pub struct SuggestionRow {
    /// Suggestion id.
    pub id: Uuid,
    /// Its study.
    pub study_id: Uuid,
    /// 1, 2, … within the study.
    pub seq: i64,
    /// `open`, `completed` or `abandoned`.
    pub state: SuggestionState,
    /// The client it was handed to.
    pub client_id: Option<String>,
    /// The engine suggestion as JSON (assignments, control_set, noise_level, query, expected_cost, predicted, …).
    pub body: StoredSuggestion,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// When it expires while open.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was completed or abandoned.
    pub closed_at: Option<DateTime<Utc>>,
    /// `deleted` or `expired` for abandoned suggestions.
    pub abandon_reason: Option<AbandonReason>,
}

/// A stored observation.
#[derive(Debug, Clone)]
pub struct ObservationRow {
    /// Observation id.
    pub id: Uuid,
    /// Its study.
    pub study_id: Uuid,
    /// 1, 2, … within the study.
    pub seq: i64,
    /// The suggestion it answers, if any.
    pub suggestion_id: Option<Uuid>,
    /// What actually happened.
    pub assignments: Value,
    /// Objective value (absent for failed runs).
    pub value: Option<f64>,
    /// Known standard deviation of the value.
    pub value_stddev: Option<f64>,
    /// Observed cost.
    pub cost: Option<f64>,
    /// The run failed.
    pub failed: bool,
    /// Client metadata.
    pub metadata: Option<Value>,
    /// Control set, noise level and query (the JSON `extra` column).
    pub extra: ObservationExtras,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}

/// One upload of example pairs (x, a) to an indirect study (seed 001).
#[derive(Debug, Clone)]
pub struct PairBatchRow {
    /// Upload id.
    pub id: Uuid,
    /// Its study.
    pub study_id: Uuid,
    /// 1, 2, … within the study.
    pub seq: i64,
    /// Number of pairs in `pairs`.
    pub n_pairs: i64,
    /// The pairs: a JSON array of `{target, query}` objects (the engine's `PairRecord`).
    pub pairs: Value,
    /// Upload time.
    pub created_at: DateTime<Utc>,
}

/// The stored first response to a POST with an `Idempotency-Key`.
#[derive(Debug, Clone)]
pub struct IdempotencyRow {
    /// Method and path.
    pub scope: String,
    /// The client's key.
    pub key: String,
    /// Hash of the request body (a reused key with another body is refused).
    pub request_hash: String,
    /// HTTP status of the first response.
    pub status: i32,
    /// Its JSON body.
    pub body: Value,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
}

/// Which rows a list returns: `seq > after`, at most `limit`, in `seq` order.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    /// Cursor: the last `seq` of the previous page.
    pub after: i64,
    /// Page size.
    pub limit: i64,
}

impl Page {
    /// Every row.
    pub const ALL: Page = Page { after: 0, limit: i64::MAX };
}

/// The storage interface of the server.
pub trait Store: Send + Sync + 'static {
    /// `postgres` or `sqlite`.
    fn backend(&self) -> &'static str;
    /// Applies pending migrations.
    fn migrate(&self) -> BoxFut<'_, StoreResult<()>>;
    /// Checks the database answers.
    fn ping(&self) -> BoxFut<'_, StoreResult<()>>;
    /// Inserts a study (its `seq` is assigned by the database); with an idempotency record in the same
    /// transaction. Returns the stored record instead when that key was used already.
    fn create_study<'a>(
        &'a self,
        study: &'a StudyRow,
        idempotency: Option<&'a IdempotencyRow>,
    ) -> BoxFut<'a, StoreResult<Option<IdempotencyRow>>>;
    /// One study.
    fn get_study(&self, id: Uuid) -> BoxFut<'_, StoreResult<Option<StudyRow>>>;
    /// Studies in creation order.
    fn list_studies(&self, page: Page) -> BoxFut<'_, StoreResult<Vec<StudyRow>>>;
    /// A study's suggestions in order, optionally only those in one state as clients see it at `now`: an open
    /// suggestion whose `expires_at` is not after `now` counts as `abandoned` (even before a write stores that).
    /// The filter is part of the query, so a page holds up to `page.limit` matching rows.
    fn list_suggestions<'a>(
        &'a self,
        study_id: Uuid,
        state: Option<SuggestionState>,
        now: DateTime<Utc>,
        page: Page,
    ) -> BoxFut<'a, StoreResult<Vec<SuggestionRow>>>;
    /// One suggestion of a study.
    fn get_suggestion(&self, study_id: Uuid, id: Uuid) -> BoxFut<'_, StoreResult<Option<SuggestionRow>>>;
    /// A study's observations in order.
    fn list_observations(&self, study_id: Uuid, page: Page) -> BoxFut<'_, StoreResult<Vec<ObservationRow>>>;
    /// One observation of a study.
    fn get_observation(&self, study_id: Uuid, id: Uuid) -> BoxFut<'_, StoreResult<Option<ObservationRow>>>;
    /// A study's uploaded pair batches, in order.
    fn list_pair_batches(&self, study_id: Uuid) -> BoxFut<'_, StoreResult<Vec<PairBatchRow>>>;
    /// A stored idempotent response.
    fn get_idempotency<'a>(&'a self, scope: &'a str, key: &'a str) -> BoxFut<'a, StoreResult<Option<IdempotencyRow>>>;
    /// Numbers of studies and observations (for `/metrics`).
    fn totals(&self) -> BoxFut<'_, StoreResult<(i64, i64)>>;
    /// What the engine needs of a study, read in one read-only transaction that takes no write lock (a model
    /// is computed from it while other requests write); `None` when the study does not exist.
    fn snapshot(&self, id: Uuid) -> BoxFut<'_, StoreResult<Option<StudySnapshot>>>;
    /// Serialises asks of one study across server processes until the guard is dropped, waiting at most `wait`
    /// (then a contention error, 503). Postgres: a transaction-scoped advisory lock on a connection of its own,
    /// released by the guard's rollback or the connection's end (a killed process holds nothing). SQLite: nothing;
    /// one SQLite file rarely has several server processes, and the ask's version check at commit covers them.
    /// The lock blocks no other write: observations of the study go on while an ask computes.
    fn ask_lock(&self, id: Uuid, wait: std::time::Duration) -> BoxFut<'_, StoreResult<AskLock>>;
    /// The pool's (open, idle) connections, for `/metrics`; `None` without a pool.
    fn pool_connections(&self) -> Option<(u32, usize)> {
        None
    }
    /// Begins a transaction holding the study's write lock; `None` when the study does not exist.
    fn lock_study(&self, id: Uuid) -> BoxFut<'_, StoreResult<Option<Box<dyn StudyTx>>>>;
}

/// Held while an ask computes and commits ([`Store::ask_lock`]); dropping it releases the lock.
pub struct AskLock(#[allow(dead_code)] Option<Box<dyn Send>>);

impl AskLock {
    /// A guard that holds nothing.
    pub fn none() -> Self {
        Self(None)
    }

    /// A guard holding `held` (e.g. the transaction that owns an advisory lock).
    pub fn holding(held: impl Send + 'static) -> Self {
        Self(Some(Box::new(held)))
    }
}

impl std::fmt::Debug for AskLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "AskLock(held)" } else { "AskLock(none)" })
    }
}

/// A study with its observations, open suggestions and uploaded pairs, as of one moment.
#[derive(Debug, Clone)]
pub struct StudySnapshot {
    /// The study.
    pub study: StudyRow,
    /// Every observation, in order.
    pub observations: Vec<ObservationRow>,
    /// The suggestions stored as open, in order (some may be past their expiry).
    pub open: Vec<SuggestionRow>,
    /// Uploaded pair batches, in order.
    pub pair_batches: Vec<PairBatchRow>,
}

/// A transaction holding one study's write lock. Dropped without [`StudyTx::commit`], it rolls back.
pub trait StudyTx: Send {
    /// The study as read under the lock.
    fn study(&self) -> &StudyRow;
    /// Every observation of the study, in order.
    fn observations(&mut self) -> BoxFut<'_, StoreResult<Vec<ObservationRow>>>;
    /// The study's open suggestions, in order.
    fn open_suggestions(&mut self) -> BoxFut<'_, StoreResult<Vec<SuggestionRow>>>;
    /// One suggestion of the study.
    fn suggestion(&mut self, id: Uuid) -> BoxFut<'_, StoreResult<Option<SuggestionRow>>>;
    /// A stored idempotent response (read under the study lock, so retries racing each other see one answer).
    fn get_idempotency<'a>(
        &'a mut self,
        scope: &'a str,
        key: &'a str,
    ) -> BoxFut<'a, StoreResult<Option<IdempotencyRow>>>;
    /// Stores an idempotent response.
    fn put_idempotency<'a>(&'a mut self, row: &'a IdempotencyRow) -> BoxFut<'a, StoreResult<()>>;
    /// Inserts a suggestion.
    fn insert_suggestion<'a>(&'a mut self, row: &'a SuggestionRow) -> BoxFut<'a, StoreResult<()>>;
    /// Moves a suggestion to `completed` or `abandoned`.
    fn close_suggestion<'a>(
        &'a mut self,
        id: Uuid,
        state: SuggestionState,
        at: DateTime<Utc>,
        reason: Option<AbandonReason>,
    ) -> BoxFut<'a, StoreResult<()>>;
    /// The study's uploaded pair batches, in order.
    fn pair_batches(&mut self) -> BoxFut<'_, StoreResult<Vec<PairBatchRow>>>;
    /// Inserts a batch of uploaded pairs.
    fn insert_pair_batch<'a>(&'a mut self, row: &'a PairBatchRow) -> BoxFut<'a, StoreResult<()>>;
    /// Inserts an observation ([`StoreError::Conflict`] when its suggestion already has one).
    fn insert_observation<'a>(&'a mut self, row: &'a ObservationRow) -> BoxFut<'a, StoreResult<()>>;
    /// Inserts observations with one statement per 500 rows (as [`StudyTx::insert_observation`] each).
    fn insert_observations<'a>(&'a mut self, rows: &'a [ObservationRow]) -> BoxFut<'a, StoreResult<()>>;
    /// Writes the study's mutable columns (status, policy state, counters, updated_at).
    fn update_study<'a>(&'a mut self, row: &'a StudyRow) -> BoxFut<'a, StoreResult<()>>;
    /// Commits.
    fn commit(self: Box<Self>) -> BoxFut<'static, StoreResult<()>>;
}

/// Opens the store a database URL names: `postgres://…` or `sqlite://…` (a plain path is an SQLite file).
pub async fn connect(url: &str, max_connections: u32) -> StoreResult<Box<dyn Store>> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Box::new(PgStore::connect(url, max_connections).await?))
    } else if url.starts_with("sqlite:") {
        Ok(Box::new(SqliteStore::connect(url, max_connections).await?))
    } else if !url.contains("://") {
        Ok(Box::new(SqliteStore::connect(&format!("sqlite://{url}"), max_connections).await?))
    } else {
        Err(StoreError::Config(format!(
            "unsupported database URL scheme in '{}': use postgres://… or sqlite://…",
            url.split("://").next().unwrap_or_default()
        )))
    }
}
