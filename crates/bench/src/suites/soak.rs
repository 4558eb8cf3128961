//! `soak`: the release server under a mixed load while it is SIGKILLed and restarted at random (issue 23).
//!
//! One run per backend (SQLite, Postgres; `--only sqlite` selects one), 10 minutes each (`--quick`: 60 s), on one
//! scratch database ([`crate::httpc::ScratchDb`]) that outlives the server processes. Four small studies run at a
//! time (floats on [0, 1], d = 2, 3, 4 with the default algorithm and d = 3 with `sobol`; a cheap objective); a
//! study that has `REPLACE_AT` acknowledged observations is replaced by a fresh one and archived (`DELETE`), so GP
//! suggestions stay fast.
//!
//! Eight client threads, each on its own keep-alive connection, loop over weighted random operations on a random
//! study: ask-then-tell (`POST …/suggestions` count 1, then its observation with `suggestion_id`), an observation
//! without suggestion, a batch of 5 observations, `GET …/best`, and a page of `GET …/observations`. Every write
//! carries a unique `Idempotency-Key` and every observation a metadata `tag` naming the client, the operation
//! number and its place in the batch. On a connection error, a 5xx or a 409 `conflict` (the server's "retry") a
//! client sends the same request again, byte for byte with the same key, after a short pause (after `Retry-After`
//! on a 503), until it gets a final answer; so a retry after a crash must replay, never duplicate. A killer thread
//! SIGKILLs the server every 20–60 s (`--quick`: 10–20 s) and starts a new one on the same database (a new port;
//! the clients read the address from a shared lock on every attempt).
//!
//! After the clients stop the server is killed and restarted once more and every observation of every study is
//! read back (`GET /v1/studies`, then each study's observations paged with `after`): **lost** = acknowledged (201)
//! tags not stored, **duplicates** = tags stored more than once, **duplicate ids** = observation ids listed twice,
//! **id mismatches** = a tag stored under another id than the one acknowledged. Also counted: responses by status
//! (5xx other than 503 must be 0; 503 and connection errors separately), restarts, and per 10-s window (`--quick`:
//! 5 s) the p50/p95/p99 latency of each operation's answered requests and the server's resident memory (VmRSS,
//! sampled every second; the window's maximum). The suite writes its result and then fails when lost, duplicates,
//! duplicate ids, id mismatches or non-503 5xx are not zero.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use crate::Args;
use crate::format::{Experiment, Method, Run, SuiteResult};
use crate::httpc::{Conn, Resp, ScratchDb, ServerChild, rss_kb};
use crate::plot::{Band, plot_experiment};
use crate::runner::{unit_assignments, unit_parameters};
use crate::stats;

const BACKENDS: [&str; 2] = ["sqlite", "postgres"];
const CLIENTS: usize = 8;
/// Acknowledged observations after which a study is replaced.
const REPLACE_AT: u64 = 150;
const BATCH: usize = 5;
/// (dimension, algorithm) of the study slots.
const SLOTS: [(usize, &str); 4] = [(2, "auto"), (3, "auto"), (4, "auto"), (3, "sobol")];
/// How long a client keeps retrying one request after the end of the run before giving up on it.
const GIVE_UP_AFTER_STOP: Duration = Duration::from_secs(60);

/// An operation (a request kind) of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Op {
    /// `POST …/suggestions` (count 1).
    Suggest,
    /// The observation of a suggestion.
    Tell,
    /// An observation without suggestion.
    Observe,
    /// `POST …/observations/batch` of 5.
    Batch,
    /// `GET …/best`.
    Best,
    /// `GET …/observations?limit=100`.
    List,
    /// `POST /v1/studies` (a replacement study).
    Create,
    /// `DELETE /v1/studies/{id}` (archiving the replaced study).
    Archive,
}

impl Op {
    const ALL: [Op; 8] = [Op::Suggest, Op::Tell, Op::Observe, Op::Batch, Op::Best, Op::List, Op::Create, Op::Archive];
    /// The operations with a latency-over-time experiment (create and archive are too rare).
    const WINDOWED: [Op; 6] = [Op::Suggest, Op::Tell, Op::Observe, Op::Batch, Op::Best, Op::List];

    fn name(self) -> &'static str {
        match self {
            Op::Suggest => "suggest",
            Op::Tell => "tell",
            Op::Observe => "observe",
            Op::Batch => "batch",
            Op::Best => "best",
            Op::List => "list",
            Op::Create => "create",
            Op::Archive => "archive",
        }
    }
}

/// The protocol's timing.
#[derive(Debug, Clone, Copy)]
struct Protocol {
    duration: Duration,
    window: Duration,
    /// Seconds between kills: uniform in [lo, hi].
    kill_every: (f64, f64),
}

