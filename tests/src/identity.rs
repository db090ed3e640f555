//! What the identity and permission tests share: a test identity provider ([`Idp`]: an
//! RS256 and an ES256 signing key, its JWKS served on loopback, tokens with any claims),
//! who a request is made as ([`Who`]: a header, a bearer token, no one), and the A2A
//! operations over either binding ([`Via`]) with their answers ([`Answer`]), so one
//! scenario runs on JSON-RPC and HTTP+JSON alike.
//!
//! The RSA key is a fixture made for these tests only (`tests/fixtures/jwt`); the EC key
//! is made afresh by each provider.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::HeaderMap;
use reqwest::Method;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

use crate::{
    assert_rest_error, assert_rpc_error, default_headers, send_params, Server, FAIL_CLOSED,
};

/// The issuer and audience the test provider's tokens carry, and the servers check.
pub const ISSUER: &str = "https://idp.test.invalid";
pub const AUDIENCE: &str = "tiny-harness-e2e";
/// Key ids of the provider's two keys.
pub const RSA_KID: &str = "test-rsa-1";
pub const EC_KID: &str = "test-ec-1";

const RSA_PEM: &str = include_str!("../fixtures/jwt/rsa-test-idp.pem");
const RSA_JWK: &str = include_str!("../fixtures/jwt/rsa-test-idp.jwk.json");

/// A test identity provider: its JWKS at [`Idp::jwks_url`] (on loopback, until drop).
pub struct Idp {
    pub jwks_url: String,
    rsa: EncodingKey,
    ec: EncodingKey,
    /// How many times the JWKS was fetched.
    fetches: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Idp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The signing key a token is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    Rs256,
    Es256,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Idp {
    /// A provider serving its JWKS (both keys) on a free loopback port.
    pub async fn start() -> Idp {
        common::auth::ring_crypto::install();
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("an EC key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("the EC key reads back");
        let point = pair.public_key().as_ref();
        let ec_jwk = json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig",
            "kid": EC_KID,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..])});
        let rsa_jwk: Value = serde_json::from_str(RSA_JWK).expect("the RSA JWK fixture");
        let jwks = json!({"keys": [rsa_jwk, ec_jwk]}).to_string();
        let fetches = Arc::new(AtomicUsize::new(0));
        let counter = fetches.clone();
        let app = axum::Router::new().route(
            "/.well-known/jwks.json",
            axum::routing::get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                let body = jwks.clone();
                async move { ([("content-type", "application/json")], body) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the JWKS server");
        let addr = listener.local_addr().expect("its address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Idp {
            jwks_url: format!("http://{addr}/.well-known/jwks.json"),
            rsa: EncodingKey::from_rsa_pem(RSA_PEM.as_bytes()).expect("the RSA key fixture"),
            ec: EncodingKey::from_ec_der(pkcs8.as_ref()),
            fetches,
            server,
        }
    }

    /// How many times a server fetched the JWKS.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// `harness-local` flags verifying this provider's tokens (and no default participant).
    pub fn server_args(&self) -> Vec<String> {
        [
            "--auth",
            "jwt",
            "--jwks-url",
            &self.jwks_url,
            "--jwt-issuer",
            ISSUER,
            "--jwt-audience",
            AUDIENCE,
            FAIL_CLOSED,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Valid claims for `sub`, for five minutes from now.
    pub fn claims(sub: &str) -> Value {
        let now = now();
        json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "nbf": now, "exp": now + 300})
    }

    /// A valid RS256 token for `sub`.
    pub fn token(&self, sub: &str) -> String {
        self.sign(Alg::Rs256, Some(RSA_KID), &Self::claims(sub))
    }

    /// `claims` signed with `alg`'s key under key id `kid`.
    pub fn sign(&self, alg: Alg, kid: Option<&str>, claims: &Value) -> String {
        let (algorithm, key) = match alg {
            Alg::Rs256 => (Algorithm::RS256, &self.rsa),
            Alg::Es256 => (Algorithm::ES256, &self.ec),
        };
        let header = Header {
            kid: kid.map(str::to_owned),
            ..Header::new(algorithm)
        };
        jsonwebtoken::encode(&header, claims, key).expect("sign the token")
    }
}

