//! A task's bounds (issue 48, item 2) as both stores keep them in their conditional write:
//! a commit that would grow a task past its messages or its bytes is refused
//! (`TaskFull`, naming the bound) and stores nothing; of two writers racing for the last
//! room, one commits and the other's retry is refused, so the race passes no bound; the
//! commit that ends a full task still goes in. Run against the embedded store and against
//! DynamoDB Local (`HARNESS_TEST_DYNAMODB_ENDPOINT`).

mod support;

use std::sync::Arc;

use common::a2a::{Message, Part, Role, TaskState};
use common::config::TaskBounds;
use common::engine::transition::{accept_message, agent_message, created, new_task, set_status};
use common::ext::task::TaskExtension;
use common::store::TaskRecord;
use common::store::{Bound, DynamoStore, EmbeddedStore, InboundMessage, Store, StoreError};

const BOUNDS: TaskBounds = TaskBounds {
    messages: 4,
    bytes: 20_000,
};

fn message(text: &str) -> Message {
    Message {
        message_id: common::engine::transition::new_id(),
        role: Role::User,
        parts: vec![Part::text(text)],
        ..Default::default()
    }
}

fn inbound(m: &Message) -> InboundMessage {
    InboundMessage {
        tenant: String::new(),
        sender: "alice".into(),
        message: m.clone(),
    }
}

async fn create(store: &dyn Store) -> TaskRecord {
    let mut m = message("hello");
    let rec = new_task("", &mut m, &TaskExtension::from_text("hello"));
    (store.create_task(&rec, &[created(&rec)], Some(&inbound(&m))))
        .await
        .expect("create")
}

/// `rec` with a message of `text` added, committed with it.
async fn add(store: &dyn Store, rec: &TaskRecord, text: &str) -> Result<TaskRecord, StoreError> {
    let mut next = rec.clone();
    let mut m = message(text);
    accept_message(&mut next, &mut m, false);
    let event = common::a2a::StreamResponse::message(m.clone());
    (store.commit(&next, rec.version, &[event], Some(&inbound(&m)))).await
}

/// What a refused write must leave as it was.
async fn footprint(store: &dyn Store, id: &str) -> (u64, usize, usize) {
    let rec = store.load_task(id).await.expect("load").expect("task");
    let events = store.read_events(id, None, 1000).await.expect("events");
    (rec.version, rec.task.history.len(), events.len())
}

async fn a_write_past_a_bound_stores_nothing(store: Arc<dyn Store>) {
    let mut rec = create(store.as_ref()).await;
    for _ in 0..3 {
        rec = add(store.as_ref(), &rec, "hi")
            .await
            .expect("within the bounds");
    }
    let before = footprint(store.as_ref(), rec.id()).await;
    let refused = add(store.as_ref(), &rec, "one too many").await;
    assert!(
        matches!(
            refused,
            Err(StoreError::TaskFull {
                bound: Bound::Messages(4),
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(footprint(store.as_ref(), rec.id()).await, before);

    let rec = create(store.as_ref()).await;
    let before = footprint(store.as_ref(), rec.id()).await;
    let mut next = rec.clone();
    let mut m = message(&"x".repeat(20_000));
    accept_message(&mut next, &mut m, false);
    let refused = store
        .commit(&next, rec.version, &[], Some(&inbound(&m)))
        .await;
    assert!(
        matches!(
            refused,
            Err(StoreError::TaskFull {
                bound: Bound::Bytes(20_000),
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(footprint(store.as_ref(), rec.id()).await, before);
    let seen = store.message_task("", "alice", &m.message_id).await;
    assert_eq!(
        seen.expect("lookup"),
        None,
        "the refused message's id is free"
    );
}

/// Two writers read the task with room for one more message: the store's condition on
/// the version lets one commit; the other's retry, on the task as it is now, is refused.
async fn of_two_writers_racing_for_the_last_room_one_commits(store: Arc<dyn Store>) {
    let mut rec = create(store.as_ref()).await;
    for _ in 0..2 {
        rec = add(store.as_ref(), &rec, "hi")
            .await
            .expect("within the bounds");
    }
    let first = add(store.as_ref(), &rec, "first").await;
    let second = add(store.as_ref(), &rec, "second").await;
    assert!(first.is_ok(), "{first:?}");
    assert!(
        matches!(second, Err(StoreError::Conflict { .. })),
        "{second:?}"
    );
    let now = store
        .load_task(rec.id())
        .await
        .expect("load")
        .expect("task");
    let retry = add(store.as_ref(), &now, "second").await;
    assert!(
        matches!(
            retry,
            Err(StoreError::TaskFull {
                bound: Bound::Messages(4),
                ..
            })
        ),
        "{retry:?}"
    );
    assert_eq!(now.task.history.len(), 4, "exactly the bound");
}

/// A full task still ends: its final status may pass the bounds by one short message
/// (`store::ENDING_ALLOWANCE`); one that passes them further is refused.
async fn a_full_task_still_ends(store: Arc<dyn Store>) {
    let mut rec = create(store.as_ref()).await;
    for _ in 0..3 {
        rec = add(store.as_ref(), &rec, "hi")
            .await
            .expect("within the bounds");
    }
    let end = |text: &str| {
        let mut next = rec.clone();
        let notice = agent_message(&next.task, vec![Part::text(text)]);
        let event = set_status(&mut next, TaskState::Failed, Some(notice), None);
        (next, event)
    };
    let (long, event) = end(&"x".repeat(24 * 1024));
    let refused = store.commit(&long, rec.version, &[event], None).await;
    assert!(
        matches!(refused, Err(StoreError::TaskFull { .. })),
        "{refused:?}"
    );
    let (short, event) = end("The task reached its bound");
    let ended = store.commit(&short, rec.version, &[event], None).await;
    assert_eq!(ended.expect("the end").state(), TaskState::Failed);
}

fn embedded(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    Arc::new(
        EmbeddedStore::open(dir.path())
            .expect("open store")
            .with_bounds(BOUNDS),
    )
}

async fn dynamo() -> Option<Arc<dyn Store>> {
    let client = support::dynamo_client()?;
    let table = support::fresh_table(&client).await;
    Some(Arc::new(
        DynamoStore::new(client, table).with_bounds(BOUNDS),
    ))
}

macro_rules! on_both_stores {
    ($($name:ident),+ $(,)?) => {
        mod embedded_store {
            $(
                #[tokio::test]
                async fn $name() {
                    let dir = tempfile::tempdir().expect("a temporary directory");
                    super::$name(super::embedded(&dir)).await;
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
    a_write_past_a_bound_stores_nothing,
    of_two_writers_racing_for_the_last_room_one_commits,
    a_full_task_still_ends,
);
