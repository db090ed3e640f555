//! A webhook is connected to only at addresses that were checked (issue 17, item 5).
//!
//! Two receivers on loopback record every connection: the "good" one on 127.0.0.2, which
//! the deployment allows (`--webhook-allow 127.0.0.2/32`, standing in for a public
//! address, so nothing here touches the internet), and the "attacker" on 127.0.0.1, on the
//! same port. Private targets are otherwise refused. The webhook's host, `rebind.test`,
//! goes through a scripted resolver: DNS rebinding is a name that answers the good address
//! when it is checked and 127.0.0.1 when it is connected to.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::a2a::{Message, Part, Role, TaskPushNotificationConfig, TaskState};
use common::engine::transition::{created, new_id, new_task_with_id, set_status};
use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
use common::https::resolve::Lookup;
use common::https::target::Targets;
use common::push::Notifier;
use common::sealing::PushKey;
use common::store::{EmbeddedStore, PushConfigRecord, Store};
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const GOOD: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// An HTTP server that counts the connections it accepts and the requests it answers
/// (200, then the connection closes, so each delivery connects anew).
struct Receiver {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

impl Receiver {
    fn serve(listener: TcpListener) -> Receiver {
        let port = listener.local_addr().expect("bound").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (c, r) = (connections.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer(stream, r.clone()));
            }
        });
        Receiver {
            port,
            connections,
            requests,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Reads one request (headers, then Content-Length bytes) and answers 200.
async fn answer(mut stream: TcpStream, requests: Arc<AtomicUsize>) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let body_at = loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&seen[..body_at]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while seen.len() < body_at + length {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    requests.fetch_add(1, Ordering::SeqCst);
    let _ = stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .await;
    let _ = stream.shutdown().await;
}

/// The good receiver on 127.0.0.2 and the attacker on 127.0.0.1, on one port. None where
/// 127.0.0.2 is not a local address (macOS without `ifconfig lo0 alias 127.0.0.2`).
async fn receivers() -> Option<(Receiver, Receiver)> {
    for _ in 0..50 {
        let good = match TcpListener::bind((GOOD, 0)).await {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::AddrNotAvailable => {
                eprintln!("skipped: 127.0.0.2 is not a local address here ({e})");
                return None;
            }
            Err(e) => panic!("bind 127.0.0.2: {e}"),
        };
        let port = good.local_addr().expect("bound").port();
        if let Ok(attacker) = TcpListener::bind((ATTACKER, port)).await {
            return Some((Receiver::serve(good), Receiver::serve(attacker)));
        }
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

/// A resolver whose `n`th answer (from 0) is `answer(n)`; counts the questions.
struct Scripted<F> {
    calls: AtomicUsize,
    answer: F,
}

impl<F> Scripted<F>
where
    F: Fn(usize) -> io::Result<Vec<IpAddr>> + Send + Sync + 'static,
{
    fn new(answer: F) -> Arc<Self> {
        Arc::new(Scripted {
            calls: AtomicUsize::new(0),
            answer,
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl<F> Lookup for Scripted<F>
where
    F: Fn(usize) -> io::Result<Vec<IpAddr>> + Send + Sync,
{
    fn lookup<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        assert_eq!(host, "rebind.test", "only the webhook's host is looked up");
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready((self.answer)(n)))
    }
}

struct Fixture {
    store: Arc<dyn Store>,
    notifier: Notifier,
    dir: PathBuf,
    task: String,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An embedded store with a task that went WORKING then COMPLETED and a webhook at `url`
/// handed nothing yet; a notifier that refuses private targets but 127.0.0.2, and
/// resolves through `lookup`.
async fn task_with_webhook(url: &str, lookup: Arc<dyn Lookup>) -> Fixture {
    let dir = std::env::temp_dir().join(format!("harness-webhook-rebinding-{}", new_id()));
    std::fs::create_dir_all(&dir).expect("create the store directory");
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir).expect("open the store"));
    let allow = vec!["127.0.0.2/32".parse().expect("a range")];
    let notifier = Notifier::new(
        store.clone(),
        PushKey::generate(),
        Duration::from_secs(5),
        Targets::new(false, allow),
    )
    .with_lookup(lookup);

    let task = new_id();
    let mut message = Message {
        message_id: new_id(),
        role: Role::User,
        parts: vec![Part::text("hello")],
        ..Default::default()
    };
    // alice, who makes the webhook, is on the task: a former member's gets nothing.
    let mut ext = TaskExtension::from_text("hello");
    ext.add(Participant::new(
        "alice",
        ParticipantKind::Human,
        ParticipantRole::Reporter,
    ));
    let mut rec = new_task_with_id(task.clone(), "", &mut message, &ext);
    rec.push = true;
    let first = created(&rec);
    let mut rec = store
        .create_task(&rec, &[first], None)
        .await
        .expect("create");
    // Stored as a config the creation check let through (a name, or an allowed address).
    let config = TaskPushNotificationConfig {
        id: "hook".into(),
        task_id: task.clone(),
        url: url.into(),
        ..Default::default()
    };
    store
        .put_push_config(&notifier.seal(config, "alice", 0))
        .await
        .expect("put the config");
    for state in [TaskState::Working, TaskState::Completed] {
        let mut next = rec.clone();
        let event = set_status(&mut next, state, None, None);
        rec = store
            .commit(&next, rec.version, &[event], None)
            .await
            .expect("commit");
    }
    Fixture {
        store,
        notifier,
        dir,
        task,
    }
}

impl Fixture {
    async fn deliver(&self) -> PushConfigRecord {
        self.notifier
            .deliver_pending(&self.task, None)
            .await
            .expect("delivery runs");
        self.store
            .get_push_config(&self.task, "hook")
            .await
            .expect("get")
            .expect("stored")
    }
}

fn rebind_url(port: u16) -> String {
    format!("http://rebind.test:{port}/hook")
}

/// The name answers 127.0.0.2 once, then 127.0.0.1. The first update goes to the address
/// that was checked; the second, whose answer is loopback, is refused and recorded. The
/// loopback receiver never sees a connection.
#[tokio::test]
async fn a_rebinding_hostname_is_never_connected_to_on_loopback() {
    let Some((good, attacker)) = receivers().await else {
        return;
    };
    let lookup = Scripted::new(|n| Ok(vec![if n == 0 { GOOD } else { ATTACKER }]));
    let f = task_with_webhook(&rebind_url(good.port), lookup.clone()).await;
    let record = f.deliver().await;

    assert_eq!(attacker.connections(), 0, "connected to 127.0.0.1");
    assert_eq!(good.requests(), 1, "the WORKING update reached 127.0.0.2");
    assert_eq!((record.delivered, record.failures), (2, 1));
    assert_eq!(
        record.last_failure,
        "event 2: the webhook's host resolves to an address this server does not call"
    );
    assert_eq!(
        lookup.calls(),
        2,
        "one lookup per connection, none to pre-check"
    );
}

/// An answer with a public (here: allowed) address and a loopback one is refused as a
/// whole: nothing is sent to either.
#[tokio::test]
async fn an_answer_mixing_allowed_and_blocked_addresses_is_refused() {
    let Some((good, attacker)) = receivers().await else {
        return;
    };
    let lookup = Scripted::new(|_| Ok(vec![GOOD, ATTACKER]));
    let f = task_with_webhook(&rebind_url(good.port), lookup).await;
    let record = f.deliver().await;

    assert_eq!((good.connections(), attacker.connections()), (0, 0));
    assert_eq!((record.delivered, record.failures), (2, 2));
    assert_eq!(
        record.last_failure,
        "event 2: the webhook's host resolves to an address this server does not call"
    );
}

/// A lookup that fails, or answers nothing, sends nothing; the failure recorded on the
/// config (which participants may read) says what went wrong and nothing of the resolver.
#[tokio::test]
async fn a_failed_or_empty_lookup_sends_nothing_and_says_so_without_detail() {
    let Some((good, attacker)) = receivers().await else {
        return;
    };
    let failing = Scripted::new(|_| Err(io::Error::other("SERVFAIL from resolver 10.0.0.2")));
    let f = task_with_webhook(&rebind_url(good.port), failing).await;
    let record = f.deliver().await;
    assert_eq!((record.delivered, record.failures), (2, 2));
    assert_eq!(
        record.last_failure,
        "event 2: the webhook's host could not be resolved after 3 attempts"
    );

    let empty = Scripted::new(|_| Ok(Vec::new()));
    let f = task_with_webhook(&rebind_url(good.port), empty).await;
    let record = f.deliver().await;
    assert_eq!((record.delivered, record.failures), (2, 2));
    assert_eq!(
        record.last_failure,
        "event 2: the webhook's host resolved to no address"
    );
    assert_eq!((good.connections(), attacker.connections()), (0, 0));
}

/// An address written in the URL is not resolved (reqwest connects to it as it is), so it
/// is checked before sending: a blocked one is refused, an allowed one called.
#[tokio::test]
async fn an_address_in_the_url_is_checked_before_sending() {
    let Some((good, attacker)) = receivers().await else {
        return;
    };
    let lookup = Scripted::new(|_| Ok(vec![GOOD]));
    let blocked = format!("http://{}/hook", SocketAddr::new(ATTACKER, attacker.port));
    let f = task_with_webhook(&blocked, lookup.clone()).await;
    let record = f.deliver().await;
    assert_eq!(attacker.connections(), 0);
    assert_eq!(record.failures, 2);
    assert_eq!(
        record.last_failure,
        "event 2: the webhook's host resolves to an address this server does not call"
    );

    let allowed = format!("http://{}/hook", SocketAddr::new(GOOD, good.port));
    let f = task_with_webhook(&allowed, lookup.clone()).await;
    let record = f.deliver().await;
    assert_eq!((record.failures, good.requests()), (0, 2));
    assert_eq!(lookup.calls(), 0, "an address is not looked up");
}

/// A proxy from the environment would resolve the name itself, past the check: the
/// webhook client uses none. (The variable stays set for this process; no other test here
/// may use a proxy either.)
#[tokio::test]
async fn an_environment_proxy_is_not_used() {
    let Some((good, attacker)) = receivers().await else {
        return;
    };
    let proxy = format!("http://{}", SocketAddr::new(ATTACKER, attacker.port));
    std::env::set_var("HTTP_PROXY", &proxy);
    std::env::set_var("http_proxy", &proxy);
    let lookup = Scripted::new(|_| Ok(vec![GOOD]));
    let f = task_with_webhook(&rebind_url(good.port), lookup).await;
    let record = f.deliver().await;

    assert_eq!(attacker.connections(), 0, "went through the proxy");
    assert_eq!((record.failures, good.requests()), (0, 2));
}
