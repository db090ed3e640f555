//! The memory bench (issue 48, item 2): how far one client's reads can push the RSS of
//! `harness-local` once tasks are as large as the harness lets them grow. Run it through
//! `tests/bench/memory` (which builds harness-local in the `local` profile), or by hand:
//!
//! ```text
//! bench_memory [--server <harness-local>] [--tasks 8] [--message-bytes 1000000]
//!              [--fill-bytes 41943040] [--rounds 5] [--concurrency 8] [--peak-bound-mib N]
//! ```
//!
//! One member (`alice`) opens `--tasks` tasks that wait on someone else (`bob` is their
//! assignee, so her messages are remarks the agent never answers) and fills each with
//! remarks of `--message-bytes` until the harness refuses one (its per-task bound) or the
//! task holds `--fill-bytes` (a harness without a bound). The server is then started
//! again on the same state, so its peak RSS (VmHWM, `/proc/<pid>/status`) is the reads'
//! alone: `--rounds` rounds of `--concurrency` GetTasks (one per task, no
//! `historyLength`) and as many ListTasks (no `historyLength`, the default page) at once.
//! It prints a Markdown table: the tasks' size, RSS before the reads and the peak during
//! them, the largest answer of each kind. With `--peak-bound-mib` it fails (exit 1) when
//! the peak passes that bound (the one `tests/bench/README.md` documents).

use std::path::PathBuf;
use std::time::Instant;

use harness_e2e::participants::{headers_as, participant, task_envelope_part};
use harness_e2e::{proc_status, send_params, unique, Backend, Server};
use serde_json::{json, Value};

struct Args {
    tasks: usize,
    message_bytes: usize,
    fill_bytes: usize,
    rounds: usize,
    concurrency: usize,
    peak_bound_mib: Option<u64>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        tasks: 8,
        message_bytes: 1_000_000,
        fill_bytes: 40 * 1024 * 1024,
        rounds: 5,
        concurrency: 8,
        peak_bound_mib: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            // The lib's `Server` starts `HARNESS_BIN`.
            "--server" => std::env::set_var("HARNESS_BIN", PathBuf::from(value()?)),
            "--tasks" => a.tasks = number(value()?)?,
            "--message-bytes" => a.message_bytes = number(value()?)?,
            "--fill-bytes" => a.fill_bytes = number(value()?)?,
            "--rounds" => a.rounds = number(value()?)?,
            "--concurrency" => a.concurrency = number(value()?)?,
            "--peak-bound-mib" => a.peak_bound_mib = Some(number(value()?)? as u64),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

const ALICE: &str = "alice";

/// A JSON-RPC call as alice: the HTTP body's length and the envelope.
async fn call(s: &Server, method: &str, params: Value) -> (usize, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let resp = s.rpc_raw(&headers_as(Some(ALICE)), body.to_string()).await;
    let status = resp.status();
    let bytes = resp.bytes().await.expect("answer body");
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{method}: HTTP {status}, not JSON ({e})"));
    (bytes.len(), value)
}

/// A task of alice's that waits on bob: her messages on it are remarks.
async fn open_task(s: &Server) -> String {
    let people = json!([
        participant(ALICE, "human", "reporter"),
        participant("bob", "human", "assignee")
    ]);
    let message = json!({
        "messageId": unique("open"),
        "role": "ROLE_USER",
        "parts": [{"text": "a task to fill"}, task_envelope_part("fill", "fill it", people)],
    });
    let (_, v) = call(s, "SendMessage", send_params(message)).await;
    v["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {v}"))
        .to_owned()
}

/// Remarks of `size` bytes on `task` until one is refused or `fill` bytes are sent; the
/// bytes sent and the refusal, if one came.
async fn fill(s: &Server, task: &str, size: usize, fill: usize) -> (usize, Option<String>) {
    let text = "x".repeat(size);
    let mut sent = 0;
    while sent < fill {
        let message = json!({
            "messageId": unique("remark"), "role": "ROLE_USER", "taskId": task,
            "parts": [{"text": text}],
        });
        let params = json!({"message": message, "configuration": {"historyLength": 0}});
        let (_, v) = call(s, "SendMessage", params).await;
        if let Some(e) = v.get("error") {
            return (sent, Some(format!("{} {}", e["code"], e["message"])));
        }
        sent += size;
    }
    (sent, None)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[tokio::main]
async fn main() {
    let a = args().unwrap_or_else(|e| {
        eprintln!("bench_memory: {e}");
        std::process::exit(2)
    });
    let mut s = Server::start_on_env(Backend::Embedded, &[], &[("RUST_LOG", "warn")])
        .await
        .expect("the embedded store");
    let mut tasks = Vec::new();
    let mut stored = 0;
    let mut refusal = None;
    let t0 = Instant::now();
    for _ in 0..a.tasks {
        let task = open_task(&s).await;
        let (sent, refused) = fill(&s, &task, a.message_bytes, a.fill_bytes).await;
        stored += sent;
        refusal = refusal.or(refused);
        tasks.push(task);
    }
    let filled = t0.elapsed();
    eprintln!(
        "filled {} tasks with {} in {filled:.1?}",
        a.tasks,
        mib(stored as u64)
    );

    // A fresh process on the same state: its peak is the reads' alone.
    s.restart().await;
    let pid = s.pid().expect("running");
    let (_, warm) = call(&s, "ListTasks", json!({"pageSize": 1, "historyLength": 0})).await;
    assert!(warm.get("result").is_some(), "{warm}");
    let before = proc_status(pid, "VmRSS");
    let (mut largest_get, mut largest_list) = (0, 0);
    let mut listed = 0;
    let t1 = Instant::now();
    for _ in 0..a.rounds {
        let gets = (0..a.concurrency).map(|i| {
            let id = tasks[i % tasks.len()].clone();
            let s = &s;
            async move { call(s, "GetTask", json!({"id": id})).await }
        });
        let lists = (0..a.concurrency).map(|_| call(&s, "ListTasks", json!({})));
        let (got, lists) = futures::future::join(
            futures::future::join_all(gets),
            futures::future::join_all(lists),
        )
        .await;
        for (len, v) in &got {
            assert!(v.get("result").is_some(), "GetTask: {v}");
            largest_get = largest_get.max(*len);
        }
        for (len, v) in &lists {
            let page = v["result"]["tasks"].as_array().map_or(0, Vec::len);
            assert!(v.get("result").is_some(), "ListTasks: {v}");
            listed = listed.max(page);
            largest_list = largest_list.max(*len);
        }
    }
    let read = t1.elapsed();
    let peak = proc_status(pid, "VmHWM");
    let after = proc_status(pid, "VmRSS");
    println!(
        "| tasks × stored | refused past | RSS before the reads | peak RSS (VmHWM) | RSS after | largest GetTask | largest ListTasks (tasks) | {} rounds of {} + {} |",
        a.rounds, a.concurrency, a.concurrency
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| {} × {} | {} | {} | {} | {} | {} | {} ({listed}) | {read:.1?} |",
        a.tasks,
        mib((stored / a.tasks.max(1)) as u64),
        refusal.as_deref().unwrap_or("nothing (no bound met)"),
        mib(before),
        mib(peak),
        mib(after),
        mib(largest_get as u64),
        mib(largest_list as u64),
    );
    if let Some(bound) = a.peak_bound_mib.filter(|b| peak > b * 1024 * 1024) {
        eprintln!(
            "bench_memory: the peak RSS {} passed the bound of {bound} MiB",
            mib(peak)
        );
        std::process::exit(1);
    }
}
