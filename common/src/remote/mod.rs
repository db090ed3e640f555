//! Remote A2A agents as participants: the registry of agents the model may delegate to
//! ([`registry`]), their cards ([`card`]), the client that calls them ([`client`]), the
//! links a task keeps to the tasks it delegated (`task::Link`, driven by
//! `agent::delegate`) and the callback URLs their webhooks wake it through (served by
//! `server::remote_callback`).
//!
//! A delegation is a link committed before anything is sent (agent, a random message id,
//! an opaque callback reference, a deadline), then SendMessage to the remote with the
//! harness as sender, `returnImmediately`, and a push notification config whose URL is this
//! harness's callback for that link with a token of the link's own that runs out at its
//! deadline; then the link is completed with the remote task's id. Nothing the remote is
//! sent names the parent task: not the message id, not the callback URL, not the token.
//! A crash between the send and the completion is repaired on the next drive by sending
//! the same message again: the remote answers a repeated message id with the task it made
//! the first time, so no second task is created. The parent then waits with no drive and
//! nothing polling, under a timer set to the earliest deadline of its open links (the
//! sweep's index of timers, which the sweep rings); the callback wakes it sooner when the
//! remote task ends or asks for input. A remote without push notifications is polled
//! instead, under the same timer ([`FIRST_POLL`](crate::agent::delegate::FIRST_POLL),
//! doubling up to [`MAX_POLL_INTERVAL`](crate::agent::delegate::MAX_POLL_INTERVAL), at most
//! [`MAX_POLLS`](crate::agent::delegate::MAX_POLLS) times). A delegation past its deadline
//! is ended: the remote task is cancelled and the model told. A parent that ends cancels
//! its open remote tasks, and a callback for an ended link or parent is refused.

pub mod card;
pub mod client;
pub mod registry;

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::hmac;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Nonce};

use crate::sealing::PushKey;
use client::Client;
use registry::Registry;

/// Where the remote's webhook calls, under the harness's public URL:
/// `/remote/callback/<reference>`, the link's opaque reference (see [`Remotes::callback`]).
pub const CALLBACK_PATH: &str = "/remote/callback";
/// Longest callback reference taken from a request (a real one is about 100 characters).
pub const MAX_REFERENCE: usize = 512;
/// Marks the reference format, so a later one can be told apart.
const REFERENCE_VERSION: &str = "r1.";
const NONCE_LEN: usize = 12;

