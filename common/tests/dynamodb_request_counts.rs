//! How many DynamoDB requests each operation makes, against DynamoDB Local, and the write
//! units they consume (`ReturnConsumedCapacity`; a transaction costs twice its items'
//! units): printed as a table (run with `--nocapture` to see it) and held to the targets:
//! a new task the agent completes at once is one request, a reply that completes a task
//! three (its read and one write); a state transition of its own at most 3 items besides
//! the task's listing items (one a member); and ListTasks costs what the caller's own
//! tasks cost, whatever the size of their tenant.

mod support;

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::operation::batch_write_item::{BatchWriteItemInput, BatchWriteItemOutput};
use aws_sdk_dynamodb::operation::delete_item::{DeleteItemInput, DeleteItemOutput};
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::{PutItemInput, PutItemOutput};
use aws_sdk_dynamodb::operation::query::QueryInput;
use aws_sdk_dynamodb::operation::scan::ScanInput;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsInput, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::operation::update_item::{UpdateItemInput, UpdateItemOutput};
use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextMut,
    BeforeSerializationInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use common::a2a::Call;
use common::a2a::{CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role};
use common::a2a::{SendMessageRequest, TaskState};
use common::models::scripted::Scripted;
use common::models::{ChatRequest, ChatResponse, Model, ModelError};
use common::ops::{execute, Answer, Caller, Harness};
use common::store::{DynamoStore, Store};
use serde_json::Value;

/// One request: its operation, how many items it writes (0 for a read) and the write
/// units it consumed.
#[derive(Debug, Clone)]
struct Sent {
    operation: String,
    items_written: usize,
    write_units: f64,
    /// A Query's key condition, with its values in place.
    query: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Sent>>>);

impl Recorder {
    fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.0.lock().expect("recorder"))
    }
}

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "request-recorder"
    }

    // Once per operation, not per retry attempt.
    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input();
        let (operation, items_written) = if input.downcast_ref::<GetItemInput>().is_some() {
            ("GetItem", 0)
        } else if input.downcast_ref::<QueryInput>().is_some() {
            ("Query", 0)
        } else if input.downcast_ref::<ScanInput>().is_some() {
            ("Scan", 0)
        } else if input.downcast_ref::<PutItemInput>().is_some() {
            ("PutItem", 1)
        } else if input.downcast_ref::<DeleteItemInput>().is_some() {
            ("DeleteItem", 1)
        } else if input.downcast_ref::<UpdateItemInput>().is_some() {
            ("UpdateItem", 1)
        } else if let Some(b) = input.downcast_ref::<BatchWriteItemInput>() {
            let items = b
                .request_items()
                .map(|r| r.values().map(Vec::len).sum())
                .unwrap_or(0);
            ("BatchWriteItem", items)
        } else if let Some(t) = input.downcast_ref::<TransactWriteItemsInput>() {
            ("TransactWriteItems", t.transact_items().len())
        } else {
            ("other", 0)
        };
        let query = input.downcast_ref::<QueryInput>().map(|q| {
            let mut condition = q.key_condition_expression().unwrap_or_default().to_owned();
            for (name, value) in q.expression_attribute_values().into_iter().flatten() {
                let shown = value
                    .as_s()
                    .cloned()
                    .unwrap_or_else(|_| format!("{value:?}"));
                condition = condition.replace(name, &shown);
            }
            condition
        });
        self.0.lock().expect("recorder").push(Sent {
            operation: operation.into(),
            items_written,
            write_units: 0.0,
            query,
        });
        Ok(())
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let total = Some(ReturnConsumedCapacity::Total);
        let input = context.input_mut();
        if let Some(i) = input.downcast_mut::<PutItemInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<UpdateItemInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<DeleteItemInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<TransactWriteItemsInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<BatchWriteItemInput>() {
            i.return_consumed_capacity = total;
        }
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Ok(output) = context.output_or_error() else {
            return Ok(());
        };
        let units = |c: &[ConsumedCapacity]| c.iter().filter_map(|c| c.capacity_units()).sum();
        let one = |c: Option<&ConsumedCapacity>| c.and_then(|c| c.capacity_units());
        let consumed: Option<f64> = if let Some(o) = output.downcast_ref::<PutItemOutput>() {
            one(o.consumed_capacity())
        } else if let Some(o) = output.downcast_ref::<UpdateItemOutput>() {
            one(o.consumed_capacity())
        } else if let Some(o) = output.downcast_ref::<DeleteItemOutput>() {
            one(o.consumed_capacity())
        } else if let Some(o) = output.downcast_ref::<TransactWriteItemsOutput>() {
            Some(units(o.consumed_capacity()))
        } else {
            (output.downcast_ref::<BatchWriteItemOutput>()).map(|o| units(o.consumed_capacity()))
        };
        if let (Some(units), Some(last)) = (consumed, self.0.lock().expect("recorder").last_mut()) {
            last.write_units += units;
        }
        Ok(())
    }
}

