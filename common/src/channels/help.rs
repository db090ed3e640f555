//! `help.decided`: the choice between asking a participant (one message's worth of input)
//! and creating a task for them (work that must finish first).
//!
//! A [`HelpDecider`] is the operation's body. The default, [`ModelDecider`], asks the model
//! for a structured decision (`schemas/help-decision.schema.json`, given to the model as
//! the arguments of a `decide_help` tool it is asked to call). Whatever the body, [`decide`]
//! validates its decision and runs it once more with the objection when it is refused; a
//! second refusal fails with the objection. Replace the body by giving the LLM agent
//! another decider (`LlmAgent::with_help_decider`).

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ext::{compile, problems};
use crate::models::{ChatMessage, ChatRequest, Model, ToolSpec, Usage};

pub const DECISION_SCHEMA: &str = include_str!("../../../schemas/help-decision.schema.json");

/// What the agent needs help with.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HelpNeed {
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub blocking_work: Option<bool>,
    #[serde(default)]
    pub participant_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    Ask,
    CreateTask,
}

/// The decision: `HelpDecision` of the schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelpDecision {
    pub route: Route,
    pub participant_id: String,
    #[serde(default)]
    pub question: Option<String>,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub goal: Option<String>,
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    #[serde(default)]
    pub reason: String,
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| compile(DECISION_SCHEMA))
}

impl HelpDecision {
    /// A decision from outside (a model's output), checked against the schema.
    pub fn parse(value: &Value) -> Result<Self, String> {
        if let Some(p) = problems(validator(), value) {
            return Err(format!("the decision does not match the schema: {p}"));
        }
        Self::deserialize(value).map_err(|e| e.to_string())
    }
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

/// The objection to a decision, if any: an ask for blocking work, an ask without a
/// question, a task without a goal.
pub fn objection(decision: &HelpDecision, need: &HelpNeed) -> Option<String> {
    let no_need_question = need.question.trim().is_empty();
    match decision.route {
        Route::Ask if need.blocking_work == Some(true) => Some(
            "the need is work another participant must finish; route must be create_task".into(),
        ),
        Route::Ask if blank(&decision.question) && no_need_question => {
            Some("an ask needs a question".into())
        }
        Route::CreateTask if blank(&decision.goal) && no_need_question => {
            Some("a created task needs a goal".into())
        }
        _ => None,
    }
}

/// Everything a body may use to decide.
pub struct HelpDecidedIn<'a> {
    pub task_id: &'a str,
    pub need: &'a HelpNeed,
    /// The task as the model's task section shows it.
    pub task_text: &'a str,
    /// One line per participant with their role.
    pub participants_text: &'a str,
    /// Why the previous decision was refused, on the second run.
    pub objection: Option<&'a str>,
    /// The task's model, its id, and the turn number a call of it would have.
    pub model: &'a dyn Model,
    pub model_id: &'a str,
    pub turn: usize,
}

/// What a body produced: a decision (or why its output is not one), and the usage of the
/// model call it made, if it made one.
pub struct Decided {
    pub decision: Result<HelpDecision, String>,
    pub model_call: Option<Usage>,
}

/// The body of `help.decided`. `Err` is a failure that retrying will not mend (the model
/// could not be called); an unusable answer is an `Ok` with an `Err` decision.
#[async_trait]
pub trait HelpDecider: Send + Sync + 'static {
    async fn decide(&self, input: &HelpDecidedIn<'_>) -> Result<Decided, String>;
}

/// The outcome of `help.decided`: the accepted decision or why there is none, and the
/// model calls it took either way (they count like any other).
#[derive(Debug)]
pub struct Outcome {
    pub decision: Result<HelpDecision, String>,
    pub model_calls: Vec<Usage>,
}

