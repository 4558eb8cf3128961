//! What the `http` and `soak` suites need to talk to a real server: a scratch database (a fresh SQLite file or a
//! freshly created Postgres database, removed afterwards, [`ScratchDb`]), the release `bayesd` binary started as a
//! child process on it ([`ServerChild`]; the soak kills it and starts another on the same database), both together
//! as [`ServerProcess`], and a minimal blocking HTTP/1.1 keep-alive JSON client (one TCP connection per client,
//! `TCP_NODELAY`, no retries of its own: a POST is never sent twice unless its caller sends it again).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::Value;

/// A response: status and body.
#[derive(Debug, Clone)]
pub struct Resp {
    /// HTTP status.
    pub status: u16,
    /// Body bytes.
    pub body: Vec<u8>,
    /// The `Retry-After` header in seconds, when present.
    pub retry_after: Option<u64>,
    /// `Idempotent-Replayed: true`: the stored answer to an earlier request with the same `Idempotency-Key`.
    pub replayed: bool,
}

impl Resp {
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON body when the status is `want`, an error showing the body otherwise.
    pub fn expect(self, want: u16, what: &str) -> anyhow::Result<Value> {
        if self.status != want {
            bail!("{what}: status {} (expected {want}): {}", self.status, String::from_utf8_lossy(&self.body));
        }
        Ok(self.json())
    }
}

/// One keep-alive connection to the server.
#[derive(Debug)]
pub struct Conn {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    /// A client for `addr` (connects on the first request).
    pub fn new(addr: SocketAddr) -> Self {
        Self { addr, stream: None }
    }

    /// Connects to `addr` from the next request on (the kept-alive connection is dropped when it changes).
    pub fn set_addr(&mut self, addr: SocketAddr) {
        if addr != self.addr {
            self.addr = addr;
            self.stream = None;
        }
    }

    /// Sends one request (`body` as JSON when given) and reads the whole response.
    pub fn request(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> anyhow::Result<Resp> {
        self.request_with(method, path, body, &[])
    }

    /// [`Conn::request`] with extra headers (e.g. `Idempotency-Key`).
    pub fn request_with(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Resp> {
        if self.stream.is_none() {
            let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5))?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(Duration::from_secs(300)))?;
            self.stream = Some(BufReader::new(s));
        }
        let out = self.exchange(method, path, body, headers);
        if out.is_err() {
            self.stream = None;
        }
        out.with_context(|| format!("{method} {path}"))
    }

    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Resp> {
        let reader = self.stream.as_mut().context("not connected")?;
        let body = body.unwrap_or_default();
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n", self.addr, body.len());
        if !body.is_empty() {
            req.push_str("Content-Type: application/json\r\n");
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let mut buf = req.into_bytes();
        buf.extend_from_slice(body);
        reader.get_mut().write_all(&buf)?;
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let status: u16 =
            line.split(' ').nth(1).and_then(|s| s.parse().ok()).with_context(|| format!("bad status line {line:?}"))?;
        let (mut length, mut chunked, mut close, mut retry_after, mut replayed) = (None, false, false, None, false);
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                bail!("connection closed in the response head");
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                match k.as_str() {
                    "content-length" => length = v.parse::<usize>().ok(),
                    "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                    "connection" => close = v.eq_ignore_ascii_case("close"),
                    "retry-after" => retry_after = v.parse::<u64>().ok(),
                    "idempotent-replayed" => replayed = v.eq_ignore_ascii_case("true"),
                    _ => {}
                }
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                    .with_context(|| format!("bad chunk size {line:?}"))?;
                let mut chunk = vec![0; size + 2];
                reader.read_exact(&mut chunk)?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(n) = length {
            body.resize(n, 0);
            reader.read_exact(&mut body)?;
        } else {
            reader.read_to_end(&mut body)?;
            close = true;
        }
        if close {
            self.stream = None;
        }
        Ok(Resp { status, body, retry_after, replayed })
    }

    /// POST a JSON value.
    pub fn post(&mut self, path: &str, body: &Value) -> anyhow::Result<Resp> {
        self.request("POST", path, Some(&serde_json::to_vec(body)?))
    }

    /// GET.
    pub fn get(&mut self, path: &str) -> anyhow::Result<Resp> {
        self.request("GET", path, None)
    }
}

/// Where the release server binary is: next to the bench executable (both in `target/release`).
pub fn server_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("the bench executable has no directory")?;
    let bin = dir.join(format!("bayesd{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!(
            "the server binary {} is missing: run `cargo build --release -p server` first (the http suite starts \
             the real release server)",
            bin.display()
        );
    }
    Ok(bin)
}

