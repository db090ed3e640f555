//! Push notifications end to end: a webhook receiver inside the test (a tokio TCP
//! listener speaking just enough HTTP/1.1) gets the task's events as the server commits
//! them — every status and artifact update of the task's event log, in log order, each
//! exactly once, as StreamResponse JSON, with the config's Authorization and
//! notification-token headers — whether the config came with SendMessage (JSON-RPC or
//! REST) or was created later, including the CANCELED update of CancelTask, and after 5xx
//! answers (retries). Secrets are sealed at rest (the embedded store's files and the
//! DynamoDB table never hold them in the clear) and opened by Get and List. With
//! `--push-allow-private-urls false`, loopback webhooks are refused with a message naming
//! the URL and nothing is stored; a participant who is not on the task gets, for every
//! config operation, exactly the answer of a task that does not exist. Config pagination
//! and delete round out the CRUD. The scenarios that matter per store run on both the
//! embedded store and DynamoDB Local (`<scenario>::embedded`, `<scenario>::dynamodb`).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use harness_e2e::participants::{headers_as, rpc_ok_as, rpc_raw_as, send_as};
use harness_e2e::webhook::{find, Received, Receiver, DELIVERY_TIMEOUT};
use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

// ------------------------------------------------------------------- helpers

/// harness-local allows private webhook targets unless told otherwise.
async fn private_ok_server() -> Server {
    Server::start().await
}

/// Checks the headers every delivery carries: POST to /hook, `application/a2a+json`,
/// `Authorization: Bearer <credentials>` and `X-A2A-Notification-Token: <token>` when
/// given, and neither header when not.
fn assert_headers(r: &Received, credentials: Option<&str>, token: Option<&str>) {
    assert_eq!(r.method, "POST", "{r:?}");
    assert!(r.path.starts_with("/hook"), "{r:?}");
    assert!(
        r.header("content-type")
            .is_some_and(|v| v.starts_with("application/a2a+json")),
        "content-type: {r:?}"
    );
    assert_eq!(
        r.header("authorization"),
        credentials.map(|c| format!("Bearer {c}")).as_deref(),
        "{r:?}"
    );
    assert_eq!(r.header("x-a2a-notification-token"), token, "{r:?}");
}

/// Checks the headers every delivery carries for a config with a Bearer token and a
/// notification token.
fn assert_delivery_headers(r: &Received, credentials: &str, token: &str) {
    assert_eq!(r.path, "/hook", "{r:?}");
    assert_headers(r, Some(credentials), Some(token));
}

/// A webhook body is one StreamResponse: exactly one of `statusUpdate`/`artifactUpdate`,
/// about task `id` in context `context_id`, that the server's own type reads back.
fn assert_stream_response(body: &Value, id: &str, context_id: &Value) {
    let obj = body
        .as_object()
        .unwrap_or_else(|| panic!("webhook body is not an object: {body}"));
    assert_eq!(obj.len(), 1, "StreamResponse has exactly one key: {body}");
    let (kind, payload) = obj.iter().next().unwrap();
    assert_eq!(payload["taskId"], id, "{body}");
    assert_eq!(&payload["contextId"], context_id, "{body}");
    match kind.as_str() {
        "statusUpdate" => assert!(
            payload["status"]["state"]
                .as_str()
                .is_some_and(|s| s.starts_with("TASK_STATE_")),
            "{body}"
        ),
        "artifactUpdate" => {
            assert!(
                payload["artifact"]["artifactId"]
                    .as_str()
                    .is_some_and(|a| !a.is_empty()),
                "{body}"
            );
            assert!(
                payload["artifact"]["parts"]
                    .as_array()
                    .is_some_and(|p| !p.is_empty()),
                "{body}"
            );
        }
        other => panic!("a webhook got a {other}, not a status or artifact update: {body}"),
    }
    let parsed: common::a2a::StreamResponse = serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("not a StreamResponse ({e}): {body}"));
    assert!(
        parsed.status_update.is_some() || parsed.artifact_update.is_some(),
        "{body}"
    );
}

/// The task's status and artifact updates with seq after `after` (all when None), as its
/// event log holds them, in log order, as the JSON a webhook is sent.
async fn logged_updates(s: &Server, id: &str, after: Option<u64>) -> Vec<Value> {
    s.store()
        .read_events(id, after, 1000)
        .await
        .expect("read the task's event log")
        .into_iter()
        // Everything but the task snapshot: status and artifact updates, members' messages.
        .filter(|e| e.event.task.is_none())
        .map(|e| serde_json::to_value(&e.event).expect("event as JSON"))
        .collect()
}

/// The seq of the last event in the task's log.
async fn last_seq(s: &Server, id: &str) -> u64 {
    s.store()
        .load_task(id)
        .await
        .expect("load the task")
        .unwrap_or_else(|| panic!("task {id} is not stored"))
        .last_seq
}

