//! Participant ids and the message metadata that names them (channel extension v1, seed
//! 001): who a message says it is from, whom the harness addresses it to, and what an id
//! from outside may be.

use crate::a2a::Message;

/// The message metadata key naming its sender.
pub const PARTICIPANT_KEY: &str = "participant_id";
/// The header naming the participant a request comes from.
pub const PARTICIPANT_HEADER: &str = "x-participant-id";
/// Why a message with no sender is refused (the wire text of the -32602 error).
pub const NO_PARTICIPANT: &str = "no participant asserted";
/// Why a message from a non-member is refused (audit and the waiting task's status).
pub const NOT_A_PARTICIPANT: &str = "not a participant";
/// Longest participant id accepted: the bound on every name a request carries.
pub const MAX_ID_LEN: usize = crate::a2a::validate::ID_CHARS;

/// The message metadata key naming whom a message from the harness is addressed to: the
/// participant a help request asks, the assignee a sub-task waits on. The channel part's
/// schema is closed, so the addressee travels beside it, in the message's metadata.
pub const ADDRESSEE_KEY: &str = "addressee";

/// Whom a message is addressed to ([`ADDRESSEE_KEY`]), if anyone.
pub fn addressee(message: &Message) -> Option<&str> {
    (message.metadata.as_ref()?.get(ADDRESSEE_KEY)?.as_str()).filter(|s| !s.is_empty())
}

/// Addresses `message` to `participant`.
pub fn address_to(message: &mut Message, participant: &str) {
    message
        .metadata
        .get_or_insert_with(Default::default)
        .insert(ADDRESSEE_KEY.into(), participant.into());
}

/// The participant a message names in its metadata, if any (an empty string is none).
pub fn asserted(message: &Message) -> Option<&str> {
    message
        .metadata
        .as_ref()?
        .get(PARTICIPANT_KEY)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// What [`valid_id`] asks, as a refusal says it.
pub const ID_RULE: &str = "a participant id is 1 to 256 characters with no control characters";

/// A participant id from outside is at most 256 characters with no control characters
/// (so it can key an index and sit in a log line).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.chars().count() <= MAX_ID_LEN && !id.chars().any(char::is_control)
}

/// A participant id from configuration, or why it cannot be one.
pub fn parse_id(id: &str) -> Result<String, String> {
    if valid_id(id) {
        Ok(id.to_owned())
    } else {
        Err(format!(
            "{id:?} is not a participant id (1 to {MAX_ID_LEN} characters, no control characters)"
        ))
    }
}

/// Records `sender` as the message's asserted participant, so the stored message says who
/// sent it even when only a header (or the default) named them.
pub fn assert_sender(message: &mut Message, sender: &str) {
    message
        .metadata
        .get_or_insert_with(Default::default)
        .insert(PARTICIPANT_KEY.into(), sender.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_from_outside_has_no_control_characters_and_is_not_empty() {
        assert!(valid_id("u-1") && !valid_id("a\nb") && !valid_id(""));
    }
}
