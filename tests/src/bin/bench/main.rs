//! The benchmark: `harness-local` (embedded store, conformance agent) against the three
//! official A2A SDK servers, each with an agent that completes every task at once and its
//! SDK's in-memory task store: Python (`a2a-sdk` 1.3.0, `tests/bench/reference_server.py`),
//! Rust (`a2a-server-lf` 0.5.3 on axum, `tests/bench/peer-rs`) and JS (`@a2a-js/sdk` 1.3.0
//! on express, `tests/bench/peer-js`), started one at a time on loopback and driven with
//! the same load by the same client. Run it through `tests/bench/run`, which builds and
//! installs what it needs and passes the paths:
//!
//! ```text
//! bench --ours <harness-local>
//!       --python <venv python> --reference <reference_server.py>
//!       --peer-rs <bench-peer-rs> --node <node> --peer-js <server.mjs>
//!       [--rounds <n>] [--growth <tasks>] [--scale <factor>] [--only ours]
//!       [--cold-starts <dir>] [--functions <dir> <name>...]
//! ```
//!
//! It prints Markdown: per scenario and server the throughput and p50/p99 latency, each
//! the median of `--rounds` rounds (every round starts every server afresh), with the
//! ratios harness-local/peer (and, as the floor every scenario stands on, a GET of the
//! static agent card), harness-local also with `--fsync-commits`; each server's start-up
//! time (exec to the first answered agent-card request, median of several starts) and RSS
//! after the load (VmRSS; and the peak, VmHWM); the RSS of a fresh server of each kind
//! while `--growth` tasks are created in it (`--growth 0` skips that); and the size of
//! each Lambda function binary and, given `--cold-starts` (a directory of the functions
//! built for this machine) and DynamoDB Local (`HARNESS_TEST_DYNAMODB_ENDPOINT`,
//! `HARNESS_TEST_TABLE_DEFINITION`), each one's cold start ([`cold_start`]). Not a test: it passes or fails nothing. `--only ours`
//! leaves the peers out (profiling our side; no ratios).
//!
//! The load client shares the cores with the server it measures, so it is kept as lean
//! as a load generator (wrk): one thread, a bare hyper HTTP/1.1 keep-alive connection per
//! worker, bodies serialised ahead or by `format!`, answers checked through small typed
//! structs (a wrong answer still panics, with the URL and the body).

use std::borrow::Cow;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use harness_e2e::proc_status;
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::TcpStream;

mod cold_start;

/// Starts of each server timed for the start-up median.
const STARTS: usize = 7;
/// Requests sent before each measured run (connections, caches, the JIT-less warm-up).
const WARM_UP: usize = 50;
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Rounds of the whole load, per server; each figure reported is their median.
const ROUNDS: usize = 3;
/// Tasks created in a fresh server of each kind for its RSS growth (times `--scale`).
const GROWTH_TASKS: usize = 200_000;
/// The growth run's concurrency, and how many times its RSS is read along the way.
const GROWTH_CONCURRENCY: usize = 32;
const GROWTH_STEPS: usize = 4;