impl Protocol {
    fn of(quick: bool) -> Self {
        if quick {
            Self { duration: Duration::from_secs(60), window: Duration::from_secs(5), kill_every: (10.0, 20.0) }
        } else {
            Self { duration: Duration::from_secs(600), window: Duration::from_secs(10), kill_every: (20.0, 60.0) }
        }
    }
}

/// One study slot: the study clients use now.
#[derive(Debug, Clone)]
struct Slot {
    id: String,
    d: usize,
    algorithm: &'static str,
    generation: u64,
    acked: u64,
    replacing: bool,
}

/// State shared by the clients, the killer and the sampler.
struct Shared {
    addr: RwLock<SocketAddr>,
    pid: AtomicU32,
    slots: Mutex<Vec<Slot>>,
    /// Every study created (the initial ones and the replacements).
    studies: Mutex<Vec<String>>,
    stop: AtomicBool,
    started: Instant,
    nonce: String,
    ops: AtomicU64,
    n503: AtomicU64,
    other_5xx: AtomicU64,
    conn_errors: AtomicU64,
    restarts: AtomicU64,
}

impl Shared {
    fn t(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// A timed answered request.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Seconds since the start when it was sent.
    t: f64,
    op: Op,
    ms: f64,
}

/// What one client saw.
#[derive(Debug, Default)]
struct ClientLog {
    samples: Vec<Sample>,
    /// Every response by status (retried ones included).
    statuses: BTreeMap<u16, u64>,
    /// Problem types of the 4xx answers.
    problems: BTreeMap<String, u64>,
    conn_errors: u64,
    /// 409 `conflict` answers retried.
    conflict_retries: u64,
    /// Final answers replayed from an earlier attempt's `Idempotency-Key` (a write that committed but whose answer
    /// was lost with the killed server).
    replays: u64,
    /// Requests given up after the end of the run without a final answer.
    unresolved: u64,
    /// (tag, observation id) of every acknowledged observation.
    acked: Vec<(String, String)>,
}

/// The objective (cheap, smooth, minimum near 0.3).
fn objective(u: &[f64]) -> f64 {
    u.iter().map(|x| (x - 0.3) * (x - 0.3)).sum::<f64>() + 0.1 * (5.0 * u[0]).sin()
}

fn study_body(slot: usize, d: usize, algorithm: &str, generation: u64) -> Value {
    json!({
        "name": format!("soak slot {slot} generation {generation} ({algorithm}, d = {d})"),
        "parameters": unit_parameters(d),
        "objective": {"name": "f", "goal": "minimize"},
        "algorithm": {"name": algorithm},
        "seed": 1000 * slot as u64 + generation,
    })
}

struct Client<'a> {
    id: usize,
    shared: &'a Shared,
    conn: Conn,
    rng: StdRng,
    op_no: u64,
    log: ClientLog,
}

impl<'a> Client<'a> {
    fn new(id: usize, shared: &'a Shared, seed: u64) -> Self {
        let addr = *shared.addr.read().unwrap_or_else(|e| e.into_inner());
        Self {
            id,
            shared,
            conn: Conn::new(addr),
            rng: StdRng::seed_from_u64(seed),
            op_no: 0,
            log: ClientLog::default(),
        }
    }

    /// Sends the request until it has a final answer (anything but a connection error, a 5xx or a 409
    /// `conflict`); `None` when it was given up after the end of the run.
    fn call(&mut self, op: Op, method: &str, path: &str, body: Option<&Value>, key: Option<&str>) -> Option<Resp> {
        let bytes = body.map(|b| serde_json::to_vec(b).expect("a JSON value serialises"));
        let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
        let mut stopped_at: Option<Instant> = None;
        loop {
            if self.shared.stop.load(Relaxed) {
                let since = *stopped_at.get_or_insert_with(Instant::now);
                if since.elapsed() > GIVE_UP_AFTER_STOP {
                    self.log.unresolved += 1;
                    return None;
                }
            }
            let addr = *self.shared.addr.read().unwrap_or_else(|e| e.into_inner());
            self.conn.set_addr(addr);
            let t = self.shared.t();
            let sent = Instant::now();
            let pause = match self.conn.request_with(method, path, bytes.as_deref(), &headers) {
                Err(_) => {
                    self.log.conn_errors += 1;
                    self.shared.conn_errors.fetch_add(1, Relaxed);
                    Duration::from_millis(self.rng.random_range(100..200))
                }
                Ok(resp) => {
                    let ms = sent.elapsed().as_secs_f64() * 1e3;
                    *self.log.statuses.entry(resp.status).or_default() += 1;
                    if resp.status == 503 {
                        self.shared.n503.fetch_add(1, Relaxed);
                        Duration::from_secs(resp.retry_after.unwrap_or(1).min(5))
                    } else if resp.status >= 500 {
                        self.shared.other_5xx.fetch_add(1, Relaxed);
                        eprintln!(
                            "[soak] client {} {method} {path}: {} {}",
                            self.id,
                            resp.status,
                            String::from_utf8_lossy(&resp.body)
                        );
                        Duration::from_millis(200)
                    } else {
                        let problem =
                            (resp.status >= 400).then(|| resp.json()["type"].as_str().unwrap_or("").to_string());
                        if let Some(p) = &problem {
                            *self.log.problems.entry(format!("{} {p}", resp.status)).or_default() += 1;
                        }
                        if resp.status == 409 && problem.as_deref().is_some_and(|p| p.ends_with("/conflict")) {
                            self.log.conflict_retries += 1;
                            Duration::from_millis(self.rng.random_range(20..80))
                        } else {
                            self.log.replays += u64::from(resp.replayed);
                            self.log.samples.push(Sample { t, op, ms });
                            return Some(resp);
                        }
                    }
                }
            };
            std::thread::sleep(pause);
        }
    }

