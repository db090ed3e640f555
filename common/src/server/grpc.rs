//! The gRPC binding on harness-local's listener (HTTP/2 with prior knowledge, beside
//! HTTP/1.1: [`super::connections`]): tonic's `A2AService` server, routed by the axum
//! router under `/lf.a2a.v1.A2AService/`, so the Host and rate-limit layers stand in
//! front of it as of the other bindings.
//!
//! Each rpc runs what the other bindings run, in their order: the bearer token
//! (`authorization` metadata, checked from the request's head before tonic reads the
//! message, as HTTP checks it before the body: [`authenticated`]), the version and
//! extensions (`a2a-version`, `a2a-extensions`), the request decoded as JSON-RPC params
//! ([`mapping`](crate::a2a::grpc::mapping)), the caller (`x-participant-id` in `none`
//! mode), then the operation. gRPC metadata are the HTTP/2 request's headers, so they
//! are read by the same functions. Errors are `google.rpc.Status`es
//! ([`status`](crate::a2a::grpc::status)).
//!
//! A request's message is held to the HTTP body limit ([`Limited`]); its stream is the
//! operation's event stream, bounded as on the other bindings (length, per-task and
//! per-participant budget), and HTTP/2's flow control keeps a client that stops reading
//! from making the server buffer more than a stream window.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::Router;
use futures::StreamExt;
use http_body::Frame;
use tonic::{Request, Response, Status};

use super::connections::Receiving;
use crate::a2a::grpc::pb::{self, a2a_service_server as service};
use crate::a2a::grpc::{mapping, status, SERVICE_PATH};
use crate::a2a::{A2aError, Operation};
use crate::ops::{All, Answer, Harness, Operations};

/// The gRPC routes, for the router of everything ([`super::Endpoint::All`]).
pub(super) fn routes(h: &Arc<Harness>) -> Router<Arc<Harness>> {
    let limit = h.config().max_body_bytes;
    let server = service::A2aServiceServer::new(Grpc { h: h.clone() })
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    let limited = tower::ServiceBuilder::new()
        .map_request(move |req: axum::http::Request<Body>| {
            let connection = req.extensions().get::<Receiving>().cloned();
            req.map(|b| Limited::new(b, limit, connection))
        })
        .service(server);
    Router::new()
        .route_service(&format!("{SERVICE_PATH}/{{*rpc}}"), limited)
        .route_layer(middleware::from_fn(malformed_is_invalid))
        .route_layer(middleware::from_fn_with_state(h.clone(), authenticated))
        .route_layer(middleware::from_fn(only_calls))
}

/// Only a POST of `application/grpc` is a call (gRPC's spec answers another type 415):
/// what a web page has a browser send without asking the server first (a GET, a form,
/// text) runs no rpc, as the JSON bindings refuse a body not declared JSON.
async fn only_calls(req: axum::extract::Request, next: Next) -> axum::response::Response {
    let refused = if req.method() != Method::POST {
        StatusCode::METHOD_NOT_ALLOWED
    } else if !is_grpc(req.headers()) {
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    } else {
        return next.run(req).await;
    };
    let text = "a gRPC call is a POST of Content-Type application/grpc\n";
    let allow = (header::ALLOW, "POST");
    (refused, [allow, (header::CONTENT_TYPE, "text/plain")], text).into_response()
}

/// A request whose bytes tonic cannot read (no message, one cut short, no protobuf) is
/// refused by tonic with INTERNAL and no details, before any rpc runs; every status of the
/// binding's own carries an ErrorInfo. Such a refusal is the client's malformed request,
/// so it is said as the other bindings say a body that is no JSON: INVALID_ARGUMENT.
async fn malformed_is_invalid(req: axum::extract::Request, next: Next) -> axum::response::Response {
    let resp = next.run(req).await;
    match Status::from_header_map(resp.headers()) {
        Some(s) if s.code() == tonic::Code::Internal && s.details().is_empty() => {
            refusal(status::of(&A2aError::InvalidRequest(format!(
                "the request is no valid protobuf message of the rpc ({})",
                s.message()
            ))))
        }
        _ => resp,
    }
}

/// The token a call's head carried, verified by [`authenticated`] (None in `none` mode).
#[derive(Clone)]
struct Authenticated(Option<crate::auth::Verified>);

