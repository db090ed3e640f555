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
pub const ID_RULE: &str = "a participant id is 1 to 256 characters in Unicode NFC, with no \
     leading or trailing space, no space but U+0020, and no control, format (zero-width, \
     byte order mark), bidirectional, private-use, unassigned or invisible characters";

/// What [`check_id`] refuses beyond the syntax: an id that looks like (has the confusable
/// skeleton of) a reserved id or another member's, as a refusal says it.
pub const LOOKALIKE_RULE: &str = "a participant id may not look like a reserved id (the \
     harness's, one it used before, a registry agent's) or another participant's";

/// A participant id from outside is 1 to 256 characters, in NFC (refused otherwise, never
/// rewritten: two spellings of one name would be two participants), with no leading or
/// trailing whitespace (a page collapses it), no space separator but U+0020 (no-break,
/// ideographic, hair spaces...), no control (Cc), format (Cf: zero-width and bidirectional
/// controls, the byte order mark), line or paragraph separator, private-use (Co) or
/// unassigned (Cn) character, no Default_Ignorable_Code_Point (variation selectors, Hangul
/// fillers, the soft hyphen...), and none of [`BLANK`], so it can key an index, sit in a
/// log line and be shown as it is, and what is shown is all there is.
pub fn valid_id(id: &str) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    use unicode_security::{general_security_profile::IdentifierType, GeneralSecurityProfile};
    let refused = |c: char| {
        BLANK.contains(&c)
            || c.identifier_type() == Some(IdentifierType::Default_Ignorable)
            || match get_general_category(c) {
                G::SpaceSeparator => c != ' ',
                cat => matches!(
                    cat,
                    G::Control
                        | G::Format
                        | G::LineSeparator
                        | G::ParagraphSeparator
                        | G::PrivateUse
                        | G::Unassigned
                        | G::Surrogate
                ),
            }
    };
    !id.is_empty()
        && id.chars().count() <= MAX_ID_LEN
        && id.trim() == id
        && !id.chars().any(refused)
        && unicode_normalization::is_nfc(id)
}

/// Graphic characters that show as nothing and that no Unicode property above catches:
/// the Braille blank, the musical null notehead, the Khitan filler.
pub const BLANK: [char; 3] = ['\u{2800}', '\u{1d159}', '\u{16fe4}'];

/// A participant id from configuration, or why it cannot be one.
pub fn parse_id(id: &str) -> Result<String, String> {
    if valid_id(id) {
        Ok(id.to_owned())
    } else {
        Err(format!("{} is not a participant id: {ID_RULE}", shown(id)))
    }
}

/// `id` as a log line or an error may show it: escaped, and cut to 64 characters.
pub fn shown(id: &str) -> String {
    let mut s: String = id.chars().take(64).flat_map(char::escape_debug).collect();
    if id.chars().count() > 64 {
        s.push('…');
    }
    format!("\"{s}\"")
}

/// The confusable skeleton of `id` (Unicode TS #39) after folding: compatibility
/// decomposition (NFKD) and lower-casing, then without whitespace or nonspacing and
/// enclosing marks (Mn, Me), every dash (Pd) taken for `-`. Two ids with one skeleton
/// look alike: `Bob`, `ｂｏｂ`, `bοb` with a Greek ο, `b ob` and `böb` are all `bob`'s,
/// `tiny—harness` (em dash) is `tiny-harness`'s. The folding is conservative (`josé` and
/// `jose` look alike) because a look-alike is refused only against a reserved id or
/// another participant of the same task, never on its own.
pub fn skeleton(id: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let folded: String = (id.nfkd().flat_map(char::to_lowercase))
        .filter_map(fold)
        .collect();
    // Again after: a prototype may be a space (the Braille blank's) or carry a mark.
    unicode_security::skeleton(&folded)
        .filter_map(fold)
        .collect()
}

/// One character of a decomposed, lower-cased id as [`skeleton`] folds it.
fn fold(c: char) -> Option<char> {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    match get_general_category(c) {
        _ if c.is_whitespace() => None,
        G::NonspacingMark | G::EnclosingMark => None,
        G::DashPunctuation => Some('-'),
        _ => Some(c),
    }
}

