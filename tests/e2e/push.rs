//! Push notifications end to end: a webhook receiver inside the test (a tokio TCP
//! listener speaking just enough HTTP/1.1) gets the task's events as the server commits
//! them — in order, as StreamResponse JSON, with the config's Authorization and
//! notification-token headers — including the CANCELED update of CancelTask, and after
//! 5xx answers (retries). With `--push-allow-private-urls false`, loopback webhooks are
//! refused and nothing is stored. Config pagination and delete round out the CRUD.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness_e2e::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a test waits for the webhook to be called.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

// ------------------------------------------------------------------ the receiver

/// One HTTP request the receiver read, and the status it answered.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    /// Header names lower-cased, in arrival order.
    headers: Vec<(String, String)>,
    body: Value,
    answered: u16,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The StreamResponse member the body sets (`statusUpdate`, `artifactUpdate`, …).
    fn kind(&self) -> &str {
        let obj = self
            .body
            .as_object()
            .unwrap_or_else(|| panic!("webhook body is not an object: {}", self.body));
        assert_eq!(
            obj.len(),
            1,
            "StreamResponse has exactly one key: {}",
            self.body
        );
        obj.keys().next().map(String::as_str).unwrap_or("")
    }

    fn state(&self) -> Option<&str> {
        self.body["statusUpdate"]["status"]["state"].as_str()
    }
}

/// A webhook receiver on 127.0.0.1: records every request; answers `fail_status` (500
/// unless set) to the first `fail_first` requests and 200 (empty body) to the rest.
/// Keeps connections alive.
struct Receiver {
    /// `http://127.0.0.1:PORT/hook`
    url: String,
    log: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    async fn start() -> Receiver {
        Receiver::failing_first(0).await
    }

    async fn failing_first(fail_first: usize) -> Receiver {
        Receiver::answering_first(500, fail_first).await
    }

