//! The three bindings carry the same tasks (issue 49): random tasks written through one
//! binding, JSON-RPC, HTTP+JSON or gRPC chosen at random for each write, read the same
//! through all three.
//!
//! A task starts with a user message of random parts (text, data, raw, url, each with
//! metadata, from the protocol round trips' strategies) and metadata; the conformance
//! agent answers as its messageId asks (input required, completed with or without a text,
//! file, url, data or chunked artifact, rejected); while it waits for input, replies
//! (each its own behaviour) or a cancel follow. Then GetTask and ListTasks (the task's
//! context, with artifacts) through JSON-RPC and HTTP+JSON give the same JSON, and through
//! gRPC (its ProtoJSON, `grpc::json_of`, read as our type) the same value as the proto
//! carries it: its `Struct` numbers are doubles (`mapping::proto_numbers`). Every user
//! message written is in the history with the parts and metadata it was written with
//! (and the writer's id the server adds).
//!
//! A fixed seed and no shrinking: a few dozen tasks per store, each case's story printed
//! when it fails.

#[path = "../../common/tests/strategies/mod.rs"]
mod strategies;

use common::a2a::grpc::mapping::proto_numbers;
use common::a2a::{ListTasksResponse, Metadata, Part, Task};
use harness_e2e::grpc::{self, pb};
use harness_e2e::*;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// Tasks per store: each is two to five writes and six reads.
const CASES: u32 = 32;

#[derive(Debug, Clone, Copy)]
enum Binding {
    JsonRpc,
    Rest,
    Grpc,
}

fn binding() -> impl Strategy<Value = Binding> {
    select(vec![Binding::JsonRpc, Binding::Rest, Binding::Grpc])
}

/// A user message: what the conformance agent does (its messageId's prefix), its parts
/// and metadata.
#[derive(Debug, Clone)]
struct Write {
    via: Binding,
    behaviour: &'static str,
    parts: Vec<Part>,
    metadata: Metadata,
}

#[derive(Debug, Clone)]
enum Step {
    Reply(Write),
    Cancel(Binding),
}

#[derive(Debug, Clone)]
struct Story {
    first: Write,
    steps: Vec<Step>,
}

fn write() -> impl Strategy<Value = Write> {
    let behaviour = select(vec![
        "tck-input-required",
        "tck-input-required",
        "tck-complete-task",
        "tck-artifact-text",
        "tck-artifact-file-url",
        "tck-artifact-file",
        "tck-artifact-data",
        "tck-stream-artifact-chunked",
        "tck-reject-task",
    ]);
    // The channel media type is the channel extension's, with a schema of its own.
    let parts = strategies::parts().prop_map(|mut parts| {
        for p in &mut parts {
            if p.media_type.contains("tiny-harness.channel") {
                p.media_type.clear();
            }
        }
        parts
    });
    (binding(), behaviour, parts, strategies::metadata()).prop_map(
        |(via, behaviour, parts, metadata)| Write {
            via,
            behaviour,
            parts,
            metadata,
        },
    )
}

fn story() -> impl Strategy<Value = Story> {
    let step =
        prop_oneof![3 => write().prop_map(Step::Reply), 1 => binding().prop_map(Step::Cancel)];
    (write(), prop::collection::vec(step, 0..4)).prop_map(|(first, steps)| Story { first, steps })
}

/// `v` as the gRPC binding carries it.
fn carried(v: &Value) -> Value {
    let mut v = v.clone();
    proto_numbers(&mut v);
    v
}

/// A gRPC answer as the JSON bindings print it: its ProtoJSON read as our type `T`
/// (pbjson prints a timestamp as `…+00:00`, the JSON bindings as `…Z`).
fn as_ours<T: Serialize + DeserializeOwned>(message: &impl Serialize) -> Value {
    let ours: T = serde_json::from_value(grpc::json_of(message)).expect("our type");
    serde_json::to_value(ours).expect("prints")
}

/// The written message as a JSON value.
fn message(w: &Write, context_id: &str, task_id: Option<&str>) -> Value {
    let mut m = json!({
        "messageId": unique(w.behaviour),
        "role": "ROLE_USER",
        "contextId": context_id,
        "parts": w.parts,
    });
    if let Some(id) = task_id {
        m["taskId"] = id.into();
    }
    if let Some(metadata) = &w.metadata {
        m["metadata"] = Value::Object(metadata.clone());
    }
    m
}

/// Sends `w` through its binding; the task it answers with.
async fn send(s: &Server, client: &mut grpc::Client, w: &Write, message: Value) -> Value {
    let params = json!({"message": message});
    match w.via {
        Binding::JsonRpc => s.rpc_ok("SendMessage", params).await["task"].clone(),
        Binding::Rest => {
            let (status, body) = s.rest_post("/message:send", params).await;
            assert_eq!(status, 200, "{body}");
            body["task"].clone()
        }
        Binding::Grpc => {
            let request: pb::SendMessageRequest = grpc::message_of(&carried(&params));
            let reply = client.send_message(grpc::request(request, "")).await;
            grpc::json_of(&reply.expect("sent over gRPC").into_inner())["task"].clone()
        }
    }
}

