//! Process-wide operational metrics: call sites across the harness record events here, and
//! two exporters read them.
//!
//! # The metrics
//!
//! Names below are the EMF names; Prometheus adds a `harness_` prefix, and counters are
//! exposed with a `_total` suffix (`tasks_created` is `harness_tasks_created_total`).
//!
//! | name | kind | label / dimension | meaning |
//! | --- | --- | --- | --- |
//! | `tasks_created` | counter | | tasks the harness created |
//! | `tasks_completed` | counter | | tasks that reached `completed` |
//! | `tasks_failed` | counter | | tasks that reached `failed` |
//! | `tasks_canceled` | counter | | tasks that reached `canceled` |
//! | `tasks_rejected` | counter | | tasks that reached `rejected` |
//! | `model_calls` | counter | `model` | calls to a model |
//! | `model_tokens_in` | counter | `model` | input (prompt) tokens sent to a model |
//! | `model_tokens_out` | counter | `model` | output (completion) tokens a model produced |
//! | `tool_calls` | counter | | tool invocations |
//! | `tool_errors` | counter | | tool invocations that failed |
//! | `help_requests_asked` | counter | | help requests (input-required) asked of a participant |
//! | `help_requests_answered` | counter | | help requests a participant answered |
//! | `store_conflicts` | counter | | optimistic-concurrency conflicts in the task store |
//! | `store_retries` | counter | | commits retried after a conflict, with a backoff (`engine::backoff`) |
//! | `requests` | counter | `operation` | A2A requests, by operation (Prometheus only) |
//! | `time_to_first_event_ms` | histogram | | milliseconds from a request to its first event |
//!
//! The `model` label takes at most [`MAX_MODELS`] distinct values (names come from
//! configuration, but a misconfiguration must not grow the series without bound): calls for
//! further models are counted under `other`. An empty model name is counted as `unknown`.
//!
//! # Recording
//!
//! [`record`], [`model_call`], [`request`] and [`first_event`]. Plain counters and the
//! histogram are atomics (lock-free); the per-model and per-operation counters, and the
//! pending EMF observations, are small mutex-guarded maps. Nothing here panics: a poisoned
//! mutex is recovered (the data it guards are plain counters, always consistent).
//!
//! # Exporters
//!
//! 1. [`render_prometheus`]: harness-local's `/metrics`, everything since the process
//!    started, in the OpenMetrics text format (served as [`PROMETHEUS_CONTENT_TYPE`],
//!    which Prometheus scrapes natively), encoded by `prometheus-client`.
//!    `time_to_first_event_ms` is a histogram with buckets from 1 ms to 60 s.
//! 2. [`take_emf`]: on Lambda, CloudWatch Embedded Metric Format lines printed to stdout
//!    once per invocation, holding what was recorded since the previous call (deltas), so
//!    CloudWatch extracts the metrics from the logs with no client. It returns:
//!    - one base line, dimension set `[["Function"]]`: `Invocations` (always 1) and every
//!      unlabeled counter whose delta is non-zero (unit `Count`), and
//!      `time_to_first_event_ms` (unit `Milliseconds`) as the array of values observed;
//!    - one line per model used since the last call, dimension set `[["Function", "Model"]]`:
//!      `model_calls`, `model_tokens_in`, `model_tokens_out` (unit `Count`). An EMF line holds
//!      one value per metric name, so each model needs its own line.
//!
//!    Metrics whose delta is zero are left out (both the value and its definition).
//!    `requests` is not exported to EMF (every invocation is one request: `Invocations`).
//!    An EMF metric value may be an array of at most 100 values: only the first
//!    [`EMF_MAX_VALUES`] first-event observations since the last call are kept for EMF (the
//!    rest are still counted by the Prometheus histogram). That also bounds the memory held
//!    where `take_emf` is never called (harness-local).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use serde_json::{json, Map, Value};

/// The `Content-Type` of [`render_prometheus`]'s output (OpenMetrics 1.0 text format).
pub const PROMETHEUS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How many distinct `model` label values are kept; further models count as [`OTHER_MODEL`].
pub const MAX_MODELS: usize = 32;

/// The `model` label value that models beyond [`MAX_MODELS`] are folded into.
pub const OTHER_MODEL: &str = "other";

/// The most values one EMF metric may hold (an array of at most 100 values).
pub const EMF_MAX_VALUES: usize = 100;

/// A label or dimension value given empty (EMF rejects empty dimension values).
const UNKNOWN: &str = "unknown";

/// Longest label / dimension value kept, in bytes (CloudWatch allows 1024 characters).
const MAX_VALUE_LEN: usize = 255;

