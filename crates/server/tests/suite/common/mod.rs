//! Shared helpers for the server's HTTP tests: a real server on port 0 against a fresh database, and a small
//! blocking HTTP/1.1 client speaking JSON. Tests are plain synchronous `#[test]` functions.
//!
//! A new test file is a module of the suite (`mod my_tests;` in `main.rs`) and starts like this:
//!
//! ```ignore
//! use crate::common;
//! use common::{TestServer, backends};
//! use serde_json::json;
//!
//! #[test]
//! fn my_algorithm_over_http() {
//!     for srv in backends() {                     // SQLite always; Postgres too when TEST_DATABASE_URL is set
//!         let study = srv.create_study(json!({"name": "t", "parameters": [
//!             {"name": "x", "type": "float", "low": 0, "high": 1}], "algorithm": {"name": "gp-ei"}}));
//!         let id = study["id"].as_str().unwrap();
//!         let s = srv.post(&format!("/v1/studies/{id}/suggestions"), json!({"count": 1})).expect(201);
//!         let sug = &s.json["suggestions"][0];
//!         srv.post(&format!("/v1/studies/{id}/observations"),
//!                  json!({"suggestion_id": sug["id"], "value": 1.0})).expect(201);
//!     }
//! }
//! ```
//!
//! - [`TestServer::sqlite`]: in-process server on 127.0.0.1:0 with a fresh SQLite file (removed on drop).
//! - [`TestServer::postgres`]: the same on a fresh Postgres schema of `TEST_DATABASE_URL` (dropped on drop);
//!   `None`, after printing why, when the variable is unset.
//! - [`backends`]: both of the above (SQLite first); name the backend in assertions with `srv.backend`.
//! - [`TestServer::with_config`]: start with a tweaked [`server::Config`] (tokens, body limit, compute slots).
//! - Requests: `get`, `post`, `delete`, `request` (any method, extra headers) return a [`Resp`] with `status`,
//!   `headers`, `text` and parsed `json`; `resp.expect(201)` asserts the status and shows the body otherwise.
//! - [`TestServer::ask_tell`]: one suggest + observe round with a closure computing the value.
//! - Every response is checked against the committed `openapi/openapi.json` (`contract.rs`): a JSON body must
//!   validate against the schema of its operation, status and content type, and a status an operation does not
//!   document fails the test.
//! - [`fresh_postgres_url`] / [`fresh_sqlite_url`]: a database URL for spawning the `bayesd` binary yourself
//!   (`env!("CARGO_BIN_EXE_bayesd")`), as the concurrency and crash tests do; [`Client`] talks to any base URL.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

mod contract;

/// A response.
#[derive(Debug, Clone)]
pub struct Resp {
    /// HTTP status.
    pub status: u16,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub text: String,
    /// The body as JSON (`Value::Null` when it is not JSON).
    pub json: Value,
}

