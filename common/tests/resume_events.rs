//! The resume function, end to end without a Lambda runtime: real DynamoDB stream events
//! from `tests/fixtures/` go into `resume::handle` exactly as `lambda::run_resume` hands
//! them over (`aws_lambda_events::event::dynamodb::Event`), and the batch response it
//! answers is checked as the JSON the runtime posts back to the event source mapping.
//!
//! The fixtures are real records: DynamoDB Local's stream of a table `template.yaml`
//! defines, written by the functions under `cargo lambda watch` (HARNESS_STORE=dynamodb),
//! read with DescribeStream / GetShardIterator / GetRecords and put in the shape the event
//! source mapping delivers by `tests/lambda_watch/stream_tool.py --dump --no-filter`.
//! What was written: a `returnImmediately` SendMessage (task A, stored runnable: `wake`),
//! the resume function driving task A (its lease taken, then released on completion),
//! then a second `returnImmediately` SendMessage (task B).
//!
//! * `dynamodb-stream-capture.json`: every record of that stream, in order;
//! * `dynamodb-stream-resume-batch.json`: one batch of four of them: (1) task A's INSERT,
//!   runnable and unleased, to resume; (2) task A's first event item (`EV#...`), to skip;
//!   (3) task A's MODIFY taking the lease (in the sweeper's index, `gsi2pk`), to skip;
//!   (4) task B's INSERT, runnable, which the stores here do not hold: its drive fails and
//!   the record comes back as a batch item failure.

mod support;

use std::path::Path;
use std::sync::Arc;

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use common::a2a::{Message, Part, Role, TaskState};
use common::config::Config;
use common::ext::task::{Participant, ParticipantKind, Role as TaskRole, TaskExtension};
use common::ops::Harness;
use common::resume::handle;
use common::store::dynamodb::stream::task_to_resume;
use common::store::{DynamoStore, EmbeddedStore, Store, TaskRecord};
use serde_json::{json, Value};

/// Task A: the runnable task of record (1), which each test creates in its store.
const RESUMED_TASK: &str = "0e53fe23-820f-403b-9bc2-ac25149aa40f";
/// Task B: the runnable task of record (4), in no store the tests use.
const UNKNOWN_TASK: &str = "6d7a12a5-9117-4b7a-8e24-e8101e59819c";
const BATCH: &str = "dynamodb-stream-resume-batch.json";
const CAPTURE: &str = "dynamodb-stream-capture.json";

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

fn fixture_text(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
}

/// The fixture as the resume function's runtime deserializes it.
fn stream_event(name: &str) -> Event {
    serde_json::from_str(&fixture_text(name))
        .unwrap_or_else(|e| panic!("fixture {name} is not a DynamoDB stream event: {e}"))
}

fn new_image(record: &EventRecord) -> Value {
    serde_json::to_value(&record.change.new_image).expect("an image serializes")
}

fn sequence_number(record: &EventRecord) -> String {
    record
        .change
        .sequence_number
        .clone()
        .expect("a stream record has a SequenceNumber")
}

/// The JSON the runtime posts back for `handle`'s answer.
async fn handle_json(harness: &Arc<Harness>, event: &Event) -> Value {
    let response = handle(harness.engine(), event, None).await;
    serde_json::to_value(&response).expect("the batch response serializes")
}

/// Configured as `lambda::config_from_env` configures the resume function: no run goes
/// on after an answer (so no drive starts by itself when the test writes a runnable
/// task), and the recorded messages' sender stands for one participant.
fn lambda_config() -> Config {
    Config {
        public_url: String::new(),
        rate_limit_per_minute: 0,
        detached_runs: false,
        default_participant: Some("anonymous".into()),
        push_key: Some(common::sealing::PushKey::generate()),
        ..Config::default()
    }
}

/// Task A as the send-message function stored it for a `returnImmediately` message in
/// Lambda: SUBMITTED, assigned to the harness, its message asserted as anonymous's, and
/// runnable (`wake`) with no lease.
async fn create_runnable_task(store: &Arc<dyn Store>, id: &str) -> TaskRecord {
    let mut message = Message {
        message_id: format!("tck-complete-task-{}", common::engine::transition::new_id()),
        role: Role::User,
        parts: vec![Part::text("hi")],
        ..Default::default()
    };
    common::ext::participant::assert_sender(&mut message, "anonymous");
    let mut ext = TaskExtension::from_text("hi");
    ext.add(Participant::new(
        "anonymous",
        ParticipantKind::Human,
        TaskRole::Reporter,
    ));
    ext.add(Participant::new(
        "tiny-harness",
        ParticipantKind::Agent,
        TaskRole::Assignee,
    ));
    let mut rec = common::engine::transition::new_task_with_id(id.into(), "", &mut message, &ext);
    rec.wake = true;
    let created = common::engine::transition::created(&rec);
    let rec = store
        .create_task(&rec, &[created], None)
        .await
        .expect("create the task");
    assert_eq!(rec.state(), TaskState::Submitted);
    assert!(rec.wake && rec.lease.is_none(), "runnable and unleased");
    rec
}

