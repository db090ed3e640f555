//! The well-known agent card (content, caching headers, not version-gated) and the
//! service parameters: `A2A-Version` negotiation and `A2A-Extensions` activation and
//! enforcement, on both bindings; the REST response Content-Type switch.

use harness_e2e::*;
use reqwest::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH, LAST_MODIFIED};
use reqwest::Method;
use serde_json::{json, Value};

const CARD: &str = "/.well-known/agent-card.json";

#[tokio::test]
async fn agent_card_describes_its_interfaces_and_capabilities() {
    let s = Server::start().await;
    // No A2A-Version header: the card route is not version-gated.
    let resp = s.http.get(s.endpoint(CARD)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(content_type(&resp).starts_with("application/json"));
    let card: Value = resp.json().await.unwrap();
    for key in [
        "name",
        "description",
        "supportedInterfaces",
        "version",
        "capabilities",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    ] {
        assert!(card.get(key).is_some(), "card lacks {key}: {card}");
    }
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    assert_ne!(card["capabilities"]["extendedAgentCard"], true);
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let bindings: Vec<&str> = interfaces
        .iter()
        .filter_map(|i| i["protocolBinding"].as_str())
        .collect();
    // harness-local serves all three bindings on its one listener.
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"], "{card}");
    for i in interfaces {
        assert_eq!(i["protocolVersion"], "1.0");
        assert!(
            i["url"].as_str().unwrap().starts_with(&s.url),
            "interface url {i} vs {}",
            s.url
        );
    }
    for skill in card["skills"].as_array().unwrap() {
        for k in ["id", "name", "description", "tags"] {
            assert!(skill.get(k).is_some(), "skill lacks {k}");
        }
    }
    let uris: Vec<&str> = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["uri"].as_str())
        .collect();
    assert!(uris.contains(&TASK_EXTENSION), "{card}");
    assert!(
        card["capabilities"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["required"] != true),
        "nothing required by default: {card}"
    );
}

#[tokio::test]
async fn agent_card_has_caching_headers_and_honours_if_none_match() {
    let s = Server::start().await;
    let resp = s.http.get(s.endpoint(CARD)).send().await.unwrap();
    let h = resp.headers().clone();
    let cache = h
        .get(CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(cache.contains("max-age="), "Cache-Control {cache:?}");
    let etag = h
        .get(ETAG)
        .and_then(|v| v.to_str().ok())
        .expect("ETag")
        .to_owned();
    assert!(h.get(LAST_MODIFIED).is_some(), "Last-Modified");
    let body = resp.bytes().await.unwrap();

    let again = s.http.get(s.endpoint(CARD)).send().await.unwrap();
    assert_eq!(
        again.headers().get(ETAG).unwrap().to_str().unwrap(),
        etag,
        "stable ETag"
    );
    assert_eq!(again.bytes().await.unwrap(), body);

    let not_modified = s
        .http
        .get(s.endpoint(CARD))
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(not_modified.status().as_u16(), 304);
    assert!(not_modified.bytes().await.unwrap().is_empty());

    let stale = s
        .http
        .get(s.endpoint(CARD))
        .header(IF_NONE_MATCH, "\"something-else\"")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status().as_u16(), 200);
}

