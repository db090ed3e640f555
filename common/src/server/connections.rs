//! harness-local's listener: the router served on hyper-util's connection builder, as
//! `axum::serve` serves it, with the connection hygiene `axum::serve` cannot give (it takes
//! no hyper settings and sets no timer, so hyper's header-read timeout never runs):
//!
//! - a request's head must arrive within [`Connections::header_read_timeout`] of when the
//!   connection starts waiting for it: hyper's header-read timeout, whose timer starts at
//!   the accept and again at the end of each answer, so it also closes a kept-alive
//!   connection left idle (and every half-sent head of a slowloris);
//! - a request body that sends nothing for [`Connections::idle_timeout`] is cut
//!   (tower-http's request-body timeout, between the body's frames): the request is
//!   answered 408 and, its body unread, its connection closed;
//! - at most [`Connections::max_connections`] connections are served at once: the next
//!   accept waits for a place (a semaphore permit, held by a connection's task until it
//!   ends), so a connection past the cap waits in the listen backlog, unanswered, until
//!   one closes. Its client sees a slow answer, not a refusal, and the timeouts bound how
//!   long a place is held by a connection that sends nothing.
//!
//! - a connection with no request in flight for [`Connections::header_read_timeout`] is
//!   closed (gracefully: HTTP/2's GOAWAY). hyper's header-read timeout covers HTTP/1 only;
//!   this covers an HTTP/2 connection that opens no stream, and one that has not yet sent
//!   the bytes that tell HTTP/1 from HTTP/2. A request is in flight from its head until
//!   its answer's body is sent or dropped ([`InFlight`]).
//!
//! Neither timeout runs while an answer is being sent or awaited: a stream (SSE, a gRPC
//! server stream) lasts as long as it has events or keep-alives to send, a blocking
//! SendMessage as long as its task. The builder is hyper-util's `auto::Builder`, which
//! tells HTTP/1.1 from HTTP/2 with prior knowledge (h2c, for gRPC: feature `grpc`) by the
//! connection's first bytes. Over HTTP/2 it pings a quiet peer every idle timeout and
//! drops one that does not answer within the header-read timeout, and a connection has at
//! most 64 requests at once.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::serve::Listener;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify, Semaphore};
use tower::{Layer, Service};
use tower_http::timeout::RequestBodyTimeoutLayer;

use crate::config::Connections;

/// Requests at once on one HTTP/2 connection (gRPC calls): the stream budget bounds the
/// long ones per participant and task; this bounds what one connection can start.
#[cfg(feature = "grpc")]
const MAX_STREAMS_PER_CONNECTION: u32 = 64;

