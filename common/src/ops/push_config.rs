//! The four push-notification config operations. Webhook delivery is not built yet, so
//! the card does not claim `capabilities.pushNotifications` and, as the spec requires,
//! each operation answers PushNotificationNotSupportedError once its request is well
//! formed (a malformed one still gets its invalid-params error).

use crate::a2a::{
    validate, A2aError, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};

pub async fn create(
    req: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.url, "url")?;
    Err(A2aError::PushNotificationNotSupported)
}

pub async fn get(
    req: GetTaskPushNotificationConfigRequest,
) -> Result<TaskPushNotificationConfig, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.id, "id")?;
    Err(A2aError::PushNotificationNotSupported)
}

pub async fn list(
    req: ListTaskPushNotificationConfigsRequest,
) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    Err(A2aError::PushNotificationNotSupported)
}

pub async fn delete(req: DeleteTaskPushNotificationConfigRequest) -> Result<(), A2aError> {
    validate::required_id(&req.task_id, "taskId")?;
    validate::required_id(&req.id, "id")?;
    Err(A2aError::PushNotificationNotSupported)
}