/// The stored record of the task's only webhook config, once its cursor reached the end
/// of the task's log (panics if it does not within the delivery timeout).
async fn caught_up_record(s: &Server, id: &str) -> common::store::PushConfigRecord {
    let deadline = Instant::now() + DELIVERY_TIMEOUT;
    loop {
        let records = s
            .store()
            .list_push_configs(id, None, 10)
            .await
            .expect("list the stored configs");
        assert_eq!(records.len(), 1, "{records:?}");
        let end = last_seq(s, id).await;
        if records[0].delivered == end {
            return records.into_iter().next().unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "config cursor {} never reached the log's end {end}: {records:?}",
            records[0].delivered
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `hook` accepted the task's COMPLETED update (and a little longer, for
/// anything that would come late); then checks the webhook accepted exactly the task's
/// updates after seq `after` as the event log holds them, in order, each once — a
/// WORKING status first, artifacts in between, COMPLETED last — every one a StreamResponse
/// about the task, with the config's headers, and every artifact one the task holds.
/// Returns the accepted requests.
async fn assert_every_update_delivered(
    s: &Server,
    hook: &Receiver,
    task: &Value,
    after: Option<u64>,
    credentials: Option<&str>,
    token: Option<&str>,
) -> Vec<Received> {
    let id = task_id(task);
    hook.wait_for_state("TASK_STATE_COMPLETED").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = hook.accepted();
    let bodies: Vec<Value> = got.iter().map(|r| r.body.clone()).collect();
    let expected = logged_updates(s, &id, after).await;
    assert_eq!(
        bodies, expected,
        "the webhook must get every update of the task's log, in order, once"
    );
    let kinds: Vec<&str> = got.iter().map(Received::kind).collect();
    let states: Vec<&str> = got.iter().filter_map(Received::state).collect();
    assert_eq!(states.first(), Some(&"TASK_STATE_WORKING"), "{got:#?}");
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{got:#?}");
    assert_eq!(kinds.first(), Some(&"statusUpdate"), "{got:#?}");
    assert_eq!(kinds.last(), Some(&"statusUpdate"), "{got:#?}");
    assert!(kinds.contains(&"artifactUpdate"), "{got:#?}");
    let record = s.store().load_task(&id).await.expect("load the task");
    let stored = serde_json::to_value(&record.expect("the task is stored").task).unwrap();
    let artifact_ids: Vec<&Value> = stored["artifacts"]
        .as_array()
        .map(|a| a.iter().map(|a| &a["artifactId"]).collect())
        .unwrap_or_default();
    for r in &got {
        assert_stream_response(&r.body, &id, &task["contextId"]);
        assert_headers(r, credentials, token);
        if r.kind() == "artifactUpdate" {
            let artifact_id = &r.body["artifactUpdate"]["artifact"]["artifactId"];
            assert!(
                artifact_ids.contains(&artifact_id),
                "delivered artifact {artifact_id} is not on the task: {stored}"
            );
        }
    }
    got
}

/// The webhook config of SendMessage's `configuration`.
fn push_configuration(url: &str, token: &str, credentials: &str) -> Value {
    json!({"taskPushNotificationConfig": {
        "url": url, "token": token,
        "authentication": {"scheme": "Bearer", "credentials": credentials}}})
}

// ------------------------------------------------- every update, in order (1)

/// SendMessage over JSON-RPC with a webhook in `configuration`: the receiver gets
/// WORKING, both artifact chunks and COMPLETED, exactly as logged; the config is kept.
/// With SendStreamingMessage, the webhook gets exactly the updates the SSE stream shows.
async fn jsonrpc_send_message_webhook_gets_every_update_in_order(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let hook = Receiver::start().await;
    let params = json!({
        "message": user_message(&unique("tck-stream-artifact-chunked"), "hi"),
        "configuration": push_configuration(&hook.url, "tok-rpc", "cred-rpc"),
    });
    let result = s.rpc_ok("SendMessage", params).await;
    let task = &result["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{result}");
    let id = task_id(task);

    let got =
        assert_every_update_delivered(&s, &hook, task, None, Some("cred-rpc"), Some("tok-rpc"))
            .await;
    let kinds: Vec<&str> = got.iter().map(Received::kind).collect();
    assert_eq!(
        kinds,
        [
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate"
        ],
        "{got:#?}"
    );
    assert_eq!(got[2].body["artifactUpdate"]["append"], true, "{got:#?}");
    assert_eq!(
        hook.all().len(),
        got.len(),
        "nothing refused: {:#?}",
        hook.all()
    );
    // The config was stored on the task, with the server-filled taskId and an id.
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    let configs = list["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 1, "{list}");
    assert_eq!(configs[0]["taskId"], id.as_str());
    assert_eq!(configs[0]["url"], hook.url.as_str());
    assert_eq!(configs[0]["token"], "tok-rpc", "{list}");
    assert!(configs[0]["id"].as_str().is_some_and(|i| !i.is_empty()));
    let record = caught_up_record(&s, &id).await;
    assert_eq!((record.failures, record.last_failure.as_str()), (0, ""));

    // A streamed SendMessage: the webhook gets the very updates the client's stream shows.
    let streamed = Receiver::start().await;
    let (_, events) = s
        .rpc_stream(
            "SendStreamingMessage",
            json!({
                "message": user_message(&unique("tck-stream-artifact-chunked"), "hi"),
                "configuration": push_configuration(&streamed.url, "tok-sse", "cred-sse"),
            }),
        )
        .await;
    let task = events
        .iter()
        .find(|e| e.kind() == "task")
        .map(|e| e.payload().clone())
        .unwrap_or_else(|| panic!("the stream has no task: {events:?}"));
    let on_stream: Vec<Value> = events
        .iter()
        .filter(|e| matches!(e.kind(), "statusUpdate" | "artifactUpdate"))
        .map(|e| e.stream_response().clone())
        .collect();
    let got = assert_every_update_delivered(
        &s,
        &streamed,
        &task,
        None,
        Some("cred-sse"),
        Some("tok-sse"),
    )
    .await;
    let bodies: Vec<Value> = got.into_iter().map(|r| r.body).collect();
    assert_eq!(bodies, on_stream, "the webhook and the stream differ");
}

/// The same over REST `POST /message:send`.
async fn rest_send_message_webhook_gets_every_update_in_order(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let hook = Receiver::start().await;
    let (st, body) = s
        .rest_post(
            "/message:send",
            json!({
                "message": user_message(&unique("tck-stream-artifact-chunked"), "hi"),
                "configuration": push_configuration(&hook.url, "tok-rest", "cred-rest"),
            }),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    let task = &body["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{body}");
    let id = task_id(task);

    let got =
        assert_every_update_delivered(&s, &hook, task, None, Some("cred-rest"), Some("tok-rest"))
            .await;
    assert_eq!(got.len(), 4, "WORKING, two chunks, COMPLETED: {got:#?}");
    assert_eq!(
        hook.all().len(),
        got.len(),
        "nothing refused: {:#?}",
        hook.all()
    );
    let (st, list) = s
        .rest_get(&format!("/tasks/{id}/pushNotificationConfigs"))
        .await;
    assert_eq!(st, 200, "{list}");
    assert_eq!(list["configs"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["configs"][0]["url"], hook.url.as_str(), "{list}");
}

/// A config created over REST on an INPUT_REQUIRED task gets nothing until the reply,
/// then every update the reply caused (WORKING, artifacts, COMPLETED), as logged.
async fn rest_created_config_gets_every_update_of_the_reply(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let hook = Receiver::start().await;
    let (st, first) = s
        .rest_post(
            "/message:send",
            send_params(user_message(&unique("tck-input-required"), "hi")),
        )
        .await;
    assert_eq!(st, 200, "{first}");
    assert_eq!(
        state(&first["task"]),
        "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    let id = task_id(&first["task"]);
    let before = last_seq(&s, &id).await;

    let (st, created) = s
        .rest_post(
            &format!("/tasks/{id}/pushNotificationConfigs"),
            json!({"id": "hook-rest", "url": hook.url, "token": "tok-ir",
                "authentication": {"scheme": "Bearer", "credentials": "cred-ir"}}),
        )
        .await;
    assert!(st == 200 || st == 201, "create answered {st}: {created}");
    assert_eq!(
        created,
        json!({"taskId": id, "id": "hook-rest", "url": hook.url, "token": "tok-ir",
            "authentication": {"scheme": "Bearer", "credentials": "cred-ir"}})
    );
    // Nothing happened to the task yet: nothing is delivered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hook.all().is_empty(), "{:#?}", hook.all());

    let (st, second) = s
        .rest_post(
            "/message:send",
            send_params(reply_message(
                &unique("tck-stream-artifact-chunked"),
                &id,
                "more",
            )),
        )
        .await;
    assert_eq!(st, 200, "{second}");
    assert_eq!(state(&second["task"]), "TASK_STATE_COMPLETED", "{second}");
    let got = assert_every_update_delivered(
        &s,
        &hook,
        &second["task"],
        Some(before),
        Some("cred-ir"),
        Some("tok-ir"),
    )
    .await;
    assert!(
        got.iter()
            .all(|r| r.state() != Some("TASK_STATE_INPUT_REQUIRED")),
        "an update from before the config was delivered: {got:#?}"
    );
    assert_eq!(
        hook.all().len(),
        got.len(),
        "nothing refused: {:#?}",
        hook.all()
    );
}

// ------------------------------------------------------------- retries (2)

/// A receiver that answers 500 twice, then 200, gets every update of the task once it
/// recovers: the first update on its third attempt, the rest on their first, each
/// accepted exactly once, in order; nothing is recorded as failed.
async fn a_receiver_failing_twice_then_recovering_gets_every_update_once_in_order(
    backend: Backend,
) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let hook = Receiver::failing_first(2).await;
    let params = json!({
        "message": user_message(&unique("tck-stream-artifact-chunked"), "hi"),
        "configuration": push_configuration(&hook.url, "tok-r", "cred-r"),
    });
    let result = s.rpc_ok("SendMessage", params).await;
    let task = &result["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{result}");
    let id = task_id(task);

    let got =
        assert_every_update_delivered(&s, &hook, task, None, Some("cred-r"), Some("tok-r")).await;
    assert_eq!(got.len(), 4, "WORKING, two chunks, COMPLETED: {got:#?}");
    let all = hook.all();
    let mut answers = vec![500, 500];
    answers.extend(std::iter::repeat_n(200, got.len()));
    assert_eq!(
        all.iter().map(|r| r.answered).collect::<Vec<_>>(),
        answers,
        "{all:#?}"
    );
    // The refused attempts carried the first update, with the same headers.
    for r in &all[..3] {
        assert_eq!(r.body, got[0].body, "{all:#?}");
        assert_delivery_headers(r, "cred-r", "tok-r");
    }
    let record = caught_up_record(&s, &id).await;
    assert_eq!(
        (record.failures, record.last_failure.as_str()),
        (0, ""),
        "{record:?}"
    );
}

// ------------------------------------------------------- secrets at rest (3)

/// Every file under `dir` (recursively): its path and bytes.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the state dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

/// Every string an attribute value holds (map keys included), binaries read as UTF-8.
fn strings_of(value: &AttributeValue, out: &mut Vec<String>) {
    match value {
        AttributeValue::S(s) | AttributeValue::N(s) => out.push(s.clone()),
        AttributeValue::B(b) => out.push(String::from_utf8_lossy(b.as_ref()).into_owned()),
        AttributeValue::Ss(v) | AttributeValue::Ns(v) => out.extend(v.iter().cloned()),
        AttributeValue::Bs(v) => out.extend(
            v.iter()
                .map(|b| String::from_utf8_lossy(b.as_ref()).into_owned()),
        ),
        AttributeValue::L(items) => items.iter().for_each(|v| strings_of(v, out)),
        AttributeValue::M(map) => {
            for (k, v) in map {
                out.push(k.clone());
                strings_of(v, out);
            }
        }
        _ => {}
    }
}

/// Every item of the server's DynamoDB table, each as its `sk` and all its strings.
async fn table_items(s: &Server) -> Vec<(String, Vec<String>)> {
    let client = dynamo_client().expect("a DynamoDB server has a client");
    let table = s.table.as_deref().expect("a DynamoDB server has a table");
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan the table");
        for item in page.items() {
            let sk = item
                .get("sk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            let mut strings = Vec::new();
            for (name, value) in item {
                strings.push(name.clone());
                strings_of(value, &mut strings);
            }
            items.push((sk, strings));
        }
        start = page.last_evaluated_key().cloned();
        if start.is_none() {
            return items;
        }
    }
}

/// Configs with distinctive secrets — one created by CreateTaskPushNotificationConfig on
/// an INPUT_REQUIRED task, one given with SendMessage and delivered through (so its cursor
/// was written back too) — are stored without those secrets in the clear: not in any
/// file of the embedded store's state dir, not in any attribute of the DynamoDB table,
/// while the configs' URLs are (the scan sees the configs). Get and List open them.
async fn webhook_secrets_are_sealed_at_rest_and_opened_by_get_and_list(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let marker = unique("sealed");
    let token = format!("TOKEN-{marker}-plain");
    let credentials = format!("CREDENTIALS-{marker}-plain");
    let url = format!("https://hooks.example.com/{marker}");
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let created = s
        .rpc_ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "sealed-1", "url": url, "token": token,
                "authentication": {"scheme": "Bearer", "credentials": credentials}}),
        )
        .await;
    assert_eq!(created["token"], token.as_str(), "{created}");

    // The second config, through SendMessage, to a receiver that gets the update.
    let hook = Receiver::start().await;
    let hook_url = format!("{}-{marker}", hook.url);
    let token2 = format!("TOKEN2-{marker}-plain");
    let credentials2 = format!("CREDENTIALS2-{marker}-plain");
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"message": user_message(&unique("tck-complete-task"), "hi"),
                "configuration": push_configuration(&hook_url, &token2, &credentials2)}),
        )
        .await;
    let id2 = task_id(&result["task"]);
    let got = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    for r in &got {
        assert_headers(r, Some(&credentials2), Some(&token2));
    }
    let record2 = caught_up_record(&s, &id2).await;
    assert_eq!(record2.failures, 0, "{record2:?}");

    // Get and List (both bindings) give the secrets back intact.
    let want = json!({"taskId": id, "id": "sealed-1", "url": url, "token": token,
        "authentication": {"scheme": "Bearer", "credentials": credentials}});
    let got = s
        .rpc_ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "sealed-1"}),
        )
        .await;
    assert_eq!(got, want);
    let (st, got) = s
        .rest_get(&format!("/tasks/{id}/pushNotificationConfigs/sealed-1"))
        .await;
    assert_eq!(st, 200, "{got}");
    assert_eq!(got, want);
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(list["configs"], json!([want]), "{list}");
    let list2 = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id2}))
        .await;
    assert_eq!(list2["configs"][0]["token"], token2.as_str(), "{list2}");
    assert_eq!(
        list2["configs"][0]["authentication"]["credentials"],
        credentials2.as_str(),
        "{list2}"
    );

    // The stored records hold the secrets sealed only.
    let record = s
        .store()
        .get_push_config(&id, "sealed-1")
        .await
        .expect("read the config")
        .expect("the config is stored");
    for r in [&record, &record2] {
        assert!(r.config.token.is_empty(), "{r:?}");
        assert!(
            r.config
                .authentication
                .as_ref()
                .is_some_and(|a| a.credentials.is_empty() && a.scheme == "Bearer"),
            "{r:?}"
        );
        assert!(r.sealed.starts_with("v1."), "{r:?}");
    }

    let secrets = [&token, &credentials, &token2, &credentials2];
    match backend {
        Backend::Embedded => {
            let files = files_under(&s.state_dir);
            let names: Vec<String> = files
                .iter()
                .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            assert!(
                names.iter().any(|n| n == "harness.sqlite3"),
                "no database in the state dir: {names:?}"
            );
            for (path, bytes) in &files {
                for secret in secrets {
                    assert!(
                        find(bytes, secret.as_bytes()).is_none(),
                        "{} holds the secret {secret:?} in the clear",
                        path.display()
                    );
                }
            }
            for stored_url in [&url, &hook_url] {
                assert!(
                    files
                        .iter()
                        .any(|(_, bytes)| find(bytes, stored_url.as_bytes()).is_some()),
                    "no file of {names:?} holds the config url {stored_url}: the scan misses the data"
                );
            }
        }
        Backend::DynamoDb => {
            let items = table_items(&s).await;
            let pushes: Vec<&(String, Vec<String>)> = items
                .iter()
                .filter(|(sk, _)| sk.starts_with("PUSH#"))
                .collect();
            assert_eq!(pushes.len(), 2, "two PUSH# items: {items:?}");
            assert!(
                pushes.iter().any(|(sk, _)| sk == "PUSH#sealed-1"),
                "{items:?}"
            );
            for (sk, strings) in &items {
                for secret in secrets {
                    assert!(
                        strings.iter().all(|v| !v.contains(secret.as_str())),
                        "item {sk} holds the secret {secret:?} in the clear: {strings:?}"
                    );
                }
            }
            for stored_url in [&url, &hook_url] {
                assert!(
                    pushes.iter().any(|(_, strings)| strings
                        .iter()
                        .any(|v| v.contains(stored_url.as_str()))),
                    "no PUSH# item holds the config url {stored_url}: {pushes:?}"
                );
            }
        }
    }
}

