//! The engine: task state changes (`transition`), the agent's handle on a task (`run`),
//! following a task's event log (`follow`), and driving a task with the agent, one run
//! per task at a time in this process.
//!
//! Only tasks assigned to the harness's own agent are run by it. A task assigned to
//! another participant (a sub-task the agent created for them) waits for that
//! participant's message, which completes it at intake; driving it then only wakes its
//! parents, which take the outcome in at their next turn.

pub mod follow;
pub mod run;
pub mod transition;

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::a2a::TaskState;
use crate::agent::Agent;
use crate::keyed_lock::KeyedLocks;
use crate::push::Pusher;
use crate::store::{Store, TaskRecord};
pub use run::{RunError, TaskRun};

pub struct Engine {
    store: Arc<dyn Store>,
    agent: Arc<dyn Agent>,
    pusher: Arc<Pusher>,
    /// The harness's own participant id: tasks assigned to it are the agent's to run.
    agent_id: String,
    /// Serialises runs of one task inside this process.
    running: KeyedLocks,
}

impl Engine {
    pub fn new(
        store: Arc<dyn Store>,
        agent: Arc<dyn Agent>,
        pusher: Arc<Pusher>,
        agent_id: String,
    ) -> Arc<Self> {
        Arc::new(Engine {
            store,
            agent,
            pusher,
            agent_id,
            running: KeyedLocks::default(),
        })
    }

    pub fn agent(&self) -> &dyn Agent {
        self.agent.as_ref()
    }

    pub fn pusher(&self) -> &Arc<Pusher> {
        &self.pusher
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// Whether the harness's agent runs this task (it is its assignee).
    pub fn runs(&self, record: &TaskRecord) -> bool {
        record
            .ext()
            .and_then(|e| e.assignee().map(|a| a.id == self.agent_id))
            .unwrap_or(false)
    }

    /// Drives the task in a task of its own, so a client that goes away does not stop the
    /// work; the handle resolves when the agent stops (done or waiting).
    pub fn start(self: &Arc<Self>, task_id: String) -> JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move { engine.drive(&task_id).await })
    }

    /// Drives again a task whose run was cut off (a crash, a restart) while it was
    /// SUBMITTED or WORKING; the agent carries on from its checkpoint. Other tasks are
    /// left alone.
    pub async fn resume(
        self: &Arc<Self>,
        task_id: &str,
    ) -> Result<Option<JoinHandle<()>>, RunError> {
        let record = self.store.load_task(task_id).await?.ok_or(RunError::Gone)?;
        if !matches!(record.state(), TaskState::Submitted | TaskState::Working) {
            return Ok(None);
        }
        Ok(Some(self.start(task_id.to_owned())))
    }

    #[tracing::instrument(skip(self))]
    async fn drive(self: &Arc<Self>, task_id: &str) {
        let result = self.running.run(task_id, self.drive_locked(task_id)).await;
        match result {
            Ok(Some(ended)) => self.wake_parents(&ended),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "task run ended with an error"),
        }
    }

    /// Runs the agent on the task if it is the agent's and has something to do; returns
    /// the task if it is terminal afterwards (its parents may be waiting on it).
    async fn drive_locked(&self, task_id: &str) -> Result<Option<TaskRecord>, RunError> {
        let record = self.store.load_task(task_id).await?.ok_or(RunError::Gone)?;
        let waiting =
            record.state() == TaskState::InputRequired && record.agent.pending_help.is_some();
        if record.state().is_terminal() || !self.runs(&record) || waiting {
            return Ok(record.state().is_terminal().then_some(record));
        }
        // The message the run answers: the last one a client sent.
        let input = record
            .task
            .history
            .iter()
            .rev()
            .find(|m| m.role == crate::a2a::Role::User)
            .cloned()
            .unwrap_or_default();
        let mut run = TaskRun::new(self.store.clone(), self.pusher.clone(), record);
        match self.agent.run(&mut run, &input).await {
            Ok(()) | Err(RunError::Ended(_)) => {}
            Err(e) => {
                let msg = run.agent_message(&format!("The agent failed: {e}"));
                let _ = run.set_status(TaskState::Failed, Some(msg)).await;
                return Err(e);
            }
        }
        let rec = run.into_record();
        Ok(rec.state().is_terminal().then_some(rec))
    }

    /// A sub-task ended (here, or by CancelTask): its parents are driven, and take its
    /// outcome in.
    pub fn wake_parents(self: &Arc<Self>, child: &TaskRecord) {
        for parent in child.ext().map(|e| e.parent_tasks).unwrap_or_default() {
            if parent.agent.is_none() {
                self.start(parent.task_id);
            }
        }
    }
}
