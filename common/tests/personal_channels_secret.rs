//! A deployment with personal channels: a function that sends requests reads the
//! participants' webhooks from AWS Secrets Manager (the SDK pointed at a local stand-in for
//! the Secrets Manager API), once per cold start; a secret that does not parse stops the
//! start with an error that names the secret and the line, never a URL. One test in its
//! own binary: it sets the process environment the way template.yaml does.

use common::lambda::harness_from_env;
use serde_json::json;
use wiremock::matchers::{body_partial_json, header, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-channels-AbCdEf";
const BAD_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-bad-AbCdEf";
const SECRET_URL: &str = "https://hooks.example/services/T000/SECRET";

async fn secret(server: &MockServer, arn: &str, text: &str) {
    Mock::given(method("POST"))
        .and(header("x-amz-target", "secretsmanager.GetSecretValue"))
        .and(body_partial_json(json!({ "SecretId": arn })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "ARN": arn,
            "Name": "harness-channels",
            "SecretString": text,
            "VersionId": "b9f1c1a2-0000-4000-8000-000000000002",
            "VersionStages": ["AWSCURRENT"],
            "CreatedDate": 1764633600.0
        })))
        .expect(1)
        .mount(server)
        .await;
}

#[tokio::test]
async fn a_function_reads_the_personal_channels_from_their_secret() {
    let secrets = MockServer::start().await;
    secret(&secrets, ARN, &format!("[bob]\nurl = \"{SECRET_URL}\"\n")).await;
    secret(
        &secrets,
        BAD_ARN,
        &format!("[bob]\nurll = \"{SECRET_URL}\"\n"),
    )
    .await;
    let dir = std::env::temp_dir().join(format!("harness-channels-{}", uuid::Uuid::new_v4()));
    // 32 bytes, base64, as `openssl rand -base64 32` gives.
    let key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    for (name, value) in [
        ("HARNESS_STORE", "embedded"),
        ("HARNESS_STATE_DIR", dir.to_str().expect("utf-8")),
        ("HARNESS_AUTH", "none"),
        ("HARNESS_PUSH_NOTIFICATIONS", "true"),
        ("HARNESS_PUSH_KEY", key),
        ("HARNESS_PUBLIC_URL", "https://harness.example"),
        ("HARNESS_PERSONAL_CHANNELS_SECRET", ARN),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_ENDPOINT_URL_SECRETS_MANAGER", &secrets.uri()),
    ] {
        std::env::set_var(name, value);
    }
    let h = harness_from_env()
        .await
        .expect("the channels from the secret");
    let personal = h.personal().expect("personal channels");
    assert_eq!(
        format!("{personal:?}"),
        "PersonalChannels { participants: [\"bob\"] }"
    );

    std::env::set_var("HARNESS_PERSONAL_CHANNELS_SECRET", BAD_ARN);
    let err = harness_from_env()
        .await
        .err()
        .expect("a secret that does not parse")
        .to_string();
    assert!(err.contains(BAD_ARN) && err.contains("line 2"), "{err}");
    assert!(!err.contains("SECRET"), "{err}");
    // Each mock's `expect(1)`, checked as it drops: one read per start.
    let _ = std::fs::remove_dir_all(&dir);
}