// ------------------------------------------- forbidden URLs, strangers (4)

/// CreateTaskPushNotificationConfig of a webhook at `url` on task `id` is refused -32602 on
/// JSON-RPC and 400 on HTTP+JSON, each message passing `check`.
async fn create_is_refused(s: &Server, id: &str, url: &str, check: impl Fn(&Value, &str, &Value)) {
    let err = s
        .rpc_err(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c", "url": url}),
            -32602,
            "INVALID_PARAMS",
        )
        .await;
    check(&err["message"], url, &err);
    let (st, body) = s
        .rest_post(
            &format!("/tasks/{id}/pushNotificationConfigs"),
            json!({"id": "c", "url": url}),
        )
        .await;
    assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    check(&body["error"]["message"], url, &body);
}

/// Checks a refused webhook's error message names the URL and says why.
fn assert_names_url_and_why(message: &Value, url: &str, context: &Value) {
    let message = message
        .as_str()
        .unwrap_or_else(|| panic!("error without a message: {context}"));
    assert!(
        message.contains(url),
        "the error message does not name the url {url}: {context}"
    );
    assert!(
        message.contains("loopback or private"),
        "the error message does not say why {url} is refused: {context}"
    );
}

/// With `--push-allow-private-urls false`, loopback, private and link-local webhooks are
/// refused on both bindings — by Create and by SendMessage — with INVALID_PARAMS whose
/// message names the URL and why, and nothing is stored.
async fn loopback_and_localhost_webhooks_are_refused_when_private_urls_are_not_allowed(
    backend: Backend,
) {
    let Some(s) = Server::start_on(backend, &["--push-allow-private-urls", "false"]).await else {
        return;
    };
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let urls = [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://LOCALHOST/hook",
        "https://[::1]:8443/hook",
        "http://10.0.0.7/hook",
        "http://192.168.1.2/hook",
        "http://169.254.169.254/latest/meta-data",
    ];
    for url in urls {
        create_is_refused(&s, &id, url, assert_names_url_and_why).await;
    }
    // Nothing was stored.
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(list["configs"], json!([]), "{list}");
    assert_eq!(list["nextPageToken"], "", "{list}");
    let stored = s.store().list_push_configs(&id, None, 10).await.unwrap();
    assert!(stored.is_empty(), "{stored:?}");

    // SendMessage with such a webhook is refused before a task exists.
    let before = s.rpc_ok("ListTasks", json!({})).await["totalSize"].clone();
    for url in ["http://127.0.0.1:9/hook", "http://localhost:9/hook"] {
        let err = s
            .rpc_err(
                "SendMessage",
                json!({"message": user_message(&unique("tck-complete-task"), "x"),
                "configuration": {"taskPushNotificationConfig": {"url": url}}}),
                -32602,
                "INVALID_PARAMS",
            )
            .await;
        assert_names_url_and_why(&err["message"], url, &err);
        let (st, body) = s
            .rest_post(
                "/message:send",
                json!({"message": user_message(&unique("tck-complete-task"), "x"),
                    "configuration": {"taskPushNotificationConfig": {"url": url}}}),
            )
            .await;
        assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
        assert_names_url_and_why(&body["error"]["message"], url, &body);
    }
    // Continuing a task with such a webhook neither attaches it nor moves the task on.
    s.rpc_err(
        "SendMessage",
        json!({"message": reply_message(&unique("tck-complete-task"), &id, "x"),
            "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/h"}}}),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
    assert_eq!(state(&s.get_task(&id).await), "TASK_STATE_INPUT_REQUIRED");
    let after = s.rpc_ok("ListTasks", json!({})).await["totalSize"].clone();
    assert_eq!(after, before, "a refused webhook left a task behind");
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(list["configs"], json!([]), "{list}");
}

