//! Remote A2A agents as participants: the registry of agents the model may delegate to
//! ([`registry`]), their cards ([`card`]), the client that calls them ([`client`]), the
//! links a task keeps to the tasks it delegated (`task::Link`, driven by
//! `agent::delegate`) and the callback URLs their webhooks wake it through (served by
//! `server::remote_callback`).
//!
//! A delegation is a link committed before anything is sent (agent, deterministic message
//! id), then SendMessage to the remote with the harness as sender, `returnImmediately`, and
//! a push notification config whose URL is this harness's callback for that link with a
//! token of the link's own; then the link is completed with the remote task's id. A crash
//! between the send and the completion is repaired on the next drive by sending the same
//! message again: the remote answers a repeated message id with the task it made the first
//! time, so no second task is created. The parent then waits with no lease and nothing
//! polling; the callback wakes it when the remote task ends or asks for input. A remote
//! without push notifications is polled instead: the parent waits under a poll timer in
//! place of a lease, which the sweep rings ([`FIRST_POLL`](crate::agent::delegate::FIRST_POLL), doubling up to
//! [`MAX_POLL_INTERVAL`](crate::agent::delegate::MAX_POLL_INTERVAL), at most [`MAX_POLLS`](crate::agent::delegate::MAX_POLLS) times).

pub mod card;
pub mod client;
pub mod registry;

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::hmac;

use crate::sealing::PushKey;
use client::Client;
use registry::Registry;

/// Where the remote's webhook calls, under the harness's public URL:
/// `/remote/callback/<task id>/<link number>`.
pub const CALLBACK_PATH: &str = "/remote/callback";

/// The remote agents of this harness and how to reach them.
pub struct Remotes {
    pub registry: Registry,
    pub client: Client,
    key: hmac::Key,
    public_url: String,
}

impl std::fmt::Debug for Remotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remotes")
            .field("registry", &self.registry)
            .finish()
    }
}

impl Remotes {
    /// `registry`'s agents, called with `client`; callbacks under `public_url`, their
    /// tokens signed with a key derived from the push key.
    pub fn new(registry: Registry, client: Client, key: &PushKey, public_url: &str) -> Self {
        Remotes {
            registry,
            client,
            key: hmac::Key::new(
                hmac::HMAC_SHA256,
                &key.derive(b"tiny-harness remote callbacks v1"),
            ),
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    /// The harness's remote agents from its configuration, if it names a registry.
    pub fn from_config(config: &crate::config::Config) -> Result<Option<Arc<Self>>, String> {
        let Some(path) = &config.remote_agents else {
            return Ok(None);
        };
        let key = config.push_key.as_ref().ok_or(
            "remote agents need the push key (HARNESS_PUSH_KEY), which signs their callbacks",
        )?;
        if config.public_url.is_empty() {
            return Err(
                "remote agents need the harness's public URL for their callbacks \
                 (HARNESS_PUBLIC_URL)"
                    .into(),
            );
        }
        let client = Client::new(config.targets(), config.push_timeout, &config.agent_id)?;
        let registry = Registry::load(path)?;
        Ok(Some(Arc::new(Remotes::new(
            registry,
            client,
            key,
            &config.public_url,
        ))))
    }

    /// The callback URL of link `n` of task `task_id`, and its token.
    pub fn callback(&self, task_id: &str, n: usize) -> (String, String) {
        let url = format!(
            "{}{CALLBACK_PATH}/{}/{n}",
            self.public_url,
            percent_encoding::utf8_percent_encode(task_id, percent_encoding::NON_ALPHANUMERIC)
        );
        (url, self.token(task_id, n))
    }

    fn token(&self, task_id: &str, n: usize) -> String {
        URL_SAFE_NO_PAD.encode(hmac::sign(&self.key, format!("{task_id}\n{n}").as_bytes()))
    }

    /// Whether `token` is the callback token of link `n` of `task_id` (in constant time).
    pub fn verify(&self, task_id: &str, n: usize, token: &str) -> bool {
        URL_SAFE_NO_PAD.decode(token).is_ok_and(|tag| {
            hmac::verify(&self.key, format!("{task_id}\n{n}").as_bytes(), &tag).is_ok()
        })
    }

    /// The system prompt's lines on the agents the model may delegate to.
    pub fn describe(&self) -> String {
        self.registry
            .agents()
            .map(|a| match &a.description {
                Some(d) => format!("- {} (remote agent): {d}", a.id),
                None => format!("- {} (remote agent)", a.id),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remotes() -> Remotes {
        let client = Client::new(
            crate::https::target::Targets::new(false, Vec::new()),
            std::time::Duration::from_secs(1),
            "tiny-harness",
        )
        .unwrap();
        Remotes::new(
            Registry::default(),
            client,
            &PushKey::generate(),
            "https://a.example/",
        )
    }

    #[test]
    fn a_callback_token_is_its_links_alone() {
        let r = remotes();
        let (url, token) = r.callback("t 1", 2);
        assert_eq!(url, "https://a.example/remote/callback/t%201/2");
        assert!(r.verify("t 1", 2, &token));
        assert!(!r.verify("t 1", 3, &token));
        assert!(!r.verify("t 2", 2, &token));
        assert!(!r.verify("t 1", 2, "not-a-token"));
        assert!(!remotes().verify("t 1", 2, &token), "another key");
    }
}
