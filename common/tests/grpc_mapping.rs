//! The gRPC binding's mapping (`common::a2a::grpc::mapping`, issue 49) against the JSON
//! bindings, for random values of the protocol's own types (the strategies of the protocol
//! round trips, `strategies/mod.rs`):
//!
//! - an answer (task, message, stream event of each kind, task list, push config, card):
//!   our JSON → the proto message (`mapping::answer`) → protobuf bytes and back → its
//!   ProtoJSON → our type is the value we started from;
//! - a request of every operation, as a gRPC client sends it (the proto message of the
//!   request's JSON, through protobuf bytes), is the `Call` the JSON-RPC binding decodes
//!   from that JSON;
//! - every rpc of the service is the operation of the same name.
//!
//! What the proto cannot carry is left out of the expectation, not of the values: the
//! harness's own `waitingOnMe` filter (no proto field); a `pageSize` of 0 on
//! ListTaskPushNotificationConfigs (a plain `int32`, where 0 is unset); the numbers of
//! `Struct` and `Value` (metadata, data parts), which are doubles: an integer beyond 2^53
//! arrives as the nearest double.

mod strategies;

use std::fmt::Debug;

use common::a2a::grpc::{mapping, pb};
use common::a2a::*;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use strategies::*;

fn fail(what: &str, e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("{what}: {e}"))
}

/// `P` through its protobuf encoding: what tonic sends and the other side reads.
fn through_bytes<P: prost::Message + Default>(p: &P) -> Result<P, TestCaseError> {
    P::decode(p.encode_to_vec().as_slice()).map_err(|e| fail("protobuf decode", e))
}

/// `v` as the proto carries it (`mapping::proto_numbers`).
fn as_doubles(v: &Value) -> Value {
    let mut v = v.clone();
    mapping::proto_numbers(&mut v);
    v
}

/// An answer `x` of our type `T` as the rpc's message `P`: through `mapping::answer`,
/// protobuf bytes and the message's ProtoJSON back to `T`, it is `x`.
fn answer_round_trips<T, P>(x: &T) -> Result<P, TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
    P: prost::Message + Default + Serialize + DeserializeOwned + PartialEq + Debug,
{
    let json = serde_json::to_string(x).map_err(|e| fail("our JSON", e))?;
    let p: P = mapping::answer(&json).map_err(|e| fail(&format!("answer {json}"), e))?;
    let received = through_bytes(&p)?;
    prop_assert_eq!(&received, &p);
    let proto_json = mapping::proto_json(&received).map_err(|e| fail("ProtoJSON", e))?;
    let back: T = serde_json::from_value(proto_json.clone())
        .map_err(|e| fail(&format!("our type from {proto_json}"), e))?;
    let expected = as_doubles(&serde_json::to_value(x).map_err(|e| fail("our JSON", e))?);
    let got = serde_json::to_value(&back).map_err(|e| fail("our JSON again", e))?;
    prop_assert_eq!(got, expected);
    Ok(p)
}

/// A request `r` of operation `op`, sent by a gRPC client as the proto message `P` of its
/// JSON, is the call the JSON-RPC binding decodes from that JSON.
fn call_matches<R, P>(op: Operation, r: &R) -> Result<(), TestCaseError>
where
    R: Serialize,
    P: prost::Message + Default + Serialize + DeserializeOwned,
{
    let mut json = serde_json::to_value(r).map_err(|e| fail("our JSON", e))?;
    // A client's integers beyond 2^53 are doubles in the proto message it sends.
    let sent: P = serde_json::from_value(as_doubles(&json))
        .map_err(|e| fail(&format!("the proto request of {json}"), e))?;
    let grpc = mapping::call(op, &through_bytes(&sent)?);
    if let Some(params) = json.as_object_mut() {
        params.remove("waitingOnMe");
        if op == Operation::ListTaskPushNotificationConfigs
            && params.get("pageSize") == Some(&0.into())
        {
            params.remove("pageSize");
        }
    }
    let jsonrpc = jsonrpc::parse_call(op.name(), as_doubles(&json));
    prop_assert_eq!(grpc, jsonrpc, "request {}", json);
    Ok(())
}

/// Each OAuth flow with only the fields its proto message has (our `OAuthFlow` is the
/// union of them).
fn proto_flows(mut card: AgentCard) -> AgentCard {
    for scheme in card.security_schemes.values_mut() {
        let Some(flows) = scheme
            .oauth2_security_scheme
            .as_mut()
            .and_then(|s| s.flows.as_mut())
        else {
            continue;
        };
        if let Some(f) = flows.authorization_code.as_mut() {
            f.device_authorization_url.clear();
        }
        if let Some(f) = flows.client_credentials.as_mut() {
            f.authorization_url.clear();
            f.device_authorization_url.clear();
            f.pkce_required = false;
        }
        if let Some(f) = flows.device_code.as_mut() {
            f.authorization_url.clear();
            f.pkce_required = false;
        }
        if let Some(f) = flows.implicit.as_mut() {
            f.device_authorization_url.clear();
            f.token_url.clear();
            f.pkce_required = false;
        }
        if let Some(f) = flows.password.as_mut() {
            f.authorization_url.clear();
            f.device_authorization_url.clear();
            f.pkce_required = false;
        }
    }
    card
}

