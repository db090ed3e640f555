//! A web page cannot drive a local harness (issue 48, item 1): a request body must be
//! declared JSON (a browser's "simple" request, sent without a preflight, cannot declare
//! it), `A2A-Version` counts only as a header (a page can put a query parameter in any
//! URL), the `Host` must be one of the harness's own names (DNS rebinding), and a page's
//! `Origin` must be the harness's own. Each refusal stores nothing, on both stores; the
//! clients the harness serves (no `Origin`, a loopback `Host` with any port, the inbox on
//! its own origin, a body-less `:cancel` without a Content-Type) still pass.

use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

on_both_stores!(
    a_body_without_a_content_type_is_refused,
    a_version_only_in_the_query_is_no_version,
    a_foreign_origin_is_refused,
    a_foreign_host_is_refused,
);

fn rpc_send_body() -> String {
    json!({"jsonrpc": "2.0", "id": "b", "method": "SendMessage",
        "params": send_params(user_message(&unique("tck-complete-task"), "from a page"))})
    .to_string()
}

fn rest_send_body() -> String {
    send_params(user_message(&unique("tck-complete-task"), "from a page")).to_string()
}

/// A body sent in chunks, with no Content-Length.
fn chunked(body: String) -> reqwest::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
        .into_bytes()
        .chunks(16)
        .map(|c| Ok(c.to_vec()))
        .collect();
    reqwest::Body::wrap_stream(futures::stream::iter(chunks))
}

/// The server holds no task (what the refused requests would have made).
async fn nothing_stored(s: &Server, what: &str) {
    let list = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 0, "{what} stored a task: {list}");
    assert_eq!(list["tasks"], json!([]), "{what}: {list}");
}

/// `host:port` of the server (its `Host` as clients send it).
fn authority(s: &Server) -> String {
    s.url.trim_start_matches("http://").to_owned()
}

fn port(s: &Server) -> String {
    authority(s)
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned()
}

// ------------------------------------------------------------------ Content-Type

