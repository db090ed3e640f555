//! Fuzz entry points: one function per `cargo fuzz` target under `common/fuzz/`, each
//! taking arbitrary bytes to the production parser it names and checking what must hold
//! for any input (beyond not panicking). The fuzz targets call these, and so does
//! `common/tests/fuzz_corpus.rs`, which runs every seed and regression input of
//! `common/fuzz/corpus/` as a normal test. A broken invariant panics, which is what a
//! fuzzer reports as a crash. Not an API: hidden from the docs.
//!
//! - [`jsonrpc_request`]: a JSON-RPC request body (`jsonrpc::parse_envelope`, then
//!   `jsonrpc::parse_call` and message validation).
//! - [`rest_route`]: an HTTP+JSON request written `METHOD TARGET\nBODY` (`rest::route`,
//!   then `rest::parse_call` with the target's query).
//! - [`channel_part`]: a channel extension data part, or a whole message
//!   (`ext::channel::of_message`, `channels::message_text`, `ext::participant::valid_id`).
//! - [`sse_frame`]: the text of events and errors put through both bindings' SSE framing
//!   (`a2a::sse::Framing`) and axum's encoder, then read back as an SSE client would.

use std::convert::Infallible;
use std::future::Future;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use axum::response::sse::{Event, Sse};
use axum::response::IntoResponse;
use http::Method;
use serde_json::{json, Map, Value};

use crate::a2a::jsonrpc;
use crate::a2a::rest::{self, Route};
use crate::a2a::sse::Framing;
use crate::a2a::{validate, A2aError, Message, Part, Role, StreamResponse};
use crate::a2a::{Call, Operation};
use crate::ext::channel::{of_message, ChannelMessage};
use crate::ext::{CHANNEL_MEDIA_TYPE, CHANNEL_SCHEMA};

// ---- JSON-RPC ----

/// A JSON-RPC request body. A refused envelope is answered with an id it may carry and a
/// request-level code; an accepted one re-serialises to itself; a decoded call prints as
/// a request that decodes to the same call, under the method it was dispatched by.
pub fn jsonrpc_request(data: &[u8]) {
    let env = match jsonrpc::parse_envelope(data) {
        Ok(env) => env,
        Err(refusal) => {
            let (id, error) = *refusal;
            assert!(
                valid_id(&id),
                "refused with an id a request cannot carry: {id}"
            );
            assert!(
                matches!(error.json_rpc_code(), -32700 | -32600 | -32602),
                "an envelope refused with {error:?}"
            );
            reparses(&jsonrpc::failure(&id, &error));
            return;
        }
    };
    assert!(valid_id(&env.id), "accepted id {}", env.id);
    assert!(!env.method.is_empty() && env.params.is_object());
    let printed =
        json!({"jsonrpc": "2.0", "id": env.id, "method": env.method, "params": env.params});
    let again = jsonrpc::parse_envelope(printed.to_string().as_bytes())
        .unwrap_or_else(|r| panic!("the re-serialised envelope {printed} is refused: {:?}", r.1));
    assert_eq!(
        (&again.id, &again.method, &again.params),
        (&env.id, &env.method, &env.params),
        "the envelope does not survive re-serialisation"
    );

    match jsonrpc::parse_call(&env.method, env.params.clone()) {
        Ok(call) => {
            assert_eq!(call.operation().name(), env.method);
            check_call(&call);
            let result = request_json(&call);
            let printed = jsonrpc::success(&env.id, &result);
            let back: Value = serde_json::from_str(&printed)
                .unwrap_or_else(|e| panic!("printed JSON does not parse ({e}): {printed}"));
            assert_eq!(
                back,
                json!({"jsonrpc": "2.0", "id": env.id, "result": result})
            );
        }
        Err(e) => {
            assert!(
                matches!(e.json_rpc_code(), -32601 | -32602),
                "{} refused with {e:?}",
                env.method
            );
            reparses(&jsonrpc::failure(&env.id, &e));
        }
    }
}

/// JSON-RPC ids: a string, an integer or null.
fn valid_id(id: &Value) -> bool {
    matches!(id, Value::Null | Value::String(_)) || id.is_i64() || id.is_u64()
}

