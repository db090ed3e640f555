//! The tools a model may call, as the model's side sees them: a tool's behaviour
//! ([`Tool`]) and why a call failed ([`ToolError`]). Which tools a task offers, and how
//! their arguments are checked, is the agent's (`agent::tools`).

use async_trait::async_trait;
use serde_json::Value;

/// Why a tool failed; reaches the model as `[code] message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[{code}] {message}")]
pub struct ToolError {
    pub code: String,
    pub message: String,
}

impl ToolError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// A tool's behaviour. Its name, description and argument schema live in its schema
/// file; `run` only sees arguments that passed that schema.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    async fn run(&self, arguments: &Value) -> Result<String, ToolError>;

    /// Whether a call may be made again when a crash leaves its outcome unknown: true for
    /// a tool without side effects, or whose side effects do not add up.
    fn idempotent(&self) -> bool {
        true
    }

    /// Whether a call may change something beyond the task (another system, with the
    /// operator's credentials): such a call runs only on the word of the task's reporter or
    /// an admin (`ext::permissions`). False for the harness's own tools; an MCP tool has
    /// side effects unless its server's configuration declares it read-only.
    fn side_effects(&self) -> bool {
        false
    }

    /// Whose words its output (a result or an error) carries when the operator does not
    /// vouch for them: an MCP tool's server, unless its configuration declares the
    /// server's output trusted. Once such a result enters the conversation, the model acts
    /// on that source's words (`agent::actor`), whom no privilege is given. None for the
    /// harness's own tools.
    fn untrusted_source(&self) -> Option<&str> {
        None
    }
}