/// A body without a Content-Type (declared by its length, or chunked with none) is refused
/// like a wrong one: -32005 (HTTP 200) on JSON-RPC, 415 on HTTP+JSON; nothing stored.
async fn a_body_without_a_content_type_is_refused(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let version = headers(&[("A2A-Version", "1.0")]);
    for chunks in [false, true] {
        let body = |b: String| {
            if chunks {
                chunked(b)
            } else {
                reqwest::Body::from(b)
            }
        };
        let resp = s.rpc_raw(&version, body(rpc_send_body())).await;
        assert_eq!(resp.status().as_u16(), 200, "chunked={chunks}");
        let v: Value = resp.json().await.unwrap();
        assert_rpc_error(&v, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
        for path in ["/message:send", "/message:stream"] {
            let resp = (s.http.post(s.endpoint(path)).headers(version.clone()))
                .body(body(rest_send_body()))
                .send()
                .await
                .unwrap();
            let (st, b) = json_of(resp).await;
            assert_rest_error(
                st,
                &b,
                415,
                "INVALID_ARGUMENT",
                "CONTENT_TYPE_NOT_SUPPORTED",
            );
        }
    }
    nothing_stored(&s, "a body without a Content-Type").await;
}

/// What the A2A TCK sends still works: `:cancel` and `:subscribe` POSTed with no body and
/// no Content-Type, with `Content-Length: 0` or none at all, or an empty chunked body.
#[tokio::test]
async fn a_body_less_post_needs_no_content_type() {
    let s = Server::start().await;
    let version = headers(&[("A2A-Version", "1.0")]);
    for how in ["content-length 0", "no length", "empty chunked"] {
        let task = s.input_required_task().await;
        let id = task_id(&task);
        let send = |path: String| {
            let req = s.http.post(s.endpoint(&path)).headers(version.clone());
            match how {
                "content-length 0" => req.header("Content-Length", "0").body(""),
                "empty chunked" => req.body(chunked(String::new())),
                _ => req,
            }
        };
        let resp = send(format!("/tasks/{id}:subscribe")).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{how}: subscribe");
        assert!(
            content_type(&resp).starts_with("text/event-stream"),
            "{how}: {}",
            content_type(&resp)
        );
        drop(resp);
        let resp = send(format!("/tasks/{id}:cancel")).send().await.unwrap();
        let (st, body) = json_of(resp).await;
        assert_eq!(st, 200, "{how}: cancel {body}");
        assert_eq!(state(&body), "TASK_STATE_CANCELED", "{how}: {body}");
    }
}

// ------------------------------------------------------------------ A2A-Version

/// `?A2A-Version=1.0` without the header is a request with no version: -32009 / 400
/// VERSION_NOT_SUPPORTED, on both bindings, for reads and writes; nothing stored.
async fn a_version_only_in_the_query_is_no_version(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let json_only = headers(&[("Content-Type", "application/json")]);
    for query in ["?A2A-Version=1.0", "?a2a-version=1.0", "?A2A-Version=1.0.0"] {
        let resp = (s.http.post(s.endpoint(&format!("/{query}"))))
            .headers(json_only.clone())
            .body(rpc_send_body())
            .send()
            .await
            .unwrap();
        let v: Value = resp.json().await.unwrap();
        assert_rpc_error(&v, -32009, "VERSION_NOT_SUPPORTED");
        for (method, path, body) in [
            (Method::POST, "/message:send", rest_send_body()),
            (Method::GET, "/tasks", String::new()),
        ] {
            let path = format!("{path}{query}");
            let resp = s.rest_raw(method, &path, &json_only, body).await;
            let (st, b) = json_of(resp).await;
            assert_rest_error(st, &b, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED");
        }
    }
    // With the header too, the header is the version and the query parameter is ignored.
    let (st, body) = s.rest_get("/tasks?A2A-Version=0.3&pageSize=5").await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["pageSize"], 5, "{body}");
    nothing_stored(&s, "a version in the query").await;
}

// ------------------------------------------------------------------ Origin

/// A request whose `Origin` is another origin than the harness's own is refused 403 on
/// every route, whatever it asks; nothing stored. Another port of the same host is another
/// origin, and so is `null` (a sandboxed frame, a file).
async fn a_foreign_origin_is_refused(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let other_port = format!("http://127.0.0.1:{}", port(&s).parse::<u16>().unwrap() ^ 1);
    for origin in [
        "http://evil.example",
        "https://evil.example:8443",
        other_port.as_str(),
        "null",
    ] {
        let h = headers(&[
            ("A2A-Version", "1.0"),
            ("Content-Type", "application/json"),
            ("Origin", origin),
        ]);
        let resp = s.rpc_raw(&h, rpc_send_body()).await;
        assert_eq!(resp.status().as_u16(), 403, "{origin}: JSON-RPC");
        let sent = s
            .rest_raw(Method::POST, "/message:send", &h, rest_send_body())
            .await;
        assert_eq!(sent.status().as_u16(), 403, "{origin}: HTTP+JSON");
        for path in ["/tasks", "/.well-known/agent-card.json", "/ui/", "/metrics"] {
            let resp = s.rest_raw(Method::GET, path, &h, "").await;
            assert_eq!(resp.status().as_u16(), 403, "{origin}: GET {path}");
        }
    }
    nothing_stored(&s, "a foreign Origin").await;
}

// ------------------------------------------------------------------ Host

/// A request for another host name (a page on a name the attacker resolves to 127.0.0.1)
/// is refused 421 before anything runs, on every route: the card, the inbox, /metrics and
/// both bindings; an `X-Forwarded-Host` naming localhost changes nothing. Nothing stored.
async fn a_foreign_host_is_refused(backend: Backend) {
    let Some(s) = Server::start_on(backend, &[]).await else {
        return;
    };
    let port = port(&s);
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_owned(),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
    ] {
        let h = headers(&[
            ("A2A-Version", "1.0"),
            ("Content-Type", "application/json"),
            ("Host", &host),
            ("X-Forwarded-Host", "localhost"),
        ]);
        let resp = s.rpc_raw(&h, rpc_send_body()).await;
        assert_eq!(resp.status().as_u16(), 421, "{host}: JSON-RPC");
        let text = resp.text().await.unwrap();
        assert!(text.contains("HARNESS_ALLOWED_HOSTS"), "{host}: {text}");
        let resp = (s.rest_raw(Method::POST, "/message:send", &h, rest_send_body())).await;
        assert_eq!(resp.status().as_u16(), 421, "{host}: HTTP+JSON");
        for path in ["/tasks", "/.well-known/agent-card.json", "/ui/", "/metrics"] {
            let resp = s.rest_raw(Method::GET, path, &h, "").await;
            assert_eq!(resp.status().as_u16(), 421, "{host}: GET {path}");
        }
    }
    nothing_stored(&s, "a foreign Host").await;
}

