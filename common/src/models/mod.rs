//! Models: the `Model` trait (chat with tools: messages in, text and/or tool calls out,
//! token usage reported), its providers, and the retry policy every provider shares.
//! A provider maps its API's failures onto [`ModelError`]: transient ones (429, 5xx,
//! timeouts) are retried with backoff, permanent ones (401, 400) fail the task with a
//! message that says what went wrong and never carries a secret.

pub mod anthropic;
pub mod bedrock;
pub mod config;
mod http;
pub mod offline;
pub mod openai;
pub mod retry;
pub mod scripted;
mod sse;
pub mod stream;
mod tool;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::store::conversation::{ChatMessage, ToolCall, Usage};
pub use stream::{Delta, OnDelta};
pub use tool::{Tool, ToolError};

/// A tool the model may call: its name, what it does, and a JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The provider's model id.
    pub model: String,
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    /// How many model calls this task has committed before this one (the scripted
    /// provider answers by it; the others ignore it).
    pub turn: usize,
    /// What the call is for.
    #[serde(default)]
    pub purpose: Purpose,
    /// The task the call is made for (logs, and the scripted provider's call log); never
    /// sent to a provider.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
}

/// What a model call is for: a turn of the task, or the summary of older turns when the
/// conversation outgrows the context budget (see `agent::compaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    #[default]
    Turn,
    Summary,
}

/// The tokens a request holds, estimated as one per 4 bytes of its text: the system
/// prompt, and the messages and tool specs as JSON. Providers count differently; the
/// estimate errs high for English and code, and is what context budgets are checked on.
pub fn estimate_tokens(request: &ChatRequest) -> usize {
    let messages: usize = request.messages.iter().map(message_bytes).sum();
    let tools = serde_json::to_string(&request.tools).map_or(0, |t| t.len());
    (request.system.len() + messages + tools).div_ceil(4)
}

/// A message's size as [`estimate_tokens`] counts it, in bytes.
pub fn message_bytes(m: &ChatMessage) -> usize {
    serde_json::to_string(m).map_or(0, |j| j.len())
}

/// What the model answered: text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// Why the model stopped, in the provider's words, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// Worth trying again (rate limits, server errors, timeouts), after `retry_after`
    /// when the provider said how long.
    #[error("{message}")]
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    /// Trying again will not help (bad credentials, a rejected request, no turn left).
    #[error("{message}")]
    Permanent { message: String },
}

impl ModelError {
    pub fn transient(message: impl Into<String>) -> Self {
        ModelError::Transient {
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn permanent(message: impl Into<String>) -> Self {
        ModelError::Permanent {
            message: message.into(),
        }
    }
}

#[async_trait]
pub trait Model: Send + Sync + 'static {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError>;

    /// The answer as it is written: each [`Delta`] goes to `on_delta` as it comes, and the
    /// whole response is returned at the end. A model without a streaming API reports its
    /// whole response once it has it. After a [`Delta::Restart`] (a retry) the deltas
    /// before it are void.
    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let response = self.chat(request).await?;
        stream::replay(&response, on_delta);
        Ok(response)
    }
}

/// How long one call to a hosted model may take before it counts as a timeout.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The model a spec names, with the shared retry policy around it (requests carry
/// [`config::ModelSpec::id`] as `ChatRequest::model`). A missing API key
/// or an unreadable script is refused here, before any task uses the model.
pub async fn build(spec: &config::ModelSpec) -> Result<std::sync::Arc<dyn Model>, String> {
    let model = build_unmetered(spec).await?;
    Ok(std::sync::Arc::new(Metered {
        model,
        system: spec.provider.system(),
    }))
}

/// Counts every answered call and its tokens, per model id (the request's), and traces
/// it: one span per call, retries included ([`traced`]).
struct Metered {
    model: std::sync::Arc<dyn Model>,
    /// The provider, as the GenAI conventions' `gen_ai.system` names it.
    system: &'static str,
}

impl Metered {
    fn count(request: &ChatRequest, response: &ChatResponse) {
        crate::metrics::model_call(
            &request.model,
            response.usage.input_tokens,
            response.usage.output_tokens,
        );
    }
}

#[async_trait]
impl Model for Metered {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let response = traced(self.system, request, self.model.chat(request)).await?;
        Self::count(request, &response);
        Ok(response)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let call = self.model.chat_stream(request, on_delta);
        let response = traced(self.system, request, call).await?;
        Self::count(request, &response);
        Ok(response)
    }
}

