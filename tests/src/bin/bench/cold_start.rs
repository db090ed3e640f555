//! Cold starts of the Lambda functions: each binary is started under a minimal Lambda
//! Runtime API on loopback (the calls a function's runtime makes: the next invocation,
//! then its response or error), and timed from exec to the start of its first
//! invocation's answer (a streamed answer starts with its status). Every function gets
//! the request its operation serves, on a task that does not exist (so a store read, then
//! an A2A error), against DynamoDB Local; `send-message` creates a task
//! (`returnImmediately`); the stream functions (`resume`, `notifier`) get an empty batch
//! and the sweeper a scheduled event, so theirs is the start-up alone.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

const RUNTIME: &str = "/2018-06-01/runtime";
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// What the function said first.
enum Answer {
    /// `/response`: the HTTP status it carries, if any (stream functions answer JSON).
    Response(Option<u16>),
    /// `/error` or `/init/error`.
    Error(String),
}

struct Invocation {
    event: Bytes,
    served: AtomicBool,
    answers: mpsc::UnboundedSender<(Instant, Answer)>,
}

/// The event each function is invoked with, by binary name.
fn event(name: &str) -> Value {
    let missing = "0b1e6a0c-3f1d-4d2e-9a8b-7c6d5e4f3a2b";
    let message = |id: String| {
        json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]},
               "configuration": {"returnImmediately": true}})
    };
    let unique = || {
        format!(
            "tck-complete-task-cold-{}",
            common::engine::transition::new_id()
        )
    };
    let (method, path, body) = match name {
        "agent-card" => ("GET", "/.well-known/agent-card.json".to_owned(), None),
        "get-extended-agent-card" => ("GET", "/extendedAgentCard".to_owned(), None),
        "get-task" => ("GET", format!("/tasks/{missing}"), None),
        "list-tasks" => ("GET", "/tasks".to_owned(), None),
        "cancel-task" => ("POST", format!("/tasks/{missing}:cancel"), Some(json!({}))),
        "subscribe-to-task" => ("GET", format!("/tasks/{missing}:subscribe"), None),
        "create-push-config" => (
            "POST",
            format!("/tasks/{missing}/pushNotificationConfigs"),
            Some(json!({"url": "https://example.com/hook"})),
        ),
        "get-push-config" | "delete-push-config" => (
            if name == "get-push-config" {
                "GET"
            } else {
                "DELETE"
            },
            format!("/tasks/{missing}/pushNotificationConfigs/c1"),
            None,
        ),
        "list-push-configs" => (
            "GET",
            format!("/tasks/{missing}/pushNotificationConfigs"),
            None,
        ),
        "send-message" => ("POST", "/message:send".to_owned(), Some(message(unique()))),
        "send-streaming-message" => (
            "POST",
            "/message:stream".to_owned(),
            Some(message(unique())),
        ),
        "jsonrpc" => (
            "POST",
            "/".to_owned(),
            Some(
                json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": missing}}),
            ),
        ),
        "remote-callback" => (
            "POST",
            format!("/remote/callback/{missing}"),
            Some(json!({})),
        ),
        "resume" | "notifier" => return json!({"Records": []}),
        _ => {
            return json!({"version": "0", "id": missing, "detail-type": "Scheduled Event",
                          "source": "aws.events", "account": "123456789012",
                          "time": "2026-12-03T00:00:00Z", "region": "us-east-1",
                          "resources": [], "detail": {}})
        }
    };
    let host = "bench.execute-api.us-east-1.amazonaws.com";
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"a2a-version": "1.0", "accept": "application/json",
                    "content-type": "application/json", "host": host},
        "requestContext": {
            "accountId": "123456789012", "apiId": "bench", "domainName": host,
            "domainPrefix": "bench",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "bench"},
            "requestId": "bench", "routeKey": "$default", "stage": "$default",
            "time": "03/Dec/2026:00:00:00 +0000", "timeEpoch": 1796256000000u64
        },
        "body": body.map(|b| b.to_string()),
        "isBase64Encoded": false
    })
}

