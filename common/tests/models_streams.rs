//! The OpenAI and Anthropic providers' streamed answers end to end: an HTTP server on
//! loopback (a raw `TcpListener`, so a response can be cut off or stalled exactly where a
//! test says) serves the fixture streams of `fixtures/streams/` in several writes, and
//! the provider, behind `Retrying` as `models::build` wraps it, reports deltas to the
//! caller. What the caller shows (applying `Delta::Restart`) must be the answer, once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::models::anthropic::Anthropic;
use common::models::openai::OpenAi;
use common::models::retry::Retrying;
use common::models::{
    ChatMessage, ChatRequest, ChatResponse, Delta, Model, ModelError, ToolCall, ToolSpec, Usage,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const OPENAI_KEY: &str = "sk-test-4f9c2a7e1b8d";
const ANTHROPIC_KEY: &str = "sk-ant-api03-test-7d3f9e21";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/streams/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// How a streamed body is framed, and so how a cut-off one ends for the client.
#[derive(Clone, Copy, Debug)]
enum Framing {
    /// `Transfer-Encoding: chunked`, as the APIs send: cut off, the last chunk never
    /// comes and the client's body read fails.
    Chunked,
    /// Delimited by the connection's close: cut off, the body just ends early.
    Close,
}

#[derive(Clone, Debug)]
enum Reply {
    /// The whole stream, in several writes.
    Events(Vec<u8>, Framing),
    /// The bytes, in several writes, then the connection is closed before the stream's end.
    CutOff(Vec<u8>, Framing),
    /// The bytes, then nothing more while the client waits (up to 30 s).
    Stall(Vec<u8>),
    /// The bytes, then a `ping` event every 50 ms while the client listens (up to 30 s).
    PingForever(Vec<u8>),
    /// A whole response: status, extra headers, content type and body.
    Whole(u16, Vec<(&'static str, &'static str)>, &'static str, String),
}

/// A server answering its n-th request with the n-th reply (the last one again after
/// them), keeping what each request was: its head and its JSON body.
struct Server {
    base: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Server {
    async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        tokio::spawn(async move {
            for n in 0.. {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies[n.min(replies.len() - 1)].clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let _ = answer(socket, reply, seen).await;
                });
            }
        });
        Server { base, requests }
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().expect("requests").clone()
    }
}

async fn answer(
    mut socket: TcpStream,
    reply: Reply,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
) -> std::io::Result<()> {
    let (head, body) = read_request(&mut socket).await?;
    seen.lock()
        .expect("requests")
        .push((head, serde_json::from_slice(&body).unwrap_or(Value::Null)));
    match reply {
        Reply::Events(bytes, framing) => {
            write_events(&mut socket, &bytes, framing).await?;
            if let Framing::Chunked = framing {
                socket.write_all(b"0\r\n\r\n").await?;
            }
        }
        Reply::CutOff(bytes, framing) => write_events(&mut socket, &bytes, framing).await?,
        Reply::Stall(bytes) => {
            write_events(&mut socket, &bytes, Framing::Close).await?;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        Reply::PingForever(bytes) => {
            write_events(&mut socket, &bytes, Framing::Close).await?;
            for _ in 0..600 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                socket
                    .write_all(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")
                    .await?;
            }
        }
        Reply::Whole(status, headers, content_type, body) => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
    }
    socket.shutdown().await
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        data.extend_from_slice(&buf[..n]);
    }
    Ok((head, data[head_end..head_end + length].to_vec()))
}

/// The response head and `bytes` in five writes a few milliseconds apart, so the client
/// reads them as separate pieces (split wherever they fall, inside lines and events).
async fn write_events(
    socket: &mut TcpStream,
    bytes: &[u8],
    framing: Framing,
) -> std::io::Result<()> {
    let encoding = match framing {
        Framing::Chunked => "transfer-encoding: chunked\r\n",
        Framing::Close => "",
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nconnection: close\r\n{encoding}\r\n"
    );
    socket.write_all(head.as_bytes()).await?;
    for piece in bytes.chunks(bytes.len().div_ceil(5).max(1)) {
        match framing {
            Framing::Chunked => {
                socket
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                socket.write_all(piece).await?;
                socket.write_all(b"\r\n").await?;
            }
            Framing::Close => socket.write_all(piece).await?,
        }
        socket.flush().await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

fn request(tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest {
        model: "a-model".into(),
        system: "You are a weather assistant.".into(),
        messages: vec![ChatMessage::User {
            text: "Weather in Paris and Montréal?".into(),
        }],
        tools,
        max_tokens: 1024,
        turn: 0,
        purpose: Default::default(),
        task_id: String::new(),
    }
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city".into(),
        parameters: json!({"type": "object", "properties": {"location": {"type": "string"}}}),
    }
}

#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
}