fn message(id: &str, task_id: &str) -> Message {
    Message {
        message_id: format!("{id}-{}", common::engine::transition::new_id()),
        task_id: task_id.into(),
        role: Role::User,
        parts: vec![Part::text("hello")],
        ..Default::default()
    }
}

fn send(id: &str, task_id: &str) -> Call {
    Call::SendMessage(SendMessageRequest {
        message: Some(message(id, task_id)),
        ..Default::default()
    })
}

async fn run(h: &Harness, call: Call) -> Value {
    match execute(h, call, &Caller::named("alice")).await {
        Ok(Answer::Json(v)) => serde_json::from_str(v.get()).expect("JSON"),
        Ok(Answer::Stream(_)) => panic!("a stream"),
        Err(e) => panic!("{e}"),
    }
}

struct Row {
    scenario: &'static str,
    sent: Vec<Sent>,
}

impl Row {
    fn count(&self, ops: &[&str]) -> usize {
        self.sent
            .iter()
            .filter(|s| ops.contains(&s.operation.as_str()))
            .count()
    }
    /// Items written by each state write (transactions and single puts).
    fn writes(&self) -> Vec<usize> {
        self.sent
            .iter()
            .filter(|s| s.items_written > 0 && s.operation != "BatchWriteItem")
            .map(|s| s.items_written)
            .collect()
    }

    /// Write units consumed, all requests together.
    fn write_units(&self) -> f64 {
        self.sent.iter().map(|s| s.write_units).sum()
    }

