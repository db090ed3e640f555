//! What harness-local's log looks like in a file (issue 19, item 5): text without
//! terminal escape codes, or, with `--log-format json`, one JSON object per line.

use harness_e2e::*;

/// Makes the server log something: a task, so requests and a drive are logged.
async fn some_work(s: &Server) {
    let task = s.send_task(&unique("tck-complete-task")).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
}

#[tokio::test]
async fn a_log_file_has_no_escape_codes() {
    let s = Server::start_with(&[]).await;
    some_work(&s).await;
    let Some(log) = s.log_text() else {
        return; // HARNESS_E2E_LOG passes the log through instead
    };
    assert!(!log.trim().is_empty(), "the server logged something");
    assert!(!log.contains('\u{1b}'), "escape codes in {log}");
}

#[tokio::test]
async fn log_format_json_writes_one_object_a_line() {
    let s = Server::start_with(&["--log-format", "json"]).await;
    some_work(&s).await;
    let Some(log) = s.log_text() else {
        return;
    };
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "the server logged something");
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert!(v.is_object() && v.get("level").is_some(), "{line}");
    }
}

#[tokio::test]
async fn a_requests_lines_carry_its_request_id_operation_participant_and_task() {
    let s = Server::start_with(&["--log-format", "json"]).await;
    let missing = unique("no-such-task");
    let answer = s.rpc("GetTask", serde_json::json!({"id": missing})).await;
    assert!(answer.get("error").is_some(), "{answer}");
    let Some(log) = s.log_text() else {
        return;
    };
    let refused: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v["fields"]["message"] == "refused")
        .collect();
    assert_eq!(refused.len(), 1, "{log}");
    let span = &refused[0]["span"];
    assert_eq!(span["name"], "a2a", "{span}");
    assert_eq!(span["op"], "GetTask", "{span}");
    assert_eq!(span["participant"], "anonymous", "{span}");
    assert_eq!(span["task_id"], missing.as_str(), "{span}");
    assert!(
        span["request_id"].as_str().is_some_and(|id| !id.is_empty()),
        "{span}"
    );
}

/// Issue 48 (6): an id a client sends with a newline and an escape code reaches no log
/// line raw, in text or JSON: it cannot forge a line (`WARN … admin token minted`) or
/// repaint a terminal. GetTask names the id in its request's span; a SendMessage whose
/// contextId is not its task's is refused with an error that quotes it.
#[tokio::test]
async fn a_clients_control_characters_reach_no_log_line_raw() {
    let forged = "x\n\u{1b}[2K2026-12-05T00:00:00Z  WARN forged: admin token minted";
    for format in ["text", "json"] {
        let s = Server::start_with(&["--log-format", format]).await;
        let answer = s.rpc("GetTask", serde_json::json!({"id": forged})).await;
        assert!(answer.get("error").is_some(), "{answer}");
        // A refusal that quotes the client's contextId back (`error = %e`).
        let task = s.send_task(&unique("tck-complete-task")).await;
        let message = serde_json::json!({"message": {
            "messageId": unique("m"), "role": "ROLE_USER", "parts": [{"text": "hi"}],
            "taskId": task["id"], "contextId": forged}});
        let answer = s.rpc("SendMessage", message).await;
        assert!(answer.get("error").is_some(), "{answer}");
        let Some(log) = s.log_text() else {
            return;
        };
        assert!(
            log.contains("admin token minted"),
            "{format}: the id is logged\n{log}"
        );
        assert!(
            !log.contains('\u{1b}'),
            "{format}: a raw escape code in\n{log}"
        );
        for line in log.lines() {
            assert!(
                !line.contains("WARN forged") || line.contains("x\\n"),
                "{format}: a forged line {line:?}"
            );
            if format == "json" {
                serde_json::from_str::<serde_json::Value>(line).expect("a JSON line");
            }
        }
    }
}
