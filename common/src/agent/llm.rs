//! The LLM agent: drives a task with a model and tools, checkpointing in the task record
//! after every model call and every tool result, so a run that stops (a crash, a deadline)
//! resumes where it was and never repeats a committed model call.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::context::{untrusted, SystemPrompt};
use super::tools::ToolRegistry;
use super::Agent;
use crate::a2a::{Artifact, Message, Part, Role, TaskState};
use crate::engine::transition::new_id;
use crate::engine::{RunError, TaskRun};
use std::collections::HashMap;

use crate::models::config::ModelCatalog;
use crate::models::{ChatMessage, ChatRequest, Model, ToolCall, Usage};

/// Most model calls one task may make, unless configured otherwise.
pub const DEFAULT_TURN_LIMIT: usize = 50;
const MAX_TOKENS: u32 = 4096;

/// The agent's part of a task record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentState {
    /// Every message the model has seen or produced, in order.
    pub conversation: Vec<ChatMessage>,
    /// Model calls committed so far (the scripted model answers by this count).
    pub model_calls: usize,
    /// Ids of the client messages already taken into the conversation.
    pub inputs: Vec<String>,
    /// The task's own model (a catalog name, `<provider>:<model>` or `scripted:<path>`);
    /// the agent's default when None.
    pub model: Option<String>,
    /// Tokens used by the committed model calls.
    pub usage: Usage,
    /// The question the task waits on in INPUT_REQUIRED, until its reply is accepted.
    pub pending_help: Option<crate::channels::HelpRequest>,
    /// Accepted replies to help requests: message id and the question it answered.
    pub replies: Vec<Reply>,
    /// Sub-tasks whose outcome has been put in the conversation.
    pub noted: Vec<String>,
    /// The participant whose message the agent took in last: who a privileged tool call
    /// acts for.
    pub actor: Option<String>,
}

/// A message accepted as the reply to a help request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reply {
    pub message_id: String,
    pub participant_id: String,
    pub question: String,
}

impl AgentState {
    /// Tool calls of the last model answer that have no committed result yet.
    fn pending_calls(&self) -> Vec<ToolCall> {
        let Some(i) = self
            .conversation
            .iter()
            .rposition(|m| matches!(m, ChatMessage::Assistant { .. }))
        else {
            return Vec::new();
        };
        let ChatMessage::Assistant { tool_calls, .. } = &self.conversation[i] else {
            return Vec::new();
        };
        let answered: Vec<&str> = self.conversation[i + 1..]
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
            .cloned()
            .collect()
    }
}

/// A model and the id its requests carry.
type ModelChoice = (Arc<dyn Model>, String);

pub struct LlmAgent {
    model: Arc<dyn Model>,
    model_id: String,
    tools: ToolRegistry,
    prompt: SystemPrompt,
    /// The models a task may choose instead of the default (`AgentState::model`).
    catalog: ModelCatalog,
    /// Most model calls a task may make before it fails.
    turn_limit: usize,
    /// Chosen models, built once per process.
    chosen: tokio::sync::Mutex<HashMap<String, ModelChoice>>,
}

impl LlmAgent {
    pub fn new(
        model: Arc<dyn Model>,
        model_id: impl Into<String>,
        tools: ToolRegistry,
        prompt: SystemPrompt,
    ) -> Self {
        LlmAgent {
            model,
            model_id: model_id.into(),
            tools,
            prompt,
            catalog: ModelCatalog::default(),
            turn_limit: DEFAULT_TURN_LIMIT,
            chosen: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    pub fn with_turn_limit(mut self, turn_limit: usize) -> Self {
        self.turn_limit = turn_limit.max(1);
        self
    }

    /// The models tasks may choose from by name.
    pub fn with_catalog(mut self, catalog: ModelCatalog) -> Self {
        self.catalog = catalog;
        self
    }

    /// The model a task uses: its own choice, or the default.
    async fn model_for(&self, choice: Option<&str>) -> Result<ModelChoice, String> {
        let Some(name) = choice else {
            return Ok((self.model.clone(), self.model_id.clone()));
        };
        let mut chosen = self.chosen.lock().await;
        if let Some(found) = chosen.get(name) {
            return Ok(found.clone());
        }
        let spec = self.catalog.resolve(name)?;
        let built = (crate::models::build(&spec).await?, spec.model);
        chosen.insert(name.to_owned(), built.clone());
        Ok(built)
    }

    async fn fail(run: &mut TaskRun, why: &str) -> Result<(), RunError> {
        let msg = run.agent_message(why);
        run.set_status(TaskState::Failed, Some(msg)).await
    }
}

/// The task section: name, goal, acceptance criteria and sub-tasks from the task
/// extension's metadata, as a first user message in `<task>` tags, so the system prompt
/// stays the same for every task. None when the task carries no such data.
fn task_section(rec: &crate::store::TaskRecord) -> Option<ChatMessage> {
    let data = rec
        .task
        .metadata
        .as_ref()?
        .get(crate::ext::TASK_METADATA_KEY)?;
    let field = |k: &str| {
        data.get(k)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    let mut lines = Vec::new();
    if let Some(name) = field("name") {
        lines.push(format!("name: {name}"));
    }
    lines.push(format!("state: {}", rec.state().as_str()));
    if let Some(goal) = field("goal") {
        lines.push(format!("goal: {goal}"));
    }
    if let Some(description) = field("description") {
        lines.push(format!("description: {description}"));
    }
    let criteria = data
        .get("acceptance_criteria")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    if !criteria.is_empty() {
        lines.push("acceptance criteria:".into());
        for c in criteria {
            let met = if c.get("met").and_then(|m| m.as_bool()).unwrap_or(false) {
                "x"
            } else {
                " "
            };
            lines.push(format!(
                "  - [{met}] {}",
                c.get("text").and_then(|t| t.as_str()).unwrap_or("")
            ));
        }
    }
    let subs: Vec<&str> = data
        .get("sub_tasks")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| t.get("task_id").and_then(|i| i.as_str()))
                .collect()
        })
        .unwrap_or_default();
    if !subs.is_empty() {
        lines.push(format!("sub-tasks: {}", subs.join(", ")));
    }
    Some(ChatMessage::User {
        text: format!("<task>\n{}\n</task>", lines.join("\n")),
    })
}

