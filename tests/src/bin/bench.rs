//! The benchmark: `harness-local` (embedded store, conformance agent) against the official
//! Python A2A server (`a2a-sdk` 1.3.0, `tests/bench/reference_server.py`, an agent that
//! completes every task at once), started side by side on loopback and driven with the
//! same load by the same client. Run it through `tests/bench/run`, which builds what it
//! needs and passes the paths:
//!
//! ```text
//! bench --ours <harness-local> --python <venv python> --reference <reference_server.py>
//!       [--functions <release dir> <name>...] [--scale <factor>]
//! ```
//!
//! It prints Markdown: per server and scenario the throughput and p50/p99 latency, each
//! server's peak RSS (VmHWM) under the load, the start-up time (exec to the first answered
//! agent-card request, median of several starts), the ratios ours/reference, and the size
//! of each Lambda function binary. Not a test: it passes or fails nothing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

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
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut ours, mut python, mut reference, mut functions, mut scale) =
        (None, None, None, None, 1.0);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--python" => python = Some(PathBuf::from(value()?)),
            "--reference" => reference = Some(PathBuf::from(value()?)),
            "--scale" => scale = value()?.parse().map_err(|e| format!("--scale: {e}"))?,
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
            Scenario::Send => "SendMessage (blocking)",
            Scenario::Get => "GetTask",
            Scenario::Stream => "SendStreamingMessage",
        }
    }
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn message() -> Value {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    json!({"message": {"messageId": format!("tck-complete-task-bench-{}-{n}", std::process::id()),
        "role": "ROLE_USER", "parts": [{"text": "hello"}]}})
}

/// One request of the scenario; panics on a wrong answer, so a fast error never passes
/// for a fast answer.
async fn one(client: &reqwest::Client, url: &str, scenario: Scenario, task_id: &str) {
    let body = match scenario {
        Scenario::Send => rpc("SendMessage", message()),
        Scenario::Get => rpc("GetTask", json!({"id": task_id})),
        Scenario::Stream => rpc("SendStreamingMessage", message()),
    };
    let resp = client
        .post(format!("{url}/"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("the request is answered");
    assert!(resp.status().is_success(), "{url}: HTTP {}", resp.status());
    match scenario {
        Scenario::Stream => {
            let mut stream = resp.bytes_stream();
            let mut seen = Vec::new();
            while let Some(chunk) = stream.next().await {
                seen.extend_from_slice(&chunk.expect("the stream reads"));
            }
            let text = String::from_utf8_lossy(&seen);
            assert!(
                text.contains("TASK_STATE_COMPLETED"),
                "{url}: stream ended early: {text}"
            );
        }
        _ => {
            let v: Value = resp.json().await.expect("a JSON answer");
            let state = &v["result"]["task"]["status"]["state"];
            let state = if state.is_null() {
                &v["result"]["status"]["state"]
            } else {
                state
            };
            assert_eq!(state, "TASK_STATE_COMPLETED", "{url}: {v}");
        }
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
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("a client");
    for _ in 0..WARM_UP {
        one(&client, url, scenario, task_id).await;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let workers = (0..concurrency).map(|_| {
        let (client, next, url, task_id) = (
            client.clone(),
            next.clone(),
            url.to_owned(),
            task_id.to_owned(),
        );
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < requests {
                let t = Instant::now();
                one(&client, &url, scenario, &task_id).await;
                latencies.push(t.elapsed());
            }
            latencies
        })
    });
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
    let client = reqwest::Client::new();
    let v: Value = client
        .post(format!("{url}/"))
        .header("A2A-Version", "1.0")
        .json(&rpc("SendMessage", message()))
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
const SCENARIOS: [Scenario; 3] = [Scenario::Send, Scenario::Get, Scenario::Stream];

#[tokio::main]
async fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let client = reqwest::Client::new();

    // Start-up: exec to the first answered card, each server on its own, several times.
    let mut startup = Vec::new();
    for which in [Which::Ours, Which::Reference] {
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
    for which in [Which::Ours, Which::Reference] {
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
    let (ours_up, ref_up) = (startup[0].1, startup[1].1);
    let (ours_rss, ref_rss) = (rss[0].1, rss[1].1);
    println!(
        "| ours/reference | {:.4} (1/{:.0}) | {:.3} |",
        ours_up.as_secs_f64() / ref_up.as_secs_f64(),
        ref_up.as_secs_f64() / ours_up.as_secs_f64(),
        ours_rss as f64 / ref_rss.max(1) as f64
    );

    if let Some((dir, names)) = &a.functions {
        println!();
        println!("| Lambda function | stripped release binary (MiB) |");
        println!("|---|---|");
        for name in names {
            let size = std::fs::metadata(Path::new(dir).join(name)).map(|m| m.len());
            match size {
                Ok(bytes) => println!("| {name} | {} |", mib(bytes)),
                Err(e) => println!("| {name} | not built ({e}) |"),
            }
        }
    }
}