/// The prefix of every Prometheus metric name.
const PROMETHEUS_PREFIX: &str = "harness";

/// Upper bounds (milliseconds) of `time_to_first_event_ms`'s histogram buckets, 1 ms..60 s;
/// a last `+Inf` bucket follows.
const FIRST_EVENT_BUCKETS_MS: [f64; 15] = [
    1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1_000.0, 2_500.0, 5_000.0, 10_000.0,
    30_000.0, 60_000.0,
];
const BUCKETS: usize = FIRST_EVENT_BUCKETS_MS.len() + 1;

/// Something that happened once: [`record`] adds 1 to its counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// `tasks_created`
    TaskCreated,
    /// `tasks_completed`
    TaskCompleted,
    /// `tasks_failed`
    TaskFailed,
    /// `tasks_canceled`
    TaskCanceled,
    /// `tasks_rejected`
    TaskRejected,
    /// `tool_calls`
    ToolCall,
    /// `tool_errors`
    ToolError,
    /// `help_requests_asked`
    HelpAsked,
    /// `help_requests_answered`
    HelpAnswered,
    /// `store_conflicts`
    StoreConflict,
    /// `store_retries`
    StoreRetry,
}

const EVENTS: usize = 11;

impl Event {
    /// Every event, in the order they are exported.
    const ALL: [Event; EVENTS] = [
        Event::TaskCreated,
        Event::TaskCompleted,
        Event::TaskFailed,
        Event::TaskCanceled,
        Event::TaskRejected,
        Event::ToolCall,
        Event::ToolError,
        Event::HelpAsked,
        Event::HelpAnswered,
        Event::StoreConflict,
        Event::StoreRetry,
    ];

    const fn index(self) -> usize {
        self as usize
    }

    /// The metric's name (EMF; Prometheus adds the prefix and `_total`).
    const fn name(self) -> &'static str {
        match self {
            Event::TaskCreated => "tasks_created",
            Event::TaskCompleted => "tasks_completed",
            Event::TaskFailed => "tasks_failed",
            Event::TaskCanceled => "tasks_canceled",
            Event::TaskRejected => "tasks_rejected",
            Event::ToolCall => "tool_calls",
            Event::ToolError => "tool_errors",
            Event::HelpAsked => "help_requests_asked",
            Event::HelpAnswered => "help_requests_answered",
            Event::StoreConflict => "store_conflicts",
            Event::StoreRetry => "store_retries",
        }
    }

    const fn help(self) -> &'static str {
        match self {
            Event::TaskCreated => "Tasks created.",
            Event::TaskCompleted => "Tasks that reached the completed state.",
            Event::TaskFailed => "Tasks that reached the failed state.",
            Event::TaskCanceled => "Tasks that reached the canceled state.",
            Event::TaskRejected => "Tasks that reached the rejected state.",
            Event::ToolCall => "Tool invocations.",
            Event::ToolError => "Tool invocations that failed.",
            Event::HelpAsked => "Help requests asked of a participant.",
            Event::HelpAnswered => "Help requests a participant answered.",
            Event::StoreConflict => "Optimistic-concurrency conflicts in the task store.",
            Event::StoreRetry => "Task store commits retried after a conflict, with a backoff.",
        }
    }
}

/// Adds 1 to `event`'s counter.
pub fn record(event: Event) {
    METRICS.record(event);
}

/// Counts one call to `model` (`model_calls` +1) and the tokens it took and gave.
pub fn model_call(model: &str, tokens_in: u64, tokens_out: u64) {
    METRICS.model_call(model, tokens_in, tokens_out);
}

/// Counts one A2A request for `operation` (`requests{operation}` +1).
pub fn request(operation: &'static str) {
    METRICS.request(operation);
}

/// Observes the time from a request to its first event (`time_to_first_event_ms`).
pub fn first_event(elapsed: Duration) {
    METRICS.first_event(elapsed);
}

/// Prometheus text format of everything since the process started (content type
/// [`PROMETHEUS_CONTENT_TYPE`]).
pub fn render_prometheus() -> String {
    METRICS.render_prometheus()
}

/// EMF lines for what was recorded since the last call (deltas), for one Lambda invocation.
/// `function` is the Function dimension value (e.g. the Lambda function name).
///
/// The first line is the base line (`Invocations: 1` and the unlabeled metrics, dimension
/// `Function`); one line follows per model used since the last call (dimensions `Function`
/// and `Model`). Print each line to stdout as is.
pub fn take_emf(namespace: &str, function: &str, now_ms: i64) -> Vec<String> {
    METRICS.take_emf(namespace, function, now_ms)
}

