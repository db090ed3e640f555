//! Leases, in process over the embedded store: one drive at a time, the sweep for a drive
//! that was cut off, and the hand-over of a drive that reaches its invocation's deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::a2a::{Message, Part, Role, TaskState};
use common::config::Config;
use common::engine::lease::{now_ms, Lease};
use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
use common::ops::Harness;
use common::store::{EmbeddedStore, Store, TaskRecord};

struct Dir(std::path::PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir() -> Dir {
    Dir(std::env::temp_dir().join(format!(
        "harness-leases-{}",
        common::engine::transition::new_id()
    )))
}

/// A harness that drives only when told to (no local wake-ups), as `owner`.
fn harness(
    store: Arc<dyn Store>,
    owner: &str,
    agent: Arc<dyn common::agent::Agent>,
) -> Arc<Harness> {
    harness_with_lease(store, owner, agent, common::engine::lease::DEFAULT_TTL)
}

/// [`harness`] whose drives take leases of `ttl`.
fn harness_with_lease(
    store: Arc<dyn Store>,
    owner: &str,
    agent: Arc<dyn common::agent::Agent>,
    ttl: Duration,
) -> Arc<Harness> {
    let config = Config {
        lease_owner: Some(owner.into()),
        lease_ttl: ttl,
        detached_runs: false,
        push_key: Some(common::push::seal::PushKey::generate()),
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
    common::channels::assert_sender(&mut message, "alice");
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
fn llm_agent(model: &Arc<common::models::scripted::Scripted>) -> Arc<dyn common::agent::Agent> {
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
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&d.0).expect("store"));
    let other = harness(store.clone(), "b", common::agent::conformance());
    let held = Lease {
        owner: "a".into(),
        until_ms: now_ms() + 800,
    };
    let id = working_task(store.as_ref(), "tck-complete-task-1", Some(held))
        .await
        .task
        .id;

    other.engine.drive_now(&id, None).await.expect("drive");
    let rec = load(store.as_ref(), &id).await;
    assert_eq!(rec.state(), TaskState::Working, "a's lease keeps b off");
    assert_eq!(
        other.engine.sweep(10).await.expect("sweep"),
        Vec::<String>::new()
    );

    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(
        other.engine.sweep(10).await.expect("sweep"),
        vec![id.clone()]
    );
    let swept = load(store.as_ref(), &id).await;
    assert!(
        swept.wake && swept.lease.is_none(),
        "runnable and unleased: {swept:?}"
    );

    other.engine.drive_now(&id, None).await.expect("drive");
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
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&d.0).expect("store"));
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "current_time", "arguments": {}}]},
        {"text": "done"}
    ]}"#;
    let model = scripted(script);
    let h = harness(store.clone(), "a", llm_agent(&model));
    let id = working_task(store.as_ref(), "m-1", None).await.task.id;

    let near = Instant::now() + Duration::from_secs(2);
    h.engine.drive_now(&id, Some(near)).await.expect("drive");
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

    h.engine.drive_now(&id, None).await.expect("drive");
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
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&d.0).expect("store"));
    let script = r#"{"turns": [{"text": "slow but once", "delay_ms": 2500}]}"#;
    let model = scripted(script);
    let ttl = Duration::from_secs(1);
    let a = harness_with_lease(store.clone(), "a", llm_agent(&model), ttl);
    let b = harness_with_lease(store.clone(), "b", llm_agent(&model), ttl);
    let id = working_task(store.as_ref(), "m-slow", None).await.task.id;

    let drive = tokio::spawn({
        let (a, id) = (a.clone(), id.clone());
        async move { a.engine.drive_now(&id, None).await }
    });
    let mut expiries = Vec::new();
    let mut swept = Vec::new();
    while !drive.is_finished() {
        swept.extend(b.engine.sweep(10).await.expect("sweep"));
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

/// Issue 19, item 3: a model call the invocation's deadline cuts off is dropped, and the
/// task handed over at once (runnable, unleased: its wake-up), not after its lease
/// lapses; the next drive makes the call again (it was never committed) and completes.
#[tokio::test]
async fn a_model_call_cut_off_by_the_deadline_is_handed_over_at_once() {
    let d = dir();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&d.0).expect("store"));
    let script = r#"{"turns": [{"text": "after the hand-over", "delay_ms": 3000}]}"#;
    let model = scripted(script);
    let h = harness(store.clone(), "a", llm_agent(&model));
    let id = working_task(store.as_ref(), "m-cut", None).await.task.id;

    let started = Instant::now();
    let deadline = started + Duration::from_millis(2000);
    h.engine
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

    h.engine.drive_now(&id, None).await.expect("drive");
    let done = load(store.as_ref(), &id).await;
    assert_eq!(done.state(), TaskState::Completed);
    assert_eq!(model.calls(), 2);
}
