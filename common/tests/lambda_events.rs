//! The Lambda functions, end to end without a Lambda runtime: real API Gateway HTTP API
//! (payload format 2.0) and Function URL events from `tests/fixtures/` go through
//! `lambda_http` exactly as `lambda_http::run` and `lambda_http::run_with_streaming_response`
//! drive them, into the Router a function serves (`server::router(harness, endpoint)`).
//!
//! * Buffered functions: `lambda_http::Adapter` (what `lambda_http::run` wraps the Router
//!   in) turns the event into a `Request`, and the `Response` into the `LambdaResponse`
//!   whose JSON the runtime posts back to API Gateway; the tests assert on that JSON
//!   (`statusCode`, `headers`, `body`, `isBase64Encoded`).
//! * Streaming functions: `lambda_http::StreamAdapter` (what `run_with_streaming_response`
//!   builds) gives the metadata prelude the runtime sends first and the body stream whose
//!   chunks follow it; the tests read the SSE frames chunk by chunk.
//!
//! The fixtures were shaped on the events AWS delivers (and on `aws_lambda_events`' own
//! fixtures). Task ids are made by the server, so the events that name a task carry
//! [`CAPTURED_TASK_ID`] and each test puts the id of the task it created in its place.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use common::a2a::Operation;
use common::agent;
use common::auth::local_key::LocalKey;
use common::config::Config;
use common::ops::Harness;
use common::server::{router, Endpoint};
use common::store::EmbeddedStore;
use futures::{Stream, StreamExt};
use lambda_http::lambda_runtime::{Context, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, StreamAdapter};
use serde_json::Value;
use tower::ServiceExt;

/// The task id in the fixtures that name a task.
const CAPTURED_TASK_ID: &str = "3f6c1d2e-8a4b-4c7d-9e1f-2a3b4c5d6e7f";
/// The HTTP API the API Gateway fixtures came through.
const HTTP_API_HOST: &str = "r7kq2x9d4m.execute-api.us-east-1.amazonaws.com";
/// Longest a stream may take in these tests (the slow conformance task takes 4 s).
const STREAM_DEADLINE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// A harness on an embedded store in its own temporary directory, configured the way
/// `lambda::config_from_env` configures a function deployed by `template.yaml`.
struct Deployment {
    harness: Arc<Harness>,
    dir: PathBuf,
}

impl Deployment {
    fn new(name: &str) -> Self {
        Self::with_config(name, Config::default())
    }

    /// A deployment verifying tokens (`HARNESS_AUTH=jwt`), with the key that signs them.
    fn verified(name: &str) -> (Self, LocalKey) {
        let key_dir =
            std::env::temp_dir().join(format!("harness-lambda-key-{}", uuid::Uuid::new_v4()));
        let key = LocalKey::load_or_create(&key_dir).expect("a signing key");
        let auth = common::auth::Auth::Jwt(common::auth::JwtSettings {
            keys: common::auth::KeySource::Local(key.public().clone()),
            issuer: "https://idp.example".into(),
            audience: "tiny-harness".into(),
            identity_claim: "sub".into(),
            openid_configuration_url: None,
        });
        let _ = std::fs::remove_dir_all(&key_dir);
        let d = Self::build(
            name,
            Config {
                auth,
                ..Config::default()
            },
            None,
        );
        (d, key)
    }

    /// `config` with what every function has: no rate limit (API Gateway throttles), no
    /// public URL (the request's) unless personal channels need one, and any host.
    fn with_config(name: &str, config: Config) -> Self {
        // The recorded events carry no identity: one participant stands for it.
        Self::build(name, config, Some("anonymous".into()))
    }

