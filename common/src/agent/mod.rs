//! The agents: the LLM agent (context, system prompt, tools, delegation, help decisions)
//! and the conformance agent, each an implementation of the engine's [`Agent`] port.

pub mod actor;
pub mod compaction;
pub mod conformance;
pub mod context;
pub mod delegate;
pub(crate) mod elsewhere;
pub mod intrinsics;
pub mod llm;
mod streamed;
pub mod sub_tasks;
pub mod tools;
pub mod waits;

use crate::engine::Agent;

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

/// The agent `kind` for a Lambda function that never drives the LLM agent (its wake-ups
/// go to resume): the conformance agent itself, or the LLM agent as
/// [`elsewhere::DrivenElsewhere`] (no model is built).
pub(crate) fn driven_elsewhere(
    kind: AgentKind,
    settings: &LlmSettings,
) -> Result<std::sync::Arc<dyn Agent>, String> {
    Ok(match kind {
        AgentKind::Conformance => conformance(),
        AgentKind::Llm => std::sync::Arc::new(elsewhere::DrivenElsewhere::new(settings)?),
    })
}

/// How the LLM agent is set up.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// A name from `catalog`, `<provider>:<model>` or `scripted:<path>`; the catalog's
    /// default when None, and the built-in offline model when there is none.
    pub model: Option<String>,
    pub catalog: crate::models::config::ModelCatalog,
    pub prompt: context::SystemPrompt,
    /// Most model calls a task may make.
    pub turn_limit: usize,
    /// The context budget (tokens) of models whose configuration names none.
    pub context_tokens: Option<usize>,
    /// The remote agents tasks may delegate to (and whose questions the model may
    /// answer, `reply_to_agent`), if any are configured.
    pub remotes: Option<std::sync::Arc<crate::remote::Remotes>>,
    /// MCP servers whose tools the model may call.
    pub mcp: Option<crate::mcp::Setup>,
    /// How long waits on participants last (`reply_within`).
    pub reply_within: crate::task::deadline::ReplyWithin,
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            model: None,
            catalog: Default::default(),
            prompt: Default::default(),
            turn_limit: llm::DEFAULT_TURN_LIMIT,
            context_tokens: None,
            remotes: None,
            mcp: None,
            reply_within: Default::default(),
        }
    }
}

impl LlmSettings {
    /// The default model's name: the one set, else the catalog's default; None for the
    /// built-in offline model.
    pub fn model_name(&self) -> Option<&str> {
        (self.model.as_deref()).or(self.catalog.default.as_deref())
    }
}

/// The agent `kind`; the LLM agent with `settings`.
pub async fn build(
    kind: AgentKind,
    settings: &LlmSettings,
) -> Result<std::sync::Arc<dyn Agent>, String> {
    let AgentKind::Llm = kind else {
        return Ok(conformance());
    };
    let name = settings.model_name();
    let fallback = settings.context_tokens;
    let (model, model_id, budget): (std::sync::Arc<dyn crate::models::Model>, String, _) =
        match name {
            Some(name) => {
                let spec = settings.catalog.resolve(name)?;
                let budget = spec.context_budget(fallback);
                (crate::models::build(&spec).await?, spec.id(), budget)
            }
            None => {
                tracing::warn!(
                    "no model configured: the LLM agent runs on the built-in offline model \
                     (set --model / HARNESS_MODEL)"
                );
                (
                    std::sync::Arc::new(crate::models::offline::Offline),
                    crate::models::offline::NAME.into(),
                    fallback,
                )
            }
        };
    let mut tools = tools::ToolRegistry::builtin();
    if settings.remotes.is_some() {
        tools
            .register_intrinsic(tools::REPLY_TO_AGENT_SCHEMA)
            .map_err(|e| e.to_string())?;
    }
    let mut notes = String::new();
    if let Some(setup) = &settings.mcp {
        let (found, unavailable) = crate::mcp::discover(&setup.servers, &setup.targets).await;
        for tool in found {
            let name = tool.name.clone();
            if let Err(e) = tools.register_mcp(tool) {
                tracing::warn!(tool = %name, error = %e, "an MCP tool is not offered");
            }
        }
        notes = crate::mcp::unavailable_note(&unavailable);
    }
    let agent = llm::LlmAgent::new(model, model_id, tools, settings.prompt.clone())
        .with_catalog(settings.catalog.clone())
        .with_turn_limit(settings.turn_limit)
        .with_context_budget(budget, fallback)
        .named(&crate::models::config::shown_name(
            name.unwrap_or(crate::models::offline::NAME),
        ))
        .with_notes(notes)
        .with_remotes(settings.remotes.clone())
        .with_reply_within(settings.reply_within);
    Ok(std::sync::Arc::new(agent))
}