impl Resp {
    /// Asserts the status (printing the body otherwise) and returns self.
    #[track_caller]
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.text);
        self
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// The `field`s of a problem document's `errors`.
    pub fn error_fields(&self) -> Vec<String> {
        self.json["errors"]
            .as_array()
            .map(|a| a.iter().filter_map(|e| e["field"].as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }
}

/// A blocking JSON client for one base address.
#[derive(Debug, Clone)]
pub struct Client {
    /// `host:port`.
    pub addr: SocketAddr,
    /// Sent as `Authorization: Bearer …` when set.
    pub token: Option<String>,
}

impl Client {
    /// A client for `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        Self { addr, token: None }
    }

    /// Any request; `body` is sent as JSON; `headers` are added (e.g. `Idempotency-Key`).
    pub fn request(&self, method: &str, path: &str, body: Option<&Value>, headers: &[(&str, &str)]) -> Resp {
        let raw = body.map(|b| serde_json::to_vec(b).expect("serialisable body"));
        let mut all: Vec<(&str, &str)> = Vec::new();
        if raw.is_some() {
            all.push(("Content-Type", "application/json"));
        }
        all.extend_from_slice(headers);
        self.raw(method, path, raw.as_deref(), &all)
    }

    /// A request with a raw body and exactly the given headers (plus Host, Content-Length, Connection).
    pub fn raw(&self, method: &str, path: &str, body: Option<&[u8]>, headers: &[(&str, &str)]) -> Resp {
        self.try_raw(method, path, body, headers).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// Like [`Client::raw`], returning I/O errors (e.g. while a server restarts).
    pub fn try_raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        headers: &[(&str, &str)],
    ) -> std::io::Result<Resp> {
        let mut stream = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.addr);
        if let Some(t) = &self.token {
            req.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        let body = body.unwrap_or_default();
        req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(req.as_bytes())?;
        stream.write_all(body)?;
        let mut buf = Vec::new();
        stream.read_to_end(&mut buf)?;
        let resp = parse_response(&buf)?;
        contract::check(method, path, Some(body), &resp);
        Ok(resp)
    }

    /// GET.
    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, None, &[])
    }

    /// POST with a JSON body.
    pub fn post(&self, path: &str, body: Value) -> Resp {
        self.request("POST", path, Some(&body), &[])
    }

    /// DELETE.
    pub fn delete(&self, path: &str) -> Resp {
        self.request("DELETE", path, None, &[])
    }

    /// Creates a study (asserting 201) and returns it.
    #[track_caller]
    pub fn create_study(&self, spec: Value) -> Value {
        self.post("/v1/studies", spec).expect(201).json
    }

    /// One ask-tell round: suggest one point, observe `f(assignments)`; returns (suggestion, observation).
    #[track_caller]
    pub fn ask_tell(&self, study_id: &str, f: impl FnOnce(&Value) -> f64) -> (Value, Value) {
        let s = self.post(&format!("/v1/studies/{study_id}/suggestions"), serde_json::json!({"count": 1})).expect(201);
        let sug = s.json["suggestions"][0].clone();
        let value = f(&sug["assignments"]);
        let o = self
            .post(
                &format!("/v1/studies/{study_id}/observations"),
                serde_json::json!({"suggestion_id": sug["id"], "value": value}),
            )
            .expect(201);
        (sug, o.json)
    }
}

fn parse_response(buf: &[u8]) -> std::io::Result<Resp> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| bad("no header end"))?;
    let head = std::str::from_utf8(&buf[..split]).map_err(|_| bad("non-UTF-8 head"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or_else(|| bad("no status line"))?;
    let status: u16 = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| bad("bad status"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = buf[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body).ok_or_else(|| bad("bad chunked body"))?;
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(Resp { status, headers, text, json })
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = b.windows(2).position(|w| w == b"\r\n")?;
        let size_str = std::str::from_utf8(&b[..line_end]).ok()?;
        let size = usize::from_str_radix(size_str.split(';').next()?.trim(), 16).ok()?;
        b = &b[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}

/// What to remove when a test server goes away.
#[derive(Debug)]
enum Cleanup {
    SqliteFile(PathBuf),
    PgSchema { base_url: String, schema: String },
}

/// A real `bayesd` server running in-process on its own thread and runtime.
pub struct TestServer {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The client (without a token; set `client.token` for servers with tokens).
    pub client: Client,
    /// The database URL the server uses.
    pub database_url: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    cleanup: Cleanup,
}

impl std::ops::Deref for TestServer {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// A fresh SQLite database URL (a new file in the temp directory) and its path.
pub fn fresh_sqlite_url() -> (String, PathBuf) {
    let path = std::env::temp_dir().join(format!("{}.db", unique("bayesd_test")));
    (format!("sqlite://{}", path.display()), path)
}

/// A fresh Postgres schema of `TEST_DATABASE_URL`: (URL using it, base URL, schema); `None` when unset.
pub fn fresh_postgres_url() -> Option<(String, String, String)> {
    let Ok(base) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL is not set: skipping the Postgres variant of this test");
        return None;
    };
    let schema = unique("t");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&base).await.expect("connect to TEST_DATABASE_URL");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
            .execute(&mut conn)
            .await
            .expect("create schema");
    });
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    Some((url, base, schema))
}

impl TestServer {
    /// A server on a fresh SQLite file.
    pub fn sqlite() -> Self {
        Self::sqlite_with(|_| {})
    }

    /// A server on a fresh SQLite file with a tweaked config.
    pub fn sqlite_with(tweak: impl FnOnce(&mut server::Config)) -> Self {
        let (url, path) = fresh_sqlite_url();
        Self::start("sqlite", url, Cleanup::SqliteFile(path), tweak)
    }

    /// A server on a fresh Postgres schema, or `None` when `TEST_DATABASE_URL` is unset.
    pub fn postgres() -> Option<Self> {
        Self::postgres_with(|_| {})
    }