/// The provider at `server`, retried as `models::build` retries it but quickly.
fn model(api: Api, server: &Server, timeout: Duration) -> Box<dyn Model> {
    let (attempts, first, most) = (3, Duration::from_millis(10), Duration::from_millis(50));
    match api {
        Api::OpenAi => Box::new(
            Retrying::new(OpenAi::new(
                format!("{}/v1", server.base),
                Some(OPENAI_KEY.into()),
                timeout,
            ))
            .with_policy(attempts, first, most),
        ),
        Api::Anthropic => Box::new(
            Retrying::new(Anthropic::new(
                Some(server.base.clone()),
                ANTHROPIC_KEY,
                timeout,
            ))
            .with_policy(attempts, first, most),
        ),
    }
}

/// What a streaming call reported, in order.
#[derive(Default)]
struct Seen(Mutex<Vec<Delta>>);

impl Seen {
    fn deltas(&self) -> Vec<Delta> {
        self.0.lock().expect("deltas").clone()
    }

    /// The text a caller shows: the text deltas, forgetting what came before a restart.
    fn shown(&self) -> String {
        let mut shown = String::new();
        for d in self.deltas() {
            match d {
                Delta::Text(t) => shown.push_str(&t),
                Delta::Restart => shown.clear(),
                _ => {}
            }
        }
        shown
    }

    fn restarts(&self) -> usize {
        self.deltas()
            .iter()
            .filter(|d| matches!(d, Delta::Restart))
            .count()
    }
}

async fn stream(
    model: &dyn Model,
    request: &ChatRequest,
) -> (Result<ChatResponse, ModelError>, Seen) {
    let seen = Seen::default();
    let on_delta = |d: Delta| seen.0.lock().expect("deltas").push(d);
    let result = model.chat_stream(request, &on_delta).await;
    (result, seen)
}

fn texts(api: Api) -> (Vec<u8>, Vec<u8>, &'static str, Usage, &'static str) {
    match api {
        Api::OpenAi => (
            fixture("openai-cut-off.sse"),
            fixture("openai-text.sse"),
            "Hello! How can I assist you today?",
            Usage {
                input_tokens: 19,
                output_tokens: 10,
            },
            "stop",
        ),
        Api::Anthropic => (
            fixture("anthropic-cut-off.sse"),
            fixture("anthropic-text.sse"),
            "Hello! How can I help you today?",
            Usage {
                input_tokens: 25,
                output_tokens: 15,
            },
            "end_turn",
        ),
    }
}