/// The admin connection for Postgres runs: `BENCH_DATABASE_URL`, else `TEST_DATABASE_URL`, else the local default.
pub fn postgres_admin_url() -> String {
    std::env::var("BENCH_DATABASE_URL")
        .or_else(|_| std::env::var("TEST_DATABASE_URL"))
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// `url` with its database name replaced by `db` (query string kept).
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[after_scheme..].find('/').map_or(base.len(), |i| after_scheme + i);
    let mut out = format!("{}/{db}", &base[..host_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

fn postgres_exec(url: &str, sql: String) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(url).await?;
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await?;
        conn.close().await?;
        Ok(())
    })
}

fn unique_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// What to remove when the database goes away.
#[derive(Debug)]
enum Scratch {
    Dir(PathBuf),
    Database { admin_url: String, name: String },
}

/// A fresh database of one backend, removed on drop: an SQLite file in a scratch directory, or a Postgres database
/// created through [`postgres_admin_url`] (dropped `WITH (FORCE)`).
#[derive(Debug)]
pub struct ScratchDb {
    /// The server's `--database-url`.
    pub url: String,
    scratch: Scratch,
}

impl ScratchDb {
    /// Creates a fresh database of `backend` (`sqlite` or `postgres`).
    pub fn create(backend: &str) -> anyhow::Result<Self> {
        let (url, scratch) = match backend {
            "postgres" => {
                let admin_url = postgres_admin_url();
                let name = unique_name("bayesd_bench");
                postgres_exec(&admin_url, format!("CREATE DATABASE {name}")).with_context(|| {
                    format!(
                        "creating a Postgres database through {admin_url} (set BENCH_DATABASE_URL to an admin \
                         connection that may CREATE DATABASE)"
                    )
                })?;
                (with_database(&admin_url, &name), Scratch::Database { admin_url, name })
            }
            _ => {
                let dir = std::env::temp_dir().join(unique_name("bayesd_bench"));
                std::fs::create_dir_all(&dir)?;
                (format!("sqlite://{}", dir.join("bench.db").display()), Scratch::Dir(dir))
            }
        };
        Ok(Self { url, scratch })
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        match &self.scratch {
            Scratch::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Scratch::Database { admin_url, name } => {
                if let Err(e) = postgres_exec(admin_url, format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")) {
                    eprintln!("[bench] could not drop database {name}: {e:#}");
                }
            }
        }
    }
}

/// One `bayesd serve` process on 127.0.0.1:0 (a new port each time); SIGKILLed on drop.
#[derive(Debug)]
pub struct ServerChild {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl ServerChild {
    /// Starts the release server on `database_url` and waits until it listens.
    pub fn start(database_url: &str) -> anyhow::Result<Self> {
        let bin = server_binary()?;
        let mut child = Command::new(&bin)
            .args(["serve", "--bind", "127.0.0.1:0", "--database-url", database_url])
            .env("BAYESD_LOG_FORMAT", "json")
            .env("RUST_LOG", "info,sqlx=warn")
            .env_remove("BAYESD_API_TOKENS")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        let addr = loop {
            let Some(line) = lines.next() else {
                let _ = child.wait();
                bail!("{} exited before listening:\n{}", bin.display(), seen.join("\n"));
            };
            let line = line?;
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["fields"]["message"] == "bayesd listening"
            {
                break v["fields"]["addr"].as_str().context("no addr in the listening line")?.parse()?;
            }
            seen.push(line);
        };
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Self { addr, child })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL (no shutdown of any kind) and reap.
    pub fn kill(mut self) {
        self.kill_now();
    }

    fn kill_now(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Resident memory of process `pid` in kB (`VmRSS` of `/proc/<pid>/status`; `None` off Linux or once it is gone).
pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss(&status)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// A running release server on a fresh database; killed and its database removed on drop.
#[derive(Debug)]
pub struct ServerProcess {
    /// Where it listens.
    pub addr: SocketAddr,
    // Declared before the database: the process goes first.
    _child: ServerChild,
    _db: ScratchDb,
}

impl ServerProcess {
    /// Starts `bayesd serve` on 127.0.0.1:0 with a fresh database of `backend` (`sqlite` or `postgres`).
    pub fn start(backend: &'static str) -> anyhow::Result<Self> {
        let db = ScratchDb::create(backend)?;
        let child = ServerChild::start(&db.url)?;
        Ok(Self { addr: child.addr, _child: child, _db: db })
    }

    /// A new connection to it.
    pub fn conn(&self) -> Conn {
        Conn::new(self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_vm_rss, with_database};

    #[test]
    fn vm_rss_is_read_in_kb() {
        let status = "Name:\tbayesd\nVmPeak:\t  900000 kB\nVmRSS:\t   41236 kB\nThreads:\t9\n";
        assert_eq!(parse_vm_rss(status), Some(41236));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
    }

    #[test]
    fn database_name_is_replaced() {
        assert_eq!(with_database("postgres://u@h:5432/test", "b"), "postgres://u@h:5432/b");
        assert_eq!(with_database("postgres://u@h/test?sslmode=disable", "b"), "postgres://u@h/b?sslmode=disable");
        assert_eq!(with_database("postgres://u@h:5432", "b"), "postgres://u@h:5432/b");
    }
}
