//! Commands (commands extension v1) over HTTP, on both stores: a message whose only part
//! is the text `/<name> <arguments>`, with `<name>` registered, runs on the harness and
//! never reaches the model.
//!
//! - The card lists the built-in commands, in registration order.
//! - On a task, over JSON-RPC and HTTP+JSON, blocking and streaming, a command is answered
//!   by a status update in the task's unchanged state whose message (role agent, one text
//!   part) and metadata carry `{"command": <name>}` (plus `task_ref` for `/task`); a stream
//!   shows the Task, that update, and ends. No model call is made.
//! - `/model <name>` changes the model of that task's next model call, and only that
//!   task's.
//! - A task waiting for a reply keeps waiting after a command; the reply resumes it.
//! - An unregistered `/foo` is an ordinary message; a command from a non-member gets the
//!   not-found of a missing task; every command is audited.
//! - Without a task id, a command is answered by a direct message and no task is created.
//!
//! The LLM agent runs on two scripted models from a models file, `a` (the default) and
//! `b`, each logging its requests to its own file, so the tests count model calls and see
//! which model made each one.

use std::path::PathBuf;

use harness_e2e::participants::*;
use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

const COMMANDS_EXTENSION: &str =
    "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1";
const FIRST: &str = "Paint the shed";
const QUESTION: &str = "Which colour?";
const ANSWER_A: &str = "Model a painted it.";
const ANSWER_B: &str = "Model b painted it.";
/// What `/help` answers: every command with its arguments and description.
const HELP: &str = "/model [<model>] — Show or choose this task's model\n\
                    /help — List the commands\n\
                    /participants — List this task's participants and their roles\n\
                    /role <participant> <role> — Change a participant's role (admins only)\n\
                    /task <participant> <goal> — Create a task for a participant";
/// What a command that needs a task answers without one.
const NEEDS_A_TASK: &str = "this command works on a task: send it with the task's id";
const INPUT_REQUIRED: &str = "TASK_STATE_INPUT_REQUIRED";
const COMPLETED: &str = "TASK_STATE_COMPLETED";

// ---------------------------------------------------------------------------- models

/// Two scripted models in a models file: `a`, the default, whose turn 0 asks alice and
/// whose turn 1 answers [`ANSWER_A`]; and `b`, whose turn 1 answers [`ANSWER_B`]. Each
/// logs to its own request log. The file is removed at drop.
struct Models {
    a: Script,
    b: Script,
    file: PathBuf,
}

