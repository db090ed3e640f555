//! The HTTP front: one axum Router serving the agent card, the JSON-RPC endpoint and the
//! HTTP+JSON routes, with the request limits (body size, per-peer rate) and the checks
//! that keep web pages out ([`browsers`]). The same Router is what a Lambda function hands
//! to `lambda_http`.

mod browsers;
mod connections;
#[cfg(feature = "grpc")]
mod grpc;
mod remote_callback;

pub use connections::serve;

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{AppendHeaders, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::Value;

use crate::a2a::card::PublishedCard;
use crate::a2a::headers::{self, EXTENSIONS_HEADER};
use crate::a2a::sse::Framing;
use crate::a2a::Operation;
use crate::a2a::{jsonrpc, rest, A2aError};
use crate::auth::AuthError;
use crate::ops::{All, Answer, Harness, Operations};

const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
const METRICS_PATH: &str = "/metrics";
const MAX_TRACKED_PEERS: usize = 10_000;

/// What one deployment unit serves: everything (the local server), or the part one
/// Lambda function owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    All,
    AgentCard,
    /// Every method over JSON-RPC at the interface URL.
    JsonRpc,
    /// One HTTP+JSON operation.
    Rest(Operation),
    /// The callback remote agents' webhooks call ([`remote_callback`]).
    RemoteCallback,
}

impl Endpoint {
    fn card(self) -> bool {
        matches!(self, Endpoint::All | Endpoint::AgentCard)
    }

    /// Whether it takes personal channels' answers, which are sends.
    fn answers(self) -> bool {
        matches!(self, Endpoint::All | Endpoint::Rest(Operation::SendMessage))
    }

    fn json_rpc(self) -> bool {
        matches!(self, Endpoint::All | Endpoint::JsonRpc)
    }

    fn rest(self, operation: Operation) -> bool {
        match self {
            Endpoint::All => true,
            Endpoint::Rest(op) => op == operation,
            _ => false,
        }
    }
}

/// The router for what `endpoint` serves; anything else is 404. Rate limiting needs the
/// peer address, so it applies when served with
/// `into_make_service_with_connect_info::<SocketAddr>()`.
pub fn router(h: Arc<Harness>, endpoint: Endpoint) -> Router {
    router_for::<All>(h, endpoint)
}

/// [`router`] running the operations `E` runs: a function that serves only reads is
/// built on [`crate::ops::Reads`].
pub fn router_for<E: Operations>(h: Arc<Harness>, endpoint: Endpoint) -> Router {
    let limiter = NonZeroU32::new(h.config().rate_limit_per_minute)
        .map(|n| Arc::new(RateLimiter::keyed(Quota::per_minute(n))));
    let mut router = Router::new();
    if endpoint.card() {
        router = router.route(AGENT_CARD_PATH, get(agent_card));
    }
    if E::WRITES && endpoint == Endpoint::All && h.config().metrics_endpoint {
        // The local server's metrics; a Lambda function prints its own (EMF) instead.
        router = router.route(METRICS_PATH, get(metrics));
    }
    if endpoint.card() {
        // The inbox is static, like the card: the same function serves both on AWS.
        router = router.merge(crate::ui::routes(&h.config().auth));
    }
    if E::WRITES && endpoint.answers() {
        router = router.merge(crate::ui::answer_routes());
    }
    #[cfg(feature = "grpc")]
    if E::WRITES && endpoint == Endpoint::All && h.config().grpc {
        router = router.merge(grpc::routes(&h));
    }
    if E::WRITES && matches!(endpoint, Endpoint::All | Endpoint::RemoteCallback) {
        // Authenticated by the link's token, not a participant's.
        router = router.merge(remote_callback::routes());
    }
    router = router
        .fallback(
            move |State(h): State<Arc<Harness>>, req: Request| async move {
                a2a::<E>(&h, endpoint, req).await
            },
        )
        .layer(middleware::from_fn_with_state(limiter, rate_limit));
    // Outermost: a request for another host, or from another origin's page, meets nothing.
    if let Some(guard) = browsers::Guard::of(h.config()) {
        router = router.layer(middleware::from_fn_with_state(guard, browsers::guard));
    }
    router.with_state(h)
}

