//! The notifier function, end to end without a Lambda runtime: a real DynamoDB stream
//! batch goes into `push::stream::handle` as `lambda::run_notifier` hands it over, and a
//! webhook receiver (wiremock, on loopback) gets the deliveries.
//!
//! The fixture `dynamodb-stream-push-capture.json` is every record of DynamoDB Local's
//! stream of a table `template.yaml` defines, after `harness-local --table` (the same
//! store code the functions run) took one SendMessage with a webhook config (token
//! `capture-token`, Bearer credentials `capture-credentials`) that the conformance agent
//! completed, read by `tests/lambda_watch/stream_tool.py --dump --no-filter`. In order:
//! (1) the task's INSERT, (2) its creation event `EV#0` (INSERT, `push`), (3) the message,
//! (4) the config `PUSH#hook-1` (INSERT), (5) the task's MODIFY, (6) the COMPLETED event
//! `EV#1` (INSERT, `push`), then MODIFYs of the events (their expiry) and of the config
//! (its delivery cursor).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lambda_events::event::dynamodb::Event;
use common::a2a::{
    Artifact, AuthenticationInfo, Message, Part, Role, TaskPushNotificationConfig, TaskState,
};
use common::engine::transition::{add_artifact, created, new_task_with_id, set_status};
use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
use common::https::target::Targets;
use common::push::stream::handle;
use common::push::Notifier;
use common::sealing::PushKey;
use common::store::dynamodb::stream::task_to_notify;
use common::store::{DynamoStore, EmbeddedStore, Store};
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The task of the captured stream.
const TASK: &str = "a4f8346c-1aa6-438f-bb16-a70ffe338c4c";
const CAPTURE: &str = "dynamodb-stream-push-capture.json";

fn capture() -> Event {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(CAPTURE);
    let text = std::fs::read_to_string(&path).expect("read the capture");
    serde_json::from_str(&text).expect("the capture is a DynamoDB stream event")
}

fn sequence_numbers(event: &Event) -> Vec<String> {
    event
        .records
        .iter()
        .map(|r| r.change.sequence_number.clone().unwrap_or_default())
        .collect()
}

#[test]
fn only_new_log_events_of_tasks_with_webhooks_and_new_webhooks_ask_for_delivery() {
    let event = capture();
    let asked: Vec<Option<String>> = event.records.iter().map(task_to_notify).collect();
    let task = Some(TASK.to_owned());
    assert_eq!(
        asked,
        [
            None,
            task.clone(),
            None,
            task.clone(),
            None,
            task,
            None,
            None,
            None
        ],
        "records 2 (EV#0), 4 (PUSH#) and 6 (EV#1) only"
    );
    let raw = serde_json::to_string(&event).expect("serializes");
    for secret in ["capture-token", "capture-credentials"] {
        assert!(
            !raw.contains(secret),
            "the stream carries {secret} in the clear"
        );
    }
}

/// The task of the capture in `store`: created, then WORKING, an artifact, COMPLETED;
/// with a webhook at `url` that has been handed nothing yet.
async fn task_with_webhook(store: &Arc<dyn Store>, notifier: &Notifier, url: &str) {
    let mut message = Message {
        message_id: common::engine::transition::new_id(),
        role: Role::User,
        parts: vec![Part::text("hello")],
        ..Default::default()
    };
    // alice, who makes the webhook, is on the task: a former member's gets nothing.
    let mut ext = TaskExtension::from_text("hello");
    ext.add(Participant::new(
        "alice",
        ParticipantKind::Human,
        ParticipantRole::Reporter,
    ));
    let mut rec = new_task_with_id(TASK.into(), "", &mut message, &ext);
    rec.push = true;
    let first = created(&rec);
    let mut rec = store
        .create_task(&rec, &[first], None)
        .await
        .expect("create");
    let config = TaskPushNotificationConfig {
        id: "hook-1".into(),
        task_id: TASK.into(),
        url: url.into(),
        token: "capture-token".into(),
        authentication: Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "capture-credentials".into(),
        }),
        ..Default::default()
    };
    store
        .put_push_config(&notifier.seal(config, "alice", 0))
        .await
        .expect("put the config");
    let artifact = Artifact {
        artifact_id: "a1".into(),
        parts: vec![Part::text("result")],
        ..Default::default()
    };
    for step in 0..3 {
        let mut next = rec.clone();
        let event = match step {
            0 => set_status(&mut next, TaskState::Working, None, None),
            1 => add_artifact(&mut next, artifact.clone(), false, true),
            _ => set_status(&mut next, TaskState::Completed, None, None),
        };
        rec = store
            .commit(&next, rec.version, &[event], None)
            .await
            .expect("commit");
    }
}

