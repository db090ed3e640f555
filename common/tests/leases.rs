//! Leases and the sweep, in process: one drive at a time, the sweep for a drive that was
//! cut off, the hand-over of a drive that reaches its invocation's deadline, and (issue
//! 19, item 1) the sweep for what no drive would otherwise ever pick up: a wake-up no one
//! answered, and a parent whose wake-up write failed (on DynamoDB Local, the fault
//! injected by an SDK interceptor).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::a2a::{Message, Part, Role, TaskState};
use common::config::Config;
use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
use common::ops::Harness;
use common::store::{EmbeddedStore, Store, TaskRecord};
use common::task::lease::{now_ms, Lease};

fn dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("harness-leases-")
        .tempdir()
        .expect("a temporary directory")
}

/// A harness that drives only when told to (no local wake-ups), as `owner`.
fn harness(
    store: Arc<dyn Store>,
    owner: &str,
    agent: Arc<dyn common::engine::Agent>,
) -> Arc<Harness> {
    harness_with_lease(store, owner, agent, common::task::lease::DEFAULT_TTL)
}

/// [`harness`] whose drives take leases of `ttl`.
fn harness_with_lease(
    store: Arc<dyn Store>,
    owner: &str,
    agent: Arc<dyn common::engine::Agent>,
    ttl: Duration,
) -> Arc<Harness> {
    let config = Config {
        lease_owner: Some(owner.into()),
        lease_ttl: ttl,
        detached_runs: false,
        push_key: Some(common::sealing::PushKey::generate()),
        ..Default::default()
    };
    Harness::new(store, agent, config).expect("harness")
}

/// A WORKING task for the harness's agent, its first message `message_id` from alice.
async fn working_task(store: &dyn Store, message_id: &str, lease: Option<Lease>) -> TaskRecord {
    let mut message = Message {
        message_id: message_id.into(),
        role: Role::User,
        parts: vec![Part::text("go")],
        ..Default::default()
    };
    common::ext::participant::assert_sender(&mut message, "alice");
    let mut ext = TaskExtension::from_text("go");
    ext.add(Participant::new(
        "alice",
        ParticipantKind::Human,
        ParticipantRole::Reporter,
    ));
    ext.add(Participant::new(
        "tiny-harness",
        ParticipantKind::Agent,
        ParticipantRole::Assignee,
    ));
    let mut rec = common::engine::transition::new_task("", &mut message, &ext);
    common::engine::transition::set_status(&mut rec, TaskState::Working, None, None);
    rec.lease = lease;
    let created = common::engine::transition::created(&rec);
    store
        .create_task(&rec, &[created], None)
        .await
        .expect("create")
}

fn scripted(script: &str) -> Arc<common::models::scripted::Scripted> {
    Arc::new(common::models::scripted::Scripted::parse("test", script).expect("script"))
}

/// The LLM agent on `model`, with the built-in tools.
fn llm_agent(model: &Arc<common::models::scripted::Scripted>) -> Arc<dyn common::engine::Agent> {
    Arc::new(common::agent::llm::LlmAgent::new(
        model.clone(),
        "scripted",
        common::agent::tools::ToolRegistry::builtin(),
        Default::default(),
    ))
}

async fn load(store: &dyn Store, id: &str) -> TaskRecord {
    store.load_task(id).await.expect("load").expect("task")
}

#[tokio::test]
async fn a_held_lease_keeps_other_drives_off_and_a_lapsed_one_is_swept_to_another() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(d.path()).expect("store"));
    let other = harness(store.clone(), "b", common::agent::conformance());
    let held = Lease {
        owner: "a".into(),
        until_ms: now_ms() + 800,
    };
    let id = working_task(store.as_ref(), "tck-complete-task-1", Some(held))
        .await
        .task
        .id;

    other.engine().drive_now(&id, None).await.expect("drive");
    let rec = load(store.as_ref(), &id).await;
    assert_eq!(rec.state(), TaskState::Working, "a's lease keeps b off");
    assert_eq!(
        other.engine().sweep(10).await.expect("sweep"),
        Vec::<String>::new()
    );

    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(
        other.engine().sweep(10).await.expect("sweep"),
        vec![id.clone()]
    );
    let swept = load(store.as_ref(), &id).await;
    assert!(
        swept.wake && swept.lease.is_none(),
        "runnable and unleased: {swept:?}"
    );

    other.engine().drive_now(&id, None).await.expect("drive");
    let done = load(store.as_ref(), &id).await;
    assert_eq!(done.state(), TaskState::Completed);
    assert!(
        done.lease.is_none() && !done.wake,
        "released: {:?}",
        done.lease
    );
}

