//! The benchmark: `harness-local` (embedded store, conformance agent) against the official
//! Python A2A server (`a2a-sdk` 1.3.0, `tests/bench/reference_server.py`, an agent that
//! completes every task at once), started side by side on loopback and driven with the
//! same load by the same client. Run it through `tests/bench/run`, which builds what it
//! needs and passes the paths:
//!
//! ```text
//! bench --ours <harness-local> --python <venv python> --reference <reference_server.py>
//!       [--functions <dir> <name>...] [--scale <factor>] [--only ours]
//! ```
//!
//! It prints Markdown: per server and scenario the throughput and p50/p99 latency (and,
//! as the floor every scenario stands on, a GET of the static agent card), each
//! server's peak RSS (VmHWM) under the load, the start-up time (exec to the first answered
//! agent-card request, median of several starts), the ratios ours/reference, and the size
//! of each Lambda function binary. Not a test: it passes or fails nothing.
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
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::TcpStream;

/// Starts of each server timed for the start-up median.
const STARTS: usize = 7;
/// Requests sent before each measured run (connections, caches, the JIT-less warm-up).
const WARM_UP: usize = 50;
const START_TIMEOUT: Duration = Duration::from_secs(60);

struct Args {
    ours: PathBuf,
    python: PathBuf,
    reference: PathBuf,
    functions: Option<(PathBuf, Vec<String>)>,
    scale: f64,
    /// `--only ours`: skip the reference (profiling our side; no ratios).
    only_ours: bool,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut ours, mut python, mut reference, mut functions, mut scale, mut only_ours) =
        (None, None, None, None, 1.0, false);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--python" => python = Some(PathBuf::from(value()?)),
            "--reference" => reference = Some(PathBuf::from(value()?)),
            "--scale" => scale = value()?.parse().map_err(|e| format!("--scale: {e}"))?,
            "--only" => match value()?.as_str() {
                "ours" => only_ours = true,
                other => return Err(format!("--only {other}: expected ours")),
            },
            "--functions" => {
                let dir = PathBuf::from(value()?);
                functions = Some((dir, it.by_ref().collect()));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        ours: ours.ok_or("--ours is required")?,
        python: python.ok_or("--python is required")?,
        reference: reference.ok_or("--reference is required")?,
        functions,
        scale,
        only_ours,
    })
}

// ------------------------------------------------------------------ the two servers

#[derive(Clone, Copy, PartialEq)]
enum Which {
    Ours,
    Reference,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Ours => "harness-local",
            Which::Reference => "a2a-sdk 1.3.0",
        }
    }
}

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
    let (mut cmd, state) = match which {
        Which::Ours => {
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
            (cmd, Some(state))
        }
        Which::Reference => {
            let mut cmd = Command::new(&a.python);
            cmd.arg(&a.reference).args(["--port", &port.to_string()]);
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

/// Peak resident set of a process so far (VmHWM), in bytes.
fn peak_rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

// ------------------------------------------------------------------ the load

#[derive(Clone, Copy)]
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

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

const LOADS: [(usize, usize); 2] = [(1, 1000), (32, 4000)];
const SCENARIOS: [Scenario; 4] = [
    Scenario::Send,
    Scenario::Get,
    Scenario::Stream,
    Scenario::Card,
];

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

    // Start-up: exec to the first answered card, each server on its own, several times.
    let servers: &[Which] = if a.only_ours {
        &[Which::Ours]
    } else {
        &[Which::Ours, Which::Reference]
    };
    let mut startup = Vec::new();
    for &which in servers {
        let mut times = Vec::new();
        for _ in 0..STARTS {
            let (server, took) = start(which, &a, &client).await;
            times.push(took);
            drop(server);
        }
        startup.push((which, median(times)));
    }

    // Load: both servers up at once, each driven in turn by the same client.
    let mut results = Vec::new();
    let mut rss = Vec::new();
    for &which in servers {
        let (server, _) = start(which, &a, &client).await;
        let task_id = completed_task(&server.url).await;
        for scenario in SCENARIOS {
            for (concurrency, requests) in LOADS {
                let requests = ((requests as f64) * a.scale).max(1.0) as usize;
                eprintln!(
                    "bench: {} {} c={concurrency} n={requests}",
                    which.name(),
                    scenario.name()
                );
                let m = load(&server.url, scenario, concurrency, requests, &task_id).await;
                results.push((which, scenario.name(), concurrency, requests, m));
            }
        }
        rss.push((which, peak_rss(server.child.id())));
    }

    println!(
        "| scenario | concurrency | requests | server | throughput (req/s) | p50 (ms) | p99 (ms) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (which, name, c, n, m) in &results {
        println!(
            "| {name} | {c} | {n} | {} | {:.0} | {} | {} |",
            which.name(),
            m.throughput,
            ms(m.p50),
            ms(m.p99)
        );
    }
    println!();
    println!("| scenario | concurrency | throughput ours/reference | p50 ours/reference | p99 ours/reference |");
    println!("|---|---|---|---|---|");
    for (which, name, c, _, m) in &results {
        if *which != Which::Ours {
            continue;
        }
        if let Some((_, _, _, _, r)) = results
            .iter()
            .find(|(w, n, rc, _, _)| *w == Which::Reference && n == name && rc == c)
        {
            println!(
                "| {name} | {c} | {:.1}× | {:.3} | {:.3} |",
                m.throughput / r.throughput,
                m.p50.as_secs_f64() / r.p50.as_secs_f64(),
                m.p99.as_secs_f64() / r.p99.as_secs_f64()
            );
        }
    }
    println!();
    println!("| server | start-up, median of {STARTS} (ms) | peak RSS under the load (MiB) |");
    println!("|---|---|---|");
    for ((which, up), (_, peak)) in startup.iter().zip(&rss) {
        println!("| {} | {} | {} |", which.name(), ms(*up), mib(*peak));
    }
    if let ([(_, ours_up), (_, ref_up)], [(_, ours_rss), (_, ref_rss)]) =
        (startup.as_slice(), rss.as_slice())
    {
        println!(
            "| ours/reference | {:.4} (1/{:.0}) | {:.3} |",
            ours_up.as_secs_f64() / ref_up.as_secs_f64(),
            ref_up.as_secs_f64() / ours_up.as_secs_f64(),
            *ours_rss as f64 / (*ref_rss).max(1) as f64
        );
    }

    if let Some((dir, names)) = &a.functions {
        println!();
        println!("| Lambda function | its `sam build` artifact, arm64 (MB) | (MiB) |");
        println!("|---|---|---|");
        for name in names {
            // <dir>/<name>/bootstrap (sam build, linked by binary; cargo lambda); cargo, <dir>/<name>.
            let mut path = Path::new(dir).join(name);
            if path.is_dir() {
                path.push("bootstrap");
            }
            match std::fs::metadata(&path).map(|m| m.len()) {
                Ok(bytes) => println!("| {name} | {:.2} | {} |", bytes as f64 / 1e6, mib(bytes)),
                Err(e) => println!("| {name} | not built ({e}) | |"),
            }
        }
    }
}
