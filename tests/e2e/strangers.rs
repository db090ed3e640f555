//! Strangers learn nothing and change nothing (issue 17), on both bindings and both
//! stores: a messageId is its sender's own (someone else's copy of it neither finds the
//! first one's task nor is swallowed by it), and a refused message writes nothing into the
//! task it names: its version, events, status, size and webhooks stay as they were, and
//! the sender's answer is the one a missing task gets.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness_e2e::identity::*;
use harness_e2e::participants;
use harness_e2e::*;
use serde_json::{json, Value};

on_both_stores!(
    a_message_id_is_its_senders_own,
    refused_messages_write_nothing_into_the_task,
    an_envelope_links_no_tasks,
    an_agent_participant_speaks_only_as_itself,
    a_message_id_on_the_task_is_not_taken_again,
    rotated_ids_from_one_address_write_at_most_the_quota,
    rotated_loopback_addresses_write_at_most_the_quota,
);

async fn server(backend: Backend) -> Option<Server> {
    Server::start_on(backend, &[FAIL_CLOSED]).await
}

fn message_with_id(message_id: &str, task: Option<&str>) -> Value {
    let mut m = user_message(message_id, "hello");
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

// ------------------------------------------------------------------ item 1: messageIds

/// mallory sends the messageId alice will use (the README's own example shape), alice then
/// sends it (not swallowed), bob reuses it after both (the mallory), then each
/// sends it again: everyone gets a task of their own, a repeat is answered with the
/// sender's own task, and no answer holds a byte of another's task id.
async fn a_message_id_is_its_senders_own(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    for via in Via::BOTH {
        let mid = unique("tck-input-required");
        let first = |who: &str| {
            let (s, who, mid) = (&s, Who::header(who), mid.clone());
            async move {
                let answer = send(s, &who, via, message_with_id(&mid, None)).await;
                (task_id(&answer.ok()["task"]), answer.text)
            }
        };
        let (mallorys, _) = first("mallory").await;
        let (alices, alices_answer) = first("alice").await;
        assert_ne!(
            alices, mallorys,
            "{via:?}: alice's message was not swallowed"
        );
        assert!(!alices_answer.contains(&mallorys), "{alices_answer}");
        let (bobs, bobs_answer) = first("bob").await;
        for earlier in [&alices, &mallorys] {
            assert!(
                !bobs_answer.contains(earlier.as_str()),
                "{via:?}: {bobs_answer}"
            );
        }
        assert!(bobs != alices && bobs != mallorys, "{via:?}");
        for (who, own, others) in [
            ("mallory", &mallorys, [&alices, &bobs]),
            ("alice", &alices, [&mallorys, &bobs]),
        ] {
            let again = send(&s, &Who::header(who), via, message_with_id(&mid, None)).await;
            assert_eq!(
                &task_id(&again.ok()["task"]),
                own,
                "{via:?}: {who}'s repeat"
            );
            for other in others {
                assert!(
                    !again.text.contains(other.as_str()),
                    "{via:?}: {}",
                    again.text
                );
            }
        }
        // The same id from someone new, on alice's task: the missing task's answer, naming
        // only the id the request named.
        let on_alices = message_with_id(&mid, Some(&alices));
        let refused = send(&s, &Who::header("eve"), via, on_alices).await;
        refused.not_found();
        for other in [&mallorys, &bobs] {
            assert!(!refused.text.contains(other.as_str()), "{}", refused.text);
        }
        let alice = get(&s, &Who::header("alice"), via, &alices).await.ok();
        assert_eq!(
            user_messages(&alice).len(),
            1,
            "alice's task holds her message only: {alice}"
        );
        for who in ["alice", "mallory", "bob"] {
            let stored = s.store().message_task("", who, &mid).await.expect("read");
            assert!(stored.is_some(), "{who}'s message is stored under {who}");
        }
    }
}

/// Ids are per sender, but the agent knows a task's messages by id: walt, a member, cannot
/// send on alice's task under the id of her message there (his words would pass for hers,
/// or hide hers from the model).
async fn a_message_id_on_the_task_is_not_taken_again(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    let people = json!([
        participants::participant("alice", "human", "reporter"),
        participants::participant("walt", "human", "watcher"),
    ]);
    for via in Via::BOTH {
        let mid = unique("tck-input-required");
        let m = json!({"messageId": mid, "role": "ROLE_USER", "parts": [{"text": "Paint it"},
            participants::task_envelope_part("Shed", "Paint it", people.clone())]});
        let id = task_id(&send(&s, &Who::header("alice"), via, m).await.ok()["task"]);
        let before = s.store().load_task(&id).await.expect("load").expect("task");
        let refused = send(
            &s,
            &Who::header("walt"),
            via,
            message_with_id(&mid, Some(&id)),
        )
        .await;
        refused.invalid_params();
        assert!(
            refused.message().contains("already used on this task"),
            "{}",
            refused.text
        );
        let after = s.store().load_task(&id).await.expect("load").expect("task");
        assert_eq!(after.version, before.version, "{via:?}");
    }
}

// ------------------------------------------------------------------ item 2: refusals

/// A webhook receiver that only counts connections: whatever connects is a delivery.
struct CountingReceiver {
    url: String,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CountingReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CountingReceiver {
    async fn start() -> CountingReceiver {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 65536];
                    // One request per connection is enough here: answer and close.
                    let _ = conn.read(&mut buf).await;
                    let reply = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                    let _ = conn.write_all(reply.as_bytes()).await;
                });
            }
        });
        CountingReceiver {
            url,
            connections,
            task,
        }
    }

    fn count(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// What a refusal must leave as it was: the record (version, last seq, status, size),
/// its event log and its webhook's cursor.
#[derive(Debug, PartialEq)]
struct Footprint {
    version: u64,
    last_seq: u64,
    status: Value,
    record_bytes: usize,
    events: usize,
    delivered: u64,
}

async fn footprint(s: &Server, id: &str) -> Footprint {
    let store = s.store();
    let rec = store.load_task(id).await.expect("load").expect("the task");
    let events = store.read_events(id, None, 10_000).await.expect("events");
    let configs = store
        .list_push_configs(id, None, 10)
        .await
        .expect("configs");
    Footprint {
        version: rec.version,
        last_seq: rec.last_seq,
        status: serde_json::to_value(&rec.task.status).expect("status"),
        record_bytes: serde_json::to_vec(&rec).expect("record").len(),
        events: events.len(),
        delivered: configs.first().map(|c| c.delivered).unwrap_or_default(),
    }
}

/// alice's task waits for her input, with her webhook: 1,000 messages from mallory (both
/// bindings, streamed or not) change nothing of it, call her webhook never, and each
/// answer is byte for byte the answer for a task that does not exist. The refusals are
/// audited up to mallory's hourly quota, no further.
async fn refused_messages_write_nothing_into_the_task(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    let receiver = CountingReceiver::start().await;
    let alice = Who::header("alice");
    let mallory = Who::header("mallory");
    let params = json!({"message": message_with_id(&unique("tck-input-required"), None),
        "configuration": {"taskPushNotificationConfig": {"url": receiver.url}}});
    let created = participants::rpc_as(&s, Some("alice"), "SendMessage", params).await;
    let task = created["result"]["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{created}");
    let id = task_id(&task);

    // The webhook has had every event there is before the refusals start.
    let deadline = Instant::now() + Duration::from_secs(10);
    let before = loop {
        let f = footprint(&s, &id).await;
        if f.delivered == f.last_seq && receiver.count() > 0 {
            break f;
        }
        assert!(
            Instant::now() < deadline,
            "the webhook never caught up: {f:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let deliveries = receiver.count();

    let missing = unique("missing-task");
    const REFUSALS: usize = 1000;
    let s = Arc::new(s);
    let mut sent = 0;
    while sent < REFUSALS {
        let batch: Vec<_> = (sent..(sent + 20).min(REFUSALS))
            .map(|i| {
                let (s, mallory, id, missing) =
                    (s.clone(), mallory.clone(), id.clone(), missing.clone());
                tokio::spawn(async move {
                    let via = Via::BOTH[i % 2];
                    let streamed = i % 4 >= 2;
                    let answer = |task: String| {
                        let (s, mallory) = (s.clone(), mallory.clone());
                        let mid = format!("m-refused-{i}");
                        async move {
                            let m = message_with_id(&mid, Some(&task));
                            if streamed {
                                send_streaming(&s, &mallory, via, m).await
                            } else {
                                send(&s, &mallory, via, m).await
                            }
                        }
                    };
                    let to_alices = answer(id.clone()).await;
                    to_alices.not_found();
                    if i % 50 == 0 {
                        let to_nobody = answer(missing.clone()).await;
                        assert_eq!(
                            to_alices.text.replace(&id, "<TASK>"),
                            to_nobody.text.replace(&missing, "<TASK>"),
                            "{via:?} streamed={streamed}: alice's task answers as a missing one"
                        );
                    }
                })
            })
            .collect();
        for t in batch {
            t.await.expect("a refusal");
        }
        sent += 20;
    }
    // Anything a refusal had set off would be delivered by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = Arc::into_inner(s).expect("the only server handle");
    assert_eq!(
        footprint(&s, &id).await,
        before,
        "the refusals wrote nothing"
    );
    assert_eq!(
        receiver.count(),
        deliveries,
        "alice's webhook was not called"
    );
    let after = get(&s, &alice, Via::Rest, &id).await.ok();
    assert_eq!(after["status"], task["status"], "{after}");

    // Audited up to mallory's hourly quota (per clock hour: the run may cross one).
    use common::store::AUDIT_ROWS_PER_PARTICIPANT_HOUR as QUOTA;
    let mut trail = s.store().audit_trail(&id).await.expect("trail");
    trail.extend(s.store().audit_trail(&missing).await.expect("trail"));
    assert!(trail
        .iter()
        .all(|r| r.participant == "mallory" && !r.accepted));
    let mut per_hour = std::collections::BTreeMap::<i64, u64>::new();
    for r in &trail {
        *per_hour.entry(r.quota_hour()).or_default() += 1;
    }
    assert!(per_hour.values().all(|n| *n <= QUOTA), "{per_hour:?}");
    assert!(per_hour.values().any(|n| *n == QUOTA), "{per_hour:?}");
}

/// In `none` mode anyone names themselves: 500 refused messages to alice's task, each from
/// a new id, all from one address (127.0.0.1), are audited up to the address's hourly
/// quota, no further (issue 48, item 5); each is still answered as a missing task.
async fn rotated_ids_from_one_address_write_at_most_the_quota(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    let alice = Who::header("alice");
    let created = send(
        &s,
        &alice,
        Via::Rest,
        message_with_id(&unique("tck-input-required"), None),
    );
    let id = task_id(&created.await.ok()["task"]);
    const IDS: usize = 500;
    let s = Arc::new(s);
    for batch in (0..IDS).collect::<Vec<_>>().chunks(25) {
        let sends: Vec<_> = batch
            .iter()
            .map(|&i| {
                let (s, id) = (s.clone(), id.clone());
                tokio::spawn(async move {
                    let who = Who::header(&format!("rotated-{i}"));
                    let m = message_with_id(&format!("m-{i}"), Some(&id));
                    send(&s, &who, Via::BOTH[i % 2], m).await.not_found();
                })
            })
            .collect();
        for t in sends {
            t.await.expect("a refusal");
        }
    }
    at_most_the_quota_per_hour(&s, &id, IDS).await;
}

/// The audit trail of task `id`, after `sent` refusals from rotated ids: at most the
/// hour's quota of rows in each clock hour (the run may cross one), the quota reached.
async fn at_most_the_quota_per_hour(s: &Server, id: &str, sent: usize) {
    use common::store::AUDIT_ROWS_PER_PARTICIPANT_HOUR as QUOTA;
    let trail = s.store().audit_trail(id).await.expect("trail");
    assert!(trail
        .iter()
        .all(|r| r.participant.starts_with("rotated-") && !r.accepted));
    let mut per_hour = std::collections::BTreeMap::<i64, u64>::new();
    for r in &trail {
        *per_hour.entry(r.quota_hour()).or_default() += 1;
    }
    assert!(
        per_hour.values().all(|n| *n <= QUOTA),
        "{} rows from {sent} ids: {per_hour:?}",
        trail.len()
    );
    assert!(per_hour.values().any(|n| *n == QUOTA), "{per_hour:?}");
}

/// A local client is not one address but the whole loopback block: on Linux any of
/// 127.0.0.0/8 connects to a harness on 127.0.0.1. 500 refused messages to alice's task,
/// each from a new id and a new loopback address (127.0.0.2, 127.0.0.3, …), are audited
/// up to one address's hourly quota, no further (issue 48, item 5).
async fn rotated_loopback_addresses_write_at_most_the_quota(backend: Backend) {
    use std::net::{IpAddr, Ipv4Addr};
    let source = |i: usize| IpAddr::V4(Ipv4Addr::new(127, 0, (i / 250) as u8, (i % 250 + 2) as u8));
    if std::net::TcpListener::bind((source(0), 0)).is_err() {
        eprintln!("skipped: this system has no loopback address but 127.0.0.1");
        return;
    }
    let Some(s) = server(backend).await else {
        return;
    };
    let alice = Who::header("alice");
    let created = send(
        &s,
        &alice,
        Via::Rest,
        message_with_id(&unique("tck-input-required"), None),
    );
    let id = task_id(&created.await.ok()["task"]);
    const IDS: usize = 500;
    let url = s.endpoint("/message:send");
    for batch in (0..IDS).collect::<Vec<_>>().chunks(25) {
        let sends: Vec<_> = batch
            .iter()
            .map(|&i| {
                let (url, id) = (url.clone(), id.clone());
                tokio::spawn(async move {
                    let client = reqwest::Client::builder()
                        .local_address(source(i))
                        .build()
                        .expect("a client");
                    let m = message_with_id(&format!("m-{i}"), Some(&id));
                    let who = Who::header(&format!("rotated-{i}"));
                    let resp = (client.post(url).headers(who.headers()))
                        .body(send_params(m).to_string())
                        .send()
                        .await
                        .expect("an answer");
                    assert_eq!(resp.status().as_u16(), 404, "{:?}", resp.text().await);
                })
            })
            .collect();
        for t in sends {
            t.await.expect("a refusal");
        }
    }
    at_most_the_quota_per_hour(&s, &id, IDS).await;
}

// ------------------------------------------------------------------ item 3: links

/// A first message's task envelope naming alice's task as a sub-task or a parent is
/// refused (links are the harness's to make), on both bindings: nothing is stored and
/// alice's task is untouched. (Links already stored one-sided reach nothing:
/// `common/tests/llm_agent.rs` `a_link_that_is_not_mutual_reads_and_wakes_nothing`.)
async fn an_envelope_links_no_tasks(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    let alice = Who::header("alice");
    let mallory = Who::header("mallory");
    let created = send(
        &s,
        &alice,
        Via::JsonRpc,
        message_with_id(&unique("tck-input-required"), None),
    )
    .await;
    let victim = task_id(&created.ok()["task"]);
    let before = s
        .store()
        .load_task(&victim)
        .await
        .expect("load")
        .expect("task");
    for via in Via::BOTH {
        for field in ["sub_tasks", "parent_tasks"] {
            let mut payload = json!({"name": "mine", "goal": "read alice's answer",
                "participants": [participants::participant("mallory", "human", "reporter")]});
            payload[field] = json!([{"task_id": victim}]);
            let mid = unique("tck-complete-task");
            let m = json!({"messageId": mid, "role": "ROLE_USER", "parts": [{"text": "x"},
                {"mediaType": participants::EVENT_MEDIA_TYPE,
                 "data": {"kind": "task", "payload": payload}}]});
            let refused = send(&s, &mallory, via, m).await;
            refused.invalid_params();
            assert!(
                refused.message().contains("the harness links tasks"),
                "{}",
                refused.text
            );
            let stored = s
                .store()
                .message_task("", "mallory", &mid)
                .await
                .expect("read");
            assert_eq!(stored, None, "{via:?} {field}");
        }
    }
    let after = s
        .store()
        .load_task(&victim)
        .await
        .expect("load")
        .expect("task");
    assert_eq!(after, before);
    assert!(listed_ids(&list(&s, &mallory, Via::JsonRpc).await.ok()).is_empty());
}

// ------------------------------------------------------------------ item 7: identity

/// Where identity is self-asserted (`--auth none`), an agent on alice's task that names
/// alice in a message's metadata is refused (its words would reach the model as hers, not
/// framed as an agent's); speaking as itself, it is heard.
async fn an_agent_participant_speaks_only_as_itself(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    let alice = Who::header("alice");
    let bot = Who::header("bot");
    let people = json!([
        participants::participant("alice", "human", "reporter"),
        participants::participant("bot", "agent", "watcher"),
    ]);
    for via in Via::BOTH {
        let m = json!({"messageId": unique("tck-input-required"), "role": "ROLE_USER",
            "parts": [{"text": "Paint the shed"},
                      participants::task_envelope_part("Shed", "Paint the shed", people.clone())]});
        let id = task_id(&send(&s, &alice, via, m).await.ok()["task"]);
        let mut as_alice = message_with_id(&unique("m"), Some(&id));
        as_alice["metadata"] = json!({"participant_id": "alice"});
        let refused = send(&s, &bot, via, as_alice.clone()).await;
        refused.invalid_params();
        assert!(
            refused.message().contains("speaks only as itself"),
            "{}",
            refused.text
        );
        let mid = as_alice["messageId"].as_str().expect("id");
        for sender in ["alice", "bot"] {
            let stored = s.store().message_task("", sender, mid).await.expect("read");
            assert_eq!(stored, None, "{via:?}");
        }
        let own = message_with_id(&unique("m"), Some(&id));
        let heard = send(&s, &bot, via, own).await.ok();
        assert_eq!(task_id(&heard["task"]), id);
    }
}