#[tokio::test]
async fn a_drive_near_its_deadline_hands_the_task_over_from_its_checkpoint() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(d.path()).expect("store"));
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "done"}
    ]}"#;
    let model = scripted(script);
    let h = harness(store.clone(), "a", llm_agent(&model));
    let id = working_task(store.as_ref(), "m-1", None).await.task.id;

    let near = Instant::now() + Duration::from_secs(2);
    h.engine().drive_now(&id, Some(near)).await.expect("drive");
    let handed = load(store.as_ref(), &id).await;
    assert_eq!(handed.state(), TaskState::Working);
    assert!(
        handed.wake && handed.lease.is_none(),
        "left runnable: {handed:?}"
    );
    assert_eq!(
        model.calls(),
        1,
        "one step (every drive makes progress), then no step that could not finish"
    );
    assert_eq!(handed.agent.model_calls, 1, "the step was checkpointed");
    assert_eq!(handed.agent.inputs_upto, 1, "m-1 was taken in");

    h.engine().drive_now(&id, None).await.expect("drive");
    let done = load(store.as_ref(), &id).await;
    assert_eq!(done.state(), TaskState::Completed);
    assert_eq!(model.calls(), 2, "the committed call was not repeated");
}

/// Issue 19, item 3: a model call slower than the lease (2.5 s against 1 s) keeps the
/// lease while it waits (renewed every third of it: the expiry moves on during the call),
/// so another process's sweep, looking all along, finds nothing to take; the call is made
/// once and the task completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_call_slower_than_the_lease_keeps_it_and_is_made_once() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(d.path()).expect("store"));
    let script = r#"{"turns": [{"text": "slow but once", "delay_ms": 2500}]}"#;
    let model = scripted(script);
    let ttl = Duration::from_secs(1);
    let a = harness_with_lease(store.clone(), "a", llm_agent(&model), ttl);
    let b = harness_with_lease(store.clone(), "b", llm_agent(&model), ttl);
    let id = working_task(store.as_ref(), "m-slow", None).await.task.id;

    let drive = tokio::spawn({
        let (a, id) = (a.clone(), id.clone());
        async move { a.engine().drive_now(&id, None).await }
    });
    let mut expiries = Vec::new();
    let mut swept = Vec::new();
    while !drive.is_finished() {
        swept.extend(b.engine().sweep(10).await.expect("sweep"));
        if let Some(l) = load(store.as_ref(), &id).await.lease {
            assert_eq!(l.owner, "a", "only a drives");
            if expiries.last() != Some(&l.until_ms) {
                expiries.push(l.until_ms);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drive.await.expect("join").expect("drive");

    let done = load(store.as_ref(), &id).await;
    assert_eq!(done.state(), TaskState::Completed, "{done:?}");
    assert_eq!(model.calls(), 1, "the slow call was made once");
    assert!(swept.is_empty(), "the sweep took the task: {swept:?}");
    assert!(expiries.len() >= 4, "renewed while waiting: {expiries:?}");
}

/// Issue 19: a task whose drives keep dying before their next step (a poisoned task, or a
/// store that keeps refusing it) is handed on by the sweep at most 10 times; the next
/// time it fails, saying why, instead of costing a drive a minute forever.
#[tokio::test]
async fn a_task_no_drive_gets_through_fails_after_ten_hand_overs() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(d.path()).expect("store"));
    let model = scripted(r#"{"turns": [{"text": "never reached"}]}"#);
    let sweeper = harness(store.clone(), "sweeper", llm_agent(&model));
    let lapsed = || Lease {
        owner: "a-drive-that-died".into(),
        until_ms: now_ms() - 1,
    };
    let id = working_task(store.as_ref(), "m-poison", Some(lapsed()))
        .await
        .task
        .id;
    for round in 1..=common::engine::MAX_HANDOVERS {
        assert_eq!(
            sweeper.engine().sweep(10).await.expect("sweep"),
            std::slice::from_ref(&id)
        );
        let rec = load(store.as_ref(), &id).await;
        assert_eq!((rec.state(), rec.handovers), (TaskState::Working, round));
        // A drive takes it and dies before its first checkpoint.
        let taken = TaskRecord {
            lease: Some(lapsed()),
            wake: false,
            ..rec.clone()
        };
        store
            .commit(&taken, rec.version, &[], None)
            .await
            .expect("taken");
    }
    assert!(sweeper.engine().sweep(10).await.expect("sweep").is_empty());
    let failed = load(store.as_ref(), &id).await;
    assert_eq!(failed.state(), TaskState::Failed);
    assert!(!failed.wake && failed.lease.is_none());
    let text = failed
        .task
        .status
        .and_then(|s| s.message)
        .map(|m| m.parts[0].text.clone());
    assert!(
        format!("{text:?}").contains("handed to a new drive 10 times without progress"),
        "{text:?}"
    );
    assert_eq!(model.calls(), 0);
}

/// A tool that takes `delay`, counting its runs.
struct SlowTool {
    delay: Duration,
    runs: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl common::models::Tool for SlowTool {
    async fn run(&self, _: &serde_json::Value) -> Result<String, common::models::ToolError> {
        self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        Ok("done slowly".into())
    }
}

/// Issue 19, item 3: a tool slower than the lease (2.5 s against 1 s) keeps it while it
/// runs, as a model call does: another process's sweep finds nothing to take, the tool
/// runs once and the task completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_slower_than_the_lease_keeps_it_and_runs_once() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(d.path()).expect("store"));
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "slow_tool", "arguments": {}}]},
        {"text": "done"}
    ]}"#;
    let model = scripted(script);
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let agent = || -> Arc<dyn common::engine::Agent> {
        let mut tools = common::agent::tools::ToolRegistry::builtin();
        let schema = r#"{"name": "slow_tool", "description": "Takes its time",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}"#;
        let tool = SlowTool {
            delay: Duration::from_millis(2500),
            runs: runs.clone(),
        };
        tools.register(schema, tool).expect("schema");
        Arc::new(common::agent::llm::LlmAgent::new(
            model.clone(),
            "scripted",
            tools,
            Default::default(),
        ))
    };
    let ttl = Duration::from_secs(1);
    let a = harness_with_lease(store.clone(), "a", agent(), ttl);
    let b = harness_with_lease(store.clone(), "b", agent(), ttl);
    let id = working_task(store.as_ref(), "m-tool", None).await.task.id;

    let drive = tokio::spawn({
        let (a, id) = (a.clone(), id.clone());
        async move { a.engine().drive_now(&id, None).await }
    });
    let mut swept = Vec::new();
    while !drive.is_finished() {
        swept.extend(b.engine().sweep(10).await.expect("sweep"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drive.await.expect("join").expect("drive");

    let done = load(store.as_ref(), &id).await;
    assert_eq!(done.state(), TaskState::Completed, "{done:?}");
    assert!(swept.is_empty(), "the sweep took the task: {swept:?}");
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the tool ran once"
    );
}

/// Issue 19, item 3: a model call the invocation's deadline cuts off is dropped, and the
/// task handed over at once (runnable, unleased: its wake-up), not after its lease
/// lapses; the next drive makes the call again (it was never committed) and completes.
#[tokio::test]
async fn a_model_call_cut_off_by_the_deadline_is_handed_over_at_once() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(d.path()).expect("store"));
    let script = r#"{"turns": [{"text": "after the hand-over", "delay_ms": 3000}]}"#;
    let model = scripted(script);
    let h = harness(store.clone(), "a", llm_agent(&model));
    let id = working_task(store.as_ref(), "m-cut", None).await.task.id;

    let started = Instant::now();
    let deadline = started + Duration::from_millis(2000);
    h.engine()
        .drive_now(&id, Some(deadline))
        .await
        .expect("drive");
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "handed over before the deadline: {:?}",
        started.elapsed()
    );
    let handed = load(store.as_ref(), &id).await;
    assert_eq!(handed.state(), TaskState::Working);
    assert!(handed.wake && handed.lease.is_none(), "{handed:?}");
    assert_eq!(
        handed.agent.model_calls, 0,
        "the cut call was not committed"
    );
    assert_eq!(model.calls(), 1);

    h.engine().drive_now(&id, None).await.expect("drive");
    let done = load(store.as_ref(), &id).await;
    assert_eq!(done.state(), TaskState::Completed);
    assert_eq!(model.calls(), 2);
}