/// Cases per property: each case holds many messages, parts and metadata objects.
const CASES: u32 = 64;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn a_task_answer_round_trips(x in task()) {
        answer_round_trips::<Task, pb::Task>(&x)?;
    }

    #[test]
    fn a_message_answer_round_trips(x in message()) {
        answer_round_trips::<Message, pb::Message>(&x)?;
    }

    /// Each payload kind, as an answer and as a stream's event (`mapping::event`).
    #[test]
    fn a_stream_event_round_trips(x in stream_response()) {
        let p = answer_round_trips::<StreamResponse, pb::StreamResponse>(&x)?;
        prop_assert_eq!(mapping::event(&x).map_err(|e| fail("event", e))?, p);
    }

    #[test]
    fn a_send_answer_round_trips(x in send_response()) {
        answer_round_trips::<SendMessageResponse, pb::SendMessageResponse>(&x)?;
    }

    #[test]
    fn a_task_list_round_trips(x in list_tasks_response()) {
        answer_round_trips::<ListTasksResponse, pb::ListTasksResponse>(&x)?;
    }

    #[test]
    fn a_push_config_round_trips(x in push_config()) {
        answer_round_trips::<TaskPushNotificationConfig, pb::TaskPushNotificationConfig>(&x)?;
    }

    #[test]
    fn a_push_config_list_round_trips(x in list_push_configs_response()) {
        answer_round_trips::<ListTaskPushNotificationConfigsResponse, pb::ListTaskPushNotificationConfigsResponse>(&x)?;
    }

    #[test]
    fn an_agent_card_round_trips(x in agent_card().prop_map(proto_flows)) {
        answer_round_trips::<AgentCard, pb::AgentCard>(&x)?;
    }

    #[test]
    fn a_send_request_is_the_json_rpc_call(r in send_request()) {
        call_matches::<_, pb::SendMessageRequest>(Operation::SendMessage, &r)?;
        call_matches::<_, pb::SendMessageRequest>(Operation::SendStreamingMessage, &r)?;
    }

    #[test]
    fn a_task_request_is_the_json_rpc_call(
        get in get_task_request(),
        list in list_tasks_request(),
        cancel in cancel_request(),
        subscribe in subscribe_request(),
    ) {
        call_matches::<_, pb::GetTaskRequest>(Operation::GetTask, &get)?;
        call_matches::<_, pb::ListTasksRequest>(Operation::ListTasks, &list)?;
        call_matches::<_, pb::CancelTaskRequest>(Operation::CancelTask, &cancel)?;
        call_matches::<_, pb::SubscribeToTaskRequest>(Operation::SubscribeToTask, &subscribe)?;
    }

    #[test]
    fn a_push_config_request_is_the_json_rpc_call(
        create in push_config(),
        get in get_push_config_request(),
        list in list_push_configs_request(),
        card in extended_card_request(),
    ) {
        use Operation::*;
        call_matches::<_, pb::TaskPushNotificationConfig>(CreateTaskPushNotificationConfig, &create)?;
        call_matches::<_, pb::GetTaskPushNotificationConfigRequest>(GetTaskPushNotificationConfig, &get)?;
        call_matches::<_, pb::DeleteTaskPushNotificationConfigRequest>(DeleteTaskPushNotificationConfig, &get)?;
        call_matches::<_, pb::ListTaskPushNotificationConfigsRequest>(ListTaskPushNotificationConfigs, &list)?;
        call_matches::<_, pb::GetExtendedAgentCardRequest>(GetExtendedAgentCard, &card)?;
    }
}

/// Every rpc of the service the code is generated from is an operation of the same name
/// (each rpc's method running its operation is `tests/e2e/grpc.rs` `every_rpc_once`).
#[test]
fn every_rpc_is_the_operation_of_its_name() {
    let proto = include_str!("../protocol/proto/a2a.proto");
    let rpc = regex::Regex::new(r"(?m)^\s*rpc (\w+)\(").expect("a regex");
    let mut rpcs: Vec<&str> = rpc
        .captures_iter(proto)
        .map(|c| c.get(1).expect("a name").as_str())
        .collect();
    let mut names: Vec<&str> = Operation::ALL.iter().map(|op| op.name()).collect();
    rpcs.sort_unstable();
    names.sort_unstable();
    assert_eq!(rpcs, names, "the proto's rpcs and the operations");
}
