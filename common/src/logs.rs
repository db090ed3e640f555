//! How the harness's processes log. Lambda functions write JSON without timestamps
//! (CloudWatch adds them); harness-local writes text, in colour only on a terminal (a log
//! file or a pipe gets no escape codes), or JSON when asked. `RUST_LOG` filters (default
//! `info`): a default level and `target=level` directives, e.g. `info,harness::lease=debug`
//! (tracing's `Targets`, which needs no regular-expression engine, unlike its `EnvFilter`
//! with span and field filters); a value that does not parse is `info`. Every line passes
//! the process's redactor ([`crate::redact::active`]). A field's value never writes a
//! control character into a text line: a client's id holding a newline or an escape code
//! would otherwise forge lines or repaint a terminal ([`EscapedFields`]; JSON escapes them
//! itself).

use std::io::IsTerminal;

use tracing_subscriber::field::RecordFields;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::redact::RedactingWriter;

/// The shape of log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines, coloured on a terminal.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("log format {other:?}: text or json")),
        }
    }
}

fn filter() -> Targets {
    std::env::var("RUST_LOG")
        .ok()
        .and_then(|directives| targets(&directives))
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO))
}

/// `RUST_LOG`'s directives, each trimmed and empty ones skipped (as `EnvFilter` read them:
/// `Targets` takes `info,` as a default of ERROR and ` harness` as a target with a space).
fn targets(directives: &str) -> Option<Targets> {
    let kept: Vec<&str> = (directives.split(','))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if kept.is_empty() {
        return None;
    }
    kept.join(",").parse().ok()
}

/// Every line through the process's redactor: a credential a log field carries (a
/// header, an error quoting a request) never reaches the log.
fn stderr() -> RedactingWriter<std::io::Stderr> {
    RedactingWriter(std::io::stderr())
}

fn stdout() -> RedactingWriter<std::io::Stdout> {
    RedactingWriter(std::io::stdout())
}

/// Text lines' fields as tracing writes them (`key=value`), with every control character
/// in them escaped (`\n`, `\u{1b}`): a field is written whole into one line, and its
/// values come from clients.
#[derive(Debug, Default)]
pub struct EscapedFields(DefaultFields);

impl<'w> FormatFields<'w> for EscapedFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        // Formatted without colour first, so every escape code in it is a value's.
        let mut raw = String::new();
        self.0.format_fields(Writer::new(&mut raw), fields)?;
        writer.write_str(&escape_controls(&raw))
    }
}

/// `text` with each control character escaped as Rust writes it.
fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Logs to stderr in `format`.
pub fn init(format: LogFormat) {
    let layer = tracing_subscriber::fmt::layer().with_writer(stderr);
    let logs = tracing_subscriber::registry().with(filter());
    match format {
        LogFormat::Text => logs
            .with(
                (layer.with_ansi(std::io::stderr().is_terminal()))
                    .fmt_fields(EscapedFields::default()),
            )
            .init(),
        LogFormat::Json => logs.with(layer.json().with_current_span(true)).init(),
    }
}

/// Logs as a Lambda function does: JSON, without timestamps.
pub fn init_lambda() {
    let layer = (tracing_subscriber::fmt::layer().json().with_writer(stdout))
        .without_time()
        .with_current_span(true);
    tracing_subscriber::registry()
        .with(filter())
        .with(layer)
        .init();
}

#[cfg(test)]
mod tests {
    use tracing::level_filters::LevelFilter;
    use tracing::Level;

    use super::{escape_controls, targets};

    #[test]
    fn a_fields_control_characters_are_escaped() {
        assert_eq!(
            escape_controls("id=x\n\u{1b}[2K WARN forged\t\u{7f}é"),
            "id=x\\n\\u{1b}[2K WARN forged\\t\\u{7f}é"
        );
    }

    #[test]
    fn directives_are_trimmed_and_empty_ones_skipped() {
        let t = targets("info, harness::lease=debug ,").expect("parses");
        assert!(t.would_enable("harness::lease", &Level::DEBUG));
        assert!(t.would_enable("common::ops", &Level::INFO));
        assert!(!t.would_enable("common::ops", &Level::DEBUG));
        assert!(targets(" , ").is_none());
        assert_eq!(
            targets("warn").map(|t| t.default_level()),
            Some(Some(LevelFilter::WARN))
        );
    }
}