/// What is printed parses back to the same JSON.
fn reparses(v: &Value) {
    let text = v.to_string();
    let back: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("printed JSON does not parse ({e}): {text}"));
    assert_eq!(&back, v, "printed JSON does not parse to itself: {text}");
}

/// The decoded request as the types print it.
fn request_json(call: &Call) -> Value {
    let printed = match call {
        Call::SendMessage(r) | Call::SendStreamingMessage(r) => serde_json::to_value(r),
        Call::GetTask(r) => serde_json::to_value(r),
        Call::ListTasks(r) => serde_json::to_value(r),
        Call::CancelTask(r) => serde_json::to_value(r),
        Call::SubscribeToTask(r) => serde_json::to_value(r),
        Call::CreatePushConfig(r) => serde_json::to_value(r),
        Call::GetPushConfig(r) | Call::DeletePushConfig(r) => serde_json::to_value(r),
        Call::ListPushConfigs(r) => serde_json::to_value(r),
        Call::GetExtendedAgentCard(r) => serde_json::to_value(r),
    };
    printed.unwrap_or_else(|e| panic!("a decoded request does not serialise: {e}"))
}

/// Checks any decoded call: printed and decoded again as the JSON-RPC params of its
/// operation, it prints the same (output is strict, input lenient, and strict output is
/// valid input); validation of what it carries does not panic and is idempotent.
fn check_call(call: &Call) {
    let name = call.operation().name();
    let printed = request_json(call);
    let again = jsonrpc::parse_call(name, printed.clone())
        .unwrap_or_else(|e| panic!("{name} printed as {printed} does not decode: {e:?}"));
    assert_eq!(again.operation(), call.operation());
    assert_eq!(
        request_json(&again),
        printed,
        "{name} does not print the same after a round trip"
    );
    match call {
        Call::SendMessage(r) | Call::SendStreamingMessage(r) => {
            if let Some(m) = &r.message {
                let mut m = m.clone();
                if validate::message(&mut m, "message").is_ok() {
                    let normalised = m.clone();
                    assert!(
                        validate::message(&mut m, "message").is_ok() && m == normalised,
                        "validating a valid message again changes it"
                    );
                }
            }
            if let Some(c) = &r.configuration {
                let _ = validate::history_length(c.history_length, "historyLength");
            }
        }
        Call::GetTask(r) => {
            let _ = validate::history_length(r.history_length, "historyLength");
        }
        Call::ListTasks(r) => {
            let _ = validate::history_length(r.history_length, "historyLength");
            let _ = validate::page_size(r.page_size, 50, 100);
        }
        Call::ListPushConfigs(r) => {
            let _ = validate::page_size(r.page_size, 50, 100);
        }
        _ => {}
    }
}

// ---- HTTP+JSON routes ----

