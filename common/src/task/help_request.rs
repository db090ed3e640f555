//! A question the agent asked on a task's channel (channel extension v1, seed 001), kept
//! in the agent's state while the task waits for its reply: who was asked, what, and
//! whose message answers it.

use crate::a2a::Part;
use crate::ext::channel::{ChannelKind, ChannelMessage};
use crate::ext::task::TaskExtension;

/// A question the agent asked on the task's channel, waiting for its reply.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct HelpRequest {
    pub participant_id: String,
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
    /// The id of the status message that carried the question.
    pub message_id: String,
    /// The tool call that asked.
    pub call_id: String,
    /// When the reply is due, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<super::Deadline>,
}

impl HelpRequest {
    /// The question as shown to people: with its options on a second line.
    pub fn display(&self) -> String {
        if self.options.is_empty() {
            self.question.clone()
        } else {
            format!("{}\nOptions: {}", self.question, self.options.join(", "))
        }
    }

    /// The INPUT_REQUIRED status message: the question as text, plus the channel part.
    pub fn status_parts(&self, task_id: &str, sender: &str) -> Vec<Part> {
        vec![
            Part::text(self.display()),
            ChannelMessage::new(task_id, sender, ChannelKind::HelpRequest, &self.question).part(),
        ]
    }

    /// Whether it has a step due now (its reminder or its expiry): the task then has work.
    pub fn due_now(&self) -> bool {
        self.deadline.is_some_and(|d| d.due_now())
    }

    /// Whether a member's message answers it: it is from the participant asked or an
    /// admin (see [`permissions`](crate::ext::permissions)) and, when it names what it replies to, names this
    /// request. Anyone else's message is a remark, but a `help_reply` meant for this
    /// request from them is refused, naming the rule.
    pub fn answered_by(
        &self,
        ext: &TaskExtension,
        sender: &str,
        channel: Option<&ChannelMessage>,
    ) -> Result<bool, &'static str> {
        let aimed_here = channel
            .and_then(|c| c.in_reply_to.as_deref())
            .is_none_or(|r| r == self.message_id);
        if crate::ext::permissions::may_answer(ext, sender, &self.participant_id) {
            Ok(aimed_here)
        } else if aimed_here && channel.is_some_and(|c| c.kind == ChannelKind::HelpReply) {
            Err(crate::ext::permissions::ANSWER_RULE)
        } else {
            Ok(false)
        }
    }
}
