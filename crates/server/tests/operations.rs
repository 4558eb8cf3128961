//! Operational behaviour: API tokens (flag, file, scheme case), refusal of bad settings at start, and that tokens
//! stay out of the logs. SQLite always, Postgres too when `TEST_DATABASE_URL` is set.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Client, TestServer, fresh_sqlite_url};
use serde_json::{Value, json};

fn temp_file(contents: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("bayesd_tokens_{}.txt", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, contents).expect("write temp file");
    path
}

/// The `bayesd` binary with its stderr captured line by line.
struct Logged {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    db: PathBuf,
}

impl Logged {
    /// Starts `bayesd serve` on a fresh SQLite file with `args` and `envs`, waiting until it listens; the captured
    /// stderr when it exits before.
    fn spawn(args: &[&str], envs: &[(&str, &str)]) -> Result<(Self, SocketAddr), String> {
        let (url, db) = fresh_sqlite_url();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bayesd"))
            .args(["serve", "--bind", "127.0.0.1:0", "--database-url", &url])
            .args(args)
            .env_remove("BAYESD_LOG_FORMAT")
            .env_remove("BAYESD_API_TOKENS")
            .env_remove("BAYESD_API_TOKEN_FILE")
            .env("RUST_LOG", "info")
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bayesd");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().expect("stderr");
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("bayesd listening") {
                    let _ = addr_tx.send(listening_addr(&line));
                }
                sink.lock().unwrap().push(line);
            }
        });
        let logged = Self { child, lines, db };
        match addr_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => Ok((logged, addr)),
            Err(_) => Err(logged.finish()),
        }
    }

    /// Everything logged so far.
    fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Kills the process (if running) and returns everything it logged.
    fn finish(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(100));
        self.log()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.db.display()));
        }
    }
}

/// The address of a "bayesd listening" line, JSON or plain text.
fn listening_addr(line: &str) -> SocketAddr {
    if let Ok(v) = serde_json::from_str::<Value>(line) {
        return v["fields"]["addr"].as_str().expect("addr").parse().expect("socket address");
    }
    let at = line.find("addr=").expect("addr= in the listening line") + 5;
    line[at..].split_whitespace().next().expect("address").parse().expect("socket address")
}

/// Runs `bayesd serve` expecting it to refuse to start; returns its stderr.
fn refused(args: &[&str], envs: &[(&str, &str)]) -> String {
    match Logged::spawn(args, envs) {
        Ok((p, _)) => panic!("bayesd started with {args:?} {envs:?}:\n{}", p.finish()),
        Err(log) => log,
    }
}

fn sobol_study(name: &str) -> Value {
    json!({"name": name, "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
           "algorithm": {"name": "sobol"}})
}

fn auth(srv: &Client, value: &str) -> u16 {
    srv.request("GET", "/v1/studies", None, &[("Authorization", value)]).status
}

#[test]
fn tokens_from_the_flag_and_the_file_both_authorise_and_the_scheme_is_case_insensitive() {
    let file = temp_file("# bayesd tokens\n\nfile-token-1\n   file-token-2   \n  # commented-token\n\n");
    for backend in ["sqlite", "postgres"] {
        let Some(srv) = TestServer::with_config(backend, |c| {
            c.api_tokens = vec!["flag-token".into()];
            c.api_token_file = Some(file.clone());
        }) else {
            continue;
        };
        let b = srv.backend;
        for ok in ["Bearer flag-token", "Bearer file-token-1", "Bearer file-token-2", "bearer file-token-1"] {
            assert_eq!(auth(&srv, ok), 200, "{b}: {ok}");
        }
        for ok in ["BEARER flag-token", "BeArEr flag-token", "Bearer   flag-token  ", "bearer\tflag-token"] {
            assert_eq!(auth(&srv, ok), 200, "{b}: {ok}");
        }
        for bad in [
            "Bearer commented-token",
            "Bearer # commented-token",
            "Bearer # bayesd tokens",
            "Bearer ",
            "Bearer",
            "Bearerflag-token",
            "Basic flag-token",
            "flag-token",
            "Bearer flag-token-2",
        ] {
            assert_eq!(auth(&srv, bad), 401, "{b}: {bad}");
        }
        let mut client = srv.client.clone();
        client.token = Some("file-token-2".into());
        client.create_study(sobol_study("via the file token"));
        srv.get("/healthz").expect(200);
    }
    let _ = std::fs::remove_file(file);
}

#[test]
fn empty_or_missing_tokens_are_refused_at_start() {
    // In process: the state is not built.
    let (url, _path) = fresh_sqlite_url();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for tokens in [vec!["a", ""], vec!["", "a"], vec![" "]] {
        let mut config = server::Config::with_database(url.clone());
        config.api_tokens = tokens.iter().map(|t| t.to_string()).collect();
        let err = rt.block_on(server::state(config)).err().unwrap_or_else(|| panic!("{tokens:?} accepted"));
        assert!(err.to_string().contains("empty"), "{tokens:?}: {err}");
    }
    // The binary: a trailing comma in the flag or the variable, an empty token file, a missing token file.
    let log = refused(&["--api-token", "a,"], &[]);
    assert!(log.contains("is empty (a stray comma?)"), "{log}");
    let log = refused(&[], &[("BAYESD_API_TOKENS", "a,,b")]);
    assert!(log.contains("is empty (a stray comma?)"), "{log}");
    let empty = temp_file("# nothing here\n\n   \n");
    let log = refused(&["--api-token-file", empty.to_str().unwrap()], &[]);
    assert!(log.contains("has no token"), "{log}");
    let missing = std::env::temp_dir().join(format!("bayesd_missing_{}", uuid::Uuid::new_v4().simple()));
    let log = refused(&[], &[("BAYESD_API_TOKEN_FILE", missing.to_str().unwrap())]);
    assert!(log.contains("cannot read the API token file"), "{log}");
    let _ = std::fs::remove_file(empty);
}

#[test]
fn tokens_never_appear_in_the_logs() {
    let file = temp_file("s3cret-from-the-file\n");
    let (p, addr) = Logged::spawn(
        &["--api-token", "s3cret-from-the-flag", "--api-token-file", file.to_str().unwrap()],
        &[("RUST_LOG", "debug"), ("BAYESD_LOG_FORMAT", "json")],
    )
    .unwrap_or_else(|log| panic!("bayesd did not start:\n{log}"));
    let client = Client::new(addr);
    for token in ["s3cret-from-the-flag", "s3cret-from-the-file"] {
        assert_eq!(auth(&client, &format!("Bearer {token}")), 200);
    }
    assert_eq!(auth(&client, "Bearer s3cret-but-wrong"), 401);
    assert_eq!(client.request("GET", "/v1/nowhere", None, &[("Authorization", "Bearer s3cret-but-wrong")]).status, 401);
    let started = Instant::now();
    while !p.log().contains("/v1/nowhere") && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = p.finish();
    assert!(log.lines().count() > 3, "debug logging produced little:\n{log}");
    assert!(!log.contains("s3cret"), "a token was logged:\n{log}");
    let _ = std::fs::remove_file(file);
}