/// Why [`check_id`] refused an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdRefusal {
    /// Not [`valid_id`].
    #[error("{ID_RULE}")]
    Syntax,
    /// One of the reserved ids itself.
    #[error("participant id {0} is reserved for the harness and its agents")]
    Reserved(String),
    /// Looks like a reserved id or another member's without being it.
    #[error("{LOOKALIKE_RULE}")]
    Lookalike,
    /// An envelope's sender listing themselves as an agent participant.
    #[error("{OWN_AGENT_RULE}")]
    OwnAgent,
}

/// Why an envelope may not make its own sender an agent participant, as a refusal says it.
pub const OWN_AGENT_RULE: &str = "a task envelope may not make its own sender an agent \
     participant: agents join when the harness delegates to them or someone else adds them";

/// The ids nobody from outside may be or look like: the harness's own agent id, every
/// agent id it used before, every registry agent's id. Kept with their skeletons.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reserved {
    ids: Vec<(String, String)>,
}

impl Reserved {
    pub fn new<I: IntoIterator<Item = String>>(ids: I) -> Self {
        let mut all: Vec<String> = ids.into_iter().collect();
        all.sort();
        all.dedup();
        Reserved {
            ids: all.into_iter().map(|id| (skeleton(&id), id)).collect(),
        }
    }

    /// Whether `id` is one of the reserved ids itself.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.iter().any(|(_, r)| r == id)
    }

    /// Whether `id` is reserved or looks like a reserved id.
    fn claims(&self, id: &str, skeleton: &str) -> Option<IdRefusal> {
        let (_, r) = self.ids.iter().find(|(s, _)| s == skeleton)?;
        Some(if r == id {
            IdRefusal::Reserved(r.clone())
        } else {
            IdRefusal::Lookalike
        })
    }
}

