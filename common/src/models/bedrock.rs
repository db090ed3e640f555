//! The Amazon Bedrock provider: the Converse API through `aws-sdk-bedrockruntime`, with
//! tool use, whole (`chat`: Converse) or streamed (`chat_stream`: ConverseStream).
//! Credentials, region and endpoint come from the standard AWS chain ([`Bedrock::from_env`]:
//! environment, profile, the Lambda execution role, ...), or from a client built by the
//! caller ([`Bedrock::new`]).
//!
//! The request: the system prompt as one `system` text block; user text as user messages;
//! assistant turns as `text` and `toolUse` blocks; tool results as `toolResult` blocks in a
//! user message (consecutive messages of the same role are merged into one, so a run of
//! tool results, and any user text after them, becomes a single user message, which keeps
//! the roles alternating as Converse requires); the tools as `toolConfig.tools[].toolSpec`
//! (omitted when there are none); `inferenceConfig.maxTokens`. Converse and ConverseStream
//! are sent the same request.
//!
//! The stream: `contentBlockDelta` text is the answer's text (text blocks joined with a
//! newline, as a whole answer's are); `contentBlockStart` of a `toolUse` gives a call's id
//! and name, its `contentBlockDelta`s fragments of its input's JSON text, and calls are
//! numbered among calls; `messageStop` gives the stop reason, `metadata` the token usage;
//! reasoning, citations and images are not part of the answer. A stream that ends before
//! `messageStop` (the connection ended or broke) is cut off: transient, and the whole call
//! is made again by [`super::retry::Retrying`].
//!
//! Failures of a call, and exceptions in the stream, map onto [`ModelError`] by the same
//! rule: throttling, service unavailable, internal errors, model-not-ready, model timeouts,
//! model stream errors, other 5xx and 429s, timeouts, connection errors and unreadable
//! answers are transient; access denied, validation, unknown model, quota and other 4xx,
//! an exception in the stream of a kind not named here, and requests that could not be
//! built or signed (no credentials) are permanent. Messages name the operation, the model,
//! the error code, the HTTP status (or that it came in the stream) and the service's own
//! message; they never carry credentials.
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
use aws_sdk_bedrockruntime::operation::converse::ConverseOutput;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ContentBlockDelta, ContentBlockStart, ConversationRole, ConverseStreamOutput,
    InferenceConfiguration, Message, SystemContentBlock, TokenUsage, Tool, ToolConfiguration,
    ToolInputSchema, ToolResultBlock, ToolResultContentBlock, ToolResultStatus, ToolSpecification,
    ToolUseBlock,
};
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::event_stream::RawMessage;
use serde_json::Value;

use super::stream::{self, Assembly};
use super::{
    ChatMessage, ChatRequest, ChatResponse, Delta, Model, ModelError, OnDelta, ToolCall, Usage,
};

/// A [`Model`] backed by Bedrock's Converse API.
#[derive(Debug, Clone)]
pub struct Bedrock {
    client: aws_sdk_bedrockruntime::Client,
    /// How long a stream may be silent, and take in all (the SDK bounds the response's
    /// head, not its body): both transient, as for the HTTP providers.
    idle: Duration,
    total: Duration,
}

impl Bedrock {
    /// Uses `client` as it is configured (region, credentials, endpoint, timeouts and the
    /// SDK's own retries).
    pub fn new(client: aws_sdk_bedrockruntime::Client) -> Self {
        Bedrock {
            client,
            idle: super::CALL_TIMEOUT,
            total: super::sse::STREAM_TIMEOUT,
        }
    }

