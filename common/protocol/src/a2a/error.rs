//! The A2A error model: every way a request can fail, and its one mapping to a JSON-RPC
//! code, an HTTP status, a `google.rpc.Code` name and an `ErrorInfo` reason (spec §1.4).

use serde_json::{json, Map, Value};

pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum A2aError {
    #[error("Task not found")]
    TaskNotFound { task_id: String },
    /// The A2A error set has no error of its own for a missing push config; like the
    /// SDKs, it is reported as not found with the task-not-found code.
    #[error("Push notification config {id} not found for task {task_id}")]
    PushConfigNotFound { task_id: String, id: String },
    #[error("Task cannot be canceled")]
    TaskNotCancelable { task_id: String },
    #[error("Push Notification is not supported")]
    PushNotificationNotSupported,
    #[error("{0}")]
    UnsupportedOperation(String),
    #[error("Incompatible content types: {0}")]
    ContentTypeNotSupported(String),
    #[error("Invalid agent response: {0}")]
    InvalidAgentResponse(String),
    #[error("Authenticated Extended Card is not configured")]
    ExtendedAgentCardNotConfigured,
    #[error("Extension support required: {0}")]
    ExtensionSupportRequired(String),
    #[error("Version not supported: {0}")]
    VersionNotSupported(String),
    #[error("Invalid JSON payload: {0}")]
    Parse(String),
    #[error("Request payload validation error: {0}")]
    InvalidRequest(String),
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    #[error("Invalid params: {message}")]
    InvalidParams {
        message: String,
        field: Option<String>,
    },
    #[error("Internal error: {0}")]
    Internal(String),
    /// No verified identity (jwt mode): HTTP 401 on both bindings. The A2A error set has
    /// no code for it (the spec leaves it to HTTP), so JSON-RPC bodies carry -32000, the
    /// first implementation-defined server error, which A2A does not use.
    #[error("Unauthenticated: {0}")]
    Unauthenticated(String),
    /// A dependency the request needs is down (the identity provider's keys): HTTP 503.
    #[error("Unavailable: {0}")]
    Unavailable(String),
}

impl A2aError {
    pub fn invalid_params(message: impl Into<String>) -> Self {
        A2aError::InvalidParams {
            message: message.into(),
            field: None,
        }
    }

