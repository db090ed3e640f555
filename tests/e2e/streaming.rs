//! SSE framing and stream shapes of SendStreamingMessage and SubscribeToTask on both
//! bindings: Task first (or one Message), updates in order, close at a terminal or
//! interrupted state; concurrent subscribers see the same events.

use std::time::{Duration, Instant};

use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

/// Keys a 1.0 StreamResponse payload must never carry (outside metadata and data parts,
/// which are free-form: the extensions' own `kind` lives there).
fn assert_no_legacy_keys(v: &Value) {
    match v {
        Value::Object(o) => {
            for k in ["kind", "final", "index"] {
                assert!(!o.contains_key(k), "legacy key {k:?} in {v}");
            }
            o.iter()
                .filter(|(k, _)| *k != "metadata" && *k != "data")
                .for_each(|(_, v)| assert_no_legacy_keys(v));
        }
        Value::Array(a) => a.iter().for_each(assert_no_legacy_keys),
        _ => {}
    }
}

/// Every event of a JSON-RPC stream is `{"jsonrpc":"2.0","id":<id>,"result":{one key}}`.
fn assert_jsonrpc_framing(id: &Value, events: &[SseEvent]) {
    assert!(!events.is_empty(), "empty stream");
    for e in events {
        assert_eq!(e.event, None, "no event name on normal events: {e:?}");
        let obj = e.data.as_object().expect("event object");
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["id", "jsonrpc", "result"], "{:?}", e.data);
        assert_eq!(e.data["jsonrpc"], "2.0");
        assert_eq!(&e.data["id"], id, "same request id on every event");
        e.kind();
        assert_no_legacy_keys(e.stream_response());
    }
}

/// Every event of a REST stream is a bare StreamResponse.
fn assert_rest_framing(events: &[SseEvent]) {
    assert!(!events.is_empty(), "empty stream");
    for e in events {
        assert_eq!(e.event, None, "{e:?}");
        assert!(
            e.data.get("jsonrpc").is_none() && e.data.get("result").is_none(),
            "{:?}",
            e.data
        );
        e.kind();
        assert_no_legacy_keys(&e.data);
    }
}

/// Task first; every later event belongs to that task; the last state ends the stream.
fn assert_task_lifecycle(events: &[SseEvent], last_state: &str) -> String {
    assert_eq!(
        events[0].kind(),
        "task",
        "first event is the Task: {events:?}"
    );
    let task = events[0].payload();
    let id = task["id"].as_str().expect("task id").to_owned();
    let ctx = task["contextId"].as_str().expect("context id").to_owned();
    for e in &events[1..] {
        let kind = e.kind();
        assert!(
            kind == "statusUpdate" || kind == "artifactUpdate",
            "{kind} after the Task: {events:?}"
        );
        assert_eq!(e.payload()["taskId"], id.as_str(), "{e:?}");
        assert_eq!(e.payload()["contextId"], ctx.as_str(), "{e:?}");
    }
    assert_eq!(
        events.last().and_then(SseEvent::state),
        Some(last_state),
        "stream ends at {last_state}: {events:?}"
    );
    // Nothing ends the stream before its last event.
    for e in &events[..events.len() - 1] {
        if e.kind() == "statusUpdate" {
            let s = e.state().unwrap();
            assert!(
                !matches!(
                    s,
                    "TASK_STATE_COMPLETED"
                        | "TASK_STATE_FAILED"
                        | "TASK_STATE_CANCELED"
                        | "TASK_STATE_REJECTED"
                        | "TASK_STATE_INPUT_REQUIRED"
                ),
                "stream continued past {s}: {events:?}"
            );
        }
    }
    id
}

