//! The store of the read-only functions (GetTask, ListTasks, the push-config reads, the
//! agent cards): the reads those operations make and the audit records of the refusals
//! they make pass to the store beneath; every other call is refused with
//! [`StoreError::ReadOnly`]. So a read-only function changes no task whatever its code
//! does, and its binary links none of the store's write paths, which only this trait's
//! table would reach.

use async_trait::async_trait;

use super::{
    Admit, Along, AuditRecord, Due, InboundMessage, LoggedEvent, PushConfigRecord, Quota, Store,
    StoreError, TaskPage, TaskQuery, TaskRecord,
};
use crate::a2a::StreamResponse;

/// `S` for the read-only operations.
#[derive(Debug)]
pub struct ReadOnly<S>(pub S);

#[async_trait]
impl<S: Store> Store for ReadOnly<S> {
    async fn create_task(
        &self,
        _: &TaskRecord,
        _: &[StreamResponse],
        _: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn commit_along(
        &self,
        _: &TaskRecord,
        _: u64,
        _: &[StreamResponse],
        _: Option<&InboundMessage>,
        _: Along<'_>,
    ) -> Result<TaskRecord, StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn put_message(&self, _: &InboundMessage) -> Result<(), StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn message_task(&self, _: &str, _: &str, _: &str) -> Result<Option<String>, StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn load_task_for(
        &self,
        task_id: &str,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.0.load_task_for(task_id, admit).await
    }

    async fn load_view(
        &self,
        task_id: &str,
        history: Option<usize>,
        artifacts: bool,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.0.load_view(task_id, history, artifacts, admit).await
    }

    async fn read_events(
        &self,
        _: &str,
        _: Option<u64>,
        _: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.0.list_tasks(query).await
    }

    async fn put_push_config(&self, _: &PushConfigRecord) -> Result<(), StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Option<PushConfigRecord>, StoreError> {
        self.0.get_push_config(task_id, id).await
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PushConfigRecord>, StoreError> {
        self.0.list_push_configs(task_id, after, limit).await
    }

    async fn advance_push_config(&self, _: &PushConfigRecord, _: u64) -> Result<bool, StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn delete_push_config(&self, _: &str, _: &str) -> Result<(), StoreError> {
        Err(StoreError::ReadOnly)
    }

    /// A refusal is audited wherever it is made.
    async fn audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        self.0.audit(record).await
    }

    /// A quota is counted wherever it is used.
    async fn take_quota(
        &self,
        quota: Quota,
        participant: &str,
        hour: i64,
        limit: u64,
    ) -> Result<bool, StoreError> {
        self.0.take_quota(quota, participant, hour, limit).await
    }

    /// Not recorded here: every function that writes records its id at its first request.
    async fn record_agent_id(&self, _: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn agent_ids(&self) -> Result<Vec<String>, StoreError> {
        self.0.agent_ids().await
    }

    async fn audit_trail(&self, _: &str) -> Result<Vec<AuditRecord>, StoreError> {
        Err(StoreError::ReadOnly)
    }

    fn changes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.0.changes()
    }

    fn wakeups(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.0.wakeups()
    }

    fn pushes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.0.pushes()
    }

    fn timers(&self) -> tokio::sync::broadcast::Receiver<i64> {
        self.0.timers()
    }

    async fn due_tasks(&self, _: i64, _: i64, _: usize) -> Result<Due, StoreError> {
        Err(StoreError::ReadOnly)
    }
}
