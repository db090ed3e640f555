//! The media a task's channel reaches its members by.
//!
//! The channel itself is the task (see [`super`]): its messages are events in the task's
//! log, and that medium is pulled: members read it with GetTask, SubscribeToTask,
//! ListTasks `waitingOnMe` and the inbox, and their own push configs carry it. A
//! [`Medium`] is pushed: after a commit leaves a task waiting on a member (a help request
//! asked of them, a task assigned to them), the harness sends them the request
//! ([`Addressed`]) by each medium that reaches them, with a way to answer that comes back
//! as their message on the task. The request is committed first, so a medium that fails
//! loses nothing: it stays in the log and the inbox.

use std::sync::Arc;
use std::time::Duration;

use crate::a2a::TaskState;
use crate::store::TaskRecord;

/// Longest the harness waits for one medium to take a request, so a slow one holds the
/// drive (or the request that created a task) a little only.
pub const SEND_WITHIN: Duration = Duration::from_secs(5);

/// What a request asks of its addressee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asks {
    /// An answer to the agent's question: a `help_reply`.
    Answer,
    /// The work of a task assigned to them: their message completes it.
    Work,
}

/// A request a task waits on, addressed to one member: what a pushed medium sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addressed {
    pub task_id: String,
    pub task_name: String,
    /// The member it is addressed to.
    pub to: String,
    /// Names the request within its task: the help request's message id, or the task's
    /// assignment (a task waits on its assignee once).
    pub request_id: String,
    pub asks: Asks,
    /// The question, with its options, or the task's goal.
    pub text: String,
    /// The participant on whose word it is sent, whose hourly quota of posts it counts
    /// against: a `/task`'s verified sender; for a request the agent makes (a help
    /// request, a task it creates for a participant), [`Addressed::charged`]. Never the
    /// task's reporter, whom the task's creator names. "" when there is none: no one's
    /// word, and so not posted.
    pub from: String,
    /// When the answer is due (RFC 3339), if it is.
    pub due: Option<String>,
    /// Whether this is the half-way reminder of a request already sent.
    pub reminder: bool,
}

impl Addressed {
    /// Whom a request the agent makes on `rec` is charged to: the person who spoke last
    /// on it (a verified sender: its history's last message from a human participant),
    /// else the task's actor (a sub-task the agent made, whose first message is the
    /// harness's, carries its parent's charged party there). Never an agent participant
    /// (the harness itself would be one bucket for every task), and not the actor first:
    /// a remote agent's or an MCP server's words make it the actor, and charging them
    /// would put every task's posts after such words in one bucket too.
    pub fn charged(rec: &TaskRecord) -> String {
        use crate::ext::task::ParticipantKind;
        let ext = rec.ext().unwrap_or_default();
        (rec.task.history.iter().rev())
            .filter(|m| m.role == crate::a2a::Role::User)
            .filter_map(crate::ext::participant::asserted)
            .find(|sender| {
                ext.participant(sender)
                    .is_some_and(|p| p.kind == ParticipantKind::Human)
            })
            .map(str::to_owned)
            .or_else(|| rec.agent.actor.clone())
            .unwrap_or_default()
    }

    /// The request `rec` waits on, if it waits on one of its members.
    pub fn of(rec: &TaskRecord) -> Option<Addressed> {
        if rec.state() != TaskState::InputRequired {
            return None;
        }
        let to = rec.waiting_on()?;
        let ext = rec.ext().unwrap_or_default();
        let from = Addressed::charged(rec);
        let (request_id, asks, text, deadline) = match &rec.agent.pending_help {
            Some(help) if help.participant_id == to => (
                help.message_id.clone(),
                Asks::Answer,
                help.display(),
                help.deadline,
            ),
            Some(_) => return None,
            None if ext.assignee().is_some_and(|a| a.id == to) => (
                format!("{}:assigned", rec.task.id),
                Asks::Work,
                ext.goal.clone(),
                rec.agent.reply_by,
            ),
            None => return None,
        };
        Some(Addressed {
            task_id: rec.task.id.clone(),
            task_name: ext.name,
            to,
            request_id,
            asks,
            text,
            from,
            due: deadline.map(|d| d.due_text()),
            // Its reminder is taken when it is sent: a request announced after that is it.
            reminder: deadline.is_some_and(|d| d.remind_ms.is_none()),
        })
    }
}

/// A pushed medium: reaches some members, and sends them the requests addressed to them.
#[async_trait::async_trait]
pub trait Medium: Send + Sync + std::fmt::Debug {
    /// Whether it reaches `participant`.
    fn reaches(&self, participant: &str) -> bool;
    /// Sends `request` to its addressee. A failure is the medium's to log (without its
    /// secrets); the request stays in the task either way.
    async fn send(&self, request: &Addressed);
}

/// The pushed media of this harness (none by default: the task alone).
#[derive(Debug, Clone, Default)]
pub struct Media(Vec<Arc<dyn Medium>>);

impl Media {
    pub fn new(media: Vec<Arc<dyn Medium>>) -> Self {
        Media(media)
    }

    /// After a commit: sends the request `rec` now waits on, if any, by each medium that
    /// reaches its addressee, each within [`SEND_WITHIN`].
    pub async fn announce(&self, rec: &TaskRecord) {
        self.announce_from(rec, None).await
    }

    /// [`Media::announce`], on the word of `sender` if given (a command's sender) rather
    /// than [`Addressed::charged`].
    pub async fn announce_from(&self, rec: &TaskRecord, sender: Option<&str>) {
        if self.0.is_empty() {
            return;
        }
        let Some(mut request) = Addressed::of(rec) else {
            return;
        };
        if let Some(sender) = sender {
            request.from = sender.to_owned();
        }
        let sends = (self.0.iter())
            .filter(|m| m.reaches(&request.to))
            .map(|m| tokio::time::timeout(SEND_WITHIN, m.send(&request)));
        for sent in futures::future::join_all(sends).await {
            if sent.is_err() {
                tracing::warn!(task_id = %request.task_id, participant = %request.to, "a medium did not take the request in time");
            }
        }
    }
}
