//! Request limits: bodies over `--max-body-bytes` get 413 (declared or streamed length),
//! and more than `--rate-limit-per-minute` requests from one peer get 429.

use harness_e2e::*;
use reqwest::Method;
use serde_json::{json, Value};

fn send_body(text_len: usize) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": send_params(user_message(&unique("tck-complete-task"), &"x".repeat(text_len)))})
    .to_string()
}

fn chunked(body: String) -> reqwest::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
        .into_bytes()
        .chunks(512)
        .map(|c| Ok(c.to_vec()))
        .collect();
    reqwest::Body::wrap_stream(futures::stream::iter(chunks))
}

#[tokio::test]
async fn bodies_over_the_limit_get_413_on_both_bindings() {
    let s = Server::start_with(&["--max-body-bytes", "2048"]).await;
    let big = send_body(4096);
    let resp = s.rpc_raw(&default_headers(), big.clone()).await;
    assert_eq!(resp.status().as_u16(), 413);
    let rest_big = send_params(user_message(
        &unique("tck-complete-task"),
        &"x".repeat(4096),
    ))
    .to_string();
    for path in ["/message:send", "/message:stream"] {
        let resp = s
            .rest_raw(Method::POST, path, &default_headers(), rest_big.clone())
            .await;
        assert_eq!(resp.status().as_u16(), 413, "{path}");
    }
    // Under the limit: served.
    let small: Value = s
        .rpc_raw(&default_headers(), send_body(100))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        state(&small["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{small}"
    );
    // Only the small one made a task.
    assert_eq!(s.rpc_ok("ListTasks", json!({})).await["totalSize"], 1);
}

#[tokio::test]
async fn streamed_bodies_without_a_length_are_cut_at_the_limit() {
    let s = Server::start_with(&["--max-body-bytes", "2048"]).await;
    let resp = s
        .rpc_raw(&default_headers(), chunked(send_body(8192)))
        .await;
    assert_eq!(resp.status().as_u16(), 413);
    let resp = s
        .rest_raw(
            Method::POST,
            "/message:send",
            &default_headers(),
            chunked(
                send_params(user_message(
                    &unique("tck-complete-task"),
                    &"y".repeat(8192),
                ))
                .to_string(),
            ),
        )
        .await;
    assert_eq!(resp.status().as_u16(), 413);
    // A small chunked body is fine.
    let resp = s.rpc_raw(&default_headers(), chunked(send_body(100))).await;
    let v: Value = resp.json().await.unwrap();
    assert_eq!(state(&v["result"]["task"]), "TASK_STATE_COMPLETED", "{v}");
}

#[tokio::test]
async fn the_default_limit_is_one_mebibyte() {
    let s = Server::start().await;
    let resp = s
        .rpc_raw(&default_headers(), send_body(1024 * 1024 + 10))
        .await;
    assert_eq!(resp.status().as_u16(), 413);
    let ok: Value = s
        .rpc_raw(&default_headers(), send_body(512 * 1024))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(state(&ok["result"]["task"]), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn more_requests_than_the_rate_limit_get_429() {
    let s = Server::start_with(&["--rate-limit-per-minute", "3"]).await;
    for i in 0..3 {
        let v = s.rpc("ListTasks", json!({})).await;
        assert!(v.get("result").is_some(), "request {i}: {v}");
    }
    let resp = s
        .rpc_raw(
            &default_headers(),
            json!({"jsonrpc":"2.0","id":1,"method":"ListTasks"}).to_string(),
        )
        .await;
    assert_eq!(resp.status().as_u16(), 429);
    assert!(resp.headers().get("retry-after").is_some(), "Retry-After");
    let resp = s.rest(Method::GET, "/tasks", None).await;
    assert_eq!(resp.status().as_u16(), 429, "REST shares the budget");
    let resp = s
        .http
        .get(s.endpoint("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429, "so does the card");
}

#[tokio::test]
async fn the_rate_limit_is_per_peer_address() {
    let s = Server::start_with(&["--rate-limit-per-minute", "2"]).await;
    for _ in 0..2 {
        assert_eq!(
            s.rest(Method::GET, "/tasks", None).await.status().as_u16(),
            200
        );
    }
    assert_eq!(
        s.rest(Method::GET, "/tasks", None).await.status().as_u16(),
        429
    );
    // Another loopback address is another peer.
    let other = common::https::client_builder()
        .local_address(Some("127.0.0.2".parse().unwrap()))
        .build()
        .unwrap();
    let resp = other
        .get(s.endpoint("/tasks"))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("request from 127.0.0.2");
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test]
async fn a_fresh_harness_answers_a_thousand_sequential_requests() {
    // No rate-limit flag: the local default.
    let s = Server::start().await;
    for i in 0..1000 {
        let resp = s.rest(Method::GET, "/tasks", None).await;
        assert_eq!(resp.status().as_u16(), 200, "request {i}");
    }
}

#[tokio::test]
async fn rate_limit_zero_means_unlimited() {
    let s = Server::start_with(&["--rate-limit-per-minute", "0"]).await;
    for _ in 0..150 {
        let resp = s.rest(Method::GET, "/tasks", None).await;
        assert_eq!(resp.status().as_u16(), 200);
    }
}