/// Verifies the bearer token of a call's head before tonic reads its message: in jwt
/// mode a caller without a valid token makes the server read and decode nothing, as the
/// HTTP bindings answer 401 before they read a body.
async fn authenticated(
    State(h): State<Arc<Harness>>,
    mut req: axum::extract::Request,
    next: Next,
) -> axum::response::Response {
    let authorization = req.headers().get(header::AUTHORIZATION);
    match h
        .authenticate(authorization.map(HeaderValue::as_bytes))
        .await
    {
        Ok(verified) => {
            req.extensions_mut().insert(Authenticated(verified));
            next.run(req).await
        }
        Err(e) => refusal(status::of(&super::auth_error(&e))),
    }
}

/// Whether a request is a gRPC call: its refusals before the service (rate limit) are
/// then gRPC statuses, which a gRPC client reads, not HTTP errors, which it cannot.
pub(super) fn is_grpc(headers: &HeaderMap) -> bool {
    super::content_type(headers).is_some_and(|ct| ct.starts_with("application/grpc"))
}

/// `s` as the trailers-only answer of a gRPC call.
pub(super) fn refusal(s: Status) -> axum::response::Response {
    s.into_http()
}

struct Grpc {
    h: Arc<Harness>,
}

type Events = Pin<Box<dyn futures::Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

impl Grpc {
    /// Runs `op` on `req` as the other bindings do, up to the operation's answer, and the
    /// extensions it activated.
    async fn run<R: serde::Serialize>(
        &self,
        op: Operation,
        req: Request<R>,
    ) -> Result<(Answer, Vec<String>), Status> {
        let h = &*self.h;
        let (metadata, extensions, message) = req.into_parts();
        let headers = metadata.into_headers();
        let serve = async {
            // Fail closed: a call that did not pass [`authenticated`] serves no one.
            let Some(Authenticated(verified)) = extensions.get::<Authenticated>().cloned() else {
                return Err(A2aError::Internal("the call was not authenticated".into()));
            };
            let activated = super::service_parameters(h, &headers)?;
            let call = mapping::call(op, &message)?;
            let caller = super::caller(h, &headers, &extensions, op, verified).await?;
            let answer = All::execute(h, call, &caller).await?;
            Ok((answer, activated))
        };
        let peer = super::peer_of(&extensions);
        (h.from_peer(peer, serve).await).map_err(|e| status::of(&e))
    }

    async fn unary<R: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        op: Operation,
        req: Request<R>,
    ) -> Result<Response<T>, Status> {
        let (answer, activated) = self.run(op, req).await?;
        let Answer::Json(json) = answer else {
            return Err(status::of(&A2aError::Internal(format!(
                "{} answered a stream",
                op.name()
            ))));
        };
        let reply = mapping::answer(json.get()).map_err(unencodable)?;
        Ok(with_extensions(Response::new(reply), &activated))
    }

    async fn stream<R: serde::Serialize>(
        &self,
        op: Operation,
        req: Request<R>,
    ) -> Result<Response<Events>, Status> {
        let started = std::time::Instant::now();
        let (answer, activated) = self.run(op, req).await?;
        let Answer::Stream(events) = answer else {
            return Err(status::of(&A2aError::Internal(format!(
                "{} answered no stream",
                op.name()
            ))));
        };
        let events = super::timed(events, started).map(|item| {
            // A mid-stream error ends the call with its status, as `event: error` ends SSE.
            match item {
                Ok(event) => mapping::event(&event).map_err(unencodable),
                Err(e) => Err(status::of(&e)),
            }
        });
        Ok(with_extensions(Response::new(Box::pin(events)), &activated))
    }
}

/// An answer the proto cannot carry: logged, and its caller told only that it failed.
fn unencodable(e: mapping::Unencodable) -> Status {
    tracing::error!(error = %e, "an answer could not be encoded for gRPC");
    status::of(&A2aError::Internal(
        "the answer could not be encoded".into(),
    ))
}

/// The activated extensions, echoed in the response metadata as the header on HTTP.
fn with_extensions<T>(mut resp: Response<T>, activated: &[String]) -> Response<T> {
    if activated.is_empty() {
        return resp;
    }
    if let Ok(v) = activated.join(", ").parse() {
        (resp.metadata_mut()).insert(crate::a2a::headers::EXTENSIONS_HEADER, v);
    }
    resp
}

