//! Who may do what on a task: the rules every operation and command consults. Seeing a
//! task and speaking on it are for its participants; the rest by role. The table of them
//! all, with the limits beside each, is "Who may do what" in `common/docs/identity.md`:
//! one table, kept there, so a row changes in one place.
//!
//! Whoever a rule leaves out is refused: a stranger with the not-found of a missing task
//! (they learn nothing), a participant with invalid params naming the rule (they can see
//! the task anyway).

use super::task::{Role, TaskExtension};
use super::{is_media_type, CHANNEL_MEDIA_TYPE, EVENT_MEDIA_TYPE};
use crate::a2a::{A2aError, Message, Role as MessageRole};

/// What a participant may be refused on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Cancel,
    Edit,
    ChooseModel,
    CreateSubTask,
    ManageWebhooks,
    ChangeParticipants,
    /// Have the agent call a tool with side effects (`Tool::side_effects`) or delegate to
    /// a remote agent: the actor is whose words the model acts on now (`agent::actor`).
    CallToolWithSideEffects,
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
            Action::CallToolWithSideEffects => {
                "only a task whose reporter or an admin spoke last may have the agent call a \
                 tool with side effects"
            }
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

/// Why a `/task` without a task for someone else, or a new task whose envelope lists
/// someone else, is refused past the sender's hourly limit (the limit is a setting: the
/// refusal adds it).
pub const TASKS_FOR_OTHERS_RULE: &str =
    "a participant may create only so many tasks for or naming someone else";

/// Whether `who` may answer a help request addressed to `asked`.
pub fn may_answer(ext: &TaskExtension, who: &str, asked: &str) -> bool {
    who == asked || ext.has_role(Some(who), Role::Admin)
}

/// Why someone else's answer is refused.
pub const ANSWER_RULE: &str = "only the participant asked or an admin may answer this help request";

/// The first thing in `m` that speaks as the agent, which only an agent participant of
/// the task may send: the field naming it, and what it is. A client's message is
/// `ROLE_USER`; event envelopes other than `task`, and help requests, are the agent's.
pub fn agent_side(m: &Message) -> Option<(String, &'static str)> {
    if m.role == MessageRole::Agent {
        return Some(("message.role".into(), "ROLE_AGENT"));
    }
    m.parts.iter().enumerate().find_map(|(i, p)| {
        let kind = p.data.as_ref()?.get("kind")?.as_str()?;
        let is = |ours| is_media_type(&p.media_type, ours);
        let what = match kind {
            "status_update" if is(EVENT_MEDIA_TYPE) => "a status_update envelope",
            "artifact_update" if is(EVENT_MEDIA_TYPE) => "an artifact_update envelope",
            "help_request" if is(CHANNEL_MEDIA_TYPE) => "a help_request channel message",
            _ => return None,
        };
        Some((format!("message.parts[{i}].data"), what))
    })
}

/// Why a participant's agent-side content is refused.
pub const AGENT_SIDE_RULE: &str =
    "only an agent participant of the task speaks as the agent (a person's message is ROLE_USER)";

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
            Action::CallToolWithSideEffects,
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

    #[test]
    fn the_agents_side_is_its_role_its_update_envelopes_and_its_help_requests() {
        use crate::a2a::Part;
        use serde_json::json;
        let part = |media: &str, data: serde_json::Value| Part {
            data: Some(data),
            media_type: media.into(),
            ..Default::default()
        };
        let m = |role, parts| Message {
            role,
            parts,
            ..Default::default()
        };
        let user = |parts| m(MessageRole::User, parts);
        assert_eq!(agent_side(&user(vec![Part::text("hi")])), None);
        let said = agent_side(&m(MessageRole::Agent, vec![Part::text("Approved.")]));
        assert_eq!(said, Some(("message.role".into(), "ROLE_AGENT")));
        let envelope = |kind| part(EVENT_MEDIA_TYPE, json!({"kind": kind, "payload": {}}));
        assert_eq!(agent_side(&user(vec![envelope("task")])), None);
        for (kind, what) in [
            ("status_update", "a status_update envelope"),
            ("artifact_update", "an artifact_update envelope"),
        ] {
            // Behind a task envelope too: every part is looked at.
            let parts = vec![Part::text("x"), envelope("task"), envelope(kind)];
            assert_eq!(
                agent_side(&user(parts)),
                Some(("message.parts[2].data".into(), what))
            );
        }
        // Media types compare without case or parameters.
        for media in [
            "Application/VND.tiny-harness.Event+JSON",
            "application/vnd.tiny-harness.event+json;v=1",
            "application/vnd.tiny-harness.event+json ; charset=utf-8",
        ] {
            let parts = vec![part(media, json!({"kind": "status_update", "payload": {}}))];
            assert_eq!(
                agent_side(&user(parts)),
                Some(("message.parts[0].data".into(), "a status_update envelope")),
                "{media}"
            );
        }
        let channel = |kind| {
            part(
                CHANNEL_MEDIA_TYPE,
                json!({"channel_id": "t", "sender": "bob", "kind": kind}),
            )
        };
        assert_eq!(agent_side(&user(vec![channel("help_reply")])), None);
        assert_eq!(
            agent_side(&user(vec![channel("help_request")])),
            Some((
                "message.parts[0].data".into(),
                "a help_request channel message"
            ))
        );
    }
}
