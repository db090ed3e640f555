//! The OpenAI Chat Completions provider (`POST {base}/chat/completions`). The base URL is
//! configurable, so the same client talks to OpenAI (`https://api.openai.com/v1`), Ollama
//! (`http://localhost:11434/v1`), vLLM and LiteLLM. The key, when there is one, goes in
//! `Authorization: Bearer`; local servers usually need none.
//!
//! Failures map onto [`ModelError`]: 408, 409, 429 and 5xx, timeouts and connection
//! errors are transient (with the `Retry-After` the server sent), every other status is
//! permanent. Error messages name the provider, the status and the API's own message, and
//! never carry the key.
//!
//! `chat_stream` asks for a stream (`stream: true`, `stream_options.include_usage`) and
//! reads it as [`chunks`] describes; the [`sse`] module says how a stream is read, when
//! it is complete, and its timeouts.
//!
//! The [`http`] module holds what this provider shares with the Anthropic one: the
//! client, sending a JSON request and classifying what comes back.

mod chunks;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::sse::{self, Timeouts};
use super::{http, OnDelta};
use super::{ChatMessage, ChatRequest, ChatResponse, Model, ModelError, ToolCall, Usage};

const PROVIDER: &str = "openai";

/// Which body field carries the output limit. OpenAI documents `max_tokens` as deprecated
/// in favour of `max_completion_tokens` (and its reasoning models reject `max_tokens`),
/// while Ollama's compatibility layer documents only `max_tokens`; vLLM and LiteLLM
/// accept both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

impl MaxTokensField {
    fn name(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// `max_completion_tokens` for OpenAI itself, `max_tokens` for everything else.
    fn for_base_url(base_url: &str) -> Self {
        let host = base_url
            .split("://")
            .nth(1)
            .unwrap_or(base_url)
            .split(['/', ':'])
            .next()
            .unwrap_or_default();
        if host.eq_ignore_ascii_case("api.openai.com") {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        }
    }
}

/// A chat model behind an OpenAI-compatible Chat Completions endpoint.
pub struct OpenAi {
    base_url: String,
    api_key: Option<String>,
    timeout: Duration,
    stream_timeout: Duration,
    max_tokens_field: MaxTokensField,
    client: Result<reqwest::Client, String>,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("max_tokens_field", &self.max_tokens_field)
            .finish()
    }
}

impl OpenAi {
    /// `base_url` up to and including the version, e.g. `https://api.openai.com/v1` or
    /// `http://localhost:11434/v1`; `timeout` bounds each whole-response request as a
    /// whole, and a streamed one between two reads (see [`OpenAi::with_stream_timeout`]).
    pub fn new(base_url: impl Into<String>, api_key: Option<String>, timeout: Duration) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_string();
        OpenAi {
            max_tokens_field: MaxTokensField::for_base_url(&base_url),
            base_url,
            api_key: api_key.filter(|k| !k.is_empty()),
            timeout,
            stream_timeout: sse::STREAM_TIMEOUT.max(timeout),
            client: http::client(timeout),
        }
    }

    /// Overrides how long a streamed answer may take in all (by default 10 minutes, or
    /// the timeout when that is longer).
    pub fn with_stream_timeout(mut self, total: Duration) -> Self {
        self.stream_timeout = total;
        self
    }

    /// Like [`OpenAi::new`], reading the key from the environment variable `key_var` when
    /// one is named (a named variable that is unset or empty is an error).
    pub fn from_env(
        base_url: impl Into<String>,
        key_var: Option<&str>,
        timeout: Duration,
    ) -> Result<Self, ModelError> {
        let api_key = key_var
            .map(|var| http::key_from_env(PROVIDER, var))
            .transpose()?;
        Ok(OpenAi::new(base_url, api_key, timeout))
    }

    /// Overrides the field the output limit is sent in (by default `max_completion_tokens`
    /// for `api.openai.com` and `max_tokens` for every other server).
    pub fn with_max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
        self
    }

    /// The request to the completions endpoint with `body`, and its URL.
    fn post(&self, body: &Value) -> Result<(String, reqwest::RequestBuilder), ModelError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| ModelError::permanent(format!("{PROVIDER}: {e}")))?;
        let url = format!("{}/chat/completions", self.base_url);
        let mut builder = client.post(&url).json(body);
        if let Some(key) = &self.api_key {
            let value = http::secret_header(PROVIDER, "Authorization", &format!("Bearer {key}"))?;
            builder = builder.header(reqwest::header::AUTHORIZATION, value);
        }
        Ok((url, builder))
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        messages.extend(request.messages.iter().map(message));

        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        }
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        body.insert(
            self.max_tokens_field.name().into(),
            json!(request.max_tokens),
        );
        Value::Object(body)
    }
}

