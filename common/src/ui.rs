//! The web inbox at `/ui`: three static assets compiled into the binary (no CDN, no build
//! step) and a small settings document the page reads (which identity mode, and in `jwt`
//! mode the claim that names the participant). The page speaks this harness's own A2A API;
//! nothing here reads or writes a task.
//!
//! Every answer carries a Content-Security-Policy that allows scripts and styles from
//! this origin only (no inline script, no eval), connections to this origin only, no
//! frames, no plugins, and no form posts elsewhere; and `nosniff`, `no-referrer`.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::auth::Auth;

pub const PATH: &str = "/ui";

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");

pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data: blob:; \
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

/// The inbox's routes; `auth` is the harness's identity mode.
pub fn routes<S: Clone + Send + Sync + 'static>(auth: &Auth) -> Router<S> {
    let settings = settings(auth).to_string();
    Router::new()
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