    fn key(&self, step: &str) -> String {
        format!("soak-{}-c{}-op{}-{step}", self.shared.nonce, self.id, self.op_no)
    }

    fn tag(&self, i: usize) -> String {
        format!("c{}-op{}-{i}", self.id, self.op_no)
    }

    fn metadata(&self, i: usize, op: Op) -> Value {
        json!({"tag": self.tag(i), "client": self.id, "op": self.op_no, "kind": op.name()})
    }

    fn point(&mut self, d: usize) -> Vec<f64> {
        (0..d).map(|_| self.rng.random::<f64>()).collect()
    }

    /// Records acknowledged observations of slot `slot` (generation `generation`) and replaces its study when it
    /// is full.
    fn acknowledge(&mut self, slot: usize, generation: u64, stored: &[(String, String)]) {
        self.log.acked.extend(stored.iter().cloned());
        let replace = {
            let mut slots = self.shared.slots.lock().unwrap_or_else(|e| e.into_inner());
            let s = &mut slots[slot];
            if s.generation != generation {
                return;
            }
            s.acked += stored.len() as u64;
            if s.acked >= REPLACE_AT && !s.replacing {
                s.replacing = true;
                Some(s.clone())
            } else {
                None
            }
        };
        if let Some(old) = replace {
            self.replace(slot, old);
        }
    }

    fn replace(&mut self, slot: usize, old: Slot) {
        let generation = old.generation + 1;
        let body = study_body(slot, old.d, old.algorithm, generation);
        let key = self.key("create");
        let created = self.call(Op::Create, "POST", "/v1/studies", Some(&body), Some(&key));
        let id = created.filter(|r| r.status == 201).and_then(|r| r.json()["id"].as_str().map(str::to_string));
        let mut slots = self.shared.slots.lock().unwrap_or_else(|e| e.into_inner());
        let Some(id) = id else {
            slots[slot].replacing = false;
            return;
        };
        self.shared.studies.lock().unwrap_or_else(|e| e.into_inner()).push(id.clone());
        slots[slot] = Slot { id, generation, acked: 0, replacing: false, ..old.clone() };
        drop(slots);
        self.call(Op::Archive, "DELETE", &format!("/v1/studies/{}", old.id), None, None);
    }