#[tokio::test]
async fn agent_card_is_served_even_with_an_unsupported_version_header() {
    let s = Server::start().await;
    let resp = s
        .http
        .get(s.endpoint(CARD))
        .header("A2A-Version", "99.0")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

// ------------------------------------------------------------------- versions

async fn rpc_with_version(s: &Server, version: Option<&str>) -> Value {
    let mut pairs = vec![("Content-Type", "application/json")];
    if let Some(v) = version {
        pairs.push(("A2A-Version", v));
    }
    let body = json!({"jsonrpc": "2.0", "id": "v", "method": "ListTasks", "params": {}});
    let resp = s
        .http
        .post(s.endpoint("/"))
        .headers(headers(&pairs))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.json().await.unwrap()
}

async fn rest_with_version(s: &Server, version: Option<&str>) -> (u16, Value) {
    let pairs: Vec<(&str, &str)> = version
        .map(|v| vec![("A2A-Version", v)])
        .unwrap_or_default();
    let resp = s
        .rest_raw(Method::GET, "/tasks", &headers(&pairs), "")
        .await;
    json_of(resp).await
}

#[tokio::test]
async fn missing_empty_and_unsupported_versions_are_version_not_supported() {
    let s = Server::start().await;
    for v in [
        None,
        Some(""),
        Some("0.3"),
        Some("0.3.0"),
        Some("99.0"),
        Some("1.1"),
        Some("2.0"),
    ] {
        let resp = rpc_with_version(&s, v).await;
        assert_rpc_error(&resp, -32009, "VERSION_NOT_SUPPORTED");
        assert_eq!(resp["id"], "v", "{v:?}");
        let (st, body) = rest_with_version(&s, v).await;
        assert_rest_error(
            st,
            &body,
            400,
            "FAILED_PRECONDITION",
            "VERSION_NOT_SUPPORTED",
        );
    }
}

#[tokio::test]
async fn version_1_0_with_any_patch_is_accepted() {
    let s = Server::start().await;
    for v in ["1.0", "1.0.0", "1.0.5"] {
        let resp = rpc_with_version(&s, Some(v)).await;
        assert!(resp["result"]["tasks"].is_array(), "{v}: {resp}");
        let (st, body) = rest_with_version(&s, Some(v)).await;
        assert_eq!(st, 200, "{v}: {body}");
    }
}

#[tokio::test]
async fn streaming_calls_check_the_version_before_streaming() {
    let s = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage",
        "params": send_params(user_message(&unique("tck-stream-002"), "x"))});
    let resp = s
        .rpc_raw(
            &headers(&[
                ("Content-Type", "application/json"),
                ("A2A-Version", "99.0"),
            ]),
            body.to_string(),
        )
        .await;
    assert!(content_type(&resp).starts_with("application/json"));
    let v: Value = resp.json().await.unwrap();
    assert_rpc_error(&v, -32009, "VERSION_NOT_SUPPORTED");
    let resp = s
        .rest_raw(
            Method::POST,
            "/message:stream",
            &headers(&[("Content-Type", "application/json")]),
            send_params(user_message(&unique("tck-stream-002"), "x")).to_string(),
        )
        .await;
    let (st, b) = json_of(resp).await;
    assert_rest_error(st, &b, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED");
    assert_eq!(
        s.rpc_ok("ListTasks", json!({})).await["totalSize"],
        0,
        "nothing ran"
    );
}

// ----------------------------------------------------------------- extensions

#[tokio::test]
async fn requested_supported_extensions_are_echoed_and_unknown_ones_ignored() {
    let s = Server::start().await;
    let ext = format!("https://unknown.example/ext/v1, {TASK_EXTENSION}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": send_params(user_message(&unique("tck-complete-task"), "x"))});
    let resp = s
        .rpc_raw(
            &headers(&[
                ("A2A-Version", "1.0"),
                ("Content-Type", "application/json"),
                ("A2A-Extensions", &ext),
            ]),
            body.to_string(),
        )
        .await;
    let echoed = resp
        .headers()
        .get("a2a-extensions")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let v: Value = resp.json().await.unwrap();
    assert_eq!(state(&v["result"]["task"]), "TASK_STATE_COMPLETED", "{v}");
    let list: Vec<&str> = echoed
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect();
    assert_eq!(
        list,
        [TASK_EXTENSION],
        "A2A-Extensions response header {echoed:?}"
    );

    // REST, two headers
    let resp = s
        .rest_raw(
            Method::GET,
            "/tasks",
            &headers(&[
                ("A2A-Version", "1.0"),
                ("A2A-Extensions", CHANNEL_EXTENSION),
                ("A2A-Extensions", "urn:unknown"),
            ]),
            "",
        )
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    let echoed = resp
        .headers()
        .get("a2a-extensions")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert_eq!(echoed.trim(), CHANNEL_EXTENSION);

    // Only unknown ones: served, nothing echoed as active.
    let resp = s
        .rest_raw(
            Method::GET,
            "/tasks",
            &headers(&[
                ("A2A-Version", "1.0"),
                ("A2A-Extensions", "urn:unknown:a, urn:unknown:b"),
            ]),
            "",
        )
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    let echoed = resp
        .headers()
        .get("a2a-extensions")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        !echoed.contains("unknown"),
        "unknown extensions are not activated: {echoed:?}"
    );
}

