//! Issue 48, item 2: one client cannot exhaust the harness's memory. A task holds at most
//! `HARNESS_TASK_MAX_MESSAGES` messages and `HARNESS_TASK_MAX_BYTES` bytes: a member's
//! message past either is refused with -32602 naming the bound, and nothing is stored
//! (the attack added 1 MiB messages to one task until it held 40 MB); an agent
//! whose write would pass them fails its task cleanly instead; a full task can still be
//! canceled. Answers hold at most the default history (20 messages) when the request
//! names no `historyLength`, and at most `RESPONSE_BYTES` (4 MiB) of history: GetTask
//! leaves the oldest out, ListTasks ends its page early and its `nextPageToken` goes on.
//! On both stores; the bounds are small here so the tests are quick.

use harness_e2e::participants::{participant, rpc_as, task_envelope_part};
use harness_e2e::*;
use serde_json::{json, Value};

on_both_stores!(
    a_member_cannot_grow_a_task_past_its_bounds,
    an_agent_write_past_the_bounds_fails_the_task_cleanly,
    answers_hold_the_default_history,
    answers_hold_at_most_the_byte_budget_of_history,
);

const ALICE: &str = "alice";

/// A task of alice's that waits on bob (its assignee): her messages on it are remarks,
/// each one more history message, which no agent answers. Its history holds her first
/// message; its status message asks bob for the goal.
async fn open_task(s: &Server) -> String {
    let people = json!([
        participant(ALICE, "human", "reporter"),
        participant("bob", "human", "assignee")
    ]);
    let message = json!({
        "messageId": unique("open"), "role": "ROLE_USER",
        "parts": [{"text": "Paint it"}, task_envelope_part("Paint", "Paint it", people)],
    });
    let v = rpc_as(s, Some(ALICE), "SendMessage", send_params(message)).await;
    task_id(&v["result"]["task"])
}

/// A remark of alice's on `id`: the whole JSON-RPC answer.
async fn remark(s: &Server, id: &str, message_id: &str, text: &str) -> Value {
    let message = json!({"messageId": message_id, "role": "ROLE_USER", "taskId": id,
                         "parts": [{"text": text}]});
    let params = json!({"message": message, "configuration": {"historyLength": 0}});
    rpc_as(s, Some(ALICE), "SendMessage", params).await
}

/// What a refusal must leave as it was: the task's version, its history and its events.
async fn footprint(s: &Server, id: &str) -> (u64, usize, usize) {
    let store = s.store();
    let rec = store.load_task(id).await.expect("load").expect("the task");
    let events = store.read_events(id, None, 10_000).await.expect("events");
    (rec.version, rec.task.history.len(), events.len())
}

/// Remarks of `text` until one is refused; how many were taken, and the refusal.
async fn fill(s: &Server, id: &str, text: &str, at_most: usize) -> (usize, Value) {
    for taken in 0..=at_most {
        let answer = remark(s, id, &unique("remark"), text).await;
        if answer.get("error").is_some() {
            return (taken, answer);
        }
    }
    panic!(
        "{at_most} remarks of {} bytes were all taken: the task has no bound",
        text.len()
    );
}

/// The attack, small: alice adds remarks to her task until it is full. Past the
/// byte bound (three 60 KB remarks in 200,000 bytes) and past the message bound (8: her
/// first message, the status message asking bob, and six remarks) every remark is
/// refused with -32602 naming the bound, and stores nothing: not the message (its id is
/// free), not a state change, not an event. The full task can still be canceled.
async fn a_member_cannot_grow_a_task_past_its_bounds(backend: Backend) {
    let bounds = [
        ("HARNESS_TASK_MAX_MESSAGES", "8"),
        ("HARNESS_TASK_MAX_BYTES", "200000"),
    ];
    let Some(s) = Server::start_on_env(backend, &[], &bounds).await else {
        return;
    };

    let big = open_task(&s).await;
    let (taken, refusal) = fill(&s, &big, &"x".repeat(60_000), 10).await;
    assert_eq!(taken, 3, "{refusal}");
    assert_rpc_error(&refusal, -32602, "INVALID_PARAMS");
    let text = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("200000 bytes") && text.contains("HARNESS_TASK_MAX_BYTES"),
        "the refusal names the bound: {text}"
    );
    let before = footprint(&s, &big).await;
    let refused_id = unique("refused");
    let again = remark(&s, &big, &refused_id, &"y".repeat(60_000)).await;
    assert_rpc_error(&again, -32602, "INVALID_PARAMS");
    assert_eq!(footprint(&s, &big).await, before, "nothing stored");
    let store = s.store();
    let seen = store
        .message_task("", ALICE, &refused_id)
        .await
        .expect("lookup");
    assert_eq!(seen, None, "the refused message's id was not taken");

    let many = open_task(&s).await;
    let (taken, refusal) = fill(&s, &many, "hello", 20).await;
    assert_eq!(taken, 6, "{refusal}");
    assert_rpc_error(&refusal, -32602, "INVALID_PARAMS");
    let text = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("8 messages") && text.contains("HARNESS_TASK_MAX_MESSAGES"),
        "the refusal names the bound: {text}"
    );
    let before = footprint(&s, &many).await;
    let again = remark(&s, &many, &unique("refused"), "hello").await;
    assert_rpc_error(&again, -32602, "INVALID_PARAMS");
    assert_eq!(footprint(&s, &many).await, before, "nothing stored");

    for id in [&big, &many] {
        let canceled = rpc_as(&s, Some(ALICE), "CancelTask", json!({"id": id})).await;
        assert_eq!(
            state(&canceled["result"]),
            "TASK_STATE_CANCELED",
            "{canceled}"
        );
    }
}

