//! harness-local with the LLM agent on the scripted model: a task whose model calls a
//! tool and then answers completes over HTTP with the answer as status message and
//! artifact; a bad model setting stops the server at start-up with the reason.

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

#[test]
fn the_llm_agent_without_a_model_refuses_to_start_and_says_why() {
    let out = std::process::Command::new(harness_e2e::server_binary())
        .args(["--listen", "127.0.0.1:0", "--agent", "llm"])
        .env_remove("HARNESS_MODEL")
        .env_remove("HARNESS_MODELS")
        .output()
        .expect("run harness-local");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs a model"), "{stderr}");
}
