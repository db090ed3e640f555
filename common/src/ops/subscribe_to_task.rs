//! SubscribeToTask: the current Task, then the events after it until the task is
//! terminal or interrupted (a task already waiting for input ends with its snapshot).
//! With `Last-Event-ID` (a stream resumed after a cut), the current Task, then every event
//! after that one, then live ones: a task that ended since is replayed to its end.

use super::shown::shown;
use super::{Caller, Harness};
use crate::a2a::{validate, A2aError, StreamResponse, SubscribeToTaskRequest};
use crate::engine::follow::{cursor_of, follow, EventStream, Follow};

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
    let resumed = match caller.last_event_id.as_deref() {
        Some(id) => Some(resumed_after(id, &rec)?),
        None => None,
    };
    if rec.state().is_terminal() && resumed.is_none() {
        return Err(A2aError::UnsupportedOperation(format!(
            "Task {} is in terminal state {}; there is nothing to subscribe to",
            rec.task.id,
            rec.state().as_str()
        )));
    }
    let subscription = h.subscribers.admit(&rec.task.id, caller.id())?;
    // Resumed, the events after the client's last follow the Task, to the task's end if it
    // has ended; else the Task holds every earlier event's effect, and replaying them would
    // show each state twice (and an old WORKING after the snapshot).
    let (after, settled, answer) = match resumed {
        Some(after) => (after, rec.state().ends_stream(), None),
        None => (
            rec.last_seq,
            rec.state().is_interrupted(),
            rec.agent.answer.clone(),
        ),
    };
    Ok(follow(
        h.store.clone(),
        Follow {
            task_id: rec.task.id.clone(),
            may_see: h.visibility(&req.tenant, caller.id()),
            first: StreamResponse::task(shown(rec.task.clone(), &rec.agent, history, true)),
            after,
            replay_until: rec.last_seq,
            settled,
            subscription: Some(subscription),
            until: caller.token_expires,
            answer,
        },
    ))
}

/// The longest `Last-Event-ID` read: an id this harness issues is far shorter.
const MAX_LAST_EVENT_ID: usize = 64;

/// Where a stream of `rec` resumes: after the event whose SSE id is `id`, which one of
/// this task's streams issued; refused otherwise (never another task's events).
fn resumed_after(id: &str, rec: &crate::store::TaskRecord) -> Result<u64, A2aError> {
    let refused = |why: String| Err(A2aError::invalid_field("Last-Event-ID", why));
    if id.len() > MAX_LAST_EVENT_ID {
        return refused(format!(
            "Last-Event-ID is longer than {MAX_LAST_EVENT_ID} bytes"
        ));
    }
    match cursor_of(id, &rec.task.id) {
        Some(cursor) if cursor <= rec.last_seq => Ok(cursor),
        _ => refused(format!(
            "Last-Event-ID {id:?} is not the id of an event of this task's streams"
        )),
    }
}
