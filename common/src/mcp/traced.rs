//! MCP calls in traces: a span per tool call (the MCP semantic conventions' client span,
//! `tools/call <tool>`), whose W3C trace context the call carries to the server in its
//! `_meta` (`traceparent`, `tracestate`: MCP's SEP-414, as the OpenTelemetry MCP
//! conventions propagate it). The HTTP request itself carries none: rmcp sends it from
//! its session's own task, outside the call's span.

use rmcp::model::{CallToolRequestParams, RequestParamsMeta};

/// The span of one call of `tool` on `server` (its name in the MCP file). No arguments
/// and no result.
pub(super) fn span(server: &str, tool: &str) -> tracing::Span {
    tracing::debug_span!(
        "tools/call",
        otel.name = format!("tools/call {tool}").as_str(),
        otel.kind = "client",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        mcp.server = server,
    )
}

/// `params` carrying `span`'s trace context in `_meta`.
pub(super) fn propagate(span: &tracing::Span, params: &mut CallToolRequestParams) {
    if !crate::traces::enabled() {
        return;
    }
    let headers = span.in_scope(crate::traces::headers);
    for (name, value) in &headers {
        if let Ok(value) = value.to_str() {
            match name.as_str() {
                "traceparent" => params.set_traceparent(value),
                "tracestate" => params.set_tracestate(value),
                _ => {}
            }
        }
    }
}
