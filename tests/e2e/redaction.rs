//! Redaction at intake: a message carrying every credential shape the built-in table
//! knows, in its text, a data part, part metadata and message metadata, leaves none of
//! them in what the harness keeps or sends on: GetTask, the model's requests, the
//! webhook's bodies, the audit rows, the event log and the server's own log (at debug
//! level). Look-alikes pass through unchanged.

use harness_e2e::participants::{rpc_as, Script};
use harness_e2e::webhook::Receiver;
use harness_e2e::*;
use serde_json::{json, Value};

/// (the value as pasted, the part of it that must never appear again). Built from
/// pieces so no scanner mistakes this file for a leak; every value is made up.
fn credentials() -> Vec<(String, String)> {
    let openai = format!("sk-proj-{}", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z");
    let anthropic = format!("sk-ant-api03-{}", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe");
    let access = format!("AKIA{}", "IOSFODNN7EXAMPLE");
    let secret = format!("wJalrXUtnFEMI/K7MDENG/{}", "bPxRfiCYEXAMPLEKEY");
    let bearer = format!("9f8e7d6c5b4a3928{}", "1706f5e4d3c2b1a0ffeeddcc");
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiJ9.{}.c2lnbmF0dXJlLXRoYXQtaXMtbG9uZw",
        "eyJzdWIiOiJhbGljZSJ9"
    );
    let pem_body = format!("MIIEowIBAAKCAQEA{}", "c3ludGhldGljLWtleS1ib2R5");
    let github = format!("ghp_{}", "0123456789abcdefghijABCDEFGHIJklmnop");
    let slack = format!("xoxb-1234567890-{}", "0987654321-AbCdEfGhIjKlMnOpQrStUv");
    vec![
        (openai.clone(), openai),
        (anthropic.clone(), anthropic),
        (access.clone(), access),
        (format!("aws_secret_access_key = {secret}"), secret),
        (format!("Authorization: Bearer {bearer}"), bearer),
        (jwt.clone(), jwt),
        (
            format!("-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"),
            pem_body,
        ),
        (
            "postgres://admin:hunter2-Synthetic@db.internal:5432/app".into(),
            "hunter2-Synthetic".into(),
        ),
        (github.clone(), github),
        (slack.clone(), slack),
    ]
}

/// Text that looks like a credential and is not one: it must arrive as sent.
const LOOK_ALIKES: &[&str] = &[
    "task-12345",
    "pip install sk-learn",
    "https://example.com:8080/path",
    "AKIAEXAMPLE",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "the bearer of this letter",
    "-----BEGIN PUBLIC KEY-----",
];

fn assert_clean(what: &str, text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{what} holds {secret:?}:\n{text}"
        );
    }
}

async fn nothing_kept_holds_a_credential(backend: Backend) {
    let script = Script::new(json!([{"text": "Noted."}]));
    let model = script.model();
    let Some(s) = Server::start_on_env(
        backend,
        &["--agent", "llm", "--model", &model],
        &[("RUST_LOG", "debug")],
    )
    .await
    else {
        return;
    };
    let hook = Receiver::start().await;
    let pasted = credentials();
    let secrets: Vec<String> = pasted.iter().map(|(_, s)| s.clone()).collect();
    let all = |sep: &str| {
        pasted
            .iter()
            .map(|(p, _)| p.as_str())
            .chain(LOOK_ALIKES.iter().copied())
            .collect::<Vec<_>>()
            .join(sep)
    };
    let message = json!({
        "messageId": unique("redact"),
        "role": "ROLE_USER",
        "parts": [
            {"text": format!("Please use these:\n{}", all("\n"))},
            {"data": {"config": {
                "api_key": pasted[0].1,
                "aws": {"SecretAccessKey": secrets[3], "AccessKeyId": secrets[2]},
                "database": pasted[7].0,
                "notes": all(" | "),
            }}, "metadata": {"token": pasted[5].1}},
        ],
        "metadata": {"pasted": {"github": pasted[8].1, "slack": pasted[9].1}},
    });
    let task = s
        .rpc_ok(
            "SendMessage",
            json!({"message": message,
                   "configuration": {"taskPushNotificationConfig": {"url": hook.url}}}),
        )
        .await;
    let task = &task["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    let id = task["id"].as_str().unwrap().to_owned();

    let stored = s.rpc_ok("GetTask", json!({"id": id})).await.to_string();
    assert_clean("GetTask", &stored, &secrets);
    assert!(stored.contains("[REDACTED:aws-access-key]"), "{stored}");
    assert!(stored.contains("Bearer [REDACTED:"), "{stored}");
    assert!(
        stored.contains("postgres://admin:[REDACTED:url-password]@db.internal"),
        "{stored}"
    );
    for look_alike in LOOK_ALIKES {
        assert!(
            stored.contains(look_alike),
            "{look_alike:?} was changed: {stored}"
        );
    }

    let requests = script.log_text();
    assert!(!requests.is_empty(), "the model was called");
    assert_clean("the model's requests", &requests, &secrets);
    assert!(requests.contains("pip install sk-learn"), "{requests}");

    let delivered = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    let bodies: Vec<&Value> = delivered.iter().map(|r| &r.body).collect();
    assert_clean("the webhook's bodies", &json!(bodies).to_string(), &secrets);

    // A stranger's message to the task is refused and audited, credentials and all.
    let refused = rpc_as(
        &s,
        Some("mallory"),
        "SendMessage",
        send_params(reply_message(&unique("m"), &id, &all("\n"))),
    )
    .await;
    assert!(refused.get("error").is_some(), "{refused}");
    let store = s.store();
    let audit = store.audit_trail(&id).await.expect("audit trail");
    assert!(!audit.is_empty(), "the refusal was audited");
    assert_clean("the audit rows", &format!("{audit:?}"), &secrets);
    let events = store.read_events(&id, None, 1000).await.expect("event log");
    assert_clean("the event log", &format!("{events:?}"), &secrets);

    let log = s.log_text().expect("the server's log");
    assert!(log.contains("DEBUG"), "debug logging is on");
    assert_clean("the server's log", &log, &secrets);
}

#[tokio::test]
async fn nothing_kept_holds_a_credential_embedded() {
    nothing_kept_holds_a_credential(Backend::Embedded).await;
}

#[tokio::test]
async fn nothing_kept_holds_a_credential_dynamodb() {
    nothing_kept_holds_a_credential(Backend::DynamoDb).await;
}
