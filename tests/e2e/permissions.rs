//! The permission table (`common::ext::permissions`, common/docs/identity.md, "Who may do what"), one
//! test per row, each on both bindings: a participant without the right gets invalid
//! params naming the rule and nothing is stored; a stranger gets the task's not-found.
//!
//! Every task here is started by alice (reporter) with a task envelope naming ada (admin)
//! and walt (watcher); the harness is the assignee.

use harness_e2e::identity::*;
use std::time::{Duration, Instant};

use harness_e2e::participants::{
    participant, task_envelope_part, wait_for_state_as, Script, CHANNEL_MEDIA_TYPE,
};
use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

fn alice() -> Who {
    Who::header("alice")
}
fn ada() -> Who {
    Who::header("ada")
}
fn walt() -> Who {
    Who::header("walt")
}
fn mallory() -> Who {
    Who::header("mallory")
}

async fn server() -> Server {
    Server::start_with(&[FAIL_CLOSED]).await
}

/// alice as reporter, ada as admin and walt as watcher.
fn team() -> Value {
    json!([
        participant("alice", "human", "reporter"),
        participant("ada", "human", "admin"),
        participant("walt", "human", "watcher"),
    ])
}

/// alice's new task (waiting for input), with ada as admin and walt as watcher.
async fn team_task(s: &Server, via: Via) -> String {
    let m = json!({"messageId": unique("tck-input-required"), "role": "ROLE_USER",
        "parts": [{"text": "Paint the shed"}, task_envelope_part("Shed", "Paint the shed", team())]});
    let task = send(s, &alice(), via, m).await.ok()["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    task_id(&task)
}

/// A message on `task` whose only part is `text` (a command, or a remark).
fn on_task(task: &str, text: &str) -> Value {
    reply_message(&unique("tck-input-required"), task, text)
}

/// A message on `task` carrying a task envelope that changes `payload`.
fn envelope_on(task: &str, payload: Value) -> Value {
    json!({"messageId": unique("tck-input-required"), "taskId": task, "role": "ROLE_USER",
        "parts": [{"text": "update"},
                  {"mediaType": participants::EVENT_MEDIA_TYPE,
                   "data": {"kind": "task", "payload": payload}}]})
}

/// Checks a member's refusal: invalid params naming `rule`, and the message (with its
/// sender) not stored.
async fn refused(s: &Server, answer: Answer, rule: &str, message: Option<(&str, &Value)>) {
    answer.invalid_params();
    assert!(answer.message().contains(rule), "{}", answer.text);
    if let Some((sender, m)) = message {
        let id = m["messageId"].as_str().expect("messageId");
        let stored = s.store().message_task("", sender, id).await.expect("read");
        assert_eq!(stored, None);
    }
}

fn role_of(task: &Value, id: &str) -> String {
    task["metadata"][participants::TASK_KEY]["participants"]
        .as_array()
        .expect("participants")
        .iter()
        .find(|p| p["id"] == id)
        .and_then(|p| p["role"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The text of the command reply a send answered with (the task's status message).
fn reply_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Row: any participant sees the task and speaks on it; a stranger does neither.
#[tokio::test]
async fn any_participant_sees_the_task_and_speaks_on_it() {
    let s = server().await;
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        for who in [alice(), ada(), walt()] {
            assert_eq!(task_id(&get(&s, &who, via, &id).await.ok()), id);
            assert!(listed_ids(&list(&s, &who, via).await.ok()).contains(&id));
            let remark = on_task(&id, "nice colour");
            let after = send(&s, &who, via, remark).await.ok()["task"].clone();
            assert_eq!(task_id(&after), id);
        }
        get(&s, &mallory(), via, &id).await.not_found();
        send(&s, &mallory(), via, on_task(&id, "hi"))
            .await
            .not_found();
    }
}

/// Row: the reporter, the assignee or an admin cancels; a watcher may not.
#[tokio::test]
async fn the_reporter_the_assignee_or_an_admin_cancels() {
    let s = server().await;
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        let answer = cancel(&s, &walt(), via, &id).await;
        refused(
            &s,
            answer,
            "only the task's reporter, its assignee or an admin may cancel it",
            None,
        )
        .await;
        cancel(&s, &mallory(), via, &id).await.not_found();
        assert_eq!(
            state(&get(&s, &alice(), via, &id).await.ok()),
            "TASK_STATE_INPUT_REQUIRED"
        );
        assert_eq!(
            state(&cancel(&s, &ada(), via, &id).await.ok()),
            "TASK_STATE_CANCELED"
        );
        let id = team_task(&s, via).await;
        assert_eq!(
            state(&cancel(&s, &alice(), via, &id).await.ok()),
            "TASK_STATE_CANCELED"
        );
        // walt, the assignee of a sub-task made for him, declines it; on its parent,
        // where he only watches, he still may not cancel.
        let id = team_task(&s, via).await;
        send(&s, &alice(), via, on_task(&id, "/task walt Buy the paint"))
            .await
            .ok();
        let child = format!("{id}.1");
        assert_eq!(
            state(&cancel(&s, &walt(), via, &child).await.ok()),
            "TASK_STATE_CANCELED"
        );
        cancel(&s, &walt(), via, &id).await.invalid_params();
    }
}

/// Row: the reporter or an admin edits the name, description and criteria.
#[tokio::test]
async fn the_reporter_or_an_admin_edits_the_task() {
    let s = server().await;
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        let by_walt = envelope_on(&id, json!({"name": "Walt's shed"}));
        let answer = send(&s, &walt(), via, by_walt.clone()).await;
        refused(
            &s,
            answer,
            "may change its name, description or acceptance criteria",
            Some(("walt", &by_walt)),
        )
        .await;
        let by_alice = envelope_on(&id, json!({"name": "Blue shed"}));
        send(&s, &alice(), via, by_alice).await.ok();
        let task = get(&s, &walt(), via, &id).await.ok();
        assert_eq!(
            task["metadata"][participants::TASK_KEY]["name"],
            "Blue shed",
            "{task}"
        );
    }
}

/// Row: the reporter or an admin chooses the model (`/model <name>`); anyone may ask
/// which it is.
#[tokio::test]
async fn the_reporter_or_an_admin_chooses_the_model() {
    let s = server().await;
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        let by_walt = on_task(&id, "/model big");
        let answer = send(&s, &walt(), via, by_walt.clone()).await;
        refused(&s, answer, "may choose its model", Some(("walt", &by_walt))).await;
        // Asking is not choosing; this agent has no model to choose.
        let asked = send(&s, &walt(), via, on_task(&id, "/model")).await.ok()["task"].clone();
        assert_eq!(reply_text(&asked), "this agent uses no model");
        let chosen = send(&s, &ada(), via, on_task(&id, "/model big")).await.ok()["task"].clone();
        assert_eq!(reply_text(&chosen), "this agent uses no model");
    }
}

/// Row: the reporter or an admin creates a sub-task for a participant (`/task`).
#[tokio::test]
async fn the_reporter_or_an_admin_creates_sub_tasks() {
    let s = server().await;
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        let by_walt = on_task(&id, "/task ada Buy the paint");
        let answer = send(&s, &walt(), via, by_walt.clone()).await;
        refused(
            &s,
            answer,
            "may create a sub-task on it",
            Some(("walt", &by_walt)),
        )
        .await;
        let made = send(&s, &alice(), via, on_task(&id, "/task walt Buy the paint"))
            .await
            .ok();
        let text = reply_text(&made["task"]);
        assert!(text.ends_with("created for walt"), "{made}");
    }
}

