//! The state the recording functions write to: `Metrics`, its lock-free counters and
//! histogram buckets, and the mutex-guarded per-model and per-operation maps.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::event::{Event, EVENTS};
use super::{EMF_MAX_VALUES, MAX_MODELS, OTHER_MODEL};

/// A label or dimension value given empty (EMF rejects empty dimension values).
pub(super) const UNKNOWN: &str = "unknown";

/// Longest label / dimension value kept, in bytes (CloudWatch allows 1024 characters).
pub(super) const MAX_VALUE_LEN: usize = 255;

/// Upper bounds (milliseconds) of `time_to_first_event_ms`'s histogram buckets, 1 ms..60 s;
/// a last `+Inf` bucket follows.
pub(super) const FIRST_EVENT_BUCKETS_MS: [f64; 15] = [
    1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1_000.0, 2_500.0, 5_000.0, 10_000.0,
    30_000.0, 60_000.0,
];
pub(super) const BUCKETS: usize = FIRST_EVENT_BUCKETS_MS.len() + 1;

/// Locks `mutex`, recovering it if a holder panicked: what it guards are counters, which no
/// panic can leave half-updated.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `value` fit for a label or dimension value: non-empty, at most [`MAX_VALUE_LEN`] bytes.
pub(super) fn label_value(value: &str) -> &str {
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
pub(super) struct ModelCounts {
    pub(super) calls: u64,
    pub(super) tokens_in: u64,
    pub(super) tokens_out: u64,
}

impl ModelCounts {
    pub(super) fn delta(self, since: ModelCounts) -> ModelCounts {
        ModelCounts {
            calls: self.calls.wrapping_sub(since.calls),
            tokens_in: self.tokens_in.wrapping_sub(since.tokens_in),
            tokens_out: self.tokens_out.wrapping_sub(since.tokens_out),
        }
    }
}

/// What the last [`Metrics::take_emf`] reported, to compute the next one's deltas.
#[derive(Debug)]
pub(super) struct EmfFlushed {
    pub(super) events: [u64; EVENTS],
    pub(super) models: BTreeMap<String, ModelCounts>,
}

/// The state behind the global functions; tests use their own instances.
#[derive(Debug)]
pub(super) struct Metrics {
    pub(super) events: [AtomicU64; EVENTS],
    pub(super) models: Mutex<BTreeMap<String, ModelCounts>>,
    pub(super) requests: Mutex<BTreeMap<&'static str, u64>>,
    /// Per-bucket (not cumulative) counts; the last is `+Inf`.
    pub(super) first_event_buckets: [AtomicU64; BUCKETS],
    pub(super) first_event_sum_us: AtomicU64,
    /// First-event observations (ms) since the last EMF flush, at most [`EMF_MAX_VALUES`].
    pub(super) emf_first_events: Mutex<Vec<f64>>,
    pub(super) emf_flushed: Mutex<EmfFlushed>,
}

impl Metrics {
    pub(super) const fn new() -> Self {
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

    pub(super) fn record(&self, event: Event) {
        self.events[event.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn model_call(&self, model: &str, tokens_in: u64, tokens_out: u64) {
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

    pub(super) fn request(&self, operation: &'static str) {
        let mut requests = lock(&self.requests);
        let count = requests.entry(operation).or_default();
        *count = count.wrapping_add(1);
    }

    pub(super) fn first_event(&self, elapsed: Duration) {
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
}