/// Issue 48, item 9: a webhook at a plain `http://` URL on another host is refused on
/// both bindings, by Create and by SendMessage (a new task or one it continues), naming
/// the URL and https, and nothing is stored: its token, credentials and the task's
/// events would cross the network in the clear. On this machine (`localhost`, a loopback
/// address) http stays allowed, and `--allow-http-urls` allows it anywhere.
async fn cleartext_webhooks_to_other_hosts_are_refused_unless_allowed(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let says_why = |message: &Value, url: &str, context: &Value| {
        let message = message.as_str().unwrap_or_default();
        assert!(
            message.contains(url)
                && message.contains("https")
                && message.contains("HARNESS_ALLOW_HTTP_URLS"),
            "{context}"
        );
    };
    let urls = [
        "http://hooks.example/hook",
        "http://203.0.113.7:8080/hook",
        "HTTP://Hooks.Example/h",
    ];
    for url in urls {
        create_is_refused(&s, &id, url, says_why).await;
    }
    let before = s.rpc_ok("ListTasks", json!({})).await["totalSize"].clone();
    let err = s
        .rpc_err(
            "SendMessage",
            json!({"message": user_message(&unique("tck-complete-task"), "x"),
                "configuration": {"taskPushNotificationConfig": {"url": urls[0]}}}),
            -32602,
            "INVALID_PARAMS",
        )
        .await;
    says_why(&err["message"], urls[0], &err);
    s.rpc_err(
        "SendMessage",
        json!({"message": reply_message(&unique("tck-complete-task"), &id, "x"),
            "configuration": {"taskPushNotificationConfig": {"url": urls[0]}}}),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
    // Nothing was stored: no config, no task, the task as it was.
    assert_eq!(state(&s.get_task(&id).await), "TASK_STATE_INPUT_REQUIRED");
    let after = s.rpc_ok("ListTasks", json!({})).await["totalSize"].clone();
    assert_eq!(after, before, "a refused webhook left a task behind");
    let stored = s.store().list_push_configs(&id, None, 10).await.unwrap();
    assert!(stored.is_empty(), "{stored:?}");

    // On this machine, http is fine.
    for (n, url) in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://[::1]:9/hook",
    ]
    .into_iter()
    .enumerate()
    {
        s.rpc_ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": format!("local-{n}"), "url": url}),
        )
        .await;
    }

    // Allowed, it is stored.
    let Some(s) = Server::start_on(backend, &["--allow-http-urls"]).await else {
        return;
    };
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let created = s
        .rpc_ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c", "url": urls[0]}),
        )
        .await;
    assert_eq!(created["url"], urls[0], "{created}");
}