    /// Events given their expiry when the task finished (housekeeping, not state).
    fn expired(&self) -> usize {
        self.sent
            .iter()
            .filter(|s| s.operation == "BatchWriteItem")
            .map(|s| s.items_written)
            .sum()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_operation_stays_within_its_dynamodb_request_budget() {
    let Some((recorder, client, table)) = recorded_table().await else {
        return;
    };
    // As deployed: the harness's own agent is left out of the listing index.
    let store = Arc::new(DynamoStore::new(client, table).with_unlisted("tiny-harness"));
    let h = Harness::new(store.clone(), common::agent::conformance(), with_push_key())
        .expect("harness");
    // Once a process (a cold start), at its first request: the agent id recorded (one
    // PutItem) and the reserved ids read (one Query). Not a cost of any one operation.
    h.reserved().await.expect("the reserved ids");
    let cold_start = recorder.take();
    assert_eq!(
        cold_start
            .iter()
            .map(|s| s.operation.as_str())
            .collect::<Vec<_>>(),
        ["PutItem", "Query"],
        "{cold_start:?}"
    );

    let mut rows = Vec::new();
    let done = run(&h, send("tck-complete-task", "")).await;
    rows.push(Row {
        scenario: "new task, completed by the agent",
        sent: recorder.take(),
    });
    let id = done["task"]["id"].as_str().expect("task id").to_owned();
    assert_eq!(
        done["task"]["status"]["state"],
        TaskState::Completed.as_str()
    );

    run(
        &h,
        Call::GetTask(GetTaskRequest {
            id: id.clone(),
            ..Default::default()
        }),
    )
    .await;
    rows.push(Row {
        scenario: "GetTask",
        sent: recorder.take(),
    });

    run(&h, Call::ListTasks(ListTasksRequest::default())).await;
    rows.push(Row {
        scenario: "ListTasks",
        sent: recorder.take(),
    });

    let waiting = run(&h, send("tck-input-required", "")).await;
    let waiting_id = waiting["task"]["id"].as_str().expect("task id").to_owned();
    recorder.take();
    let resumed = run(&h, send("tck-complete-task", &waiting_id)).await;
    assert_eq!(
        resumed["task"]["status"]["state"],
        TaskState::Completed.as_str()
    );
    rows.push(Row {
        scenario: "message to an existing task (reply, completes)",
        sent: recorder.take(),
    });

    let waiting = run(&h, send("tck-input-required", "")).await;
    let waiting_id = waiting["task"]["id"].as_str().expect("task id").to_owned();
    recorder.take();
    run(
        &h,
        Call::CancelTask(CancelTaskRequest {
            id: waiting_id,
            ..Default::default()
        }),
    )
    .await;
    rows.push(Row {
        scenario: "CancelTask",
        sent: recorder.take(),
    });

    // A long task: the LLM agent, 50 model calls, each adding ~5 KB to the conversation
    // (a tool call's arguments). Each turn's writes are what it costs.
    let turns = long_task_turns(store.clone(), &recorder).await;
    rows.push(Row {
        scenario: "LLM task (~5 KB a turn), its 2nd turn",
        sent: turns[1].clone(),
    });
    rows.push(Row {
        scenario: "LLM task (~5 KB a turn), its 50th turn",
        sent: turns[49].clone(),
    });

    // An answer streamed: 4,000 bytes in 20 chunks 50 ms apart, batched into the log.
    let streamed = streamed_answer(store.clone(), &recorder, true).await;
    rows.push(Row {
        scenario: "LLM answer streamed (4,000 B in 20 chunks, 50 ms apart)",
        sent: streamed,
    });
    let whole = streamed_answer(store.clone(), &recorder, false).await;
    rows.push(Row {
        scenario: "the same answer from a model that does not stream",
        sent: whole,
    });

    println!("\nDynamoDB requests per operation (DynamoDB Local)");
    println!("| scenario | requests | reads (GetItem/Query) | state writes | items per state write | events given a TTL (BatchWriteItem) | write units |");
    println!("|---|---|---|---|---|---|---|");
    for row in &rows {
        println!(
            "| {} | {} | {} | {} | {:?} | {} | {} |",
            row.scenario,
            row.sent.len(),
            row.count(&["GetItem", "Query"]),
            row.writes().len(),
            row.writes(),
            row.expired(),
            row.write_units()
        );
        assert_eq!(row.count(&["Scan"]), 0, "{}: no Scan", row.scenario);
    }

    // A blocking send to an agent that answers at once is one write: the message
    // accepted (the task's head, the message as a history part, its event, its dedupe
    // item) and the agent's answer (its event and status message), with the task's
    // items in the listing index, one a member (alice: the harness's own agent is not
    // listed). The dedupe check is that write's condition, and the events of the task
    // it ends get their expiry in it: a new task costs that write alone, a reply the
    // read of the task (its head and history) besides.
    const MEMBERS: usize = 1;
    for (row, reads) in [(&rows[0], 0), (&rows[3], 2)] {
        assert_eq!(
            row.sent.len(),
            reads + 1,
            "{}: {:?}",
            row.scenario,
            row.sent
        );
        assert_eq!(row.count(&["GetItem", "Query"]), reads, "{}", row.scenario);
        assert_eq!(
            row.expired(),
            0,
            "{}: events expire in the commit",
            row.scenario
        );
    }
    assert!(
        rows[0].writes()[0] <= 4 + 2 + MEMBERS,
        "a new task wrote {:?}",
        rows[0].writes()
    );
    // A state transition of its own (a cancel) is at most 3 items (head, event, and the
    // status message it replaces, now a history part) and the members' listing items;
    // one that ends the task also gives its earlier events (two here) their expiry.
    assert!(
        rows[4].writes().iter().all(|n| *n <= 3 + MEMBERS + 2),
        "a cancel wrote {:?}",
        rows[4].writes()
    );
    assert_eq!(
        rows[4].expired(),
        0,
        "a cancel's events expire in its commit"
    );
    assert!(
        rows[1].writes().is_empty() && rows[2].writes().is_empty(),
        "reads write nothing"
    );
    assert_eq!(rows[4].writes().len(), 1, "a cancel is one transition");
    // A streamed answer is a batch a write (the first chunk at once, then every 250 ms or
    // 1 KiB: 1 s of 4,000 B makes at most 6), each of the head and one event: the text is
    // in the log alone until the end, so a batch costs the same however long the answer.
    let batches = &rows[7];
    let units: Vec<f64> = batches.sent.iter().map(|s| s.write_units).collect();
    println!("A streamed answer's writes, in write units: {units:?}");
    assert!(
        (3..=7).contains(&batches.writes().len()),
        "{:?}",
        batches.writes()
    );
    assert!(
        batches.writes()[..batches.writes().len() - 1]
            .iter()
            .all(|n| *n == 2),
        "{:?}",
        batches.writes()
    );
    // A checkpoint writes what it adds, not the task: the 50th turn (which also completes
    // the task) costs at most twice the 2nd.
    assert!(
        rows[6].write_units() <= 2.0 * rows[5].write_units(),
        "turn write units grow with the task: {} then {}",
        rows[5].write_units(),
        rows[6].write_units()
    );
}

/// Drives one LLM task whose answer streams (20 chunks of 200 bytes, 50 ms apart), or
/// comes whole, and returns the requests from its model call on.
async fn streamed_answer(store: Arc<DynamoStore>, recorder: &Recorder, streams: bool) -> Vec<Sent> {
    let chunks: Vec<String> = (0..20)
        .map(|i| format!("{i:02}{}", "x".repeat(198)))
        .collect();
    let turn = if streams {
        serde_json::json!({"chunks": chunks, "chunk_delay_ms": 50})
    } else {
        serde_json::json!({"text": chunks.concat()})
    };
    let script = serde_json::json!({ "turns": [turn] });
    let model = Marked {
        inner: Scripted::parse("streamed", &script.to_string()).expect("script"),
        recorder: recorder.clone(),
    };
    let h = support::llm_harness(store, Arc::new(model));
    recorder.take();
    let done = run(&h, send("streamed", "")).await;
    assert_eq!(
        done["task"]["artifacts"][0]["parts"][0]["text"],
        chunks.concat()
    );
    let sent = recorder.take();
    let from = sent
        .iter()
        .position(|s| s.operation == MODEL_CALL)
        .expect("a call");
    sent[from + 1..].to_vec()
}

/// Marks each model call in the recorder, so a drive's requests split into turns.
struct Marked {
    inner: Scripted,
    recorder: Recorder,
}

impl Marked {
    fn mark(&self) {
        self.recorder.0.lock().expect("recorder").push(Sent {
            operation: MODEL_CALL.into(),
            items_written: 0,
            write_units: 0.0,
            query: None,
        });
    }
}

#[async_trait::async_trait]
impl Model for Marked {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.mark();
        self.inner.chat(request).await
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: common::models::OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        self.mark();
        self.inner.chat_stream(request, on_delta).await
    }
}

const MODEL_CALL: &str = "model call";

/// Drives one LLM task of 50 model calls (49 tool calls of ~5 KB arguments, then an
/// answer) on `store`; returns each turn's requests, from its model call to the next.
async fn long_task_turns(store: Arc<DynamoStore>, recorder: &Recorder) -> Vec<Vec<Sent>> {
    let pad = "x".repeat(5 * 1024);
    let mut turns: Vec<Value> = (0..49)
        .map(|_| serde_json::json!({"tool_calls": [{"name": "current_time", "arguments": {"pad": pad}}]}))
        .collect();
    turns.push(serde_json::json!({"text": "done"}));
    let script = serde_json::json!({ "turns": turns }).to_string();
    let model = Marked {
        inner: Scripted::parse("long task", &script).expect("script"),
        recorder: recorder.clone(),
    };
    let h = support::llm_harness(store, Arc::new(model));
    recorder.take();
    let done = run(&h, send("long", "")).await;
    assert_eq!(
        done["task"]["status"]["state"],
        TaskState::Completed.as_str()
    );
    let mut out: Vec<Vec<Sent>> = Vec::new();
    for sent in recorder.take() {
        match out.last_mut() {
            _ if sent.operation == MODEL_CALL => out.push(Vec::new()),
            Some(turn) => turn.push(sent),
            None => {}
        }
    }
    assert_eq!(out.len(), 50, "one turn per model call");
    out
}

/// Issue 19, must-show 4: ListTasks for a participant with 3 tasks makes the same
/// DynamoDB requests in a tenant of 5,000 tasks as in a tenant of 5: it reads the
/// participant's partition of the listing index, never the tenant's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tasks_costs_the_same_in_a_tenant_of_5000_as_in_a_tenant_of_5() {
    let Some((recorder, client, table)) = recorded_table().await else {
        return;
    };
    let store = Arc::new(DynamoStore::new(client.clone(), table.clone()));
    let h = Harness::new(store.clone(), common::agent::conformance(), with_push_key())
        .expect("harness");
    for (tenant, size) in [("small", 5), ("big", 5000)] {
        let owner = |i| if i < 3 { "carol" } else { "someone-else" };
        create_all(&store, (0..size).map(|i| listed_task(tenant, owner(i), i))).await;
    }
    recorder.take();

