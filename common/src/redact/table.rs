//! The compiled table: each `Pattern` with the group it replaces, and the `Table` that
//! finds every range to replace in one pass and merges overlaps.

use std::ops::{ControlFlow, Range};

use regex::{Regex, RegexSet};

/// A compiled row: builtin or extra.
#[derive(Debug)]
pub(super) struct Pattern {
    pub(super) kind: &'static str,
    pub(super) regex: Regex,
    /// The capture group replaced instead of the whole match, where it took part.
    group: Option<usize>,
    pub(super) check: Option<fn(&str) -> bool>,
}

impl Pattern {
    pub(super) fn new(
        kind: &'static str,
        regex: Regex,
        check: Option<fn(&str) -> bool>,
    ) -> Pattern {
        let group = regex
            .capture_names()
            .position(|name| name == Some("secret"));
        Pattern {
            kind,
            regex,
            group,
            check,
        }
    }

    /// Calls `found` with the byte range of every value to replace, until it breaks.
    fn each(
        &self,
        text: &str,
        mut found: impl FnMut(Range<usize>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut consider = |range: Range<usize>| {
            // An empty match (possible with an extra pattern) has nothing to hide.
            if range.is_empty() || self.check.is_some_and(|check| !check(&text[range.clone()])) {
                return ControlFlow::Continue(());
            }
            found(range)
        };
        match self.group {
            // Capturing is slower than finding: only the patterns that need it do.
            None => self
                .regex
                .find_iter(text)
                .try_for_each(|m| consider(m.range())),
            Some(group) => self
                .regex
                .captures_iter(text)
                // A group in an alternative that did not match: the whole match.
                .filter_map(|caps| caps.get(group).or_else(|| caps.get(0)))
                .try_for_each(|m| consider(m.range())),
        }
    }
}

#[derive(Debug)]
pub(super) struct Table {
    /// Every pattern at once: most text matches none, and one pass over it says so.
    set: RegexSet,
    pub(super) patterns: Vec<Pattern>,
}

impl Table {
    pub(super) fn new(patterns: Vec<Pattern>) -> Result<Table, regex::Error> {
        let set = RegexSet::new(patterns.iter().map(|p| p.regex.as_str()))?;
        Ok(Table { set, patterns })
    }

    /// The ranges to replace, sorted and disjoint, each with the index of the pattern that
    /// names it. Overlapping matches are merged so no part of either is left shown; the
    /// earliest (then longest, then first in the table) names the merged range.
    pub(super) fn spans(&self, text: &str) -> Vec<(Range<usize>, usize)> {
        if !self.set.is_match(text) {
            return Vec::new();
        }
        let mut found = Vec::new();
        for index in self.set.matches(text).iter() {
            let _ = self.patterns[index].each(text, |range| {
                found.push((range, index));
                ControlFlow::Continue(())
            });
        }
        found.sort_unstable_by_key(|(range, index)| {
            (range.start, std::cmp::Reverse(range.end), *index)
        });
        let mut merged: Vec<(Range<usize>, usize)> = Vec::with_capacity(found.len());
        for (range, index) in found {
            match merged.last_mut() {
                Some((last, _)) if range.start < last.end => last.end = last.end.max(range.end),
                _ => merged.push((range, index)),
            }
        }
        merged
    }

    pub(super) fn is_match(&self, text: &str) -> bool {
        self.set.is_match(text)
            && self.set.matches(text).iter().any(|index| {
                self.patterns[index]
                    .each(text, |_| ControlFlow::Break(()))
                    .is_break()
            })
    }
}