/// Row: only participants see a task, also in the answer to a blocking send: walt's
/// message is taken while the task works, ada takes him off it, and walt is answered with
/// the task as his message left it, not with what happened after.
#[tokio::test]
async fn a_blocking_send_answers_only_with_what_its_sender_may_see() {
    let script = Script::new(json!([
        {"text": "The shed is painted.", "delay_ms": 3000},
        {"text": "Noted."}
    ]));
    let Some(s) = harness_e2e::participants::llm_server(Backend::Embedded, &script).await else {
        return;
    };
    let id = working_team_task(&s, &unique("m"), "Paint the shed").await;

    let walt_says = unique("walt");
    let walts = {
        let (url, message) = (
            s.endpoint("/"),
            reply_message(&walt_says, &id, "Blue, please"),
        );
        let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": "SendMessage",
            "params": {"message": message}});
        let headers = walt().headers();
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let resp = client
                .post(url)
                .headers(headers)
                .body(body.to_string())
                .send()
                .await;
            resp.expect("walt's send")
                .text()
                .await
                .expect("walt's answer")
        })
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    while !get(&s, &alice(), Via::JsonRpc, &id)
        .await
        .text
        .contains(&walt_says)
    {
        assert!(Instant::now() < deadline, "walt's message was not taken");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    send_at_once(&s, &ada(), walt_off(&id)).await;

    let answer = tokio::time::timeout(Duration::from_secs(20), walts)
        .await
        .expect("walt was answered")
        .expect("walt's send ran");
    assert!(answer.contains(&walt_says), "{answer}");
    assert!(!answer.contains("walt is off this task"), "{answer}");
    assert!(!answer.contains("The shed is painted"), "{answer}");
}