    /// One random operation on a random study.
    fn step(&mut self) {
        self.op_no += 1;
        self.shared.ops.fetch_add(1, Relaxed);
        let slot = self.rng.random_range(0..SLOTS.len());
        let s = self.shared.slots.lock().unwrap_or_else(|e| e.into_inner())[slot].clone();
        let base = format!("/v1/studies/{}", s.id);
        let roll = self.rng.random::<f64>();
        if roll < 0.35 {
            let key = self.key("ask");
            let Some(r) =
                self.call(Op::Suggest, "POST", &format!("{base}/suggestions"), Some(&json!({"count": 1})), Some(&key))
            else {
                return;
            };
            if r.status / 100 != 2 {
                return;
            }
            let v = r.json();
            let Some(sugg) = v["suggestions"].get(0) else { return };
            let u: Vec<f64> = (0..s.d).map(|i| sugg["assignments"][format!("x{i}")].as_f64().unwrap_or(0.5)).collect();
            let body =
                json!({"suggestion_id": sugg["id"], "value": objective(&u), "metadata": self.metadata(0, Op::Tell)});
            let key = self.key("tell");
            if let Some(r) = self.call(Op::Tell, "POST", &format!("{base}/observations"), Some(&body), Some(&key))
                && r.status == 201
                && let Some(id) = r.json()["id"].as_str()
            {
                let stored = [(self.tag(0), id.to_string())];
                self.acknowledge(slot, s.generation, &stored);
            }
        } else if roll < 0.55 {
            let u = self.point(s.d);
            let body = json!({"assignments": unit_assignments(&u), "value": objective(&u), "metadata": self.metadata(0, Op::Observe)});
            let key = self.key("observe");
            if let Some(r) = self.call(Op::Observe, "POST", &format!("{base}/observations"), Some(&body), Some(&key))
                && r.status == 201
                && let Some(id) = r.json()["id"].as_str()
            {
                let stored = [(self.tag(0), id.to_string())];
                self.acknowledge(slot, s.generation, &stored);
            }
        } else if roll < 0.70 {
            let observations: Vec<Value> = (0..BATCH)
                .map(|i| {
                    let u = self.point(s.d);
                    json!({"assignments": unit_assignments(&u), "value": objective(&u), "metadata": self.metadata(i, Op::Batch)})
                })
                .collect();
            let key = self.key("batch");
            let body = json!({"observations": observations});
            if let Some(r) =
                self.call(Op::Batch, "POST", &format!("{base}/observations/batch"), Some(&body), Some(&key))
                && r.status == 201
            {
                let v = r.json();
                let empty = Vec::new();
                let stored: Vec<(String, String)> = v["observations"]
                    .as_array()
                    .unwrap_or(&empty)
                    .iter()
                    .filter_map(|o| Some((o["metadata"]["tag"].as_str()?.to_string(), o["id"].as_str()?.to_string())))
                    .collect();
                self.acknowledge(slot, s.generation, &stored);
            }
        } else if roll < 0.85 {
            self.call(Op::Best, "GET", &format!("{base}/best"), None, None);
        } else {
            self.call(Op::List, "GET", &format!("{base}/observations?limit=100"), None, None);
        }
    }
}

/// The readback's tally against the acknowledged observations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Accounting {
    acknowledged: usize,
    stored: usize,
    /// Acknowledged tags not stored.
    lost: Vec<String>,
    /// Tags stored more than once.
    duplicates: Vec<String>,
    /// Observation ids listed more than once.
    duplicate_ids: Vec<String>,
    /// Tags stored once under another id than the acknowledged one.
    id_mismatches: Vec<String>,
    /// Stored tags that were never acknowledged (a write committed whose answer was lost and whose retry was
    /// refused, e.g. by an archived study; not an error).
    unacknowledged: usize,
}

/// Compares the acknowledged (tag, id) pairs with the stored (tag, id) pairs.
fn account(acked: &[(String, String)], stored: &[(Option<String>, String)]) -> Accounting {
    let mut by_tag: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for (tag, id) in stored {
        *ids.entry(id).or_default() += 1;
        if let Some(tag) = tag {
            by_tag.entry(tag).or_default().push(id);
        }
    }
    let mut out = Accounting { acknowledged: acked.len(), stored: stored.len(), ..Default::default() };
    let mut acked_tags: HashMap<&str, &str> = HashMap::new();
    for (tag, id) in acked {
        acked_tags.insert(tag, id);
        match by_tag.get(tag.as_str()).map(Vec::as_slice) {
            None | Some([]) => out.lost.push(tag.clone()),
            Some([one]) if *one != id => out.id_mismatches.push(tag.clone()),
            _ => {}
        }
    }
    for (tag, list) in &by_tag {
        if list.len() > 1 {
            out.duplicates.push((*tag).to_string());
        }
        if !acked_tags.contains_key(tag) {
            out.unacknowledged += 1;
        }
    }
    out.duplicate_ids = ids.into_iter().filter(|(_, n)| *n > 1).map(|(id, _)| id.to_string()).collect();
    out.lost.sort();
    out.duplicates.sort();
    out.duplicate_ids.sort();
    out.id_mismatches.sort();
    out
}

/// Per window of `window` seconds (x = the window's end): p50, p95, p99 and count of each operation's latencies.
fn windows(samples: &[Sample], window: f64) -> BTreeMap<Op, Vec<(f64, [f64; 3], usize)>> {
    let mut grouped: BTreeMap<Op, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    for s in samples {
        grouped.entry(s.op).or_default().entry((s.t / window).floor() as u64).or_default().push(s.ms);
    }
    grouped
        .into_iter()
        .map(|(op, by_w)| {
            let rows = by_w
                .into_iter()
                .map(|(w, ms)| {
                    let q = [stats::quantile(&ms, 0.5), stats::quantile(&ms, 0.95), stats::quantile(&ms, 0.99)];
                    ((w + 1) as f64 * window, q, ms.len())
                })
                .collect();
            (op, rows)
        })
        .collect()
}

/// Everything one backend's run produced.
struct Outcome {
    backend: &'static str,
    seconds: f64,
    accounting: Accounting,
    statuses: BTreeMap<u16, u64>,
    problems: BTreeMap<String, u64>,
    conn_errors: u64,
    conflict_retries: u64,
    replays: u64,
    unresolved: u64,
    restarts: u64,
    ops: u64,
    studies: usize,
    samples: Vec<Sample>,
    /// (seconds, kB) every second.
    rss: Vec<(f64, u64)>,
}

