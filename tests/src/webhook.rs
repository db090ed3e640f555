//! A webhook receiver for the tests: a tokio TCP listener on 127.0.0.1 speaking just
//! enough HTTP/1.1 to record every request a server's push notifications make.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a test waits for the webhook to be called.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// One HTTP request the receiver read, and the status it answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub answered: u16,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The StreamResponse member the body sets (`statusUpdate`, `artifactUpdate`, …).
    pub fn kind(&self) -> &str {
        crate::stream_response_kind(&self.body)
    }

    pub fn state(&self) -> Option<&str> {
        self.body["statusUpdate"]["status"]["state"].as_str()
    }
}

/// A webhook receiver on 127.0.0.1: records every request; answers `fail_status` (500
/// unless set) to the first `fail_first` requests and 200 (empty body) to the rest.
/// Keeps connections alive.
pub struct Receiver {
    /// `http://127.0.0.1:PORT/hook`
    pub url: String,
    log: Arc<Mutex<Vec<Received>>>,
    /// While set, requests are read and recorded (answered 0) but never answered.
    pub hold: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        Receiver::failing_first(0).await
    }

    pub async fn failing_first(fail_first: usize) -> Receiver {
        Receiver::answering_first(500, fail_first).await
    }

    pub async fn answering_first(fail_status: u16, fail_first: usize) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let failures_left = Arc::new(AtomicUsize::new(fail_first));
        let hold = Arc::new(AtomicBool::new(false));
        let task = {
            let (log, hold) = (log.clone(), hold.clone());
            tokio::spawn(async move {
                while let Ok((conn, _)) = listener.accept().await {
                    let answers = Answers {
                        failures: failures_left.clone(),
                        fail_status,
                        hold: hold.clone(),
                    };
                    tokio::spawn(serve(conn, log.clone(), answers));
                }
            })
        };
        Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            log,
            hold,
            task,
        }
    }

    /// Every request so far, answered or failed.
    pub fn all(&self) -> Vec<Received> {
        self.log.lock().unwrap().clone()
    }

    /// The requests answered 200, in arrival order.
    pub fn accepted(&self) -> Vec<Received> {
        self.all()
            .into_iter()
            .filter(|r| r.answered == 200)
            .collect()
    }

    /// Polls until `done` holds for the accepted requests (panics after the timeout).
    pub async fn wait_until(
        &self,
        what: &str,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        let deadline = Instant::now() + DELIVERY_TIMEOUT;
        loop {
            let got = self.accepted();
            if done(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "webhook did not receive {what} within {DELIVERY_TIMEOUT:?}; got {:#?}",
                self.all()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for a statusUpdate with `state`; returns the accepted requests so far.
    pub async fn wait_for_state(&self, state: &str) -> Vec<Received> {
        self.wait_until(state, |got| got.iter().any(|r| r.state() == Some(state)))
            .await
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// How a receiver answers.
struct Answers {
    failures: Arc<AtomicUsize>,
    fail_status: u16,
    hold: Arc<AtomicBool>,
}

/// Reads HTTP/1.1 requests from one connection until it closes.
async fn serve(mut conn: TcpStream, log: Arc<Mutex<Vec<Received>>>, answers: Answers) {
    let Answers {
        failures,
        fail_status,
        hold,
    } = answers;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        // Head: up to the blank line.
        let head_end = loop {
            if let Some(p) = find(&buf, b"\r\n\r\n") {
                break p;
            }
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut request_line = lines.next().unwrap_or("").split_whitespace();
        let method = request_line.next().unwrap_or("").to_owned();
        let path = request_line.next().unwrap_or("").to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let body_start = head_end + 4;
        while buf.len() < body_start + len {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body_bytes: Vec<u8> = buf[body_start..body_start + len].to_vec();
        buf.drain(..body_start + len);
        let body = serde_json::from_slice(&body_bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body_bytes).into_owned()));
        if hold.load(Ordering::SeqCst) {
            log.lock().unwrap().push(Received {
                method,
                path,
                headers,
                body,
                answered: 0,
            });
            // Never answered: the connection stays open until the client gives up.
            let _ = conn.read(&mut chunk).await;
            return;
        }
        let fail = failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let answered = if fail { fail_status } else { 200 };
        log.lock().unwrap().push(Received {
            method,
            path,
            headers,
            body,
            answered,
        });
        let reply = if fail {
            format!("HTTP/1.1 {fail_status} Refused\r\ncontent-length: 0\r\n\r\n")
        } else {
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_owned()
        };
        if conn.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}