struct Args {
    ours: PathBuf,
    /// The Python reference: the venv's interpreter and `reference_server.py`.
    python: Option<(PathBuf, PathBuf)>,
    /// The Rust peer's release binary.
    peer_rs: Option<PathBuf>,
    /// The JS peer: node and its `server.mjs` (beside its installed node_modules).
    peer_js: Option<(PathBuf, PathBuf)>,
    functions: Option<(PathBuf, Vec<String>)>,
    /// The functions built for this machine, to time their cold starts.
    cold_starts: Option<PathBuf>,
    scale: f64,
    rounds: usize,
    growth: usize,
    /// `--only ours`: skip the peers (profiling our side; no ratios).
    only_ours: bool,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut ours, mut python, mut reference, mut peer_rs, mut node, mut peer_js) =
        (None, None, None, None, None, None);
    let (mut functions, mut scale, mut rounds, mut growth, mut only_ours) =
        (None, 1.0, ROUNDS, GROWTH_TASKS, false);
    let mut cold_starts = None;
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--python" => python = Some(PathBuf::from(value()?)),
            "--reference" => reference = Some(PathBuf::from(value()?)),
            "--peer-rs" => peer_rs = Some(PathBuf::from(value()?)),
            "--node" => node = Some(PathBuf::from(value()?)),
            "--peer-js" => peer_js = Some(PathBuf::from(value()?)),
            "--scale" => scale = value()?.parse().map_err(|e| format!("--scale: {e}"))?,
            "--rounds" => rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--growth" => growth = value()?.parse().map_err(|e| format!("--growth: {e}"))?,
            "--only" => match value()?.as_str() {
                "ours" => only_ours = true,
                other => return Err(format!("--only {other}: expected ours")),
            },
            "--cold-starts" => cold_starts = Some(PathBuf::from(value()?)),
            "--functions" => {
                let dir = PathBuf::from(value()?);
                functions = Some((dir, it.by_ref().collect()));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let a = Args {
        ours: ours.ok_or("--ours is required")?,
        python: python.zip(reference),
        peer_rs,
        peer_js: node.zip(peer_js),
        functions,
        cold_starts,
        scale,
        rounds,
        growth,
        only_ours,
    };
    if !a.only_ours {
        a.python
            .as_ref()
            .ok_or("--python and --reference are required (or --only ours)")?;
        a.peer_rs
            .as_ref()
            .ok_or("--peer-rs is required (or --only ours)")?;
        a.peer_js
            .as_ref()
            .ok_or("--node and --peer-js are required (or --only ours)")?;
    }
    Ok(a)
}

// ------------------------------------------------------------------ the servers

#[derive(Clone, Copy, PartialEq)]
enum Which {
    Ours,
    /// harness-local with `--fsync-commits`: each commit survives a power loss.
    OursFsync,
    /// The official Python server (`reference_server.py`).
    Python,
    /// The official Rust server (`peer-rs`).
    PeerRs,
    /// The official JS server (`peer-js`).
    PeerJs,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Ours => "harness-local",
            Which::OursFsync => "harness-local --fsync-commits",
            Which::Python => "a2a-sdk 1.3.0 (Python)",
            Which::PeerRs => "a2a-server-lf 0.5.3 (Rust)",
            Which::PeerJs => "@a2a-js/sdk 1.3.0 (JS)",
        }
    }

    fn is_ours(self) -> bool {
        matches!(self, Which::Ours | Which::OursFsync)
    }
}

const PEERS: [Which; 3] = [Which::Python, Which::PeerRs, Which::PeerJs];

struct Server {
    child: Child,
    url: String,
    state: Option<PathBuf>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.state {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

fn spawn(which: Which, a: &Args) -> Server {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let missing = || -> ! { panic!("{}: not given (its paths are required)", which.name()) };
    let (mut cmd, state) = match which {
        Which::Ours | Which::OursFsync => {
            let state =
                std::env::temp_dir().join(format!("harness-bench-{port}-{}", std::process::id()));
            let mut cmd = Command::new(&a.ours);
            cmd.args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--agent",
                "conformance",
            ])
            .args([
                "--default-participant",
                "bench",
                "--rate-limit-per-minute",
                "0",
            ])
            .arg("--state-dir")
            .arg(&state)
            .env("RUST_LOG", "warn");
            if which == Which::OursFsync {
                cmd.arg("--fsync-commits");
            }
            (cmd, Some(state))
        }
        Which::Python => {
            let (python, reference) = a.python.as_ref().unwrap_or_else(|| missing());
            let mut cmd = Command::new(python);
            cmd.arg(reference).args(["--port", &port.to_string()]);
            (cmd, None)
        }
        Which::PeerRs => {
            let mut cmd = Command::new(a.peer_rs.as_ref().unwrap_or_else(|| missing()));
            cmd.args(["--port", &port.to_string()]);
            (cmd, None)
        }
        Which::PeerJs => {
            let (node, server) = a.peer_js.as_ref().unwrap_or_else(|| missing());
            let mut cmd = Command::new(node);
            cmd.arg(server)
                .args(["--port", &port.to_string()])
                .env("NODE_ENV", "production");
            (cmd, None)
        }
    };
    // The server dies with the bench, however the bench ends (a wrong answer aborts it,
    // Ctrl-C kills it): no server is left holding a port or the cores.
    // SAFETY: prctl is async-signal-safe and touches nothing of the parent's.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", which.name()));
    Server { child, url, state }
}