    let mut costs = Vec::new();
    for tenant in ["small", "big"] {
        let request = ListTasksRequest {
            tenant: tenant.into(),
            page_size: Some(2),
            ..Default::default()
        };
        let page = match execute(&h, Call::ListTasks(request), &Caller::named("carol")).await {
            Ok(Answer::Json(v)) => serde_json::from_str::<Value>(v.get()).expect("JSON"),
            other => panic!("{:?}", other.err()),
        };
        assert_eq!(page["totalSize"], 3, "{tenant}: {page}");
        assert_eq!(page["tasks"].as_array().map(Vec::len), Some(2), "{tenant}");
        assert!(
            page["tasks"].as_array().into_iter().flatten().all(|t| {
                t["id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with(&format!("{tenant}-")))
            }),
            "{tenant}: only the tenant's tasks"
        );
        let sent = recorder.take();
        for query in sent.iter().filter_map(|s| s.query.as_deref()) {
            assert!(
                query.contains(&format!("MEMBER#{tenant}#carol")),
                "{tenant}: a Query outside carol's own partition: {query}"
            );
        }
        costs.push(sent.iter().map(|s| s.operation.clone()).collect::<Vec<_>>());
    }
    println!("ListTasks in a tenant of 5: {:?}", costs[0]);
    println!("ListTasks in a tenant of 5,000: {:?}", costs[1]);
    assert_eq!(
        costs[0], costs[1],
        "the same requests whatever the tenant's size"
    );
    assert!(costs[1].len() <= 3 + 2, "{:?}", costs[1]);
    // DynamoDB Local slows down as it fills: 10,000 items are not left to the tests after.
    let _ = client.delete_table().table_name(&table).send().await;
}

/// Issue 21, must-show 5: "waiting on me" reads what waits on the caller, not everything
/// they take part in: carol is on 300 tasks, 2 of which wait on her; ListTasks with
/// `waitingOnMe` answers those 2 with a COUNT and a Query of her waiting partition and
/// one BatchGetItem of their heads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_on_me_reads_only_what_waits() {
    let Some((recorder, client, table)) = recorded_table().await else {
        return;
    };
    let store = Arc::new(DynamoStore::new(client.clone(), table.clone()));
    let h = Harness::new(store.clone(), common::agent::conformance(), with_push_key())
        .expect("harness");
    let tasks = (0..300).map(|i| {
        let mut rec = listed_task("t", "carol", i);
        if i % 150 == 7 {
            let mut question = Message {
                message_id: format!("q-{i}"),
                role: Role::Agent,
                parts: vec![Part::text("Which colour?")],
                ..Default::default()
            };
            common::ext::participant::address_to(&mut question, "carol");
            rec.waits_on = Some("carol".into());
            if let Some(status) = rec.task.status.as_mut() {
                status.state = TaskState::InputRequired;
                status.message = Some(question);
            }
        }
        rec
    });
    create_all(&store, tasks).await;
    recorder.take();