impl Outcome {
    fn count(&self, pred: impl Fn(u16) -> bool) -> u64 {
        self.statuses.iter().filter(|(s, _)| pred(**s)).map(|(_, n)| n).sum()
    }

    fn other_5xx(&self) -> u64 {
        self.count(|s| s >= 500 && s != 503)
    }

    /// What makes the run fail.
    fn failures(&self) -> Vec<String> {
        let a = &self.accounting;
        let mut out = Vec::new();
        let mut check = |name: &str, n: usize, examples: &[String]| {
            if n > 0 {
                let shown: Vec<&str> = examples.iter().take(5).map(String::as_str).collect();
                out.push(format!("{}: {n} {name} (e.g. {})", self.backend, shown.join(", ")));
            }
        };
        check("lost", a.lost.len(), &a.lost);
        check("duplicates", a.duplicates.len(), &a.duplicates);
        check("duplicate ids", a.duplicate_ids.len(), &a.duplicate_ids);
        check("id mismatches", a.id_mismatches.len(), &a.id_mismatches);
        let codes: Vec<String> =
            self.statuses.iter().filter(|(s, _)| **s >= 500 && **s != 503).map(|(s, n)| format!("{n}× {s}")).collect();
        check("5xx other than 503", self.other_5xx() as usize, &codes);
        out
    }
}

