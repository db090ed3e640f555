//! The `Redactor`: the built-in table, optionally with a deployment's extra patterns, applied
//! to text.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use regex::Regex;

use super::builtin::BUILTIN;
use super::table::{Pattern, Table};
use super::{marker, RedactError};

/// The kind of extra patterns from configuration.
pub(super) const CUSTOM: &str = "custom";

pub(super) static BUILTIN_TABLE: LazyLock<Redactor> = LazyLock::new(|| {
    let patterns = BUILTIN
        .iter()
        .map(|b| {
            // The table is a constant; `builtin_table_compiles` proves every row does.
            let regex = Regex::new(b.pattern).expect("built-in redaction pattern compiles");
            Pattern::new(b.kind, regex, b.check)
        })
        .collect();
    Redactor {
        table: Arc::new(Table::new(patterns).expect("built-in redaction table compiles")),
    }
});

/// Replaces credentials in text and JSON; see the [`redact`](super) module documentation.
#[derive(Clone, Debug)]
pub struct Redactor {
    pub(super) table: Arc<Table>,
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor::builtin()
    }
}

impl Redactor {
    /// The built-in table.
    pub fn builtin() -> Redactor {
        BUILTIN_TABLE.clone()
    }

    /// The built-in table plus extra patterns (regexes; kind "custom"), e.g. from
    /// HARNESS_REDACT_PATTERNS. A pattern with a capture group named `secret` has only that
    /// group replaced.
    pub fn with_extra(extra: &[String]) -> Result<Redactor, RedactError> {
        if extra.is_empty() {
            return Ok(Redactor::builtin());
        }
        let bad = |index: usize, reason: String| RedactError::BadPattern {
            index,
            pattern: extra[index].clone(),
            reason,
        };
        // Compiled regexes are shared, not copied: only the set is built anew.
        let mut patterns: Vec<Pattern> = BUILTIN_TABLE
            .table
            .patterns
            .iter()
            .map(|p| Pattern::new(p.kind, p.regex.clone(), p.check))
            .collect();
        for (index, source) in extra.iter().enumerate() {
            let regex = Regex::new(source).map_err(|e| bad(index, e.to_string()))?;
            patterns.push(Pattern::new(CUSTOM, regex, None));
        }
        // Each pattern compiled alone, so only the set's size limit is left to exceed:
        // blame the last pattern, which made it too big.
        let table = Table::new(patterns)
            .map_err(|e| bad(extra.len() - 1, format!("with the patterns before it: {e}")))?;
        Ok(Redactor {
            table: Arc::new(table),
        })
    }

    /// Parses the HARNESS_REDACT_PATTERNS format: one regular expression per line, each
    /// trimmed of surrounding whitespace (including a `\r` of CRLF files); blank lines are
    /// ignored. `None` (the variable unset) is the built-in table alone.
    pub fn from_env_value(value: Option<&str>) -> Result<Redactor, RedactError> {
        let extra: Vec<String> = value
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect();
        Redactor::with_extra(&extra)
    }

    /// The text with every credential replaced; `Cow::Borrowed` when nothing matched (the
    /// common case, which does not allocate).
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.table.spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        for (range, index) in spans {
            out.push_str(&text[done..range.start]);
            out.push_str(&marker(self.table.patterns[index].kind));
            done = range.end;
        }
        out.push_str(&text[done..]);
        Cow::Owned(out)
    }

    /// True when the text holds anything the table matches.
    pub fn is_match(&self, text: &str) -> bool {
        self.table.is_match(text)
    }

    pub fn redact_string(&self, text: &mut String) -> bool {
        match self.redact_str(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(redacted) => {
                *text = redacted;
                true
            }
        }
    }
}