async fn next(State(inv): State<Arc<Invocation>>) -> Response {
    if inv.served.swap(true, Ordering::SeqCst) {
        // One invocation a start: the runtime's next call waits until it is killed.
        std::future::pending::<()>().await;
    }
    let deadline = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        + ANSWER_TIMEOUT.as_millis();
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("lambda-runtime-aws-request-id", "bench-1".to_owned()),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        (
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:bench".to_owned(),
        ),
        (
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000".to_owned(),
        ),
        ("content-type", "application/json".to_owned()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    (headers, inv.event.clone()).into_response()
}

/// The answer's status: `"statusCode":` in its first bytes (the whole answer, or a
/// stream's prelude).
async fn response(State(inv): State<Arc<Invocation>>, body: Body) -> StatusCode {
    let at = Instant::now();
    let mut stream = body.into_data_stream();
    let first = stream.next().await.and_then(Result::ok).unwrap_or_default();
    let text = String::from_utf8_lossy(&first);
    let status = text.split_once("\"statusCode\":").and_then(|(_, rest)| {
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    });
    let _ = inv.answers.send((at, Answer::Response(status)));
    // The rest of a stream is drained so the function is not held writing.
    tokio::spawn(async move { while stream.next().await.is_some() {} });
    StatusCode::ACCEPTED
}

async fn error(State(inv): State<Arc<Invocation>>, body: Bytes) -> StatusCode {
    let said = String::from_utf8_lossy(&body).chars().take(200).collect();
    let _ = inv.answers.send((Instant::now(), Answer::Error(said)));
    StatusCode::ACCEPTED
}

/// One cold start of `binary` (function `name`): exec to its first answer, and what that
/// answer was.
async fn once(
    binary: &Path,
    name: &str,
    env: &[(String, String)],
) -> Result<(Duration, String), String> {
    let (answers, mut answered) = mpsc::unbounded_channel();
    let invocation = Arc::new(Invocation {
        event: Bytes::from(event(name).to_string()),
        served: AtomicBool::new(false),
        answers,
    });
    let app = axum::Router::new()
        .route(&format!("{RUNTIME}/invocation/next"), get(next))
        .route(
            &format!("{RUNTIME}/invocation/{{id}}/response"),
            post(response),
        )
        .route(&format!("{RUNTIME}/invocation/{{id}}/error"), post(error))
        .route(&format!("{RUNTIME}/init/error"), post(error))
        .with_state(invocation);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let api = listener.local_addr().map_err(|e| e.to_string())?;
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let mut cmd = Command::new(binary);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", name)
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: prctl is async-signal-safe and touches nothing of the parent's.
    unsafe {
        cmd.pre_exec(
            || match libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            },
        );
    }
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    let first = tokio::time::timeout(ANSWER_TIMEOUT, answered.recv()).await;
    let _ = child.kill();
    let _ = child.wait();
    server.abort();
    match first {
        Ok(Some((at, Answer::Response(status)))) => Ok((
            at - started,
            status.map_or_else(|| "answered".to_owned(), |s| format!("HTTP {s}")),
        )),
        Ok(Some((_, Answer::Error(said)))) => Err(format!("{name} failed: {said}")),
        Ok(None) | Err(_) => Err(format!("{name} did not answer within {ANSWER_TIMEOUT:?}")),
    }
}

/// The median of `starts` cold starts of each function in `dir` (`<dir>/<name>`), with
/// the answer the last one gave; or why it could not be measured.
pub async fn measure(
    dir: &Path,
    names: &[String],
    env: &[(String, String)],
    starts: usize,
) -> Vec<(String, Result<(Duration, String), String>)> {
    let mut out = Vec::new();
    for name in names {
        let binary = dir.join(name);
        let mut times = Vec::new();
        let mut outcome = Err(format!("{} is not built", binary.display()));
        if binary.is_file() {
            for _ in 0..starts {
                outcome = once(&binary, name, env).await;
                match &outcome {
                    Ok((took, _)) => times.push(took.as_secs_f64()),
                    Err(_) => break,
                }
            }
        }
        let outcome =
            outcome.map(|(_, answer)| (Duration::from_secs_f64(super::median(times)), answer));
        out.push((name.clone(), outcome));
    }
    out
}
