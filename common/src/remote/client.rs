//! The A2A client the harness calls remote agents with: their cards, SendMessage, GetTask
//! and CancelTask, over JSON-RPC or HTTP+JSON, on this crate's own protocol types.
//!
//! Every connection goes through the webhooks' SSRF guard (the same [`Targets`] and
//! resolver: only addresses checked are connected to, no proxy, no redirects), every
//! answer is read up to [`MAX_ANSWER_BYTES`], and every call is bounded by the client's
//! timeout. Errors never hold a URL's credentials or a token.
//!
//! Cards are cached per URL for as long as their `Cache-Control: max-age` says (at most
//! [`MAX_CARD_AGE`], [`DEFAULT_CARD_AGE`] without one), then asked for again with their
//! ETag, so an unchanged card costs a 304.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::card::{Binding, Chosen};
use super::registry::RemoteAgent;
use crate::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, SendMessageRequest, SendMessageResponse, Task,
};
use crate::https::resolve::Refused;
use crate::https::target::{self, Targets};

/// Largest answer (card or response) read from a remote agent.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// How long a card without `max-age` is used before it is asked for again.
pub const DEFAULT_CARD_AGE: Duration = Duration::from_secs(300);
/// Longest a card is used before it is asked for again, whatever it says.
pub const MAX_CARD_AGE: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("the agent could not be reached: {0}")]
    Unreachable(String),
    #[error("the agent answered HTTP {0}")]
    Status(u16),
    #[error("the agent refused the request: {0}")]
    Refused(String),
    #[error("the agent's answer is not usable: {0}")]
    Malformed(String),
    #[error("{0}")]
    Unusable(#[from] super::card::Unusable),
}

struct Cached {
    card: Arc<AgentCard>,
    etag: Option<String>,
    fresh_until: Instant,
}

pub struct Client {
    http: reqwest::Client,
    targets: Targets,
    /// The participant id requests are sent as (the harness's own).
    sender: String,
    cards: Mutex<HashMap<Url, Cached>>,
}

impl Client {
    pub fn new(targets: Targets, timeout: Duration, sender: &str) -> Result<Self, String> {
        Ok(Client {
            http: crate::https::guarded_client(targets.clone(), timeout)?,
            targets,
            sender: sender.to_owned(),
            cards: Mutex::default(),
        })
    }

    /// The participant id requests are sent as.
    pub fn sender(&self) -> &str {
        &self.sender
    }

    /// The agent's card, validated: how to talk to it, or why the harness cannot.
    pub async fn choose(&self, agent: &RemoteAgent) -> Result<Chosen, RemoteError> {
        let card = self.card(&agent.card_url).await?;
        Ok(super::card::choose(
            &card,
            &agent.card_url,
            agent.token.is_some(),
        )?)
    }

    /// The card at `url`, from the cache while it is fresh.
    pub async fn card(&self, url: &Url) -> Result<Arc<AgentCard>, RemoteError> {
        let etag = {
            let cards = self.cards.lock().unwrap_or_else(|p| p.into_inner());
            match cards.get(url) {
                Some(c) if c.fresh_until > Instant::now() => return Ok(c.card.clone()),
                Some(c) => c.etag.clone(),
                None => None,
            }
        };
        self.guard(url)?;
        let mut req = self
            .http
            .get(url.clone())
            .header(ACCEPT, "application/json");
        if let Some(etag) = &etag {
            req = req.header(IF_NONE_MATCH, etag);
        }
        let resp = req.send().await.map_err(unreachable)?;
        let age = max_age(resp.headers());
        if resp.status() == StatusCode::NOT_MODIFIED {
            let mut cards = self.cards.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = cards.get_mut(url) {
                c.fresh_until = Instant::now() + age;
                return Ok(c.card.clone());
            }
        }
        if !resp.status().is_success() {
            return Err(RemoteError::Status(resp.status().as_u16()));
        }
        let new_etag = (resp.headers().get(ETAG))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let card: Arc<AgentCard> = Arc::new(parse(&read(resp).await?)?);
        self.cards.lock().unwrap_or_else(|p| p.into_inner()).insert(
            url.clone(),
            Cached {
                card: card.clone(),
                etag: new_etag,
                fresh_until: Instant::now() + age,
            },
        );
        Ok(card)
    }

    /// SendMessage: the task the agent made (or, for an agent that answers without a task,
    /// its message).
    pub async fn send(
        &self,
        agent: &RemoteAgent,
        to: &Chosen,
        mut request: SendMessageRequest,
    ) -> Result<SendMessageResponse, RemoteError> {
        request.tenant = to.tenant.clone();
        let body = serde_json::to_value(&request).map_err(malformed)?;
        self.call(agent, to, "SendMessage", "message:send", body, true)
            .await
    }

    pub async fn get_task(
        &self,
        agent: &RemoteAgent,
        to: &Chosen,
        id: &str,
    ) -> Result<Task, RemoteError> {
        let request = GetTaskRequest {
            tenant: to.tenant.clone(),
            id: id.to_owned(),
            history_length: Some(0),
        };
        let body = serde_json::to_value(&request).map_err(malformed)?;
        let path = format!("tasks/{}?historyLength=0", encode(id));
        self.call(agent, to, "GetTask", &path, body, false).await
    }

    pub async fn cancel(
        &self,
        agent: &RemoteAgent,
        to: &Chosen,
        id: &str,
    ) -> Result<Task, RemoteError> {
        let request = CancelTaskRequest {
            tenant: to.tenant.clone(),
            id: id.to_owned(),
            ..Default::default()
        };
        let body = serde_json::to_value(&request).map_err(malformed)?;
        let path = format!("tasks/{}:cancel", encode(id));
        self.call(agent, to, "CancelTask", &path, body, true).await
    }