/// With room for one message, the conformance agent's question (its task's second
/// message) would pass the bound: the task fails, saying which bound, and stays readable;
/// no write is half made.
async fn an_agent_write_past_the_bounds_fails_the_task_cleanly(backend: Backend) {
    let bounds = [("HARNESS_TASK_MAX_MESSAGES", "1")];
    let Some(s) = Server::start_on_env(backend, &[], &bounds).await else {
        return;
    };
    let message = user_message(&unique("tck-input-required"), "ask me something");
    let task = s.rpc_ok("SendMessage", send_params(message)).await["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_FAILED", "{task}");
    let why = status_text(&task);
    assert!(
        why.contains("bound of 1 message") && why.contains("HARNESS_TASK_MAX_MESSAGES"),
        "the failure names the bound: {why}"
    );
    let read = s.get_task(&task_id(&task)).await;
    assert_eq!(state(&read), "TASK_STATE_FAILED");
    assert_eq!(
        user_messages(&read).len(),
        1,
        "the client's message is kept: {read}"
    );
}

/// Without `historyLength` GetTask, ListTasks and SendMessage's task hold the last 20
/// messages; an explicit `historyLength` still gets what it asks for.
async fn answers_hold_the_default_history(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let id = open_task(&s).await;
    for i in 0..24 {
        let answer = remark(&s, &id, &unique("remark"), &format!("remark {i}")).await;
        assert!(answer.get("error").is_none(), "{answer}");
    }
    // Her first message and 25 remarks.
    let message = json!({"messageId": unique("last"), "role": "ROLE_USER", "taskId": id,
                         "parts": [{"text": "remark 24"}]});
    let sent = rpc_as(&s, Some(ALICE), "SendMessage", send_params(message)).await;
    let lengths = |task: &Value| task["history"].as_array().map_or(0, Vec::len);
    assert_eq!(lengths(&sent["result"]["task"]), 20, "SendMessage: {sent}");
    let got = rpc_as(&s, Some(ALICE), "GetTask", json!({"id": id})).await;
    let history = got["result"]["history"].as_array().expect("history");
    assert_eq!(history.len(), 20, "GetTask");
    assert_eq!(
        history.last().and_then(|m| m["parts"][0]["text"].as_str()),
        Some("remark 24"),
        "the newest are kept"
    );
    let listed = rpc_as(&s, Some(ALICE), "ListTasks", json!({})).await;
    assert_eq!(
        lengths(&listed["result"]["tasks"][0]),
        20,
        "ListTasks: {listed}"
    );
    let all = rpc_as(
        &s,
        Some(ALICE),
        "GetTask",
        json!({"id": id, "historyLength": 26}),
    )
    .await;
    assert_eq!(lengths(&all["result"]), 26, "an explicit historyLength");
    let listed = rpc_as(&s, Some(ALICE), "ListTasks", json!({"historyLength": 30})).await;
    assert_eq!(lengths(&listed["result"]["tasks"][0]), 26);
}

/// Three tasks of six 900 KB remarks each (5.4 MB): GetTask holds the newest four (3.6 MB;
/// a fifth would pass 4 MiB), whatever `historyLength` asks; ListTasks holds one such task
/// a page, and its pages go on until every task was listed once.
async fn answers_hold_at_most_the_byte_budget_of_history(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = open_task(&s).await;
        for i in 0..6 {
            let text = format!("{i}{}", "z".repeat(900_000));
            let answer = remark(&s, &id, &unique("remark"), &text).await;
            assert!(
                answer.get("error").is_none(),
                "remark {i}: {}",
                answer["error"]
            );
        }
        ids.push(id);
    }
    let budget = 4 * 1024 * 1024;
    for params in [
        json!({"id": ids[0]}),
        json!({"id": ids[0], "historyLength": 100}),
    ] {
        let (len, v) = participants_rpc(&s, "GetTask", params).await;
        let history = v["result"]["history"].as_array().expect("history");
        let firsts: Vec<&str> = history
            .iter()
            .filter_map(|m| m["parts"][0]["text"].as_str())
            .map(|t| &t[..1])
            .collect();
        assert_eq!(firsts, ["2", "3", "4", "5"], "the newest four");
        assert!(len < budget + 64 * 1024, "GetTask answered {len} bytes");
    }
    let mut listed = Vec::new();
    let mut token = String::new();
    for page in 0.. {
        assert!(page < 10, "ListTasks never ended");
        let params = json!({"pageToken": token, "historyLength": 100, "pageSize": 10});
        let (len, v) = participants_rpc(&s, "ListTasks", params).await;
        let tasks = v["result"]["tasks"].as_array().expect("tasks");
        assert_eq!(
            tasks.len(),
            1,
            "one such task a page: {}",
            v["result"]["nextPageToken"]
        );
        assert!(len < budget + 64 * 1024, "ListTasks answered {len} bytes");
        listed.push(task_id(&tasks[0]));
        token = v["result"]["nextPageToken"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if token.is_empty() {
            break;
        }
    }
    listed.sort();
    ids.sort();
    assert_eq!(listed, ids, "every task listed once");
}

/// A JSON-RPC call as alice: the answer body's length and the envelope.
async fn participants_rpc(s: &Server, method: &str, params: Value) -> (usize, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let resp = s
        .rpc_raw(
            &harness_e2e::participants::headers_as(Some(ALICE)),
            body.to_string(),
        )
        .await;
    let text = resp.text().await.expect("body");
    let value = serde_json::from_str(&text).expect("JSON");
    (text.len(), value)
}