/// Runs `help.decided`: the body, the validator, one re-run with the objection, and a
/// clear failure on the second objection.
pub async fn decide(body: &dyn HelpDecider, input: HelpDecidedIn<'_>) -> Outcome {
    let mut model_calls = Vec::new();
    let mut objected: Option<String> = None;
    let decision = loop {
        let attempt = HelpDecidedIn {
            objection: objected.as_deref(),
            turn: input.turn + model_calls.len(),
            ..input
        };
        let decided = match body.decide(&attempt).await {
            Ok(d) => d,
            Err(failed) => break Err(failed),
        };
        model_calls.extend(decided.model_call);
        let problem = match decided.decision {
            Ok(decision) => match objection(&decision, input.need) {
                None => break Ok(decision),
                Some(o) => o,
            },
            Err(why) => why,
        };
        if objected.is_some() {
            break Err(format!("help decision rejected twice: {problem}"));
        }
        objected = Some(problem);
    };
    Outcome {
        decision,
        model_calls,
    }
}

/// What the default body tells the model.
pub const INSTRUCTIONS: &str = "You route a request for help on a task. Decide whether the need is a small input, opinion or judgement call one message can answer (route 'ask') or work that another participant must finish before the task can complete (route 'create_task'). Answer by calling the decide_help tool with JSON matching its schema.";
const DECIDE_TOOL: &str = "decide_help";

/// The default body: one model call with the decision schema as a tool to call.
pub struct ModelDecider;

impl ModelDecider {
    pub fn shared() -> Arc<dyn HelpDecider> {
        Arc::new(ModelDecider)
    }

    fn prompt(input: &HelpDecidedIn<'_>) -> String {
        let need = serde_json::to_string(input.need).unwrap_or_default();
        let mut text = format!(
            "Task:\n{}\n\nParticipants:\n{}\n\nNeed: {need}",
            input.task_text, input.participants_text
        );
        if let Some(o) = input.objection {
            text.push_str(&format!("\n\nYour previous decision was rejected: {o}"));
        }
        text
    }
}

