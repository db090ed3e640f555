//! The gRPC binding end to end (issue 49): a tonic client on harness-local's listener.
//!
//! Every rpc of `A2AService` once, each A2A error as its gRPC code and `ErrorInfo`
//! reason, the `a2a-version` and `a2a-extensions` metadata; a stranger's reads and
//! cancel answered with a missing task's bytes, identity from the token in jwt mode,
//! refusals audited as on JSON-RPC, the rate limit a gRPC status; the message limit
//! (RESOURCE_EXHAUSTED, nothing stored) and the stream budget shared with the HTTP
//! bindings.

use std::time::{Duration, Instant};

use harness_e2e::grpc::{self, pb, Client, Code, Request, Status};
use harness_e2e::identity::{self, Idp, Via, Who};
use harness_e2e::participants::Script;
use harness_e2e::*;
use prost::Message as _;
use reqwest::Method;
use serde_json::{json, Value};
use tonic::Streaming;

on_both_stores!(
    every_rpc_once,
    a2a_errors_are_their_grpc_codes,
    a_strangers_reads_and_cancel_get_a_missing_tasks_not_found,
    in_jwt_mode_the_token_is_the_caller,
    a_refusal_over_grpc_is_audited_as_over_jsonrpc,
    a_message_over_the_limit_is_refused_before_it_is_stored,
);

// ------------------------------------------------------------------------ helpers

/// A SendMessageRequest of the JSON bindings' `message`.
fn send_request(message: Value) -> pb::SendMessageRequest {
    grpc::message_of(&json!({ "message": message }))
}

/// SendMessage as `who`: the answer as the JSON bindings' value.
async fn send(c: &mut Client, who: &str, message: Value) -> Result<Value, Status> {
    let reply = c
        .send_message(grpc::request(send_request(message), who))
        .await?;
    Ok(grpc::json_of(reply.get_ref()))
}

async fn get(c: &mut Client, who: &str, id: &str) -> Result<Value, Status> {
    let req = pb::GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    let reply = c.get_task(grpc::request(req, who)).await?;
    Ok(grpc::json_of(reply.get_ref()))
}

fn subscribe_request(id: &str) -> pb::SubscribeToTaskRequest {
    pb::SubscribeToTaskRequest {
        id: id.into(),
        ..Default::default()
    }
}

fn cancel_request(id: &str) -> pb::CancelTaskRequest {
    pb::CancelTaskRequest {
        id: id.into(),
        ..Default::default()
    }
}

/// A push-config request (Get, Delete; List when `id` is empty) of task `task`.
fn config_of<T: serde::de::DeserializeOwned>(task: &str, id: &str) -> T {
    let mut which = json!({ "taskId": task });
    if !id.is_empty() {
        which["id"] = json!(id);
    }
    grpc::message_of(&which)
}

