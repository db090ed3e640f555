//! harness-local with the LLM agent: on the scripted model, a task whose model calls a
//! tool and then answers completes over HTTP with the answer as status message and
//! artifact; with no model, the offline model answers; a bad model setting stops the
//! server at start-up with the reason; a crash never repeats a committed model call.

use harness_e2e::{unique, user_message, Backend, Server};
use serde_json::json;

fn script(turns: serde_json::Value) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("{}.json", unique("harness-script")));
    std::fs::write(&path, json!({ "turns": turns }).to_string()).expect("write script");
    path
}

#[tokio::test]
async fn a_tool_call_then_an_answer_completes_the_task_over_http() {
    let path = script(json!([
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "Done: the time is known."}
    ]));
    let model = format!("scripted:{}", path.display());
    let s = Server::start_with(&["--agent", "llm", "--model", &model]).await;
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("m"), "What time is it?")}),
        )
        .await;
    let task = &result["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{result}");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Done: the time is known."
    );
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "Done: the time is known."
    );
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn without_a_model_the_default_agent_answers_from_the_offline_model() {
    let s = Server::start_with(&["--agent", "llm"]).await;
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("m"), "Plan my week")}),
        )
        .await;
    let task = &result["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{result}");
    let text = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("offline model") && text.contains("Plan my week"),
        "{text}"
    );
}

#[test]
fn an_unknown_model_stops_the_server_at_start_up_with_the_choices() {
    let out = std::process::Command::new(harness_e2e::server_binary())
        .args([
            "--listen",
            "127.0.0.1:0",
            "--agent",
            "llm",
            "--model",
            "gtp-5",
        ])
        .env_remove("HARNESS_MODELS")
        .output()
        .expect("run harness-local");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown model \"gtp-5\""), "{stderr}");
}