/// Polls the agent card until it answers 200; how long that took since `from`.
async fn card_answered(client: &reqwest::Client, url: &str, from: Instant) -> Duration {
    let card = format!("{url}/.well-known/agent-card.json");
    loop {
        if let Ok(r) = client.get(&card).send().await {
            if r.status().is_success() && r.bytes().await.is_ok() {
                return from.elapsed();
            }
        }
        assert!(
            from.elapsed() < START_TIMEOUT,
            "{url} did not answer its card"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

async fn start(which: Which, a: &Args, client: &reqwest::Client) -> (Server, Duration) {
    let t0 = Instant::now();
    let server = spawn(which, a);
    let took = card_answered(client, &server.url, t0).await;
    (server, took)
}

// ------------------------------------------------------------------ the load

#[derive(Clone, Copy, PartialEq)]
enum Scenario {
    /// GET of the agent card: no store, no agent, no JSON parsed. Not one of the issue's
    /// scenarios: the floor that the HTTP stack and the loopback round trip set for every
    /// other scenario on this machine.
    Card,
    /// Blocking SendMessage (JSON-RPC) of a task that completes at once.
    Send,
    /// GetTask (JSON-RPC) of a completed task.
    Get,
    /// SendStreamingMessage (JSON-RPC): the whole SSE stream, to its end.
    Stream,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Card => "agent card (GET; the floor)",
            Scenario::Send => "SendMessage (blocking)",
            Scenario::Get => "GetTask",
            Scenario::Stream => "SendStreamingMessage",
        }
    }
}

/// A message id no server has seen: the `tck-complete-task` prefix makes the conformance
/// agent complete the task at once.
fn message_id() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    static PREFIX: OnceLock<String> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| format!("tck-complete-task-bench-{}-", std::process::id()));
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{n}")
}

/// The body of one request of the scenario, serialised without serde: GetTask's is the
/// same every time (`get` is built once), a message's differs only in its id.
fn body(scenario: Scenario, get: &Bytes) -> Bytes {
    let method = match scenario {
        Scenario::Card => return Bytes::new(),
        Scenario::Get => return get.clone(),
        Scenario::Send => "SendMessage",
        Scenario::Stream => "SendStreamingMessage",
    };
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"message":{{"messageId":"{}","role":"ROLE_USER","parts":[{{"text":"hello"}}]}}}}}}"#,
        message_id()
    ))
}

fn get_body(task_id: &str) -> Bytes {
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}});
    Bytes::from(rpc.to_string())
}

/// What a JSON-RPC answer is checked for; serde skips everything else without building it.
#[derive(Deserialize)]
struct Rpc<'a> {
    #[serde(borrow)]
    result: Option<RpcResult<'a>>,
    error: Option<IgnoredAny>,
}

/// `result` is a `{"task": Task}` (SendMessage) or a bare Task (GetTask).
#[derive(Deserialize)]
struct RpcResult<'a> {
    #[serde(borrow)]
    task: Option<TaskStatus<'a>>,
    #[serde(borrow)]
    status: Option<Status<'a>>,
}