/// `message` with the 1.0 version and the metadata `who`.
fn as_who<T>(message: T, who: &[(&'static str, &str)]) -> Request<T> {
    let mut req = grpc::request(message, "");
    for (key, value) in who {
        req = with(req, key, value);
    }
    req
}

/// `req` with metadata `key: value` added.
fn with<T>(mut req: Request<T>, key: &'static str, value: &str) -> Request<T> {
    let value = value.parse().expect("an ASCII metadata value");
    req.metadata_mut().insert(key, value);
    req
}

/// The next event of a stream as the JSON bindings' StreamResponse, None at its end.
async fn next(stream: &mut Streaming<pb::StreamResponse>) -> Result<Option<Value>, Status> {
    let event = tokio::time::timeout(STREAM_TIMEOUT, stream.message())
        .await
        .expect("the stream moves within the timeout")?;
    Ok(event.map(|e| grpc::json_of(&e)))
}

/// The rest of a stream that ends well.
async fn rest_of(stream: &mut Streaming<pb::StreamResponse>) -> Vec<Value> {
    let mut events = Vec::new();
    while let Some(e) = next(stream).await.expect("the stream ends well") {
        events.push(e);
    }
    events
}

/// The task state a StreamResponse carries (a task or a status update).
fn event_state(event: &Value) -> &str {
    let kind = stream_response_kind(event);
    state(&event[kind])
}

/// An id of the same length as `id` that names no task: refusals about the two can be
/// compared byte for byte once one is put for the other.
fn missing_like(id: &str) -> String {
    id.chars().rev().collect()
}

/// `status`'s code, message and `grpc-status-details-bin` with `to` put for `from`.
fn swapped(status: &Status, from: &str, to: &str) -> (Code, String, Vec<u8>) {
    let (from, to) = (from.as_bytes(), to.as_bytes());
    assert_eq!(from.len(), to.len());
    let mut details = status.details().to_vec();
    let mut i = 0;
    while i + from.len() <= details.len() {
        if &details[i..i + from.len()] == from {
            details[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
    let from = std::str::from_utf8(from).expect("an id");
    let to = std::str::from_utf8(to).expect("an id");
    (status.code(), status.message().replace(from, to), details)
}

// ------------------------------------------------------------- item 2: every rpc

/// Each rpc of A2AService once: a send, a streamed send, get, list, subscribe then
/// cancel, the four push-config rpcs, and the extended card (which this server has not).
async fn every_rpc_once(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let mut c = s.grpc().await;
    let asked = send(
        &mut c,
        "alice",
        user_message(&unique("tck-input-required"), "hi"),
    )
    .await
    .expect("SendMessage");
    let id = task_id(&asked["task"]);
    assert_eq!(
        state(&asked["task"]),
        "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );

    let streamed = send_request(user_message(&unique("tck-complete-task"), "hi"));
    let mut stream = (c
        .send_streaming_message(grpc::request(streamed, "alice"))
        .await)
        .expect("SendStreamingMessage")
        .into_inner();
    let events = rest_of(&mut stream).await;
    let (first, last) = (&events[0], &events[events.len() - 1]);
    assert_eq!(stream_response_kind(first), "task", "{events:?}");
    assert_eq!(event_state(last), "TASK_STATE_COMPLETED", "{events:?}");
    let done = task_id(&first["task"]);

    // GetTask reads what JSON-RPC reads.
    let task = get(&mut c, "alice", &id).await.expect("GetTask");
    let over_jsonrpc = identity::get(&s, &Who::header("alice"), Via::JsonRpc, &id).await;
    let over_jsonrpc = over_jsonrpc.ok();
    assert_eq!(task["id"], over_jsonrpc["id"]);
    // (pbjson prints a timestamp with `+00:00` where the JSON bindings print `Z`: the
    // value is compared by the round-trip tests, not here.)
    for field in ["state", "message"] {
        assert_eq!(
            task["status"][field], over_jsonrpc["status"][field],
            "{task}"
        );
    }

    let list = c.list_tasks(grpc::request(pb::ListTasksRequest::default(), "alice"));
    let list = grpc::json_of(list.await.expect("ListTasks").get_ref());
    let mut listed = listed_ids(&list);
    listed.sort();
    let mut both = vec![id.clone(), done];
    both.sort();
    assert_eq!(listed, both, "{list}");

    // The push-config rpcs.
    let config: pb::TaskPushNotificationConfig = grpc::message_of(
        &json!({"taskId": id, "id": "hook-1", "url": "https://hooks.example/h", "token": "t"}),
    );
    let created = c.create_task_push_notification_config(grpc::request(config.clone(), "alice"));
    assert_eq!(created.await.expect("Create").into_inner(), config);
    let which = config_of::<pb::GetTaskPushNotificationConfigRequest>(&id, "hook-1");
    let got = c.get_task_push_notification_config(grpc::request(which, "alice"));
    assert_eq!(got.await.expect("Get").into_inner(), config);
    let all = config_of::<pb::ListTaskPushNotificationConfigsRequest>(&id, "");
    let listed = c.list_task_push_notification_configs(grpc::request(all.clone(), "alice"));
    assert_eq!(listed.await.expect("List").into_inner().configs, [config]);
    let gone = config_of::<pb::DeleteTaskPushNotificationConfigRequest>(&id, "hook-1");
    let deleted = c.delete_task_push_notification_config(grpc::request(gone, "alice"));
    deleted.await.expect("Delete");
    let listed = c.list_task_push_notification_configs(grpc::request(all, "alice"));
    assert_eq!(listed.await.expect("List").into_inner().configs, []);

    // A subscription of a working task sees its cancel.
    let slow = user_message(&unique("test-resubscribe-message-id"), "slow");
    let slow: pb::SendMessageRequest =
        grpc::message_of(&json!({"message": slow, "configuration": {"returnImmediately": true}}));
    let working = c.send_message(grpc::request(slow, "alice")).await;
    let working = task_id(&grpc::json_of(working.expect("sent").get_ref())["task"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while state(&get(&mut c, "alice", &working).await.expect("GetTask")) != "TASK_STATE_WORKING" {
        assert!(Instant::now() < deadline, "{working} never WORKING");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let sub = c.subscribe_to_task(grpc::request(subscribe_request(&working), "alice"));
    let mut sub = sub.await.expect("SubscribeToTask").into_inner();
    let first = next(&mut sub).await.expect("an event").expect("the task");
    assert_eq!(event_state(&first), "TASK_STATE_WORKING", "{first}");
    let canceled = c.cancel_task(grpc::request(cancel_request(&working), "alice"));
    let canceled = grpc::json_of(canceled.await.expect("CancelTask").get_ref());
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    let after = rest_of(&mut sub).await;
    let last = after.last().expect("the cancel's event");
    assert_eq!(event_state(last), "TASK_STATE_CANCELED", "{after:?}");

    let card = pb::GetExtendedAgentCardRequest::default();
    let refused = c
        .get_extended_agent_card(grpc::request(card, "alice"))
        .await;
    let refused = refused.expect_err("no extended card");
    grpc::assert_status(&refused, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
}

// ------------------------------------------------------------ item 2: the errors

/// The errors a default server gives: not found (a task, a push config), not cancelable,
/// unsupported, the version, invalid params with the field, fail-closed unauthenticated.
async fn a2a_errors_are_their_grpc_codes(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
        return;
    };
    let mut c = s.grpc().await;
    let missing = unique("missing");
    let refused = get(&mut c, "alice", &missing).await.expect_err("missing");
    grpc::assert_status(&refused, Code::NotFound, "TASK_NOT_FOUND");
    assert_eq!(grpc::error_info(&refused).metadata["taskId"], missing);

    let done = send(
        &mut c,
        "alice",
        user_message(&unique("tck-complete-task"), "x"),
    );
    let done = task_id(&done.await.expect("sent")["task"]);
    let refused = c
        .cancel_task(grpc::request(cancel_request(&done), "alice"))
        .await;
    let refused = refused.expect_err("not cancelable");
    grpc::assert_status(&refused, Code::FailedPrecondition, "TASK_NOT_CANCELABLE");

    let again = reply_message(&unique("tck-complete-task"), &done, "more");
    let refused = send(&mut c, "alice", again).await.expect_err("terminal");
    grpc::assert_status(&refused, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
    let refused = c.subscribe_to_task(grpc::request(subscribe_request(&done), "alice"));
    let refused = refused.await.expect_err("terminal");
    grpc::assert_status(&refused, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");

    let which = config_of::<pb::GetTaskPushNotificationConfigRequest>(&done, "none");
    let refused = c.get_task_push_notification_config(grpc::request(which, "alice"));
    let refused = refused.await.expect_err("no such config");
    grpc::assert_status(&refused, Code::NotFound, "TASK_NOT_FOUND");

    // No version, an empty one, an old and a future one: refused before anything runs.
    let message = || send_request(user_message(&unique("tck-complete-task"), "x"));
    let unversioned = || {
        let mut req = Request::new(message());
        req.metadata_mut()
            .insert("x-participant-id", "alice".parse().expect("an id"));
        req
    };
    let mut versions = vec![unversioned()];
    for v in ["", "0.3", "2.0"] {
        let mut req = unversioned();
        req.metadata_mut()
            .insert("a2a-version", v.parse().expect("a version"));
        versions.push(req);
    }
    for req in versions {
        let refused = c.send_message(req).await.expect_err("version");
        grpc::assert_status(&refused, Code::FailedPrecondition, "VERSION_NOT_SUPPORTED");
    }
    let refused = c.send_streaming_message(with(
        grpc::request(message(), "alice"),
        "a2a-version",
        "0.3",
    ));
    let refused = refused.await.expect_err("version");
    grpc::assert_status(&refused, Code::FailedPrecondition, "VERSION_NOT_SUPPORTED");

    // Invalid params, with a BadRequest naming the field.
    let no_id = json!({"role": "ROLE_USER", "parts": [{"text": "x"}]});
    let refused = send(&mut c, "alice", no_id)
        .await
        .expect_err("no messageId");
    grpc::assert_status(&refused, Code::InvalidArgument, "INVALID_PARAMS");
    let bad_request = tonic_types::StatusExt::get_details_bad_request(&refused);
    let fields: Vec<String> = (bad_request.expect("a BadRequest").field_violations)
        .into_iter()
        .map(|v| v.field)
        .collect();
    assert_eq!(fields, ["message.messageId"], "{refused:?}");

    // No identity on a server without a default participant: invalid params, as on
    // HTTP (UNAUTHENTICATED is jwt mode's: `in_jwt_mode_the_token_is_the_caller`).
    let refused = send(&mut c, "", user_message(&unique("tck-complete-task"), "x"));
    let refused = refused.await.expect_err("no one");
    grpc::assert_status(&refused, Code::InvalidArgument, "INVALID_PARAMS");
    assert!(refused.message().contains("no participant"), "{refused:?}");

    // Nothing refused was stored: alice has her one completed task.
    let list = c.list_tasks(grpc::request(pb::ListTasksRequest::default(), "alice"));
    let list = grpc::json_of(list.await.expect("ListTasks").get_ref());
    assert_eq!(listed_ids(&list), [done], "{list}");
}

/// Push off: every push-config rpc, and a send that names a webhook, is
/// PUSH_NOTIFICATION_NOT_SUPPORTED.
#[tokio::test]
async fn with_push_off_the_push_rpcs_are_not_supported() {
    let s = Server::start_with(&["--push-notifications", "false"]).await;
    let mut c = s.grpc().await;
    let id = task_id(&s.input_required_task().await);
    let config: pb::TaskPushNotificationConfig =
        grpc::message_of(&json!({"taskId": id, "url": "https://hooks.example/h"}));
    let req = || grpc::request(config.clone(), "");
    push_off(c.create_task_push_notification_config(req()).await);
    let which = config_of::<pb::GetTaskPushNotificationConfigRequest>(&id, "x");
    push_off(
        c.get_task_push_notification_config(grpc::request(which, ""))
            .await,
    );
    let all = config_of::<pb::ListTaskPushNotificationConfigsRequest>(&id, "");
    push_off(
        c.list_task_push_notification_configs(grpc::request(all, ""))
            .await,
    );
    let gone = config_of::<pb::DeleteTaskPushNotificationConfigRequest>(&id, "x");
    push_off(
        c.delete_task_push_notification_config(grpc::request(gone, ""))
            .await,
    );
    let hooked: pb::SendMessageRequest = grpc::message_of(&json!({
        "message": user_message(&unique("tck-complete-task"), "x"),
        "configuration": {"taskPushNotificationConfig": {"url": "https://hooks.example/h"}}}));
    push_off(c.send_message(grpc::request(hooked, "")).await);
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 1);
}

fn push_off<T: std::fmt::Debug>(answer: Result<tonic::Response<T>, Status>) {
    let refused = answer.expect_err("push is off");
    grpc::assert_status(
        &refused,
        Code::FailedPrecondition,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    );
}

/// A required extension: refused without it (EXTENSION_SUPPORT_REQUIRED naming it), served
/// with it in the `a2a-extensions` metadata, which the answer's metadata echoes, on a
/// unary and a streaming rpc; an unknown one is not echoed.
#[tokio::test]
async fn a_required_extension_comes_in_the_a2a_extensions_metadata() {
    let s = Server::start_with(&["--required-extensions", TASK_EXTENSION]).await;
    let mut c = s.grpc().await;
    let list = || grpc::request(pb::ListTasksRequest::default(), "alice");
    let refused = c.list_tasks(list()).await.expect_err("required");
    grpc::assert_status(
        &refused,
        Code::FailedPrecondition,
        "EXTENSION_SUPPORT_REQUIRED",
    );
    assert_eq!(
        grpc::error_info(&refused).metadata["extensions"],
        TASK_EXTENSION
    );
    let refused = c.list_tasks(with(list(), "a2a-extensions", CHANNEL_EXTENSION));
    let refused = refused.await.expect_err("another one only");
    grpc::assert_status(
        &refused,
        Code::FailedPrecondition,
        "EXTENSION_SUPPORT_REQUIRED",
    );

    let echoed = |md: &tonic::metadata::MetadataMap| {
        let v = md.get("a2a-extensions").and_then(|v| v.to_str().ok());
        let v = v.unwrap_or_default();
        let mut list: Vec<String> = v.split(',').map(|x| x.trim().to_owned()).collect();
        list.sort();
        list
    };
    let both = format!("{TASK_EXTENSION}, urn:unknown");
    let served = c.list_tasks(with(list(), "a2a-extensions", &both)).await;
    assert_eq!(echoed(served.expect("served").metadata()), [TASK_EXTENSION]);
    let streamed = send_request(user_message(&unique("tck-complete-task"), "x"));
    let streamed = with(grpc::request(streamed, "alice"), "a2a-extensions", &both);
    let served = c.send_streaming_message(streamed).await.expect("served");
    assert_eq!(echoed(served.metadata()), [TASK_EXTENSION]);
    let events = rest_of(&mut served.into_inner()).await;
    assert_eq!(
        event_state(&events[events.len() - 1]),
        "TASK_STATE_COMPLETED"
    );
}

// ------------------------------------------------------- item 3: strangers, identity

/// mallory's GetTask, SubscribeToTask and CancelTask of alice's tasks over gRPC (one
/// waiting, one done): the code, message and status details a task that does not exist
/// gets, once the ids are swapped; the task is not canceled.
async fn a_strangers_reads_and_cancel_get_a_missing_tasks_not_found(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
        return;
    };
    let mut c = s.grpc().await;
    // A task that waits, and one that is done (whose cancel and subscription a member
    // is refused otherwise: not cancelable, unsupported).
    for (prefix, at) in [
        ("tck-input-required", "TASK_STATE_INPUT_REQUIRED"),
        ("tck-complete-task", "TASK_STATE_COMPLETED"),
    ] {
        let sent = send(&mut c, "alice", user_message(&unique(prefix), "x"));
        let id = task_id(&sent.await.expect("sent")["task"]);
        strangers_learn_nothing(&s, &id, &[("x-participant-id", "mallory")]).await;
        let task = get(&mut c, "alice", &id).await.expect("alice's");
        assert_eq!(state(&task), at, "{task}");
    }
}

/// The three refusals of task `id` to a caller with metadata `who` are those of a
/// missing task.
async fn strangers_learn_nothing(s: &Server, id: &str, who: &[(&'static str, &str)]) {
    let mut c = s.grpc().await;
    let missing = missing_like(id);
    let mut answers = Vec::new();
    for task in [id, missing.as_str()] {
        let get = pb::GetTaskRequest {
            id: task.into(),
            ..Default::default()
        };
        let get = c.get_task(as_who(get, who)).await.expect_err("not found");
        let sub = c.subscribe_to_task(as_who(subscribe_request(task), who));
        let sub = sub.await.expect_err("not found");
        let cancel = c.cancel_task(as_who(cancel_request(task), who));
        let cancel = cancel.await.expect_err("not found");
        for refused in [&get, &sub, &cancel] {
            grpc::assert_status(refused, Code::NotFound, "TASK_NOT_FOUND");
        }
        answers.push([get, sub, cancel]);
    }
    for (on_task, on_missing) in answers[0].iter().zip(&answers[1]) {
        assert_eq!(
            swapped(on_task, id, &missing),
            (
                on_missing.code(),
                on_missing.message().to_owned(),
                on_missing.details().to_vec()
            ),
            "the stranger's refusal is a missing task's: {on_task:?}"
        );
    }
}

/// jwt mode: a good token in `authorization: Bearer` metadata is its participant; a bad
/// one, or none (an `x-participant-id` alone is no identity here), is UNAUTHENTICATED;
/// metadata naming someone other than the token is refused as on HTTP, and a stranger's
/// token learns nothing of another's task.
async fn in_jwt_mode_the_token_is_the_caller(backend: Backend) {
    let idp = Idp::start().await;
    let args = idp.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(s) = Server::start_on(backend, &args).await else {
        return;
    };
    let mut c = s.grpc().await;
    let alice = idp.token("alice");
    let message = || send_request(user_message(&unique("tck-input-required"), "x"));
    let sent = c.send_message(grpc::request_with_token(message(), &alice));
    let sent = grpc::json_of(sent.await.expect("alice's token").get_ref());
    let id = task_id(&sent["task"]);
    let get = |who: &[(&'static str, &str)]| {
        let req = pb::GetTaskRequest {
            id: id.clone(),
            ..Default::default()
        };
        as_who(req, who)
    };
    let bearer = format!("Bearer {alice}");
    let task = c.get_task(get(&[("authorization", &bearer)])).await;
    assert_eq!(task.expect("alice's").get_ref().id, id);
    // Naming herself too is allowed.
    let both = [
        ("authorization", bearer.as_str()),
        ("x-participant-id", "alice"),
    ];
    assert_eq!(
        c.get_task(get(&both)).await.expect("alice's").get_ref().id,
        id
    );

    let mut wrong_audience = Idp::claims("alice");
    wrong_audience["aud"] = json!("someone-else");
    let wrong_audience = format!(
        "Bearer {}",
        idp.sign(
            identity::Alg::Rs256,
            Some(identity::RSA_KID),
            &wrong_audience
        )
    );
    for who in [
        vec![("authorization", "Bearer not-a-token")],
        vec![("authorization", wrong_audience.as_str())],
        vec![("authorization", alice.as_str())],
        vec![("x-participant-id", "alice")],
        vec![],
    ] {
        let refused = c.get_task(get(&who)).await.expect_err("no valid token");
        grpc::assert_status(&refused, Code::Unauthenticated, "UNAUTHENTICATED");
        let sent = c.send_message(as_who(message(), &who)).await;
        let refused = sent.expect_err("no valid token");
        grpc::assert_status(&refused, Code::Unauthenticated, "UNAUTHENTICATED");
    }
    let as_bob = [
        ("authorization", bearer.as_str()),
        ("x-participant-id", "bob"),
    ];
    let refused = c.get_task(get(&as_bob)).await.expect_err("not bob");
    grpc::assert_status(&refused, Code::InvalidArgument, "INVALID_PARAMS");
    assert!(
        refused.message().contains("X-Participant-Id names bob"),
        "{refused:?}"
    );

    let mallory = format!("Bearer {}", idp.token("mallory"));
    strangers_learn_nothing(&s, &id, &[("authorization", &mallory)]).await;
    // mallory's token under alice's name in the metadata: refused, not alice's task.
    let posing = [
        ("authorization", mallory.as_str()),
        ("x-participant-id", "alice"),
    ];
    let refused = c.get_task(get(&posing)).await.expect_err("not alice");
    grpc::assert_status(&refused, Code::InvalidArgument, "INVALID_PARAMS");
    let list = c.list_tasks(grpc::request_with_token(
        pb::ListTasksRequest::default(),
        &alice,
    ));
    let list = grpc::json_of(list.await.expect("alice's list").get_ref());
    assert_eq!(
        listed_ids(&list),
        [id],
        "nothing refused was stored: {list}"
    );
}

/// mallory's message on alice's task, and an `x-participant-id` that is no id: refused
/// over gRPC with the audit row JSON-RPC's refusal writes (but for its time and message
/// id), and nothing written into the task.
async fn a_refusal_over_grpc_is_audited_as_over_jsonrpc(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
        return;
    };
    let mut c = s.grpc().await;
    let asked = send(
        &mut c,
        "alice",
        user_message(&unique("tck-input-required"), "x"),
    );
    let id = task_id(&asked.await.expect("sent")["task"]);
    let before = s.store().load_task(&id).await.expect("load").expect("task");
    let on_task = || reply_message(&unique("tck-complete-task"), &id, "mine now");
    let refused = send(&mut c, "mallory", on_task())
        .await
        .expect_err("a stranger");
    grpc::assert_status(&refused, Code::NotFound, "TASK_NOT_FOUND");
    identity::send(&s, &Who::header("mallory"), Via::JsonRpc, on_task())
        .await
        .not_found();
    let bad_id = "m".repeat(300);
    let bad_id = bad_id.as_str();
    let refused = send(&mut c, bad_id, on_task()).await.expect_err("no id");
    grpc::assert_status(&refused, Code::InvalidArgument, "INVALID_PARAMS");
    identity::send(&s, &Who::header(bad_id), Via::JsonRpc, on_task())
        .await
        .invalid_params();

    let after = s.store().load_task(&id).await.expect("load").expect("task");
    assert_eq!(
        after.version, before.version,
        "nothing written into the task"
    );
    for task in [id.as_str(), ""] {
        let trail = s.store().audit_trail(task).await.expect("audit trail");
        let rows: Vec<_> = (trail.into_iter())
            .filter(|r| !r.accepted)
            .map(store_row)
            .collect();
        assert_eq!(rows.len(), 2, "one row a binding, under {task:?}: {rows:?}");
        assert_eq!(rows[0], rows[1], "gRPC's row is JSON-RPC's");
    }
}

/// An audit row without what differs between two refusals of the same thing.
fn store_row(mut r: common::store::AuditRecord) -> common::store::AuditRecord {
    assert!(r.at.is_some(), "{r:?}");
    r.at = None;
    r.message_id.clear();
    r
}

/// `--rate-limit-per-minute`: a gRPC call past the limit is RESOURCE_EXHAUSTED, a status
/// the client reads (HTTP's 429 reaches a gRPC client as UNAVAILABLE at best).
#[tokio::test]
async fn past_the_rate_limit_a_grpc_call_is_resource_exhausted() {
    let s = Server::start_with(&["--rate-limit-per-minute", "3"]).await;
    let mut c = s.grpc().await;
    for n in 0..3 {
        let list = c.list_tasks(grpc::request(pb::ListTasksRequest::default(), ""));
        list.await
            .unwrap_or_else(|e| panic!("call {n} within the limit: {e:?}"));
    }
    let refused = c.list_tasks(grpc::request(pb::ListTasksRequest::default(), ""));
    let refused = refused.await.expect_err("past the limit");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    let streamed = send_request(user_message(&unique("tck-stream-002"), "x"));
    let refused = c.send_streaming_message(grpc::request(streamed, "")).await;
    let refused = refused.expect_err("past the limit");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
}

// ---------------------------------------------------------- item 5: message size

/// A SendMessage of `encoded` bytes or the nearest below (a text part sized to it).
fn message_of_size(message_id: &str, encoded: usize) -> pb::SendMessageRequest {
    let mut text = encoded;
    loop {
        let req = send_request(user_message(message_id, &"x".repeat(text)));
        if req.encoded_len() <= encoded {
            return req;
        }
        text -= 1;
    }
}

/// A 2 MiB SendMessage (the limit is 1 MiB) is RESOURCE_EXHAUSTED and stores nothing; with
/// `--max-body-bytes 4096`, a message of 4096 bytes passes, one of 4097 is refused.
async fn a_message_over_the_limit_is_refused_before_it_is_stored(backend: Backend) {
    let Some(mut s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let mut c = s.grpc().await;
    let mid = unique("tck-complete-task");
    let big = message_of_size(&mid, 2 * 1024 * 1024);
    let refused = c.send_message(grpc::request(big.clone(), "")).await;
    let refused = refused.expect_err("2 MiB");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    let refused = c.send_streaming_message(grpc::request(big, "")).await;
    let refused = refused.expect_err("2 MiB");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 0);
    let stored = s.store().message_task("", ANONYMOUS, &mid).await;
    assert_eq!(stored.expect("read"), None, "the message was stored");

    s.restart_with(&["--max-body-bytes", "4096"]).await;
    let mut c = s.grpc().await;
    let fits = message_of_size(&unique("tck-complete-task"), 4096);
    assert_eq!(fits.encoded_len(), 4096, "sized to the byte");
    let sent = c.send_message(grpc::request(fits, "")).await;
    let sent = grpc::json_of(sent.expect("4096 bytes fit").get_ref());
    assert_eq!(state(&sent["task"]), "TASK_STATE_COMPLETED", "{sent}");
    let mid = unique("tck-complete-task");
    let over = message_of_size(&mid, 4097);
    assert_eq!(over.encoded_len(), 4097, "sized to the byte");
    let refused = c.send_message(grpc::request(over, "")).await;
    let refused = refused.expect_err("4097 bytes");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains("4096"), "{refused:?}");
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 1);
    let stored = s.store().message_task("", ANONYMOUS, &mid).await;
    assert_eq!(stored.expect("read"), None, "the message was stored");
}

// ---------------------------------------------------------- the stream budget

/// One participant holds at most four streams of a task, whichever binding opened them:
/// two gRPC streams and one of each HTTP binding, then a fifth over gRPC (a subscription,
/// a streaming send, which stores nothing) is refused; one gRPC stream dropped frees its
/// place.
#[tokio::test]
async fn the_stream_budget_counts_grpc_streams_with_the_http_ones() {
    // A model that answers after ten minutes: the task stays WORKING through the test.
    let script = Script::new(json!([{"text": "Done.", "delay_ms": 600_000}]));
    let model = script.model();
    let s = Server::start_with(&["--agent", "llm", "--model", &model]).await;
    let params = json!({"message": user_message(&unique("m"), "Paint the shed"),
        "configuration": {"returnImmediately": true}});
    let id = task_id(&s.rpc_ok("SendMessage", params).await["task"]);
    s.wait_for_state(&id, "TASK_STATE_WORKING", Duration::from_secs(20))
        .await;

    let mut c = s.grpc().await;
    let subscribed = || async {
        let mut c = s.grpc().await;
        let sub = c.subscribe_to_task(grpc::request(subscribe_request(&id), ""));
        let mut sub = sub.await?.into_inner();
        let first = next(&mut sub).await?.expect("the task");
        assert_eq!(stream_response_kind(&first), "task", "{first}");
        Ok::<_, Status>(sub)
    };
    let mut held = vec![
        subscribed().await.expect("1"),
        subscribed().await.expect("2"),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
        "params": {"id": id}});
    let over_jsonrpc = s.rpc_raw(&default_headers(), body.to_string()).await;
    let _over_jsonrpc = expect_stream(over_jsonrpc, "JSON-RPC's").await;
    let path = format!("/tasks/{id}:subscribe");
    let over_rest = s.rest(Method::POST, &path, None).await;
    let _over_rest = expect_stream(over_rest, "REST's").await;

    let refused = subscribed().await.expect_err("a fifth stream");
    grpc::assert_status(&refused, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
    assert!(
        refused.message().contains("You hold 4 streams of task"),
        "{refused:?}"
    );
    let mid = unique("remark");
    let remark = send_request(reply_message(&mid, &id, "Blue, please"));
    let refused = c.send_streaming_message(grpc::request(remark, "")).await;
    let refused = refused.expect_err("a fifth stream");
    grpc::assert_status(&refused, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
    let stored = s.store().message_task("", ANONYMOUS, &mid).await;
    assert_eq!(
        stored.expect("read"),
        None,
        "a refused send stored its message"
    );

    drop(held.remove(0));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match subscribed().await {
            Ok(sub) => break held.push(sub),
            Err(refused) => assert!(Instant::now() < deadline, "no place freed: {refused:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