/// A harness whose wake-ups (the stand-in for the table's stream) are not watched: what a
/// lost stream record, or a process that died between its write and its drive, leaves.
async fn a_wake_up_no_drive_answered_is_rung_again_by_the_sweep(store: Arc<dyn Store>) {
    let model = scripted(r#"{"turns": [{"text": "done"}]}"#);
    let ttl = Duration::from_secs(1);
    let h = harness_with_lease(store.clone(), "a", llm_agent(&model), ttl);
    let rec = working_task(store.as_ref(), &common::engine::transition::new_id(), None).await;
    let mut woken = rec.clone();
    woken.wake = true;
    let rung = (store.commit(&woken, rec.version, &[], None).await).expect("wake");
    let id = rung.task.id.clone();

    assert!(
        !h.engine().sweep(10).await.expect("sweep").contains(&id),
        "not before its grace"
    );
    tokio::time::sleep(h.engine().wake_grace() + Duration::from_millis(100)).await;
    let mut wakeups = store.wakeups();
    let swept = h.engine().sweep(1000).await.expect("sweep");
    assert!(swept.contains(&id), "rung again: {swept:?}");
    let mut signalled = false;
    while let Ok(woken) = wakeups.try_recv() {
        signalled |= woken == id;
    }
    assert!(signalled, "the sweep's write is a wake-up");
    let again = load(store.as_ref(), &id).await;
    assert!(again.wake && again.lease.is_none(), "{again:?}");

    h.engine().drive_now(&id, None).await.expect("drive");
    let done = load(store.as_ref(), &id).await;
    assert_eq!(done.state(), TaskState::Completed);
    assert_eq!(model.calls(), 1);
    tokio::time::sleep(h.engine().wake_grace() + Duration::from_millis(100)).await;
    assert!(
        !h.engine().sweep(1000).await.expect("sweep").contains(&id),
        "a finished task is not swept"
    );
}

#[tokio::test]
async fn a_wake_up_no_drive_answered_is_rung_again_by_the_sweep_embedded() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(d.path()).expect("store"));
    a_wake_up_no_drive_answered_is_rung_again_by_the_sweep(store).await;
}