    /// An invalid field, named by its JSON path (`message.parts[0]`).
    pub fn invalid_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        A2aError::InvalidParams {
            message: message.into(),
            field: Some(field.into()),
        }
    }

    pub fn task_not_found(task_id: impl Into<String>) -> Self {
        A2aError::TaskNotFound {
            task_id: task_id.into(),
        }
    }

    pub fn json_rpc_code(&self) -> i32 {
        match self {
            A2aError::TaskNotFound { .. } | A2aError::PushConfigNotFound { .. } => -32001,
            A2aError::TaskNotCancelable { .. } => -32002,
            A2aError::PushNotificationNotSupported => -32003,
            A2aError::UnsupportedOperation(_) => -32004,
            A2aError::ContentTypeNotSupported(_) => -32005,
            A2aError::InvalidAgentResponse(_) => -32006,
            A2aError::ExtendedAgentCardNotConfigured => -32007,
            A2aError::ExtensionSupportRequired(_) => -32008,
            A2aError::VersionNotSupported(_) => -32009,
            A2aError::Parse(_) => -32700,
            A2aError::InvalidRequest(_) => -32600,
            A2aError::MethodNotFound(_) => -32601,
            A2aError::InvalidParams { .. } => -32602,
            A2aError::Internal(_) | A2aError::Unavailable(_) => -32603,
            A2aError::Unauthenticated(_) => -32000,
        }
    }

    /// The HTTP status of the HTTP+JSON binding (spec v1.0.1 column).
    pub fn http_status(&self) -> u16 {
        match self {
            A2aError::TaskNotFound { .. }
            | A2aError::PushConfigNotFound { .. }
            | A2aError::MethodNotFound(_) => 404,
            A2aError::InvalidAgentResponse(_) | A2aError::Internal(_) => 500,
            A2aError::Unauthenticated(_) => 401,
            A2aError::Unavailable(_) => 503,
            _ => 400,
        }
    }

    /// The `google.rpc.Code` name printed as `error.status`.
    pub fn grpc_status(&self) -> &'static str {
        match self {
            A2aError::TaskNotFound { .. }
            | A2aError::PushConfigNotFound { .. }
            | A2aError::MethodNotFound(_) => "NOT_FOUND",
            A2aError::ContentTypeNotSupported(_)
            | A2aError::Parse(_)
            | A2aError::InvalidRequest(_)
            | A2aError::InvalidParams { .. } => "INVALID_ARGUMENT",
            A2aError::InvalidAgentResponse(_) | A2aError::Internal(_) => "INTERNAL",
            A2aError::Unauthenticated(_) => "UNAUTHENTICATED",
            A2aError::Unavailable(_) => "UNAVAILABLE",
            _ => "FAILED_PRECONDITION",
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            A2aError::TaskNotFound { .. } | A2aError::PushConfigNotFound { .. } => "TASK_NOT_FOUND",
            A2aError::TaskNotCancelable { .. } => "TASK_NOT_CANCELABLE",
            A2aError::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            A2aError::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            A2aError::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            A2aError::InvalidAgentResponse(_) => "INVALID_AGENT_RESPONSE",
            A2aError::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            A2aError::ExtensionSupportRequired(_) => "EXTENSION_SUPPORT_REQUIRED",
            A2aError::VersionNotSupported(_) => "VERSION_NOT_SUPPORTED",
            A2aError::Parse(_) => "PARSE_ERROR",
            A2aError::InvalidRequest(_) => "INVALID_REQUEST",
            A2aError::MethodNotFound(_) => "METHOD_NOT_FOUND",
            A2aError::InvalidParams { .. } => "INVALID_PARAMS",
            A2aError::Internal(_) => "INTERNAL_ERROR",
            A2aError::Unauthenticated(_) => "UNAUTHENTICATED",
            A2aError::Unavailable(_) => "UNAVAILABLE",
        }
    }

    /// The `ErrorInfo.metadata` of the error: the ids it is about.
    pub fn info_metadata(&self) -> Vec<(&'static str, &str)> {
        match self {
            A2aError::TaskNotFound { task_id } | A2aError::TaskNotCancelable { task_id } => {
                vec![("taskId", task_id)]
            }
            A2aError::PushConfigNotFound { task_id, id } => {
                vec![("taskId", task_id), ("configId", id)]
            }
            A2aError::ExtensionSupportRequired(uri) => vec![("extensions", uri)],
            _ => vec![],
        }
    }

    /// The `details` / `data` array: an ErrorInfo always, plus a BadRequest naming the
    /// field when one is known.
    pub fn details(&self) -> Value {
        let metadata: Map<String, Value> = (self.info_metadata().into_iter())
            .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
            .collect();
        let mut info = json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.reason(),
            "domain": ERROR_DOMAIN,
        });
        if !metadata.is_empty() {
            info["metadata"] = Value::Object(metadata);
        }
        let mut details = vec![info];
        if let A2aError::InvalidParams {
            message,
            field: Some(field),
        } = self
        {
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": message}],
            }));
        }
        Value::Array(details)
    }

    /// The JSON-RPC `error` member: `code`, `message`, `data` and nothing else.
    pub fn to_json_rpc(&self) -> Value {
        json!({"code": self.json_rpc_code(), "message": self.to_string(), "data": self.details()})
    }

    /// The HTTP+JSON error body, a `google.rpc.Status`.
    pub fn to_rest(&self) -> Value {
        json!({"error": {
            "code": self.http_status(),
            "status": self.grpc_status(),
            "message": self.to_string(),
            "details": self.details(),
        }})
    }
}