impl Models {
    fn new() -> Models {
        let ask = json!({"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "alice", "question": QUESTION}}]});
        let a = Script::new(json!([ask, {"text": ANSWER_A}]));
        let b =
            Script::new(json!([{"text": "model b never answers a turn 0"}, {"text": ANSWER_B}]));
        let file = std::env::temp_dir().join(format!("{}.toml", unique("harness-models")));
        let toml = format!(
            "default = \"a\"\n\n\
             [models.a]\nprovider = \"scripted\"\nmodel = {:?}\n\n\
             [models.b]\nprovider = \"scripted\"\nmodel = {:?}\n",
            script_path(&a),
            script_path(&b)
        );
        std::fs::write(&file, toml).expect("write the models file");
        Models { a, b, file }
    }

    /// A server whose LLM agent uses this models file; None when `backend` is not
    /// configured.
    async fn server(&self, backend: Backend) -> Option<Server> {
        let file = self.file.display().to_string();
        Server::start_on(backend, &["--agent", "llm", "--models", &file]).await
    }

    /// Model calls made so far, by either model.
    fn calls(&self) -> usize {
        self.a.requests().len() + self.b.requests().len()
    }

    /// What `/model` answers on a task that has not chosen one: the default by its name.
    fn default_reply(&self) -> String {
        "model: a (the default)\nchoices: a, b".to_owned()
    }
}

impl Drop for Models {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The script file of a scripted model (its model id in a models file).
fn script_path(script: &Script) -> String {
    let model = script.model();
    model
        .strip_prefix("scripted:")
        .expect("a scripted model")
        .to_owned()
}

/// The model id a scripted model's requests carry: `scripted:` and its file's stem.
fn script_id(script: &Script) -> String {
    let path = script_path(script);
    let stem = std::path::Path::new(&path)
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a file stem");
    format!("scripted:{stem}")
}

// ------------------------------------------------------------------- calls and answers

/// How a message is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    RpcSend,
    RpcStream,
    RestSend,
    RestStream,
}

const EVERY_WAY: [Via; 4] = [Via::RpcSend, Via::RpcStream, Via::RestSend, Via::RestStream];

impl Via {
    fn streams(self) -> bool {
        matches!(self, Via::RpcStream | Via::RestStream)
    }
}

/// Sends `message` as `who` via `via`; the answer as StreamResponses: the one result of a
/// blocking call (`{"task": …}` or `{"message": …}`), or every event of a stream.
async fn send_via(s: &Server, via: Via, who: &str, message: Value) -> Vec<Value> {
    let params = send_params(message);
    let headers = headers_as(Some(who));
    match via {
        Via::RpcSend => vec![rpc_ok_as(s, Some(who), "SendMessage", params).await],
        Via::RestSend => {
            let resp = s
                .rest_raw(Method::POST, "/message:send", &headers, params.to_string())
                .await;
            let (status, body) = json_of(resp).await;
            assert_eq!(status, 200, "POST /message:send as {who}: {body}");
            vec![body]
        }
        Via::RpcStream | Via::RestStream => {
            let resp = if via == Via::RpcStream {
                let body = json!({"jsonrpc": "2.0", "id": unique("stream"),
                                  "method": "SendStreamingMessage", "params": params});
                s.rpc_raw(&headers, body.to_string()).await
            } else {
                s.rest_raw(
                    Method::POST,
                    "/message:stream",
                    &headers,
                    params.to_string(),
                )
                .await
            };
            let events = read_sse(expect_stream(resp, &format!("{via:?}")).await).await;
            events
                .iter()
                .map(|e| {
                    let _ = e.kind(); // exactly one member
                    e.stream_response().clone()
                })
                .collect()
        }
    }
}

/// The StreamResponse members set in an answer, in order.
fn answer_kinds(answer: &[Value]) -> Vec<String> {
    answer
        .iter()
        .map(|r| {
            let keys: Vec<&String> = r.as_object().expect("an object").keys().collect();
            assert_eq!(keys.len(), 1, "one member: {r}");
            keys[0].clone()
        })
        .collect()
}

/// The command a text names (`/role bob admin` → `role`).
fn command_name(text: &str) -> &str {
    text.trim_start_matches('/')
        .split_whitespace()
        .next()
        .unwrap_or_default()
}

/// A command's reply message: from the agent, one text part, the command in its
/// metadata. Returns its text.
fn assert_reply<'a>(reply: &'a Value, name: &str) -> &'a str {
    assert_eq!(reply["role"], "ROLE_AGENT", "{reply}");
    let parts = reply["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 1, "one part: {reply}");
    assert_eq!(reply["metadata"]["command"], name, "{reply}");
    assert!(
        reply["messageId"].as_str().is_some_and(|m| !m.is_empty()),
        "{reply}"
    );
    parts[0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text part: {reply}"))
}

/// Sends the command `text` as `who` on task `id`, which is in `state_now`, via `via`. The
/// answer is a status update in that same state: a blocking call returns the task with
/// the reply as its status message; a stream shows the task, then the update, and ends.
/// No model call is made, and the task is still in `state_now`. Returns the reply message.
async fn command_on(
    s: &Server,
    models: &Models,
    via: Via,
    who: &str,
    id: &str,
    text: &str,
    state_now: &str,
) -> Value {
    let name = command_name(text);
    let calls = models.calls();
    let answer = send_via(s, via, who, reply_message(&unique("m"), id, text)).await;
    let what = format!("{text:?} via {via:?}: {answer:?}");
    let task = &answer[0]["task"];
    assert_eq!(task["id"], id, "{what}");
    assert_eq!(state(task), state_now, "{what}");
    let reply = if via.streams() {
        assert_eq!(answer_kinds(&answer), ["task", "statusUpdate"], "{what}");
        let update = &answer[1]["statusUpdate"];
        assert_eq!(update["taskId"], id, "{what}");
        assert_eq!(update["contextId"], task["contextId"], "{what}");
        assert_eq!(update["status"]["state"], state_now, "{what}");
        assert_eq!(
            update["metadata"], update["status"]["message"]["metadata"],
            "the update carries the reply's metadata: {what}"
        );
        update["status"]["message"].clone()
    } else {
        assert_eq!(answer_kinds(&answer), ["task"], "{what}");
        task["status"]["message"].clone()
    };
    assert_reply(&reply, name);
    assert_eq!(reply["taskId"], id, "{what}");
    assert_eq!(reply["contextId"], task["contextId"], "{what}");
    assert_eq!(models.calls(), calls, "{text:?} called the model");
    let stored = get_task_as(s, who, id).await;
    assert_eq!(
        state(&stored),
        state_now,
        "{text:?} changed the state: {stored}"
    );
    assert_eq!(
        stored["status"]["message"], reply,
        "the reply is the status message"
    );
    reply
}

/// The text of a reply message.
fn text_of(reply: &Value) -> &str {
    reply["parts"][0]["text"].as_str().unwrap_or_default()
}

/// alice starts a task with `message` and model `a` asks her [`QUESTION`]: the task
/// waits for her reply.
async fn alice_is_asked(s: &Server, models: &Models, message: Value) -> String {
    let calls = models.calls();
    let task = send_as(s, Some("alice"), message).await;
    assert_eq!(state(&task), INPUT_REQUIRED, "{task}");
    assert_eq!(status_text(&task), QUESTION, "{task}");
    assert_eq!(models.calls(), calls + 1, "one model call asked alice");
    task_id(&task)
}

/// A plain first message from alice.
fn from_alice(text: &str) -> Value {
    user_message(&unique("m"), text)
}

/// A first message from alice that makes her the task's admin, and bob a watcher.
fn alice_admin_task(name: &str) -> Value {
    let cast = json!([
        participant("alice", "human", "admin"),
        participant("bob", "human", "watcher"),
    ]);
    json!({
        "messageId": unique("m"), "role": "ROLE_USER",
        "parts": [{"text": FIRST}, task_envelope_part(name, FIRST, cast)]
    })
}

/// The texts of a model request's user messages.
fn user_texts(req: &Value) -> Vec<&str> {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str())
        .collect()
}

/// Whether any message of any request to either model holds `text`.
fn model_saw(models: &Models, text: &str) -> bool {
    models
        .a
        .requests()
        .iter()
        .chain(models.b.requests().iter())
        .any(|r| r["messages"].to_string().contains(text))
}

fn role_of(task: &Value, id: &str) -> String {
    participants(task)
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"] == id)
        .and_then(|p| p["role"].as_str())
        .unwrap_or_else(|| panic!("{id} is not a participant: {task}"))
        .to_owned()
}

// ---------------------------------------------------------------------------- the card

#[tokio::test]
async fn the_card_lists_the_builtin_commands_in_order_embedded() {
    card_lists_the_commands(Backend::Embedded).await;
}

async fn card_lists_the_commands(backend: Backend) {
    let models = Models::new();
    let Some(s) = models.server(backend).await else {
        return;
    };
    let (status, card) = s.rest_get("/.well-known/agent-card.json").await;
    assert_eq!(status, 200, "{card}");
    let extensions = card["capabilities"]["extensions"]
        .as_array()
        .unwrap_or_else(|| panic!("no extensions on the card: {card}"));
    let commands = extensions
        .iter()
        .find(|e| e["uri"] == COMMANDS_EXTENSION)
        .unwrap_or_else(|| panic!("the commands extension is not on the card: {card}"));
    let spec = |name: &str, description: &str, argument_hint: &str| json!({"name": name, "description": description, "argument_hint": argument_hint});
    assert_eq!(
        commands["params"],
        json!({"commands": [
            spec("model", "Show or choose this task's model", "[<model>]"),
            spec("help", "List the commands", ""),
            spec("participants", "List this task's participants and their roles", ""),
            spec("role", "Change a participant's role (admins only)", "<participant> <role>"),
            spec("task", "Create a task for a participant", "<participant> <goal>"),
        ]}),
        "{commands}"
    );
}

// ------------------------------------------------------------- every command, every way

#[tokio::test]
async fn each_command_answers_with_a_same_state_status_update_every_way_embedded() {
    each_command_every_way(Backend::Embedded).await;
}

#[tokio::test]
async fn each_command_answers_with_a_same_state_status_update_every_way_dynamodb() {
    each_command_every_way(Backend::DynamoDb).await;
}

/// On a task of alice's (an admin, with bob a watcher) waiting for her reply, each
/// built-in command, sent each way, is answered in place without a model call.
async fn each_command_every_way(backend: Backend) {
    let models = Models::new();
    let Some(s) = models.server(backend).await else {
        return;
    };
    for via in EVERY_WAY {
        let id = alice_is_asked(&s, &models, alice_admin_task(&unique("shed"))).await;
        let on =
            |text: &'static str| command_on(&s, &models, via, "alice", &id, text, INPUT_REQUIRED);

        let reply = on("/help").await;
        assert_eq!(text_of(&reply), HELP, "{via:?}");
        assert_eq!(reply["metadata"], json!({"command": "help"}));

        let reply = on("/participants").await;
        assert_eq!(
            text_of(&reply),
            "- alice (human): admin\n- bob (human): watcher\n- tiny-harness (agent): assignee",
            "{via:?}"
        );
        assert_eq!(reply["metadata"], json!({"command": "participants"}));

        let reply = on("/model").await;
        assert_eq!(text_of(&reply), models.default_reply(), "{via:?}");
        assert_eq!(reply["metadata"], json!({"command": "model"}));

        let reply = on("/role bob reporter").await;
        assert_eq!(text_of(&reply), "bob is now reporter", "{via:?}");
        assert_eq!(reply["metadata"], json!({"command": "role"}));
        let task = get_task_as(&s, "alice", &id).await;
        assert_eq!(role_of(&task, "bob"), "reporter", "{task}");

        let reply = on("/task bob Buy the blue paint").await;
        let child = format!("{id}.1");
        assert_eq!(
            text_of(&reply),
            format!("task {child} created for bob"),
            "{via:?}"
        );
        assert_eq!(
            reply["metadata"],
            json!({"command": "task", "task_ref": child})
        );
        let created = get_task_as(&s, "bob", &child).await;
        assert_eq!(state(&created), INPUT_REQUIRED, "{created}");
        assert_eq!(role_of(&created, "bob"), "assignee", "{created}");
        assert_eq!(
            task_ext(&created)["goal"],
            "Buy the blue paint",
            "{created}"
        );
        let parent = get_task_as(&s, "alice", &id).await;
        assert_eq!(
            task_ext(&parent)["sub_tasks"],
            json!([{ "task_id": child }]),
            "{parent}"
        );

        // A command sent again with the same messageId is not run again.
        if via == Via::RpcSend {
            let again = reply_message(&unique("m"), &id, "/task bob Mix the paint");
            let first = send_as(&s, Some("alice"), again.clone()).await;
            let second = send_as(&s, Some("alice"), again).await;
            assert_eq!(second["status"], first["status"], "{second}");
            let parent = get_task_as(&s, "alice", &id).await;
            let subs = json!([{ "task_id": child }, { "task_id": format!("{id}.2") }]);
            assert_eq!(task_ext(&parent)["sub_tasks"], subs, "{parent}");
            let trail = s.store().audit_trail(&id).await.expect("audit trail");
            let tasks = trail.iter().filter(|r| r.detail == "/task").count();
            assert_eq!(tasks, 2, "{trail:?}");
        }
    }
    // Each task made its one model call (the question), and the commands none.
    assert_eq!(models.a.requests().len(), EVERY_WAY.len());
    assert!(models.b.requests().is_empty());
}

// -------------------------------------------------------------------- choosing a model

#[tokio::test]
async fn model_choice_changes_the_next_model_call_of_that_task_only_embedded() {
    model_choice(Backend::Embedded).await;
}

#[tokio::test]
async fn model_choice_changes_the_next_model_call_of_that_task_only_dynamodb() {
    model_choice(Backend::DynamoDb).await;
}

async fn model_choice(backend: Backend) {
    let models = Models::new();
    let Some(s) = models.server(backend).await else {
        return;
    };
    let on = |id: String, text: &'static str| {
        let (s, models) = (&s, &models);
        async move {
            let reply =
                command_on(s, models, Via::RpcSend, "alice", &id, text, INPUT_REQUIRED).await;
            text_of(&reply).to_owned()
        }
    };

