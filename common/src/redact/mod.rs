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

use std::sync::OnceLock;

mod builtin;
mod json;
mod redactor;
mod table;
#[cfg(test)]
mod tests;
mod writer;

pub use redactor::Redactor;
pub use writer::RedactingWriter;

use redactor::BUILTIN_TABLE;

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