/// alice's new task with the [`team`], once it is WORKING: `message_id` picks what the
/// agent does with `text`.
async fn working_team_task(s: &Server, message_id: &str, text: &str) -> String {
    let m = json!({"messageId": message_id, "role": "ROLE_USER",
        "parts": [{"text": text}, task_envelope_part("Shed", "Paint the shed", team())]});
    let id = task_id(&send_at_once(s, &alice(), m).await["task"]);
    wait_for_state_as(
        s,
        "alice",
        &id,
        "TASK_STATE_WORKING",
        Duration::from_secs(3),
    )
    .await;
    id
}

/// ada's message that takes walt off `task`.
fn walt_off(task: &str) -> Value {
    let people = json!([
        participant("alice", "human", "reporter"),
        participant("ada", "human", "admin"),
    ]);
    json!({"messageId": unique("roster"), "taskId": task, "role": "ROLE_USER",
        "parts": [{"text": "walt is off this task"},
                  {"mediaType": participants::EVENT_MEDIA_TYPE,
                   "data": {"kind": "task", "payload": {"participants": people}}}]})
}

/// SendMessage as `who` with `returnImmediately` (a message on a working task is then
/// stored at once, not held for the drive that has the task).
async fn send_at_once(s: &Server, who: &Who, message: Value) -> Value {
    let params = json!({"message": message, "configuration": {"returnImmediately": true}});
    let rest = (
        Method::POST,
        "/message:send".to_owned(),
        Some(params.clone()),
    );
    call(s, who, Via::JsonRpc, "SendMessage", params, rest)
        .await
        .ok()
}

/// SubscribeToTask as `who`, left open: its events as they come.
async fn subscribed(s: &Server, who: &Who, via: Via, id: &str) -> SseReader {
    let resp = match via {
        Via::JsonRpc => {
            let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": "SubscribeToTask",
                "params": {"id": id}});
            s.rpc_raw(&who.headers(), body.to_string()).await
        }
        Via::Rest => {
            let path = format!("/tasks/{id}:subscribe");
            s.rest_raw(Method::GET, &path, &who.headers(), "").await
        }
    };
    SseReader::new(expect_stream(resp, "SubscribeToTask").await)
}

/// Row: only participants see a task, also while they follow it: walt's stream of a
/// working task ends when ada takes him off it, with the task's not-found (a stranger's
/// answer) and before anything that happened after.
#[tokio::test]
async fn a_participant_taken_off_a_task_stops_following_it() {
    let s = server().await;
    for via in Via::BOTH {
        // WORKING for 4 s, then COMPLETED.
        let id = working_team_task(&s, &unique("test-resubscribe-message-id"), "slow").await;

        let mut walt_follows = subscribed(&s, &walt(), via, &id).await;
        let first = walt_follows.next().await.expect("the task");
        assert_eq!(first.state(), Some("TASK_STATE_WORKING"));
        send_at_once(&s, &ada(), walt_off(&id)).await;

        let mut after = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(15);
        while let Some(event) = walt_follows.next_before(deadline).await {
            after.push(event);
        }
        let ended = after.pop().expect("the stream's end");
        assert!(after.is_empty(), "walt saw, after the task: {after:?}");
        assert_eq!(ended.event.as_deref(), Some("error"), "{ended:?}");
        let code = match via {
            Via::JsonRpc => &ended.data["error"]["code"],
            Via::Rest => &ended.data["error"]["status"],
        };
        let want = match via {
            Via::JsonRpc => json!(-32001),
            Via::Rest => json!("NOT_FOUND"),
        };
        assert_eq!(code, &want, "{ended:?}");
        wait_for_state_as(
            &s,
            "ada",
            &id,
            "TASK_STATE_COMPLETED",
            Duration::from_secs(10),
        )
        .await;
        get(&s, &walt(), via, &id).await.not_found();
    }
}

