//! The messages of `lf.a2a.v1` (a2a.proto) as serde types, one Rust type per proto message
//! and field for field. Input is lenient ProtoJSON (camelCase or snake_case names, enum
//! names or numbers, `null` as absent, unknown fields ignored); output is strict (camelCase,
//! defaults omitted, no keys the proto does not have). Required fields are checked by
//! [`crate::a2a::validate`], so a missing one is reported with its path.

use serde_json::{Map, Value};

mod agent_card;
mod message;
mod push;
mod requests;
mod stream;
mod task;

pub use agent_card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, ApiKeySecurityScheme, HttpAuthSecurityScheme,
    MutualTlsSecurityScheme, OAuth2SecurityScheme, OAuthFlow, OAuthFlows,
    OpenIdConnectSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};
pub use message::{Message, Part, Role};
pub use push::{
    AuthenticationInfo, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
pub use requests::{
    CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest, ListTasksRequest,
    ListTasksResponse, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest,
};
pub use stream::{StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
pub use task::{Artifact, Task, TaskState, TaskStatus};

pub type Metadata = Option<Map<String, Value>>;
