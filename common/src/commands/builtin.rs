//! The built-in commands: `/model`, `/help`, `/participants`, `/role` and `/task`.

use async_trait::async_trait;

use super::{Command, CommandError, CommandRegistry, CommandSpec, Invocation, Reply};
use crate::channels::subtask::{self, ParticipantTask};
use crate::ext::participant;
use crate::ext::permissions::Action;
use crate::ext::task::{Role, TaskExtension};

impl CommandRegistry {
    /// The built-in commands, in the order the card lists them.
    pub fn builtin() -> Self {
        let mut r = CommandRegistry::new();
        for (spec, command) in [
            (
                CommandSpec::new("model", "Show or choose this task's model", "[<model>]"),
                Builtin::Model,
            ),
            (
                CommandSpec::new("help", "List the commands", ""),
                Builtin::Help,
            ),
            (
                CommandSpec::new(
                    "participants",
                    "List this task's participants and their roles",
                    "",
                ),
                Builtin::Participants,
            ),
            (
                CommandSpec::new(
                    "role",
                    "Change a participant's role (admins only)",
                    "<participant> <role>",
                ),
                Builtin::Role,
            ),
            (
                CommandSpec::new(
                    "task",
                    "Create a task for a participant",
                    "<participant> <goal>",
                ),
                Builtin::Task,
            ),
        ] {
            // The built-in specs are valid; a failure here would be caught by the tests.
            let _ = r.register(spec, command);
        }
        r
    }
}

#[derive(Debug, Clone, Copy)]
enum Builtin {
    Model,
    Help,
    Participants,
    Role,
    Task,
}

const NEEDS_A_TASK: &str = "this command works on a task: send it with the task's id";

#[async_trait]
impl Command for Builtin {
    async fn run(&self, call: &mut Invocation<'_>, arguments: &str) -> Result<Reply, CommandError> {
        match self {
            Builtin::Help => Ok(Reply::text(help(call))),
            Builtin::Model => Ok(Reply::text(model(call, arguments)?)),
            Builtin::Participants => Ok(Reply::text(match call.task.as_deref() {
                Some(task) => task.ext().unwrap_or_default().render_participants(),
                None => NEEDS_A_TASK.into(),
            })),
            Builtin::Role => Ok(Reply::text(role(call, arguments)?)),
            Builtin::Task => task(call, arguments).await,
        }
    }
}

