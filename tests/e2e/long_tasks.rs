//! Long tasks (issue 18): a task is a bounded head and append-only parts, so it has no
//! item-size wall on DynamoDB and each checkpoint writes what it adds. Through
//! harness-local `--table` on DynamoDB Local with the scripted model: a 60-turn task of
//! 20 KB turns completes with no item over 64 KB and flat write units; a 900 KB message
//! goes in and reads back whole on both stores (one over the body limit gets 413, nothing
//! stored); a step too large for one commit fails the task cleanly, once.

use harness_e2e::identity::{get, send, Via, Who};
use harness_e2e::participants::{headers_as, send_as, Script};
use harness_e2e::*;
use serde_json::json;

/// A turn that calls a tool with arguments of about `kb` KB, which the conversation keeps.
fn heavy_turn(kb: usize) -> serde_json::Value {
    json!({"tool_calls": [{"name": "current_time", "arguments": {"pad": "x".repeat(kb * 1024)}}]})
}

/// An LLM server on DynamoDB with the commit log (`harness::cost`) on and `extra` args.
async fn llm_on_dynamodb(script: &Script, extra: &[&str]) -> Option<Server> {
    let model = script.model();
    let mut args = vec!["--agent", "llm", "--model", &model];
    args.extend_from_slice(extra);
    let log = [("RUST_LOG", "info,harness::cost=debug")];
    Server::start_on_env(Backend::DynamoDb, &args, &log).await
}

/// The write units of each commit of `task_id`, in order, from the server's log.
fn commit_units(s: &Server, task_id: &str) -> Vec<f64> {
    let log = s.log_text().expect("the server log is kept");
    // `… harness::cost: commit task_id=<id> items=<n> write_units=<units>` (a span before
    // it may name the task too, quoted).
    let field = |line: &str, name: &str| -> Option<String> {
        let fields = &line[line.find("harness::cost: commit ")?..];
        let start = fields.find(&format!(" {name}="))? + name.len() + 2;
        Some(fields[start..].split_whitespace().next()?.to_owned())
    };
    log.lines()
        .filter(|l| l.contains("harness::cost") && field(l, "task_id").as_deref() == Some(task_id))
        .filter_map(|l| field(l, "write_units")?.parse().ok())
        .collect()
}

/// The size of an item as DynamoDB counts it, near enough: names and values in bytes.
fn item_bytes(
    item: &std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    V::S(s) | V::N(s) => s.len(),
                    V::Ss(set) => set.iter().map(String::len).sum(),
                    _ => 1,
                }
        })
        .sum()
}

/// The largest item of the server's table.
async fn largest_item(s: &Server) -> usize {
    let client = dynamo_client().expect("DynamoDB Local");
    let table = s.table.clone().expect("a table");
    let mut largest = 0;
    let mut start = None;
    loop {
        let out = client
            .scan()
            .table_name(&table)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan");
        for item in out.items() {
            largest = largest.max(item_bytes(item));
        }
        start = out.last_evaluated_key().cloned();
        if start.is_none() {
            return largest;
        }
    }
}