    /// A server on a fresh Postgres schema with a tweaked config.
    pub fn postgres_with(tweak: impl FnOnce(&mut server::Config)) -> Option<Self> {
        let (url, base_url, schema) = fresh_postgres_url()?;
        Some(Self::start("postgres", url, Cleanup::PgSchema { base_url, schema }, tweak))
    }

    /// A server on `backend` (`sqlite` or `postgres`) with a tweaked config.
    pub fn with_config(backend: &str, tweak: impl FnOnce(&mut server::Config)) -> Option<Self> {
        match backend {
            "postgres" => Self::postgres_with(tweak),
            _ => Some(Self::sqlite_with(tweak)),
        }
    }

    fn start(backend: &'static str, url: String, cleanup: Cleanup, tweak: impl FnOnce(&mut server::Config)) -> Self {
        let mut config = server::Config::with_database(url.clone());
        config.db_max_connections = 4;
        tweak(&mut config);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
                let addr = listener.local_addr().expect("local addr");
                let shutdown = async move {
                    let _ = stop_rx.await;
                };
                let state = match server::state(config).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = addr_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = addr_tx.send(Ok(addr));
                // The production accept loop (connection limit, header-read timeout).
                let _ = server::serve_state(state, listener, shutdown).await;
            });
        });
        let addr = addr_rx.recv().expect("server thread started").unwrap_or_else(|e| panic!("server failed: {e}"));
        Self {
            backend,
            client: Client::new(addr),
            database_url: url,
            shutdown: Some(stop_tx),
            thread: Some(thread),
            cleanup,
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        match &self.cleanup {
            Cleanup::SqliteFile(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::PgSchema { base_url, schema } => drop_schema(base_url, schema),
        }
    }
}

/// Drops a test schema (best effort).
pub fn drop_schema(base_url: &str, schema: &str) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
    rt.block_on(async {
        use sqlx::Connection;
        if let Ok(mut conn) = sqlx::PgConnection::connect(base_url).await {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")))
                .execute(&mut conn)
                .await;
        }
    });
}

/// A `bayesd` process (the real binary) on an ephemeral port; killed (SIGKILL) on drop.
pub struct Process {
    /// The child process.
    pub child: std::process::Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Process {
    /// Starts `bayesd serve --bind 127.0.0.1:0` on `database_url` with extra arguments, waiting until it listens.
    pub fn spawn(database_url: &str, args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_bayesd"))
            .args(["serve", "--bind", "127.0.0.1:0", "--database-url", database_url])
            .args(args)
            .env("BAYESD_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn bayesd");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = std::io::BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines.next().expect("bayesd exited before listening").expect("read stderr");
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            if v["fields"]["message"] == "bayesd listening" {
                break v["fields"]["addr"].as_str().expect("addr").parse().expect("socket address");
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, addr }
    }

    /// A client for it.
    pub fn client(&self) -> Client {
        Client::new(self.addr)
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SQLite, and Postgres when `TEST_DATABASE_URL` is set.
pub fn backends() -> Vec<TestServer> {
    let mut v = vec![TestServer::sqlite()];
    v.extend(TestServer::postgres());
    v
}

/// Branin–Hoo (minimum 0.397887 at (−π, 12.275), (π, 2.275), (9.42478, 2.475)).
pub fn branin(x: f64, y: f64) -> f64 {
    use std::f64::consts::PI;
    let b = 5.1 / (4.0 * PI * PI);
    let c = 5.0 / PI;
    let t = 1.0 / (8.0 * PI);
    (y - b * x * x + c * x - 6.0).powi(2) + 10.0 * (1.0 - t) * x.cos() + 10.0
}

/// A two-parameter Branin study body (`x` in [−5, 10], `y` in [0, 15], minimised).
pub fn branin_study(name: &str) -> Value {
    serde_json::json!({
        "name": name,
        "parameters": [
            {"name": "x", "type": "float", "low": -5, "high": 10},
            {"name": "y", "type": "float", "low": 0, "high": 15}
        ],
        "objective": {"name": "branin", "goal": "minimize"},
        "seed": 1
    })
}

/// splitmix64: a small deterministic generator for simulated clients and environments.
pub struct Rng(pub u64);

impl Rng {
    /// U[0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// N(0, 1) by Box-Muller.
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// N(mean, std²) truncated to [0, 1], by rejection.
    pub fn truncated_normal(&mut self, mean: f64, std: f64) -> f64 {
        loop {
            let x = mean + std * self.normal();
            if (0.0..=1.0).contains(&x) {
                return x;
            }
        }
    }
}
