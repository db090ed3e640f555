//! The messages of `lf.a2a.v1` (a2a.proto) as serde types, one Rust type per proto message
//! and field for field. Input is lenient ProtoJSON (camelCase or snake_case names, enum
//! names or numbers, `null` as absent, unknown fields ignored); output is strict (camelCase,
//! defaults omitted, no keys the proto does not have). Required fields are checked by
//! [`crate::a2a::validate`], so a missing one is reported with its path.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::serde_util::{is_false, map_is_empty, null_default, proto_enum};
use super::timestamp::Timestamp;

pub type Metadata = Option<Map<String, Value>>;

proto_enum!(
    /// The lifecycle state of a task.
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// No further change is possible.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// The task waits for something from outside (a reply, credentials).
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// A stream ends after an event that leaves the task in such a state.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

proto_enum!(
    /// Who sent a message.
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
);

fn role_is_unspecified(r: &Role) -> bool {
    *r == Role::Unspecified
}

fn state_is_unspecified(s: &TaskState) -> bool {
    *s == TaskState::Unspecified
}

/// A unit of work, its status, its outputs and the conversation that led to it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Task {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    #[serde(
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Message>,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
}

impl Task {
    pub fn state(&self) -> TaskState {
        self.status.as_ref().map(|s| s.state).unwrap_or_default()
    }
}

/// The state of a task, with the message that explains it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskStatus {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "state_is_unspecified"
    )]
    pub state: TaskState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

/// One turn of communication between a client and the agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Message {
    #[serde(
        alias = "message_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub message_id: String,
    #[serde(
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "role_is_unspecified"
    )]
    pub role: Role,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub parts: Vec<Part>,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    #[serde(
        alias = "reference_task_ids",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

/// A piece of content: exactly one of `text`, `raw`, `url`, `data` (a proto oneof,
/// checked by validation), with optional metadata, filename and media type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Part {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Standard padded base64 of the bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub filename: String,
    #[serde(
        alias = "media_type",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub media_type: String,
}

impl Part {
    pub fn text(t: impl Into<String>) -> Self {
        Part {
            text: Some(t.into()),
            ..Default::default()
        }
    }

    pub fn data(v: Value) -> Self {
        Part {
            data: Some(v),
            ..Default::default()
        }
    }

    /// How many members of the content oneof are set.
    pub fn content_members(&self) -> usize {
        [
            self.text.is_some(),
            self.raw.is_some(),
            self.url.is_some(),
            self.data.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Artifact {
    #[serde(
        alias = "artifact_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub artifact_id: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub parts: Vec<Part>,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
}

/// A change of a task's status, as streamed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskStatusUpdateEvent {
    #[serde(
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
}

/// A new or extended artifact, as streamed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskArtifactUpdateEvent {
    #[serde(
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    #[serde(deserialize_with = "null_default", skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(
        alias = "last_chunk",
        deserialize_with = "null_default",
        skip_serializing_if = "is_false"
    )]
    pub last_chunk: bool,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub metadata: Metadata,
}

/// One event of a stream or push delivery: exactly one member set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StreamResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(alias = "status_update", skip_serializing_if = "Option::is_none")]
    pub status_update: Option<TaskStatusUpdateEvent>,
    #[serde(alias = "artifact_update", skip_serializing_if = "Option::is_none")]
    pub artifact_update: Option<TaskArtifactUpdateEvent>,
}

impl StreamResponse {
    pub fn task(t: Task) -> Self {
        StreamResponse {
            task: Some(t),
            ..Default::default()
        }
    }
    pub fn message(m: Message) -> Self {
        StreamResponse {
            message: Some(m),
            ..Default::default()
        }
    }
    pub fn status(e: TaskStatusUpdateEvent) -> Self {
        StreamResponse {
            status_update: Some(e),
            ..Default::default()
        }
    }
    pub fn artifact(e: TaskArtifactUpdateEvent) -> Self {
        StreamResponse {
            artifact_update: Some(e),
            ..Default::default()
        }
    }

