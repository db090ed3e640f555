//! Every A2A operation over the HTTP+JSON (REST) binding, with and without a `/{tenant}`
//! prefix, on its success path (push-config CRUD included); the extended card answers
//! its error.

use std::collections::HashSet;

use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

async fn rest_send(s: &Server, prefix: &str, message_id: &str) -> Value {
    let (status, body) = s
        .rest_post(
            &format!("{prefix}/message:send"),
            send_params(user_message(message_id, "hi")),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn message_send_returns_the_completed_task() {
    let s = Server::start().await;
    let resp = s
        .rest(
            Method::POST,
            "/message:send",
            Some(send_params(user_message(&unique("tck-complete-task"), "x"))),
        )
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        content_type(&resp).starts_with("application/json"),
        "{}",
        content_type(&resp)
    );
    let (_, body) = json_of(resp).await;
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    assert_eq!(state(&body["task"]), "TASK_STATE_COMPLETED");
    assert_eq!(status_text(&body["task"]), "Hello from TCK");
}

#[tokio::test]
async fn the_cards_url_joins_with_a_route_and_a_doubled_slash_still_routes() {
    let s = Server::start().await;
    let card = s.card().await;
    let urls: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    assert!(urls.iter().all(|u| !u.ends_with('/')), "{urls:?}");
    let rest = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "HTTP+JSON")
        .unwrap()["url"]
        .as_str()
        .unwrap();
    for path in ["/message:send", "//message:send"] {
        let resp = s
            .http
            .post(format!("{rest}{path}"))
            .header("A2A-Version", "1.0")
            .json(&send_params(user_message(&unique("joined"), "x")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let (_, body) = json_of(resp).await;
        assert_eq!(
            state(&body["task"]),
            "TASK_STATE_COMPLETED",
            "{path}: {body}"
        );
    }
}

#[tokio::test]
async fn message_send_accepts_the_a2a_json_content_type_with_charset() {
    let s = Server::start().await;
    for ct in ["application/a2a+json", "application/json; charset=utf-8"] {
        let resp = s
            .rest_raw(
                Method::POST,
                "/message:send",
                &headers(&[("A2A-Version", "1.0"), ("Content-Type", ct)]),
                send_params(user_message(&unique("tck-complete-task"), "x")).to_string(),
            )
            .await;
        let (status, body) = json_of(resp).await;
        assert_eq!(status, 200, "{ct}: {body}");
        assert_eq!(state(&body["task"]), "TASK_STATE_COMPLETED");
    }
}

#[tokio::test]
async fn message_send_returns_a_direct_message() {
    let s = Server::start().await;
    let body = rest_send(&s, "", &unique("tck-message-response")).await;
    assert!(body.get("task").is_none(), "{body}");
    assert_eq!(
        body["message"]["parts"][0]["text"],
        "Direct message response"
    );
    assert_eq!(body["message"]["role"], "ROLE_AGENT");
}

#[tokio::test]
async fn message_send_with_return_immediately_answers_in_progress() {
    let s = Server::start().await;
    let (status, body) = s
        .rest_post(
            "/message:send",
            json!({"message": user_message(&unique("test-resubscribe-message-id"), "x"),
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert_eq!(status, 200);
    let st = state(&body["task"]);
    assert!(
        st == "TASK_STATE_SUBMITTED" || st == "TASK_STATE_WORKING",
        "{body}"
    );
}

#[tokio::test]
async fn message_send_continues_an_input_required_task() {
    let s = Server::start().await;
    let first = rest_send(&s, "", &unique("tck-input-required")).await;
    assert_eq!(state(&first["task"]), "TASK_STATE_INPUT_REQUIRED");
    let id = first["task"]["id"].as_str().unwrap();
    let (status, second) = s
        .rest_post(
            "/message:send",
            send_params(reply_message(&unique("tck-complete-task"), id, "more")),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["task"]["id"], id);
    assert_eq!(state(&second["task"]), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn message_send_with_a_repeated_message_id_is_processed_once() {
    let s = Server::start().await;
    let mid = unique("tck-complete-task");
    let a = rest_send(&s, "", &mid).await;
    let b = rest_send(&s, "", &mid).await;
    assert_eq!(a["task"]["id"], b["task"]["id"]);
    let (_, list) = s.rest_get("/tasks").await;
    assert_eq!(list["totalSize"], 1, "{list}");
}

#[tokio::test]
async fn get_task_by_path_with_history_length_query() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let (status, got) = s.rest_get(&format!("/tasks/{id}")).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["id"], id);
    assert_eq!(state(&got), "TASK_STATE_INPUT_REQUIRED");
    let (_, none) = s.rest_get(&format!("/tasks/{id}?historyLength=0")).await;
    assert!(
        none.get("history").is_none() || none["history"] == json!([]),
        "{none}"
    );
    let (_, one) = s.rest_get(&format!("/tasks/{id}?history_length=1")).await;
    assert_eq!(one["history"].as_array().map(Vec::len), Some(1), "{one}");
}

#[tokio::test]
async fn list_tasks_has_all_four_keys_and_paginates_by_query() {
    let s = Server::start().await;
    let (status, empty) = s.rest_get("/tasks").await;
    assert_eq!(status, 200);
    for key in ["tasks", "nextPageToken", "pageSize", "totalSize"] {
        assert!(empty.get(key).is_some(), "{key} missing: {empty}");
    }
    assert_eq!(empty["nextPageToken"], "");
    let mut created = HashSet::new();
    for _ in 0..5 {
        created.insert(s.completed_task().await["id"].as_str().unwrap().to_owned());
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut sizes = Vec::new();
    loop {
        let path = if token.is_empty() {
            "/tasks?pageSize=2".to_owned()
        } else {
            format!("/tasks?pageSize=2&pageToken={token}")
        };
        let (status, page) = s.rest_get(&path).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["totalSize"], 5);
        assert_eq!(page["pageSize"], 2);
        let tasks = page["tasks"].as_array().unwrap();
        sizes.push(tasks.len());
        for t in tasks {
            assert!(t.get("artifacts").is_none(), "{t}");
            seen.push(t["id"].as_str().unwrap().to_owned());
        }
        token = page["nextPageToken"].as_str().unwrap().to_owned();
        if token.is_empty() {
            break;
        }
        assert!(sizes.len() < 10);
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(seen.len(), 5);
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), created);
}

#[tokio::test]
async fn list_tasks_query_filters_and_include_artifacts() {
    let s = Server::start().await;
    let art = s.send_task(&unique("tck-artifact-data")).await;
    let waiting = s.input_required_task().await;
    let (_, st) = s.rest_get("/tasks?status=TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(st["totalSize"], 1, "{st}");
    assert_eq!(st["tasks"][0]["id"], waiting["id"]);
    let ctx = art["contextId"].as_str().unwrap();
    let (_, by_ctx) = s
        .rest_get(&format!("/tasks?contextId={ctx}&includeArtifacts=true"))
        .await;
    assert_eq!(by_ctx["totalSize"], 1, "{by_ctx}");
    assert_eq!(
        by_ctx["tasks"][0]["artifacts"][0]["parts"][0]["data"],
        json!({"key": "value", "count": 42})
    );
    let (_, snake) = s
        .rest_get(&format!("/tasks?context_id={ctx}&include_artifacts=false"))
        .await;
    assert_eq!(snake["totalSize"], 1, "{snake}");
    assert!(snake["tasks"][0].get("artifacts").is_none(), "{snake}");
}

#[tokio::test]
async fn cancel_without_body_or_content_type_cancels_the_task() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let resp = s
        .rest_raw(
            Method::POST,
            &format!("/tasks/{id}:cancel"),
            &headers(&[("A2A-Version", "1.0")]),
            "",
        )
        .await;
    let (status, body) = json_of(resp).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(state(&body), "TASK_STATE_CANCELED");
    let (_, got) = s.rest_get(&format!("/tasks/{id}")).await;
    assert_eq!(state(&got), "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn cancel_tolerates_null_empty_object_and_id_bodies() {
    let s = Server::start().await;
    for body in [
        "null",
        "{}",
        "{\"id\":\"ignored-body-id\",\"metadata\":{\"a\":1}}",
    ] {
        let task = s.input_required_task().await;
        let id = task["id"].as_str().unwrap();
        let resp = s
            .rest_raw(
                Method::POST,
                &format!("/tasks/{id}:cancel"),
                &default_headers(),
                body,
            )
            .await;
        let (status, got) = json_of(resp).await;
        assert_eq!(status, 200, "body {body}: {got}");
        assert_eq!(got["id"], id, "the path id wins");
        assert_eq!(state(&got), "TASK_STATE_CANCELED");
    }
}

#[tokio::test]
async fn subscribe_by_get_and_post_replays_an_input_required_task() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    for method in [Method::GET, Method::POST] {
        let events = s
            .rest_stream(method.clone(), &format!("/tasks/{id}:subscribe"), None)
            .await;
        assert_eq!(kinds(&events)[0], "task", "{method}: {events:?}");
        assert_eq!(events[0].payload()["id"], id);
        assert_eq!(
            states(&events).last().map(String::as_str),
            Some("TASK_STATE_INPUT_REQUIRED"),
            "{events:?}"
        );
        for e in &events {
            assert!(
                e.data.get("jsonrpc").is_none(),
                "REST events are bare: {:?}",
                e.data
            );
        }
    }
}

/// Deletes a push config over REST; the answer is 200 with `{}` or 204 without a body.
async fn rest_delete_config(s: &Server, path: &str) {
    let resp = s.rest(Method::DELETE, path, None).await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    match status {
        200 => assert_eq!(
            serde_json::from_str::<Value>(&text).ok(),
            Some(json!({})),
            "DELETE {path}: {text}"
        ),
        204 => assert!(text.is_empty(), "DELETE {path}: {text}"),
        _ => panic!("DELETE {path} answered {status}: {text}"),
    }
}

/// Creates, gets, lists and deletes push configs on task `id` under `prefix` ("" or
/// "/{tenant}"), checking every answer.
async fn push_config_crud(s: &Server, prefix: &str, id: &str) {
    let base = format!("{prefix}/tasks/{id}/pushNotificationConfigs");
    // The path's task id wins over one in the body; a client id is kept.
    let (st, created) = s
        .rest_post(
            &base,
            json!({"taskId": "some-other-task", "id": "cfg-r", "url": "https://example.com/hook",
            "token": "t", "authentication": {"scheme": "Bearer", "credentials": "c"}}),
        )
        .await;
    assert!(st == 200 || st == 201, "create answered {st}: {created}");
    assert_eq!(
        created,
        json!({"taskId": id, "id": "cfg-r", "url": "https://example.com/hook",
            "token": "t", "authentication": {"scheme": "Bearer", "credentials": "c"}})
    );
    let (st, generated) = s
        .rest_post(&base, json!({"url": "https://example.com/second"}))
        .await;
    assert!(st == 200 || st == 201, "create answered {st}: {generated}");
    let gen_id = generated["id"].as_str().expect("generated id").to_owned();
    assert!(!gen_id.is_empty() && gen_id != "cfg-r", "{generated}");
    assert_eq!(generated["taskId"], id);

    let (st, got) = s.rest_get(&format!("{base}/cfg-r")).await;
    assert_eq!(st, 200, "{got}");
    assert_eq!(got, created);

    let (st, list) = s.rest_get(&base).await;
    assert_eq!(st, 200, "{list}");
    let ids: HashSet<&str> = list["configs"]
        .as_array()
        .expect("configs array")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, HashSet::from(["cfg-r", gen_id.as_str()]), "{list}");
    assert_eq!(list["nextPageToken"], "", "{list}");
    let (st, page) = s.rest_get(&format!("{base}?pageSize=1")).await;
    assert_eq!(st, 200, "{page}");
    assert_eq!(page["configs"].as_array().unwrap().len(), 1, "{page}");
    assert!(
        page["nextPageToken"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{page}"
    );

    // Delete is idempotent; the deleted config is then not found.
    rest_delete_config(s, &format!("{base}/cfg-r")).await;
    rest_delete_config(s, &format!("{base}/cfg-r")).await;
    let (st, body) = s.rest_get(&format!("{base}/cfg-r")).await;
    assert_rest_error(st, &body, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    rest_delete_config(s, &format!("{base}/{gen_id}")).await;
    let (st, list) = s.rest_get(&base).await;
    assert_eq!(st, 200, "{list}");
    assert_eq!(list["configs"], json!([]), "{list}");
}

#[tokio::test]
async fn push_config_routes_create_get_list_and_delete_configs() {
    // Config CRUD on a completed task.
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task["id"].as_str().unwrap();
    push_config_crud(&s, "", id).await;

    let base = format!("/tasks/{id}/pushNotificationConfigs");
    // An unknown task, or a config the task does not have: 404.
    let (st, body) = s
        .rest_post(
            "/tasks/no-such-task/pushNotificationConfigs",
            json!({"url": "https://example.com/hook"}),
        )
        .await;
    assert_rest_error(st, &body, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let (st, body) = s
        .rest_get("/tasks/no-such-task/pushNotificationConfigs")
        .await;
    assert_rest_error(st, &body, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let (st, body) = s.rest_get(&format!("{base}/never-created")).await;
    assert_rest_error(st, &body, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    // Not an http(s) URL, or a bad page size: 400.
    let (st, body) = s
        .rest_post(&base, json!({"url": "ftp://example.com/hook"}))
        .await;
    assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    for q in ["pageSize=0", "pageSize=101", "pageToken=garbage!"] {
        let (st, body) = s.rest_get(&format!("{base}?{q}")).await;
        assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    }
}

#[tokio::test]
async fn extended_agent_card_route_is_unsupported() {
    let s = Server::start().await;
    let (st, body) = s.rest_get("/extendedAgentCard").await;
    assert_rest_error(
        st,
        &body,
        400,
        "FAILED_PRECONDITION",
        "UNSUPPORTED_OPERATION",
    );
}

#[tokio::test]
async fn every_route_also_works_under_a_tenant_prefix() {
    let s = Server::start().await;
    let t = "/acme";
    let body = rest_send(&s, t, &unique("tck-input-required")).await;
    let id = body["task"]["id"].as_str().unwrap().to_owned();
    let (st, got) = s.rest_get(&format!("{t}/tasks/{id}")).await;
    assert_eq!(st, 200, "{got}");
    assert_eq!(got["id"], id.as_str());
    let (st, list) = s.rest_get(&format!("{t}/tasks")).await;
    assert_eq!(st, 200);
    assert_eq!(list["totalSize"], 1, "{list}");
    let events = s
        .rest_stream(Method::GET, &format!("{t}/tasks/{id}:subscribe"), None)
        .await;
    assert_eq!(events[0].kind(), "task");
    let stream = s
        .rest_stream(
            Method::POST,
            &format!("{t}/message:stream"),
            Some(send_params(user_message(&unique("tck-stream-002"), "x"))),
        )
        .await;
    assert_eq!(
        states(&stream).last().map(String::as_str),
        Some("TASK_STATE_COMPLETED")
    );
    push_config_crud(&s, t, &id).await;
    // A config made under the tenant is not reachable without it.
    let (st, b) = s
        .rest_post(
            &format!("{t}/tasks/{id}/pushNotificationConfigs"),
            json!({"id": "kept", "url": "https://example.com/hook"}),
        )
        .await;
    assert_eq!(st, 200, "{b}");
    let (st, b) = s
        .rest_get(&format!("/tasks/{id}/pushNotificationConfigs/kept"))
        .await;
    assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let (st, b) = s
        .rest_get(&format!("/other/tasks/{id}/pushNotificationConfigs"))
        .await;
    assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    rest_delete_config(&s, &format!("{t}/tasks/{id}/pushNotificationConfigs/kept")).await;
    let (st, b) = s.rest_get(&format!("{t}/extendedAgentCard")).await;
    assert_rest_error(st, &b, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION");
    let (st, canceled) = s
        .rest_post(&format!("{t}/tasks/{id}:cancel"), json!({}))
        .await;
    assert_eq!(st, 200, "{canceled}");
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    // Not visible without the tenant.
    let (st, b) = s.rest_get(&format!("/tasks/{id}")).await;
    assert_rest_error(st, &b, 404, "NOT_FOUND", "TASK_NOT_FOUND");
}

#[tokio::test]
async fn percent_encoded_task_ids_in_paths_are_decoded() {
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task["id"].as_str().unwrap();
    let encoded: String = id
        .chars()
        .map(|c| {
            if c == '-' {
                "%2D".to_owned()
            } else {
                c.to_string()
            }
        })
        .collect();
    let (st, got) = s.rest_get(&format!("/tasks/{encoded}")).await;
    assert_eq!(st, 200, "{got}");
    assert_eq!(got["id"], id);
}

#[tokio::test]
async fn rest_and_jsonrpc_see_the_same_tasks() {
    let s = Server::start().await;
    let body = rest_send(&s, "", &unique("tck-input-required")).await;
    let id = body["task"]["id"].as_str().unwrap();
    let via_rpc = s.get_task(id).await;
    let (_, via_rest) = s.rest_get(&format!("/tasks/{id}")).await;
    assert_eq!(via_rpc, via_rest);
    let r = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&unique("tck-complete-task"), id, "x")),
        )
        .await;
    assert_eq!(state(&r["task"]), "TASK_STATE_COMPLETED");
    let (_, after) = s.rest_get(&format!("/tasks/{id}")).await;
    assert_eq!(state(&after), "TASK_STATE_COMPLETED");
}
