//! A resend that races its first copy. SendMessage looks a message's id up among what its
//! sender has sent before anything else; a copy that looks before the first copy is stored
//! and reads the task after finds its own message in the history. That copy is the same
//! message again (answered with the task), not someone's message under a used id. The
//! store below misses the first lookup, which is exactly what such a copy sees.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use common::a2a::{
    Message, Part, Role, SendMessageRequest, SendMessageResponse, StreamResponse, TaskState,
};
use common::config::Config;
use common::ops::send_message::send_message;
use common::ops::{Caller, Harness};
use common::store::{
    Admit, AuditRecord, Due, EmbeddedStore, InboundMessage, LoggedEvent, PushConfigRecord, Store,
    StoreError, TaskPage, TaskQuery, TaskRecord,
};
use tokio::sync::broadcast::Receiver;

/// The embedded store, but the next [`Store::message_task`] finds nothing once `miss` is set.
struct Racing {
    inner: EmbeddedStore,
    miss: AtomicBool,
}

#[async_trait]
impl Store for Racing {
    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        self.inner.create_task(record, events, message).await
    }
    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        (self.inner)
            .commit(record, expected_version, events, message)
            .await
    }
    async fn put_message(&self, message: &InboundMessage) -> Result<(), StoreError> {
        self.inner.put_message(message).await
    }
    async fn message_task(
        &self,
        tenant: &str,
        sender: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        if self.miss.swap(false, Ordering::SeqCst) {
            return Ok(None);
        }
        self.inner.message_task(tenant, sender, message_id).await
    }
    async fn load_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.load_task(task_id).await
    }
    async fn load_view(
        &self,
        task_id: &str,
        history: Option<usize>,
        artifacts: bool,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        (self.inner)
            .load_view(task_id, history, artifacts, admit)
            .await
    }
    async fn read_events(
        &self,
        task_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.inner.read_events(task_id, after, limit).await
    }
    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(query).await
    }
    async fn put_push_config(&self, record: &PushConfigRecord) -> Result<(), StoreError> {
        self.inner.put_push_config(record).await
    }
    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Option<PushConfigRecord>, StoreError> {
        self.inner.get_push_config(task_id, id).await
    }
    async fn list_push_configs(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PushConfigRecord>, StoreError> {
        self.inner.list_push_configs(task_id, after, limit).await
    }
    async fn advance_push_config(
        &self,
        record: &PushConfigRecord,
        from: u64,
    ) -> Result<bool, StoreError> {
        self.inner.advance_push_config(record, from).await
    }
    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), StoreError> {
        self.inner.delete_push_config(task_id, id).await
    }
    async fn audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        self.inner.audit(record).await
    }
    async fn audit_trail(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError> {
        self.inner.audit_trail(task_id).await
    }
    fn changes(&self) -> Receiver<String> {
        self.inner.changes()
    }
    fn wakeups(&self) -> Receiver<String> {
        self.inner.wakeups()
    }
    fn pushes(&self) -> Receiver<String> {
        self.inner.pushes()
    }
    async fn due_tasks(
        &self,
        leases_before: i64,
        woken_before: i64,
        limit: usize,
    ) -> Result<Due, StoreError> {
        (self.inner)
            .due_tasks(leases_before, woken_before, limit)
            .await
    }
}

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
async fn a_reply_resent_past_the_dedupe_lookup_is_answered_with_its_task() {
    let dir = std::env::temp_dir().join(format!("harness-resend-{}", uuid::Uuid::new_v4()));
    let store = Arc::new(Racing {
        inner: EmbeddedStore::open(&dir).expect("store"),
        miss: AtomicBool::new(false),
    });
    let config = Config {
        push_key: Some(common::push::seal::PushKey::generate()),
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
    let reply = send(&h, "tck-input-required-2", &task.id)
        .await
        .expect("the reply");
    let stored = store
        .load_task(&task.id)
        .await
        .expect("load")
        .expect("task");

    store.miss.store(true, Ordering::SeqCst);
    let again = send(&h, "tck-input-required-2", &task.id).await;
    let again = again.expect("a resend is answered with its task");
    assert_eq!(again.task.map(|t| t.id), reply.task.map(|t| t.id));
    let after = store
        .load_task(&task.id)
        .await
        .expect("load")
        .expect("task");
    assert_eq!(after.version, stored.version, "nothing is stored again");
    let _ = std::fs::remove_dir_all(&dir);
}
