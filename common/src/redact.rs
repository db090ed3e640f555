//! Redaction at intake: credential-shaped values are replaced by a marker before anything
//! is stored, audited, shown to a model, sent to a webhook or logged. Callers apply a
//! [`Redactor`] where text enters the harness (client messages, tool results, log fields);
//! this module is the one detector they share, so what counts as a credential is decided
//! here and nowhere else.
//!
//! The detector is a table of named patterns (kinds), each with its own test of true
//! positives and of look-alikes that must stay as they are. A value is replaced by
//! `[REDACTED:<kind>]`, e.g. `[REDACTED:aws-access-key]` (see [`marker`]); where a pattern
//! needs context (the word `Bearer`, a URL's user and host, the name of an AWS secret key)
//! only the value is replaced and the context is kept. No marker matches any pattern of the
//! table, so redacting twice changes nothing the second time.
//!
//! Deployments add patterns with `HARNESS_REDACT_PATTERNS` ([`Redactor::from_env_value`]):
//! one regular expression (Rust `regex` syntax) per line; blank lines are ignored and each
//! line is trimmed (write `\x20` for a space at either end). An extra pattern's kind is
//! `custom`; the whole match is replaced, or only its capture group named `secret` where
//! that took part (e.g. `ticket=(?P<secret>[0-9]{12})`). Extra patterns should not match the
//! markers themselves, or a second pass would redact the marker.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::{ControlFlow, Range};
use std::sync::{Arc, LazyLock, OnceLock};

use regex::{Regex, RegexSet};
use serde_json::{Map, Value};

/// The marker that replaces a value: `[REDACTED:<kind>]`, e.g. `[REDACTED:aws-access-key]`.
pub fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    /// Extra pattern number `index` (0-based, among the extra patterns; blank lines of
    /// `HARNESS_REDACT_PATTERNS` are not counted) does not compile.
    #[error("redaction pattern {index} ({pattern:?}) is not a valid regular expression: {reason}")]
    BadPattern {
        index: usize,
        pattern: String,
        reason: String,
    },
}

/// The kind of extra patterns from configuration.
const CUSTOM: &str = "custom";

/// The names under which an AWS secret access key is assigned (`aws_secret_access_key`,
/// `AWS_SECRET_ACCESS_KEY`, `SecretAccessKey`, `secret_key`, `aws_secret`), shared by the
/// text pattern and the JSON member check so they agree.
macro_rules! aws_secret_name {
    () => {
        r"(?i:secret[_-]?(?:access[_-]?)?key|aws[_-]?secret)"
    };
}

/// One row of the built-in table.
struct Builtin {
    kind: &'static str,
    /// The whole match is replaced, or only the group named `secret` when it took part.
    pattern: &'static str,
    /// A further test of the replaced text, for bounds a regex cannot say.
    check: Option<fn(&str) -> bool>,
}

