//! The four push-notification config operations: configs belong to a task the caller
//! can see (anyone else gets the task's not-found) and are managed by its reporter and
//! admins (other participants are refused naming the rule), keep a client-chosen id (or get one),
//! are checked before they are stored and stored with their secrets sealed (see
//! [`crate::push`]). Deleting is idempotent. With push off, each answers
//! PushNotificationNotSupported.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::{Caller, Harness};
use crate::a2a::{
    validate, A2aError, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use crate::channels::permissions::Action;
use crate::engine::transition::new_id;
use crate::push::MAX_CONFIGS_PER_TASK;
use crate::store::{StoreError, TaskRecord};

const DEFAULT_PAGE_SIZE: usize = 50;

/// Stores `config` for the task `rec` (which must be the caller's) with its secrets
/// sealed, to be handed the task's events after seq `delivered`. Used by
/// CreateTaskPushNotificationConfig and by SendMessage's `taskPushNotificationConfig`.
pub(crate) async fn attach(
    h: &Harness,
    mut rec: TaskRecord,
    mut config: TaskPushNotificationConfig,
    delivered: u64,
) -> Result<TaskPushNotificationConfig, A2aError> {
    let notifier = h.notifier()?;
    notifier.check(&config)?;
    config.task_id = rec.task.id.clone();
    config.tenant.clear();
    if config.id.is_empty() {
        config.id = new_id();
    }
    let existing = h
        .store
        .list_push_configs(&config.task_id, None, MAX_CONFIGS_PER_TASK)
        .await?;
    if existing.len() >= MAX_CONFIGS_PER_TASK && !existing.iter().any(|c| c.config.id == config.id)
    {
        return Err(A2aError::invalid_params(format!(
            "task {} already has {MAX_CONFIGS_PER_TASK} push notification configs (the limit)",
            config.task_id
        )));
    }
    // The task is marked first, so every event committed after the config exists is
    // marked too (the table's stream passes only marked events to the notifier); events
    // in between are caught up by the config's own insert.
    while !rec.push {
        let mut next = rec.clone();
        next.push = true;
        match h.store.commit(&next, rec.version, &[], None).await {
            Ok(_) => break,
            Err(StoreError::Conflict { .. }) => {
                rec = h
                    .store
                    .load_task(&config.task_id)
                    .await?
                    .ok_or_else(|| A2aError::task_not_found(&config.task_id))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    h.store
        .put_push_config(&notifier.seal(config.clone(), delivered))
        .await?;
    if h.config.push_in_process {
        let (notifier, task_id) = (notifier.clone(), config.task_id.clone());
        tokio::spawn(async move { notifier.deliver_logged(&task_id).await });
    }
    Ok(config)
}

pub async fn create(
    h: &Harness,
    req: TaskPushNotificationConfig,
    caller: &Caller,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.url, "url")?;
    h.notifier()?;
    let rec = h.visible_task(&req.tenant, &req.task_id, caller).await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    // Only what happens from now on.
    let delivered = rec.last_seq;
    attach(h, rec, req, delivered).await
}

pub async fn get(
    h: &Harness,
    req: GetTaskPushNotificationConfigRequest,
    caller: &Caller,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.id, "id")?;
    let notifier = h.notifier()?;
    let rec = h.visible_task(&req.tenant, &req.task_id, caller).await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    let record = h
        .store
        .get_push_config(&req.task_id, &req.id)
        .await?
        .ok_or(A2aError::PushConfigNotFound {
            task_id: req.task_id,
            id: req.id,
        })?;
    Ok(notifier.open(&record)?)
}

pub async fn list(
    h: &Harness,
    req: ListTaskPushNotificationConfigsRequest,
    caller: &Caller,
) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    let page_size = validate::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_CONFIGS_PER_TASK)?;
    let after = if req.page_token.is_empty() {
        None
    } else {
        let bad =
            || A2aError::invalid_field("pageToken", "pageToken is not a token this server issued");
        let bytes = URL_SAFE_NO_PAD.decode(&req.page_token).map_err(|_| bad())?;
        Some(String::from_utf8(bytes).map_err(|_| bad())?)
    };
    let notifier = h.notifier()?;
    let rec = h.visible_task(&req.tenant, &req.task_id, caller).await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    let mut configs = h
        .store
        .list_push_configs(&req.task_id, after.as_deref(), page_size + 1)
        .await?
        .iter()
        .map(|r| notifier.open(r))
        .collect::<Result<Vec<_>, _>>()?;
    let next_page_token = if configs.len() > page_size {
        configs.truncate(page_size);
        configs
            .last()
            .map(|c| URL_SAFE_NO_PAD.encode(&c.id))
            .unwrap_or_default()
    } else {
        String::new()
    };
    Ok(ListTaskPushNotificationConfigsResponse {
        configs,
        next_page_token,
    })
}

pub async fn delete(
    h: &Harness,
    req: DeleteTaskPushNotificationConfigRequest,
    caller: &Caller,
) -> Result<(), A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.id, "id")?;
    h.notifier()?;
    let rec = h.visible_task(&req.tenant, &req.task_id, caller).await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    h.store.delete_push_config(&req.task_id, &req.id).await?;
    Ok(())
}
