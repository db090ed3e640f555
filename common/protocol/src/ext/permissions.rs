//! Who may do what on a task: the one table every operation and command consults (the
//! README prints it). Seeing a task and speaking on it are for its participants; the
//! rest by role:
//!
//! | action | who may |
//! |---|---|
//! | see the task (GetTask, ListTasks, SubscribeToTask), send a message on it | any participant |
//! | answer a help request (the reply that resumes a waiting task) | the participant asked, or an admin |
//! | cancel the task | its reporter, its assignee (declining the work), or an admin |
//! | edit its name, description and acceptance criteria (a task envelope) | its reporter, or an admin |
//! | choose its model (`/model <name>`) | its reporter, or an admin |
//! | create a sub-task for a participant (`/task` on the task) | its reporter, or an admin |
//! | create a task of its own for someone (`/task <who> <goal>` without a task) | any participant, who becomes its reporter; for someone else at most `HARNESS_TASKS_FOR_OTHERS_PER_HOUR` (20) an hour per sender, counted in the store; never for a reserved id (the harness's, one it used, a registry agent's), nor an id that looks like one or like the sender's |
//! | manage its webhooks (push configs; `taskPushNotificationConfig` on a send) | its reporter, or an admin |
//! | see a webhook's token and credentials (Get, List; others who manage webhooks see it without them) | the participant who created it |
//! | replace a webhook (a create with its id) | the participant who created it |
//! | delete a webhook | the participant who created it, or an admin |
//! | change its participants and roles (envelope `participants`, `/role`, `set_participant_role`) | an admin |
//!
//! Anyone else is refused: a stranger with the not-found of a missing task (they learn
//! nothing), a participant with invalid params naming the rule (they can see the task
//! anyway).

use super::task::{Role, TaskExtension};
use crate::a2a::A2aError;

/// What a participant may be refused on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Cancel,
    Edit,
    ChooseModel,
    CreateSubTask,
    ManageWebhooks,
    ChangeParticipants,
}

impl Action {
    fn roles(self) -> &'static [Role] {
        match self {
            Action::ChangeParticipants => &[Role::Admin],
            // The harness's agent is the assignee of the tasks it runs and no request
            // acts as it: this is a person declining a task assigned to them.
            Action::Cancel => &[Role::Reporter, Role::Assignee, Role::Admin],
            _ => &[Role::Reporter, Role::Admin],
        }
    }

    /// The rule, as the refusal states it.
    pub fn rule(self) -> &'static str {
        match self {
            Action::Cancel => "only the task's reporter, its assignee or an admin may cancel it",
            Action::Edit => {
                "only the task's reporter or an admin may change its name, description \
                 or acceptance criteria"
            }
            Action::ChooseModel => "only the task's reporter or an admin may choose its model",
            Action::CreateSubTask => {
                "only the task's reporter or an admin may create a sub-task on it"
            }
            Action::ManageWebhooks => {
                "only the task's reporter or an admin may manage its push notification configs"
            }
            Action::ChangeParticipants => "only an admin may change participants or roles",
        }
    }
}

/// A participant's refusal: invalid params naming the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.rule())]
pub struct Forbidden(pub Action);

impl From<Forbidden> for A2aError {
    fn from(f: Forbidden) -> Self {
        A2aError::invalid_params(f.0.rule())
    }
}

/// Whether participant `who` may do `action` on the task `ext` describes.
pub fn permits(ext: &TaskExtension, who: &str, action: Action) -> bool {
    ext.participant(who)
        .is_some_and(|p| action.roles().contains(&p.role))
}

/// `permits`, as a result.
pub fn require(ext: &TaskExtension, who: &str, action: Action) -> Result<(), Forbidden> {
    if permits(ext, who, action) {
        Ok(())
    } else {
        Err(Forbidden(action))
    }
}

/// Why a `/task` without a task for someone else is refused past the sender's hourly
/// limit (the limit is a setting: the refusal adds it).
pub const TASKS_FOR_OTHERS_RULE: &str =
    "a participant may create only so many tasks for someone else without a task";

/// Whether `who` may answer a help request addressed to `asked`.
pub fn may_answer(ext: &TaskExtension, who: &str, asked: &str) -> bool {
    who == asked || ext.has_role(Some(who), Role::Admin)
}

/// Why someone else's answer is refused.
pub const ANSWER_RULE: &str = "only the participant asked or an admin may answer this help request";

/// Whether `who` created a webhook `creator` created ("", a config older than creators
/// were kept, was created by no one): the one who sees its secrets and may replace it.
pub fn is_webhook_creator(who: &str, creator: &str) -> bool {
    !creator.is_empty() && who == creator
}

/// Whether `who` may delete a webhook `creator` created: its creator or an admin.
pub fn may_delete_webhook(ext: &TaskExtension, who: &str, creator: &str) -> bool {
    is_webhook_creator(who, creator) || ext.has_role(Some(who), Role::Admin)
}

/// Why a create reusing the id of someone else's config is refused.
pub const REPLACE_WEBHOOK_RULE: &str =
    "only the participant who created a push notification config may replace it; choose another id";

/// Why deleting someone else's config is refused.
pub const DELETE_WEBHOOK_RULE: &str =
    "only the participant who created a push notification config or an admin may delete it";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::task::{Participant, ParticipantKind};

    #[test]
    fn reporters_and_admins_run_the_task_and_only_admins_change_roles() {
        let mut ext = TaskExtension::from_text("x");
        for (id, role) in [
            ("rita", Role::Reporter),
            ("ada", Role::Admin),
            ("walt", Role::Watcher),
            ("asa", Role::Assignee),
        ] {
            ext.add(Participant::new(id, ParticipantKind::Human, role));
        }
        assert!(permits(&ext, "asa", Action::Cancel) && !permits(&ext, "walt", Action::Cancel));
        for action in [
            Action::Edit,
            Action::ChooseModel,
            Action::CreateSubTask,
            Action::ManageWebhooks,
        ] {
            assert!(permits(&ext, "rita", action) && permits(&ext, "ada", action));
            assert!(!permits(&ext, "walt", action) && !permits(&ext, "asa", action));
            assert!(!permits(&ext, "mallory", action));
        }
        assert!(permits(&ext, "ada", Action::ChangeParticipants));
        assert!(!permits(&ext, "rita", Action::ChangeParticipants));
        assert_eq!(
            require(&ext, "walt", Action::Cancel),
            Err(Forbidden(Action::Cancel))
        );
        assert!(may_answer(&ext, "walt", "walt") && may_answer(&ext, "ada", "walt"));
        assert!(!may_answer(&ext, "rita", "walt"));
    }
}