    // Task 1 chooses b after model a asked alice.
    let first = alice_is_asked(&s, &models, from_alice(FIRST)).await;
    assert_eq!(on(first.clone(), "/model").await, models.default_reply());
    assert_eq!(
        on(first.clone(), "/model x").await,
        "unknown model \"x\"; choices: a, b"
    );
    assert_eq!(
        on(first.clone(), "/model b").await,
        "model for this task: b"
    );
    assert_eq!(on(first.clone(), "/model").await, "model: b\nchoices: a, b");

    // Task 2 keeps the default.
    let second = alice_is_asked(&s, &models, from_alice("Paint the fence")).await;
    assert_eq!(on(second.clone(), "/model").await, models.default_reply());
    assert_eq!(models.a.requests().len(), 2, "each task's question");
    assert!(models.b.requests().is_empty());

    // alice's reply resumes task 1: its next call goes to b (b's turn 1).
    let done = send_as(
        &s,
        Some("alice"),
        reply_message(&unique("m"), &first, "Blue"),
    )
    .await;
    assert_eq!(state(&done), COMPLETED, "{done}");
    assert_eq!(status_text(&done), ANSWER_B, "{done}");
    let b = models.b.requests();
    assert_eq!(b.len(), 1, "{}", models.b.log_text());
    assert_eq!(b[0]["turn"], 1, "{}", b[0]);
    assert_eq!(b[0]["model"], script_id(&models.b), "{}", b[0]);
    let reply = format!("Reply from alice to \"{QUESTION}\": Blue");
    assert!(user_texts(&b[0]).contains(&reply.as_str()), "{}", b[0]);
    assert_eq!(models.a.requests().len(), 2, "a was not called for task 1");

