//! Participants, channels and help requests over HTTP, on both stores: who a message is
//! from, who may see and touch a task (a stranger gets exactly the not-found of a task
//! that does not exist), and the LLM agent's help round trip — the model asks a
//! participant with `ask_participant`, the task waits in INPUT_REQUIRED with the question
//! as its status message, the participant's reply resumes it and reaches the model framed
//! as `Reply from <id> to "<question>": <text>`. A scripted model logs every request it
//! gets, so the tests see exactly what the model saw.
//!
//! Each scenario is an async fn taking the [`Backend`], run by one test per store. They
//! answer the Python tests `tests/integration/help/test_help_requests.py` (a) and (c),
//! `tests/integration/a2a/test_access.py` (a) and (b), and the e2e `test_crash_recovery.py`
//! (SIGKILL during INPUT_REQUIRED).

use harness_e2e::participants::*;
use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

/// alice's first message: the task the model asks her about.
const FIRST: &str = "Paint the shed";
const QUESTION: &str = "Which colour?";
const ANSWER: &str = "Painted it blue.";
/// Text a stranger sends; it must never reach the model.
const MALLORY_TEXT: &str = "MALLORY-SAYS: paint it black";

/// A model whose turn 0 asks alice which colour and whose turn 1 answers.
fn ask_alice_then_answer() -> Script {
    Script::new(json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "alice", "question": QUESTION, "options": ["red", "blue"]}}]},
        {"text": ANSWER}
    ]))
}

// ------------------------------------------------------------ requests as someone

/// A streaming JSON-RPC call as `who`: the events until the server closes the stream.
async fn rpc_stream_as(s: &Server, who: &str, method: &str, params: Value) -> Vec<SseEvent> {
    let body =
        json!({"jsonrpc": "2.0", "id": unique("stream"), "method": method, "params": params});
    let resp = s.rpc_raw(&headers_as(Some(who)), body.to_string()).await;
    read_sse(expect_stream(resp, method).await).await
}

/// A REST call as `who`: the HTTP status and the raw body.
async fn rest_as(
    s: &Server,
    who: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let resp = s.rest_raw(method, path, &headers_as(who), body).await;
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("REST body"))
}

