//! The HTTP+JSON binding's routes (spec §2): matching a method and path (with an optional
//! `/{tenant}` prefix) to an operation, and decoding its path, query and body.

use http::Method;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

use super::error::A2aError;
use super::jsonrpc::decode;
use super::{Call, Operation};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    SendMessage,
    SendStreamingMessage,
    GetTask(String),
    ListTasks,
    CancelTask(String),
    SubscribeToTask(String),
    CreatePushConfig(String),
    GetPushConfig(String, String),
    ListPushConfigs(String),
    DeletePushConfig(String, String),
    GetExtendedAgentCard,
}

impl Route {
    /// The operation the route serves.
    pub fn operation(&self) -> Operation {
        match self {
            Route::SendMessage => Operation::SendMessage,
            Route::SendStreamingMessage => Operation::SendStreamingMessage,
            Route::GetTask(_) => Operation::GetTask,
            Route::ListTasks => Operation::ListTasks,
            Route::CancelTask(_) => Operation::CancelTask,
            Route::SubscribeToTask(_) => Operation::SubscribeToTask,
            Route::CreatePushConfig(_) => Operation::CreateTaskPushNotificationConfig,
            Route::GetPushConfig(..) => Operation::GetTaskPushNotificationConfig,
            Route::ListPushConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Route::DeletePushConfig(..) => Operation::DeleteTaskPushNotificationConfig,
            Route::GetExtendedAgentCard => Operation::GetExtendedAgentCard,
        }
    }

    /// Whether the request may carry a JSON body.
    pub fn takes_body(&self) -> bool {
        matches!(
            self,
            Route::SendMessage
                | Route::SendStreamingMessage
                | Route::CancelTask(_)
                | Route::CreatePushConfig(_)
                | Route::SubscribeToTask(_)
        )
    }
}

fn decode_segment(s: &str) -> Option<String> {
    let out = percent_decode_str(s).decode_utf8().ok()?.into_owned();
    (!out.is_empty()).then_some(out)
}

fn match_segments(method: &Method, segs: &[&str]) -> Option<Route> {
    let get = method == Method::GET;
    let post = method == Method::POST;
    Some(match segs {
        ["message:send"] if post => Route::SendMessage,
        ["message:stream"] if post => Route::SendStreamingMessage,
        ["tasks"] if get => Route::ListTasks,
        ["extendedAgentCard"] if get => Route::GetExtendedAgentCard,
        ["tasks", id_action] => {
            let decoded = decode_segment(id_action)?;
            if let Some(id) = decoded.strip_suffix(":cancel").filter(|i| !i.is_empty()) {
                if !post {
                    return None;
                }
                Route::CancelTask(id.to_owned())
            } else if let Some(id) = decoded.strip_suffix(":subscribe").filter(|i| !i.is_empty()) {
                if !(get || post) {
                    return None;
                }
                Route::SubscribeToTask(id.to_owned())
            } else if get {
                Route::GetTask(decoded)
            } else {
                return None;
            }
        }
        ["tasks", id, "pushNotificationConfigs"] => {
            let id = decode_segment(id)?;
            if post {
                Route::CreatePushConfig(id)
            } else if get {
                Route::ListPushConfigs(id)
            } else {
                return None;
            }
        }
        ["tasks", id, "pushNotificationConfigs", cfg] => {
            let (id, cfg) = (decode_segment(id)?, decode_segment(cfg)?);
            if get {
                Route::GetPushConfig(id, cfg)
            } else if method == Method::DELETE {
                Route::DeletePushConfig(id, cfg)
            } else {
                return None;
            }
        }
        _ => return None,
    })
}

/// The route and tenant of a request path (relative to the interface URL). Routes
/// without a tenant are tried first, so `/tasks/{id}` wins over `/{tenant}/tasks`.
pub fn route(method: &Method, path: &str) -> Option<(String, Route)> {
    // Leading slashes, doubled or not: a client that joins a base URL ending in `/` with
    // `/message:send` asks for `//message:send`.
    let path = path.trim_start_matches('/');
    let path = path.strip_suffix('/').unwrap_or(path);
    let segs: Vec<&str> = path.split('/').collect();
    if let Some(r) = match_segments(method, &segs) {
        return Some((String::new(), r));
    }
    let (tenant, rest) = segs.split_first()?;
    let tenant = decode_segment(tenant)?;
    match_segments(method, rest).map(|r| (tenant, r))
}

/// Query parameters as a JSON object for the request type: camelCase or snake_case
/// names, numbers and booleans typed, repeated names keep the last value.
fn query_object(query: Option<&str>) -> Result<Map<String, Value>, A2aError> {
    let mut out = Map::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let normalized = k.replace('_', "").to_ascii_lowercase();
        let value = match normalized.as_str() {
            // The version is the header's alone (`headers`): a parameter of its name is
            // ignored.
            "a2aversion" | "a2a-version" => continue,
            "historylength" | "pagesize" => Value::from(v.trim().parse::<i64>().map_err(|_| {
                A2aError::invalid_field(k.to_string(), format!("{k} must be an integer, not {v:?}"))
            })?),
            "includeartifacts" | "waitingonme" => match v.trim() {
                "true" | "1" => Value::Bool(true),
                "false" | "0" | "" => Value::Bool(false),
                _ => {
                    return Err(A2aError::invalid_field(
                        k.to_string(),
                        format!("{k} must be true or false, not {v:?}"),
                    ))
                }
            },
            _ => Value::String(v.into_owned()),
        };
        out.insert(k.into_owned(), value);
    }
    Ok(out)
}

