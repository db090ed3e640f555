//! Issue 52, reply deadlines where no run goes on after an answer (the Lambda functions:
//! the write that makes a task runnable is its wake-up, which the resume function drives),
//! on both stores: a question waits under its deadline's timer, and
//!
//! - a reply in time is a wake-up the resume function sees (no timer left in the lease's
//!   place, which would hide it until the timer ran out);
//! - a wake while the question waits (a sub-task ended, a remote's callback) keeps the
//!   timer, and so does the sweep that answers such a wake;
//! - a waiting task whose timer was lost (written by a build before) gets it back from the
//!   sweep.

mod support;

use std::sync::Arc;

use common::a2a::{
    Call, Message, Part, Role, SendMessageConfiguration, SendMessageRequest, TaskState,
};
use common::engine::transition::{agent_message, created, new_id, new_task, set_status};
use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
use common::ops::{execute, Caller, Harness};
use common::store::{Store, TaskRecord};
use common::task::lease::POLL_OWNER;
use common::task::{Deadline, HelpRequest};

/// The LLM agent on a model that answers "Done.", configured as the functions are.
fn lambda_harness(store: Arc<dyn Store>) -> Arc<Harness> {
    use common::agent::{context::SystemPrompt, llm::LlmAgent, tools::ToolRegistry};
    let script = r#"{"turns": [{"text": "Done."}]}"#;
    let model = common::models::scripted::Scripted::parse("test", script).expect("script");
    let agent = LlmAgent::new(
        Arc::new(model),
        "scripted",
        ToolRegistry::builtin(),
        SystemPrompt::default(),
    );
    let config = common::config::Config {
        detached_runs: false,
        push_key: Some(common::sealing::PushKey::generate()),
        ..Default::default()
    };
    Harness::new(store, Arc::new(agent), config).expect("harness")
}

/// alice's task, asking bob a question due in 30 s, under its timer as the commit that
/// asks leaves it; with `timer` false, under none (and runnable), as a build before left
/// such a task once a wake-up had been answered.
async fn asking_bob(store: &dyn Store, timer: bool) -> TaskRecord {
    let mut ext = TaskExtension::from_text("Paint the shed");
    for (id, kind, role) in [
        ("alice", ParticipantKind::Human, ParticipantRole::Reporter),
        ("bob", ParticipantKind::Human, ParticipantRole::Watcher),
        (
            "tiny-harness",
            ParticipantKind::Agent,
            ParticipantRole::Assignee,
        ),
    ] {
        ext.add(Participant::new(id, kind, role));
    }
    let mut first = Message {
        message_id: new_id(),
        role: Role::User,
        parts: vec![Part::text("Paint the shed")],
        ..Default::default()
    };
    common::ext::participant::assert_sender(&mut first, "alice");
    let mut rec = new_task("", &mut first, &ext);
    let events = [created(&rec)];
    let deadline = Deadline::within(std::time::Duration::from_secs(30));
    let help = HelpRequest {
        participant_id: "bob".into(),
        question: "Which colour?".into(),
        message_id: format!("{}:help:1", rec.task.id),
        call_id: "call-1".into(),
        deadline: Some(deadline),
        ..Default::default()
    };
    let mut question = agent_message(&rec.task, vec![Part::text("Which colour?")]);
    question.message_id = help.message_id.clone();
    common::ext::participant::address_to(&mut question, "bob");
    let _ = set_status(&mut rec, TaskState::InputRequired, Some(question), None);
    rec.agent.pending_help = Some(help);
    rec.agent.nonce = "n0nce".into();
    rec.lease = timer.then(|| deadline.timer());
    rec.wake = !timer;
    store
        .create_task(&rec, &events, None)
        .await
        .expect("create")
}

async fn load(store: &dyn Store, id: &str) -> TaskRecord {
    store.load_task(id).await.expect("load").expect("the task")
}

fn is_timer(rec: &TaskRecord) -> bool {
    rec.lease.as_ref().is_some_and(|l| l.owner == POLL_OWNER)
}

#[tokio::test]
async fn a_reply_in_time_is_a_wake_up_the_resume_function_sees() {
    for store in support::stores().await {
        let h = lambda_harness(store.clone());
        let id = asking_bob(store.as_ref(), true).await.task.id;
        let mut reply = Message {
            message_id: new_id(),
            task_id: id.clone(),
            role: Role::User,
            parts: vec![Part::text("Blue")],
            ..Default::default()
        };
        common::ext::participant::assert_sender(&mut reply, "bob");
        let call = Call::SendMessage(SendMessageRequest {
            message: Some(reply),
            configuration: Some(SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            }),
            ..Default::default()
        });
        execute(&h, call, &Caller::named("bob"))
            .await
            .expect("the reply is taken");
        let after = load(store.as_ref(), &id).await;
        assert_eq!(after.state(), TaskState::Working);
        // What the table's stream passes to the resume function: runnable, no lease.
        assert!(after.woken(), "a wake-up: {:?}", after.lease);
        h.engine().drive_now(&id, None).await.expect("the resume");
        assert_eq!(
            load(store.as_ref(), &id).await.state(),
            TaskState::Completed
        );
    }
}

#[tokio::test]
async fn a_wake_while_a_question_waits_keeps_its_timer() {
    for store in support::stores().await {
        let h = lambda_harness(store.clone());
        let asked = asking_bob(store.as_ref(), true).await;
        let id = asked.task.id.clone();
        h.engine().wake_task(&id).await.expect("a wake");
        let woken = load(store.as_ref(), &id).await;
        assert_eq!(woken.lease, asked.lease, "the timer stands");
        // The sweep a process makes as it starts rings every wake-up: nothing to do.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        h.engine().sweep_at_start(10).await.expect("sweep");
        let swept = load(store.as_ref(), &id).await;
        assert_eq!(swept.lease, asked.lease, "the timer stands");
        assert_eq!(swept.state(), TaskState::InputRequired);
    }
}

#[tokio::test]
async fn the_sweep_gives_a_waiting_question_its_timer_back() {
    for store in support::stores().await {
        let h = lambda_harness(store.clone());
        let asked = asking_bob(store.as_ref(), false).await;
        let id = asked.task.id.clone();
        assert!(asked.woken() && !is_timer(&asked));
        // The sweep at start rings wake-ups written before it (not in the same ms).
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        h.engine().sweep_at_start(10).await.expect("sweep");
        let swept = load(store.as_ref(), &id).await;
        assert!(is_timer(&swept), "{:?}", swept.lease);
        assert_eq!(swept.lease, swept.wait_timer());
        assert!(!swept.wake);
    }
}
