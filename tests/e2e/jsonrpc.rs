//! Every A2A operation over the JSON-RPC binding (POST `/`), on its success path
//! (push-config CRUD included); the extended card, which this server refuses by design,
//! answers its spec error.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use harness_e2e::*;
use serde_json::{json, Value};

#[tokio::test]
async fn send_message_blocks_until_the_task_completes_and_returns_it() {
    let s = Server::start().await;
    let mid = unique("tck-complete-task");
    let result = s
        .rpc_ok("SendMessage", send_params(user_message(&mid, "hi")))
        .await;
    let obj = result.as_object().expect("result object");
    assert_eq!(
        obj.keys().collect::<Vec<_>>(),
        ["task"],
        "exactly one of task/message: {result}"
    );
    let task = &result["task"];
    assert!(task["id"].as_str().is_some_and(|s| !s.is_empty()), "{task}");
    assert!(
        task["contextId"].as_str().is_some_and(|s| !s.is_empty()),
        "{task}"
    );
    assert_eq!(state(task), "TASK_STATE_COMPLETED");
    assert_eq!(status_text(task), "Hello from TCK");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert!(task["status"]["timestamp"].as_str().is_some(), "{task}");
    let history = task["history"].as_array().expect("history");
    assert!(
        history
            .iter()
            .any(|m| m["messageId"] == mid.as_str() && m["role"] == "ROLE_USER"),
        "the user message is in the history: {task}"
    );
    assert!(task.get("kind").is_none(), "no 0.3 kind key: {task}");
}

#[tokio::test]
async fn send_message_response_echoes_string_and_integer_request_ids() {
    let s = Server::start().await;
    for id in [json!("abc-1"), json!(42)] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage",
            "params": send_params(user_message(&unique("tck-complete-task"), "x"))});
        let resp = s.rpc_body(&body.to_string()).await;
        assert_eq!(resp["jsonrpc"], "2.0");
        assert_eq!(resp["id"], id, "{resp}");
        assert!(resp["result"]["task"].is_object(), "{resp}");
    }
}

#[tokio::test]
async fn send_message_with_return_immediately_answers_before_the_task_settles() {
    let s = Server::start().await;
    let started = Instant::now();
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("test-resubscribe-message-id"), "slow"),
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "returnImmediately waited {:?}",
        started.elapsed()
    );
    let st = state(&result["task"]);
    assert!(
        st == "TASK_STATE_SUBMITTED" || st == "TASK_STATE_WORKING",
        "in-progress state expected: {result}"
    );
}

#[tokio::test]
async fn send_message_with_task_id_continues_an_input_required_task() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let reply = unique("tck-complete-task");
    let result = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&reply, id, "more")),
        )
        .await;
    let done = &result["task"];
    assert_eq!(done["id"], id);
    assert_eq!(
        done["contextId"], task["contextId"],
        "context inferred from the task"
    );
    assert_eq!(state(done), "TASK_STATE_COMPLETED");
    let ids: Vec<&str> = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["messageId"].as_str())
        .collect();
    assert!(ids.contains(&reply.as_str()), "reply in history: {done}");
    assert!(ids.len() >= 2, "both turns in history: {done}");
}

