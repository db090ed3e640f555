//! Deadlines of tasks assigned to participants (a sub-task the agent made for a person,
//! `reply_within`): the engine's to keep, as it runs no agent on such a task. The task
//! waits under its own timer (`Lease::poll`, set by the write that leaves it waiting);
//! when the timer runs out the sweep makes it runnable, and its drive takes the step due:
//!
//! - half-way, its assignee is reminded once: a message in its history (a `message`
//!   event every member's stream and webhook sees), and, as the drive ends, the request
//!   again on their personal channel, marked as a reminder (`medium::Addressed`);
//! - past it, the task is cancelled with the reason as its status message, and its
//!   parents are woken as for any sub-task's end: a parent goes on with that outcome at
//!   its next turn.
//!
//! A question the agent asks has a deadline too, whose steps are the agent's (they change
//! its conversation): `agent::waits`. The reminder message is made here for both.

use crate::a2a::{Message, Part, StreamResponse, TaskState};
use crate::store::{StoreError, TaskRecord};
use crate::task::deadline::{Deadline, Step};

use super::transition::{agent_message, set_status};
use super::{RunError, TaskRun};

/// Whether a task assigned to a participant has its deadline's step due.
pub fn due(rec: &TaskRecord) -> bool {
    rec.state() == TaskState::InputRequired && rec.agent.reply_by.is_some_and(|d| d.due_now())
}

/// What a deadline's step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Took {
    /// Nothing (woken early, or the task no longer waits): back under its timer.
    Nothing,
    /// Reminded its assignee: the request is to go out again, marked as a reminder.
    Reminded,
    /// Cancelled it.
    Cancelled,
}

/// Takes the step the deadline of `run`'s task (assigned to a participant) asks for now;
/// woken before one is due, it goes back under its timer.
pub async fn step(run: &mut TaskRun) -> Result<Took, RunError> {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let Some(deadline) = run.record().agent.reply_by else {
        return Ok(Took::Nothing);
    };
    let assignee = (run.record().ext())
        .and_then(|e| e.assignee().map(|p| p.id.clone()))
        .unwrap_or_default();
    let waiting = |rec: &TaskRecord| rec.state() == TaskState::InputRequired;
    // Whether the change was made on the task as the commit found it.
    let took = AtomicBool::new(false);
    match deadline.step() {
        Step::Wait(_) => {
            run.apply(|rec| {
                if waiting(rec) {
                    rec.lease = Some(deadline.timer());
                }
                Vec::new()
            })
            .await?;
            Ok(Took::Nothing)
        }
        Step::Remind => {
            let text = format!(
                "Reminder: {assignee}, this task waits for your answer by {}.",
                deadline.due_text()
            );
            let reminded = Deadline {
                remind_ms: None,
                ..deadline
            };
            let remind = |said: bool| {
                let took = &took;
                let (assignee, text) = (&assignee, &text);
                move |rec: &mut TaskRecord| {
                    took.store(waiting(rec), Relaxed);
                    if !waiting(rec) {
                        return Vec::new();
                    }
                    rec.agent.reply_by = Some(reminded);
                    rec.lease = Some(reminded.timer());
                    match said {
                        true => vec![reminder(rec, assignee, text)],
                        false => Vec::new(),
                    }
                }
            };
            commit_reminder(run, remind).await?;
            if !took.load(Relaxed) {
                return Ok(Took::Nothing);
            }
            crate::metrics::record(crate::metrics::Event::ReplyReminded);
            Ok(Took::Reminded)
        }
        Step::Expired => {
            let said = format!(
                "No answer from {assignee} by {}: the task was cancelled.",
                deadline.due_text()
            );
            run.apply(|rec| {
                took.store(waiting(rec), Relaxed);
                if !waiting(rec) {
                    return Vec::new();
                }
                let msg = agent_message(&rec.task, vec![Part::text(said.clone())]);
                vec![set_status(rec, TaskState::Canceled, Some(msg), None)]
            })
            .await?;
            if !took.load(Relaxed) {
                return Ok(Took::Nothing);
            }
            crate::metrics::record(crate::metrics::Event::ReplyExpired);
            tracing::info!(task_id = %run.record().id(), participant = %assignee, "a task for a participant passed its deadline");
            Ok(Took::Cancelled)
        }
    }
}

/// Commits the reminder `remind(said)` makes: with its history message (`said`), or,
/// when that no longer fits the task's bounds, without it, so the deadline moves on
/// rather than the task failing for a reminder.
pub async fn commit_reminder<C>(
    run: &mut TaskRun,
    remind: impl Fn(bool) -> C,
) -> Result<(), RunError>
where
    C: Fn(&mut TaskRecord) -> Vec<StreamResponse>,
{
    match run.apply(remind(true)).await {
        Err(RunError::Store(StoreError::TaskFull { .. } | StoreError::TooLarge(_))) => {
            run.apply(remind(false)).await
        }
        other => other,
    }
}

/// A reminder addressed to `to`: into the task's history, and its `message` event.
pub fn reminder(rec: &mut TaskRecord, to: &str, text: &str) -> StreamResponse {
    let mut msg: Message = agent_message(&rec.task, vec![Part::text(text)]);
    crate::ext::participant::address_to(&mut msg, to);
    rec.task.history.push(msg.clone());
    StreamResponse::message(msg)
}
