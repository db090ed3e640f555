//! One A2A operation with its decoded request, as both bindings produce it, and the names
//! of the operations (the proto's rpcs, which are also the JSON-RPC methods).

use super::types::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
};
use super::A2aError;

/// One A2A operation with its decoded request: what both bindings produce.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    SubscribeToTask(SubscribeToTaskRequest),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(GetTaskPushNotificationConfigRequest),
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(DeleteTaskPushNotificationConfigRequest),
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

/// The A2A operations, named as the proto's rpcs (which are also the JSON-RPC methods).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
}

impl Operation {
    /// Every operation (every rpc of the proto's `A2AService`).
    pub const ALL: [Operation; 11] = [
        Operation::SendMessage,
        Operation::SendStreamingMessage,
        Operation::GetTask,
        Operation::ListTasks,
        Operation::CancelTask,
        Operation::SubscribeToTask,
        Operation::CreateTaskPushNotificationConfig,
        Operation::GetTaskPushNotificationConfig,
        Operation::ListTaskPushNotificationConfigs,
        Operation::DeleteTaskPushNotificationConfig,
        Operation::GetExtendedAgentCard,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operation::SendMessage => "SendMessage",
            Operation::SendStreamingMessage => "SendStreamingMessage",
            Operation::GetTask => "GetTask",
            Operation::ListTasks => "ListTasks",
            Operation::CancelTask => "CancelTask",
            Operation::SubscribeToTask => "SubscribeToTask",
            Operation::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            Operation::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            Operation::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            Operation::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
            Operation::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }
}

impl Call {
    pub fn operation(&self) -> Operation {
        match self {
            Call::SendMessage(_) => Operation::SendMessage,
            Call::SendStreamingMessage(_) => Operation::SendStreamingMessage,
            Call::GetTask(_) => Operation::GetTask,
            Call::ListTasks(_) => Operation::ListTasks,
            Call::CancelTask(_) => Operation::CancelTask,
            Call::SubscribeToTask(_) => Operation::SubscribeToTask,
            Call::CreatePushConfig(_) => Operation::CreateTaskPushNotificationConfig,
            Call::GetPushConfig(_) => Operation::GetTaskPushNotificationConfig,
            Call::ListPushConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Call::DeletePushConfig(_) => Operation::DeleteTaskPushNotificationConfig,
            Call::GetExtendedAgentCard(_) => Operation::GetExtendedAgentCard,
        }
    }

    /// The tenant and every id the request names, each at most
    /// [`super::validate::ID_CHARS`].
    pub fn check_names(&self) -> Result<(), A2aError> {
        let names: Vec<(&str, &str)> = match self {
            Call::SendMessage(r) | Call::SendStreamingMessage(r) => {
                let mut names = vec![("tenant", r.tenant.as_str())];
                if let Some(m) = &r.message {
                    names.push(("message.taskId", &m.task_id));
                    names.push(("message.contextId", &m.context_id));
                    let references = m.reference_task_ids.iter();
                    names.extend(references.map(|id| ("message.referenceTaskIds", id.as_str())));
                }
                let push = (r.configuration.as_ref())
                    .and_then(|c| c.task_push_notification_config.as_ref());
                if let Some(push) = push {
                    names.push(("configuration.taskPushNotificationConfig.id", &push.id));
                }
                names
            }
            Call::GetTask(r) => vec![("tenant", &r.tenant), ("id", &r.id)],
            Call::CancelTask(r) => vec![("tenant", &r.tenant), ("id", &r.id)],
            Call::SubscribeToTask(r) => vec![("tenant", &r.tenant), ("id", &r.id)],
            Call::ListTasks(r) => vec![("tenant", &r.tenant), ("contextId", &r.context_id)],
            Call::CreatePushConfig(r) => {
                vec![("tenant", &r.tenant), ("taskId", &r.task_id), ("id", &r.id)]
            }
            Call::GetPushConfig(r) | Call::DeletePushConfig(r) => {
                vec![("tenant", &r.tenant), ("taskId", &r.task_id), ("id", &r.id)]
            }
            Call::ListPushConfigs(r) => vec![("tenant", &r.tenant), ("taskId", &r.task_id)],
            Call::GetExtendedAgentCard(r) => vec![("tenant", &r.tenant)],
        };
        (names.into_iter()).try_for_each(|(field, id)| super::validate::id_length(id, field))
    }

    /// The task and context the request names, for its log lines (empty: none named).
    pub fn names(&self) -> (&str, &str) {
        match self {
            Call::SendMessage(r) | Call::SendStreamingMessage(r) => r
                .message
                .as_ref()
                .map(|m| (m.task_id.as_str(), m.context_id.as_str()))
                .unwrap_or_default(),
            Call::GetTask(r) => (&r.id, ""),
            Call::CancelTask(r) => (&r.id, ""),
            Call::SubscribeToTask(r) => (&r.id, ""),
            Call::CreatePushConfig(r) => (&r.task_id, ""),
            Call::GetPushConfig(r) | Call::DeletePushConfig(r) => (&r.task_id, ""),
            Call::ListPushConfigs(r) => (&r.task_id, ""),
            Call::ListTasks(_) | Call::GetExtendedAgentCard(_) => ("", ""),
        }
    }
}