#[tokio::test]
async fn send_message_with_the_matching_context_id_continues_the_task() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let mut msg = reply_message(
        &unique("tck-complete-task"),
        task["id"].as_str().unwrap(),
        "x",
    );
    msg["contextId"] = task["contextId"].clone();
    let result = s.rpc_ok("SendMessage", send_params(msg)).await;
    assert_eq!(state(&result["task"]), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn send_message_with_a_client_context_id_starts_a_task_in_that_context() {
    let s = Server::start().await;
    let ctx = unique("ctx");
    let mut msg = user_message(&unique("tck-complete-task"), "x");
    msg["contextId"] = json!(ctx);
    let result = s.rpc_ok("SendMessage", send_params(msg)).await;
    assert_eq!(result["task"]["contextId"], ctx.as_str());
}

#[tokio::test]
async fn send_message_with_a_repeated_message_id_is_processed_once() {
    let s = Server::start().await;
    let mid = unique("tck-complete-task");
    let first = s
        .rpc_ok("SendMessage", send_params(user_message(&mid, "a")))
        .await;
    let second = s
        .rpc_ok("SendMessage", send_params(user_message(&mid, "a")))
        .await;
    assert_eq!(
        first["task"]["id"], second["task"]["id"],
        "same task: {first} / {second}"
    );
    let list = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 1, "no second task: {list}");
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn send_message_accepts_snake_case_and_integer_enums() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let params = json!({"message": {"message_id": unique("tck-complete-task"),
        "task_id": task["id"], "context_id": task["contextId"], "role": 1,
        "parts": [{"text": "x", "media_type": "text/plain"}]},
        "unknownField": {"ignored": true}});
    let result = s.rpc_ok("SendMessage", params).await;
    assert_eq!(state(&result["task"]), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn get_task_returns_the_stored_task_and_honours_history_length() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let got = s.rpc_ok("GetTask", json!({"id": id})).await;
    assert_eq!(got["id"], id);
    assert_eq!(got["contextId"], task["contextId"]);
    assert_eq!(state(&got), "TASK_STATE_INPUT_REQUIRED");

    // Two more turns: history grows.
    let r = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&unique("tck-input-required"), id, "again")),
        )
        .await;
    assert_eq!(state(&r["task"]), "TASK_STATE_INPUT_REQUIRED");
    let full = s.rpc_ok("GetTask", json!({"id": id})).await;
    let n = full["history"].as_array().map(Vec::len).unwrap_or(0);
    assert!(n >= 2, "history has both user messages: {full}");

    let none = s
        .rpc_ok("GetTask", json!({"id": id, "historyLength": 0}))
        .await;
    assert!(
        none.get("history").is_none() || none["history"].as_array().is_some_and(Vec::is_empty),
        "historyLength 0 omits history: {none}"
    );
    let one = s
        .rpc_ok("GetTask", json!({"id": id, "history_length": 1}))
        .await;
    let h = one["history"].as_array().expect("history with one message");
    assert_eq!(h.len(), 1, "{one}");
    assert_eq!(
        h[0],
        full["history"].as_array().unwrap()[n - 1],
        "the most recent message"
    );
}