/// The process's metrics.
static METRICS: Metrics = Metrics::new();

/// Locks `mutex`, recovering it if a holder panicked: what it guards are counters, which no
/// panic can leave half-updated.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `value` fit for a label or dimension value: non-empty, at most [`MAX_VALUE_LEN`] bytes.
fn label_value(value: &str) -> &str {
    if value.trim().is_empty() {
        return UNKNOWN;
    }
    if value.len() <= MAX_VALUE_LEN {
        return value;
    }
    let mut end = MAX_VALUE_LEN;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
}

/// The counters of one model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ModelCounts {
    calls: u64,
    tokens_in: u64,
    tokens_out: u64,
}

impl ModelCounts {
    fn delta(self, since: ModelCounts) -> ModelCounts {
        ModelCounts {
            calls: self.calls.wrapping_sub(since.calls),
            tokens_in: self.tokens_in.wrapping_sub(since.tokens_in),
            tokens_out: self.tokens_out.wrapping_sub(since.tokens_out),
        }
    }
}

/// What the last [`Metrics::take_emf`] reported, to compute the next one's deltas.
#[derive(Debug)]
struct EmfFlushed {
    events: [u64; EVENTS],
    models: BTreeMap<String, ModelCounts>,
}

/// The state behind the global functions; tests use their own instances.
#[derive(Debug)]
struct Metrics {
    events: [AtomicU64; EVENTS],
    models: Mutex<BTreeMap<String, ModelCounts>>,
    requests: Mutex<BTreeMap<&'static str, u64>>,
    /// Per-bucket (not cumulative) counts; the last is `+Inf`.
    first_event_buckets: [AtomicU64; BUCKETS],
    first_event_sum_us: AtomicU64,
    /// First-event observations (ms) since the last EMF flush, at most [`EMF_MAX_VALUES`].
    emf_first_events: Mutex<Vec<f64>>,
    emf_flushed: Mutex<EmfFlushed>,
}

impl Metrics {
    const fn new() -> Self {
        Metrics {
            events: [const { AtomicU64::new(0) }; EVENTS],
            models: Mutex::new(BTreeMap::new()),
            requests: Mutex::new(BTreeMap::new()),
            first_event_buckets: [const { AtomicU64::new(0) }; BUCKETS],
            first_event_sum_us: AtomicU64::new(0),
            emf_first_events: Mutex::new(Vec::new()),
            emf_flushed: Mutex::new(EmfFlushed {
                events: [0; EVENTS],
                models: BTreeMap::new(),
            }),
        }
    }

    fn record(&self, event: Event) {
        self.events[event.index()].fetch_add(1, Ordering::Relaxed);
    }

    fn model_call(&self, model: &str, tokens_in: u64, tokens_out: u64) {
        let model = label_value(model);
        let mut models = lock(&self.models);
        let counts = match models.get_mut(model) {
            Some(counts) => counts,
            None => {
                let key = if models.len() < MAX_MODELS {
                    model
                } else {
                    OTHER_MODEL
                };
                models.entry(key.to_owned()).or_default()
            }
        };
        counts.calls = counts.calls.wrapping_add(1);
        counts.tokens_in = counts.tokens_in.wrapping_add(tokens_in);
        counts.tokens_out = counts.tokens_out.wrapping_add(tokens_out);
    }

    fn request(&self, operation: &'static str) {
        let mut requests = lock(&self.requests);
        let count = requests.entry(operation).or_default();
        *count = count.wrapping_add(1);
    }

    fn first_event(&self, elapsed: Duration) {
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let ms = us as f64 / 1_000.0;
        let bucket = FIRST_EVENT_BUCKETS_MS
            .iter()
            .position(|bound| ms <= *bound)
            .unwrap_or(BUCKETS - 1);
        self.first_event_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.first_event_sum_us.fetch_add(us, Ordering::Relaxed);
        let mut pending = lock(&self.emf_first_events);
        if pending.len() < EMF_MAX_VALUES {
            pending.push(ms);
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            events: std::array::from_fn(|i| self.events[i].load(Ordering::Relaxed)),
            models: lock(&self.models)
                .iter()
                .map(|(model, counts)| (model.clone(), *counts))
                .collect(),
            requests: lock(&self.requests)
                .iter()
                .map(|(operation, count)| (*operation, *count))
                .collect(),
            first_event_buckets: std::array::from_fn(|i| {
                self.first_event_buckets[i].load(Ordering::Relaxed)
            }),
            first_event_sum_ms: self.first_event_sum_us.load(Ordering::Relaxed) as f64 / 1_000.0,
        }
    }

