//! The Amazon Bedrock provider: the Converse API through `aws-sdk-bedrockruntime`, with
//! tool use. Credentials, region and endpoint come from the standard AWS chain
//! ([`Bedrock::from_env`]: environment, profile, the Lambda execution role, ...), or from a
//! client built by the caller ([`Bedrock::new`]).
//!
//! The request: the system prompt as one `system` text block; user text as user messages;
//! assistant turns as `text` and `toolUse` blocks; tool results as `toolResult` blocks in a
//! user message (consecutive messages of the same role are merged into one, so a run of
//! tool results, and any user text after them, becomes a single user message, which keeps
//! the roles alternating as Converse requires); the tools as `toolConfig.tools[].toolSpec`
//! (omitted when there are none); `inferenceConfig.maxTokens`.
//!
//! Failures map onto [`ModelError`]: throttling, service unavailable, internal errors,
//! model-not-ready, model timeouts, other 5xx and 429s, timeouts and connection errors are
//! transient; access denied, validation, unknown model, quota and other 4xx, and requests
//! that could not be built or signed (no credentials) are permanent. Messages name the
//! model, the error code, the HTTP status and the service's own message; they never carry
//! credentials.
//!
//! Retrying is done by [`super::retry::Retrying`], not here. The SDK has its own retry
//! layer (standard mode, 3 attempts by default) that this provider leaves as the client's
//! config has it; to have `Retrying` alone decide, build the client with
//! `retry_config(RetryConfig::disabled())`, as the tests do.
//!
//! Tool schemas and tool inputs travel as the SDK's `Document` type. `aws-smithy-types`,
//! which defines it, is not a direct dependency of this crate and the SDK does not
//! re-export it, so the conversions below never name the type: building one goes through
//! its `From` impls, and reading one goes through a small view closure written where the
//! concrete type is known.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse::{ConverseError, ConverseOutput};
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, InferenceConfiguration, Message, SystemContentBlock, Tool,
    ToolConfiguration, ToolInputSchema, ToolResultBlock, ToolResultContentBlock, ToolResultStatus,
    ToolSpecification, ToolUseBlock,
};
use serde_json::Value;

use super::{ChatMessage, ChatRequest, ChatResponse, Model, ModelError, ToolCall, Usage};

/// A [`Model`] backed by Bedrock's Converse API.
#[derive(Debug, Clone)]
pub struct Bedrock {
    client: aws_sdk_bedrockruntime::Client,
}

impl Bedrock {
    /// Uses `client` as it is configured (region, credentials, endpoint, timeouts and the
    /// SDK's own retries).
    pub fn new(client: aws_sdk_bedrockruntime::Client) -> Self {
        Bedrock { client }
    }

    /// A client from the standard AWS configuration chain: what a Lambda function has
    /// (its execution role and `AWS_REGION`), or the environment and profile elsewhere.
    pub async fn from_env() -> Self {
        let sdk = crate::https::sdk_config().await;
        let mut config = aws_sdk_bedrockruntime::config::Builder::from(&sdk);
        if let Some(url) = crate::https::service_endpoint("BEDROCK_RUNTIME") {
            config = config.endpoint_url(url);
        }
        Bedrock::new(aws_sdk_bedrockruntime::Client::from_conf(config.build()))
    }
}

#[async_trait]
impl Model for Bedrock {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let model = request.model.as_str();
        let mut converse = self
            .client
            .converse()
            .model_id(model)
            .set_messages(Some(messages(request)?))
            .inference_config(
                InferenceConfiguration::builder()
                    .max_tokens(i32::try_from(request.max_tokens).unwrap_or(i32::MAX))
                    .build(),
            );
        if !request.system.is_empty() {
            converse = converse.system(SystemContentBlock::Text(request.system.clone()));
        }
        if let Some(tools) = tool_config(request)? {
            converse = converse.tool_config(tools);
        }
        let output = converse
            .send()
            .await
            .map_err(|e| converse_error(model, &e))?;
        response(model, &output)
    }
}

/// The request's messages as Converse messages, same-role neighbours merged.
fn messages(request: &ChatRequest) -> Result<Vec<Message>, ModelError> {
    let mut merged: Vec<(ConversationRole, Vec<ContentBlock>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = content_of(message).map_err(|e| build_error(request, &e))?;
        if blocks.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => merged.push((role, blocks)),
        }
    }
    merged
        .into_iter()
        .map(|(role, blocks)| {
            Message::builder()
                .role(role)
                .set_content(Some(blocks))
                .build()
                .map_err(|e| build_error(request, &e))
        })
        .collect()
}

