//! Server configuration: command-line flags, each with an environment variable.

use clap::Args;

/// How the server runs.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, global = true, env = "BAYESD_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Database: `postgres://…`, or `sqlite://file.db` (the default is an SQLite file in the working directory).
    #[arg(long, global = true, env = "DATABASE_URL", default_value = "sqlite://bayesd.db")]
    pub database_url: String,
    /// API tokens (comma-separated); when set, every route but health and docs needs `Authorization: Bearer <t>`.
    #[arg(long = "api-token", global = true, env = "BAYESD_API_TOKENS", value_delimiter = ',')]
    pub api_tokens: Vec<String>,
    /// Largest accepted request body in bytes.
    #[arg(long, global = true, env = "BAYESD_MAX_BODY_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Engine calls running at once (default: the number of cores).
    #[arg(long, global = true, env = "BAYESD_COMPUTE_PERMITS")]
    pub compute_permits: Option<usize>,
    /// How long a request waits for a compute slot before the server answers 503 (milliseconds).
    #[arg(long, global = true, env = "BAYESD_COMPUTE_QUEUE_MS", default_value_t = 10_000)]
    pub compute_queue_ms: u64,
    /// Deadline of one engine call (seconds); a slower call is answered with 503.
    #[arg(long, global = true, env = "BAYESD_COMPUTE_DEADLINE_SECS", default_value_t = 60)]
    pub compute_deadline_secs: u64,
    /// Database connections in the pool.
    #[arg(long, global = true, env = "BAYESD_DB_MAX_CONNECTIONS", default_value_t = 16)]
    pub db_max_connections: u32,
}

impl Config {
    /// The defaults with another database URL (for tests and tools).
    pub fn with_database(database_url: impl Into<String>) -> Self {
        Self {
            bind: "127.0.0.1:0".into(),
            database_url: database_url.into(),
            api_tokens: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            compute_permits: None,
            compute_queue_ms: 10_000,
            compute_deadline_secs: 60,
            db_max_connections: 16,
        }
    }

    /// Number of compute slots.
    pub fn permits(&self) -> usize {
        self.compute_permits.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
    }
}