#[tokio::test]
async fn a_sixty_turn_task_of_20_kb_turns_completes_with_small_items_and_flat_write_units() {
    let mut turns: Vec<serde_json::Value> = (0..60).map(|_| heavy_turn(20)).collect();
    turns.push(json!({"text": "sixty turns done"}));
    let script = Script::new(json!(turns));
    let Some(s) = llm_on_dynamodb(&script, &["--turn-limit", "100"]).await else {
        return;
    };
    let task = send_as(&s, Some("alice"), user_message(&unique("m"), "Work long")).await;
    let id = task_id(&task);
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(status_text(&task), "sixty turns done");

    let largest = largest_item(&s).await;
    assert!(largest <= 64 * 1024, "an item of {largest} bytes");

    // The checkpoints of the 60 model calls are the commits that carry a 20 KB turn.
    let units = commit_units(&s, &id);
    let heavy: Vec<f64> = units.iter().copied().filter(|u| *u >= 40.0).collect();
    assert_eq!(
        heavy.len(),
        60,
        "one 20 KB checkpoint per model call: {units:?}"
    );
    println!(
        "write units: 2nd checkpoint {}, 60th {}, largest item {largest} bytes",
        heavy[1], heavy[59]
    );
    assert!(
        heavy[59] <= 2.0 * heavy[1],
        "the 60th checkpoint cost {} write units, the 2nd {}",
        heavy[59],
        heavy[1]
    );
    assert!(
        units.iter().all(|u| *u <= 2.0 * heavy[1]),
        "no commit grows with the task: {units:?}"
    );

    // The whole conversation is kept, turn by turn.
    let rec = s.store().load_task(&id).await.expect("load").expect("task");
    assert_eq!(rec.agent.model_calls, 61);
    assert!(
        rec.agent.conversation.len() >= 121,
        "{}",
        rec.agent.conversation.len()
    );
}

/// The status of alice's SendMessage of `message`, a body over the server's limit. The
/// server may answer 413 before the body is all written; the client then sees its write
/// fail (EPIPE) instead of the answer, and sends it again.
async fn over_limit_status(s: &Server, via: Via, message: serde_json::Value) -> u16 {
    let params = send_params(message);
    let (path, body) = match via {
        Via::JsonRpc => (
            "/",
            json!({"jsonrpc": "2.0", "id": "over", "method": "SendMessage", "params": params}),
        ),
        Via::Rest => ("/message:send", params),
    };
    for _ in 0..5 {
        let sent = (s.http.post(s.endpoint(path)))
            .headers(headers_as(Some("alice")))
            .body(body.to_string())
            .send()
            .await;
        if let Ok(resp) = sent {
            return resp.status().as_u16();
        }
    }
    panic!("no answer to an over-limit body in five tries");
}

#[tokio::test]
async fn a_900_kb_message_is_kept_whole_and_one_over_the_body_limit_is_refused() {
    for backend in [Backend::Embedded, Backend::DynamoDb] {
        let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
            continue;
        };
        let alice = Who::header("alice");
        for via in Via::BOTH {
            let text = format!("{via:?}:{}", "é".repeat(450 * 1024));
            let m = user_message(&unique("tck-complete-task"), &text);
            let task = send(&s, &alice, via, m).await.ok()["task"].clone();
            let id = task_id(&task);
            assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{backend:?} {via:?}");
            let read = get(&s, &alice, via, &id).await.ok();
            let first = &read["history"][0]["parts"][0]["text"];
            assert_eq!(first.as_str(), Some(text.as_str()), "{backend:?} {via:?}");

            let over = user_message(&unique("m"), &"x".repeat(1024 * 1024));
            let mid = over["messageId"].as_str().expect("id").to_owned();
            assert_eq!(
                over_limit_status(&s, via, over).await,
                413,
                "{backend:?} {via:?}"
            );
            let stored = s
                .store()
                .message_task("", "alice", &mid)
                .await
                .expect("read");
            assert_eq!(stored, None, "{backend:?} {via:?}: nothing stored");
        }
        if backend == Backend::DynamoDb {
            let largest = largest_item(&s).await;
            assert!(largest <= 64 * 1024, "an item of {largest} bytes");
        }
    }
}

/// Sends `message` as alice: refused with -32602 saying `why`, and its id not stored.
async fn refused_and_not_stored(s: &Server, via: Via, message: serde_json::Value, why: &str) {
    let mid = message["messageId"].as_str().expect("id").to_owned();
    let refused = send(s, &Who::header("alice"), via, message).await;
    refused.invalid_params();
    assert!(refused.message().contains(why), "{}", refused.message());
    let stored = s
        .store()
        .message_task("", "alice", &mid)
        .await
        .expect("read");
    assert_eq!(stored, None, "{via:?}: nothing stored");
}