    /// One call: a JSON-RPC request to the interface URL, or the HTTP+JSON route `path`
    /// under it (`post`: POST with `body`, else GET). In a client span of the trace (the
    /// method and the agent's participant id; nothing of the message), carrying its
    /// `traceparent`.
    async fn call<T: DeserializeOwned>(
        &self,
        agent: &RemoteAgent,
        to: &Chosen,
        method: &str,
        path: &str,
        body: Value,
        post: bool,
    ) -> Result<T, RemoteError> {
        let span = tracing::debug_span!(
            "remote_agent",
            otel.name = format!("a2a {method}").as_str(),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            rpc.method = method,
            remote_agent = agent.id.as_str(),
        );
        let call = async {
            let req = match to.binding {
                Binding::JsonRpc => {
                    let envelope =
                        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": body});
                    self.http.post(to.url.clone()).json(&envelope)
                }
                Binding::Rest => {
                    let mut base = to.url.as_str().trim_end_matches('/').to_owned();
                    if !to.tenant.is_empty() {
                        base = format!("{base}/{}", encode(&to.tenant));
                    }
                    let url = Url::parse(&format!("{base}/{path}")).map_err(malformed)?;
                    if post {
                        self.http.post(url).json(&body)
                    } else {
                        self.http.get(url)
                    }
                }
            };
            self.guard(&to.url)?;
            let mut req = req
                .header(ACCEPT, "application/json")
                .header(CONTENT_TYPE, "application/json")
                .header("A2A-Version", "1.0")
                .header(crate::ext::participant::PARTICIPANT_HEADER, &self.sender);
            if let Some(token) = &agent.token {
                req = req.header(AUTHORIZATION, format!("Bearer {token}"));
            }
            let resp = (crate::traces::inject(req).send().await).map_err(unreachable)?;
            let status = resp.status();
            let text = read(resp).await?;
            match to.binding {
                Binding::JsonRpc => {
                    let v: Value = serde_json::from_slice(&text).map_err(malformed)?;
                    if let Some(err) = v.get("error") {
                        return Err(RemoteError::Refused(refusal(err)));
                    }
                    if !status.is_success() {
                        return Err(RemoteError::Status(status.as_u16()));
                    }
                    serde_json::from_value(v.get("result").cloned().unwrap_or(Value::Null))
                        .map_err(malformed)
                }
                Binding::Rest => {
                    if !status.is_success() {
                        return Err(match serde_json::from_slice::<Value>(&text) {
                            Ok(v) if v.get("error").is_some() => {
                                RemoteError::Refused(refusal(&v["error"]))
                            }
                            _ => RemoteError::Status(status.as_u16()),
                        });
                    }
                    serde_json::from_slice(&text).map_err(malformed)
                }
            }
        };
        crate::traces::client_call(span, call).await
    }

    /// An address written in the URL passes no resolver: it is checked here.
    fn guard(&self, url: &Url) -> Result<(), RemoteError> {
        match target::literal(url) {
            Some(ip) if !self.targets.permits(ip) => Err(RemoteError::Unreachable(
                Refused::Blocked(ip).to_string().replace("webhook", "agent"),
            )),
            _ => Ok(()),
        }
    }
}

/// The error's code and message, as the remote put them (bounded: it is the remote's text).
fn refusal(err: &Value) -> String {
    let code = err.get("code").map(Value::to_string).unwrap_or_default();
    let message: String = (err.get("message").and_then(Value::as_str))
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    format!("{code} {message}").trim().to_owned()
}

fn unreachable(e: reqwest::Error) -> RemoteError {
    let why = match Refused::behind(&e) {
        Some(r) => r.to_string().replace("webhook", "agent"),
        None if e.is_timeout() => "timed out".into(),
        None => e.without_url().to_string(),
    };
    RemoteError::Unreachable(why)
}

fn malformed(e: impl std::fmt::Display) -> RemoteError {
    RemoteError::Malformed(e.to_string())
}

fn parse(body: &[u8]) -> Result<AgentCard, RemoteError> {
    serde_json::from_slice(body)
        .map_err(|e| RemoteError::Malformed(format!("not an agent card: {e}")))
}

async fn read(mut resp: reqwest::Response) -> Result<Vec<u8>, RemoteError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(RemoteError::Malformed(format!(
                "larger than {MAX_ANSWER_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn encode(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// How long an answer's `Cache-Control` lets it be used: `no-store`/`no-cache` not at all,
/// `max-age` up to [`MAX_CARD_AGE`], else [`DEFAULT_CARD_AGE`].
fn max_age(headers: &reqwest::header::HeaderMap) -> Duration {
    let Some(value) = headers.get(CACHE_CONTROL).and_then(|v| v.to_str().ok()) else {
        return DEFAULT_CARD_AGE;
    };
    let mut age = DEFAULT_CARD_AGE;
    for directive in value.split(',').map(str::trim) {
        if directive.eq_ignore_ascii_case("no-store") || directive.eq_ignore_ascii_case("no-cache")
        {
            return Duration::ZERO;
        }
        if let Some(secs) = directive
            .strip_prefix("max-age=")
            .and_then(|s| s.parse::<u64>().ok())
        {
            age = Duration::from_secs(secs);
        }
    }
    age.min(MAX_CARD_AGE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn a_cards_age_follows_cache_control_within_bounds() {
        let of = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(CACHE_CONTROL, HeaderValue::from_str(v).unwrap());
            max_age(&h)
        };
        assert_eq!(max_age(&HeaderMap::new()), DEFAULT_CARD_AGE);
        assert_eq!(of("public, max-age=60"), Duration::from_secs(60));
        assert_eq!(of("max-age=999999"), MAX_CARD_AGE);
        assert_eq!(of("no-store"), Duration::ZERO);
    }
}