/// The JSON body as an object; an empty body or `null` is `{}`.
fn body_object(body: &[u8]) -> Result<Map<String, Value>, A2aError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body).map_err(|e| A2aError::Parse(e.to_string()))? {
        Value::Null => Ok(Map::new()),
        Value::Object(o) => Ok(o),
        _ => Err(A2aError::invalid_params(
            "the request body must be a JSON object",
        )),
    }
}

/// Builds the operation: path values win over anything in the body or query.
pub fn parse_call(
    route: Route,
    tenant: String,
    query: Option<&str>,
    body: &[u8],
) -> Result<Call, A2aError> {
    let mut obj = if route.takes_body() {
        body_object(body)?
    } else {
        Map::new()
    };
    obj.extend(query_object(query)?);
    obj.remove("tenant");
    if !tenant.is_empty() {
        obj.insert("tenant".into(), Value::String(tenant));
    }
    let mut set = |k: &str, v: String| {
        for alias in [k.to_owned(), to_snake(k)] {
            obj.remove(&alias);
        }
        obj.insert(k.into(), Value::String(v));
    };
    let call_for =
        |obj: Map<String, Value>, f: fn(Value) -> Result<Call, A2aError>| f(Value::Object(obj));
    match route {
        Route::SendMessage => call_for(obj, |v| Ok(Call::SendMessage(decode(v)?))),
        Route::SendStreamingMessage => {
            call_for(obj, |v| Ok(Call::SendStreamingMessage(decode(v)?)))
        }
        Route::ListTasks => call_for(obj, |v| Ok(Call::ListTasks(decode(v)?))),
        Route::GetExtendedAgentCard => {
            call_for(obj, |v| Ok(Call::GetExtendedAgentCard(decode(v)?)))
        }
        Route::GetTask(id) => {
            set("id", id);
            call_for(obj, |v| Ok(Call::GetTask(decode(v)?)))
        }
        Route::CancelTask(id) => {
            set("id", id);
            call_for(obj, |v| Ok(Call::CancelTask(decode(v)?)))
        }
        Route::SubscribeToTask(id) => {
            set("id", id);
            call_for(obj, |v| Ok(Call::SubscribeToTask(decode(v)?)))
        }
        Route::CreatePushConfig(task) => {
            set("taskId", task);
            call_for(obj, |v| Ok(Call::CreatePushConfig(decode(v)?)))
        }
        Route::ListPushConfigs(task) => {
            set("taskId", task);
            call_for(obj, |v| Ok(Call::ListPushConfigs(decode(v)?)))
        }
        Route::GetPushConfig(task, id) => {
            set("taskId", task);
            set("id", id);
            call_for(obj, |v| Ok(Call::GetPushConfig(decode(v)?)))
        }
        Route::DeletePushConfig(task, id) => {
            set("taskId", task);
            set("id", id);
            call_for(obj, |v| Ok(Call::DeletePushConfig(decode(v)?)))
        }
    }
}

fn to_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_routes_win_and_tenants_prefix_every_route() {
        assert_eq!(
            route(&Method::GET, "/tasks/tasks"),
            Some((String::new(), Route::GetTask("tasks".into())))
        );
        assert_eq!(
            route(&Method::GET, "/acme/tasks"),
            Some(("acme".into(), Route::ListTasks))
        );
        assert_eq!(
            route(&Method::POST, "/acme/tasks/abc%2Fdef:cancel"),
            Some(("acme".into(), Route::CancelTask("abc/def".into())))
        );
        assert_eq!(
            route(&Method::GET, "/tasks/x:subscribe").map(|r| r.1),
            Some(Route::SubscribeToTask("x".into()))
        );
        assert_eq!(
            route(&Method::POST, "/tasks/x:subscribe").map(|r| r.1),
            Some(Route::SubscribeToTask("x".into()))
        );
        assert_eq!(
            route(&Method::POST, "//message:send"),
            Some((String::new(), Route::SendMessage))
        );
        assert_eq!(route(&Method::DELETE, "/tasks/x"), None);
        assert_eq!(route(&Method::GET, "/nope"), None);
    }

    #[test]
    fn the_path_id_wins_over_the_body_and_queries_take_both_spellings() {
        let call = parse_call(
            Route::CancelTask("p".into()),
            String::new(),
            None,
            br#"{"id":"b"}"#,
        );
        assert!(matches!(call, Ok(Call::CancelTask(r)) if r.id == "p"));
        let call = parse_call(
            Route::ListTasks,
            String::new(),
            Some("page_size=2&includeArtifacts=true"),
            b"",
        );
        assert!(
            matches!(call, Ok(Call::ListTasks(r)) if r.page_size == Some(2) && r.include_artifacts == Some(true))
        );
        for body in [&b""[..], b"null", b"{}", b"  "] {
            assert!(parse_call(Route::CancelTask("p".into()), String::new(), None, body).is_ok());
        }
    }
}
