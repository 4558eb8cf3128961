//! What the `http` suite needs to talk to a real server: the release `bayesd` binary started as a child process
//! on a fresh SQLite file or a freshly created Postgres database (both removed afterwards), and a minimal blocking
//! HTTP/1.1 keep-alive JSON client (one TCP connection per client, `TCP_NODELAY`, no retries: a POST is never
//! sent twice).

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

    /// Sends one request (`body` as JSON when given) and reads the whole response.
    pub fn request(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> anyhow::Result<Resp> {
        if self.stream.is_none() {
            let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5))?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(Duration::from_secs(300)))?;
            self.stream = Some(BufReader::new(s));
        }
        let out = self.exchange(method, path, body);
        if out.is_err() {
            self.stream = None;
        }
        out.with_context(|| format!("{method} {path}"))
    }

    fn exchange(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> anyhow::Result<Resp> {
        let reader = self.stream.as_mut().context("not connected")?;
        let body = body.unwrap_or_default();
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n", self.addr, body.len());
        if !body.is_empty() {
            req.push_str("Content-Type: application/json\r\n");
        }
        req.push_str("\r\n");
        let mut buf = req.into_bytes();
        buf.extend_from_slice(body);
        reader.get_mut().write_all(&buf)?;
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let status: u16 =
            line.split(' ').nth(1).and_then(|s| s.parse().ok()).with_context(|| format!("bad status line {line:?}"))?;
        let (mut length, mut chunked, mut close) = (None, false, false);
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
        Ok(Resp { status, body })
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

/// What to remove when the server goes away.
#[derive(Debug)]
enum Scratch {
    Dir(PathBuf),
    Database { admin_url: String, name: String },
}

/// A running release server on a fresh database; killed and its database removed on drop.
#[derive(Debug)]
pub struct ServerProcess {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
    scratch: Scratch,
}

impl ServerProcess {
    /// Starts `bayesd serve` on 127.0.0.1:0 with a fresh database of `backend` (`sqlite` or `postgres`).
    pub fn start(backend: &'static str) -> anyhow::Result<Self> {
        let bin = server_binary()?;
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
        let mut child = Command::new(&bin)
            .args(["serve", "--bind", "127.0.0.1:0", "--database-url", &url])
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
        Ok(Self { addr, child, scratch })
    }

    /// A new connection to it.
    pub fn conn(&self) -> Conn {
        Conn::new(self.addr)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        match &self.scratch {
            Scratch::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Scratch::Database { admin_url, name } => {
                if let Err(e) = postgres_exec(admin_url, format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")) {
                    eprintln!("[http] could not drop database {name}: {e:#}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_name_is_replaced() {
        assert_eq!(with_database("postgres://u@h:5432/test", "b"), "postgres://u@h:5432/b");
        assert_eq!(with_database("postgres://u@h/test?sslmode=disable", "b"), "postgres://u@h/b?sslmode=disable");
        assert_eq!(with_database("postgres://u@h:5432", "b"), "postgres://u@h:5432/b");
    }
}