    // alice's reply resumes task 2 on a.
    let done = send_as(
        &s,
        Some("alice"),
        reply_message(&unique("m"), &second, "Green"),
    )
    .await;
    assert_eq!(state(&done), COMPLETED, "{done}");
    assert_eq!(status_text(&done), ANSWER_A, "{done}");
    let a = models.a.requests();
    assert_eq!(a.len(), 3, "{}", models.a.log_text());
    assert_eq!(a[2]["turn"], 1, "{}", a[2]);
    assert_eq!(a[2]["model"], script_id(&models.a), "{}", a[2]);
    assert_eq!(models.b.requests().len(), 1, "b was not called for task 2");
}

// ---------------------------------------------------------------- a task that waits

#[tokio::test]
async fn a_command_on_a_waiting_task_is_answered_and_the_task_keeps_waiting_embedded() {
    waiting_task(Backend::Embedded).await;
}

#[tokio::test]
async fn a_command_on_a_waiting_task_is_answered_and_the_task_keeps_waiting_dynamodb() {
    waiting_task(Backend::DynamoDb).await;
}

/// alice, asked a question, sends commands (from the very participant the task waits
/// for): each is answered, none is taken as the reply. Her plain reply then resumes the
/// task, and the model never saw a command.
async fn waiting_task(backend: Backend) {
    let models = Models::new();
    let Some(s) = models.server(backend).await else {
        return;
    };
    let id = alice_is_asked(&s, &models, from_alice(FIRST)).await;
    for (via, text) in [
        (Via::RpcSend, "/participants"),
        (Via::RpcStream, "/help"),
        (Via::RestSend, "/model"),
        (Via::RestStream, "/participants"),
    ] {
        let reply = command_on(&s, &models, via, "alice", &id, text, INPUT_REQUIRED).await;
        if text == "/participants" {
            assert_eq!(
                text_of(&reply),
                "- alice (human): reporter\n- tiny-harness (agent): assignee"
            );
        }
    }
    let task = get_task_as(&s, "alice", &id).await;
    assert_eq!(state(&task), INPUT_REQUIRED, "{task}");
    assert_eq!(models.calls(), 1, "only the question");

    let done = send_as(&s, Some("alice"), reply_message(&unique("m"), &id, "Blue")).await;
    assert_eq!(state(&done), COMPLETED, "{done}");
    assert_eq!(status_text(&done), ANSWER_A, "{done}");
    let reqs = models.a.requests();
    assert_eq!(reqs.len(), 2, "{}", models.a.log_text());
    assert_eq!(reqs[1]["turn"], 1);
    let reply = format!("Reply from alice to \"{QUESTION}\": Blue");
    assert!(
        user_texts(&reqs[1]).contains(&reply.as_str()),
        "{}",
        reqs[1]
    );
    for command in ["/participants", "/help", "/model"] {
        assert!(!model_saw(&models, command), "the model saw {command}");
    }
}

