//! The web inbox at `/ui`: static assets compiled into the binary (no CDN, no build step)
//! and a small settings document the page reads (which identity mode, and in `jwt` mode
//! the claim that names the participant). The page speaks this harness's own A2A API.
//! Besides it, the answer page of a personal channel's link (`/ui/answer`), whose POST is
//! the one route here that writes: a help reply, as the link's participant.
//!
//! Every answer carries a Content-Security-Policy that allows scripts and styles from
//! this origin only (no inline script, no eval), connections to this origin only, no
//! frames, no plugins, and no form posts elsewhere; and `nosniff`, `no-referrer`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::a2a::{Message, Part, Role, SendMessageConfiguration, SendMessageRequest};
use crate::auth::Auth;
use crate::channels::personal::{LinkError, ANSWER_PATH, NO_LONGER_OPEN};
use crate::engine::medium::{Addressed, Asks};
use crate::ext::channel::{ChannelKind, ChannelMessage};
use crate::ops::{Caller, Harness};

pub const PATH: &str = "/ui";

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");
const ANSWER_PAGE: &str = include_str!("../ui/answer.html");
const ANSWER_SCRIPT: &str = include_str!("../ui/answer.js");

pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: impl Into<Body>) -> Response {
    let mut res = (StatusCode::OK, body.into()).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// What the page needs to know about identity: the mode, and in `jwt` mode which claim
/// of the person's token names them (the page reads it to know who "me" is; the server
/// verifies the token on every request regardless).
fn settings(auth: &Auth) -> serde_json::Value {
    match auth {
        Auth::None => serde_json::json!({"auth": "none"}),
        Auth::Jwt(jwt) => {
            serde_json::json!({"auth": "jwt", "participant_claim": jwt.identity_claim})
        }
    }
}

/// Longest answer a link takes, in bytes.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;
/// Longest token a link carries (ids of at most 256 characters, base64): more is not one.
const MAX_TOKEN_BYTES: usize = 4 * 1024;
/// Largest body the answer route reads.
const MAX_ANSWER_BODY: usize = MAX_ANSWER_BYTES + MAX_TOKEN_BYTES + 1024;

#[derive(serde::Deserialize)]
struct AnswerBody {
    token: String,
    text: String,
}

fn refusal(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(serde_json::json!({"error": why}))).into_response()
}

