//! harness-local with the LLM agent: on the scripted model, a task whose model calls a
//! tool and then answers completes over HTTP with the answer as status message and
//! artifact; with no model, the offline model answers; a bad model setting stops the
//! server at start-up with the reason; a crash never repeats a committed model call.

use harness_e2e::{unique, user_message, Server};
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
