//! Issue 21, must-show 3: a participant's personal channel. bob has a webhook of his own
//! (`--personal-channels`); the scripted model asks him a question; his webhook receives
//! it with a signed link; answering through the link resumes the task; a forged link, an
//! expired-looking one and the same link again are refused, and change nothing. A task
//! the model assigns to bob reaches his webhook the same way, and its link does his work.
//!
//! Issue 47, part B, must-show 6: walt, a watcher, cannot block bob's link by sending
//! first under the id its answer would take (the old `answer:<task>:help:<n>`, a future
//! one, or anything of the answer ids' shape): each is refused and bob's link answers.
//!
//! Issue 47, the review of items 2 and 3: posts to a personal channel are held to an hourly
//! quota per recipient, whatever their source: mallory's sub-tasks for bob on a task of
//! hers, and `/task carol` from ever new sender ids, reach bob and carol at most the cap;
//! the tasks are still made, and dave's one post arrives.
//!
//! Issue 52: a question with a deadline reaches bob's channel with its due time, then once
//! more half-way as a reminder; once it has expired its link answers nothing.
//!
//! Issue 47, review 2: the agent's question is charged to whom the model acts for (the
//! task's actor), never to the reporter the creator's envelope names, so mallory's tasks
//! listing bob with made-up reporters stop at her own quota; and a new task whose envelope
//! lists others counts against her tasks-for-others limit.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use harness_e2e::participants::{participant, rpc_ok_as, task_envelope_part, Script};
use harness_e2e::webhook::Receiver;
use harness_e2e::{assert_rpc_error, state, status_text, task_id, unique, Backend, Server};
use serde_json::{json, Value};

const QUESTION: &str = "Which colour?";
const TENANT: &str = "acme";
const WAIT: Duration = Duration::from_secs(20);