/// A personal channel's answer link, used: the token proves who answers which request (no
/// other identity is asked for), and only while that request is the one the task waits
/// on, so a link answers once: checked here to answer early, and again by the send on
/// the record its write is conditional on, so an answer that gets in between refuses it. The answer goes in as that participant's `help_reply`,
/// under a message id of the request's own that only the harness can make
/// ([`AnswerLinks::message_id`](crate::channels::personal::AnswerLinks::message_id)), so
/// two submits of one link are one answer and no one can take the id first. The body must
/// be declared JSON, like every body the harness takes: a web page's form or text post,
/// which a browser sends without asking first, is no answer (415).
async fn answer(
    State(h): State<Arc<Harness>>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let Some(personal) = h.personal() else {
        return refusal(StatusCode::NOT_FOUND, "no personal channels here");
    };
    let declared = headers.get(header::CONTENT_TYPE).map(HeaderValue::to_str);
    if !matches!(declared, Some(Ok(ct)) if crate::a2a::headers::is_json_content_type(ct)) {
        return refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "an answer is sent as application/json",
        );
    }
    // Over the route's limit, or cut off: said in this route's words, not axum's.
    let body = match body {
        Ok(body) => body,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("an answer is 1 to {MAX_ANSWER_BYTES} bytes of text"),
            )
        }
        Err(_) => return refusal(StatusCode::BAD_REQUEST, "the answer could not be read"),
    };
    let Ok(body) = serde_json::from_slice::<AnswerBody>(&body) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "expected {\"token\": ..., \"text\": ...}",
        );
    };
    let text = body.text.trim();
    if text.is_empty() || text.len() > MAX_ANSWER_BYTES {
        return refusal(
            StatusCode::BAD_REQUEST,
            &format!("an answer is 1 to {MAX_ANSWER_BYTES} bytes of text"),
        );
    }
    if body.token.len() > MAX_TOKEN_BYTES {
        return refusal(StatusCode::FORBIDDEN, &LinkError::Invalid.to_string());
    }
    let now = crate::task::lease::now_ms() / 1000;
    let claim = match personal.links().verify(&body.token, now) {
        Ok(claim) => claim,
        Err(e) => return refusal(StatusCode::FORBIDDEN, &e.to_string()),
    };
    let open = match h.store().load_task(&claim.task_id).await {
        Ok(Some(rec)) => Addressed::of(&rec)
            .filter(|r| r.request_id == claim.request_id && r.to == claim.participant)
            .map(|r| (rec.tenant, r.asks)),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(task_id = %claim.task_id, error = %e, "answer link: the task could not be read");
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "the harness cannot read the task now; try again",
            );
        }
    };
    let Some((tenant, asks)) = open else {
        return refusal(StatusCode::CONFLICT, NO_LONGER_OPEN);
    };
    // An answer to a question names it; the work of an assigned task is their message.
    let reply = match asks {
        Asks::Answer => ChannelMessage {
            in_reply_to: Some(claim.request_id.clone()),
            ..ChannelMessage::new(
                &claim.task_id,
                &claim.participant,
                ChannelKind::HelpReply,
                text,
            )
        },
        Asks::Work => ChannelMessage::new(
            &claim.task_id,
            &claim.participant,
            ChannelKind::Message,
            text,
        ),
    };
    let mut message = Message {
        message_id: personal.links().message_id(&claim),
        task_id: claim.task_id.clone(),
        role: Role::User,
        parts: vec![Part::text(text), reply.part()],
        ..Default::default()
    };
    crate::ext::participant::assert_sender(&mut message, &claim.participant);
    let request = SendMessageRequest {
        tenant,
        message: Some(message),
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        ..Default::default()
    };
    // The send takes the answer only while the task still waits on the request, on the
    // record its write is conditional on: what was read above may be stale by then.
    let caller = Caller {
        participant: Some(claim.participant.clone()),
        verified: true,
        answer_link: Some(claim.request_id.clone()),
        ..Default::default()
    };
    match crate::ops::send_message::send_message(&h, request, &caller).await {
        Ok(_) => axum::Json(serde_json::json!({"answered": claim.task_id})).into_response(),
        // Answered since, or ended: the task takes no answer to this request now.
        Err(crate::a2a::A2aError::UnsupportedOperation(_)) => {
            refusal(StatusCode::CONFLICT, NO_LONGER_OPEN)
        }
        Err(e) => refusal(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

/// The answer link's POST: a send of a message, served where SendMessage is (on AWS the
/// send-message function, which may write the task).
pub fn answer_routes() -> Router<Arc<Harness>> {
    Router::new().route(
        ANSWER_PATH,
        post(answer).layer(axum::extract::DefaultBodyLimit::max(MAX_ANSWER_BODY)),
    )
}

/// The inbox's routes, all static (the answer page's included); `auth` is the harness's
/// identity mode.
pub fn routes(auth: &Auth) -> Router<Arc<Harness>> {
    let settings = settings(auth).to_string();
    Router::new()
        .route(
            ANSWER_PATH,
            get(|| async { asset("text/html; charset=utf-8", ANSWER_PAGE) }),
        )
        .route(
            "/ui/answer.js",
            get(|| async { asset("text/javascript; charset=utf-8", ANSWER_SCRIPT) }),
        )
        .route(
            PATH,
            get(|| async { axum::response::Redirect::permanent("/ui/") }),
        )
        .route(
            "/ui/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route(
            "/ui/settings.json",
            get(move || {
                let body = settings.clone();
                async move { asset("application/json", body) }
            }),
        )
}
