//! The four push-notification config operations: configs belong to a task the caller
//! can see, keep a client-chosen id (or get one), and are checked before they are
//! stored (see [`crate::push`]). Deleting is idempotent.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::{Caller, Harness};
use crate::a2a::{
    validate, A2aError, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use crate::engine::transition::new_id;
use crate::push::MAX_CONFIGS_PER_TASK;
use crate::store::{StoreError, TaskRecord};

const DEFAULT_PAGE_SIZE: usize = 50;

/// Stores `config` for the task `rec` (which must be the caller's) and marks the task as
/// having webhooks. Used by CreateTaskPushNotificationConfig and by SendMessage's
/// `taskPushNotificationConfig`.
pub(crate) async fn attach(
    h: &Harness,
    mut rec: TaskRecord,
    mut config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, A2aError> {
    h.engine.pusher().check(&config)?;
    config.task_id = rec.task.id.clone();
    config.tenant.clear();
    if config.id.is_empty() {
        config.id = new_id();
    }
    let existing = h
        .store
        .list_push_configs(&config.task_id, None, MAX_CONFIGS_PER_TASK)
        .await?;
    if existing.len() >= MAX_CONFIGS_PER_TASK && !existing.iter().any(|c| c.id == config.id) {
        return Err(A2aError::invalid_params(format!(
            "task {} already has {MAX_CONFIGS_PER_TASK} push notification configs (the limit)",
            config.task_id
        )));
    }
    h.store.put_push_config(&config).await?;
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
    Ok(config)
}

pub async fn create(
    h: &Harness,
    req: TaskPushNotificationConfig,
    caller: &Caller,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.url, "url")?;
    let rec = h.visible_task(&req.tenant, &req.task_id, caller).await?;
    attach(h, rec, req).await
}

pub async fn get(
    h: &Harness,
    req: GetTaskPushNotificationConfigRequest,
    caller: &Caller,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.id, "id")?;
    h.visible_task(&req.tenant, &req.task_id, caller).await?;
    h.store
        .get_push_config(&req.task_id, &req.id)
        .await?
        .ok_or(A2aError::PushConfigNotFound {
            task_id: req.task_id,
            id: req.id,
        })
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
    h.visible_task(&req.tenant, &req.task_id, caller).await?;
    let mut configs = h
        .store
        .list_push_configs(&req.task_id, after.as_deref(), page_size + 1)
        .await?;
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
    h.visible_task(&req.tenant, &req.task_id, caller).await?;
    h.store.delete_push_config(&req.task_id, &req.id).await?;
    Ok(())
}
