//! Tasks for participants: the sub-task `<parent>.<n>` that `create_task_for_participant`
//! and `/task` create on a task, and the task of its own `/task` creates without one.
//! Such a task is assigned to the participant, waits for them in INPUT_REQUIRED with its
//! goal as status message, and their message completes it (at intake).
//!
//! Links between tasks (`sub_tasks`, `parent_tasks`) are made here only, on both sides,
//! within one tenant; a task reads or wakes a linked task only through [`linked`], which
//! holds the link to those rules, so a link a client wrote (or data from before they held)
//! reaches nothing.

use serde_json::Value;

use crate::a2a::{Message, Part, Role as MessageRole};
use crate::engine::transition::{await_assignee, created, new_id, new_task_with_id};
use crate::ext::task::{Criterion, Participant, ParticipantKind, Role, TaskExtension, TaskRef};
use crate::store::{Store, StoreError, TaskRecord};

/// What the participant is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParticipantTask {
    pub participant_id: String,
    pub name: String,
    pub goal: String,
    pub acceptance_criteria: Vec<String>,
}

impl ParticipantTask {
    fn extension(&self, participants: Vec<Participant>, parents: Vec<TaskRef>) -> TaskExtension {
        TaskExtension {
            name: self.name.clone(),
            goal: self.goal.clone(),
            acceptance_criteria: self
                .acceptance_criteria
                .iter()
                .map(|t| Criterion {
                    text: t.clone(),
                    met: false,
                })
                .collect(),
            participants,
            parent_tasks: parents,
            ..Default::default()
        }
    }

    /// The task `id`, its first message the goal from `sender`, waiting for its assignee.
    fn record(
        &self,
        id: String,
        tenant: &str,
        context_id: &str,
        sender: &str,
        ext: &TaskExtension,
    ) -> TaskRecord {
        let mut first = Message {
            message_id: format!("{id}:start"),
            context_id: context_id.to_owned(),
            role: MessageRole::User,
            parts: vec![Part::text(self.goal.clone())],
            ..Default::default()
        };
        crate::ext::participant::assert_sender(&mut first, sender);
        let mut rec = new_task_with_id(id, tenant, &mut first, ext);
        await_assignee(&mut rec, &self.goal);
        rec
    }
}

/// The sub-task of `parent` for a participant of it: numbered by the parent's links so
/// far (so a retry after a crash names the same task), with the parent's participants, the
/// participant as assignee and the previous assignee as watcher. `sender` is its first
/// message's sender: the harness when its agent delegates (it asserts itself), the
/// participant who asked with `/task` (a person never speaks as the harness).
pub fn sub_task(parent: &TaskRecord, req: &ParticipantTask, sender: &str) -> TaskRecord {
    let parent_ext = parent.ext().unwrap_or_default();
    let id = format!("{}.{}", parent.task.id, parent_ext.sub_tasks.len() + 1);
    let participants = parent_ext
        .participants
        .iter()
        .map(|p| {
            let role = if p.id == req.participant_id {
                Role::Assignee
            } else if p.role == Role::Assignee {
                Role::Watcher
            } else {
                p.role
            };
            Participant { role, ..p.clone() }
        })
        .collect();
    let ext = req.extension(participants, vec![TaskRef::local(&parent.task.id)]);
    req.record(id, &parent.tenant, &parent.task.context_id, sender, &ext)
}

/// Gives `child`, a task waiting on its assignee, a deadline for their answer: kept with
/// it (`reply_by`), waited on under its timer (`engine::deadlines` takes its steps), and
/// shown in its metadata and its status message's (the harness's `replyBy` key).
pub fn due_by(child: &mut TaskRecord, deadline: crate::task::Deadline) {
    use crate::ext::REPLY_BY_METADATA_KEY;
    child.agent.reply_by = Some(deadline);
    child.lease = Some(deadline.timer());
    let due = Value::String(deadline.due_text());
    (child.task.metadata.get_or_insert_with(Default::default))
        .insert(REPLY_BY_METADATA_KEY.into(), due.clone());
    if let Some(m) = child.task.status.as_mut().and_then(|s| s.message.as_mut()) {
        (m.metadata.get_or_insert_with(Default::default)).insert(REPLY_BY_METADATA_KEY.into(), due);
    }
}

/// A task of its own for a participant, asked for by `reporter`.
pub fn standalone(
    tenant: &str,
    context_id: &str,
    req: &ParticipantTask,
    reporter: &str,
) -> TaskRecord {
    let mut participants = vec![Participant::new(
        &req.participant_id,
        ParticipantKind::Human,
        Role::Assignee,
    )];
    if reporter != req.participant_id {
        participants.insert(
            0,
            Participant::new(reporter, ParticipantKind::Human, Role::Reporter),
        );
    }
    let ext = req.extension(participants, Vec::new());
    let context = if context_id.is_empty() {
        new_id()
    } else {
        context_id.to_owned()
    };
    req.record(new_id(), tenant, &context, reporter, &ext)
}

