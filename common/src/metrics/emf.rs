//! The CloudWatch Embedded Metric Format exporter: per-invocation deltas as EMF log lines,
//! one base line and one line per model used.

use std::sync::atomic::Ordering;

use serde_json::{json, Map, Value};

use super::event::Event;
use super::recorder::{label_value, lock, Metrics, ModelCounts};

impl Metrics {
    pub(super) fn take_emf(&self, namespace: &str, function: &str, now_ms: i64) -> Vec<String> {
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