/// An HTTP+JSON request, written `METHOD TARGET` on the first line (`TARGET` is the path
/// and `?query`), the body after it. A matched route is one of the binding's: its method
/// is one the operation takes, its path has the route's segments, and its canonical
/// path (every byte percent-encoded) routes back to it. A decoded call is the route's
/// operation, carries the path's tenant and ids whatever the body and query say, and is
/// valid JSON-RPC params for the same operation.
pub fn rest_route(data: &[u8]) {
    let (head, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let head = head.strip_suffix('\r').unwrap_or(&head);
    let (method, target) = head.split_once(' ').unwrap_or(("GET", head));
    let Ok(method) = Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let Some((tenant, route)) = rest::route(&method, path) else {
        return;
    };

    let op = route.operation();
    assert!(
        methods(op).contains(&method),
        "{method} {path} routed to {route:?}"
    );
    let ids = route_ids(&route);
    assert!(
        ids.iter().all(|id| !id.is_empty()),
        "{path}: empty id in {route:?}"
    );
    // Leading slashes, doubled or not, are one (a base URL joined with `/message:send`).
    let trimmed = path.trim_start_matches('/');
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    let segments = trimmed.split('/').count();
    let expected = route_segments(&route) + usize::from(!tenant.is_empty());
    assert_eq!(
        segments, expected,
        "{path} has {segments} segments, routed to {tenant:?} {route:?}"
    );
    let canonical = canonical_path(&tenant, &route);
    assert_eq!(
        rest::route(&method, &canonical),
        Some((tenant.clone(), route.clone())),
        "{path} routed to {tenant:?} {route:?}, but its canonical path {canonical} does not"
    );

    let Ok(call) = rest::parse_call(route.clone(), tenant.clone(), query, body) else {
        return;
    };
    assert_eq!(call.operation(), op);
    let (call_tenant, call_ids) = call_ids(&call);
    assert_eq!(call_tenant, tenant, "the path's tenant is lost");
    assert_eq!(call_ids, ids, "the path's ids do not win");
    check_call(&call);
}

/// The methods each operation is routed for (spec §2).
fn methods(op: Operation) -> &'static [Method] {
    match op {
        Operation::SendMessage
        | Operation::SendStreamingMessage
        | Operation::CancelTask
        | Operation::CreateTaskPushNotificationConfig => &[Method::POST],
        Operation::SubscribeToTask => &[Method::GET, Method::POST],
        Operation::DeleteTaskPushNotificationConfig => &[Method::DELETE],
        Operation::GetTask
        | Operation::ListTasks
        | Operation::GetTaskPushNotificationConfig
        | Operation::ListTaskPushNotificationConfigs
        | Operation::GetExtendedAgentCard => &[Method::GET],
    }
}

fn route_ids(route: &Route) -> Vec<&str> {
    match route {
        Route::SendMessage
        | Route::SendStreamingMessage
        | Route::ListTasks
        | Route::GetExtendedAgentCard => vec![],
        Route::GetTask(id)
        | Route::CancelTask(id)
        | Route::SubscribeToTask(id)
        | Route::CreatePushConfig(id)
        | Route::ListPushConfigs(id) => vec![id],
        Route::GetPushConfig(task, id) | Route::DeletePushConfig(task, id) => vec![task, id],
    }
}

/// Path segments of a route without a tenant.
fn route_segments(route: &Route) -> usize {
    match route {
        Route::SendMessage
        | Route::SendStreamingMessage
        | Route::ListTasks
        | Route::GetExtendedAgentCard => 1,
        Route::GetTask(_) | Route::CancelTask(_) | Route::SubscribeToTask(_) => 2,
        Route::CreatePushConfig(_) | Route::ListPushConfigs(_) => 3,
        Route::GetPushConfig(..) | Route::DeletePushConfig(..) => 4,
    }
}

/// Every byte percent-encoded, so no segment can be taken for a literal.
fn encode(s: &str) -> String {
    s.bytes().map(|b| format!("%{b:02X}")).collect()
}

fn canonical_path(tenant: &str, route: &Route) -> String {
    let tail = match route {
        Route::SendMessage => "message:send".to_owned(),
        Route::SendStreamingMessage => "message:stream".to_owned(),
        Route::ListTasks => "tasks".to_owned(),
        Route::GetExtendedAgentCard => "extendedAgentCard".to_owned(),
        Route::GetTask(id) => format!("tasks/{}", encode(id)),
        Route::CancelTask(id) => format!("tasks/{}", encode(&format!("{id}:cancel"))),
        Route::SubscribeToTask(id) => format!("tasks/{}", encode(&format!("{id}:subscribe"))),
        Route::CreatePushConfig(id) | Route::ListPushConfigs(id) => {
            format!("tasks/{}/pushNotificationConfigs", encode(id))
        }
        Route::GetPushConfig(task, id) | Route::DeletePushConfig(task, id) => format!(
            "tasks/{}/pushNotificationConfigs/{}",
            encode(task),
            encode(id)
        ),
    };
    if tenant.is_empty() {
        format!("/{tail}")
    } else {
        format!("/{}/{tail}", encode(tenant))
    }
}