#[tokio::test]
async fn list_tasks_on_an_empty_server_has_all_four_keys() {
    let s = Server::start().await;
    let list = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(list["tasks"], json!([]), "{list}");
    assert_eq!(list["nextPageToken"], "", "{list}");
    assert_eq!(list["totalSize"], 0, "{list}");
    assert!(list["pageSize"].as_i64().is_some(), "{list}");
    // params may be missing entirely
    let resp = s
        .rpc_body(r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks"}"#)
        .await;
    assert!(resp["result"]["tasks"].is_array(), "{resp}");
}

#[tokio::test]
async fn list_tasks_walks_five_tasks_in_pages_of_two_without_duplicates() {
    let s = Server::start().await;
    let mut created = Vec::new();
    for _ in 0..5 {
        created.push(s.completed_task().await["id"].as_str().unwrap().to_owned());
        // distinct status timestamps (millisecond precision), so the order is defined
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let pages = list_all_pages_rpc(&s, json!({"pageSize": 2})).await;
    let sizes: Vec<usize> = pages
        .iter()
        .map(|p| p["tasks"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [2, 2, 1], "{pages:?}");
    for p in &pages {
        assert_eq!(p["pageSize"], 2, "{p}");
        assert_eq!(p["totalSize"], 5, "{p}");
    }
    assert_eq!(pages[2]["nextPageToken"], "");
    assert!(pages[0]["nextPageToken"]
        .as_str()
        .is_some_and(|t| !t.is_empty()));
    let all: Vec<String> = pages
        .iter()
        .flat_map(|p| p["tasks"].as_array().unwrap().clone())
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    let unique_ids: HashSet<&String> = all.iter().collect();
    assert_eq!(unique_ids.len(), 5, "no duplicates: {all:?}");
    assert_eq!(unique_ids, created.iter().collect::<HashSet<_>>());
    // newest first
    let mut expected = created.clone();
    expected.reverse();
    assert_eq!(all, expected, "newest (last updated) first");
}

#[tokio::test]
async fn list_tasks_orders_by_status_timestamp_descending() {
    let s = Server::start().await;
    let older = s.input_required_task().await;
    tokio::time::sleep(Duration::from_millis(3)).await;
    let _newer = s.completed_task().await;
    tokio::time::sleep(Duration::from_millis(3)).await;
    // Updating the older task makes it the most recently updated.
    let id = older["id"].as_str().unwrap();
    s.rpc_ok(
        "SendMessage",
        send_params(reply_message(&unique("tck-complete-task"), id, "x")),
    )
    .await;
    let list = s.rpc_ok("ListTasks", json!({})).await;
    let tasks = list["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["id"], id, "recently updated first: {list}");
    let keys: Vec<String> = tasks
        .iter()
        .map(|t| timestamp_key(t["status"]["timestamp"].as_str().unwrap()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(keys, sorted);
}

#[tokio::test]
async fn list_tasks_omits_artifacts_unless_include_artifacts_is_true() {
    let s = Server::start().await;
    s.send_task(&unique("tck-artifact-text")).await;
    let plain = s.rpc_ok("ListTasks", json!({})).await;
    let t = &plain["tasks"][0];
    assert!(
        t.get("artifacts").is_none(),
        "artifacts key must be absent: {t}"
    );
    let with = s
        .rpc_ok("ListTasks", json!({"includeArtifacts": true}))
        .await;
    let a = &with["tasks"][0]["artifacts"];
    assert_eq!(a[0]["parts"][0]["text"], "Generated text content", "{with}");
    let snake = s
        .rpc_ok(
            "ListTasks",
            json!({"include_artifacts": true, "page_size": 1}),
        )
        .await;
    assert!(snake["tasks"][0]["artifacts"].is_array(), "{snake}");
    assert_eq!(snake["pageSize"], 1);
}

#[tokio::test]
async fn list_tasks_filters_by_context_id_and_status_and_limits_history() {
    let s = Server::start().await;
    let ctx = unique("ctx");
    let mut msg = user_message(&unique("tck-input-required"), "x");
    msg["contextId"] = json!(ctx);
    let in_ctx = s.rpc_ok("SendMessage", send_params(msg)).await["task"].clone();
    let _other = s.completed_task().await;

    let by_ctx = s.rpc_ok("ListTasks", json!({"contextId": ctx})).await;
    assert_eq!(by_ctx["totalSize"], 1, "{by_ctx}");
    assert_eq!(by_ctx["tasks"][0]["id"], in_ctx["id"]);

    let by_state = s
        .rpc_ok("ListTasks", json!({"status": "TASK_STATE_INPUT_REQUIRED"}))
        .await;
    let ids: Vec<&Value> = by_state["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(ids, [&in_ctx["id"]], "{by_state}");

    let completed = s
        .rpc_ok("ListTasks", json!({"status": "TASK_STATE_COMPLETED"}))
        .await;
    assert_eq!(completed["totalSize"], 1, "{completed}");

    let no_history = s.rpc_ok("ListTasks", json!({"historyLength": 0})).await;
    for t in no_history["tasks"].as_array().unwrap() {
        assert!(
            t.get("history").is_none() || t["history"] == json!([]),
            "historyLength 0: {t}"
        );
    }
}

#[tokio::test]
async fn cancel_task_cancels_an_input_required_task() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let canceled = s
        .rpc_ok("CancelTask", json!({"id": id, "metadata": {"why": "test"}}))
        .await;
    assert_eq!(canceled["id"], id);
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    assert_eq!(state(&s.get_task(id).await), "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn cancel_task_stops_a_working_task_for_good() {
    let s = Server::start().await;
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("test-resubscribe-message-id"), "slow"),
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = result["task"]["id"].as_str().unwrap().to_owned();
    s.wait_for_state(&id, "TASK_STATE_WORKING", Duration::from_secs(3))
        .await;
    let canceled = s.rpc_ok("CancelTask", json!({"id": id})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    // The agent's run ends after ~4 s; it must not overwrite the cancel.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    assert_eq!(state(&s.get_task(&id).await), "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn push_notification_config_methods_create_get_list_and_delete_idempotently() {
    // Config CRUD works on a task that is already completed; public URLs need no flag.
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task["id"].as_str().unwrap();

    // A client-chosen id is kept; the stored config is returned with taskId and id.
    let with_id = s
        .rpc_ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "cfg-1", "url": "https://example.com/hook",
            "token": "tok-1", "authentication": {"scheme": "Bearer", "credentials": "x"}}),
        )
        .await;
    assert_eq!(
        with_id,
        json!({"taskId": id, "id": "cfg-1", "url": "https://example.com/hook",
            "token": "tok-1", "authentication": {"scheme": "Bearer", "credentials": "x"}})
    );
    // Without an id, one is generated.
    let generated = s
        .rpc_ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "https://example.com/other"}),
        )
        .await;
    let gen_id = generated["id"].as_str().expect("generated id").to_owned();
    assert!(!gen_id.is_empty() && gen_id != "cfg-1", "{generated}");
    assert_eq!(generated["taskId"], id);
    assert_eq!(generated["url"], "https://example.com/other");

    let got = s
        .rpc_ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "cfg-1"}),
        )
        .await;
    assert_eq!(got, with_id);

    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    let ids: HashSet<&str> = list["configs"]
        .as_array()
        .expect("configs array")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, HashSet::from(["cfg-1", gen_id.as_str()]), "{list}");
    assert_eq!(list["nextPageToken"], "", "{list}");

    // Delete answers an empty result, and a second delete is not an error.
    for _ in 0..2 {
        let r = s
            .rpc_ok(
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": id, "id": "cfg-1"}),
            )
            .await;
        assert!(r == json!({}) || r.is_null(), "delete answered {r}");
    }
    s.rpc_err(
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "cfg-1"}),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(list["configs"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["configs"][0]["id"], gen_id.as_str(), "{list}");
}

