//! Traces: OpenTelemetry spans of the harness's own work, exported over OTLP/HTTP
//! (protobuf), off unless configured as every OpenTelemetry SDK is configured.
//!
//! On when `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL, `/v1/traces` added) or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the whole URL) is set, unless `OTEL_SDK_DISABLED`
//! is `true` or `OTEL_TRACES_EXPORTER` is `none` (any value but `otlp` and `none` is
//! refused at start). The SDK reads the rest of the standard variables itself:
//! `OTEL_EXPORTER_OTLP[_TRACES]_HEADERS` (an API key for a hosted collector),
//! `_TIMEOUT`, `_COMPRESSION` (none: no gzip is built in), `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER[_ARG]` (default: parent-based, always
//! on) and the batch processor's `OTEL_BSP_*`. Only `http/protobuf` is built in.
//!
//! What becomes a span: the harness's own spans (target `common…`), never an event and
//! never a dependency's span: one per A2A request (`ops`), per drive (`engine`), per model
//! call with the GenAI semantic conventions' attributes (`models`), per tool call and MCP
//! call (`agent::tools`, `mcp`), per remote-agent call (`remote::client`), per store commit
//! (`store`) and per webhook delivery (`push`). A span's fields are its attributes; none
//! holds message text, tool arguments or results, or a secret. With
//! `HARNESS_OTEL_CAPTURE_CONTENT` the model calls and tool calls also carry their content
//! ([`content`]), through the process's redactor.
//!
//! The spans that exist only for traces are at `DEBUG` level: with traces off and the
//! default log level they are disabled where they are written (tracing's one comparison
//! with the maximum level), so a process that does not trace pays nothing for them; with
//! traces on the logs still leave them out (each layer has its own filter).
//!
//! Exporting never blocks a request: spans are queued to the SDK's batch processor (its
//! own thread, `OTEL_BSP_SCHEDULE_DELAY` apart, dropped when its queue is full), which
//! sends them on the process's tokio runtime through the harness's reqwest client. The
//! queue is flushed ([`flush`]) at the end of each Lambda invocation, before the process
//! may be frozen, and at harness-local's shutdown ([`shutdown`]).
//!
//! Context: the W3C `traceparent`/`tracestate` of an incoming request (every binding:
//! HTTP headers, gRPC metadata) is the parent of its request span ([`extract`],
//! [`adopt`]); outgoing requests to MCP servers, remote agents and webhooks carry the
//! current span's ([`inject`]). A drive started by a request continues the request's
//! trace ([`carry`]); a drive that runs later (resumed by another request, the sweep, or
//! on AWS the resume function) starts a trace of its own.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;

/// The standard variables that turn traces on and off.
pub const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
pub const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
pub const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
pub const TRACES_EXPORTER: &str = "OTEL_TRACES_EXPORTER";

/// What a process says of its traces besides the standard variables.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `service.name` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names one.
    pub service: String,
    /// `HARNESS_OTEL_CAPTURE_CONTENT`: message text and tool arguments in spans, redacted.
    pub capture_content: bool,
}

struct Tracing {
    provider: SdkTracerProvider,
    capture_content: bool,
}

static TRACING: OnceLock<Tracing> = OnceLock::new();

/// A layer over tracing's registry.
pub type BoxedLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Whether the environment turns traces on: an endpoint, and neither `OTEL_SDK_DISABLED`
/// nor `OTEL_TRACES_EXPORTER=none`.
pub fn configured(env: impl Fn(&str) -> Option<String>) -> Result<bool, String> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if set(SDK_DISABLED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    match set(TRACES_EXPORTER).map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if v == "none" => return Ok(false),
        Some(v) if v != "otlp" => {
            return Err(format!(
                "{TRACES_EXPORTER}={v:?}: `otlp` or `none` (this build exports OTLP/HTTP only)"
            ))
        }
        _ => {}
    }
    Ok(set(ENDPOINT).is_some() || set(TRACES_ENDPOINT).is_some())
}

