//! The participant intrinsics: tools the LLM agent runs on its task rather than through
//! the registry, because what they do is a change to the task (or a new task) that must
//! be committed together with their result.
//!
//! - `ask_participant`: the question goes out on the task's channel as the message of the
//!   INPUT_REQUIRED status, in the same commit as the pending request and the result;
//!   the run then ends and nothing runs until the reply.
//! - `create_task_for_participant`: a sub-task `<parent>.<n>` assigned to the participant,
//!   linked both ways; the parent does not call the model again until it has ended.
//! - `set_participant_role`: admins only, and only as they asked: the actor (whose words
//!   the model acts on, `super::actor`) must be an admin, and the call cites the id of
//!   that admin's latest message, which must ask for exactly that change (see
//!   `requested`); a request makes one change. Keywords elsewhere in the context (a tool
//!   result, another member's message, a second clause of the same message, an older
//!   message) cannot lend it a change.
//! - `request_help`: `help.decided` picks one of the first two.
//! - With remote agents configured (`crate::remote`): `create_task_for_participant` for an
//!   agent of the registry delegates to it (a remote task, linked to this one), and
//!   `reply_to_agent` answers the question such a task asks.
//!
//! Refusals are error results `[code] message` that reveal nothing about who is on the
//! task beyond what the model already sees.

use std::sync::Arc;

use serde::Deserialize;

use super::context::untrusted;
use super::tools::ToolOutcome;
use crate::a2a::{Message, Role as MessageRole, TaskState};
use crate::channels::help::{self, HelpDecidedIn, HelpDecider, HelpDecision, HelpNeed, Route};
use crate::channels::subtask::{self, CreateError, ParticipantTask};
use crate::engine::transition::set_status;
use crate::engine::{RunError, TaskRun};
use crate::ext::permissions::Action;
use crate::ext::task::{ParticipantKind, Role, TaskExtension};
use crate::models::ToolError;
use crate::models::{ChatMessage, Model, ToolCall, Usage};
use crate::remote::Remotes;
use crate::store::TaskRecord;
use crate::task::HelpRequest;

/// The names the agent dispatches here.
pub const NAMES: &[&str] = &[
    "ask_participant",
    "create_task_for_participant",
    "set_participant_role",
    "request_help",
    "reply_to_agent",
];

const NOT_A_MEMBER: &str = "channel.not_a_member";

/// What an intrinsic may use besides the task: the task's model (for `help.decided`) and
/// the body of `help.decided`.
pub struct Context<'a> {
    pub model: &'a dyn Model,
    pub model_id: &'a str,
    pub decider: &'a dyn HelpDecider,
    /// The remote agents the task may delegate to, if any are configured.
    pub remotes: Option<&'a Arc<Remotes>>,
    /// How long waits on participants last.
    pub reply_within: crate::task::deadline::ReplyWithin,
}

/// The result message of a call, as every tool result is framed: redacted before it is
/// stored or shown to the model.
pub fn result_message(nonce: &str, call: &ToolCall, outcome: &ToolOutcome) -> ChatMessage {
    let content = crate::redact::active().redact_str(&outcome.content);
    ChatMessage::Tool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: untrusted(nonce, "tool", &content),
        is_error: outcome.is_error,
    }
}

/// Runs an intrinsic call and commits its result (with whatever it changed).
pub async fn call(ctx: &Context<'_>, run: &mut TaskRun, call: &ToolCall) -> Result<(), RunError> {
    let refused = match call.name.as_str() {
        "ask_participant" => match parse(call) {
            Ok(a) => return ask(ctx, run, call, a).await,
            Err(e) => e,
        },
        "create_task_for_participant" => match parse(call) {
            Ok(a) => return create_task(ctx, run, call, a).await,
            Err(e) => e,
        },
        "set_participant_role" => match parse(call) {
            Ok(a) => return set_role(run, call, a).await,
            Err(e) => e,
        },
        "request_help" => match parse(call) {
            Ok(a) => return request_help(ctx, run, call, a).await,
            Err(e) => e,
        },
        "reply_to_agent" => match (parse::<ReplyArgs>(call), ctx.remotes) {
            (Ok(a), Some(remotes)) => {
                let said =
                    crate::agent::delegate::reply(remotes, run, &a.participant_id, &a.text).await?;
                return commit_result(run, call, said).await;
            }
            (Err(e), _) => e,
            (_, None) => ToolError::new("unknown_tool", "no tool named \"reply_to_agent\""),
        },
        other => ToolError::new("unknown_tool", format!("no tool named {other:?}")),
    };
    commit_result(run, call, Err(refused)).await
}

