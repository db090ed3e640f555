//! From gRPC messages to the protocol's own types and back, in one place.
//!
//! The A2A JSON bindings are the ProtoJSON form of `a2a.proto`, and the generated messages
//! carry that form's serde (pbjson). So a request maps to a [`Call`] by way of its
//! ProtoJSON, decoded by the very function that decodes JSON-RPC params: every rule of
//! the JSON bindings (required fields, oneofs, enum names, id lengths) holds for gRPC
//! without a second copy. An answer, printed once as JSON by the operation, is read back
//! into the proto message it is. The property tests (`common/tests/grpc_mapping.rs`,
//! `tests/e2e/grpc_round_trip.rs`) pin that the two forms carry the same value.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::pb;
use crate::a2a::types::StreamResponse;
use crate::a2a::{jsonrpc, A2aError, Call, Operation};

/// The call a gRPC `request` to `op` makes.
pub fn call<R: Serialize>(op: Operation, request: &R) -> Result<Call, A2aError> {
    // Only a value no ProtoJSON can express fails here (an enum number the proto lacks).
    let params = serde_json::to_value(request)
        .map_err(|e| A2aError::invalid_params(format!("the request has no JSON form: {e}")))?;
    jsonrpc::parse_call(op.name(), params)
}

/// An operation's JSON answer as the proto message `T` of its rpc.
pub fn answer<T: DeserializeOwned>(json: &str) -> Result<T, A2aError> {
    serde_json::from_str(json)
        .map_err(|e| A2aError::Internal(format!("cannot encode the answer as protobuf: {e}")))
}

/// A stream's event as the rpc's `StreamResponse`.
pub fn event(event: &StreamResponse) -> Result<pb::StreamResponse, A2aError> {
    let json = serde_json::to_string(event)
        .map_err(|e| A2aError::Internal(format!("cannot encode the event: {e}")))?;
    answer(&json)
}