// `(?-u:\b)` is an ASCII word boundary: Unicode `\b` makes the fast regex engines give up
// on non-ASCII text, and every message goes through this table.
/// The built-in table. More specific kinds come first: when two patterns match the same
/// text, the earlier one names it (an Anthropic key is also `sk-`-shaped; a JWT after
/// `Bearer` is reported as a JWT).
const BUILTIN: &[Builtin] = &[
    // PEM private keys (PKCS#1/#8, EC, DSA, OpenSSH, encrypted, PGP): the whole block,
    // armour lines included, across lines. A block whose END line is missing (a truncated
    // paste or log line) is redacted to the end of the text (or of the JSON string it is
    // in: a `"`) rather than left half-shown.
    // Public keys and certificates say PUBLIC KEY / CERTIFICATE and are left alone.
    Builtin {
        kind: "private-key",
        pattern: r#"(?s)-----BEGIN (?:(?:RSA|EC|OPENSSH|DSA|ENCRYPTED) )?PRIVATE KEY-----(?:.*?-----END (?:(?:RSA|EC|OPENSSH|DSA|ENCRYPTED) )?PRIVATE KEY-----|[^"]*)|-----BEGIN PGP PRIVATE KEY BLOCK-----(?:.*?-----END PGP PRIVATE KEY BLOCK-----|[^"]*)"#,
        check: None,
    },
    // Anthropic API keys: `sk-ant-` (e.g. `sk-ant-api03-…`) and 20 or more key characters.
    // Before openai-key, which matches the same text.
    Builtin {
        kind: "anthropic-key",
        pattern: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        check: Some(not_words),
    },
    // OpenAI keys: `sk-` and 20 or more key characters, which takes in `sk-proj-…`,
    // `sk-svcacct-…` and `sk-admin-…`. The leading word boundary keeps out `task-…` and
    // `disk-…`; the length keeps out `sk-1`; `not_words` keeps out hyphenated prose that
    // happens to start with `sk-` (`sk-learn-…`).
    Builtin {
        kind: "openai-key",
        pattern: r"(?-u:\b)sk-[A-Za-z0-9_-]{20,}",
        check: Some(not_words),
    },
    // Stripe live secret and restricted keys: `sk_live_` / `rk_live_` and 24 or more
    // alphanumerics. Test-mode and publishable keys are not secrets of a live account.
    Builtin {
        kind: "stripe-key",
        pattern: r"(?-u:\b)[sr]k_live_[A-Za-z0-9]{24,}",
        check: None,
    },
    // GitHub tokens: classic ones are a `gh?_` prefix and 36 alphanumerics (more are
    // taken: the prefix alone is distinctive), fine-grained ones `github_pat_` and 22 or
    // more (in fact 82) characters. `ghp_short` is too short.
    Builtin {
        kind: "github-token",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        check: None,
    },
    // Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxo-`, `xoxs-`, `xoxr-` and 10 or more
    // characters; `not_words` keeps out prose such as `xoxo-hugs-and-kisses`), and
    // incoming-webhook URLs, whose path after `/services/` is the credential: the host is
    // kept so a reader still sees that a Slack webhook was there.
    Builtin {
        kind: "slack-token",
        pattern: r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/(?P<secret>T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+)",
        check: Some(not_words),
    },
    // Google API keys: `AIza` and exactly 35 characters. The character after is consumed
    // (the regex crate has no look-ahead), so a longer run of key characters is not a key.
    Builtin {
        kind: "google-api-key",
        pattern: r"(?-u:\b)(?P<secret>AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)",
        check: None,
    },
    // AWS access key ids: a long-term (`AKIA`), temporary (`ASIA`) or other documented
    // prefix and 16 upper-case alphanumerics, a whole word: `AKIAEXAMPLE` is too short and
    // key ids are never lower case.
    Builtin {
        kind: "aws-access-key",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)",
        check: None,
    },
    // AWS secret access keys: 40 base64 characters look like many other things (a git
    // commit id is 40 hex digits), so only where they are assigned to a name that says so:
    // `aws_secret_access_key = …`, `AWS_SECRET_ACCESS_KEY=…`, `"SecretAccessKey": "…"`
    // (also with JSON-escaped quotes), `secret_key: …`, `aws configure set
    // aws_secret_access_key …`. Only the value is replaced; exactly 40 characters (the one
    // after is consumed, for want of look-ahead).
    Builtin {
        kind: "aws-secret-key",
        pattern: concat!(
            aws_secret_name!(),
            r#"(?:\\?["'])?[ \t]*(?:=>|[:= \t])[ \t]*(?:\\?["'])?(?P<secret>[A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#
        ),
        check: None,
    },
    // JWTs (and so most OAuth access and ID tokens): a header and a payload that are both
    // base64url of a JSON object (`{"` encodes as `eyJ`) and a signature. Two `eyJ`
    // segments keep out version numbers and anything else with dots.
    Builtin {
        kind: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        check: None,
    },
    // Bearer tokens: the token after `Bearer` (any case), 16 or more token68 characters
    // (RFC 7235); the word is kept. `not_words` keeps out prose such as "bearer
    // authentication-mechanisms"; "the bearer of this letter" is too short anyway.
    Builtin {
        kind: "bearer-token",
        pattern: r"(?-u:\b)(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        check: Some(not_words),
    },
    // Passwords in URLs: `scheme://user:password@host`; scheme, user and host are kept. The
    // user has no `:` and the password runs to the last `@` before the path, so a port
    // (`https://example.com:8080/path`) is not a password, and `mailto:a@b.c` or
    // `user@host` have no `://user:`. Neither may hold `[` or `]` (they are escaped in a
    // URL's user info), which keeps the marker itself out.
    Builtin {
        kind: "url-password",
        pattern: r#"://[^\s:/?#@\[\]"',{}]*:(?P<secret>[^\s/?#\[\]"',{}\\]+)@[^\s/?#@"]"#,
        check: None,
    },
];

/// False for text made of words: every `-`, `_` or `.` separated part is letters, upper
/// case only at its start (`sk-learn-tutorial`, `Authentication-Required`). Generated keys
/// and tokens mix in digits or capitals, so this drops prose that fits a pattern's shape.
fn not_words(text: &str) -> bool {
    !text.split(['-', '_', '.']).all(|part| {
        let mut chars = part.chars();
        chars
            .next()
            .is_none_or(|c| c.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_lowercase()))
    })
}