#[tokio::test]
async fn a_stream_cut_off_midway_is_made_again_and_the_caller_sees_the_answer_once() {
    for api in [Api::OpenAi, Api::Anthropic] {
        for framing in [Framing::Chunked, Framing::Close] {
            let (cut, whole, answer, usage, finish) = texts(api);
            let server = Server::start(vec![
                Reply::CutOff(cut, framing),
                Reply::Events(whole, framing),
            ])
            .await;
            let model = model(api, &server, Duration::from_secs(10));
            let (result, seen) = stream(&*model, &request(vec![])).await;
            let case = format!("{api:?} {framing:?}");

            let response = result.unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(response.text.as_deref(), Some(answer), "{case}");
            assert_eq!(response.usage, usage, "{case}");
            assert_eq!(response.finish_reason.as_deref(), Some(finish), "{case}");
            assert_eq!(seen.shown(), answer, "{case}: shown once, restart applied");
            assert_eq!(seen.restarts(), 1, "{case}");
            // The first attempt did show text before it broke off.
            let before: String = seen
                .deltas()
                .iter()
                .take_while(|d| !matches!(d, Delta::Restart))
                .filter_map(|d| match d {
                    Delta::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert!(
                !before.is_empty() && answer.starts_with(&before) && before != answer,
                "{case}: before the restart: {before:?}"
            );
            assert_eq!(
                server.requests().len(),
                2,
                "{case}: the call was made twice"
            );
        }
    }
}

#[tokio::test]
async fn a_cut_off_stream_is_a_transient_error_however_it_ends() {
    for (framing, says) in [
        // The last chunk never came: reading the body fails.
        (Framing::Chunked, "broke off"),
        // The body ended cleanly, but before the final event.
        (Framing::Close, "ended before the answer was complete"),
    ] {
        let (cut, _, _, _, _) = texts(Api::OpenAi);
        let server = Server::start(vec![Reply::CutOff(cut, framing)]).await;
        let model = OpenAi::new(
            format!("{}/v1", server.base),
            Some(OPENAI_KEY.into()),
            Duration::from_secs(10),
        );
        let (result, _) = stream(&model, &request(vec![])).await;
        let err = result.expect_err("cut off");
        assert!(
            matches!(err, ModelError::Transient { .. }),
            "{framing:?}: {err:?}"
        );
        assert!(err.to_string().contains(says), "{framing:?}: {err}");
    }
}

#[tokio::test]
async fn the_streaming_request_asks_for_a_stream_and_carries_the_key() {
    let server = Server::start(vec![Reply::Events(
        fixture("openai-text.sse"),
        Framing::Chunked,
    )])
    .await;
    let (result, _) = stream(
        &*model(Api::OpenAi, &server, Duration::from_secs(10)),
        &request(vec![]),
    )
    .await;
    result.expect("answer");
    let (head, body) = &server.requests()[0];
    assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
    assert!(
        head.to_ascii_lowercase().contains(&format!(
            "authorization: bearer {}",
            OPENAI_KEY.to_ascii_lowercase()
        )),
        "{head}"
    );
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"][1]["content"],
        "Weather in Paris and Montréal?"
    );

    let server = Server::start(vec![Reply::Events(
        fixture("anthropic-text.sse"),
        Framing::Chunked,
    )])
    .await;
    let (result, _) = stream(
        &*model(Api::Anthropic, &server, Duration::from_secs(10)),
        &request(vec![]),
    )
    .await;
    result.expect("answer");
    let (head, body) = &server.requests()[0];
    assert!(head.starts_with("POST /v1/messages "), "{head}");
    assert!(head.contains(ANTHROPIC_KEY), "{head}");
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["system"], "You are a weather assistant.");
}

/// Both calls of `openai-two-tool-calls-split.sse` / `anthropic-thinking-two-tool-uses-split.sse`.
fn two_calls(first: &str, second: &str) -> Vec<ToolCall> {
    vec![
        ToolCall {
            id: first.into(),
            name: "get_weather".into(),
            arguments: json!({"location": "Paris, France", "unit": "celsius"}),
        },
        ToolCall {
            id: second.into(),
            name: "get_weather".into(),
            arguments: json!({"location": "Montréal, Québec", "note": "say \"bonjour\""}),
        },
    ]
}

#[tokio::test]
async fn tool_calls_split_across_events_and_writes_are_put_together() {
    let cases = [
        (
            Api::OpenAi,
            "openai-two-tool-calls-split.sse",
            two_calls(
                "call_6LhoR3pXfkAm3oaQ0J7bWkz1",
                "call_Xq2v0rWbO7dKZJzNfA1LmT8s",
            ),
            Usage {
                input_tokens: 102,
                output_tokens: 64,
            },
            "tool_calls",
        ),
        (
            Api::Anthropic,
            "anthropic-thinking-two-tool-uses-split.sse",
            two_calls(
                "toolu_01A09q90qw90lq917835lq9",
                "toolu_01B7kx2YqRz4Lw9DdP3vN5sT",
            ),
            Usage {
                input_tokens: 530,
                output_tokens: 146,
            },
            "tool_use",
        ),
    ];
    for (api, file, calls, usage, finish) in cases {
        let server = Server::start(vec![Reply::Events(fixture(file), Framing::Chunked)]).await;
        let model = model(api, &server, Duration::from_secs(10));
        let (result, seen) = stream(&*model, &request(vec![weather_tool()])).await;
        let response = result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(response.tool_calls, calls, "{api:?}");
        assert_eq!(response.text, None, "{api:?}: thinking is not the answer");
        assert_eq!(seen.shown(), "", "{api:?}");
        assert_eq!(response.usage, usage, "{api:?}");
        assert_eq!(response.finish_reason.as_deref(), Some(finish), "{api:?}");
        let pieces = seen
            .deltas()
            .iter()
            .filter(|d| matches!(d, Delta::ToolCall { .. }))
            .count();
        assert!(pieces >= 10, "{api:?}: the calls came in pieces ({pieces})");
    }
}