/// The server is killed while the model works on turn 1, after turn 0 (a tool call) and
/// the tool's result were committed. On restart the task carries on from that checkpoint:
/// turn 0 is never asked for again, and the task completes with the answer.
#[tokio::test]
async fn a_crash_after_a_committed_model_call_resumes_without_calling_the_model_again() {
    let log = std::env::temp_dir().join(format!("{}.log", unique("harness-calls")));
    let path = script(json!([
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "Finished after the restart.", "delay_ms": 1500}
    ]));
    // The script names its call log, so calls are counted across processes.
    let mut body: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("script")).expect("json");
    body["call_log"] = json!(log);
    std::fs::write(&path, body.to_string()).expect("write script");
    let model = format!("scripted:{}", path.display());
    let mut s = Server::start_with(&["--agent", "llm", "--model", &model]).await;

    let message = user_message(&unique("m"), "What time is it?");
    let accepted = s
        .rpc_ok(
            "SendMessage",
            json!({"message": message, "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = accepted["task"]["id"].as_str().expect("task id").to_owned();
    // Turn 1 has started once the log shows it: turn 0 and the tool result are committed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("turn 1")
    {
        assert!(std::time::Instant::now() < deadline, "turn 1 never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    s.restart().await; // SIGKILL, then the same state directory

    let done = s
        .wait_for_state(
            &id,
            "TASK_STATE_COMPLETED",
            std::time::Duration::from_secs(15),
        )
        .await;
    assert_eq!(
        done["status"]["message"]["parts"][0]["text"],
        "Finished after the restart."
    );
    let calls = std::fs::read_to_string(&log).expect("call log");
    assert_eq!(
        calls.matches("turn 0").count(),
        1,
        "the committed call was not repeated: {calls}"
    );
    assert_eq!(
        calls.matches("turn 1").count(),
        2,
        "the interrupted call ran again: {calls}"
    );
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(log);
}

/// What a provider's error body carries that must never reach a task: an internal URL
/// and a key-shaped string.
const LEAKED_URL: &str = "https://internal-gateway.corp.example/v1/route-7";
const LEAKED_KEY: &str = "sk-proj-AbCdEf0123456789AbCdEf0123456789";

/// An OpenAI-compatible provider that refuses every call with an error body quoting
/// [`LEAKED_URL`] and [`LEAKED_KEY`]; its base URL.
async fn leaky_provider() -> (String, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|| async {
            let body = json!({"error": {
                "message": format!("Incorrect API key provided: {LEAKED_KEY} (gateway {LEAKED_URL})"),
                "type": "invalid_request_error", "code": "invalid_api_key"}});
            (axum::http::StatusCode::UNAUTHORIZED, axum::Json(body))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the provider");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, server)
}

/// Issue 17, item 6: a failed model call leaves a short, stable reason and an error id
/// in the task, on both bindings and both stores; the provider's body (a URL, a key)
/// reaches neither the task, its history nor its events.
async fn a_failed_model_call_tells_participants_a_reason_not_the_providers_body(
    backend: harness_e2e::Backend,
) {
    use harness_e2e::identity::{get, send, Via, Who};
    let (base, provider) = leaky_provider().await;
    let models = std::env::temp_dir().join(format!("{}.toml", unique("harness-models")));
    let catalog = format!(
        "default = \"leaky\"\n[models.leaky]\nprovider = \"openai\"\nmodel = \"gpt-test\"\nbase_url = \"{base}\"\n"
    );
    std::fs::write(&models, catalog).expect("write the models file");
    let file = models.display().to_string();
    let Some(s) = Server::start_on(backend, &["--agent", "llm", "--models", &file]).await else {
        return;
    };
    let alice = Who::header("alice");
    for via in Via::BOTH {
        let task = send(
            &s,
            &alice,
            via,
            user_message(&unique("m"), "Paint the shed"),
        )
        .await
        .ok()["task"]
            .clone();
        assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
        let id = task["id"].as_str().expect("id").to_owned();
        let told = task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            told.starts_with("The model call failed (error ") && told.contains("harness's log"),
            "{told}"
        );
        let stored = get(&s, &alice, via, &id).await.ok();
        let events = s
            .store()
            .read_events(&id, None, 1000)
            .await
            .expect("the task's events");
        let events: Vec<_> = events.iter().map(|e| &e.event).collect();
        let events = serde_json::to_string(&events).expect("events as JSON");
        for leak in [LEAKED_URL, LEAKED_KEY, "internal-gateway", "sk-proj", &base] {
            for (what, text) in [
                ("the answer", task.to_string()),
                ("the task", stored.to_string()),
                ("its events", events.clone()),
            ] {
                assert!(!text.contains(leak), "{what} carries {leak:?}: {text}");
            }
        }
    }
    provider.abort();
    let _ = std::fs::remove_file(models);
}

#[tokio::test]
async fn a_failed_model_call_tells_participants_a_reason_not_the_providers_body_embedded() {
    a_failed_model_call_tells_participants_a_reason_not_the_providers_body(
        harness_e2e::Backend::Embedded,
    )
    .await;
}

#[tokio::test]
async fn a_failed_model_call_tells_participants_a_reason_not_the_providers_body_on_dynamodb() {
    a_failed_model_call_tells_participants_a_reason_not_the_providers_body(
        harness_e2e::Backend::DynamoDb,
    )
    .await;
}

/// Issue 48 (9): a 900 KB message to a harness with no model configured completes on
/// both stores: the offline model quotes its first 200 characters, not the whole (which
/// made the answer too large for one DynamoDB write).
async fn a_long_message_without_a_model_completes(backend: Backend) {
    let Some(s) = Server::start_on(backend, &["--agent", "llm"]).await else {
        return;
    };
    let text = format!("Plan my week. {}", "x".repeat(900_000));
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("m"), &text)}),
        )
        .await;
    let task = &result["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        task["status"]
    );
    let answer = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        answer.contains("Plan my week") && answer.len() < 1_000,
        "{answer}"
    );
}

#[tokio::test]
async fn a_long_message_without_a_model_completes_on_the_embedded_store() {
    a_long_message_without_a_model_completes(Backend::Embedded).await;
}

#[tokio::test]
async fn a_long_message_without_a_model_completes_on_dynamodb() {
    a_long_message_without_a_model_completes(Backend::DynamoDb).await;
}