/// A REST call as `who` that must answer HTTP 200; the JSON body.
async fn rest_ok_as(
    s: &Server,
    who: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let (status, text) = rest_as(s, who, method.clone(), path, body).await;
    assert_eq!(status, 200, "{method} {path} as {who:?}: {text}");
    parse(&text)
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `text` with every `(id, placeholder)` replaced, so answers about different ids compare.
fn masked(text: &str, ids: &[(&str, &str)]) -> String {
    ids.iter().fold(text.to_owned(), |t, (id, placeholder)| {
        t.replace(id, placeholder)
    })
}

// ------------------------------------------------------------------------ messages

/// A user message from `who` (metadata), continuing `task_id` when given.
fn message_from(who: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut m = json!({
        "messageId": unique("m"), "role": "ROLE_USER", "parts": [{"text": text}],
        "metadata": {"participant_id": who}
    });
    if let Some(id) = task_id {
        m["taskId"] = json!(id);
    }
    m
}

/// A message whose only part is a channel `help_reply` from `who` on task `task_id`.
fn help_reply(who: &str, task_id: &str, in_reply_to: &str, text: &str) -> Value {
    json!({
        "messageId": unique("m"), "taskId": task_id, "role": "ROLE_USER",
        "metadata": {"participant_id": who},
        "parts": [{"data": {"channel_id": task_id, "sender": who, "kind": "help_reply",
                            "text": text, "in_reply_to": in_reply_to},
                   "mediaType": CHANNEL_MEDIA_TYPE}]
    })
}

/// What the model saw as the reply to the help request.
fn framed_reply(who: &str, text: &str) -> String {
    format!("Reply from {who} to \"{QUESTION}\": {text}")
}

fn message_id(message: &Value) -> String {
    message["messageId"].as_str().expect("messageId").to_owned()
}

/// The ids of the messages in a task's history.
fn history_ids(task: &Value) -> Vec<&str> {
    task["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|m| m["messageId"].as_str())
        .collect()
}

// ---------------------------------------------------------------------- assertions

/// A task started by `reporter`'s plain message: they are its reporter, the harness's
/// agent its assignee.
fn assert_default_participants(task: &Value, reporter: &str) {
    assert_eq!(
        participants(task),
        &json!([
            participant(reporter, "human", "reporter"),
            participant(AGENT_ID, "agent", "assignee")
        ]),
        "{task}"
    );
}

/// The INPUT_REQUIRED status message that carries the question to alice, exactly.
fn assert_question(task_id: &str, context_id: &str, message: &Value) -> String {
    let help_id = message["messageId"].as_str().unwrap_or_default().to_owned();
    let n = help_id
        .strip_prefix(&format!("{task_id}:help:"))
        .unwrap_or_else(|| panic!("help message id {help_id:?} is not <taskId>:help:<n>"));
    assert!(
        !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()),
        "help message id {help_id:?} is not <taskId>:help:<n>"
    );
    assert_eq!(
        message,
        &json!({
            "messageId": help_id, "contextId": context_id, "taskId": task_id,
            "role": "ROLE_AGENT",
            "parts": [
                {"text": "Which colour?\nOptions: red, blue"},
                {"data": {"channel_id": task_id, "sender": AGENT_ID, "kind": "help_request",
                          "text": QUESTION, "parts": [], "in_reply_to": null},
                 "mediaType": CHANNEL_MEDIA_TYPE}
            ],
            "metadata": {"addressee": "alice"}
        }),
        "the question's status message"
    );
    help_id
}

/// The task waits for alice's answer with the question as its status message; returns
/// the help message id.
fn assert_asked(task: &Value) -> String {
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    let id = task_id(task);
    let context = task["contextId"].as_str().expect("contextId");
    assert_question(&id, context, &task["status"]["message"])
}

/// alice starts the task with a plain message and the model asks her: the waiting task,
/// its id and the help message id.
async fn alice_is_asked(s: &Server) -> (Value, String, String) {
    let task = send_as(s, Some("alice"), message_from("alice", FIRST, None)).await;
    let id = task_id(&task);
    let help_id = assert_asked(&task);
    (task, id, help_id)
}

fn assert_answered(task: &Value) {
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(status_text(task), ANSWER, "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], ANSWER, "{task}");
}

/// Turn 0 saw the task's first message ([`FIRST`]); turn 1 saw the question (the model's
/// own `ask_participant` call and its result) and then, framed, alice's `reply`.
fn assert_model_saw_the_reply(script: &Script, reply: &str) {
    let turn0 = script.requests_for_turn(0);
    assert_eq!(turn0.len(), 1, "one turn-0 request: {}", script.log_text());
    assert!(
        turn0[0]["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .any(|m| m["role"] == "user" && m["text"] == FIRST),
        "turn 0 holds the first message {FIRST:?}: {}",
        turn0[0]
    );
    let turn1 = script.requests_for_turn(1);
    assert_eq!(turn1.len(), 1, "one turn-1 request: {}", script.log_text());
    let messages = turn1[0]["messages"].as_array().expect("messages");
    let asked = messages
        .iter()
        .position(|m| {
            m["role"] == "assistant"
                && m["tool_calls"][0]["name"] == "ask_participant"
                && m["tool_calls"][0]["arguments"]["question"] == QUESTION
        })
        .unwrap_or_else(|| panic!("turn 1 holds the question: {}", turn1[0]));
    let result = messages
        .iter()
        .position(|m| m["role"] == "tool" && m["name"] == "ask_participant")
        .unwrap_or_else(|| panic!("turn 1 holds the ask's result: {}", turn1[0]));
    let framed = framed_reply("alice", reply);
    let replied = messages
        .iter()
        .position(|m| m["role"] == "user" && m["text"] == framed.as_str())
        .unwrap_or_else(|| panic!("turn 1 holds {framed:?}: {}", turn1[0]));
    assert!(
        asked < result && result < replied,
        "question, result, reply in order: {}",
        turn1[0]
    );
}

/// A JSON-RPC error envelope's `error`, checked to be task-not-found.
fn not_found_error(resp: &Value) -> Value {
    assert_rpc_error(resp, -32001, "TASK_NOT_FOUND");
    resp["error"].clone()
}

/// A REST call as `who` that must be refused as task-not-found (404); the raw body.
async fn rest_not_found(
    s: &Server,
    who: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> String {
    let (status, text) = rest_as(s, who, method, path, body).await;
    assert_rest_error(status, &parse(&text), 404, "NOT_FOUND", "TASK_NOT_FOUND");
    text
}

/// mallory's `message` sent with `X-Participant-Id: header`, over HTTP+JSON when `rest`,
/// else over JSON-RPC with the fixed request id `r-1` (so that answers compare byte for
/// byte); it must be refused as task-not-found. The raw answer.
async fn refused_send(s: &Server, header: &str, rest: bool, message: Value) -> String {
    let params = send_params(message);
    if rest {
        let path = "/message:send";
        return rest_not_found(s, Some(header), Method::POST, path, Some(params)).await;
    }
    let (status, text) = rpc_raw_as(s, Some(header), "r-1", "SendMessage", params).await;
    assert_eq!(status, 200, "{text}");
    not_found_error(&parse(&text));
    text
}

/// The error says "no participant asserted" (after the "Invalid params: " every invalid
/// params message starts with).
fn assert_no_participant(error: &Value) {
    let message = error["message"].as_str().unwrap_or_default();
    assert_eq!(
        message.strip_prefix("Invalid params: ").unwrap_or(message),
        "no participant asserted",
        "{error}"
    );
}

/// A JSON-RPC answer that refuses a message naming no participant: invalid params, "no
/// participant asserted".
fn assert_rpc_no_participant(resp: &Value) {
    assert_rpc_error(resp, -32602, "INVALID_PARAMS");
    assert_no_participant(&resp["error"]);
}

// ===================================================== help round trip: ask → reply

/// alice starts the task with an envelope that also names bob (a watcher); bob's remark
/// while the task waits is stored but does not answer; alice's plain-text reply does.
async fn help_round_trip_over_jsonrpc(backend: Backend) {
    let script = ask_alice_then_answer();
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let alice = participant("alice", "human", "reporter");
    let bob = participant("bob", "human", "watcher");
    let envelope = task_envelope_part("Paint the shed", "Paint the shed", json!([alice, bob]));
    let mut first = message_from("alice", FIRST, None);
    first["parts"].as_array_mut().expect("parts").push(envelope);
    let task = send_as(&s, Some("alice"), first).await;
    let id = task_id(&task);
    assert_asked(&task);
    assert_eq!(
        participants(&task),
        &json!([alice, bob, participant(AGENT_ID, "agent", "assignee")]),
        "{task}"
    );
    assert_eq!(
        get_task_as(&s, "alice", &id).await["status"],
        task["status"]
    );

    // bob is on the task but was not asked: his message is kept, the task still waits.
    let remark = message_from("bob", "Red would be nicer", Some(&id));
    let remark_id = message_id(&remark);
    let after_bob = send_as(&s, Some("bob"), remark).await;
    assert_eq!(
        state(&after_bob),
        "TASK_STATE_INPUT_REQUIRED",
        "{after_bob}"
    );
    let stored = get_task_as(&s, "alice", &id).await;
    assert_eq!(state(&stored), "TASK_STATE_INPUT_REQUIRED", "{stored}");
    assert!(
        history_ids(&stored).contains(&remark_id.as_str()),
        "bob's message is stored: {stored}"
    );
    assert_eq!(script.requests().len(), 1, "bob's remark called no model");

    let done = send_as(&s, Some("alice"), message_from("alice", "blue", Some(&id))).await;
    assert_eq!(task_id(&done), id);
    assert_answered(&done);
    assert_answered(&get_task_as(&s, "alice", &id).await);
    assert_model_saw_the_reply(&script, "blue");
}

/// `tests/integration/help/test_help_requests.py` (a) ask/reply, over JSON-RPC (blocking):
/// the ask, the exact question, a watcher's remark that does not answer, alice's reply.
#[tokio::test]
async fn test_help_requests_a_ask_reply_over_jsonrpc_on_the_embedded_store() {
    help_round_trip_over_jsonrpc(Backend::Embedded).await;
}

/// `tests/integration/help/test_help_requests.py` (a) ask/reply, over JSON-RPC (blocking),
/// on DynamoDB.
#[tokio::test]
async fn test_help_requests_a_ask_reply_over_jsonrpc_on_dynamodb() {
    help_round_trip_over_jsonrpc(Backend::DynamoDb).await;
}

/// Over HTTP+JSON: the reply is a channel `help_reply` part naming the question; one that
/// names another message is stored but does not answer.
async fn help_round_trip_over_rest(backend: Backend) {
    let script = ask_alice_then_answer();
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let send = |message: Value| {
        let s = &s;
        async move {
            let body = Some(send_params(message));
            let answer = rest_ok_as(s, Some("alice"), Method::POST, "/message:send", body).await;
            answer["task"].clone()
        }
    };
    let task = send(message_from("alice", FIRST, None)).await;
    let id = task_id(&task);
    let help_id = assert_asked(&task);
    assert_default_participants(&task, "alice");

    // A help_reply naming another message is not the reply.
    let stray = help_reply("alice", &id, &format!("{id}:help:999999"), "green");
    let stray_id = message_id(&stray);
    let waiting = send(stray).await;
    assert_eq!(state(&waiting), "TASK_STATE_INPUT_REQUIRED", "{waiting}");
    let path = format!("/tasks/{id}?historyLength=100");
    let stored = rest_ok_as(&s, Some("alice"), Method::GET, &path, None).await;
    assert_eq!(state(&stored), "TASK_STATE_INPUT_REQUIRED", "{stored}");
    assert!(
        history_ids(&stored).contains(&stray_id.as_str()),
        "the stray reply is stored: {stored}"
    );
    assert_eq!(
        script.requests().len(),
        1,
        "the stray reply called no model"
    );

    let done = send(help_reply("alice", &id, &help_id, "blue")).await;
    assert_eq!(task_id(&done), id);
    assert_answered(&done);
    assert_model_saw_the_reply(&script, "blue");
}

/// `tests/integration/help/test_help_requests.py` (a) ask/reply, over HTTP+JSON
/// (blocking), the reply a `help_reply` channel part with `in_reply_to`.
#[tokio::test]
async fn test_help_requests_a_ask_reply_over_rest_on_the_embedded_store() {
    help_round_trip_over_rest(Backend::Embedded).await;
}

/// `tests/integration/help/test_help_requests.py` (a) ask/reply, over HTTP+JSON
/// (blocking), on DynamoDB.
#[tokio::test]
async fn test_help_requests_a_ask_reply_over_rest_on_dynamodb() {
    help_round_trip_over_rest(Backend::DynamoDb).await;
}

/// Streamed: the first stream ends at the INPUT_REQUIRED update carrying the question;
/// the reply's stream is the Task, WORKING, …, COMPLETED.
async fn help_round_trip_streamed(backend: Backend) {
    let script = ask_alice_then_answer();
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let first = message_from("alice", FIRST, None);
    let asked = rpc_stream_as(&s, "alice", "SendStreamingMessage", send_params(first)).await;
    assert_eq!(asked[0].kind(), "task", "{asked:?}");
    let task = asked[0].payload().clone();
    let id = task_id(&task);
    assert_default_participants(&task, "alice");
    let last = asked.last().expect("events");
    assert_eq!(last.kind(), "statusUpdate", "{asked:?}");
    assert_eq!(last.state(), Some("TASK_STATE_INPUT_REQUIRED"), "{asked:?}");
    assert_eq!(last.payload()["taskId"], id.as_str());
    let context = task["contextId"].as_str().expect("contextId");
    let help_id = assert_question(&id, context, &last.payload()["status"]["message"]);
    assert!(
        states(&asked[1..])
            .iter()
            .all(|st| st != "TASK_STATE_COMPLETED"),
        "{asked:?}"
    );
    assert_asked(&get_task_as(&s, "alice", &id).await);

    let reply = help_reply("alice", &id, &help_id, "blue");
    let events = rpc_stream_as(&s, "alice", "SendStreamingMessage", send_params(reply)).await;
    assert_eq!(events[0].kind(), "task", "{events:?}");
    assert_eq!(events[0].payload()["id"], id.as_str());
    assert_eq!(events[1].kind(), "statusUpdate", "{events:?}");
    assert_eq!(events[1].state(), Some("TASK_STATE_WORKING"), "{events:?}");
    let last = events.last().expect("events");
    assert_eq!(last.state(), Some("TASK_STATE_COMPLETED"), "{events:?}");
    assert_eq!(
        last.payload()["status"]["message"]["parts"][0]["text"],
        ANSWER
    );
    for e in &events[1..] {
        assert_eq!(e.payload()["taskId"], id.as_str(), "{events:?}");
    }
    let done_states = states(&events);
    assert_eq!(
        done_states
            .iter()
            .filter(|st| *st == "TASK_STATE_COMPLETED")
            .count(),
        1,
        "the stream ends at COMPLETED: {events:?}"
    );
    assert_answered(&get_task_as(&s, "alice", &id).await);
    assert_model_saw_the_reply(&script, "blue");
}

/// `tests/integration/help/test_help_requests.py` (a) ask/reply, streamed
/// (SendStreamingMessage for the ask and for the reply).
#[tokio::test]
async fn test_help_requests_a_ask_reply_streamed_on_the_embedded_store() {
    help_round_trip_streamed(Backend::Embedded).await;
}

/// `tests/integration/help/test_help_requests.py` (a) ask/reply, streamed, on DynamoDB.
#[tokio::test]
async fn test_help_requests_a_ask_reply_streamed_on_dynamodb() {
    help_round_trip_streamed(Backend::DynamoDb).await;
}

// ================================================= a stranger while the task waits

/// mallory (by header, and by metadata under alice's header) writes on alice's waiting
/// task: each is refused with the very bytes a missing task gets and audited; the task is
/// not written (its question stands, issue 17); nothing of it reaches the model; alice's
/// reply still works.
async fn mallory_is_refused_while_the_task_waits(backend: Backend) {
    let script = ask_alice_then_answer();
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let (asked, id, _) = alice_is_asked(&s).await;
    let missing = unique("missing-task");

    // JSON-RPC (mallory's own header, then alice's header with mallory in the metadata)
    // and HTTP+JSON: the whole answer, byte for byte, once the ids are masked.
    let mut refused = Vec::new();
    for (header, rest) in [("mallory", false), ("alice", false), ("mallory", true)] {
        let on_task = message_from("mallory", MALLORY_TEXT, Some(&id));
        let on_missing = message_from("mallory", MALLORY_TEXT, Some(&missing));
        let (m1, m2) = (message_id(&on_task), message_id(&on_missing));
        let body1 = refused_send(&s, header, rest, on_task).await;
        let body2 = refused_send(&s, header, rest, on_missing).await;
        assert_eq!(
            masked(&body1, &[(&id, "<TASK>"), (&m1, "<MSG>")]),
            masked(&body2, &[(&missing, "<TASK>"), (&m2, "<MSG>")]),
            "a stranger learns nothing (X-Participant-Id: {header}, REST: {rest})"
        );
        refused.push(m1);
    }

    // Each refusal on the task is audited (records of one millisecond may come in any
    // order, so the message ids are compared as sets).
    let trail = s.store().audit_trail(&id).await.expect("audit trail");
    for record in &trail {
        assert_eq!(record.participant, "mallory", "{record:?}");
        assert!(!record.accepted, "{record:?}");
        assert_eq!(record.detail, "not a participant", "{record:?}");
        assert_eq!(record.operation, "SendMessage", "{record:?}");
        assert_eq!(record.task_id, id, "{record:?}");
        assert!(record.at.is_some(), "{record:?}");
    }
    let mut audited: Vec<&str> = trail.iter().map(|r| r.message_id.as_str()).collect();
    let mut expected: Vec<&str> = refused.iter().map(String::as_str).collect();
    audited.sort_unstable();
    expected.sort_unstable();
    assert_eq!(audited, expected, "one record per refusal: {trail:?}");

    // The waiting task is as it was, still asking alice; mallory's messages are not kept.
    let now = get_task_as(&s, "alice", &id).await;
    assert_eq!(now["status"], asked["status"], "{now}");
    assert!(
        history_ids(&now)
            .iter()
            .all(|mid| !refused.iter().any(|r| r == mid)),
        "refused messages are not stored: {now}"
    );
    assert!(!now.to_string().contains(MALLORY_TEXT), "{now}");

    // alice's reply still answers the question.
    let done = send_as(&s, Some("alice"), message_from("alice", "blue", Some(&id))).await;
    assert_answered(&done);
    assert_model_saw_the_reply(&script, "blue");
    let log = script.log_text();
    assert_eq!(script.requests().len(), 2, "{log}");
    assert!(
        !log.contains("MALLORY") && !log.contains("mallory"),
        "the refused text never reached the model: {log}"
    );
}

/// `tests/integration/help/test_help_requests.py` (c) mallory: a non-participant's
/// message on a waiting task is refused as not found and audited, and writes nothing into
/// the task (the reference said so in a same-state status update: issue 17 made refusals
/// write nothing); the model never sees it.
#[tokio::test]
async fn test_help_requests_c_mallory_is_refused_on_the_embedded_store() {
    mallory_is_refused_while_the_task_waits(Backend::Embedded).await;
}

/// `tests/integration/help/test_help_requests.py` (c) mallory, on DynamoDB.
#[tokio::test]
async fn test_help_requests_c_mallory_is_refused_on_dynamodb() {
    mallory_is_refused_while_the_task_waits(Backend::DynamoDb).await;
}

// ========================================================================= access

/// On a server without a default participant: a foreign or missing X-Participant-Id gets,
/// on every task operation, the error a missing task gets; ListTasks shows each caller
/// only their own tasks.
async fn foreign_participants_get_not_found(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
        return;
    };
    // alice's task (by header) waits for input; bob's (by metadata only) too.
    let alice_task = send_as(
        &s,
        Some("alice"),
        user_message(&unique("tck-input-required"), "alice's task"),
    )
    .await;
    assert_eq!(
        state(&alice_task),
        "TASK_STATE_INPUT_REQUIRED",
        "{alice_task}"
    );
    assert_default_participants(&alice_task, "alice");
    let mut bobs = user_message(&unique("tck-input-required"), "bob's task");
    bobs["metadata"] = json!({"participant_id": "bob"});
    let resp = rpc_as(&s, None, "SendMessage", send_params(bobs)).await;
    let bob_task = resp["result"]["task"].clone();
    assert_eq!(state(&bob_task), "TASK_STATE_INPUT_REQUIRED", "{resp}");
    assert_default_participants(&bob_task, "bob");
    let id = task_id(&alice_task);
    let missing = unique("missing-task");

    // Each operation, for a stranger and for no one, against alice's task and a missing one.
    type Params = Box<dyn Fn(&str) -> Value>;
    let calls: Vec<(&str, Params)> = vec![
        ("GetTask", Box::new(|t: &str| json!({"id": t}))),
        ("CancelTask", Box::new(|t: &str| json!({"id": t}))),
        ("SubscribeToTask", Box::new(|t: &str| json!({"id": t}))),
        (
            "SendMessage",
            Box::new(|t: &str| send_params(reply_message(&unique("tck-complete-task"), t, "hi"))),
        ),
        (
            "SendStreamingMessage",
            Box::new(|t: &str| send_params(reply_message(&unique("tck-complete-task"), t, "hi"))),
        ),
        (
            "CreateTaskPushNotificationConfig",
            Box::new(
                |t: &str| json!({"taskId": t, "id": "hook", "url": "https://example.com/hook"}),
            ),
        ),
        (
            "GetTaskPushNotificationConfig",
            Box::new(|t: &str| json!({"taskId": t, "id": "hook"})),
        ),
        (
            "ListTaskPushNotificationConfigs",
            Box::new(|t: &str| json!({"taskId": t})),
        ),
        (
            "DeleteTaskPushNotificationConfig",
            Box::new(|t: &str| json!({"taskId": t, "id": "hook"})),
        ),
    ];
    for (method, params) in &calls {
        for who in [Some("mallory"), None] {
            let mut on_task = params(&id);
            let mut on_missing = params(&missing);
            if who.is_none() && method.contains("Message") {
                // With no header the message must name a sender to get this far: it
                // claims to be alice, but the request is no one's.
                for p in [&mut on_task, &mut on_missing] {
                    p["message"]["metadata"] = json!({"participant_id": "alice"});
                    p["message"]["messageId"] = json!(unique("claims-alice"));
                }
            }
            let e1 = not_found_error(&rpc_as(&s, who, method, on_task).await);
            let e2 = not_found_error(&rpc_as(&s, who, method, on_missing).await);
            assert_eq!(
                masked(&e1.to_string(), &[(&id, "<TASK>")]),
                masked(&e2.to_string(), &[(&missing, "<TASK>")]),
                "{method} as {who:?}: alice's task is a missing task"
            );
        }
    }
    // mallory claiming to be alice in the metadata is still not alice.
    let mut claim = reply_message(&unique("tck-complete-task"), &id, "hi");
    claim["metadata"] = json!({"participant_id": "alice"});
    let resp = rpc_as(&s, Some("mallory"), "SendMessage", send_params(claim)).await;
    not_found_error(&resp);

    // Over HTTP+JSON, byte for byte.
    let routes = [
        (Method::GET, "/tasks/{}", None),
        (Method::POST, "/tasks/{}:cancel", Some(json!({}))),
        (Method::GET, "/tasks/{}:subscribe", None),
        (Method::GET, "/tasks/{}/pushNotificationConfigs", None),
    ];
    for (method, path, body) in &routes {
        for who in [Some("mallory"), None] {
            let on_task = path.replace("{}", &id);
            let on_missing = path.replace("{}", &missing);
            let b1 = rest_not_found(&s, who, method.clone(), &on_task, body.clone()).await;
            let b2 = rest_not_found(&s, who, method.clone(), &on_missing, body.clone()).await;
            assert_eq!(
                masked(&b1, &[(&id, "<TASK>")]),
                masked(&b2, &[(&missing, "<TASK>")]),
                "{method} {path} as {who:?}"
            );
        }
    }

    // Nothing a stranger did moved the task or reached its history.
    let after = get_task_as(&s, "alice", &id).await;
    assert_eq!(state(&after), "TASK_STATE_INPUT_REQUIRED", "{after}");
    assert_eq!(
        user_messages(&after),
        [&alice_task["history"][0]],
        "only alice's message: {after}"
    );

    // ListTasks: each caller sees their own.
    let alices = rpc_ok_as(&s, Some("alice"), "ListTasks", json!({})).await;
    assert_eq!(listed_ids(&alices), [id.as_str()], "{alices}");
    assert_eq!(alices["totalSize"], 1, "{alices}");
    let bobs = rpc_ok_as(&s, Some("bob"), "ListTasks", json!({})).await;
    assert_eq!(listed_ids(&bobs), [task_id(&bob_task)], "{bobs}");
    for who in [Some("mallory"), None] {
        let list = rpc_ok_as(&s, who, "ListTasks", json!({})).await;
        assert!(listed_ids(&list).is_empty(), "{who:?} sees nothing: {list}");
        assert_eq!(list["totalSize"], 0, "{list}");
    }
    let list = rest_ok_as(&s, None, Method::GET, "/tasks", None).await;
    assert!(listed_ids(&list).is_empty(), "{list}");
    let list = rest_ok_as(&s, Some("bob"), Method::GET, "/tasks", None).await;
    assert_eq!(listed_ids(&list), [task_id(&bob_task)], "{list}");
}

/// `tests/integration/a2a/test_access.py` (a) foreign participant: GetTask, CancelTask,
/// SubscribeToTask, SendMessage and the push config operations answer a stranger (or no
/// one) as if the task did not exist; ListTasks shows only the caller's tasks.
#[tokio::test]
async fn test_access_a_foreign_participant_gets_not_found_on_the_embedded_store() {
    foreign_participants_get_not_found(Backend::Embedded).await;
}

/// `tests/integration/a2a/test_access.py` (a) foreign participant, on DynamoDB.
#[tokio::test]
async fn test_access_a_foreign_participant_gets_not_found_on_dynamodb() {
    foreign_participants_get_not_found(Backend::DynamoDb).await;
}

/// On a server without a default participant, a message that names no participant is
/// invalid params, "no participant asserted", over both bindings, and stores nothing.
async fn no_participant_is_refused_and_stores_nothing(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
        return;
    };
    let message_id = unique("tck-complete-task");
    let resp = rpc_as(
        &s,
        None,
        "SendMessage",
        send_params(user_message(&message_id, "who am I?")),
    )
    .await;
    assert_rpc_no_participant(&resp);
    // An empty header or metadata participant is none either.
    let mut empty = user_message(&unique("tck-complete-task"), "who am I?");
    empty["metadata"] = json!({"participant_id": ""});
    let resp = rpc_as(&s, Some(""), "SendMessage", send_params(empty)).await;
    assert_rpc_no_participant(&resp);

    let rest_id = unique("tck-complete-task");
    let (st, body) = rest_as(
        &s,
        None,
        Method::POST,
        "/message:send",
        Some(send_params(user_message(&rest_id, "who am I?"))),
    )
    .await;
    let body = parse(&body);
    assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    assert_no_participant(&body["error"]);
    let resp = rpc_as(
        &s,
        None,
        "SendStreamingMessage",
        send_params(user_message(&unique("tck-complete-task"), "who am I?")),
    )
    .await;
    assert_rpc_no_participant(&resp);

    // Nothing was stored: no message, no task anyone can list.
    let store = s.store();
    for mid in [&message_id, &rest_id] {
        assert_eq!(
            store.message_task("", "", mid).await.expect("store"),
            None,
            "message {mid} was not stored"
        );
    }
    for who in [None, Some(ANONYMOUS), Some("alice")] {
        let list = rpc_ok_as(&s, who, "ListTasks", json!({})).await;
        assert_eq!(list["totalSize"], 0, "{who:?}: {list}");
    }
    for participant in [ANONYMOUS, "alice"] {
        let page = store
            .list_tasks(&common::store::TaskQuery {
                participant: participant.into(),
                page_size: 10,
                ..Default::default()
            })
            .await
            .expect("store");
        assert!(page.tasks.is_empty(), "{participant:?}: {:?}", page.tasks);
    }

    // The same message naming its sender is taken.
    let mut named = user_message(&message_id, "who am I?");
    named["metadata"] = json!({"participant_id": "alice"});
    let task = rpc_ok_as(&s, None, "SendMessage", send_params(named)).await["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_default_participants(&task, "alice");
}

/// `tests/integration/a2a/test_access.py` (b) no participant: -32602 "no participant
/// asserted" (REST 400) and nothing stored.
#[tokio::test]
async fn test_access_b_no_participant_is_refused_on_the_embedded_store() {
    no_participant_is_refused_and_stores_nothing(Backend::Embedded).await;
}

/// `tests/integration/a2a/test_access.py` (b) no participant, on DynamoDB.
#[tokio::test]
async fn test_access_b_no_participant_is_refused_on_dynamodb() {
    no_participant_is_refused_and_stores_nothing(Backend::DynamoDb).await;
}

// =================================================================== crash recovery

/// The server is SIGKILLed while the task waits for alice; restarted on the same state,
/// it still waits with the same question, and alice's reply completes it without the
/// model being asked turn 0 again.
async fn sigkill_during_input_required(backend: Backend) {
    let script = ask_alice_then_answer();
    let Some(mut s) = llm_server(backend, &script).await else {
        return;
    };
    let (task, id, help_id) = alice_is_asked(&s).await;

    s.restart().await; // SIGKILL, then the same state directory / table

    let after = get_task_as(&s, "alice", &id).await;
    assert_eq!(assert_asked(&after), help_id);
    assert_eq!(after["status"], task["status"], "unchanged by the restart");
    let reply = help_reply("alice", &id, &help_id, "blue");
    let done = send_as(&s, Some("alice"), reply).await;
    assert_answered(&done);
    assert_answered(&get_task_as(&s, "alice", &id).await);
    assert_model_saw_the_reply(&script, "blue");
    assert_eq!(script.requests().len(), 2, "{}", script.log_text());
}

/// e2e `test_crash_recovery.py` (SIGKILL during INPUT_REQUIRED): after a kill and a
/// restart, the reply resumes and completes the task.
#[tokio::test]
async fn test_crash_recovery_sigkill_during_input_required_on_the_embedded_store() {
    sigkill_during_input_required(Backend::Embedded).await;
}

/// e2e `test_crash_recovery.py` (SIGKILL during INPUT_REQUIRED), on DynamoDB.
#[tokio::test]
async fn test_crash_recovery_sigkill_during_input_required_on_dynamodb() {
    sigkill_during_input_required(Backend::DynamoDb).await;
}
