//! Participants and channels (seeds 000 and 001): whether a message's sender (see
//! `ext::participant`) may speak on a task, what a waiting task takes as the reply to its
//! help request, sub-tasks for participants, personal channels, and
//! the `help.decided` choice between asking and creating a task (`help`).
//!
//! A task's channel is the task itself: its members are the task's participants, a send
//! from the harness is an event in the task's log (committed before any reader sees it),
//! and a participant sends with SendMessage on the task. That medium is pulled; pushed
//! media ([`medium`](crate::engine::medium), such as a participant's [`personal`] webhook) carry the requests
//! addressed to a member to them, and bring their answers back as their messages on the
//! task. Identity is verified in `jwt` mode; otherwise self-asserted
//! (`metadata.participant_id`, else the `X-Participant-Id` header), and it fails closed.

pub mod help;
pub mod personal;
pub mod subtask;

use crate::ext::participant::{NOT_A_PARTICIPANT, NO_PARTICIPANT};
use crate::ext::task::TaskExtension;

/// How a reply to a help request reaches the model.
pub fn frame_reply(participant_id: &str, question: &str, text: &str) -> String {
    format!("Reply from {participant_id} to \"{question}\": {text}")
}

/// What happens to a message from `sender` on a task: refused (with the reason kept in
/// the audit trail) unless the sender is one of the task's participants.
pub fn admits(ext: Option<&TaskExtension>, sender: Option<&str>) -> Result<(), &'static str> {
    match sender {
        None => Err(NO_PARTICIPANT),
        Some(_) if ext.is_some_and(|e| e.is_participant(sender)) => Ok(()),
        Some(_) => Err(NOT_A_PARTICIPANT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::channel::{ChannelKind, ChannelMessage};
    use crate::ext::task::{Participant, ParticipantKind, Role};
    use crate::task::HelpRequest;

    fn ext() -> TaskExtension {
        let mut e = TaskExtension::from_text("x");
        e.add(Participant::new(
            "alice",
            ParticipantKind::Human,
            Role::Reporter,
        ));
        e
    }

    /// `test_channel_membership.py::test_non_member_rejected_without_task_existence`:
    /// a stranger, an empty and a missing sender get the same answer with or without a
    /// task, naming neither the task nor its members.
    #[test]
    fn non_member_rejected_without_task_existence() {
        let e = ext();
        for sender in [Some("mallory"), Some("")] {
            assert_eq!(admits(Some(&e), sender), Err(NOT_A_PARTICIPANT));
            assert_eq!(admits(None, sender), Err(NOT_A_PARTICIPANT));
        }
        assert_eq!(admits(Some(&e), None), admits(None, None));
        assert!(!NOT_A_PARTICIPANT.contains("alice"));
        assert_eq!(admits(Some(&e), Some("alice")), Ok(()));
    }

    #[test]
    fn a_reply_must_come_from_the_participant_asked_and_name_the_request_if_it_names_one() {
        let req = HelpRequest {
            participant_id: "alice".into(),
            question: "Which colour?".into(),
            options: vec!["red".into(), "blue".into()],
            message_id: "t:help:3".into(),
            call_id: "c1".into(),
            deadline: None,
        };
        assert_eq!(req.display(), "Which colour?\nOptions: red, blue");
        let mut e = ext();
        e.add(Participant::new(
            "bob",
            ParticipantKind::Human,
            Role::Watcher,
        ));
        e.add(Participant::new("ada", ParticipantKind::Human, Role::Admin));
        assert_eq!(req.answered_by(&e, "alice", None), Ok(true));
        assert_eq!(req.answered_by(&e, "bob", None), Ok(false));
        assert_eq!(req.answered_by(&e, "ada", None), Ok(true));
        let mut reply = ChannelMessage::new("t", "alice", ChannelKind::HelpReply, "red");
        reply.in_reply_to = Some("t:help:3".into());
        assert_eq!(req.answered_by(&e, "alice", Some(&reply)), Ok(true));
        assert_eq!(
            req.answered_by(&e, "bob", Some(&reply)),
            Err(crate::ext::permissions::ANSWER_RULE)
        );
        reply.in_reply_to = Some("t:help:9".into());
        assert_eq!(req.answered_by(&e, "alice", Some(&reply)), Ok(false));
        assert_eq!(
            frame_reply(&req.participant_id, &req.question, "red"),
            "Reply from alice to \"Which colour?\": red"
        );
    }
}
