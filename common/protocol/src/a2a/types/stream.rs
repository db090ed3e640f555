//! What a stream or a push delivery carries: `StreamResponse` and the status and
//! artifact update events.

use serde::{Deserialize, Serialize};

use super::message::Message;
use super::task::{Artifact, Task, TaskState, TaskStatus};
use super::Metadata;
use crate::a2a::serde_util::{is_false, map_is_empty, null_default};

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
