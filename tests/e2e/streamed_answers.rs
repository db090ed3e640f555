//! Issue 50: the model's answer reaches streams as it is written. The scripted model
//! writes an answer in 20 chunks 200 ms apart; SendStreamingMessage and SubscribeToTask
//! carry it as `artifactUpdate` events of one artifact (batched into the task's log, on
//! both stores), the first soon after the model wrote it, the last with `lastChunk`, then
//! COMPLETED; a subscriber that comes in mid-answer gets the whole answer exactly once; a
//! stream cut off and retried replaces what was shown instead of doubling it.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use harness_e2e::grpc::{self, pb};
use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

const CHUNKS: usize = 20;

/// The answer's chunks: each names its place, so a chunk shown twice or left out shows.
fn chunks() -> Vec<String> {
    (0..CHUNKS).map(|i| format!("c{i:02} ")).collect()
}

fn answer() -> String {
    chunks().concat()
}

/// A script whose one turn streams the chunks `delay_ms` apart (`cut_after`: its first
/// attempt is cut off after that many), with a call log.
fn script(delay_ms: u64, cut_after: Option<usize>) -> (String, std::path::PathBuf) {
    let dir = std::env::temp_dir();
    let log = dir.join(format!("{}.log", unique("harness-calls")));
    let mut turn = json!({"chunks": chunks(), "chunk_delay_ms": delay_ms});
    if let Some(k) = cut_after {
        turn["cut_after"] = json!(k);
    }
    let path = dir.join(format!("{}.json", unique("harness-script")));
    let script = json!({"turns": [turn], "call_log": log});
    std::fs::write(&path, script.to_string()).expect("write the script");
    (format!("scripted:{}", path.display()), log)
}

async fn llm_server(backend: Backend, model: &str) -> Option<Server> {
    Server::start_on(backend, &["--agent", "llm", "--model", model]).await
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// When the model call of the log started (ms since the epoch): its first chunk is written
/// then.
fn call_started(log: &std::path::Path) -> i64 {
    let text = std::fs::read_to_string(log).expect("the call log");
    let line = text
        .lines()
        .find(|l| l.starts_with("turn "))
        .unwrap_or_else(|| panic!("no call in {text}"));
    line.rsplit(' ')
        .next()
        .and_then(|ms| ms.parse().ok())
        .expect("a time")
}

#[derive(Clone, Copy, Debug)]
enum Binding {
    JsonRpc,
    Rest,
    Grpc,
}

const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::Rest, Grpc];
use Binding::Grpc;

/// A stream of StreamResponses (as the JSON bindings' values), over any binding.
enum Events {
    Sse(SseReader),
    Grpc(tonic::Streaming<pb::StreamResponse>),
}

impl Events {
    async fn send(s: &Server, binding: Binding, message: Value) -> Events {
        match binding {
            Binding::JsonRpc => {
                let (_, reader) = s
                    .rpc_stream_open("SendStreamingMessage", send_params(message))
                    .await;
                Events::Sse(reader)
            }
            Binding::Rest => Events::Sse(
                s.rest_stream_open(
                    Method::POST,
                    "/message:stream",
                    Some(json!({ "message": message })),
                )
                .await,
            ),
            Grpc => {
                let request: pb::SendMessageRequest =
                    grpc::message_of(&json!({ "message": message }));
                let mut c = s.grpc().await;
                let stream = c.send_streaming_message(grpc::request(request, "")).await;
                Events::Grpc(stream.expect("SendStreamingMessage").into_inner())
            }
        }
    }

    async fn subscribe(s: &Server, binding: Binding, id: &str) -> Events {
        match binding {
            Binding::JsonRpc => {
                let (_, reader) = s
                    .rpc_stream_open("SubscribeToTask", json!({"id": id}))
                    .await;
                Events::Sse(reader)
            }
            Binding::Rest => Events::Sse(
                s.rest_stream_open(Method::GET, &format!("/tasks/{id}:subscribe"), None)
                    .await,
            ),
            Grpc => {
                let request = pb::SubscribeToTaskRequest {
                    id: id.into(),
                    ..Default::default()
                };
                let mut c = s.grpc().await;
                let stream = c.subscribe_to_task(grpc::request(request, "")).await;
                Events::Grpc(stream.expect("SubscribeToTask").into_inner())
            }
        }
    }

    /// The next StreamResponse and when it came, or None at the stream's end.
    async fn next(&mut self) -> Option<(i64, Value)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let event = match self {
            Events::Sse(reader) => reader
                .next_before(deadline)
                .await
                .map(|e| e.stream_response().clone()),
            Events::Grpc(stream) => tokio::time::timeout(Duration::from_secs(60), stream.message())
                .await
                .expect("an event in time")
                .expect("the stream goes well")
                .map(|e| grpc::json_of(&e)),
        };
        event.map(|e| (now_ms(), e))
    }

    async fn all(&mut self) -> Vec<(i64, Value)> {
        let mut events = Vec::new();
        while let Some(e) = self.next().await {
            events.push(e);
        }
        events
    }
}

