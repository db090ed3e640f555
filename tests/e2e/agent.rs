//! The conformance agent: each messageId-prefix behaviour (spec §7.1), over the blocking
//! SendMessage of both bindings and over streams.

use std::time::{Duration, Instant};

use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

/// The task (or message) a blocking send answers with, over JSON-RPC and over REST.
async fn both_bindings(s: &Server, prefix: &str) -> [Value; 2] {
    let rpc = s
        .rpc_ok(
            "SendMessage",
            send_params(user_message(&unique(prefix), "hello")),
        )
        .await;
    let (st, rest) = s
        .rest_post(
            "/message:send",
            send_params(user_message(&unique(prefix), "hello")),
        )
        .await;
    assert_eq!(st, 200, "{rest}");
    [rpc, rest]
}

fn only_artifact(task: &Value) -> &Value {
    let arts = task["artifacts"]
        .as_array()
        .unwrap_or_else(|| panic!("no artifacts: {task}"));
    assert_eq!(arts.len(), 1, "{task}");
    let a = &arts[0];
    assert!(
        a["artifactId"].as_str().is_some_and(|x| !x.is_empty()),
        "{a}"
    );
    assert_eq!(a["parts"].as_array().map(Vec::len), Some(1), "{a}");
    &a["parts"][0]
}

#[tokio::test]
async fn complete_task_completes_with_hello_from_tck() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-complete-task").await {
        assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED", "{r}");
        assert_eq!(status_text(&r["task"]), "Hello from TCK");
        assert_eq!(r["task"]["status"]["message"]["taskId"], r["task"]["id"]);
        assert_eq!(
            r["task"]["status"]["message"]["contextId"],
            r["task"]["contextId"]
        );
    }
}

#[tokio::test]
async fn unknown_prefixes_complete_like_complete_task() {
    let s = Server::start().await;
    for r in both_bindings(&s, "anything-else").await {
        assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED", "{r}");
    }
}

#[tokio::test]
async fn input_required_waits_and_a_reply_completes_it() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-input-required").await {
        let task = &r["task"];
        assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{r}");
        assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
        let id = task["id"].as_str().unwrap();
        let done = s
            .rpc_ok(
                "SendMessage",
                send_params(reply_message(&unique("tck-complete-task"), id, "here")),
            )
            .await;
        assert_eq!(state(&done["task"]), "TASK_STATE_COMPLETED");
        assert_eq!(status_text(&done["task"]), "Hello from TCK");
        // The agent's question moved into the history.
        let history = done["task"]["history"].as_array().unwrap();
        assert!(history.iter().any(|m| m["role"] == "ROLE_AGENT"), "{done}");
    }
}

#[tokio::test]
async fn message_response_answers_with_a_message_and_creates_no_task() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-message-response").await {
        assert!(r.get("task").is_none(), "{r}");
        let m = &r["message"];
        assert_eq!(m["parts"][0]["text"], "Direct message response", "{r}");
        assert_eq!(m["role"], "ROLE_AGENT");
        assert!(m["messageId"].as_str().is_some_and(|x| !x.is_empty()));
    }
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 0);
}

#[tokio::test]
async fn reject_task_is_rejected() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-reject-task").await {
        assert_eq!(state(&r["task"]), "TASK_STATE_REJECTED", "{r}");
    }
}

#[tokio::test]
async fn artifact_text_completes_with_a_text_artifact() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-artifact-text").await {
        assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED");
        assert_eq!(
            only_artifact(&r["task"])["text"],
            "Generated text content",
            "{r}"
        );
    }
}

#[tokio::test]
async fn artifact_file_completes_with_raw_bytes() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-artifact-file").await {
        assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED");
        let p = only_artifact(&r["task"]);
        assert_eq!(p["raw"], "dGNr", "{r}");
        assert_eq!(p["filename"], "output.txt");
        assert_eq!(p["mediaType"], "text/plain");
        assert!(p.get("url").is_none());
    }
}

#[tokio::test]
async fn artifact_file_url_completes_with_a_url() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-artifact-file-url").await {
        assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED");
        let p = only_artifact(&r["task"]);
        assert_eq!(p["url"], "https://example.com/output.txt", "{r}");
        assert!(p.get("raw").is_none(), "{r}");
    }
}

#[tokio::test]
async fn artifact_data_completes_with_structured_data() {
    let s = Server::start().await;
    for r in both_bindings(&s, "tck-artifact-data").await {
        assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED");
        assert_eq!(
            only_artifact(&r["task"])["data"],
            json!({"key": "value", "count": 42}),
            "{r}"
        );
    }
}

#[tokio::test]
async fn stream_prefixes_work_when_sent_without_streaming() {
    let s = Server::start().await;
    for prefix in [
        "tck-stream-001",
        "tck-stream-002",
        "tck-stream-003",
        "tck-stream-ordering-001",
        "tck-stream-artifact-text",
        "tck-stream-artifact-file",
        "tck-stream-artifact-chunked",
    ] {
        let task = s.send_task(&unique(prefix)).await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{prefix}: {task}");
    }
}

#[tokio::test]
async fn stream_prefixes_stream_working_artifact_completed_over_rest() {
    let s = Server::start().await;
    for prefix in [
        "tck-stream-001",
        "tck-stream-003",
        "tck-stream-ordering-001",
        "tck-stream-artifact-text",
        "tck-stream-artifact-file",
    ] {
        let events = s
            .rest_stream(
                Method::POST,
                "/message:stream",
                Some(send_params(user_message(&unique(prefix), "x"))),
            )
            .await;
        assert_eq!(
            kinds(&events),
            ["task", "statusUpdate", "artifactUpdate", "statusUpdate"],
            "{prefix}"
        );
        assert_eq!(
            states(&events),
            [
                "TASK_STATE_SUBMITTED",
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED"
            ],
            "{prefix}"
        );
    }
    let events = s
        .rest_stream(
            Method::POST,
            "/message:stream",
            Some(send_params(user_message(&unique("tck-stream-002"), "x"))),
        )
        .await;
    assert_eq!(
        states(&events),
        ["TASK_STATE_SUBMITTED", "TASK_STATE_COMPLETED"]
    );
    let events = s
        .rest_stream(
            Method::POST,
            "/message:stream",
            Some(send_params(user_message(
                &unique("tck-stream-artifact-chunked"),
                "x",
            ))),
        )
        .await;
    assert_eq!(
        kinds(&events),
        [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate"
        ]
    );
}

#[tokio::test]
async fn resubscribe_task_works_for_seconds_then_completes() {
    let s = Server::start().await;
    let started = Instant::now();
    let r = s
        .rpc_ok(
            "SendMessage",
            send_params(user_message(&unique("test-resubscribe-message-id"), "x")),
        )
        .await;
    let took = started.elapsed();
    assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED", "{r}");
    assert!(
        took >= Duration::from_secs(3),
        "blocking send waited only {took:?}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}
