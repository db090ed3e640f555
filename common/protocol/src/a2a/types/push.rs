//! Push notification configs: the webhook a task's events go to, how the agent
//! authenticates to it (kept out of `Debug`), and the requests that manage them.

use serde::{Deserialize, Serialize};

use crate::a2a::serde_util::null_default;

/// How the agent authenticates to a push webhook. `Debug` leaves the credentials out.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthenticationInfo {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub scheme: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub credentials: String,
}

/// A webhook that receives a task's events. `Debug` leaves the token out.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskPushNotificationConfig {
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
    #[serde(
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub url: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub token: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// What `Debug` shows of a secret: whether there is one.
fn redacted(secret: &str) -> &'static str {
    if secret.is_empty() {
        ""
    } else {
        "<redacted>"
    }
}

impl std::fmt::Debug for AuthenticationInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthenticationInfo")
            .field("scheme", &self.scheme)
            .field("credentials", &redacted(&self.credentials))
            .finish()
    }
}

impl std::fmt::Debug for TaskPushNotificationConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskPushNotificationConfig")
            .field("tenant", &self.tenant)
            .field("id", &self.id)
            .field("task_id", &self.task_id)
            .field("url", &self.url)
            .field("token", &redacted(&self.token))
            .field("authentication", &self.authentication)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetTaskPushNotificationConfigRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
}

pub type DeleteTaskPushNotificationConfigRequest = GetTaskPushNotificationConfigRequest;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(alias = "page_size", skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(
        alias = "page_token",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
}

/// Both keys are always printed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTaskPushNotificationConfigsResponse {
    #[serde(deserialize_with = "null_default")]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(alias = "next_page_token", deserialize_with = "null_default")]
    pub next_page_token: String,
}