fn parse<T: for<'de> Deserialize<'de>>(call: &ToolCall) -> Result<T, ToolError> {
    T::deserialize(&call.arguments).map_err(|e| ToolError::new("invalid_arguments", e.to_string()))
}

fn outcome(result: Result<String, ToolError>) -> ToolOutcome {
    match result {
        Ok(text) => ToolOutcome::output(text),
        Err(e) => ToolOutcome::error(e),
    }
}

async fn commit_result(
    run: &mut TaskRun,
    call: &ToolCall,
    result: Result<String, ToolError>,
) -> Result<(), RunError> {
    let message = result_message(&run.record().agent.nonce, call, &outcome(result));
    run.apply(|rec| {
        rec.agent.conversation.push(message.clone());
        Vec::new()
    })
    .await
}

fn ext_of(rec: &TaskRecord) -> TaskExtension {
    rec.ext().unwrap_or_default()
}

fn no_such_participant() -> ToolError {
    ToolError::new(NOT_A_MEMBER, "no such participant on this task")
}

/// The validator of `help.decided`, for a decision the model made by calling an
/// intrinsic directly.
fn check_decision(decision: HelpDecision) -> Result<(), ToolError> {
    match help::objection(&decision, &HelpNeed::default()) {
        Some(o) => Err(ToolError::new("help.rejected", o)),
        None => Ok(()),
    }
}

#[derive(Deserialize)]
struct AskArgs {
    participant_id: String,
    question: String,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    reply_within: Option<String>,
}

/// The deadline a wait starting now gets (`reply_within`, else the deployment's
/// default); a bad value is the model's error.
fn deadline_of(
    ctx: &Context<'_>,
    asked: Option<&str>,
) -> Result<Option<crate::task::Deadline>, ToolError> {
    (ctx.reply_within.deadline(asked)).map_err(|e| ToolError::new("invalid_arguments", e))
}

/// What a tool's result adds about a deadline.
fn due_note(deadline: Option<&crate::task::Deadline>) -> String {
    deadline
        .map(|d| format!(" (the answer is due by {})", d.due_text()))
        .unwrap_or_default()
}

async fn ask(
    ctx: &Context<'_>,
    run: &mut TaskRun,
    call: &ToolCall,
    a: AskArgs,
) -> Result<(), RunError> {
    let checked = check_decision(HelpDecision {
        route: Route::Ask,
        participant_id: a.participant_id.clone(),
        question: Some(a.question.clone()),
        options: a.options.clone(),
        name: None,
        goal: None,
        acceptance_criteria: Vec::new(),
        reason: String::new(),
    });
    let ext = ext_of(run.record());
    let checked = checked.and_then(|()| {
        ext.participant(&a.participant_id)
            .map(|_| ())
            .ok_or_else(no_such_participant)
    });
    let deadline = match checked.and_then(|()| deadline_of(ctx, a.reply_within.as_deref())) {
        Ok(deadline) => deadline,
        Err(e) => return commit_result(run, call, Err(e)).await,
    };
    let sender = ext
        .assignee()
        .map(|p| p.id.clone())
        .unwrap_or_else(|| crate::config::DEFAULT_AGENT_ID.into());
    let task_id = run.record().task.id.clone();
    let request = HelpRequest {
        message_id: format!("{task_id}:help:{}", run.record().last_seq + 1),
        participant_id: a.participant_id,
        question: a.question,
        options: a.options,
        call_id: call.id.clone(),
        deadline,
    };
    let result = result_message(
        &run.record().agent.nonce,
        call,
        &ToolOutcome::output(format!(
            "asked {}; waiting for the reply{}",
            request.participant_id,
            due_note(deadline.as_ref())
        )),
    );
    // The question, the pending request, the result and INPUT_REQUIRED in one commit.
    run.apply(|rec| {
        rec.agent.conversation.push(result.clone());
        rec.agent.pending_help = Some(request.clone());
        let mut question = Message {
            message_id: request.message_id.clone(),
            context_id: rec.task.context_id.clone(),
            task_id: rec.task.id.clone(),
            role: MessageRole::Agent,
            parts: request.status_parts(&rec.task.id, &sender),
            ..Default::default()
        };
        crate::ext::participant::address_to(&mut question, &request.participant_id);
        if let Some(d) = &request.deadline {
            (question.metadata.get_or_insert_with(Default::default)).insert(
                crate::ext::REPLY_BY_METADATA_KEY.into(),
                d.due_text().into(),
            );
            rec.lease = Some(d.timer());
        }
        vec![set_status(
            rec,
            TaskState::InputRequired,
            Some(question),
            None,
        )]
    })
    .await?;
    crate::metrics::record(crate::metrics::Event::HelpAsked);
    Ok(())
}

