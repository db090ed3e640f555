//! End-to-end test harness for `harness-local`: a [`Server`] fixture that starts the
//! binary on a free port over a private state directory (removed at drop), and helpers to
//! speak both A2A bindings to it — JSON-RPC calls, REST calls, SSE streams — plus the
//! assertions on the spec's error shapes that every test file shares. [`participants`]
//! holds what the tests of participants and help requests share: a scripted model and
//! calls made as a participant.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Method, Response};
use serde_json::{json, Value};

/// The push key the servers on DynamoDB seal webhook secrets with (bytes 0..32): a shared
/// table needs the key given; the embedded store keeps its own in its state directory.
pub const TEST_PUSH_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

pub mod grpc;
pub mod identity;
pub mod participants;
pub mod webhook;

/// How long an SSE stream may stay open before a test gives up on it.
pub const STREAM_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the server may take to print its first line.
const START_TIMEOUT: Duration = Duration::from_secs(15);

pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
/// An extension URI the card advertises (usable with `--required-extensions`).
pub const TASK_EXTENSION: &str = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1";
pub const CHANNEL_EXTENSION: &str =
    "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/channel/v1";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A unique string for ids and directory names: `<prefix>-<pid>-<counter>-<nanos>`.
pub fn unique(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{n}-{nanos}", std::process::id())
}

/// The `harness-local` binary: `$HARNESS_BIN`, else `$CARGO_TARGET_DIR/debug/harness-local`
/// (CARGO_TARGET_DIR defaulting to `$HOME/.cache/harness/target`), else next to the test
/// executable's `deps` directory.
pub fn server_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("HARNESS_BIN") {
        return PathBuf::from(bin);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/harness/target")));
    if let Some(t) = target {
        let bin = t.join("debug").join("harness-local");
        if bin.exists() {
            return bin;
        }
    }
    let exe = std::env::current_exe().expect("current_exe");
    // target/debug/deps/<test> → target/debug/harness-local
    let debug = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable has no target/debug/deps parent");
    let bin = debug.join("harness-local");
    assert!(
        bin.exists(),
        "harness-local not found at {}; run `cargo build -p harness-local` or set HARNESS_BIN",
        bin.display()
    );
    bin
}

/// The default participant the test servers are started with: who a request without an
/// identity stands for.
pub const ANONYMOUS: &str = "anonymous";
/// Give to [`Server::start_with`] for a server with no default participant (fail closed).
pub const FAIL_CLOSED: &str = "<fail-closed>";

/// Where a test server keeps its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store in the server's state directory.
    Embedded,
    /// A fresh table on the DynamoDB Local that `tests/run` starts.
    DynamoDb,
}

/// A client for the test DynamoDB Local, or None (with a note) when none is configured;
/// `HARNESS_TEST_REQUIRE_DYNAMODB` makes a missing one an error.
pub fn dynamo_client() -> Option<aws_sdk_dynamodb::Client> {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let Ok(endpoint) = std::env::var("HARNESS_TEST_DYNAMODB_ENDPOINT") else {
        assert!(
            std::env::var_os("HARNESS_TEST_REQUIRE_DYNAMODB").is_none(),
            "HARNESS_TEST_DYNAMODB_ENDPOINT is not set but DynamoDB tests are required"
        );
        eprintln!("skipped: set HARNESS_TEST_DYNAMODB_ENDPOINT (tests/run starts DynamoDB Local)");
        return None;
    };
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(common::https::sdk_http_client())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "static"))
        .build();
    Some(aws_sdk_dynamodb::Client::from_conf(config))
}

/// A new table on DynamoDB Local, created from the definition `template.yaml` deploys,
/// without its stream: nothing here reads it (the `cargo lambda watch` suite makes its own
/// table with one), and DynamoDB Local keeps every stream record of every table for the
/// whole run, making each later write slower: by the chaos test, 330 ms a put on a table
/// with a stream against 3.4 ms on one without.
pub async fn fresh_table(client: &aws_sdk_dynamodb::Client) -> String {
    let path = std::env::var("HARNESS_TEST_TABLE_DEFINITION").expect(
        "HARNESS_TEST_TABLE_DEFINITION names the table definition taken from template.yaml",
    );
    let text = std::fs::read_to_string(&path).expect("table definition file");
    let mut definition: Value = serde_json::from_str(&text).expect("table definition is JSON");
    definition
        .as_object_mut()
        .map(|d| d.remove("StreamSpecification"));
    let table = unique("harness-e2e");
    common::store::DynamoStore::create_table(client, &table, &definition)
        .await
        .expect("create table");
    table
}

