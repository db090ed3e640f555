//! Traces (issue 50, item 4): harness-local with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at
//! an OTLP/HTTP receiver in this test (protobuf `ExportTraceServiceRequest`s, decoded with
//! `opentelemetry-proto`, their raw bytes kept), the LLM agent on a scripted model whose
//! turns call a tool, then an MCP server's tool (a JSON-RPC server in this test), then
//! answer. One client request, carrying a `traceparent`, makes exactly one trace: the
//! request's span (the child of the client's), the drive, each model call with the GenAI
//! attributes and token counts, the tool and MCP calls, the store's writes; the MCP server
//! got the trace's context; no exported byte holds the message text, the tool arguments,
//! the answer or any secret. Without the OTEL variables nothing is exported.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use harness_e2e::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Attr;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{json, Value};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
/// Secret-looking values: each must appear in no exported byte.
const MESSAGE_SECRET: &str = "sk-ant-api03-MessageSecretAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const ARGUMENT_SECRET: &str = "ghp_ArgumentSecret0123456789abcdefABCDEF";
const API_KEY: &str = "sk-proj-EnvironmentKeyBBBBBBBBBBBBBBBBBBBBBBBB";
const COLLECTOR_KEY: &str = "collector-key-CCCCCCCC";
/// Plain words of the message, the tool's arguments, the MCP result and the answer.
const MESSAGE_WORDS: &str = "please-look-up-the-quarterly-figures";
const ARGUMENT_WORDS: &str = "quarterly-figures-query-words";
const RESULT_WORDS: &str = "mcp-result-words-42";
const ANSWER_WORDS: &str = "the-final-answer-words";

/// What a loopback server in this test was sent.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(HeaderMap, Bytes)>>>);

impl Received {
    fn all(&self) -> Vec<(HeaderMap, Bytes)> {
        self.0.lock().expect("not poisoned").clone()
    }

    fn push(&self, headers: HeaderMap, body: Bytes) {
        self.0.lock().expect("not poisoned").push((headers, body));
    }
}

/// Serves `app` on a free loopback port; its base URL.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A loopback server keeping every POST to `path` (headers and body), answered by
/// `answer`; its base URL.
async fn keeping(path: &str, answer: fn(&Bytes) -> axum::response::Response) -> (String, Received) {
    let received = Received::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        path,
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let kept = kept.clone();
            async move {
                kept.push(headers, body.clone());
                answer(&body)
            }
        })
        .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
        .delete(|| async { StatusCode::OK }),
    );
    (serve(app).await, received)
}

/// An OTLP/HTTP receiver: `POST /v1/traces` kept whole, answered with an empty
/// `ExportTraceServiceResponse`.
async fn collector() -> (String, Received) {
    keeping("/v1/traces", |_| {
        let protobuf = [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")];
        (protobuf, Vec::<u8>::new()).into_response()
    })
    .await
}

/// An MCP server over Streamable HTTP answering in JSON: one read-only tool, `lookup`,
/// whose result is [`RESULT_WORDS`]. Keeps every request.
async fn mcp_server() -> (String, Received) {
    let (url, received) = keeping("/mcp", |body| {
        let request: Value = serde_json::from_slice(body).unwrap_or_default();
        let result = match request["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "docs", "version": "1.0.0"}
            }),
            "tools/list" => json!({"tools": [{
                "name": "lookup",
                "description": "Looks a query up in the documents.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"]
                },
                "annotations": {"readOnlyHint": true}
            }]}),
            "tools/call" => json!({
                "content": [{"type": "text", "text": RESULT_WORDS}],
                "isError": false
            }),
            // A notification: accepted, no answer.
            _ => return StatusCode::ACCEPTED.into_response(),
        };
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        axum::Json(answer).into_response()
    })
    .await;
    (format!("{url}/mcp"), received)
}

fn temp_file(prefix: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(unique(prefix));
    std::fs::write(&path, text).expect("write a temporary file");
    path
}

/// A harness on the scripted model (a tool call, an MCP call, an answer) with the MCP
/// server at `mcp`, and `env` for the process.
async fn harness(backend: Backend, mcp: &str, env: &[(&str, &str)]) -> Option<Server> {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"tool_calls": [{"name": "docs__lookup",
                         "arguments": {"query": format!("{ARGUMENT_WORDS} {ARGUMENT_SECRET}")}}]},
        {"text": ANSWER_WORDS}
    ]});
    let script = temp_file("traces-script", &script.to_string());
    let servers = format!("[mcp.docs]\nurl = \"{mcp}\"\nread_only_tools = [\"lookup\"]\n");
    let servers = temp_file("traces-mcp", &servers);
    let model = format!("scripted:{}", script.display());
    let mut env = env.to_vec();
    env.push(("OPENAI_API_KEY", API_KEY));
    let args = [
        "--agent",
        "llm",
        "--model",
        &model,
        "--mcp",
        servers.to_str().expect("a UTF-8 path"),
    ];
    Server::start_on_env(backend, &args, &env).await
}