#[derive(Deserialize)]
struct ReplyArgs {
    participant_id: String,
    text: String,
}

#[derive(Deserialize)]
struct CreateArgs {
    participant_id: String,
    name: String,
    goal: String,
    #[serde(default)]
    acceptance_criteria: Vec<String>,
    #[serde(default)]
    step: Option<String>,
    #[serde(default)]
    reply_within: Option<String>,
}

/// Creates the sub-task, then links it in the same commit as the result.
async fn create_task(
    ctx: &Context<'_>,
    run: &mut TaskRun,
    call: &ToolCall,
    a: CreateArgs,
) -> Result<(), RunError> {
    let remotes = ctx.remotes;
    let deadline = match deadline_of(ctx, a.reply_within.as_deref()) {
        Ok(deadline) => deadline,
        Err(e) => return commit_result(run, call, Err(e)).await,
    };
    if let Err(e) = check_decision(HelpDecision {
        route: Route::CreateTask,
        participant_id: a.participant_id.clone(),
        question: None,
        options: Vec::new(),
        name: Some(a.name.clone()),
        goal: Some(a.goal.clone()),
        acceptance_criteria: a.acceptance_criteria.clone(),
        reason: String::new(),
    }) {
        return commit_result(run, call, Err(e)).await;
    }
    let parent = run.record().clone();
    let parent_ext = ext_of(&parent);
    // An agent of the registry is delegated to, on this task or not yet; a person on the
    // task with the same id is that person.
    let person = (parent_ext.participant(&a.participant_id))
        .is_some_and(|p| p.kind != crate::ext::task::ParticipantKind::Agent);
    let remote = remotes
        .filter(|_| !person)
        .and_then(|r| Some((r.registry.get(&a.participant_id)?.clone(), r)));
    if let Some((agent, remotes)) = remote {
        // Delegating spends the operator's credentials and hands the task's words to
        // another party: only when the model acts on the words of the reporter or an
        // admin (`super::actor`), so a watcher's message, a remote's answer, a
        // sub-task's outcome or an untrusted MCP result cannot.
        let actor = run.record().agent.actor.clone().unwrap_or_default();
        if !crate::ext::permissions::permits(&parent_ext, &actor, Action::CreateSubTask) {
            let refused = ToolError::new(
                "remote.forbidden",
                "only a task whose reporter or an admin spoke last may be delegated to a remote agent; ask them",
            );
            return commit_result(run, call, Err(refused)).await;
        }
        let mut text = format!("{}\n\n{}", a.name, a.goal);
        for c in &a.acceptance_criteria {
            text.push_str(&format!("\n- {c}"));
        }
        let due = deadline.map(|d| d.due_ms);
        let said =
            crate::agent::delegate::start(remotes, run, &agent, (text, due), &call.id).await?;
        return commit_result(run, call, said).await;
    }
    if parent_ext.participant(&a.participant_id).is_none() {
        return commit_result(run, call, Err(no_such_participant())).await;
    }
    let harness = parent_ext
        .assignee()
        .map(|p| p.id.clone())
        .unwrap_or_default();
    let request = ParticipantTask {
        participant_id: a.participant_id.clone(),
        name: a.name,
        goal: a.goal,
        acceptance_criteria: a.acceptance_criteria,
    };
    let mut child = subtask::sub_task(&parent, &request, &harness);
    if let Some(d) = deadline {
        subtask::due_by(&mut child, d);
    }
    // Its post to the assignee's personal channel is charged to whom the parent's would
    // be (`Addressed::charged`): the child's own history holds no person's word.
    child.agent.actor = Some(crate::engine::medium::Addressed::charged(&parent));
    match subtask::create(run.store().as_ref(), &child, &parent.task.id).await {
        Ok(()) => {}
        Err(CreateError::Taken(id)) => {
            let taken = ToolError::new("tool.failed", format!("task id {id} is taken"));
            return commit_result(run, call, Err(taken)).await;
        }
        Err(CreateError::Store(e)) => return Err(e.into()),
    }
    let result = result_message(
        &run.record().agent.nonce,
        call,
        &ToolOutcome::output(format!(
            "task for {} created{}",
            a.participant_id,
            due_note(deadline.as_ref())
        )),
    );
    let child_id = child.id().to_owned();
    run.apply(|rec| {
        subtask::link(rec, &child_id, a.step.as_deref());
        rec.agent.conversation.push(result.clone());
        Vec::new()
    })
    .await?;
    run.created.push(child);
    Ok(())
}