#[tokio::test]
async fn a_wake_up_no_drive_answered_is_rung_again_by_the_sweep_dynamodb() {
    let Some(client) = support::dynamo_client() else {
        return;
    };
    let table = support::fresh_table(&client).await;
    let store: Arc<dyn Store> = Arc::new(common::store::DynamoStore::new(client, table));
    a_wake_up_no_drive_answered_is_rung_again_by_the_sweep(store).await;
}

/// Fails every write of one task's head while armed, as a throttled or failed request
/// would: injected into the SDK's request pipeline, before anything is sent.
#[derive(Debug, Clone, Default)]
struct FailWritesOf(Arc<std::sync::Mutex<Option<String>>>);

impl FailWritesOf {
    fn arm(&self, task_id: Option<&str>) {
        *self.0.lock().expect("armed") = task_id.map(|id| format!("TASK#{id}"));
    }

    fn hits(&self, input: &aws_smithy_runtime_api::client::interceptors::context::Input) -> bool {
        use aws_sdk_dynamodb::operation::put_item::PutItemInput;
        use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput;
        let Some(pk) = self.0.lock().expect("armed").clone() else {
            return false;
        };
        let head = |item: Option<
            &std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
        >| {
            item.is_some_and(|i| {
                i.get("pk").and_then(|v| v.as_s().ok()) == Some(&pk)
                    && i.get("sk").and_then(|v| v.as_s().ok()).map(String::as_str) == Some("TASK")
            })
        };
        if let Some(put) = input.downcast_ref::<PutItemInput>() {
            return head(put.item());
        }
        input
            .downcast_ref::<TransactWriteItemsInput>()
            .is_some_and(|t| {
                t.transact_items()
                    .iter()
                    .any(|w| head(w.put().map(|p| p.item())))
            })
    }
}

