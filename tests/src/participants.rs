//! What the participant tests share: the task extension's key and media types, a scripted
//! model that logs every request it is sent, and calls made as a participant (the
//! `X-Participant-Id` header).

use std::path::PathBuf;

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::{default_headers, send_params, unique, Backend, Server};

/// Where a task carries the task extension's data (participants, goal, links).
pub const TASK_KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";
/// The media type of a channel data part (`help_request`, `help_reply`).
pub const CHANNEL_MEDIA_TYPE: &str = "application/vnd.tiny-harness.channel+json";
/// The media type of the data part that carries a task envelope.
pub const EVENT_MEDIA_TYPE: &str = "application/vnd.tiny-harness.event+json";
/// The harness's own participant id (the assignee of the tasks its agent runs).
pub const AGENT_ID: &str = "tiny-harness";

// ------------------------------------------------------------------ scripted model

/// A scripted model's script file and the log of the requests it was sent (both removed
/// at drop). One script serves every task of a server: the n-th model call of a task
/// gets the n-th turn.
pub struct Script {
    path: PathBuf,
    log: PathBuf,
    calls: Option<PathBuf>,
}

impl Script {
    /// A script of `turns`, logging to a fresh request log.
    pub fn new(turns: Value) -> Script {
        Script::write(turns, false)
    }

    /// A script of `turns` that also keeps a call log: one `turn <n>` line per model call,
    /// written when the call starts (before any `delay_ms`), kept across restarts.
    pub fn with_call_log(turns: Value) -> Script {
        Script::write(turns, true)
    }

    fn write(turns: Value, call_log: bool) -> Script {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("{}.json", unique("harness-script")));
        let log = dir.join(format!("{}.jsonl", unique("harness-requests")));
        let calls = call_log.then(|| dir.join(format!("{}.log", unique("harness-calls"))));
        let mut script = json!({"turns": turns, "request_log": log});
        if let Some(calls) = &calls {
            script["call_log"] = json!(calls);
        }
        std::fs::write(&path, script.to_string()).expect("write the model script");
        Script { path, log, calls }
    }

    /// The raw call log (empty before the first call; panics without one).
    pub fn call_log_text(&self) -> String {
        let calls = self.calls.as_ref().expect("a script made with_call_log");
        std::fs::read_to_string(calls).unwrap_or_default()
    }

    /// How many calls the call log shows for turn `n` (of any task).
    pub fn calls_of_turn(&self, n: u64) -> usize {
        let n = n.to_string();
        self.call_log_text()
            .lines()
            .filter(|l| {
                let mut words = l.split_whitespace();
                words.next() == Some("turn") && words.next() == Some(n.as_str())
            })
            .count()
    }

    /// The calls the call log shows (turns and summaries), without their ends.
    pub fn call_lines(&self) -> Vec<String> {
        (self.call_log_text().lines())
            .filter(|l| l.starts_with("turn ") || l.starts_with("summary "))
            .map(str::to_owned)
            .collect()
    }

    /// `--model` for this script.
    pub fn model(&self) -> String {
        format!("scripted:{}", self.path.display())
    }

    /// The raw request log (empty before the first call).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Every request the model was sent, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.log_text()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("a request log line is JSON"))
            .collect()
    }

    /// The requests for turn `n` (of any task).
    pub fn requests_for_turn(&self, n: u64) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["turn"].as_u64() == Some(n))
            .collect()
    }

    /// The requests made for the task named `name` (its task section or, for a
    /// `help.decided` call, its task text names it).
    pub fn requests_of(&self, name: &str) -> Vec<Value> {
        let needle = format!("name: {name}\n");
        self.requests()
            .into_iter()
            .filter(|r| {
                r["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| m["text"].as_str().is_some_and(|t| t.contains(&needle)))
            })
            .collect()
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(&self.log);
        if let Some(calls) = &self.calls {
            let _ = std::fs::remove_file(calls);
        }
    }
}

