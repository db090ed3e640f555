//! Every error a client can trigger, on both bindings, with its spec shape: JSON-RPC
//! errors are HTTP 200 with `{code, message, data:[ErrorInfo…]}`; REST errors are
//! `{"error":{code,status,message,details:[ErrorInfo…]}}` with the matching HTTP status.
//! Bad input never breaks the server or the tasks it already stores.

use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

// ----------------------------------------------------------- JSON-RPC envelope

#[tokio::test]
async fn malformed_json_is_a_parse_error_with_a_null_id() {
    let s = Server::start().await;
    for body in ["{", "{\"jsonrpc\":\"2.0\",\"id\":1,", "not json", ""] {
        let resp = s.rpc_body(body).await;
        assert_rpc_error(&resp, -32700, "PARSE_ERROR");
        assert_eq!(resp["id"], Value::Null, "{body:?}: {resp}");
    }
}

#[tokio::test]
async fn a_batch_request_is_an_invalid_request() {
    let s = Server::start().await;
    let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}]);
    let resp = s.rpc_body(&batch.to_string()).await;
    assert_rpc_error(&resp, -32600, "INVALID_REQUEST");
    let resp = s.rpc_body("[]").await;
    assert_rpc_error(&resp, -32600, "INVALID_REQUEST");
}

#[tokio::test]
async fn bad_envelopes_are_invalid_requests() {
    let s = Server::start().await;
    let cases = [
        (
            json!({"jsonrpc": "1.0", "id": 7, "method": "ListTasks"}),
            json!(7),
        ),
        (json!({"id": 8, "method": "ListTasks"}), json!(8)),
        (json!({"jsonrpc": "2.0", "id": 9}), json!(9)),
        (json!({"jsonrpc": "2.0", "id": 10, "method": 5}), json!(10)),
        (
            json!({"jsonrpc": "2.0", "id": true, "method": "ListTasks"}),
            Value::Null,
        ),
        (json!("just a string"), Value::Null),
    ];
    for (body, id) in cases {
        let resp = s.rpc_body(&body.to_string()).await;
        assert_rpc_error(&resp, -32600, "INVALID_REQUEST");
        assert_eq!(resp["id"], id, "{body}: {resp}");
    }
}

#[tokio::test]
async fn unknown_methods_and_0_3_method_names_are_method_not_found() {
    let s = Server::start().await;
    for method in [
        "NoSuchMethod",
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/set",
        "agent/getAuthenticatedExtendedCard",
        "sendMessage",
        "ListTaskPushNotificationConfig",
    ] {
        let params = if method.contains("message") {
            send_params(user_message(&unique("tck-complete-task"), "x"))
        } else {
            json!({"id": "x"})
        };
        let err = s.rpc_err(method, params, -32601, "METHOD_NOT_FOUND").await;
        assert!(err["message"].is_string(), "{method}");
    }
}

#[tokio::test]
async fn params_that_are_not_an_object_are_invalid_params() {
    let s = Server::start().await;
    for params in ["[1]", "\"id\"", "5"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":"p","method":"GetTask","params":{params}}}"#);
        let resp = s.rpc_body(&body).await;
        assert_rpc_error(&resp, -32602, "INVALID_PARAMS");
        assert_eq!(resp["id"], "p");
    }
}

// ------------------------------------------------------------- invalid params