async fn rate_limit(
    State(limiter): State<Option<Arc<DefaultKeyedRateLimiter<IpAddr>>>>,
    req: Request,
    next: Next,
) -> Response {
    if let (Some(limiter), Some(peer)) = (limiter, peer_of(req.extensions())) {
        // Forget peers whose buckets are full again, so the table stays small.
        if limiter.len() > MAX_TRACKED_PEERS {
            limiter.retain_recent();
        }
        if limiter.check_key(&peer).is_err() {
            #[cfg(feature = "grpc")]
            if grpc::is_grpc(req.headers()) {
                return grpc::refusal(tonic::Status::resource_exhausted("rate limit exceeded"));
            }
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [
                    (header::RETRY_AFTER, "60"),
                    (header::CONTENT_TYPE, "text/plain"),
                ],
                "rate limit exceeded\n",
            )
                .into_response();
        }
    }
    next.run(req).await
}

/// The address a request came from: the connection's (served with
/// `into_make_service_with_connect_info`), else, in Lambda, the one API Gateway or the
/// Function URL saw (behind the front door, CloudFront's).
fn peer_of(extensions: &axum::http::Extensions) -> Option<IpAddr> {
    if let Some(ConnectInfo(addr)) = extensions.get::<ConnectInfo<SocketAddr>>() {
        return Some(addr.ip());
    }
    match extensions.get::<lambda_http::request::RequestContext>()? {
        lambda_http::request::RequestContext::ApiGatewayV2(c) => {
            c.http.source_ip.as_deref()?.parse().ok()
        }
        _ => None,
    }
}

/// The process's metrics in the Prometheus text format.
async fn metrics() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            crate::metrics::PROMETHEUS_CONTENT_TYPE,
        )],
        crate::metrics::render_prometheus(),
    )
        .into_response()
}

/// The base URL a request came to, for a card whose public URL is not configured: the
/// host the client used (X-Forwarded-Host, which the deployment's front door sets from
/// it, else Host).
fn request_base(headers: &HeaderMap) -> String {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let scheme = get("x-forwarded-proto").unwrap_or("http");
    let host = get("x-forwarded-host")
        .or_else(|| get("host"))
        .unwrap_or("localhost");
    format!("{scheme}://{host}")
}

async fn agent_card(State(h): State<Arc<Harness>>, headers: HeaderMap) -> Response {
    // No public URL: the card names the URL this request came to.
    let from_request = h.config().public_url.is_empty();
    let derived;
    let card = if from_request {
        let config = crate::config::Config {
            public_url: request_base(&headers),
            ..h.config().clone()
        };
        derived = PublishedCard {
            last_modified: h.card().last_modified.clone(),
            ..PublishedCard::new(crate::ops::card::build(&config, &h.commands().specs()))
        };
        &derived
    } else {
        h.card()
    };
    // A card derived from the request's headers is that requester's: no shared cache.
    let scope = if from_request { "private" } else { "public" };
    let cache = format!("{scope}, max-age={}", h.config().card_max_age.as_secs());
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| card.matches(v));
    let mut common = vec![
        (header::CACHE_CONTROL, cache),
        (header::ETAG, card.etag.clone()),
        (header::LAST_MODIFIED, card.last_modified.clone()),
    ];
    if from_request {
        // It differs by those headers: no cache may hand one client's card to another.
        common.push((
            header::VARY,
            "X-Forwarded-Host, X-Forwarded-Proto".to_owned(),
        ));
    }
    let common = AppendHeaders(common);
    if not_modified {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        common,
        [(header::CONTENT_TYPE, "application/json")],
        card.json.clone(),
    )
        .into_response()
}

/// The path relative to the interface URL (the public URL may carry a base path).
fn relative_path<'a>(h: &Harness, path: &'a str) -> &'a str {
    let base = base_path(&h.config().public_url);
    if base.is_empty() {
        return path;
    }
    match path.strip_prefix(base) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    }
}

fn base_path(url: &str) -> &str {
    let after_scheme = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    after_scheme
        .find('/')
        .map(|i| after_scheme[i..].trim_end_matches('/'))
        .unwrap_or("")
}

/// An A2A request, served as from its peer (whose audit quota its refusals count against
/// in `none` mode).
async fn a2a<E: Operations>(h: &Harness, endpoint: Endpoint, req: Request) -> Response {
    let peer = peer_of(req.extensions());
    h.from_peer(peer, route::<E>(h, endpoint, req)).await
}

