//! The push key and the push switch, as harness-local applies them: a shared table needs
//! the key given (start-up without one is refused with a clear message, before anything
//! listens); the embedded store keeps its own key in its state directory, owner-only,
//! and the same key after a restart opens the configs stored before; with push off the
//! card says so, every push operation answers PushNotificationNotSupported, and no key is
//! needed.

use harness_e2e::*;
use serde_json::json;

#[tokio::test]
async fn a_table_without_a_push_key_is_refused_at_start_up() {
    let Some(client) = dynamo_client() else {
        return;
    };
    let table = fresh_table(&client).await;
    let endpoint = std::env::var("HARNESS_TEST_DYNAMODB_ENDPOINT").unwrap_or_default();
    let aws = [
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    let (code, text) = start_refused(&["--table", &table], &aws);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("no key is configured") && text.contains("HARNESS_PUSH_KEY"),
        "{text}"
    );
    assert!(!text.contains("serving"), "{text}");

    // A key that is not 32 bytes of base64 is refused too, and never echoed.
    let (code, text) = start_refused(&["--table", &table, "--push-key", "c2hvcnQ="], &aws);
    assert_eq!(code, Some(2), "clap refuses the value: {text}");
    assert!(text.contains("32 bytes"), "{text}");

    // With push off, the table needs no key.
    let s = Server::start_on(Backend::DynamoDb, &["--push-notifications", "false"])
        .await
        .expect("DynamoDB is configured");
    let card = s.rest_get("/.well-known/agent-card.json").await.1;
    assert_eq!(card["capabilities"]["pushNotifications"], false, "{card}");
}

#[tokio::test]
async fn the_embedded_store_keeps_its_key_beside_it_and_reuses_it_after_a_restart() {
    let mut s = Server::start().await;
    let key_file = s.state_dir.join("push.key");
    let text = std::fs::read_to_string(&key_file).expect("the key file exists");
    assert_eq!(text.trim().len(), 44, "32 bytes in base64");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "owner-only");
    }
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let config = json!({"taskId": id, "id": "kept", "url": "https://hooks.example/kept",
        "token": "kept-token", "authentication": {"scheme": "Bearer", "credentials": "kept-cred"}});
    s.rpc_ok("CreateTaskPushNotificationConfig", config.clone())
        .await;

    s.restart().await;
    assert_eq!(
        std::fs::read_to_string(&key_file).expect("still there"),
        text
    );
    let got = s
        .rpc_ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "kept"}),
        )
        .await;
    assert_eq!(got, config, "the secrets open after the restart");
}

#[tokio::test]
async fn with_push_off_every_push_operation_is_not_supported() {
    let s = Server::start_with(&["--push-notifications", "false"]).await;
    let card = s.rest_get("/.well-known/agent-card.json").await.1;
    assert_eq!(card["capabilities"]["pushNotifications"], false, "{card}");
    assert!(
        !s.state_dir.join("push.key").exists(),
        "no key without push"
    );
    let task = s.input_required_task().await;
    let id = task_id(&task);
    let hook = json!({"url": "https://hooks.example/h"});
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "https://hooks.example/h"}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "x"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "x"}),
        ),
        (
            "SendMessage",
            json!({"message": user_message(&unique("m"), "x"),
                "configuration": {"taskPushNotificationConfig": hook}}),
        ),
    ] {
        s.rpc_err(method, params, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")
            .await;
    }
    let (status, body) = s
        .rest_post(
            &format!("/tasks/{id}/pushNotificationConfigs"),
            json!({"url": "https://hooks.example/h"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(state(&s.get_task(&id).await), "TASK_STATE_INPUT_REQUIRED");
}
