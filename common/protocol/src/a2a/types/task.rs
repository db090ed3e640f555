//! A task as data: `Task`, its `TaskStatus` and `TaskState` lifecycle, and the
//! `Artifact`s it outputs.

use serde::{Deserialize, Serialize};

use super::message::{Message, Part};
use super::Metadata;
use crate::a2a::serde_util::{map_is_empty, null_default, proto_enum};
use crate::a2a::timestamp::Timestamp;

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

pub(super) fn state_is_unspecified(s: &TaskState) -> bool {
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