impl aws_smithy_runtime_api::client::interceptors::Intercept for FailWritesOf {
    fn name(&self) -> &'static str {
        "fail-writes-of"
    }

    fn read_before_execution(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        if self.hits(context.input()) {
            return Err("injected: the write of the parent failed".into());
        }
        Ok(())
    }
}

/// Issue 19, must-show 2: the parent's wake-up write fails when its sub-task is completed;
/// the child's ending write still says its parents are owed one, so the next sweep wakes
/// the parent, which takes the outcome in and completes.
#[tokio::test]
async fn a_parent_whose_wake_up_write_failed_is_woken_by_the_next_sweep() {
    let Some(config) = support::dynamo_config() else {
        return;
    };
    let faults = FailWritesOf::default();
    let client = aws_sdk_dynamodb::Client::from_conf(config.interceptor(faults.clone()).build());
    let table = support::fresh_table(&client).await;
    let store: Arc<dyn Store> = Arc::new(common::store::DynamoStore::new(client, table));
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {"participant_id": "alice", "name": "Measure", "goal": "Measure the shed"}}]},
        {"text": "Painted, with the measurements."}
    ]}"#;
    let model = scripted(script);
    let h = harness_with_lease(
        store.clone(),
        "a",
        llm_agent(&model),
        Duration::from_secs(1),
    );
    let parent = working_task(store.as_ref(), "m-parent", None).await.task.id;
    h.engine().drive_now(&parent, None).await.expect("drive");
    let child = format!("{parent}.1");
    assert!(
        store.load_task(&child).await.expect("load").is_some(),
        "the sub-task"
    );

    faults.arm(Some(&parent));
    let reply = Message {
        message_id: "m-measured".into(),
        role: Role::User,
        task_id: child.clone(),
        parts: vec![Part::text("3 by 4 metres")],
        ..Default::default()
    };
    let call = common::a2a::Call::SendMessage(common::a2a::SendMessageRequest {
        message: Some(reply),
        ..Default::default()
    });
    let caller = common::ops::Caller::named("alice");
    assert!(common::ops::execute(&h, call, &caller).await.is_ok());
    let ended = load(store.as_ref(), &child).await;
    assert_eq!(ended.state(), TaskState::Completed);
    assert!(ended.parents_owed, "the failed wake-up is still owed");
    assert!(
        !load(store.as_ref(), &parent).await.wake,
        "the parent sleeps"
    );

    faults.arm(None);
    tokio::time::sleep(h.engine().wake_grace() + Duration::from_millis(100)).await;
    let swept = h.engine().sweep(1000).await.expect("sweep");
    assert!(swept.contains(&child), "{swept:?}");
    assert!(!load(store.as_ref(), &child).await.parents_owed, "paid");
    let woken = load(store.as_ref(), &parent).await;
    assert!(woken.wake && woken.lease.is_none(), "{woken:?}");

    h.engine().drive_now(&parent, None).await.expect("drive");
    let done = load(store.as_ref(), &parent).await;
    assert_eq!(done.state(), TaskState::Completed, "{done:?}");
    assert_eq!(model.calls(), 2, "no call repeated");
}