fn content_of(
    message: &ChatMessage,
) -> Result<(ConversationRole, Vec<ContentBlock>), aws_sdk_bedrockruntime::error::BuildError> {
    Ok(match message {
        ChatMessage::User { text } => (
            ConversationRole::User,
            vec![ContentBlock::Text(text.clone())],
        ),
        ChatMessage::Assistant { text, tool_calls } => {
            let mut blocks = Vec::with_capacity(tool_calls.len() + 1);
            if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                blocks.push(ContentBlock::Text(text.to_string()));
            }
            for call in tool_calls {
                blocks.push(ContentBlock::ToolUse(
                    ToolUseBlock::builder()
                        .tool_use_id(&call.id)
                        .name(&call.name)
                        .input(json_to_document(&call.arguments))
                        .build()?,
                ));
            }
            (ConversationRole::Assistant, blocks)
        }
        ChatMessage::Tool {
            call_id,
            content,
            is_error,
            ..
        } => {
            let mut result = ToolResultBlock::builder()
                .tool_use_id(call_id)
                .content(ToolResultContentBlock::Text(content.clone()));
            // Only set on failure: Converse documents `status` for a few model families.
            if *is_error {
                result = result.status(ToolResultStatus::Error);
            }
            (
                ConversationRole::User,
                vec![ContentBlock::ToolResult(result.build()?)],
            )
        }
    })
}

/// `toolConfig`, or `None` when the request offers no tools (Converse rejects an empty list).
fn tool_config(request: &ChatRequest) -> Result<Option<ToolConfiguration>, ModelError> {
    if request.tools.is_empty() {
        return Ok(None);
    }
    let mut config = ToolConfiguration::builder();
    for tool in &request.tools {
        let mut spec = ToolSpecification::builder()
            .name(&tool.name)
            .input_schema(ToolInputSchema::Json(json_to_document(&tool.parameters)));
        if !tool.description.is_empty() {
            spec = spec.description(&tool.description);
        }
        let spec = spec.build().map_err(|e| build_error(request, &e))?;
        config = config.tools(Tool::ToolSpec(spec));
    }
    config
        .build()
        .map(Some)
        .map_err(|e| build_error(request, &e))
}

fn build_error(request: &ChatRequest, e: &dyn std::error::Error) -> ModelError {
    ModelError::permanent(format!(
        "bedrock: could not build the Converse request for model `{}`: {e}",
        request.model
    ))
}

/// The answer: text blocks joined, tool uses as calls, token usage.
fn response(model: &str, output: &ConverseOutput) -> Result<ChatResponse, ModelError> {
    let message = output
        .output()
        .and_then(|o| o.as_message().ok())
        .ok_or_else(|| {
            ModelError::permanent(format!(
                "bedrock: the Converse response for model `{model}` has no output message \
                 (stop reason {})",
                output.stop_reason().as_str()
            ))
        })?;
    let mut texts: Vec<&str> = Vec::new();
    let mut tool_calls = Vec::new();
    for block in message.content() {
        match block {
            ContentBlock::Text(text) => texts.push(text),
            ContentBlock::ToolUse(tool_use) => tool_calls.push(ToolCall {
                id: tool_use.tool_use_id().to_string(),
                name: tool_use.name().to_string(),
                arguments: tool_use_input(tool_use),
            }),
            // Reasoning, citations, images and the like: nothing the harness uses.
            _ => {}
        }
    }
    tracing::debug!(
        model,
        stop_reason = output.stop_reason().as_str(),
        tool_calls = tool_calls.len(),
        "bedrock converse answered"
    );
    let text = if texts.is_empty() {
        None
    } else {
        Some(texts.join("\n"))
    };
    let usage = output
        .usage()
        .map(|u| Usage {
            input_tokens: u64::try_from(u.input_tokens()).unwrap_or(0),
            output_tokens: u64::try_from(u.output_tokens()).unwrap_or(0),
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        text,
        tool_calls,
        usage,
        finish_reason: Some(output.stop_reason().as_str().to_owned()),
    })
}