async fn route<E: Operations>(h: &Harness, endpoint: Endpoint, req: Request) -> Response {
    let path = relative_path(h, req.uri().path()).to_owned();
    if endpoint.json_rpc() && req.method() == Method::POST && (path.is_empty() || path == "/") {
        return json_rpc::<E>(h, req).await;
    }
    match rest::route(req.method(), &path) {
        Some((tenant, route)) if endpoint.rest(route.operation()) => {
            rest_call::<E>(h, req, tenant, route).await
        }
        _ => rest_error(
            h,
            &A2aError::MethodNotFound(format!("{} {}", req.method(), path)),
        ),
    }
}

/// Errors that end a request before any A2A processing: answered as the binding answers
/// any error (see [`Refusal::error`]), with the status that says why.
enum Refusal {
    TooLarge(usize),
    /// The body sent nothing for the listener's idle timeout ([`connections`]).
    Stalled,
    Unreadable,
    /// A body not declared JSON: 415 on HTTP+JSON, -32005 in HTTP 200 on JSON-RPC.
    NotJson(A2aError),
}

impl Refusal {
    /// The status and the A2A error: in the server's own words, never the HTTP stack's.
    fn error(&self) -> (StatusCode, A2aError) {
        match self {
            Refusal::TooLarge(limit) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                A2aError::InvalidRequest(format!("request too large (the limit is {limit} bytes)")),
            ),
            Refusal::Unreadable => (
                StatusCode::BAD_REQUEST,
                A2aError::InvalidRequest("the request body could not be read".into()),
            ),
            Refusal::Stalled => (
                StatusCode::REQUEST_TIMEOUT,
                A2aError::InvalidRequest(
                    "the request body stopped arriving (nothing came for the idle timeout)".into(),
                ),
            ),
            // Plain HTTP says 415 for a body type the route cannot read (spec §0).
            Refusal::NotJson(e) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, e.clone()),
        }
    }

    /// A stalled body's connection is closed: what is left of the body never comes.
    fn closing(&self, mut resp: Response) -> Response {
        if matches!(self, Refusal::Stalled) {
            (resp.headers_mut()).insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        resp
    }
}

/// Reads the body of a request to a route that reads one (`reads_body`) or not, refusing
/// one over the limit before reading it when the length is declared and as soon as it
/// passes the limit otherwise, and one not declared JSON ([`not_json`]).
async fn read_body(
    h: &Harness,
    headers: &HeaderMap,
    body: Body,
    reads_body: bool,
) -> Result<Bytes, Refusal> {
    let limit = h.config().max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(e) = not_json(headers, reads_body, declared.is_some_and(|n| n > 0)) {
        return Err(Refusal::NotJson(e));
    }
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Refusal::TooLarge(limit));
    }
    let body = axum::body::to_bytes(body, limit).await.map_err(|e| {
        if caused_by::<http_body_util::LengthLimitError>(&e) {
            Refusal::TooLarge(limit)
        } else if caused_by::<tower_http::timeout::TimeoutError>(&e) {
            Refusal::Stalled
        } else {
            tracing::debug!(error = %e, "a request body could not be read");
            Refusal::Unreadable
        }
    })?;
    // A chunked body declares no length: what came decides.
    match not_json(headers, reads_body, !body.is_empty()) {
        Some(e) => Err(Refusal::NotJson(e)),
        None => Ok(body),
    }
}

/// The refusal of a body not declared JSON: a Content-Type that is not JSON (where the
/// route reads a body, or the request has one), or none on a request that has a body. A
/// web page's "simple" request, which a browser sends without asking the server first,
/// can carry a body only as text, form data or with no type. A body-less POST needs no
/// type (the A2A TCK's `:cancel` and `:subscribe`).
fn not_json(headers: &HeaderMap, reads_body: bool, has_body: bool) -> Option<A2aError> {
    let why = match content_type(headers) {
        Some(ct) if headers::is_json_content_type(ct) => return None,
        Some(ct) if reads_body || has_body => format!("request Content-Type {ct}"),
        None if has_body => "a request body without a Content-Type".to_owned(),
        _ => return None,
    };
    Some(A2aError::ContentTypeNotSupported(format!(
        "{why} (use application/json)"
    )))
}

