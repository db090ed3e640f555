//! Faults a real DynamoDB server (or DynamoDB Local) will not produce on demand, injected
//! with `aws-smithy-mocks` under `DynamoStore`: throttling and 5xx (retried by the SDK's
//! standard retry policy, surfaced as `Unavailable` when they persist), transactions
//! cancelled for each reason the store distinguishes, and a commit conflict that the
//! engine must resolve by re-applying its change on the fresh task.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsInput, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::types::error::{
    ConditionalCheckFailedException, TransactionCanceledException,
};
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
use aws_sdk_dynamodb::Client;
use aws_smithy_mocks::{mock, mock_client, Rule, RuleMode};
use aws_smithy_runtime_api::http::{Response, StatusCode};
use aws_smithy_types::body::SdkBody;

use common::a2a::{Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus, Timestamp};
use common::engine::{RunError, TaskRun};
use common::store::{DynamoStore, InboundMessage, Store, StoreError, TaskRecord};

const TABLE: &str = "table";
const MAX_ATTEMPTS: u32 = 3;

type Item = HashMap<String, AttributeValue>;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A client whose every call is answered by `rules`, in order, with the SDK's standard
/// retry policy (3 attempts, millisecond backoff) so retries run against the mocks.
fn client(rules: &[&Rule]) -> Client {
    mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, rules, |cfg| cfg
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(MAX_ATTEMPTS)
                .with_initial_backoff(Duration::from_millis(1))
                .with_max_backoff(Duration::from_millis(5)),
        ))
}

fn store(rules: &[&Rule]) -> DynamoStore {
    DynamoStore::new(client(rules), TABLE)
}

/// An HTTP error response with a DynamoDB (awsJson1_0) error body, so the SDK's own
/// error deserializer and retry classifiers see exactly what the service would send.
fn http_error(status: u16, error_type: &str, message: &str) -> Response {
    Response::new(
        StatusCode::try_from(status).unwrap(),
        SdkBody::from(format!(
            r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{error_type}","message":"{message}"}}"#
        )),
    )
}

fn throttling() -> Response {
    http_error(
        400,
        "ThrottlingException",
        "Rate of requests exceeds the allowed throughput.",
    )
}