/// The layer that turns the harness's spans into OpenTelemetry spans, when the
/// environment asks for traces (see the module doc); None otherwise. Installs the
/// exporter for [`flush`] and [`shutdown`]. Must run on a tokio runtime (the exports run
/// on it).
pub fn layer(options: &Options) -> Result<Option<BoxedLayer>, String> {
    if !configured(|name| std::env::var(name).ok())? {
        return Ok(None);
    }
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "traces are exported on a tokio runtime; none is running".to_owned())?;
    let client = crate::https::client_builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("traces: cannot build the exporter's HTTP client: {e}"))?;
    let exporter = {
        use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
        opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_http_client(OnRuntime { client, runtime })
            .build()
            .map_err(|e| format!("traces: the OTLP exporter: {e}"))?
    };
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(&options.service))
        .build();
    let tracer = provider.tracer("tiny-harness");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_level(false)
        .with_target(false)
        .with_filter(tracing_subscriber::filter::filter_fn(ours));
    let installed = Tracing {
        provider,
        capture_content: options.capture_content,
    };
    if TRACING.set(installed).is_err() {
        return Err("traces were already set up in this process".into());
    }
    Ok(Some(Box::new(layer)))
}

/// The spans traced: the harness's own (its crate's targets), not its events (log
/// lines, which may quote what a client sent) nor any dependency's spans.
fn ours(meta: &tracing::Metadata<'_>) -> bool {
    meta.is_span() && meta.target().starts_with("common")
}

/// The resource: the standard variables' (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`)
/// with `service` as the name when they give none.
fn resource(service: &str) -> opentelemetry_sdk::Resource {
    let detected = opentelemetry_sdk::Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|n| !n.as_str().starts_with("unknown_service"));
    if named || service.is_empty() {
        return detected;
    }
    opentelemetry_sdk::Resource::builder()
        .with_service_name(service.to_owned())
        .build()
}

