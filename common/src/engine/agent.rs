//! The port the engine drives: an agent either answers a message directly (no task) or
//! works on a task through its [`TaskRun`], ending terminal or waiting for input. The
//! agents themselves (`crate::agent`) implement it.

use async_trait::async_trait;

use super::{RunError, TaskRun};
use crate::a2a::Message;
use crate::store::TaskRecord;

#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// A direct reply to a message that names no task, instead of starting one.
    fn direct_reply(&self, _message: &Message) -> Option<Message> {
        None
    }

    /// The models a task may choose with `/model`, if the agent uses any.
    fn models(&self) -> Option<ModelChoices> {
        None
    }

    /// Whether every drive of this agent ends within seconds (it calls no model): in
    /// Lambda, a request function then drives it itself. Any other agent's drive is
    /// handed to the resume function, whose timeout is the longest Lambda has, so no
    /// model call is cut off with the request function that made it.
    fn drives_quickly(&self) -> bool {
        false
    }

    /// Works on the task with the message that (re)started it. Returns when the task is
    /// terminal or waits for input.
    async fn run(&self, run: &mut TaskRun, input: &Message) -> Result<(), RunError>;

    /// The task just ended, by a drive or the sweep (CancelTask does the same itself):
    /// what the agent handed on outside the store is let go of (best effort, once: only
    /// the writer that ended the task calls it).
    async fn ended(&self, _task: &TaskRecord) {}
}

/// What `/model` shows: the default model, and the names a task may choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoices {
    pub default: String,
    pub names: Vec<String>,
}
