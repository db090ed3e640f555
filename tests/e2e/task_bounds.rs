//! Issue 48, item 2: one client cannot exhaust the harness's memory. A task holds at most
//! `HARNESS_TASK_MAX_MESSAGES` messages and `HARNESS_TASK_MAX_BYTES` bytes: a member's
//! message past either is refused with -32602 naming the bound, and nothing is stored
//! (the attack added 1 MiB messages to one task until it held 40 MB); an agent
//! whose write would pass them fails its task cleanly instead; a full task can still be
//! canceled. On both stores; the bounds are small here so the tests are quick.

use harness_e2e::participants::{participant, rpc_as, task_envelope_part};
use harness_e2e::*;
use serde_json::{json, Value};

on_both_stores!(
    a_member_cannot_grow_a_task_past_its_bounds,
    an_agent_write_past_the_bounds_fails_the_task_cleanly,
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