#[derive(Deserialize)]
struct RoleArgs {
    participant_id: String,
    role: Role,
    request_message_id: String,
}

async fn set_role(run: &mut TaskRun, call: &ToolCall, a: RoleArgs) -> Result<(), RunError> {
    let ext = ext_of(run.record());
    let actor = run.record().agent.actor.clone().unwrap_or_default();
    let checked = if !ext.has_role(Some(&actor), Role::Admin) {
        Err(ToolError::new(
            NOT_A_MEMBER,
            "only an admin may change roles",
        ))
    } else {
        requested(run.record(), &ext, &actor, &a).and_then(|()| {
            (ext.participant(&a.participant_id))
                .map(|_| ())
                .ok_or_else(no_such_participant)
        })
    };
    if let Err(e) = checked {
        return commit_result(run, call, Err(e)).await;
    }
    let result = result_message(
        &run.record().agent.nonce,
        call,
        &ToolOutcome::output(format!("{} is now {}", a.participant_id, a.role.as_str())),
    );
    run.apply(|rec| {
        let mut ext = ext_of(rec);
        for p in ext.participants.iter_mut() {
            if p.id == a.participant_id {
                p.role = a.role;
            }
        }
        ext.store(&mut rec.task);
        rec.agent.conversation.push(result.clone());
        // One request, one change.
        rec.agent
            .role_requests
            .push(request_key(&actor, &a.request_message_id));
        Vec::new()
    })
    .await
}

/// How the model reads a message it takes in: a human admin's with its id in front
/// (`(message "<id>") …`), so a privileged call can cite it; anyone else's as it is.
pub fn citable(
    ext: &TaskExtension,
    sender: &str,
    is_agent: bool,
    id: &str,
    said: String,
) -> String {
    if is_agent || !ext.has_role(Some(sender), Role::Admin) {
        return said;
    }
    let quoted = serde_json::to_string(id).unwrap_or_default();
    format!("(message {quoted}) {said}")
}

const ROLES: [Role; 4] = [Role::Assignee, Role::Reporter, Role::Watcher, Role::Admin];

/// The role a word of a request names: its name, plural or not (`admins`), or
/// `administrator`.
fn role_word(word: &str) -> Option<Role> {
    let word = word.to_lowercase();
    let word = word.strip_suffix('s').unwrap_or(&word);
    let word = if word == "administrator" {
        "admin"
    } else {
        word
    };
    ROLES.into_iter().find(|r| r.as_str() == word)
}

/// How a used request is recorded: its sender and its id (ids are per sender).
fn request_key(sender: &str, id: &str) -> String {
    serde_json::json!([sender, id]).to_string()
}

/// Whether the cited message is an admin's request for exactly this change, not yet
/// used: it is the latest word of the admin the run acts for (`actor`: the last
/// participant message in the task's history from them, matched on sender and id, so an
/// older request, one they took back since, and someone else's message under the same
/// id lend nothing), a person's (not an agent's); the only member it names (by exact id,
/// the harness aside) is the target and the only role it names is the target role; it is
/// neither a question nor a negation ("is bob an admin?", "don't make bob an admin" ask
/// for nothing). A message naming two members or two roles ("make bob an admin; mallory
/// stays a watcher") is ambiguous and asks for nothing.
fn requested(
    rec: &TaskRecord,
    ext: &TaskExtension,
    actor: &str,
    a: &RoleArgs,
) -> Result<(), ToolError> {
    let id = a.request_message_id.as_str();
    let refused = |why: String| {
        ToolError::new(
            "role.not_requested",
            format!("a role change needs an admin's message that asks for exactly it, cited by its id (request_message_id): {why}; ask the admin to confirm"),
        )
    };
    let key = request_key(actor, id);
    // A plain id: recorded by a build that kept ids alone.
    if (rec.agent.role_requests.iter()).any(|used| *used == key || used == id) {
        return Err(ToolError::new(
            "role.request_used",
            format!("message {id:?} was already used for a role change (one request, one change); ask the admin"),
        ));
    }
    let person = (ext.participant(actor)).is_some_and(|p| p.kind != ParticipantKind::Agent);
    let latest = super::actor::latest_word(rec, actor).filter(|_| person);
    let Some(m) = latest.filter(|m| m.message_id == id) else {
        return Err(refused(format!(
            "message {id:?} is not the latest message of the admin the agent acts for (an older or another member's message asks for nothing)"
        )));
    };
    let text = crate::ext::channel::message_text(m);
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| c.is_ascii_punctuation()))
        .collect();
    let harness = ext.assignee().filter(|p| p.kind == ParticipantKind::Agent);
    let members: Vec<&str> = (ext.participants.iter())
        .map(|p| p.id.as_str())
        .filter(|p| *p == a.participant_id || harness.is_none_or(|h| h.id != *p))
        // An id may hold spaces: then the phrase is looked for as it is.
        .filter(|p| match p.contains(char::is_whitespace) {
            true => text.contains(p),
            false => words.contains(p),
        })
        .collect();
    let mut roles: Vec<Role> = words.iter().filter_map(|w| role_word(w)).collect();
    roles.sort_by_key(|r| r.as_str());
    roles.dedup();
    if members.len() > 1 || roles.len() > 1 {
        return Err(ToolError::new(
            "role.ambiguous",
            format!("message {id:?} names more than one participant or role; ask the admin for one change per message, or to use /role"),
        ));
    }
    if members != [a.participant_id.as_str()] || roles != [a.role] {
        return Err(refused(format!(
            "message {id:?} does not name {} and {}",
            a.participant_id,
            a.role.as_str()
        )));
    }
    let declines = words.iter().any(|w| {
        let w = w.to_lowercase();
        matches!(w.as_str(), "not" | "no" | "never" | "dont")
            || w.ends_with("n't")
            || w.ends_with("n’t")
    });
    if declines || text.trim_end().ends_with('?') {
        return Err(refused(format!(
            "message {id:?} is a question or a negation"
        )));
    }
    Ok(())
}

