//! Operational behaviour: API tokens (flag, file, scheme case), refusal of bad settings at start, tokens kept out of
//! the logs; request ids, the access log, security headers, CORS, the request and header-read timeouts, the
//! connection limit and the graceful drain. SQLite always, Postgres too when `TEST_DATABASE_URL` is set.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
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

/// `server::serve` (the real accept loop) in process on a fresh database; stops (draining) on drop.
struct Served {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    cleanup: Box<dyn FnMut()>,
}

impl Served {
    fn start(backend: &str, tweak: impl FnOnce(&mut server::Config)) -> Option<Self> {
        let (url, cleanup): (String, Box<dyn FnMut()>) = if backend == "postgres" {
            let (url, base, schema) = common::fresh_postgres_url()?;
            (url, Box::new(move || common::drop_schema(&base, &schema)))
        } else {
            let (url, path) = fresh_sqlite_url();
            (
                url,
                Box::new(move || {
                    for suffix in ["", "-wal", "-shm"] {
                        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                    }
                }),
            )
        };
        let mut config = server::Config::with_database(url);
        config.db_max_connections = 4;
        tweak(&mut config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                drop(ready_tx);
                server::serve(config, listener, async move {
                    let _ = stopped.await;
                })
                .await
                .expect("serve");
            });
        });
        let _ = ready_rx.recv();
        // Wait until it answers (migrations run first).
        let client = Client::new(addr);
        let started = Instant::now();
        while client.try_raw("GET", "/healthz", None, &[]).map(|r| r.status).ok() != Some(200) {
            assert!(started.elapsed() < Duration::from_secs(30), "server did not come up");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self { addr, stop: Some(stop), thread: Some(thread), cleanup })
    }

    fn client(&self) -> Client {
        Client::new(self.addr)
    }

    /// Signals shutdown and waits for `serve` to return.
    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().expect("server thread");
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shut_down();
        (self.cleanup)();
    }
}

/// Reads one HTTP/1.1 response with a Content-Length body from a keep-alive connection: (status, head, body).
fn read_response(stream: &mut TcpStream) -> std::io::Result<(u16, String, String)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before a response"));
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let len: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    Ok((status, head, String::from_utf8_lossy(&body).into_owned()))
}

fn is_uuid(s: Option<&str>) -> bool {
    s.is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

#[test]
fn request_ids_are_kept_when_sane_else_generated_and_always_echoed() {
    for backend in ["sqlite", "postgres"] {
        let Some(srv) = TestServer::with_config(backend, |c| c.api_tokens = vec!["tok".into()]) else { continue };
        let b = srv.backend;
        let a = srv.get("/healthz").expect(200);
        let c = srv.get("/healthz").expect(200);
        assert!(is_uuid(a.header("x-request-id")), "{b}: {:?}", a.headers);
        assert_ne!(a.header("x-request-id"), c.header("x-request-id"), "{b}");
        let r = srv.request("GET", "/healthz", None, &[("X-Request-Id", "client-req_42.a:b")]).expect(200);
        assert_eq!(r.header("x-request-id"), Some("client-req_42.a:b"), "{b}");
        let long = "x".repeat(129);
        for insane in ["has space", "quote\"d", "<script>", long.as_str(), "caf\u{e9}"] {
            let r = srv.request("GET", "/healthz", None, &[("X-Request-Id", insane)]).expect(200);
            assert!(is_uuid(r.header("x-request-id")), "{b} {insane}: {:?}", r.headers);
        }
        // Errors too: 401, 404, 405, 422.
        let mut client = srv.client.clone();
        client.token = Some("tok".into());
        for r in [srv.get("/v1/studies").expect(401), client.get("/v1/nowhere").expect(404)] {
            assert!(is_uuid(r.header("x-request-id")), "{b}: {:?}", r.headers);
        }
        let r = client.request("POST", "/v1/studies", Some(&json!({"name": "x"})), &[("X-Request-Id", "bad-spec")]);
        assert_eq!((r.status, r.header("x-request-id")), (422, Some("bad-spec")), "{b}: {}", r.text);
        let r = client.request("PUT", "/v1/studies", None, &[("X-Request-Id", "wrong-method")]).expect(405);
        assert_eq!(r.header("x-request-id"), Some("wrong-method"), "{b}");
    }
}

/// The values of a JSON log's lines from the line announcing `bayesd listening` on.
fn json_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .skip_while(|v| v["fields"]["message"] != "bayesd listening")
        .collect()
}

