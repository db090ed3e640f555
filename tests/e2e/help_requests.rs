//! harness-local with the LLM agent on the scripted model: the participant intrinsics over
//! HTTP, on both stores.
//!
//! - `create_task_for_participant`: the sub-task is created and linked both ways, the
//!   parent waits WORKING (no model call) until the assignee's message completes the
//!   child, then takes the child's outcome in and completes.
//! - `set_participant_role`: only an admin actor may change roles; a stranger cannot even
//!   reach the task.
//! - `request_help` through `help.decided`: a valid decision is used, an invalid one is
//!   run again once with the objection, a second invalid one fails clearly.
//! - `ask_participant` for a stranger is refused without leaking membership, and the task
//!   goes on.
//!
//! One script and one request log serve every task of a server; the n-th model call of a
//! task gets the n-th turn, and requests are told apart by the task's name.

use std::time::Duration;

use harness_e2e::participants::{
    get_task_as, llm_server, participant, participants, rpc_as, send_as, task_envelope_part,
    task_ext, Script, AGENT_ID,
};
use harness_e2e::{
    assert_rpc_error, reply_message, state, status_text, task_id, unique, user_message, Backend,
};
use serde_json::{json, Value};

/// How the system prompt of a `help.decided` model call starts.
const ROUTER_PROMPT: &str = "You route a request for help on a task.";
/// Whether `text` is an untrusted block from `source` (`tool`: a tool result; `agent`:
/// another participant's words, such as a sub-task's outcome), delimited with the task's
/// nonce: `<untrusted-<16 hex digits> source="<source>">`.
fn framed(text: &str, source: &str) -> bool {
    let Some((nonce, rest)) = text
        .strip_prefix("<untrusted-")
        .and_then(|t| t.split_once(' '))
    else {
        return false;
    };
    nonce.len() == 16
        && nonce.chars().all(|c| c.is_ascii_hexdigit())
        && rest.starts_with(&format!("source=\"{source}\">"))
        && text.ends_with(&format!("</untrusted-{nonce}>"))
}
const OBJECTION: &str =
    "the need is work another participant must finish; route must be create_task";
const WAIT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------- helpers

/// A first message carrying a task envelope (name, goal, participants) and some text.
fn envelope(text: &str, name: &str, goal: &str, participants: Value) -> Value {
    json!({
        "messageId": unique("m"),
        "role": "ROLE_USER",
        "parts": [{"text": text}, task_envelope_part(name, goal, participants)]
    })
}

/// The participants of a task as sorted `(id, kind, role)`.
fn sorted_participants(task: &Value) -> Vec<(String, String, String)> {
    let mut all: Vec<_> = participants(task)
        .as_array()
        .unwrap_or_else(|| panic!("task without participants: {task}"))
        .iter()
        .map(|p| {
            let field = |k: &str| p[k].as_str().unwrap_or_default().to_owned();
            (field("id"), field("kind"), field("role"))
        })
        .collect();
    all.sort();
    all
}

fn who(id: &str, kind: &str, role: &str) -> (String, String, String) {
    (id.to_owned(), kind.to_owned(), role.to_owned())
}

fn role_of<'a>(task: &'a Value, id: &str) -> &'a str {
    participants(task)
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"] == id)
        .and_then(|p| p["role"].as_str())
        .unwrap_or_else(|| panic!("{id} is not a participant: {task}"))
}

/// Whether a request is a `help.decided` call rather than one of the task's own turns.
fn is_routing(req: &Value) -> bool {
    req["system"]
        .as_str()
        .is_some_and(|s| s.starts_with(ROUTER_PROMPT))
}

fn turns(reqs: &[Value]) -> Vec<u64> {
    reqs.iter().filter_map(|r| r["turn"].as_u64()).collect()
}

/// The texts of a request's user messages.
fn user_texts(req: &Value) -> Vec<&str> {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str())
        .collect()
}

/// The result of the `tool` call a request carries (panics if it carries none).
fn tool_result<'a>(req: &'a Value, tool: &str) -> &'a Value {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "tool" && m["name"] == tool)
        .unwrap_or_else(|| panic!("no {tool} result in the request: {req}"))
}

