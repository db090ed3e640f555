//! The requests and responses of the task operations (send, get, list, cancel,
//! subscribe) and of the extended agent card.

use serde::{Deserialize, Serialize};

use super::message::Message;
use super::push::TaskPushNotificationConfig;
use super::task::{state_is_unspecified, Task, TaskState};
use super::Metadata;
use crate::a2a::serde_util::{is_false, map_is_empty, null_default};
use crate::a2a::timestamp::Timestamp;

/// How a SendMessage should be handled.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendMessageConfiguration {
    #[serde(
        alias = "accepted_output_modes",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    #[serde(
        alias = "task_push_notification_config",
        alias = "pushNotificationConfig",
        alias = "push_notification_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(alias = "history_length", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(
        alias = "return_immediately",
        deserialize_with = "null_default",
        skip_serializing_if = "is_false"
    )]
    pub return_immediately: bool,
    /// 1.0-rc spelling, the inverse of `returnImmediately`; read, never printed.
    #[serde(skip_serializing)]
    pub blocking: Option<bool>,
}

impl SendMessageConfiguration {
    pub fn returns_immediately(&self) -> bool {
        self.return_immediately || self.blocking == Some(false)
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendMessageRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
}

/// Either the task the message started or continued, or a direct message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendMessageResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetTaskRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    #[serde(alias = "history_length", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTasksRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "state_is_unspecified"
    )]
    pub status: TaskState,
    #[serde(alias = "page_size", skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(
        alias = "page_token",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
    #[serde(alias = "history_length", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(
        alias = "status_timestamp_after",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_timestamp_after: Option<Timestamp>,
    #[serde(alias = "include_artifacts", skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
    /// This harness's filter beyond the proto (participants and channels): only the tasks
    /// waiting on the caller, their open help requests and the sub-tasks assigned to them.
    #[serde(alias = "waiting_on_me", skip_serializing_if = "Option::is_none")]
    pub waiting_on_me: Option<bool>,
}

/// A page of tasks. Every key is always printed, even when empty or zero.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTasksResponse {
    #[serde(deserialize_with = "null_default")]
    pub tasks: Vec<Task>,
    #[serde(alias = "next_page_token", deserialize_with = "null_default")]
    pub next_page_token: String,
    #[serde(alias = "page_size", deserialize_with = "null_default")]
    pub page_size: i32,
    #[serde(alias = "total_size", deserialize_with = "null_default")]
    pub total_size: i32,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CancelTaskRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscribeToTaskRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetExtendedAgentCardRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
}
