//! Durability: tasks, their event logs and the seen messageIds survive a SIGKILL of the
//! server and a restart on the same state directory, and runs cut off by the kill carry on.

use harness_e2e::*;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn an_input_required_task_survives_sigkill_and_completes_after_restart() {
    let mut s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap().to_owned();
    let done = s.completed_task().await;
    let stored_before = s.get_task(&id).await;

    s.restart().await;

    // GetTask returns the task as it was.
    let after = s.get_task(&id).await;
    assert_eq!(after, stored_before, "task unchanged by the restart");
    assert_eq!(state(&after), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(s.get_task(done["id"].as_str().unwrap()).await, done);

    // SubscribeToTask: the Task as it is (each state once), then it closes: the task
    // waits for input.
    let (_, events) = s.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind(), "task", "{events:?}");
    assert_eq!(events[0].payload(), &after);
    let rest = s
        .rest_stream(Method::GET, &format!("/tasks/{id}:subscribe"), None)
        .await;
    let a: Vec<_> = events.iter().map(SseEvent::stream_response).collect();
    let b: Vec<_> = rest.iter().map(SseEvent::stream_response).collect();
    assert_eq!(a, b, "both bindings answer the same");

    // A reply completes it.
    let result = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&unique("tck-complete-task"), &id, "more")),
        )
        .await;
    assert_eq!(result["task"]["id"], id.as_str());
    assert_eq!(state(&result["task"]), "TASK_STATE_COMPLETED");
    assert_eq!(status_text(&result["task"]), "Hello from TCK");
    let list = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 2, "{list}");
}

#[tokio::test]
async fn a_streamed_task_streams_on_after_restarts() {
    let mut s = Server::start().await;
    let message = user_message(&unique("tck-input-required"), "x");
    let (_, first) = s
        .rpc_stream("SendStreamingMessage", send_params(message.clone()))
        .await;
    let id = first[0].payload()["id"].as_str().unwrap().to_owned();
    s.restart().await;
    s.restart().await; // twice, for good measure
                       // A subscription and the same message streamed again both show the task as its last
                       // live update left it, once.
    let (_, subscribed) = s.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    let (_, resent) = s
        .rpc_stream("SendStreamingMessage", send_params(message))
        .await;
    let last = first.last().unwrap().payload()["status"].clone();
    for events in [&subscribed, &resent] {
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].payload()["id"], id.as_str(), "{events:?}");
        assert_eq!(events[0].payload()["status"], last, "{events:?}");
    }
    // A streamed reply finishes it.
    let (_, more) = s
        .rpc_stream(
            "SendStreamingMessage",
            send_params(reply_message(&unique("tck-complete-task"), &id, "x")),
        )
        .await;
    assert_eq!(more[0].kind(), "task");
    assert_eq!(
        more.last().and_then(SseEvent::state),
        Some("TASK_STATE_COMPLETED")
    );
}

#[tokio::test]
async fn message_ids_seen_before_a_restart_are_still_deduplicated() {
    let mut s = Server::start().await;
    let mid = unique("tck-complete-task");
    let first = s
        .rpc_ok("SendMessage", send_params(user_message(&mid, "x")))
        .await;
    s.restart().await;
    let again = s
        .rpc_ok("SendMessage", send_params(user_message(&mid, "x")))
        .await;
    assert_eq!(first["task"]["id"], again["task"]["id"]);
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 1);
}

#[tokio::test]
async fn terminal_tasks_stay_terminal_after_restart() {
    let mut s = Server::start().await;
    let done = s.completed_task().await;
    let waiting = s.input_required_task().await;
    s.rpc_ok("CancelTask", json!({"id": waiting["id"]})).await;
    s.restart().await;
    for t in [&done, &waiting] {
        let id = t["id"].as_str().unwrap();
        s.rpc_err(
            "CancelTask",
            json!({"id": id}),
            -32002,
            "TASK_NOT_CANCELABLE",
        )
        .await;
        s.rpc_err(
            "SubscribeToTask",
            json!({"id": id}),
            -32004,
            "UNSUPPORTED_OPERATION",
        )
        .await;
    }
    assert_eq!(
        state(&s.get_task(waiting["id"].as_str().unwrap()).await),
        "TASK_STATE_CANCELED"
    );
}