/// A task's own data (metadata, its envelope) is bounded: an envelope over 48 KB is
/// refused with -32602 naming the limit, and nothing is stored.
#[tokio::test]
async fn a_task_envelope_over_the_head_bound_is_refused_clearly() {
    use harness_e2e::participants::{participant, task_envelope_part};
    for backend in [Backend::Embedded, Backend::DynamoDb] {
        let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
            continue;
        };
        for via in Via::BOTH {
            let mid = unique("m");
            let people = json!([participant("alice", "human", "reporter")]);
            let goal = "g".repeat(60 * 1024);
            let m = json!({"messageId": mid, "role": "ROLE_USER",
                "parts": [{"text": "x"}, task_envelope_part("big", &goal, people)]});
            refused_and_not_stored(&s, via, m, "at most 48 KB").await;
        }
    }
}

/// A messageId is part of stored keys: one over 256 characters is refused, naming the
/// limit, and nothing is stored.
#[tokio::test]
async fn a_message_id_over_256_characters_is_refused() {
    let s = Server::start_with(&[FAIL_CLOSED]).await;
    let alice = Who::header("alice");
    for via in Via::BOTH {
        let mid = "m".repeat(257);
        refused_and_not_stored(&s, via, user_message(&mid, "hi"), "longer than 256").await;
        let name = format!("{via:?}");
        let longest = name.clone() + &"m".repeat(256 - name.len());
        send(&s, &alice, via, user_message(&longest, "hi"))
            .await
            .ok();
    }
}

/// A tenant, task id, context id or push config id is part of stored keys too: over 256
/// characters it is refused with -32602 naming the field, on both stores and bindings,
/// never a store's error; so is a page token naming such a task id, and a self-asserted
/// participant id.
#[tokio::test]
async fn ids_and_tenants_over_256_characters_are_refused() {
    use harness_e2e::identity::{call, get_push, subscribe};
    use reqwest::Method;
    let long = "t".repeat(257);
    for backend in [Backend::Embedded, Backend::DynamoDb] {
        let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
            continue;
        };
        let alice = Who::header("alice");
        for via in Via::BOTH {
            let named = |answer: identity::Answer, field: &str| {
                answer.invalid_params();
                let message = answer.message();
                let said = format!("{field} is longer than 256 characters");
                assert!(
                    message.contains(&said),
                    "{backend:?} {via:?}: {}",
                    answer.text
                );
            };
            named(get(&s, &alice, via, &long).await, "id");
            named(subscribe(&s, &alice, via, &long).await, "id");
            named(get_push(&s, &alice, via, &long, "c").await, "taskId");
            named(get_push(&s, &alice, via, "t", &long).await, "id");
            let on_long = json!({"messageId": unique("m"), "taskId": long, "role": "ROLE_USER",
                "parts": [{"text": "hi"}]});
            named(send(&s, &alice, via, on_long).await, "message.taskId");
            let in_long = json!({"messageId": unique("m"), "contextId": long, "role": "ROLE_USER",
                "parts": [{"text": "hi"}]});
            named(send(&s, &alice, via, in_long).await, "message.contextId");
            let rest = (Method::GET, format!("/{long}/tasks"), None);
            let params = json!({"tenant": long});
            named(
                call(&s, &alice, via, "ListTasks", params, rest).await,
                "tenant",
            );
            let m =
                json!({"messageId": unique("m"), "role": "ROLE_USER", "parts": [{"text": "hi"}]});
            let params = json!({"message": m, "configuration": {"taskPushNotificationConfig":
                {"id": long, "url": "https://example.com/hook"}}});
            let rest = (
                Method::POST,
                "/message:send".to_owned(),
                Some(params.clone()),
            );
            let answer = call(&s, &alice, via, "SendMessage", params, rest).await;
            named(answer, "configuration.taskPushNotificationConfig.id");
            // A page token is the server's, but comes back from the client.
            use base64::Engine;
            let token =
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("0:{long}"));
            let rest = (Method::GET, format!("/tasks?pageToken={token}"), None);
            let answer = call(
                &s,
                &alice,
                via,
                "ListTasks",
                json!({"pageToken": token}),
                rest,
            )
            .await;
            answer.invalid_params();
            assert!(answer.message().contains("pageToken"), "{}", answer.text);
            // Where identity is self-asserted, the header is bounded like any participant id.
            let answer = get(&s, &Who::header(&long), via, "t").await;
            answer.invalid_params();
            assert!(
                answer.message().contains("1 to 256 characters"),
                "{}",
                answer.text
            );
        }
    }
}