/// The result of `tool` is framed as a tool result, has `is_error` as given and holds
/// `text`; returns its content.
fn assert_tool_result<'a>(req: &'a Value, tool: &str, is_error: bool, text: &str) -> &'a str {
    let result = tool_result(req, tool);
    let content = result["content"].as_str().unwrap_or_default();
    assert!(framed(content, "tool"), "not framed: {result}");
    assert!(
        content.contains(text),
        "{tool} result lacks {text:?}: {result}"
    );
    assert_eq!(result["is_error"], is_error, "{tool} is_error: {result}");
    content
}

/// A scripted call of `name` with `arguments`.
fn call(name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"name": name, "arguments": arguments}]})
}

/// A scripted `help.decided` answer.
fn decide(decision: Value) -> Value {
    call("decide_help", decision)
}

// ------------------------------------------------------------------------- sub-tasks

/// Answers `tests/integration/help/test_help_requests.py` (b) and `unit/core/test_loop.py`
/// "spawn links sub_tasks and waits for children" (embedded store).
#[tokio::test]
async fn a_sub_task_for_a_participant_is_linked_awaited_and_its_outcome_resumes_the_parent_embedded(
) {
    sub_task_flow(Backend::Embedded).await;
}

/// Answers `tests/integration/help/test_help_requests.py` (b) and `unit/core/test_loop.py`
/// "spawn links sub_tasks and waits for children" (DynamoDB store).
#[tokio::test]
async fn a_sub_task_for_a_participant_is_linked_awaited_and_its_outcome_resumes_the_parent_dynamodb(
) {
    sub_task_flow(Backend::DynamoDb).await;
}