    fn render_prometheus(&self) -> String {
        let mut registry = Registry::with_prefix(PROMETHEUS_PREFIX);
        registry.register_collector(Box::new(self.snapshot()));
        let mut out = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            // Writing to a String does not fail, nor does the collector; should it, say so.
            tracing::warn!(%error, "metrics: encoding the Prometheus exposition failed");
        }
        out
    }

    fn take_emf(&self, namespace: &str, function: &str, now_ms: i64) -> Vec<String> {
        let function = label_value(function);
        // Held throughout, so concurrent takes each report disjoint deltas.
        let mut flushed = lock(&self.emf_flushed);

        let mut base = EmfLine::new(&[("Function", function)]);
        base.metric("Invocations", "Count", json!(1));
        for event in Event::ALL {
            let now = self.events[event.index()].load(Ordering::Relaxed);
            let delta = now.wrapping_sub(flushed.events[event.index()]);
            flushed.events[event.index()] = now;
            if delta != 0 {
                base.metric(event.name(), "Count", json!(delta));
            }
        }
        let first_events = std::mem::take(&mut *lock(&self.emf_first_events));
        if !first_events.is_empty() {
            base.metric(
                "time_to_first_event_ms",
                "Milliseconds",
                json!(first_events),
            );
        }
        let mut lines = vec![base.render(namespace, now_ms)];

        let models = lock(&self.models).clone();
        for (model, counts) in models {
            let since = flushed.models.get(&model).copied().unwrap_or_default();
            let delta = counts.delta(since);
            if delta == ModelCounts::default() {
                continue;
            }
            let mut line = EmfLine::new(&[("Function", function), ("Model", &model)]);
            for (name, value) in [
                ("model_calls", delta.calls),
                ("model_tokens_in", delta.tokens_in),
                ("model_tokens_out", delta.tokens_out),
            ] {
                if value != 0 {
                    line.metric(name, "Count", json!(value));
                }
            }
            lines.push(line.render(namespace, now_ms));
            flushed.models.insert(model, counts);
        }
        lines
    }
}

/// One EMF log line under construction: one metric directive with one dimension set.
struct EmfLine {
    dimensions: Vec<Value>,
    definitions: Vec<Value>,
    members: Map<String, Value>,
}

impl EmfLine {
    fn new(dimensions: &[(&str, &str)]) -> Self {
        let mut members = Map::new();
        for (name, value) in dimensions {
            members.insert((*name).to_owned(), json!(value));
        }
        EmfLine {
            dimensions: dimensions.iter().map(|(name, _)| json!(name)).collect(),
            definitions: Vec::new(),
            members,
        }
    }

    fn metric(&mut self, name: &str, unit: &str, value: Value) {
        self.definitions.push(json!({ "Name": name, "Unit": unit }));
        self.members.insert(name.to_owned(), value);
    }

    fn render(mut self, namespace: &str, now_ms: i64) -> String {
        self.members.insert(
            "_aws".to_owned(),
            json!({
                "Timestamp": now_ms,
                "CloudWatchMetrics": [{
                    "Namespace": namespace,
                    "Dimensions": [self.dimensions],
                    "Metrics": self.definitions,
                }],
            }),
        );
        // A map of JSON values with string keys always serializes.
        serde_json::to_string(&Value::Object(self.members)).unwrap_or_default()
    }
}

