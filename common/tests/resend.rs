//! A resent message. SendMessage does not look a message's id up before it acts (unless it
//! invokes a command): a copy of a message that started a task is caught by the write of
//! the task it would start (the dedupe item is in it, on the condition that it is new),
//! and a copy of a reply finds its own message in the task's history, which the dedupe
//! item confirms is the sender's. Either is answered with the task, and nothing is
//! stored again.

use std::sync::Arc;

use common::a2a::{Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskState};
use common::config::Config;
use common::ops::send_message::send_message;
use common::ops::{Caller, Harness};
use common::store::{EmbeddedStore, Store};

async fn send(h: &Harness, message_id: &str, task_id: &str) -> Result<SendMessageResponse, String> {
    let message = Message {
        message_id: message_id.into(),
        task_id: task_id.into(),
        role: Role::User,
        parts: vec![Part::text("Blue")],
        ..Default::default()
    };
    let request = SendMessageRequest {
        message: Some(message),
        ..Default::default()
    };
    send_message(h, request, &Caller::named("alice"))
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_resent_message_is_answered_with_its_task_and_stores_nothing() {
    let dir = std::env::temp_dir().join(format!("harness-resend-{}", uuid::Uuid::new_v4()));
    let store = Arc::new(EmbeddedStore::open(&dir).expect("store"));
    let config = Config {
        push_key: Some(common::sealing::PushKey::generate()),
        ..Default::default()
    };
    let h = Harness::new(store.clone(), common::agent::conformance(), config).expect("harness");

    // The conformance agent waits for input on a message whose id says so.
    let started = send(&h, "tck-input-required-1", "").await.expect("a task");
    let task = started.task.expect("a task");
    assert_eq!(
        task.status.as_ref().map(|s| s.state),
        Some(TaskState::InputRequired)
    );
    let version = |store: Arc<EmbeddedStore>, id: String| async move {
        let rec = store.load_task(&id).await.expect("load").expect("task");
        rec.version
    };
    let first = version(store.clone(), task.id.clone()).await;
    let again = send(&h, "tck-input-required-1", "").await;
    let again = again.expect("a resend is answered with its task");
    assert_eq!(again.task.map(|t| t.id).as_deref(), Some(task.id.as_str()));
    assert_eq!(version(store.clone(), task.id.clone()).await, first);

    let reply = send(&h, "tck-input-required-2", &task.id)
        .await
        .expect("the reply");
    let replied = version(store.clone(), task.id.clone()).await;
    let again = send(&h, "tck-input-required-2", &task.id).await;
    let again = again.expect("a resend is answered with its task");
    assert_eq!(again.task.map(|t| t.id), reply.task.map(|t| t.id));
    assert_eq!(
        version(store.clone(), task.id.clone()).await,
        replied,
        "nothing is stored again"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
