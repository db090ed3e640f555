//! The agent's side of reply deadlines (`task::deadline`): a question it asked that reaches
//! its reminder or passes its due time.
//!
//! - Half-way, the addressee is reminded once: a message in the task's history (a
//!   `message` event every member's stream and webhook sees), and, once the drive ends,
//!   a post on their personal channel if they have one (`engine::medium`).
//! - Past it, a question expires: a status message names who did not answer by when, the
//!   task goes back to WORKING, and the model is told there was no reply (where the reply
//!   would have come), so it can ask someone else, go on, or fail. The question is kept
//!   (`expired`) so a reply that comes later is taken as late, not as an answer.
//!
//! A task the agent made for a participant keeps its own deadline (`engine::deadlines`).
//!
//! Nothing here runs while a task waits: the task's timer (`Lease::poll`) is set to its
//! next step by the commit that leaves the question waiting, and the sweep wakes it then.

use std::sync::atomic::Ordering::Relaxed;

use crate::a2a::{Part, TaskState};
use crate::engine::deadlines;
use crate::engine::transition::{agent_message, set_status};
use crate::engine::{RunError, TaskRun};
use crate::models::ChatMessage;
use crate::store::conversation::{Reply, MAX_EXPIRED};
use crate::store::TaskRecord;
use crate::task::deadline::{Deadline, Step};

/// The question the task waits on, as its deadline leaves it.
pub enum Question {
    /// Still waiting (under the timer of its deadline, if it has one: set by the commit
    /// that left it waiting, which gives up the drive's lease).
    Waits,
    /// The task goes on: the question expired, or its reply came meanwhile.
    GoesOn,
}

/// Whether `rec` still waits on the question `asked` (a reply may have come since it was
/// read: a change made again on fresh state must not remind of it or expire it).
fn still_asks(rec: &TaskRecord, asked: &crate::task::HelpRequest) -> bool {
    rec.state() == TaskState::InputRequired
        && (rec.agent.pending_help.as_ref()).is_some_and(|h| h.message_id == asked.message_id)
}

/// Takes the step the pending question's deadline asks for now, if any.
pub async fn question(run: &mut TaskRun) -> Result<Question, RunError> {
    let Some(help) = run.record().agent.pending_help.clone() else {
        return Ok(Question::Waits);
    };
    let Some(deadline) = help.deadline else {
        return Ok(Question::Waits);
    };
    match deadline.step() {
        Step::Wait(_) => Ok(Question::Waits),
        Step::Remind => {
            let text = format!(
                "Reminder: {}, the question \"{}\" waits for your reply by {}.",
                help.participant_id,
                help.question,
                deadline.due_text()
            );
            let reminded = Deadline {
                remind_ms: None,
                ..deadline
            };
            let remind = |said: bool| {
                let (help, text) = (&help, &text);
                move |rec: &mut TaskRecord| {
                    if !still_asks(rec, help) {
                        return Vec::new();
                    }
                    if let Some(h) = rec.agent.pending_help.as_mut() {
                        h.deadline = Some(reminded);
                    }
                    // The commit that leaves it waiting again sets its timer.
                    rec.lease = Some(reminded.timer());
                    match said {
                        true => vec![deadlines::reminder(rec, &help.participant_id, text)],
                        false => Vec::new(),
                    }
                }
            };
            deadlines::commit_reminder(run, remind).await?;
            if !still_asks(run.record(), &help) {
                return Ok(Question::GoesOn);
            }
            crate::metrics::record(crate::metrics::Event::ReplyReminded);
            Ok(Question::Waits)
        }
        Step::Expired => {
            let due = deadline.due_text();
            let said = format!(
                "No reply from {} by {due} to \"{}\": the question expired.",
                help.participant_id, help.question
            );
            // Where the reply would have come, framed as the harness's (the question's
            // words are the model's own).
            let note = ChatMessage::User {
                text: format!(
                    "{said} Ask someone else, go on without the answer, or fail the task."
                ),
            };
            let expired = Reply {
                message_id: help.message_id.clone(),
                participant_id: help.participant_id.clone(),
                question: help.question.clone(),
            };
            let expired_here = std::sync::atomic::AtomicBool::new(false);
            run.apply(|rec| {
                expired_here.store(still_asks(rec, &help), Relaxed);
                if !expired_here.load(Relaxed) {
                    return Vec::new();
                }
                let a = &mut rec.agent;
                a.pending_help = None;
                a.conversation.push(note.clone());
                // Unless its reply already came, late, before the timer fired.
                let answered = (a.late.iter()).any(|l| {
                    l.participant_id == expired.participant_id && l.question == expired.question
                });
                if !answered {
                    a.expired.push(expired.clone());
                }
                let over = a.expired.len().saturating_sub(MAX_EXPIRED);
                a.expired.drain(..over);
                let msg = agent_message(&rec.task, vec![Part::text(said.clone())]);
                vec![set_status(rec, TaskState::Working, Some(msg), None)]
            })
            .await?;
            if expired_here.load(Relaxed) {
                crate::metrics::record(crate::metrics::Event::ReplyExpired);
                tracing::info!(task_id = %run.record().id(), participant = %help.participant_id, "a question expired unanswered");
            }
            Ok(Question::GoesOn)
        }
    }
}

/// How a late reply reaches the model: as a remark that answers nothing, with the
/// question it came too late for (the sender's words in the untrusted block when they are
/// an agent's, as every input).
pub fn frame_late(late: &Reply, text: &str) -> String {
    format!(
        "Late reply from {} to \"{}\" (the question had expired; it answers nothing now): {text}",
        late.participant_id, late.question
    )
}

/// Whether `sender`'s message is a late reply to an expired question: it names one of
/// theirs (`in_reply_to`), or, naming none, they were asked the latest question that
/// expired and are not asked one now. Which one in `expired` (a late reply takes its
/// question out, so only the first message after is late).
pub fn late_for(rec: &TaskRecord, sender: &str, in_reply_to: Option<&str>) -> Option<usize> {
    let expired = &rec.agent.expired;
    match in_reply_to {
        Some(id) => (expired.iter()).position(|q| q.message_id == id && q.participant_id == sender),
        None => {
            let asked_now =
                (rec.agent.pending_help.as_ref()).is_some_and(|h| h.participant_id == sender);
            let last = expired.len().checked_sub(1)?;
            (expired[last].participant_id == sender && !asked_now).then_some(last)
        }
    }
}
