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
                    Some(answer) => {
                        let _ = socket.write_all(answer.as_bytes()).await;
                    }
                    // Holds the connection open, silent.
                    None => tokio::time::sleep(Duration::from_secs(60)).await,
                }
            });
        }
    });
    (url, connections)
}

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
    let (elsewhere, followed) = server(Some(
        "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\n\
         content-length: 17\r\n\r\n{\"TableNames\":[]}"
            .into(),
    ))
    .await;
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
