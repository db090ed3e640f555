//! A blocking send to an agent that answers at once holds its write back for the run, but
//! only until the run waits on something: a task the agent then works on for a while is
//! stored, and visible as WORKING, while the send waits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::a2a::Call;
use common::a2a::{ListTasksRequest, Message, Part, Role, SendMessageRequest, TaskState};
use common::config::Config;
use common::ops::{execute, Answer, Caller, Harness};
use common::store::EmbeddedStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_the_agent_works_on_is_stored_while_the_send_waits() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path();
    let store = Arc::new(EmbeddedStore::open(dir).expect("store"));
    let config = Config {
        push_key: Some(common::sealing::PushKey::generate()),
        ..Default::default()
    };
    let h = Harness::new(store, common::agent::conformance(), config).expect("harness");
    // The conformance agent stays WORKING for 4 s on this message id.
    let send = Call::SendMessage(SendMessageRequest {
        message: Some(Message {
            message_id: "test-resubscribe-message-id-1".into(),
            role: Role::User,
            parts: vec![Part::text("slow")],
            ..Default::default()
        }),
        ..Default::default()
    });
    let sender = h.clone();
    let pending = tokio::spawn(async move {
        execute(&sender, send, &Caller::named("alice"))
            .await
            .is_ok()
    });
    let started = Instant::now();
    let state = loop {
        let listed = execute(
            &h,
            Call::ListTasks(ListTasksRequest::default()),
            &Caller::named("alice"),
        )
        .await
        .expect("list");
        let Answer::Json(body) = listed else {
            panic!("a JSON answer")
        };
        let page: serde_json::Value = serde_json::from_str(body.get()).expect("JSON");
        if let Some(state) = page["tasks"][0]["status"]["state"].as_str() {
            break state.to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the task was not stored while its send waited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(state, TaskState::Working.as_str());
    assert!(!pending.is_finished(), "the send still waits on the agent");
    assert!(pending.await.expect("send"), "the send is answered");
}