#[tokio::test]
async fn an_error_event_is_classified_as_its_status_would_be() {
    // A server error / overload mid-stream is transient: made again, the text not doubled.
    for (api, error) in [
        (Api::OpenAi, "openai-error.sse"),
        (Api::Anthropic, "anthropic-error-overloaded.sse"),
    ] {
        let (_, whole, answer, _, _) = texts(api);
        let server = Server::start(vec![
            Reply::Events(fixture(error), Framing::Chunked),
            Reply::Events(whole, Framing::Chunked),
        ])
        .await;
        let (result, seen) = stream(
            &*model(api, &server, Duration::from_secs(10)),
            &request(vec![]),
        )
        .await;
        assert_eq!(result.expect("retried").text.as_deref(), Some(answer));
        assert_eq!(seen.shown(), answer, "{api:?}");
        assert_eq!(seen.restarts(), 1, "{api:?}");
        assert_eq!(server.requests().len(), 2, "{api:?}");

        // Every attempt failing: the last error says what the API said.
        let server = Server::start(vec![Reply::Events(fixture(error), Framing::Chunked)]).await;
        let (result, _) = stream(
            &*model(api, &server, Duration::from_secs(10)),
            &request(vec![]),
        )
        .await;
        let err = result.expect_err("fails every time");
        assert!(
            matches!(err, ModelError::Transient { .. }),
            "{api:?}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("server_error") || message.contains("overloaded_error"),
            "{message}"
        );
        assert_eq!(server.requests().len(), 3, "{api:?}: every attempt made");
    }

    // An error event that echoes the key: the message does not carry it.
    let echo = json!({"error": {"message": format!("key {OPENAI_KEY} may not use this model"),
        "type": "invalid_request_error"}});
    let server = Server::start(vec![Reply::Events(
        format!("data: {echo}\n\n").into_bytes(),
        Framing::Chunked,
    )])
    .await;
    let (result, _) = stream(
        &*model(Api::OpenAi, &server, Duration::from_secs(10)),
        &request(vec![]),
    )
    .await;
    let err = result.expect_err("refused");
    assert!(matches!(err, ModelError::Permanent { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("may not use this model"), "{message}");
    assert!(!message.contains(OPENAI_KEY), "{message}");

    // vLLM's 400 in a data line is permanent: not made again.
    let server = Server::start(vec![Reply::Events(
        fixture("openai-compatible-error-400.sse"),
        Framing::Chunked,
    )])
    .await;
    let (result, _) = stream(
        &*model(Api::OpenAi, &server, Duration::from_secs(10)),
        &request(vec![]),
    )
    .await;
    let err = result.expect_err("a bad request");
    assert!(matches!(err, ModelError::Permanent { .. }), "{err:?}");
    assert!(err.to_string().contains("maximum context length"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_429_before_the_stream_is_retried_and_a_401_is_not() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let (_, whole, answer, _, _) = texts(api);
        let limited = json!({"error": {"type": "rate_limit_error", "message": "Slow down"}});
        let server = Server::start(vec![
            Reply::Whole(
                429,
                vec![("retry-after", "0")],
                "application/json",
                limited.to_string(),
            ),
            Reply::Events(whole, Framing::Chunked),
        ])
        .await;
        let (result, seen) = stream(
            &*model(api, &server, Duration::from_secs(10)),
            &request(vec![]),
        )
        .await;
        assert_eq!(result.expect("retried").text.as_deref(), Some(answer));
        assert_eq!(
            seen.restarts(),
            0,
            "{api:?}: nothing was shown before the 429"
        );
        assert_eq!(seen.shown(), answer);
        assert_eq!(server.requests().len(), 2, "{api:?}");

        let key = match api {
            Api::OpenAi => OPENAI_KEY,
            Api::Anthropic => ANTHROPIC_KEY,
        };
        let refused = json!({"error": {"type": "authentication_error",
            "message": format!("invalid x-api-key {key}")}});
        let server = Server::start(vec![Reply::Whole(
            401,
            vec![],
            "application/json",
            refused.to_string(),
        )])
        .await;
        let (result, seen) = stream(
            &*model(api, &server, Duration::from_secs(10)),
            &request(vec![]),
        )
        .await;
        let err = result.expect_err("unauthorized");
        assert!(
            matches!(err, ModelError::Permanent { .. }),
            "{api:?}: {err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("401"), "{message}");
        assert!(message.contains("invalid x-api-key"), "{message}");
        assert!(!message.contains(key), "{message}");
        assert!(seen.deltas().is_empty());
        assert_eq!(server.requests().len(), 1, "{api:?}: not retried");
    }
}

#[tokio::test]
async fn a_stream_that_goes_silent_times_out_as_a_transient_error() {
    let (cut, _, _, _, _) = texts(Api::Anthropic);
    let server = Server::start(vec![Reply::Stall(cut)]).await;
    let model = Anthropic::new(
        Some(server.base.clone()),
        ANTHROPIC_KEY,
        Duration::from_secs(1),
    );
    let (result, seen) = stream(&model, &request(vec![])).await;
    let err = result.expect_err("stalled");
    assert!(matches!(err, ModelError::Transient { .. }), "{err:?}");
    assert!(err.to_string().contains("silent"), "{err}");
    assert!(
        !seen.shown().is_empty(),
        "what came before the stall was shown"
    );
}

#[tokio::test]
async fn a_stream_that_never_ends_is_bounded_in_all() {
    let (mut events, _, _, _, _) = texts(Api::Anthropic);
    // Whole events only, then the pings.
    let end = events
        .windows(2)
        .rposition(|w| w == b"\n\n")
        .expect("an event");
    events.truncate(end + 2);
    let server = Server::start(vec![Reply::PingForever(events)]).await;
    // Pings every 50 ms keep it from being silent for 10 s; the whole stream gets 1 s.
    let model = Anthropic::new(
        Some(server.base.clone()),
        ANTHROPIC_KEY,
        Duration::from_secs(10),
    )
    .with_stream_timeout(Duration::from_secs(1));
    let started = std::time::Instant::now();
    let (result, _) = stream(&model, &request(vec![])).await;
    let err = result.expect_err("never ends");
    assert!(matches!(err, ModelError::Transient { .. }), "{err:?}");
    assert!(err.to_string().contains("did not end within 1s"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "not the idle bound"
    );
}

/// A streamed call to `api` that a server answers with the JSON `body` (status 200).
async fn answered_json(api: Api, body: String) -> (Result<ChatResponse, ModelError>, Seen, Server) {
    let server = Server::start(vec![Reply::Whole(200, vec![], "application/json", body)]).await;
    let (result, seen) = stream(
        &*model(api, &server, Duration::from_secs(10)),
        &request(vec![]),
    )
    .await;
    (result, seen, server)
}

/// Some OpenAI-compatible servers and proxies ignore `stream: true`: their whole answer is
/// taken as a model without a streaming API gives it, shown at once.
#[tokio::test]
async fn a_whole_json_answer_to_a_streaming_request_is_taken_whole() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let whole = match api {
            Api::OpenAi => {
                json!({"choices": [{"message": {"role": "assistant", "content": "All whole."}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
            }
            Api::Anthropic => {
                json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "All whole."}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 2}})
            }
        };
        let (result, seen, _) = answered_json(api, whole.to_string()).await;
        let answer = result.expect("taken whole");
        assert_eq!(answer.text.as_deref(), Some("All whole."));
        assert_eq!(answer.usage.output_tokens, 2);
        assert_eq!(seen.shown(), "All whole.", "shown at once");
    }
}

/// What the model wrote may be in a body the harness cannot read: an error quotes none of
/// it (errors are logged), only its size.
#[tokio::test]
async fn a_json_answer_that_does_not_parse_is_refused_without_its_content() {
    let body = r#"{"choices": [{"message": {"content": "SECRET-PLAN-7 and more"#;
    let (result, _, _) = answered_json(Api::OpenAi, body.into()).await;
    let err = result.expect_err("cut short");
    assert!(matches!(err, ModelError::Permanent { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("does not parse"), "{message}");
    assert!(
        message.contains(&format!("{} bytes", body.len())),
        "{message}"
    );
    assert!(!message.contains("SECRET-PLAN-7"), "{message}");
}

#[tokio::test]
async fn an_error_a_server_answers_as_json_to_a_streaming_request_is_its_error() {
    let whole = json!({"error": {"message": "streaming is not supported", "type": "invalid_request_error"}});
    let (result, _, server) = answered_json(Api::OpenAi, whole.to_string()).await;
    let err = result.expect_err("not a stream");
    assert!(matches!(err, ModelError::Permanent { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("streaming is not supported"), "{message}");
    assert_eq!(server.requests().len(), 1);
}