/// Who a request is made as.
#[derive(Debug, Clone)]
pub enum Who {
    /// `X-Participant-Id` (self-asserted identity).
    Header(String),
    /// `Authorization: Bearer <token>`.
    Token(String),
    /// A token and an `X-Participant-Id` header.
    TokenAndHeader(String, String),
    /// `Authorization` with this exact value.
    Authorization(String),
    Nobody,
}

impl Who {
    pub fn header(id: &str) -> Who {
        Who::Header(id.to_owned())
    }

    pub fn headers(&self) -> HeaderMap {
        let mut h = default_headers();
        let mut set = |k: &'static str, v: &str| {
            h.insert(k, v.parse().expect("a header value"));
        };
        match self {
            Who::Header(id) => set("x-participant-id", id),
            Who::Token(t) => set("authorization", &format!("Bearer {t}")),
            Who::TokenAndHeader(t, id) => {
                set("authorization", &format!("Bearer {t}"));
                set("x-participant-id", id);
            }
            Who::Authorization(v) => set("authorization", v),
            Who::Nobody => {}
        }
        h
    }
}

/// The two bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    JsonRpc,
    Rest,
}

impl Via {
    pub const BOTH: [Via; 2] = [Via::JsonRpc, Via::Rest];
}

/// An answer, whichever binding gave it.
#[derive(Debug)]
pub struct Answer {
    pub via: Via,
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn body(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| {
            panic!("HTTP {} body is not JSON ({e}): {}", self.status, self.text)
        })
    }

    /// The result (JSON-RPC) or body (REST) of an answer that must be a success.
    pub fn ok(&self) -> Value {
        assert_eq!(self.status, 200, "{:?}: {}", self.via, self.text);
        let body = self.body();
        match self.via {
            Via::JsonRpc => {
                assert!(body.get("error").is_none(), "{body}");
                body["result"].clone()
            }
            Via::Rest => body,
        }
    }

    /// Checks a refusal: JSON-RPC `code` (on HTTP 200, but 401 and 503, which are HTTP's
    /// on both bindings), or REST `http` with `grpc`; both with ErrorInfo `reason`.
    pub fn refused(&self, code: i64, http: u16, grpc: &str, reason: &str) -> &Self {
        match self.via {
            Via::JsonRpc => {
                let expected = if matches!(http, 401 | 503) { http } else { 200 };
                assert_eq!(self.status, expected, "{}", self.text);
                assert_rpc_error(&self.body(), code, reason);
            }
            Via::Rest => assert_rest_error(self.status, &self.body(), http, grpc, reason),
        }
        self
    }

    pub fn not_found(&self) -> &Self {
        self.refused(-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND")
    }

    pub fn invalid_params(&self) -> &Self {
        self.refused(-32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
    }

    pub fn unauthenticated(&self) -> &Self {
        self.refused(-32000, 401, "UNAUTHENTICATED", "UNAUTHENTICATED")
    }

    /// The error's message.
    pub fn message(&self) -> String {
        self.body()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// One operation as `who` over `via`: JSON-RPC `method` with `params` (request id
/// `r-1`, so answers compare byte for byte), or REST `rest` = (method, path, body).
pub async fn call(
    s: &Server,
    who: &Who,
    via: Via,
    method: &str,
    params: Value,
    rest: (Method, String, Option<Value>),
) -> Answer {
    let resp = match via {
        Via::JsonRpc => {
            let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params});
            s.rpc_raw(&who.headers(), body.to_string()).await
        }
        Via::Rest => {
            let (m, path, body) = rest;
            let body = body.map(|b| b.to_string()).unwrap_or_default();
            s.rest_raw(m, &path, &who.headers(), body).await
        }
    };
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.expect("an answer body");
    Answer {
        via,
        status,
        headers,
        text,
    }
}

pub async fn send(s: &Server, who: &Who, via: Via, message: Value) -> Answer {
    let params = send_params(message);
    let rest = (
        Method::POST,
        "/message:send".to_owned(),
        Some(params.clone()),
    );
    call(s, who, via, "SendMessage", params, rest).await
}

/// SendStreamingMessage; the answer is read to its end (an SSE stream, or the error that
/// came instead of one).
pub async fn send_streaming(s: &Server, who: &Who, via: Via, message: Value) -> Answer {
    let params = send_params(message);
    let rest = (
        Method::POST,
        "/message:stream".to_owned(),
        Some(params.clone()),
    );
    call(s, who, via, "SendStreamingMessage", params, rest).await
}

/// SendMessage with a webhook for the task (`taskPushNotificationConfig`).
pub async fn send_with_webhook(s: &Server, who: &Who, via: Via, message: Value) -> Answer {
    let config = json!({"url": "https://example.com/hook"});
    send_with_config(s, who, via, message, config).await
}

/// SendMessage with `config` as its `taskPushNotificationConfig`.
pub async fn send_with_config(
    s: &Server,
    who: &Who,
    via: Via,
    message: Value,
    config: Value,
) -> Answer {
    let params =
        json!({"message": message, "configuration": {"taskPushNotificationConfig": config}});
    let rest = (
        Method::POST,
        "/message:send".to_owned(),
        Some(params.clone()),
    );
    call(s, who, via, "SendMessage", params, rest).await
}

pub async fn get(s: &Server, who: &Who, via: Via, id: &str) -> Answer {
    let rest = (Method::GET, format!("/tasks/{id}?historyLength=100"), None);
    call(
        s,
        who,
        via,
        "GetTask",
        json!({"id": id, "historyLength": 100}),
        rest,
    )
    .await
}

pub async fn list(s: &Server, who: &Who, via: Via) -> Answer {
    let rest = (Method::GET, "/tasks".to_owned(), None);
    call(s, who, via, "ListTasks", json!({}), rest).await
}

pub async fn cancel(s: &Server, who: &Who, via: Via, id: &str) -> Answer {
    let rest = (Method::POST, format!("/tasks/{id}:cancel"), Some(json!({})));
    call(s, who, via, "CancelTask", json!({"id": id}), rest).await
}

/// SubscribeToTask, for its refusal (a success is an event stream, not read here).
pub async fn subscribe(s: &Server, who: &Who, via: Via, id: &str) -> Answer {
    let rest = (Method::GET, format!("/tasks/{id}:subscribe"), None);
    call(s, who, via, "SubscribeToTask", json!({"id": id}), rest).await
}

pub async fn create_push(s: &Server, who: &Who, via: Via, task: &str, id: &str) -> Answer {
    let config = json!({"taskId": task, "id": id, "url": "https://example.com/hook"});
    create_push_config(s, who, via, config).await
}

/// CreateTaskPushNotificationConfig of `config` (which names its `taskId`).
pub async fn create_push_config(s: &Server, who: &Who, via: Via, config: Value) -> Answer {
    let task = config["taskId"].as_str().unwrap_or_default();
    let rest = (
        Method::POST,
        format!("/tasks/{task}/pushNotificationConfigs"),
        Some(config.clone()),
    );
    call(
        s,
        who,
        via,
        "CreateTaskPushNotificationConfig",
        config,
        rest,
    )
    .await
}

pub async fn get_push(s: &Server, who: &Who, via: Via, task: &str, id: &str) -> Answer {
    let rest = (
        Method::GET,
        format!("/tasks/{task}/pushNotificationConfigs/{id}"),
        None,
    );
    let params = json!({"taskId": task, "id": id});
    call(s, who, via, "GetTaskPushNotificationConfig", params, rest).await
}

pub async fn list_push(s: &Server, who: &Who, via: Via, task: &str) -> Answer {
    let rest = (
        Method::GET,
        format!("/tasks/{task}/pushNotificationConfigs"),
        None,
    );
    let params = json!({"taskId": task});
    call(s, who, via, "ListTaskPushNotificationConfigs", params, rest).await
}

pub async fn delete_push(s: &Server, who: &Who, via: Via, task: &str, id: &str) -> Answer {
    let rest = (
        Method::DELETE,
        format!("/tasks/{task}/pushNotificationConfigs/{id}"),
        None,
    );
    let params = json!({"taskId": task, "id": id});
    call(
        s,
        who,
        via,
        "DeleteTaskPushNotificationConfig",
        params,
        rest,
    )
    .await
}