/// harness-local's exit and what it printed, for a start that must fail: None for the
/// exit when it was still running after [`START_TIMEOUT`] (it served), and is killed.
pub fn start_refused(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut child = Command::new(server_binary())
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("HARNESS_PUSH_KEY")
        .env_remove("HARNESS_TABLE")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run harness-local");
    let deadline = Instant::now() + START_TIMEOUT;
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("harness-local's output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// One running `harness-local`. Drop kills it (SIGKILL) and removes its state directory.
pub struct Server {
    child: Option<Child>,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: Option<BufReader<ChildStdout>>,
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub url: String,
    pub state_dir: PathBuf,
    args: Vec<String>,
    pub http: reqwest::Client,
    /// The DynamoDB table the server keeps its state in, if not the embedded store.
    pub table: Option<String>,
    /// Environment variables the server process gets besides the test's own.
    env: Vec<(String, String)>,
}

impl Server {
    /// A server with default settings (no rate limit).
    pub async fn start() -> Server {
        Server::start_with(&[]).await
    }

    /// A server with extra command-line arguments (`--max-body-bytes 2048`, …).
    pub async fn start_with(extra: &[&str]) -> Server {
        Server::start_on(Backend::Embedded, extra)
            .await
            .expect("the embedded store is always there")
    }

    /// A server on `backend`; None when it is DynamoDB and no DynamoDB Local is configured
    /// (allowed only outside `tests/run`).
    pub async fn start_on(backend: Backend, extra: &[&str]) -> Option<Server> {
        Server::start_on_env(backend, extra, &[]).await
    }

    /// [`Server::start_on`] with environment variables for the server process (its
    /// `RUST_LOG`, say).
    pub async fn start_on_env(
        backend: Backend,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Option<Server> {
        let table = match backend {
            Backend::Embedded => None,
            Backend::DynamoDb => Some(fresh_table(&dynamo_client()?).await),
        };
        let state_dir = std::env::temp_dir().join(unique("harness-e2e"));
        std::fs::create_dir_all(&state_dir).expect("create state dir");
        let mut args: Vec<String> = Vec::new();
        // These tests drive the conformance agent unless they name another.
        if !extra.contains(&"--agent") {
            args.extend(["--agent".to_owned(), "conformance".to_owned()]);
        }
        // They send no identity unless they test identity: `anonymous` stands for it.
        // `FAIL_CLOSED` (not passed on) starts the server as deployed, without a default.
        let fail_closed = extra.contains(&FAIL_CLOSED);
        if !fail_closed && !extra.contains(&"--default-participant") {
            args.extend(["--default-participant".to_owned(), ANONYMOUS.to_owned()]);
        }
        args.extend(
            extra
                .iter()
                .filter(|a| **a != FAIL_CLOSED)
                .map(|s| s.to_string()),
        );
        let mut server = Server {
            child: None,
            _stdout: None,
            url: String::new(),
            state_dir,
            args,
            http: common::https::client_builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("reqwest client"),
            table,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        server.spawn().await;
        Some(server)
    }

    /// What the server stored, read directly: its embedded store (shared safely with
    /// the running process) or its DynamoDB table.
    pub fn store(&self) -> std::sync::Arc<dyn common::store::Store> {
        match (&self.table, dynamo_client()) {
            (Some(table), Some(client)) => {
                std::sync::Arc::new(common::store::DynamoStore::new(client, table.clone()))
            }
            _ => std::sync::Arc::new(
                common::store::EmbeddedStore::open(&self.state_dir).expect("open the store"),
            ),
        }
    }

    async fn spawn(&mut self) {
        let mut cmd = Command::new(server_binary());
        cmd.arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--state-dir")
            .arg(&self.state_dir)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("HARNESS_PUBLIC_URL")
            .env_remove("HARNESS_TABLE")
            .env_remove("HARNESS_PUSH_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if std::env::var_os("HARNESS_E2E_LOG").is_some() {
                Stdio::inherit()
            } else {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.log_path())
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null())
            });
        if let (Some(table), Ok(endpoint)) =
            (&self.table, std::env::var("HARNESS_TEST_DYNAMODB_ENDPOINT"))
        {
            cmd.arg("--table")
                .arg(table)
                .env("HARNESS_PUSH_KEY", TEST_PUSH_KEY)
                .env("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
                .env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test")
                .env("AWS_REGION", "us-east-1");
        }
        let mut child = cmd.spawn().expect("spawn harness-local");
        let stdout = child.stdout.take().expect("piped stdout");
        let read = tokio::task::spawn_blocking(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let n = reader.read_line(&mut line).unwrap_or(0);
            (n, line, reader)
        });
        let (n, line, reader) = match tokio::time::timeout(START_TIMEOUT, read).await {
            Ok(Ok(r)) => r,
            _ => {
                let _ = child.kill();
                panic!("harness-local printed no first line within {START_TIMEOUT:?}");
            }
        };
        if n == 0 {
            let status = child.wait().ok();
            panic!(
                "harness-local exited before serving (status {status:?}); args {:?}",
                self.args
            );
        }
        // `harness-local serving http://127.0.0.1:PORT (agent card: …)`
        let url = line
            .split_whitespace()
            .skip_while(|w| *w != "serving")
            .nth(1)
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .trim_end_matches('/')
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "first line {line:?}");
        self.url = url;
        self.child = Some(child);
        self._stdout = Some(reader);
    }

    /// A second process on this server's state (its directory, and its table if it has
    /// one), with the same arguments: two harness-local processes sharing one store. Its
    /// log is this server's too.
    pub async fn twin(&self) -> Server {
        let mut twin = Server {
            child: None,
            _stdout: None,
            url: String::new(),
            state_dir: self.state_dir.clone(),
            args: self.args.clone(),
            http: common::https::client_builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("reqwest client"),
            table: self.table.clone(),
            env: self.env.clone(),
        };
        twin.spawn().await;
        twin
    }

    /// Where the server's log (its stderr) is kept, across restarts, unless
    /// `HARNESS_E2E_LOG` passes it through to the test's own stderr.
    pub fn log_path(&self) -> PathBuf {
        self.state_dir.join("server.log")
    }

    /// The server's log so far; None when `HARNESS_E2E_LOG` passes it through instead.
    pub fn log_text(&self) -> Option<String> {
        if std::env::var_os("HARNESS_E2E_LOG").is_some() {
            return None;
        }
        Some(std::fs::read_to_string(self.log_path()).unwrap_or_default())
    }

    /// Kills the process with SIGKILL (no graceful shutdown) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self._stdout = None;
    }

    /// SIGKILLs the server and starts it again on the same state directory (new port).
    pub async fn restart(&mut self) {
        self.kill();
        self.http = common::https::client_builder()
            .pool_max_idle_per_host(0)
            .build()
            .expect("reqwest client");
        self.spawn().await;
    }

    /// SIGKILLs the server and starts it again on the same state with `extra` arguments
    /// added (a flag beats the variable of the same setting).
    pub async fn restart_with(&mut self, extra: &[&str]) {
        self.args.extend(extra.iter().map(|a| a.to_string()));
        self.restart().await;
    }

    /// The server process's id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    // ---------------------------------------------------------------- JSON-RPC

    /// A JSON-RPC request posted to `/` with the 1.0 headers; returns the whole envelope.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let body =
            json!({"jsonrpc": "2.0", "id": unique("req"), "method": method, "params": params});
        let resp = self.rpc_raw(&default_headers(), body.to_string()).await;
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("rpc body");
        assert_eq!(
            status, 200,
            "JSON-RPC {method} answered HTTP {status}: {text}"
        );
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("JSON-RPC {method} answer is not JSON ({e}): {text}"))
    }

    /// The `result` of a call that must succeed.
    pub async fn rpc_ok(&self, method: &str, params: Value) -> Value {
        let resp = self.rpc(method, params.clone()).await;
        assert!(
            resp.get("error").is_none(),
            "{method} {params} failed: {resp}"
        );
        resp.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} answered without result: {resp}"))
    }

    /// The `error` of a call that must fail with `code` (and the ErrorInfo `reason`).
    pub async fn rpc_err(&self, method: &str, params: Value, code: i64, reason: &str) -> Value {
        let resp = self.rpc(method, params.clone()).await;
        assert_rpc_error(&resp, code, reason);
        resp["error"].clone()
    }

    /// Posts `body` as-is to `/` with `headers`.
    pub async fn rpc_raw(&self, headers: &HeaderMap, body: impl Into<reqwest::Body>) -> Response {
        self.http
            .post(self.endpoint("/"))
            .headers(headers.clone())
            .body(body)
            .send()
            .await
            .expect("POST /")
    }

    /// A raw JSON body posted with the default headers, parsed.
    pub async fn rpc_body(&self, body: &str) -> Value {
        let resp = self.rpc_raw(&default_headers(), body.to_owned()).await;
        assert_eq!(resp.status().as_u16(), 200);
        resp.json().await.expect("JSON-RPC answer is JSON")
    }

    /// A streaming JSON-RPC call; returns the request id and the events until close.
    pub async fn rpc_stream(&self, method: &str, params: Value) -> (Value, Vec<SseEvent>) {
        let (id, mut reader) = self.rpc_stream_open(method, params).await;
        let deadline = Instant::now() + STREAM_TIMEOUT;
        let mut events = Vec::new();
        while let Some(e) = reader.next_before(deadline).await {
            events.push(e);
        }
        (id, events)
    }

    /// Starts a streaming JSON-RPC call (panics unless it answers with an event stream).
    pub async fn rpc_stream_open(&self, method: &str, params: Value) -> (Value, SseReader) {
        let id = json!(unique("stream"));
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let resp = self.rpc_raw(&default_headers(), body.to_string()).await;
        (id, SseReader::new(expect_stream(resp, method).await))
    }

    // -------------------------------------------------------------------- REST

    /// Any REST request with the 1.0 headers (and `application/json` when a body is given).
    pub async fn rest(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        let mut req = self
            .http
            .request(method, self.endpoint(path))
            .header("A2A-Version", "1.0");
        if let Some(b) = body {
            req = req
                .header(CONTENT_TYPE, "application/json")
                .body(b.to_string());
        }
        req.send().await.expect("REST request")
    }

    pub async fn rest_raw(
        &self,
        method: Method,
        path: &str,
        headers: &HeaderMap,
        body: impl Into<reqwest::Body>,
    ) -> Response {
        self.http
            .request(method, self.endpoint(path))
            .headers(headers.clone())
            .body(body)
            .send()
            .await
            .expect("REST request")
    }

    /// GET with the 1.0 header; returns the status and the JSON body.
    pub async fn rest_get(&self, path: &str) -> (u16, Value) {
        json_of(self.rest(Method::GET, path, None).await).await
    }

    /// POST a JSON body with the 1.0 header; returns the status and the JSON body.
    pub async fn rest_post(&self, path: &str, body: Value) -> (u16, Value) {
        json_of(self.rest(Method::POST, path, Some(body)).await).await
    }

    pub async fn rest_delete(&self, path: &str) -> (u16, Value) {
        json_of(self.rest(Method::DELETE, path, None).await).await
    }

    /// A REST streaming call (`/message:stream`, `/tasks/{id}:subscribe`): the events
    /// until close; panics unless the answer is an event stream.
    pub async fn rest_stream(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Vec<SseEvent> {
        let resp = self.rest(method.clone(), path, body).await;
        read_sse(expect_stream(resp, &format!("{method} {path}")).await).await
    }

    /// Starts a REST streaming call.
    pub async fn rest_stream_open(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> SseReader {
        let resp = self.rest(method.clone(), path, body).await;
        SseReader::new(expect_stream(resp, &format!("{method} {path}")).await)
    }

    // ------------------------------------------------------------ conveniences

    /// Sends a message over JSON-RPC (blocking) and returns the Task of the answer.
    pub async fn send_task(&self, message_id: &str) -> Value {
        let result = self
            .rpc_ok(
                "SendMessage",
                json!({"message": user_message(message_id, "hello")}),
            )
            .await;
        result
            .get("task")
            .cloned()
            .unwrap_or_else(|| panic!("SendMessage {message_id} returned no task: {result}"))
    }

    /// A new task in INPUT_REQUIRED; returns it.
    pub async fn input_required_task(&self) -> Value {
        let task = self.send_task(&unique("tck-input-required")).await;
        assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
        task
    }

    /// A new COMPLETED task; returns it.
    pub async fn completed_task(&self) -> Value {
        let task = self.send_task(&unique("tck-complete-task")).await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
        task
    }

    /// The agent card, as a client fetches it (no headers).
    pub async fn card(&self) -> Value {
        self.http
            .get(self.endpoint("/.well-known/agent-card.json"))
            .send()
            .await
            .expect("the card answers")
            .json()
            .await
            .expect("the card is JSON")
    }

    pub async fn get_task(&self, id: &str) -> Value {
        self.rpc_ok("GetTask", json!({"id": id})).await
    }

    /// Polls GetTask until the task is in `want`.
    pub async fn wait_for_state(&self, id: &str, want: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let task = self.get_task(id).await;
            if state(&task) == want {
                return task;
            }
            assert!(
                Instant::now() < deadline,
                "task {id} not in {want} within {within:?}: {task}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.state_dir);
    }
}

/// Runs each `scenario(Backend)` as two tests, `<scenario>::embedded` and
/// `<scenario>::dynamodb` (the latter returns at once when no DynamoDB Local is configured
/// and `HARNESS_TEST_REQUIRE_DYNAMODB` is unset).
#[macro_export]
macro_rules! on_both_stores {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn embedded() {
                super::$scenario(harness_e2e::Backend::Embedded).await
            }

            #[tokio::test]
            async fn dynamodb() {
                super::$scenario(harness_e2e::Backend::DynamoDb).await
            }
        }
    )*};
}