fn notifier(store: &Arc<dyn Store>) -> Notifier {
    Notifier::new(
        store.clone(),
        PushKey::generate(),
        Duration::from_secs(5),
        Targets::new(true, Vec::new()),
    )
}

async fn received(server: &MockServer) -> Vec<(Value, Option<String>, Option<String>)> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let header = |name: &str| {
                r.headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            (
                serde_json::from_slice(&r.body).expect("a JSON body"),
                header("authorization"),
                header("x-a2a-notification-token"),
            )
        })
        .collect()
}

/// The batch becomes one POST per update, in order, with the config's headers; the same
/// batch again (delivery is at least once) posts nothing more.
async fn a_batch_becomes_deliveries(store: Arc<dyn Store>) {
    let hook = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&hook)
        .await;
    let notifier = notifier(&store);
    task_with_webhook(&store, &notifier, &format!("{}/hook", hook.uri())).await;

    let answer = handle(&notifier, &capture(), None).await;
    assert_eq!(
        serde_json::to_value(&answer).expect("serializes"),
        json!({"batchItemFailures": []})
    );
    let got = received(&hook).await;
    let kinds: Vec<String> = got
        .iter()
        .map(|(body, _, _)| match body {
            Value::Object(o) if o.len() == 1 => {
                let (k, v) = o.iter().next().expect("one key");
                let state = v["status"]["state"].as_str().unwrap_or("artifact");
                assert_eq!(v["taskId"], TASK, "{body}");
                format!("{k}:{state}")
            }
            other => panic!("not a StreamResponse: {other}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate:artifact",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]
    );
    for (_, auth, token) in &got {
        assert_eq!(auth.as_deref(), Some("Bearer capture-credentials"));
        assert_eq!(token.as_deref(), Some("capture-token"));
    }

    handle(&notifier, &capture(), None).await;
    assert_eq!(
        received(&hook).await.len(),
        3,
        "a redelivered batch repeats nothing"
    );
    let record = store
        .get_push_config(TASK, "hook-1")
        .await
        .expect("get")
        .expect("stored");
    assert_eq!((record.delivered, record.failures), (3, 0));
}

/// A webhook that keeps failing: each update is tried three times, then passed over and
/// recorded on the config; the batch itself succeeds (nothing to retry).
async fn a_failing_webhook_is_recorded(store: Arc<dyn Store>) {
    let hook = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&hook)
        .await;
    let notifier = notifier(&store);
    task_with_webhook(&store, &notifier, &format!("{}/hook", hook.uri())).await;
    let answer = handle(&notifier, &capture(), None).await;
    assert!(answer.batch_item_failures.is_empty());
    assert_eq!(
        received(&hook).await.len(),
        3 * 3,
        "three attempts per update"
    );
    let record = store
        .get_push_config(TASK, "hook-1")
        .await
        .expect("get")
        .expect("stored");
    assert_eq!((record.delivered, record.failures), (3, 3));
    assert_eq!(record.last_failure, "event 3: HTTP 503 after 3 attempts");
}

/// Out of time before anything could be posted: the task's first record in the batch
/// comes back as the batch item failure, so the mapping retries from there.
async fn out_of_time_reports_the_first_record(store: Arc<dyn Store>) {
    let hook = MockServer::start().await;
    let notifier = notifier(&store);
    task_with_webhook(&store, &notifier, &format!("{}/hook", hook.uri())).await;
    let event = capture();
    let answer = handle(&notifier, &event, Some(Instant::now())).await;
    assert_eq!(
        serde_json::to_value(&answer).expect("serializes"),
        json!({"batchItemFailures": [{"itemIdentifier": sequence_numbers(&event)[1]}]})
    );
    assert!(received(&hook).await.is_empty());
}

fn embedded() -> (Arc<dyn Store>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "harness-push-notifier-{}",
        common::engine::transition::new_id()
    ));
    std::fs::create_dir_all(&dir).expect("create the store directory");
    (
        Arc::new(EmbeddedStore::open(&dir).expect("open the store")),
        dir,
    )
}

async fn dynamo() -> Option<Arc<dyn Store>> {
    let client = support::dynamo_client()?;
    let table = support::fresh_table(&client).await;
    Some(Arc::new(DynamoStore::new(client, table)))
}

macro_rules! on_both_stores {
    ($($name:ident),+ $(,)?) => {
        mod embedded_store {
            $(
                #[tokio::test]
                async fn $name() {
                    let (store, dir) = super::embedded();
                    super::$name(store).await;
                    let _ = std::fs::remove_dir_all(dir);
                }
            )+
        }
        mod dynamodb_store {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(store) = super::dynamo().await {
                        super::$name(store).await;
                    }
                }
            )+
        }
    };
}

on_both_stores!(
    a_batch_becomes_deliveries,
    a_failing_webhook_is_recorded,
    out_of_time_reports_the_first_record,
);