    fn build(name: &str, config: Config, default_participant: Option<String>) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "harness-lambda-events-{name}-{}",
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir).expect("create the store directory");
        let store = EmbeddedStore::open(&dir).expect("open the embedded store");
        let public_url = match config.personal_channels {
            Some(_) => "https://harness.example".into(),
            None => String::new(),
        };
        let config = Config {
            public_url,
            // As `lambda::config_from_env`: the Host is API Gateway's, which routes by it.
            allowed_hosts: common::config::hosts::AllowedHosts::Any,
            rate_limit_per_minute: 0,
            default_participant,
            push_key: Some(common::sealing::PushKey::generate()),
            ..config
        };
        let harness =
            Harness::new(Arc::new(store), agent::conformance(), config).expect("build the harness");
        Deployment { harness, dir }
    }

    /// Invokes the buffered function serving `endpoint` (as `lambda_http::run` does) and
    /// returns the response JSON the runtime would post back.
    async fn invoke(&self, endpoint: Endpoint, event: LambdaRequest) -> Value {
        let function = Adapter::from(router(self.harness.clone(), endpoint));
        let response = function
            .oneshot(LambdaEvent::new(event, Context::default()))
            .await
            .expect("the router never fails");
        serde_json::to_value(&response).expect("a LambdaResponse serialises")
    }

    /// Invokes the streaming function serving `endpoint` (as
    /// `lambda_http::run_with_streaming_response` does): the metadata prelude as the
    /// runtime sends it, and the body stream.
    async fn invoke_streaming(
        &self,
        endpoint: Endpoint,
        event: LambdaRequest,
    ) -> (
        Value,
        impl Stream<Item = Result<Bytes, axum::Error>> + Unpin,
    ) {
        let function = StreamAdapter::from(router(self.harness.clone(), endpoint));
        let response = function
            .oneshot(LambdaEvent::new(event, Context::default()))
            .await
            .expect("the router never fails");
        let mut prelude = response.metadata_prelude;
        // The runtime's default, added before it serialises the prelude.
        prelude
            .headers
            .entry(http::header::CONTENT_TYPE)
            .or_insert(http::HeaderValue::from_static("application/octet-stream"));
        let prelude = serde_json::to_value(&prelude).expect("the prelude serialises");
        (prelude, response.stream)
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn fixture_text(name: &str) -> String {
    let path = fixture_path(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
}

/// The fixture as the event Lambda delivers.
fn event(name: &str) -> LambdaRequest {
    parse_event(name, &fixture_text(name))
}

/// The fixture with `Authorization: <value>` added to its headers.
fn event_with_authorization(name: &str, value: &str) -> LambdaRequest {
    let mut v: Value = serde_json::from_str(&fixture_text(name)).expect("a JSON fixture");
    v["headers"]["authorization"] = Value::String(value.to_owned());
    parse_event(name, &v.to_string())
}

/// The fixture naming `task_id` instead of the captured one.
fn event_for_task(name: &str, task_id: &str) -> LambdaRequest {
    let text = fixture_text(name);
    assert!(
        text.contains(CAPTURED_TASK_ID),
        "fixture {name} names no task"
    );
    parse_event(name, &text.replace(CAPTURED_TASK_ID, task_id))
}

fn parse_event(name: &str, text: &str) -> LambdaRequest {
    let event: LambdaRequest = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("fixture {name} is not a lambda_http event: {e}"));
    assert!(
        matches!(event, LambdaRequest::ApiGatewayV2(_)),
        "fixture {name} must read as an HTTP API / Function URL (2.0) event, not {event:?}"
    );
    event
}

fn header<'a>(response: &'a Value, name: &str) -> &'a str {
    response["headers"][name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} header in {response:#}"))
}

/// The JSON body of a buffered response, which must be text (not base64).
fn json_body(response: &Value) -> Value {
    assert_eq!(
        response["isBase64Encoded"], false,
        "a JSON body goes back as text: {response:#}"
    );
    let body = response["body"]
        .as_str()
        .unwrap_or_else(|| panic!("no body in {response:#}"));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {body}"))
}

/// Asserts a 200 `application/json` response and returns its body.
fn ok_json(response: &Value) -> Value {
    assert_eq!(response["statusCode"], 200, "{response:#}");
    assert_eq!(header(response, "content-type"), "application/json");
    json_body(response)
}

fn state(task: &Value) -> &str {
    task["status"]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("no status.state in {task:#}"))
}

/// Sends the message of `fixture` through the send-message function; the task it made.
async fn send(d: &Deployment, fixture: &str) -> Value {
    let response = d
        .invoke(Endpoint::Rest(Operation::SendMessage), event(fixture))
        .await;
    let body = ok_json(&response);
    body["task"].clone()
}

fn task_id(task: &Value) -> String {
    task["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id in {task:#}"))
        .to_owned()
}

/// One SSE event: its data, parsed, and how many body chunks had arrived when it was
/// complete.
#[derive(Debug)]
struct Frame {
    data: Value,
    chunks_so_far: usize,
}