/// A compiled row: builtin or extra.
#[derive(Debug)]
struct Pattern {
    kind: &'static str,
    regex: Regex,
    /// The capture group replaced instead of the whole match, where it took part.
    group: Option<usize>,
    check: Option<fn(&str) -> bool>,
}

impl Pattern {
    fn new(kind: &'static str, regex: Regex, check: Option<fn(&str) -> bool>) -> Pattern {
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
struct Table {
    /// Every pattern at once: most text matches none, and one pass over it says so.
    set: RegexSet,
    patterns: Vec<Pattern>,
}

impl Table {
    fn new(patterns: Vec<Pattern>) -> Result<Table, regex::Error> {
        let set = RegexSet::new(patterns.iter().map(|p| p.regex.as_str()))?;
        Ok(Table { set, patterns })
    }

    /// The ranges to replace, sorted and disjoint, each with the index of the pattern that
    /// names it. Overlapping matches are merged so no part of either is left shown; the
    /// earliest (then longest, then first in the table) names the merged range.
    fn spans(&self, text: &str) -> Vec<(Range<usize>, usize)> {
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

    fn is_match(&self, text: &str) -> bool {
        self.set.is_match(text)
            && self.set.matches(text).iter().any(|index| {
                self.patterns[index]
                    .each(text, |_| ControlFlow::Break(()))
                    .is_break()
            })
    }
}

static BUILTIN_TABLE: LazyLock<Redactor> = LazyLock::new(|| {
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

/// The name of a JSON member whose value is an AWS secret access key.
static AWS_SECRET_MEMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(aws_secret_name!()).expect("built-in redaction pattern compiles"));

/// Replaces credentials in text and JSON; see the module documentation.
#[derive(Clone, Debug)]
pub struct Redactor {
    table: Arc<Table>,
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

    /// Redacts every string value inside the JSON value in place (object values, array
    /// items, nested), and object keys too (a key that is a credential is renamed to its
    /// redacted form). Returns true when anything changed.
    ///
    /// A member named like an AWS secret key (`"SecretAccessKey"`, `"aws_secret_access_key"`)
    /// whose value is 40 key characters has it replaced: in JSON the name and the value are
    /// separate strings, so the text pattern cannot see them together. A renamed key that
    /// would collide with another key gets a ` (2)`, ` (3)`, … suffix, so no value is lost.
    pub fn redact_json(&self, value: &mut Value) -> bool {
        match value {
            Value::String(text) => self.redact_string(text),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.redact_json(item) | changed),
            Value::Object(members) => self.redact_object(members),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
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

    fn redact_object(&self, members: &mut Map<String, Value>) -> bool {
        let mut changed = false;
        let mut rename = false;
        for (key, value) in members.iter_mut() {
            match value {
                Value::String(text) if is_aws_secret_member(key, text) => {
                    *text = marker("aws-secret-key");
                    changed = true;
                }
                _ => changed |= self.redact_json(value),
            }
            rename |= self.is_match(key);
        }
        if rename {
            self.rename_keys(members);
        }
        changed | rename
    }

    /// Rebuilds `members` with redacted keys, in their order (a map with preserved order
    /// would move a key removed and inserted again to the end).
    fn rename_keys(&self, members: &mut Map<String, Value>) {
        let old = std::mem::take(members);
        let renamed: Vec<Option<String>> = old
            .keys()
            .map(|key| match self.redact_str(key) {
                Cow::Borrowed(_) => None,
                Cow::Owned(redacted) => Some(redacted),
            })
            .collect();
        // Keys that stay keep their name; a renamed key gives way to them.
        let kept: HashSet<String> = old
            .keys()
            .zip(&renamed)
            .filter(|(_, new)| new.is_none())
            .map(|(key, _)| key.clone())
            .collect();
        // The next suffix to try for each redacted base: many keys redacted to the same
        // marker cost one probe each, not one per key before them.
        let mut next: std::collections::HashMap<String, usize> = Default::default();
        for ((key, value), new) in old.into_iter().zip(renamed) {
            let key = match new {
                None => key,
                Some(base) => {
                    let n = next.entry(base.clone()).or_insert(1);
                    let mut key = if *n == 1 {
                        base.clone()
                    } else {
                        format!("{base} ({n})")
                    };
                    while kept.contains(&key) || members.contains_key(&key) {
                        *n += 1;
                        key = format!("{base} ({n})");
                    }
                    *n += 1;
                    key
                }
            };
            members.insert(key, value);
        }
    }
}

/// The redactor of this process: the built-in table plus the deployment's extra
/// patterns, installed once at start-up ([`install`]); the built-in table until then.
static ACTIVE: OnceLock<Redactor> = OnceLock::new();

/// Makes `redactor` the one this process applies everywhere. The first call wins (a
/// process has one configuration); false when one was already installed.
pub fn install(redactor: Redactor) -> bool {
    ACTIVE.set(redactor).is_ok()
}

/// The redactor of this process.
pub fn active() -> &'static Redactor {
    ACTIVE.get().unwrap_or(&BUILTIN_TABLE)
}

impl Redactor {
    /// Redacts a request's metadata (a message's, a part's, a cancel's).
    pub fn metadata(&self, metadata: &mut Option<Map<String, Value>>) -> bool {
        metadata
            .as_mut()
            .is_some_and(|members| self.redact_object(members))
    }
}

/// A log writer that redacts what it writes: a formatter writes each event in one call,
/// so a whole line is seen at once.
pub struct RedactingWriter<W>(pub W);

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => self.0.write_all(active().redact_str(text).as_bytes())?,
            Err(_) => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// A member named like an AWS secret key whose whole value is one.
fn is_aws_secret_member(key: &str, value: &str) -> bool {
    value.len() == 40
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'='))
        && AWS_SECRET_MEMBER.is_match(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Synthetic values only. Prefixes are split with `concat!` so that secret scanners
    // reading this file do not take the test values for leaked credentials.
    const OPENAI: &str = concat!("sk-", "proj-", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z");
    const OPENAI_LEGACY: &str = concat!("sk-", "T3stT3stT3stT3stT3stT3stT3stT3stT3stT3stT3stT3st");
    const ANTHROPIC: &str = concat!("sk-", "ant-", "api03-Synthetic0Key0For0Tests0Only-AAAA");
    const AWS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
    const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const JWT: &str = concat!(
        "eyJ",
        "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
        "eyJ",
        "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IlRlc3QifQ.",
        "c2lnbmF0dXJlLW9mLWEtdGVzdC10b2tlbg"
    );
    const GITHUB: &str = concat!("gh", "p_", "0123456789abcdefghijABCDEFGHIJ012345");
    const GITHUB_PAT: &str = concat!(
        "github_",
        "pat_",
        "11AAAAAAA0000000000000_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW"
    );
    const SLACK: &str = concat!(
        "xo",
        "xb-",
        "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
    );
    const SLACK_HOOK_PATH: &str = concat!("T0000", "0000/B0000", "0000/XXXXXXXXXXXXXXXXXXXXXXXX");
    const GOOGLE: &str = concat!("AI", "za", "SyD-Synthetic_Key_For_Tests_0123456");
    const STRIPE: &str = concat!("sk", "_live_", "51Synthetic0Test0Value0AbCdEf");
    const PRIVATE_KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\n\
        MIIEowIBAAKCAQEAsyntheticsyntheticsyntheticsyntheticsynthetic\n\
        c3ludGhldGljIHRlc3Qga2V5IGJvZHkgbm90IGEgcmVhbCBrZXk=\n\
        -----END RSA PRIVATE KEY-----";

    fn r() -> Redactor {
        Redactor::builtin()
    }

    /// `input` redacts to `expected`, and `expected` is left as it is (idempotence).
    #[track_caller]
    fn redacts(input: &str, expected: &str) {
        let redactor = r();
        let once = redactor.redact_str(input);
        assert!(matches!(once, Cow::Owned(_)), "{input:?} was not redacted");
        assert_eq!(once, expected, "redacting {input:?}");
        assert!(redactor.is_match(input), "{input:?}");
        assert!(
            matches!(redactor.redact_str(&once), Cow::Borrowed(_)),
            "{once:?} redacted again"
        );
        assert!(!redactor.is_match(&once), "{once:?}");
    }

    #[track_caller]
    fn untouched(input: &str) {
        let redactor = r();
        assert!(
            matches!(redactor.redact_str(input), Cow::Borrowed(_)),
            "{input:?} was redacted to {:?}",
            redactor.redact_str(input)
        );
        assert!(!redactor.is_match(input), "{input:?}");
    }

    #[test]
    fn builtin_table_compiles() {
        for b in BUILTIN {
            Regex::new(b.pattern).unwrap_or_else(|e| panic!("{}: {e}", b.kind));
        }
        assert_eq!(r().table.patterns.len(), BUILTIN.len());
        let kinds: HashSet<&str> = BUILTIN.iter().map(|b| b.kind).collect();
        assert_eq!(kinds.len(), BUILTIN.len(), "kinds are unique");
    }

    #[test]
    fn the_marker_names_the_kind() {
        assert_eq!(marker("aws-access-key"), "[REDACTED:aws-access-key]");
    }

    #[test]
    fn no_marker_matches_the_table() {
        for b in BUILTIN.iter().map(|b| b.kind).chain([CUSTOM]) {
            let m = marker(b);
            untouched(&m);
            // Also where each pattern's context is.
            untouched(&format!("Authorization: Bearer {m}"));
            untouched(&format!("https://user:{m}@example.com/"));
            untouched(&format!("aws_secret_access_key = {m}"));
            untouched(&format!("https://hooks.slack.com/services/{m}"));
        }
    }

    #[test]
    fn openai_keys() {
        redacts(OPENAI, "[REDACTED:openai-key]");
        redacts(
            &format!("OPENAI_API_KEY={OPENAI_LEGACY}\n"),
            "OPENAI_API_KEY=[REDACTED:openai-key]\n",
        );
        redacts(
            &format!(
                "key \"{}\" rotated",
                concat!("sk-", "svcacct-", "Zz9_Yy8-Xx7_Ww6-Vv5Uu4")
            ),
            "key \"[REDACTED:openai-key]\" rotated",
        );
        untouched("sk-1");
        untouched("task-12345678901234567890123");
        untouched("disk-usage-report-for-the-whole-cluster");
        untouched("we use sk-learn for this");
        untouched("sk-learn-is-a-python-library-for-ml");
    }

    #[test]
    fn anthropic_keys_win_over_openai() {
        redacts(ANTHROPIC, "[REDACTED:anthropic-key]");
        redacts(
            &format!("x-api-key: {ANTHROPIC}"),
            "x-api-key: [REDACTED:anthropic-key]",
        );
        untouched("sk-ant-colony-simulation-project");
        untouched("sk-ant-1");
    }

    #[test]
    fn aws_access_key_ids() {
        redacts(AWS_KEY_ID, "[REDACTED:aws-access-key]");
        redacts(
            "AWS_ACCESS_KEY_ID=ASIAY34FZKBOKMUTVV7A",
            "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key]",
        );
        redacts(
            &format!("{{\"AccessKeyId\":\"{AWS_KEY_ID}\"}}"),
            "{\"AccessKeyId\":\"[REDACTED:aws-access-key]\"}",
        );
        untouched("AKIAEXAMPLE");
        untouched("akiaiosfodnn7example");
        // Longer than a key id: some other identifier.
        untouched("AKIAIOSFODNN7EXAMPLE0");
        untouched("XAKIAIOSFODNN7EXAMPLE");
    }

    #[test]
    fn aws_secret_keys_only_where_named() {
        let m = "[REDACTED:aws-secret-key]";
        redacts(
            &format!("aws_secret_access_key = {AWS_SECRET}"),
            &format!("aws_secret_access_key = {m}"),
        );
        redacts(
            &format!("export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"),
            &format!("export AWS_SECRET_ACCESS_KEY={m}\n"),
        );
        redacts(
            &format!("{{\"SecretAccessKey\": \"{AWS_SECRET}\", \"x\": 1}}"),
            &format!("{{\"SecretAccessKey\": \"{m}\", \"x\": 1}}"),
        );
        redacts(
            &format!(r#"{{\"SecretAccessKey\":\"{AWS_SECRET}\"}}"#),
            &format!(r#"{{\"SecretAccessKey\":\"{m}\"}}"#),
        );
        redacts(
            &format!("secret_key: '{AWS_SECRET}'"),
            &format!("secret_key: '{m}'"),
        );
        redacts(
            &format!("aws configure set aws_secret_access_key {AWS_SECRET}"),
            &format!("aws configure set aws_secret_access_key {m}"),
        );
        untouched(AWS_SECRET);
        untouched("commit 0123456789abcdef0123456789abcdef01234567");
        untouched("0123456789abcdef0123456789abcdef01234567");
        // 41 characters is not a secret access key.
        untouched(&format!("secret_key = {AWS_SECRET}A"));
        untouched("the secret key is in the vault");
    }

    #[test]
    fn bearer_tokens_keep_the_word() {
        redacts(
            "Authorization: Bearer abcdef0123456789ABCDEF",
            "Authorization: Bearer [REDACTED:bearer-token]",
        );
        redacts(
            "curl -H 'authorization: bearer 123e4567-e89b-12d3-a456-426614174000'",
            "curl -H 'authorization: bearer [REDACTED:bearer-token]'",
        );
        redacts(
            "BEARER dGVzdC10b2tlbi0xMjM0NTY3OA==",
            "BEARER [REDACTED:bearer-token]",
        );
        // A JWT after Bearer is named as the JWT.
        redacts(&format!("Bearer {JWT}"), "Bearer [REDACTED:jwt]");
        untouched("the bearer of this letter");
        untouched("bearer authentication-mechanisms are described in RFC 6750");
        untouched("Bearer short");
    }

    #[test]
    fn jwts() {
        redacts(JWT, "[REDACTED:jwt]");
        redacts(
            &format!("id_token={JWT}&state=x"),
            "id_token=[REDACTED:jwt]&state=x",
        );
        untouched("eyJ");
        untouched("eyJ.eyJ.abc");
        untouched("version 1.2.3 and 10.20.30.40");
        untouched("eyJhbGciOiJIUzI1NiJ9 alone is a header");
    }

    #[test]
    fn private_key_blocks() {
        redacts(PRIVATE_KEY, "[REDACTED:private-key]");
        redacts(
            &format!("key:\n{PRIVATE_KEY}\nthanks"),
            "key:\n[REDACTED:private-key]\nthanks",
        );
        for label in ["EC ", "OPENSSH ", "DSA ", "ENCRYPTED ", ""] {
            redacts(
                &format!(
                    "-----BEGIN {label}PRIVATE KEY-----\nMIIBsynthetic==\n-----END {label}PRIVATE KEY-----"
                ),
                "[REDACTED:private-key]",
            );
        }
        redacts(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBsynthetic\n-----END PGP PRIVATE KEY BLOCK-----",
            "[REDACTED:private-key]",
        );
        // In a JSON string, with escaped newlines.
        redacts(
            r#"{"key":"-----BEGIN PRIVATE KEY-----\nMIIEvsynthetic\n-----END PRIVATE KEY-----\n"}"#,
            r#"{"key":"[REDACTED:private-key]\n"}"#,
        );
        // Truncated: everything after BEGIN goes.
        redacts(
            "start\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
            "start\n[REDACTED:private-key]",
        );
        untouched(
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC\n-----END PUBLIC KEY-----",
        );
        untouched("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----");
        untouched("a PRIVATE KEY is something you keep to yourself");
    }

    #[test]
    fn passwords_in_urls() {
        redacts(
            "postgres://admin:s3cr3t-P4ss@db.example.com:5432/app",
            "postgres://admin:[REDACTED:url-password]@db.example.com:5432/app",
        );
        redacts(
            "redis://:hunter2hunter2@cache.internal:6379",
            "redis://:[REDACTED:url-password]@cache.internal:6379",
        );
        redacts(
            "git clone https://bot:p@ss@git.example.com/repo.git",
            "git clone https://bot:[REDACTED:url-password]@git.example.com/repo.git",
        );
        redacts(
            "see http://u:pw@[::1]:8080/ and https://example.com/",
            "see http://u:[REDACTED:url-password]@[::1]:8080/ and https://example.com/",
        );
        untouched("https://example.com:8080/path");
        untouched("https://example.com:8080/path?from=a@b.c");
        untouched("mailto:a@b.c");
        untouched("user@host");
        untouched("ssh://git@github.com/owner/repo.git");
        untouched("https://user@example.com/");
        untouched("http://[::1]:8080/x@y");
    }

    #[test]
    fn github_tokens() {
        redacts(GITHUB, "[REDACTED:github-token]");
        redacts(
            &format!(
                "token: {}",
                concat!("gh", "s_", "abcdefghijklmnopqrstuvwxyz0123456789AB")
            ),
            "token: [REDACTED:github-token]",
        );
        redacts(GITHUB_PAT, "[REDACTED:github-token]");
        untouched("ghp_short");
        untouched(concat!("gh", "p_", "0123456789abcdefghijABCDEFGHIJ01234"));
        untouched("github_pat_short");
    }

    #[test]
    fn slack_tokens_and_webhooks() {
        redacts(SLACK, "[REDACTED:slack-token]");
        redacts(
            &format!(
                "SLACK_TOKEN={}",
                concat!("xo", "xp-", "0000000000-1111111111-abcdef")
            ),
            "SLACK_TOKEN=[REDACTED:slack-token]",
        );
        redacts(
            &format!("post to https://hooks.slack.com/services/{SLACK_HOOK_PATH} now"),
            "post to https://hooks.slack.com/services/[REDACTED:slack-token] now",
        );
        untouched("xox");
        untouched("tic-tac-toe: xox, oxo");
        untouched("xoxo-hugs-and-kisses");
        untouched("https://hooks.slack.com/services/");
    }

    #[test]
    fn google_api_keys() {
        redacts(GOOGLE, "[REDACTED:google-api-key]");
        redacts(
            &format!("https://maps.example/api?key={GOOGLE}&q=x"),
            "https://maps.example/api?key=[REDACTED:google-api-key]&q=x",
        );
        untouched("AIza");
        untouched(concat!("AI", "za", "SyD-Synthetic_Key_For_Tests_012345"));
        untouched(&format!("{GOOGLE}7"));
    }

    #[test]
    fn stripe_keys() {
        redacts(STRIPE, "[REDACTED:stripe-key]");
        redacts(
            &format!(
                "STRIPE_KEY={}",
                concat!("rk", "_live_", "000000000000000000000000abc")
            ),
            "STRIPE_KEY=[REDACTED:stripe-key]",
        );
        untouched("sk_live_short");
        untouched("sk_test_51Synthetic0Test0Value0AbCdEf");
        untouched("pk_live_51Synthetic0Test0Value0AbCdEf");
    }

    #[test]
    fn ordinary_ids_are_left_alone() {
        untouched("task 123e4567-e89b-12d3-a456-426614174000 in context ctx-42");
        untouched("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
        untouched("0123456789abcdef0123456789abcdef01234567 is HEAD");
        // base64 of ordinary text.
        untouched("VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZy4=");
        untouched("héllo wörld, ünïcode is fine: 你好");
    }

    #[test]
    fn several_kinds_in_one_text() {
        redacts(
            &format!("id {AWS_KEY_ID} key {OPENAI} jwt {JWT}."),
            "id [REDACTED:aws-access-key] key [REDACTED:openai-key] jwt [REDACTED:jwt].",
        );
    }

    #[test]
    fn redacting_twice_changes_nothing() {
        let all = [
            OPENAI,
            ANTHROPIC,
            AWS_KEY_ID,
            &format!("aws_secret_access_key={AWS_SECRET}"),
            &format!("Bearer {GITHUB}"),
            JWT,
            PRIVATE_KEY,
            "ftp://me:pw12345@files.example",
            GITHUB_PAT,
            SLACK,
            &format!("https://hooks.slack.com/services/{SLACK_HOOK_PATH}"),
            GOOGLE,
            STRIPE,
        ]
        .join("\n");
        let once = r().redact_str(&all).into_owned();
        assert_ne!(once, all);
        let twice = r().redact_str(&once);
        assert!(matches!(twice, Cow::Borrowed(_)), "{twice}");
        assert_eq!(twice, once);
    }

    #[test]
    fn a_long_text_without_secrets_is_borrowed() {
        let paragraph = "The bearer of this task asked for a summary of disk-usage on \
            host-7 (task-0042, commit 0123456789abcdef0123456789abcdef01234567); see \
            https://example.com:8080/report?id=123e4567-e89b-12d3-a456-426614174000 or \
            mail ops@example.com. Version 1.2.3 ships sk-learn 1.5. ";
        let text = paragraph.repeat(40);
        assert!(text.len() > 4096);
        assert!(matches!(r().redact_str(&text), Cow::Borrowed(_)));
        assert!(!r().is_match(&text));
    }

    #[test]
    fn json_values_and_keys() {
        let mut value = json!({
            "message": {
                "parts": [
                    {"text": format!("my key is {AWS_KEY_ID}")},
                    {"data": {"nested": [1, true, null, format!("Bearer {GITHUB}")]}},
                ],
            },
            GITHUB: "a credential as a key",
            "Credentials": {
                "AccessKeyId": AWS_KEY_ID,
                "SecretAccessKey": AWS_SECRET,
                "Expiration": "2030-01-01T00:00:00Z",
            },
            "plain": "nothing here",
        });
        assert!(r().redact_json(&mut value));
        assert_eq!(
            value,
            json!({
                "message": {
                    "parts": [
                        {"text": "my key is [REDACTED:aws-access-key]"},
                        {"data": {"nested": [1, true, null, "Bearer [REDACTED:github-token]"]}},
                    ],
                },
                "[REDACTED:github-token]": "a credential as a key",
                "Credentials": {
                    "AccessKeyId": "[REDACTED:aws-access-key]",
                    "SecretAccessKey": "[REDACTED:aws-secret-key]",
                    "Expiration": "2030-01-01T00:00:00Z",
                },
                "plain": "nothing here",
            })
        );
        // Idempotent, and a 40-character value under an ordinary name stays.
        assert!(!r().redact_json(&mut value));
        let mut sha = json!({"commit": "0123456789abcdef0123456789abcdef01234567"});
        assert!(!r().redact_json(&mut sha));
    }

    #[test]
    fn colliding_renamed_keys_keep_every_value() {
        let other = concat!("gh", "o_", "ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210zz");
        let mut value = json!({
            GITHUB: 1,
            other: 2,
            "[REDACTED:github-token]": 3,
        });
        assert!(r().redact_json(&mut value));
        let map = value.as_object().unwrap();
        assert_eq!(map.len(), 3);
        assert_eq!(
            map["[REDACTED:github-token]"], 3,
            "the existing key keeps its value"
        );
        let mut renamed: Vec<i64> = ["[REDACTED:github-token] (2)", "[REDACTED:github-token] (3)"]
            .iter()
            .map(|k| map[*k].as_i64().unwrap())
            .collect();
        renamed.sort_unstable();
        assert_eq!(renamed, [1, 2]);
    }

    #[test]
    fn extra_patterns_from_the_environment() {
        let value = "\n  ticket-[0-9]{6}  \r\n\nemployee=(?P<secret>E[0-9]{5})\n";
        let redactor = Redactor::from_env_value(Some(value)).unwrap();
        assert_eq!(
            redactor.redact_str("see ticket-123456 for employee=E12345"),
            "see [REDACTED:custom] for employee=[REDACTED:custom]"
        );
        // The built-in table still applies.
        assert_eq!(redactor.redact_str(AWS_KEY_ID), "[REDACTED:aws-access-key]");
        assert!(matches!(
            redactor.redact_str("ticket-12 employee=X"),
            Cow::Borrowed(_)
        ));
        // Unset or blank: the built-in table alone.
        for none in [None, Some(""), Some("\n \n")] {
            let builtin = Redactor::from_env_value(none).unwrap();
            assert!(Arc::ptr_eq(&builtin.table, &r().table));
        }
        assert_eq!(
            Redactor::with_extra(&["internal-[a-z]{8}".to_owned()])
                .unwrap()
                .redact_str("an internal-abcdefgh id"),
            "an [REDACTED:custom] id"
        );
    }

    #[test]
    fn an_extra_pattern_matching_nothing_redacts_nothing() {
        let redactor = Redactor::with_extra(&["x*".to_owned()]).unwrap();
        assert!(matches!(redactor.redact_str("abc"), Cow::Borrowed(_)));
        assert!(!redactor.is_match("abc"));
    }

    #[test]
    fn a_bad_extra_pattern_names_its_index() {
        let err = Redactor::from_env_value(Some("fine-[0-9]+\n\nbroken(")).unwrap_err();
        let RedactError::BadPattern {
            index,
            pattern,
            reason,
        } = &err;
        assert_eq!(*index, 1);
        assert_eq!(pattern, "broken(");
        assert!(!reason.is_empty());
        assert!(
            err.to_string()
                .starts_with("redaction pattern 1 (\"broken(\")"),
            "{err}"
        );
    }

    #[test]
    fn redactors_are_cheap_clones_of_one_table() {
        let a = Redactor::default();
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.table, &b.table));
    }

    #[test]
    fn many_keys_redacted_to_one_marker_keep_every_value_under_its_own_key() {
        // Each key is an access key id: all redact to the same marker.
        let members: Map<String, Value> = (0..5000)
            .map(|i| (format!("AKIA{:016}", i), Value::from(i)))
            .collect();
        let mut value = Value::Object(members);
        assert!(Redactor::builtin().redact_json(&mut value));
        let object = value.as_object().unwrap();
        assert_eq!(object.len(), 5000, "no value lost");
        assert!(object.contains_key("[REDACTED:aws-access-key]"));
        assert!(object.contains_key("[REDACTED:aws-access-key] (5000)"));
        assert!(object
            .keys()
            .all(|k| k.starts_with("[REDACTED:aws-access-key]")));
    }

    #[test]
    fn a_json_log_line_stays_json() {
        let r = Redactor::builtin();
        // A URL without a password, and a later field with an `@`: nothing between them
        // is a password.
        let line = r#"{"fields":{"base_url":"http://localhost:11434"},"span":{"participant":"alice@example.com","op":"SendMessage"}}"#;
        assert!(matches!(r.redact_str(line), Cow::Borrowed(_)));
        // A password is redacted inside its own string, the line still parses.
        let line = r#"{"url":"postgres://admin:hunter2-x@db:5432/app","op":"x"}"#;
        let redacted = r.redact_str(line);
        let v: Value = serde_json::from_str(&redacted).expect("still JSON");
        assert_eq!(
            v["url"],
            "postgres://admin:[REDACTED:url-password]@db:5432/app"
        );
        assert_eq!(v["op"], "x");
        // A private key block cut short in a JSON string ends at the string's quote.
        let line = r#"{"text":"-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkq","op":"x"}"#;
        let v: Value = serde_json::from_str(&r.redact_str(line)).expect("still JSON");
        assert_eq!(v["text"], "[REDACTED:private-key]");
        assert_eq!(v["op"], "x");
    }
}