/// The remote agents of this harness and how to reach them.
pub struct Remotes {
    pub registry: Registry,
    pub client: Client,
    /// Signs callback tokens.
    key: hmac::Key,
    /// Seals the task and link a callback reference names.
    cipher: Aes256Gcm,
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
    /// references sealed and their tokens signed with keys derived from the push key.
    pub fn new(registry: Registry, client: Client, key: &PushKey, public_url: &str) -> Self {
        Remotes {
            registry,
            client,
            key: hmac::Key::new(
                hmac::HMAC_SHA256,
                &key.derive(b"tiny-harness remote callbacks v2"),
            ),
            cipher: Aes256Gcm::new(
                &key.derive(b"tiny-harness remote callback references v1")
                    .into(),
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

    /// A new callback reference for link `n` of task `task_id`: the two sealed together
    /// (AES-256-GCM, a random nonce), so the remote that calls it learns neither, and no
    /// two links (nor two tasks' first links) share one. Made once per link and kept.
    pub fn new_reference(&self, task_id: &str, n: usize) -> String {
        let nonce = Aes256Gcm::generate_nonce(OsRng);
        // Encrypting into a Vec fails only on allocation limits far above an id's size.
        let sealed = (self.cipher)
            .encrypt(&nonce, format!("{n}\n{task_id}").as_bytes())
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{REFERENCE_VERSION}{}", URL_SAFE_NO_PAD.encode(out))
    }

    /// The task and link number a callback reference names, if this harness made it.
    pub fn open_reference(&self, reference: &str) -> Option<(String, usize)> {
        if reference.len() > MAX_REFERENCE {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(reference.strip_prefix(REFERENCE_VERSION)?)
            .ok()
            .filter(|b| b.len() > NONCE_LEN)?;
        let (nonce, body) = bytes.split_at(NONCE_LEN);
        let plain = self.cipher.decrypt(Nonce::from_slice(nonce), body).ok()?;
        let (n, task_id) = std::str::from_utf8(&plain).ok()?.split_once('\n')?;
        Some((task_id.to_owned(), n.parse().ok().filter(|n| *n > 0)?))
    }

    /// The URL of the callback `reference` names, and its token, which runs out at
    /// `expires_ms` (ms since the epoch: the delegation's deadline).
    pub fn callback(&self, reference: &str, expires_ms: i64) -> (String, String) {
        let url = format!("{}{CALLBACK_PATH}/{reference}", self.public_url);
        let tag = hmac::sign(&self.key, signed(reference, expires_ms).as_bytes());
        (url, format!("{expires_ms}.{}", URL_SAFE_NO_PAD.encode(tag)))
    }

    /// Whether `token` is the token of the callback `reference` names and has not run out
    /// (the signature checked in constant time).
    pub fn verify(&self, reference: &str, token: &str) -> bool {
        self.check_token(reference, token) == TokenCheck::Good
    }

    /// What `token` is for the callback `reference` names: good, signed by this harness
    /// for it but run out, or not its token at all.
    pub fn check_token(&self, reference: &str, token: &str) -> TokenCheck {
        let Some((expires, tag)) = token.split_once('.') else {
            return TokenCheck::Forged;
        };
        let Ok(expires_ms) = expires.parse::<i64>() else {
            return TokenCheck::Forged;
        };
        let signed_ok = URL_SAFE_NO_PAD.decode(tag).is_ok_and(|tag| {
            hmac::verify(&self.key, signed(reference, expires_ms).as_bytes(), &tag).is_ok()
        });
        match (signed_ok, crate::task::lease::now_ms() < expires_ms) {
            (false, _) => TokenCheck::Forged,
            (true, true) => TokenCheck::Good,
            (true, false) => TokenCheck::Expired,
        }
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

/// What a callback token signs: the reference and when the token runs out.
/// What [`Remotes::check_token`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCheck {
    Good,
    /// This harness signed it for the reference, and its deadline passed.
    Expired,
    /// Not signed by this harness for the reference (or not a token).
    Forged,
}

fn signed(reference: &str, expires_ms: i64) -> String {
    format!("{reference}\n{expires_ms}")
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
    fn a_callback_names_neither_task_nor_link_and_its_token_is_its_own() {
        let r = remotes();
        let reference = r.new_reference("task-1", 2);
        assert!(!reference.contains("task-1"));
        assert_ne!(reference, r.new_reference("task-1", 2), "random per link");
        assert_eq!(r.open_reference(&reference), Some(("task-1".into(), 2)));
        assert_eq!(remotes().open_reference(&reference), None, "another key");
        assert_eq!(r.open_reference("r1.AAAA"), None);
        assert_eq!(r.open_reference(&"r1.A".repeat(200)), None);

        let later = crate::task::lease::now_ms() + 60_000;
        let (url, token) = r.callback(&reference, later);
        assert_eq!(
            url,
            format!("https://a.example/remote/callback/{reference}")
        );
        assert!(r.verify(&reference, &token));
        let other = r.new_reference("task-1", 3);
        assert!(!r.verify(&other, &token));
        assert!(!r.verify(&reference, "not-a-token"));
        assert!(!remotes().verify(&reference, &token), "another key");
        // The expiry is signed: one moved later does not verify.
        let (_, tag) = token.split_once('.').unwrap();
        assert!(!r.verify(&reference, &format!("{}.{tag}", later + 1)));
        // And one that ran out is refused.
        let (_, spent) = r.callback(&reference, crate::task::lease::now_ms() - 1);
        assert!(!r.verify(&reference, &spent));
        assert_eq!(r.check_token(&reference, &spent), TokenCheck::Expired);
        assert_eq!(r.check_token(&other, &spent), TokenCheck::Forged);
        assert_eq!(r.check_token(&reference, &token), TokenCheck::Good);
    }

    /// The format, pinned: what `tests/lambda_watch` makes in Python (AES-256-GCM and
    /// HMAC-SHA256 under keys derived from its push key) opens and verifies here.
    #[test]
    fn a_reference_and_token_made_elsewhere_with_the_key_open_here() {
        let key: PushKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
            .parse()
            .unwrap();
        let client = Client::new(
            crate::https::target::Targets::new(false, Vec::new()),
            std::time::Duration::from_secs(1),
            "tiny-harness",
        )
        .unwrap();
        let r = Remotes::new(Registry::default(), client, &key, "https://a.example");
        let reference = "r1.AAAAAAAAAAAAAAAA35bV9F6sbKCXUdX28Gift0AKqmY7lLHT";
        assert_eq!(r.open_reference(reference), Some(("task-x".into(), 1)));
        let token = "4102444800000.Q4sbkhLYkT_wGe-ftJqGGPDGjyVofnXNm9EXXf4mN9E";
        assert!(r.verify(reference, token));
    }
}