/// The values at one instant, encoded by `prometheus-client` as a collector.
#[derive(Debug)]
struct Snapshot {
    events: [u64; EVENTS],
    models: Vec<(String, ModelCounts)>,
    requests: Vec<(&'static str, u64)>,
    first_event_buckets: [u64; BUCKETS],
    first_event_sum_ms: f64,
}

impl Snapshot {
    fn encode_model_family(
        &self,
        encoder: &mut DescriptorEncoder,
        name: &str,
        help: &str,
        value: fn(&ModelCounts) -> u64,
    ) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (model, counts) in &self.models {
            let labels = [("model", model.as_str())];
            ConstCounter::new(value(counts)).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for event in Event::ALL {
            let counter = ConstCounter::new(self.events[event.index()]);
            let metric = encoder.encode_descriptor(
                event.name(),
                event.help(),
                None,
                counter.metric_type(),
            )?;
            counter.encode(metric)?;
        }

        self.encode_model_family(&mut encoder, "model_calls", "Calls to a model.", |c| {
            c.calls
        })?;
        self.encode_model_family(
            &mut encoder,
            "model_tokens_in",
            "Input tokens sent to a model.",
            |c| c.tokens_in,
        )?;
        self.encode_model_family(
            &mut encoder,
            "model_tokens_out",
            "Output tokens a model produced.",
            |c| c.tokens_out,
        )?;

        let mut requests = encoder.encode_descriptor(
            "requests",
            "A2A requests, by operation.",
            None,
            MetricType::Counter,
        )?;
        for (operation, count) in &self.requests {
            let labels = [("operation", *operation)];
            ConstCounter::new(*count).encode(requests.encode_family(&labels)?)?;
        }

        let buckets: Vec<(f64, u64)> = FIRST_EVENT_BUCKETS_MS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.first_event_buckets)
            .collect();
        let count = self
            .first_event_buckets
            .iter()
            .fold(0u64, |sum, n| sum.wrapping_add(*n));
        let mut histogram = encoder.encode_descriptor(
            "time_to_first_event_ms",
            "Milliseconds from a request to its first event.",
            None,
            MetricType::Histogram,
        )?;
        histogram.encode_histogram::<NoLabelSet>(self.first_event_sum_ms, count, &buckets, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Samples of an OpenMetrics exposition: `name{labels}` -> value.
    fn samples(text: &str) -> HashMap<String, f64> {
        text.lines()
            .filter(|line| !line.starts_with('#') && !line.is_empty())
            .map(|line| {
                let (key, value) = line.rsplit_once(' ').expect("sample line");
                (key.to_owned(), value.parse().expect("sample value"))
            })
            .collect()
    }

    fn sample(samples: &HashMap<String, f64>, key: &str) -> f64 {
        *samples
            .get(key)
            .unwrap_or_else(|| panic!("no sample {key} in {samples:?}"))
    }

    fn parse(line: &str) -> Value {
        serde_json::from_str(line).expect("EMF line is JSON")
    }

    /// Checks the `_aws` member is exactly what EMF requires and returns its one directive.
    fn directive<'a>(line: &'a Value, namespace: &str, now_ms: i64) -> &'a Value {
        let aws = line["_aws"].as_object().expect("_aws object");
        assert_eq!(aws.len(), 2, "{aws:?}");
        assert_eq!(aws["Timestamp"], json!(now_ms));
        let directives = aws["CloudWatchMetrics"].as_array().expect("array");
        assert_eq!(directives.len(), 1);
        let directive = &directives[0];
        assert_eq!(directive.as_object().expect("object").len(), 3);
        assert_eq!(directive["Namespace"], json!(namespace));
        // Every dimension and every metric named has a top-level member.
        for set in directive["Dimensions"].as_array().expect("dimension sets") {
            for name in set.as_array().expect("dimension set") {
                assert!(line[name.as_str().expect("name")].is_string(), "{line}");
            }
        }
        for metric in directive["Metrics"].as_array().expect("metrics") {
            assert_eq!(metric.as_object().expect("metric").len(), 2);
            assert!(metric["Unit"].is_string());
            let name = metric["Name"].as_str().expect("name");
            assert!(!line[name].is_null(), "{name} has no value in {line}");
        }
        directive
    }

    fn metric_names(directive: &Value) -> Vec<&str> {
        directive["Metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .map(|m| m["Name"].as_str().expect("name"))
            .collect()
    }

    fn unit_of<'a>(directive: &'a Value, name: &str) -> &'a str {
        directive["Metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .find(|m| m["Name"] == name)
            .and_then(|m| m["Unit"].as_str())
            .unwrap_or_else(|| panic!("no metric {name}"))
    }