    /// Bounds a stream's silences by `idle` and the whole of it by `total`.
    pub fn with_stream_timeouts(mut self, idle: Duration, total: Duration) -> Self {
        self.idle = idle;
        self.total = total;
        self
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

/// What Converse and ConverseStream are both sent.
struct Parts {
    messages: Vec<Message>,
    system: Option<Vec<SystemContentBlock>>,
    tool_config: Option<ToolConfiguration>,
    inference: InferenceConfiguration,
}

fn parts(request: &ChatRequest) -> Result<Parts, ModelError> {
    Ok(Parts {
        messages: messages(request)?,
        system: (!request.system.is_empty())
            .then(|| vec![SystemContentBlock::Text(request.system.clone())]),
        tool_config: tool_config(request)?,
        inference: InferenceConfiguration::builder()
            .max_tokens(i32::try_from(request.max_tokens).unwrap_or(i32::MAX))
            .build(),
    })
}

/// Sets [`Parts`] on a Converse or ConverseStream call (their builders have the same
/// setters, and no trait in common).
macro_rules! with_parts {
    ($call:expr, $parts:expr) => {{
        let parts: Parts = $parts;
        $call
            .set_messages(Some(parts.messages))
            .set_system(parts.system)
            .set_tool_config(parts.tool_config)
            .inference_config(parts.inference)
    }};
}

/// A Bedrock Runtime operation: its name, as errors say it, and the IAM action that
/// allows it.
struct Operation {
    name: &'static str,
    action: &'static str,
}

const CONVERSE: Operation = Operation {
    name: "Converse",
    action: "bedrock:InvokeModel",
};
const CONVERSE_STREAM: Operation = Operation {
    name: "ConverseStream",
    action: "bedrock:InvokeModelWithResponseStream",
};

#[async_trait]
impl Model for Bedrock {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let model = request.model.as_str();
        let call = self.client.converse().model_id(model);
        let output = with_parts!(call, parts(request)?)
            .send()
            .await
            .map_err(|e| call_error(model, &CONVERSE, &e))?;
        response(model, &output)
    }

    /// ConverseStream: each event's delta goes to `on_delta` as it comes. A stream that
    /// ends before `messageStop` is cut off (transient); an exception in the stream is
    /// classified as the same error of a whole call is.
    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let model = request.model.as_str();
        let call = self.client.converse_stream().model_id(model);
        let mut output = with_parts!(call, parts(request)?)
            .send()
            .await
            .map_err(|e| call_error(model, &CONVERSE_STREAM, &e))?;
        let mut events = Events::default();
        let mut assembly = Assembly::default();
        let end = tokio::time::Instant::now() + self.total;
        loop {
            let next = tokio::time::Instant::now() + self.idle;
            let event = match tokio::time::timeout_at(next.min(end), output.stream.recv()).await {
                Ok(event) => event.map_err(|e| call_error(model, &CONVERSE_STREAM, &e))?,
                Err(_) => {
                    let why = if next < end {
                        format!("was silent for {:?}", self.idle)
                    } else {
                        format!("did not end within {:?}", self.total)
                    };
                    return Err(ModelError::transient(format!(
                        "bedrock: the ConverseStream of {model} {why} (timed out)"
                    )));
                }
            };
            let Some(event) = event else { break };
            if let Some(delta) = events.delta(event) {
                assembly.add(&delta);
                on_delta(delta);
            }
        }
        if !assembly.finished() {
            return Err(stream::cut_off("bedrock"));
        }
        let response = assembly.finish("bedrock")?;
        tracing::debug!(
            model,
            stop_reason = response.finish_reason.as_deref(),
            tool_calls = response.tool_calls.len(),
            "bedrock converse stream answered"
        );
        Ok(response)
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
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: output.usage().map(usage).unwrap_or_default(),
        finish_reason: Some(output.stop_reason().as_str().to_owned()),
    })
}

fn usage(u: &TokenUsage) -> Usage {
    Usage {
        input_tokens: u64::try_from(u.input_tokens()).unwrap_or(0),
        output_tokens: u64::try_from(u.output_tokens()).unwrap_or(0),
    }
}

/// ConverseStream's events as deltas. Converse numbers content blocks of every kind;
/// deltas number tool calls among tool calls. Text blocks are joined with a newline, as
/// [`response`] joins them; reasoning, citations and images are not part of the answer.
#[derive(Default)]
struct Events {
    /// The call index of each tool-use content block.
    calls: HashMap<i32, usize>,
    /// The content block text last came in.
    text_block: Option<i32>,
}

impl Events {
    fn delta(&mut self, event: ConverseStreamOutput) -> Option<Delta> {
        match event {
            ConverseStreamOutput::ContentBlockStart(start) => match start.start {
                Some(ContentBlockStart::ToolUse(tool)) => Some(Delta::ToolCall {
                    index: self.call(start.content_block_index),
                    id: Some(tool.tool_use_id),
                    name: Some(tool.name),
                    arguments: String::new(),
                }),
                _ => None,
            },
            ConverseStreamOutput::ContentBlockDelta(delta) => {
                let block = delta.content_block_index;
                match delta.delta {
                    Some(ContentBlockDelta::Text(text)) if !text.is_empty() => {
                        let next_block = self.text_block.replace(block).is_some_and(|b| b != block);
                        Some(Delta::Text(if next_block {
                            format!("\n{text}")
                        } else {
                            text
                        }))
                    }
                    Some(ContentBlockDelta::ToolUse(tool)) if !tool.input.is_empty() => {
                        Some(Delta::ToolCall {
                            index: self.call(block),
                            id: None,
                            name: None,
                            arguments: tool.input,
                        })
                    }
                    _ => None,
                }
            }
            ConverseStreamOutput::MessageStop(stop) => {
                Some(Delta::Finish(stop.stop_reason.as_str().to_owned()))
            }
            ConverseStreamOutput::Metadata(metadata) => {
                metadata.usage.as_ref().map(|u| Delta::Usage(usage(u)))
            }
            // messageStart (the role), contentBlockStop, and events newer than this SDK.
            _ => None,
        }
    }

    /// The call index of a tool-use content block: the next one the first time.
    fn call(&mut self, block: i32) -> usize {
        let next = self.calls.len();
        *self.calls.entry(block).or_insert(next)
    }
}

/// What a failed call's raw answer tells: the HTTP response of a call, or an exception
/// message in ConverseStream's response stream (no status; its code in a header).
trait RawAnswer {
    fn status(&self) -> Option<u16>;
    fn header(&self, name: &str) -> Option<&str>;
}