async fn post_answer(s: &Server, token: &str, text: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(s.endpoint("/ui/answer"))
        .json(&json!({"token": token, "text": text}))
        .send()
        .await
        .expect("POST /ui/answer");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The task (alice's, in [`TENANT`]) once it is in `want`.
async fn state_of(s: &Server, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let task = rpc_ok_as(
            s,
            Some("alice"),
            "GetTask",
            json!({"tenant": TENANT, "id": id}),
        )
        .await;
        if state(&task) == want {
            return task;
        }
        assert!(Instant::now() < deadline, "never {want}: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A harness on `backend` whose model follows `steps`, bob's webhook and its files; alice
/// has started her task with bob on it, in [`TENANT`]. None without the backend.
async fn started(backend: Backend, steps: Value) -> Option<(Server, Receiver, String, PathBuf)> {
    started_with(backend, steps, &[]).await
}

/// [`started`] with `extra` arguments for the harness.
async fn started_with(
    backend: Backend,
    steps: Value,
    extra: &[&str],
) -> Option<(Server, Receiver, String, PathBuf)> {
    let hook = Receiver::start().await;
    let dir = std::env::temp_dir().join(unique("personal"));
    std::fs::create_dir_all(&dir).expect("dir");
    let channels = dir.join("channels.toml");
    std::fs::write(&channels, format!("[bob]\nurl = \"{}\"\n", hook.url)).expect("file");
    let script = Script::new(steps);
    let model = script.model();
    let path = channels.display().to_string();
    let mut args = vec![
        "--agent",
        "llm",
        "--model",
        &model,
        "--personal-channels",
        &path,
    ];
    args.extend(extra);
    let s = Server::start_on(backend, &args).await?;
    let people = json!([
        participant("alice", "human", "reporter"),
        participant("bob", "human", "watcher"),
        participant("walt", "human", "watcher")
    ]);
    let message = json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [
        {"text": "Paint the shed"}, task_envelope_part("Shed", "Paint the shed", people)]});
    // In a tenant of its own: the link answers there.
    let sent = rpc_ok_as(
        &s,
        Some("alice"),
        "SendMessage",
        json!({"tenant": TENANT, "message": message}),
    )
    .await;
    Some((s, hook, task_id(&sent["task"]), dir))
}

async fn answered_through_its_link(backend: Backend) {
    let steps = json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "bob", "question": QUESTION}}]},
        {"text": "Painted it."}
    ]);
    let Some((s, hook, id, dir)) = started(backend, steps).await else {
        return;
    };
    state_of(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;

    // bob's own webhook has the question and a link to answer it.
    let told = hook.wait_until("the question", |got| !got.is_empty()).await;
    let body = &told[0].body;
    assert_eq!(body["task_id"], id.as_str(), "{body}");
    assert_eq!(body["question"], QUESTION, "{body}");
    let link = body["answer_url"].as_str().expect("a link").to_owned();
    assert!(body["text"]
        .as_str()
        .is_some_and(|t| t.contains(QUESTION) && t.contains(&link)));
    let (page, token) = link.split_once('#').expect("the token in the fragment");
    assert_eq!(page, s.endpoint("/ui/answer"));

    // Forged: the payload names alice, or the tag is someone else's.
    let (payload, tag) = token.split_once('.').expect("payload.tag");
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).expect("b64")).expect("utf8");
    let as_alice = URL_SAFE_NO_PAD.encode(text.replace("\nbob\n", "\nalice\n"));
    let forged = [
        format!("{as_alice}.{tag}"),
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode([7u8; 32])),
        "not-a-token".to_owned(),
    ];
    for bad in &forged {
        let (status, answer) = post_answer(&s, bad, "Red").await;
        assert_eq!(status, 403, "{bad}: {answer}");
        assert_eq!(answer["error"], "this answer link is not valid");
    }
    let still = state_of(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(still["status"]["message"]["metadata"]["addressee"], "bob");

    // The link answers: the task resumes with bob's reply.
    let (status, answer) = post_answer(&s, token, "Blue").await;
    assert_eq!(status, 200, "{answer}");
    let done = state_of(&s, &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(status_text(&done), "Painted it.");
    let replies: Vec<&Value> = (done["history"].as_array().expect("history").iter())
        .filter(|m| m["metadata"]["participant_id"] == "bob")
        .collect();
    assert_eq!(replies.len(), 1, "{done}");
    assert_eq!(replies[0]["parts"][0]["text"], "Blue");

    // Replayed: refused, and nothing more is stored.
    let (status, answer) = post_answer(&s, token, "Green").await;
    assert_eq!(status, 409, "{answer}");
    let after = state_of(&s, &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(after["history"], done["history"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The first two posts bob's channel gets: the request with its due time, then its
/// reminder (marked, the same due time, its text starting `reminder`).
async fn request_then_reminder(hook: &Receiver, reminder: &str) -> (Value, Value) {
    let told = hook.wait_until("the reminder", |got| got.len() >= 2).await;
    let (first, second) = (told[0].body.clone(), told[1].body.clone());
    let due = first["reply_by"].as_str().expect("a due time");
    assert_eq!(first["reminder"], false, "{first}");
    assert_eq!(second["reminder"], true, "{second}");
    assert_eq!(second["reply_by"], due, "{second}");
    let text = second["text"].as_str().expect("text");
    assert!(text.starts_with(reminder), "{text}");
    (first, second)
}

async fn reminded_then_expired(backend: Backend) {
    let steps = json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "bob", "question": QUESTION, "reply_within": "2s"}}]},
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "walt", "question": "Which brush?"}}]},
        {"text": "Painted it white."}
    ]);
    let Some((s, hook, id, dir)) = started(backend, steps).await else {
        return;
    };
    let (first, second) = request_then_reminder(&hook, "Reminder: You are asked").await;
    let due = first["reply_by"].as_str().expect("a due time");
    let text = first["text"].as_str().expect("text");
    assert!(text.contains(&format!("Answer by {due}.")), "{text}");

    // Expired, the model asks walt: the task waits on, but bob's link answers nothing.
    let deadline = Instant::now() + WAIT;
    let waiting = loop {
        let task = state_of(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;
        if task["status"]["message"]["metadata"]["addressee"] == "walt" {
            break task;
        }
        assert!(Instant::now() < deadline, "walt never asked: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let link = second["answer_url"].as_str().expect("a link");
    let (_, token) = link.split_once('#').expect("the token in the fragment");
    let (status, answer) = post_answer(&s, token, "Blue").await;
    assert_eq!(status, 409, "{answer}");
    let after = state_of(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(after["history"], waiting["history"]);
    assert_eq!(after["status"], waiting["status"]);
    assert_eq!(hook.all().len(), 2, "reminded once");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A task the model gives bob with a deadline reaches his channel with its due time, then
/// once more half-way as a reminder, and no more once it is cancelled.
async fn a_task_reminded_then_cancelled(backend: Backend) {
    let steps = json!([
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "bob", "name": "Measure", "goal": "Measure the shed",
            "reply_within": "2s"}}]},
        {"text": "Measured it myself."}
    ]);
    let Some((s, hook, id, dir)) = started(backend, steps).await else {
        return;
    };
    request_then_reminder(&hook, "Reminder: A task is assigned to you").await;
    state_of(&s, &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        hook.all().len(),
        2,
        "reminded once, nothing after the cancel"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_task_with_a_deadline_is_reminded_once_on_the_channel_on_the_embedded_store() {
    a_task_reminded_then_cancelled(Backend::Embedded).await;
}

#[tokio::test]
async fn a_task_with_a_deadline_is_reminded_once_on_the_channel_on_dynamodb() {
    a_task_reminded_then_cancelled(Backend::DynamoDb).await;
}

#[tokio::test]
async fn a_question_with_a_deadline_is_reminded_once_on_the_channel_on_the_embedded_store() {
    reminded_then_expired(Backend::Embedded).await;
}

#[tokio::test]
async fn a_question_with_a_deadline_is_reminded_once_on_the_channel_on_dynamodb() {
    reminded_then_expired(Backend::DynamoDb).await;
}

/// walt's message on alice's task under `message_id`, as a JSON-RPC answer.
async fn walt_sends(s: &Server, id: &str, message_id: &str) -> Value {
    let message = json!({"messageId": message_id, "taskId": id, "role": "ROLE_USER",
        "parts": [{"text": "Red, says walt"}]});
    let params = json!({"tenant": TENANT, "message": message});
    harness_e2e::participants::rpc_as(s, Some("walt"), "SendMessage", params).await
}

async fn not_blocked_by_a_watcher(backend: Backend) {
    let steps = json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "bob", "question": QUESTION}}]},
        {"text": "Painted it."}
    ]);
    let Some((s, hook, id, dir)) = started(backend, steps).await else {
        return;
    };
    let waiting = state_of(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;
    let help_id = waiting["status"]["message"]["messageId"]
        .as_str()
        .expect("the question's id")
        .to_owned();
    let n: u64 = (help_id.rsplit(':').next())
        .and_then(|n| n.parse().ok())
        .expect("<task>:help:<n>");
    let before = s.store().load_task(&id).await.expect("load").expect("task");

    // walt takes every id he can think of: the old form, future questions', the new
    // shape.
    let mut taken = vec![format!("answer:{help_id}")];
    taken.extend((1..=3).map(|k| format!("answer:{id}:help:{}", n + k)));
    taken.push(format!("answer:{}", "A".repeat(43)));
    let mut answers = Vec::new();
    for mid in &taken {
        answers.push(walt_sends(&s, &id, mid).await);
    }
    let after = s.store().load_task(&id).await.expect("load").expect("task");

    // bob's link still answers, and the task resumes.
    let told = hook.wait_until("the question", |got| !got.is_empty()).await;
    let link = told[0].body["answer_url"]
        .as_str()
        .expect("a link")
        .to_owned();
    let token = link.split_once('#').expect("the token").1;
    let (status, answer) = post_answer(&s, token, "Blue").await;
    assert_eq!(status, 200, "{answer}");
    let done = state_of(&s, &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(status_text(&done), "Painted it.");
    let from_bob: Vec<&Value> = (done["history"].as_array().expect("history").iter())
        .filter(|m| m["metadata"]["participant_id"] == "bob")
        .collect();
    assert_eq!(from_bob.len(), 1, "{done}");
    let bobs_id = from_bob[0]["messageId"].as_str().expect("its id");
    assert!(!bobs_id.contains(&help_id) && !taken.iter().any(|t| t == bobs_id));

    // Each of walt's was refused, naming the field, stored nowhere, and audited.
    for (mid, answer) in taken.iter().zip(&answers) {
        assert_rpc_error(answer, -32602, "INVALID_PARAMS");
        let said = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            said.contains("messageId") && said.contains("answer links"),
            "{said}"
        );
        let stored = s
            .store()
            .message_task(TENANT, "walt", mid)
            .await
            .expect("read");
        assert_eq!(stored, None, "{mid}");
    }
    assert_eq!(after.version, before.version, "nothing stored");
    let trail = s.store().audit_trail(&id).await.expect("audit trail");
    for mid in &taken {
        assert!(
            trail.iter().any(|r| &r.message_id == mid && !r.accepted),
            "{mid} audited: {trail:?}"
        );
    }
    // Not even bob sends under an answer link's id himself.
    let message = json!({"messageId": format!("answer:{}", "B".repeat(43)), "role": "ROLE_USER",
        "parts": [{"text": "mine"}]});
    let params = json!({"tenant": TENANT, "message": message});
    let own = harness_e2e::participants::rpc_as(&s, Some("bob"), "SendMessage", params).await;
    assert_rpc_error(&own, -32602, "INVALID_PARAMS");
    let _ = std::fs::remove_dir_all(&dir);
}