#[derive(Deserialize)]
struct TaskStatus<'a> {
    #[serde(borrow)]
    status: Status<'a>,
}

#[derive(Deserialize)]
struct Status<'a> {
    #[serde(borrow)]
    state: Cow<'a, str>,
}

impl Rpc<'_> {
    fn completed(&self) -> bool {
        let status = self
            .result
            .as_ref()
            .and_then(|r| r.task.as_ref().map(|t| &t.status).or(r.status.as_ref()));
        self.error.is_none() && status.is_some_and(|s| s.state == "TASK_STATE_COMPLETED")
    }
}

/// The last `data:` line of an SSE stream.
fn last_data(stream: &[u8]) -> Option<&[u8]> {
    stream
        .rsplit(|&b| b == b'\n')
        .find(|line| line.starts_with(b"data:"))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// One keep-alive HTTP/1.1 connection to the server under test: what a load generator
/// (wrk) does per connection and no more. Reconnects when the server closed it.
struct Conn {
    url: Arc<str>,
    /// `127.0.0.1:port`: where to connect and the `Host` header.
    addr: Arc<str>,
    host: HeaderValue,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Conn {
    fn new(url: &str) -> Conn {
        let addr = url.strip_prefix("http://").expect("an http:// URL");
        Conn {
            url: url.into(),
            addr: addr.into(),
            host: HeaderValue::from_str(addr).expect("a Host header"),
            sender: None,
        }
    }

    async fn connect(&self) -> SendRequest<Full<Bytes>> {
        let tcp = TcpStream::connect(&*self.addr)
            .await
            .unwrap_or_else(|e| panic!("{}: cannot connect: {e}", self.url));
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let (sender, conn) = http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap_or_else(|e| panic!("{}: HTTP handshake: {e}", self.url));
        tokio::spawn(async move {
            // Ends when the server closes the connection or the sender is dropped; a
            // request in flight then fails and says why.
            let _ = conn.await;
        });
        sender
    }

    /// The sender, ready for a request: the open connection, else a new one.
    async fn ready(&mut self) -> &mut SendRequest<Full<Bytes>> {
        for _ in 0..3 {
            let usable = match &mut self.sender {
                Some(s) => !s.is_closed() && s.ready().await.is_ok(),
                None => false,
            };
            if usable {
                return self.sender.as_mut().expect("a sender");
            }
            self.sender = Some(self.connect().await);
        }
        panic!("{}: no usable connection", self.url)
    }

    /// The scenario's request: a JSON-RPC POST to `/` of `body`, or the card's GET.
    fn request(&self, scenario: Scenario, body: Bytes) -> Request<Full<Bytes>> {
        let len = HeaderValue::from(body.len());
        let mut req = Request::new(Full::new(body));
        let h = req.headers_mut();
        h.insert(HOST, self.host.clone());
        if let Scenario::Card = scenario {
            *req.uri_mut() = Uri::from_static("/.well-known/agent-card.json");
            return req;
        }
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(
            HeaderName::from_static("a2a-version"),
            HeaderValue::from_static("1.0"),
        );
        h.insert(CONTENT_LENGTH, len);
        *req.method_mut() = Method::POST;
        *req.uri_mut() = Uri::from_static("/");
        req
    }

    /// Sends the scenario's request and reads the whole answer. A request the connection
    /// never sent (the server had closed it) is sent again on a new one; any other
    /// failure panics.
    async fn send(&mut self, scenario: Scenario, body: Bytes) -> (StatusCode, Bytes) {
        let mut req = self.request(scenario, body);
        let mut retried = false;
        let resp = loop {
            match self.ready().await.try_send_request(req).await {
                Ok(resp) => break resp,
                Err(mut e) => match e.take_message() {
                    Some(unsent) if !retried => {
                        retried = true;
                        self.sender = None;
                        req = unsent;
                    }
                    _ => panic!("{}: request failed: {}", self.url, e.into_error()),
                },
            }
        };
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{}: HTTP {status}, body unread: {e}", self.url))
            .to_bytes();
        (status, body)
    }
}

/// One request of the scenario; panics on a wrong answer, so a fast error never passes
/// for a fast answer.
async fn one(conn: &mut Conn, scenario: Scenario, get: &Bytes) {
    let (status, body) = conn.send(scenario, body(scenario, get)).await;
    let wrong = |why: &str| -> ! {
        panic!(
            "{}: {why}: HTTP {status}: {}",
            conn.url,
            String::from_utf8_lossy(&body)
        )
    };
    if !status.is_success() {
        wrong("not 2xx");
    }
    match scenario {
        Scenario::Card => {
            if !contains(&body, b"\"supportedInterfaces\"") {
                wrong("not an agent card");
            }
        }
        Scenario::Stream => {
            if !last_data(&body).is_some_and(|d| contains(d, b"TASK_STATE_COMPLETED")) {
                wrong("the stream did not end with the task completed");
            }
        }
        Scenario::Send | Scenario::Get => match serde_json::from_slice::<Rpc>(&body) {
            Ok(rpc) if rpc.completed() => {}
            Ok(rpc) if rpc.error.is_some() => wrong("a JSON-RPC error"),
            Ok(_) => wrong("the task is not completed"),
            Err(e) => wrong(&format!("not a JSON-RPC answer ({e})")),
        },
    }
}

struct Measured {
    throughput: f64,
    p50: Duration,
    p99: Duration,
}

async fn load(
    url: &str,
    scenario: Scenario,
    concurrency: usize,
    requests: usize,
    task_id: &str,
) -> Measured {
    let get = get_body(task_id);
    // Every worker's connection open and warm before the clock starts.
    let mut conns: Vec<Conn> = (0..concurrency).map(|_| Conn::new(url)).collect();
    for i in 0..WARM_UP.max(concurrency) {
        one(&mut conns[i % concurrency], scenario, &get).await;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let workers: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let (next, get) = (next.clone(), get.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(requests / concurrency + 1);
                while next.fetch_add(1, Ordering::Relaxed) < requests {
                    let t = Instant::now();
                    one(&mut conn, scenario, &get).await;
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = futures::future::join_all(workers)
        .await
        .into_iter()
        .flat_map(|r| r.expect("a worker finished"))
        .collect();
    let wall = t0.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Measured {
        throughput: latencies.len() as f64 / wall.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

async fn completed_task(url: &str) -> String {
    let client = common::https::client_builder().build().expect("a client");
    let v: Value = client
        .post(format!("{url}/"))
        .header("A2A-Version", "1.0")
        .header("Content-Type", "application/json")
        .body(body(Scenario::Send, &Bytes::new()))
        .send()
        .await
        .expect("answered")
        .json()
        .await
        .expect("JSON");
    v["result"]["task"]["id"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

// ------------------------------------------------------------------ the report

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// The median (of an even count, the mean of the two middle values).
fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "a median of nothing");
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A throughput ratio ours/peer: `7.1×`, or `0.31×` where the peer is ahead.
fn times(ratio: f64) -> String {
    if ratio >= 1.0 {
        format!("{ratio:.1}×")
    } else {
        format!("{ratio:.2}×")
    }
}

/// A time ratio ours/peer: `0.0110 (1/91)`, or `1.62 (1.6×)` where ours takes longer.
fn fraction(ratio: f64) -> String {
    if ratio < 1.0 {
        format!("{ratio:.4} (1/{:.0})", 1.0 / ratio)
    } else {
        format!("{ratio:.2} ({ratio:.1}×)")
    }
}

const LOADS: [(usize, usize); 2] = [(1, 1000), (32, 4000)];
const SCENARIOS: [Scenario; 4] = [
    Scenario::Send,
    Scenario::Get,
    Scenario::Stream,
    Scenario::Card,
];

/// One scenario at one concurrency on one server in one round.
struct Sample {
    which: Which,
    scenario: Scenario,
    concurrency: usize,
    m: Measured,
}

/// One server's resident memory at the end of one round's load.
struct Memory {
    which: Which,
    rss: u64,
    peak: u64,
}

/// A scenario's figures on one server: the median of each over the rounds.
struct Figures {
    throughput: f64,
    p50: f64,
    p99: f64,
}

fn figures(samples: &[Sample], which: Which, scenario: Scenario, c: usize) -> Option<Figures> {
    let mine: Vec<&Measured> = samples
        .iter()
        .filter(|s| s.which == which && s.scenario == scenario && s.concurrency == c)
        .map(|s| &s.m)
        .collect();
    if mine.is_empty() {
        return None;
    }
    Some(Figures {
        throughput: median(mine.iter().map(|m| m.throughput).collect()),
        p50: median(mine.iter().map(|m| secs(m.p50)).collect()),
        p99: median(mine.iter().map(|m| secs(m.p99)).collect()),
    })
}

/// A fresh server's RSS while `tasks` tasks are created in it (blocking SendMessage at
/// concurrency 32), read after its first answer and after each of `GROWTH_STEPS` steps;
/// at the end, what the RSS is made of, and the size of the state on disk (ours).
struct Growth {
    which: Which,
    fresh: u64,
    steps: Vec<u64>,
    /// RssAnon (the heap, the stacks) and RssFile (mapped files: the binary, the libraries,
    /// and for the embedded store SQLite's write-ahead-log index).
    anon: u64,
    file: u64,
    disk: Option<u64>,
    took: Duration,
}

/// The bytes of the files under `dir`.
fn du(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => du(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

async fn growth(which: Which, a: &Args, client: &reqwest::Client, tasks: usize) -> Growth {
    let (server, _) = start(which, a, client).await;
    let pid = server.child.id();
    completed_task(&server.url).await;
    let fresh = proc_status(pid, "VmRSS");
    let step = tasks.div_ceil(GROWTH_STEPS);
    let mut steps = Vec::new();
    let t0 = Instant::now();
    for i in 1..=GROWTH_STEPS {
        eprintln!("bench: growth {} {}/{tasks} tasks", which.name(), step * i);
        load(&server.url, Scenario::Send, GROWTH_CONCURRENCY, step, "").await;
        steps.push(proc_status(pid, "VmRSS"));
    }
    let took = t0.elapsed();
    Growth {
        which,
        fresh,
        steps,
        anon: proc_status(pid, "RssAnon"),
        file: proc_status(pid, "RssFile"),
        disk: server.state.as_deref().map(du),
        took,
    }
}

/// The growth table: each server's RSS after each step of `step` tasks.
fn growth_table(grown: &[Growth], step: usize) {
    println!();
    print!(
        "| server, {} tasks created | RSS fresh (MiB) |",
        step * GROWTH_STEPS
    );
    for i in 1..=GROWTH_STEPS {
        print!(" after {} (MiB) |", step * i);
    }
    println!(
        " growth after the first {step} (bytes/task) | at the end: anonymous (MiB) \
         | file-backed (MiB) | state on disk (MiB) | tasks/s |"
    );
    println!(
        "|---|---|{}---|---|---|---|---|",
        "---|".repeat(GROWTH_STEPS)
    );
    for g in grown {
        print!("| {} | {} |", g.which.name(), mib(g.fresh));
        for rss in &g.steps {
            print!(" {} |", mib(*rss));
        }
        let (first, last) = (g.steps[0], g.steps[GROWTH_STEPS - 1]);
        let per_task = (last as f64 - first as f64) / (step * (GROWTH_STEPS - 1)).max(1) as f64;
        println!(
            " {per_task:.0} | {} | {} | {} | {:.0} |",
            mib(g.anon),
            mib(g.file),
            g.disk.map_or_else(|| "(in memory)".to_owned(), mib),
            (step * GROWTH_STEPS) as f64 / secs(g.took)
        );
    }
}

/// One worker thread: the client (its 32 workers are tasks on it) takes at most one of
/// the cores it shares with the server under test.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let client = common::https::client_builder().build().expect("a client");
    let peers: &[Which] = if a.only_ours { &[] } else { &PEERS };
    // Start-up and growth: harness-local as it runs by default, and each peer.
    let servers: Vec<Which> = std::iter::once(Which::Ours)
        .chain(peers.iter().copied())
        .collect();
    // The load: harness-local also with --fsync-commits.
    let loaded: Vec<Which> = [Which::Ours, Which::OursFsync]
        .into_iter()
        .chain(peers.iter().copied())
        .collect();

    // Start-up: exec to the first answered card, each server on its own, several times.
    let mut startup = Vec::new();
    for &which in &servers {
        eprintln!("bench: start-up {}", which.name());
        let mut times = Vec::new();
        for _ in 0..STARTS {
            let (server, took) = start(which, &a, &client).await;
            times.push(secs(took));
            drop(server);
        }
        startup.push((which, Duration::from_secs_f64(median(times))));
    }

    // Load: in each round every server afresh, one at a time, driven by the same client.
    let mut samples = Vec::new();
    let mut memory = Vec::new();
    for round in 1..=a.rounds {
        for &which in &loaded {
            let (server, _) = start(which, &a, &client).await;
            let task_id = completed_task(&server.url).await;
            for scenario in SCENARIOS {
                for (concurrency, requests) in LOADS {
                    let requests = ((requests as f64) * a.scale).max(1.0) as usize;
                    eprintln!(
                        "bench: round {round}/{} {} {} c={concurrency} n={requests}",
                        a.rounds,
                        which.name(),
                        scenario.name()
                    );
                    let m = load(&server.url, scenario, concurrency, requests, &task_id).await;
                    samples.push(Sample {
                        which,
                        scenario,
                        concurrency,
                        m,
                    });
                }
            }
            let pid = server.child.id();
            memory.push(Memory {
                which,
                rss: proc_status(pid, "VmRSS"),
                peak: proc_status(pid, "VmHWM"),
            });
        }
    }

    // RSS growth: a fresh server of each kind, `growth` tasks created in it (none: skipped).
    let tasks = ((a.growth as f64) * a.scale).round() as usize;
    let step = tasks.div_ceil(GROWTH_STEPS);
    let mut grown = Vec::new();
    if step > 0 {
        for &which in &servers {
            grown.push(growth(which, &a, &client, step * GROWTH_STEPS).await);
        }
    }

    println!(
        "Each figure is the median of {} round{}; every round starts each server afresh.",
        a.rounds,
        if a.rounds == 1 { "" } else { "s" }
    );
    println!();
    println!(
        "| scenario | concurrency | requests | server | throughput (req/s) | p50 (ms) | p99 (ms) \
         | throughput ours/peer | p50 ours/peer | p99 ours/peer |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for scenario in SCENARIOS {
        for (c, n) in LOADS {
            let n = ((n as f64) * a.scale).max(1.0) as usize;
            let ours = figures(&samples, Which::Ours, scenario, c);
            for &which in &loaded {
                let Some(f) = figures(&samples, which, scenario, c) else {
                    continue;
                };
                let ratios = match (&ours, which.is_ours()) {
                    (Some(o), false) => format!(
                        "{} | {:.3} | {:.3}",
                        times(o.throughput / f.throughput),
                        o.p50 / f.p50,
                        o.p99 / f.p99
                    ),
                    _ => " | |".to_owned(),
                };
                println!(
                    "| {} | {c} | {n} | {} | {:.0} | {:.2} | {:.2} | {ratios} |",
                    scenario.name(),
                    which.name(),
                    f.throughput,
                    f.p50 * 1000.0,
                    f.p99 * 1000.0
                );
            }
        }
    }

    println!();
    println!(
        "| server | start-up, median of {STARTS} (ms) | RSS after the load (MiB) | peak RSS (MiB) \
         | start-up ours/peer | RSS after the load ours/peer |"
    );
    println!("|---|---|---|---|---|---|");
    let rss_of = |which: Which| -> (u64, u64) {
        let mine: Vec<&Memory> = memory.iter().filter(|m| m.which == which).collect();
        let rss = median(mine.iter().map(|m| m.rss as f64).collect());
        let peak = median(mine.iter().map(|m| m.peak as f64).collect());
        (rss as u64, peak as u64)
    };
    let up_of = |which: Which| startup.iter().find(|(w, _)| *w == which).map(|(_, d)| *d);
    let (ours_rss, _) = rss_of(Which::Ours);
    let ours_up = up_of(Which::Ours);
    for &which in &loaded {
        let (rss, peak) = rss_of(which);
        let up = up_of(which);
        let ratios = match (ours_up, up, which.is_ours()) {
            (Some(o), Some(p), false) => format!(
                "{} | {:.3}",
                fraction(secs(o) / secs(p)),
                ours_rss as f64 / rss.max(1) as f64
            ),
            _ => " |".to_owned(),
        };
        println!(
            "| {} | {} | {} | {} | {ratios} |",
            which.name(),
            up.map_or_else(|| "(the same binary)".to_owned(), ms),
            mib(rss),
            mib(peak)
        );
    }

    if !grown.is_empty() {
        growth_table(&grown, step);
    }

    if let Some((dir, names)) = &a.functions {
        let cold = match &a.cold_starts {
            Some(built) => cold_start::measure(built, names, &function_env().await, STARTS).await,
            None => Vec::new(),
        };
        println!();
        println!(
            "| Lambda function | its `sam build` artifact, arm64 (MB) | (MiB) \
             | cold start, x86_64, median of {STARTS} (ms) | its first answer |"
        );
        println!("|---|---|---|---|---|");
        for name in names {
            // <dir>/<name>/bootstrap (sam build, linked by binary; cargo lambda); cargo, <dir>/<name>.
            let mut path = Path::new(dir).join(name);
            if path.is_dir() {
                path.push("bootstrap");
            }
            let size = match std::fs::metadata(&path).map(|m| m.len()) {
                Ok(bytes) => format!("{:.2} | {}", bytes as f64 / 1e6, mib(bytes)),
                Err(e) => format!("not built ({e}) |"),
            };
            let start = match cold.iter().find(|(n, _)| n == name).map(|(_, c)| c) {
                Some(Ok((took, answer))) => format!("{} | {answer}", ms(*took)),
                Some(Err(why)) => format!("| {why}"),
                None => " |".to_owned(),
            };
            println!("| {name} | {size} | {start} |");
        }
    }
}

/// The environment the functions' cold starts run in: a fresh table on DynamoDB Local,
/// identity self-asserted (no JWKS to fetch), logs at `warn`.
async fn function_env() -> Vec<(String, String)> {
    let client = harness_e2e::dynamo_client()
        .expect("cold starts need DynamoDB Local (HARNESS_TEST_DYNAMODB_ENDPOINT)");
    let table = harness_e2e::fresh_table(&client).await;
    let endpoint = std::env::var("HARNESS_TEST_DYNAMODB_ENDPOINT").unwrap_or_default();
    [
        ("HARNESS_STORE", "dynamodb"),
        ("HARNESS_TABLE", table.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "bench"),
        ("AWS_SECRET_ACCESS_KEY", "bench"),
        ("HARNESS_AUTH", "none"),
        ("HARNESS_DEFAULT_PARTICIPANT", "bench"),
        (
            "HARNESS_PUSH_KEY",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        ),
        ("RUST_LOG", "warn"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}