// ------------------------------------------------- ordinary messages, strangers, audit

#[tokio::test]
async fn unregistered_commands_reach_the_model_strangers_are_refused_and_commands_audited_embedded()
{
    intake(Backend::Embedded).await;
}

#[tokio::test]
async fn unregistered_commands_reach_the_model_strangers_are_refused_and_commands_audited_dynamodb()
{
    intake(Backend::DynamoDb).await;
}

async fn intake(backend: Backend) {
    let models = Models::new();
    let Some(s) = models.server(backend).await else {
        return;
    };

    // An unregistered command starting a task is its first message, seen by the model.
    let calls = models.calls();
    let unregistered = alice_is_asked(&s, &models, from_alice("/foo bar")).await;
    let reqs = models.a.requests();
    assert_eq!(reqs.len(), calls + 1);
    let turn0 = &reqs[calls];
    assert_eq!(turn0["turn"], 0, "{turn0}");
    assert!(
        user_texts(turn0).iter().any(|t| t.contains("/foo bar")),
        "the model saw /foo bar: {turn0}"
    );

    // On a task alice is asked about: her commands are answered and audited...
    let id = alice_is_asked(&s, &models, from_alice(FIRST)).await;
    let mut commands = Vec::new();
    for text in ["/help", "/participants"] {
        let message = reply_message(&unique("m"), &id, text);
        commands.push((message["messageId"].as_str().expect("id").to_owned(), text));
        let answer = send_via(&s, Via::RpcSend, "alice", message).await;
        assert_eq!(state(&answer[0]["task"]), INPUT_REQUIRED, "{answer:?}");
    }

    // ...a stranger's command gets the not-found of a missing task, and is not run...
    let calls = models.calls();
    let before = get_task_as(&s, "alice", &id).await;
    let stranger = |task: &str| {
        json!({"jsonrpc": "2.0", "id": "r-1", "method": "SendMessage",
               "params": send_params(reply_message("mallory-1", task, "/participants"))})
    };
    let refused = s
        .rpc_raw(&headers_as(Some("mallory")), stranger(&id).to_string())
        .await;
    let refused: Value = refused.json().await.expect("JSON");
    assert_rpc_error(&refused, -32001, "TASK_NOT_FOUND");
    let missing = unique("no-such-task");
    let absent = s
        .rpc_raw(&headers_as(Some("mallory")), stranger(&missing).to_string())
        .await;
    let absent: Value = absent.json().await.expect("JSON");
    assert_rpc_error(&absent, -32001, "TASK_NOT_FOUND");
    assert_eq!(
        refused.to_string().replace(&id, "<id>"),
        absent.to_string().replace(&missing, "<id>"),
        "a member's task and a missing one answer alike"
    );
    let rest = s
        .rest_raw(
            Method::POST,
            "/message:send",
            &headers_as(Some("mallory")),
            send_params(reply_message(&unique("m"), &id, "/help")).to_string(),
        )
        .await;
    let (status, body) = json_of(rest).await;
    assert_rest_error(status, &body, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    assert_eq!(
        models.calls(),
        calls,
        "the stranger's command called the model"
    );
    let after = get_task_as(&s, "alice", &id).await;
    assert_eq!(state(&after), INPUT_REQUIRED, "{after}");
    assert_eq!(participants(&after), participants(&before), "{after}");

    // ...and the audit trail holds alice's commands, accepted, and the stranger's refusals.
    let trail = s.store().audit_trail(&id).await.expect("audit trail");
    let audited: Vec<(String, &str, bool, &str)> = trail
        .iter()
        .filter(|r| r.operation == "command")
        .map(|r| {
            assert_eq!(r.task_id, id, "{r:?}");
            assert!(r.at.is_some(), "{r:?}");
            (
                r.message_id.clone(),
                r.participant.as_str(),
                r.accepted,
                r.detail.as_str(),
            )
        })
        .collect();
    let expected: Vec<(String, &str, bool, &str)> = commands
        .iter()
        .map(|(m, text)| (m.clone(), "alice", true, *text))
        .collect();
    assert_eq!(audited, expected, "{trail:?}");
    let strangers: Vec<_> = trail
        .iter()
        .filter(|r| r.participant == "mallory")
        .collect();
    assert_eq!(strangers.len(), 2, "{trail:?}");
    for r in strangers {
        assert_eq!(
            (r.operation.as_str(), r.accepted),
            ("SendMessage", false),
            "{r:?}"
        );
    }

    // An unregistered command on the task is an ordinary message: alice's reply.
    let done = send_as(
        &s,
        Some("alice"),
        reply_message(&unique("m"), &id, "/foo baz"),
    )
    .await;
    assert_eq!(state(&done), COMPLETED, "{done}");
    assert_eq!(status_text(&done), ANSWER_A, "{done}");
    let last = models.a.requests().pop().expect("a request");
    assert_eq!(last["turn"], 1, "{last}");
    let reply = format!("Reply from alice to \"{QUESTION}\": /foo baz");
    assert!(user_texts(&last).contains(&reply.as_str()), "{last}");
    let trail = s.store().audit_trail(&id).await.expect("audit trail");
    assert_eq!(
        trail.iter().filter(|r| r.operation == "command").count(),
        2,
        "/foo is not a command: {trail:?}"
    );
    assert!(
        s.store()
            .audit_trail(&unregistered)
            .await
            .expect("audit trail")
            .iter()
            .all(|r| r.operation != "command"),
        "/foo is not a command"
    );
}

// ------------------------------------------------------------------- without a task

#[tokio::test]
async fn a_command_without_a_task_is_answered_by_a_direct_message_embedded() {
    without_a_task(Backend::Embedded).await;
}

#[tokio::test]
async fn a_command_without_a_task_is_answered_by_a_direct_message_dynamodb() {
    without_a_task(Backend::DynamoDb).await;
}

async fn without_a_task(backend: Backend) {
    let models = Models::new();
    let Some(s) = models.server(backend).await else {
        return;
    };
    for via in EVERY_WAY {
        for (text, expected) in [
            ("/help", HELP),
            ("/participants", NEEDS_A_TASK),
            ("/model", NEEDS_A_TASK),
            ("/role bob admin", NEEDS_A_TASK),
        ] {
            let name = command_name(text);
            let answer = send_via(&s, via, "alice", from_alice(text)).await;
            assert_eq!(
                answer_kinds(&answer),
                ["message"],
                "{text} via {via:?}: {answer:?}"
            );
            let reply = &answer[0]["message"];
            assert_eq!(assert_reply(reply, name), expected, "{text} via {via:?}");
            assert_eq!(reply["metadata"], json!({"command": name}), "{reply}");
            assert!(reply.get("taskId").is_none(), "{reply}");
        }
    }
    let list = rpc_ok_as(&s, Some("alice"), "ListTasks", json!({})).await;
    assert!(listed_ids(&list).is_empty(), "no task was created: {list}");
    assert_eq!(models.calls(), 0, "no model call");

    // /task without a task creates a standalone one for the participant.
    let answer = send_via(
        &s,
        Via::RpcSend,
        "alice",
        from_alice("/task bob Sand the shed"),
    )
    .await;
    assert_eq!(answer_kinds(&answer), ["message"], "{answer:?}");
    let reply = &answer[0]["message"];
    let created = reply["metadata"]["task_ref"]
        .as_str()
        .unwrap_or_else(|| panic!("no task_ref: {reply}"))
        .to_owned();
    assert_eq!(
        assert_reply(reply, "task"),
        format!("task {created} created for bob")
    );
    assert_eq!(
        reply["metadata"],
        json!({"command": "task", "task_ref": created})
    );
    let task = get_task_as(&s, "bob", &created).await;
    assert_eq!(state(&task), INPUT_REQUIRED, "{task}");
    assert_eq!(role_of(&task, "bob"), "assignee", "{task}");
    assert_eq!(role_of(&task, "alice"), "reporter", "{task}");
    let list = rpc_ok_as(&s, Some("alice"), "ListTasks", json!({})).await;
    assert_eq!(listed_ids(&list), [created], "{list}");
    assert_eq!(models.calls(), 0, "no model call");
}