/// `A2A-Version: 1.0` and `Content-Type: application/json`.
pub fn default_headers() -> HeaderMap {
    headers(&[("A2A-Version", "1.0"), ("Content-Type", "application/json")])
}

pub fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).expect("header name"),
            HeaderValue::from_str(v).expect("header value"),
        );
    }
    h
}

pub fn content_type(resp: &Response) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// The status and JSON body of a response (panics if the body is not JSON).
pub async fn json_of(resp: Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("HTTP {status} body is not JSON ({e}): {text:?}"));
    (status, v)
}

/// A user message with one text part.
pub fn user_message(message_id: &str, text: &str) -> Value {
    json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A user message continuing task `task_id`.
pub fn reply_message(message_id: &str, task_id: &str, text: &str) -> Value {
    json!({"messageId": message_id, "taskId": task_id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// `task.id` (panics when absent).
pub fn task_id(task: &Value) -> String {
    task["id"]
        .as_str()
        .unwrap_or_else(|| panic!("task without id: {task}"))
        .to_owned()
}

/// The ids of the tasks a ListTasks answer lists (panics if it lists none at all).
pub fn listed_ids(list: &Value) -> Vec<String> {
    list["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("not a ListTasks answer: {list}"))
        .iter()
        .map(task_id)
        .collect()
}

/// `task.status.state` as a string ("" when absent).
pub fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

/// The text of the first part of the task's status message.
/// The user messages in a task's history, in order.
pub fn user_messages(task: &Value) -> Vec<&Value> {
    task["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "ROLE_USER")
        .collect()
}

pub fn status_text(task: &Value) -> &str {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or("")
}

// ------------------------------------------------------------------------ errors

fn check_error_info(details: &Value, reason: &str, context: &Value) {
    let arr = details
        .as_array()
        .unwrap_or_else(|| panic!("error details are not an array: {context}"));
    let info = arr
        .first()
        .unwrap_or_else(|| panic!("error details are empty: {context}"));
    assert_eq!(
        info["@type"], ERROR_INFO_TYPE,
        "first detail is not an ErrorInfo: {context}"
    );
    assert_eq!(info["domain"], ERROR_DOMAIN, "ErrorInfo domain: {context}");
    assert_eq!(info["reason"], reason, "ErrorInfo reason: {context}");
    for d in arr {
        assert!(d.get("@type").is_some(), "detail without @type: {context}");
    }
}

/// A JSON-RPC error envelope with `code`: `jsonrpc` "2.0", no `result`, and an `error` of
/// exactly `code`, `message` and `data`, whose first element is an ErrorInfo with `reason`.
pub fn assert_rpc_error(resp: &Value, code: i64, reason: &str) {
    assert_eq!(resp["jsonrpc"], "2.0", "{resp}");
    assert!(
        resp.get("result").is_none(),
        "error response has a result: {resp}"
    );
    assert!(resp.get("id").is_some(), "error response has no id: {resp}");
    let err = resp
        .get("error")
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("expected a JSON-RPC error {code}, got {resp}"));
    assert_eq!(
        err.get("code").and_then(Value::as_i64),
        Some(code),
        "{resp}"
    );
    let mut keys: Vec<&str> = err.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "data", "message"], "error keys: {resp}");
    assert!(
        err["message"].as_str().is_some_and(|m| !m.is_empty()),
        "error message: {resp}"
    );
    check_error_info(&err["data"], reason, resp);
}

/// A REST error: HTTP `http`, body `{"error":{code:http,status,message,details:[ErrorInfo…]}}`.
pub fn assert_rest_error(status: u16, body: &Value, http: u16, grpc: &str, reason: &str) {
    assert_eq!(status, http, "HTTP status; body {body}");
    let err = body
        .get("error")
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("REST error body without error object: {body}"));
    assert_eq!(
        err.get("code").and_then(Value::as_u64),
        Some(http as u64),
        "error.code: {body}"
    );
    assert_eq!(
        err.get("status").and_then(Value::as_str),
        Some(grpc),
        "error.status: {body}"
    );
    assert!(
        err.get("message")
            .and_then(Value::as_str)
            .is_some_and(|m| !m.is_empty()),
        "error.message: {body}"
    );
    check_error_info(&err["details"], reason, body);
}

// --------------------------------------------------------------------------- SSE

/// One server-sent event: its `event:` name (None for the default), and its `data:`.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub event: Option<String>,
    /// Its `id:` line, where a client resumes after it (`Last-Event-ID`).
    pub id: Option<String>,
    pub data: Value,
}

impl SseEvent {
    /// The StreamResponse of the event: the JSON-RPC `result` when enveloped, else `data`.
    pub fn stream_response(&self) -> &Value {
        self.data.get("result").unwrap_or(&self.data)
    }

    /// Which member of the StreamResponse oneof is set (panics unless exactly one).
    pub fn kind(&self) -> &str {
        stream_response_kind(self.stream_response())
    }

    /// The payload of the set member (`task`, `message`, `statusUpdate`, `artifactUpdate`).
    pub fn payload(&self) -> &Value {
        let kind = self.kind().to_owned();
        &self.stream_response()[kind.as_str()]
    }

    /// The task state this event carries, if any.
    pub fn state(&self) -> Option<&str> {
        match self.kind() {
            "task" | "statusUpdate" => self.payload()["status"]["state"].as_str(),
            _ => None,
        }
    }
}

/// Which member of a StreamResponse's oneof is set (panics unless exactly one): an SSE
/// event's result or a webhook's body.
pub fn stream_response_kind(sr: &Value) -> &str {
    let members = sr
        .as_object()
        .unwrap_or_else(|| panic!("a StreamResponse is an object: {sr}"));
    assert_eq!(members.len(), 1, "StreamResponse has exactly one key: {sr}");
    members.keys().next().map(String::as_str).unwrap_or("")
}

/// Checks that `resp` is a 200 event stream; panics with the body otherwise.
pub async fn expect_stream(resp: Response, what: &str) -> Response {
    let status = resp.status().as_u16();
    let ct = content_type(&resp);
    if status != 200 || !ct.starts_with("text/event-stream") {
        let text = resp.text().await.unwrap_or_default();
        panic!("{what} did not stream (HTTP {status}, {ct}): {text}");
    }
    resp
}

/// Reads an event stream until the server closes it (panics after [`STREAM_TIMEOUT`]).
pub async fn read_sse(resp: Response) -> Vec<SseEvent> {
    let mut reader = SseReader::new(resp);
    let mut events = Vec::new();
    let deadline = Instant::now() + STREAM_TIMEOUT;
    while let Some(e) = reader.next_before(deadline).await {
        events.push(e);
    }
    events
}

/// Reads events one at a time from a streaming response.
pub struct SseReader {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buf: Vec<u8>,
    event: Option<String>,
    id: Option<String>,
    data: Vec<String>,
    done: bool,
}

impl SseReader {
    pub fn new(resp: Response) -> SseReader {
        SseReader {
            stream: Box::pin(resp.bytes_stream().map(|r| r.map(|b| b.to_vec()))),
            buf: Vec::new(),
            event: None,
            id: None,
            data: Vec::new(),
            done: false,
        }
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        if self.data.is_empty() {
            self.event = None;
            self.id = None;
            return None;
        }
        let text = self.data.join("\n");
        self.data.clear();
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {text:?}"));
        Some(SseEvent {
            event: self.event.take(),
            id: self.id.take(),
            data: value,
        })
    }

    /// The next event, or None when the server closed the stream.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                let line = String::from_utf8_lossy(&line);
                let line = line.trim_end_matches(['\n', '\r']);
                if line.is_empty() {
                    if let Some(e) = self.take_event() {
                        return Some(e);
                    }
                } else if line.starts_with(':') {
                    // comment / keep-alive
                } else if let Some(v) = line.strip_prefix("data:") {
                    self.data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                } else if let Some(v) = line.strip_prefix("event:") {
                    self.event = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("id:") {
                    self.id = Some(v.strip_prefix(' ').unwrap_or(v).to_owned());
                }
            }
            if self.done {
                return self.take_event();
            }
            match self.stream.next().await {
                Some(Ok(bytes)) => self.buf.extend_from_slice(&bytes),
                Some(Err(e)) => panic!("SSE stream broke: {e}"),
                None => {
                    self.done = true;
                    if !self.buf.is_empty() {
                        self.buf.push(b'\n');
                    }
                }
            }
        }
    }

    /// Like [`SseReader::next`], panicking if nothing happens before `deadline`.
    pub async fn next_before(&mut self, deadline: Instant) -> Option<SseEvent> {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, self.next()).await {
            Ok(e) => e,
            Err(_) => panic!("SSE stream gave no event and did not close in time"),
        }
    }
}