/// Whether `e` or an error in its chain of sources is a `T`.
fn caused_by<T: std::error::Error + 'static>(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|e| e.is::<T>())
}

/// The participant a request's bearer token authenticates (`jwt` mode; None in `none`
/// mode), or the answer refusing it: 401 with a challenge, or 503 while the identity
/// provider's keys cannot be fetched. Nothing of the request but its headers is read.
async fn authenticate(
    h: &Harness,
    parts: &axum::http::request::Parts,
    json_rpc: bool,
) -> Result<Option<crate::auth::Verified>, Response> {
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    h.authenticate(authorization).await.map_err(|e| {
        let error = auth_error(&e);
        let status =
            StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = if json_rpc {
            json_response(
                status,
                "application/json",
                &jsonrpc::failure(&Value::Null, &error),
            )
        } else {
            rest_error(h, &error)
        };
        let headers = resp.headers_mut();
        if let Some(challenge) = e.challenge().and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.insert(header::WWW_AUTHENTICATE, challenge);
        }
        if e == AuthError::Unavailable {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("30"));
        }
        resp
    })
}

/// A token refused as the A2A error every binding answers.
fn auth_error(e: &AuthError) -> A2aError {
    match e {
        AuthError::Unavailable => A2aError::Unavailable(e.to_string()),
        _ => A2aError::Unauthenticated(e.to_string()),
    }
}

/// Where a client resumes a stream (SSE's own header, which browsers send on reconnect).
const LAST_EVENT_ID: &str = "last-event-id";

/// The participant the request comes from (its token's, else `X-Participant-Id`, else
/// the default), and the deadline of the Lambda invocation serving it, when it is one.
async fn caller(
    h: &Harness,
    headers: &HeaderMap,
    extensions: &axum::http::Extensions,
    op: Operation,
    verified: Option<crate::auth::Verified>,
) -> Result<crate::ops::Caller, A2aError> {
    // UTF-8, not only visible ASCII: an id outside ASCII is checked like any other, not
    // taken for no header (which would make the request the default participant's). Only
    // HTTP's own whitespace around it is dropped: any other is the id's, and refused.
    let header = match headers.get(crate::ext::participant::PARTICIPANT_HEADER) {
        None => None,
        Some(v) => match std::str::from_utf8(v.as_bytes()) {
            Ok(named) => Some(named.trim_matches([' ', '\t'])),
            Err(_) => return Err(h.unreadable_participant_header(op, v.as_bytes()).await),
        },
    };
    let mut caller = h.caller(op, header, verified).await?;
    caller.trace_parent = crate::traces::extract(headers);
    caller.last_event_id = (headers.get(LAST_EVENT_ID))
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned());
    let lambda = extensions.get::<lambda_http::Context>();
    caller.deadline = lambda.and_then(|c| crate::task::lease::instant_at_epoch_ms(c.deadline));
    caller.request_id = match lambda {
        Some(c) => c.request_id.clone(),
        None => crate::engine::transition::new_id(),
    };
    Ok(caller)
}

fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("invalid"))
}

/// The checks every A2A operation passes first: version, then required extensions.
/// Returns the extensions to echo as activated.
fn service_parameters(h: &Harness, headers: &HeaderMap) -> Result<Vec<String>, A2aError> {
    headers::check_version(headers::requested_version(headers).as_deref())?;
    headers::activate(&h.card().card, &headers::requested_extensions(headers))
}

fn with_extensions(mut resp: Response, activated: &[String]) -> Response {
    if !activated.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&activated.join(", ")) {
            resp.headers_mut().insert(EXTENSIONS_HEADER, v);
        }
    }
    resp
}

fn json_response(status: StatusCode, content_type: &'static str, body: &Value) -> Response {
    text_response(status, content_type, body.to_string())
}

