//! Issue 22: remote A2A agents as participants. Two harness-local processes on the
//! scripted model: A's registry names B (`--agents`); A's model delegates to B; B's model
//! asks A (its reporter) a question; A's model answers it with `reply_to_agent`; B
//! completes; B's webhook wakes A, whose next model input holds B's answer inside the
//! untrusted block, attributed to B; A completes. While B works, A's task waits with no
//! lease and no model call. On the embedded store and on DynamoDB Local.
//!
//! Also: cards A cannot use are clear tool errors with nothing sent; a callback with a
//! wrong token is refused and changes nothing; cancelling A cancels B's task.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness_e2e::participants::{rpc_ok_as, send_as, Script};
use harness_e2e::{state, task_id, unique, Backend, Server};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);
const A_ID: &str = "harness-a";

/// A registry file naming `agents` (id, card URL).
fn registry(agents: &[(&str, String)]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("{}.toml", unique("agents")));
    let text: String = agents
        .iter()
        .map(|(id, url)| format!("[agents.{id}]\ncard_url = \"{url}\"\n"))
        .collect();
    std::fs::write(&path, text).expect("the registry file");
    path
}

fn card_url(s: &Server) -> String {
    s.endpoint("/.well-known/agent-card.json")
}

/// Harness A on `backend` with `agents`, its model following `a`.
async fn harness_a(backend: Backend, a: &Script, agents: &Path) -> Option<Server> {
    let model = a.model();
    let agents = agents.display().to_string();
    Server::start_on(
        backend,
        &[
            "--agent",
            "llm",
            "--model",
            &model,
            "--agents",
            &agents,
            "--agent-id",
            A_ID,
        ],
    )
    .await
}

async fn task_of(s: &Server, who: &str, id: &str) -> Value {
    rpc_ok_as(
        s,
        Some(who),
        "GetTask",
        json!({"id": id, "historyLength": 100}),
    )
    .await
}

async fn until(s: &Server, who: &str, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let task = task_of(s, who, id).await;
        if state(&task) == want {
            return task;
        }
        assert!(Instant::now() < deadline, "never {want}: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// B's tasks, as A (their sender) sees them.
async fn tasks_on_b(b: &Server) -> Vec<Value> {
    let page = rpc_ok_as(b, Some(A_ID), "ListTasks", json!({})).await;
    page["tasks"].as_array().cloned().unwrap_or_default()
}

fn start_message(text: &str) -> Value {
    json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [{"text": text}]})
}

async fn delegates_and_resumes_on_the_callback(backend: Backend) {
    let b_script = Script::new(json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": A_ID, "question": "Which colour?"}}]},
        // Slow, so A is seen waiting for it.
        {"text": "Painted it blue.", "delay_ms": 2000}
    ]));
    let Some(b) =
        Server::start_on(backend, &["--agent", "llm", "--model", &b_script.model()]).await
    else {
        return;
    };
    let a_script = Script::new(json!([
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "b", "name": "Paint", "goal": "Paint the shed"}}]},
        {"tool_calls": [{"name": "reply_to_agent", "arguments": {
            "participant_id": "b", "text": "Blue"}}]},
        {"text": "The shed is painted."}
    ]));
    let agents = registry(&[("b", card_url(&b))]);
    let Some(a) = harness_a(backend, &a_script, &agents).await else {
        return;
    };
    let task = send_as(&a, Some("alice"), start_message("Get the shed painted")).await;
    let id = task_id(&task);

    // B's question reaches A's model, which answers it; B then works (slowly) while A
    // waits with no lease.
    let deadline = Instant::now() + WAIT;
    loop {
        let answered = a_script.requests_for_turn(1).len();
        let head = a
            .store()
            .load_task(&id)
            .await
            .expect("load")
            .expect("A's task");
        if answered == 1 && head.lease.is_none() && head.state().as_str() == "TASK_STATE_WORKING" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "A never waited on B: {:?}",
            head.task.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        a_script.requests_for_turn(2).is_empty(),
        "no model call while waiting"
    );
    let asked = a_script.requests_for_turn(1)[0].to_string();
    assert!(asked.contains("Which colour?"), "{asked}");

    let done = until(&a, "alice", &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        done["status"]["message"]["parts"][0]["text"], "The shed is painted.",
        "{done}"
    );
    // A's last model input: B's answer, inside an untrusted block attributed to B.
    let last = a_script.requests_for_turn(2);
    assert_eq!(last.len(), 1);
    let messages = last[0]["messages"].to_string();
    let block = in_block(&messages, "source=\\\"agent:b\\\"", "Painted it blue.");
    assert!(block, "{messages}");

    // Exactly one task on B, done, with A's answer; A's task names it as a sub-task.
    let on_b = tasks_on_b(&b).await;
    assert_eq!(on_b.len(), 1, "{on_b:?}");
    assert_eq!(state(&on_b[0]), "TASK_STATE_COMPLETED");
    let ext = &done["metadata"]["io.github.madarauchiha-314.tiny-harness/task"];
    assert_eq!(ext["sub_tasks"][0]["task_id"], on_b[0]["id"], "{ext}");
    assert_eq!(ext["sub_tasks"][0]["agent"]["id"], "b", "{ext}");
    let _ = std::fs::remove_file(&agents);
}

/// Whether a block of `text` from `source` holds `said`.
fn in_block(text: &str, source: &str, said: &str) -> bool {
    text.match_indices(source).any(|(at, _)| {
        let rest = &text[at..];
        let close = rest.find("</untrusted").unwrap_or(rest.len());
        rest[..close].contains(said)
    })
}

#[tokio::test]
async fn a_delegates_to_b_and_resumes_on_its_callback_on_the_embedded_store() {
    delegates_and_resumes_on_the_callback(Backend::Embedded).await;
}

#[tokio::test]
async fn a_delegates_to_b_and_resumes_on_its_callback_on_dynamodb() {
    delegates_and_resumes_on_the_callback(Backend::DynamoDb).await;
}