impl RawAnswer for HttpResponse {
    fn status(&self) -> Option<u16> {
        Some(HttpResponse::status(self).as_u16())
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers().get(name)
    }
}

impl RawAnswer for RawMessage {
    fn status(&self) -> Option<u16> {
        None
    }

    fn header(&self, name: &str) -> Option<&str> {
        let RawMessage::Decoded(message) = self else {
            return None;
        };
        message
            .headers()
            .iter()
            .find(|h| h.name().as_str() == name)
            .and_then(|h| h.value().as_string().ok())
            .map(|v| v.as_str())
    }
}

/// Where an answer came from, as messages say it.
fn answered_in(status: Option<u16>) -> String {
    status.map_or_else(
        || "in the response stream".to_owned(),
        |status| format!("HTTP {status}"),
    )
}

/// Whether an error the service named is worth another try, and a hint for the ones that
/// are not. Codes compare without case: an HTTP error says `ThrottlingException`, the
/// response stream `throttlingException`. An unknown code is retried when its status says
/// so (408, 429, 5xx); in the stream, where there is none, it is not.
fn classify(code: Option<&str>, status: Option<u16>, operation: &Operation) -> (bool, String) {
    let code = code.unwrap_or_default().to_ascii_lowercase();
    match code.as_str() {
        "throttlingexception"
        | "serviceunavailableexception"
        | "internalserverexception"
        | "modelnotreadyexception"
        | "modeltimeoutexception"
        | "modelstreamerrorexception" => (true, String::new()),
        "accessdeniedexception" => (
            false,
            format!(
                " (check that the credentials allow {} on this model and that access to the \
                 model is enabled in this region)",
                operation.action
            ),
        ),
        "resourcenotfoundexception" => (
            false,
            " (check the model id and that the model is offered in this region)".to_owned(),
        ),
        "validationexception" => (false, String::new()),
        _ => (
            status.is_some_and(|s| s == 408 || s == 429 || s >= 500),
            String::new(),
        ),
    }
}

/// Maps a failed Converse or ConverseStream call, or an error in ConverseStream's
/// response stream, onto [`ModelError`].
fn call_error<E, R>(model: &str, operation: &Operation, error: &SdkError<E, R>) -> ModelError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: RawAnswer + std::fmt::Debug,
{
    let op = operation.name;
    match error {
        SdkError::ServiceError(service) => {
            let (err, raw) = (service.err(), service.raw());
            let status = raw.status();
            let code = err.code().or_else(|| raw.header(":exception-type"));
            let detail = match err.message().filter(|m| !m.is_empty()) {
                Some(m) => format!(": {m}"),
                // No error code or message: a body the SDK could not read; say why.
                None => std::error::Error::source(err)
                    .map(chain)
                    .filter(|why| why != "Error")
                    .map(|why| format!(": {why}"))
                    .unwrap_or_default(),
            };
            let (transient, hint) = classify(code, status, operation);
            let message = format!(
                "bedrock: {op} for model `{model}` failed with {} ({}){detail}{hint}",
                code.unwrap_or("an unrecognised response"),
                answered_in(status)
            );
            if transient {
                ModelError::Transient {
                    message,
                    retry_after: retry_after(raw.header("retry-after")),
                }
            } else {
                ModelError::permanent(message)
            }
        }
        SdkError::TimeoutError(_) => ModelError::transient(format!(
            "bedrock: {op} for model `{model}` timed out: {}",
            chain(error)
        )),
        SdkError::DispatchFailure(dispatch) => {
            let message = format!(
                "bedrock: {op} for model `{model}` got no complete answer: {}",
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
        // An answer (or a frame of the stream) that could not be read.
        SdkError::ResponseError(response) => ModelError::transient(format!(
            "bedrock: {op} for model `{model}` got a response that could not be read \
             ({}): {}",
            answered_in(response.raw().status()),
            chain(error)
        )),
        // Construction failures and anything newer: the request never left.
        _ => ModelError::permanent(format!(
            "bedrock: {op} for model `{model}` could not be sent: {}",
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

#[cfg(test)]
mod tests {
    use aws_sdk_bedrockruntime::types::ContentBlockDeltaEvent;

    use super::*;

    fn text_delta(block: i32, text: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockDelta(
            ContentBlockDeltaEvent::builder()
                .content_block_index(block)
                .delta(ContentBlockDelta::Text(text.into()))
                .build()
                .expect("an index"),
        )
    }

    #[test]
    fn streamed_text_blocks_are_joined_with_a_newline_as_a_whole_answers_are() {
        let mut events = Events::default();
        let texts: Vec<Option<Delta>> = [(0, "First"), (0, " block."), (2, "Second.")]
            .into_iter()
            .map(|(block, text)| events.delta(text_delta(block, text)))
            .collect();
        assert_eq!(
            texts,
            [
                Some(Delta::Text("First".into())),
                Some(Delta::Text(" block.".into())),
                Some(Delta::Text("\nSecond.".into())),
            ]
        );
    }
}
