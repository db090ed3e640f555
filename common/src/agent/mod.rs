//! Agents: what runs a task. An agent either answers a message directly (no task) or
//! works on a task through its [`TaskRun`], ending terminal or waiting for input.

pub mod conformance;
pub mod context;
pub mod llm;
pub mod tools;

use async_trait::async_trait;

use crate::a2a::Message;
use crate::engine::{RunError, TaskRun};

#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// A direct reply to a message that names no task, instead of starting one.
    fn direct_reply(&self, _message: &Message) -> Option<Message> {
        None
    }

    /// Works on the task with the message that (re)started it. Returns when the task is
    /// terminal or waits for input.
    async fn run(&self, run: &mut TaskRun, input: &Message) -> Result<(), RunError>;
}

/// The agents a server can be started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    Conformance,
    /// The LLM agent, with the model named by `--model` / `HARNESS_MODEL`.
    Llm,
}

impl std::str::FromStr for AgentKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "conformance" => Ok(AgentKind::Conformance),
            "llm" => Ok(AgentKind::Llm),
            other => Err(format!("unknown agent {other:?} (known: conformance, llm)")),
        }
    }
}

/// The conformance agent, which needs no configuration.
pub fn conformance() -> std::sync::Arc<dyn Agent> {
    std::sync::Arc::new(conformance::ConformanceAgent)
}

/// The agent `kind`, with the model `model` (a name from `catalog`, `<provider>:<model>`
/// or `scripted:<path>`) for the LLM agent, which needs one.
pub async fn build(
    kind: AgentKind,
    model: Option<&str>,
    catalog: &crate::models::config::ModelCatalog,
    prompt: context::SystemPrompt,
) -> Result<std::sync::Arc<dyn Agent>, String> {
    match kind {
        AgentKind::Conformance => Ok(self::conformance()),
        AgentKind::Llm => {
            let (model, model_id): (std::sync::Arc<dyn crate::models::Model>, String) =
                match model.or(catalog.default.as_deref()) {
                    Some(name) => {
                        let spec = catalog.resolve(name)?;
                        (crate::models::build(&spec).await?, spec.model)
                    }
                    None => {
                        tracing::warn!(
                            "no model configured: the LLM agent runs on the built-in offline model \
                             (set --model / HARNESS_MODEL)"
                        );
                        (
                            std::sync::Arc::new(crate::models::offline::Offline),
                            crate::models::offline::NAME.into(),
                        )
                    }
                };
            Ok(std::sync::Arc::new(
                llm::LlmAgent::new(model, model_id, tools::ToolRegistry::builtin(), prompt)
                    .with_catalog(catalog.clone()),
            ))
        }
    }
}
