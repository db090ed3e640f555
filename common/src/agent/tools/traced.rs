//! Each call of a registered tool in a span of the trace ([`crate::traces`]).

use async_trait::async_trait;
use serde_json::Value;

use crate::models::{Tool, ToolError};

/// A registered tool, each call of it in a span (the GenAI conventions' `execute_tool`,
/// named for the tool and, for an MCP tool, its server); its arguments and result are
/// attributes only with content capture on, redacted.
pub(super) struct Traced {
    name: String,
    mcp_server: Option<String>,
    tool: Box<dyn Tool>,
}

impl Traced {
    pub(super) fn boxed(
        name: &str,
        mcp_server: Option<String>,
        tool: Box<dyn Tool>,
    ) -> Box<dyn Tool> {
        Box::new(Traced {
            name: name.to_owned(),
            mcp_server,
            tool,
        })
    }
}

#[async_trait]
impl Tool for Traced {
    async fn run(&self, arguments: &Value) -> Result<String, ToolError> {
        use tracing::field::Empty;
        use tracing::Instrument;
        let span = tracing::debug_span!(
            "execute_tool",
            otel.name = format!("execute_tool {}", self.name).as_str(),
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = self.name.as_str(),
            gen_ai.tool.type = "function",
            mcp.server = self.mcp_server.as_deref(),
            error.type = Empty,
        );
        if span.is_disabled() {
            return self.tool.run(arguments).await;
        }
        if let Some(text) = crate::traces::content(|| arguments.to_string()) {
            crate::traces::set_string(&span, "gen_ai.tool.call.arguments", text);
        }
        let ran = self.tool.run(arguments).instrument(span.clone()).await;
        match &ran {
            Ok(result) => {
                if let Some(text) = crate::traces::content(|| result.clone()) {
                    crate::traces::set_string(&span, "gen_ai.tool.call.result", text);
                }
            }
            Err(e) => {
                span.record("otel.status_code", "error");
                span.record("error.type", e.code.as_str());
            }
        }
        ran
    }

    fn idempotent(&self) -> bool {
        self.tool.idempotent()
    }

    fn side_effects(&self) -> bool {
        self.tool.side_effects()
    }

    fn untrusted_source(&self) -> Option<&str> {
        self.tool.untrusted_source()
    }
}