/// Requests that must each answer -32602 over JSON-RPC.
fn invalid_params_cases() -> Vec<(&'static str, Value)> {
    let mid = || unique("tck-complete-task");
    vec![
        // missing required fields
        ("SendMessage", json!({})),
        (
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "parts": [{"text": "x"}]}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER"}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER", "parts": []}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER", "parts": [{}]}}),
        ),
        ("GetTask", json!({})),
        ("CancelTask", json!({})),
        ("SubscribeToTask", json!({})),
        (
            "CreateTaskPushNotificationConfig",
            json!({"url": "https://example.com/h"}),
        ),
        ("GetTaskPushNotificationConfig", json!({"taskId": "t"})),
        ("ListTaskPushNotificationConfigs", json!({})),
        ("DeleteTaskPushNotificationConfig", json!({"id": "c"})),
        // two members of a oneof
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER",
            "parts": [{"text": "a", "url": "b"}]}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER",
            "parts": [{"text": "a"}, {"raw": "dGNr", "data": {"k": 1}}]}}),
        ),
        // wrong JSON types
        ("SendMessage", json!({"message": "hello"})),
        (
            "SendMessage",
            json!({"message": {"messageId": 5, "role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER", "parts": "x"}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER", "parts": [{"text": 5}]}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_BOGUS", "parts": [{"text": "x"}]}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER", "parts": [{"raw": "%%%not base64%%%"}]}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"historyLength": "lots"}}),
        ),
        ("GetTask", json!({"id": 42})),
        ("GetTask", json!({"id": ["a"]})),
        ("ListTasks", json!({"pageSize": "two"})),
        ("ListTasks", json!({"includeArtifacts": "yes"})),
        ("ListTasks", json!({"status": "TASK_STATE_BOGUS"})),
        // out of range
        (
            "SendMessage",
            json!({"message": {"messageId": mid(), "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"historyLength": -1}}),
        ),
        ("GetTask", json!({"id": "t", "historyLength": -1})),
        ("ListTasks", json!({"historyLength": -1})),
        ("ListTasks", json!({"pageSize": 0})),
        ("ListTasks", json!({"pageSize": 101})),
        ("ListTasks", json!({"pageSize": -5})),
        (
            "ListTasks",
            json!({"pageToken": "not a token this server issued"}),
        ),
    ]
}

#[tokio::test]
async fn missing_fields_wrong_types_two_oneof_members_and_ranges_are_invalid_params() {
    let s = Server::start().await;
    let mut failures = Vec::new();
    for (method, params) in invalid_params_cases() {
        let resp = s.rpc(method, params.clone()).await;
        if resp["error"]["code"] != -32602 {
            failures.push(format!("{method} {params} → {resp}"));
            continue;
        }
        assert_rpc_error(&resp, -32602, "INVALID_PARAMS");
    }
    assert!(failures.is_empty(), "not -32602:\n{}", failures.join("\n"));
    // None of them created a task.
    let list = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 0, "{list}");
}

#[tokio::test]
async fn page_size_bounds_one_and_a_hundred_are_accepted() {
    let s = Server::start().await;
    for n in [1, 100] {
        let list = s.rpc_ok("ListTasks", json!({"pageSize": n})).await;
        assert_eq!(list["pageSize"], n);
    }
}

#[tokio::test]
async fn a_context_id_that_does_not_match_the_task_is_invalid_params() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let mut msg = reply_message(&unique("tck-complete-task"), id, "x");
    msg["contextId"] = json!("some-other-context");
    s.rpc_err(
        "SendMessage",
        send_params(msg.clone()),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
    msg["messageId"] = json!(unique("tck-complete-task"));
    let (st, body) = s.rest_post("/message:send", send_params(msg)).await;
    assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    // The task was not touched.
    assert_eq!(state(&s.get_task(id).await), "TASK_STATE_INPUT_REQUIRED");
}

#[tokio::test]
async fn rest_bad_bodies_and_queries_are_invalid_argument() {
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task["id"].as_str().unwrap();
    // malformed JSON
    let resp = s
        .rest_raw(
            Method::POST,
            "/message:send",
            &default_headers(),
            "{not json",
        )
        .await;
    let (st, body) = json_of(resp).await;
    assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "PARSE_ERROR");
    // a body that is not an object
    let (st, body) = s.rest_post("/message:send", json!([1, 2])).await;
    assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    // every invalid SendMessage of the JSON-RPC table
    for (method, params) in invalid_params_cases() {
        if method != "SendMessage" {
            continue;
        }
        let (st, body) = s.rest_post("/message:send", params.clone()).await;
        assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
        let resp = s
            .rest(Method::POST, "/message:stream", Some(params.clone()))
            .await;
        let (st, body) = json_of(resp).await;
        assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    }
    for path in [
        format!("/tasks/{id}?historyLength=-1"),
        format!("/tasks/{id}?historyLength=abc"),
        "/tasks?pageSize=0".to_owned(),
        "/tasks?pageSize=101".to_owned(),
        "/tasks?historyLength=-2".to_owned(),
        "/tasks?includeArtifacts=maybe".to_owned(),
        "/tasks?pageToken=garbage!".to_owned(),
        "/tasks?status=TASK_STATE_BOGUS".to_owned(),
    ] {
        let (st, body) = s.rest_get(&path).await;
        assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    }
    // the push config create needs a url
    let (st, body) = s
        .rest_post(
            &format!("/tasks/{id}/pushNotificationConfigs"),
            json!({"token": "t"}),
        )
        .await;
    assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
}

