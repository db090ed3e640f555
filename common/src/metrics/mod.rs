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
//! | `personal_posts_held` | counter | | posts to personal channels not made: over a sender's or recipient's hourly quota (`channels::personal`) |
//! | `remote_callbacks_forged` | counter | | remote callbacks whose token does not verify: logged (at most once a minute) and counted, not audited (`server::remote_callback`) |
//! | `model_calls_cancelled` | counter | | model calls cut short by a cancel of their task: the call is dropped at once in the process that took the cancel, at its next batch elsewhere (`engine::run`) |
//! | `replies_reminded` | counter | | participants reminded half-way to a reply deadline, on a question or a task for them (`agent::waits`) |
//! | `replies_expired` | counter | | questions and tasks for participants that passed their reply deadline unanswered (`agent::waits`) |
//! | `requests` | counter | `operation` | A2A requests, by operation (Prometheus only) |
//! | `time_to_first_event_ms` | histogram | | milliseconds from a request to its first event |
//!
//! The `model` label takes at most [`MAX_MODELS`] distinct values (names come from
//! configuration, but a misconfiguration must not grow the series without bound): calls for
//! further models are counted under `other`. An empty model name is counted as `unknown`.
//! A client adds none: a task's `/model` is one of the models file's names, and the label
//! is that model's id. The task's own counts, by the same ids, are in its metadata
//! (`ops::shown`).
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

use std::time::Duration;

mod emf;
mod event;
mod prometheus;
mod recorder;
#[cfg(test)]
mod tests;

pub use event::Event;
use recorder::Metrics;

/// The `Content-Type` of [`render_prometheus`]'s output (OpenMetrics 1.0 text format).
pub const PROMETHEUS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How many distinct `model` label values are kept; further models count as [`OTHER_MODEL`].
pub const MAX_MODELS: usize = 32;

/// The `model` label value that models beyond [`MAX_MODELS`] are folded into.
pub const OTHER_MODEL: &str = "other";

/// The most values one EMF metric may hold (an array of at most 100 values).
pub const EMF_MAX_VALUES: usize = 100;

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
