//! The metrics' tests: the recording API through both exporters, on private `Metrics`
//! instances except for one test of the process-wide state.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::recorder::{label_value, Metrics, MAX_VALUE_LEN, UNKNOWN};
use super::*;

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