/// Reads the body chunk by chunk until it ends, splitting it into SSE events (keep-alive
/// comments and ids skipped). Every event must be a `data:` event.
async fn read_frames(
    mut body: impl Stream<Item = Result<Bytes, axum::Error>> + Unpin,
) -> Vec<Frame> {
    let read = async {
        let mut frames = Vec::new();
        let mut pending = String::new();
        let mut chunks = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.expect("the body stream must not fail");
            chunks += 1;
            pending.push_str(std::str::from_utf8(&chunk).expect("SSE is UTF-8"));
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                let mut data = String::new();
                for line in event.lines() {
                    if let Some(d) = line.strip_prefix("data:") {
                        data.push_str(d.strip_prefix(' ').unwrap_or(d));
                    } else if line.starts_with("id:") {
                        // where a client resumes (Last-Event-ID): tests/e2e/stream_resume.rs
                    } else if line.is_empty() || line.starts_with(':') {
                        // the blank line ending the event, or a keep-alive comment
                    } else {
                        panic!("unexpected SSE line {line:?} in event {event:?}");
                    }
                }
                if !data.is_empty() {
                    let data = serde_json::from_str(&data)
                        .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {data}"));
                    frames.push(Frame {
                        data,
                        chunks_so_far: chunks,
                    });
                }
            }
        }
        assert!(
            pending.trim().is_empty(),
            "unterminated SSE event {pending:?}"
        );
        frames
    };
    tokio::time::timeout(STREAM_DEADLINE, read)
        .await
        .expect("the stream must end once the task is done")
}

/// Reads the whole body of a streaming function that answered with a single JSON document.
async fn read_all(mut body: impl Stream<Item = Result<Bytes, axum::Error>> + Unpin) -> Value {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        bytes.extend_from_slice(&chunk.expect("the body stream must not fail"));
    }
    serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "body is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// The StreamResponse payloads of a stream, in order: `("task" | "statusUpdate" |
/// "artifactUpdate" | "message", value)`.
fn payloads(stream_responses: impl Iterator<Item = Value>) -> Vec<(String, Value)> {
    stream_responses
        .map(|r| {
            let obj = r
                .as_object()
                .unwrap_or_else(|| panic!("not an object: {r}"));
            assert_eq!(obj.len(), 1, "a StreamResponse has exactly one member: {r}");
            let (k, v) = obj.iter().next().unwrap();
            (k.clone(), v.clone())
        })
        .collect()
}

/// Asserts the A2A shape of a stream for a task the conformance agent runs to completion
/// with a text artifact: a Task first, then updates of that task, ending COMPLETED.
fn assert_streamed_to_completion(events: &[(String, Value)]) -> String {
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert!(events.len() >= 3, "too few events: {kinds:?}");
    assert_eq!(kinds[0], "task", "the first event is the Task: {kinds:?}");
    let id = task_id(&events[0].1);
    for (kind, v) in &events[1..] {
        assert!(
            kind == "statusUpdate" || kind == "artifactUpdate",
            "after the Task come updates, not {kind}: {kinds:?}"
        );
        assert_eq!(v["taskId"], id.as_str(), "an update of another task: {v:#}");
    }
    assert!(
        kinds.contains(&"artifactUpdate"),
        "the text artifact is streamed: {kinds:?}"
    );
    let (last_kind, last) = events.last().unwrap();
    assert_eq!(
        last_kind, "statusUpdate",
        "the stream ends on a status: {kinds:?}"
    );
    assert_eq!(state(last), "TASK_STATE_COMPLETED", "{last:#}");
    id
}

fn assert_sse_prelude(prelude: &Value) {
    assert_eq!(prelude["statusCode"], 200, "{prelude:#}");
    assert_eq!(
        prelude["headers"]["content-type"], "text/event-stream",
        "{prelude:#}"
    );
    assert_eq!(
        prelude["headers"]["cache-control"], "no-store",
        "{prelude:#}"
    );
    assert_eq!(prelude["cookies"], serde_json::json!([]), "{prelude:#}");
}