    #[test]
    fn prometheus_renders_every_metric_with_its_value() {
        let metrics = Metrics::new();
        for (i, event) in Event::ALL.into_iter().enumerate() {
            for _ in 0..=i {
                metrics.record(event);
            }
        }
        metrics.model_call("claude", 100, 20);
        metrics.model_call("claude", 5, 1);
        metrics.model_call("nova", 7, 3);
        metrics.request("message/send");
        metrics.request("message/send");
        metrics.request("tasks/get");
        metrics.first_event(Duration::from_micros(500)); // 0.5 ms
        metrics.first_event(Duration::from_millis(40));
        metrics.first_event(Duration::from_secs(120));

        let text = metrics.render_prometheus();
        assert!(text.ends_with("# EOF\n"), "{text}");
        let s = samples(&text);
        for (i, event) in Event::ALL.into_iter().enumerate() {
            let key = format!("harness_{}_total", event.name());
            assert_eq!(sample(&s, &key), (i + 1) as f64, "{key}");
            assert!(text.contains(&format!("# TYPE harness_{} counter\n", event.name())));
        }
        for (key, want) in [
            (r#"harness_model_calls_total{model="claude"}"#, 2.0),
            (r#"harness_model_calls_total{model="nova"}"#, 1.0),
            (r#"harness_model_tokens_in_total{model="claude"}"#, 105.0),
            (r#"harness_model_tokens_in_total{model="nova"}"#, 7.0),
            (r#"harness_model_tokens_out_total{model="claude"}"#, 21.0),
            (r#"harness_model_tokens_out_total{model="nova"}"#, 3.0),
            (r#"harness_requests_total{operation="message/send"}"#, 2.0),
            (r#"harness_requests_total{operation="tasks/get"}"#, 1.0),
        ] {
            assert_eq!(sample(&s, key), want, "{key}");
        }

        assert!(text.contains("# TYPE harness_time_to_first_event_ms histogram\n"));
        assert_eq!(sample(&s, "harness_time_to_first_event_ms_count"), 3.0);
        let sum = sample(&s, "harness_time_to_first_event_ms_sum");
        assert!((sum - 120_040.5).abs() < 1e-6, "{sum}");
        let bucket = |le: &str| {
            sample(
                &s,
                &format!("harness_time_to_first_event_ms_bucket{{le=\"{le}\"}}"),
            )
        };
        // Cumulative.
        assert_eq!(bucket("1.0"), 1.0);
        assert_eq!(bucket("25.0"), 1.0);
        assert_eq!(bucket("50.0"), 2.0);
        assert_eq!(bucket("60000.0"), 2.0);
        assert_eq!(bucket("+Inf"), 3.0);
    }

    #[test]
    fn prometheus_renders_zeros_before_anything_is_recorded() {
        let text = Metrics::new().render_prometheus();
        let s = samples(&text);
        for event in Event::ALL {
            assert_eq!(sample(&s, &format!("harness_{}_total", event.name())), 0.0);
        }
        for family in [
            "model_calls",
            "model_tokens_in",
            "model_tokens_out",
            "requests",
        ] {
            assert!(text.contains(&format!("# TYPE harness_{family} counter\n")));
        }
        assert_eq!(sample(&s, "harness_time_to_first_event_ms_count"), 0.0);
        assert_eq!(
            sample(&s, r#"harness_time_to_first_event_ms_bucket{le="+Inf"}"#),
            0.0
        );
    }

    #[test]
    fn prometheus_escapes_label_values() {
        let metrics = Metrics::new();
        metrics.model_call("a\"b\\c\nd", 1, 1);
        let text = metrics.render_prometheus();
        assert!(
            text.contains("harness_model_calls_total{model=\"a\\\"b\\\\c\\nd\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn model_labels_are_capped_and_normalized() {
        let metrics = Metrics::new();
        for i in 0..MAX_MODELS + 8 {
            metrics.model_call(&format!("model-{i}"), 1, 1);
        }
        metrics.model_call("model-0", 1, 1); // known models keep their own series
        metrics.model_call("", 1, 1);
        let long = "é".repeat(MAX_VALUE_LEN);
        metrics.model_call(&long, 1, 1);
        let s = samples(&metrics.render_prometheus());
        let models = s
            .keys()
            .filter(|k| k.starts_with("harness_model_calls_total{"))
            .count();
        assert_eq!(models, MAX_MODELS + 1);
        assert_eq!(
            sample(&s, r#"harness_model_calls_total{model="model-0"}"#),
            2.0
        );
        assert_eq!(
            sample(&s, r#"harness_model_calls_total{model="other"}"#),
            10.0
        );

        assert_eq!(label_value(""), UNKNOWN);
        assert_eq!(label_value("  "), UNKNOWN);
        let cut = label_value(&long);
        assert!(cut.len() <= MAX_VALUE_LEN && cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn emf_base_line_has_the_structure_emf_requires() {
        let metrics = Metrics::new();
        metrics.record(Event::TaskCreated);
        metrics.record(Event::TaskCreated);
        metrics.record(Event::ToolCall);
        metrics.request("message/send");
        metrics.first_event(Duration::from_millis(12));

        let lines = metrics.take_emf("Harness", "send-message", 1_700_000_000_123);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(!lines[0].contains('\n'));
        let line = parse(&lines[0]);
        let directive = directive(&line, "Harness", 1_700_000_000_123);
        assert_eq!(directive["Dimensions"], json!([["Function"]]));
        assert_eq!(line["Function"], json!("send-message"));
        assert_eq!(
            metric_names(directive),
            [
                "Invocations",
                "tasks_created",
                "tool_calls",
                "time_to_first_event_ms"
            ]
        );
        assert_eq!(unit_of(directive, "Invocations"), "Count");
        assert_eq!(unit_of(directive, "tasks_created"), "Count");
        assert_eq!(unit_of(directive, "time_to_first_event_ms"), "Milliseconds");
        assert_eq!(line["Invocations"], json!(1));
        assert_eq!(line["tasks_created"], json!(2));
        assert_eq!(line["tool_calls"], json!(1));
        assert_eq!(line["time_to_first_event_ms"], json!([12.0]));
        // Zero deltas and `requests` are left out.
        assert!(line.get("tasks_failed").is_none());
        assert!(line.get("requests").is_none());
        let members: Vec<&String> = line.as_object().expect("object").keys().collect();
        assert_eq!(members.len(), 6, "{members:?}");
    }

    #[test]
    fn emf_reports_deltas_and_resets_after_a_take() {
        let metrics = Metrics::new();
        metrics.record(Event::TaskCompleted);
        metrics.model_call("claude", 10, 2);
        metrics.first_event(Duration::from_millis(3));
        assert_eq!(metrics.take_emf("Harness", "f", 1).len(), 2);

        let lines = metrics.take_emf("Harness", "f", 2);
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = parse(&lines[0]);
        assert_eq!(
            metric_names(directive(&line, "Harness", 2)),
            ["Invocations"]
        );
        assert_eq!(line["Invocations"], json!(1));
        assert_eq!(line.as_object().expect("object").len(), 3, "{line}");

        metrics.record(Event::TaskCompleted);
        metrics.record(Event::TaskCompleted);
        metrics.model_call("claude", 1, 1);
        let lines = metrics.take_emf("Harness", "f", 3);
        assert_eq!(lines.len(), 2);
        assert_eq!(parse(&lines[0])["tasks_completed"], json!(2));
        let model = parse(&lines[1]);
        assert_eq!(model["model_calls"], json!(1));
        assert_eq!(model["model_tokens_in"], json!(1));

        // Prometheus still counts from the start.
        let s = samples(&metrics.render_prometheus());
        assert_eq!(sample(&s, "harness_tasks_completed_total"), 3.0);
        assert_eq!(
            sample(&s, r#"harness_model_tokens_in_total{model="claude"}"#),
            11.0
        );
    }

    #[test]
    fn emf_has_one_line_per_model_used() {
        let metrics = Metrics::new();
        metrics.model_call("claude", 100, 20);
        metrics.model_call("claude", 50, 0);
        metrics.model_call("nova", 7, 3);

        let lines = metrics.take_emf("Harness", "jsonrpc", 42);
        assert_eq!(lines.len(), 3, "{lines:?}");
        let base = parse(&lines[0]);
        assert_eq!(
            metric_names(directive(&base, "Harness", 42)),
            ["Invocations"]
        );

        let mut seen = Vec::new();
        for line in &lines[1..] {
            let line = parse(line);
            let directive = directive(&line, "Harness", 42);
            assert_eq!(directive["Dimensions"], json!([["Function", "Model"]]));
            assert_eq!(
                metric_names(directive),
                ["model_calls", "model_tokens_in", "model_tokens_out"]
            );
            for name in metric_names(directive) {
                assert_eq!(unit_of(directive, name), "Count");
            }
            assert_eq!(line["Function"], json!("jsonrpc"));
            assert!(line.get("Invocations").is_none());
            seen.push((
                line["Model"].as_str().expect("model").to_owned(),
                line["model_calls"].as_u64(),
                line["model_tokens_in"].as_u64(),
                line["model_tokens_out"].as_u64(),
            ));
        }
        seen.sort();
        assert_eq!(
            seen,
            [
                ("claude".to_owned(), Some(2), Some(150), Some(20)),
                ("nova".to_owned(), Some(1), Some(7), Some(3)),
            ]
        );

        // Only the model used since the last take gets a line; zero tokens are left out.
        metrics.model_call("nova", 0, 4);
        let lines = metrics.take_emf("Harness", "jsonrpc", 43);
        assert_eq!(lines.len(), 2);
        let line = parse(&lines[1]);
        assert_eq!(line["Model"], json!("nova"));
        assert_eq!(
            metric_names(directive(&line, "Harness", 43)),
            ["model_calls", "model_tokens_out"]
        );
        assert!(line.get("model_tokens_in").is_none());
    }

    #[test]
    fn emf_first_event_array_keeps_the_first_hundred_values() {
        let metrics = Metrics::new();
        for ms in 1..=150u64 {
            metrics.first_event(Duration::from_millis(ms));
        }
        let line = parse(&metrics.take_emf("Harness", "f", 1)[0]);
        let values = line["time_to_first_event_ms"].as_array().expect("array");
        assert_eq!(values.len(), EMF_MAX_VALUES);
        let expected: Vec<Value> = (1..=100u64).map(|ms| json!(ms as f64)).collect();
        assert_eq!(values, &expected);
        // Prometheus counted them all; the next take starts empty.
        let s = samples(&metrics.render_prometheus());
        assert_eq!(sample(&s, "harness_time_to_first_event_ms_count"), 150.0);
        let line = parse(&metrics.take_emf("Harness", "f", 2)[0]);
        assert!(line.get("time_to_first_event_ms").is_none());

        metrics.first_event(Duration::from_micros(1_500));
        let line = parse(&metrics.take_emf("Harness", "f", 3)[0]);
        assert_eq!(line["time_to_first_event_ms"], json!([1.5]));
    }

    #[test]
    fn emf_dimension_values_are_never_empty() {
        let metrics = Metrics::new();
        metrics.model_call("", 1, 1);
        let lines = metrics.take_emf("Harness", "", 1);
        assert_eq!(parse(&lines[0])["Function"], json!(UNKNOWN));
        assert_eq!(parse(&lines[1])["Model"], json!(UNKNOWN));
    }

    #[test]
    fn poisoned_mutexes_are_recovered() {
        let metrics = Metrics::new();
        std::thread::scope(|scope| {
            let poison = scope.spawn(|| {
                let _models = metrics.models.lock();
                let _requests = metrics.requests.lock();
                let _pending = metrics.emf_first_events.lock();
                let _flushed = metrics.emf_flushed.lock();
                panic!("poisoning the metrics' mutexes");
            });
            assert!(poison.join().is_err());
        });
        assert!(metrics.models.is_poisoned());
        metrics.model_call("claude", 1, 1);
        metrics.request("tasks/get");
        metrics.first_event(Duration::from_millis(1));
        let s = samples(&metrics.render_prometheus());
        assert_eq!(
            sample(&s, r#"harness_model_calls_total{model="claude"}"#),
            1.0
        );
        assert_eq!(
            sample(&s, r#"harness_requests_total{operation="tasks/get"}"#),
            1.0
        );
        assert_eq!(metrics.take_emf("Harness", "f", 1).len(), 2);
    }

    #[test]
    fn exporters_run_concurrently_with_recording_and_lose_nothing() {
        const THREADS: u64 = 4;
        const ROUNDS: u64 = 2_000;
        let metrics = Metrics::new();
        let mut emf_created = 0;
        let mut emf_tokens_in = 0;
        let mut count = |lines: Vec<String>| {
            for line in lines {
                let line = parse(&line);
                emf_created += line["tasks_created"].as_u64().unwrap_or(0);
                emf_tokens_in += line["model_tokens_in"].as_u64().unwrap_or(0);
            }
        };
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                let metrics = &metrics;
                scope.spawn(move || {
                    for _ in 0..ROUNDS {
                        metrics.record(Event::TaskCreated);
                        metrics.model_call("claude", 2, 1);
                        metrics.request("message/send");
                        metrics.first_event(Duration::from_millis(5));
                    }
                });
            }
            for now in 0..50 {
                assert!(metrics.render_prometheus().ends_with("# EOF\n"));
                count(metrics.take_emf("Harness", "f", now));
            }
        });
        count(metrics.take_emf("Harness", "f", 99));
        assert_eq!(emf_created, THREADS * ROUNDS);
        assert_eq!(emf_tokens_in, 2 * THREADS * ROUNDS);
        let s = samples(&metrics.render_prometheus());
        assert_eq!(
            sample(&s, "harness_tasks_created_total"),
            (THREADS * ROUNDS) as f64
        );
        assert_eq!(
            sample(&s, "harness_time_to_first_event_ms_count"),
            (THREADS * ROUNDS) as f64
        );
    }

    /// The only test of the process-wide state, which other tests (and modules) may also
    /// record into: it asserts increases only.
    #[test]
    fn global_functions_record_into_the_process_metrics() {
        let before = samples(&render_prometheus());
        let value = |s: &HashMap<String, f64>, key: &str| s.get(key).copied().unwrap_or(0.0);
        record(Event::TaskCreated);
        model_call("global-test-model", 3, 2);
        request("global-test-operation");
        first_event(Duration::from_millis(7));
        let after = samples(&render_prometheus());
        for key in [
            "harness_tasks_created_total",
            r#"harness_model_calls_total{model="global-test-model"}"#,
            r#"harness_requests_total{operation="global-test-operation"}"#,
            "harness_time_to_first_event_ms_count",
        ] {
            assert!(value(&after, key) >= value(&before, key) + 1.0, "{key}");
        }
        let lines = take_emf("Harness", "test", 1);
        assert_eq!(parse(&lines[0])["Invocations"], json!(1));
    }
}
