//! SubscribeToTask: the current Task, then the events after it until the task is
//! terminal or interrupted (a task already waiting for input ends with its snapshot).

use super::shown::shown;
use super::{Caller, Harness};
use crate::a2a::{validate, A2aError, StreamResponse, SubscribeToTaskRequest};
use crate::engine::follow::{follow, EventStream, Follow};

#[tracing::instrument(skip_all, fields(task_id = %req.id))]
pub async fn subscribe_to_task(
    h: &Harness,
    req: SubscribeToTaskRequest,
    caller: &Caller,
) -> Result<EventStream, A2aError> {
    validate::required_id(&req.id, "id")?;
    // The Task it starts with holds the history an answer holds by default.
    let history = crate::config::DEFAULT_HISTORY_LENGTH;
    let rec = h
        .visible_view(&req.tenant, &req.id, caller, Some(history), true)
        .await?;
    if rec.state().is_terminal() {
        return Err(A2aError::UnsupportedOperation(format!(
            "Task {} is in terminal state {}; there is nothing to subscribe to",
            rec.task.id,
            rec.state().as_str()
        )));
    }
    let subscription = h.subscribers.admit(&rec.task.id, caller.id())?;
    Ok(follow(
        h.store.clone(),
        Follow {
            task_id: rec.task.id.clone(),
            may_see: h.visibility(&req.tenant, caller.id()),
            first: StreamResponse::task(shown(rec.task.clone(), &rec.agent, history, true)),
            // The current Task already holds every earlier event's effect: replaying them
            // would show each state twice (and an old WORKING after the snapshot).
            after: rec.last_seq,
            replay_until: rec.last_seq,
            settled: rec.state().is_interrupted(),
            subscription: Some(subscription),
            until: caller.token_expires,
            answer: rec.agent.answer.clone(),
        },
    ))
}
