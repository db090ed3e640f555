//! Issue 47, items 2 and 3: one participant-id syntax and one look-alike check, wherever
//! an id enters, and `/task` without a task held to them and to a per-sender hourly limit.
//!
//! - Every place an id enters (the `X-Participant-Id` header, `metadata.participant_id`,
//!   a task envelope's participants, `/task` and `/role`, a JWT subject) refuses the same
//!   bad ids: a Cyrillic look-alike of the harness's id, a zero-width space, a
//!   right-to-left override, ESC, DEL, 5,000 characters, the harness's previous
//!   `--agent-id` and a registry agent's id. Each refusal is clear (-32602 naming the
//!   rule; 401 for a token whose subject is no id), stores nothing and leaves an audit
//!   row. (ESC and DEL cannot travel in an HTTP header at all: the header rows skip them.)
//!   The review of that pass added a no-break space, an em dash look-alike and a
//!   private-use character, and a header that is not UTF-8 (refused and audited).
//! - `/task <who> <goal>` without a task assigns someone else at most
//!   `--tasks-for-others-per-hour` tasks an hour per sender, across a restart; 100 quick
//!   attempts get exactly that many through.

use harness_e2e::identity::*;
use harness_e2e::participants::{self, AGENT_ID};
use harness_e2e::*;
use serde_json::json;

/// The agent id the harness ran under before its restart with [`AGENT_ID`].
const OLD_AGENT_ID: &str = "old-harness";
/// The registry agent every server here knows.
const REGISTRY_AGENT: &str = "research-bot";

/// The bad ids of the issue, each with what it is.
fn bad_ids() -> Vec<(String, &'static str)> {
    vec![
        ("t\u{456}ny-harness".into(), "Cyrillic і look-alike"),
        ("tiny-harness\u{a0}".into(), "no-break space"),
        ("tiny\u{2014}harness".into(), "em dash look-alike"),
        ("tiny-harness\u{e000}".into(), "private use character"),
        ("tiny-harness\u{200b}".into(), "zero-width space"),
        ("bob\u{202e}evil".into(), "right-to-left override"),
        ("bob\u{1b}[31m".into(), "ESC"),
        ("bob\u{7f}".into(), "DEL"),
        ("a".repeat(5_000), "5,000 characters"),
        (OLD_AGENT_ID.into(), "the previous --agent-id"),
        (REGISTRY_AGENT.into(), "a registry agent's id"),
    ]
}

fn registry() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("{}.toml", unique("agents")));
    std::fs::write(
        &path,
        format!("[agents.{REGISTRY_AGENT}]\ncard_url = \"http://127.0.0.1:9/card\"\n"),
    )
    .expect("the registry file");
    path
}

/// A server that ran as [`OLD_AGENT_ID`] (and served a request, which records it), then
/// restarted on the same state as [`AGENT_ID`], with a registry.
async fn restarted(backend: Backend, extra: &[&str], first: &Who) -> Option<Server> {
    let agents = registry();
    let mut args = vec!["--agents", agents.to_str().expect("a path")];
    args.extend_from_slice(extra);
    let mut s = Server::start_on_env(backend, &args, &[("HARNESS_AGENT_ID", OLD_AGENT_ID)]).await?;
    send(&s, first, Via::Rest, user_message(&unique("m"), "hello"))
        .await
        .ok();
    s.restart_with(&["--agent-id", AGENT_ID]).await;
    Some(s)
}

/// How many refusals the audit keeps under task `task_id` ("" for none).
async fn refusals(s: &Server, task_id: &str) -> usize {
    let trail = s
        .store()
        .audit_trail(task_id)
        .await
        .expect("the audit trail");
    trail.iter().filter(|r| !r.accepted).count()
}

async fn listed(s: &Server, who: &str) -> usize {
    let who = Who::header(who);
    listed_ids(&list(s, &who, Via::Rest).await.ok()).len()
}

/// One way an id enters, with the message (or request) that carries `id` in it.
#[derive(Debug, Clone, Copy)]
enum Entry {
    Header,
    Metadata,
    Envelope,
    TaskCommand,
    RoleCommand,
}

