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
