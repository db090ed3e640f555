//! A task's link to a task it delegated to a remote agent, as the agent's state keeps it:
//! which agent, which call, what was sent, and how far the remote task's news was taken.

use serde::{Deserialize, Serialize};

use crate::a2a::TaskState;

/// A task's link to a task it delegated to a remote agent. Kept in the agent's state
/// (never on the wire: the task extension's `sub_tasks` names the remote task once known).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Link {
    /// Its number on the task, from 1: it names the link's message and callback.
    pub n: usize,
    /// The registry id of the agent.
    pub agent: String,
    /// The tool call that made it.
    pub call: String,
    /// The message that asks for the work, sent again as it was to repair a lost answer.
    pub text: String,
    /// The remote task, once the remote has answered the send.
    pub remote_task: Option<String>,
    pub context_id: Option<String>,
    /// The remote state and status message last taken into the conversation.
    pub noted: Option<(TaskState, String)>,
    /// Messages sent on the remote task after the first (answers to its questions).
    pub replies: usize,
    /// The status message id of the question last answered.
    pub answered: Option<String>,
    /// Questions the remote task asked so far.
    pub questions: usize,
    /// Times the remote task was polled (an agent without push notifications).
    pub polls: u32,
    /// Its outcome is in the conversation, or it failed: nothing more is asked of it.
    pub ended: bool,
}

impl Link {
    /// The id of the message that asks for the work: the same on every send.
    pub fn message_id(&self, task_id: &str) -> String {
        format!("{task_id}:remote:{}", self.n)
    }
}
