//! The AWS SDK clients' HTTP client (`common::https::sdk_http_client`, on reqwest) against
//! servers on loopback that misbehave: its timeouts are the SDK's own settings and retried
//! as timeouts, and a redirect is never followed. (That it talks to DynamoDB at all, every
//! DynamoDB Local test shows.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::error::SdkError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn dynamodb(endpoint: &str, attempts: u32, read_timeout: Duration) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version_latest()
        .http_client(common::https::sdk_http_client())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDTEST", "secret", None, None, "test"))
        .endpoint_url(endpoint)
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(attempts)
                .with_initial_backoff(Duration::from_millis(1)),
        )
        .timeout_config(TimeoutConfig::builder().read_timeout(read_timeout).build())
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// A server that answers every request on every connection with `answer` (after reading
/// the request head), or never when None; returns its URL and its count of connections.
async fn server(answer: Option<String>) -> (String, Arc<AtomicUsize>) {
    server_in_pieces(answer.map(|a| vec![(a, Duration::ZERO)])).await
}

/// [`server`], writing each piece of the answer after its pause.
async fn server_in_pieces(answer: Option<Vec<(String, Duration)>>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                match answer {
                    Some(pieces) => {
                        for (piece, pause) in pieces {
                            tokio::time::sleep(pause).await;
                            let _ = socket.write_all(piece.as_bytes()).await;
                        }
                    }
                    // Holds the connection open, silent.
                    None => tokio::time::sleep(Duration::from_secs(60)).await,
                }
            });
        }
    });
    (url, connections)
}

const NO_TABLES: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\n\
                         content-length: 17\r\n\r\n{\"TableNames\":[]}";

#[tokio::test]
async fn a_silent_server_is_a_timeout_and_retried_on_a_new_connection() {
    let (url, connections) = server(None).await;
    let err = dynamodb(&url, 2, Duration::from_millis(200))
        .list_tables()
        .send()
        .await
        .unwrap_err();
    match &err {
        SdkError::DispatchFailure(failure) => assert!(failure.is_timeout(), "{err:?}"),
        other => panic!("expected a dispatch failure (timeout), got {other:?}"),
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        2,
        "one connection per attempt"
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (elsewhere, followed) = server(Some(NO_TABLES.into())).await;
    let (url, _) = server(Some(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: {elsewhere}/\r\ncontent-length: 0\r\n\r\n"
    )))
    .await;
    let err = dynamodb(&url, 1, Duration::from_secs(5))
        .list_tables()
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        err.raw_response().map(|r| r.status().as_u16()),
        Some(307),
        "{err:?}"
    );
    assert_eq!(
        followed.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

/// The read timeout runs until the answer's head, as the SDK's own client counts it: a
/// body that pauses longer (a model's stream, say) is not cut off.
#[tokio::test]
async fn the_read_timeout_ends_at_the_answers_head() {
    let (head, body) = NO_TABLES.split_at(NO_TABLES.len() - 4);
    let (url, _) = server_in_pieces(Some(vec![
        (head.into(), Duration::ZERO),
        (body.into(), Duration::from_millis(600)),
    ]))
    .await;
    let out = dynamodb(&url, 1, Duration::from_millis(200))
        .list_tables()
        .send()
        .await
        .expect("the whole answer");
    assert!(out.table_names().is_empty());
}

/// A proxy named in the environment is not used: signed requests go where the SDK
/// client's endpoint says, as with the SDK's own client.
#[tokio::test]
async fn a_proxy_in_the_environment_is_not_used() {
    let (proxy, proxied) = server(Some(NO_TABLES.into())).await;
    let (url, direct) = server(Some(NO_TABLES.into())).await;
    // Only this test sets them; the others' requests would not be proxied either.
    std::env::set_var("HTTP_PROXY", &proxy);
    std::env::set_var("http_proxy", &proxy);
    let sent = dynamodb(&url, 1, Duration::from_secs(5))
        .list_tables()
        .send()
        .await;
    std::env::remove_var("HTTP_PROXY");
    std::env::remove_var("http_proxy");
    sent.expect("answered");
    assert_eq!(
        proxied.load(Ordering::SeqCst),
        0,
        "the request went through the proxy"
    );
    assert_eq!(direct.load(Ordering::SeqCst), 1);
}