    let request = ListTasksRequest {
        tenant: "t".into(),
        waiting_on_me: Some(true),
        ..Default::default()
    };
    let page = match execute(&h, Call::ListTasks(request), &Caller::named("carol")).await {
        Ok(Answer::Json(v)) => serde_json::from_str::<Value>(v.get()).expect("JSON"),
        other => panic!("{:?}", other.err()),
    };
    let ids: Vec<&str> = (page["tasks"].as_array().into_iter().flatten())
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, ["t-00157", "t-00007"], "{page}");
    assert_eq!(page["totalSize"], 2, "{page}");
    let sent = recorder.take();
    for query in sent.iter().filter_map(|s| s.query.as_deref()) {
        assert!(
            query.contains("WAITING#t#carol"),
            "a Query outside what waits: {query}"
        );
    }
    let operations: Vec<&str> = sent.iter().map(|s| s.operation.as_str()).collect();
    // The COUNT, the page, and one BatchGetItem of the two heads (recorded as `other`).
    assert_eq!(operations, ["Query", "Query", "other"], "{sent:?}");
    let _ = client.delete_table().table_name(&table).send().await;
}

/// Issue 19: a subscription to a task where nothing happens reads its log less and less
/// often (250 ms, doubling to 2 s), not every 250 ms: in a Lambda function, where no
/// writer signals it, each read is a Query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_subscription_reads_the_log_less_and_less_often() {
    use futures::StreamExt;
    let Some((recorder, client, table)) = recorded_table().await else {
        return;
    };
    let store = Arc::new(DynamoStore::new(client, table));
    let h = Harness::new(store.clone(), common::agent::conformance(), with_push_key())
        .expect("harness");
    let waiting = run(&h, send("tck-input-required", "")).await;
    let id = waiting["task"]["id"].as_str().expect("task id").to_owned();
    // A WORKING task no one writes to: the subscription waits on it.
    let mut rec = store.load_task(&id).await.expect("load").expect("task");
    rec.task.status = Some(common::a2a::TaskStatus {
        state: TaskState::Working,
        message: None,
        timestamp: Some(common::a2a::Timestamp::now()),
    });
    store
        .commit(&rec, rec.version, &[], None)
        .await
        .expect("commit");
    recorder.take();

    let call = Call::SubscribeToTask(common::a2a::SubscribeToTaskRequest {
        id: id.clone(),
        ..Default::default()
    });
    let Ok(Answer::Stream(mut stream)) = execute(&h, call, &Caller::named("alice")).await else {
        panic!("a stream");
    };
    assert!(stream.next().await.is_some(), "the task first");
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    drop(stream);
    let reads = (recorder.take().iter())
        .filter(|s| s.query.as_deref().is_some_and(|q| q.contains("EV#")))
        .count();
    // 0, 0.25, 0.75, 1.75, 3.75 and 5.75 s: 6 reads (24 at a fixed 250 ms).
    assert!((4..=8).contains(&reads), "{reads} reads of the log in 6 s");
}