/// Names within 256 characters can still join into a key longer than DynamoDB's (a
/// character is up to 4 bytes, and a `#` or `%` is written as 3): a message whose tenant,
/// sender and messageId are 256 `#` each, or a push config id of 256 four-byte characters.
/// They get -32602 saying so, nothing stored, on DynamoDB and on the embedded store alike
/// (whose own keys have no such bound): what works locally works deployed.
#[tokio::test]
async fn names_too_long_for_a_dynamodb_key_are_refused_clearly() {
    use harness_e2e::identity::{call, get_push};
    use reqwest::Method;
    let hashes = "#".repeat(256);
    let emoji = "\u{1F600}".repeat(256);
    for backend in [Backend::Embedded, Backend::DynamoDb] {
        let Some(s) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
            continue;
        };
        let alice = Who::header("alice");
        let task = send(&s, &alice, Via::JsonRpc, user_message(&unique("m"), "hi")).await;
        let task = task.ok()["task"]["id"].as_str().expect("a task").to_owned();
        for via in Via::BOTH {
            let message = json!({"messageId": hashes, "role": "ROLE_USER",
                "parts": [{"text": "hi"}]});
            let params = json!({"tenant": hashes, "message": message});
            let path = format!("/{}/message:send", "%23".repeat(256));
            let rest = (Method::POST, path, Some(params.clone()));
            let sent = call(&s, &Who::header(&hashes), via, "SendMessage", params, rest).await;
            let read = get_push(&s, &alice, via, &task, &emoji).await;
            for (answer, what) in [(&sent, "messageId together"), (&read, "config id")] {
                answer.invalid_params();
                let message = answer.message();
                assert!(
                    message.contains(what)
                        && message.contains("too long for the task store's keys"),
                    "{via:?}: {}",
                    answer.text
                );
            }
            let stored = s.store().message_task(&hashes, &hashes, &hashes).await;
            assert!(matches!(
                stored,
                Err(common::store::StoreError::KeyTooLong(_))
            ));
        }
    }
}

/// A step whose write is larger than DynamoDB takes in one transaction (4 MB) can never be
/// committed: the task fails with a stable reason in a small commit, holds no lease, waits
/// for no wake-up, and its model is not called again, not even after a restart.
#[tokio::test]
async fn a_step_too_large_for_one_commit_fails_the_task_cleanly_and_once() {
    let script = Script::with_call_log(json!([heavy_turn(4500), {"text": "never reached"}]));
    let Some(mut s) = llm_on_dynamodb(&script, &[]).await else {
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
        reason.starts_with(
            "A step of the task was larger than the store can write at once, so it stopped (error "
        ),
        "{reason}"
    );
    assert_eq!(script.call_lines().len(), 1);

    let rec = s.store().load_task(&id).await.expect("load").expect("task");
    assert_eq!(rec.lease, None, "no drive holds it");
    assert!(!rec.wake, "nothing is to wake it");

    s.restart().await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        script.call_lines().len(),
        1,
        "the model is not called again"
    );
    let after = s.store().load_task(&id).await.expect("load").expect("task");
    assert_eq!(after.version, rec.version);
}