/// The exporter's HTTP client: reqwest's, each request sent on the process's tokio
/// runtime (the batch processor's thread has none), so it can be awaited from anywhere.
#[derive(Debug)]
struct OnRuntime {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OnRuntime {
    async fn send_bytes(
        &self,
        request: http::Request<bytes_of::Bytes>,
    ) -> Result<http::Response<bytes_of::Bytes>, opentelemetry_http::HttpError> {
        let client = self.client.clone();
        let sent = self
            .runtime
            .spawn(async move { client.send_bytes(request).await });
        sent.await?
    }
}

/// `Bytes` as the HTTP client trait names it.
mod bytes_of {
    pub use opentelemetry_http::Bytes;
}

/// Whether this process exports traces.
pub fn enabled() -> bool {
    TRACING.get().is_some()
}

/// `text` for a span attribute when content capture is on (through the process's
/// redactor); None when it is off, or traces are.
pub fn content(text: impl FnOnce() -> String) -> Option<String> {
    let on = TRACING.get().is_some_and(|t| t.capture_content);
    on.then(|| crate::redact::active().redact_str(&text()).into_owned())
}

/// Sends every finished span still queued, waiting at most 5 s (the SDK's bound on a
/// flush; the export itself is bounded by `OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s); returns at
/// once when traces are off. For the end of a Lambda invocation, before the process may
/// be frozen.
pub async fn flush() {
    let Some(t) = TRACING.get() else {
        return;
    };
    let provider = t.provider.clone();
    // The SDK's flush blocks its caller until the export is done, and the export runs on
    // this runtime: off the runtime's threads.
    let flushed = tokio::task::spawn_blocking(move || provider.force_flush()).await;
    if let Ok(Err(e)) = flushed {
        tracing::warn!(error = %e, "traces: flush failed");
    }
}

/// Flushes and stops the exporter: the end of the process.
pub async fn shutdown() {
    let Some(t) = TRACING.get() else {
        return;
    };
    let provider = t.provider.clone();
    let stopped = tokio::task::spawn_blocking(move || {
        provider.shutdown_with_timeout(Duration::from_secs(10))
    })
    .await;
    if let Ok(Err(e)) = stopped {
        tracing::warn!(error = %e, "traces: shutdown failed");
    }
}

/// A caller's trace context, from its request's `traceparent` (and `tracestate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote(SpanContext);

/// Most of a caller's `tracestate` the harness takes on: the 512 characters the W3C
/// Trace Context asks every vendor to pass on. The list may otherwise hold 32 members of
/// 513 characters (about 16 KiB, all the SDK checks), which every span of the trace would
/// carry to the collector and every request to an MCP server, remote agent or webhook.
pub const MAX_TRACE_STATE: usize = 512;

/// The W3C trace context `headers` carry (HTTP headers, or gRPC metadata as headers);
/// None when traces are off or they carry none that is valid.
pub fn extract(headers: &http::HeaderMap) -> Option<Remote> {
    if !enabled() {
        return None;
    }
    context_of(headers)
}

/// The trace context of `headers`: `traceparent` as the propagator reads it, `tracestate`
/// cut to [`MAX_TRACE_STATE`] first.
fn context_of(headers: &http::HeaderMap) -> Option<Remote> {
    const PARENT: &str = "traceparent";
    const STATE: &str = "tracestate";
    let mut kept = http::HeaderMap::new();
    if let Some(parent) = headers.get(PARENT) {
        kept.insert(PARENT, parent.clone());
    }
    let state = (headers.get(STATE))
        .and_then(|v| v.to_str().ok())
        .map(bounded_trace_state)
        .and_then(|v| http::HeaderValue::from_str(&v).ok());
    if let Some(state) = state {
        kept.insert(STATE, state);
    }
    let cx = TraceContextPropagator::new().extract(&opentelemetry_http::HeaderExtractor(&kept));
    let span = cx.span().span_context().clone();
    span.is_valid().then_some(Remote(span))
}

/// `tracestate` cut to [`MAX_TRACE_STATE`] characters as the W3C Trace Context says a
/// vendor cuts it: first the members longer than 128 characters go, then members from
/// the end (the oldest vendors' entries).
fn bounded_trace_state(value: &str) -> String {
    let mut members: Vec<&str> = (value.split(','))
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| !m.is_empty())
        .collect();
    let length =
        |members: &[&str]| (members.iter().map(|m| m.len() + 1).sum::<usize>()).saturating_sub(1);
    if length(&members) > MAX_TRACE_STATE {
        members.retain(|m| m.len() <= 128);
    }
    while length(&members) > MAX_TRACE_STATE {
        members.pop();
    }
    members.join(",")
}

/// Makes `remote` the parent of `span` (a request's span, before it is entered).
pub fn adopt(span: &tracing::Span, remote: Option<&Remote>) {
    if let Some(Remote(parent)) = remote {
        let cx = opentelemetry::Context::new().with_remote_span_context(parent.clone());
        let _ = span.set_parent(cx);
    }
}

/// The current span's trace context as W3C headers (`traceparent`, `tracestate`); empty
/// when traces are off.
pub fn headers() -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    if enabled() {
        let cx = tracing::Span::current().context();
        TraceContextPropagator::new()
            .inject_context(&cx, &mut opentelemetry_http::HeaderInjector(&mut headers));
    }
    headers
}

/// `request` carrying the current span's trace context (see [`headers`]).
pub fn inject(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    if !enabled() {
        return request;
    }
    request.headers(headers())
}

/// `future` run in the current span's trace: a span it starts at the root of its own
/// tokio task (a drive) is a child of the current one in the trace, not in the logs.
pub fn carry<F: std::future::Future>(future: F) -> impl std::future::Future<Output = F::Output> {
    use futures::future::Either;
    use opentelemetry::context::FutureExt;
    if !enabled() {
        return Either::Left(future);
    }
    Either::Right(future.with_context(tracing::Span::current().context()))
}