/// The StreamResponse kinds of a stream, in order.
pub fn kinds(events: &[SseEvent]) -> Vec<String> {
    events.iter().map(|e| e.kind().to_owned()).collect()
}

/// The states of the task/statusUpdate events of a stream, in order.
pub fn states(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e.state().map(str::to_owned))
        .collect()
}

/// The JSON-RPC params of a SendMessage.
pub fn send_params(message: Value) -> Value {
    json!({ "message": message })
}

/// A sortable key for an RFC 3339 UTC timestamp (`…T…[.fffffffff]Z`): fraction padded to 9.
pub fn timestamp_key(ts: &str) -> String {
    let ts = ts.trim_end_matches('Z');
    let (base, frac) = ts.split_once('.').unwrap_or((ts, ""));
    format!("{base}.{frac:0<9}")
}

/// Walks every page of ListTasks over JSON-RPC with `params` (plus pageToken); returns
/// the pages' responses.
pub async fn list_all_pages_rpc(server: &Server, params: Value) -> Vec<Value> {
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let mut p = params.clone();
        if !token.is_empty() {
            p["pageToken"] = json!(token);
        }
        let page = server.rpc_ok("ListTasks", p).await;
        token = page["nextPageToken"].as_str().unwrap_or("").to_owned();
        pages.push(page);
        assert!(pages.len() < 50, "ListTasks pagination does not end");
        if token.is_empty() {
            return pages;
        }
    }
}

/// One `/proc/<pid>/status` figure in bytes: `VmRSS` (resident now), `VmHWM` (the peak);
/// 0 where there is no such figure (no such process, or not Linux).
pub fn proc_status(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}
