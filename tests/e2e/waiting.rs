//! Issue 21: who a task waits on is on the wire, and each member can list what waits on
//! them. harness-local with the LLM agent on the scripted model, on both stores.
//!
//! - A help request's INPUT_REQUIRED status message names its addressee
//!   (`metadata.addressee`), as does a sub-task's, waiting on its assignee.
//! - ListTasks with `waitingOnMe` (JSON-RPC) or `?waitingOnMe=true` (HTTP+JSON) lists
//!   exactly the caller's open help requests and assigned sub-tasks, and stops listing
//!   each once it is answered.
//! - A remark from one member is an event on the task: another member's SubscribeToTask
//!   stream and a webhook on the task show it.

use std::time::{Duration, Instant};

use harness_e2e::participants::{
    headers_as, llm_server, participant, rpc_ok_as, send_as, task_envelope_part, wait_for_state_as,
    Script, AGENT_ID,
};
use harness_e2e::webhook::Receiver;
use harness_e2e::{
    expect_stream, json_of, reply_message, state, task_id, unique, Backend, Server, SseReader,
};
use reqwest::Method;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);

/// Turn 0 asks bob; turn 1 (after his reply) gives him a sub-task; turn 2 finishes.
fn script() -> Script {
    Script::new(json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "bob", "question": "Which colour?"}}]},
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "bob", "name": "Measure", "goal": "Measure the shed"}}]},
        {"text": "Painted."}
    ]))
}

/// alice starts a task with bob and carol on it; the model asks bob.
async fn start(s: &Server, n: usize) -> String {
    let people = json!([
        participant("alice", "human", "reporter"),
        participant("bob", "human", "watcher"),
        participant("carol", "human", "watcher"),
    ]);
    let message = json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [
        {"text": format!("Paint shed {n}")},
        task_envelope_part(&format!("Shed {n}"), "Paint the shed", people)]});
    let task = send_as(s, Some("alice"), message).await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    assert_eq!(
        task["status"]["message"]["metadata"]["addressee"], "bob",
        "{task}"
    );
    task_id(&task)
}

/// The ids ListTasks gives `who` with `waitingOnMe`, over both bindings (which must agree).
async fn waiting_on(s: &Server, who: &str) -> Vec<String> {
    let page = rpc_ok_as(s, Some(who), "ListTasks", json!({"waitingOnMe": true})).await;
    let ids = |page: &Value| -> Vec<String> {
        let mut ids: Vec<String> = (page["tasks"].as_array().expect("tasks").iter())
            .map(|t| t["id"].as_str().expect("id").to_owned())
            .collect();
        ids.sort();
        ids
    };
    let rpc = ids(&page);
    let path = "/tasks?waitingOnMe=true&historyLength=0";
    let answer = s
        .rest_raw(Method::GET, path, &headers_as(Some(who)), "")
        .await;
    let (status, rest) = json_of(answer).await;
    assert_eq!(status, 200, "{rest}");
    assert_eq!(ids(&rest), rpc, "both bindings list the same");
    assert_eq!(page["totalSize"], rpc.len(), "{page}");
    rpc
}

async fn lists_exactly_what_waits_on_each_member(backend: Backend) {
    let script = script();
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let first = start(&s, 1).await;
    let second = start(&s, 2).await;
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    assert_eq!(waiting_on(&s, "bob").await, both);
    for other in ["alice", "carol"] {
        assert!(waiting_on(&s, other).await.is_empty(), "{other}");
    }
    // carol's command replaces the status message; the task still waits on bob.
    let help = json!({"messageId": unique("cmd"), "role": "ROLE_USER", "taskId": first,
        "parts": [{"text": "/help"}]});
    let after = send_as(&s, Some("carol"), help).await;
    assert_eq!(
        after["status"]["message"]["metadata"]["addressee"],
        Value::Null,
        "{after}"
    );
    assert_eq!(
        waiting_on(&s, "bob").await,
        both,
        "a command does not end the wait"
    );

    // bob answers the second: it gives him a sub-task, which waits on him instead.
    let reply = reply_message(&unique("reply"), &second, "Blue");
    send_as(&s, Some("bob"), reply).await;
    let child = format!("{second}.1");
    let sub = wait_for_state_as(&s, "bob", &child, "TASK_STATE_INPUT_REQUIRED", WAIT).await;
    assert_eq!(
        sub["status"]["message"]["metadata"]["addressee"], "bob",
        "{sub}"
    );
    let mut now = vec![first.clone(), child.clone()];
    now.sort();
    assert_eq!(waiting_on(&s, "bob").await, now);

    // bob finishes the sub-task: nothing of the second task waits on anyone.
    send_as(
        &s,
        Some("bob"),
        reply_message(&unique("done"), &child, "3 by 4"),
    )
    .await;
    wait_for_state_as(&s, "alice", &second, "TASK_STATE_COMPLETED", WAIT).await;
    assert_eq!(waiting_on(&s, "bob").await, vec![first]);
}

