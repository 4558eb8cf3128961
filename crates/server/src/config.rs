//! Server configuration: command-line flags, each with an environment variable.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::Args;

/// How the server runs.
#[derive(Clone, Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, global = true, env = "BAYESD_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Database: `postgres://…`, or `sqlite://file.db` (the default is an SQLite file in the working directory).
    #[arg(long, global = true, env = "DATABASE_URL", default_value = "sqlite://bayesd.db")]
    pub database_url: String,
    /// API tokens (comma-separated); when set, every route but health and docs needs `Authorization: Bearer <t>`.
    #[arg(long = "api-token", global = true, env = "BAYESD_API_TOKENS", value_delimiter = ',', hide_env_values = true)]
    pub api_tokens: Vec<String>,
    /// A file of API tokens, one a line (blank lines and `#` comments ignored); adds to `--api-token`.
    #[arg(long, global = true, env = "BAYESD_API_TOKEN_FILE")]
    pub api_token_file: Option<PathBuf>,
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
    /// How long a client may take to send a request's headers (seconds); then the connection is closed.
    #[arg(long, global = true, env = "BAYESD_HEADER_READ_TIMEOUT_SECS", default_value_t = 10)]
    pub header_read_timeout_secs: u64,
    /// Longest a request may take, body upload included (seconds); then the client gets 503. Keep it above the
    /// compute queue wait plus the compute deadline.
    #[arg(long, global = true, env = "BAYESD_REQUEST_TIMEOUT_SECS", default_value_t = 120)]
    pub request_timeout_secs: u64,
    /// Open client connections at most; further connections wait in the listen backlog until one closes.
    #[arg(long, global = true, env = "BAYESD_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,
    /// Origins allowed by CORS (comma-separated, or `*`); CORS is off when empty.
    #[arg(long = "cors-origin", global = true, env = "BAYESD_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("bind", &self.bind)
            .field("database_url", &"<redacted>")
            .field("api_tokens", &format_args!("<{} redacted>", self.api_tokens.len()))
            .field("api_token_file", &self.api_token_file)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("compute_permits", &self.compute_permits)
            .field("compute_queue_ms", &self.compute_queue_ms)
            .field("compute_deadline_secs", &self.compute_deadline_secs)
            .field("db_max_connections", &self.db_max_connections)
            .field("header_read_timeout_secs", &self.header_read_timeout_secs)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("max_connections", &self.max_connections)
            .field("cors_origins", &self.cors_origins)
            .finish()
    }
}

impl Config {
    /// The defaults with another database URL (for tests and tools).
    pub fn with_database(database_url: impl Into<String>) -> Self {
        Self {
            bind: "127.0.0.1:0".into(),
            database_url: database_url.into(),
            api_tokens: Vec::new(),
            api_token_file: None,
            max_body_bytes: 4 * 1024 * 1024,
            compute_permits: None,
            compute_queue_ms: 10_000,
            compute_deadline_secs: 60,
            db_max_connections: 16,
            header_read_timeout_secs: 10,
            request_timeout_secs: 120,
            max_connections: 1024,
            cors_origins: Vec::new(),
        }
    }

    /// Number of compute slots.
    pub fn permits(&self) -> usize {
        self.compute_permits.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
    }

    /// Checks the settings and merges the token file into `api_tokens`; the server refuses to start on error.
    pub fn resolve(mut self) -> anyhow::Result<Self> {
        if let Some(i) = self.api_tokens.iter().position(|t| t.trim().is_empty()) {
            bail!(
                "API token {} of {} given with --api-token/BAYESD_API_TOKENS is empty (a stray comma?); refusing to start",
                i + 1,
                self.api_tokens.len()
            );
        }
        self.api_tokens = self.api_tokens.iter().map(|t| t.trim().to_string()).collect();
        if let Some(path) = &self.api_token_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the API token file {}", path.display()))?;
            let before = self.api_tokens.len();
            self.api_tokens.extend(
                text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string),
            );
            if self.api_tokens.len() == before {
                bail!("the API token file {} has no token (one a line); refusing to start", path.display());
            }
        }
        if self.max_connections == 0 {
            bail!("--max-connections must be at least 1");
        }
        if self.header_read_timeout_secs == 0 || self.request_timeout_secs == 0 {
            bail!("--header-read-timeout-secs and --request-timeout-secs must be at least 1");
        }
        self.cors_origins = self.cors_origins.iter().map(|o| o.trim().trim_end_matches('/').to_string()).collect();
        if self.cors_origins.iter().any(|o| o == "*") && self.cors_origins.len() > 1 {
            bail!("--cors-origin '*' allows every origin and cannot be combined with others");
        }
        for origin in self.cors_origins.iter().filter(|o| *o != "*") {
            let (scheme, host) = origin.split_once("://").unwrap_or_default();
            let valid = matches!(scheme, "http" | "https")
                && !host.is_empty()
                && !host.contains('/')
                && axum::http::HeaderValue::from_str(origin).is_ok();
            if !valid {
                bail!("--cors-origin '{origin}' is not an origin like https://app.example.com[:port], nor '*'");
            }
        }
        let compute_secs = self.compute_queue_ms.div_ceil(1000) + self.compute_deadline_secs;
        if self.request_timeout_secs <= compute_secs {
            tracing::warn!(
                request_timeout_secs = self.request_timeout_secs,
                compute_secs,
                "the request timeout is not above the compute queue wait plus deadline: long suggestions may be cut"
            );
        }
        Ok(self)
    }
}