/// `call` in `span` (a client span: a remote agent, a webhook), which is marked an error
/// when the call fails. The error itself is no attribute: it may quote what a remote said.
pub async fn client_call<T, E>(
    span: tracing::Span,
    call: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    use tracing::Instrument;
    let answer = call.instrument(span.clone()).await;
    if answer.is_err() {
        span.record("otel.status_code", "error");
    }
    answer
}

/// Sets `key` on `span` to a list of strings (the GenAI conventions' finish reasons),
/// which a span's fields cannot hold.
pub fn set_strings(span: &tracing::Span, key: &'static str, values: Vec<String>) {
    if enabled() {
        let values = values.into_iter().map(Into::into).collect();
        span.set_attribute(
            key,
            opentelemetry::Value::Array(opentelemetry::Array::String(values)),
        );
    }
}

/// Sets `key` on `span` to a string, when traces are on (content, captured on request).
pub fn set_string(span: &tracing::Span, key: &'static str, value: String) {
    if enabled() {
        span.set_attribute(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::{configured, context_of, MAX_TRACE_STATE};
    use opentelemetry::trace::TraceState;

    fn state_of(parent: &str, state: &str) -> Option<TraceState> {
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", parent.parse().expect("a header value"));
        headers.insert("tracestate", state.parse().expect("a header value"));
        context_of(&headers).map(|r| r.0.trace_state().clone())
    }

    /// A caller's tracestate is carried on every span and outgoing request: at most the
    /// 512 characters the W3C Trace Context asks for, long members dropped first.
    #[test]
    fn a_callers_tracestate_is_cut_to_512_characters() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let kept = state_of(parent, "vendor=opaque, other=1").expect("a valid context");
        assert_eq!(kept.header(), "vendor=opaque,other=1");

        // 32 members of the most the SDK takes (256-character values), one short.
        let long = "v".repeat(256);
        let mut members = vec!["vendor=opaque".to_owned()];
        members.extend((1..32).map(|i| format!("k{i}={long}")));
        let sent = members.join(",");
        assert!(sent.len() > 8_000);
        let kept = state_of(parent, &sent).expect("a valid context");
        assert_eq!(kept.header(), "vendor=opaque");

        // Short members only: those from the end go.
        let short: Vec<String> = (0..32)
            .map(|i| format!("key{i:02}={}", "x".repeat(20)))
            .collect();
        let kept = state_of(parent, &short.join(",")).expect("a valid context");
        let header = kept.header();
        assert!(header.len() <= MAX_TRACE_STATE, "{}", header.len());
        assert!(
            header.starts_with("key00=") && !header.contains("key31="),
            "{header}"
        );
        assert_eq!(header.split(',').count(), 19, "{header}");
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            (pairs.iter())
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn traces_are_on_only_with_an_endpoint_and_not_turned_off() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert_eq!(configured(env(&[])), Ok(false));
        assert_eq!(
            configured(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])),
            Ok(false)
        );
        assert_eq!(configured(env(&[endpoint])), Ok(true));
        let traces = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/v1/traces");
        assert_eq!(configured(env(&[traces])), Ok(true));
        assert_eq!(
            configured(env(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")])),
            Ok(false)
        );
        assert_eq!(
            configured(env(&[endpoint, ("OTEL_SDK_DISABLED", "false")])),
            Ok(true)
        );
        assert_eq!(
            configured(env(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")])),
            Ok(false)
        );
        assert_eq!(
            configured(env(&[endpoint, ("OTEL_TRACES_EXPORTER", "otlp")])),
            Ok(true)
        );
        let refused = configured(env(&[endpoint, ("OTEL_TRACES_EXPORTER", "zipkin")]));
        assert!(refused.is_err_and(|e| e.contains("OTEL_TRACES_EXPORTER")));
    }
}
