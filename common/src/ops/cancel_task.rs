//! CancelTask: a task that has not ended becomes CANCELED; the answer is the updated task.
//! Its reporter and admins may cancel it (see `ext::permissions`).
//! A run still working on it sees the change at its next commit and stops; an answer it
//! was writing ends where it stands (`engine::answer::finish_where_it_stands`). The work it
//! handed on goes with it: its open sub-tasks here are cancelled (and theirs), and its
//! open remote tasks are cancelled on their agents.

use super::shown::shown;
use super::{Caller, Harness};
use crate::a2a::{A2aError, CancelTaskRequest, Task, TaskState};
use crate::engine::answer::finish_where_it_stands;
use crate::engine::transition::set_status;
use crate::ext::permissions::Action;
use crate::store::StoreError;

#[tracing::instrument(skip_all, fields(task_id = %req.id))]
pub async fn cancel_task(
    h: &Harness,
    req: CancelTaskRequest,
    caller: &Caller,
) -> Result<Task, A2aError> {
    crate::a2a::validate::required_id(&req.id, "id")?;
    let mut metadata = req.metadata.clone();
    crate::redact::active().metadata(&mut metadata);
    loop {
        let rec = h.visible_task(&req.tenant, &req.id, caller).await?;
        h.permit(&rec, caller, Action::Cancel)?;
        if rec.state().is_terminal() {
            return Err(A2aError::TaskNotCancelable { task_id: req.id });
        }
        let mut next = rec.clone();
        // An answer being written ends where it stands: the task keeps what its clients
        // were shown, finished, rather than leave them text it does not have.
        let finished = finish_where_it_stands(h.store.as_ref(), &mut next).await?;
        let status = set_status(&mut next, TaskState::Canceled, None, metadata.clone());
        let events: Vec<_> = finished.into_iter().chain([status]).collect();
        match h.store.commit(&next, rec.version, &events, None).await {
            Ok(stored) => {
                h.engine.wake_parents_logged(&stored).await;
                cancel_handed_on(h, &stored).await;
                let history = crate::config::DEFAULT_HISTORY_LENGTH;
                return Ok(shown(stored.task, &stored.agent, history, true));
            }
            // The task moved on meanwhile: decide again on its fresh state.
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Cancels what `rec`, just cancelled, handed on: its open sub-tasks (and theirs, to
/// [`MAX_DEPTH`]) and its open remote tasks. A failure is logged; the cancel stands.
async fn cancel_handed_on(h: &Harness, rec: &crate::store::TaskRecord) {
    use crate::engine::links::{linked, Link};
    let mut todo = vec![(rec.clone(), 0)];
    while let Some((parent, depth)) = todo.pop() {
        crate::agent::delegate::cancel_open(h.remotes.as_deref(), &parent).await;
        if depth >= MAX_DEPTH {
            continue;
        }
        let subs = parent.ext().map(|e| e.sub_tasks).unwrap_or_default();
        for sub in subs.iter().filter(|s| s.agent.is_none()) {
            let mut found = linked(h.store.as_ref(), &parent, &sub.task_id, Link::SubTask).await;
            loop {
                let child = match found {
                    Ok(Some(c)) if !c.state().is_terminal() => c,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(task_id = %sub.task_id, error = %e, "a sub-task could not be cancelled");
                        break;
                    }
                };
                let mut next = child.clone();
                let event = set_status(&mut next, TaskState::Canceled, None, None);
                match h.store.commit(&next, child.version, &[event], None).await {
                    Ok(stored) => {
                        // Its parents' wake-up, owed as it ended: the parent has ended too.
                        h.engine.wake_parents_logged(&stored).await;
                        todo.push((stored, depth + 1));
                        break;
                    }
                    Err(StoreError::Conflict { .. }) => {
                        found = linked(h.store.as_ref(), &parent, &sub.task_id, Link::SubTask).await
                    }
                    Err(e) => {
                        tracing::warn!(task_id = %sub.task_id, error = %e, "a sub-task could not be cancelled");
                        break;
                    }
                }
            }
        }
    }
}

/// How deep a cancel reaches into sub-tasks of sub-tasks.
const MAX_DEPTH: usize = 8;
