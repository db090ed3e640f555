//! How the harness's processes log. Lambda functions write JSON without timestamps
//! (CloudWatch adds them); harness-local writes text, in colour only on a terminal (a log
//! file or a pipe gets no escape codes), or JSON when asked. `RUST_LOG` filters (default
//! `info`): a default level and `target=level` directives, e.g. `info,harness::lease=debug`
//! (tracing's `Targets`, which needs no regular-expression engine, unlike its `EnvFilter`
//! with span and field filters); a value that does not parse is `info`. Every line passes
//! the process's redactor ([`crate::redact::active`]). A field's value never writes a
//! control character into a text line: a client's id holding a newline or an escape code
//! would otherwise forge lines or repaint a terminal ([`EscapedFields`]; JSON escapes them
//! itself). Traces, when configured, are a layer beside the lines ([`crate::traces`]).

use std::io::IsTerminal;

use tracing_subscriber::field::RecordFields;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::traces::BoxedLayer;

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

/// Logs to stderr in `format`, beside the traces `traces` asks for (none unless the
/// environment configures them: [`crate::traces`]).
pub fn init(format: LogFormat, traces: &crate::traces::Options) -> Result<(), String> {
    let layer = tracing_subscriber::fmt::layer().with_writer(stderr);
    let lines: BoxedLayer = match format {
        LogFormat::Text => (layer.with_ansi(std::io::stderr().is_terminal()))
            .fmt_fields(EscapedFields::default())
            .with_filter(filter())
            .boxed(),
        LogFormat::Json => (layer.json().with_current_span(true))
            .with_filter(filter())
            .boxed(),
    };
    install(lines, traces)
}

/// Logs as a Lambda function does: JSON, without timestamps; and the traces `traces` asks
/// for.
pub fn init_lambda(traces: &crate::traces::Options) -> Result<(), String> {
    let lines = (tracing_subscriber::fmt::layer().json().with_writer(stdout))
        .without_time()
        .with_current_span(true)
        .with_filter(filter())
        .boxed();
    install(lines, traces)
}

/// The log lines and the traces as one subscriber, each layer with its own filter: the
/// lines `RUST_LOG`'s, the traces the harness's spans at every level (so `RUST_LOG` does
/// not thin out a trace, and spans made only for traces write no line).
fn install(lines: BoxedLayer, traces: &crate::traces::Options) -> Result<(), String> {
    subscriber(lines, traces)?.init();
    Ok(())
}

fn subscriber(
    lines: BoxedLayer,
    traces: &crate::traces::Options,
) -> Result<impl tracing::Subscriber + Send + Sync, String> {
    let mut layers = vec![lines];
    layers.extend(crate::traces::layer(traces)?);
    Ok(tracing_subscriber::registry().with(layers))
}

#[cfg(test)]
mod tests {
    use tracing::level_filters::LevelFilter;
    use tracing::Level;

    use tracing_subscriber::Layer;

    use super::{escape_controls, subscriber, targets};

    /// Without an OTLP endpoint (none in the tests' environment) the spans made only for
    /// traces (`DEBUG`) are disabled where they are written, under the default level: no
    /// span is made, no field is formatted.
    #[test]
    fn without_traces_a_span_made_for_them_costs_nothing() {
        let lines = (tracing_subscriber::fmt::layer().with_writer(std::io::sink))
            .with_filter(targets("info").expect("parses"))
            .boxed();
        let quiet = subscriber(lines, &crate::traces::Options::default()).expect("no traces");
        tracing::subscriber::with_default(quiet, || {
            let formatted = std::sync::atomic::AtomicBool::new(false);
            let field = || {
                formatted.store(true, std::sync::atomic::Ordering::SeqCst);
                "chat model"
            };
            let span = tracing::debug_span!("chat", otel.name = field());
            assert!(span.is_disabled());
            assert!(!formatted.load(std::sync::atomic::Ordering::SeqCst));
            assert!(
                !tracing::info_span!("a2a").is_disabled(),
                "the logs' spans stay"
            );
        });
    }

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
