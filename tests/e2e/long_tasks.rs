//! Long tasks on DynamoDB (issue 18, first part): a task that outgrows what one DynamoDB
//! item holds fails cleanly. The checkpoint that would cross the 400 KB limit is refused
//! by DynamoDB Local itself; the task is then FAILED with a stable reason in a commit that
//! fits, holds no lease and waits for no wake-up, and its model is never called again, not
//! even by the drive a restart makes.

use harness_e2e::participants::{llm_server, send_as, Script};
use harness_e2e::*;
use serde_json::json;

/// A turn that calls a tool with arguments of about `kb` KB: each is kept in the agent's
/// conversation, which the task's item holds.
fn heavy_turn(kb: usize) -> serde_json::Value {
    json!({"tool_calls": [{"name": "current_time", "arguments": {"pad": "x".repeat(kb * 1024)}}]})
}

#[tokio::test]
async fn a_task_that_outgrows_a_dynamodb_item_fails_cleanly_and_is_not_driven_again() {
    let script = Script::with_call_log(json!([
        heavy_turn(150),
        heavy_turn(150),
        heavy_turn(150),
        heavy_turn(150),
        {"text": "never reached"}
    ]));
    let Some(mut s) = llm_server(Backend::DynamoDb, &script).await else {
        return;
    };
    let task = send_as(
        &s,
        Some("alice"),
        user_message(&unique("m"), "Fill the store"),
    )
    .await;
    let id = task_id(&task);
    assert_eq!(state(&task), "TASK_STATE_FAILED", "{task}");
    let reason = status_text(&task);
    assert!(
        reason.starts_with("The task grew larger than the store can hold, so it stopped (error "),
        "{reason}"
    );
    let calls = script.call_log_text().lines().count();
    assert!((2..=3).contains(&calls), "{}", script.call_log_text());

    let rec = s.store().load_task(&id).await.expect("load").expect("task");
    assert_eq!(rec.lease, None, "no drive holds it");
    assert!(!rec.wake, "nothing is to wake it");
    assert!(
        rec.agent.conversation.is_empty(),
        "the commit that failed it fits"
    );

    // A restart resumes what was cut off: nothing here.
    s.restart().await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        script.call_log_text().lines().count(),
        calls,
        "the model is not called again"
    );
    let after = s.store().load_task(&id).await.expect("load").expect("task");
    assert_eq!(after.version, rec.version);
}

/// Until tasks are split across items, a message that would make its task larger than a
/// DynamoDB item is refused with a clear error naming the limit, and nothing is stored
/// (it was an internal error).
#[tokio::test]
async fn a_message_too_large_for_a_dynamodb_item_is_refused_clearly() {
    use harness_e2e::identity::{list, send, Via, Who};
    let Some(s) = Server::start_on(Backend::DynamoDb, &[FAIL_CLOSED]).await else {
        return;
    };
    let alice = Who::header("alice");
    for via in Via::BOTH {
        let m = user_message(&unique("tck-complete-task"), &"x".repeat(500 * 1024));
        let refused = send(&s, &alice, via, m.clone()).await;
        refused.invalid_params();
        assert!(
            refused.message().contains("larger than this store holds"),
            "{}",
            refused.message()
        );
        let mid = m["messageId"].as_str().expect("id");
        let stored = s
            .store()
            .message_task("", "alice", mid)
            .await
            .expect("read");
        assert_eq!(stored, None, "{via:?}");
    }
    assert!(listed_ids(&list(&s, &alice, Via::JsonRpc).await.ok()).is_empty());
}
