//! The Anthropic Messages API provider (`POST {base}/v1/messages`, `x-api-key`,
//! `anthropic-version: 2023-06-01`), with tool use.
//!
//! The conversation maps onto the API's alternating turns: an assistant turn is a list of
//! `text` and `tool_use` blocks, and tool results go back as `tool_result` blocks in a
//! user turn, all the results of one assistant turn in the same user message. Failures
//! map onto [`ModelError`] as for the OpenAI provider: 429, 529 (overloaded), other 5xx,
//! timeouts and connection errors are transient, other statuses permanent, and messages
//! never carry the key.
//!
//! `chat_stream` asks for a stream (`stream: true`) and reads its events as [`events`]
//! describes; the [`sse`] module says how a stream is read, when it is complete, and its
//! timeouts.

mod events;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::sse::{self, Timeouts};
use super::{http, OnDelta};
use super::{ChatMessage, ChatRequest, ChatResponse, Model, ModelError, ToolCall, Usage};

const PROVIDER: &str = "anthropic";

/// The API version every request is sent with.
pub const API_VERSION: &str = "2023-06-01";

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// A Claude model behind the Messages API.
pub struct Anthropic {
    base_url: String,
    api_key: String,
    timeout: Duration,
    stream_timeout: Duration,
    client: Result<reqwest::Client, String>,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("base_url", &self.base_url)
            .field("api_key", &"[redacted]")
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .finish()
    }
}

impl Anthropic {
    /// `base_url` without the version (`https://api.anthropic.com` when `None`); `timeout`
    /// bounds each whole-response request as a whole, and a streamed one between two
    /// reads (see [`Anthropic::with_stream_timeout`]).
    pub fn new(base_url: Option<String>, api_key: impl Into<String>, timeout: Duration) -> Self {
        let base_url = base_url
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        Anthropic {
            base_url,
            api_key: api_key.into(),
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

    /// The request to the messages endpoint with `body`, and its URL.
    fn post(&self, body: &Value) -> Result<(String, reqwest::RequestBuilder), ModelError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| ModelError::permanent(format!("{PROVIDER}: {e}")))?;
        let url = format!("{}/v1/messages", self.base_url);
        let key = http::secret_header(PROVIDER, "x-api-key", &self.api_key)?;
        let builder = client
            .post(&url)
            .header("x-api-key", key)
            .header("anthropic-version", API_VERSION)
            .json(body);
        Ok((url, builder))
    }

    /// Like [`Anthropic::new`], reading the key from the environment variable `key_var`
    /// (unset or empty is an error that names the variable).
    pub fn from_env(
        base_url: Option<String>,
        key_var: &str,
        timeout: Duration,
    ) -> Result<Self, ModelError> {
        let api_key = http::key_from_env(PROVIDER, key_var)?;
        Ok(Anthropic::new(base_url, api_key, timeout))
    }
}

fn body(request: &ChatRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(request.max_tokens));
    if !request.system.is_empty() {
        body.insert("system".into(), json!(request.system));
    }
    body.insert("messages".into(), Value::Array(messages(&request.messages)));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(body)
}

/// The conversation as API turns: consecutive entries of the same role (the results of
/// one assistant turn, or those results and a user text after them) share one message,
/// and an assistant entry with nothing in it is left out (the API rejects empty turns).
fn messages(conversation: &[ChatMessage]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for entry in conversation {
        let (role, blocks) = match entry {
            ChatMessage::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            ChatMessage::Assistant { text, tool_calls } => {
                let mut blocks = Vec::with_capacity(tool_calls.len() + 1);
                if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                blocks.extend(tool_calls.iter().map(|c| {
                    let input = match &c.arguments {
                        Value::Null => json!({}),
                        other => other.clone(),
                    };
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
                }));
                ("assistant", blocks)
            }
            ChatMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": is_error,
                })],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, blocks)| {
            // A user turn that is only text goes in the plain string form.
            let content = match blocks.as_slice() {
                [only] if role == "user" && only["type"] == "text" => only["text"].clone(),
                _ => Value::Array(blocks),
            };
            json!({"role": role, "content": content})
        })
        .collect()
}

fn parse_response(body: &Value) -> Result<ChatResponse, ModelError> {
    let Some(content) = body.get("content").and_then(Value::as_array) else {
        return Err(ModelError::permanent(format!(
            "{PROVIDER}: the response has no content array{}",
            http::error_detail_of(body)
        )));
    };
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    texts.push(text);
                }
            }
            Some("tool_use") => {
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .ok_or_else(|| {
                            ModelError::permanent(format!(
                                "{PROVIDER}: tool_use block {i} in the response has no {name}"
                            ))
                        })
                };
                let name = field("name")?;
                let id = field("id")?;
                tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
                });
            }
            // Thinking and other blocks are not part of the answer.
            _ => {}
        }
    }
    let text = Some(texts.concat()).filter(|t| !t.is_empty());
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: usage(body),
        finish_reason: body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// The token counts in the `usage` object of `parent` (a message, or a stream's
/// `message_delta`). `input_tokens` leaves out the tokens read from or written to the
/// prompt cache; they were processed all the same.
fn usage(parent: &Value) -> Usage {
    let tokens = |field: &str| http::usage_tokens(parent, field);
    Usage {
        input_tokens: tokens("input_tokens")
            + tokens("cache_creation_input_tokens")
            + tokens("cache_read_input_tokens"),
        output_tokens: tokens("output_tokens"),
    }
}

#[async_trait]
impl Model for Anthropic {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let (url, builder) = self.post(&body(request))?;
        let body = http::send(PROVIDER, &url, builder, self.timeout, Some(&self.api_key)).await?;
        parse_response(&body)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let mut body = body(request);
        body["stream"] = json!(true);
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
            Some(&self.api_key),
            events::MessageStream::default(),
            on_delta,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_base_url_means_the_public_api() {
        let m = Anthropic::new(Some(String::new()), "k", Duration::from_secs(1));
        assert_eq!(m.base_url, DEFAULT_BASE_URL);
        let m = Anthropic::new(Some("http://proxy/".into()), "k", Duration::from_secs(1));
        assert_eq!(m.base_url, "http://proxy");
    }

    #[test]
    fn a_user_text_after_tool_results_joins_their_turn() {
        let turns = messages(&[
            ChatMessage::Tool {
                call_id: "a".into(),
                name: "t".into(),
                content: "1".into(),
                is_error: false,
            },
            ChatMessage::User {
                text: "and now?".into(),
            },
        ]);
        assert_eq!(
            turns,
            vec![json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "1", "is_error": false},
                {"type": "text", "text": "and now?"},
            ]})]
        );
    }

    #[test]
    fn the_debug_form_does_not_show_the_key() {
        let m = Anthropic::new(None, "sk-ant-secret", Duration::from_secs(1));
        assert!(!format!("{m:?}").contains("sk-ant-secret"));
    }
}