/// Row: the reporter or an admin manages the task's webhooks: the four config
/// operations, and a config attached to a message.
#[tokio::test]
async fn the_reporter_or_an_admin_manages_webhooks() {
    let s = server().await;
    const RULE: &str = "may manage its push notification configs";
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        refused(
            &s,
            create_push(&s, &walt(), via, &id, "w").await,
            RULE,
            None,
        )
        .await;
        assert_eq!(
            create_push(&s, &alice(), via, &id, "a").await.ok()["id"],
            "a"
        );
        refused(&s, get_push(&s, &walt(), via, &id, "a").await, RULE, None).await;
        refused(&s, list_push(&s, &walt(), via, &id).await, RULE, None).await;
        refused(
            &s,
            delete_push(&s, &walt(), via, &id, "a").await,
            RULE,
            None,
        )
        .await;
        let m = on_task(&id, "and tell me");
        let answer = send_with_webhook(&s, &walt(), via, m.clone()).await;
        refused(&s, answer, RULE, Some(("walt", &m))).await;
        // Still there, for those who may see it.
        assert_eq!(get_push(&s, &ada(), via, &id, "a").await.ok()["id"], "a");
        let configs = list_push(&s, &alice(), via, &id).await.ok();
        assert_eq!(
            configs["configs"].as_array().map(Vec::len),
            Some(1),
            "{configs}"
        );
        list_push(&s, &mallory(), via, &id).await.not_found();
    }
}

/// Row: only an admin changes participants and roles (`/role`, or an envelope).
#[tokio::test]
async fn only_an_admin_changes_participants_and_roles() {
    let s = server().await;
    const RULE: &str = "only an admin may change participants or roles";
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        let by_alice = on_task(&id, "/role walt admin");
        let answer = send(&s, &alice(), via, by_alice.clone()).await;
        refused(&s, answer, RULE, Some(("alice", &by_alice))).await;
        let people = json!([participant("alice", "human", "admin")]);
        let by_alice = envelope_on(&id, json!({"participants": people}));
        let answer = send(&s, &alice(), via, by_alice.clone()).await;
        refused(&s, answer, RULE, Some(("alice", &by_alice))).await;
        let done = send(&s, &ada(), via, on_task(&id, "/role walt reporter"))
            .await
            .ok();
        assert_eq!(reply_text(&done["task"]), "walt is now reporter", "{done}");
        assert_eq!(
            role_of(&get(&s, &ada(), via, &id).await.ok(), "walt"),
            "reporter"
        );
        assert_eq!(
            role_of(&get(&s, &ada(), via, &id).await.ok(), "alice"),
            "reporter"
        );
    }
}

/// Row: the participant asked, or an admin, answers a help request. Another member's
/// `help_reply` to it is refused; their plain message is a remark that leaves it waiting.
#[tokio::test]
async fn the_participant_asked_or_an_admin_answers_a_help_request() {
    let script = Script::new(json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "walt", "question": "Which colour?"}}]},
        {"text": "Painted it."}
    ]));
    let model = script.model();
    let s = Server::start_with(&["--agent", "llm", "--model", &model, FAIL_CLOSED]).await;
    for via in Via::BOTH {
        let people = json!([
            participant("alice", "human", "reporter"),
            participant("ada", "human", "admin"),
            participant("walt", "human", "watcher"),
        ]);
        let m = json!({"messageId": unique("m"), "role": "ROLE_USER",
            "parts": [{"text": "Paint the shed"}, task_envelope_part("Shed", "Paint the shed", people)]});
        let task = send(&s, &alice(), via, m).await.ok()["task"].clone();
        assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
        let id = task_id(&task);
        let help_id = task["status"]["message"]["messageId"]
            .as_str()
            .expect("id")
            .to_owned();
        // alice answering the question put to walt.
        let reply = json!({"messageId": unique("m"), "taskId": id, "role": "ROLE_USER",
            "parts": [{"mediaType": CHANNEL_MEDIA_TYPE, "data": {"channel_id": id,
                "sender": "alice", "kind": "help_reply", "text": "red", "in_reply_to": help_id}}]});
        let answer = send(&s, &alice(), via, reply.clone()).await;
        refused(
            &s,
            answer,
            "only the participant asked or an admin may answer",
            Some(("alice", &reply)),
        )
        .await;
        // Her remark is stored; the task still waits.
        let remark = send(&s, &alice(), via, on_task(&id, "red would be nice"))
            .await
            .ok();
        assert_eq!(
            state(&remark["task"]),
            "TASK_STATE_INPUT_REQUIRED",
            "{remark}"
        );
        // ada, an admin, answers for walt.
        let done = send(&s, &ada(), via, on_task(&id, "blue")).await.ok()["task"].clone();
        assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    }
    let last = script.requests().last().cloned().expect("a model request");
    assert!(
        last.to_string()
            .contains("Reply from ada to \\\"Which colour?\\\": blue"),
        "{last}"
    );
}
