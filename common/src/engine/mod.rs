//! The engine: task state changes (`transition`), the agent's handle on a task (`run`),
//! following a task's event log (`follow`), and driving a task with the agent, one run
//! per task at a time in this process.

pub mod follow;
pub mod run;
pub mod transition;

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::a2a::{Message, TaskState};
use crate::agent::Agent;
use crate::keyed_lock::KeyedLocks;
use crate::push::Pusher;
use crate::store::Store;
pub use run::{RunError, TaskRun};

pub struct Engine {
    store: Arc<dyn Store>,
    agent: Arc<dyn Agent>,
    pusher: Arc<Pusher>,
    /// Serialises runs of one task inside this process.
    running: KeyedLocks,
}

impl Engine {
    pub fn new(store: Arc<dyn Store>, agent: Arc<dyn Agent>, pusher: Arc<Pusher>) -> Arc<Self> {
        Arc::new(Engine {
            store,
            agent,
            pusher,
            running: KeyedLocks::default(),
        })
    }

    pub fn agent(&self) -> &dyn Agent {
        self.agent.as_ref()
    }

    pub fn pusher(&self) -> &Arc<Pusher> {
        &self.pusher
    }

    /// Drives the task with `input` in a task of its own, so a client that goes away does
    /// not stop the work; the handle resolves when the agent stops (done or waiting).
    pub fn start(self: &Arc<Self>, task_id: String, input: Message) -> JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move { engine.drive(&task_id, &input).await })
    }

    /// Drives again a task whose run was cut off (a crash, a restart) while it was
    /// SUBMITTED or WORKING, with the last client message as input; the agent carries on
    /// from its checkpoint. Other tasks are left alone.
    pub async fn resume(
        self: &Arc<Self>,
        task_id: &str,
    ) -> Result<Option<JoinHandle<()>>, RunError> {
        let record = self.store.load_task(task_id).await?.ok_or(RunError::Gone)?;
        if !matches!(record.state(), TaskState::Submitted | TaskState::Working) {
            return Ok(None);
        }
        let input = record
            .task
            .history
            .iter()
            .rev()
            .find(|m| m.role == crate::a2a::Role::User)
            .cloned();
        Ok(input.map(|input| self.start(task_id.to_owned(), input)))
    }

    #[tracing::instrument(skip(self, input), fields(message_id = %input.message_id))]
    async fn drive(&self, task_id: &str, input: &Message) {
        let result = self
            .running
            .run(task_id, self.drive_locked(task_id, input))
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "task run ended with an error");
        }
    }

    async fn drive_locked(&self, task_id: &str, input: &Message) -> Result<(), RunError> {
        let record = self.store.load_task(task_id).await?.ok_or(RunError::Gone)?;
        if record.state().is_terminal() {
            return Ok(());
        }
        let mut run = TaskRun::new(self.store.clone(), self.pusher.clone(), record);
        match self.agent.run(&mut run, input).await {
            Ok(()) | Err(RunError::Ended(_)) => Ok(()),
            Err(e) => {
                let msg = run.agent_message(&format!("The agent failed: {e}"));
                let _ = run.set_status(TaskState::Failed, Some(msg)).await;
                Err(e)
            }
        }
    }
}
