//! `Bedrock::chat_stream` (ConverseStream) through the real `aws-sdk-bedrockruntime`
//! client, against a loopback server that answers `POST /model/{id}/converse-stream` with
//! the frames of a recorded response (`tests/fixtures/bedrock-converse-stream/`, written
//! from the ConverseStream API reference), encoded as the service encodes them
//! (`application/vnd.amazon.eventstream`). A response can pause at a point the test
//! releases, end early, or break its connection mid-frame.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use aws_smithy_types::str_bytes::StrBytes;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use common::models::retry::Retrying;
use common::models::{ChatResponse, Delta, Model, ModelError, ToolCall, Usage};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

use super::{
    after_a_tool_round, assert_no_secret, client, expect_permanent, expect_transient,
    first_question, json_response, server_answering, ENCODED_PATH, MODEL,
};

/// The messages of a recorded response, as the fixture lists them.
fn fixture(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/fixtures/bedrock-converse-stream/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One message as an event-stream frame: prelude, headers, JSON payload, CRCs.
fn frame(message: &Value) -> Bytes {
    let (kind, name_header, name) = match (message.get("event"), message.get("exception")) {
        (Some(name), None) => ("event", ":event-type", name),
        (None, Some(name)) => ("exception", ":exception-type", name),
        _ => panic!("a fixture message is an event or an exception: {message}"),
    };
    let string = |s: &str| HeaderValue::String(StrBytes::from(s.to_owned()));
    let payload = serde_json::to_vec(&message["payload"]).expect("JSON");
    let message = Message::new(payload)
        .add_header(Header::new(":message-type", string(kind)))
        .add_header(Header::new(
            name_header,
            string(name.as_str().expect("a name")),
        ))
        .add_header(Header::new(":content-type", string("application/json")));
    let mut bytes = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut bytes).expect("encodes");
    bytes.into()
}

/// A piece of a response body, sent in order.
enum Piece {
    Bytes(Bytes),
    /// Sends nothing more until the test notifies.
    Hold(Arc<Notify>),
    /// Breaks the connection (no end of the chunked body).
    Break,
}

/// What the server answers one call with.
struct Reply {
    status: u16,
    error_type: Option<&'static str>,
    body: Vec<Piece>,
}

/// A whole recorded response.
fn stream_of(name: &str) -> Reply {
    Reply {
        status: 200,
        error_type: None,
        body: fixture(name)
            .iter()
            .map(|m| Piece::Bytes(frame(m)))
            .collect(),
    }
}

/// An error the service answers before any stream, as Converse's are.
fn http_error(status: u16, error_type: &'static str, message: &str) -> Reply {
    Reply {
        status,
        error_type: Some(error_type),
        body: vec![Piece::Bytes(
            json!({ "message": message }).to_string().into(),
        )],
    }
}

#[derive(Default)]
struct Recorded {
    replies: VecDeque<Reply>,
    /// Each call's path and JSON body.
    calls: Vec<(String, Value)>,
}

type Shared = Arc<Mutex<Recorded>>;

struct Server {
    url: String,
    recorded: Shared,
}

