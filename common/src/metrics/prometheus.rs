//! The Prometheus exporter: a `Snapshot` of the counters, encoded by `prometheus-client` as
//! OpenMetrics text for harness-local's `/metrics`.

use std::sync::atomic::Ordering;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::event::{Event, EVENTS};
use super::recorder::{lock, Metrics, ModelCounts, BUCKETS, FIRST_EVENT_BUCKETS_MS};

/// The prefix of every Prometheus metric name.
const PROMETHEUS_PREFIX: &str = "harness";

impl Metrics {
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

    pub(super) fn render_prometheus(&self) -> String {
        let mut registry = Registry::with_prefix(PROMETHEUS_PREFIX);
        registry.register_collector(Box::new(self.snapshot()));
        let mut out = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            // Writing to a String does not fail, nor does the collector; should it, say so.
            tracing::warn!(%error, "metrics: encoding the Prometheus exposition failed");
        }
        out
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
