//! A parent's side of its sub-tasks for participants: the outcome of each that ended
//! (done, or cancelled past its deadline: `engine::deadlines`) into the parent's
//! conversation, once.

use super::context::untrusted;
use crate::engine::links::{self, Link};
use crate::engine::{RunError, TaskRun};
use crate::models::ChatMessage;

/// Takes the outcome of ended sub-tasks into the conversation; true while one has not
/// ended (the task then waits, WORKING, for it to wake it).
pub async fn take(run: &mut TaskRun) -> Result<bool, RunError> {
    let subs = run.record().ext().map(|e| e.sub_tasks).unwrap_or_default();
    let mut notes = Vec::new();
    let mut unresolved = false;
    for sub in subs.iter().filter(|s| s.agent.is_none()) {
        if run.record().agent.noted.contains(&sub.task_id) {
            continue;
        }
        let child = links::linked(
            run.store().as_ref(),
            run.record(),
            &sub.task_id,
            Link::SubTask,
        )
        .await?;
        if child.as_ref().is_some_and(|c| !c.state().is_terminal()) {
            unresolved = true;
            continue;
        }
        notes.push((
            sub.task_id.clone(),
            sub_task_note(&run.record().agent.nonce, child.as_ref(), &sub.task_id),
            super::actor::of_sub_task(child.as_ref()),
        ));
    }
    if !notes.is_empty() {
        run.update_agent(|a| {
            for (id, note, from) in &notes {
                if !a.noted.contains(id) {
                    a.noted.push(id.clone());
                    a.conversation.push(note.clone());
                    super::actor::heard(a, from);
                }
            }
        })
        .await?;
    }
    Ok(unresolved)
}

/// How a sub-task's outcome reaches its parent's model: `Sub-task <id> is <STATE>:
/// <summary>`, inside an untrusted block (another participant wrote it).
fn sub_task_note(nonce: &str, child: Option<&crate::store::TaskRecord>, id: &str) -> ChatMessage {
    let (state, summary) = match child {
        Some(c) => {
            let summary: String = c
                .task
                .status
                .as_ref()
                .and_then(|s| s.message.as_ref())
                .map(crate::ext::channel::message_text)
                .unwrap_or_default()
                .chars()
                .take(SUMMARY_CHARS)
                .collect();
            let state = c.state().as_str().trim_start_matches("TASK_STATE_");
            (state.to_owned(), summary)
        }
        None => ("GONE".to_owned(), "it no longer exists".to_owned()),
    };
    ChatMessage::User {
        text: untrusted(
            nonce,
            "agent",
            &format!("Sub-task {id} is {state}: {summary}"),
        ),
    }
}

/// Longest sub-task summary a parent is given.
const SUMMARY_CHARS: usize = 500;