/// The task, sent over JSON-RPC with the client's `traceparent`, completed.
async fn run_task(s: &Server) {
    let text = format!("{MESSAGE_WORDS} with my key {MESSAGE_SECRET}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": {"message": user_message(&unique("m"), &text)}});
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN}-01");
    let headers = headers(&[
        ("A2A-Version", "1.0"),
        ("Content-Type", "application/json"),
        ("traceparent", &traceparent),
        ("tracestate", &oversized_trace_state()),
    ]);
    let (status, answer) = json_of(s.rpc_raw(&headers, body.to_string()).await).await;
    assert_eq!(status, 200, "{answer}");
    let task = &answer["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(status_text(task), ANSWER_WORDS, "{answer}");
}

/// The client's `tracestate`: `vendor=opaque`, then 31 members as long as the SDK takes
/// (a 256-character value), about 8 KiB, which would otherwise ride on every exported span
/// and every request to the MCP server. Only `vendor=opaque` is taken on (the W3C's 512
/// characters, long members dropped first).
fn oversized_trace_state() -> String {
    let long = "v".repeat(256);
    let mut members = vec!["vendor=opaque".to_owned()];
    members.extend((1..32).map(|i| format!("big{i}={long}")));
    members.join(",")
}

/// Stops the server as Ctrl-C does and waits for it to end (its spans flushed).
async fn interrupt(s: &mut Server) {
    let pid = s.pid().expect("running") as i32;
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.is_running() {
        assert!(
            Instant::now() < deadline,
            "the server did not stop on SIGINT"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The one `tools/call` request the MCP server got.
fn tool_call(mcp_received: &Received) -> Value {
    let calls: Vec<Value> = (mcp_received.all().iter())
        .filter_map(|(_, body)| serde_json::from_slice::<Value>(body).ok())
        .filter(|v| v["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls[0].clone()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Attr> {
    (span.attributes.iter())
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn text<'a>(span: &'a Span, key: &str) -> &'a str {
    match attr(span, key) {
        Some(Attr::StringValue(s)) => s,
        _ => "",
    }
}

fn int(span: &Span, key: &str) -> i64 {
    match attr(span, key) {
        Some(Attr::IntValue(n)) => *n,
        _ => -1,
    }
}

fn ancestors<'a>(span: &'a Span, by_id: &BTreeMap<String, &'a Span>) -> Vec<&'a str> {
    let mut names = Vec::new();
    let mut parent = hex(&span.parent_span_id);
    while let Some(p) = by_id.get(&parent) {
        names.push(p.name.as_str());
        parent = hex(&p.parent_span_id);
    }
    names
}

async fn one_task_makes_one_trace_without_content(backend: Backend) {
    let (otlp, exported) = collector().await;
    let (mcp, mcp_received) = mcp_server().await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str()),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            &format!("x-api-key={COLLECTOR_KEY}"),
        ),
        ("OTEL_SERVICE_NAME", "traces-e2e"),
        // Nothing is sent before the shutdown: the flush at the end sends it all.
        ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
    ];
    let Some(mut s) = harness(backend, &mcp, &env).await else {
        return;
    };
    run_task(&s).await;
    interrupt(&mut s).await;
    let log = s.log_text().unwrap_or_default();

    let exports = exported.all();
    assert!(!exports.is_empty(), "nothing was exported; the log:\n{log}");
    let mut spans = Vec::new();
    for (headers, body) in &exports {
        assert_eq!(headers["content-type"], "application/x-protobuf");
        assert_eq!(
            headers["x-api-key"], COLLECTOR_KEY,
            "OTEL_EXPORTER_OTLP_HEADERS"
        );
        let request = ExportTraceServiceRequest::decode(body.as_ref()).expect("OTLP protobuf");
        for resource in request.resource_spans {
            let service = (resource.resource.iter())
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.clone()?.value);
            assert_eq!(service, Some(Attr::StringValue("traces-e2e".into())));
            spans.extend(resource.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let traces: BTreeSet<String> = spans.iter().map(|s| hex(&s.trace_id)).collect();
    assert_eq!(traces, BTreeSet::from([TRACE_ID.to_owned()]), "{names:?}");
    let by_id: BTreeMap<String, &Span> = spans.iter().map(|s| (hex(&s.span_id), s)).collect();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };

    // The request: the client's span is its parent.
    let request = named("a2a SendMessage");
    assert_eq!(request.len(), 1, "{names:?}");
    let request = request[0];
    assert_eq!(hex(&request.parent_span_id), CLIENT_SPAN);
    assert_eq!(request.kind, 2, "a server span");
    assert_eq!(
        request.trace_state, "vendor=opaque",
        "cut to 512 characters"
    );
    for span in &spans {
        assert_eq!(span.trace_state, "vendor=opaque", "{}", span.name);
    }

    // The drive, in the request's trace.
    let drive = named("drive");
    assert_eq!(drive.len(), 1, "{names:?}");
    assert!(ancestors(drive[0], &by_id).contains(&"a2a SendMessage"));

    // Three model calls under the drive, with the GenAI attributes and token counts.
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 3, "{names:?}");
    let mut reasons = Vec::new();
    for chat in &chats {
        assert!(ancestors(chat, &by_id).contains(&"drive"), "{names:?}");
        assert_eq!(text(chat, "gen_ai.system"), "scripted");
        assert_eq!(text(chat, "gen_ai.operation.name"), "chat");
        assert!(text(chat, "gen_ai.request.model").starts_with("scripted:"));
        assert!(int(chat, "gen_ai.usage.input_tokens") > 0, "{chat:?}");
        assert!(int(chat, "gen_ai.usage.output_tokens") >= 0, "{chat:?}");
        assert_eq!(chat.kind, 3, "a client span");
        match attr(chat, "gen_ai.response.finish_reasons") {
            Some(Attr::ArrayValue(a)) => {
                reasons.extend(a.values.iter().filter_map(|v| match v.value.as_ref()? {
                    Attr::StringValue(s) => Some(s.clone()),
                    _ => None,
                }))
            }
            other => panic!("finish reasons: {other:?}"),
        }
    }
    reasons.sort();
    assert_eq!(reasons, ["stop", "tool_calls", "tool_calls"]);
    assert!(
        int(chats[2], "gen_ai.usage.output_tokens") > 0,
        "the answer's tokens"
    );

    // The tool call, and the MCP call inside its tool span.
    let time = named("execute_tool current_time");
    assert_eq!(time.len(), 1, "{names:?}");
    assert_eq!(text(time[0], "gen_ai.tool.name"), "current_time");
    let lookup = named("execute_tool docs__lookup");
    assert_eq!(lookup.len(), 1, "{names:?}");
    assert_eq!(text(lookup[0], "mcp.server"), "docs");
    let mcp_call = named("tools/call lookup");
    assert_eq!(mcp_call.len(), 1, "{names:?}");
    assert_eq!(hex(&mcp_call[0].parent_span_id), hex(&lookup[0].span_id));
    assert_eq!(text(mcp_call[0], "mcp.method.name"), "tools/call");
    assert_eq!(text(mcp_call[0], "gen_ai.tool.name"), "lookup");
    assert_eq!(text(mcp_call[0], "mcp.server"), "docs");

    // The store's writes, in the trace.
    let store = match backend {
        Backend::Embedded => "sqlite",
        Backend::DynamoDb => "aws.dynamodb",
    };
    let writes: Vec<&Span> = (spans.iter())
        .filter(|s| text(s, "db.system.name") == store)
        .collect();
    assert!(!writes.is_empty(), "{names:?}");
    assert!(writes.iter().any(|w| w.name == format!("commit {store}")));

    // The MCP server was given the trace's context: the MCP span is the parent.
    let call = tool_call(&mcp_received);
    let meta = &call["params"]["_meta"];
    let expected = format!("00-{TRACE_ID}-{}-01", hex(&mcp_call[0].span_id));
    assert_eq!(meta["traceparent"], expected.as_str(), "{meta}");
    assert_eq!(meta["tracestate"], "vendor=opaque", "{meta}");

    // No exported byte holds content or a secret.
    let raw: Vec<u8> = exports.iter().flat_map(|(_, b)| b.to_vec()).collect();
    let raw = String::from_utf8_lossy(&raw);
    for word in [
        MESSAGE_WORDS,
        MESSAGE_SECRET,
        ARGUMENT_WORDS,
        ARGUMENT_SECRET,
        RESULT_WORDS,
        ANSWER_WORDS,
        API_KEY,
        COLLECTOR_KEY,
        "sk-ant-",
        "ghp_",
        "sk-proj-",
    ] {
        assert!(!raw.contains(word), "{word:?} was exported");
    }
}

async fn without_the_otel_variables_nothing_is_exported(backend: Backend) {
    let (otlp, exported) = collector().await;
    let (mcp, mcp_received) = mcp_server().await;
    // The collector is there, but nothing points the harness at it.
    let _ = otlp;
    let Some(mut s) = harness(backend, &mcp, &[]).await else {
        return;
    };
    run_task(&s).await;
    interrupt(&mut s).await;
    assert!(exported.all().is_empty(), "exported without OTEL variables");
    let call = tool_call(&mcp_received);
    let meta = &call["params"]["_meta"];
    assert!(meta.get("traceparent").is_none(), "{meta}");
    assert!(meta.get("tracestate").is_none(), "{meta}");
    for (headers, _) in mcp_received.all() {
        assert!(headers.get("traceparent").is_none());
    }
}

on_both_stores!(
    one_task_makes_one_trace_without_content,
    without_the_otel_variables_nothing_is_exported,
);
