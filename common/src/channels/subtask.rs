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

/// Which side of a link a task names another from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// `from` names `id` in its `sub_tasks`; `id` must name `from` in its `parent_tasks`.
    SubTask,
    /// `from` names `id` in its `parent_tasks`; `id` must name `from` in its `sub_tasks`.
    Parent,
}

/// The ids of the tasks of this harness `child` names as its parents (a remote agent's
/// are not ours to wake).
pub fn local_parents(child: &TaskRecord) -> Vec<String> {
    (child.ext().map(|e| e.parent_tasks).unwrap_or_default())
        .into_iter()
        .filter(|p| p.agent.is_none())
        .map(|p| p.task_id)
        .collect()
}

/// The task `id` that `from` links to as `link`: None (as if it did not exist) unless it
/// is in `from`'s tenant and links back.
pub async fn linked(
    store: &dyn Store,
    from: &TaskRecord,
    id: &str,
    link: Link,
) -> Result<Option<TaskRecord>, StoreError> {
    let Some(other) = store.load_task(id).await? else {
        return Ok(None);
    };
    let back = other.ext().is_some_and(|e| {
        let refs = match link {
            Link::SubTask => e.parent_tasks,
            Link::Parent => e.sub_tasks,
        };
        refs.iter()
            .any(|r| r.agent.is_none() && r.task_id == from.id())
    });
    if other.tenant != from.tenant || !back {
        tracing::warn!(
            task_id = from.id(),
            linked = id,
            "a one-sided link is ignored"
        );
        return Ok(None);
    }
    Ok(Some(other))
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