#[tokio::test]
async fn waiting_on_me_lists_exactly_open_requests_and_assigned_sub_tasks_on_the_embedded_store() {
    lists_exactly_what_waits_on_each_member(Backend::Embedded).await;
}

#[tokio::test]
async fn waiting_on_me_lists_exactly_open_requests_and_assigned_sub_tasks_on_dynamodb() {
    lists_exactly_what_waits_on_each_member(Backend::DynamoDb).await;
}

/// A task that waits on a sub-task for bob is WORKING (streams stay open): carol's remark
/// on it reaches bob's SubscribeToTask stream and alice's webhook as a `message` event,
/// and the task's state does not change.
async fn a_remark_reaches_another_members_stream(backend: Backend) {
    let script = Script::new(json!([
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "bob", "name": "Measure", "goal": "Measure the shed"}}]},
        {"text": "Painted."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let hook = Receiver::start().await;
    let people = json!([
        participant("alice", "human", "reporter"),
        participant("bob", "human", "watcher"),
        participant("carol", "human", "watcher"),
    ]);
    let message = json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [
        {"text": "Paint the shed"}, task_envelope_part("Shed", "Paint the shed", people)]});
    let sent = rpc_ok_as(
        &s,
        Some("alice"),
        "SendMessage",
        json!({"message": message,
        "configuration": {"returnImmediately": true,
                          "taskPushNotificationConfig": {"url": hook.url}}}),
    )
    .await;
    let id = task_id(&sent["task"]);
    // The sub-task waits on bob once the agent has made it.
    let child = format!("{id}.1");
    let deadline = Instant::now() + WAIT;
    let bobs_waiting = json!({"waitingOnMe": true, "historyLength": 0});
    while rpc_ok_as(&s, Some("bob"), "ListTasks", bobs_waiting.clone()).await["tasks"][0]["id"]
        != child.as_str()
    {
        assert!(Instant::now() < deadline, "no sub-task for bob");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
        "params": {"id": id}});
    let resp = s
        .rpc_raw(&headers_as(Some("bob")), subscribe.to_string())
        .await;
    let mut bobs = SseReader::new(expect_stream(resp, "SubscribeToTask").await);
    let first = bobs.next_before(deadline).await.expect("the task first");
    assert_eq!(first.state(), Some("TASK_STATE_WORKING"), "{first:?}");

    let said = "Not the red one, please.";
    let remark = json!({"messageId": unique("remark"), "role": "ROLE_USER", "taskId": id,
        "parts": [{"text": said}]});
    let task = rpc_ok_as(
        &s,
        Some("carol"),
        "SendMessage",
        json!({"message": remark,
        "configuration": {"returnImmediately": true}}),
    )
    .await;
    assert_eq!(state(&task["task"]), "TASK_STATE_WORKING", "{task}");

    let next = bobs
        .next_before(deadline)
        .await
        .expect("the remark on bob's stream");
    assert_eq!(next.kind(), "message", "{next:?}");
    let seen = next.payload();
    assert_eq!(seen["parts"][0]["text"], said, "{next:?}");
    assert_eq!(seen["metadata"]["participant_id"], "carol", "{next:?}");
    assert_eq!(seen["taskId"], id.as_str(), "{next:?}");
    let delivered = hook
        .wait_until("the remark", |got| {
            got.iter().any(|r| r.kind() == "message")
        })
        .await;
    let pushed = delivered
        .iter()
        .find(|r| r.kind() == "message")
        .expect("pushed");
    assert_eq!(
        pushed.body["message"]["parts"][0]["text"], said,
        "{:?}",
        pushed.body
    );
}

