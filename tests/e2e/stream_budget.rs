//! One stream budget per participant per task, whatever the mix of SubscribeToTask and
//! SendStreamingMessage on either binding; and an open stream sees its task only while
//! its participant is on it and its token is accepted: then it ends with the not-found a
//! stranger gets, and nothing after.
//!
//! The tasks here stay WORKING for the whole test: their scripted model takes ten minutes
//! to answer. alice reports them, ada is an admin, walt a watcher.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use harness_e2e::identity::*;
use harness_e2e::participants::{participant, task_envelope_part, Script};
use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

fn alice() -> Who {
    Who::header("alice")
}
fn ada() -> Who {
    Who::header("ada")
}
fn walt() -> Who {
    Who::header("walt")
}
fn mallory() -> Who {
    Who::header("mallory")
}

/// A model that answers after ten minutes: a task stays WORKING through the test.
fn slow_model() -> Script {
    Script::new(json!([{"text": "Painted.", "delay_ms": 600_000}]))
}

async fn server(backend: Backend, script: &Script, extra: &[&str]) -> Option<Server> {
    let model = script.model();
    let mut args = vec!["--agent", "llm", "--model", &model];
    args.extend(extra);
    if !args.contains(&"--auth") {
        args.push(FAIL_CLOSED);
    }
    Server::start_on(backend, &args).await
}

/// alice's new WORKING task with ada as admin and walt as watcher, made as `who`.
async fn working_task(s: &Server, who: &Who) -> String {
    let people = json!([
        participant("alice", "human", "reporter"),
        participant("ada", "human", "admin"),
        participant("walt", "human", "watcher"),
    ]);
    let m = json!({"messageId": unique("m"), "role": "ROLE_USER",
        "parts": [{"text": "Paint the shed"}, task_envelope_part("Shed", "Paint the shed", people)]});
    let params = json!({"message": m, "configuration": {"returnImmediately": true}});
    let rest = (
        Method::POST,
        "/message:send".to_owned(),
        Some(params.clone()),
    );
    let task = call(s, who, Via::JsonRpc, "SendMessage", params, rest)
        .await
        .ok();
    let id = task_id(&task["task"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while state(&get(s, who, Via::JsonRpc, &id).await.ok()) != "TASK_STATE_WORKING" {
        assert!(Instant::now() < deadline, "task {id} never WORKING");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    id
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Subscribe,
    /// A streaming send of a remark on the task.
    Send,
}

/// Opens a stream of task `id` as `who`: its answer, and the messageId it sent (Send).
async fn open(
    s: &Server,
    who: &Who,
    via: Via,
    kind: Kind,
    id: &str,
) -> (reqwest::Response, String) {
    let message_id = unique("remark");
    let remark = reply_message(&message_id, id, "Blue, please");
    let (method, params, path) = match kind {
        Kind::Subscribe => (
            "SubscribeToTask",
            json!({"id": id}),
            format!("/tasks/{id}:subscribe"),
        ),
        Kind::Send => (
            "SendStreamingMessage",
            json!({"message": remark}),
            "/message:stream".into(),
        ),
    };
    let resp = match via {
        Via::JsonRpc => {
            let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params});
            s.rpc_raw(&who.headers(), body.to_string()).await
        }
        Via::Rest => {
            let body = match kind {
                Kind::Subscribe => String::new(),
                Kind::Send => params.to_string(),
            };
            s.rest_raw(Method::POST, &path, &who.headers(), body).await
        }
    };
    (resp, message_id)
}

fn is_stream(resp: &reqwest::Response) -> bool {
    content_type(resp).starts_with("text/event-stream")
}

/// An open stream whose first event (the task) has come.
async fn opened(s: &Server, who: &Who, via: Via, kind: Kind, id: &str) -> SseReader {
    let (resp, _) = open(s, who, via, kind, id).await;
    let mut reader = SseReader::new(expect_stream(resp, &format!("{kind:?} {via:?}")).await);
    let first = reader
        .next_before(Instant::now() + STREAM_TIMEOUT)
        .await
        .expect("the task");
    assert_eq!(first.kind(), "task", "{first:?}");
    reader
}

/// The rest of a stream, until the server closes it (panics after a minute).
async fn rest_of(reader: &mut SseReader) -> Vec<SseEvent> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut events = Vec::new();
    while let Some(e) = reader.next_before(deadline).await {
        events.push(e);
    }
    events
}

/// The error of an answer or of an error event, as the stranger gets it too: REST's
/// `code` (the HTTP status, not in an event) left out.
fn error_of(via: Via, v: &Value) -> Value {
    let mut e = v["error"].clone();
    if via == Via::Rest {
        e.as_object_mut().map(|e| e.remove("code"));
    }
    e
}

