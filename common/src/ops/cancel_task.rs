//! CancelTask: a task that has not ended becomes CANCELED; the answer is the updated task.
//! Its reporter and admins may cancel it (see `channels::permissions`).
//! A run still working on it sees the change at its next commit and stops.

use super::{Caller, Harness};
use crate::a2a::{A2aError, CancelTaskRequest, Task, TaskState};
use crate::channels::permissions::Action;
use crate::engine::transition::{set_status, view};
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
        let event = set_status(&mut next, TaskState::Canceled, None, metadata.clone());
        match h.store.commit(&next, rec.version, &[event], None).await {
            Ok(stored) => {
                h.engine.wake_parents_logged(&stored).await;
                if let Some(remotes) = &h.remotes {
                    crate::remote::delegate::cancel_open(remotes, &stored).await;
                }
                return Ok(view(&stored.task, None, true));
            }
            // The task moved on meanwhile: decide again on its fresh state.
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