/// `call` in a span of the GenAI semantic conventions (a `chat` client span: the
/// provider, the model, the tokens in and out, why it stopped). No text: the messages and
/// the answer are attributes only with content capture on ([`crate::traces::content`]),
/// redacted.
async fn traced(
    system: &'static str,
    request: &ChatRequest,
    call: impl std::future::Future<Output = Result<ChatResponse, ModelError>>,
) -> Result<ChatResponse, ModelError> {
    use tracing::field::Empty;
    use tracing::Instrument;
    let span = tracing::debug_span!(
        "chat",
        otel.name = format!("chat {}", request.model).as_str(),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.system = system,
        gen_ai.provider.name = system,
        gen_ai.operation.name = "chat",
        gen_ai.request.model = request.model.as_str(),
        gen_ai.request.max_tokens = i64::from(request.max_tokens),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        task_id = request.task_id.as_str(),
    );
    if span.is_disabled() {
        return call.await;
    }
    if let Some(messages) =
        crate::traces::content(|| serde_json::to_string(&request.messages).unwrap_or_default())
    {
        crate::traces::set_string(&span, "gen_ai.input.messages", messages);
    }
    let answer = call.instrument(span.clone()).await;
    match &answer {
        Ok(response) => {
            // As i64: the only integers tracing-opentelemetry exports as integers.
            let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            span.record(
                "gen_ai.usage.input_tokens",
                tokens(response.usage.input_tokens),
            );
            span.record(
                "gen_ai.usage.output_tokens",
                tokens(response.usage.output_tokens),
            );
            let reasons = response.finish_reason.iter().cloned().collect();
            crate::traces::set_strings(&span, "gen_ai.response.finish_reasons", reasons);
            if let Some(output) = crate::traces::content(|| {
                serde_json::json!({"text": response.text, "tool_calls": response.tool_calls})
                    .to_string()
            }) {
                crate::traces::set_string(&span, "gen_ai.output.messages", output);
            }
        }
        Err(e) => {
            span.record("otel.status_code", "error");
            let kind = match e {
                ModelError::Transient { .. } => "transient",
                ModelError::Permanent { .. } => "permanent",
            };
            span.record("error.type", kind);
        }
    }
    answer
}

async fn build_unmetered(spec: &config::ModelSpec) -> Result<std::sync::Arc<dyn Model>, String> {
    use config::Provider;
    use std::sync::Arc;
    let key_var = spec
        .api_key_env
        .clone()
        .or_else(|| spec.provider.default_key_env().map(str::to_owned));
    let named = |e: ModelError| format!("model {}: {e}", spec.name);
    let keyed = matches!(spec.provider, Provider::OpenAi | Provider::Anthropic);
    if keyed && spec.credentials == config::Credentials::NoCalls {
        return Ok(Arc::new(NoCalls));
    }
    let given = match &spec.credentials {
        config::Credentials::Key { key, .. } => Some(key.clone()),
        _ => None,
    };
    Ok(match spec.provider {
        Provider::OpenAi => {
            let base = spec
                .base_url
                .clone()
                .unwrap_or_else(|| OPENAI_BASE_URL.into());
            let model = match given {
                Some(key) => openai::OpenAi::new(base, Some(key), CALL_TIMEOUT),
                None => {
                    // A local OpenAI-compatible server (Ollama, vLLM) usually takes no key.
                    let var = key_var
                        .filter(|v| spec.api_key_env.is_some() || std::env::var_os(v).is_some());
                    openai::OpenAi::from_env(base, var.as_deref(), CALL_TIMEOUT).map_err(named)?
                }
            };
            Arc::new(retry::Retrying::new(model))
        }
        Provider::Anthropic => {
            let model = match given {
                Some(key) => anthropic::Anthropic::new(spec.base_url.clone(), key, CALL_TIMEOUT),
                None => {
                    let var = key_var
                        .unwrap_or_else(|| crate::config::settings::ANTHROPIC_API_KEY.env.into());
                    anthropic::Anthropic::from_env(spec.base_url.clone(), &var, CALL_TIMEOUT)
                        .map_err(named)?
                }
            };
            Arc::new(retry::Retrying::new(model))
        }
        Provider::Bedrock => Arc::new(retry::Retrying::new(bedrock::Bedrock::from_env().await)),
        // Retried as the hosted models are, quickly: a script's cut-off stream is the
        // only transient failure it makes.
        Provider::Scripted => Arc::new(
            retry::Retrying::new(scripted::Scripted::load(std::path::Path::new(&spec.model))?)
                .with_policy(
                    3,
                    std::time::Duration::from_millis(10),
                    std::time::Duration::from_millis(50),
                ),
        ),
    })
}