fn help(call: &Invocation<'_>) -> String {
    call.commands
        .specs()
        .iter()
        .map(|s| {
            let usage = if s.argument_hint.is_empty() {
                format!("/{}", s.name)
            } else {
                format!("/{} {}", s.name, s.argument_hint)
            };
            format!("{usage} — {}", s.description)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn model(call: &mut Invocation<'_>, arguments: &str) -> Result<String, CommandError> {
    if !arguments.is_empty() {
        call.permit(Action::ChooseModel)?;
    }
    let Some(choices) = call.engine.agent().models() else {
        return Ok("this agent uses no model".into());
    };
    let Some(task) = call.task.as_deref_mut() else {
        return Ok(NEEDS_A_TASK.into());
    };
    let listed = choices.names.join(", ");
    if arguments.is_empty() {
        let current = task
            .agent
            .model
            .clone()
            .unwrap_or_else(|| format!("{} (the default)", choices.default));
        return Ok(format!("model: {current}\nchoices: {listed}"));
    }
    if !choices.names.iter().any(|n| n == arguments) {
        return Ok(format!("unknown model {arguments:?}; choices: {listed}"));
    }
    task.agent.model = Some(arguments.to_owned());
    Ok(format!("model for this task: {arguments}"))
}

fn role(call: &mut Invocation<'_>, arguments: &str) -> Result<String, CommandError> {
    call.permit(Action::ChangeParticipants)?;
    let Some(task) = call.task.as_deref_mut() else {
        return Ok(NEEDS_A_TASK.into());
    };
    let mut ext = task.ext().unwrap_or_default();
    let mut words = arguments.split_whitespace();
    let (Some(who), Some(role), None) = (words.next(), words.next(), words.next()) else {
        return Ok("usage: /role <participant> <role>".into());
    };
    // The harness and its agents keep their roles; an id that is no id is named as such.
    let members = task.members();
    participant::check_id(who, call.reserved, members.iter().map(String::as_str)).map_err(
        |refusal| CommandError::BadId {
            id: who.to_owned(),
            refusal,
        },
    )?;
    let role: Role = match role.parse() {
        Ok(r) => r,
        Err(e) => return Ok(e),
    };
    let Some(p) = ext.participants.iter_mut().find(|p| p.id == who) else {
        return Ok("[channel.not_a_member] no such participant on this task".into());
    };
    p.role = role;
    ext.store(&mut task.task);
    Ok(format!("{who} is now {}", role.as_str()))
}

async fn task(call: &mut Invocation<'_>, arguments: &str) -> Result<Reply, CommandError> {
    let Some((who, goal)) = arguments
        .split_once(char::is_whitespace)
        .map(|(w, g)| (w.trim(), g.trim()))
        .filter(|(_, g)| !g.is_empty())
    else {
        return Ok(Reply::text("usage: /task <participant> <goal>"));
    };
    call.permit(Action::CreateSubTask)?;
    // Against the members of the task it is sent on, whose reporter or admin the sender
    // is (permitted above); without one, against the sender, its only other member.
    let members = match call.task.as_deref() {
        Some(parent) => parent.members(),
        None => vec![call.sender.to_owned()],
    };
    participant::check_id(who, call.reserved, members.iter().map(String::as_str)).map_err(
        |refusal| CommandError::BadId {
            id: who.to_owned(),
            refusal,
        },
    )?;
    let request = ParticipantTask {
        participant_id: who.to_owned(),
        name: TaskExtension::from_text(goal).name,
        goal: goal.to_owned(),
        acceptance_criteria: Vec::new(),
    };
    let created = match call.task.as_deref_mut() {
        Some(parent) => {
            if parent.ext().unwrap_or_default().participant(who).is_none() {
                return Ok(Reply::text(
                    "[channel.not_a_member] no such participant on this task",
                ));
            }
            let child = subtask::sub_task(parent, &request, call.sender);
            let id = child.task.id.clone();
            // Its id may be another's (a sub-task the agent made and has yet to link): the
            // commit that creates it is refused then too, and this read, tried again, says
            // so. Created, linked and announced with the parent's commit, never before it.
            let admit: &crate::store::Admit = &|_| true;
            if (call.store.load_view(&id, Some(0), false, admit).await?).is_some() {
                return Ok(Reply::text(format!("task id {id} is taken")));
            }
            subtask::link(parent, &id, None);
            call.creates = Some(child);
            id
        }
        None => {
            if who != call.sender {
                take_task_for_others(call).await?;
            }
            let task = subtask::standalone(call.tenant, call.context_id, &request, call.sender);
            let id = task.task.id.clone();
            call.store
                .create_task(&task, &[crate::engine::transition::created(&task)], None)
                .await?;
            call.engine
                .media()
                .announce_from(&task, Some(call.sender))
                .await;
            id
        }
    };
    Ok(Reply {
        text: format!("task {created} created for {who}"),
        task_ref: Some(created),
    })
}

/// Counts a task the sender assigns to someone else without a task against their hourly
/// limit (`HARNESS_TASKS_FOR_OTHERS_PER_HOUR`): each such task is posted to its assignee's
/// personal channel, so anyone could otherwise flood anyone's.
async fn take_task_for_others(call: &Invocation<'_>) -> Result<(), CommandError> {
    let limit = call.tasks_for_others_per_hour;
    take_tasks_for_others(call.store, call.sender, limit).await
}

/// Counts one task `sender` makes for or naming someone else against their hourly limit
/// (`/task` without a task, a new task whose envelope lists others); `Limited` past it.
pub async fn take_tasks_for_others(
    store: &dyn crate::store::Store,
    sender: &str,
    limit: u64,
) -> Result<(), CommandError> {
    let hour = crate::store::hour_of(crate::task::lease::now_ms());
    let quota = crate::store::Quota::TasksForOthers;
    if store.take_quota(quota, sender, hour, limit).await? {
        Ok(())
    } else {
        Err(CommandError::Limited(tasks_for_others_rule(limit)))
    }
}

/// Why a task for someone else is refused past the limit.
pub fn tasks_for_others_rule(limit: u64) -> String {
    format!(
        "{} (at most {limit} an hour); try again next hour",
        crate::ext::permissions::TASKS_FOR_OTHERS_RULE
    )
}
