//! GetTask: the task with at most `historyLength` recent messages (by default 20), of at
//! most 4 MiB (`config::RESPONSE_BYTES`) together.

use super::shown::shown;
use super::{Caller, Harness};
use crate::a2a::{validate, A2aError, GetTaskRequest, Task};

#[tracing::instrument(skip_all, fields(task_id = %req.id))]
pub async fn get_task(h: &Harness, req: GetTaskRequest, caller: &Caller) -> Result<Task, A2aError> {
    validate::required_id(&req.id, "id")?;
    let history = super::history_length(req.history_length, "historyLength")?;
    let rec = h
        .visible_view(&req.tenant, &req.id, caller, Some(history), true)
        .await?;
    Ok(shown(rec.task, &rec.agent, history, true))
}