/// The four config operations over JSON-RPC on task `task`: method and params.
fn config_calls(task: &str, url: &str) -> [(&'static str, Value); 4] {
    [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "id": "mallorys", "url": url, "token": "tok-m"}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": "alices"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task, "id": "alices"}),
        ),
    ]
}

/// The four config operations over REST on task `task`: method, path and body.
fn config_routes(task: &str, url: &str) -> [(Method, String, String); 4] {
    let base = format!("/tasks/{task}/pushNotificationConfigs");
    [
        (
            Method::POST,
            base.clone(),
            json!({"id": "mallorys", "url": url, "token": "tok-m"}).to_string(),
        ),
        (Method::GET, format!("{base}/alices"), String::new()),
        (Method::GET, base.clone(), String::new()),
        (Method::DELETE, format!("{base}/alices"), String::new()),
    ]
}

/// mallory, who is not on alice's task, cannot create, get, list or delete its configs:
/// each call answers exactly as for a task that does not exist (JSON-RPC -32001, REST
/// 404), over both bindings; alice's config is still there afterwards, nothing of
/// mallory's is stored, and alice's webhook gets the updates of her reply.
async fn a_non_participant_cannot_touch_the_configs_of_alices_task(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let hook = Receiver::start().await;
    let intruder = Receiver::start().await;
    let task = send_as(
        &s,
        Some("alice"),
        user_message(&unique("tck-input-required"), "hi"),
    )
    .await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    let id = task_id(&task);
    let alices = json!({"taskId": id, "id": "alices", "url": hook.url, "token": "tok-alice",
        "authentication": {"scheme": "Bearer", "credentials": "cred-alice"}});
    let created = rpc_ok_as(
        &s,
        Some("alice"),
        "CreateTaskPushNotificationConfig",
        alices.clone(),
    )
    .await;
    assert_eq!(created, alices);
    let before = last_seq(&s, &id).await;
    let missing = unique("no-such-task");

    // JSON-RPC: the answer on alice's task and on a missing one are the same but for the id.
    for ((method, on_task), (_, on_missing)) in config_calls(&id, &intruder.url)
        .into_iter()
        .zip(config_calls(&missing, &intruder.url))
    {
        let (st, refused) = rpc_raw_as(&s, Some("mallory"), "r-1", method, on_task).await;
        assert_eq!(st, 200, "{method}: {refused}");
        let refused_json: Value = serde_json::from_str(&refused).expect("JSON");
        assert_rpc_error(&refused_json, -32001, "TASK_NOT_FOUND");
        let (st, absent) = rpc_raw_as(&s, Some("mallory"), "r-1", method, on_missing).await;
        assert_eq!(st, 200, "{method}: {absent}");
        assert_eq!(
            refused.replace(&id, "<task>"),
            absent.replace(&missing, "<task>"),
            "{method}: alice's task and a missing one must answer alike"
        );
    }
    // REST: likewise, 404.
    for ((method, path, body), (_, missing_path, missing_body)) in config_routes(&id, &intruder.url)
        .into_iter()
        .zip(config_routes(&missing, &intruder.url))
    {
        let what = format!("{method} {path}");
        let resp = s
            .rest_raw(method.clone(), &path, &headers_as(Some("mallory")), body)
            .await;
        let st = resp.status().as_u16();
        let refused = resp.text().await.expect("body");
        let refused_json: Value = serde_json::from_str(&refused)
            .unwrap_or_else(|e| panic!("{what}: HTTP {st} not JSON ({e}): {refused}"));
        assert_rest_error(st, &refused_json, 404, "NOT_FOUND", "TASK_NOT_FOUND");
        let resp = s
            .rest_raw(
                method,
                &missing_path,
                &headers_as(Some("mallory")),
                missing_body,
            )
            .await;
        assert_eq!(resp.status().as_u16(), st, "{what}");
        let absent = resp.text().await.expect("body");
        assert_eq!(
            refused.replace(&id, "<task>"),
            absent.replace(&missing, "<task>"),
            "{what}: alice's task and a missing one must answer alike"
        );
    }

    // alice's config is untouched, and mallory's was not stored.
    let got = rpc_ok_as(
        &s,
        Some("alice"),
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "alices"}),
    )
    .await;
    assert_eq!(got, alices);
    let list = rpc_ok_as(
        &s,
        Some("alice"),
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    )
    .await;
    assert_eq!(list["configs"], json!([alices]), "{list}");
    let stored: Vec<String> = s
        .store()
        .list_push_configs(&id, None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.config.id)
        .collect();
    assert_eq!(stored, ["alices"]);
    assert!(s
        .store()
        .list_push_configs(&missing, None, 10)
        .await
        .unwrap()
        .is_empty());

    // ...and still delivers: alice's reply completes the task, her webhook gets it all.
    let reply = send_as(
        &s,
        Some("alice"),
        reply_message(&unique("tck-stream-artifact-chunked"), &id, "more"),
    )
    .await;
    assert_eq!(state(&reply), "TASK_STATE_COMPLETED", "{reply}");
    assert_every_update_delivered(
        &s,
        &hook,
        &reply,
        Some(before),
        Some("cred-alice"),
        Some("tok-alice"),
    )
    .await;
    assert!(
        intruder.all().is_empty(),
        "mallory's webhook was called: {:#?}",
        intruder.all()
    );
}