/// Why a sub-task could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// Its id belongs to a task that is not this parent's.
    #[error("task id {0} is taken")]
    Taken(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Stores the sub-task; finding it already there from an earlier attempt of the same
/// parent is success.
pub async fn create(
    store: &dyn Store,
    child: &TaskRecord,
    parent_id: &str,
) -> Result<(), CreateError> {
    match store.create_task(child, &[created(child)], None).await {
        Ok(_) => Ok(()),
        Err(StoreError::Conflict { .. }) => {
            let ours = store
                .load_task(child.id())
                .await?
                .and_then(|c| c.ext())
                .is_some_and(|e| e.parent_tasks.iter().any(|p| p.task_id == parent_id));
            if ours {
                Ok(())
            } else {
                Err(CreateError::Taken(child.id().to_owned()))
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Links the sub-task in its parent's extension (and in the plan step `step`, if the plan
/// has one with that id); linking twice is linking once.
pub fn link(parent: &mut TaskRecord, child_id: &str, step: Option<&str>) {
    let mut ext = parent.ext().unwrap_or_default();
    if ext.sub_tasks.iter().any(|t| t.task_id == child_id) {
        return;
    }
    ext.sub_tasks.push(TaskRef::local(child_id));
    if let Some(step) = step {
        link_step(&mut ext, step, child_id);
    }
    ext.store(&mut parent.task);
}

fn link_step(ext: &mut TaskExtension, step: &str, child_id: &str) {
    let Some(steps) = ext
        .plan
        .as_mut()
        .and_then(|p| p.get_mut("steps"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for s in steps {
        if s.get("id").and_then(Value::as_str) == Some(step) {
            let linked = s.as_object_mut().map(|o| {
                o.entry("linked_tasks")
                    .or_insert_with(|| Value::Array(vec![]))
            });
            if let Some(Value::Array(list)) = linked {
                list.push(serde_json::json!({"task_id": child_id}));
            }
        }
    }
}

/// What a pushed medium is asked to send for a task this module makes.
#[cfg(test)]
mod addressed {
    use super::{standalone, ParticipantTask};
    use crate::a2a::TaskState;
    use crate::engine::medium::{Addressed, Asks};
    use crate::store::TaskRecord;
    use crate::task::HelpRequest;

    fn assigned() -> TaskRecord {
        let req = ParticipantTask {
            participant_id: "bob".into(),
            name: "Review".into(),
            goal: "Review the draft".into(),
            acceptance_criteria: Vec::new(),
        };
        standalone("", "ctx", &req, "alice")
    }

    #[test]
    fn a_task_waiting_on_its_assignee_asks_for_their_work() {
        let rec = assigned();
        let request = Addressed::of(&rec).unwrap();
        assert_eq!(request.to, "bob");
        assert_eq!(request.asks, Asks::Work);
        assert_eq!(request.text, "Review the draft");
        assert_eq!(request.request_id, format!("{}:assigned", rec.task.id));
    }

    #[test]
    fn a_pending_help_request_asks_its_participant_and_nothing_else_asks() {
        let mut rec = assigned();
        rec.agent.pending_help = Some(HelpRequest {
            participant_id: "bob".into(),
            question: "Which?".into(),
            options: vec!["a".into(), "b".into()],
            message_id: "m-1".into(),
            call_id: "c".into(),
            deadline: None,
        });
        let request = Addressed::of(&rec).unwrap();
        assert_eq!(
            (
                request.asks,
                request.request_id.as_str(),
                request.text.as_str()
            ),
            (Asks::Answer, "m-1", "Which?\nOptions: a, b")
        );
        // Waiting on someone the pending request is not for, or no longer waiting.
        rec.waits_on = Some("alice".into());
        assert_eq!(Addressed::of(&rec), None);
        let mut done = assigned();
        crate::engine::transition::set_status(&mut done, TaskState::Completed, None, None);
        assert_eq!(Addressed::of(&done), None);
    }

    #[test]
    fn the_agents_request_is_charged_to_the_participant_who_spoke_last() {
        let mut rec = assigned();
        // After an MCP server's or a remote's words the actor is no participant: the
        // post is still charged to the last participant who spoke, not to that party.
        rec.agent.actor = Some("mcp:\u{a0}docs".into());
        let said = |id: &str, who: &str| {
            let mut m = crate::a2a::Message {
                message_id: id.into(),
                role: crate::a2a::Role::User,
                ..Default::default()
            };
            crate::ext::participant::assert_sender(&mut m, who);
            m
        };
        rec.task.history.push(said("m-2", "alice"));
        assert_eq!(Addressed::of(&rec).unwrap().from, "alice");
        // A sender who is no participant (any more) charges nothing; the actor then does.
        rec.task.history.push(said("m-3", "eve"));
        assert_eq!(Addressed::of(&rec).unwrap().from, "alice");
        rec.task.history.clear();
        rec.agent.actor = Some("alice".into());
        assert_eq!(Addressed::of(&rec).unwrap().from, "alice");
    }

    #[test]
    fn a_sub_task_the_agent_made_is_charged_to_its_parents_speaker_not_the_harness() {
        use crate::ext::task::{Participant, ParticipantKind, Role};
        let mut parent = assigned();
        let mut ext = parent.ext().unwrap();
        ext.add(Participant::new(
            "harness",
            ParticipantKind::Agent,
            Role::Watcher,
        ));
        ext.store(&mut parent.task);
        let req = ParticipantTask {
            participant_id: "bob".into(),
            name: "Check".into(),
            goal: "Check the numbers".into(),
            acceptance_criteria: Vec::new(),
        };
        // Its first message is the harness's, as when the agent delegates.
        let mut child = super::sub_task(&parent, &req, "harness");
        assert_eq!(Addressed::charged(&child), "");
        child.agent.actor = Some(Addressed::charged(&parent));
        assert_eq!(Addressed::of(&child).unwrap().from, "alice");
    }
}