#[derive(Deserialize)]
struct RequestHelpArgs {
    need: String,
    blocking_work: bool,
    #[serde(default)]
    participant_id: Option<String>,
}

async fn request_help(
    ctx: &Context<'_>,
    run: &mut TaskRun,
    call: &ToolCall,
    a: RequestHelpArgs,
) -> Result<(), RunError> {
    let need = HelpNeed {
        question: a.need.clone(),
        options: Vec::new(),
        blocking_work: Some(a.blocking_work),
        participant_id: a.participant_id,
    };
    let ext = ext_of(run.record());
    let task_text = super::llm::render_task(run.record());
    let nonce = &run.record().agent.nonce;
    let participants_text = untrusted(nonce, "participants", &ext.render_participants());
    let decided = help::decide(
        ctx.decider,
        HelpDecidedIn {
            task_id: &run.record().task.id,
            need: &need,
            task_text: &task_text,
            participants_text: &participants_text,
            objection: None,
            model: ctx.model,
            model_id: ctx.model_id,
            turn: run.record().agent.model_calls,
        },
    )
    .await;
    if !decided.model_calls.is_empty() {
        // The decision's model calls count like the agent's own, decided or not.
        run.update_agent(|s| count_calls(s, ctx.model_id, &decided.model_calls))
            .await?;
    }
    let decision = match decided.decision {
        Ok(d) => d,
        Err(why) => {
            return commit_result(run, call, Err(ToolError::new("help.rejected", why))).await
        }
    };
    match decision.route {
        Route::Ask => {
            let args = AskArgs {
                participant_id: decision.participant_id,
                question: decision.question.unwrap_or(a.need),
                options: decision.options,
                reply_within: None,
            };
            ask(ctx, run, call, args).await
        }
        Route::CreateTask => {
            let goal = decision.goal.unwrap_or(a.need);
            let args = CreateArgs {
                participant_id: decision.participant_id,
                name: decision
                    .name
                    .filter(|n| !n.trim().is_empty())
                    .unwrap_or_else(|| TaskExtension::from_text(&goal).name),
                goal,
                acceptance_criteria: decision.acceptance_criteria,
                step: None,
                reply_within: None,
            };
            create_task(ctx, run, call, args).await
        }
    }
}

fn count_calls(state: &mut super::llm::AgentState, model: &str, calls: &[Usage]) {
    for u in calls {
        state.model_calls += 1;
        state.count(model, *u);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_result_is_redacted_before_it_is_framed() {
        let call = ToolCall {
            id: "c1".into(),
            name: "fetch_config".into(),
            arguments: serde_json::json!({}),
        };
        let key = format!("AKIA{}", "IOSFODNN7EXAMPLE");
        let outcome = ToolOutcome::output(format!("aws key {key}, task-12345"));
        let ChatMessage::Tool { content, .. } = result_message("n0nce", &call, &outcome) else {
            panic!("a tool result")
        };
        assert!(!content.contains(&key), "{content}");
        assert!(
            content.contains("[REDACTED:aws-access-key], task-12345"),
            "{content}"
        );
    }
}