/// The tenant and the ids a path carries, as the decoded call holds them.
fn call_ids(call: &Call) -> (&str, Vec<&str>) {
    match call {
        Call::SendMessage(r) | Call::SendStreamingMessage(r) => (&r.tenant, vec![]),
        Call::ListTasks(r) => (&r.tenant, vec![]),
        Call::GetExtendedAgentCard(r) => (&r.tenant, vec![]),
        Call::GetTask(r) => (&r.tenant, vec![&r.id]),
        Call::CancelTask(r) => (&r.tenant, vec![&r.id]),
        Call::SubscribeToTask(r) => (&r.tenant, vec![&r.id]),
        Call::CreatePushConfig(r) => (&r.tenant, vec![&r.task_id]),
        Call::ListPushConfigs(r) => (&r.tenant, vec![&r.task_id]),
        Call::GetPushConfig(r) | Call::DeletePushConfig(r) => (&r.tenant, vec![&r.task_id, &r.id]),
    }
}

// ---- channel data part ----

fn channel_schema() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| crate::ext::compile(CHANNEL_SCHEMA))
}

/// JSON taken as a channel part's data (after a text part), and as a whole message. The
/// validator accepts exactly what the seed schema accepts, an accepted part prints as a
/// part it accepts again unchanged, a refusal names the first channel part, and a
/// message without a channel part has none. Any text is checked as a participant id.
pub fn channel_part(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if crate::ext::participant::valid_id(&text) {
        assert!(!text.is_empty() && text.chars().count() <= crate::ext::participant::MAX_ID_LEN);
        assert!(!text.chars().any(char::is_control));
    }
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };

    let schema_ok = crate::ext::problems(channel_schema(), &value).is_none();
    let parsed = ChannelMessage::parse(&value);
    assert_eq!(
        parsed.is_ok(),
        schema_ok,
        "the channel validator disagrees with its schema on {value}: {parsed:?}"
    );
    let message = Message {
        message_id: "m".into(),
        role: Role::User,
        parts: vec![
            Part::text("hi"),
            Part {
                data: Some(value.clone()),
                media_type: CHANNEL_MEDIA_TYPE.into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    check_channel_message(&message);
    match (of_message(&message), parsed) {
        (Ok(Some(c)), Ok(p)) => {
            assert_eq!(c, p);
            let printed = c.part().data.unwrap_or(Value::Null);
            assert_eq!(
                ChannelMessage::parse(&printed).as_ref(),
                Ok(&c),
                "the printed channel part {printed} does not parse to itself"
            );
        }
        (Err(_), Err(_)) => {}
        (got, parsed) => panic!("of_message says {got:?}, parse says {parsed:?}"),
    }

    if let Ok(m) = serde_json::from_value::<Message>(value) {
        check_channel_message(&m);
    }
}

fn check_channel_message(m: &Message) {
    let first = m
        .parts
        .iter()
        .position(|p| crate::ext::is_media_type(&p.media_type, CHANNEL_MEDIA_TYPE));
    match (of_message(m), first) {
        (Ok(None), None) | (Ok(Some(_)), Some(_)) => {}
        (Err(A2aError::InvalidParams { field: Some(f), .. }), Some(i)) => {
            assert_eq!(f, format!("message.parts[{i}].data"));
        }
        (got, first) => panic!("of_message says {got:?}; the first channel part is {first:?}"),
    }
    let _ = crate::ext::channel::message_text(m);
    let _ = crate::ext::participant::asserted(m);
}

// ---- SSE framing ----

/// Any text, as the text of a streamed message and of an error, and the input
/// as a StreamResponse when it is one, framed by both bindings: each frame is one SSE
/// event whose one `data:` line an SSE client reads back as exactly the JSON the binding
/// printed, and that JSON is the event (or the error) again.
pub fn sse_frame(data: &[u8]) {
    let text = String::from_utf8_lossy(data).into_owned();
    let framings = [
        Framing::JsonRpc {
            id: Value::String(text.clone()),
        },
        Framing::Rest,
    ];

    let mut events = vec![StreamResponse::message(Message {
        message_id: text.clone(),
        role: Role::Agent,
        parts: vec![Part::text(text.clone())],
        metadata: Some(Map::from_iter([(
            text.clone(),
            Value::String(text.clone()),
        )])),
        ..Default::default()
    })];
    if let Ok(event) = serde_json::from_slice::<StreamResponse>(data) {
        let _ = validate::stream_response(&event);
        events.push(event);
    }
    // One kind of error per input (by its first byte): framing is the slow part here.
    let error = match data.first().map_or(0, |b| b % 5) {
        0 => A2aError::Internal(text.clone()),
        1 => A2aError::invalid_field(text.clone(), text.clone()),
        2 => A2aError::task_not_found(text.clone()),
        3 => A2aError::PushConfigNotFound {
            task_id: text.clone(),
            id: text.clone(),
        },
        _ => A2aError::ExtensionSupportRequired(text.clone()),
    };

    for framing in &framings {
        for event in &events {
            let payload = framing.data(event);
            let framed = encode_sse(framing.frame(Ok((event.clone(), Some("7.0a1b2c".into())))));
            assert!(framed.contains("\nid: 7.0a1b2c\n") || framed.starts_with("id: 7.0a1b2c\n"));
            let (kind, got) = read_sse(&framed);
            assert_eq!(kind, "message");
            assert_eq!(got, payload, "the data line does not round-trip");
            let json: Value = serde_json::from_str(&got)
                .unwrap_or_else(|e| panic!("framed data is not JSON ({e}): {got}"));
            let printed = serde_json::to_value(event).unwrap_or(Value::Null);
            let result = match framing {
                Framing::JsonRpc { id } => {
                    assert_eq!(json["jsonrpc"], "2.0");
                    assert_eq!(&json["id"], id);
                    &json["result"]
                }
                Framing::Rest => &json,
            };
            assert_eq!(result, &printed, "the framed event is not the event");
            let back: StreamResponse = serde_json::from_value(result.clone())
                .unwrap_or_else(|e| panic!("a framed event does not read back ({e}): {got}"));
            assert_eq!(serde_json::to_value(&back).ok(), Some(printed));
        }
        {
            let payload = framing.error(&error);
            let (kind, got) = read_sse(&encode_sse(framing.frame(Err(error.clone()))));
            assert_eq!(kind, "error");
            assert_eq!(got, payload, "the data line does not round-trip");
            let json: Value = serde_json::from_str(&got)
                .unwrap_or_else(|e| panic!("framed error is not JSON ({e}): {got}"));
            let expected = match framing {
                Framing::JsonRpc { id } => jsonrpc::failure(id, &error),
                Framing::Rest => error.to_rest(),
            };
            assert_eq!(json, expected);
        }
    }
}

/// The bytes axum sends for one event.
fn encode_sse(event: Event) -> String {
    let body = Sse::new(futures::stream::iter([Ok::<_, Infallible>(event)]))
        .into_response()
        .into_body();
    let mut collect = std::pin::pin!(axum::body::to_bytes(body, usize::MAX));
    match collect
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Ok(bytes)) => String::from_utf8(bytes.to_vec()).expect("SSE is UTF-8"),
        Poll::Ready(Err(e)) => panic!("the SSE body fails: {e}"),
        Poll::Pending => panic!("an SSE body of ready events is pending"),
    }
}

/// Reads a stream the way an SSE client does (WHATWG HTML, "event stream
/// interpretation"), asserting it holds exactly one event, which is complete; returns
/// its type and data.
fn read_sse(stream: &str) -> (String, String) {
    assert!(
        stream.ends_with("\n\n"),
        "an SSE frame ends with a blank line: {stream:?}"
    );
    let mut events = Vec::new();
    let (mut kind, mut data) = (String::new(), String::new());
    let mut lines = Vec::new();
    let mut rest = stream;
    while let Some(i) = rest.find(['\r', '\n']) {
        lines.push(&rest[..i]);
        let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[i + skip..];
    }
    assert!(rest.is_empty(), "an unterminated line: {rest:?}");
    for line in lines {
        if line.is_empty() {
            if !data.is_empty() {
                data.pop();
                let kind = if kind.is_empty() {
                    "message".to_owned()
                } else {
                    std::mem::take(&mut kind)
                };
                events.push((kind, std::mem::take(&mut data)));
            }
            kind.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => kind = value.to_owned(),
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            _ => {}
        }
    }
    assert_eq!(events.len(), 1, "one frame is one event: {stream:?}");
    events.remove(0)
}