#[test]
fn one_access_log_line_per_request_and_the_request_id_on_every_line_of_the_request() {
    let (p, addr) = Logged::spawn(&[], &[("RUST_LOG", "info,sqlx::query=debug"), ("BAYESD_LOG_FORMAT", "json")])
        .unwrap_or_else(|log| panic!("bayesd did not start:\n{log}"));
    let client = Client::new(addr);
    let study = client.request("POST", "/v1/studies", Some(&sobol_study("logged")), &[("X-Request-Id", "create-1")]);
    let sid = study.expect(201).json["id"].as_str().unwrap().to_string();
    let got = client.get(&format!("/v1/studies/{sid}")).expect(200);
    let got_id = got.header("x-request-id").unwrap().to_string();
    client.request("GET", "/v1/nowhere", None, &[("X-Request-Id", "lost-1")]).expect(404);
    let access =
        |log: &str| -> Vec<Value> { json_lines(log).into_iter().filter(|v| v["target"] == "bayesd::access").collect() };
    let started = Instant::now();
    while access(&p.log()).len() < 3 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = p.finish();
    let lines = access(&log);
    assert_eq!(lines.len(), 3, "one access line per request:\n{log}");
    let by_id =
        |id: &str| lines.iter().find(|v| v["span"]["request_id"] == id).unwrap_or_else(|| panic!("{id}:\n{log}"));
    let create = by_id("create-1");
    assert_eq!(create["level"], "INFO");
    assert_eq!(create["fields"]["status"], 201, "{create}");
    assert!(create["fields"]["latency_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{create}");
    assert_eq!((&create["span"]["method"], &create["span"]["route"]), (&json!("POST"), &json!("/v1/studies")));
    let get = by_id(&got_id);
    assert_eq!(get["fields"]["status"], 200, "{get}");
    assert_eq!(get["span"]["route"], "/v1/studies/{study_id}", "{get}");
    assert_eq!(get["span"]["study_id"], sid, "{get}");
    let lost = by_id("lost-1");
    assert_eq!((&lost["fields"]["status"], &lost["span"]["route"]), (&json!(404), &json!("unmatched")));
    // The request's database statements carry its id; none runs outside a request once the server listens.
    let all = json_lines(&log);
    let queries: Vec<&Value> =
        all.iter().filter(|v| v["target"].as_str().is_some_and(|t| t.starts_with("sqlx::query"))).collect();
    assert!(queries.iter().any(|v| v["span"]["request_id"] == "create-1"), "no statement of create-1 logged:\n{log}");
    for q in &queries {
        assert!(q["span"]["request_id"].is_string(), "a statement logged without its request id: {q}");
    }
}

#[test]
fn plain_text_logs_have_no_colour_codes_when_stderr_is_not_a_terminal() {
    let (p, addr) = Logged::spawn(&[], &[]).unwrap_or_else(|log| panic!("bayesd did not start:\n{log}"));
    Client::new(addr).request("GET", "/healthz", None, &[("X-Request-Id", "plain-1")]).expect(200);
    let started = Instant::now();
    while !p.log().contains("request finished") && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = p.finish();
    assert!(!log.contains('\u{1b}'), "ANSI escape codes in a piped log:\n{log}");
    let line = log.lines().find(|l| l.contains("request finished")).unwrap_or_else(|| panic!("no access line:\n{log}"));
    for part in ["request_id=plain-1", "method=GET", "route=/healthz", "status=200", "latency_ms="] {
        assert!(line.contains(part), "{part} missing in {line}");
    }
}

#[test]
fn every_response_has_security_headers_and_the_docs_a_policy_swagger_ui_can_run_under() {
    for srv in common::backends() {
        let b = srv.backend;
        let sid = srv.create_study(sobol_study("headers"))["id"].as_str().unwrap().to_string();
        for (path, status) in [
            ("/healthz".to_string(), 200),
            (format!("/v1/studies/{sid}"), 200),
            ("/metrics".into(), 200),
            ("/nope".into(), 404),
        ] {
            let r = srv.get(&path).expect(status);
            assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{b} {path}");
            assert_eq!(r.header("x-frame-options"), Some("DENY"), "{b} {path}");
            assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{b} {path}");
            assert_eq!(
                r.header("content-security-policy"),
                Some("default-src 'none'; frame-ancestors 'none'"),
                "{b} {path}"
            );
        }
        let r = srv.post("/healthz", json!({})).expect(405);
        assert_eq!(r.header("x-frame-options"), Some("DENY"), "{b}");
        // Swagger UI: its page loads only scripts it serves itself, which its policy allows.
        let page = srv.get("/docs/").expect(200);
        let csp = page.header("content-security-policy").expect("CSP on /docs/").to_string();
        assert!(csp.contains("script-src 'self'") && csp.contains("style-src 'self' 'unsafe-inline'"), "{b}: {csp}");
        assert!(csp.contains("img-src 'self' data:") && csp.contains("connect-src 'self'"), "{b}: {csp}");
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"), "{b}");
        let scripts: Vec<&str> = page.text.split("<script").skip(1).map(|s| &s[..s.find('>').unwrap()]).collect();
        assert!(!scripts.is_empty(), "{b}: {}", page.text);
        for tag in &scripts {
            let src = tag.split("src=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or_else(|| {
                panic!("{b}: an inline <script> in Swagger UI's page needs another policy: {}", page.text)
            });
            let js = srv.get(&format!("/docs/{}", src.trim_start_matches("./"))).expect(200);
            assert_eq!(js.header("content-security-policy"), Some(csp.as_str()), "{b} {src}");
        }
        srv.get("/openapi.json").expect(200);
    }
}