/// A member holds at most four streams of a task, counted together whether they are
/// subscriptions or streaming sends, on either binding; past that either kind is refused
/// (a refused send stores nothing), others are not, and a stream that ends frees its place.
#[tokio::test]
async fn one_member_holds_at_most_four_streams_of_a_task_whatever_the_mix() {
    let script = slow_model();
    let s = server(Backend::Embedded, &script, &[])
        .await
        .expect("embedded");
    let id = working_task(&s, &alice()).await;
    let mut held = Vec::new();
    for (via, kind) in [
        (Via::JsonRpc, Kind::Send),
        (Via::Rest, Kind::Subscribe),
        (Via::Rest, Kind::Send),
        (Via::JsonRpc, Kind::Subscribe),
    ] {
        held.push(opened(&s, &walt(), via, kind, &id).await);
    }
    for (via, kind) in [
        (Via::Rest, Kind::Send),
        (Via::JsonRpc, Kind::Send),
        (Via::JsonRpc, Kind::Subscribe),
        (Via::Rest, Kind::Subscribe),
    ] {
        let (resp, message_id) = open(&s, &walt(), via, kind, &id).await;
        assert!(
            !is_stream(&resp),
            "a fifth stream ({kind:?} {via:?}) was opened"
        );
        let text = resp.text().await.unwrap_or_default();
        assert!(text.contains("You hold 4 streams of task"), "{text}");
        let stored = s.store().message_task("", "walt", &message_id).await;
        assert_eq!(
            stored.expect("read"),
            None,
            "a refused send stored its message"
        );
    }
    // Another member is not held back by walt's.
    let _alices = opened(&s, &alice(), Via::JsonRpc, Kind::Send, &id).await;
    // A stream walt gives up frees its place.
    drop(held.remove(0));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (resp, _) = open(&s, &walt(), Via::Rest, Kind::Send, &id).await;
        if is_stream(&resp) {
            break;
        }
        let text = resp.text().await.unwrap_or_default();
        assert!(Instant::now() < deadline, "no place freed: {text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// walt's subscription and his streaming send of a task end when ada takes him off it:
/// with the not-found a stranger gets, and nothing of what came after.
async fn a_removed_members_streams_end_with_the_strangers_not_found(backend: Backend) {
    let script = slow_model();
    let Some(s) = server(backend, &script, &[]).await else {
        return;
    };
    for via in Via::BOTH {
        let id = working_task(&s, &alice()).await;
        let mut subscribed = opened(&s, &walt(), via, Kind::Subscribe, &id).await;
        let mut sent = opened(&s, &walt(), via, Kind::Send, &id).await;
        let off = json!({"messageId": unique("roster"), "taskId": id, "role": "ROLE_USER",
            "parts": [{"text": "walt is off this task"},
                      {"mediaType": participants::EVENT_MEDIA_TYPE,
                       "data": {"kind": "task", "payload": {"participants": [
                           participant("alice", "human", "reporter"),
                           participant("ada", "human", "admin")]}}}]});
        let params = json!({"message": off, "configuration": {"returnImmediately": true}});
        let rest = (
            Method::POST,
            "/message:send".to_owned(),
            Some(params.clone()),
        );
        call(&s, &ada(), Via::JsonRpc, "SendMessage", params, rest)
            .await
            .ok();
        let stranger = subscribe(&s, &mallory(), via, &id).await;
        stranger.not_found();
        for (what, reader) in [("subscription", &mut subscribed), ("send", &mut sent)] {
            let events = rest_of(reader).await;
            let (last, before) = events.split_last().expect("an end");
            assert_eq!(last.event.as_deref(), Some("error"), "{what}: {events:?}");
            assert_eq!(
                error_of(via, &last.data),
                error_of(via, &stranger.body()),
                "{what}: not the stranger's not-found"
            );
            // Before the end, at most walt's own remark (a send's stream shows it).
            let later = before
                .iter()
                .filter(|e| e.kind() != "message" || e.data.to_string().contains("walt is off"));
            assert_eq!(later.count(), 0, "{what} saw, after the task: {before:?}");
        }
    }
}

on_both_stores!(a_removed_members_streams_end_with_the_strangers_not_found);

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A stream opened with a token about to stop being accepted (its `exp` 15 s past, the
/// leeway 30 s) ends once it is no longer accepted, with the not-found a stranger gets,
/// though its task works on.
#[tokio::test]
async fn a_stream_ends_when_its_token_expires() {
    let idp = Idp::start().await;
    let script = slow_model();
    let args = idp.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = server(Backend::Embedded, &script, &args)
        .await
        .expect("embedded");
    let alice = Who::Token(idp.token("alice"));
    let id = working_task(&s, &alice).await;
    for via in Via::BOTH {
        let mut claims = Idp::claims("alice");
        claims["exp"] = json!(now() - 15);
        let expiring = Who::Token(idp.sign(Alg::Rs256, Some(RSA_KID), &claims));
        let mut subscribed = opened(&s, &expiring, via, Kind::Subscribe, &id).await;
        let opened_at = Instant::now();
        let events = rest_of(&mut subscribed).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].event.as_deref(), Some("error"), "{events:?}");
        let stranger = subscribe(&s, &Who::Token(idp.token("mallory")), via, &id).await;
        assert_eq!(
            error_of(via, &events[0].data),
            error_of(via, &stranger.body())
        );
        eprintln!(
            "{via:?}: the stream ended {:?} after it opened",
            opened_at.elapsed()
        );
        subscribe(&s, &expiring, via, &id).await.unauthenticated();
        let task = get(&s, &alice, via, &id).await.ok();
        assert_eq!(state(&task), "TASK_STATE_WORKING", "{task}");
    }
}