async fn assigned_through_its_link(backend: Backend) {
    let steps = json!([
        {"tool_calls": [{"name": "create_task_for_participant", "arguments": {
            "participant_id": "bob", "name": "Measure", "goal": "Measure the shed"}}]},
        {"text": "Painted."}
    ]);
    let Some((s, hook, id, dir)) = started(backend, steps).await else {
        return;
    };
    let told = hook
        .wait_until("the assignment", |got| !got.is_empty())
        .await;
    let body = &told[0].body;
    let sub_task = format!("{id}.1");
    assert_eq!(body["task_id"], sub_task.as_str(), "{body}");
    assert_eq!(body["question"], "Measure the shed", "{body}");
    assert!(body["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("A task is assigned to you: \"Measure\"")));
    let link = body["answer_url"].as_str().expect("a link");
    let token = link.split_once('#').expect("the token").1;

    // The link does bob's work: his message completes the sub-task, which wakes alice's.
    let (status, answer) = post_answer(&s, token, "3 by 4 metres").await;
    assert_eq!(status, 200, "{answer}");
    let done = state_of(&s, &sub_task, "TASK_STATE_COMPLETED").await;
    let from_bob: Vec<&Value> = (done["history"].as_array().expect("history").iter())
        .filter(|m| m["metadata"]["participant_id"] == "bob")
        .collect();
    assert_eq!(from_bob.len(), 1, "{done}");
    assert_eq!(from_bob[0]["parts"][0]["text"], "3 by 4 metres");
    let parent = state_of(&s, &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(status_text(&parent), "Painted.");
    let (status, _) = post_answer(&s, token, "again").await;
    assert_eq!(status, 409);
    assert_eq!(hook.all().len(), 1, "told once");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Posts past the recipient's cap (3 here) are not made, by the sub-task path or from
/// rotating sender ids; the tasks they announce still exist and wait on their assignee.
async fn posts_held_to_the_recipients_cap(backend: Backend) {
    use harness_e2e::identity::{send, Via, Who};
    let hooks = [
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
    ];
    let dir = std::env::temp_dir().join(unique("personal"));
    std::fs::create_dir_all(&dir).expect("dir");
    let channels = dir.join("channels.toml");
    let text = (["bob", "carol", "dave"].iter().zip(&hooks))
        .map(|(who, hook)| format!("[{who}]\nurl = \"{}\"\n", hook.url))
        .collect::<String>();
    std::fs::write(&channels, text).expect("file");
    let path = channels.display().to_string();
    let args = [
        "--personal-channels",
        &path,
        "--posts-per-recipient-per-hour",
        "3",
    ];
    let Some(s) = Server::start_on(backend, &args).await else {
        return;
    };
    let [bob, carol, dave] = &hooks;
    let mallory = Who::header("mallory");
    let command = |text: &str, on: Option<&str>| match on {
        Some(task) => harness_e2e::reply_message(&unique("m"), task, text),
        None => harness_e2e::user_message(&unique("m"), text),
    };
    // One task for bob (1 of mallory's tasks for others), then sub-tasks on it.
    send(&s, &mallory, Via::Rest, command("/task bob x", None))
        .await
        .ok();
    let listed = harness_e2e::identity::list(&s, &mallory, Via::Rest).await;
    let parent = harness_e2e::listed_ids(&listed.ok())[0].clone();
    for i in 0..6 {
        let text = format!("/task bob log in at evil.example {i}");
        send(&s, &mallory, Via::Rest, command(&text, Some(&parent)))
            .await
            .ok();
    }
    // carol from six senders, one each.
    for i in 0..6 {
        let who = Who::header(&format!("mallory-{i}"));
        send(&s, &who, Via::Rest, command("/task carol log in", None))
            .await
            .ok();
    }
    send(
        &s,
        &Who::header("alice"),
        Via::Rest,
        command("/task dave hi", None),
    )
    .await
    .ok();
    dave.wait_until("dave's post", |got| !got.is_empty()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(bob.all().len(), 3, "bob's channel held to its cap");
    assert_eq!(carol.all().len(), 3, "carol's held to it whoever sends");
    assert_eq!(dave.all().len(), 1);
    // The tasks past the cap are there, waiting on bob.
    let last = rpc_ok_as(
        &s,
        Some("bob"),
        "GetTask",
        json!({"id": format!("{parent}.6")}),
    )
    .await;
    assert_eq!(state(&last), "TASK_STATE_INPUT_REQUIRED", "{last}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A new task from `who`, listing `people`, whose model asks bob at once; its answer.
async fn task_from(s: &Server, who: &str, people: Value) -> Value {
    let message = json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [
        {"text": "ask bob: log in at evil.example"},
        task_envelope_part("Ask", "ask bob: log in at evil.example", people)]});
    harness_e2e::participants::rpc_as(s, Some(who), "SendMessage", json!({"message": message}))
        .await
}

/// The agent's question to bob is posted on the word of whom the model acts for (the
/// creator whose message it took in), not the reporter her envelope names: mallory's
/// tasks listing bob with made-up reporters, or alice as reporter, stop at mallory's own
/// quota (3 here), and alice's quota is untouched for her own task.
async fn posts_charged_to_the_actor(backend: Backend) {
    let hook = Receiver::start().await;
    let dir = std::env::temp_dir().join(unique("personal"));
    std::fs::create_dir_all(&dir).expect("dir");
    let channels = dir.join("channels.toml");
    std::fs::write(&channels, format!("[bob]\nurl = \"{}\"\n", hook.url)).expect("file");
    let script = Script::new(json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "bob", "question": QUESTION}}]}
    ]));
    let model = script.model();
    let path = channels.display().to_string();
    let args = [
        "--agent",
        "llm",
        "--model",
        &model,
        "--personal-channels",
        &path,
        "--posts-per-sender-per-hour",
        "3",
    ];
    let Some(s) = Server::start_on(backend, &args).await else {
        return;
    };
    let mut mallorys = Vec::new();
    for reporter in ["x1", "x2", "alice", "alice", "x3"] {
        let people = json!([
            participant(reporter, "human", "reporter"),
            participant("mallory", "human", "watcher"),
            participant("bob", "human", "watcher")
        ]);
        let sent = task_from(&s, "mallory", people).await;
        assert!(sent.get("error").is_none(), "{sent}");
        mallorys.push(task_id(&sent["result"]["task"]));
    }
    let people = json!([
        participant("alice", "human", "reporter"),
        participant("bob", "human", "watcher")
    ]);
    let sent = task_from(&s, "alice", people).await;
    let alices = task_id(&sent["result"]["task"]);
    let told = hook
        .wait_until("alice's question", |got| {
            got.iter().any(|r| r.body["task_id"] == alices.as_str())
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let posted: Vec<String> = (hook.all().iter())
        .map(|r| r.body["task_id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        posted.len(),
        4,
        "mallory's 3 and alice's 1 ({} seen): {posted:?}",
        told.len()
    );
    assert_eq!(
        posted.iter().filter(|t| mallorys.contains(t)).count(),
        3,
        "mallory's own quota stops her whatever reporter she names"
    );
    // Her tasks past it are made all the same, each waiting on bob.
    for id in &mallorys {
        let task = rpc_ok_as(&s, Some("bob"), "GetTask", json!({"id": id})).await;
        assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A new task whose envelope lists anyone but its sender counts against her
/// tasks-for-others limit (2 here): the third is refused naming the limit, audited, and
/// nothing is stored; a task listing only herself is not counted.
async fn envelope_tasks_held_to_the_tasks_for_others_limit(backend: Backend) {
    let Some(s) = Server::start_on(backend, &["--tasks-for-others-per-hour", "2"]).await else {
        return;
    };
    let listing_bob = || {
        json!([
            participant("x1", "human", "reporter"),
            participant("mallory", "human", "watcher"),
            participant("bob", "human", "watcher")
        ])
    };
    for _ in 0..2 {
        let sent = task_from(&s, "mallory", listing_bob()).await;
        assert!(sent.get("error").is_none(), "{sent}");
    }
    let bobs = || async {
        let listed = rpc_ok_as(&s, Some("bob"), "ListTasks", json!({})).await;
        listed["tasks"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(bobs().await, 2);
    let mid = unique("m");
    let message = json!({"messageId": mid, "role": "ROLE_USER", "parts": [
        {"text": "ask bob"}, task_envelope_part("Ask", "ask bob", listing_bob())]});
    let refused = harness_e2e::participants::rpc_as(
        &s,
        Some("mallory"),
        "SendMessage",
        json!({"message": message}),
    )
    .await;
    assert_rpc_error(&refused, -32602, "INVALID_PARAMS");
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("at most 2 an hour"), "{said}");
    assert_eq!(bobs().await, 2, "nothing stored");
    let stored = s.store().message_task("", "mallory", &mid).await;
    assert_eq!(stored.expect("read"), None);
    let trail = s.store().audit_trail("").await.expect("audit trail");
    assert!(
        trail
            .iter()
            .any(|r| r.message_id == mid && r.participant == "mallory" && !r.accepted),
        "{trail:?}"
    );
    // Her own task, listing only herself, is not a task for someone else.
    let own = json!([participant("mallory", "human", "reporter")]);
    let sent = task_from(&s, "mallory", own).await;
    assert!(sent.get("error").is_none(), "{sent}");
}

/// `who`'s refusal past the tasks-for-others limit: -32602 naming it, audited (on `task`,
/// "" for a new one), the message `mid` not stored.
async fn refused_past_the_limit(s: &Server, who: &str, refused: &Value, task: &str, mid: &str) {
    assert_rpc_error(refused, -32602, "INVALID_PARAMS");
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("at most 2 an hour"), "{said}");
    let stored = s.store().message_task("", who, mid).await;
    assert_eq!(stored.expect("read"), None);
    let trail = s.store().audit_trail(task).await.expect("audit trail");
    assert!(
        trail
            .iter()
            .any(|r| r.message_id == mid && r.participant == who && !r.accepted),
        "{trail:?}"
    );
}

/// Review 3: an envelope that adds others to a task counts as a task for them, so a task
/// started listing only its sender cannot take them on past the limit (2 here) later;
/// and a new task's message sent again under its id counts once.
async fn tasks_for_others_counted_on_tasks_and_once_per_message(backend: Backend) {
    let Some(s) = Server::start_on(backend, &["--tasks-for-others-per-hour", "2"]).await else {
        return;
    };
    let send_as = |who: &'static str, message: Value| {
        let s = &s;
        async move {
            let params = json!({"message": message});
            harness_e2e::participants::rpc_as(s, Some(who), "SendMessage", params).await
        }
    };
    let send = |message: Value| send_as("mallory", message);
    let bobs = || async {
        let listed = rpc_ok_as(&s, Some("bob"), "ListTasks", json!({})).await;
        listed["tasks"].as_array().map_or(0, Vec::len)
    };
    // Her own tasks (the conformance agent leaves them waiting), each not counted; then
    // bob and carol added to each: the third addition is refused, and bob is not on it.
    let others = json!([
        participant("mallory", "human", "admin"),
        participant("bob", "human", "watcher"),
        participant("carol", "human", "watcher")
    ]);
    for n in 0..3 {
        let own = json!([participant("mallory", "human", "admin")]);
        let started = send(json!({"messageId": unique("tck-input-required"),
            "role": "ROLE_USER", "parts": [{"text": "mine"}, task_envelope_part("Mine", "mine", own)]}))
        .await;
        assert!(started.get("error").is_none(), "{started}");
        let task = task_id(&started["result"]["task"]);
        let mid = unique("tck-input-required");
        let added = send(
            json!({"messageId": mid, "taskId": task, "role": "ROLE_USER",
            "parts": [{"text": "bob and carol too"},
                      {"mediaType": harness_e2e::participants::EVENT_MEDIA_TYPE,
                       "data": {"kind": "task", "payload": {"participants": others}}}]}),
        )
        .await;
        if n < 2 {
            assert!(added.get("error").is_none(), "{added}");
        } else {
            refused_past_the_limit(&s, "mallory", &added, &task, &mid).await;
        }
    }
    assert_eq!(bobs().await, 2, "bob is on the first two only");

    // trudy's new task sent twice under one id counts once, so one more fits.
    let listing_bob = json!([participant("bob", "human", "watcher")]);
    let task_for_bob = |mid: &str| {
        json!({"messageId": mid, "role": "ROLE_USER", "parts": [
            {"text": "ask bob"}, task_envelope_part("Ask", "ask bob", listing_bob.clone())]})
    };
    let mid = unique("m");
    let first = send_as("trudy", task_for_bob(&mid)).await;
    let again = send_as("trudy", task_for_bob(&mid)).await;
    assert!(first.get("error").is_none(), "{first}");
    assert!(again.get("error").is_none(), "{again}");
    assert_eq!(
        task_id(&first["result"]["task"]),
        task_id(&again["result"]["task"])
    );
    let second = send_as("trudy", task_for_bob(&unique("m"))).await;
    assert!(
        second.get("error").is_none(),
        "the resend was counted: {second}"
    );
    let mid = unique("m");
    let third = send_as("trudy", task_for_bob(&mid)).await;
    refused_past_the_limit(&s, "trudy", &third, "", &mid).await;
}

#[tokio::test]
async fn the_agents_question_is_charged_to_the_actor_not_a_named_reporter_on_the_embedded_store() {
    posts_charged_to_the_actor(Backend::Embedded).await;
}

#[tokio::test]
async fn the_agents_question_is_charged_to_the_actor_not_a_named_reporter_on_dynamodb() {
    posts_charged_to_the_actor(Backend::DynamoDb).await;
}

#[tokio::test]
async fn a_new_task_naming_others_is_held_to_the_tasks_for_others_limit_on_the_embedded_store() {
    envelope_tasks_held_to_the_tasks_for_others_limit(Backend::Embedded).await;
}

#[tokio::test]
async fn a_new_task_naming_others_is_held_to_the_tasks_for_others_limit_on_dynamodb() {
    envelope_tasks_held_to_the_tasks_for_others_limit(Backend::DynamoDb).await;
}

#[tokio::test]
async fn others_added_on_a_task_and_resent_tasks_are_counted_once_on_the_embedded_store() {
    tasks_for_others_counted_on_tasks_and_once_per_message(Backend::Embedded).await;
}

#[tokio::test]
async fn others_added_on_a_task_and_resent_tasks_are_counted_once_on_dynamodb() {
    tasks_for_others_counted_on_tasks_and_once_per_message(Backend::DynamoDb).await;
}

#[tokio::test]
async fn posts_to_a_personal_channel_are_held_to_the_recipients_cap_on_the_embedded_store() {
    posts_held_to_the_recipients_cap(Backend::Embedded).await;
}

#[tokio::test]
async fn posts_to_a_personal_channel_are_held_to_the_recipients_cap_on_dynamodb() {
    posts_held_to_the_recipients_cap(Backend::DynamoDb).await;
}

#[tokio::test]
async fn a_help_request_reaches_bobs_own_webhook_and_its_link_answers_once_on_the_embedded_store() {
    answered_through_its_link(Backend::Embedded).await;
}

#[tokio::test]
async fn a_help_request_reaches_bobs_own_webhook_and_its_link_answers_once_on_dynamodb() {
    answered_through_its_link(Backend::DynamoDb).await;
}

#[tokio::test]
async fn a_task_assigned_to_bob_reaches_his_webhook_and_its_link_does_it_on_the_embedded_store() {
    assigned_through_its_link(Backend::Embedded).await;
}

#[tokio::test]
async fn a_task_assigned_to_bob_reaches_his_webhook_and_its_link_does_it_on_dynamodb() {
    assigned_through_its_link(Backend::DynamoDb).await;
}

#[tokio::test]
async fn a_watcher_using_the_links_id_first_cannot_block_bobs_answer_on_the_embedded_store() {
    not_blocked_by_a_watcher(Backend::Embedded).await;
}

#[tokio::test]
async fn a_watcher_using_the_links_id_first_cannot_block_bobs_answer_on_dynamodb() {
    not_blocked_by_a_watcher(Backend::DynamoDb).await;
}

/// An answer link's POST must be declared JSON, like every body the harness takes (issue
/// 48, item 1): a page's form or text/plain post, which a browser sends without asking
/// first, is refused 415 with a valid token, where the Origin check is off
/// (`--allowed-hosts '*'`, as in the Lambda functions); the task still waits, and the
/// link then answers as JSON.
#[tokio::test]
async fn an_answer_not_declared_json_is_refused() {
    let steps = json!([
        {"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "bob", "question": QUESTION}}]},
        {"text": "Painted it."}
    ]);
    let Some((s, hook, id, dir)) =
        started_with(Backend::Embedded, steps, &["--allowed-hosts", "*"]).await
    else {
        return;
    };
    state_of(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;
    let told = hook.wait_until("the question", |got| !got.is_empty()).await;
    let link = told[0].body["answer_url"]
        .as_str()
        .expect("a link")
        .to_owned();
    let (_, token) = link.split_once('#').expect("the token in the fragment");
    let body = json!({"token": token, "text": "Red"}).to_string();
    for content_type in [
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut post = reqwest::Client::new()
            .post(s.endpoint("/ui/answer"))
            .header("Origin", "http://evil.example")
            .body(body.clone());
        if let Some(ct) = content_type {
            post = post.header("Content-Type", ct);
        }
        let resp = post.send().await.expect("POST /ui/answer");
        assert_eq!(resp.status().as_u16(), 415, "{content_type:?}");
    }
    let still = state_of(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(still["status"]["message"]["metadata"]["addressee"], "bob");
    let (status, answer) = post_answer(&s, token, "Blue").await;
    assert_eq!(status, 200, "{answer}");
    state_of(&s, &id, "TASK_STATE_COMPLETED").await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 48, item 9: a personal channel at a plain `http://` URL on another host, or a
/// public URL its answer links would point at there, is refused at start-up (the post
/// carries a link whose token answers for bob), saying why and without the channel's URL
/// (a secret); `--allow-http-urls` takes both, and http to this machine is always taken.
#[tokio::test]
async fn a_personal_channel_or_answer_link_in_the_clear_is_refused_unless_allowed() {
    let dir = std::env::temp_dir().join(unique("cleartext"));
    std::fs::create_dir_all(&dir).expect("dir");
    let state = dir.join("state").display().to_string();
    let file = |name: &str, url: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("[bob]\nurl = \"{url}\"\n")).expect("file");
        path.display().to_string()
    };
    let far = file("far.toml", "http://chat.example/hooks/s3cret");
    let near = file("near.toml", "http://127.0.0.1:9/hook");
    let args = |channels: &str, public: &str| {
        vec![
            "--state-dir".to_owned(),
            state.clone(),
            "--personal-channels".to_owned(),
            channels.to_owned(),
            "--public-url".to_owned(),
            public.to_owned(),
        ]
    };
    let refused = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, text) = harness_e2e::start_refused(&args, &[]);
        assert_eq!(code, Some(1), "{text}");
        assert!(
            text.contains("in the clear") && text.contains("HARNESS_ALLOW_HTTP_URLS"),
            "{text}"
        );
        assert!(
            !text.contains("s3cret") && !text.contains("serving"),
            "{text}"
        );
    };
    refused(args(&far, "https://harness.example"));
    refused(args(&near, "http://harness.example"));
    // Allowed, or on this machine, it starts.
    let s = Server::start_with(&["--personal-channels", &far, "--allow-http-urls"]).await;
    drop(s);
    let s = Server::start_with(&["--personal-channels", &near]).await;
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