/// The model of a process that makes no model calls: built without a key, so a function
/// that only answers requests needs neither the key nor the permission to read it.
struct NoCalls;

#[async_trait]
impl Model for NoCalls {
    async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, ModelError> {
        Err(ModelError::permanent(
            "this process makes no model calls (on AWS the resume function drives tasks)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::config::ModelCatalog;
    use super::*;

    #[tokio::test]
    async fn a_missing_key_is_refused_when_the_model_is_built_naming_the_variable() {
        let mut spec = ModelCatalog::default()
            .resolve("anthropic:claude-x")
            .expect("inline");
        spec.api_key_env = Some("HARNESS_TEST_NO_SUCH_KEY".into());
        let err = build(&spec).await.err().expect("no key");
        assert!(err.contains("HARNESS_TEST_NO_SUCH_KEY"), "{err}");
    }

    #[tokio::test]
    async fn a_local_openai_compatible_server_needs_no_key() {
        let mut spec = ModelCatalog::default()
            .resolve("openai:llama3.2")
            .expect("inline");
        spec.base_url = Some("http://127.0.0.1:11434/v1".into());
        if std::env::var_os("OPENAI_API_KEY").is_none() {
            assert!(build(&spec).await.is_ok());
        }
    }

    #[tokio::test]
    async fn a_process_that_makes_no_calls_needs_no_key() {
        let catalog = ModelCatalog {
            credentials: config::Credentials::NoCalls,
            ..ModelCatalog::default()
        };
        let spec = catalog.resolve("anthropic:claude-x").expect("inline");
        let model = build(&spec).await.expect("no key needed");
        let err = model
            .chat(&ChatRequest {
                model: "claude-x".into(),
                system: String::new(),
                messages: Vec::new(),
                tools: Vec::new(),
                max_tokens: 1,
                turn: 0,
                purpose: Purpose::Turn,
                task_id: String::new(),
            })
            .await
            .expect_err("no calls");
        assert!(err.to_string().contains("no model calls"), "{err}");
    }

    #[tokio::test]
    async fn a_key_the_deployment_read_wins_over_the_default_variable_only() {
        let catalog = ModelCatalog {
            credentials: config::Credentials::Key {
                provider: config::Provider::Anthropic,
                base_url: None,
                key: "sk-from-the-secret".into(),
            },
            ..ModelCatalog::default()
        };
        let mut spec = catalog.resolve("anthropic:claude-x").expect("inline");
        assert!(build(&spec).await.is_ok(), "no variable needed");
        spec.api_key_env = Some("HARNESS_TEST_NO_SUCH_KEY".into());
        let catalog = ModelCatalog {
            models: vec![config::ModelSpec {
                name: "own".into(),
                ..spec
            }],
            ..catalog
        };
        let own = catalog.resolve("own").expect("configured");
        assert_eq!(own.credentials, config::Credentials::FromEnv);
        // Nor does another provider, or the same one at another endpoint.
        let other = catalog.resolve("openai:gpt-4.1-mini").expect("inline");
        assert_eq!(other.credentials, config::Credentials::FromEnv);
        let elsewhere = ModelCatalog {
            models: vec![config::ModelSpec {
                name: "proxy".into(),
                base_url: Some("https://llm-proxy.example/v1".into()),
                ..catalog.resolve("anthropic:claude-x").expect("inline")
            }],
            ..catalog.clone()
        };
        let proxied = elsewhere.resolve("proxy").expect("configured");
        assert_eq!(proxied.credentials, config::Credentials::FromEnv);
        assert!(format!("{:?}", catalog.credentials).contains("redacted"));
    }

    #[tokio::test]
    async fn an_unreadable_script_is_refused() {
        let spec = ModelCatalog::default()
            .resolve("scripted:/nonexistent/script.json")
            .expect("inline");
        assert!(build(&spec)
            .await
            .err()
            .expect("no file")
            .contains("/nonexistent/script.json"));
    }
}
