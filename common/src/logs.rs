//! How the harness's processes log. Lambda functions write JSON without timestamps
//! (CloudWatch adds them); harness-local writes text, in colour only on a terminal (a log
//! file or a pipe gets no escape codes), or JSON when asked. `RUST_LOG` filters (default
//! `info`). Every line passes the process's redactor ([`crate::redact::active`]).

use std::io::IsTerminal;

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

fn filter() -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into())
}

/// Every line through the process's redactor: a credential a log field carries (a
/// header, an error quoting a request) never reaches the log.
fn stderr() -> RedactingWriter<std::io::Stderr> {
    RedactingWriter(std::io::stderr())
}

fn stdout() -> RedactingWriter<std::io::Stdout> {
    RedactingWriter(std::io::stdout())
}

/// Logs to stderr in `format`.
pub fn init(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}

/// Logs as a Lambda function does: JSON, without timestamps.
pub fn init_lambda() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter())
        .with_writer(stdout)
        .without_time()
        .with_current_span(true)
        .init();
}