/// Whether `id` may stand for a person: [`valid_id`], not reserved, and not looking like a
/// reserved id or any of `members` other than itself. `members` are the participants
/// of the task it is checked against, so callers pass them only where the caller may
/// see the task (a refusal must not tell a stranger who is on it).
pub fn check_id<'a>(
    id: &str,
    reserved: &Reserved,
    members: impl IntoIterator<Item = &'a str>,
) -> Result<(), IdRefusal> {
    if !valid_id(id) {
        return Err(IdRefusal::Syntax);
    }
    let sk = skeleton(id);
    if let Some(refusal) = reserved.claims(id, &sk) {
        return Err(refusal);
    }
    if members.into_iter().any(|m| m != id && skeleton(m) == sk) {
        return Err(IdRefusal::Lookalike);
    }
    Ok(())
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

    /// The bad ids of issue 47, each with the part of the rule it breaks.
    #[test]
    fn ids_with_control_format_or_bidi_characters_or_not_in_nfc_are_refused() {
        let long = "a".repeat(5_000);
        let syntax = [
            ("tiny-harness\u{200b}", "zero-width space (Cf)"),
            ("bob\u{202e}evil", "right-to-left override (Cf, bidi)"),
            ("\u{feff}bob", "byte order mark (Cf)"),
            ("bob\u{2066}", "isolate (Cf, bidi)"),
            ("bob\u{200f}", "right-to-left mark (Cf, bidi)"),
            ("bob\u{1b}[31m", "ESC (Cc)"),
            ("bob\u{7f}", "DEL (Cc)"),
            ("bob\u{2028}", "line separator (Zl)"),
            ("e\u{301}", "not NFC (e + combining acute)"),
            // The review of issue 47's first pass: ids a page shows as `tiny-harness`.
            ("tiny-harness ", "trailing space (a page collapses it)"),
            (" tiny-harness", "leading space"),
            ("tiny-harness\u{a0}", "no-break space (Zs)"),
            ("tiny-harness\u{3000}", "ideographic space (Zs)"),
            ("tiny-harness\u{200a}", "hair space (Zs)"),
            ("tiny\u{2003}harness", "em space (Zs) inside"),
            ("tiny-harness\u{16fe4}", "Khitan filler (blank)"),
            ("tiny-harness\u{1d159}", "musical null notehead (blank)"),
            ("tiny-harness\u{2800}", "Braille blank"),
            ("tiny-harness\u{e000}", "private use (Co)"),
            ("tiny-harness\u{50000}", "unassigned (Cn)"),
            (
                "tiny-harness\u{fe0f}",
                "variation selector (Default_Ignorable)",
            ),
            (
                "tiny-harness\u{e0100}",
                "variation selector supplement (Default_Ignorable)",
            ),
            (
                "tiny-harness\u{3164}",
                "Hangul filler (Default_Ignorable, Lo)",
            ),
            ("tiny-harness\u{ad}", "soft hyphen (Default_Ignorable)"),
            (
                "tiny-harness\u{34f}",
                "combining grapheme joiner (Default_Ignorable)",
            ),
            (
                "tiny-harness\u{180b}",
                "Mongolian variation selector (Default_Ignorable)",
            ),
            ("tiny-harness\t", "tab (Cc, trailing)"),
            (long.as_str(), "5,000 characters"),
            ("", "empty"),
        ];
        for (id, why) in syntax {
            assert!(!valid_id(id), "{why} accepted");
            assert_eq!(
                check_id(id, &Reserved::default(), []),
                Err(IdRefusal::Syntax)
            );
            assert!(parse_id(id).is_err(), "{why}");
        }
        let fine = [
            "bob",
            "é",
            "Zoë Ng",
            "用户-1",
            "bob@example.com",
            "user:123",
            "山田 太郎",
            "josé",
            &"a".repeat(MAX_ID_LEN),
        ];
        for id in fine {
            assert!(valid_id(id), "{id} refused");
        }
    }

    #[test]
    fn an_id_that_looks_like_a_reserved_id_or_another_members_is_refused() {
        let reserved = Reserved::new(["tiny-harness".to_owned(), "research-bot".to_owned()]);
        assert_eq!(
            check_id("tiny-harness", &reserved, []),
            Err(IdRefusal::Reserved("tiny-harness".into()))
        );
        // Cyrillic і (U+0456), Greek ο, and rn for m.
        for lookalike in ["t\u{456}ny-harness", "research-b\u{3bf}t"] {
            assert_eq!(
                check_id(lookalike, &reserved, []),
                Err(IdRefusal::Lookalike),
                "{lookalike}"
            );
        }
        // Case and compatibility forms (fullwidth) fold too.
        for lookalike in ["Tiny-Harness", "\u{ff54}iny-harness"] {
            assert_eq!(
                check_id(lookalike, &reserved, []),
                Err(IdRefusal::Lookalike),
                "{lookalike}"
            );
        }
        // Dashes, spaces and marks fold: an em dash, a fullwidth hyphen, a space after the
        // dash, an accent.
        for lookalike in [
            "tiny\u{2014}harness",
            "tiny\u{ff0d}harness",
            "tiny\u{2010}harness",
            "tiny- harness",
            "tiny-harn\u{e9}ss",
            "t\u{12d}ny-harness",
        ] {
            assert_eq!(
                check_id(lookalike, &reserved, []),
                Err(IdRefusal::Lookalike),
                "{lookalike}"
            );
        }
        // Conservative, so only against a reserved id or someone on the same task.
        assert_eq!(
            check_id("jos\u{e9}", &reserved, ["jose"]),
            Err(IdRefusal::Lookalike)
        );
        assert_eq!(check_id("jos\u{e9}", &reserved, ["bob"]), Ok(()));
        assert_eq!(skeleton("Zo\u{eb} Ng"), skeleton("zoeng"));
        assert_eq!(
            check_id("rnallory", &reserved, ["mallory"]),
            Err(IdRefusal::Lookalike)
        );
        // A member is not their own lookalike; unrelated ids pass.
        assert_eq!(check_id("mallory", &reserved, ["mallory", "bob"]), Ok(()));
        assert_eq!(check_id("alice", &reserved, ["bob"]), Ok(()));
        assert!(reserved.contains("research-bot") && !reserved.contains("bob"));
    }

    #[test]
    fn an_id_is_shown_escaped_and_cut() {
        assert_eq!(shown("bob\u{202e}x"), "\"bob\\u{202e}x\"");
        assert!(shown(&"a".repeat(5_000)).chars().count() < 70);
    }
}