#[tokio::test]
async fn pagination_and_tenants_survive_restart() {
    let mut s = Server::start().await;
    for _ in 0..3 {
        s.completed_task().await;
    }
    let (st, acme) = s
        .rest_post(
            "/acme/message:send",
            send_params(user_message(&unique("tck-complete-task"), "x")),
        )
        .await;
    assert_eq!(st, 200);
    s.restart().await;
    let pages = list_all_pages_rpc(&s, json!({"pageSize": 2})).await;
    let n: usize = pages
        .iter()
        .map(|p| p["tasks"].as_array().unwrap().len())
        .sum();
    assert_eq!(n, 3);
    let (st, got) = s
        .rest_get(&format!(
            "/acme/tasks/{}",
            acme["task"]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(st, 200, "{got}");
}

#[tokio::test]
async fn dropping_the_fixture_kills_the_server_and_removes_its_state() {
    let s = Server::start().await;
    s.completed_task().await;
    let dir = s.state_dir.clone();
    let url = s.url.clone();
    assert!(dir.exists());
    drop(s);
    assert!(!dir.exists(), "state dir {} removed", dir.display());
    let refused = common::https::client_builder()
        .build()
        .expect("a client")
        .get(format!("{url}/.well-known/agent-card.json"))
        .send()
        .await;
    assert!(refused.is_err(), "the server is gone");
}

/// The conformance agent's slow task, cut off by a kill, completes after the restart.
#[tokio::test]
async fn a_task_working_when_the_server_was_killed_completes_after_the_restart() {
    let mut s = Server::start().await;
    let accepted = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("test-resubscribe-message-id"), "hi"),
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = accepted["task"]["id"].as_str().expect("task id").to_owned();
    s.wait_for_state(&id, "TASK_STATE_WORKING", std::time::Duration::from_secs(5))
        .await;
    s.restart().await;
    s.wait_for_state(
        &id,
        "TASK_STATE_COMPLETED",
        std::time::Duration::from_secs(15),
    )
    .await;
}

/// Every answered commit survives SIGKILL, past the background checkpoints (one per 128
/// commits) and whether or not each commit is fsynced (`--fsync-commits`).
#[tokio::test]
async fn answered_commits_survive_sigkill_across_checkpoints_with_and_without_fsync() {
    for flags in [&[][..], &["--fsync-commits"][..]] {
        let mut s = Server::start_with(flags).await;
        let mut tasks = Vec::new();
        // Each completed task is at least two commits: well past two checkpoints.
        for _ in 0..150 {
            tasks.push(s.completed_task().await);
        }
        s.restart().await;
        let list = s.rpc_ok("ListTasks", json!({"pageSize": 100})).await;
        assert_eq!(list["totalSize"], tasks.len(), "{flags:?}");
        for task in [&tasks[0], &tasks[tasks.len() / 2], &tasks[tasks.len() - 1]] {
            let id = task["id"].as_str().expect("an id");
            assert_eq!(&s.get_task(id).await, task, "{flags:?}");
        }
    }
}

/// Issue 48 (7): the state directory is its owner's only: 0700, and every file the harness
/// made in it (the store and its log, the keys, the owners' lock files) 0600, even where
/// the directory was there before with wider permissions (the fixture makes it 0755).
/// `server.log` is the fixture's own file, not the harness's.
#[cfg(unix)]
#[tokio::test]
async fn a_fresh_state_directory_is_its_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let mut s = Server::start().await;
    s.completed_task().await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let mut seen = Vec::new();
    let mut dirs = vec![s.state_dir.clone()];
    while let Some(dir) = dirs.pop() {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n != "server.log") {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
                seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    for made in [
        "harness.sqlite3",
        "harness.sqlite3-wal",
        "harness.sqlite3-shm",
    ] {
        assert!(seen.iter().any(|f| f == made), "{made} in {seen:?}");
    }
    s.restart().await;
    assert_eq!(mode(&s.state_dir), 0o700);
}