async fn load(store: &Arc<dyn Store>, id: &str) -> TaskRecord {
    store
        .load_task(id)
        .await
        .expect("load the task")
        .unwrap_or_else(|| panic!("task {id} is stored"))
}

/// Runs the batch through `handle` on `store`, which holds task A only, and checks what
/// the resume function must do: complete task A (the conformance agent's `Complete`),
/// skip records (2) and (3), and report record (4) for a retry. A redelivery of the same
/// batch (delivery is at least once) changes nothing.
async fn resume_the_batch(store: Arc<dyn Store>) {
    let harness = Harness::new(store.clone(), common::agent::conformance(), lambda_config())
        .expect("build the harness");
    create_runnable_task(&store, RESUMED_TASK).await;
    assert!(
        store.load_task(UNKNOWN_TASK).await.expect("load").is_none(),
        "task B must not be in the store"
    );

    let event = stream_event(BATCH);
    let expected = json!({
        "batchItemFailures": [{"itemIdentifier": sequence_number(&event.records[3])}]
    });
    assert_eq!(handle_json(&harness, &event).await, expected);

    let done = load(&store, RESUMED_TASK).await;
    assert_eq!(done.state(), TaskState::Completed, "{:?}", done.task.status);
    assert!(
        !done.wake && done.lease.is_none(),
        "a completed task is neither runnable nor leased"
    );
    let answer = done
        .task
        .status
        .as_ref()
        .and_then(|s| s.message.as_ref())
        .expect("the completion carries the agent's message");
    assert_eq!(answer.role, Role::Agent);
    assert_eq!(answer.parts, vec![Part::text("Hello from TCK")]);

    // The same batch again: task A has ended, so only record (4) fails again.
    assert_eq!(handle_json(&harness, &event).await, expected);
    let again = load(&store, RESUMED_TASK).await;
    assert_eq!(
        again.version, done.version,
        "an ended task is not written again"
    );
}

// ---------------------------------------------------------------------------------------
// the fixtures
// ---------------------------------------------------------------------------------------

/// The fixtures are what the event source mapping delivers: DynamoDB stream records
/// with their source, version, stream ARN, sequence number and both images.
#[test]
fn the_fixtures_are_stream_events_as_lambda_delivers_them() {
    for name in [BATCH, CAPTURE] {
        let raw: Value = serde_json::from_str(&fixture_text(name)).expect("JSON");
        let event = stream_event(name);
        assert!(!event.records.is_empty(), "{name}: no records");
        assert_eq!(
            raw["Records"].as_array().map(Vec::len),
            Some(event.records.len())
        );
        let mut last = String::new();
        for (record, raw) in event.records.iter().zip(raw["Records"].as_array().unwrap()) {
            assert_eq!(
                record.event_source.as_deref(),
                Some("aws:dynamodb"),
                "{name}"
            );
            assert_eq!(record.event_version.as_deref(), Some("1.1"), "{name}");
            assert!(
                matches!(record.event_name.as_str(), "INSERT" | "MODIFY" | "REMOVE"),
                "{name}: {}",
                record.event_name
            );
            assert!(!record.event_id.is_empty() && !record.aws_region.is_empty());
            let arn = record.event_source_arn.as_deref().unwrap_or_default();
            assert!(
                arn.starts_with("arn:aws:dynamodb:") && arn.contains("/stream/"),
                "{name}: the stream's ARN, not {arn:?}"
            );
            // Epoch seconds, as a number (what `float_unix_epoch` reads).
            assert!(raw["dynamodb"]["ApproximateCreationDateTime"].is_number());
            assert!(record.change.approximate_creation_date_time.timestamp() > 1_600_000_000);
            let keys = serde_json::to_value(&record.change.keys).expect("keys");
            assert!(keys["pk"]["S"].is_string() && keys["sk"]["S"].is_string());
            assert_eq!(
                raw["dynamodb"]["StreamViewType"], "NEW_AND_OLD_IMAGES",
                "the table's stream view (template.yaml)"
            );
            // Stream order: sequence numbers grow (DynamoDB Local pads them to one width).
            let seq = sequence_number(record);
            assert!(seq > last, "{name}: {seq} after {last}");
            last = seq;
        }
    }
}