fn provisioned_throughput_exceeded() -> Response {
    http_error(
        400,
        "ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for the table was exceeded.",
    )
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn record(id: &str, state: TaskState, version: u64, last_seq: u64) -> TaskRecord {
    TaskRecord {
        tenant: "acme".into(),
        task: Task {
            id: id.into(),
            context_id: format!("ctx-{id}"),
            status: Some(TaskStatus {
                state,
                message: None,
                timestamp: Some(Timestamp::now()),
            }),
            ..Default::default()
        },
        version,
        last_seq,
        push: false,
        ..Default::default()
    }
}

/// The task item as `DynamoStore` writes it (see `task_item` in dynamodb.rs).
fn task_item(rec: &TaskRecord) -> Item {
    let id = &rec.task.id;
    HashMap::from([
        ("pk".into(), s(format!("TASK#{id}"))),
        ("sk".into(), s("TASK")),
        ("version".into(), n(rec.version)),
        ("last_seq".into(), n(rec.last_seq)),
        ("record".into(), s(serde_json::to_string(rec).unwrap())),
        ("listed".into(), n(1)),
    ])
}

fn inbound(message_id: &str) -> InboundMessage {
    InboundMessage {
        tenant: "acme".into(),
        sender: "alice".into(),
        message: Message {
            message_id: message_id.into(),
            role: Role::User,
            parts: vec![Part::text("hello")],
            ..Default::default()
        },
    }
}

fn status_event(rec: &TaskRecord, state: TaskState) -> StreamResponse {
    let mut next = rec.clone();
    common::engine::transition::set_status(&mut next, state, None, None)
}

fn reason(code: &str) -> CancellationReason {
    CancellationReason::builder().code(code).build()
}

fn cancelled(reasons: Vec<CancellationReason>) -> TransactWriteItemsError {
    let mut b = TransactionCanceledException::builder().message(format!(
        "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
        reasons
            .iter()
            .map(|r| r.code().unwrap_or("None"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for r in reasons {
        b = b.cancellation_reasons(r);
    }
    TransactWriteItemsError::TransactionCanceledException(b.build())
}

fn unavailable_message(err: StoreError) -> String {
    match err {
        StoreError::Unavailable(m) => m,
        other => panic!("expected StoreError::Unavailable, got {other:?}"),
    }
}

fn number(item: &Item, key: &str) -> u64 {
    item.get(key)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number attribute {key} in {item:?}"))
}

fn string<'a>(item: &'a Item, key: &str) -> &'a str {
    item.get(key)
        .and_then(|v| v.as_s().ok())
        .unwrap_or_else(|| panic!("no string attribute {key} in {item:?}"))
}

// ---------------------------------------------------------------------------------------
// 1. Transient faults on GetItem are retried and succeed when they clear
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn load_task_retries_throttling_with_backoff_and_succeeds_when_it_clears() {
    let stored = record("t1", TaskState::Working, 4, 7);
    let item = task_item(&stored);
    let get = mock!(Client::get_item)
        .match_requests(|r| {
            r.key().and_then(|k| k.get("pk")) == Some(&s("TASK#t1"))
                && r.consistent_read() == Some(true)
        })
        .sequence()
        .http_response(throttling)
        .times(2)
        .output(move || {
            GetItemOutput::builder()
                .set_item(Some(item.clone()))
                .build()
        })
        .build();
    let store = store(&[&get]);

    let loaded = store
        .load_task("t1")
        .await
        .expect("throttling must be retried");

    assert_eq!(loaded, Some(stored));
    assert_eq!(
        get.num_calls(),
        3,
        "2 throttled attempts, then the one that succeeded"
    );
}

#[tokio::test]
async fn load_task_retries_provisioned_throughput_exceeded_and_succeeds_when_it_clears() {
    let stored = record("t1", TaskState::Submitted, 1, 0);
    let item = task_item(&stored);
    let get = mock!(Client::get_item)
        .sequence()
        .http_response(provisioned_throughput_exceeded)
        .times(2)
        .output(move || {
            GetItemOutput::builder()
                .set_item(Some(item.clone()))
                .build()
        })
        .build();
    let store = store(&[&get]);

    let loaded = store
        .load_task("t1")
        .await
        .expect("throttling must be retried");

    assert_eq!(loaded, Some(stored));
    assert_eq!(get.num_calls(), 3);
}

#[tokio::test]
async fn load_task_retries_5xx_with_backoff_and_succeeds_when_it_clears() {
    let stored = record("t1", TaskState::InputRequired, 2, 3);
    let item = task_item(&stored);
    let get = mock!(Client::get_item)
        .sequence()
        .http_status(500, None)
        .http_status(503, None)
        .output(move || {
            GetItemOutput::builder()
                .set_item(Some(item.clone()))
                .build()
        })
        .build();
    let store = store(&[&get]);

    let loaded = store.load_task("t1").await.expect("5xx must be retried");

    assert_eq!(loaded, Some(stored));
    assert_eq!(
        get.num_calls(),
        3,
        "a 500, a 503, then the one that succeeded"
    );
}

// ---------------------------------------------------------------------------------------
// 2. A fault that never clears surfaces as Unavailable after max_attempts calls
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn load_task_throttled_on_every_attempt_is_unavailable_saying_throttled() {
    let get = mock!(Client::get_item)
        .sequence()
        .http_response(throttling)
        .repeatedly()
        .build();
    let store = store(&[&get]);

    let err = store
        .load_task("t1")
        .await
        .expect_err("throttling never clears");

    let message = unavailable_message(err);
    assert!(
        message.to_lowercase().contains("throttl"),
        "the error should say the request was throttled: {message}"
    );
    assert_eq!(get.num_calls(), MAX_ATTEMPTS as usize);
}

#[tokio::test]
async fn load_task_503_on_every_attempt_is_unavailable_saying_so() {
    let get = mock!(Client::get_item)
        .sequence()
        .http_status(503, None)
        .repeatedly()
        .build();
    let store = store(&[&get]);

    let err = store
        .load_task("t1")
        .await
        .expect_err("the 503 never clears");

    let message = unavailable_message(err);
    let lower = message.to_lowercase();
    assert!(
        lower.contains("503") || lower.contains("unavailable"),
        "the error should name the 503 / service unavailable: {message}"
    );
    assert_eq!(get.num_calls(), MAX_ATTEMPTS as usize);
}

// ---------------------------------------------------------------------------------------
// 3. TransactWriteItems cancellations and failures on commit
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn commit_cancelled_on_the_task_condition_is_a_conflict() {
    let tx = mock!(Client::transact_write_items)
        .then_error(|| cancelled(vec![reason("ConditionalCheckFailed"), reason("None")]));
    let store = store(&[&tx]);
    let rec = record("t1", TaskState::Submitted, 1, 0);

    let err = store
        .commit(&rec, 1, &[status_event(&rec, TaskState::Working)], None)
        .await
        .expect_err("the task condition failed");

    assert_eq!(
        err,
        StoreError::Conflict {
            task_id: "t1".into(),
            expected: 1
        }
    );
    assert_eq!(
        tx.num_calls(),
        1,
        "a cancelled transaction is not retried by the SDK"
    );
}

#[tokio::test]
async fn commit_cancelled_on_the_message_condition_is_a_duplicate_naming_its_task() {
    let tx = mock!(Client::transact_write_items)
        .match_requests(|r| r.transact_items().len() == 3)
        .then_error(|| {
            cancelled(vec![
                reason("None"),
                reason("None"),
                CancellationReason::builder()
                    .code("ConditionalCheckFailed")
                    .item("pk", s("IN#acme#alice#m-1"))
                    .item("sk", s("MSG"))
                    .item("task_id", s("t-owner"))
                    .build(),
            ])
        });
    let store = store(&[&tx]);
    let rec = record("t1", TaskState::InputRequired, 2, 1);

    let err = store
        .commit(
            &rec,
            2,
            &[status_event(&rec, TaskState::Working)],
            Some(&inbound("m-1")),
        )
        .await
        .expect_err("the message condition failed");

    assert_eq!(
        err,
        StoreError::DuplicateMessage {
            message_id: "m-1".into(),
            task_id: "t-owner".into()
        }
    );
    assert_eq!(tx.num_calls(), 1);
}

#[tokio::test]
async fn create_task_duplicate_message_without_old_item_looks_its_task_up() {
    // A cancellation reason without the ALL_OLD item: the store must read the message
    // item to name the task it went to.
    let tx = mock!(Client::transact_write_items).then_error(|| {
        cancelled(vec![
            reason("None"),
            reason("None"),
            reason("ConditionalCheckFailed"),
        ])
    });
    let lookup = mock!(Client::get_item)
        .match_requests(|r| {
            r.key().and_then(|k| k.get("pk")) == Some(&s("IN#acme#alice#m-1"))
                && r.key().and_then(|k| k.get("sk")) == Some(&s("MSG"))
        })
        .then_output(|| {
            GetItemOutput::builder()
                .item("task_id", s("t-owner"))
                .build()
        });
    let store = store(&[&tx, &lookup]);
    let rec = record("t-new", TaskState::Submitted, 0, 0);

    let err = store
        .create_task(
            &rec,
            &[status_event(&rec, TaskState::Submitted)],
            Some(&inbound("m-1")),
        )
        .await
        .expect_err("the message condition failed");

    assert_eq!(
        err,
        StoreError::DuplicateMessage {
            message_id: "m-1".into(),
            task_id: "t-owner".into()
        }
    );
    assert_eq!(lookup.num_calls(), 1);
}

#[tokio::test]
async fn commit_cancelled_by_a_transaction_conflict_is_a_conflict() {
    let tx = mock!(Client::transact_write_items)
        .then_error(|| cancelled(vec![reason("TransactionConflict"), reason("None")]));
    let store = store(&[&tx]);
    let rec = record("t1", TaskState::Working, 5, 9);

    let err = store
        .commit(&rec, 5, &[status_event(&rec, TaskState::Completed)], None)
        .await
        .expect_err("a concurrent transaction cancelled ours");

    assert_eq!(
        err,
        StoreError::Conflict {
            task_id: "t1".into(),
            expected: 5
        }
    );
}

/// DynamoDB's refusal of an item over 400 KB is TooLarge, tried once: the same write
/// never fits on a retry (issue 18).
#[tokio::test]
async fn commit_of_an_item_over_the_size_limit_is_too_large_and_not_retried() {
    let tx = mock!(Client::transact_write_items)
        .sequence()
        .http_response(|| {
            http_error(
                400,
                "ValidationException",
                "Item size has exceeded the maximum allowed size",
            )
        })
        .repeatedly()
        .build();
    let store = store(&[&tx]);
    let rec = record("t1", TaskState::Working, 5, 9);

    let err = store
        .commit(&rec, 5, &[status_event(&rec, TaskState::Completed)], None)
        .await
        .expect_err("the item is too large");

    assert_eq!(err, StoreError::TooLarge("t1".into()));
    assert_eq!(tx.num_calls(), 1);
}

#[tokio::test]
async fn commit_whose_transaction_keeps_failing_with_500_is_unavailable() {
    let tx = mock!(Client::transact_write_items)
        .sequence()
        .http_response(|| http_error(500, "InternalServerError", "Internal server error"))
        .repeatedly()
        .build();
    let store = store(&[&tx]);
    let rec = record("t1", TaskState::Working, 5, 9);

    let err = store
        .commit(&rec, 5, &[status_event(&rec, TaskState::Completed)], None)
        .await
        .expect_err("the 500 never clears");

    let message = unavailable_message(err);
    assert!(
        message.contains("InternalServerError") || message.contains("500"),
        "the error should name the server error: {message}"
    );
    assert_eq!(tx.num_calls(), MAX_ATTEMPTS as usize);
}

#[tokio::test]
async fn commit_transaction_retried_after_a_500_succeeds_with_one_idempotency_token() {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let seen = tokens.clone();
    let tx = mock!(Client::transact_write_items)
        .match_requests(move |r: &TransactWriteItemsInput| {
            seen.lock()
                .unwrap()
                .push(r.client_request_token().map(str::to_owned));
            true
        })
        .sequence()
        .http_status(500, None)
        .output(|| TransactWriteItemsOutput::builder().build())
        .build();
    let store = store(&[&tx]);
    let rec = record("t1", TaskState::Working, 5, 9);

    let stored = store
        // Not a finishing transition, which would also stamp the events' expiry.
        .commit(
            &rec,
            5,
            &[status_event(&rec, TaskState::InputRequired)],
            None,
        )
        .await
        .expect("the 500 clears on the retry");

    assert_eq!(stored.version, 6);
    assert_eq!(stored.last_seq, 10);
    assert_eq!(tx.num_calls(), 2);
    // The retry resends the serialized request, so a transaction that was applied but
    // answered 500 is not applied twice: DynamoDB dedups on ClientRequestToken.
    let tokens = tokens.lock().unwrap();
    assert!(
        tokens.iter().all(Option::is_some),
        "TransactWriteItems must carry a ClientRequestToken: {tokens:?}"
    );
}

// ---------------------------------------------------------------------------------------
// 4. put_message duplicates
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn put_message_conditional_check_failed_is_a_duplicate() {
    let put = mock!(Client::put_item)
        .match_requests(|r| {
            r.condition_expression() == Some("attribute_not_exists(pk)")
                && r.item().and_then(|i| i.get("pk")) == Some(&s("IN#acme#alice#m-1"))
        })
        .then_error(|| {
            PutItemError::ConditionalCheckFailedException(
                ConditionalCheckFailedException::builder()
                    .message("The conditional request failed")
                    .item("pk", s("IN#acme#alice#m-1"))
                    .item("sk", s("MSG"))
                    .item("task_id", s(""))
                    .build(),
            )
        });
    let store = store(&[&put]);

    let err = store
        .put_message(&inbound("m-1"))
        .await
        .expect_err("the message was stored before");

    assert_eq!(
        err,
        StoreError::DuplicateMessage {
            message_id: "m-1".into(),
            task_id: String::new()
        }
    );
    assert_eq!(put.num_calls(), 1);
}

#[tokio::test]
async fn put_message_duplicate_of_a_task_message_names_that_task() {
    // The id was first used by a message that created task t-owner. The store asks for
    // ALL_OLD, and the contract (and EmbeddedStore) name the owning task.
    let put = mock!(Client::put_item).then_error(|| {
        PutItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder()
                .message("The conditional request failed")
                .item("pk", s("IN#acme#alice#m-1"))
                .item("sk", s("MSG"))
                .item("task_id", s("t-owner"))
                .build(),
        )
    });
    let store = store(&[&put]);

    let err = store
        .put_message(&inbound("m-1"))
        .await
        .expect_err("the message was stored before");

    assert_eq!(
        err,
        StoreError::DuplicateMessage {
            message_id: "m-1".into(),
            task_id: "t-owner".into()
        }
    );
}

// ---------------------------------------------------------------------------------------
// 5. The engine resolves a conflict on fresh state
// ---------------------------------------------------------------------------------------

/// Records every TransactWriteItems request the rule sees.
fn recording(
    seen: &Arc<Mutex<Vec<TransactWriteItemsInput>>>,
) -> impl Fn(&TransactWriteItemsInput) -> bool {
    let seen = seen.clone();
    move |r: &TransactWriteItemsInput| {
        seen.lock().unwrap().push(r.clone());
        true
    }
}

fn task_run(store: DynamoStore, rec: TaskRecord) -> TaskRun {
    TaskRun::new(Arc::new(store), rec)
}

/// (condition expression, :v, :s, the item) of a transaction's task put.
fn task_put(input: &TransactWriteItemsInput) -> (String, u64, u64, Item) {
    let put = input.transact_items()[0]
        .put()
        .expect("the task put comes first");
    let values = put
        .expression_attribute_values()
        .expect("the task put is conditional on values");
    (
        put.condition_expression().unwrap_or_default().to_owned(),
        number(values, ":v"),
        number(values, ":s"),
        put.item().clone(),
    )
}

#[tokio::test]
async fn run_conflict_reapplies_the_change_on_the_fresh_version() {
    // The run read version 1; meanwhile another writer moved the task to version 3
    // (two more events, and metadata the run never saw).
    let stale = record("t1", TaskState::Submitted, 1, 0);
    let mut fresh = record("t1", TaskState::Submitted, 3, 2);
    fresh.task.metadata = Some(serde_json::Map::from_iter([(
        "from-the-other-writer".to_owned(),
        serde_json::json!("kept"),
    )]));
    let fresh_item = task_item(&fresh);

    let seen = Arc::new(Mutex::new(Vec::new()));
    let conflict = mock!(Client::transact_write_items)
        .match_requests(recording(&seen))
        .then_error(|| cancelled(vec![reason("ConditionalCheckFailed"), reason("None")]));
    let reload = mock!(Client::get_item)
        .match_requests(|r| {
            r.key().and_then(|k| k.get("pk")) == Some(&s("TASK#t1"))
                && r.key().and_then(|k| k.get("sk")) == Some(&s("TASK"))
                && r.consistent_read() == Some(true)
        })
        .then_output(move || {
            GetItemOutput::builder()
                .set_item(Some(fresh_item.clone()))
                .build()
        });
    let commit = mock!(Client::transact_write_items)
        .match_requests(recording(&seen))
        .then_output(|| TransactWriteItemsOutput::builder().build());
    let store = store(&[&conflict, &reload, &commit]);
    let mut run = task_run(store, stale);

    run.set_status(TaskState::Working, None)
        .await
        .expect("the conflict is resolved on the fresh task");

    assert_eq!(conflict.num_calls(), 1);
    assert_eq!(reload.num_calls(), 1);
    assert_eq!(commit.num_calls(), 1);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);

    // First attempt: at the version the run had read.
    let (condition, v, last, _) = task_put(&seen[0]);
    assert_eq!(condition, "version = :v AND last_seq = :s");
    assert_eq!((v, last), (1, 0));

    // Second attempt: conditional on the fresh version and last seq, and built from the
    // fresh record, so the other writer's change is kept and the event follows its events.
    let (condition, v, last, item) = task_put(&seen[1]);
    assert_eq!(condition, "version = :v AND last_seq = :s");
    assert_eq!(
        (v, last),
        (3, 2),
        "the retry must be conditional on the fresh state"
    );
    assert_eq!(number(&item, "version"), 4);
    assert_eq!(number(&item, "last_seq"), 3);
    let written: TaskRecord = serde_json::from_str(string(&item, "record")).unwrap();
    assert_eq!(written.state(), TaskState::Working);
    assert_eq!(
        written.task.metadata, fresh.task.metadata,
        "the other writer's change must survive"
    );
    let event_keys: Vec<&str> = seen[1].transact_items()[1..]
        .iter()
        .map(|i| string(i.put().expect("event put").item(), "sk"))
        .collect();
    assert_eq!(event_keys, vec!["EV#00000000000000000003"]);
}

#[tokio::test]
async fn run_conflict_on_a_task_canceled_elsewhere_ends_without_a_second_write() {
    let stale = record("t1", TaskState::Working, 2, 1);
    let canceled = record("t1", TaskState::Canceled, 3, 2);
    let canceled_item = task_item(&canceled);

    let conflict = mock!(Client::transact_write_items)
        .then_error(|| cancelled(vec![reason("ConditionalCheckFailed"), reason("None")]));
    let reload = mock!(Client::get_item).then_output(move || {
        GetItemOutput::builder()
            .set_item(Some(canceled_item.clone()))
            .build()
    });
    let second_write = mock!(Client::transact_write_items)
        .then_output(|| TransactWriteItemsOutput::builder().build());
    let store = store(&[&conflict, &reload, &second_write]);
    let mut run = task_run(store, stale);

    let err = run
        .set_status(TaskState::Completed, None)
        .await
        .expect_err("the task was canceled elsewhere");

    assert_eq!(err, RunError::Ended(TaskState::Canceled));
    assert_eq!(conflict.num_calls(), 1);
    assert_eq!(reload.num_calls(), 1);
    assert_eq!(second_write.num_calls(), 0, "no write on a terminal task");
}
