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
//! Neither timeout runs while an answer is being sent or awaited: a stream (SSE) lasts as
//! long as it has events or keep-alives to send, a blocking SendMessage as long as its
//! task. The builder is hyper-util's `auto::Builder` built with HTTP/1 only: HTTP/2 (h2c
//! with prior knowledge, for gRPC) comes by turning on hyper-util's `http2` feature, which
//! makes it tell the two apart by the connection's first bytes; the accept loop, the cap
//! and the body timeout stay as they are.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::Listener;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
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
        let service = TowerToHyperService::new(body_timeout.layer(service));
        let (builder, mut stopping, still_open) =
            (builder.clone(), stopping.clone(), open.subscribe());
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
                }
            }
            drop((place, still_open));
        });
    }
    drop((listener, stop));
    open.closed().await;
}