fn text_response(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// `stream` with the time from `started` to its first event counted (the metrics'
/// time to first event), on every binding.
fn timed(
    stream: crate::engine::follow::EventStream,
    started: std::time::Instant,
) -> crate::engine::follow::EventStream {
    let mut first = true;
    Box::pin(stream.inspect(move |_| {
        if std::mem::take(&mut first) {
            crate::metrics::first_event(started.elapsed());
        }
    }))
}

fn sse(
    stream: crate::engine::follow::EventStream,
    framing: Framing,
    started: std::time::Instant,
) -> Response {
    let events = timed(stream, started).map(move |item| {
        let item = item.map(|sent| (sent.event, sent.id));
        Ok::<_, std::convert::Infallible>(framing.frame(item))
    });
    let mut resp = Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

async fn json_rpc<E: Operations>(h: &Harness, req: Request) -> Response {
    let started = std::time::Instant::now();
    let (parts, body) = req.into_parts();
    let verified = match authenticate(h, &parts, true).await {
        Ok(v) => v,
        Err(refusal) => return refusal,
    };
    let rpc_error = |id: &Value, e: &A2aError| {
        json_response(StatusCode::OK, "application/json", &jsonrpc::failure(id, e))
    };
    let body = match read_body(h, &parts.headers, body, true).await {
        Ok(b) => b,
        Err(Refusal::NotJson(e)) => return rpc_error(&Value::Null, &e),
        Err(refusal) => {
            let (status, e) = refusal.error();
            let resp = json_response(
                status,
                "application/json",
                &jsonrpc::failure(&Value::Null, &e),
            );
            return refusal.closing(resp);
        }
    };
    let envelope = match jsonrpc::parse_envelope(&body) {
        Ok(env) => env,
        Err(refusal) => return rpc_error(&refusal.0, &refusal.1),
    };
    let id = envelope.id.clone();
    let activated = match service_parameters(h, &parts.headers) {
        Ok(a) => a,
        Err(e) => return rpc_error(&id, &e),
    };
    let call = match jsonrpc::parse_call(&envelope.method, envelope.params) {
        Ok(c) => c,
        Err(e) => return rpc_error(&id, &e),
    };
    let caller = match caller(
        h,
        &parts.headers,
        &parts.extensions,
        call.operation(),
        verified,
    )
    .await
    {
        Ok(c) => c,
        Err(e) => return rpc_error(&id, &e),
    };
    let resp = match E::execute(h, call, &caller).await {
        Ok(Answer::Json(result)) => text_response(
            StatusCode::OK,
            "application/json",
            jsonrpc::success(&id, &result),
        ),
        Ok(Answer::Stream(stream)) => sse(stream, Framing::JsonRpc { id }, started),
        Err(e) => rpc_error(&id, &e),
    };
    with_extensions(resp, &activated)
}

fn rest_error(h: &Harness, e: &A2aError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    rest_error_as(h, e, status)
}

/// The error body with `status` as both the HTTP status and `error.code`.
fn rest_error_as(h: &Harness, e: &A2aError, status: StatusCode) -> Response {
    let mut body = e.to_rest();
    body["error"]["code"] = status.as_u16().into();
    json_response(status, h.config().rest_content_type.as_str(), &body)
}

async fn rest_call<E: Operations>(
    h: &Harness,
    req: Request,
    tenant: String,
    route: rest::Route,
) -> Response {
    let started = std::time::Instant::now();
    let (parts, body) = req.into_parts();
    let verified = match authenticate(h, &parts, false).await {
        Ok(v) => v,
        Err(refusal) => return refusal,
    };
    let body = match read_body(h, &parts.headers, body, route.takes_body()).await {
        Ok(b) => b,
        Err(refusal) => {
            let (status, e) = refusal.error();
            return refusal.closing(rest_error_as(h, &e, status));
        }
    };
    let query = parts.uri.query();
    let activated = match service_parameters(h, &parts.headers) {
        Ok(a) => a,
        Err(e) => return rest_error(h, &e),
    };
    let call = match rest::parse_call(route, tenant, query, &body) {
        Ok(c) => c,
        Err(e) => return rest_error(h, &e),
    };
    let caller = match caller(
        h,
        &parts.headers,
        &parts.extensions,
        call.operation(),
        verified,
    )
    .await
    {
        Ok(c) => c,
        Err(e) => return rest_error(h, &e),
    };
    let resp = match E::execute(h, call, &caller).await {
        Ok(Answer::Json(v)) => text_response(
            StatusCode::OK,
            h.config().rest_content_type.as_str(),
            String::from(Box::<str>::from(v)),
        ),
        Ok(Answer::Stream(stream)) => sse(stream, Framing::Rest, started),
        Err(e) => rest_error(h, &e),
    };
    with_extensions(resp, &activated)
}