#[tokio::test]
async fn jsonrpc_stream_frames_each_event_as_a_response_with_the_request_id() {
    let s = Server::start().await;
    let mid = unique("tck-stream-001");
    let (id, events) = s
        .rpc_stream("SendStreamingMessage", send_params(user_message(&mid, "x")))
        .await;
    assert_jsonrpc_framing(&id, &events);
    assert_eq!(
        kinds(&events),
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"],
        "{events:?}"
    );
    assert_eq!(
        states(&events)[1..],
        ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    );
    let task_id = assert_task_lifecycle(&events, "TASK_STATE_COMPLETED");
    assert_eq!(
        events[2].payload()["artifact"]["parts"][0]["text"],
        "Generated text content"
    );
    let stored = s.get_task(&task_id).await;
    assert_eq!(state(&stored), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn jsonrpc_stream_response_is_an_event_stream() {
    let s = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "SendStreamingMessage",
        "params": send_params(user_message(&unique("tck-stream-002"), "x"))});
    let resp = s.rpc_raw(&default_headers(), body.to_string()).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        content_type(&resp).starts_with("text/event-stream"),
        "{}",
        content_type(&resp)
    );
    let events = read_sse(resp).await;
    assert_jsonrpc_framing(&json!(5), &events);
}

#[tokio::test]
async fn rest_stream_events_are_bare_stream_responses() {
    let s = Server::start().await;
    let resp = s
        .rest(
            Method::POST,
            "/message:stream",
            Some(send_params(user_message(&unique("tck-stream-003"), "x"))),
        )
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    assert!(content_type(&resp).starts_with("text/event-stream"));
    let events = read_sse(resp).await;
    assert_rest_framing(&events);
    assert_eq!(
        kinds(&events),
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    assert_task_lifecycle(&events, "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn stream_ordering_puts_working_before_the_artifact_before_completed() {
    let s = Server::start().await;
    for prefix in ["tck-stream-ordering-001", "tck-stream-artifact-text"] {
        let (id, events) = s
            .rpc_stream(
                "SendStreamingMessage",
                send_params(user_message(&unique(prefix), "x")),
            )
            .await;
        assert_jsonrpc_framing(&id, &events);
        assert_eq!(
            kinds(&events),
            ["task", "statusUpdate", "artifactUpdate", "statusUpdate"],
            "{prefix}"
        );
        assert_eq!(
            states(&events),
            [
                "TASK_STATE_SUBMITTED",
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED"
            ]
        );
    }
}

#[tokio::test]
async fn stream_of_a_task_that_completes_at_once_is_task_then_completed() {
    let s = Server::start().await;
    let (id, events) = s
        .rpc_stream(
            "SendStreamingMessage",
            send_params(user_message(&unique("tck-stream-002"), "x")),
        )
        .await;
    assert_jsonrpc_framing(&id, &events);
    assert_eq!(kinds(&events), ["task", "statusUpdate"], "{events:?}");
    assert_task_lifecycle(&events, "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn stream_of_a_direct_message_is_exactly_one_message_event_on_both_bindings() {
    let s = Server::start().await;
    let (id, events) = s
        .rpc_stream(
            "SendStreamingMessage",
            send_params(user_message(&unique("tck-message-response"), "x")),
        )
        .await;
    assert_jsonrpc_framing(&id, &events);
    assert_eq!(kinds(&events), ["message"], "{events:?}");
    assert_eq!(
        events[0].payload()["parts"][0]["text"],
        "Direct message response"
    );
    let rest = s
        .rest_stream(
            Method::POST,
            "/message:stream",
            Some(send_params(user_message(
                &unique("tck-message-response"),
                "x",
            ))),
        )
        .await;
    assert_rest_framing(&rest);
    assert_eq!(kinds(&rest), ["message"]);
    assert_eq!(rest[0].payload()["role"], "ROLE_AGENT");
}

#[tokio::test]
async fn stream_closes_at_input_required_and_a_streamed_reply_completes_the_task() {
    let s = Server::start().await;
    let (_, events) = s
        .rpc_stream(
            "SendStreamingMessage",
            send_params(user_message(&unique("tck-input-required"), "x")),
        )
        .await;
    let task_id = assert_task_lifecycle(&events, "TASK_STATE_INPUT_REQUIRED");
    let (id, more) = s
        .rpc_stream(
            "SendStreamingMessage",
            send_params(reply_message(
                &unique("tck-complete-task"),
                &task_id,
                "more",
            )),
        )
        .await;
    assert_jsonrpc_framing(&id, &more);
    assert_eq!(
        assert_task_lifecycle(&more, "TASK_STATE_COMPLETED"),
        task_id
    );
    assert_eq!(more[0].payload()["id"], task_id.as_str());
}

#[tokio::test]
async fn stream_of_a_rejected_task_ends_at_rejected() {
    let s = Server::start().await;
    let events = s
        .rest_stream(
            Method::POST,
            "/message:stream",
            Some(send_params(user_message(&unique("tck-reject-task"), "x"))),
        )
        .await;
    assert_task_lifecycle(&events, "TASK_STATE_REJECTED");
}

#[tokio::test]
async fn chunked_artifact_streams_two_chunks_appended_with_last_chunk() {
    let s = Server::start().await;
    let (_, events) = s
        .rpc_stream(
            "SendStreamingMessage",
            send_params(user_message(&unique("tck-stream-artifact-chunked"), "x")),
        )
        .await;
    let task_id = assert_task_lifecycle(&events, "TASK_STATE_COMPLETED");
    let chunks: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind() == "artifactUpdate")
        .map(SseEvent::payload)
        .collect();
    assert_eq!(chunks.len(), 2, "{events:?}");
    assert_eq!(chunks[0]["artifact"]["parts"][0]["text"], "chunk-1 ");
    assert!(
        chunks[0].get("append").is_none() || chunks[0]["append"] == false,
        "{}",
        chunks[0]
    );
    assert_eq!(chunks[1]["artifact"]["parts"][0]["text"], "chunk-2");
    assert_eq!(chunks[1]["append"], true);
    assert_eq!(chunks[1]["lastChunk"], true);
    assert_eq!(
        chunks[0]["artifact"]["artifactId"],
        chunks[1]["artifact"]["artifactId"]
    );
    // The stored artifact holds both chunks.
    let task = s.get_task(&task_id).await;
    let parts: Vec<&str> = task["artifacts"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(parts.concat(), "chunk-1 chunk-2", "{task}");
}

#[tokio::test]
async fn file_artifact_streams_base64_raw_bytes() {
    let s = Server::start().await;
    let events = s
        .rest_stream(
            Method::POST,
            "/message:stream",
            Some(send_params(user_message(
                &unique("tck-stream-artifact-file"),
                "x",
            ))),
        )
        .await;
    assert_task_lifecycle(&events, "TASK_STATE_COMPLETED");
    let art = events
        .iter()
        .find(|e| e.kind() == "artifactUpdate")
        .expect("artifact event");
    let part = &art.payload()["artifact"]["parts"][0];
    assert_eq!(part["raw"], "dGNr");
    assert_eq!(part["filename"], "output.txt");
    assert_eq!(part["mediaType"], "text/plain");
}

#[tokio::test]
async fn stream_delivers_events_as_they_happen() {
    let s = Server::start().await;
    let started = Instant::now();
    let (_, mut reader) = s
        .rpc_stream_open(
            "SendStreamingMessage",
            send_params(user_message(&unique("test-resubscribe-message-id"), "x")),
        )
        .await;
    let deadline = started + STREAM_TIMEOUT;
    let first = reader.next_before(deadline).await.expect("task event");
    let second = reader.next_before(deadline).await.expect("working event");
    let early = started.elapsed();
    assert_eq!(first.kind(), "task");
    assert_eq!(second.state(), Some("TASK_STATE_WORKING"));
    assert!(
        early < Duration::from_secs(2),
        "first events came after {early:?}"
    );
    let last = reader.next_before(deadline).await.expect("completed event");
    assert_eq!(last.state(), Some("TASK_STATE_COMPLETED"));
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "the slow task took its time"
    );
    assert!(
        reader.next_before(deadline).await.is_none(),
        "stream closes after COMPLETED"
    );
}

/// Starts a slow task and waits until it is WORKING; returns its id.
async fn working_task(s: &Server) -> String {
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
    id
}

#[tokio::test]
async fn subscribe_sends_the_task_then_live_events() {
    let s = Server::start().await;
    let id = working_task(&s).await;
    let (rid, events) = s.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    assert_jsonrpc_framing(&rid, &events);
    assert_eq!(events[0].kind(), "task");
    assert_eq!(events[0].payload()["id"], id.as_str());
    assert_eq!(
        events[0].state(),
        Some("TASK_STATE_WORKING"),
        "current Task first"
    );
    // The Task holds what the log says so far: after it, only what happens next.
    assert_eq!(kinds(&events), ["task", "statusUpdate"], "{events:?}");
    assert_eq!(
        states(&events),
        ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    );
    assert_task_lifecycle(&events, "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn two_concurrent_subscribers_see_identical_event_sequences() {
    let s = Server::start().await;
    let id = working_task(&s).await;
    let a = s.rpc_stream("SubscribeToTask", json!({"id": id}));
    let b = s.rpc_stream("SubscribeToTask", json!({"id": id}));
    let path = format!("/tasks/{id}:subscribe");
    let c = s.rest_stream(Method::POST, &path, None);
    let ((ida, ea), (idb, eb), ec) = futures::join!(a, b, c);
    assert_jsonrpc_framing(&ida, &ea);
    assert_jsonrpc_framing(&idb, &eb);
    assert_rest_framing(&ec);
    let ra: Vec<&Value> = ea.iter().map(SseEvent::stream_response).collect();
    let rb: Vec<&Value> = eb.iter().map(SseEvent::stream_response).collect();
    let rc: Vec<&Value> = ec.iter().map(SseEvent::stream_response).collect();
    assert_eq!(ra, rb, "both JSON-RPC subscribers see the same events");
    assert_eq!(ra, rc, "the REST subscriber sees the same events");
    assert_task_lifecycle(&ea, "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn a_subscriber_going_away_does_not_affect_another() {
    let s = Server::start().await;
    let id = working_task(&s).await;
    let (_, mut early_leaver) = s
        .rpc_stream_open("SubscribeToTask", json!({"id": id}))
        .await;
    let first = early_leaver
        .next_before(Instant::now() + Duration::from_secs(5))
        .await
        .expect("first event");
    assert_eq!(first.kind(), "task");
    let stayer = s.rpc_stream("SubscribeToTask", json!({"id": id}));
    drop(early_leaver);
    let (_, events) = stayer.await;
    assert_task_lifecycle(&events, "TASK_STATE_COMPLETED");
}

/// SubscribeToTask as `who` (self-asserted), answered with its stream or an error.
async fn subscribe_as(s: &Server, who: &str, id: &str) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                      "params": {"id": id}});
    let mut h = default_headers();
    h.insert("x-participant-id", who.parse().expect("a header value"));
    s.rpc_raw(&h, body.to_string()).await
}

/// Whether an answer is an event stream (a subscription taken).
fn is_stream(answer: &reqwest::Response) -> bool {
    answer.headers()["content-type"]
        .to_str()
        .unwrap_or_default()
        .starts_with("text/event-stream")
}

/// A task takes at most 16 streams at once, and one participant at most 4 of them:
/// past either, a subscription is refused saying which, and one ending frees its place.
#[tokio::test]
async fn a_task_takes_sixteen_subscriptions_at_once_four_a_participant() {
    use harness_e2e::participants::{participant, task_envelope_part};
    let s = Server::start().await;
    let message_id = unique("test-resubscribe-message-id");
    let people: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
    let roster: Vec<Value> = (people.iter())
        .map(|p| participant(p, "human", "watcher"))
        .collect();
    let message = json!({"messageId": message_id, "role": "ROLE_USER",
        "parts": [{"text": "slow"}, task_envelope_part("Slow", "slow", json!(roster))]});
    let result = s
        .rpc_ok(
            "SendMessage",
            json!({"message": message.clone(), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = result["task"]["id"].as_str().unwrap().to_owned();
    let mut open = Vec::new();
    for who in &people[..4] {
        for _ in 0..4 {
            let answer = subscribe_as(&s, who, &id).await;
            let mut reader = SseReader::new(expect_stream(answer, "SubscribeToTask").await);
            let first = reader
                .next_before(Instant::now() + Duration::from_secs(5))
                .await
                .expect("first event");
            assert_eq!(first.kind(), "task");
            open.push(reader);
        }
    }
    let refused = |why: &'static str| {
        move |answer: Value| {
            assert_eq!(answer["error"]["code"], -32004, "{answer}");
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(why), "{answer}");
        }
    };
    let of = |answer: reqwest::Response| async move {
        serde_json::from_str::<Value>(&answer.text().await.unwrap_or_default()).expect("JSON")
    };
    refused("16 streams open already")(of(subscribe_as(&s, "p4", &id).await).await);
    // A streaming resend of the task's message starts nothing new: it is refused too.
    let resent = s
        .rpc("SendStreamingMessage", json!({"message": message.clone()}))
        .await;
    refused("16 streams open already")(resent);

    // p0 gives up one place: p4 may take it.
    drop(open.remove(0));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = subscribe_as(&s, "p4", &id).await;
        if is_stream(&answer) {
            open.push(SseReader::new(answer));
            break;
        }
        let text = answer.text().await.unwrap_or_default();
        assert!(Instant::now() < deadline, "no place freed: {text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // p1 holds four: a fifth is refused, whatever places the task has left.
    refused("You hold 4 streams")(of(subscribe_as(&s, "p1", &id).await).await);
}

#[tokio::test]
async fn a_subscriber_sees_a_cancel_and_the_stream_ends() {
    let s = Server::start().await;
    let id = working_task(&s).await;
    let (_, mut reader) = s
        .rpc_stream_open("SubscribeToTask", json!({"id": id}))
        .await;
    let deadline = Instant::now() + STREAM_TIMEOUT;
    let first = reader.next_before(deadline).await.expect("task");
    assert_eq!(first.kind(), "task");
    let canceled = s.rpc_ok("CancelTask", json!({"id": id})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    let mut rest = Vec::new();
    while let Some(e) = reader.next_before(deadline).await {
        rest.push(e);
    }
    assert_eq!(
        rest.last().and_then(SseEvent::state),
        Some("TASK_STATE_CANCELED"),
        "{rest:?}"
    );
    assert!(
        !states(&rest).iter().any(|s| s == "TASK_STATE_COMPLETED"),
        "{rest:?}"
    );
}

#[tokio::test]
async fn subscribe_to_an_input_required_task_sends_it_once_and_closes() {
    let s = Server::start().await;
    let task = s.input_required_task().await;
    let id = task["id"].as_str().unwrap();
    let (rid, events) = s.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    assert_jsonrpc_framing(&rid, &events);
    assert_eq!(kinds(&events), ["task"], "{events:?}");
    assert_task_lifecycle(&events, "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        events[0].payload(),
        &task,
        "the current Task is the stored one"
    );
}

#[tokio::test]
async fn streaming_a_repeated_message_id_returns_the_existing_task() {
    let s = Server::start().await;
    let mid = unique("tck-stream-002");
    let (_, first) = s
        .rpc_stream("SendStreamingMessage", send_params(user_message(&mid, "x")))
        .await;
    let task_id = assert_task_lifecycle(&first, "TASK_STATE_COMPLETED");
    let (_, again) = s
        .rpc_stream("SendStreamingMessage", send_params(user_message(&mid, "x")))
        .await;
    assert_eq!(again[0].kind(), "task", "{again:?}");
    assert_eq!(again[0].payload()["id"], task_id.as_str());
    let list = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 1, "{list}");
}

#[tokio::test]
async fn stream_errors_before_the_first_event_are_plain_json_errors() {
    let s = Server::start().await;
    // JSON-RPC: unknown task → a JSON-RPC error body, not an event stream.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": send_params(reply_message(&unique("tck-complete-task"), "no-such-task", "x"))});
    let resp = s.rpc_raw(&default_headers(), body.to_string()).await;
    assert!(
        content_type(&resp).starts_with("application/json"),
        "{}",
        content_type(&resp)
    );
    let (status, v) = json_of(resp).await;
    assert_eq!(status, 200);
    assert_rpc_error(&v, -32001, "TASK_NOT_FOUND");
    assert_eq!(v["id"], 1);
    // REST: unknown task on subscribe → 404 JSON.
    let resp = s
        .rest(Method::GET, "/tasks/no-such-task:subscribe", None)
        .await;
    assert!(content_type(&resp).starts_with("application/json"));
    let (status, v) = json_of(resp).await;
    assert_rest_error(status, &v, 404, "NOT_FOUND", "TASK_NOT_FOUND");
}

/// After an INPUT_REQUIRED turn the history reads question, then reply (the question
/// joins the history before the message that answers it), so `historyLength: 1` is the
/// reply; and a subscription to the waiting task shows its state once.
async fn history_is_chronological_and_a_subscription_shows_each_state_once(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    for rest in [false, true] {
        let task = s.input_required_task().await;
        let id = task["id"].as_str().unwrap().to_owned();
        let question = status_text(&task).to_owned();
        let events = if rest {
            s.rest_stream(Method::GET, &format!("/tasks/{id}:subscribe"), None)
                .await
        } else {
            s.rpc_stream("SubscribeToTask", json!({"id": id})).await.1
        };
        let states: Vec<_> = events.iter().filter_map(SseEvent::state).collect();
        assert_eq!(
            states,
            ["TASK_STATE_INPUT_REQUIRED"],
            "rest={rest}: {events:?}"
        );

        let reply = reply_message(&unique("tck-complete-task"), &id, "my answer");
        let reply_id = reply["messageId"].as_str().unwrap().to_owned();
        let (latest, full) = if rest {
            let (status, done) = s.rest_post("/message:send", send_params(reply)).await;
            assert_eq!(status, 200, "{done}");
            assert_eq!(state(&done["task"]), "TASK_STATE_COMPLETED", "{done}");
            (
                s.rest_get(&format!("/tasks/{id}?historyLength=1")).await.1,
                s.rest_get(&format!("/tasks/{id}")).await.1,
            )
        } else {
            let done = s.rpc_ok("SendMessage", send_params(reply)).await;
            assert_eq!(state(&done["task"]), "TASK_STATE_COMPLETED", "{done}");
            (
                s.rpc_ok("GetTask", json!({"id": id, "historyLength": 1}))
                    .await,
                s.rpc_ok("GetTask", json!({"id": id})).await,
            )
        };
        let latest = latest["history"].as_array().unwrap();
        assert_eq!(latest.len(), 1, "rest={rest}: {latest:?}");
        assert_eq!(latest[0]["messageId"], reply_id.as_str(), "rest={rest}");
        let said: Vec<(&str, &str)> = full["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap(),
                    m["parts"][0]["text"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            &said[1..],
            [
                ("ROLE_AGENT", question.as_str()),
                ("ROLE_USER", "my answer")
            ],
            "rest={rest}: {said:?}"
        );
    }
}

#[tokio::test]
async fn history_is_chronological_and_a_subscription_shows_each_state_once_embedded() {
    history_is_chronological_and_a_subscription_shows_each_state_once(Backend::Embedded).await;
}

#[tokio::test]
async fn history_is_chronological_and_a_subscription_shows_each_state_once_dynamodb() {
    history_is_chronological_and_a_subscription_shows_each_state_once(Backend::DynamoDb).await;
}