on_both_stores!(
    jsonrpc_send_message_webhook_gets_every_update_in_order,
    rest_send_message_webhook_gets_every_update_in_order,
    rest_created_config_gets_every_update_of_the_reply,
    a_receiver_failing_twice_then_recovering_gets_every_update_once_in_order,
    webhook_secrets_are_sealed_at_rest_and_opened_by_get_and_list,
    loopback_and_localhost_webhooks_are_refused_when_private_urls_are_not_allowed,
    cleartext_webhooks_to_other_hosts_are_refused_unless_allowed,
    a_non_participant_cannot_touch_the_configs_of_alices_task,
);

// ------------------------------------------------------- embedded-store tests

/// At least once across a crash: the server is killed while its webhook request hangs,
/// so that event's cursor never moved; after the restart the delivery starts again from
/// it and every update arrives, the cut-off one included.
#[tokio::test]
async fn a_delivery_cut_off_by_a_crash_is_made_after_the_restart() {
    let mut s = private_ok_server().await;
    let hook = Receiver::start().await;
    let task = s.input_required_task().await;
    let id = task_id(&task);
    s.rpc_ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "crash", "url": hook.url}),
    )
    .await;
    hook.hold.store(true, Ordering::SeqCst);
    s.rpc_ok(
        "SendMessage",
        json!({"message": reply_message(&unique("tck-complete-task"), &id, "done")}),
    )
    .await;
    let deadline = Instant::now() + DELIVERY_TIMEOUT;
    while hook.all().is_empty() {
        assert!(Instant::now() < deadline, "no delivery was attempted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cut_off = hook.all()[0].body.clone();
    s.kill();
    hook.hold.store(false, Ordering::SeqCst);
    let stored = s
        .store()
        .get_push_config(&id, "crash")
        .await
        .expect("read the config")
        .expect("stored");
    let before = stored.delivered;

    s.restart().await;
    let got = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    assert_eq!(
        got[0].body, cut_off,
        "the cut-off update is delivered first"
    );
    let record = s
        .store()
        .get_push_config(&id, "crash")
        .await
        .expect("read the config")
        .expect("stored");
    assert!(
        record.delivered > before,
        "the cursor moved on after the restart"
    );
    assert_eq!(record.failures, 0);
}
#[tokio::test]
async fn config_created_on_an_input_required_task_gets_the_completion_of_the_reply() {
    let s = private_ok_server().await;
    let hook = Receiver::start().await;
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let created = s
        .rpc_ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "hook-1", "url": hook.url, "token": "tok-ir",
            "authentication": {"scheme": "Bearer", "credentials": "cred-ir"}}),
        )
        .await;
    assert_eq!(created["id"], "hook-1", "{created}");
    assert_eq!(created["taskId"], id.as_str(), "{created}");
    // Nothing happened to the task yet: nothing is delivered.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(hook.all().is_empty(), "{:#?}", hook.all());

    let reply = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&unique("tck-complete-task"), &id, "more")),
        )
        .await;
    assert_eq!(state(&reply["task"]), "TASK_STATE_COMPLETED", "{reply}");
    let got = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    let completed = got
        .iter()
        .find(|r| r.state() == Some("TASK_STATE_COMPLETED"))
        .unwrap();
    assert_delivery_headers(completed, "cred-ir", "tok-ir");
    assert_eq!(completed.body["statusUpdate"]["taskId"], id.as_str());
    assert_eq!(
        got.last().unwrap().state(),
        Some("TASK_STATE_COMPLETED"),
        "COMPLETED is the last event: {got:#?}"
    );
}