#[tokio::test]
async fn rest_unknown_routes_are_not_found() {
    let s = Server::start().await;
    for (method, path) in [
        (Method::GET, "/nope"),
        (Method::DELETE, "/tasks/abc"),
        (Method::GET, "/message:send"),
        (Method::PUT, "/tasks"),
        (Method::GET, "/a/b/c/d/e/f"),
    ] {
        let resp = s.rest(method.clone(), path, None).await;
        let (st, body) = json_of(resp).await;
        assert_rest_error(st, &body, 404, "NOT_FOUND", "METHOD_NOT_FOUND");
    }
}

// ------------------------------------------------------------------ A2A errors

#[tokio::test]
async fn unknown_task_ids_are_task_not_found_on_every_operation() {
    let s = Server::start().await;
    let missing = unique("missing-task");
    let err = s
        .rpc_err("GetTask", json!({"id": missing}), -32001, "TASK_NOT_FOUND")
        .await;
    assert_eq!(
        err["data"][0]["metadata"]["taskId"],
        missing.as_str(),
        "{err}"
    );
    s.rpc_err(
        "CancelTask",
        json!({"id": missing}),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;
    s.rpc_err(
        "SubscribeToTask",
        json!({"id": missing}),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;
    s.rpc_err(
        "SendMessage",
        send_params(reply_message(&unique("tck-complete-task"), &missing, "x")),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;
    s.rpc_err(
        "SendStreamingMessage",
        send_params(reply_message(&unique("tck-complete-task"), &missing, "x")),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;

    let (st, b) = s.rest_get(&format!("/tasks/{missing}")).await;
    assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let (st, b) = s
        .rest_post(&format!("/tasks/{missing}:cancel"), json!({}))
        .await;
    assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    for m in [Method::GET, Method::POST] {
        let (st, b) = json_of(
            s.rest(m, &format!("/tasks/{missing}:subscribe"), None)
                .await,
        )
        .await;
        assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    }
    let (st, b) = s
        .rest_post(
            "/message:send",
            send_params(reply_message(&unique("tck-complete-task"), &missing, "x")),
        )
        .await;
    assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let (st, b) = s
        .rest_post(
            "/message:stream",
            send_params(reply_message(&unique("tck-complete-task"), &missing, "x")),
        )
        .await;
    assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    // Nothing was created on the way.
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 0);
}

#[tokio::test]
async fn canceling_a_terminal_task_is_task_not_cancelable() {
    let s = Server::start().await;
    let completed = s.completed_task().await;
    let rejected = s.send_task(&unique("tck-reject-task")).await;
    assert_eq!(state(&rejected), "TASK_STATE_REJECTED");
    let canceled = s.input_required_task().await;
    s.rpc_ok("CancelTask", json!({"id": canceled["id"]})).await;
    for task in [&completed, &rejected, &canceled] {
        let id = task["id"].as_str().unwrap();
        let err = s
            .rpc_err(
                "CancelTask",
                json!({"id": id}),
                -32002,
                "TASK_NOT_CANCELABLE",
            )
            .await;
        assert_eq!(err["data"][0]["metadata"]["taskId"], id);
        let (st, b) = s.rest_post(&format!("/tasks/{id}:cancel"), json!({})).await;
        assert_rest_error(st, &b, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE");
    }
    assert_eq!(
        state(&s.get_task(completed["id"].as_str().unwrap()).await),
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn a_message_to_a_terminal_task_is_unsupported_operation() {
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task["id"].as_str().unwrap();
    s.rpc_err(
        "SendMessage",
        send_params(reply_message(&unique("tck-complete-task"), id, "x")),
        -32004,
        "UNSUPPORTED_OPERATION",
    )
    .await;
    s.rpc_err(
        "SendStreamingMessage",
        send_params(reply_message(&unique("tck-complete-task"), id, "x")),
        -32004,
        "UNSUPPORTED_OPERATION",
    )
    .await;
    let (st, b) = s
        .rest_post(
            "/message:send",
            send_params(reply_message(&unique("tck-complete-task"), id, "x")),
        )
        .await;
    assert_rest_error(st, &b, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION");
    let (st, b) = s
        .rest_post(
            "/message:stream",
            send_params(reply_message(&unique("tck-complete-task"), id, "x")),
        )
        .await;
    assert_rest_error(st, &b, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION");
    let history = s.get_task(id).await["history"].as_array().map(Vec::len);
    assert_eq!(
        history,
        task["history"].as_array().map(Vec::len),
        "history unchanged"
    );
}

#[tokio::test]
async fn subscribing_to_a_terminal_task_is_unsupported_operation() {
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task["id"].as_str().unwrap();
    s.rpc_err(
        "SubscribeToTask",
        json!({"id": id}),
        -32004,
        "UNSUPPORTED_OPERATION",
    )
    .await;
    for m in [Method::GET, Method::POST] {
        let (st, b) = json_of(s.rest(m, &format!("/tasks/{id}:subscribe"), None).await).await;
        assert_rest_error(st, &b, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION");
    }
}

// --------------------------------------------------------------- content type

#[tokio::test]
async fn jsonrpc_with_a_non_json_content_type_is_content_type_not_supported() {
    let s = Server::start().await;
    for ct in [
        "text/plain",
        "application/xml",
        "application/x-www-form-urlencoded",
    ] {
        let h = headers(&[("A2A-Version", "1.0"), ("Content-Type", ct)]);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
        let resp = s.rpc_raw(&h, body.to_string()).await;
        assert_eq!(resp.status().as_u16(), 200, "{ct}");
        let v: Value = resp.json().await.expect("JSON body");
        assert_rpc_error(&v, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
    }
    // Checked before parsing: a malformed body still gets -32005, not -32700.
    let h = headers(&[("A2A-Version", "1.0"), ("Content-Type", "text/plain")]);
    let v: Value = s.rpc_raw(&h, "{{{").await.json().await.unwrap();
    assert_rpc_error(&v, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
    assert_eq!(v["id"], Value::Null);
}

#[tokio::test]
async fn rest_body_routes_with_a_non_json_content_type_answer_415() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let h = headers(&[("A2A-Version", "1.0"), ("Content-Type", "text/plain")]);
    let msg = send_params(user_message(&unique("tck-complete-task"), "x")).to_string();
    for (path, body) in [
        ("/message:send".to_owned(), msg.clone()),
        ("/message:stream".to_owned(), msg.clone()),
        (format!("/tasks/{id}:cancel"), "{}".to_owned()),
        (
            format!("/tasks/{id}/pushNotificationConfigs"),
            json!({"url": "https://e.com/h"}).to_string(),
        ),
    ] {
        let resp = s.rest_raw(Method::POST, &path, &h, body).await;
        assert_eq!(resp.status().as_u16(), 415, "{path}");
    }
    // Nothing happened: no new task, the task is not canceled.
    assert_eq!(state(&s.get_task(id).await), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 1);
}

#[tokio::test]
async fn rest_415_error_body_code_matches_the_http_status() {
    // Spec §2: "The HTTP status equals error.code".
    let s = Server::start().await;
    let h = headers(&[("A2A-Version", "1.0"), ("Content-Type", "text/plain")]);
    let resp = s
        .rest_raw(
            Method::POST,
            "/message:send",
            &h,
            send_params(user_message(&unique("tck-complete-task"), "x")).to_string(),
        )
        .await;
    let (st, body) = json_of(resp).await;
    assert_eq!(st, 415);
    assert_eq!(
        body["error"]["code"], 415,
        "error.code must equal the HTTP status: {body}"
    );
    assert_eq!(
        body["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED",
        "{body}"
    );
}

// ------------------------------------------------------------- robustness

#[tokio::test]
async fn bad_input_leaves_stored_tasks_retrievable_and_the_server_serving() {
    let mut s = Server::start_with(&["--max-body-bytes", "4096"]).await;
    let before = s.input_required_task().await;
    let done = s.completed_task().await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": send_params(user_message(&unique("tck-complete-task"), &"x".repeat(8192)))})
    .to_string();

    // JSON-RPC
    assert_rpc_error(&s.rpc_body("{\"jsonrpc\":").await, -32700, "PARSE_ERROR");
    s.rpc_err("GetTask", json!({"id": 5}), -32602, "INVALID_PARAMS")
        .await;
    s.rpc_err(
        "SendMessage",
        json!({"message": {"role": "ROLE_USER"}}),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
    s.rpc_err(
        "SendMessage",
        json!({"message": {"messageId": unique("m"), "role": "ROLE_USER", "parts": [{"text": "a", "url": "b"}]}}),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
    s.rpc_err("Bogus", json!({}), -32601, "METHOD_NOT_FOUND")
        .await;
    s.rpc_err("message/send", json!({}), -32601, "METHOD_NOT_FOUND")
        .await;
    let resp = s.rpc_raw(&default_headers(), big.clone()).await;
    assert_eq!(resp.status().as_u16(), 413);
    let h = headers(&[("A2A-Version", "1.0"), ("Content-Type", "text/plain")]);
    let v: Value = s.rpc_raw(&h, "{}").await.json().await.unwrap();
    assert_rpc_error(&v, -32005, "CONTENT_TYPE_NOT_SUPPORTED");

    // REST
    let (st, b) = json_of(
        s.rest_raw(Method::POST, "/message:send", &default_headers(), "{")
            .await,
    )
    .await;
    assert_rest_error(st, &b, 400, "INVALID_ARGUMENT", "PARSE_ERROR");
    let (st, b) = s.rest_post("/message:send", json!({"message": 7})).await;
    assert_rest_error(st, &b, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    let resp = s
        .rest_raw(
            Method::POST,
            "/message:send",
            &default_headers(),
            big.clone(),
        )
        .await;
    assert_eq!(resp.status().as_u16(), 413);
    let resp = s.rest_raw(Method::POST, "/message:send", &h, "{}").await;
    assert_eq!(resp.status().as_u16(), 415);

    // Still serving, and the stored tasks are intact.
    assert!(s.is_running(), "the server died");
    for t in [&before, &done] {
        let got = s.get_task(t["id"].as_str().unwrap()).await;
        assert_eq!(got, *t, "task unchanged by bad input");
    }
    let id = before["id"].as_str().unwrap();
    let r = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&unique("tck-complete-task"), id, "x")),
        )
        .await;
    assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED");
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 2);
}

// ------------------------------------------- what is refused before any operation

/// Issue 48, item 9: what is refused before any operation reads the request (a body over
/// the limit, a path segment that is no text) is answered in the route's own error shape,
/// never in axum's words: a JSON-RPC error on the JSON-RPC endpoint, the HTTP+JSON error
/// body on the HTTP+JSON routes, the answer route's `{"error": …}`, and the remote
/// callback's one answer to a reference this harness did not sign.
#[tokio::test]
async fn rejections_before_an_operation_are_in_the_routes_own_shape() {
    let dir = std::env::temp_dir().join(unique("rejections"));
    std::fs::create_dir_all(&dir).expect("dir");
    let channels = dir.join("channels.toml");
    std::fs::write(&channels, "[bob]\nurl = \"http://127.0.0.1:9/hook\"\n").expect("file");
    let agents = dir.join("agents.toml");
    std::fs::write(
        &agents,
        "[agents.b]\ncard_url = \"http://127.0.0.1:9/card\"\n",
    )
    .expect("file");
    let (channels, agents) = (channels.display().to_string(), agents.display().to_string());
    let s = Server::start_with(&[
        "--max-body-bytes",
        "2048",
        "--personal-channels",
        &channels,
        "--agents",
        &agents,
    ])
    .await;
    let big = "x".repeat(64 * 1024);
    let internal = |text: &str| {
        [
            "length limit",
            "Failed to buffer",
            "Invalid URL",
            "UTF-8",
            "Cannot parse",
        ]
        .iter()
        .any(|w| text.contains(w))
    };

    // JSON-RPC: a JSON-RPC error, with the limit's status.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": send_params(user_message(&unique("m"), &big))});
    let resp = s.rpc_raw(&default_headers(), body.to_string()).await;
    let (status, v) = json_of(resp).await;
    assert_eq!(status, 413, "{v}");
    assert_rpc_error(&v, -32600, "INVALID_REQUEST");
    assert!(!internal(&v.to_string()), "{v}");

    // HTTP+JSON: the error body, its code the status.
    let body = send_params(user_message(&unique("m"), &big));
    let resp = s
        .rest_raw(
            Method::POST,
            "/message:send",
            &default_headers(),
            body.to_string(),
        )
        .await;
    let (status, v) = json_of(resp).await;
    assert_rest_error(status, &v, 413, "INVALID_ARGUMENT", "INVALID_REQUEST");
    assert!(!internal(&v.to_string()), "{v}");

    // The answer route: its own refusal, naming the limit.
    let resp = s
        .http
        .post(s.endpoint("/ui/answer"))
        .header("content-type", "application/json")
        .body(json!({"token": "t", "text": big}).to_string())
        .send()
        .await
        .expect("POST /ui/answer");
    let (status, v) = json_of(resp).await;
    assert_eq!(status, 413, "{v}");
    let said = v["error"].as_str().unwrap_or_default();
    assert!(said.contains("16384 bytes"), "{v}");
    assert!(!internal(said), "{v}");

    // The remote callback: a reference that is no text is one this harness did not sign.
    let resp = s
        .http
        .post(s.endpoint("/remote/callback/%FF%FE"))
        .header("X-A2A-Notification-Token", "forged")
        .send()
        .await
        .expect("POST the callback");
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("the body");
    assert_eq!(status, 401, "{text}");
    assert_eq!(text, r#"{"status":"unauthorized"}"#);
    let _ = std::fs::remove_dir_all(&dir);
}