async fn try_entry(s: &Server, entry: Entry, id: &str, on_task: &str) -> Option<Answer> {
    let alice = Who::header("alice");
    let mid = unique("bad-id");
    let answer = match entry {
        Entry::Header => {
            // HTTP carries no control characters in a header.
            if id.chars().any(char::is_control) {
                return None;
            }
            send(s, &Who::header(id), Via::Rest, user_message(&mid, "hi")).await
        }
        Entry::Metadata => {
            let mut m = user_message(&mid, "hi");
            m["metadata"] = json!({"participant_id": id});
            send(s, &Who::Nobody, Via::JsonRpc, m).await
        }
        Entry::Envelope => {
            let people = json!([participants::participant(id, "human", "watcher")]);
            let m = json!({"messageId": mid, "role": "ROLE_USER",
                "parts": [{"text": "x"}, participants::task_envelope_part("x", "x", people)]});
            send(s, &alice, Via::JsonRpc, m).await
        }
        Entry::TaskCommand => {
            let m = user_message(&mid, &format!("/task {id} paint the fence"));
            send(s, &alice, Via::Rest, m).await
        }
        Entry::RoleCommand => {
            let m = reply_message(&mid, on_task, &format!("/role {id} admin"));
            send(s, &alice, Via::JsonRpc, m).await
        }
    };
    Some(answer)
}

async fn every_place_an_id_enters_refuses_the_same_bad_ids(backend: Backend) {
    let Some(s) = restarted(backend, &[], &Who::header("alice")).await else {
        return;
    };
    // A task alice administers, for /role.
    let admin = json!([participants::participant("alice", "human", "admin")]);
    // The conformance agent leaves a `tck-input-required` task waiting: still open.
    let m = json!({"messageId": unique("tck-input-required"), "role": "ROLE_USER",
        "parts": [{"text": "x"}, participants::task_envelope_part("x", "x", admin)]});
    let task = task_id(&send(&s, &Who::header("alice"), Via::JsonRpc, m).await.ok()["task"]);
    let (alice_before, anonymous_before) = (listed(&s, "alice").await, listed(&s, ANONYMOUS).await);

    for (id, what) in bad_ids() {
        for entry in [
            Entry::Header,
            Entry::Metadata,
            Entry::Envelope,
            Entry::TaskCommand,
            Entry::RoleCommand,
        ] {
            let audit_task = if matches!(entry, Entry::RoleCommand) {
                task.as_str()
            } else {
                ""
            };
            let before = refusals(&s, audit_task).await;
            let Some(answer) = try_entry(&s, entry, &id, &task).await else {
                continue;
            };
            answer.invalid_params();
            let message = answer.message();
            // Ours names the rule; the envelope's schema refuses control characters first.
            assert!(
                message.contains("participant id") && message.contains("refused")
                    || message.contains("/participants/0/id"),
                "{what} via {entry:?}: {message}"
            );
            assert_eq!(
                refusals(&s, audit_task).await,
                before + 1,
                "{what} via {entry:?}: one audit row"
            );
        }
    }
    // Nothing stored: no task for anyone, and alice's task keeps its roster.
    assert_eq!(listed(&s, "alice").await, alice_before);
    assert_eq!(listed(&s, ANONYMOUS).await, anonymous_before);
    let roster = get(&s, &Who::header("alice"), Via::Rest, &task).await.ok();
    assert_eq!(
        participants::participants(&roster).as_array().map(Vec::len),
        Some(2),
        "{roster}"
    );
}

#[tokio::test]
async fn every_place_an_id_enters_refuses_the_same_bad_ids_embedded() {
    every_place_an_id_enters_refuses_the_same_bad_ids(Backend::Embedded).await;
}

#[tokio::test]
async fn every_place_an_id_enters_refuses_the_same_bad_ids_dynamodb() {
    every_place_an_id_enters_refuses_the_same_bad_ids(Backend::DynamoDb).await;
}

/// In jwt mode the subject is the id: one that is no id is unauthenticated, one that is
/// or looks like a reserved id (the previous agent id, a registry agent's) is refused
/// -32602; each is audited and nothing is stored. Registry ids never come from a token.
async fn a_token_subject_is_held_to_the_same_rules(backend: Backend) {
    let idp = Idp::start().await;
    let args = idp.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let alice = Who::Token(idp.token("alice"));
    let Some(s) = restarted(backend, &args, &alice).await else {
        return;
    };
    for (id, what) in bad_ids() {
        let before = refusals(&s, "").await;
        let who = Who::Token(idp.token(&id));
        let answer = send(&s, &who, Via::JsonRpc, user_message(&unique("j"), "hi")).await;
        if participant_syntax_ok(&id) {
            answer.invalid_params();
            assert!(
                answer.message().contains("refused"),
                "{what}: {}",
                answer.text
            );
        } else {
            answer.unauthenticated();
        }
        assert_eq!(refusals(&s, "").await, before + 1, "{what}: one audit row");
    }
    assert_eq!(
        listed_ids(&list(&s, &alice, Via::Rest).await.ok()).len(),
        1,
        "alice's first task only"
    );
}

fn participant_syntax_ok(id: &str) -> bool {
    common::ext::participant::valid_id(id)
}