#[tokio::test]
async fn push_notification_config_methods_refuse_unknown_tasks_and_non_http_urls() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let missing = "no-such-task";
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": missing, "url": "https://example.com/hook"}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": missing, "id": "cfg-1"}),
        ),
        (
            "ListTaskPushNotificationConfigs",
            json!({"taskId": missing}),
        ),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": missing, "id": "cfg-1"}),
        ),
        // a config id the task does not have
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "never-created"}),
        ),
    ] {
        s.rpc_err(method, params, -32001, "TASK_NOT_FOUND").await;
    }
    for url in [
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "not a url",
        "example.com/hook",
    ] {
        s.rpc_err(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": url}),
            -32602,
            "INVALID_PARAMS",
        )
        .await;
    }
    // A task in another tenant is not visible.
    s.rpc_err(
        "CreateTaskPushNotificationConfig",
        json!({"tenant": "other", "taskId": id, "url": "https://example.com/hook"}),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(list["configs"], json!([]), "nothing was stored: {list}");
}

#[tokio::test]
async fn get_extended_agent_card_is_an_unsupported_operation() {
    let s = Server::start().await;
    s.rpc_err(
        "GetExtendedAgentCard",
        json!({}),
        -32004,
        "UNSUPPORTED_OPERATION",
    )
    .await;
    let resp = s
        .rpc_body(r#"{"jsonrpc":"2.0","id":"x","method":"GetExtendedAgentCard"}"#)
        .await;
    assert_rpc_error(&resp, -32004, "UNSUPPORTED_OPERATION");
    assert_eq!(resp["id"], "x");
}

#[tokio::test]
async fn tasks_are_scoped_by_the_tenant_param() {
    let s = Server::start().await;
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"tenant": "acme", "message": user_message(&unique("tck-input-required"), "x")}),
        )
        .await;
    let id = result["task"]["id"].as_str().unwrap();
    let got = s
        .rpc_ok("GetTask", json!({"tenant": "acme", "id": id}))
        .await;
    assert_eq!(got["id"], id);
    let acme = s.rpc_ok("ListTasks", json!({"tenant": "acme"})).await;
    assert_eq!(acme["totalSize"], 1, "{acme}");
    let default = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(
        default["totalSize"], 0,
        "another tenant's task is not listed: {default}"
    );
    s.rpc_err("GetTask", json!({"id": id}), -32001, "TASK_NOT_FOUND")
        .await;
}