async fn cancel(s: &Server, client: &mut grpc::Client, via: Binding, id: &str) -> Value {
    match via {
        Binding::JsonRpc => s.rpc_ok("CancelTask", json!({"id": id})).await,
        Binding::Rest => {
            let (status, body) = s.rest_post(&format!("/tasks/{id}:cancel"), json!({})).await;
            assert_eq!(status, 200, "{body}");
            body
        }
        Binding::Grpc => {
            let request = pb::CancelTaskRequest {
                id: id.to_owned(),
                ..Default::default()
            };
            let task = client.cancel_task(grpc::request(request, "")).await;
            grpc::json_of(&task.expect("canceled over gRPC").into_inner())
        }
    }
}

/// Plays `story`; the task's id and context, and the user messages written (as stored:
/// through gRPC, as the proto carries them).
async fn play(
    s: &Server,
    client: &mut grpc::Client,
    story: &Story,
) -> (String, String, Vec<Value>) {
    let context_id = unique("ctx");
    let first = message(&story.first, &context_id, None);
    let mut task = send(s, client, &story.first, first.clone()).await;
    let id = task_id(&task);
    let as_stored = |w: &Write, m: Value| match w.via {
        Binding::Grpc => carried(&m),
        _ => m,
    };
    let mut written = vec![as_stored(&story.first, first)];
    for step in &story.steps {
        if state(&task) != "TASK_STATE_INPUT_REQUIRED" {
            break;
        }
        task = match step {
            Step::Reply(w) => {
                let reply = message(w, &context_id, Some(&id));
                written.push(as_stored(w, reply.clone()));
                send(s, client, w, reply).await
            }
            Step::Cancel(via) => cancel(s, client, *via, &id).await,
        };
    }
    (id, context_id, written)
}

/// The task and its context's list through the three bindings: the same.
async fn reads_agree(
    s: &Server,
    client: &mut grpc::Client,
    id: &str,
    context_id: &str,
    written: &[Value],
) {
    let by_rpc = s.rpc_ok("GetTask", json!({"id": id})).await;
    let (status, by_rest) = s.rest_get(&format!("/tasks/{id}")).await;
    assert_eq!(status, 200, "{by_rest}");
    let get = pb::GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    };
    let by_grpc = client.get_task(grpc::request(get, "")).await;
    let by_grpc = as_ours::<Task>(&by_grpc.expect("GetTask over gRPC").into_inner());
    assert_eq!(by_rest, by_rpc, "GetTask: HTTP+JSON and JSON-RPC");
    assert_eq!(by_grpc, carried(&by_rpc), "GetTask: gRPC and JSON-RPC");

    let history = user_messages(&by_rpc);
    assert_eq!(
        history.len(),
        written.len(),
        "the user messages written: {by_rpc}"
    );
    for (stored, sent) in history.iter().zip(written) {
        assert_eq!(stored["messageId"], sent["messageId"]);
        assert_eq!(stored["parts"], sent["parts"], "{}", sent["messageId"]);
        // The server adds who wrote it.
        let mut metadata = stored["metadata"].as_object().cloned().unwrap_or_default();
        assert_eq!(metadata.remove("participant_id"), Some("anonymous".into()));
        let sent_metadata = sent["metadata"].as_object().cloned().unwrap_or_default();
        assert_eq!(metadata, sent_metadata, "{}", sent["messageId"]);
    }

    let list = json!({"contextId": context_id, "includeArtifacts": true});
    let by_rpc = s.rpc_ok("ListTasks", list).await;
    let query = format!("/tasks?contextId={context_id}&includeArtifacts=true");
    let (status, by_rest) = s.rest_get(&query).await;
    assert_eq!(status, 200, "{by_rest}");
    let list = pb::ListTasksRequest {
        context_id: context_id.to_owned(),
        include_artifacts: Some(true),
        ..Default::default()
    };
    let by_grpc = client.list_tasks(grpc::request(list, "")).await;
    let by_grpc = as_ours::<ListTasksResponse>(&by_grpc.expect("ListTasks over gRPC").into_inner());
    assert_eq!(listed_ids(&by_rpc), vec![id.to_owned()], "{by_rpc}");
    assert_eq!(by_rest, by_rpc, "ListTasks: HTTP+JSON and JSON-RPC");
    assert_eq!(by_grpc, carried(&by_rpc), "ListTasks: gRPC and JSON-RPC");
}

async fn tasks_read_the_same_through_every_binding(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let mut client = s.grpc().await;
    let config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let story = story();
    for case in 0..CASES {
        let story = story.new_tree(&mut runner).expect("a story").current();
        eprintln!("case {case}: {story:?}");
        let (id, context_id, written) = play(&s, &mut client, &story).await;
        reads_agree(&s, &mut client, &id, &context_id, &written).await;
    }
}

on_both_stores!(tasks_read_the_same_through_every_binding);
