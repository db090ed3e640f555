//! The four push-notification config operations: configs belong to a task the caller
//! can see (anyone else gets the task's not-found) and are managed by its reporter and
//! admins (other participants are refused naming the rule), keep a client-chosen id (or get one),
//! are checked before they are stored and stored with their secrets sealed (see
//! [`crate::push`]). Deleting is idempotent. With push off, each answers
//! PushNotificationNotSupported.
//!
//! A config remembers the participant who created it. Its token and credentials are
//! theirs: Get and List show them to the creator only, and everyone else who manages the
//! task's webhooks sees the config without them. Only the creator replaces it (a create
//! with its id by anyone else is refused, atomically in the store, so a secret cannot be
//! swapped out from under them); the creator or an admin deletes it. A config stored
//! before creators were kept is no one's: its secrets are shown to no one, and only an
//! admin deletes it.
//!
//! The caller is the participant the binding resolved (a verified token's subject in
//! `jwt` mode); for a config attached to a message, the message's sender.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::{Caller, Harness};
use crate::a2a::{
    validate, A2aError, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use crate::engine::transition::new_id;
use crate::ext::permissions::{self, Action};
use crate::store::MAX_CONFIGS_PER_TASK;
use crate::store::{PushConfigRecord, StoreError, TaskRecord};

const DEFAULT_PAGE_SIZE: usize = 50;

/// Stores `config` for the task `rec` (which must be the caller's) as `creator`'s, with
/// its secrets sealed, to be handed the task's events after seq `delivered`. Used by
/// CreateTaskPushNotificationConfig and by a SendMessage's `taskPushNotificationConfig`
/// on the task it creates (one the message continues is attached by its commit:
/// [`sealed_for`]), each of which has checked the URL and, where the task could have
/// configs already, asked [`may_attach`], before anything was stored.
pub(crate) async fn attach(
    h: &Harness,
    mut rec: TaskRecord,
    config: TaskPushNotificationConfig,
    creator: &str,
    delivered: u64,
) -> Result<TaskPushNotificationConfig, A2aError> {
    let config = for_task(rec.id(), config);
    let record = h.notifier()?.seal(config.clone(), creator, delivered);
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
                    .load_task(rec.id())
                    .await?
                    .ok_or_else(|| A2aError::task_not_found(rec.id()))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    h.store.put_push_config(&record).await?;
    delivered_soon(h, rec.id());
    Ok(config)
}

/// The record that attaches `config` to the task `task_id` as `creator`'s: its secrets
/// sealed, its id given when it has none, to be handed the task's events after seq
/// `delivered`. Stored by [`attach`], or by the commit of a message on the task
/// ([`crate::store::Along::push`]), which marks the task and stores the config with the
/// message, or nothing: a config past the task's limit refuses the message too.
pub(crate) fn sealed_for(
    h: &Harness,
    task_id: &str,
    config: TaskPushNotificationConfig,
    creator: &str,
    delivered: u64,
) -> Result<crate::store::PushConfigRecord, A2aError> {
    let config = for_task(task_id, config);
    Ok(h.notifier()?.seal(config, creator, delivered))
}

/// `config` as the task `task_id`'s, with an id of its own when it has none.
fn for_task(task_id: &str, mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    config.task_id = task_id.to_owned();
    config.tenant.clear();
    if config.id.is_empty() {
        config.id = new_id();
    }
    config
}

/// Once a config is stored: its task's events delivered now, where this process delivers
/// (the local server; the notifier function does in AWS).
pub(crate) fn delivered_soon(h: &Harness, task_id: &str) {
    if let (true, Ok(notifier)) = (h.config.push_in_process, h.notifier()) {
        let (notifier, task_id) = (notifier.clone(), task_id.to_owned());
        tokio::spawn(async move { notifier.deliver_logged(&task_id).await });
    }
}

/// Whether `creator` may attach `config` to the task `task_id` now: under the task's
/// limit, and not under an id someone else's config has (the store's atomic write
/// decides a race; this answers before anything is written).
pub(crate) async fn may_attach(
    h: &Harness,
    task_id: &str,
    config: &TaskPushNotificationConfig,
    creator: &str,
) -> Result<(), A2aError> {
    let existing = (h.store)
        .list_push_configs(task_id, None, MAX_CONFIGS_PER_TASK)
        .await?;
    let same_id = existing.iter().find(|c| c.config.id == config.id);
    let theirs = |c: &&PushConfigRecord| !permissions::is_webhook_creator(creator, &c.creator);
    if let Some(taken) = same_id.filter(theirs) {
        return Err(StoreError::PushConfigTaken {
            task_id: task_id.to_owned(),
            id: taken.config.id.clone(),
        }
        .into());
    }
    if existing.len() >= MAX_CONFIGS_PER_TASK && same_id.is_none() {
        return Err(StoreError::TooManyPushConfigs(task_id.to_owned()).into());
    }
    Ok(())
}

pub async fn create(
    h: &Harness,
    req: TaskPushNotificationConfig,
    caller: &Caller,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.url, "url")?;
    h.notifier()?;
    // Whole: attaching the first config marks the task (a commit).
    let rec = h.visible_task(&req.tenant, &req.task_id, caller).await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    h.notifier()?.check(&req)?;
    may_attach(h, rec.id(), &req, caller.id()).await?;
    // Only what happens from now on.
    let delivered = rec.last_seq;
    attach(h, rec, req, caller.id(), delivered).await
}

pub async fn get(
    h: &Harness,
    req: GetTaskPushNotificationConfigRequest,
    caller: &Caller,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.id, "id")?;
    let notifier = h.notifier()?;
    let rec = h
        .visible_view(&req.tenant, &req.task_id, caller, Some(0), false)
        .await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    let record = h
        .store
        .get_push_config(&req.task_id, &req.id)
        .await?
        .ok_or(A2aError::PushConfigNotFound {
            task_id: req.task_id,
            id: req.id,
        })?;
    Ok(notifier.open_for(&record, caller.id())?)
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
    let rec = h
        .visible_view(&req.tenant, &req.task_id, caller, Some(0), false)
        .await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    let mut configs = h
        .store
        .list_push_configs(&req.task_id, after.as_deref(), page_size + 1)
        .await?
        .iter()
        .map(|r| notifier.open_for(r, caller.id()))
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
    let rec = h
        .visible_view(&req.tenant, &req.task_id, caller, Some(0), false)
        .await?;
    h.permit(&rec, caller, Action::ManageWebhooks)?;
    if let Some(record) = h.store.get_push_config(&req.task_id, &req.id).await? {
        let ext = rec.ext().unwrap_or_default();
        if !permissions::may_delete_webhook(&ext, caller.id(), &record.creator) {
            return Err(A2aError::invalid_params(permissions::DELETE_WEBHOOK_RULE));
        }
    }
    h.store.delete_push_config(&req.task_id, &req.id).await?;
    Ok(())
}