/// Issue 18, must-show 4: with a small context budget a 40-turn task completes; every
/// request the model is sent (turns and summaries) is within the budget; each compaction's
/// summary call is made once, and not again after the server is SIGKILLed mid-task and
/// restarted; the system prompt is the same bytes on every turn; the store keeps the
/// whole conversation.
#[tokio::test]
async fn a_forty_turn_task_on_a_small_context_budget_is_compacted_once_per_summary() {
    use harness_e2e::participants::rpc_ok_as;
    use std::time::{Duration, Instant};
    const BUDGET: usize = 8000;
    const SLOW_TURN: u64 = 25;
    let mut turns: Vec<serde_json::Value> = (0..40).map(|_| heavy_turn(2)).collect();
    turns[SLOW_TURN as usize]["delay_ms"] = json!(3000);
    turns.push(json!({"text": "forty turns done"}));
    let script = Script::with_call_log(json!(turns));
    let model = script.model();
    let budget = BUDGET.to_string();
    let args = [
        "--agent",
        "llm",
        "--model",
        &model,
        "--turn-limit",
        "100",
        "--context-tokens",
        &budget,
    ];
    let mut s = Server::start_on(Backend::Embedded, &args)
        .await
        .expect("the embedded store");
    let accepted = rpc_ok_as(
        &s,
        Some("alice"),
        "SendMessage",
        json!({"message": user_message(&unique("m"), "Work long"),
               "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = task_id(&accepted["task"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while script.calls_of_turn(SLOW_TURN) == 0 {
        assert!(Instant::now() < deadline, "{}", script.call_log_text());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let summaries_before: Vec<String> = summary_lines(&script);
    assert!(
        !summaries_before.is_empty(),
        "compacted before turn {SLOW_TURN}"
    );
    s.restart().await;

    let done = loop {
        let task = harness_e2e::participants::get_task_as(&s, "alice", &id).await;
        if state(&task) == "TASK_STATE_COMPLETED" || state(&task) == "TASK_STATE_FAILED" {
            break task;
        }
        assert!(Instant::now() < deadline, "{task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status_text(&done), "forty turns done", "{done}");

    let summaries = summary_lines(&script);
    let mut distinct = summaries.clone();
    distinct.dedup();
    assert_eq!(distinct, summaries, "a summary call was repeated");
    assert!(summaries.starts_with(&summaries_before));
    let rec = s.store().load_task(&id).await.expect("load").expect("task");
    assert_eq!(rec.agent.summaries, summaries.len());
    assert!(rec.agent.summaries >= 2, "{summaries:?}");
    assert!(
        rec.agent.conversation.len() >= 81,
        "the store keeps every turn"
    );

    let requests: Vec<common::models::ChatRequest> = script
        .requests()
        .into_iter()
        .map(|r| serde_json::from_value(r).expect("a request"))
        .collect();
    for r in &requests {
        let tokens = common::models::estimate_tokens(r);
        assert!(
            tokens <= BUDGET,
            "a {:?} request of {tokens} tokens",
            r.purpose
        );
    }
    let largest = requests.iter().map(common::models::estimate_tokens).max();
    println!(
        "{} requests, {} summary calls ({summaries:?}), the largest {largest:?} tokens",
        requests.len(),
        rec.agent.summaries
    );
    let turns: Vec<_> = requests
        .iter()
        .filter(|r| r.purpose == common::models::Purpose::Turn)
        .collect();
    assert!(
        turns.iter().all(|r| r.system == turns[0].system),
        "one system prompt"
    );
    let summarized = turns.last().expect("turns").messages.iter().any(|m| {
        matches!(m, common::models::ChatMessage::User { text }
            if text.contains(common::models::scripted::DEFAULT_SUMMARY))
    });
    assert!(summarized, "the last turn carries the summary");
}

/// The call log's summary calls, in order, as `summary <turn>`.
fn summary_lines(script: &Script) -> Vec<String> {
    (script.call_lines().iter())
        .filter(|l| l.starts_with("summary "))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect()
}