/// Serves `app` on `listener` within `limits` until `shutdown` resolves, then stops
/// accepting, asks each open connection to finish (hyper closes an idle one at once, a
/// busy one after its answer) and waits for them. Each request carries its peer's
/// address (`ConnectInfo<SocketAddr>`), which the rate limit keys on.
pub async fn serve(
    mut listener: TcpListener,
    app: Router,
    limits: Connections,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    #[cfg(feature = "grpc")]
    builder
        .http2()
        .timer(TokioTimer::new())
        // A peer that stops answering pings is gone: its streams and place are freed.
        .keep_alive_interval(Some(limits.idle_timeout))
        .keep_alive_timeout(limits.header_read_timeout)
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    let builder = Arc::new(builder);
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let body_timeout = RequestBodyTimeoutLayer::new(limits.idle_timeout);
    let mut peers = app.into_make_service_with_connect_info::<SocketAddr>();
    // Dropped at shutdown: every connection then finishes gracefully. Each connection
    // holds a receiver of `open`, so its sender is closed once they all have ended.
    let (stop, stopping) = watch::channel(());
    let (open, _) = watch::channel(());
    tokio::pin!(shutdown);
    loop {
        let next = async {
            // The semaphore is never closed: a place always comes.
            let place = places.clone().acquire_owned().await.ok()?;
            // axum's accept: it retries what fails (out of files: after a second).
            Some((place, Listener::accept(&mut listener).await))
        };
        let (place, (tcp, peer)) = tokio::select! {
            next = next => match next {
                Some(next) => next,
                None => break,
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY, Nagle holds a stream's small SSE writes back until the
        // client's delayed ACK: ~40 ms per streamed task, measured by the bench.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let service = match peers.call(peer).await {
            Ok(service) => service,
            Err(never) => match never {},
        };
        let in_flight = InFlight::default();
        let service = Counted {
            inner: body_timeout.layer(service),
            in_flight: in_flight.clone(),
            receiving: Receiving::default(),
        };
        let service = TowerToHyperService::new(service);
        let (builder, mut stopping, still_open) =
            (builder.clone(), stopping.clone(), open.subscribe());
        let idle_limit = limits.header_read_timeout;
        tokio::spawn(async move {
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(tcp), service);
            tokio::pin!(connection);
            let mut asked = false;
            loop {
                tokio::select! {
                    ended = connection.as_mut() => {
                        if let Err(e) = ended {
                            tracing::debug!(error = %e, %peer, "connection closed");
                        }
                        break;
                    }
                    // Its sender dropped: the server is stopping.
                    _ = stopping.changed(), if !asked => {
                        asked = true;
                        connection.as_mut().graceful_shutdown();
                    }
                    () = in_flight.idle_for(idle_limit), if !asked => {
                        asked = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
            drop((place, still_open));
        });
    }
    drop((listener, stop));
    open.closed().await;
}

/// How many requests of one connection are in flight, and a wake-up when that changes.
#[derive(Clone, Default)]
struct InFlight(Arc<(AtomicUsize, Notify)>);

impl InFlight {
    fn enter(&self) -> Leaving {
        self.0 .0.fetch_add(1, Ordering::SeqCst);
        self.0 .1.notify_waiters();
        Leaving(self.clone())
    }

    /// Resolves once no request has been in flight for `limit`.
    async fn idle_for(&self, limit: Duration) {
        loop {
            let changed = self.0 .1.notified();
            tokio::pin!(changed);
            // Registered before the count is read: no change between the two is missed.
            changed.as_mut().enable();
            if self.0 .0.load(Ordering::SeqCst) == 0 {
                if tokio::time::timeout(limit, changed).await.is_err() {
                    return;
                }
            } else {
                changed.await;
            }
        }
    }
}

/// A request's place in [`InFlight`], given back when dropped.
struct Leaving(InFlight);

impl Drop for Leaving {
    fn drop(&mut self) {
        (self.0).0 .0.fetch_sub(1, Ordering::SeqCst);
        (self.0).0 .1.notify_waiters();
    }
}

/// The bytes of request messages one connection is receiving at once, in each of its
/// requests' extensions: HTTP/2 carries many requests on one connection, and the gRPC
/// binding holds their sum to one message's limit (`grpc::Limited`), as HTTP/1.1 holds a
/// connection to one body at a time.
#[derive(Clone, Default)]
#[cfg_attr(not(feature = "grpc"), allow(dead_code))]
pub(super) struct Receiving(pub(super) Arc<AtomicUsize>);

/// The connection's service, counting each request in flight until its answer's body is
/// done with.
#[derive(Clone)]
struct Counted<S> {
    inner: S,
    in_flight: InFlight,
    receiving: Receiving,
}

impl<S, B> Service<http::Request<B>> for Counted<S>
where
    S: Service<http::Request<B>, Response = axum::response::Response>,
    S::Future: Send + 'static,
{
    type Response = axum::response::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        req.extensions_mut().insert(self.receiving.clone());
        let leaving = self.in_flight.enter();
        let answer = self.inner.call(req);
        Box::pin(async move {
            let resp = answer.await?;
            Ok(resp.map(|body| {
                Body::new(Answering {
                    body,
                    _leaving: leaving,
                })
            }))
        })
    }
}

/// An answer's body, holding its request's place in flight until sent or dropped.
struct Answering {
    body: Body,
    _leaving: Leaving,
}

impl http_body::Body for Answering {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