// ------------------------------------------------------------------ what passes

/// Sends a message with `extra` headers; whether it made a task.
async fn sends(s: &Server, extra: &[(&str, &str)]) -> Result<Value, String> {
    let mut pairs = vec![("A2A-Version", "1.0"), ("Content-Type", "application/json")];
    pairs.extend_from_slice(extra);
    let resp = s.rpc_raw(&headers(&pairs), rpc_send_body()).await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    match serde_json::from_str::<Value>(&text) {
        Ok(v) if status == 200 && v["result"]["task"].is_object() => Ok(v),
        _ => Err(format!("{extra:?}: HTTP {status} {text}")),
    }
}

/// The loopback names with any port (and in any case), an `Origin` of the host the request
/// came to, and no `Origin` at all (every client but a browser) all pass; so does the
/// inbox's page fetched under a loopback name.
#[tokio::test]
async fn loopback_hosts_and_the_same_origin_pass() {
    let s = Server::start().await;
    let port = port(&s);
    let own = s.url.clone();
    for host in [
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_owned(),
        "localhost:1".to_owned(),
        "[::1]".to_owned(),
    ] {
        sends(&s, &[("Host", &host)]).await.unwrap();
        let origin = format!("http://{host}");
        sends(&s, &[("Host", &host), ("Origin", &origin)])
            .await
            .unwrap();
        let inbox = headers(&[("Host", &host)]);
        let resp = s.rest_raw(Method::GET, "/ui/", &inbox, "").await;
        assert_eq!(resp.status().as_u16(), 200, "{host}: the inbox");
    }
    sends(&s, &[]).await.unwrap();
    sends(&s, &[("Origin", &own)]).await.unwrap();
    // The default port is the scheme's.
    sends(
        &s,
        &[("Host", "localhost"), ("Origin", "http://localhost:80")],
    )
    .await
    .unwrap();
    assert!(sends(
        &s,
        &[("Host", "localhost"), ("Origin", "http://localhost:81")]
    )
    .await
    .is_err());
}

/// `--allowed-hosts` adds names (any port; the Origin of a page on one passes as it is
/// the request's own), and `*` answers to any host and any origin.
#[tokio::test]
async fn allowed_hosts_add_names_and_a_star_allows_any() {
    let s = Server::start_with(&["--allowed-hosts", "harness.lan, Other.Lan."]).await;
    let port = port(&s);
    for name in ["harness.lan", "other.lan", "HARNESS.LAN"] {
        let host = format!("{name}:{port}");
        let origin = format!("http://{host}");
        sends(&s, &[("Host", &host), ("Origin", &origin)])
            .await
            .unwrap();
    }
    // Still the loopback names; still no other.
    sends(&s, &[("Host", "localhost")]).await.unwrap();
    let refused = sends(&s, &[("Host", "evil.example")]).await.unwrap_err();
    assert!(refused.contains("HTTP 421"), "{refused}");
    // A page on an allowed name calling the harness under another is another origin.
    let refused = sends(&s, &[("Origin", "http://harness.lan")])
        .await
        .unwrap_err();
    assert!(refused.contains("HTTP 403"), "{refused}");

    let any = Server::start_with(&["--allowed-hosts", "*"]).await;
    sends(
        &any,
        &[("Host", "evil.example"), ("Origin", "http://evil.example")],
    )
    .await
    .unwrap();
    sends(&any, &[("Origin", "http://elsewhere.example")])
        .await
        .unwrap();
}

/// A bad entry stops start-up with a clear error rather than answering to no one.
#[tokio::test]
async fn a_bad_allowed_host_stops_start_up() {
    let out = std::process::Command::new(server_binary())
        .args([
            "--listen",
            "127.0.0.1:0",
            "--allowed-hosts",
            "http://harness.lan/",
        ])
        .arg("--state-dir")
        .arg(std::env::temp_dir().join(unique("harness-e2e-bad-host")))
        .output()
        .expect("run harness-local");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("http://harness.lan/") && err.contains("allowed-hosts"),
        "{err}"
    );
}
