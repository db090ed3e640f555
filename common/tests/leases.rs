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
    let config = Config {
        lease_owner: Some(owner.into()),
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
    let model =
        Arc::new(common::models::scripted::Scripted::parse("test", script).expect("script"));
    let agent = common::agent::llm::LlmAgent::new(
        model.clone(),
        "scripted",
        common::agent::tools::ToolRegistry::builtin(),
        Default::default(),
    );
    let h = harness(store.clone(), "a", Arc::new(agent));
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