/// Task `<tenant>-<i>` of `owner` (its reporter) in `tenant`.
/// Creates `tasks`, 32 at a time.
async fn create_all(store: &DynamoStore, tasks: impl Iterator<Item = common::store::TaskRecord>) {
    use futures::StreamExt;
    let creates = tasks.map(|rec| async move { store.create_task(&rec, &[], None).await });
    let created: Vec<_> = futures::stream::iter(creates)
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(created.iter().all(Result::is_ok), "tasks created");
}

fn listed_task(tenant: &str, owner: &str, i: usize) -> common::store::TaskRecord {
    use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
    let mut rec = common::store::TaskRecord {
        tenant: tenant.into(),
        ..Default::default()
    };
    rec.task.id = format!("{tenant}-{i:05}");
    rec.task.context_id = format!("ctx-{i}");
    rec.task.status = Some(common::a2a::TaskStatus {
        state: TaskState::Completed,
        message: None,
        timestamp: chrono::DateTime::from_timestamp_millis(1_700_000_000_000 + i as i64)
            .map(common::a2a::Timestamp),
    });
    let mut ext = TaskExtension::from_text("listed");
    ext.add(Participant::new(
        owner,
        ParticipantKind::Human,
        ParticipantRole::Reporter,
    ));
    ext.store(&mut rec.task);
    rec
}