#[tonic::async_trait]
impl service::A2aService for Grpc {
    async fn send_message(
        &self,
        req: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        self.unary(Operation::SendMessage, req).await
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        req: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Events>, Status> {
        self.stream(Operation::SendStreamingMessage, req).await
    }

    async fn get_task(
        &self,
        req: Request<pb::GetTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        self.unary(Operation::GetTask, req).await
    }

    async fn list_tasks(
        &self,
        req: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        self.unary(Operation::ListTasks, req).await
    }

    async fn cancel_task(
        &self,
        req: Request<pb::CancelTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        self.unary(Operation::CancelTask, req).await
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        req: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Events>, Status> {
        self.stream(Operation::SubscribeToTask, req).await
    }

    async fn create_task_push_notification_config(
        &self,
        req: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        self.unary(Operation::CreateTaskPushNotificationConfig, req)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        req: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        self.unary(Operation::GetTaskPushNotificationConfig, req)
            .await
    }

    async fn list_task_push_notification_configs(
        &self,
        req: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary(Operation::ListTaskPushNotificationConfigs, req)
            .await
    }

    async fn get_extended_agent_card(
        &self,
        req: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        self.unary(Operation::GetExtendedAgentCard, req).await
    }

    async fn delete_task_push_notification_config(
        &self,
        req: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        self.unary(Operation::DeleteTaskPushNotificationConfig, req)
            .await
    }
}

/// A gRPC request body held to `limit` bytes a message: refused with RESOURCE_EXHAUSTED
/// as soon as a message's length prefix says more, before the message is read (tonic's
/// own limit says OUT_OF_RANGE, where gRPC's other servers say RESOURCE_EXHAUSTED), and
/// as soon as more bytes come than one such message holds (every A2A rpc takes one).
/// Over HTTP/2, the messages a connection is receiving at once are held to `limit` in
/// all (a message's declared length is taken from its connection's [`Receiving`] until
/// the body is dropped, once tonic has decoded it): 64 streams of one connection, each
/// holding part of a message, cannot make the server hold 64 messages' bytes.
/// A body that stalls or breaks is its gRPC status, not an opaque one.
struct Limited {
    inner: Body,
    limit: usize,
    /// The first bytes of the body, until the length prefix is whole.
    prefix: Vec<u8>,
    received: usize,
    /// The connection's messages being received, and what this one took of them.
    connection: Option<Receiving>,
    taken: usize,
}

/// A gRPC message's prefix: a compression flag and a 4-byte big-endian length.
const PREFIX: usize = 5;

impl Limited {
    fn new(inner: Body, limit: usize, connection: Option<Receiving>) -> Self {
        Limited {
            inner,
            limit,
            prefix: Vec::with_capacity(PREFIX),
            received: 0,
            connection,
            taken: 0,
        }
    }

    /// Takes a message of `len` bytes from the connection's share, refused when the
    /// connection's other messages leave less than that.
    fn take(&mut self, len: usize) -> Result<(), Status> {
        let Some(connection) = &self.connection else {
            return Ok(());
        };
        let others = connection.0.fetch_add(len, Ordering::SeqCst);
        self.taken = len;
        if others.saturating_add(len) > self.limit {
            return Err(Status::resource_exhausted(format!(
                "this connection is receiving other messages: at most {} bytes of messages \
                 at once on one connection; send this one after them, or on another connection",
                self.limit
            )));
        }
        Ok(())
    }

    fn too_large(&self) -> Status {
        Status::resource_exhausted(format!(
            "request message too large (the limit is {} bytes)",
            self.limit
        ))
    }

    fn check(&mut self, data: &Bytes) -> Result<(), Status> {
        self.received = self.received.saturating_add(data.len());
        if self.prefix.len() < PREFIX {
            let take = (PREFIX - self.prefix.len()).min(data.len());
            self.prefix.extend_from_slice(&data[..take]);
            if self.prefix.len() == PREFIX {
                let len = u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]);
                if len as usize > self.limit {
                    return Err(self.too_large());
                }
                self.take(len as usize)?;
            }
        }
        if self.received > self.limit.saturating_add(PREFIX) {
            return Err(self.too_large());
        }
        Ok(())
    }
}

impl Drop for Limited {
    fn drop(&mut self) {
        if let Some(connection) = &self.connection {
            connection.0.fetch_sub(self.taken, Ordering::SeqCst);
        }
    }
}

impl http_body::Body for Limited {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(unreadable(&e)))),
            other => return other.map(|_| None),
        };
        if let Some(data) = frame.data_ref() {
            if let Err(refused) = self.check(data) {
                return Poll::Ready(Some(Err(refused)));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The status of a body that could not be read: one that stopped arriving for the
/// listener's idle timeout, as HTTP's 408, or one that broke.
fn unreadable(e: &axum::Error) -> Status {
    if super::caused_by::<tower_http::timeout::TimeoutError>(e) {
        Status::deadline_exceeded(
            "the request body stopped arriving (nothing came for the idle timeout)",
        )
    } else {
        tracing::debug!(error = %e, "a gRPC request body could not be read");
        Status::invalid_argument("the request body could not be read")
    }
}
