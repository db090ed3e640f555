//! harness-local's `/metrics`: the Prometheus text format, counting what the harness did
//! (a task created and completed by the LLM agent, its model call and tokens, the
//! requests by operation, the time to a stream's first event).

use harness_e2e::participants::{llm_server, Script};
use harness_e2e::*;
use serde_json::json;

/// The value of the sample line `name` (labels included, as printed), if present.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test]
async fn metrics_count_a_completed_task_its_model_calls_and_tokens() {
    // Each task's first model call gets the first turn.
    let script = Script::new(json!([{"text": "Release notes tidied."}]));
    let s = llm_server(Backend::Embedded, &script)
        .await
        .expect("the embedded store");
    let task = s
        .rpc_ok(
            "SendMessage",
            send_params(user_message(&unique("m"), "Tidy the notes.")),
        )
        .await;
    assert_eq!(state(&task["task"]), "TASK_STATE_COMPLETED", "{task}");
    let (_, events) = s
        .rpc_stream(
            "SendStreamingMessage",
            send_params(user_message(&unique("m"), "And once more.")),
        )
        .await;
    assert!(!events.is_empty());

    let resp = s.http.get(s.endpoint("/metrics")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        content_type(&resp).contains("text"),
        "{}",
        content_type(&resp)
    );
    let text = resp.text().await.unwrap();
    // A script is counted by its file's stem (issue 48, item 9).
    let model = script.model();
    let stem = std::path::Path::new(model.strip_prefix("scripted:").unwrap())
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap();
    let labelled = |name: &str| format!("{name}{{model=\"scripted:{stem}\"}}");
    for (name, want) in [
        ("harness_tasks_created_total".to_owned(), 2.0),
        ("harness_tasks_completed_total".to_owned(), 2.0),
        ("harness_tasks_failed_total".to_owned(), 0.0),
        (labelled("harness_model_calls_total"), 2.0),
        // "Release notes tidied." (21 bytes, 6 tokens) for each task.
        (labelled("harness_model_tokens_out_total"), 12.0),
        (
            "harness_requests_total{operation=\"SendMessage\"}".to_owned(),
            1.0,
        ),
        ("harness_time_to_first_event_ms_count".to_owned(), 1.0),
    ] {
        assert_eq!(sample(&text, &name), Some(want), "{name}: {text}");
    }
    assert!(
        sample(&text, &labelled("harness_model_tokens_in_total")).unwrap() > 0.0,
        "{text}"
    );
}

/// Issue 48, item 9: a scripted model is named `scripted:<its file's stem>` where anyone
/// sees it, in `/model` and in the metrics' `model` label: its path names the operator's
/// directories (their user name, their checkout).
#[tokio::test]
async fn a_scripted_models_path_is_shown_neither_in_model_nor_in_the_metrics() {
    // Its first turn asks the sender, so the task waits for a `/model`.
    let ask = json!({"tool_calls": [{"name": "ask_participant", "arguments": {
        "participant_id": ANONYMOUS, "question": "Which notes?"}}]});
    let script = Script::new(json!([ask, {"text": "Done."}]));
    let s = llm_server(Backend::Embedded, &script)
        .await
        .expect("the embedded store");
    let model = script.model();
    let path = model.strip_prefix("scripted:").expect("a scripted model");
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a file stem");
    let shown = format!("scripted:{stem}");
    let task = s
        .rpc_ok(
            "SendMessage",
            send_params(user_message(&unique("m"), "Tidy the notes.")),
        )
        .await;
    let id = task["task"]["id"].as_str().expect("a task id");
    let answer = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&unique("m"), id, "/model")),
        )
        .await;
    let reply = answer["task"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        reply,
        format!("model: {shown} (the default)\nchoices: "),
        "{answer}"
    );
    let text = s
        .http
        .get(s.endpoint("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !text.contains(path),
        "the script's path in the metrics: {text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!("harness_model_calls_total{{model=\"{shown}\"}}")
        ),
        Some(1.0),
        "{text}"
    );
}
