//! The agent's record of a task, as the store keeps it: the model conversation (each turn
//! a part of its own, see [`super::layout`]) and the bookkeeping that goes with it. The
//! store owns these types so it depends on no agent; the agent and the model providers
//! use them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The agent's part of a task record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentState {
    /// Every message the model has seen or produced, in order. Stored turn by turn as parts of their own, never in the head.
    #[serde(skip_serializing)]
    pub conversation: Vec<ChatMessage>,
    /// Model calls committed so far (the scripted model answers by this count).
    pub model_calls: usize,
    /// Ids of client messages taken into the conversation by builds that kept ids (read
    /// only; see `inputs_upto`).
    pub inputs: Vec<String>,
    /// The history messages before this index have been taken into the conversation (or
    /// were not inputs): a mark, so the head does not grow with the task's messages.
    pub inputs_upto: usize,
    /// The task's own model (a catalog name, `<provider>:<model>` or `scripted:<path>`);
    /// the agent's default when None.
    pub model: Option<String>,
    /// Tokens used by the committed model calls.
    pub usage: Usage,
    /// The committed model calls and their tokens by the model id their requests carried
    /// (the one the metrics count them under): turns, help decisions and summaries.
    /// Counted from when builds kept it; [`Self::usage`] holds every call's tokens.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_model: BTreeMap<String, ModelUsage>,
    /// The question the task waits on in INPUT_REQUIRED, until its reply is accepted.
    pub pending_help: Option<crate::task::HelpRequest>,
    /// Accepted replies to help requests: message id and the question it answered.
    pub replies: Vec<Reply>,
    /// Questions that expired unanswered, latest last (at most [`MAX_EXPIRED`]): the
    /// question's message id, whom it asked, and what. A message from that participant
    /// afterwards is a late reply.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expired: Vec<Reply>,
    /// Late replies not yet taken into the conversation: the reply's id, the question.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub late: Vec<Reply>,
    /// On a task assigned to a participant: when their answer is due, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_by: Option<crate::task::Deadline>,
    /// Sub-tasks whose outcome has been put in the conversation.
    pub noted: Vec<String>,
    /// Whose words the model acts on now (`agent::actor`): who a privileged tool call acts
    /// for.
    pub actor: Option<String>,
    /// The source of an untrusted tool result of the turn whose calls are being made: the
    /// actor once they all are (`agent::actor::end_turn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heard_in_turn: Option<String>,
    /// Admins' messages a role change was made on, each as the JSON pair `[sender, id]`
    /// (a plain id from builds before): each request makes one change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub role_requests: Vec<String>,
    /// The delimiter nonce of the task's untrusted blocks (see `context::untrusted`).
    pub nonce: String,
    /// The latest compaction of the conversation: the model is given its summary instead
    /// of the turns before `upto` (which the store keeps).
    pub compaction: Option<Compaction>,
    /// Summary calls committed so far (each is one compaction).
    pub summaries: usize,
    /// Calls of tools that may not run twice, committed as started and not yet answered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub started: Vec<String>,
    /// The tasks delegated to remote agents (see `crate::remote`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remote: Vec<crate::task::Link>,
    /// Where the model's text is shown as it is written (see `engine::answer`), once
    /// some has been.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answering>,
}

/// The answer's artifact, and where in the task's log the text it shows now starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answering {
    pub artifact: String,
    /// The seq of the event that last replaced the artifact's text (`append: false`):
    /// that event and the artifact's updates after it make what it shows.
    pub from: u64,
}

impl AgentState {
    /// Counts one committed call of `model` (the id its request carried) that used
    /// `usage`: in the task's tokens and in the model's. The caller counts the call as
    /// the turn or summary it was.
    pub fn count(&mut self, model: &str, usage: Usage) {
        let total = &mut self.usage;
        total.input_tokens = total.input_tokens.saturating_add(usage.input_tokens);
        total.output_tokens = total.output_tokens.saturating_add(usage.output_tokens);
        let of_model = self.by_model.entry(model.to_owned()).or_default();
        of_model.calls = of_model.calls.saturating_add(1);
        of_model.input_tokens = of_model.input_tokens.saturating_add(usage.input_tokens);
        of_model.output_tokens = of_model.output_tokens.saturating_add(usage.output_tokens);
    }

    /// Every model call committed: turns and help decisions, and summaries.
    pub fn calls(&self) -> u64 {
        (self.model_calls + self.summaries) as u64
    }
}

/// Turns of the conversation replaced, in what the model is given, by a summary.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Compaction {
    /// The first turn the model is still given whole.
    pub upto: usize,
    /// What the turns before it came to (a model's summary of them, and of the summary
    /// before).
    pub summary: String,
}

/// Most expired questions a task remembers, for the late replies they may get; and most
/// late replies it keeps until the model takes them in.
pub const MAX_EXPIRED: usize = 8;

/// A message accepted as the reply to a help request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reply {
    pub message_id: String,
    pub participant_id: String,
    pub question: String,
}

/// One call of a tool the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, echoed with its result.
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// One entry of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        text: String,
    },
    Assistant {
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of a tool call; `is_error` when the tool failed or was refused.
    Tool {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// One model's committed calls on a task, and their tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelUsage {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_by_model_and_a_head_from_before_reads_with_none() {
        // A head stored by a build that kept only the total.
        let old = r#"{"model_calls": 2, "summaries": 1, "model": "b",
                      "usage": {"input_tokens": 100, "output_tokens": 10}}"#;
        let mut state: AgentState = serde_json::from_str(old).expect("an old head reads");
        assert!(state.by_model.is_empty());
        assert_eq!(state.calls(), 3);
        let stored = serde_json::to_value(&state).expect("JSON");
        assert!(
            stored.get("by_model").is_none(),
            "nothing new is written: {stored}"
        );

        state.count(
            "gpt",
            Usage {
                input_tokens: 7,
                output_tokens: 3,
            },
        );
        state.count(
            "gpt",
            Usage {
                input_tokens: 1,
                output_tokens: 1,
            },
        );
        state.count(
            "claude",
            Usage {
                input_tokens: u64::MAX,
                output_tokens: 0,
            },
        );
        assert_eq!(
            state.usage.input_tokens,
            u64::MAX,
            "saturates, never panics"
        );
        assert_eq!(state.usage.output_tokens, 14);
        let gpt = ModelUsage {
            calls: 2,
            input_tokens: 8,
            output_tokens: 4,
        };
        assert_eq!(state.by_model["gpt"], gpt);
        assert_eq!(state.by_model["claude"].calls, 1);

        let again: AgentState =
            serde_json::from_value(serde_json::to_value(&state).expect("JSON")).expect("reads");
        assert_eq!(again.by_model, state.by_model, "kept in the head");
    }
}
