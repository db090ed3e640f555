//! What a client that applies a task's artifact updates as A2A says ends with is what the
//! task stores: after a turn that only called tools, after text a stream showed and then
//! replaced, after a stream that failed midway, and after a cancel mid-answer.

mod support;

use std::sync::Arc;

use async_trait::async_trait;
use common::a2a::Call;
use common::a2a::{Message, Part, Role, SendMessageRequest};
use common::models::scripted::Scripted;
use common::models::{ChatRequest, ChatResponse, Delta, Model, ModelError, OnDelta};
use common::ops::{execute, Answer, Caller, Harness};
use common::store::Store;
use serde_json::Value;

fn harness(model: Arc<dyn Model>) -> (Arc<Harness>, Arc<dyn Store>) {
    let store = support::embedded_store();
    (support::llm_harness(store.clone(), model), store)
}

fn question() -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message {
            message_id: common::engine::transition::new_id(),
            role: Role::User,
            parts: vec![Part::text("What time is it?")],
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn logged(store: &Arc<dyn Store>, id: &str) -> Vec<Value> {
    let events = store.read_events(id, None, 10_000).await.expect("events");
    events
        .into_iter()
        .map(|e| serde_json::to_value(&e.event).expect("json"))
        .collect()
}

async fn run(model: Arc<dyn Model>) -> (Value, Vec<Value>) {
    let (h, store) = harness(model);
    let answer: Value =
        match execute(&h, Call::SendMessage(question()), &Caller::named("alice")).await {
            Ok(Answer::Json(v)) => serde_json::from_str(v.get()).expect("JSON"),
            other => panic!("unexpected answer: {:?}", other.err()),
        };
    let id = answer["task"]["id"].as_str().expect("id").to_owned();
    let events = logged(&store, &id).await;
    (answer, events)
}

/// Applies artifact updates as A2A (and the a2a-sdk's TaskManager) does; Err where the SDK
/// raises InvalidAgentResponseError (append to an artifact it never saw).
fn client_view(events: &[Value]) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut arts = std::collections::BTreeMap::new();
    for e in events {
        let Some(u) = e.get("artifactUpdate") else {
            continue;
        };
        let id = u["artifact"]["artifactId"].as_str().unwrap().to_owned();
        let text: String = u["artifact"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect();
        if u["append"].as_bool().unwrap_or(false) {
            match arts.get_mut(&id) {
                Some(t) => {
                    let t: &mut String = t;
                    t.push_str(&text)
                }
                None => return Err(format!("append=true for nonexistent artifact {id}: {u}")),
            }
        } else {
            arts.insert(id, text);
        }
    }
    Ok(arts)
}

/// The text of each artifact `task` stores.
fn stored_texts(task: &Value) -> Vec<String> {
    let artifacts = task["artifacts"].as_array().into_iter().flatten();
    artifacts
        .map(|x| x["parts"][0]["text"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Runs `script`: the task stores "It is late.", and a client that applied its updates
/// shows that alone.
async fn shows_the_answer_alone(script: &str) {
    let (answer, events) = run(Arc::new(Scripted::parse("t", script).unwrap())).await;
    assert_eq!(
        answer["task"]["artifacts"][0]["parts"][0]["text"],
        "It is late."
    );
    let view = client_view(&events).expect("a client can apply every update");
    assert_eq!(
        view.values().collect::<Vec<_>>(),
        ["It is late."],
        "what a streaming client ends with"
    );
}

#[tokio::test]
async fn tool_only_turn_then_answer_never_appends_to_an_unseen_artifact() {
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "It is late."}
    ]}"#;
    shows_the_answer_alone(script).await;
}

#[tokio::test]
async fn streamed_turn_then_tool_only_turn_then_answer_shows_the_answer_alone() {
    let script = r#"{"turns": [
        {"chunks": ["Let me ", "check."], "chunk_delay_ms": 400,
         "tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "It is late."}
    ]}"#;
    shows_the_answer_alone(script).await;
}

/// Streams some text, then fails for good.
struct PartlyThenFails;

#[async_trait]
impl Model for PartlyThenFails {
    async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, ModelError> {
        Err(ModelError::permanent("no"))
    }
    async fn chat_stream(
        &self,
        _: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        on_delta(Delta::Text("The secret plan is ".into()));
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        on_delta(Delta::Text("to ".into()));
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        Err(ModelError::permanent(
            "the provider refused the rest (content filter)",
        ))
    }
}

#[tokio::test]
async fn a_stream_that_fails_midway_leaves_the_client_what_the_task_stores() {
    let (answer, events) = run(Arc::new(PartlyThenFails)).await;
    let view = client_view(&events).expect("applies");
    assert_eq!(answer["task"]["status"]["state"], "TASK_STATE_FAILED");
    let stored = stored_texts(&answer["task"]);
    assert_eq!(
        stored,
        ["The secret plan is to "],
        "the task keeps what was shown"
    );
    assert_eq!(
        view.values().cloned().collect::<Vec<_>>(),
        stored,
        "the client ends with what the task stores"
    );
}

/// Cancelled mid-answer, the task keeps the text its clients were shown, finished with
/// `lastChunk`, and the answer stops growing: the model's call ends at its next batch. On
/// both stores.
#[tokio::test]
async fn a_cancel_mid_answer_keeps_what_was_shown_and_stops_the_answer() {
    for store in support::stores().await {
        cancelled_mid_answer(store).await;
    }
}

async fn cancelled_mid_answer(store: Arc<dyn Store>) {
    let script = r#"{"turns": [{"chunks": ["One ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight "],
        "chunk_delay_ms": 300}]}"#;
    let h = support::llm_harness(
        store.clone(),
        Arc::new(Scripted::parse("t", script).unwrap()),
    );
    let alice = Caller::named("alice");
    let id = support::streaming_until(&h, question(), &alice, 2).await;
    let cancel = common::a2a::CancelTaskRequest {
        id: id.clone(),
        ..Default::default()
    };
    let cancelled = match execute(&h, Call::CancelTask(cancel), &alice).await {
        Ok(Answer::Json(v)) => serde_json::from_str::<Value>(v.get()).expect("JSON"),
        other => panic!("unexpected answer: {:?}", other.err()),
    };
    assert_eq!(cancelled["status"]["state"], "TASK_STATE_CANCELED");
    let stored = stored_texts(&cancelled);
    let view = client_view(&logged(&store, &id).await).expect("applies");
    assert_eq!(
        view.values().cloned().collect::<Vec<_>>(),
        stored,
        "the client ends with what the task stores"
    );
    assert!(stored[0].starts_with("One two "), "{stored:?}");
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let after = logged(&store, &id).await;
    assert_eq!(
        client_view(&after).expect("applies"),
        view,
        "nothing written after the cancel"
    );
}