// ---------------------------------------------------------------------------------------
// buffered functions behind the HTTP API
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn send_message_through_the_http_api_answers_the_completed_task() {
    let d = Deployment::new("send");
    let response = d
        .invoke(
            Endpoint::Rest(Operation::SendMessage),
            event("apigw-v2-post-message-send.json"),
        )
        .await;
    assert!(
        response.get("multiValueHeaders").is_none()
            || response["multiValueHeaders"] == serde_json::json!({}),
        "HTTP API takes single-value headers: {response:#}"
    );
    let body = ok_json(&response);
    let task = &body["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{body:#}");
    assert!(
        body.get("message").is_none(),
        "a task, not a message: {body:#}"
    );
    let history = task["history"]
        .as_array()
        .expect("the task has its history");
    assert!(
        history
            .iter()
            .any(|m| m["messageId"] == "tck-complete-task-5d1f0e7a"),
        "the client's message is in the history: {task:#}"
    );
}

#[tokio::test]
async fn get_task_through_the_http_api_honours_history_length() {
    let d = Deployment::new("get");
    let id = task_id(&send(&d, "apigw-v2-post-message-send.json").await);
    let response = d
        .invoke(
            Endpoint::Rest(Operation::GetTask),
            event_for_task("apigw-v2-get-task.json", &id),
        )
        .await;
    let task = ok_json(&response);
    assert_eq!(task["id"], id.as_str());
    assert_eq!(state(&task), "TASK_STATE_COMPLETED");
    let history = task["history"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(history, 1, "?historyLength=1 keeps one message: {task:#}");
}

#[tokio::test]
async fn list_tasks_through_the_http_api_lists_every_task() {
    let d = Deployment::new("list");
    let first = task_id(&send(&d, "apigw-v2-post-message-send.json").await);
    let second = task_id(&send(&d, "apigw-v2-post-message-send-input-required.json").await);
    let response = d
        .invoke(
            Endpoint::Rest(Operation::ListTasks),
            event("apigw-v2-get-list-tasks.json"),
        )
        .await;
    let body = ok_json(&response);
    let ids: Vec<&str> = body["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no tasks in {body:#}"))
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{body:#}");
    assert!(
        ids.contains(&first.as_str()) && ids.contains(&second.as_str()),
        "{body:#}"
    );
    assert_eq!(body["totalSize"], 2, "{body:#}");
}

/// With `HARNESS_AUTH=none` a function counts refusals against the address API Gateway
/// saw as well as the id a request names (issue 48, item 5): 150 messages to a task, each
/// from a new id, all from one source address, keep at most the hour's quota of audit rows.
#[tokio::test]
async fn refusals_from_one_source_address_keep_at_most_the_quota_of_audit_rows() {
    use common::store::AUDIT_ROWS_PER_PARTICIPANT_HOUR as QUOTA;
    let d = Deployment::new("audit-peer");
    let id = task_id(&send(&d, "apigw-v2-post-message-send-input-required.json").await);
    let name = "apigw-v2-post-message-send.json";
    for i in 0..QUOTA + 50 {
        let mut v: Value = serde_json::from_str(&fixture_text(name)).expect("a JSON fixture");
        v["headers"]["x-participant-id"] = format!("rotated-{i}").into();
        v["body"] = serde_json::json!({"message": {"messageId": format!("m-{i}"), "taskId": id,
            "role": "ROLE_USER", "parts": [{"text": "let me in"}]}})
        .to_string()
        .into();
        v["isBase64Encoded"] = false.into();
        let event = parse_event(name, &v.to_string());
        let response = d
            .invoke(Endpoint::Rest(Operation::SendMessage), event)
            .await;
        assert_eq!(response["statusCode"], 404, "{response:#}");
    }
    let trail = d.harness.store().audit_trail(&id).await.expect("the trail");
    assert!(trail.iter().all(|r| r.peer == "203.0.113.24"), "{trail:#?}");
    let mut per_hour = std::collections::BTreeMap::<i64, u64>::new();
    for r in &trail {
        *per_hour.entry(r.quota_hour()).or_default() += 1;
    }
    assert!(per_hour.values().all(|n| *n <= QUOTA), "{per_hour:?}");
    assert!(per_hour.values().any(|n| *n == QUOTA), "{per_hour:?}");
}

#[tokio::test]
async fn cancel_task_routed_as_post_tasks_id_cancels_the_task() {
    let d = Deployment::new("cancel");
    let task = send(&d, "apigw-v2-post-message-send-input-required.json").await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    let id = task_id(&task);
    let response = d
        .invoke(
            Endpoint::Rest(Operation::CancelTask),
            event_for_task("apigw-v2-post-cancel-task.json", &id),
        )
        .await;
    let canceled = ok_json(&response);
    assert_eq!(canceled["id"], id.as_str());
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled:#}");
}

#[tokio::test]
async fn cancel_task_refuses_a_subscribe_that_its_route_also_catches() {
    let d = Deployment::new("cancel-subscribe");
    let id = task_id(&send(&d, "apigw-v2-post-message-send-input-required.json").await);
    // `POST /tasks/{id}` also matches `POST /tasks/<id>:subscribe`.
    let response = d
        .invoke(
            Endpoint::Rest(Operation::CancelTask),
            event_for_task("apigw-v2-post-task-subscribe.json", &id),
        )
        .await;
    assert_eq!(response["statusCode"], 404, "{response:#}");
    let get = d
        .invoke(
            Endpoint::Rest(Operation::GetTask),
            event_for_task("apigw-v2-get-task.json", &id),
        )
        .await;
    assert_eq!(
        state(&ok_json(&get)),
        "TASK_STATE_INPUT_REQUIRED",
        "the task must not have been canceled"
    );
}

#[tokio::test]
async fn get_task_refuses_a_subscribe_that_its_route_also_catches() {
    let d = Deployment::new("get-subscribe");
    let id = task_id(&send(&d, "apigw-v2-post-message-send-input-required.json").await);
    // `GET /tasks/{id}` also matches `GET /tasks/<id>:subscribe`: not a task id.
    let response = d
        .invoke(
            Endpoint::Rest(Operation::GetTask),
            event_for_task("apigw-v2-get-task-subscribe.json", &id),
        )
        .await;
    assert_eq!(response["statusCode"], 404, "{response:#}");
    let body = json_body(&response);
    assert_eq!(body["error"]["status"], "NOT_FOUND", "{body:#}");
}

#[tokio::test]
async fn a_function_answers_404_for_another_operations_path() {
    let d = Deployment::new("misrouted");
    let response = d
        .invoke(
            Endpoint::Rest(Operation::GetTask),
            event("apigw-v2-post-message-send.json"),
        )
        .await;
    assert_eq!(response["statusCode"], 404, "{response:#}");
    assert_eq!(header(&response, "content-type"), "application/json");
    let body = json_body(&response);
    assert_eq!(body["error"]["code"], 404, "{body:#}");
    assert_eq!(body["error"]["status"], "NOT_FOUND", "{body:#}");
    // And nothing was sent: the message made no task.
    let list = d
        .invoke(
            Endpoint::Rest(Operation::ListTasks),
            event("apigw-v2-get-list-tasks.json"),
        )
        .await;
    assert_eq!(ok_json(&list)["tasks"], serde_json::json!([]));
}

fn interfaces(card: &Value) -> Vec<(String, String)> {
    card["supportedInterfaces"]
        .as_array()
        .unwrap_or_else(|| panic!("no supportedInterfaces in {card:#}"))
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap_or("").to_owned(),
                i["url"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_agent_card_names_the_front_door_it_was_called_through_for_both_bindings() {
    // As the template configures it: no public URL, no separate JSON-RPC URL.
    let d = Deployment::new("card");
    let response = d
        .invoke(
            Endpoint::AgentCard,
            event("apigw-v2-get-agent-card-via-cloudfront.json"),
        )
        .await;
    let card = ok_json(&response);
    // Derived from the request's headers: the requester's own, in no shared cache.
    assert!(header(&response, "cache-control").starts_with("private, max-age="));
    assert!(!header(&response, "etag").is_empty());
    assert!(!header(&response, "last-modified").is_empty());
    assert!(
        header(&response, "vary").contains("X-Forwarded-Host"),
        "a card derived from headers varies by them"
    );
    // The front door's viewer-request function passes the client's Host on as
    // X-Forwarded-Host; the event's own Host is the HTTP API behind it.
    let front = "https://d111111abcdef8.cloudfront.net".to_owned();
    assert_eq!(
        interfaces(&card),
        [
            ("JSONRPC".to_owned(), front.clone()),
            ("HTTP+JSON".to_owned(), front)
        ]
    );
    // Called on the HTTP API directly, the card names the URL it was called through.
    let direct = ok_json(
        &d.invoke(Endpoint::AgentCard, event("apigw-v2-get-agent-card.json"))
            .await,
    );
    let api = format!("https://{HTTP_API_HOST}");
    assert!(
        interfaces(&direct).iter().all(|(_, url)| *url == api),
        "{direct:#}"
    );
    // Only the card: an A2A operation is another function's.
    let other = d
        .invoke(Endpoint::AgentCard, event("apigw-v2-get-task.json"))
        .await;
    assert_eq!(other["statusCode"], 404, "{other:#}");
}

#[tokio::test]
async fn a_base64_encoded_body_is_decoded_before_the_router_reads_it() {
    let d = Deployment::new("base64");
    let response = d
        .invoke(
            Endpoint::Rest(Operation::SendMessage),
            event("apigw-v2-post-message-send-base64.json"),
        )
        .await;
    let body = ok_json(&response);
    let task = &body["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{body:#}");
    let artifacts = task["artifacts"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(
        artifacts, 1,
        "tck-artifact-text makes one artifact: {task:#}"
    );
}

#[tokio::test]
async fn a_tenant_prefixed_path_scopes_the_task_to_its_tenant() {
    let d = Deployment::new("tenant");
    let task = send(&d, "apigw-v2-post-tenant-message-send.json").await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED");
    let id = task_id(&task);
    let response = d
        .invoke(
            Endpoint::Rest(Operation::GetTask),
            event_for_task("apigw-v2-get-tenant-task.json", &id),
        )
        .await;
    assert_eq!(ok_json(&response)["id"], id.as_str());
    // Without the tenant the task does not exist.
    let untenanted = d
        .invoke(
            Endpoint::Rest(Operation::GetTask),
            event_for_task("apigw-v2-get-task.json", &id),
        )
        .await;
    assert_eq!(untenanted["statusCode"], 404, "{untenanted:#}");
    assert_eq!(json_body(&untenanted)["error"]["status"], "NOT_FOUND");
}

// ---------------------------------------------------------------------------------------
// streaming functions behind Function URLs
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn json_rpc_send_message_over_a_function_url_answers_one_json_document() {
    let d = Deployment::new("rpc-send");
    let (prelude, body) = d
        .invoke_streaming(
            Endpoint::JsonRpc,
            event("function-url-post-jsonrpc-send-message.json"),
        )
        .await;
    assert_eq!(prelude["statusCode"], 200, "{prelude:#}");
    assert_eq!(
        prelude["headers"]["content-type"], "application/json",
        "{prelude:#}"
    );
    let reply = read_all(body).await;
    assert_eq!(reply["jsonrpc"], "2.0", "{reply:#}");
    assert_eq!(reply["id"], "rpc-send-1", "{reply:#}");
    assert!(reply.get("error").is_none(), "{reply:#}");
    assert_eq!(
        state(&reply["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{reply:#}"
    );
}

#[tokio::test]
async fn json_rpc_send_streaming_message_over_a_function_url_streams_the_task() {
    let d = Deployment::new("rpc-stream");
    let (prelude, body) = d
        .invoke_streaming(
            Endpoint::JsonRpc,
            event("function-url-post-jsonrpc-send-streaming-message.json"),
        )
        .await;
    assert_sse_prelude(&prelude);
    let frames = read_frames(body).await;
    assert_eq!(
        frames.first().map(|f| f.chunks_so_far),
        Some(1),
        "the first event is a chunk of its own: {frames:#?}"
    );
    for f in &frames {
        assert_eq!(f.data["jsonrpc"], "2.0", "{:#}", f.data);
        assert_eq!(
            f.data["id"], 7,
            "every frame carries the request id: {:#}",
            f.data
        );
        assert!(f.data.get("error").is_none(), "{:#}", f.data);
    }
    let events = payloads(frames.iter().map(|f| f.data["result"].clone()));
    let id = assert_streamed_to_completion(&events);
    let history = events[0].1["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        history
            .iter()
            .any(|m| m["messageId"] == "tck-stream-001-8e4f1c"),
        "the Task carries the client's message: {:#}",
        events[0].1
    );
    // The task is stored: the buffered get-task function sees it completed.
    let get = d
        .invoke(
            Endpoint::Rest(Operation::GetTask),
            event_for_task("apigw-v2-get-task.json", &id),
        )
        .await;
    assert_eq!(state(&ok_json(&get)), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn send_streaming_message_over_a_function_url_streams_rest_frames() {
    let d = Deployment::new("rest-stream");
    let (prelude, body) = d
        .invoke_streaming(
            Endpoint::Rest(Operation::SendStreamingMessage),
            event("function-url-post-message-stream.json"),
        )
        .await;
    assert_sse_prelude(&prelude);
    let frames = read_frames(body).await;
    assert_eq!(
        frames.first().map(|f| f.chunks_so_far),
        Some(1),
        "{frames:#?}"
    );
    let events = payloads(frames.into_iter().map(|f| f.data));
    assert_streamed_to_completion(&events);
}

#[tokio::test]
async fn subscribe_to_task_over_a_function_url_follows_the_task_to_its_end() {
    let d = Deployment::new("subscribe");
    // A slow task, answered at once (returnImmediately) while the agent still works.
    let task = send(&d, "apigw-v2-post-message-send-slow.json").await;
    assert!(
        !matches!(state(&task), "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED"),
        "{task:#}"
    );
    let id = task_id(&task);
    let (prelude, body) = d
        .invoke_streaming(
            Endpoint::Rest(Operation::SubscribeToTask),
            event_for_task("function-url-get-subscribe.json", &id),
        )
        .await;
    assert_sse_prelude(&prelude);
    let frames = read_frames(body).await;
    assert_eq!(
        frames.first().map(|f| f.chunks_so_far),
        Some(1),
        "{frames:#?}"
    );
    let events = payloads(frames.into_iter().map(|f| f.data));
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds.first(),
        Some(&"task"),
        "the current Task first: {kinds:?}"
    );
    assert_eq!(task_id(&events[0].1), id);
    let (last_kind, last) = events.last().unwrap();
    assert_eq!(last_kind, "statusUpdate", "{kinds:?}");
    assert_eq!(last["taskId"], id.as_str());
    assert_eq!(state(last), "TASK_STATE_COMPLETED", "{last:#}");
}

#[tokio::test]
async fn subscribe_to_a_finished_task_over_a_function_url_is_an_error_not_a_stream() {
    let d = Deployment::new("subscribe-done");
    let id = task_id(&send(&d, "apigw-v2-post-message-send.json").await);
    let (prelude, body) = d
        .invoke_streaming(
            Endpoint::Rest(Operation::SubscribeToTask),
            event_for_task("function-url-get-subscribe.json", &id),
        )
        .await;
    assert_eq!(prelude["statusCode"], 400, "{prelude:#}");
    assert_eq!(
        prelude["headers"]["content-type"], "application/json",
        "{prelude:#}"
    );
    let body = read_all(body).await;
    assert_eq!(body["error"]["status"], "FAILED_PRECONDITION", "{body:#}");
}

#[tokio::test]
async fn every_fixture_is_an_http_api_or_function_url_event() {
    let dir = fixture_path("");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fixtures exists") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // The resume function's stream events are checked by resume_events.rs.
        if !name.ends_with(".json") || name.starts_with("dynamodb-stream-") {
            continue;
        }
        seen += 1;
        let raw: Value = serde_json::from_str(&fixture_text(&name)).unwrap();
        assert_eq!(raw["version"], "2.0", "{name}");
        let host = raw["requestContext"]["domainName"].as_str().unwrap_or("");
        if name.starts_with("apigw-v2-") {
            assert!(
                host.ends_with(".execute-api.us-east-1.amazonaws.com"),
                "{name}"
            );
            assert_ne!(
                raw["routeKey"], "$default",
                "{name}: HTTP API routes are explicit"
            );
        } else if name.starts_with("function-url-") {
            assert!(host.ends_with(".lambda-url.us-east-1.on.aws"), "{name}");
            assert_eq!(raw["routeKey"], "$default", "{name}");
        } else {
            panic!("fixture {name} is named for neither event source");
        }
        assert_eq!(
            raw["rawPath"], raw["requestContext"]["http"]["path"],
            "{name}"
        );
        assert_eq!(raw["headers"]["a2a-version"], "1.0", "{name}");
        // lambda_http turns it into the request the client sent.
        let request = lambda_http::request::from_str(&fixture_text(&name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            request.method().as_str(),
            raw["requestContext"]["http"]["method"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            request.uri().path(),
            raw["rawPath"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(request.uri().host(), Some(host), "{name}");
        if let Some(len) = raw["headers"]["content-length"].as_str() {
            let body: &[u8] = request.body().as_ref();
            assert_eq!(body.len().to_string(), len, "{name}: content-length");
        }
    }
    assert!(seen >= 10, "only {seen} fixtures in {}", dir.display());
}

/// With `HARNESS_AUTH=jwt`, a function checks the token itself, behind the HTTP API and on
/// a Function URL alike: an event without one is refused with 401 and a challenge before
/// anything is stored; with one, it is its bearer's.
#[tokio::test]
async fn a_verifying_function_refuses_events_without_a_token_and_serves_its_bearer() {
    let (d, key) = Deployment::verified("jwt");
    let hour = Duration::from_secs(3600);
    let token = key
        .mint("alice", "sub", "https://idp.example", "tiny-harness", hour)
        .expect("a token");
    let bearer = format!("Bearer {token}");

    let refused = d
        .invoke(
            Endpoint::Rest(Operation::SendMessage),
            event("apigw-v2-post-message-send.json"),
        )
        .await;
    assert_eq!(refused["statusCode"], 401, "{refused:#}");
    assert_eq!(
        header(&refused, "www-authenticate"),
        "Bearer realm=\"tiny-harness\""
    );
    assert_eq!(json_body(&refused)["error"]["status"], "UNAUTHENTICATED");
    let sent = d
        .invoke(
            Endpoint::Rest(Operation::SendMessage),
            event_with_authorization("apigw-v2-post-message-send.json", &bearer),
        )
        .await;
    let task = &ok_json(&sent)["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{sent:#}");
    let people = &task["metadata"]["io.github.madarauchiha-314.tiny-harness/task"]["participants"];
    assert_eq!(people[0]["id"], "alice", "{task:#}");

    let fixture = "function-url-post-jsonrpc-send-message.json";
    let (prelude, body) = d.invoke_streaming(Endpoint::JsonRpc, event(fixture)).await;
    assert_eq!(prelude["statusCode"], 401, "{prelude:#}");
    assert!(prelude["headers"]["www-authenticate"]
        .as_str()
        .is_some_and(|c| c.starts_with("Bearer")));
    assert_eq!(read_all(body).await["error"]["code"], -32000);
    let (prelude, body) = d
        .invoke_streaming(
            Endpoint::JsonRpc,
            event_with_authorization(fixture, &bearer),
        )
        .await;
    assert_eq!(prelude["statusCode"], 200, "{prelude:#}");
    assert_eq!(
        state(&read_all(body).await["result"]["task"]),
        "TASK_STATE_COMPLETED"
    );
}

/// A personal channel's answer link POSTs to `/ui/answer`: on AWS the route goes to the
/// send-message function (which may write tasks), not to the agent-card function that
/// serves the page. Its answer here, to a forged token, shows which function takes it.
#[tokio::test]
async fn the_answer_link_is_taken_by_the_send_message_function() {
    let mut v: Value =
        serde_json::from_str(&fixture_text("apigw-v2-get-agent-card.json")).expect("JSON");
    for (at, value) in [
        ("/routeKey", "POST /ui/answer"),
        ("/rawPath", "/ui/answer"),
        ("/requestContext/routeKey", "POST /ui/answer"),
        ("/requestContext/http/method", "POST"),
        ("/requestContext/http/path", "/ui/answer"),
        ("/headers/content-type", "application/json"),
        ("/body", r#"{"token": "forged.token", "text": "Blue"}"#),
    ] {
        let (parent, key) = at.rsplit_once('/').expect("a pointer");
        v.pointer_mut(if parent.is_empty() { "" } else { parent })
            .and_then(Value::as_object_mut)
            .expect("an object")
            .insert(key.to_owned(), value.into());
    }
    let answer = || parse_event("answer", &v.to_string());
    let d = Deployment::with_config(
        "answer",
        Config {
            personal_channels: Some(common::config::Source::Text {
                origin: "a test".into(),
                text: "[bob]\nurl = \"https://hooks.example/bob\"\n".into(),
            }),
            ..Config::default()
        },
    );
    let taken = d
        .invoke(Endpoint::Rest(Operation::SendMessage), answer())
        .await;
    assert_eq!(taken["statusCode"], 403, "{taken:#}");
    assert_eq!(
        json_body(&taken),
        serde_json::json!({"error": "this answer link is not valid"})
    );
    let card = d.invoke(Endpoint::AgentCard, answer()).await;
    assert_ne!(card["statusCode"], 403, "{card:#}");
    assert_ne!(card["statusCode"], 200, "{card:#}");
}