#[async_trait]
impl HelpDecider for ModelDecider {
    async fn decide(&self, input: &HelpDecidedIn<'_>) -> Result<Decided, String> {
        let schema: Value = serde_json::from_str(DECISION_SCHEMA).unwrap_or(Value::Null);
        let request = ChatRequest {
            model: input.model_id.to_owned(),
            system: INSTRUCTIONS.to_owned(),
            messages: vec![ChatMessage::User {
                text: Self::prompt(input),
            }],
            tools: vec![ToolSpec {
                name: DECIDE_TOOL.into(),
                description: "Record the routing decision.".into(),
                parameters: schema,
            }],
            max_tokens: 1024,
            turn: input.turn,
            purpose: Default::default(),
            task_id: String::new(),
        };
        let answer = input.model.chat(&request).await.map_err(|e| {
            crate::engine::failure_notice("the help decision model call failed", &e)
        })?;
        let output = match answer
            .tool_calls
            .into_iter()
            .find(|c| c.name == DECIDE_TOOL)
        {
            Some(call) => Ok(call.arguments),
            None => serde_json::from_str::<Value>(answer.text.as_deref().unwrap_or("{}"))
                .map_err(|e| format!("the decision is not JSON: {e}")),
        };
        Ok(Decided {
            decision: output.and_then(|v| HelpDecision::parse(&v)),
            model_call: Some(answer.usage),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::scripted::Scripted;
    use serde_json::json;
    use std::sync::Mutex;

    fn need(blocking: Option<bool>) -> HelpNeed {
        HelpNeed {
            question: "Which region?".into(),
            blocking_work: blocking,
            ..Default::default()
        }
    }

    fn input<'a>(need: &'a HelpNeed, model: &'a dyn Model) -> HelpDecidedIn<'a> {
        HelpDecidedIn {
            task_id: "t-1",
            need,
            task_text: "name: deploy",
            participants_text: "- alice (human): reporter",
            objection: None,
            model,
            model_id: "scripted",
            turn: 0,
        }
    }

    /// A body that answers from a list and remembers the objections it was shown.
    struct Canned {
        answers: Mutex<Vec<HelpDecision>>,
        seen: Mutex<Vec<Option<String>>>,
    }

    #[async_trait]
    impl HelpDecider for Canned {
        async fn decide(&self, input: &HelpDecidedIn<'_>) -> Result<Decided, String> {
            self.seen
                .lock()
                .unwrap()
                .push(input.objection.map(str::to_owned));
            Ok(Decided {
                decision: Ok(self.answers.lock().unwrap().remove(0)),
                model_call: None,
            })
        }
    }

    fn ask(question: Option<&str>) -> HelpDecision {
        HelpDecision::parse(
            &json!({"route": "ask", "participant_id": "alice", "question": question}),
        )
        .unwrap()
    }

    /// `test_channels.py`: the validator rejects an ask for blocking work.
    #[test]
    fn validator_rejects_ask_for_blocking_work() {
        let n = need(Some(true));
        assert!(objection(&ask(Some("q")), &n)
            .unwrap()
            .contains("create_task"));
        assert_eq!(objection(&ask(Some("q")), &need(None)), None);
        let empty = HelpNeed::default();
        assert_eq!(
            objection(&ask(None), &empty).as_deref(),
            Some("an ask needs a question")
        );
        let task =
            HelpDecision::parse(&json!({"route": "create_task", "participant_id": "a"})).unwrap();
        assert_eq!(
            objection(&task, &empty).as_deref(),
            Some("a created task needs a goal")
        );
    }

    /// `test_channels.py`: the default body uses the structured output schema and retries
    /// once with "rejected" in the prompt.
    #[tokio::test]
    async fn default_body_uses_the_schema_and_retries_once_with_the_objection() {
        let script = json!({"turns": [
            {"tool_calls": [{"name": "decide_help", "arguments": {"route": "ask", "participant_id": "alice", "question": "Which region?"}}]},
            {"tool_calls": [{"name": "decide_help", "arguments": {"route": "create_task", "participant_id": "alice", "goal": "Set up the region"}}]}
        ]});
        let model = Scripted::parse("t", &script.to_string()).unwrap();
        let n = need(Some(true));
        let outcome = decide(&ModelDecider, input(&n, &model)).await;
        assert_eq!(outcome.decision.unwrap().route, Route::CreateTask);
        assert_eq!(outcome.model_calls.len(), 2);
        assert_eq!(model.calls(), 2);
        assert!(ModelDecider::prompt(&HelpDecidedIn {
            objection: Some("x"),
            ..input(&n, &model)
        })
        .contains("Your previous decision was rejected: x"));
    }

    /// `test_channels.py`: a replacement body is still validated; a second objection fails.
    #[tokio::test]
    async fn plugin_body_validated_and_second_objection_fails() {
        let body = Canned {
            answers: Mutex::new(vec![ask(Some("q")), ask(Some("q"))]),
            seen: Mutex::new(Vec::new()),
        };
        let model = Scripted::parse("t", r#"{"turns": []}"#).unwrap();
        let n = need(Some(true));
        let err = decide(&body, input(&n, &model)).await.decision.unwrap_err();
        assert!(err.starts_with("help decision rejected twice: "), "{err}");
        let seen = body.seen.lock().unwrap();
        assert_eq!(seen[0], None);
        assert!(seen[1].as_deref().unwrap().contains("create_task"));
        assert_eq!(model.calls(), 0);
    }

    #[tokio::test]
    async fn output_that_breaks_the_schema_is_an_objection() {
        let script = json!({"turns": [
            {"text": "{\"route\": \"maybe\", \"participant_id\": \"alice\"}"},
            {"text": "not json"}
        ]});
        let model = Scripted::parse("t", &script.to_string()).unwrap();
        let n = need(None);
        let outcome = decide(&ModelDecider, input(&n, &model)).await;
        let err = outcome.decision.unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
        assert_eq!(
            outcome.model_calls.len(),
            2,
            "the failed attempts' calls count too"
        );
        assert_eq!(model.calls(), 2);
    }
}
