//! What a client that applies a task's artifact updates as A2A says ends with is what the
//! task stores: after a turn that only called tools, after text a stream showed and then
//! replaced, and after a stream that failed midway.

use std::sync::Arc;

use async_trait::async_trait;
use common::a2a::Call;
use common::a2a::{Message, Part, Role, SendMessageRequest};
use common::agent::context::SystemPrompt;
use common::agent::llm::LlmAgent;
use common::agent::tools::ToolRegistry;
use common::models::scripted::Scripted;
use common::models::{ChatRequest, ChatResponse, Delta, Model, ModelError, OnDelta};
use common::ops::{execute, Answer, Caller, Harness};
use common::store::{EmbeddedStore, Store};
use serde_json::Value;

fn config() -> common::config::Config {
    common::config::Config {
        push_key: Some(common::sealing::PushKey::generate()),
        ..Default::default()
    }
}

async fn run(model: Arc<dyn Model>) -> (Value, Vec<Value>) {
    let dir = std::env::temp_dir().join(format!("views-{}", common::engine::transition::new_id()));
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir).expect("store"));
    let agent = LlmAgent::new(
        model,
        "scripted",
        ToolRegistry::builtin(),
        SystemPrompt::default(),
    );
    let h = Harness::new(store.clone(), Arc::new(agent), config()).expect("harness");
    let message = Message {
        message_id: common::engine::transition::new_id(),
        role: Role::User,
        parts: vec![Part::text("What time is it?")],
        ..Default::default()
    };
    let answer: Value = match execute(
        &h,
        Call::SendMessage(SendMessageRequest {
            message: Some(message),
            ..Default::default()
        }),
        &Caller::named("alice"),
    )
    .await
    {
        Ok(Answer::Json(v)) => serde_json::from_str(v.get()).expect("JSON"),
        other => panic!("unexpected answer: {:?}", other.err()),
    };
    let id = answer["task"]["id"].as_str().expect("id").to_owned();
    let events = store.read_events(&id, None, 10_000).await.expect("events");
    let events = events
        .into_iter()
        .map(|e| serde_json::to_value(&e.event).expect("json"))
        .collect();
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

#[tokio::test]
async fn tool_only_turn_then_answer_never_appends_to_an_unseen_artifact() {
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "It is late."}
    ]}"#;
    let (answer, events) = run(Arc::new(Scripted::parse("t", script).unwrap())).await;
    assert_eq!(
        answer["task"]["artifacts"][0]["parts"][0]["text"],
        "It is late."
    );
    let view = client_view(&events).expect("a client can apply every update");
    assert_eq!(view.values().collect::<Vec<_>>(), ["It is late."]);
}

#[tokio::test]
async fn streamed_turn_then_tool_only_turn_then_answer_shows_the_answer_alone() {
    let script = r#"{"turns": [
        {"chunks": ["Let me ", "check."], "chunk_delay_ms": 400,
         "tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "It is late."}
    ]}"#;
    let (answer, events) = run(Arc::new(Scripted::parse("t", script).unwrap())).await;
    assert_eq!(
        answer["task"]["artifacts"][0]["parts"][0]["text"],
        "It is late."
    );
    let view = client_view(&events).expect("applies");
    assert_eq!(
        view.values().collect::<Vec<_>>(),
        ["It is late."],
        "what a streaming client ends with"
    );
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
    let stored: Vec<String> = answer["task"]["artifacts"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x["parts"][0]["text"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
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