/// A server whose LLM agent runs on `script`; None when `backend` is not configured.
pub async fn llm_server(backend: Backend, script: &Script) -> Option<Server> {
    let model = script.model();
    Server::start_on(backend, &["--agent", "llm", "--model", &model]).await
}

// ------------------------------------------------------------ requests as someone

/// The 1.0 headers, plus `X-Participant-Id: who` when given (None: the request names no
/// one, and the server's default participant, if any, stands for it).
pub fn headers_as(who: Option<&str>) -> HeaderMap {
    let mut h = default_headers();
    if let Some(who) = who {
        h.insert("x-participant-id", who.parse().expect("header value"));
    }
    h
}

/// A JSON-RPC call with request id `rpc_id` as `who`; the HTTP status and the raw body.
pub async fn rpc_raw_as(
    s: &Server,
    who: Option<&str>,
    rpc_id: &str,
    method: &str,
    params: Value,
) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params});
    let resp = s.rpc_raw(&headers_as(who), body.to_string()).await;
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("JSON-RPC body"))
}

/// A JSON-RPC call as `who` that must answer HTTP 200; the whole envelope.
pub async fn rpc_as(s: &Server, who: Option<&str>, method: &str, params: Value) -> Value {
    let (status, text) = rpc_raw_as(s, who, &unique("req"), method, params).await;
    assert_eq!(
        status, 200,
        "JSON-RPC {method} as {who:?}: HTTP {status}: {text}"
    );
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{method} answer is not JSON ({e}): {text}"))
}

/// The result of a JSON-RPC call as `who` that must succeed.
pub async fn rpc_ok_as(s: &Server, who: Option<&str>, method: &str, params: Value) -> Value {
    let resp = rpc_as(s, who, method, params.clone()).await;
    assert!(
        resp.get("error").is_none(),
        "{method} {params} as {who:?} failed: {resp}"
    );
    resp["result"].clone()
}

/// A blocking SendMessage as `who` that must succeed; the Task of the answer.
pub async fn send_as(s: &Server, who: Option<&str>, message: Value) -> Value {
    let result = rpc_ok_as(s, who, "SendMessage", send_params(message)).await;
    result
        .get("task")
        .cloned()
        .unwrap_or_else(|| panic!("SendMessage as {who:?} answered no task: {result}"))
}

/// GetTask as `who` (with the whole history) that must succeed.
pub async fn get_task_as(s: &Server, who: &str, id: &str) -> Value {
    rpc_ok_as(
        s,
        Some(who),
        "GetTask",
        json!({"id": id, "historyLength": 100}),
    )
    .await
}

/// Polls GetTask as `who` until the task is in `want`; returns it.
pub async fn wait_for_state_as(
    s: &Server,
    who: &str,
    id: &str,
    want: &str,
    within: std::time::Duration,
) -> Value {
    let deadline = std::time::Instant::now() + within;
    loop {
        let task = get_task_as(s, who, id).await;
        if crate::state(&task) == want {
            return task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "task {id} not in {want} within {within:?}: {task}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

// ------------------------------------------------------------------ task extension

/// The task extension's data of a task.
pub fn task_ext(task: &Value) -> &Value {
    &task["metadata"][TASK_KEY]
}

/// The task's participants, as its task extension lists them.
pub fn participants(task: &Value) -> &Value {
    &task_ext(task)["participants"]
}

/// A participant as a task envelope or the task extension gives it.
pub fn participant(id: &str, kind: &str, role: &str) -> Value {
    json!({"id": id, "kind": kind, "role": role})
}

/// The data part of a message that carries a task envelope (name, goal, participants).
pub fn task_envelope_part(name: &str, goal: &str, participants: Value) -> Value {
    json!({
        "mediaType": EVENT_MEDIA_TYPE,
        "data": {"kind": "task", "payload": {
            "name": name, "goal": goal, "participants": participants
        }}
    })
}