#[tokio::test]
async fn cancel_task_delivers_the_canceled_status_update() {
    let s = private_ok_server().await;
    let hook = Receiver::start().await;
    let params = json!({
        "message": user_message(&unique("test-resubscribe-message-id"), "slow"),
        "configuration": {"returnImmediately": true,
            "taskPushNotificationConfig": {"url": hook.url, "token": "tok-c"}}
    });
    let result = s.rpc_ok("SendMessage", params).await;
    let id = task_id(&result["task"]);
    s.wait_for_state(&id, "TASK_STATE_WORKING", Duration::from_secs(3))
        .await;
    let canceled = s.rpc_ok("CancelTask", json!({"id": id})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");

    let got = hook.wait_for_state("TASK_STATE_CANCELED").await;
    let r = got
        .iter()
        .find(|r| r.state() == Some("TASK_STATE_CANCELED"))
        .unwrap();
    assert_eq!(
        r.body["statusUpdate"]["taskId"],
        id.as_str(),
        "{:?}",
        r.body
    );
    assert_eq!(r.header("x-a2a-notification-token"), Some("tok-c"));
    assert_eq!(
        r.header("authorization"),
        None,
        "no authentication set: {r:?}"
    );
    assert!(r
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/a2a+json")));
    // The slow run ends after ~4 s; it must not push a COMPLETED after the cancel.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let after = hook.accepted();
    assert!(
        after
            .iter()
            .all(|r| r.state() != Some("TASK_STATE_COMPLETED")),
        "a canceled task pushed COMPLETED: {after:#?}"
    );
    assert_eq!(
        after.last().and_then(Received::state),
        Some("TASK_STATE_CANCELED"),
        "{after:#?}"
    );
}

/// Sends a `tck-complete-task` (one COMPLETED event) with a webhook at `hook`; returns
/// the answers the receiver gave, once no new request came for a while, and the task id.
async fn answers_for_one_event(s: &Server, hook: &Receiver) -> (Vec<u16>, String) {
    let params = json!({
        "message": user_message(&unique("tck-complete-task"), "hi"),
        "configuration": {"taskPushNotificationConfig": {"url": hook.url}}
    });
    let result = s.rpc_ok("SendMessage", params).await;
    assert_eq!(state(&result["task"]), "TASK_STATE_COMPLETED", "{result}");
    // Delivery (with its backoff of 200 ms, 400 ms) is over well before this.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answers = hook.all().iter().map(|r| r.answered).collect();
    (answers, task_id(&result["task"]))
}

#[tokio::test]
async fn client_errors_are_not_retried_but_429_and_5xx_are_up_to_three_attempts() {
    let s = private_ok_server().await;
    let refusing = Receiver::answering_first(404, 1).await;
    let (answers, refused_task) = answers_for_one_event(&s, &refusing).await;
    assert_eq!(answers, [404]);
    let bad_request = Receiver::answering_first(400, 5).await;
    assert_eq!(answers_for_one_event(&s, &bad_request).await.0, [400]);
    let throttled = Receiver::answering_first(429, 1).await;
    let (answers, throttled_task) = answers_for_one_event(&s, &throttled).await;
    assert_eq!(answers, [429, 200]);
    let broken = Receiver::failing_first(10).await;
    let (answers, broken_task) = answers_for_one_event(&s, &broken).await;
    assert_eq!(
        answers,
        [500, 500, 500],
        "three attempts, then the event is given up"
    );
    // An event given up on is passed over and recorded on the config; one that got
    // through after a retry is not.
    let record = caught_up_record(&s, &broken_task).await;
    assert_eq!(record.failures, 1, "{record:?}");
    assert!(
        record.last_failure.contains("HTTP 500") && record.last_failure.contains("3 attempts"),
        "{record:?}"
    );
    let record = caught_up_record(&s, &refused_task).await;
    assert_eq!(record.failures, 1, "{record:?}");
    assert!(record.last_failure.contains("404"), "{record:?}");
    let record = caught_up_record(&s, &throttled_task).await;
    assert_eq!((record.failures, record.last_failure.as_str()), (0, ""));
}

#[tokio::test]
async fn configs_list_in_pages_of_two_with_an_opaque_token_until_an_empty_one() {
    // Completed task, public URLs: no delivery happens, the flag does not matter.
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task_id(&task);
    let mut created = HashSet::new();
    for n in 0..5 {
        let c = s
            .rpc_ok(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": format!("cfg-{n}"),
                    "url": format!("https://example.com/hook/{n}")}),
            )
            .await;
        created.insert(c["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(created.len(), 5);

    // JSON-RPC
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut token = String::new();
    loop {
        let mut p = json!({"taskId": id, "pageSize": 2});
        if !token.is_empty() {
            p["pageToken"] = json!(token);
        }
        let page = s.rpc_ok("ListTaskPushNotificationConfigs", p).await;
        let configs = page["configs"].as_array().expect("configs array").clone();
        sizes.push(configs.len());
        for c in &configs {
            assert_eq!(c["taskId"], id.as_str(), "{c}");
            seen.push(c["id"].as_str().unwrap().to_owned());
        }
        token = page["nextPageToken"]
            .as_str()
            .unwrap_or_else(|| panic!("nextPageToken is a string: {page}"))
            .to_owned();
        assert!(sizes.len() <= 5, "pagination does not end");
        if token.is_empty() {
            break;
        }
        assert!(!token.contains("cfg-"), "token should be opaque: {token}");
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(seen.len(), 5, "no config twice: {seen:?}");
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), created);

    // REST
    let mut rest_seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let mut path = format!("/tasks/{id}/pushNotificationConfigs?pageSize=2");
        if !token.is_empty() {
            path.push_str(&format!("&pageToken={token}"));
        }
        let (st, page) = s.rest_get(&path).await;
        assert_eq!(st, 200, "{page}");
        pages += 1;
        for c in page["configs"].as_array().unwrap() {
            rest_seen.push(c["id"].as_str().unwrap().to_owned());
        }
        token = page["nextPageToken"].as_str().unwrap_or("").to_owned();
        assert!(pages <= 5);
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(rest_seen, seen, "both bindings page the same way");

    // Default page size holds all five; pageSize bounds are 1..=100.
    let all = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(all["configs"].as_array().unwrap().len(), 5, "{all}");
    assert_eq!(all["nextPageToken"], "", "{all}");
    for ok in [1, 100] {
        s.rpc_ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": ok}),
        )
        .await;
    }
    for bad in [json!(0), json!(101), json!(-1)] {
        s.rpc_err(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": bad}),
            -32602,
            "INVALID_PARAMS",
        )
        .await;
    }
    s.rpc_err(
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id, "pageToken": "not a token this server issued"}),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
}

#[tokio::test]
async fn a_deleted_config_is_not_found_and_no_longer_called() {
    let s = private_ok_server().await;
    let hook = Receiver::start().await;
    let task = s.input_required_task().await;
    let id = task_id(&task);
    s.rpc_ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone", "url": hook.url}),
    )
    .await;
    let got = s
        .rpc_ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "gone"}),
        )
        .await;
    assert_eq!(got["url"], hook.url.as_str(), "{got}");
    s.rpc_ok(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone"}),
    )
    .await;
    s.rpc_err(
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone"}),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;
    let (st, body) = s
        .rest_get(&format!("/tasks/{id}/pushNotificationConfigs/gone"))
        .await;
    assert_rest_error(st, &body, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    // Deleting again is fine.
    s.rpc_ok(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone"}),
    )
    .await;
    // The task completes; the deleted webhook is not called.
    s.rpc_ok(
        "SendMessage",
        send_params(reply_message(&unique("tck-complete-task"), &id, "x")),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(hook.all().is_empty(), "{:#?}", hook.all());
}
