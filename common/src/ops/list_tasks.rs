//! ListTasks: the tasks the caller is a participant of, newest status first, a page at a time behind an opaque
//! cursor. Artifacts only when asked for.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::{Caller, Harness};
use crate::a2a::{validate, A2aError, ListTasksRequest, ListTasksResponse, TaskState};
use crate::store::{Cursor, TaskQuery};

pub const DEFAULT_PAGE_SIZE: usize = 50;
pub const MAX_PAGE_SIZE: usize = 100;

fn encode_cursor(c: &Cursor) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}:{}", c.status_millis, c.task_id))
}

fn decode_cursor(token: &str) -> Result<Cursor, A2aError> {
    let bad =
        || A2aError::invalid_field("pageToken", "pageToken is not a token this server issued");
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (ms, id) = text.split_once(':').ok_or_else(bad)?;
    crate::a2a::validate::id_length(id, "pageToken").map_err(|_| bad())?;
    Ok(Cursor {
        status_millis: ms.parse().map_err(|_| bad())?,
        task_id: id.to_owned(),
    })
}

#[tracing::instrument(skip_all)]
pub async fn list_tasks(
    h: &Harness,
    req: ListTasksRequest,
    caller: &Caller,
) -> Result<ListTasksResponse, A2aError> {
    let page_size = validate::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let history = super::history_length(req.history_length, "historyLength")?;
    // No identity sees no tasks (fail closed); a participant sees only theirs.
    let Some(participant) = caller.participant.clone() else {
        return Ok(ListTasksResponse {
            page_size: page_size as i32,
            ..Default::default()
        });
    };
    let include_artifacts = req.include_artifacts.unwrap_or(false);
    let query = TaskQuery {
        tenant: req.tenant.clone(),
        participant,
        context_id: (!req.context_id.is_empty()).then(|| req.context_id.clone()),
        state: (req.status != TaskState::Unspecified).then_some(req.status),
        status_after: req.status_timestamp_after,
        waiting: req.waiting_on_me.unwrap_or(false),
        page_size,
        cursor: if req.page_token.is_empty() {
            None
        } else {
            Some(decode_cursor(&req.page_token)?)
        },
        history: Some(history),
        artifacts: include_artifacts,
    };
    let page = h.store.list_tasks(&query).await?;
    Ok(ListTasksResponse {
        tasks: page
            .tasks
            .into_iter()
            .map(|r| super::shown::shown(r.task, &r.agent, history, include_artifacts))
            .collect(),
        next_page_token: page.next.as_ref().map(encode_cursor).unwrap_or_default(),
        page_size: page_size as i32,
        total_size: page.total.min(i32::MAX as u64) as i32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_survives_its_round_trip_and_garbage_is_refused() {
        let c = Cursor {
            status_millis: 1_700_000_000_123,
            task_id: "a:b".into(),
        };
        assert_eq!(decode_cursor(&encode_cursor(&c)).ok(), Some(c));
        assert!(decode_cursor("not a cursor!").is_err());
    }
}