impl Server {
    async fn start(replies: Vec<Reply>) -> Server {
        let recorded = Shared::default();
        recorded.lock().unwrap().replies = replies.into();
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(recorded.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Server { url, recorded }
    }

    fn model(&self) -> common::models::bedrock::Bedrock {
        common::models::bedrock::Bedrock::new(client(&self.url, Duration::from_secs(10)))
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.recorded.lock().unwrap().calls.clone()
    }
}

async fn answer(State(recorded): State<Shared>, uri: Uri, body: Bytes) -> Response {
    let reply = {
        let mut recorded = recorded.lock().unwrap();
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        recorded.calls.push((uri.path().to_owned(), body));
        if uri.path().ends_with("/converse-stream") {
            recorded.replies.pop_front()
        } else {
            None
        }
    };
    let Some(reply) = reply else {
        return (
            StatusCode::NOT_FOUND,
            [("x-amzn-errortype", "UnknownOperationException")],
            "{}",
        )
            .into_response();
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        for piece in reply.body {
            match piece {
                Piece::Bytes(bytes) => {
                    if tx.send(Ok(bytes)).await.is_err() {
                        return;
                    }
                }
                Piece::Hold(go) => go.notified().await,
                Piece::Break => {
                    let _ = tx.send(Err(std::io::Error::other("cut"))).await;
                    return;
                }
            }
        }
    });
    let body = Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }));
    let content_type = if reply.error_type.is_some() {
        "application/json"
    } else {
        "application/vnd.amazon.eventstream"
    };
    let mut response = Response::builder()
        .status(reply.status)
        .header("content-type", content_type)
        .header("x-amzn-requestid", "5ac1f4b3-0c0e-4b7e-9a55-1f0c1d2e3f40");
    if let Some(error_type) = reply.error_type {
        response = response.header("x-amzn-errortype", error_type);
    }
    response.body(body).unwrap()
}

/// Where the model reports its deltas, and what it reported.
fn deltas() -> (impl Fn(Delta) + Send + Sync, mpsc::UnboundedReceiver<Delta>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        move |d| {
            let _ = tx.send(d);
        },
        rx,
    )
}

fn reported(mut rx: mpsc::UnboundedReceiver<Delta>) -> Vec<Delta> {
    let mut all = Vec::new();
    while let Ok(d) = rx.try_recv() {
        all.push(d);
    }
    all
}

/// The text a caller shows, applying each restart.
fn shown(deltas: &[Delta]) -> String {
    deltas.iter().fold(String::new(), |mut text, d| {
        match d {
            Delta::Text(t) => text.push_str(t),
            Delta::Restart => text.clear(),
            _ => {}
        }
        text
    })
}

fn text(t: &str) -> Delta {
    Delta::Text(t.into())
}

/// One ConverseStream call answered with a recorded response: what it returned, the
/// deltas it reported, and the server (which has the calls it got).
async fn streamed(name: &str) -> (Result<ChatResponse, ModelError>, Vec<Delta>, Server) {
    let server = Server::start(vec![stream_of(name)]).await;
    let (on_delta, rx) = deltas();
    let result = server
        .model()
        .chat_stream(&first_question(), &on_delta)
        .await;
    (result, reported(rx), server)
}

#[tokio::test]
async fn a_text_stream_is_reported_delta_by_delta_then_finish_and_usage() {
    let (response, reported, server) = streamed("text").await;
    let response = response.unwrap();

    let usage = Usage {
        input_tokens: 412,
        output_tokens: 15,
    };
    assert_eq!(
        reported,
        vec![
            text("It is 18"),
            text("°C and sunny"),
            text(" in Paris."),
            Delta::Finish("end_turn".into()),
            Delta::Usage(usage),
        ]
    );
    assert_eq!(
        response,
        ChatResponse {
            text: Some("It is 18°C and sunny in Paris.".into()),
            tool_calls: vec![],
            usage,
            finish_reason: Some("end_turn".into()),
        }
    );
    let calls = server.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, format!("{ENCODED_PATH}-stream"));
}

#[tokio::test]
async fn tool_input_split_across_deltas_is_joined_call_by_call() {
    let (response, reported, _) = streamed("tool_use").await;
    let response = response.unwrap();

    assert_eq!(response.text.as_deref(), Some("I'll check the weather."));
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q".into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Paris", "days": 3, "note": "a {brace}, a \"quote\""}),
            },
            ToolCall {
                id: "tooluse_Q7bP0yW2TfK1sLx9mN3aVg".into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Lyon", "scale": 1.5}),
            },
        ]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 390,
            output_tokens: 71
        }
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
    // Calls are numbered among calls (content blocks 1 and 2 are calls 0 and 1), the id
    // and name come once, then the input's fragments as they were sent.
    let calls: Vec<(usize, Option<String>, String)> = reported
        .into_iter()
        .filter_map(|d| match d {
            Delta::ToolCall {
                index,
                id,
                arguments,
                ..
            } => Some((index, id, arguments)),
            _ => None,
        })
        .collect();
    let first = Some("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q".to_owned());
    let second = Some("tooluse_Q7bP0yW2TfK1sLx9mN3aVg".to_owned());
    assert_eq!(
        calls,
        vec![
            (0, first, String::new()),
            (0, None, "{\"city\": \"Pa".into()),
            (0, None, "ris\", \"days\": 3, \"no".into()),
            (0, None, "te\": \"a {brace}, a \\\"quote\\\"\"}".into()),
            (1, second, String::new()),
            (1, None, "{\"city\": ".into()),
            (1, None, "\"Lyon\", \"scale\": 1.5}".into()),
        ]
    );
}