fn preflight(c: &Client, origin: &str) -> common::Resp {
    c.request(
        "OPTIONS",
        "/v1/studies",
        None,
        &[
            ("Origin", origin),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type, idempotency-key"),
        ],
    )
}

#[test]
fn cors_is_off_by_default_and_answers_preflights_for_the_configured_origins() {
    for backend in ["sqlite", "postgres"] {
        let Some(off) = TestServer::with_config(backend, |_| {}) else { continue };
        let b = off.backend;
        let r = preflight(&off, "https://app.example.com");
        assert_eq!(r.status, 405, "{b}: preflight not handled without CORS: {:?}", r.headers);
        let r = off.request("GET", "/healthz", None, &[("Origin", "https://app.example.com")]).expect(200);
        assert!(r.headers.iter().all(|(k, _)| !k.starts_with("access-control-")), "{b}: {:?}", r.headers);
        drop(off);

        let srv = TestServer::with_config(backend, |c| {
            c.cors_origins = vec!["https://app.example.com/".into(), "http://localhost:3000".into()];
            c.api_tokens = vec!["tok".into()];
        })
        .unwrap();
        for origin in ["https://app.example.com", "http://localhost:3000"] {
            let r = preflight(&srv, origin);
            assert!(matches!(r.status, 200 | 204), "{b} {origin}: {} {:?}", r.status, r.headers);
            assert_eq!(r.header("access-control-allow-origin"), Some(origin), "{b}");
            let allowed = r.header("access-control-allow-headers").unwrap_or_default().to_ascii_lowercase();
            for h in ["authorization", "content-type", "idempotency-key"] {
                assert!(allowed.contains(h), "{b}: {h} not in {allowed}");
            }
            assert!(r.header("access-control-allow-methods").is_some_and(|m| m.contains("POST")), "{b}");
            let r = srv
                .request("GET", "/v1/studies", None, &[("Origin", origin), ("Authorization", "Bearer tok")])
                .expect(200);
            assert_eq!(r.header("access-control-allow-origin"), Some(origin), "{b}");
            assert!(r.header("access-control-expose-headers").is_some_and(|h| h.contains("x-request-id")), "{b}");
        }
        let r = preflight(&srv, "https://evil.example.com");
        assert_eq!(r.header("access-control-allow-origin"), None, "{b}: {:?}", r.headers);
        drop(srv);

        let any = TestServer::with_config(backend, |c| c.cors_origins = vec!["*".into()]).unwrap();
        let r = preflight(&any, "https://anywhere.example");
        assert!(matches!(r.status, 200 | 204), "{b}");
        assert_eq!(r.header("access-control-allow-origin"), Some("*"), "{b}");
    }
    // Malformed origins refuse to start.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for origins in [vec!["app.example.com"], vec!["*", "https://a.example"], vec!["https://a.example/path"], vec![""]] {
        let (url, _path) = fresh_sqlite_url();
        let mut config = server::Config::with_database(url);
        config.cors_origins = origins.iter().map(|o| o.to_string()).collect();
        let err = rt.block_on(server::state(config)).err().unwrap_or_else(|| panic!("{origins:?} accepted"));
        assert!(err.to_string().contains("--cors-origin"), "{origins:?}: {err}");
    }
}

