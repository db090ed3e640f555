//! A message and its content: `Message`, the `Part`s it carries and the `Role` of its
//! sender.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Metadata;
use crate::a2a::serde_util::{map_is_empty, null_default, proto_enum};

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