/// `task_to_resume` on each record of the batch: only the runnable, unleased task items
/// ask for a drive.
#[test]
fn task_to_resume_picks_runnable_unleased_task_items() {
    let event = stream_event(BATCH);
    assert_eq!(event.records.len(), 4);
    let images: Vec<Value> = event.records.iter().map(new_image).collect();

    // (1) task A inserted runnable: `wake`, no `gsi2pk`.
    assert_eq!(event.records[0].event_name, "INSERT");
    assert_eq!(images[0]["sk"]["S"], "TASK");
    assert_eq!(images[0]["wake"], json!({"N": "1"}));
    assert!(images[0].get("gsi2pk").is_none());
    assert_eq!(
        task_to_resume(&event.records[0]).as_deref(),
        Some(RESUMED_TASK)
    );

    // (2) an event item of task A.
    assert_eq!(images[1]["pk"]["S"], format!("TASK#{RESUMED_TASK}"));
    assert!(images[1]["sk"]["S"].as_str().unwrap().starts_with("EV#"));
    assert_eq!(task_to_resume(&event.records[1]), None);

    // (3) task A leased by the drive: in the sweeper's index, no longer `wake`.
    assert_eq!(event.records[2].event_name, "MODIFY");
    assert_eq!(images[2]["sk"]["S"], "TASK");
    assert!(images[2]["gsi2pk"]["S"].is_string());
    assert!(images[2].get("wake").is_none());
    let old = serde_json::to_value(&event.records[2].change.old_image).expect("old image");
    assert_eq!(
        old["wake"],
        json!({"N": "1"}),
        "the lease was taken from the wake-up"
    );
    assert_eq!(task_to_resume(&event.records[2]), None);

    // (4) task B inserted runnable.
    assert_eq!(event.records[3].event_name, "INSERT");
    assert_eq!(
        task_to_resume(&event.records[3]).as_deref(),
        Some(UNKNOWN_TASK)
    );
}

/// Over the whole captured stream (tasks, events, inbound messages, the drive's writes),
/// only the two runnable inserts ask for a drive: the records the mapping's filter
/// passes (`tests/lambda_watch/test_resume_stream.py` checks the filter on this file).
#[test]
fn task_to_resume_over_a_whole_stream() {
    let event = stream_event(CAPTURE);
    let resumed: Vec<(usize, String)> = event
        .records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| task_to_resume(r).map(|id| (i, id)))
        .collect();
    assert_eq!(
        resumed,
        vec![(0, RESUMED_TASK.to_owned()), (8, UNKNOWN_TASK.to_owned())]
    );
    // A REMOVE (TTL, or a deleted item) never asks for a drive, whatever it held.
    let mut removed = event.records[0].clone();
    removed.event_name = "REMOVE".into();
    assert_eq!(task_to_resume(&removed), None);
}

// ---------------------------------------------------------------------------------------
// the handler
// ---------------------------------------------------------------------------------------

/// The batch on the embedded store: task A completes, record (4) is a batch item failure.
#[tokio::test]
async fn handle_resumes_the_task_and_reports_the_missing_one() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir).expect("open the store"));
    resume_the_batch(store).await;
}

/// The same batch on DynamoDB (DynamoDB Local, a fresh table from template.yaml's
/// definition): the store the resume function runs on in AWS.
#[tokio::test]
async fn handle_resumes_the_task_on_dynamodb() {
    let Some(client) = support::dynamo_client() else {
        return;
    };
    let table = support::fresh_table(&client).await;
    let store: Arc<dyn Store> = Arc::new(DynamoStore::new(client, table));
    resume_the_batch(store).await;
}

/// A batch with nothing to resume, or no records at all, answers no failures.
#[tokio::test]
async fn handle_skips_records_that_ask_for_nothing() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir).expect("open the store"));
    let harness = Harness::new(store, common::agent::conformance(), lambda_config())
        .expect("build the harness");
    let mut event = stream_event(BATCH);
    event.records = vec![event.records[1].clone(), event.records[2].clone()];
    assert_eq!(
        handle_json(&harness, &event).await,
        json!({"batchItemFailures": []})
    );
    event.records.clear();
    assert_eq!(
        handle_json(&harness, &event).await,
        json!({"batchItemFailures": []})
    );
}
