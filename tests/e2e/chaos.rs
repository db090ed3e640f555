//! Issue 19, must-show 1: chaos. 100 tasks (30 on DynamoDB Local, see [`tasks`]) for the LLM agent on the scripted model (a tool
//! call, a question to alice, a sub-task for alice, an answer), two harness-local
//! processes on one store (one state directory; on DynamoDB Local, one table too), and a
//! killer that SIGKILLs one of them at a random moment and starts it again, 20 times.
//! alice (this test) sends the tasks and answers everything asked of her, through
//! whichever process answers, retrying a failed request with the same messageId.
//!
//! Then: every task and sub-task is COMPLETED; each message alice had accepted is in its
//! task's history exactly once; a model call is made again only after the process that
//! made it was killed (the scripted model's call log names each call's task, turn and
//! process), and no two processes' calls on one task overlap in time; and the lease trail
//! (the `harness::lease` log: which drive took, renewed and gave up the lease at which
//! version of the task) shows no drive writing a task after another drive took it.
//!
//! The seed is printed; `HARNESS_CHAOS_SEED=<seed>` runs the same kill schedule again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness_e2e::participants::{headers_as, Script};
use harness_e2e::{unique, Backend, Server};
use serde_json::{json, Value};

const KILLS: usize = 20;

/// How many tasks run through the chaos: 100, on either store. `HARNESS_CHAOS_TASKS` sets
/// another count (to reproduce or to measure). On DynamoDB Local this was 10 until
/// ListTasks read the caller's own listing partition: the test's participant lists her
/// waiting tasks all along, and each list then COUNTed and filtered the whole tenant,
/// which held DynamoDB Local's locks until its transactions timed out (over ten minutes
/// at 100 tasks). Now 100 tasks take about 75 s on two cores.
fn tasks() -> usize {
    std::env::var("HARNESS_CHAOS_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}
/// How long every task may take to finish once the killing is over.
const SETTLE: Duration = Duration::from_secs(240);
const COMPLETED: &str = "TASK_STATE_COMPLETED";

/// A small deterministic generator (xorshift64*), so a seed replays a kill schedule.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn seed() -> u64 {
    std::env::var("HARNESS_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        })
}

fn script() -> Script {
    let slow = |mut turn: Value| {
        turn["delay_ms"] = json!(150);
        turn
    };
    Script::with_call_log(json!([
        slow(json!({"tool_calls": [{"name": "current_time", "arguments": {}}]})),
        slow(
            json!({"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "alice", "question": "Which colour?"}}]})
        ),
        slow(
            json!({"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "alice", "name": "Measure", "goal": "Measure the shed"}}]})
        ),
        slow(json!({"text": "Painted."})),
    ]))
}

/// The processes' current URLs, kept up to date by the killer; alice's requests go to
/// either and retry on the other while one is down.
#[derive(Clone)]
struct Front {
    urls: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
    next: Arc<std::sync::atomic::AtomicUsize>,
}

impl Front {
    /// A JSON-RPC call as alice, retried (the same body, so the same messageId) until a
    /// process answers it; the JSON-RPC envelope.
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let body =
            json!({"jsonrpc": "2.0", "id": unique("req"), "method": method, "params": params});
        for _ in 0..600 {
            let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let url = {
                let urls = self.urls.lock().expect("urls");
                urls[i % urls.len()].clone()
            };
            let sent = self
                .http
                .post(format!("{url}/"))
                .headers(headers_as(Some("alice")))
                .body(body.to_string())
                .timeout(Duration::from_secs(20))
                .send()
                .await;
            if let Ok(resp) = sent {
                if resp.status().is_success() {
                    if let Ok(v) = resp.json::<Value>().await {
                        return v;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no process answered {method} {params}");
    }

    async fn ok(&self, method: &str, params: Value) -> Value {
        let resp = self.rpc(method, params.clone()).await;
        assert!(resp.get("error").is_none(), "{method} {params}: {resp}");
        resp["result"].clone()
    }

    /// alice's message `message_id` (on `task_id`, if given), returning at once.
    async fn send(&self, message_id: &str, task_id: Option<&str>, text: &str) -> Value {
        let mut message =
            json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]});
        if let Some(id) = task_id {
            message["taskId"] = json!(id);
        }
        self.ok(
            "SendMessage",
            json!({"message": message, "configuration": {"returnImmediately": true}}),
        )
        .await
    }

    /// Every task of alice's in `state`.
    async fn listed(&self, state: &str) -> Vec<Value> {
        let mut tasks = Vec::new();
        let mut token = String::new();
        loop {
            let page = self
                .ok(
                    "ListTasks",
                    json!({"status": state, "pageSize": 100, "pageToken": token, "historyLength": 0}),
                )
                .await;
            tasks.extend(page["tasks"].as_array().cloned().unwrap_or_default());
            token = page["nextPageToken"].as_str().unwrap_or("").to_owned();
            if token.is_empty() {
                return tasks;
            }
        }
    }
}

/// What the killer did: each kill's process id and the moment before its SIGKILL.
type Kills = Vec<(u32, i64)>;

async fn chaos(backend: Backend) {
    let seed = seed();
    let tasks = tasks();
    eprintln!("chaos on {backend:?}: {tasks} tasks, HARNESS_CHAOS_SEED={seed}");
    let mut rng = Rng(seed);
    let script = script();
    let model = script.model();
    let args = [
        "--agent",
        "llm",
        "--model",
        &model,
        "--lease-seconds",
        "2",
        "--log-format",
        "json",
    ];
    let env = [("RUST_LOG", "warn,harness::lease=debug")];
    let Some(a) = Server::start_on_env(backend, &args, &env).await else {
        return;
    };
    let b = a.twin().await;
    let store = a.store();
    let state_dir = a.state_dir.clone();
    let front = Front {
        urls: Arc::new(Mutex::new(vec![a.url.clone(), b.url.clone()])),
        http: common::https::client_builder()
            .pool_max_idle_per_host(0)
            .build()
            .expect("client"),
        next: Arc::default(),
    };

    // The killer: at random moments, one of the two is killed and started again, spread
    // over about the time the work takes (DynamoDB Local is slower than SQLite).
    let pace = match backend {
        Backend::Embedded => 1,
        Backend::DynamoDb => 6,
    };
    let schedule: Vec<(u64, usize)> = (0..KILLS)
        .map(|_| (pace * (200 + rng.below(900)), rng.below(2) as usize))
        .collect();
    let killer = tokio::spawn({
        let urls = front.urls.clone();
        async move {
            let mut servers = [a, b];
            let mut kills: Kills = Vec::new();
            for (pause, which) in schedule {
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let s = &mut servers[which];
                if let Some(pid) = s.pid() {
                    kills.push((pid, common::task::lease::now_ms()));
                }
                s.restart().await;
                urls.lock().expect("urls")[which] = s.url.clone();
            }
            (servers, kills)
        }
    });

    // alice sends the tasks (ten at a time) while the killing goes on...
    let mut parents = Vec::new();
    for chunk in (0..tasks).collect::<Vec<_>>().chunks(10) {
        let sends = chunk.iter().map(|i| {
            let front = front.clone();
            async move {
                let answer = front
                    .send(&format!("start-{i}"), None, &format!("Paint shed {i}"))
                    .await;
                answer["task"]["id"].as_str().expect("a task").to_owned()
            }
        });
        parents.extend(futures::future::join_all(sends).await);
    }
    let parents: HashSet<String> = parents.into_iter().collect();
    assert_eq!(parents.len(), tasks, "one task per message");

    // ...and answers what she is asked until every task is done.
    let deadline = Instant::now() + SETTLE + Duration::from_secs(30);
    let mut counted = Instant::now();
    loop {
        let round = Instant::now();
        let waiting = front.listed("TASK_STATE_INPUT_REQUIRED").await;
        let asked = waiting.len();
        for task in waiting {
            let id = task["id"].as_str().expect("id").to_owned();
            if parents.contains(&id) {
                front.send(&format!("help-{id}"), Some(&id), "Blue.").await;
            } else {
                front
                    .send(&format!("sub-{id}"), Some(&id), "3 by 4 metres.")
                    .await;
            }
        }
        if std::env::var_os("HARNESS_CHAOS_VERBOSE").is_some() {
            eprintln!("answered {asked} in {:?}", round.elapsed());
        }
        // Counted now and then: listing every finished task is the costliest request here.
        if counted.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        counted = Instant::now();
        let done = front.listed(COMPLETED).await.len();
        if done == 2 * tasks {
            break;
        }
        if Instant::now() > deadline {
            let mut stuck = Vec::new();
            for id in parents.iter().flat_map(|p| [p.clone(), format!("{p}.1")]) {
                match store.load_task(&id).await.expect("load") {
                    Some(r) if r.state() == common::a2a::TaskState::Completed => {}
                    Some(r) => stuck.push(format!(
                        "{id}: {:?} {:?} v{} lease {:?} wake {} owed {} calls {} help {:?}",
                        r.state(),
                        (r.task.status.as_ref())
                            .and_then(|s| s.message.as_ref())
                            .map(|m| format!("{:?}", m.parts)),
                        r.version,
                        r.lease,
                        r.wake,
                        r.parents_owed,
                        r.agent.model_calls,
                        r.agent.pending_help.is_some()
                    )),
                    None => stuck.push(format!("{id}: not there")),
                }
            }
            let listed: Vec<String> = (front.listed("TASK_STATE_INPUT_REQUIRED").await.iter())
                .map(|t| t["id"].to_string())
                .collect();
            stuck.push(format!("listed as waiting on alice: {listed:?}"));
            let log = std::fs::read_to_string(state_dir.join("server.log")).unwrap_or_default();
            let warnings: Vec<&str> = (log.lines())
                .filter(|l| l.contains("WARN") && !l.contains("auth none"))
                .collect();
            panic!(
                "{done} of {} tasks completed (seed {seed}):\n{}\n{}",
                2 * tasks,
                stuck.join("\n"),
                warnings.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (servers, kills) = killer.await.expect("the killer");
    assert_eq!(kills.len(), KILLS);

    // Each accepted message in its task's history exactly once.
    for id in &parents {
        let rec = store.load_task(id).await.expect("load").expect("task");
        assert_eq!(rec.state(), common::a2a::TaskState::Completed);
        let start = ids_from(&rec, "start-");
        assert_eq!(start.len(), 1, "{id}: {start:?}");
        assert_eq!(ids_from(&rec, "help-"), vec![format!("help-{id}")], "{id}");
        assert_eq!(rec.agent.model_calls, 4, "{id}: four committed turns");
        let child = format!("{id}.1");
        let sub = store
            .load_task(&child)
            .await
            .expect("load")
            .expect("sub-task");
        assert_eq!(sub.state(), common::a2a::TaskState::Completed);
        assert_eq!(ids_from(&sub, "sub-"), vec![format!("sub-{child}")]);
    }

    let killed: HashMap<u32, i64> = kills.iter().copied().collect();
    check_calls(&script, &parents, &killed, seed);
    let log = servers[0].log_text().unwrap_or_default();
    check_lease_trail(&log, seed);
    drop(servers);
}

/// The ids of the task's history messages that start with `prefix`.
fn ids_from(rec: &common::store::TaskRecord, prefix: &str) -> Vec<String> {
    (rec.task.history.iter())
        .filter(|m| m.message_id.starts_with(prefix))
        .map(|m| m.message_id.clone())
        .collect()
}

/// One model call from the call log: its process and when it started and ended (the
/// moment before its process's SIGKILL, if it never ended).
struct Call {
    pid: u32,
    start: i64,
    end: i64,
}

fn check_calls(script: &Script, parents: &HashSet<String>, killed: &HashMap<u32, i64>, seed: u64) {
    let mut calls: BTreeMap<(String, u64), Vec<Call>> = BTreeMap::new();
    let mut ends: HashMap<(String, u64, u32), Vec<i64>> = HashMap::new();
    let text = script.call_log_text();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [what, turn, task, pid, ms] = w[..] else {
            panic!("a call log line: {line:?}");
        };
        let (turn, pid, ms) = (
            turn.parse().expect("turn"),
            pid.parse().expect("pid"),
            ms.parse().expect("ms"),
        );
        match what {
            "turn" => calls
                .entry((task.to_owned(), turn))
                .or_default()
                .push(Call {
                    pid,
                    start: ms,
                    end: i64::MAX,
                }),
            "done" => ends
                .entry((task.to_owned(), turn, pid))
                .or_default()
                .push(ms),
            _ => panic!("no summaries here: {line:?}"),
        }
    }
    for ((task, turn), list) in &mut calls {
        for call in list.iter_mut() {
            let done = ends.get_mut(&(task.clone(), *turn, call.pid));
            call.end = match done.and_then(|d| (!d.is_empty()).then(|| d.remove(0))) {
                Some(end) => end,
                None => *killed.get(&call.pid).unwrap_or_else(|| {
                    panic!("{task} turn {turn}: a call that never ended in a process never killed (seed {seed})")
                }),
            }
            .max(call.start);
        }
    }
    let repeated: usize = calls.values().map(|l| l.len() - 1).sum();
    eprintln!(
        "{} model calls, {repeated} made again after a kill",
        calls.values().map(Vec::len).sum::<usize>()
    );
    for id in parents {
        for turn in 0..4 {
            let list = calls
                .get(&(id.clone(), turn))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            assert!(!list.is_empty(), "{id}: turn {turn} was never called");
            // A call is made again only when the process that made the one before died.
            for before in &list[..list.len() - 1] {
                assert!(
                    killed.contains_key(&before.pid),
                    "{id}: turn {turn} was called again though process {} lived (seed {seed})\n{text}",
                    before.pid
                );
            }
        }
        // No two processes' calls on one task at once.
        let mut all: Vec<&Call> = (0..4)
            .flat_map(|turn| calls.get(&(id.clone(), turn)).into_iter().flatten())
            .collect();
        all.sort_by_key(|c| c.start);
        for pair in all.windows(2) {
            assert!(
                pair[0].pid == pair[1].pid || pair[1].start >= pair[0].end,
                "{id}: process {} called while process {} was calling (seed {seed})",
                pair[1].pid,
                pair[0].pid
            );
        }
    }
}

/// The lease trail: per task, in the order of its versions, a drive renews or gives up
/// the lease only right after its own take or write; a write by another drive in between
/// means two drives at once.
fn check_lease_trail(log: &str, seed: u64) {
    let mut trail: BTreeMap<String, BTreeMap<u64, (String, String)>> = BTreeMap::new();
    let mut entries = 0;
    for line in log.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["target"] != "harness::lease" {
            continue;
        }
        let f = if v["fields"].is_object() {
            &v["fields"]
        } else {
            &v
        };
        let task = f["task_id"].as_str().expect("task_id").to_owned();
        let version = f["version"].as_u64().expect("version");
        let owner = f["owner"].as_str().expect("owner").to_owned();
        let what = f["message"].as_str().expect("message").to_owned();
        entries += 1;
        let before = trail
            .entry(task.clone())
            .or_default()
            .insert(version, (owner, what));
        // A take may be noted at the version of the request's write that took it for the
        // same drive; anything else at one version is two writers of it.
        if let Some((other, _)) = before {
            let now = &trail[&task][&version].0;
            assert_eq!(
                &other, now,
                "{task} v{version} written by two drives (seed {seed})"
            );
        }
    }
    assert!(entries > 0, "the lease trail is empty");
    let owners: HashSet<&String> = trail
        .values()
        .flat_map(|v| v.values().map(|(o, _)| o))
        .collect();
    let handed: usize = (trail.values())
        .map(|v| {
            let owners: Vec<&String> = v.values().map(|(o, _)| o).collect();
            owners.windows(2).filter(|w| w[0] != w[1]).count()
        })
        .sum();
    eprintln!(
        "lease trail: {entries} entries, {} owners, {handed} hand-overs between owners",
        owners.len()
    );
    for (task, versions) in &trail {
        let mut last: Option<&String> = None;
        for (version, (owner, what)) in versions {
            if what != "lease taken" {
                assert_eq!(
                    last,
                    Some(owner),
                    "{task} v{version}: {owner} wrote under its lease after another drive took it (seed {seed})"
                );
            }
            last = Some(owner);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_tasks_survive_twenty_kills_on_the_embedded_store() {
    chaos(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_tasks_survive_twenty_kills_on_dynamodb() {
    chaos(Backend::DynamoDb).await;
}