#[tokio::test]
async fn send_message_configuration_history_length_limits_the_returned_history() {
    let s = Server::start().await;
    let r = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("tck-complete-task"), "x"),
                   "configuration": {"historyLength": 0}}),
        )
        .await;
    let t = &r["task"];
    assert!(
        t.get("history").is_none() || t["history"] == json!([]),
        "{r}"
    );
    let stored = s.get_task(t["id"].as_str().unwrap()).await;
    assert!(
        stored["history"].as_array().is_some_and(|h| !h.is_empty()),
        "the store keeps it: {stored}"
    );
}

#[tokio::test]
async fn timestamps_are_rfc3339_utc() {
    let s = Server::start().await;
    let task = s.completed_task().await;
    let ts = task["status"]["timestamp"].as_str().unwrap();
    assert!(
        ts.ends_with('Z') && ts.contains('T') && ts.len() >= 20,
        "{ts}"
    );
    assert!(ts.as_bytes()[..4].iter().all(u8::is_ascii_digit), "{ts}");
}

#[tokio::test]
async fn parts_of_every_kind_are_accepted_and_raw_is_normalised_to_padded_base64() {
    let s = Server::start().await;
    let mid = unique("tck-complete-task");
    let msg = json!({"messageId": mid, "role": "ROLE_USER", "contextId": null, "parts": [
        {"text": "t", "mediaType": "text/plain", "metadata": {"k": "v"}},
        {"raw": "aGk", "filename": "hi.txt", "mediaType": "text/plain"},
        {"raw": "-_8=", "filename": "urlsafe.bin"},
        {"url": "https://example.com/doc.pdf", "filename": "doc.pdf"},
        {"data": {"key": "value"}},
        {"data": [1, 2, 3]},
        {"data": "a string"}
    ]});
    let r = s
        .rpc_ok(
            "SendMessage",
            json!({"message": msg, "configuration": null, "metadata": {"m": 1}}),
        )
        .await;
    let t = &r["task"];
    assert_eq!(state(t), "TASK_STATE_COMPLETED", "{r}");
    let sent = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["messageId"] == mid.as_str())
        .expect("user message in history");
    let parts = sent["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 7, "{sent}");
    assert_eq!(parts[0]["metadata"], json!({"k": "v"}));
    assert_eq!(
        parts[1]["raw"], "aGk=",
        "unpadded base64 normalised: {sent}"
    );
    assert_eq!(
        parts[2]["raw"], "+/8=",
        "URL-safe base64 normalised: {sent}"
    );
    assert_eq!(parts[3]["url"], "https://example.com/doc.pdf");
    assert_eq!(parts[5]["data"], json!([1, 2, 3]));
    assert_eq!(parts[6]["data"], "a string");
    assert_eq!(
        sent["contextId"], t["contextId"],
        "server fills the context in"
    );
    assert_eq!(sent["taskId"], t["id"]);
}

#[tokio::test]
async fn concurrent_sends_of_one_message_id_create_one_task() {
    let s = Server::start().await;
    let mid = unique("tck-complete-task");
    let sends = (0..6).map(|_| s.rpc_ok("SendMessage", send_params(user_message(&mid, "x"))));
    let results = futures::future::join_all(sends).await;
    let ids: HashSet<&Value> = results.iter().map(|r| &r["task"]["id"]).collect();
    assert_eq!(ids.len(), 1, "{results:?}");
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 1);
}

#[tokio::test]
async fn list_tasks_filters_by_status_timestamp_after() {
    let s = Server::start().await;
    let old = s.completed_task().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let newer = s.completed_task().await;
    let cut = newer["status"]["timestamp"].as_str().unwrap();
    let list = s
        .rpc_ok("ListTasks", json!({"statusTimestampAfter": cut}))
        .await;
    let ids: Vec<&Value> = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(
        ids,
        [&newer["id"]],
        "only tasks updated at or after {cut}: {list}"
    );
    let all = s
        .rpc_ok(
            "ListTasks",
            json!({"status_timestamp_after": old["status"]["timestamp"]}),
        )
        .await;
    assert_eq!(all["totalSize"], 2, "{all}");
    let none = s
        .rpc_ok(
            "ListTasks",
            json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(none["totalSize"], 0, "{none}");
    assert_eq!(none["tasks"], json!([]));
}
