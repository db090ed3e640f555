//! How large a task may grow and an answer may be: what a task holds as its bounds
//! ([`TaskBounds`]) count it, which bound a write would pass, and what a ListTasks page has
//! taken of an answer's bytes. The stores keep the first in their conditional write
//! (`layout::split`), and stop a page with the last.

use crate::config::TaskBounds;

/// Which of a task's bounds ([`TaskBounds`](crate::config::TaskBounds)) a write would
/// pass, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Messages(u64),
    Bytes(u64),
}

impl Bound {
    /// The setting that sets it.
    pub fn setting(self) -> &'static str {
        match self {
            Bound::Messages(_) => crate::config::settings::TASK_MAX_MESSAGES.env,
            Bound::Bytes(_) => crate::config::settings::TASK_MAX_BYTES.env,
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Messages(1) => f.write_str("1 message"),
            Bound::Messages(n) => write!(f, "{n} messages"),
            Bound::Bytes(n) => write!(f, "{n} bytes"),
        }
    }
}

/// What a task holds, as its bounds count it: its messages (the history and the status
/// message) and the bytes of stored JSON of those, its artifacts and the agent's
/// conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    pub messages: u64,
    pub bytes: u64,
}

/// How far the write that ends a task may take it past its bounds: its final status
/// message, if that is short. A full task can still fail (the engine's notice), be
/// canceled or complete with a short answer; it never grows after it has ended.
pub const ENDING_ALLOWANCE: Size = Size {
    messages: 1,
    bytes: super::layout::STATUS_INLINE_BYTES as u64,
};

impl Size {
    /// The bound a task growing from `was` to `self` passes, if any: only growth is
    /// refused, so a task already past a bound (lowered since) can still be written
    /// (its lease, a cancel).
    pub fn passes(self, was: Size, bounds: &TaskBounds, ending: bool) -> Option<Bound> {
        let slack = if ending {
            ENDING_ALLOWANCE
        } else {
            Size::default()
        };
        let past =
            |now: u64, was: u64, max: u64, slack: u64| now > was && now > max.saturating_add(slack);
        if past(self.messages, was.messages, bounds.messages, slack.messages) {
            Some(Bound::Messages(bounds.messages))
        } else if past(self.bytes, was.bytes, bounds.bytes, slack.bytes) {
            Some(Bound::Bytes(bounds.bytes))
        } else {
            None
        }
    }
}

/// What a ListTasks page has taken of [`RESPONSE_BYTES`](crate::config::RESPONSE_BYTES):
/// the stored JSON of its tasks as read. Its first task always goes in (a page moves on).
#[derive(Debug, Default)]
pub struct PageBytes {
    spent: usize,
    tasks: usize,
}

impl PageBytes {
    /// Whether a task read from `bytes` of stored JSON goes in the page; once one does not,
    /// the page ends before it.
    pub fn takes(&mut self, bytes: usize) -> bool {
        if self.tasks > 0 && self.spent + bytes > crate::config::RESPONSE_BYTES {
            return false;
        }
        self.spent += bytes;
        self.tasks += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_growth_past_a_bound_passes_it_and_an_ending_has_one_short_message_more() {
        let bounds = TaskBounds {
            messages: 10,
            bytes: 1000,
        };
        let at = |messages, bytes| Size { messages, bytes };
        assert_eq!(at(10, 1000).passes(at(9, 900), &bounds, false), None);
        assert_eq!(
            at(11, 1000).passes(at(10, 900), &bounds, false),
            Some(Bound::Messages(10))
        );
        assert_eq!(
            at(10, 1001).passes(at(10, 900), &bounds, false),
            Some(Bound::Bytes(1000))
        );
        // Past a bound already (lowered since) and not growing: written.
        assert_eq!(at(20, 5000).passes(at(20, 5000), &bounds, false), None);
        assert_eq!(at(20, 4000).passes(at(20, 5000), &bounds, false), None);
        // Ending: one message and 4 KiB more, no further.
        let end = ENDING_ALLOWANCE;
        let ends = at(10 + end.messages, 1000 + end.bytes);
        assert_eq!(ends.passes(at(10, 1000), &bounds, true), None);
        assert!(at(12, 1000).passes(at(10, 1000), &bounds, true).is_some());
        assert!(at(11, 1001 + end.bytes)
            .passes(at(10, 1000), &bounds, true)
            .is_some());
    }

    #[test]
    fn a_page_takes_its_first_task_whatever_its_size_then_what_fits() {
        let budget = crate::config::RESPONSE_BYTES;
        let mut page = PageBytes::default();
        assert!(page.takes(budget * 2), "the first always goes in");
        assert!(!page.takes(1));
        let mut page = PageBytes::default();
        assert!(page.takes(budget / 2));
        assert!(page.takes(budget / 2));
        assert!(!page.takes(1), "the page is full");
    }

    #[test]
    fn a_bound_names_itself_and_its_setting() {
        assert_eq!(Bound::Messages(1).to_string(), "1 message");
        assert_eq!(Bound::Messages(8).to_string(), "8 messages");
        assert_eq!(Bound::Bytes(200_000).to_string(), "200000 bytes");
        assert_eq!(Bound::Bytes(1).setting(), "HARNESS_TASK_MAX_BYTES");
    }
}