    async fn answering_first(fail_status: u16, fail_first: usize) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let failures_left = Arc::new(AtomicUsize::new(fail_first));
        let task = {
            let log = log.clone();
            tokio::spawn(async move {
                while let Ok((conn, _)) = listener.accept().await {
                    tokio::spawn(serve(conn, log.clone(), failures_left.clone(), fail_status));
                }
            })
        };
        Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            log,
            task,
        }
    }

    /// Every request so far, answered or failed.
    fn all(&self) -> Vec<Received> {
        self.log.lock().unwrap().clone()
    }

    /// The requests answered 200, in arrival order.
    fn accepted(&self) -> Vec<Received> {
        self.all()
            .into_iter()
            .filter(|r| r.answered == 200)
            .collect()
    }

    /// Polls until `done` holds for the accepted requests (panics after the timeout).
    async fn wait_until(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + DELIVERY_TIMEOUT;
        loop {
            let got = self.accepted();
            if done(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "webhook did not receive {what} within {DELIVERY_TIMEOUT:?}; got {:#?}",
                self.all()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for a statusUpdate with `state`; returns the accepted requests so far.
    async fn wait_for_state(&self, state: &str) -> Vec<Received> {
        self.wait_until(state, |got| got.iter().any(|r| r.state() == Some(state)))
            .await
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads HTTP/1.1 requests from one connection until it closes.
async fn serve(
    mut conn: TcpStream,
    log: Arc<Mutex<Vec<Received>>>,
    failures: Arc<AtomicUsize>,
    fail_status: u16,
) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        // Head: up to the blank line.
        let head_end = loop {
            if let Some(p) = find(&buf, b"\r\n\r\n") {
                break p;
            }
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut request_line = lines.next().unwrap_or("").split_whitespace();
        let method = request_line.next().unwrap_or("").to_owned();
        let path = request_line.next().unwrap_or("").to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let body_start = head_end + 4;
        while buf.len() < body_start + len {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body_bytes: Vec<u8> = buf[body_start..body_start + len].to_vec();
        buf.drain(..body_start + len);
        let body = serde_json::from_slice(&body_bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body_bytes).into_owned()));
        let fail = failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let answered = if fail { fail_status } else { 200 };
        log.lock().unwrap().push(Received {
            method,
            path,
            headers,
            body,
            answered,
        });
        let reply = if fail {
            format!("HTTP/1.1 {fail_status} Refused\r\ncontent-length: 0\r\n\r\n")
        } else {
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_owned()
        };
        if conn.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

// ------------------------------------------------------------------- helpers

/// harness-local allows private webhook targets unless told otherwise.
async fn private_ok_server() -> Server {
    Server::start().await
}

/// Checks the headers every delivery carries for a config with a Bearer token and a
/// notification token.
fn assert_delivery_headers(r: &Received, credentials: &str, token: &str) {
    assert_eq!(r.method, "POST", "{r:?}");
    assert_eq!(r.path, "/hook", "{r:?}");
    assert!(
        r.header("content-type")
            .is_some_and(|v| v.starts_with("application/a2a+json")),
        "content-type: {r:?}"
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {credentials}").as_str()),
        "{r:?}"
    );
    assert_eq!(r.header("x-a2a-notification-token"), Some(token), "{r:?}");
}

// --------------------------------------------------------------------- tests

#[tokio::test]
async fn send_message_webhook_receives_working_artifact_and_completed_in_order_with_auth_headers() {
    let s = private_ok_server().await;
    let hook = Receiver::start().await;
    let params = json!({
        "message": user_message(&unique("tck-stream-001"), "hi"),
        "configuration": {"taskPushNotificationConfig": {
            "url": hook.url, "token": "tok-123",
            "authentication": {"scheme": "Bearer", "credentials": "secret-1"}}}
    });
    let result = s.rpc_ok("SendMessage", params).await;
    let task = &result["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{result}");
    let id = task_id(task);

    let got = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    let kinds: Vec<&str> = got.iter().map(Received::kind).collect();
    assert_eq!(
        kinds,
        ["statusUpdate", "artifactUpdate", "statusUpdate"],
        "{got:#?}"
    );
    assert_eq!(got[0].state(), Some("TASK_STATE_WORKING"));
    assert_eq!(got[2].state(), Some("TASK_STATE_COMPLETED"));
    let artifact = &got[1].body["artifactUpdate"];
    assert!(
        artifact["artifact"]["parts"]
            .as_array()
            .is_some_and(|p| !p.is_empty()),
        "{artifact}"
    );
    for r in &got {
        assert_delivery_headers(r, "secret-1", "tok-123");
        assert_eq!(r.body[r.kind()]["taskId"], id.as_str(), "{:?}", r.body);
        assert_eq!(
            r.body[r.kind()]["contextId"],
            task["contextId"],
            "{:?}",
            r.body
        );
    }
    // The config was stored on the task, with the server-filled taskId and an id.
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    let configs = list["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 1, "{list}");
    assert_eq!(configs[0]["taskId"], id.as_str());
    assert_eq!(configs[0]["url"], hook.url.as_str());
    assert!(configs[0]["id"].as_str().is_some_and(|i| !i.is_empty()));
    // Nothing is delivered twice.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hook.all().len(), 3, "{:#?}", hook.all());
}

#[tokio::test]
async fn config_created_on_an_input_required_task_gets_the_completion_of_the_reply() {
    let s = private_ok_server().await;
    let hook = Receiver::start().await;
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let created = s
        .rpc_ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "hook-1", "url": hook.url, "token": "tok-ir",
            "authentication": {"scheme": "Bearer", "credentials": "cred-ir"}}),
        )
        .await;
    assert_eq!(created["id"], "hook-1", "{created}");
    assert_eq!(created["taskId"], id.as_str(), "{created}");
    // Nothing happened to the task yet: nothing is delivered.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(hook.all().is_empty(), "{:#?}", hook.all());

    let reply = s
        .rpc_ok(
            "SendMessage",
            send_params(reply_message(&unique("tck-complete-task"), &id, "more")),
        )
        .await;
    assert_eq!(state(&reply["task"]), "TASK_STATE_COMPLETED", "{reply}");
    let got = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    let completed = got
        .iter()
        .find(|r| r.state() == Some("TASK_STATE_COMPLETED"))
        .unwrap();
    assert_delivery_headers(completed, "cred-ir", "tok-ir");
    assert_eq!(completed.body["statusUpdate"]["taskId"], id.as_str());
    assert_eq!(
        got.last().unwrap().state(),
        Some("TASK_STATE_COMPLETED"),
        "COMPLETED is the last event: {got:#?}"
    );
}

#[tokio::test]
async fn cancel_task_delivers_the_canceled_status_update() {
    let s = private_ok_server().await;
    let hook = Receiver::start().await;
    let params = json!({
        "message": user_message(&unique("test-resubscribe-message-id"), "slow"),
        "configuration": {"returnImmediately": true,
            "taskPushNotificationConfig": {"url": hook.url, "token": "tok-c"}}
    });
    let result = s.rpc_ok("SendMessage", params).await;
    let id = task_id(&result["task"]);
    s.wait_for_state(&id, "TASK_STATE_WORKING", Duration::from_secs(3))
        .await;
    let canceled = s.rpc_ok("CancelTask", json!({"id": id})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");

    let got = hook.wait_for_state("TASK_STATE_CANCELED").await;
    let r = got
        .iter()
        .find(|r| r.state() == Some("TASK_STATE_CANCELED"))
        .unwrap();
    assert_eq!(
        r.body["statusUpdate"]["taskId"],
        id.as_str(),
        "{:?}",
        r.body
    );
    assert_eq!(r.header("x-a2a-notification-token"), Some("tok-c"));
    assert_eq!(
        r.header("authorization"),
        None,
        "no authentication set: {r:?}"
    );
    assert!(r
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/a2a+json")));
    // The slow run ends after ~4 s; it must not push a COMPLETED after the cancel.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let after = hook.accepted();
    assert!(
        after
            .iter()
            .all(|r| r.state() != Some("TASK_STATE_COMPLETED")),
        "a canceled task pushed COMPLETED: {after:#?}"
    );
    assert_eq!(
        after.last().and_then(Received::state),
        Some("TASK_STATE_CANCELED"),
        "{after:#?}"
    );
}

#[tokio::test]
async fn loopback_and_localhost_webhooks_are_refused_when_private_urls_are_not_allowed() {
    let s = Server::start_with(&["--push-allow-private-urls", "false"]).await;
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let urls = [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://LOCALHOST/hook",
        "https://[::1]:8443/hook",
        "http://10.0.0.7/hook",
        "http://192.168.1.2/hook",
        "http://169.254.169.254/latest/meta-data",
    ];
    for url in urls {
        let err = s
            .rpc_err(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": "c", "url": url}),
                -32602,
                "INVALID_PARAMS",
            )
            .await;
        assert!(err["message"].is_string(), "{url}");
        let (st, body) = s
            .rest_post(
                &format!("/tasks/{id}/pushNotificationConfigs"),
                json!({"id": "c", "url": url}),
            )
            .await;
        assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    }
    // Nothing was stored.
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(list["configs"], json!([]), "{list}");
    assert_eq!(list["nextPageToken"], "", "{list}");

    // SendMessage with such a webhook is refused before a task exists.
    let before = s.rpc_ok("ListTasks", json!({})).await["totalSize"].clone();
    for url in ["http://127.0.0.1:9/hook", "http://localhost:9/hook"] {
        s.rpc_err(
            "SendMessage",
            json!({"message": user_message(&unique("tck-complete-task"), "x"),
                "configuration": {"taskPushNotificationConfig": {"url": url}}}),
            -32602,
            "INVALID_PARAMS",
        )
        .await;
        let (st, body) = s
            .rest_post(
                "/message:send",
                json!({"message": user_message(&unique("tck-complete-task"), "x"),
                    "configuration": {"taskPushNotificationConfig": {"url": url}}}),
            )
            .await;
        assert_rest_error(st, &body, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    }
    // Continuing a task with such a webhook neither attaches it nor moves the task on.
    s.rpc_err(
        "SendMessage",
        json!({"message": reply_message(&unique("tck-complete-task"), &id, "x"),
            "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/h"}}}),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
    assert_eq!(state(&s.get_task(&id).await), "TASK_STATE_INPUT_REQUIRED");
    let after = s.rpc_ok("ListTasks", json!({})).await["totalSize"].clone();
    assert_eq!(after, before, "a refused webhook left a task behind");
    let list = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(list["configs"], json!([]), "{list}");
}

#[tokio::test]
async fn a_receiver_answering_500_twice_still_gets_the_event_on_the_third_attempt() {
    let s = private_ok_server().await;
    let hook = Receiver::failing_first(2).await;
    let params = json!({
        "message": user_message(&unique("tck-complete-task"), "hi"),
        "configuration": {"taskPushNotificationConfig": {"url": hook.url, "token": "tok-r"}}
    });
    let result = s.rpc_ok("SendMessage", params).await;
    assert_eq!(state(&result["task"]), "TASK_STATE_COMPLETED", "{result}");
    let got = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    assert_eq!(got.len(), 1, "{got:#?}");
    let all = hook.all();
    assert_eq!(
        all.iter().map(|r| r.answered).collect::<Vec<_>>(),
        [500, 500, 200],
        "{all:#?}"
    );
    // Each attempt carried the same event and headers.
    for r in &all {
        assert_eq!(r.body, got[0].body, "{all:#?}");
        assert_eq!(r.header("x-a2a-notification-token"), Some("tok-r"));
    }
}

/// Sends a `tck-complete-task` (one COMPLETED event) with a webhook at `hook`; returns
/// the answers the receiver gave, once no new request came for a while.
async fn answers_for_one_event(s: &Server, hook: &Receiver) -> Vec<u16> {
    let params = json!({
        "message": user_message(&unique("tck-complete-task"), "hi"),
        "configuration": {"taskPushNotificationConfig": {"url": hook.url}}
    });
    let result = s.rpc_ok("SendMessage", params).await;
    assert_eq!(state(&result["task"]), "TASK_STATE_COMPLETED", "{result}");
    // Delivery (with its backoff of 200 ms, 400 ms) is over well before this.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    hook.all().iter().map(|r| r.answered).collect()
}

#[tokio::test]
async fn client_errors_are_not_retried_but_429_and_5xx_are_up_to_three_attempts() {
    let s = private_ok_server().await;
    let refusing = Receiver::answering_first(404, 1).await;
    assert_eq!(answers_for_one_event(&s, &refusing).await, [404]);
    let bad_request = Receiver::answering_first(400, 5).await;
    assert_eq!(answers_for_one_event(&s, &bad_request).await, [400]);
    let throttled = Receiver::answering_first(429, 1).await;
    assert_eq!(answers_for_one_event(&s, &throttled).await, [429, 200]);
    let broken = Receiver::failing_first(10).await;
    assert_eq!(
        answers_for_one_event(&s, &broken).await,
        [500, 500, 500],
        "three attempts, then the event is given up"
    );
}

#[tokio::test]
async fn configs_list_in_pages_of_two_with_an_opaque_token_until_an_empty_one() {
    // Completed task, public URLs: no delivery happens, the flag does not matter.
    let s = Server::start().await;
    let task = s.completed_task().await;
    let id = task_id(&task);
    let mut created = HashSet::new();
    for n in 0..5 {
        let c = s
            .rpc_ok(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": format!("cfg-{n}"),
                    "url": format!("https://example.com/hook/{n}")}),
            )
            .await;
        created.insert(c["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(created.len(), 5);

    // JSON-RPC
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut token = String::new();
    loop {
        let mut p = json!({"taskId": id, "pageSize": 2});
        if !token.is_empty() {
            p["pageToken"] = json!(token);
        }
        let page = s.rpc_ok("ListTaskPushNotificationConfigs", p).await;
        let configs = page["configs"].as_array().expect("configs array").clone();
        sizes.push(configs.len());
        for c in &configs {
            assert_eq!(c["taskId"], id.as_str(), "{c}");
            seen.push(c["id"].as_str().unwrap().to_owned());
        }
        token = page["nextPageToken"]
            .as_str()
            .unwrap_or_else(|| panic!("nextPageToken is a string: {page}"))
            .to_owned();
        assert!(sizes.len() <= 5, "pagination does not end");
        if token.is_empty() {
            break;
        }
        assert!(!token.contains("cfg-"), "token should be opaque: {token}");
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(seen.len(), 5, "no config twice: {seen:?}");
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), created);

    // REST
    let mut rest_seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let mut path = format!("/tasks/{id}/pushNotificationConfigs?pageSize=2");
        if !token.is_empty() {
            path.push_str(&format!("&pageToken={token}"));
        }
        let (st, page) = s.rest_get(&path).await;
        assert_eq!(st, 200, "{page}");
        pages += 1;
        for c in page["configs"].as_array().unwrap() {
            rest_seen.push(c["id"].as_str().unwrap().to_owned());
        }
        token = page["nextPageToken"].as_str().unwrap_or("").to_owned();
        assert!(pages <= 5);
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(rest_seen, seen, "both bindings page the same way");

    // Default page size holds all five; pageSize bounds are 1..=100.
    let all = s
        .rpc_ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(all["configs"].as_array().unwrap().len(), 5, "{all}");
    assert_eq!(all["nextPageToken"], "", "{all}");
    for ok in [1, 100] {
        s.rpc_ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": ok}),
        )
        .await;
    }
    for bad in [json!(0), json!(101), json!(-1)] {
        s.rpc_err(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": bad}),
            -32602,
            "INVALID_PARAMS",
        )
        .await;
    }
    s.rpc_err(
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id, "pageToken": "not a token this server issued"}),
        -32602,
        "INVALID_PARAMS",
    )
    .await;
}

#[tokio::test]
async fn a_deleted_config_is_not_found_and_no_longer_called() {
    let s = private_ok_server().await;
    let hook = Receiver::start().await;
    let task = s.input_required_task().await;
    let id = task_id(&task);
    s.rpc_ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone", "url": hook.url}),
    )
    .await;
    let got = s
        .rpc_ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "gone"}),
        )
        .await;
    assert_eq!(got["url"], hook.url.as_str(), "{got}");
    s.rpc_ok(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone"}),
    )
    .await;
    s.rpc_err(
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone"}),
        -32001,
        "TASK_NOT_FOUND",
    )
    .await;
    let (st, body) = s
        .rest_get(&format!("/tasks/{id}/pushNotificationConfigs/gone"))
        .await;
    assert_rest_error(st, &body, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    // Deleting again is fine.
    s.rpc_ok(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": id, "id": "gone"}),
    )
    .await;
    // The task completes; the deleted webhook is not called.
    s.rpc_ok(
        "SendMessage",
        send_params(reply_message(&unique("tck-complete-task"), &id, "x")),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(hook.all().is_empty(), "{:#?}", hook.all());
}
