//! Connection hygiene of harness-local's listener: a request head must arrive within
//! `--header-read-timeout-seconds` (which also ends a kept-alive connection left idle, and
//! any connection, HTTP/1 or HTTP/2, with no request in flight), a
//! request body that stops sending for `--idle-timeout-seconds` is cut, and past
//! `--max-connections` a connection waits unserved until another closes. Streams outlive
//! both timeouts, and the server serves as usual after an attack.

use std::time::{Duration, Instant};

use harness_e2e::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Far more than any timeout these tests configure: a read still waiting then means the
/// server never closed the connection.
const GIVE_UP: Duration = Duration::from_secs(60);

fn addr(s: &Server) -> String {
    s.url.trim_start_matches("http://").to_owned()
}

/// Reads until the server closes the connection (EOF or reset); what it sent, or None when
/// it was still open after `within`.
async fn until_closed(conn: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, conn.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// A whole GET of the agent card on a kept-alive connection.
const CARD_REQUEST: &[u8] =
    b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n";

/// Reads one response's head and `Content-Length` body off `conn`.
async fn one_response(conn: &mut TcpStream, within: Duration) -> Option<String> {
    let read = async {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = conn.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = (head.lines())
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    return Some(text);
                }
            }
        }
    };
    tokio::time::timeout(within, read).await.ok().flatten()
}

/// A server whose header-read and idle timeouts are both 1 s.
async fn with_one_second_timeouts() -> Server {
    Server::start_with(&[
        "--header-read-timeout-seconds",
        "1",
        "--idle-timeout-seconds",
        "1",
    ])
    .await
}

/// 300 connections that send part of a request head and stop are all closed by the server
/// once the header timeout passes, and a kept-alive connection left idle after its answer
/// is closed too; the server then answers as usual.
#[tokio::test]
async fn half_sent_requests_are_closed_by_the_header_timeout() {
    let s = Server::start_with(&["--header-read-timeout-seconds", "2"]).await;
    let mut held = Vec::new();
    for _ in 0..300 {
        let mut conn = TcpStream::connect(addr(&s)).await.expect("connect");
        conn.write_all(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
            .await
            .expect("a part of the head");
        held.push(conn);
    }
    let mut idle = TcpStream::connect(addr(&s)).await.expect("connect");
    idle.write_all(CARD_REQUEST).await.expect("a request");
    let answer = one_response(&mut idle, GIVE_UP).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let started = Instant::now();
    let closed = futures::future::join_all(
        held.iter_mut()
            .map(|conn| async move { until_closed(conn, GIVE_UP).await.is_some() }),
    )
    .await;
    let open = closed.iter().filter(|c| !**c).count();
    assert_eq!(
        open, 0,
        "{open} of 300 half-sent requests still open after {GIVE_UP:?}"
    );
    assert!(
        until_closed(&mut idle, GIVE_UP).await.is_some(),
        "the idle kept-alive connection is still open"
    );
    eprintln!(
        "300 half-sent requests closed within {:?}",
        started.elapsed()
    );

    let listed = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 0, "{listed}");
    assert_eq!(state(&s.completed_task().await), "TASK_STATE_COMPLETED");
}

/// A request whose body stops arriving is answered 408 once the idle timeout passes, and
/// its connection closed: nothing of it is stored.
#[tokio::test]
async fn a_stalled_request_body_is_cut_by_the_idle_timeout() {
    let s = Server::start_with(&["--idle-timeout-seconds", "2"]).await;
    let mut conn = TcpStream::connect(addr(&s)).await.expect("connect");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": send_params(user_message(&unique("tck-complete-task"), "hello"))})
    .to_string();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.expect("the head");
    conn.write_all(&body.as_bytes()[..10])
        .await
        .expect("a part of the body");
    let got = until_closed(&mut conn, GIVE_UP)
        .await
        .expect("the server closed the connection");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let listed = s.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 0, "{listed}");
}