/// The text of an artifact (its parts' texts joined).
fn text_of(artifact: &Value) -> String {
    artifact["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// What a client that applies artifact updates as A2A says shows: `append` adds to the
/// artifact, else the update replaces it. Starts from the task's artifacts, if a Task came.
fn shown(events: &[(i64, Value)]) -> String {
    let mut text = String::new();
    for (_, e) in events {
        if let Some(task) = e.get("task") {
            text = task["artifacts"]
                .as_array()
                .and_then(|a| a.first())
                .map(text_of)
                .unwrap_or_default();
        }
        if let Some(u) = e.get("artifactUpdate") {
            if u["append"].as_bool() != Some(true) {
                text.clear();
            }
            text.push_str(&text_of(&u["artifact"]));
        }
    }
    text
}

fn updates(events: &[(i64, Value)]) -> Vec<&Value> {
    events
        .iter()
        .filter_map(|(_, e)| e.get("artifactUpdate"))
        .collect()
}

/// Item 1: 20 chunks 200 ms apart, on `binding`.
async fn the_answer_streams_as_it_is_written(backend: Backend, binding: Binding) {
    let (model, log) = script(200, None);
    let Some(s) = llm_server(backend, &model).await else {
        return;
    };
    let mut events = Events::send(&s, binding, user_message(&unique("m"), "Tell me")).await;
    let events = events.all().await;
    let context = format!("{backend:?} {binding:?}: {events:?}");

    let updates = updates(&events);
    assert!(
        updates.len() >= 5,
        "the answer comes in pieces, not at once: {context}"
    );
    let ids: std::collections::HashSet<_> = updates
        .iter()
        .map(|u| u["artifact"]["artifactId"].clone())
        .collect();
    assert_eq!(ids.len(), 1, "one artifact: {context}");
    let joined: String = updates.iter().map(|u| text_of(&u["artifact"])).collect();
    assert_eq!(
        joined,
        answer(),
        "the updates joined are the answer: {context}"
    );
    assert_eq!(shown(&events), answer(), "{context}");
    assert_eq!(
        updates[0]["append"].as_bool(),
        None,
        "the first starts it: {context}"
    );
    assert!(
        updates[1..].iter().all(|u| u["append"] == true),
        "the others append: {context}"
    );
    let (last, before_last) = updates.split_last().expect("updates");
    assert_eq!(last["lastChunk"], true, "{context}");
    assert!(
        before_last
            .iter()
            .all(|u| u["lastChunk"].as_bool() != Some(true)),
        "{context}"
    );
    let end = &events.last().expect("events").1;
    assert_eq!(
        end["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "then the task completes: {context}"
    );

    // The first piece reaches the client within 500 ms of the model writing it.
    let first = events
        .iter()
        .find(|(_, e)| e.get("artifactUpdate").is_some())
        .map(|(at, _)| *at)
        .expect("an update");
    let started = call_started(&log);
    assert!(
        first - started < 500,
        "the first piece came {} ms after the model wrote it: {context}",
        first - started
    );

    // The stored task holds the answer whole, in one part.
    let task_id = events[0].1["task"]["id"]
        .as_str()
        .expect("the task")
        .to_owned();
    let task = s.get_task(&task_id).await;
    let artifacts = task["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 1, "{task}");
    assert_eq!(
        artifacts[0]["parts"].as_array().map(Vec::len),
        Some(1),
        "{task}"
    );
    assert_eq!(text_of(&artifacts[0]), answer());
    assert_eq!(task["status"]["message"]["parts"][0]["text"], answer());
}

#[tokio::test]
async fn the_answer_streams_as_it_is_written_embedded() {
    for binding in BINDINGS {
        the_answer_streams_as_it_is_written(Backend::Embedded, binding).await;
    }
}

#[tokio::test]
async fn the_answer_streams_as_it_is_written_on_dynamodb() {
    for binding in BINDINGS {
        the_answer_streams_as_it_is_written(Backend::DynamoDb, binding).await;
    }
}

/// Item 2: a subscriber that comes after 10 chunks gets the answer whole, once: the task,
/// the updates written so far, then the rest.
async fn a_late_subscriber_gets_the_answer_once(backend: Backend, binding: Binding) {
    let (model, _log) = script(200, None);
    let Some(s) = llm_server(backend, &model).await else {
        return;
    };
    let mut sender =
        Events::send(&s, Binding::JsonRpc, user_message(&unique("m"), "Tell me")).await;
    let mut seen = Vec::new();
    let tenth = chunks()[..10].concat();
    while shown(&seen).len() < tenth.len() {
        seen.push(sender.next().await.expect("the answer goes on"));
    }
    let id = seen[0].1["task"]["id"].as_str().expect("an id").to_owned();
    let events = Events::subscribe(&s, binding, &id).await.all().await;
    let context = format!("{backend:?} {binding:?}: {events:?}");
    assert!(
        events[0].1.get("task").is_some(),
        "the task first: {context}"
    );
    assert_eq!(shown(&events), answer(), "the answer: {context}");
    let updates = updates(&events);
    let joined: String = updates.iter().map(|u| text_of(&u["artifact"])).collect();
    assert_eq!(
        joined,
        answer(),
        "what was written so far, then the rest, once: {context}"
    );
    assert!(
        text_of(&updates[0]["artifact"]).len() < answer().len(),
        "in pieces: {context}"
    );
    assert_eq!(
        events.last().expect("events").1["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{context}"
    );
    // The sender saw it all too.
    seen.extend(sender.all().await);
    assert_eq!(shown(&seen), answer());
}

#[tokio::test]
async fn a_late_subscriber_gets_the_answer_once_embedded() {
    for binding in BINDINGS {
        a_late_subscriber_gets_the_answer_once(Backend::Embedded, binding).await;
    }
}

#[tokio::test]
async fn a_late_subscriber_gets_the_answer_once_on_dynamodb() {
    for binding in BINDINGS {
        a_late_subscriber_gets_the_answer_once(Backend::DynamoDb, binding).await;
    }
}

/// A stream cut off midway is made again as a whole: the client sees the shown text
/// replaced (an update without `append`), never doubled.
async fn a_cut_off_stream_is_replaced_not_doubled(backend: Backend) {
    let (model, log) = script(40, Some(6));
    let Some(s) = llm_server(backend, &model).await else {
        return;
    };
    let mut stream =
        Events::send(&s, Binding::JsonRpc, user_message(&unique("m"), "Tell me")).await;
    let events = stream.all().await;
    let context = format!("{backend:?}: {events:?}");
    let updates = updates(&events);
    let replaced = updates
        .iter()
        .skip(1)
        .position(|u| u["append"].as_bool() != Some(true))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("the retry's text replaces the cut attempt's: {context}"));
    let before: String = updates[..replaced]
        .iter()
        .map(|u| text_of(&u["artifact"]))
        .collect();
    assert!(
        !before.is_empty() && answer().starts_with(&before) && before.len() < answer().len(),
        "part of the answer was shown before the cut: {context}"
    );
    let after: String = updates[replaced..]
        .iter()
        .map(|u| text_of(&u["artifact"]))
        .collect();
    assert_eq!(after, answer(), "{context}");
    assert_eq!(shown(&events), answer(), "{context}");
    let calls = std::fs::read_to_string(&log).expect("the call log");
    assert_eq!(
        calls.lines().filter(|l| l.starts_with("turn ")).count(),
        2,
        "{calls}"
    );
}

#[tokio::test]
async fn a_cut_off_stream_is_replaced_not_doubled_embedded() {
    a_cut_off_stream_is_replaced_not_doubled(Backend::Embedded).await;
}

#[tokio::test]
async fn a_cut_off_stream_is_replaced_not_doubled_on_dynamodb() {
    a_cut_off_stream_is_replaced_not_doubled(Backend::DynamoDb).await;
}

/// Webhooks get the batched chunks too: the very updates the stream shows, in order.
async fn a_webhook_gets_the_batches_the_stream_shows(backend: Backend) {
    let (model, _log) = script(100, None);
    let Some(s) = llm_server(backend, &model).await else {
        return;
    };
    let hook = harness_e2e::webhook::Receiver::start().await;
    let (_, events) = s
        .rpc_stream(
            "SendStreamingMessage",
            json!({
                "message": user_message(&unique("m"), "Tell me"),
                "configuration": {"taskPushNotificationConfig": {"url": hook.url, "token": "t"}},
            }),
        )
        .await;
    let on_stream: Vec<Value> = events
        .iter()
        .filter(|e| matches!(e.kind(), "statusUpdate" | "artifactUpdate"))
        .map(|e| e.stream_response().clone())
        .collect();
    assert!(on_stream.len() > 5, "{on_stream:?}");
    let deadline = Instant::now() + harness_e2e::webhook::DELIVERY_TIMEOUT;
    while hook.accepted().len() < on_stream.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let delivered: Vec<Value> = hook.accepted().into_iter().map(|r| r.body).collect();
    assert_eq!(
        delivered, on_stream,
        "{backend:?}: the webhook and the stream differ"
    );
    let timed: Vec<(i64, Value)> = delivered.into_iter().map(|v| (0, v)).collect();
    assert_eq!(shown(&timed), answer());
}

#[tokio::test]
async fn a_webhook_gets_the_batches_the_stream_shows_embedded() {
    a_webhook_gets_the_batches_the_stream_shows(Backend::Embedded).await;
}

#[tokio::test]
async fn a_webhook_gets_the_batches_the_stream_shows_on_dynamodb() {
    a_webhook_gets_the_batches_the_stream_shows(Backend::DynamoDb).await;
}