/// Issue 18, must-show 5: GetTask with `historyLength: 2` on a task of 500 messages reads
/// the task's head and one Query over exactly the last two history items, not the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_task_with_a_short_history_reads_only_that_history() {
    let Some((recorder, client, table)) = recorded_table().await else {
        return;
    };
    let store = Arc::new(DynamoStore::new(client, table));
    let h = Harness::new(store.clone(), common::agent::conformance(), with_push_key())
        .expect("harness");
    let waiting = run(&h, send("tck-input-required", "")).await;
    let id = waiting["task"]["id"].as_str().expect("task id").to_owned();
    // 500 messages, added straight to the store, 90 a commit (a transaction holds 100 items).
    let mut rec = store.load_task(&id).await.expect("load").expect("task");
    while rec.task.history.len() < 500 {
        let more = (500 - rec.task.history.len()).min(90);
        for _ in 0..more {
            rec.task.history.push(message("m", &id));
        }
        rec = store
            .commit(&rec, rec.version, &[], None)
            .await
            .expect("commit");
    }
    let last_two: Vec<String> = rec.task.history[498..]
        .iter()
        .map(|m| m.message_id.clone())
        .collect();
    recorder.take();

    let task = run(
        &h,
        Call::GetTask(GetTaskRequest {
            id: id.clone(),
            history_length: Some(2),
            ..Default::default()
        }),
    )
    .await;
    let sent = recorder.take();
    let ids: Vec<&str> = task["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|m| m["messageId"].as_str())
        .collect();
    assert_eq!(ids, last_two);
    let operations: Vec<&str> = sent.iter().map(|s| s.operation.as_str()).collect();
    assert_eq!(operations, ["GetItem", "Query"], "{sent:?}");
    let range = sent[1].query.as_deref().expect("the Query's key condition");
    assert!(
        range.ends_with("sk BETWEEN HIST#0000000498 AND HIST#0000000499~~"),
        "{range}"
    );
}

/// A client to the test server that records every request it makes, and a fresh table
/// (its creation not recorded); None when no server is configured.
/// A message or a cancel from someone who is not on the task reads its head and nothing
/// more: what the task holds, and so how long it takes to read, is not theirs to time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_reads_the_head_alone() {
    let Some((recorder, client, table)) = recorded_table().await else {
        return;
    };
    let store = Arc::new(DynamoStore::new(client, table));
    let h = Harness::new(store, common::agent::conformance(), with_push_key()).expect("harness");
    let waiting = run(&h, send("tck-input-required", "")).await;
    let id = waiting["task"]["id"].as_str().expect("task id").to_owned();
    let cancel = Call::CancelTask(CancelTaskRequest {
        id: id.clone(),
        ..Default::default()
    });
    for (what, call) in [
        ("message", send("tck-complete-task", &id)),
        ("cancel", cancel),
    ] {
        recorder.take();
        let refused = execute(&h, call, &Caller::named("mallory")).await;
        assert!(
            matches!(&refused, Err(e) if e.to_string().contains("not found")),
            "{what}: {:?}",
            refused.map(|_| ())
        );
        let row = Row {
            scenario: what,
            sent: recorder.take(),
        };
        assert_eq!(row.count(&["GetItem"]), 1, "{what}: {:?}", row.sent);
        assert_eq!(row.count(&["Query"]), 0, "{what}: {:?}", row.sent);
    }
}

async fn recorded_table() -> Option<(Recorder, aws_sdk_dynamodb::Client, String)> {
    let config = support::dynamo_config()?;
    let recorder = Recorder::default();
    let client = aws_sdk_dynamodb::Client::from_conf(config.interceptor(recorder.clone()).build());
    let table = support::fresh_table(&client).await;
    recorder.take();
    Some((recorder, client, table))
}

/// The default configuration, with the key push notifications need.
fn with_push_key() -> common::config::Config {
    common::config::Config {
        push_key: Some(common::sealing::PushKey::generate()),
        ..Default::default()
    }
}