/// With `--max-connections 2` and two connections open, a third is not served until one
/// of them closes; then it is, and so is everyone after.
#[tokio::test]
async fn past_the_connection_cap_a_connection_waits_for_a_place() {
    let s = Server::start_with(&[
        "--max-connections",
        "2",
        "--header-read-timeout-seconds",
        "120",
    ])
    .await;
    let mut first = TcpStream::connect(addr(&s)).await.expect("connect");
    first.write_all(CARD_REQUEST).await.expect("a request");
    assert!(one_response(&mut first, GIVE_UP).await.is_some());
    let second = TcpStream::connect(addr(&s)).await.expect("connect");

    let mut third = TcpStream::connect(addr(&s)).await.expect("connect");
    third.write_all(CARD_REQUEST).await.expect("a request");
    // No answer while both places are taken: nothing reads the request.
    let early = one_response(&mut third, Duration::from_secs(2)).await;
    assert_eq!(early, None, "served past the cap");

    drop(second);
    let answer = one_response(&mut third, GIVE_UP)
        .await
        .expect("served once a place is free");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop((first, third));
    assert_eq!(state(&s.completed_task().await), "TASK_STATE_COMPLETED");
}

/// A stream lasts longer than both timeouts: a response being sent is neither a head
/// being waited for nor a request body.
#[tokio::test]
async fn a_stream_outlives_both_timeouts() {
    let s = with_one_second_timeouts().await;
    let started = Instant::now();
    // WORKING for 4 s, then COMPLETED.
    let message = user_message(&unique("test-resubscribe-message-id"), "slow");
    let (_, events) = s
        .rpc_stream("SendStreamingMessage", send_params(message))
        .await;
    assert!(started.elapsed() > Duration::from_secs(3), "{events:?}");
    assert_eq!(
        states(&events).last().map(String::as_str),
        Some("TASK_STATE_COMPLETED"),
        "{events:?}"
    );
}

/// HTTP/2's connection preface and an empty SETTINGS frame: a client that then opens no
/// stream.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Connections that say nothing, that send only part of HTTP/2's preface (so the server
/// cannot yet tell HTTP/2 from HTTP/1), or that open HTTP/2 and no stream, are all closed
/// once the header timeout passes: hyper's own header-read timeout covers only HTTP/1.
#[tokio::test]
async fn connections_with_no_request_are_closed_whatever_their_protocol() {
    let s = Server::start_with(&["--header-read-timeout-seconds", "2"]).await;
    let mut held = Vec::new();
    for sent in [&b""[..], &H2_PREFACE[..10], H2_PREFACE] {
        for _ in 0..20 {
            let mut conn = TcpStream::connect(addr(&s)).await.expect("connect");
            conn.write_all(sent).await.expect("the first bytes");
            held.push((sent.len(), conn));
        }
    }
    let started = Instant::now();
    let closed =
        futures::future::join_all(held.iter_mut().map(|(sent, conn)| async move {
            (*sent, until_closed(conn, GIVE_UP).await.is_some())
        }))
        .await;
    let open: Vec<usize> = (closed.iter())
        .filter(|(_, closed)| !closed)
        .map(|(sent, _)| *sent)
        .collect();
    assert!(
        open.is_empty(),
        "still open after {GIVE_UP:?}, by bytes sent: {open:?}"
    );
    eprintln!(
        "60 connections with no request closed within {:?}",
        started.elapsed()
    );
    assert_eq!(state(&s.completed_task().await), "TASK_STATE_COMPLETED");
}

/// A gRPC server stream lasts past the header and idle timeouts (its request is in
/// flight until its answer ends), and its connection serves a call after it.
#[tokio::test]
async fn a_grpc_stream_outlives_both_timeouts() {
    use harness_e2e::grpc::{self, pb};
    let s = with_one_second_timeouts().await;
    let mut client = s.grpc().await;
    let started = Instant::now();
    // WORKING for 4 s, then COMPLETED.
    let message = user_message(&unique("test-resubscribe-message-id"), "slow");
    let send: pb::SendMessageRequest = grpc::message_of(&send_params(message));
    let mut events = client
        .send_streaming_message(grpc::request(send, ""))
        .await
        .expect("a stream")
        .into_inner();
    let mut last = None;
    while let Some(event) = events.message().await.expect("an event") {
        last = Some(grpc::json_of(&event));
    }
    assert!(started.elapsed() > Duration::from_secs(3), "{last:?}");
    let last = last.expect("events");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
    let listed = client
        .list_tasks(grpc::request(pb::ListTasksRequest::default(), ""))
        .await
        .expect("the connection still serves");
    assert_eq!(listed.into_inner().tasks.len(), 1);
}
