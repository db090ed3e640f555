//! A task's link to a task it delegated to a remote agent, as the agent's state keeps it:
//! which agent, which call, what was sent, and how far the remote task's news was taken.

use serde::{Deserialize, Serialize};

use crate::a2a::TaskState;

/// A task's link to a task it delegated to a remote agent. Kept in the agent's state
/// (never on the wire: the task extension's `sub_tasks` names the remote task once known).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Link {
    /// Its number on the task, from 1.
    pub n: usize,
    /// Random (128 bits from `rand`'s CSPRNG, as the tasks' nonces), made with the link: the id of the message
    /// that asks for the work, so nothing the remote sees names the task. Empty on a link
    /// made before there were such ids (its message id named the task).
    pub id: String,
    /// The opaque reference the link's callback URL ends in (see
    /// `crate::remote::Remotes::callback`): the same on every send.
    pub callback: String,
    /// When the delegation ends unanswered (ms since the epoch): the remote task is then
    /// cancelled and the model told. 0 on a link made before deadlines (it gets one when
    /// it is next followed).
    pub deadline_ms: i64,
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
        if self.id.is_empty() {
            // What an older build sent: a send repeated after the upgrade must match it.
            return format!("{task_id}:remote:{}", self.n);
        }
        self.id.clone()
    }

    /// A new link id: 128 random bits, as hex.
    pub fn new_id() -> String {
        format!("{:032x}", rand::random::<u128>())
    }
}
