//! A cut stream resumes where it stopped (issue 52, part 2): every SSE event carries an
//! `id:`; SubscribeToTask with `Last-Event-ID` answers with the current Task, then every
//! event after that one, then live ones; a task that ended since is replayed to its end;
//! an id this task never issued is refused. On JSON-RPC and HTTP+JSON, on both stores.

use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

fn script() -> String {
    let chunks: Vec<String> = (0..20).map(|i| format!("piece {i}. ")).collect();
    let turn = json!({"chunks": chunks, "chunk_delay_ms": 100});
    let path = std::env::temp_dir().join(format!("{}.json", unique("harness-script")));
    std::fs::write(&path, json!({ "turns": [turn] }).to_string()).expect("write the script");
    format!("scripted:{}", path.display())
}

#[derive(Clone, Copy, Debug)]
enum Binding {
    JsonRpc,
    Rest,
}

async fn send(s: &Server, binding: Binding) -> SseReader {
    let message = user_message(&unique("resume"), "Write it.");
    match binding {
        Binding::JsonRpc => {
            (s.rpc_stream_open("SendStreamingMessage", send_params(message))
                .await)
                .1
        }
        Binding::Rest => {
            let body = json!({ "message": message });
            s.rest_stream_open(Method::POST, "/message:stream", Some(body))
                .await
        }
    }
}

/// SubscribeToTask, resumed after `last` when given: the raw answer.
async fn subscribe(
    s: &Server,
    binding: Binding,
    id: &str,
    last: Option<&str>,
) -> reqwest::Response {
    let mut headers = default_headers();
    if let Some(last) = last {
        headers.insert("Last-Event-ID", last.parse().expect("a header value"));
    }
    match binding {
        Binding::JsonRpc => {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": id}});
            s.rpc_raw(&headers, body.to_string()).await
        }
        Binding::Rest => {
            let path = format!("/tasks/{id}:subscribe");
            s.rest_raw(Method::POST, &path, &headers, "").await
        }
    }
}

async fn resumed(s: &Server, binding: Binding, id: &str, last: &str) -> Vec<SseEvent> {
    let resp = subscribe(s, binding, id, Some(last)).await;
    read_sse(expect_stream(resp, "a resumed SubscribeToTask").await).await
}

/// What an event says, whichever binding framed it.
fn said(e: &SseEvent) -> (Option<String>, Value) {
    (e.id.clone(), e.stream_response().clone())
}

/// The code and message of a refusal, whichever binding answered it.
async fn refusal(binding: Binding, resp: reqwest::Response) -> (String, String) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.expect("a JSON error");
    match binding {
        Binding::JsonRpc => (
            body["error"]["code"].to_string(),
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ),
        Binding::Rest => (
            status.to_string(),
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ),
    }
}

async fn cut_and_resumed(backend: Backend) {
    let Some(s) = Server::start_on(backend, &["--agent", "llm", "--model", &script()]).await else {
        return;
    };
    for binding in [Binding::JsonRpc, Binding::Rest] {
        // Cut after the task and four more events.
        let mut first = send(&s, binding).await;
        let mut cut = Vec::new();
        while cut.len() < 5 {
            cut.push(first.next().await.expect("an event before the cut"));
        }
        drop(first);
        let task_id = cut[0].payload()["id"]
            .as_str()
            .expect("the task first")
            .to_owned();
        let ids: Vec<_> = cut.iter().map(|e| e.id.clone().expect("an id")).collect();
        let last = ids.last().expect("a last id").clone();

        let again = resumed(&s, binding, &task_id, &last).await;
        assert_eq!(
            again[0].kind(),
            "task",
            "{binding:?}: the current Task first"
        );
        assert_eq!(
            again[0].id.as_deref(),
            Some(last.as_str()),
            "{binding:?}: where it resumed"
        );
        assert_eq!(
            again.last().and_then(SseEvent::state),
            Some("TASK_STATE_COMPLETED")
        );

        // The uncut stream, to compare with: everything after the first stream's Task.
        let whole = resumed(&s, binding, &task_id, &ids[0]).await;
        let union: Vec<_> = cut[1..].iter().chain(&again[1..]).map(said).collect();
        let uncut: Vec<_> = whole[1..].iter().map(said).collect();
        assert_eq!(
            union, uncut,
            "{binding:?}: the cut and the resumed stream are the uncut one"
        );
        let mut seen = std::collections::HashSet::new();
        assert!(
            union.iter().all(|(id, _)| seen.insert(id.clone())),
            "{binding:?}: no id twice"
        );

        // The task ended: without the header, nothing to subscribe to, as before.
        let resp = subscribe(&s, binding, &task_id, None).await;
        let (code, _) = refusal(binding, resp).await;
        assert!(
            ["-32004", "400"].contains(&code.as_str()),
            "{binding:?}: {code}"
        );
    }
}

#[tokio::test]
async fn a_cut_stream_resumes_where_it_stopped_embedded() {
    cut_and_resumed(Backend::Embedded).await;
}

#[tokio::test]
async fn a_cut_stream_resumes_where_it_stopped_on_dynamodb() {
    cut_and_resumed(Backend::DynamoDb).await;
}

/// The id a SubscribeToTask of `id` starts with (the task's, as it stands).
async fn issued(s: &Server, binding: Binding, id: &str) -> String {
    let resp = subscribe(s, binding, id, None).await;
    let events = read_sse(expect_stream(resp, "SubscribeToTask").await).await;
    events[0].id.clone().expect("an id")
}

async fn foreign_ids(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let mine = s.input_required_task().await;
    let other = s.input_required_task().await;
    let (mine, other) = (mine["id"].as_str().unwrap(), other["id"].as_str().unwrap());
    for binding in [Binding::JsonRpc, Binding::Rest] {
        // An id of this task's resumes it: the Task, and nothing after (it waits for input).
        let own = issued(&s, binding, mine).await;
        let again = resumed(&s, binding, mine, &own).await;
        assert_eq!(again.len(), 1, "{binding:?}");
        let tag = own.split_once('.').expect("<seq>.<tag>").1;
        let theirs = issued(&s, binding, other).await;
        let ahead = format!("99999.{tag}");
        let long = "9".repeat(200);
        for id in [
            theirs.as_str(),
            ahead.as_str(),
            "garbage",
            "1",
            "",
            long.as_str(),
        ] {
            let resp = subscribe(&s, binding, mine, Some(id)).await;
            let (code, message) = refusal(binding, resp).await;
            assert!(
                ["-32602", "400"].contains(&code.as_str()),
                "{binding:?} {id:?}: {code}"
            );
            assert!(message.contains("Last-Event-ID"), "{binding:?}: {message}");
        }
    }
}

#[tokio::test]
async fn an_id_this_task_never_issued_is_refused_embedded() {
    foreign_ids(Backend::Embedded).await;
}

#[tokio::test]
async fn an_id_this_task_never_issued_is_refused_on_dynamodb() {
    foreign_ids(Backend::DynamoDb).await;
}