#[test]
fn a_request_over_the_request_timeout_gets_503_problem_json() {
    for backend in ["sqlite", "postgres"] {
        // No compute slot, and a queue wait longer than the request timeout: the timeout answers first.
        let Some(srv) = TestServer::with_config(backend, |c| {
            c.request_timeout_secs = 1;
            c.compute_permits = Some(0);
            c.compute_queue_ms = 30_000;
        }) else {
            continue;
        };
        let b = srv.backend;
        let sid = srv.create_study(sobol_study("slow"))["id"].as_str().unwrap().to_string();
        let started = Instant::now();
        let r = srv.post(&format!("/v1/studies/{sid}/suggestions"), json!({"count": 1})).expect(503);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "{b}: {took:?}");
        assert_eq!(r.header("content-type"), Some("application/problem+json"), "{b}");
        assert!(r.json["detail"].as_str().is_some_and(|d| d.contains("longer than 1 s")), "{b}: {}", r.text);
        assert!(r.header("retry-after").is_some(), "{b}");
        assert!(r.header("x-request-id").is_some(), "{b}");
        // A body that never arrives in full.
        let mut stream = TcpStream::connect(srv.client.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let started = Instant::now();
        write!(
            stream,
            "POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\""
        )
        .unwrap();
        let (status, head, body) = read_response(&mut stream).expect("a response, not a hang");
        let took = started.elapsed();
        assert_eq!(status, 503, "{b}: {head}{body}");
        assert!(head.to_ascii_lowercase().contains("content-type: application/problem+json"), "{b}: {head}");
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "{b}: {took:?}");
        srv.get("/healthz").expect(200);
    }
}

