//! Push notifications: checking a webhook config before it is stored, and delivering a
//! task's events to its webhooks (spec §4.3.3): one POST per event with the
//! StreamResponse as body, in order, `Authorization` from the config's authentication and
//! `X-A2A-Notification-Token` from its token. Delivery failures are logged, never
//! surfaced to the task.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use reqwest::Url;

use crate::a2a::{A2aError, StreamResponse, TaskPushNotificationConfig};
use crate::keyed_lock::KeyedLocks;
use crate::store::Store;

/// Most configs one task may have.
pub const MAX_CONFIGS_PER_TASK: usize = 100;
const ATTEMPTS: u32 = 3;
const BACKOFF: Duration = Duration::from_millis(200);

pub struct Pusher {
    client: reqwest::Client,
    store: Arc<dyn Store>,
    allow_private: bool,
    /// One delivery at a time per task, so a cancel's event waits for the run's.
    delivering: KeyedLocks,
}

/// Loopback, private, link-local and other non-public addresses: not webhook targets
/// unless the deployment allows them.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

impl Pusher {
    pub fn new(
        store: Arc<dyn Store>,
        timeout: Duration,
        allow_private: bool,
    ) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the webhook client: {e}"))?;
        Ok(Pusher {
            client,
            store,
            allow_private,
            delivering: KeyedLocks::default(),
        })
    }

    /// A config is acceptable if its URL is http(s) and, unless private targets are
    /// allowed, does not name a loopback or private address. Names are resolved only at
    /// delivery, so creating a config never waits on DNS.
    pub fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), A2aError> {
        let bad = |why: &str| {
            A2aError::invalid_field("url", format!("webhook url {:?} {why}", config.url))
        };
        let url = Url::parse(&config.url).map_err(|e| bad(&format!("is not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("must be http or https"));
        }
        let host = url.host_str().ok_or_else(|| bad("has no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let private =
            host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(is_private);
        if private && !self.allow_private {
            return Err(bad(
                "names a loopback or private address, which this server does not call",
            ));
        }
        if let Some(auth) = &config.authentication {
            if auth.scheme.is_empty() {
                return Err(A2aError::invalid_field(
                    "authentication.scheme",
                    "authentication.scheme is required",
                ));
            }
        }
        Ok(())
    }

    /// Delivers `events` of a task to each of its webhooks: in order for one webhook,
    /// concurrently across webhooks.
    pub async fn deliver(&self, task_id: &str, events: &[StreamResponse]) {
        if events.is_empty() {
            return;
        }
        self.delivering
            .run(task_id, self.deliver_now(task_id, events))
            .await
    }

    async fn deliver_now(&self, task_id: &str, events: &[StreamResponse]) {
        let configs = match self
            .store
            .list_push_configs(task_id, None, MAX_CONFIGS_PER_TASK)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(task_id, error = %e, "cannot read push configs; events not delivered");
                return;
            }
        };
        join_all(configs.iter().map(|c| async move {
            for event in events {
                self.post(c, event).await;
            }
        }))
        .await;
    }

    async fn target_allowed(&self, url: &Url) -> bool {
        if self.allow_private {
            return true;
        }
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match tokio::net::lookup_host((host, port)).await {
            Ok(mut addrs) => addrs.all(|a| !is_private(a.ip())),
            Err(_) => true, // the request fails on its own and is logged
        }
    }

    async fn post(&self, config: &TaskPushNotificationConfig, event: &StreamResponse) {
        let Ok(url) = Url::parse(&config.url) else {
            return;
        };
        if !self.target_allowed(&url).await {
            tracing::warn!(url = %config.url, "webhook resolves to a private address; not called");
            return;
        }
        let body = match serde_json::to_vec(event) {
            Ok(b) => b,
            Err(_) => return,
        };
        for attempt in 1..=ATTEMPTS {
            let mut req = self
                .client
                .post(url.clone())
                .header(CONTENT_TYPE, "application/a2a+json")
                .body(body.clone());
            if let Some(auth) = &config.authentication {
                req = req.header(
                    AUTHORIZATION,
                    format!("{} {}", auth.scheme, auth.credentials)
                        .trim()
                        .to_owned(),
                );
            }
            if !config.token.is_empty() {
                req = req.header("x-a2a-notification-token", &config.token);
            }
            match req.send().await {
                Ok(resp) if resp.status().is_success() => return,
                // The receiver refused it; sending the same again will not help.
                Ok(resp) if resp.status().is_client_error() && resp.status().as_u16() != 429 => {
                    tracing::warn!(url = %config.url, status = %resp.status(), "webhook refused an event");
                    return;
                }
                Ok(resp) => {
                    tracing::info!(url = %config.url, status = %resp.status(), attempt, "webhook failed")
                }
                Err(e) => {
                    tracing::info!(url = %config.url, error = %e, attempt, "webhook unreachable")
                }
            }
            if attempt < ATTEMPTS {
                tokio::time::sleep(BACKOFF * 2u32.pow(attempt - 1)).await;
            }
        }
        tracing::warn!(url = %config.url, "webhook did not take an event after {ATTEMPTS} attempts");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_private_and_link_local_addresses_are_private() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "100.64.0.1",
            "0.0.0.0",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }
}