/// A client message as the model sees it: a human's text as it is, an agent's inside an
/// untrusted block.
fn input_text(m: &Message) -> String {
    let text: String = m
        .parts
        .iter()
        .map(|p| match (&p.text, &p.data) {
            (Some(t), _) => t.clone(),
            (None, Some(d)) => d.to_string(),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    if m.role == Role::Agent {
        untrusted("agent", &text)
    } else {
        text
    }
}

#[async_trait]
impl Agent for LlmAgent {
    async fn run(&self, run: &mut TaskRun, input: &Message) -> Result<(), RunError> {
        if !run.record().agent.inputs.contains(&input.message_id) {
            let (id, text) = (input.message_id.clone(), input_text(input));
            run.update_agent(|a| {
                a.inputs.push(id.clone());
                a.conversation
                    .push(ChatMessage::User { text: text.clone() });
            })
            .await?;
        }
        if run.record().state() != TaskState::Working {
            run.set_status(TaskState::Working, None).await?;
        }
        loop {
            for call in run.record().agent.pending_calls() {
                let outcome = self.tools.call(&call).await;
                let result = ChatMessage::Tool {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: untrusted("tool", &outcome.content),
                    is_error: outcome.is_error,
                };
                run.update_agent(|a| a.conversation.push(result.clone()))
                    .await?;
            }
            let state = &run.record().agent;
            if state.model_calls >= self.turn_limit {
                return Self::fail(
                    run,
                    &format!(
                        "The task used its {} model calls without finishing.",
                        self.turn_limit
                    ),
                )
                .await;
            }
            let (model, model_id) = match self.model_for(state.model.as_deref()).await {
                Ok(m) => m,
                Err(e) => {
                    return Self::fail(run, &format!("The task's model cannot be used: {e}")).await
                }
            };
            let request = ChatRequest {
                model: model_id,
                system: self.prompt.render(),
                messages: task_section(run.record())
                    .into_iter()
                    .chain(state.conversation.iter().cloned())
                    .collect(),
                tools: self.tools.specs(),
                max_tokens: MAX_TOKENS,
                turn: state.model_calls,
            };
            let answer = match model.chat(&request).await {
                Ok(a) => a,
                Err(e) => return Self::fail(run, &format!("The model call failed: {e}")).await,
            };
            let said = ChatMessage::Assistant {
                text: answer.text.clone(),
                tool_calls: answer.tool_calls.clone(),
            };
            run.update_agent(|a| {
                a.conversation.push(said.clone());
                a.model_calls += 1;
                a.usage.input_tokens += answer.usage.input_tokens;
                a.usage.output_tokens += answer.usage.output_tokens;
            })
            .await?;
            if answer.tool_calls.is_empty() {
                let text = answer.text.unwrap_or_default();
                let artifact = Artifact {
                    artifact_id: new_id(),
                    name: "answer".into(),
                    parts: vec![Part::text(text.clone())],
                    ..Default::default()
                };
                run.add_artifact(artifact, false, true).await?;
                let msg = run.agent_message(&text);
                return run.set_status(TaskState::Completed, Some(msg)).await;
            }
        }
    }
}
