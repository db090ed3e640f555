//! The gRPC binding as a stranger sees it (issue 49): raw HTTP/2 requests to the listener
//! (the `h2` crate, below tonic's client, so a test can send what no well-behaved client
//! would: no message, a half message, a compressed one, malformed protobuf, raw frame
//! floods), checking that gRPC gives no more than the HTTP bindings do: nothing internal
//! in a refusal, HTTP/2's floods (rapid reset, PING, SETTINGS, CONTINUATION) bounded by
//! hyper's and h2's defaults.

use std::time::Duration;

use bytes::Bytes;
use harness_e2e::grpc::pb;
use harness_e2e::identity::Idp;
use harness_e2e::*;
use prost::Message as _;

// ------------------------------------------------------------------------ helpers

/// One HTTP/2 connection (prior knowledge) to `s`, driven in the background.
async fn connect(s: &Server) -> h2::client::SendRequest<Bytes> {
    let addr = s.url.trim_start_matches("http://");
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A gRPC request head for `rpc` (`SendMessage`) with the 1.0 version and `metadata`.
fn head(rpc: &str, metadata: &[(&str, &str)]) -> http::Request<()> {
    let mut req = http::Request::post(format!("http://127.0.0.1/lf.a2a.v1.A2AService/{rpc}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0");
    for (k, v) in metadata {
        req = req.header(*k, *v);
    }
    req.body(()).expect("a request head")
}

/// `message` with gRPC's prefix (not compressed, its length).
fn framed(message: &[u8]) -> Bytes {
    let mut out = vec![0u8];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out.into()
}

/// What came back: the HTTP status, the headers, the data and the trailers.
#[derive(Debug)]
struct Answer {
    http: u16,
    headers: http::HeaderMap,
    data: Vec<u8>,
    trailers: Option<http::HeaderMap>,
}

impl Answer {
    /// grpc-status and grpc-message, from the trailers or a trailers-only answer's headers.
    fn status(&self) -> (i32, String) {
        let meta = self.trailers.as_ref().unwrap_or(&self.headers);
        let code = meta
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().parse().unwrap());
        let message = meta
            .get("grpc-message")
            .map(|v| percent_decode(v.to_str().unwrap()));
        (code.unwrap_or(-1), message.unwrap_or_default())
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(n) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(n);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends `head` then `body` (ending the stream when `end`) and reads the whole answer,
/// within a wide margin.
async fn call(
    c: &mut h2::client::SendRequest<Bytes>,
    head: http::Request<()>,
    body: &[Bytes],
    end: bool,
) -> Answer {
    let c = c.clone().ready().await.expect("a stream");
    let mut c = c;
    let (answer, mut send) = c.send_request(head, body.is_empty() && end).expect("sent");
    for (n, chunk) in body.iter().enumerate() {
        send.send_data(chunk.clone(), end && n + 1 == body.len())
            .expect("data sent");
    }
    let read = async {
        let resp = answer.await.expect("an answer");
        let (parts, mut body) = resp.into_parts();
        let mut data = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("data");
            let _ = body.flow_control().release_capacity(chunk.len());
            data.extend_from_slice(&chunk);
        }
        let trailers = body.trailers().await.expect("trailers");
        Answer {
            http: parts.status.as_u16(),
            headers: parts.headers,
            data,
            trailers,
        }
    };
    let answer = tokio::time::timeout(Duration::from_secs(60), read).await;
    drop(send);
    answer.expect("an answer within a minute")
}

fn send_request(message_id: &str) -> Vec<u8> {
    let req: pb::SendMessageRequest =
        grpc::message_of(&serde_json::json!({ "message": user_message(message_id, "x") }));
    req.encode_to_vec()
}

fn varint(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Field `number` of wire type LEN holding `bytes`.
fn len_field(number: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(number << 3 | 2, &mut out);
    varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

/// A google.protobuf.Value nested `depth` lists deep.
fn nested_value(depth: usize) -> Vec<u8> {
    let mut v = Vec::new(); // Value{} (null kind absent)
    for _ in 0..depth {
        // ListValue{values: [v]} inside Value.list_value (field 6)
        let list = len_field(1, &v);
        v = len_field(6, &list);
    }
    v
}

/// The server's resident memory, in bytes (Linux).
fn rss(s: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid().expect("running")));
    let status = status.expect("the server's /proc status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A ListTasks on a fresh connection answers (the server serves others).
async fn still_serves(s: &Server) {
    let mut c = connect(s).await;
    let a = call(&mut c, head("ListTasks", &[]), &[framed(&[])], true).await;
    assert_eq!((a.http, a.status().0), (200, 0), "{a:?}");
    assert!(!a.data.is_empty(), "a ListTasksResponse: {a:?}");
}

/// An HTTP/2 frame: its 9-byte header and payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend([kind, flags]);
    out.extend(stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The error code of the GOAWAY among `frames` (what a server wrote), if any.
fn goaway_of(mut frames: &[u8]) -> Option<u32> {
    while frames.len() >= 9 {
        let len = u32::from_be_bytes([0, frames[0], frames[1], frames[2]]) as usize;
        let payload = frames.get(9..9 + len)?;
        if frames[3] == 7 && len >= 8 {
            return Some(u32::from_be_bytes(payload[4..8].try_into().ok()?));
        }
        frames = &frames[9 + len..];
    }
    None
}

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// ------------------------------------------------------------------- identity

/// jwt mode: a call without a valid token is UNAUTHENTICATED from its head alone, as the
/// HTTP bindings' 401 comes before they read a body: the server reads and decodes no
/// message of a caller it does not know (a message declared over the limit included,
/// as HTTP's 401 comes before its 413).
#[tokio::test]
async fn in_jwt_mode_a_call_without_a_token_is_refused_before_its_message_is_read() {
    let idp = Idp::start().await;
    let mut args = idp.server_args();
    args.extend(["--idle-timeout-seconds", "2"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = Server::start_with(&args).await;
    let mut c = connect(&s).await;
    let bad = [("authorization", "Bearer not-a-token")];
    let huge = Bytes::from_static(&[0, 0x40, 0, 0, 0]);
    for who in [&[][..], &bad[..]] {
        // The head alone: the message never comes.
        let a = call(&mut c, head("SendMessage", who), &[], false).await;
        assert_eq!(a.status().0, 16, "UNAUTHENTICATED: {a:?}");
        let a = call(
            &mut c,
            head("SendMessage", who),
            std::slice::from_ref(&huge),
            false,
        )
        .await;
        assert_eq!(a.status().0, 16, "UNAUTHENTICATED: {a:?}");
    }
    let alice = format!("Bearer {}", idp.token("alice"));
    let h = head("ListTasks", &[("authorization", &alice)]);
    let a = call(&mut c, h, &[framed(&[])], true).await;
    assert_eq!(a.status().0, 0, "alice's token: {a:?}");
}

// ------------------------------------------------------------ method and type

/// Only a POST of `application/grpc` reaches the service, as gRPC's spec asks (415 for
/// another type): a web page's "simple" request (text/plain, a form) or a GET, which a
/// browser sends without asking the server first, runs no rpc, as the JSON bindings
/// refuse a body not declared JSON.
#[tokio::test]
async fn only_a_post_of_application_grpc_reaches_the_service() {
    let s = Server::start_with(&["--allowed-hosts", "any"]).await;
    let mut c = connect(&s).await;
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ] {
        let mut h = head("ListTasks", &[]);
        h.headers_mut().insert("content-type", ct.parse().unwrap());
        let a = call(&mut c, h, &[framed(&[])], true).await;
        assert_eq!(a.http, 415, "{ct}: {a:?}");
        assert_eq!(
            a.headers["content-type"], "text/plain",
            "{ct}: no rpc ran: {a:?}"
        );
    }
    let mut h = head("ListTasks", &[]);
    h.headers_mut().remove("content-type");
    let a = call(&mut c, h, &[framed(&[])], true).await;
    assert_eq!(a.http, 415, "no type: {a:?}");
    for method in [http::Method::GET, http::Method::PUT, http::Method::OPTIONS] {
        let mut h = head("ListTasks", &[]);
        *h.method_mut() = method.clone();
        let a = call(&mut c, h, &[framed(&[])], true).await;
        assert_eq!(a.http, 405, "{method}: {a:?}");
        assert_eq!(
            a.headers["content-type"], "text/plain",
            "{method}: no rpc ran: {a:?}"
        );
    }
    // Over HTTP/1.1 too.
    let resp = s
        .http
        .get(s.endpoint("/lf.a2a.v1.A2AService/ListTasks"))
        .header("a2a-version", "1.0")
        .header("content-type", "application/grpc")
        .body(framed(&[]).to_vec())
        .send()
        .await
        .expect("an answer");
    assert_eq!(resp.status(), 405);
    let resp = s
        .http
        .post(s.endpoint("/lf.a2a.v1.A2AService/ListTasks"))
        .header("a2a-version", "1.0")
        .header("content-type", "text/plain")
        .body(framed(&[]).to_vec())
        .send()
        .await
        .expect("an answer");
    assert_eq!(resp.status(), 415);
    still_serves(&s).await;
}

// ---------------------------------------------------------------- error text

/// Malformed messages (bytes that are no protobuf, a wrong wire type, a string that is
/// not UTF-8, a google.protobuf.Value nested past prost's recursion limit, a message cut
/// short, none at all) and a compressed one (no compression is served) are refused
/// with a status that names no file, no Rust path and no internal state, and the
/// server goes on.
#[tokio::test]
async fn malformed_messages_are_refused_and_name_nothing_internal() {
    let s = Server::start().await;
    let mut c = connect(&s).await;
    let ok = send_request(&unique("tck-complete-task"));
    let message = |part: Vec<u8>, id: &[u8]| {
        let mut m = len_field(1, id);
        m.extend([0x20, 1]); // role: ROLE_USER
        m.extend(len_field(5, &part));
        len_field(2, &m)
    };
    let deep = |depth| message(len_field(4, &nested_value(depth)), b"deep");
    let cases: Vec<(&str, Vec<Bytes>, i32)> = vec![
        ("no protobuf", vec![framed(&[0xff; 8])], 3),
        ("a wrong wire type", vec![framed(&[0x10, 0x01])], 3),
        (
            "not UTF-8",
            vec![framed(&message(len_field(1, b"x"), &[0xff, 0xfe]))],
            3,
        ),
        ("a Value 30 deep", vec![framed(&deep(30))], 0),
        ("a Value 200 deep", vec![framed(&deep(200))], 3),
        ("a Value 100,000 deep", vec![framed(&deep(100_000))], 3),
        ("cut short", vec![framed(&ok).slice(..10)], 3),
        ("no message", vec![], 3),
    ];
    for (name, body, code) in cases {
        let a = call(&mut c, head("SendMessage", &[]), &body, true).await;
        let (got, text) = a.status();
        assert_eq!(got, code, "{name}: {a:?}");
        if code == 3 {
            assert!(text.contains("no valid protobuf message"), "{name}: {text}");
        }
        for leak in ["::", "/src/", ".rs", "panicked", "0x"] {
            assert!(!text.contains(leak), "{name}: {text}");
        }
    }
    let mut gz = vec![1u8];
    gz.extend_from_slice(&(ok.len() as u32).to_be_bytes());
    gz.extend_from_slice(&ok);
    let h = head("SendMessage", &[("grpc-encoding", "gzip")]);
    let a = call(&mut c, h, &[gz.into()], true).await;
    assert_eq!(a.status().0, 12, "UNIMPLEMENTED: {a:?}");
    let a = call(&mut c, head("NoSuchRpc", &[]), &[framed(&ok)], true).await;
    assert_eq!(a.status(), (12, String::new()), "UNIMPLEMENTED: {a:?}");
    still_serves(&s).await;
}

// ------------------------------------------------------------------- HTTP/2 floods

/// HPACK without Huffman or indexing: a header of name index `index` in the static table.
fn hpack_indexed_name(index: u8, value: &str, out: &mut Vec<u8>) {
    assert!(index < 15 && value.len() < 127);
    out.push(index);
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
}

/// HPACK: a header of a new name.
fn hpack_literal(name: &str, value: &str, out: &mut Vec<u8>) {
    out.push(0);
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
}

/// A ListTasks request head as one HPACK block.
fn list_tasks_block() -> Vec<u8> {
    let mut b = vec![0x83, 0x86]; // :method POST, :scheme http
    hpack_indexed_name(4, "/lf.a2a.v1.A2AService/ListTasks", &mut b);
    hpack_indexed_name(1, "127.0.0.1", &mut b);
    hpack_literal("content-type", "application/grpc", &mut b);
    hpack_literal("a2a-version", "1.0", &mut b);
    b
}

/// 100,000 ListTasks calls opened and reset at once on one connection (CVE-2023-44487,
/// rapid reset), written as raw frames: h2 counts the streams its peer resets before the
/// server took them, and past 20 ends the connection (GOAWAY); the server serves others
/// and holds no more memory.
#[tokio::test]
async fn a_rapid_reset_flood_is_cut_and_the_server_serves_others() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start().await;
    still_serves(&s).await;
    let before = rss(&s);
    let addr = s.url.trim_start_matches("http://").to_owned();
    let tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let (mut read, mut write) = tcp.into_split();
    // Everything the server says, until it closes.
    let reader = tokio::spawn(async move {
        let mut all = Vec::new();
        let _ = read.read_to_end(&mut all).await;
        all
    });
    write.write_all(PREFACE).await.unwrap();
    write.write_all(&frame(4, 0, 0, &[])).await.unwrap();
    let block = list_tasks_block();
    let mut written = 0u32;
    let flood = async {
        for batch in 0..1_000u32 {
            let mut bytes = Vec::new();
            for n in 0..100u32 {
                let id = 2 * (batch * 100 + n) + 1;
                bytes.extend(frame(1, 0x4, id, &block)); // HEADERS, END_HEADERS
                bytes.extend(frame(3, 0, id, &8u32.to_be_bytes())); // RST_STREAM CANCEL
            }
            if write.write_all(&bytes).await.is_err() {
                return;
            }
            written += 100;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(60), flood).await;
    drop(write);
    let said = tokio::time::timeout(Duration::from_secs(60), reader).await;
    let said = said.expect("the server closes").expect("read");
    println!("rapid reset: {written} streams written before the server closed");
    assert!(written < 100_000, "the connection was never cut");
    assert!(
        goaway_of(&said) == Some(11),
        "GOAWAY ENHANCE_YOUR_CALM: {:?}",
        goaway_of(&said)
    );
    still_serves(&s).await;
    let grown = rss(&s).saturating_sub(before);
    println!("rapid reset: the server grew by {} KiB", grown / 1024);
    assert!(grown < 64 << 20, "grew {grown} bytes");
}

/// A client that floods PINGs and SETTINGS (each asks for an answer) and never reads the
/// answers: the server stops reading once its answers do not go out, so it buffers
/// little (the write stalls), and serves others meanwhile; a HEADERS frame followed by
/// CONTINUATION frames without end (CVE-2024-27316's kind) ends its connection at the
/// 16 KiB header list bound.
#[tokio::test]
async fn ping_settings_and_continuation_floods_are_bounded() {
    use tokio::io::AsyncWriteExt;
    let s = Server::start().await;
    still_serves(&s).await;
    let before = rss(&s);
    let addr = s.url.trim_start_matches("http://").to_owned();
    for (name, flood) in [
        ("PING", frame(6, 0, 0, &[7; 8])),
        ("SETTINGS", frame(4, 0, 0, &[0, 3, 0, 0, 0, 100])),
    ] {
        let mut tcp = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        tcp.write_all(PREFACE).await.unwrap();
        tcp.write_all(&frame(4, 0, 0, &[])).await.unwrap();
        let batch: Vec<u8> = flood
            .iter()
            .copied()
            .cycle()
            .take(flood.len() * 10_000)
            .collect();
        let mut written = 0usize;
        // Up to 2 GB, unless the server stops reading first.
        let writing = async {
            for _ in 0..(2_000_000_000 / batch.len()) {
                if tcp.write_all(&batch).await.is_err() {
                    break;
                }
                written += batch.len();
            }
        };
        let stalled = tokio::time::timeout(Duration::from_secs(20), writing)
            .await
            .is_err();
        println!(
            "{name} flood: {} MB written, stalled: {stalled}",
            written >> 20
        );
        assert!(stalled || written < 2_000_000_000, "{name}");
        still_serves(&s).await;
    }
    // HEADERS (no END_HEADERS) with one literal header, then CONTINUATION without end.
    let mut tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    tcp.write_all(PREFACE).await.unwrap();
    tcp.write_all(&frame(4, 0, 0, &[])).await.unwrap();
    let block = [0x00, 0x01, b'x', 0x7f, 0x00]; // literal "x": value length 127+
    tcp.write_all(&frame(1, 0, 1, &block)).await.unwrap();
    let more = frame(9, 0, 1, &[b'a'; 16_000]);
    let mut sent = 0usize;
    let writing = async {
        while sent < 1_000_000_000 && tcp.write_all(&more).await.is_ok() {
            sent += more.len();
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(20), writing).await;
    println!("CONTINUATION flood: {} MB written", sent >> 20);
    assert!(
        sent < 1_000_000_000,
        "a gigabyte of one header block was taken"
    );
    still_serves(&s).await;
    let grown = rss(&s).saturating_sub(before);
    println!("floods: the server grew by {} KiB", grown / 1024);
    assert!(grown < 64 << 20, "grew {grown} bytes");
}

/// Measurement (not a test: it asserts nothing): 64 streams on one connection (the most it may have at once), each
/// sending all but the last byte of a message of the 1 MiB limit, then waiting.
/// 64 streams of one HTTP/2 connection, each sending part of a message of the limit's
/// size and then nothing: the first is received, the 63 others are refused at once with
/// RESOURCE_EXHAUSTED (a connection receives at most the limit's bytes of messages at
/// once, as an HTTP/1.1 connection one body), and the server does not grow by their
/// bytes. Before, all 64 were buffered (the server grew by ~67 MiB for this connection
/// alone; 512 connections: ~32 GiB).
#[tokio::test]
async fn a_connection_receives_at_most_one_messages_worth_at_once() {
    let s = Server::start_with(&["--idle-timeout-seconds", "60"]).await;
    still_serves(&s).await;
    let before = rss(&s);
    let mut c = connect(&s).await;
    let limit = 1024 * 1024;
    let mut held = Vec::new();
    for _ in 0..64 {
        c = c.clone().ready().await.expect("a stream");
        let (answer, mut stream) = c.send_request(head("SendMessage", &[]), false).unwrap();
        let mut prefix = vec![0u8];
        prefix.extend((limit as u32).to_be_bytes());
        stream.send_data(prefix.into(), false).unwrap();
        stream.reserve_capacity(limit - 1);
        stream
            .send_data(Bytes::from(vec![0x0a; limit - 1]), false)
            .unwrap();
        held.push((answer, stream));
    }
    let mut refused = 0;
    let mut waiting = 0;
    for (answer, _stream) in &mut held {
        match tokio::time::timeout(Duration::from_secs(5), answer).await {
            Ok(Ok(resp)) => {
                let status = resp
                    .headers()
                    .get("grpc-status")
                    .map(|v| v.to_str().unwrap().to_owned());
                assert_eq!(status.as_deref(), Some("8"), "{resp:?}");
                refused += 1;
            }
            Ok(Err(e)) => panic!("the stream broke: {e}"),
            Err(_) => waiting += 1,
        }
    }
    assert_eq!((refused, waiting), (63, 1), "refused and still receiving");
    let grown = rss(&s).saturating_sub(before);
    eprintln!(
        "64 held messages on one connection: the server grew by {} KiB",
        grown >> 10
    );
    assert!(grown < 32 << 20, "the server grew by {} MiB", grown >> 20);
    drop(held);
    still_serves(&s).await;
}
