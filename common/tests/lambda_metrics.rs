//! The functions' metrics in CloudWatch's Embedded Metric Format: one line per
//! invocation with what it did. The send-message function (an API Gateway event through
//! `lambda::app`, as `lambda::run` serves it) creates a task; the resume function (a
//! stream record through `lambda::resume_invocation`) drives it with the scripted model
//! to completion. One test in its own binary: the counters are the process's.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use aws_lambda_events::event::dynamodb::Event;
use common::a2a::Operation;
use common::agent::{self, AgentKind, LlmSettings};
use common::config::Config;
use common::lambda::{app, resume_invocation, MetricsSink};
use common::ops::Harness;
use common::server::Endpoint;
use common::store::{EmbeddedStore, Store};
use lambda_http::lambda_runtime::{Context, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::Adapter;
use serde_json::{json, Value};
use tower::ServiceExt;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn emf(lines: &Mutex<Vec<String>>) -> Vec<Value> {
    std::mem::take(&mut *lines.lock().unwrap())
        .iter()
        .map(|l| serde_json::from_str(l).expect("an EMF line is JSON"))
        .collect()
}

/// The metric names a line's directive declares.
fn declared(line: &Value) -> Vec<String> {
    line["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn each_invocation_prints_one_emf_line_with_what_it_did() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path();
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"text": "All done."}]}).to_string(),
    )
    .unwrap();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.join("state")).unwrap());
    let settings = LlmSettings {
        model: Some(format!("scripted:{}", script.display())),
        ..Default::default()
    };
    let agent = agent::build(AgentKind::Llm, &settings).await.unwrap();
    let config = Config {
        public_url: String::new(),
        // As `lambda::config_from_env`: the Host is API Gateway's, which routes by it.
        allowed_hosts: common::config::hosts::AllowedHosts::Any,
        detached_runs: false,
        default_participant: Some("anonymous".into()),
        push_notifications: false,
        ..Config::default()
    };
    let harness = Harness::new(store, agent, config).unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink: MetricsSink = {
        let lines = lines.clone();
        Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_owned()))
    };

    // send-message: the task is created and left to the resume function.
    let mut event: Value =
        serde_json::from_str(&fixture("apigw-v2-post-message-send.json")).unwrap();
    event["body"] = json!({
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": "Tidy the release notes."}]},
        "configuration": {"returnImmediately": true}
    })
    .to_string()
    .into();
    event["isBase64Encoded"] = false.into();
    let request: LambdaRequest = serde_json::from_value(event).unwrap();
    let function = Adapter::from(app(
        harness.clone(),
        Endpoint::Rest(Operation::SendMessage),
        sink.clone(),
    ));
    let response = function
        .oneshot(LambdaEvent::new(request, Context::default()))
        .await
        .expect("the router never fails");
    let response = serde_json::to_value(&response).unwrap();
    assert_eq!(response["statusCode"], 200, "{response:#}");
    let body: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    let task_id = body["task"]["id"].as_str().unwrap().to_owned();
    let sent = emf(&lines);
    assert_eq!(sent.len(), 1, "one line for the invocation: {sent:#?}");
    let line = &sent[0];
    assert_eq!(
        line["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "TinyHarness"
    );
    assert_eq!(
        line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["Function"]])
    );
    assert_eq!(
        (line["Invocations"].as_u64(), line["tasks_created"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        declared(line).contains(&"tasks_created".to_owned()),
        "{line:#}"
    );
    assert!(line.get("tasks_completed").is_none(), "{line:#}");

    // resume: the stream record of that write drives the task with the model.
    let records = fixture("dynamodb-stream-resume-batch.json")
        .replace("0e53fe23-820f-403b-9bc2-ac25149aa40f", &task_id);
    let mut batch: Value = serde_json::from_str(&records).unwrap();
    batch["Records"] = json!([batch["Records"][0].clone()]);
    let batch: Event = serde_json::from_value(batch).unwrap();
    let answer = resume_invocation(harness.engine(), &batch, None, &sink).await;
    assert!(answer.batch_item_failures.is_empty());
    let resumed = emf(&lines);
    assert_eq!(
        resumed.len(),
        2,
        "the base line and the model's: {resumed:#?}"
    );
    let (base, model) = (&resumed[0], &resumed[1]);
    assert_eq!(
        (
            base["Invocations"].as_u64(),
            base["tasks_completed"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert!(base.get("tasks_created").is_none(), "deltas only: {base:#}");
    assert_eq!(
        model["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["Function", "Model"]])
    );
    assert_eq!(model["model_calls"].as_u64(), Some(1), "{model:#}");
    assert!(model["model_tokens_in"].as_u64().unwrap() > 0, "{model:#}");
    assert_eq!(
        model["model_tokens_out"].as_u64(),
        Some(3),
        "'All done.' is 9 bytes: {model:#}"
    );
}
