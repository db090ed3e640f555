//! Whose words the model acts on now (`AgentState::actor`): the party a privileged call
//! (a tool with side effects, a delegation, a role change) is made for, and so the one
//! whose role decides whether it may be made.
//!
//! - A batch of participants' messages taken in together: the weakest voice. If any of
//!   them lacks the reporter's or an admin's privilege, the actor is that sender (the
//!   last such one); otherwise the last sender. A watcher's injection followed by an
//!   admin's "hi" in one batch leaves the watcher the actor.
//! - A remote agent's answer, question or failure entering the conversation: that agent
//!   (its registry id); a sub-task's outcome: the sub-task's assignee. Either needs a
//!   fresh word from the reporter or an admin after it before a privileged call.
//! - A result (or error) of an MCP server's tool entering the conversation: that server
//!   ([`of_tool_output`], no participant), unless the operator declared its output trusted
//!   (`trusted_output`); a fresh word from the reporter or an admin is needed after it. It
//!   becomes the actor once the turn's calls are all made ([`end_turn`]): the model wrote
//!   every call of a turn before any of their results existed, so no result of a turn
//!   steered another call of it; the next turn's calls are checked against it.
//!   The intrinsics' results (`ask_participant`...) leave the actor as it is.

use crate::a2a::{Message, Role as MessageRole};
use crate::ext::permissions::{permits, Action};
use crate::ext::task::TaskExtension;
use crate::store::conversation::AgentState;
use crate::store::TaskRecord;

/// The actor after the model took in messages from `senders`, in order: the last one
/// without the reporter's or an admin's privilege, or else the last one. None for no
/// senders.
pub fn of_batch<'a>(
    ext: &TaskExtension,
    senders: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let senders: Vec<&str> = senders.into_iter().collect();
    let weak = (senders.iter()).rfind(|s| !permits(ext, s, Action::CallToolWithSideEffects));
    weak.or(senders.last()).map(|s| (*s).to_owned())
}

/// A party whose words entered the conversation other than as a participant's message
/// (a remote agent, a sub-task's assignee): the model now acts on them.
pub fn heard(state: &mut AgentState, party: &str) {
    state.actor = Some(party.to_owned());
}

/// The party an untrusted tool output from `server` speaks for: `mcp:` and the server's
/// name, joined by a no-break space so that it is no participant id (`ext::participant::
/// valid_id` refuses it), and no member's privilege can ever be its.
pub fn of_tool_output(server: &str) -> String {
    format!("mcp:\u{a0}{server}")
}

/// The server whose untrusted output `actor` is ([`of_tool_output`]), if it is one.
pub fn tool_output_server(actor: &str) -> Option<&str> {
    actor.strip_prefix("mcp:\u{a0}")
}

/// A tool's result entered the conversation: when its output is untrusted
/// (`Tool::untrusted_source`), the model acts on that source once the turn's calls are
/// all made ([`end_turn`]).
pub fn heard_tool(state: &mut AgentState, source: Option<&str>) {
    if let Some(server) = source {
        state.heard_in_turn = Some(of_tool_output(server));
    }
}

/// The turn's calls are all made: the last untrusted source it heard is the actor now.
pub fn end_turn(state: &mut AgentState) {
    if let Some(party) = state.heard_in_turn.take() {
        heard(state, &party);
    }
}

/// Who a sub-task's outcome comes from: its assignee ("" when it has none, or is gone:
/// no one, whom no privilege is given).
pub fn of_sub_task(child: Option<&TaskRecord>) -> String {
    (child.and_then(|c| c.ext()))
        .and_then(|e| e.assignee().map(|p| p.id.clone()))
        .unwrap_or_default()
}

/// The latest word of `actor` on the task: the last participant message (`ROLE_USER`) in
/// its history whose asserted sender is `actor`, taken in or not.
pub fn latest_word<'a>(rec: &'a TaskRecord, actor: &str) -> Option<&'a Message> {
    (rec.task.history.iter()).rfind(|m| {
        m.role == MessageRole::User && crate::ext::participant::asserted(m) == Some(actor)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::task::{Participant, ParticipantKind, Role};

    #[test]
    fn the_weakest_voice_of_a_batch_is_the_actor() {
        let mut ext = TaskExtension::from_text("x");
        for (id, role) in [
            ("rita", Role::Reporter),
            ("ada", Role::Admin),
            ("walt", Role::Watcher),
            ("wes", Role::Watcher),
        ] {
            ext.add(Participant::new(id, ParticipantKind::Human, role));
        }
        let actor = |senders: &[&str]| of_batch(&ext, senders.iter().copied());
        assert_eq!(actor(&[]), None);
        assert_eq!(actor(&["rita", "ada"]).as_deref(), Some("ada"));
        assert_eq!(actor(&["walt", "ada"]).as_deref(), Some("walt"));
        assert_eq!(
            actor(&["walt", "rita", "wes", "ada"]).as_deref(),
            Some("wes")
        );
        assert_eq!(actor(&["stranger", "ada"]).as_deref(), Some("stranger"));
    }

    #[test]
    fn an_untrusted_tool_output_speaks_for_no_participant() {
        let party = of_tool_output("docs");
        assert!(!crate::ext::participant::valid_id(&party), "{party:?}");
        assert_eq!(tool_output_server(&party), Some("docs"));
        assert_eq!(tool_output_server("mcp:docs"), None);
        let mut state = AgentState {
            actor: Some("rita".into()),
            ..Default::default()
        };
        heard_tool(&mut state, None);
        assert_eq!(state.actor.as_deref(), Some("rita"));
        heard_tool(&mut state, Some("docs"));
        // Not before the turn's calls are all made: none of them was written after it.
        assert_eq!(state.actor.as_deref(), Some("rita"));
        end_turn(&mut state);
        assert_eq!((state.actor, state.heard_in_turn), (Some(party), None));
    }
}
