//! A TaskRun is an agent's handle on the task it works on: each change it makes is
//! committed with its event at the version last read, and a conflicting change made by
//! someone else (a cancel) is seen on the retry.

use std::sync::Arc;

use super::transition;
use crate::a2a::{Artifact, Message, StreamResponse, TaskState};
use crate::push::Pusher;
use crate::store::{Store, StoreError, TaskRecord};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The task reached a final state through another writer (e.g. CancelTask).
    #[error("task was ended elsewhere ({0:?})")]
    Ended(TaskState),
    #[error("task disappeared from the store")]
    Gone,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct TaskRun {
    store: Arc<dyn Store>,
    pusher: Arc<Pusher>,
    record: TaskRecord,
}

impl TaskRun {
    pub fn new(store: Arc<dyn Store>, pusher: Arc<Pusher>, record: TaskRecord) -> Self {
        TaskRun {
            store,
            pusher,
            record,
        }
    }

    pub fn record(&self) -> &TaskRecord {
        &self.record
    }

    pub fn into_record(self) -> TaskRecord {
        self.record
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Commits a change to the agent's state (a checkpoint), with no event.
    pub async fn update_agent(
        &mut self,
        change: impl Fn(&mut crate::agent::llm::AgentState),
    ) -> Result<(), RunError> {
        self.apply(|rec| {
            change(&mut rec.agent);
            Vec::new()
        })
        .await
    }

    pub fn agent_message(&self, text: &str) -> Message {
        transition::agent_message(&self.record.task, vec![crate::a2a::Part::text(text)])
    }

    pub async fn set_status(
        &mut self,
        state: TaskState,
        message: Option<Message>,
    ) -> Result<(), RunError> {
        self.apply(|rec| vec![transition::set_status(rec, state, message.clone(), None)])
            .await
    }

    pub async fn add_artifact(
        &mut self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), RunError> {
        self.apply(|rec| {
            vec![transition::add_artifact(
                rec,
                artifact.clone(),
                append,
                last_chunk,
            )]
        })
        .await
    }

    /// Commits `change` (and the events it returns) at the version read. On a conflict it
    /// reloads, stops if the task has ended, and otherwise applies the change again to
    /// the fresh record.
    pub async fn apply(
        &mut self,
        change: impl Fn(&mut TaskRecord) -> Vec<StreamResponse>,
    ) -> Result<(), RunError> {
        let mut base = self.record.clone();
        loop {
            let mut next = base.clone();
            let events = change(&mut next);
            match self.store.commit(&next, base.version, &events, None).await {
                Ok(stored) => {
                    self.record = stored;
                    // Awaited, so a webhook gets a task's events in order.
                    if self.record.push {
                        self.pusher.deliver(&self.record.task.id, &events).await;
                    }
                    return Ok(());
                }
                Err(StoreError::Conflict { .. }) => {
                    base = self
                        .store
                        .load_task(&base.task.id)
                        .await?
                        .ok_or(RunError::Gone)?;
                    if base.state().is_terminal() {
                        return Err(RunError::Ended(base.state()));
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}