fn message(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::User { text } => json!({"role": "user", "content": text}),
        ChatMessage::Assistant { text, tool_calls } => {
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            let content = match text {
                Some(text) => json!(text),
                // The API's own shape for a turn that only calls tools.
                None if !tool_calls.is_empty() => Value::Null,
                None => json!(""),
            };
            m.insert("content".into(), content);
            if !tool_calls.is_empty() {
                let calls = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                // A JSON string, as the API sends and expects it.
                                "arguments": c.arguments.to_string(),
                            }
                        })
                    })
                    .collect();
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(m)
        }
        ChatMessage::Tool {
            call_id,
            content,
            is_error,
            ..
        } => {
            // The API has no error flag on tool results; say it in the content.
            let content = if *is_error {
                format!("Error: {content}")
            } else {
                content.clone()
            };
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

fn parse_response(body: &Value) -> Result<ChatResponse, ModelError> {
    let Some(message) = body.pointer("/choices/0/message") else {
        return Err(ModelError::permanent(format!(
            "{PROVIDER}: the response has no choices[0].message{}",
            http::error_detail_of(body)
        )));
    };
    let text = match message.get("content") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => message
            .get("refusal")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    };
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, call) in calls.iter().enumerate() {
            tool_calls.push(tool_call(i, call)?);
        }
    }
    let tokens = |field: &str| http::usage_tokens(body, field);
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: tokens("prompt_tokens"),
            output_tokens: tokens("completion_tokens"),
        },
        finish_reason: body
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

fn tool_call(index: usize, call: &Value) -> Result<ToolCall, ModelError> {
    let function = call.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            ModelError::permanent(format!(
                "{PROVIDER}: tool call {index} in the response has no function name"
            ))
        })?
        .to_string();
    let arguments = match function.and_then(|f| f.get("arguments")) {
        // The documented shape: the arguments as a JSON string.
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
            ModelError::permanent(format!(
                "{PROVIDER}: the arguments of the call to tool `{name}` are not valid JSON ({e})"
            ))
        })?,
        // Some OpenAI-compatible servers send an object instead.
        Some(Value::Object(o)) => Value::Object(o.clone()),
        None | Some(Value::Null) => json!({}),
        Some(other) => {
            return Err(ModelError::permanent(format!(
                "{PROVIDER}: the arguments of the call to tool `{name}` are neither a JSON string nor an object: {other}"
            )))
        }
    };
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        // Some compatible servers omit the id; the result still needs one to refer to.
        .unwrap_or_else(|| format!("call_{index}"));
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

#[async_trait]
impl Model for OpenAi {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let (url, builder) = self.post(&self.body(request))?;
        let body = http::send(
            PROVIDER,
            &url,
            builder,
            self.timeout,
            self.api_key.as_deref(),
        )
        .await?;
        parse_response(&body)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let mut body = self.body(request);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let (url, builder) = self.post(&body)?;
        let timeouts = Timeouts {
            idle: self.timeout,
            total: self.stream_timeout,
        };
        sse::stream(
            PROVIDER,
            &url,
            builder,
            timeouts,
            self.api_key.as_deref(),
            chunks::Chunks::default(),
            on_delta,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_other_servers_max_tokens() {
        assert_eq!(
            MaxTokensField::for_base_url("https://api.openai.com/v1"),
            MaxTokensField::MaxCompletionTokens
        );
        assert_eq!(
            MaxTokensField::for_base_url("http://localhost:11434/v1"),
            MaxTokensField::MaxTokens
        );
        assert_eq!(
            MaxTokensField::for_base_url("https://litellm.example.com/v1"),
            MaxTokensField::MaxTokens
        );
    }

    #[test]
    fn error_details_are_read_from_every_common_error_shape() {
        assert_eq!(
            http::error_detail(
                r#"{"error":{"message":"bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#
            ),
            ": bad key (invalid_api_key)"
        );
        assert_eq!(
            http::error_detail(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            ": Overloaded (overloaded_error)"
        );
        assert_eq!(
            http::error_detail(
                r#"{"object":"error","message":"model not found","type":"NotFoundError","code":404}"#
            ),
            ": model not found (NotFoundError)"
        );
        assert_eq!(
            http::error_detail(r#"{"error":"model 'x' not found"}"#),
            ": model 'x' not found"
        );
        assert_eq!(http::error_detail("upstream down"), ": upstream down");
        assert_eq!(http::error_detail(""), "");
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_an_http_date_is_ignored() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "7".parse().unwrap());
        assert_eq!(http::retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after", "1.5".parse().unwrap());
        assert_eq!(
            http::retry_after(&headers),
            Some(Duration::from_millis(1500))
        );
        headers.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(http::retry_after(&headers), None);
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(
            http::retry_after(&headers),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn the_debug_form_does_not_show_the_key() {
        let m = OpenAi::new(
            "http://x/v1",
            Some("sk-secret".into()),
            Duration::from_secs(1),
        );
        assert!(!format!("{m:?}").contains("sk-secret"));
    }
}