fn soak(backend: &'static str, protocol: Protocol, seed: u64) -> anyhow::Result<Outcome> {
    let db = ScratchDb::create(backend)?;
    let first = ServerChild::start(&db.url).with_context(|| format!("starting the server on {backend}"))?;
    let nonce = format!("{}-{}", std::process::id(), seed);
    let mut conn = Conn::new(first.addr);
    let mut slots = Vec::new();
    for (i, &(d, algorithm)) in SLOTS.iter().enumerate() {
        let study = conn.post("/v1/studies", &study_body(i, d, algorithm, 0))?.expect(201, "create study")?;
        let id = study["id"].as_str().context("study without id")?.to_string();
        slots.push(Slot { id, d, algorithm, generation: 0, acked: 0, replacing: false });
    }
    let shared = Shared {
        addr: RwLock::new(first.addr),
        pid: AtomicU32::new(first.pid()),
        studies: Mutex::new(slots.iter().map(|s| s.id.clone()).collect()),
        slots: Mutex::new(slots),
        stop: AtomicBool::new(false),
        started: Instant::now(),
        nonce,
        ops: AtomicU64::new(0),
        n503: AtomicU64::new(0),
        other_5xx: AtomicU64::new(0),
        conn_errors: AtomicU64::new(0),
        restarts: AtomicU64::new(0),
    };
    let server = Mutex::new(Some(first));
    let restart = |shared: &Shared| -> anyhow::Result<()> {
        let mut guard = server.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = guard.take() {
            old.kill();
        }
        let mut tries = 0;
        let next = loop {
            match ServerChild::start(&db.url) {
                Ok(s) => break s,
                Err(e) if tries < 5 => {
                    tries += 1;
                    eprintln!("[soak] {backend}: restart failed ({e:#}), trying again");
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => return Err(e),
            }
        };
        *shared.addr.write().unwrap_or_else(|e| e.into_inner()) = next.addr;
        shared.pid.store(next.pid(), Relaxed);
        *guard = Some(next);
        Ok(())
    };

    let (logs, rss, killer) = std::thread::scope(|scope| {
        let shared = &shared;
        let restart = &restart;
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                scope.spawn(move || {
                    let mut client = Client::new(c, shared, seed * 100 + c as u64);
                    while !shared.stop.load(Relaxed) {
                        client.step();
                    }
                    client.log
                })
            })
            .collect();
        let killer = scope.spawn(move || -> anyhow::Result<()> {
            let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
            loop {
                let wait = Duration::from_secs_f64(rng.random_range(protocol.kill_every.0..protocol.kill_every.1));
                let until = Instant::now() + wait;
                while Instant::now() < until {
                    if shared.stop.load(Relaxed) {
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                restart(shared)?;
                shared.restarts.fetch_add(1, Relaxed);
            }
        });
        let sampler = scope.spawn(move || {
            let mut rss = Vec::new();
            let mut next_report = protocol.window.as_secs_f64();
            while !shared.stop.load(Relaxed) {
                let t = shared.t();
                if let Some(kb) = rss_kb(shared.pid.load(Relaxed)) {
                    rss.push((t, kb));
                }
                if t >= next_report {
                    next_report += protocol.window.as_secs_f64();
                    eprintln!(
                        "[soak] {backend} t={:.0}s ops={} 503={} conn_errors={} 5xx={} restarts={} rss={:.1} MB",
                        t,
                        shared.ops.load(Relaxed),
                        shared.n503.load(Relaxed),
                        shared.conn_errors.load(Relaxed),
                        shared.other_5xx.load(Relaxed),
                        shared.restarts.load(Relaxed),
                        rss.last().map_or(f64::NAN, |r| r.1 as f64 / 1024.0)
                    );
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            rss
        });
        std::thread::sleep(protocol.duration);
        shared.stop.store(true, Relaxed);
        let logs: Vec<ClientLog> = clients.into_iter().map(|h| h.join().expect("client thread panicked")).collect();
        let killer = killer.join().expect("killer thread panicked");
        let rss = sampler.join().expect("sampler thread panicked");
        (logs, rss, killer)
    });
    killer.context("restarting the server")?;
    let seconds = shared.t();
    // The last restart: everything must be read back from a fresh process.
    restart(&shared)?;
    let addr = *shared.addr.read().unwrap_or_else(|e| e.into_inner());
    let mut conn = Conn::new(addr);
    let mut study_ids = shared.studies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut after = String::new();
    loop {
        let page = conn.get(&format!("/v1/studies?limit=1000&after={after}"))?.expect(200, "list studies")?;
        for s in page["studies"].as_array().context("no studies in the page")? {
            let id = s["id"].as_str().context("study without id")?.to_string();
            if !study_ids.contains(&id) {
                eprintln!("[soak] {backend}: study {id} was not created by the clients");
                study_ids.push(id);
            }
        }
        match page["next_cursor"].as_str() {
            Some(c) => after = c.to_string(),
            None => break,
        }
    }
    let mut stored = Vec::new();
    for id in &study_ids {
        let mut after = String::new();
        loop {
            let page = conn
                .get(&format!("/v1/studies/{id}/observations?limit=1000&after={after}"))?
                .expect(200, "list observations")?;
            for o in page["observations"].as_array().context("no observations in the page")? {
                let tag = o["metadata"]["tag"].as_str().map(str::to_string);
                stored.push((tag, o["id"].as_str().context("observation without id")?.to_string()));
            }
            match page["next_cursor"].as_str() {
                Some(c) => after = c.to_string(),
                None => break,
            }
        }
    }
    if let Some(s) = server.lock().unwrap_or_else(|e| e.into_inner()).take() {
        s.kill();
    }
    drop(db);

    let mut out = Outcome {
        backend,
        seconds,
        accounting: Accounting::default(),
        statuses: BTreeMap::new(),
        problems: BTreeMap::new(),
        conn_errors: 0,
        conflict_retries: 0,
        replays: 0,
        unresolved: 0,
        restarts: shared.restarts.load(Relaxed),
        ops: shared.ops.load(Relaxed),
        studies: study_ids.len(),
        samples: Vec::new(),
        rss,
    };
    let mut acked = Vec::new();
    for log in logs {
        for (s, n) in log.statuses {
            *out.statuses.entry(s).or_default() += n;
        }
        for (p, n) in log.problems {
            *out.problems.entry(p).or_default() += n;
        }
        out.conn_errors += log.conn_errors;
        out.conflict_retries += log.conflict_retries;
        out.replays += log.replays;
        out.unresolved += log.unresolved;
        out.samples.extend(log.samples);
        acked.extend(log.acked);
    }
    out.accounting = account(&acked, &stored);
    Ok(out)
}

fn single(name: &str, x: f64, y: f64) -> Method {
    Method::new(name, "proposed", vec![Run { seed: 0, x: vec![x], y: vec![y], ..Default::default() }])
}

fn experiments(o: &Outcome, window: f64, args: &Args) -> anyhow::Result<Vec<Experiment>> {
    let b = o.backend;
    let mut out = Vec::new();
    let w = windows(&o.samples, window);
    for op in Op::WINDOWED {
        let Some(rows) = w.get(&op) else { continue };
        let x: Vec<f64> = rows.iter().map(|r| r.0).collect();
        let methods = ["p50", "p95", "p99"]
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let y = rows.iter().map(|r| r.1[i]).collect();
                Method::new(
                    name,
                    if i == 0 { "proposed" } else { "reference" },
                    vec![Run { seed: 0, x: x.clone(), y, ..Default::default() }],
                )
            })
            .collect();
        out.push(Experiment {
            name: format!("latency/{b}/{}", op.name()),
            description: format!(
                "{b}: latency of the answered {} requests (retries excluded) per {window:.0}-s window, 8 clients, \
                 server SIGKILLed and restarted at random",
                op.name()
            ),
            metric: "latency_ms".into(),
            better: "lower".into(),
            x_axis: "seconds".into(),
            optimum: None,
            budget: None,
            methods,
        });
    }
    let mut rss_w: BTreeMap<u64, u64> = BTreeMap::new();
    for &(t, kb) in &o.rss {
        let e = rss_w.entry((t / window).floor() as u64).or_default();
        *e = (*e).max(kb);
    }
    let x: Vec<f64> = rss_w.keys().map(|w| (w + 1) as f64 * window).collect();
    let y: Vec<f64> = rss_w.values().map(|kb| *kb as f64 / 1024.0).collect();
    out.push(Experiment {
        name: format!("rss/{b}"),
        description: format!(
            "{b}: the server's resident memory (VmRSS, sampled every second, maximum per {window:.0}-s window; \
             each restart starts a new process)"
        ),
        metric: "rss_mb".into(),
        better: "lower".into(),
        x_axis: "seconds".into(),
        optimum: None,
        budget: None,
        methods: vec![Method::new("rss_mb", "proposed", vec![Run { seed: 0, x, y, ..Default::default() }])],
    });
    let a = &o.accounting;
    let counts: [(&str, f64); 14] = [
        ("acknowledged", a.acknowledged as f64),
        ("stored", a.stored as f64),
        ("lost", a.lost.len() as f64),
        ("duplicates", a.duplicates.len() as f64),
        ("duplicate_ids", a.duplicate_ids.len() as f64),
        ("id_mismatches", a.id_mismatches.len() as f64),
        ("stored_unacknowledged", a.unacknowledged as f64),
        ("5xx_other_than_503", o.other_5xx() as f64),
        ("503", o.count(|s| s == 503) as f64),
        ("connection_errors", o.conn_errors as f64),
        ("restarts", o.restarts as f64),
        ("conflict_retries", o.conflict_retries as f64),
        ("idempotent_replays", o.replays as f64),
        ("unresolved", o.unresolved as f64),
    ];
    let mut methods: Vec<Method> = counts.iter().map(|(n, v)| single(n, o.seconds, *v)).collect();
    methods.push(single("operations", o.seconds, o.ops as f64));
    methods.push(single("requests", o.seconds, o.statuses.values().sum::<u64>() as f64));
    methods.push(single("studies", o.seconds, o.studies as f64));
    out.push(Experiment {
        name: format!("counts/{b}"),
        description: format!(
            "{b}: counts over the whole run of {:.0} s (single points at x = its length): lost, duplicates, \
             duplicate ids, id mismatches and 5xx other than 503 must be 0; status counts include retried requests; \
             4xx by problem type: {}",
            o.seconds,
            o.problems.iter().map(|(p, n)| format!("{p} ×{n}")).collect::<Vec<_>>().join(", ")
        ),
        metric: "count".into(),
        better: "lower".into(),
        x_axis: "seconds".into(),
        optimum: None,
        budget: None,
        methods,
    });
    for e in &out {
        if !e.name.starts_with("counts/") {
            plot_experiment(e, &args.out, &format!("soak_{}", e.name.replace('/', "_")), Band::MedianIqr)?;
        }
    }
    Ok(out)
}

fn print_table(outcomes: &[Outcome]) {
    println!("\nsoak: counts");
    println!(
        "  {:<9} {:>6} {:>9} {:>7} {:>5} {:>5} {:>5} {:>5} {:>8} {:>5} {:>8} {:>9} {:>8}",
        "backend",
        "secs",
        "ops",
        "acked",
        "lost",
        "dup",
        "dupid",
        "idmis",
        "5xx!503",
        "503",
        "conn_err",
        "restarts",
        "unresolv"
    );
    for o in outcomes {
        let a = &o.accounting;
        println!(
            "  {:<9} {:>6.0} {:>9} {:>7} {:>5} {:>5} {:>5} {:>5} {:>8} {:>5} {:>8} {:>9} {:>8}",
            o.backend,
            o.seconds,
            o.ops,
            a.acknowledged,
            a.lost.len(),
            a.duplicates.len(),
            a.duplicate_ids.len(),
            a.id_mismatches.len(),
            o.other_5xx(),
            o.count(|s| s == 503),
            o.conn_errors,
            o.restarts,
            o.unresolved
        );
    }
    for o in outcomes {
        let statuses: Vec<String> = o.statuses.iter().map(|(s, n)| format!("{s}: {n}")).collect();
        let problems: Vec<String> = o.problems.iter().map(|(p, n)| format!("{p}: {n}")).collect();
        println!(
            "  {} statuses {{{}}}; 4xx {{{}}}; conflict retries {}; idempotent replays {}; stored unacknowledged {}; \
             studies {}",
            o.backend,
            statuses.join(", "),
            problems.join(", "),
            o.conflict_retries,
            o.replays,
            o.accounting.unacknowledged,
            o.studies
        );
    }
    println!("\nsoak: latency over the whole run (answered requests), milliseconds");
    println!("  {:<9} {:<8} {:>8} {:>8} {:>8} {:>8} {:>8}", "backend", "op", "n", "p50", "p95", "p99", "max");
    for o in outcomes {
        for op in Op::ALL {
            let ms: Vec<f64> = o.samples.iter().filter(|s| s.op == op).map(|s| s.ms).collect();
            if ms.is_empty() {
                continue;
            }
            let max = ms.iter().copied().fold(f64::NAN, f64::max);
            println!(
                "  {:<9} {:<8} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                o.backend,
                op.name(),
                ms.len(),
                stats::quantile(&ms, 0.5),
                stats::quantile(&ms, 0.95),
                stats::quantile(&ms, 0.99),
                max
            );
        }
    }
    println!("\nsoak: server resident memory (VmRSS), MB");
    println!("  {:<9} {:>8} {:>8} {:>8} {:>8}", "backend", "first", "median", "max", "last");
    for o in outcomes {
        let mb: Vec<f64> = o.rss.iter().map(|r| r.1 as f64 / 1024.0).collect();
        if mb.is_empty() {
            continue;
        }
        println!(
            "  {:<9} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            o.backend,
            mb[0],
            stats::quantile(&mb, 0.5),
            mb.iter().copied().fold(f64::NAN, f64::max),
            mb[mb.len() - 1]
        );
    }
}

/// Runs the suite.
pub fn run(args: &Args) -> anyhow::Result<SuiteResult> {
    let protocol = Protocol::of(args.quick);
    let mut result = SuiteResult::new("soak", args.quick);
    let mut outcomes = Vec::new();
    for (i, backend) in BACKENDS.into_iter().enumerate() {
        if !args.selected(backend) {
            continue;
        }
        eprintln!(
            "[soak] {backend}: {} clients for {} s, kills every {}–{} s",
            CLIENTS,
            protocol.duration.as_secs(),
            protocol.kill_every.0,
            protocol.kill_every.1
        );
        let o = soak(backend, protocol, args.first_run + i as u64 + 1).with_context(|| format!("soak on {backend}"))?;
        result.experiments.extend(experiments(&o, protocol.window.as_secs_f64(), args)?);
        outcomes.push(o);
    }
    print_table(&outcomes);
    let failures: Vec<String> = outcomes.iter().flat_map(Outcome::failures).collect();
    if !failures.is_empty() {
        let path = args.out.join("soak.json");
        std::fs::write(&path, serde_json::to_string_pretty(&result)?)?;
        eprintln!("wrote {}", path.display());
        bail!("the soak found errors:\n  {}", failures.join("\n  "));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn accounting_finds_lost_duplicated_and_mismatched_observations() {
        let acked = pairs(&[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]);
        let stored: Vec<(Option<String>, String)> = vec![
            (Some("a".into()), "1".into()),
            (Some("b".into()), "2".into()),
            (Some("b".into()), "5".into()),
            (Some("d".into()), "9".into()),
            (Some("e".into()), "6".into()),
            (None, "7".into()),
            (None, "7".into()),
        ];
        let a = account(&acked, &stored);
        assert_eq!(a.acknowledged, 4);
        assert_eq!(a.stored, 7);
        assert_eq!(a.lost, vec!["c".to_string()]);
        assert_eq!(a.duplicates, vec!["b".to_string()]);
        assert_eq!(a.duplicate_ids, vec!["7".to_string()]);
        assert_eq!(a.id_mismatches, vec!["d".to_string()]);
        assert_eq!(a.unacknowledged, 1);
        let clean = account(&acked[..2], &stored[..2]);
        assert_eq!(clean, Accounting { acknowledged: 2, stored: 2, ..Default::default() });
    }

    #[test]
    fn windows_group_latencies_by_operation_and_time() {
        let s = |t, op, ms| Sample { t, op, ms };
        let samples = [
            s(0.1, Op::Best, 1.0),
            s(4.9, Op::Best, 3.0),
            s(5.0, Op::Best, 10.0),
            s(12.0, Op::Tell, 2.0),
            s(1.0, Op::Tell, 4.0),
        ];
        let w = windows(&samples, 5.0);
        let best = &w[&Op::Best];
        assert_eq!(best.len(), 2);
        assert_eq!((best[0].0, best[0].2), (5.0, 2));
        assert_eq!(best[0].1[0], stats::quantile(&[1.0, 3.0], 0.5));
        assert_eq!((best[1].0, best[1].1, best[1].2), (10.0, [10.0; 3], 1));
        let tell: Vec<f64> = w[&Op::Tell].iter().map(|r| r.0).collect();
        assert_eq!(tell, vec![5.0, 15.0]);
    }
}