    pub fn members(&self) -> usize {
        [
            self.task.is_some(),
            self.message.is_some(),
            self.status_update.is_some(),
            self.artifact_update.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }

    /// The task state this event leaves behind, if it carries one.
    pub fn state(&self) -> Option<TaskState> {
        if let Some(t) = &self.task {
            return Some(t.state());
        }
        self.status_update
            .as_ref()
            .and_then(|u| u.status.as_ref())
            .map(|s| s.state)
    }
}

// ---- requests and responses ----

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

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetExtendedAgentCardRequest {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
}

// ---- agent card ----

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCard {
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(deserialize_with = "null_default")]
    pub description: String,
    #[serde(alias = "supported_interfaces", deserialize_with = "null_default")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(deserialize_with = "null_default")]
    pub version: String,
    #[serde(alias = "documentation_url", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(deserialize_with = "null_default")]
    pub capabilities: AgentCapabilities,
    #[serde(
        alias = "security_schemes",
        deserialize_with = "null_default",
        skip_serializing_if = "std::collections::BTreeMap::is_empty"
    )]
    pub security_schemes: std::collections::BTreeMap<String, SecurityScheme>,
    #[serde(
        alias = "security_requirements",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    #[serde(alias = "default_input_modes", deserialize_with = "null_default")]
    pub default_input_modes: Vec<String>,
    #[serde(alias = "default_output_modes", deserialize_with = "null_default")]
    pub default_output_modes: Vec<String>,
    #[serde(deserialize_with = "null_default")]
    pub skills: Vec<AgentSkill>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentInterface {
    #[serde(deserialize_with = "null_default")]
    pub url: String,
    #[serde(alias = "protocol_binding", deserialize_with = "null_default")]
    pub protocol_binding: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(alias = "protocol_version", deserialize_with = "null_default")]
    pub protocol_version: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentProvider {
    #[serde(deserialize_with = "null_default")]
    pub url: String,
    #[serde(deserialize_with = "null_default")]
    pub organization: String,
}

/// Optional proto fields are printed whenever they are set, even to `false`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(alias = "push_notifications", skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<AgentExtension>,
    #[serde(alias = "extended_agent_card", skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentExtension {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub uri: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(deserialize_with = "null_default", skip_serializing_if = "is_false")]
    pub required: bool,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub params: Metadata,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSkill {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(deserialize_with = "null_default")]
    pub description: String,
    #[serde(deserialize_with = "null_default")]
    pub tags: Vec<String>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub examples: Vec<String>,
    #[serde(
        alias = "input_modes",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub input_modes: Vec<String>,
    #[serde(
        alias = "output_modes",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub output_modes: Vec<String>,
    #[serde(
        alias = "security_requirements",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// `{schemes: {name: {list: [scope]}}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityRequirement {
    #[serde(deserialize_with = "null_default")]
    pub schemes: std::collections::BTreeMap<String, StringList>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StringList {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub list: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCardSignature {
    #[serde(deserialize_with = "null_default")]
    pub protected: String,
    #[serde(deserialize_with = "null_default")]
    pub signature: String,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub header: Metadata,
}

/// How a client authenticates: exactly one member set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityScheme {
    #[serde(
        alias = "api_key_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_key_security_scheme: Option<ApiKeySecurityScheme>,
    #[serde(
        alias = "http_auth_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub http_auth_security_scheme: Option<HttpAuthSecurityScheme>,
    #[serde(
        alias = "oauth2_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub oauth2_security_scheme: Option<OAuth2SecurityScheme>,
    #[serde(
        alias = "open_id_connect_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub open_id_connect_security_scheme: Option<OpenIdConnectSecurityScheme>,
    #[serde(
        alias = "mtls_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub mtls_security_scheme: Option<MutualTlsSecurityScheme>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApiKeySecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(deserialize_with = "null_default")]
    pub location: String,
    #[serde(deserialize_with = "null_default")]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HttpAuthSecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(deserialize_with = "null_default")]
    pub scheme: String,
    #[serde(
        alias = "bearer_format",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub bearer_format: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuth2SecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<OAuthFlows>,
    #[serde(
        alias = "oauth2_metadata_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub oauth2_metadata_url: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OpenIdConnectSecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(alias = "open_id_connect_url", deserialize_with = "null_default")]
    pub open_id_connect_url: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MutualTlsSecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
}

/// The OAuth 2.0 flow a scheme supports: exactly one member set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthFlows {
    #[serde(alias = "authorization_code", skip_serializing_if = "Option::is_none")]
    pub authorization_code: Option<OAuthFlow>,
    #[serde(alias = "client_credentials", skip_serializing_if = "Option::is_none")]
    pub client_credentials: Option<OAuthFlow>,
    #[serde(alias = "device_code", skip_serializing_if = "Option::is_none")]
    pub device_code: Option<OAuthFlow>,
    /// Deprecated in the proto; kept so such cards still parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implicit: Option<OAuthFlow>,
    /// Deprecated in the proto; kept so such cards still parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<OAuthFlow>,
}

/// The fields of every OAuth flow message; each flow prints only those it has set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthFlow {
    #[serde(
        alias = "authorization_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub authorization_url: String,
    #[serde(
        alias = "device_authorization_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub device_authorization_url: String,
    #[serde(
        alias = "token_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub token_url: String,
    #[serde(
        alias = "refresh_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    #[serde(deserialize_with = "null_default")]
    pub scopes: std::collections::BTreeMap<String, String>,
    #[serde(
        alias = "pkce_required",
        deserialize_with = "null_default",
        skip_serializing_if = "is_false"
    )]
    pub pkce_required: bool,
}