/// Maps a failed Converse call onto [`ModelError`].
fn converse_error(model: &str, error: &SdkError<ConverseError>) -> ModelError {
    match error {
        SdkError::ServiceError(service) => {
            let err = service.err();
            let status = service.raw().status().as_u16();
            let code = err.code().unwrap_or("an unrecognised response");
            let detail = match err.message().filter(|m| !m.is_empty()) {
                Some(m) => format!(": {m}"),
                // No error code or message: a body the SDK could not read; say why.
                None => std::error::Error::source(err)
                    .map(chain)
                    .filter(|why| why != "Error")
                    .map(|why| format!(": {why}"))
                    .unwrap_or_default(),
            };
            let (transient, hint) = match err {
                ConverseError::ThrottlingException(_) => (true, ""),
                ConverseError::ServiceUnavailableException(_) => (true, ""),
                ConverseError::InternalServerException(_) => (true, ""),
                ConverseError::ModelNotReadyException(_) => (true, ""),
                ConverseError::ModelTimeoutException(_) => (true, ""),
                ConverseError::AccessDeniedException(_) => (
                    false,
                    " (check that the credentials allow bedrock:InvokeModel on this model and \
                     that access to the model is enabled in this region)",
                ),
                ConverseError::ResourceNotFoundException(_) => (
                    false,
                    " (check the model id and that the model is offered in this region)",
                ),
                ConverseError::ValidationException(_) => (false, ""),
                _ => (status == 408 || status == 429 || status >= 500, ""),
            };
            let message =
                format!("bedrock: Converse for model `{model}` failed with {code} (HTTP {status}){detail}{hint}");
            if transient {
                ModelError::Transient {
                    message,
                    retry_after: retry_after(service.raw().headers().get("retry-after")),
                }
            } else {
                ModelError::permanent(message)
            }
        }
        SdkError::TimeoutError(_) => ModelError::transient(format!(
            "bedrock: Converse for model `{model}` timed out: {}",
            chain(error)
        )),
        SdkError::DispatchFailure(dispatch) => {
            let message = format!(
                "bedrock: Converse for model `{model}` was not answered: {}",
                chain(error)
            );
            // Timeouts, I/O errors and errors the client classified (an incomplete message)
            // are worth another try; the rest happen before anything is sent (no
            // credentials, a request that cannot be signed) and will happen again.
            if dispatch.is_timeout() || dispatch.is_io() || dispatch.as_other().is_some() {
                ModelError::transient(message)
            } else {
                ModelError::permanent(message)
            }
        }
        SdkError::ResponseError(response) => {
            let status = response.raw().status().as_u16();
            ModelError::transient(format!(
                "bedrock: Converse for model `{model}` got a response that could not be read \
                 (HTTP {status}): {}",
                chain(error)
            ))
        }
        // Construction failures and anything newer: the request never left.
        _ => ModelError::permanent(format!(
            "bedrock: Converse for model `{model}` could not be sent: {}",
            chain(error)
        )),
    }
}

/// An error and its sources, `: `-separated, each said once.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

/// `Retry-After` in seconds, when the service sent one (Bedrock usually does not).
fn retry_after(header: Option<&str>) -> Option<Duration> {
    header
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// A JSON value as a smithy `Document` (or anything built the same way).
fn json_to_document<D>(value: &Value) -> D
where
    D: Default
        + From<bool>
        + From<String>
        + From<u64>
        + From<i64>
        + From<f64>
        + From<Vec<D>>
        + From<HashMap<String, D>>,
{
    match value {
        Value::Null => D::default(),
        Value::Bool(b) => D::from(*b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                D::from(u)
            } else if let Some(i) = n.as_i64() {
                D::from(i)
            } else {
                n.as_f64().map(D::from).unwrap_or_default()
            }
        }
        Value::String(s) => D::from(s.clone()),
        Value::Array(items) => D::from(items.iter().map(json_to_document).collect::<Vec<D>>()),
        Value::Object(map) => D::from(
            map.iter()
                .map(|(k, v)| (k.clone(), json_to_document(v)))
                .collect::<HashMap<String, D>>(),
        ),
    }
}

/// One level of a document, as [`document_to_json`] walks it.
enum DocumentView<'a, D> {
    Object(&'a HashMap<String, D>),
    Array(&'a [D]),
    Number(Value),
    String(&'a str),
    Bool(bool),
    Null,
}

/// A document as JSON, `view` telling what each node is.
fn document_to_json<D>(doc: &D, view: &dyn Fn(&D) -> DocumentView<'_, D>) -> Value {
    match view(doc) {
        DocumentView::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), document_to_json(v, view)))
                .collect(),
        ),
        DocumentView::Array(items) => {
            Value::Array(items.iter().map(|v| document_to_json(v, view)).collect())
        }
        DocumentView::Number(n) => n,
        DocumentView::String(s) => Value::String(s.to_string()),
        DocumentView::Bool(b) => Value::Bool(b),
        DocumentView::Null => Value::Null,
    }
}

/// A tool use's input as JSON.
fn tool_use_input(tool_use: &ToolUseBlock) -> Value {
    document_to_json(tool_use.input(), &|doc| {
        if let Some(map) = doc.as_object() {
            DocumentView::Object(map)
        } else if let Some(items) = doc.as_array() {
            DocumentView::Array(items)
        } else if let Some(n) = doc.as_number() {
            DocumentView::Number(number_to_json(doc, *n))
        } else if let Some(s) = doc.as_string() {
            DocumentView::String(s)
        } else if let Some(b) = doc.as_bool() {
            DocumentView::Bool(b)
        } else {
            DocumentView::Null
        }
    })
}

/// A smithy number as JSON, keeping integers integers and floats floats (`doc` is the
/// number's document, compared against rebuilt ones to tell `3` from `3.0`).
fn number_to_json<D, N>(doc: &D, n: N) -> Value
where
    D: PartialEq + From<u64> + From<i64>,
    N: Copy,
    u64: TryFrom<N>,
    i64: TryFrom<N>,
    f64: TryFrom<N>,
{
    if let Ok(u) = u64::try_from(n) {
        if *doc == D::from(u) {
            return Value::from(u);
        }
    }
    if let Ok(i) = i64::try_from(n) {
        if *doc == D::from(i) {
            return Value::from(i);
        }
    }
    f64::try_from(n)
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}