#[tokio::test]
async fn reasoning_is_not_part_of_the_answer() {
    let (response, reported, _) = streamed("reasoning").await;
    let response = response.unwrap();

    assert_eq!(response.text.as_deref(), Some("Sunny, 18°C."));
    assert_eq!(shown(&reported), "Sunny, 18°C.");
    assert_eq!(response.usage.output_tokens, 48);
}

#[tokio::test]
async fn the_answer_is_reported_while_the_rest_is_still_to_come() {
    let go = Arc::new(Notify::new());
    let mut reply = stream_of("text");
    // After messageStart and the first text delta, nothing until the test has seen it.
    reply.body.insert(2, Piece::Hold(go.clone()));
    let server = Server::start(vec![reply]).await;
    let (on_delta, mut rx) = deltas();
    let model = server.model();
    let question = first_question();

    let (response, first) = tokio::join!(model.chat_stream(&question, &on_delta), async {
        let first = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
        go.notify_one();
        first
    });

    assert_eq!(
        first.map_err(|_| "no delta while the stream was held"),
        Ok(Some(text("It is 18")))
    );
    assert_eq!(
        response.unwrap().text.as_deref(),
        Some("It is 18°C and sunny in Paris.")
    );
}

/// The SDK bounds the response's head, not its body: a stream that stalls midway fails as
/// the HTTP providers' do, transient, saying which bound ran out.
#[tokio::test]
async fn a_stream_that_stalls_times_out_as_a_transient_error() {
    for (idle, total, says) in [
        (
            Duration::from_millis(500),
            Duration::from_secs(30),
            "was silent for 500ms",
        ),
        (
            Duration::from_secs(30),
            Duration::from_millis(500),
            "did not end within 500ms",
        ),
    ] {
        let mut reply = stream_of("text");
        // Never let go: the connection stays open with nothing more on it.
        reply.body.insert(2, Piece::Hold(Arc::new(Notify::new())));
        let server = Server::start(vec![reply]).await;
        let (on_delta, rx) = deltas();
        let model = server.model().with_stream_timeouts(idle, total);
        let result = tokio::time::timeout(
            Duration::from_secs(20),
            model.chat_stream(&first_question(), &on_delta),
        )
        .await
        .expect("bounded");
        let err = result.expect_err("stalled");
        assert!(matches!(err, ModelError::Transient { .. }), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
        drop(on_delta);
        assert_eq!(
            shown(&reported(rx)),
            "It is 18",
            "what came before the stall"
        );
    }
}

#[tokio::test]
async fn a_throttling_exception_in_the_stream_is_transient() {
    let error = streamed("throttled").await.0.unwrap_err();

    assert_no_secret(&error);
    let message = expect_transient(error);
    assert!(message.contains("throttlingException"), "{message}");
    assert!(message.contains("Too many tokens"), "{message}");
    assert!(message.contains("ConverseStream"), "{message}");
    assert!(message.contains(MODEL), "{message}");
}

#[tokio::test]
async fn a_validation_exception_in_the_stream_is_permanent() {
    let error = streamed("validation").await.0.unwrap_err();

    let message = expect_permanent(error);
    assert!(message.contains("validationException"), "{message}");
    assert!(message.contains("Input is too long"), "{message}");
}

#[tokio::test]
async fn a_stream_that_ends_before_message_stop_is_cut_off_and_transient() {
    let (result, reported, _) = streamed("cut_off").await;
    let error = result.unwrap_err();

    let message = expect_transient(error);
    assert!(
        message.contains("ended before the answer was complete"),
        "{message}"
    );
    assert_eq!(shown(&reported), "It is 18°C and");
}

#[tokio::test]
async fn a_stream_that_ends_or_breaks_inside_a_frame_is_transient() {
    let half_a_frame = || {
        let next = frame(&fixture("text")[3]);
        Piece::Bytes(next.slice(..next.len() / 2))
    };
    let mut ends = stream_of("cut_off");
    ends.body.push(half_a_frame());
    let mut breaks = stream_of("cut_off");
    breaks.body.extend([half_a_frame(), Piece::Break]);
    let server = Server::start(vec![ends, breaks]).await;
    let model = server.model();
    let (on_delta, _rx) = deltas();

    for (case, why) in [
        ("ends", "could not be read (in the response stream)"),
        ("breaks", "got no complete answer"),
    ] {
        let error = model
            .chat_stream(&first_question(), &on_delta)
            .await
            .unwrap_err();
        assert_no_secret(&error);
        let message = expect_transient(error);
        assert!(message.contains(why), "{case}: {message}");
    }
}

#[tokio::test]
async fn a_cut_off_stream_is_made_again_and_what_was_shown_is_replaced_not_doubled() {
    let server = Server::start(vec![stream_of("cut_off"), stream_of("text")]).await;
    let model = Retrying::new(server.model()).with_policy(
        3,
        Duration::from_millis(10),
        Duration::from_millis(50),
    );
    let (on_delta, rx) = deltas();

    let response = model
        .chat_stream(&first_question(), &on_delta)
        .await
        .unwrap();

    let deltas = reported(rx);
    assert_eq!(
        deltas[..3],
        [text("It is 18"), text("°C and"), Delta::Restart],
        "the cut-off attempt's text, then the restart: {deltas:?}"
    );
    assert_eq!(shown(&deltas), "It is 18°C and sunny in Paris.");
    assert_eq!(
        response.text.as_deref(),
        Some("It is 18°C and sunny in Paris.")
    );
    assert_eq!(response.usage.input_tokens, 412);
    assert_eq!(server.calls().len(), 2, "two ConverseStream calls");
}

#[tokio::test]
async fn the_stream_request_is_the_converse_request() {
    let whole = server_answering(json_response(200, super::text_answer())).await;
    let stream = Server::start(vec![stream_of("text")]).await;
    let request = after_a_tool_round();
    let (on_delta, _rx) = deltas();

    super::bedrock(&whole).chat(&request).await.unwrap();
    stream
        .model()
        .chat_stream(&request, &on_delta)
        .await
        .unwrap();

    let converse: Value = whole.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    let calls = stream.calls();
    assert_eq!(calls[0].1, converse);
    assert!(converse["toolConfig"].is_object() && converse["system"].is_array());
}

#[tokio::test]
async fn errors_before_the_stream_are_classified_as_converse_errors_are() {
    let server = Server::start(vec![
        http_error(
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        ),
        http_error(429, "ThrottlingException", "Too many requests."),
    ])
    .await;
    let model = server.model();
    let (on_delta, _rx) = deltas();

    let denied = model.chat_stream(&first_question(), &on_delta).await;
    let throttled = model.chat_stream(&first_question(), &on_delta).await;

    let message = expect_permanent(denied.unwrap_err());
    assert!(message.contains("AccessDeniedException"), "{message}");
    assert!(message.contains("HTTP 403"), "{message}");
    // ConverseStream is allowed by its own IAM action.
    assert!(
        message.contains("bedrock:InvokeModelWithResponseStream"),
        "{message}"
    );
    let message = expect_transient(throttled.unwrap_err());
    assert!(message.contains("HTTP 429"), "{message}");
}