#[tokio::test]
async fn a_token_subject_is_held_to_the_same_rules_embedded() {
    a_token_subject_is_held_to_the_same_rules(Backend::Embedded).await;
}

#[tokio::test]
async fn a_token_subject_is_held_to_the_same_rules_dynamodb() {
    a_token_subject_is_held_to_the_same_rules(Backend::DynamoDb).await;
}

/// An `X-Participant-Id` header that is not UTF-8 is refused like any id that is none,
/// over both bindings, and audited (it was refused without an audit row before).
async fn a_header_that_is_not_utf8_is_refused_and_audited(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let mut headers = Who::Nobody.headers();
    let raw = reqwest::header::HeaderValue::from_bytes(b"bob\xff\xfe").expect("obs-text");
    headers.insert("x-participant-id", raw);
    let params = send_params(user_message(&unique("latin1"), "hi"));
    for via in [Via::JsonRpc, Via::Rest] {
        let before = refusals(&s, "").await;
        let resp = match via {
            Via::JsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": "SendMessage",
                    "params": params});
                s.rpc_raw(&headers, body.to_string()).await
            }
            Via::Rest => {
                let body = params.to_string();
                (s.rest_raw(reqwest::Method::POST, "/message:send", &headers, body)).await
            }
        };
        let answer = Answer {
            via,
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            text: resp.text().await.expect("an answer body"),
        };
        answer.invalid_params();
        assert!(answer.message().contains("refused"), "{}", answer.text);
        assert_eq!(refusals(&s, "").await, before + 1, "{via:?}: one audit row");
    }
    assert_eq!(listed(&s, "bob").await + listed(&s, ANONYMOUS).await, 0);
}

#[tokio::test]
async fn a_header_that_is_not_utf8_is_refused_and_audited_embedded() {
    a_header_that_is_not_utf8_is_refused_and_audited(Backend::Embedded).await;
}

#[tokio::test]
async fn a_header_that_is_not_utf8_is_refused_and_audited_dynamodb() {
    a_header_that_is_not_utf8_is_refused_and_audited(Backend::DynamoDb).await;
}

/// `/task <who> <goal>` without a task: someone else at most the limit an hour (100
/// quick attempts, 5 through, the rest refused naming the limit and audited), still
/// after a restart; for oneself without limit; never for a look-alike of the sender.
async fn tasks_for_others_are_throttled_per_sender(backend: Backend) {
    let Some(mut s) = Server::start_on(backend, &["--tasks-for-others-per-hour", "5"]).await else {
        return;
    };
    let alice = Who::header("alice");
    let attempts = (0..100).map(|i| {
        let m = user_message(&unique("t"), &format!("/task bob chore {i}"));
        let (s, alice) = (&s, &alice);
        async move { send(s, alice, Via::JsonRpc, m).await }
    });
    let answers = futures::future::join_all(attempts).await;
    let through = (answers.iter())
        .filter(|a| a.status == 200 && a.body().get("error").is_none())
        .count();
    assert_eq!(through, 5, "at most the limit get through");
    for refused in answers.iter().filter(|a| a.body().get("error").is_some()) {
        refused.invalid_params();
        assert!(
            refused.message().contains("at most 5 an hour"),
            "{}",
            refused.text
        );
    }
    assert_eq!(listed(&s, "bob").await, 5);
    assert!(refusals(&s, "").await >= 95, "each refusal audited");

    s.restart().await;
    let m = user_message(&unique("t"), "/task bob one more");
    send(&s, &alice, Via::Rest, m).await.invalid_params();
    // Others are not held to alice's count, nor is alice to her own tasks.
    let m = user_message(&unique("t"), "/task bob from carol");
    send(&s, &Who::header("carol"), Via::Rest, m).await.ok();
    let m = user_message(&unique("t"), "/task alice my own");
    send(&s, &alice, Via::Rest, m).await.ok();
    assert_eq!(listed(&s, "bob").await, 6);
    // A look-alike of the sender (Cyrillic а) is refused, whatever the count.
    let m = user_message(&unique("t"), "/task c\u{430}rol pose as me");
    let refused = send(&s, &Who::header("carol"), Via::Rest, m).await;
    refused.invalid_params();
    assert!(refused.message().contains("look like"), "{}", refused.text);
}

#[tokio::test]
async fn tasks_for_others_are_throttled_per_sender_embedded() {
    tasks_for_others_are_throttled_per_sender(Backend::Embedded).await;
}

#[tokio::test]
async fn tasks_for_others_are_throttled_per_sender_dynamodb() {
    tasks_for_others_are_throttled_per_sender(Backend::DynamoDb).await;
}