#[tokio::test]
async fn a_remark_reaches_another_members_stream_on_the_embedded_store() {
    a_remark_reaches_another_members_stream(Backend::Embedded).await;
}

#[tokio::test]
async fn a_remark_reaches_another_members_stream_on_dynamodb() {
    a_remark_reaches_another_members_stream(Backend::DynamoDb).await;
}

/// A member removed from a task gets nothing more through the webhook they made on it:
/// ada (admin) takes bob off the roster while the task waits on alice's sub-task, and
/// what is said after reaches his webhook no more (the remark before did).
async fn a_removed_member_hears_no_more(backend: Backend) {
    let script = Script::new(json!([
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "alice", "name": "Measure", "goal": "Measure the shed"}}]},
        {"text": "Painted."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let hook = Receiver::start().await;
    let people = |with_bob: bool| {
        let mut p = vec![
            participant("ada", "human", "admin"),
            participant("alice", "human", "watcher"),
        ];
        if with_bob {
            // Only a reporter or an admin may make a webhook on a task.
            p.push(participant("bob", "human", "admin"));
        }
        Value::from(p)
    };
    let message = json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [
        {"text": "Paint the shed"}, task_envelope_part("Shed", "Paint the shed", people(true))]});
    let id = task_id(&send_as(&s, Some("ada"), message).await);
    let deadline = Instant::now() + WAIT;
    while rpc_ok_as(&s, Some("alice"), "ListTasks", json!({"waitingOnMe": true})).await["tasks"]
        .as_array()
        .is_none_or(|t| t.is_empty())
    {
        assert!(Instant::now() < deadline, "no sub-task for alice");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rpc_ok_as(
        &s,
        Some("bob"),
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "bobs", "url": hook.url}),
    )
    .await;
    let say = |text: &str| {
        json!({"messageId": unique("m"), "taskId": id, "role": "ROLE_USER",
               "parts": [{"text": text}]})
    };
    send_as(&s, Some("ada"), say("Before bob leaves")).await;
    hook.wait_until("the remark", |got| {
        got.iter()
            .any(|r| r.body.to_string().contains("Before bob leaves"))
    })
    .await;
    // An edit names only what it changes: the roster.
    let mut kept = people(false);
    if let Some(p) = kept.as_array_mut() {
        p.push(participant(AGENT_ID, "agent", "assignee"));
    }
    let roster = json!({"mediaType": "application/vnd.tiny-harness.event+json",
                        "data": {"kind": "task", "payload": {"participants": kept}}});
    let leave = json!({"messageId": unique("m"), "taskId": id, "role": "ROLE_USER",
                       "parts": [{"text": "bob is off the task"}, roster]});
    send_as(&s, Some("ada"), leave).await;
    send_as(&s, Some("ada"), say("After bob left")).await;
    // alice does the sub-task: the parent finishes, and each of its later events was
    // passed over for bob.
    let done = json!({"messageId": unique("m"), "taskId": format!("{id}.1"),
                      "role": "ROLE_USER", "parts": [{"text": "3 by 4 metres"}]});
    send_as(&s, Some("alice"), done).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let task = rpc_ok_as(&s, Some("ada"), "GetTask", json!({"id": id})).await;
        if state(&task) == "TASK_STATE_COMPLETED" {
            break;
        }
        assert!(Instant::now() < deadline, "{task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for r in hook.all() {
        let body = r.body.to_string();
        assert!(
            !body.contains("After bob left") && !body.contains("Painted"),
            "a former member's webhook got {body}"
        );
    }
}

#[tokio::test]
async fn a_removed_member_hears_no_more_on_the_embedded_store() {
    a_removed_member_hears_no_more(Backend::Embedded).await;
}

#[tokio::test]
async fn a_removed_member_hears_no_more_on_dynamodb() {
    a_removed_member_hears_no_more(Backend::DynamoDb).await;
}