#[test]
fn a_client_slow_to_send_its_headers_is_disconnected_after_the_header_timeout() {
    for backend in ["sqlite", "postgres"] {
        let Some(srv) = Served::start(backend, |c| c.header_read_timeout_secs = 1) else { continue };
        for opening in ["GET /healthz HTTP/1.1\r\nHost: x\r\n", "G", ""] {
            let mut stream = TcpStream::connect(srv.addr).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
            let started = Instant::now();
            stream.write_all(opening.as_bytes()).unwrap();
            let mut rest = Vec::new();
            // Closed by the server: end of stream (after at most an error response), or a reset.
            let _ = stream.read_to_end(&mut rest);
            let took = started.elapsed();
            assert!(
                took >= Duration::from_millis(900) && took < Duration::from_secs(6),
                "{backend} {opening:?}: closed after {took:?}"
            );
            assert!(!String::from_utf8_lossy(&rest).contains(" 200 "), "{backend}: served: {rest:?}");
        }
        // An idle keep-alive connection is closed after the same time; complete requests are served.
        let mut stream = TcpStream::connect(srv.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut stream).unwrap().0, 200, "{backend}");
        let started = Instant::now();
        assert_eq!(stream.read(&mut [0u8; 64]).unwrap_or(0), 0, "{backend}");
        assert!(started.elapsed() < Duration::from_secs(6), "{backend}: idle connection kept");
        srv.client().get("/healthz").expect(200);
    }
}

#[test]
fn connections_beyond_the_limit_wait_until_one_closes() {
    for backend in ["sqlite", "postgres"] {
        let Some(srv) = Served::start(backend, |c| {
            c.max_connections = 2;
            c.header_read_timeout_secs = 60;
        }) else {
            continue;
        };
        // Two keep-alive connections, each served once and kept open.
        let mut open: Vec<TcpStream> = (0..2)
            .map(|_| {
                let mut s = TcpStream::connect(srv.addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                assert_eq!(read_response(&mut s).unwrap().0, 200, "{backend}");
                s
            })
            .collect();
        // A third one is accepted by the kernel but not served while both are open.
        let mut third = TcpStream::connect(srv.addr).unwrap();
        third.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        third.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
        let waited = third.read(&mut [0u8; 1]);
        assert!(
            waited
                .as_ref()
                .is_err_and(|e| matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
            "{backend}: the connection over the limit was answered: {waited:?}"
        );
        // The open ones still work; closing one lets the third through.
        open[0].write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut open[0]).unwrap().0, 200, "{backend}");
        drop(open.remove(1));
        third.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(read_response(&mut third).expect("served once a slot freed").0, 200, "{backend}");
    }
}

#[test]
fn open_connections_are_counted_in_the_metrics() {
    let Some(srv) = Served::start("sqlite", |_| {}) else { return };
    let gauge = |c: &Client| {
        let t = c.get("/metrics").expect(200).text;
        t.lines().find_map(|l| l.strip_prefix("bayesd_http_connections ")).and_then(|v| v.parse::<f64>().ok())
    };
    let base = gauge(&srv.client()).expect("bayesd_http_connections");
    let open: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = TcpStream::connect(srv.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            assert_eq!(read_response(&mut s).unwrap().0, 200);
            s
        })
        .collect();
    assert_eq!(gauge(&srv.client()), Some(base + 3.0));
    drop(open);
    let started = Instant::now();
    while gauge(&srv.client()) != Some(base) {
        assert!(started.elapsed() < Duration::from_secs(5), "closed connections still counted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn shutdown_drains_the_requests_in_flight_and_refuses_new_connections() {
    for backend in ["sqlite", "postgres"] {
        let Some(mut srv) = Served::start(backend, |_| {}) else { continue };
        // A request in flight: its body is half sent when shutdown begins.
        let body = serde_json::to_vec(&sobol_study("drained")).unwrap();
        let mut stream = TcpStream::connect(srv.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            stream,
            "POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        stream.write_all(&body[..10]).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let stop = srv.stop.take().unwrap();
        let _ = stop.send(());
        let started = Instant::now();
        while TcpStream::connect(srv.addr).is_ok() {
            assert!(started.elapsed() < Duration::from_secs(5), "{backend}: still accepting after shutdown");
            std::thread::sleep(Duration::from_millis(20));
        }
        stream.write_all(&body[10..]).unwrap();
        let (status, head, text) = read_response(&mut stream).expect("the in-flight request is answered");
        assert_eq!(status, 201, "{backend}: {head}{text}");
        srv.shut_down();
    }
}
