//! Issue 52, part 1: nobody waits forever. harness-local with the LLM agent on the
//! scripted model, on both stores, with deadlines of 2 to 3 seconds.
//!
//! - A question with `reply_within` shows its due time (the question's metadata, under
//!   the harness's `replyBy` key, and so in `waitingOnMe`), reminds its addressee once
//!   half-way (a message in the history, a `message` event a member's webhook gets), and
//!   expires unanswered: a status message names who did not answer by when, the task is
//!   WORKING again and the model's next turn is told there was no reply.
//! - One answered in time resumes the task and nothing expires after.
//! - One whose deadline passed while the harness was down expires within 5 s of start;
//!   one the harness restarted before expires on time; one a sub-task's end wakes the
//!   task under keeps its deadline.
//! - A late reply is kept (history, framed as late for the model), resumes nothing, and
//!   its sender is told the question expired.
//! - A task for a participant past its deadline is cancelled with that reason, and its
//!   parent goes on with it.
//! - A bad `reply_within` is a tool error the model sees; nothing is asked.

use std::time::{Duration, Instant};

use harness_e2e::participants::{
    get_task_as, llm_server, participant, rpc_ok_as, send_as, task_envelope_part,
    wait_for_state_as, Script,
};
use harness_e2e::webhook::Receiver;
use harness_e2e::{reply_message, state, status_text, task_id, unique, Backend};
use serde_json::{json, Value};

const REPLY_BY: &str = "io.github.madarauchiha-314.tiny-harness/replyBy";
const WAIT: Duration = Duration::from_secs(15);

fn people() -> Value {
    json!([
        participant("alice", "human", "reporter"),
        participant("bob", "human", "watcher"),
        participant("carol", "human", "watcher"),
    ])
}

fn ask(who: &str, question: &str, within: Option<&str>) -> Value {
    let mut args = json!({"participant_id": who, "question": question});
    if let Some(within) = within {
        args["reply_within"] = within.into();
    }
    json!({"tool_calls": [{"name": "ask_participant", "arguments": args}]})
}

/// alice starts a task with bob and carol on it, with a webhook of hers on it when given.
async fn start(s: &harness_e2e::Server, name: &str, hook: Option<&Receiver>) -> Value {
    let message = json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [
        {"text": format!("Paint {name}")},
        task_envelope_part(name, "Paint the shed", people())]});
    let mut params = json!({"message": message});
    if let Some(hook) = hook {
        params["configuration"] = json!({"taskPushNotificationConfig": {"url": hook.url}});
    }
    let sent = rpc_ok_as(s, Some("alice"), "SendMessage", params).await;
    sent["task"].clone()
}

/// The texts of the task's history and status message, in order.
fn texts(task: &Value) -> Vec<String> {
    let history = task["history"].as_array().cloned().unwrap_or_default();
    (history.iter())
        .chain(
            task["status"]["message"]
                .as_object()
                .map(|_| &task["status"]["message"]),
        )
        .filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_owned))
        .collect()
}

/// Every text the model was sent for the task named `name`, in one string.
fn model_saw(script: &Script, name: &str) -> String {
    serde_json::to_string(&script.requests_of(name)).expect("JSON")
}

/// The due time a message carries, checked to be RFC 3339 UTC about `within` from `sent`.
fn due_of(message: &Value, sent: chrono::DateTime<chrono::Utc>, within: Duration) -> String {
    let due = message["metadata"][REPLY_BY]
        .as_str()
        .unwrap_or_else(|| panic!("no {REPLY_BY} in {message}"));
    assert!(due.ends_with('Z'), "{due}");
    let at = chrono::DateTime::parse_from_rfc3339(due).expect("RFC 3339");
    let off = (at.timestamp_millis() - sent.timestamp_millis() - within.as_millis() as i64).abs();
    assert!(off < 2_000, "{due} is not {within:?} after {sent}");
    due.to_owned()
}

