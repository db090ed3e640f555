//! From gRPC messages to the protocol's own types and back, in one place.
//!
//! The A2A JSON bindings are the ProtoJSON form of `a2a.proto`, and the generated messages
//! carry that form's serde (pbjson). So a request maps to a [`Call`] by way of its
//! ProtoJSON, decoded by the very function that decodes JSON-RPC params: every rule of
//! the JSON bindings (required fields, oneofs, enum names, id lengths) holds for gRPC
//! without a second copy. An answer, printed once as JSON by the operation, is read back
//! into the proto message it is. The property tests (`common/tests/grpc_mapping.rs`,
//! `tests/e2e/grpc_round_trip.rs`) pin that the two forms carry the same value.
//!
//! One difference is the proto's own: the numbers of `google.protobuf.Struct` and `Value`
//! (metadata, data parts) are doubles. An integer a double cannot hold exactly goes out as
//! the nearest double, and a double that is an integer comes in printed as one, as the
//! JSON bindings print the same number.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::pb;
use crate::a2a::types::StreamResponse;
use crate::a2a::{jsonrpc, A2aError, Call, Operation};

/// The call a gRPC `request` to `op` makes.
pub fn call<R: Serialize>(op: Operation, request: &R) -> Result<Call, A2aError> {
    jsonrpc::parse_call(op.name(), proto_json(request)?)
}

/// A proto message's ProtoJSON: the value the JSON bindings carry.
pub fn proto_json<M: Serialize>(message: &M) -> Result<Value, A2aError> {
    // Only a value no ProtoJSON can express fails here (an enum number the proto lacks).
    let mut json = serde_json::to_value(message)
        .map_err(|e| A2aError::invalid_params(format!("the message has no JSON form: {e}")))?;
    // pbjson prints every double with a fraction (`1.0`); the JSON bindings print `1`.
    proto_numbers(&mut json);
    Ok(json)
}

/// An answer the proto cannot carry: the server's own fault, for its log, never its
/// caller (who is told only that it failed).
#[derive(Debug, thiserror::Error)]
#[error("the answer cannot be carried over gRPC: {0}")]
pub struct Unencodable(#[from] serde_json::Error);

/// An operation's JSON answer as the proto message `T` of its rpc.
pub fn answer<T: DeserializeOwned>(json: &str) -> Result<T, Unencodable> {
    let mut value: Value = serde_json::from_str(json)?;
    // pbjson refuses an integer a double cannot hold exactly.
    proto_numbers(&mut value);
    Ok(serde_json::from_value(value)?)
}

/// Every number of `v` as a proto message carries it, and printed as the JSON bindings
/// print it: an integer below 2^53 (which a double holds exactly) as an integer, any
/// other number as the nearest double. No field of the proto is a double or an integer
/// wider than 32 bits but a `Struct`'s or `Value`'s number, so only those change.
pub fn proto_numbers(v: &mut Value) {
    /// 2^53.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match v {
        Value::Number(n) => {
            let Some(f) = n.as_f64() else { return };
            let carried = if f.fract() == 0.0 && f.abs() < EXACT {
                Some(serde_json::Number::from(f as i64))
            } else {
                serde_json::Number::from_f64(f)
            };
            if let Some(carried) = carried {
                *n = carried;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(proto_numbers),
        Value::Object(fields) => fields.values_mut().for_each(proto_numbers),
        _ => {}
    }
}

/// A stream's event as the rpc's `StreamResponse`.
pub fn event(event: &StreamResponse) -> Result<pb::StreamResponse, Unencodable> {
    answer(&serde_json::to_string(event)?)
}
