//! A deployment with the OpenAI provider: the resume function reads the model's key from
//! AWS Secrets Manager (the SDK pointed at a local mock of the Secrets Manager API), once
//! per cold start, and the model's requests carry it; a function that only answers
//! requests reads no secret. One test in its own binary: it sets the process environment
//! the way template.yaml does.

use common::a2a::Call;
use common::a2a::{Message, Part, Role, SendMessageConfiguration, SendMessageRequest, TaskState};
use common::lambda::{driving_harness_from_env, harness_from_env};
use common::ops::{execute, Answer, Caller};
use serde_json::{json, Value};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-model-key-AbCdEf";
const KEY: &str = "sk-test-read-from-the-secret-0123456789";

#[tokio::test]
async fn the_resume_function_reads_the_openai_key_from_secrets_manager() {
    let secrets = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "secretsmanager.GetSecretValue"))
        .and(body_partial_json(json!({ "SecretId": ARN })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "ARN": ARN,
            "Name": "harness-model-key",
            "SecretString": format!("{{\"api_key\":\"{KEY}\"}}"),
            "VersionId": "b9f1c1a2-0000-4000-8000-000000000001",
            "VersionStages": ["AWSCURRENT"],
            "CreatedDate": 1764633600.0
        })))
        .expect(1)
        .mount(&secrets)
        .await;
    let openai = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1764633600,
            "model": "gpt-4.1-mini",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "Done with the key."},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 19, "completion_tokens": 5, "total_tokens": 24}
        })))
        .expect(1)
        .mount(&openai)
        .await;

    let dir = std::env::temp_dir().join(format!("harness-secret-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("state dir");
    let models = dir.join("models.toml");
    std::fs::write(
        &models,
        format!(
            "default = \"gpt\"\n[models.gpt]\nprovider = \"openai\"\nmodel = \"gpt-4.1-mini\"\nbase_url = \"{}/v1\"\n",
            openai.uri()
        ),
    )
    .expect("models file");
    for (name, value) in [
        ("HARNESS_STORE", "embedded"),
        (
            "HARNESS_STATE_DIR",
            dir.join("state").to_str().expect("utf-8"),
        ),
        ("HARNESS_AGENT", "llm"),
        ("HARNESS_MODELS", models.to_str().expect("utf-8")),
        ("HARNESS_MODEL_API_KEY_SECRET", ARN),
        ("HARNESS_AUTH", "none"),
        ("HARNESS_PUSH_NOTIFICATIONS", "false"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_ENDPOINT_URL_SECRETS_MANAGER", &secrets.uri()),
    ] {
        std::env::set_var(name, value);
    }
    std::env::remove_var("OPENAI_API_KEY");

    // A function that answers requests builds its harness without reading the secret.
    harness_from_env()
        .await
        .expect("a request function starts with no key");
    let h = driving_harness_from_env()
        .await
        .expect("the resume function reads the key");

    let message = Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        role: Role::User,
        parts: vec![Part::text("Finish this.")],
        ..Default::default()
    };
    let answer = match execute(
        &h,
        Call::SendMessage(SendMessageRequest {
            message: Some(message),
            // As on AWS, the request function leaves the task to the resume function.
            configuration: Some(SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            }),
            ..Default::default()
        }),
        &Caller::named("alice"),
    )
    .await
    {
        Ok(Answer::Json(v)) => serde_json::from_str::<Value>(v.get()).expect("JSON"),
        other => panic!("unexpected answer: {:?}", other.err()),
    };
    let id = answer["task"]["id"].as_str().expect("a task").to_owned();
    let record = h
        .engine()
        .start(id)
        .await
        .expect("the drive ends")
        .expect("a record");
    assert_eq!(record.state(), TaskState::Completed, "{:?}", record.task);
    // Both mocks' `expect(1)` are checked when they drop: one GetSecretValue, one call
    // carrying the key.
    let _ = std::fs::remove_dir_all(&dir);
}