async fn a_question_past_its_deadline_expires(backend: Backend) {
    let script = Script::new(json!([
        ask("bob", "Which colour?", Some("2s")),
        {"text": "Painted it white, as bob did not answer."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let hook = Receiver::start().await;
    let sent = chrono::Utc::now();
    let task = start(&s, "Shed", Some(&hook)).await;
    let id = task_id(&task);
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    let question = &task["status"]["message"];
    let due = due_of(question, sent, Duration::from_secs(2));
    // bob's waitingOnMe shows it too, also once carol's command's reply is the status.
    let help = json!({"messageId": unique("cmd"), "role": "ROLE_USER", "taskId": id,
        "parts": [{"text": "/help"}]});
    let helped = send_as(&s, Some("carol"), help).await;
    assert_ne!(
        status_text(&helped),
        "Which colour?",
        "the command's reply: {helped}"
    );
    let waiting = rpc_ok_as(&s, Some("bob"), "ListTasks", json!({"waitingOnMe": true})).await;
    assert_eq!(waiting["tasks"][0]["id"], id.as_str(), "{waiting}");
    assert_eq!(
        waiting["tasks"][0]["status"]["message"]["metadata"][REPLY_BY],
        due.as_str()
    );

    let done = wait_for_state_as(&s, "alice", &id, "TASK_STATE_COMPLETED", WAIT).await;
    let expired_after = chrono::Utc::now() - sent;
    assert!(
        expired_after < chrono::Duration::seconds(10),
        "{expired_after}"
    );
    let said = texts(&done);
    let reminder = (said.iter())
        .position(|t| t.starts_with("Reminder: bob") && t.contains(&due))
        .unwrap_or_else(|| panic!("no reminder in {said:#?}"));
    let expiry = format!("No reply from bob by {due} to \"Which colour?\": the question expired.");
    let expired = (said.iter())
        .position(|t| *t == expiry)
        .unwrap_or_else(|| panic!("no expiry in {said:#?}"));
    assert!(reminder < expired, "{said:#?}");
    assert_eq!(
        said.iter().filter(|t| t.starts_with("Reminder:")).count(),
        1,
        "reminded once: {said:#?}"
    );
    assert!(model_saw(&script, "Shed").contains("No reply from bob by"));

    // alice's webhook got the reminder as a message event, then the task WORKING again.
    let got = hook.wait_for_state("TASK_STATE_COMPLETED").await;
    let kinds: Vec<String> = (got.iter())
        .map(|r| match r.kind() {
            "message" => format!("message:{}", r.body["message"]["parts"][0]["text"]),
            "statusUpdate" => r.state().unwrap_or_default().to_owned(),
            other => other.to_owned(),
        })
        .collect();
    let reminded = (kinds.iter())
        .position(|k| k.starts_with("message:\"Reminder: bob"))
        .unwrap_or_else(|| panic!("no reminder in {kinds:#?}"));
    assert!(
        kinds[reminded..].iter().any(|k| k == "TASK_STATE_WORKING"),
        "{kinds:#?}"
    );
}

#[tokio::test]
async fn a_question_past_its_deadline_expires_on_the_embedded_store() {
    a_question_past_its_deadline_expires(Backend::Embedded).await;
}

#[tokio::test]
async fn a_question_past_its_deadline_expires_on_dynamodb() {
    a_question_past_its_deadline_expires(Backend::DynamoDb).await;
}

/// The texts of the task's history and status once one starts with `prefix`.
async fn once_said(s: &harness_e2e::Server, id: &str, prefix: &str) -> Vec<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let said = texts(&get_task_as(s, "alice", id).await);
        if said.iter().any(|t| t.starts_with(prefix)) {
            return said;
        }
        assert!(
            Instant::now() < deadline,
            "nothing said {prefix:?}: {said:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_question_answered_in_time_does_not_expire(backend: Backend) {
    let script = Script::new(json!([
        ask("bob", "Which colour?", Some("3s")),
        {"text": "Painted it blue."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let id = task_id(&start(&s, "Fence", None).await);
    // Reminded half-way, bob answers then: the task goes on at once.
    once_said(&s, &id, "Reminder: bob").await;
    let reply = reply_message(&unique("r"), &id, "Blue");
    let answered = send_as(&s, Some("bob"), reply).await;
    assert_eq!(state(&answered), "TASK_STATE_COMPLETED", "{answered}");
    // Past the deadline: nothing more reminds or expires.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let after = get_task_as(&s, "alice", &id).await;
    assert_eq!(state(&after), "TASK_STATE_COMPLETED", "{after}");
    let said = texts(&after);
    assert!(!said.iter().any(|t| t.starts_with("No reply")), "{said:#?}");
    assert_eq!(
        said.iter().filter(|t| t.starts_with("Reminder:")).count(),
        1,
        "{said:#?}"
    );
    assert!(model_saw(&script, "Fence").contains("Reply from bob to \\\"Which colour?\\\": Blue"));
}

#[tokio::test]
async fn a_question_answered_in_time_does_not_expire_on_the_embedded_store() {
    a_question_answered_in_time_does_not_expire(Backend::Embedded).await;
}

#[tokio::test]
async fn a_question_answered_in_time_does_not_expire_on_dynamodb() {
    a_question_answered_in_time_does_not_expire(Backend::DynamoDb).await;
}

async fn a_deadline_that_passed_while_down_fires_at_start(backend: Backend) {
    let script = Script::new(json!([
        ask("bob", "Which colour?", Some("2s")),
        {"text": "Painted it white."}
    ]));
    let Some(mut s) = llm_server(backend, &script).await else {
        return;
    };
    let id = task_id(&start(&s, "Gate", None).await);
    s.kill();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    s.restart().await;
    let started = Instant::now();
    let done = wait_for_state_as(&s, "alice", &id, "TASK_STATE_COMPLETED", WAIT).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let said = texts(&done);
    assert!(
        said.iter().any(|t| t.starts_with("No reply from bob")),
        "{said:#?}"
    );
}

#[tokio::test]
async fn a_deadline_that_passed_while_down_fires_at_start_on_the_embedded_store() {
    a_deadline_that_passed_while_down_fires_at_start(Backend::Embedded).await;
}

#[tokio::test]
async fn a_deadline_that_passed_while_down_fires_at_start_on_dynamodb() {
    a_deadline_that_passed_while_down_fires_at_start(Backend::DynamoDb).await;
}

/// Killed at once after the question, restarted before its deadline: the dead process's
/// lock file is free, so the sweep at start takes its leases at once; the question's timer
/// is no lease of a drive, and stands, and the question expires on time.
async fn a_restart_before_the_deadline_keeps_it(backend: Backend) {
    let script = Script::new(json!([
        ask("bob", "Which colour?", Some("3s")),
        {"text": "Painted it white."}
    ]));
    let Some(mut s) = llm_server(backend, &script).await else {
        return;
    };
    let id = task_id(&start(&s, "Door", None).await);
    s.kill();
    s.restart().await;
    // Before, the sweep at start put the timer out with the dead process's leases: the
    // question waited for ever.
    let done = wait_for_state_as(&s, "alice", &id, "TASK_STATE_COMPLETED", WAIT).await;
    let said = texts(&done);
    assert!(
        said.iter().any(|t| t.starts_with("No reply from bob")),
        "{said:#?}"
    );
}

#[tokio::test]
async fn a_restart_before_the_deadline_keeps_it_on_the_embedded_store() {
    a_restart_before_the_deadline_keeps_it(Backend::Embedded).await;
}

#[tokio::test]
async fn a_restart_before_the_deadline_keeps_it_on_dynamodb() {
    a_restart_before_the_deadline_keeps_it(Backend::DynamoDb).await;
}

/// The model gives bob a task and asks carol a question due in 3 s, in one turn; bob's
/// task ending wakes the parent while the question waits: the question's timer stands,
/// and it expires on time.
async fn a_sub_task_ending_while_a_question_waits_keeps_its_deadline(backend: Backend) {
    let script = Script::new(json!([
        {"tool_calls": [
            {"name": "create_task_for_participant", "arguments": {
                "participant_id": "bob", "name": "Measure", "goal": "Measure the shed"}},
            {"name": "ask_participant", "arguments": {
                "participant_id": "carol", "question": "Which brush?", "reply_within": "3s"}}
        ]},
        {"text": "Painted."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let id = task_id(&start(&s, "Hut", None).await);
    let child = format!("{id}.1");
    wait_for_state_as(&s, "bob", &child, "TASK_STATE_INPUT_REQUIRED", WAIT).await;
    let done = reply_message(&unique("d"), &child, "3 by 4");
    send_as(&s, Some("bob"), done).await;
    let ended = wait_for_state_as(&s, "alice", &id, "TASK_STATE_COMPLETED", WAIT).await;
    let said = texts(&ended);
    assert!(
        said.iter().any(|t| t.starts_with("No reply from carol")),
        "{said:#?}"
    );
}

#[tokio::test]
async fn a_sub_task_ending_while_a_question_waits_keeps_its_deadline_on_the_embedded_store() {
    a_sub_task_ending_while_a_question_waits_keeps_its_deadline(Backend::Embedded).await;
}

#[tokio::test]
async fn a_sub_task_ending_while_a_question_waits_keeps_its_deadline_on_dynamodb() {
    a_sub_task_ending_while_a_question_waits_keeps_its_deadline(Backend::DynamoDb).await;
}

async fn a_late_reply_is_kept_and_resumes_nothing(backend: Backend) {
    let script = Script::new(json!([
        ask("bob", "Which colour?", Some("2s")),
        ask("carol", "Which brush?", None),
        {"text": "Painted."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let id = task_id(&start(&s, "Barn", None).await);
    // Expired, the model asks carol instead.
    let deadline = Instant::now() + WAIT;
    loop {
        let task = get_task_as(&s, "alice", &id).await;
        if task["status"]["message"]["metadata"]["addressee"] == "carol" {
            break;
        }
        assert!(Instant::now() < deadline, "carol never asked: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let said = "Blue, sorry I am late";
    let late = reply_message(&unique("late"), &id, said);
    let answer = rpc_ok_as(&s, Some("bob"), "SendMessage", json!({"message": late})).await;
    let told = answer["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_else(|| {
            panic!("the sender is answered with a message: {answer}");
        });
    assert!(told.contains("had expired"), "{told}");
    let task = get_task_as(&s, "alice", &id).await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    assert_eq!(status_text(&task), "Which brush?", "still carol's question");
    assert!(texts(&task).iter().any(|t| t == said), "kept in history");

    let reply = reply_message(&unique("r"), &id, "The wide one");
    let done = send_as(&s, Some("carol"), reply).await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let seen = model_saw(&script, "Barn");
    assert!(
        seen.contains("Late reply from bob to \\\"Which colour?\\\""),
        "{seen}"
    );
}

#[tokio::test]
async fn a_late_reply_is_kept_and_resumes_nothing_on_the_embedded_store() {
    a_late_reply_is_kept_and_resumes_nothing(Backend::Embedded).await;
}

#[tokio::test]
async fn a_late_reply_is_kept_and_resumes_nothing_on_dynamodb() {
    a_late_reply_is_kept_and_resumes_nothing(Backend::DynamoDb).await;
}

async fn a_task_for_a_participant_past_its_deadline_is_cancelled(backend: Backend) {
    let script = Script::new(json!([
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "bob", "name": "Measure", "goal": "Measure the shed",
            "reply_within": "2s"}}]},
        {"text": "Measured it myself."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let sent = chrono::Utc::now();
    let id = task_id(&start(&s, "Shed", None).await);
    let child = format!("{id}.1");
    let sub = wait_for_state_as(&s, "bob", &child, "TASK_STATE_INPUT_REQUIRED", WAIT).await;
    let due = due_of(&sub["status"]["message"], sent, Duration::from_secs(2));
    assert_eq!(sub["metadata"][REPLY_BY], due.as_str(), "{sub}");

    let cancelled = wait_for_state_as(&s, "bob", &child, "TASK_STATE_CANCELED", WAIT).await;
    assert_eq!(
        status_text(&cancelled),
        format!("No answer from bob by {due}: the task was cancelled.")
    );
    assert_eq!(
        (texts(&cancelled).iter())
            .filter(|t| t.starts_with("Reminder: bob"))
            .count(),
        1,
        "reminded once, half-way: {cancelled}"
    );
    wait_for_state_as(&s, "alice", &id, "TASK_STATE_COMPLETED", WAIT).await;
    let seen = model_saw(&script, "Shed");
    assert!(
        seen.contains(&format!(
            "Sub-task {child} is CANCELED: No answer from bob by"
        )),
        "{seen}"
    );
}

#[tokio::test]
async fn a_task_for_a_participant_past_its_deadline_is_cancelled_on_the_embedded_store() {
    a_task_for_a_participant_past_its_deadline_is_cancelled(Backend::Embedded).await;
}

#[tokio::test]
async fn a_task_for_a_participant_past_its_deadline_is_cancelled_on_dynamodb() {
    a_task_for_a_participant_past_its_deadline_is_cancelled(Backend::DynamoDb).await;
}

/// The model gives bob a task due in 2 s and asks carol a question with no deadline, in
/// one turn: bob's task is cancelled on time while the parent waits on carol, and the
/// parent takes that outcome in once carol answers.
async fn a_sub_task_expires_while_its_parent_waits_on_a_question(backend: Backend) {
    let script = Script::new(json!([
        {"tool_calls": [
            {"name": "create_task_for_participant", "arguments": {
                "participant_id": "bob", "name": "Measure", "goal": "Measure the shed",
                "reply_within": "2s"}},
            {"name": "ask_participant", "arguments": {
                "participant_id": "carol", "question": "Which brush?"}}
        ]},
        {"text": "Painted."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let id = task_id(&start(&s, "Hutch", None).await);
    let child = format!("{id}.1");
    let cancelled = wait_for_state_as(&s, "bob", &child, "TASK_STATE_CANCELED", WAIT).await;
    assert!(status_text(&cancelled).starts_with("No answer from bob by"));
    let parent = get_task_as(&s, "alice", &id).await;
    assert_eq!(state(&parent), "TASK_STATE_INPUT_REQUIRED", "{parent}");
    let reply = reply_message(&unique("r"), &id, "The wide one");
    let done = send_as(&s, Some("carol"), reply).await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let seen = model_saw(&script, "Hutch");
    assert!(
        seen.contains(&format!(
            "Sub-task {child} is CANCELED: No answer from bob by"
        )),
        "{seen}"
    );
}

#[tokio::test]
async fn a_sub_task_expires_while_its_parent_waits_on_a_question_on_the_embedded_store() {
    a_sub_task_expires_while_its_parent_waits_on_a_question(Backend::Embedded).await;
}

#[tokio::test]
async fn a_sub_task_expires_while_its_parent_waits_on_a_question_on_dynamodb() {
    a_sub_task_expires_while_its_parent_waits_on_a_question(Backend::DynamoDb).await;
}

async fn a_bad_reply_within_is_the_model_s_error(backend: Backend) {
    let script = Script::new(json!([
        ask("bob", "Which colour?", Some("5 weeks")),
        {"text": "Gave up asking."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let task = start(&s, "Roof", None).await;
    let id = task_id(&task);
    let done = wait_for_state_as(&s, "alice", &id, "TASK_STATE_COMPLETED", WAIT).await;
    assert!(
        !texts(&done).iter().any(|t| t.contains("Which colour?")),
        "nothing asked: {done}"
    );
    let seen = model_saw(&script, "Roof");
    assert!(
        seen.contains("reply_within \\\"5 weeks\\\" is not a duration from 1s to 30d"),
        "{seen}"
    );
}

#[tokio::test]
async fn a_bad_reply_within_is_the_model_s_error_on_the_embedded_store() {
    a_bad_reply_within_is_the_model_s_error(Backend::Embedded).await;
}

#[tokio::test]
async fn a_bad_reply_within_is_the_model_s_error_on_dynamodb() {
    a_bad_reply_within_is_the_model_s_error(Backend::DynamoDb).await;
}
