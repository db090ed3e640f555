//! The JSON-RPC 2.0 binding: the request envelope, method names to operations, and the
//! response and error envelopes (spec §1). Every answer is HTTP 200.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::error::A2aError;
use super::Call;

/// A request whose envelope is valid; `id` is echoed in every answer.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// A request that cannot be answered but with an error, and the id to answer with.
/// Boxed: it is rare and large.
pub type Refusal = Box<(Value, A2aError)>;

fn refuse(id: Value, error: A2aError) -> Refusal {
    Box::new((id, error))
}

/// Parses the envelope. On failure, the id to answer with is null when unknown.
pub fn parse_envelope(body: &[u8]) -> Result<Envelope, Refusal> {
    let invalid = |id: Value, why: &str| refuse(id, A2aError::InvalidRequest(why.into()));
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| refuse(Value::Null, A2aError::Parse(e.to_string())))?;
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => return Err(invalid(Value::Null, "Batch requests are not supported")),
        _ => return Err(invalid(Value::Null, "the request must be a JSON object")),
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::Null | Value::String(_))
        || id.as_i64().is_some()
        || id.as_u64().is_some();
    if !id_ok {
        return Err(invalid(
            Value::Null,
            "id must be a string, an integer or null",
        ));
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        _ => return Err(invalid(id, "method must be a non-empty string")),
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            return Err(refuse(
                id,
                A2aError::invalid_params("params must be an object"),
            ))
        }
    };
    Ok(Envelope { id, method, params })
}

pub(crate) fn decode<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_json::from_value(params).map_err(|e| A2aError::invalid_params(e.to_string()))
}

/// Maps a 1.0 method name to its operation. 0.3 names (`message/send`, …) are unknown.
pub fn parse_call(method: &str, params: Value) -> Result<Call, A2aError> {
    Ok(match method {
        "SendMessage" => Call::SendMessage(decode(params)?),
        "SendStreamingMessage" => Call::SendStreamingMessage(decode(params)?),
        "GetTask" => Call::GetTask(decode(params)?),
        "ListTasks" => Call::ListTasks(decode(params)?),
        "CancelTask" => Call::CancelTask(decode(params)?),
        "SubscribeToTask" => Call::SubscribeToTask(decode(params)?),
        "CreateTaskPushNotificationConfig" => Call::CreatePushConfig(decode(params)?),
        "GetTaskPushNotificationConfig" => Call::GetPushConfig(decode(params)?),
        "ListTaskPushNotificationConfigs" => Call::ListPushConfigs(decode(params)?),
        "DeleteTaskPushNotificationConfig" => Call::DeletePushConfig(decode(params)?),
        "GetExtendedAgentCard" => Call::GetExtendedAgentCard(decode(params)?),
        other => return Err(A2aError::MethodNotFound(other.to_owned())),
    })
}

/// The success envelope of `result`, printed.
pub fn success<T: Serialize + ?Sized>(id: &Value, result: &T) -> String {
    #[derive(Serialize)]
    struct Success<'a, T: ?Sized> {
        id: &'a Value,
        jsonrpc: &'static str,
        result: &'a T,
    }
    serde_json::to_string(&Success {
        id,
        jsonrpc: "2.0",
        result,
    })
    .unwrap_or_else(|e| {
        failure(
            id,
            &A2aError::Internal(format!("cannot encode the answer: {e}")),
        )
        .to_string()
    })
}

pub fn failure(id: &Value, error: &A2aError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json_rpc()})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> A2aError {
        parse_envelope(body.as_bytes())
            .err()
            .map(|refusal| refusal.1)
            .unwrap_or(A2aError::Internal("parsed".into()))
    }

    #[test]
    fn envelopes_that_are_not_one_request_are_refused_with_their_codes() {
        assert_eq!(err("{").json_rpc_code(), -32700);
        assert_eq!(err("[]").json_rpc_code(), -32600);
        assert_eq!(
            err(r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#).json_rpc_code(),
            -32600
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#).json_rpc_code(),
            -32600
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#).json_rpc_code(),
            -32602
        );
    }

    #[test]
    fn old_method_names_are_unknown() {
        let e = parse_call("message/send", json!({})).err();
        assert_eq!(e.map(|e| e.json_rpc_code()), Some(-32601));
    }
}