#[tokio::test]
async fn a_required_extension_must_be_requested() {
    let s = Server::start_with(&["--required-extensions", TASK_EXTENSION]).await;
    // The card says so, and is still served without any header.
    let card = s.card().await;
    let ext = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == TASK_EXTENSION)
        .cloned()
        .expect("extension in card");
    assert_eq!(ext["required"], true, "{ext}");

    // Without it: -32008 / 400 EXTENSION_SUPPORT_REQUIRED.
    s.rpc_err(
        "SendMessage",
        send_params(user_message(&unique("tck-complete-task"), "x")),
        -32008,
        "EXTENSION_SUPPORT_REQUIRED",
    )
    .await;
    let (st, b) = s
        .rest_post(
            "/message:send",
            send_params(user_message(&unique("tck-complete-task"), "x")),
        )
        .await;
    assert_rest_error(
        st,
        &b,
        400,
        "FAILED_PRECONDITION",
        "EXTENSION_SUPPORT_REQUIRED",
    );
    let (st, b) = s
        .rest_post(
            "/message:stream",
            send_params(user_message(&unique("tck-stream-002"), "x")),
        )
        .await;
    assert_rest_error(
        st,
        &b,
        400,
        "FAILED_PRECONDITION",
        "EXTENSION_SUPPORT_REQUIRED",
    );
    // Every A2A operation is gated, not only sends.
    s.rpc_err("ListTasks", json!({}), -32008, "EXTENSION_SUPPORT_REQUIRED")
        .await;
    s.rpc_err(
        "GetTask",
        json!({"id": "x"}),
        -32008,
        "EXTENSION_SUPPORT_REQUIRED",
    )
    .await;
    let (st, b) = s.rest_get("/tasks").await;
    assert_rest_error(
        st,
        &b,
        400,
        "FAILED_PRECONDITION",
        "EXTENSION_SUPPORT_REQUIRED",
    );
    // With another (supported) extension only: still refused.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": send_params(user_message(&unique("tck-complete-task"), "x"))});
    let v: Value = s
        .rpc_raw(
            &headers(&[
                ("A2A-Version", "1.0"),
                ("Content-Type", "application/json"),
                ("A2A-Extensions", CHANNEL_EXTENSION),
            ]),
            body.to_string(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_rpc_error(&v, -32008, "EXTENSION_SUPPORT_REQUIRED");

    // With it: served, and echoed.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage",
        "params": send_params(user_message(&unique("tck-complete-task"), "x"))});
    let resp = s
        .rpc_raw(
            &headers(&[
                ("A2A-Version", "1.0"),
                ("Content-Type", "application/json"),
                ("A2A-Extensions", TASK_EXTENSION),
            ]),
            body.to_string(),
        )
        .await;
    let echoed = resp
        .headers()
        .get("a2a-extensions")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let v: Value = resp.json().await.unwrap();
    assert_eq!(state(&v["result"]["task"]), "TASK_STATE_COMPLETED", "{v}");
    assert!(echoed.contains(TASK_EXTENSION), "{echoed:?}");
    let resp = s
        .rest_raw(
            Method::GET,
            "/tasks",
            &headers(&[("A2A-Version", "1.0"), ("A2A-Extensions", TASK_EXTENSION)]),
            "",
        )
        .await;
    let (st, list) = json_of(resp).await;
    assert_eq!(st, 200, "{list}");
    assert_eq!(
        list["totalSize"], 1,
        "only the accepted request made a task: {list}"
    );
}

// ------------------------------------------------------------- content types

#[tokio::test]
async fn rest_responses_use_application_json_by_default_on_success_and_error() {
    let s = Server::start().await;
    let ok = s.rest(Method::GET, "/tasks", None).await;
    assert!(
        content_type(&ok).starts_with("application/json"),
        "{}",
        content_type(&ok)
    );
    let err = s.rest(Method::GET, "/tasks/nope", None).await;
    assert_eq!(err.status().as_u16(), 404);
    assert!(
        content_type(&err).starts_with("application/json"),
        "{}",
        content_type(&err)
    );
}

#[tokio::test]
async fn rest_content_type_switch_answers_application_a2a_json() {
    let s = Server::start_with(&["--rest-content-type", "a2a+json"]).await;
    let ok = s
        .rest(
            Method::POST,
            "/message:send",
            Some(send_params(user_message(&unique("tck-complete-task"), "x"))),
        )
        .await;
    assert_eq!(ok.status().as_u16(), 200);
    assert!(
        content_type(&ok).starts_with("application/a2a+json"),
        "{}",
        content_type(&ok)
    );
    let (_, body) = json_of(ok).await;
    assert_eq!(state(&body["task"]), "TASK_STATE_COMPLETED");
    let err = s.rest(Method::GET, "/tasks/nope", None).await;
    assert!(
        content_type(&err).starts_with("application/a2a+json"),
        "{}",
        content_type(&err)
    );
    // JSON-RPC keeps application/json.
    let rpc = s
        .rpc_raw(
            &default_headers(),
            json!({"jsonrpc":"2.0","id":1,"method":"ListTasks"}).to_string(),
        )
        .await;
    assert!(
        content_type(&rpc).starts_with("application/json"),
        "{}",
        content_type(&rpc)
    );
}