/// Cancelling a parent cancels its open sub-task (and the parent is not woken by it).
async fn cancel_reaches_the_sub_task(backend: Backend) {
    let script = Script::new(json!([
        call("create_task_for_participant", json!({
            "participant_id": "alice", "name": "Provision staging",
            "goal": "Provision the staging database"})),
        {"text": "Never reached."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let alice = participant("alice", "human", "watcher");
    let first = envelope("Ship it", &unique("release"), "Ship it", json!([alice]));
    let parent_id = task_id(&send_as(&s, None, first).await);
    let child_id = format!("{parent_id}.1");
    assert_eq!(
        state(&s.get_task(&child_id).await),
        "TASK_STATE_INPUT_REQUIRED"
    );
    let cancelled = s.rpc_ok("CancelTask", json!({"id": parent_id})).await;
    assert_eq!(state(&cancelled), "TASK_STATE_CANCELED", "{cancelled}");
    let child = s.get_task(&child_id).await;
    assert_eq!(state(&child), "TASK_STATE_CANCELED", "{child}");
    assert_eq!(
        turns(&script.requests()),
        [0],
        "no model call after the cancel"
    );
}

#[tokio::test]
async fn cancelling_a_parent_cancels_its_sub_task_on_the_embedded_store() {
    cancel_reaches_the_sub_task(Backend::Embedded).await;
}

#[tokio::test]
async fn cancelling_a_parent_cancels_its_sub_task_on_dynamodb() {
    cancel_reaches_the_sub_task(Backend::DynamoDb).await;
}

async fn sub_task_flow(backend: Backend) {
    let script = Script::new(json!([
        call("create_task_for_participant", json!({
            "participant_id": "alice",
            "name": "Provision staging",
            "goal": "Provision the staging database",
            "acceptance_criteria": ["The database answers on port 5432"]
        })),
        {"text": "Release 2.0 shipped."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let name = unique("release");
    let alice = participant("alice", "human", "watcher");
    let first = envelope(
        "Ship release 2.0",
        &name,
        "Ship release 2.0",
        json!([alice]),
    );
    let parent = send_as(&s, None, first).await;
    let parent_id = task_id(&parent);
    let child_id = format!("{parent_id}.1");

    // The parent waits for its child, WORKING, linked to it.
    assert_eq!(state(&parent), "TASK_STATE_WORKING", "{parent}");
    assert_eq!(
        task_ext(&parent)["sub_tasks"],
        json!([{ "task_id": child_id }]),
        "{parent}"
    );
    assert_eq!(
        sorted_participants(&parent),
        [
            who("alice", "human", "watcher"),
            who("anonymous", "human", "reporter"),
            who(AGENT_ID, "agent", "assignee"),
        ]
    );

    // The child: assigned to alice, the harness demoted to watcher, linked back, waiting
    // for alice with its goal as the status message.
    let child = s.get_task(&child_id).await;
    assert_eq!(state(&child), "TASK_STATE_INPUT_REQUIRED", "{child}");
    assert_eq!(status_text(&child), "Provision the staging database");
    let child_ext = task_ext(&child);
    assert_eq!(child_ext["name"], "Provision staging", "{child}");
    assert_eq!(child_ext["goal"], "Provision the staging database");
    assert_eq!(
        child_ext["acceptance_criteria"],
        json!([{"text": "The database answers on port 5432", "met": false}])
    );
    assert_eq!(
        child_ext["parent_tasks"],
        json!([{ "task_id": parent_id }]),
        "{child}"
    );
    assert_eq!(
        sorted_participants(&child),
        [
            who("alice", "human", "assignee"),
            who("anonymous", "human", "reporter"),
            who(AGENT_ID, "agent", "watcher"),
        ]
    );
    assert_eq!(
        turns(&script.requests()),
        [0],
        "only the parent's turn 0 ran"
    );

    // A remark from a participant who is not the assignee does not complete the child,
    // and the parent still waits without calling the model.
    let remark = send_as(
        &s,
        None,
        reply_message(&unique("m"), &child_id, "Any news?"),
    )
    .await;
    assert_eq!(state(&remark), "TASK_STATE_INPUT_REQUIRED", "{remark}");
    let child = s.get_task(&child_id).await;
    assert_eq!(state(&child), "TASK_STATE_INPUT_REQUIRED", "{child}");
    assert_eq!(state(&s.get_task(&parent_id).await), "TASK_STATE_WORKING");
    assert_eq!(turns(&script.requests()), [0], "the parent waited");

    // The assignee's message is the child's outcome; the parent resumes and completes.
    let answer = "Staging database is up at db.staging:5432";
    let done = send_as(
        &s,
        Some("alice"),
        reply_message(&unique("m"), &child_id, answer),
    )
    .await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(status_text(&done), answer);
    let parent = s
        .wait_for_state(&parent_id, "TASK_STATE_COMPLETED", WAIT)
        .await;
    assert_eq!(status_text(&parent), "Release 2.0 shipped.");

    // Every model call was the parent's: the child, a participant's task, made none.
    let reqs = script.requests();
    assert_eq!(turns(&reqs), [0, 1], "{reqs:?}");
    assert_eq!(script.requests_of(&name).len(), 2, "{reqs:?}");
    let record = s
        .store()
        .load_task(&child_id)
        .await
        .expect("load the child")
        .expect("the child is stored");
    assert_eq!(record.agent.model_calls, 0, "the child called the model");
    assert!(record.agent.conversation.is_empty());

    // The parent's turn 1 holds the tool result and then the child's outcome, framed as
    // another participant's words.
    let resumed = &reqs[1];
    assert_tool_result(
        resumed,
        "create_task_for_participant",
        false,
        "task for alice created",
    );
    let note = format!("Sub-task {child_id} is COMPLETED: {answer}");
    let texts = user_texts(resumed);
    assert!(
        texts
            .iter()
            .any(|t| framed(t, "agent") && t.contains(&note)),
        "no {note:?} in an untrusted block: {texts:?}"
    );
    let messages = resumed["messages"].as_array().expect("messages");
    let result_at = messages.iter().position(|m| m["role"] == "tool");
    let note_at = messages
        .iter()
        .position(|m| m["role"] == "user" && m["text"].as_str().is_some_and(|t| t.contains(&note)));
    assert!(result_at < note_at, "the note comes after the tool result");
}

// ----------------------------------------------------------------------- role change

/// Answers `tests/security/test_role_change.py::test_role_change_requires_admin`
/// (embedded store).
#[tokio::test]
async fn only_an_admin_may_change_roles_embedded() {
    role_change(Backend::Embedded).await;
}

/// Answers `tests/security/test_role_change.py::test_role_change_requires_admin`
/// (DynamoDB store).
#[tokio::test]
async fn only_an_admin_may_change_roles_dynamodb() {
    role_change(Backend::DynamoDb).await;
}

/// The people on every role-change task: `bob` is the one whose role the agent changes.
fn role_cast() -> Value {
    json!([
        participant("ada", "human", "admin"),
        participant("wendy", "human", "watcher"),
        participant("rita", "human", "reporter"),
        participant("bob", "human", "watcher"),
    ])
}

/// The actor is whoever sent the message the agent took in last. A reporter's and a
/// watcher's request to change a role are refused, an admin's is carried out. The other
/// cases of the original: a stranger cannot reach the task at all (its message gets the
/// not-found of a missing task), and a call with no actor (not reachable over HTTP, where
/// every message has a sender) is covered by the unit test of `set_participant_role`.
async fn role_change(backend: Backend) {
    // The request the model cites: each first message below has this id (a message id is
    // its sender's own, so rita's and ada's do not collide).
    let request = unique("request");
    let promote = json!({"participant_id": "bob", "role": "admin", "request_message_id": request});
    let script = Script::new(json!([
        call("set_participant_role", promote.clone()),
        {"text": "Roles handled."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };

    // A reporter actor: refused, bob stays a watcher.
    let name = unique("reporter-asks");
    let mut first = envelope("Make bob an admin", &name, "Make bob an admin", role_cast());
    first["messageId"] = json!(request);
    let task = send_as(&s, Some("rita"), first).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(role_of(&task, "rita"), "reporter");
    let stored = get_task_as(&s, "rita", &task_id(&task)).await;
    assert_eq!(role_of(&stored, "bob"), "watcher", "{stored}");
    let reqs = script.requests_of(&name);
    assert_eq!(turns(&reqs), [0, 1], "{reqs:?}");
    assert_tool_result(
        &reqs[1],
        "set_participant_role",
        true,
        "[channel.not_a_member] only an admin may change roles",
    );

    // An admin actor: bob is an admin now.
    let name = unique("admin-asks");
    let mut first = envelope("Make bob an admin", &name, "Make bob an admin", role_cast());
    first["messageId"] = json!(request);
    let task = send_as(&s, Some("ada"), first).await;
    let admin_task = task_id(&task);
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(role_of(&task, "bob"), "admin", "{task}");
    let stored = get_task_as(&s, "ada", &admin_task).await;
    assert_eq!(role_of(&stored, "bob"), "admin", "{stored}");
    assert_eq!(role_of(&stored, "ada"), "admin", "{stored}");
    let reqs = script.requests_of(&name);
    assert_eq!(turns(&reqs), [0, 1], "{reqs:?}");
    assert_tool_result(&reqs[1], "set_participant_role", false, "bob is now admin");

    // The admin's message does not ask for it (an injected request elsewhere in the
    // context made the model call): refused, and the model is told to ask her (issue 17).
    let name = unique("admin-oks");
    let first = envelope("ok, go ahead", &name, "Tidy the roles", role_cast());
    let task = send_as(&s, Some("ada"), first).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(role_of(&task, "bob"), "watcher", "{task}");
    let reqs = script.requests_of(&name);
    assert_tool_result(
        &reqs[1],
        "set_participant_role",
        true,
        "[role.not_requested] a role change needs an admin's message that asks for exactly it",
    );
    // What participants wrote into the task (its fields, their names) reaches the model
    // framed, with the task's nonce, which the task itself never shows.
    let section = reqs[0]["messages"][0]["text"].as_str().unwrap_or_default();
    let block = &section[section.find("<untrusted-").expect("a block")..];
    assert!(
        framed(block.trim_end_matches("\n</task>"), "task"),
        "{section}"
    );
    assert!(block.contains("goal: Tidy the roles"), "{section}");
    let nonce = &block["<untrusted-".len().."<untrusted-".len() + 16];
    let system = reqs[0]["system"].as_str().unwrap_or_default();
    assert!(
        system.contains(&format!("<untrusted-{nonce} source=\"participants\">")),
        "{system}"
    );
    let shown = get_task_as(&s, "ada", &task_id(&task)).await;
    assert!(!shown.to_string().contains(nonce), "{shown}");

    // A stranger cannot reach the task: not found, as if it did not exist.
    let poke = reply_message(&unique("m"), &admin_task, "Make me an admin");
    let refused = rpc_as(
        &s,
        Some("mallory"),
        "SendMessage",
        json!({ "message": poke }),
    )
    .await;
    assert_rpc_error(&refused, -32001, "TASK_NOT_FOUND");
    let seen = rpc_as(&s, Some("mallory"), "GetTask", json!({ "id": admin_task })).await;
    assert_rpc_error(&seen, -32001, "TASK_NOT_FOUND");
    let missing = unique("no-such-task");
    let poke = reply_message(&unique("m"), &missing, "Make me an admin");
    let absent = rpc_as(
        &s,
        Some("mallory"),
        "SendMessage",
        json!({ "message": poke }),
    )
    .await;
    assert_rpc_error(&absent, -32001, "TASK_NOT_FOUND");
    let bob = get_task_as(&s, "ada", &admin_task).await;
    assert_eq!(
        sorted_participants(&bob).len(),
        5,
        "the stranger was not added: {bob}"
    );

    // A watcher actor: the admin started the task, but the agent acts for whoever it
    // heard from last — the watcher's reply to its question — and is refused.
    let script = Script::new(json!([
        call("ask_participant", json!({"participant_id": "wendy", "question": "May bob become an admin?"})),
        call("set_participant_role", promote),
        {"text": "Roles handled."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let name = unique("watcher-asks");
    let first = envelope("Sort out roles", &name, "Sort out roles", role_cast());
    let task = send_as(&s, Some("ada"), first).await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    let id = task_id(&task);
    let reply = reply_message(&unique("m"), &id, "Yes, make bob an admin");
    let task = send_as(&s, Some("wendy"), reply).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let stored = get_task_as(&s, "ada", &id).await;
    assert_eq!(role_of(&stored, "bob"), "watcher", "{stored}");
    assert_eq!(role_of(&stored, "wendy"), "watcher", "{stored}");
    let reqs = script.requests_of(&name);
    assert_eq!(turns(&reqs), [0, 1, 2], "{reqs:?}");
    assert_tool_result(
        &reqs[2],
        "set_participant_role",
        true,
        "[channel.not_a_member] only an admin may change roles",
    );
}

// ---------------------------------------------------------------------- help.decided

/// Answers `unit/channels/test_channels.py` (the validator, the retry once with the
/// objection, the failure after a second objection), through `request_help` over HTTP
/// (embedded store).
#[tokio::test]
async fn help_decided_uses_a_valid_decision_reruns_an_invalid_one_once_then_fails_embedded() {
    help_decided(Backend::Embedded).await;
}

/// Answers `unit/channels/test_channels.py` (the validator, the retry once with the
/// objection, the failure after a second objection), through `request_help` over HTTP
/// (DynamoDB store).
#[tokio::test]
async fn help_decided_uses_a_valid_decision_reruns_an_invalid_one_once_then_fails_dynamodb() {
    help_decided(Backend::DynamoDb).await;
}

/// The first message of a task that needs help from `alice`.
fn needs_alice(name: &str) -> Value {
    let alice = participant("alice", "human", "watcher");
    envelope(
        "Deploy the service",
        name,
        "Deploy the service",
        json!([alice]),
    )
}

/// Checks a `help.decided` call: the router's prompt, its one tool, and whether its user
/// message carries the objection.
fn assert_routing(req: &Value, need: &str, objected: bool) {
    assert!(is_routing(req), "not a help.decided call: {req}");
    let tools: Vec<&str> = req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["decide_help"], "{req}");
    let texts = user_texts(req);
    assert_eq!(texts.len(), 1, "{req}");
    assert!(texts[0].contains(need), "the need is shown: {}", texts[0]);
    let objection = format!("Your previous decision was rejected: {OBJECTION}");
    assert_eq!(
        texts[0].contains(&objection),
        objected,
        "objection shown? {}",
        texts[0]
    );
}

async fn help_decided(backend: Backend) {
    valid_decision_is_used(backend).await;
    invalid_decision_is_rerun_with_the_objection(backend).await;
    second_invalid_decision_fails_clearly(backend).await;
}

/// A valid decision (ask, for a need that is not blocking work) is carried out: the task
/// asks alice, and her reply resumes it.
async fn valid_decision_is_used(backend: Backend) {
    let need = "Which region should the service run in?";
    let question = "Which region: eu-west-1 or us-east-1?";
    let script = Script::new(json!([
        call("request_help", json!({"need": need, "blocking_work": false, "participant_id": "alice"})),
        decide(json!({"route": "ask", "participant_id": "alice", "question": question, "reason": "one message answers it"})),
        {"text": "Deployed to eu-west-1."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let name = unique("valid-decision");
    let task = send_as(&s, None, needs_alice(&name)).await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    assert_eq!(status_text(&task), question, "{task}");
    let id = task_id(&task);
    let reqs = script.requests();
    assert_eq!(turns(&reqs), [0, 1], "{reqs:?}");
    assert!(!is_routing(&reqs[0]));
    assert_routing(&reqs[1], need, false);

    let task = send_as(
        &s,
        Some("alice"),
        reply_message(&unique("m"), &id, "eu-west-1"),
    )
    .await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(status_text(&task), "Deployed to eu-west-1.");
    let reqs = script.requests_of(&name);
    assert_eq!(turns(&reqs), [0, 1, 2], "{reqs:?}");
    assert!(!is_routing(&reqs[2]));
    assert_tool_result(&reqs[2], "request_help", false, "asked alice");
    let reply = format!("Reply from alice to \"{question}\": eu-west-1");
    assert!(
        user_texts(&reqs[2]).contains(&reply.as_str()),
        "{}",
        reqs[2]
    );
}

/// An ask for blocking work is objected to; the second run sees the objection and
/// creates the task, which is used.
async fn invalid_decision_is_rerun_with_the_objection(backend: Backend) {
    let need = "Provision the staging database";
    let script = Script::new(json!([
        call("request_help", json!({"need": need, "blocking_work": true, "participant_id": "alice"})),
        decide(json!({"route": "ask", "participant_id": "alice", "question": "Can you provision it?"})),
        decide(json!({"route": "create_task", "participant_id": "alice", "name": "Provision staging", "goal": need, "reason": "work alice must finish"})),
        {"text": "Deployed on the new database."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let name = unique("rerun-decision");
    let parent = send_as(&s, None, needs_alice(&name)).await;
    assert_eq!(state(&parent), "TASK_STATE_WORKING", "{parent}");
    let parent_id = task_id(&parent);
    let child_id = format!("{parent_id}.1");
    assert_eq!(
        task_ext(&parent)["sub_tasks"],
        json!([{ "task_id": child_id }])
    );
    let child = s.get_task(&child_id).await;
    assert_eq!(state(&child), "TASK_STATE_INPUT_REQUIRED", "{child}");
    assert_eq!(status_text(&child), need);
    assert_eq!(task_ext(&child)["name"], "Provision staging");
    assert_eq!(role_of(&child, "alice"), "assignee");

    let reqs = script.requests();
    assert_eq!(turns(&reqs), [0, 1, 2], "{reqs:?}");
    assert_routing(&reqs[1], need, false);
    assert_routing(&reqs[2], need, true);

    let done = "The database is up";
    let child = send_as(
        &s,
        Some("alice"),
        reply_message(&unique("m"), &child_id, done),
    )
    .await;
    assert_eq!(state(&child), "TASK_STATE_COMPLETED", "{child}");
    let parent = s
        .wait_for_state(&parent_id, "TASK_STATE_COMPLETED", WAIT)
        .await;
    assert_eq!(status_text(&parent), "Deployed on the new database.");
    let reqs = script.requests_of(&name);
    assert_eq!(turns(&reqs), [0, 1, 2, 3], "{reqs:?}");
    assert!(!is_routing(&reqs[3]));
    assert_tool_result(&reqs[3], "request_help", false, "task for alice created");
    let note = format!("Sub-task {child_id} is COMPLETED: {done}");
    assert!(
        user_texts(&reqs[3]).iter().any(|t| t.contains(&note)),
        "{}",
        reqs[3]
    );
}

/// Two asks for blocking work: `request_help` fails with the objection, the model sees
/// the error at its next turn (the two routing calls counted), and finishes the task.
async fn second_invalid_decision_fails_clearly(backend: Backend) {
    let need = "Provision the staging database";
    let ask =
        json!({"route": "ask", "participant_id": "alice", "question": "Can you provision it?"});
    let script = Script::new(json!([
        call("request_help", json!({"need": need, "blocking_work": true, "participant_id": "alice"})),
        decide(ask.clone()),
        decide(ask),
        {"text": "Nobody could provision the database."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let name = unique("rejected-twice");
    let task = send_as(&s, None, needs_alice(&name)).await;
    let id = task_id(&task);
    let task = s.wait_for_state(&id, "TASK_STATE_COMPLETED", WAIT).await;
    assert_eq!(
        status_text(&task),
        "Nobody could provision the database.",
        "{task}"
    );
    assert!(task_ext(&task).get("sub_tasks").is_none(), "{task}");

    let reqs = script.requests();
    let after = reqs
        .iter()
        .find(|r| {
            r["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["name"] == "request_help")
        })
        .unwrap_or_else(|| panic!("the model never saw the request_help result: {reqs:?}"));
    assert!(!is_routing(after));
    let failure = format!("[help.rejected] help decision rejected twice: {OBJECTION}");
    assert_tool_result(after, "request_help", true, &failure);
    assert_eq!(
        after["turn"], 3,
        "the two help.decided calls count as the task's turns 1 and 2: {after}"
    );
    assert_eq!(
        turns(&reqs),
        [0, 1, 2, 3],
        "each turn asked for once: {reqs:?}"
    );
    assert_routing(&reqs[1], need, false);
    assert_routing(&reqs[2], need, true);
}

// -------------------------------------------------------------------- asking strangers

/// Answers `unit/core/test_loop.py::test_asking_a_stranger_is_refused_without_leaking_membership`
/// (embedded store).
#[tokio::test]
async fn asking_a_stranger_is_refused_without_leaking_membership_embedded() {
    asking_a_stranger(Backend::Embedded).await;
}

/// Answers `unit/core/test_loop.py::test_asking_a_stranger_is_refused_without_leaking_membership`
/// (DynamoDB store).
#[tokio::test]
async fn asking_a_stranger_is_refused_without_leaking_membership_dynamodb() {
    asking_a_stranger(Backend::DynamoDb).await;
}

/// The agent asks someone who is not on the task: the tool result is an error that names
/// no one, the task never waits for the stranger, and the model finishes it.
async fn asking_a_stranger(backend: Backend) {
    let script = Script::new(json!([
        call("ask_participant", json!({"participant_id": "mallory", "question": "Which region?"})),
        {"text": "Deployed without asking."}
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let text = format!("Deploy the service ({})", unique("stranger"));
    let task = send_as(&s, None, user_message(&unique("m"), &text)).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(status_text(&task), "Deployed without asking.");
    assert_eq!(
        sorted_participants(&task),
        [
            who("anonymous", "human", "reporter"),
            who(AGENT_ID, "agent", "assignee"),
        ]
    );

    let reqs = script.requests();
    assert_eq!(turns(&reqs), [0, 1], "{reqs:?}");
    let content = assert_tool_result(
        &reqs[1],
        "ask_participant",
        true,
        "[channel.not_a_member] no such participant on this task",
    );
    for id in ["mallory", "anonymous", AGENT_ID] {
        assert!(!content.contains(id), "the refusal names {id}: {content}");
    }
}
