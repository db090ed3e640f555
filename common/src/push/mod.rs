//! Push notifications (spec §4.3.3): each status and artifact update in a task's event
//! log is POSTed to each of the task's webhooks as one StreamResponse, in order per
//! webhook, at least once, with `Authorization: <scheme> <credentials>` and
//! `X-A2A-Notification-Token` when the config sets them.
//!
//! Delivery follows the log, not the code that wrote it: every stored config carries a
//! cursor (the seq of the last event it was handed), and [`Notifier::deliver_pending`]
//! posts what lies after the cursor, moving it with a conditional write after each event.
//! So a crash, a lost trigger made good by a later one, or a trigger delivered twice
//! repeats at most the event in flight. What triggers it: locally the store's commit
//! signal ([`Notifier::watch`]), in AWS the table's stream ([`stream`], the notifier
//! function). An event the webhook still refuses after the retries is passed over and
//! recorded on the config (`failures`, `last_failure`).
//!
//! Secrets are sealed at rest ([`seal`]) and opened for delivery and for the participant
//! who created the config only ([`Notifier::open_for`]). Against SSRF, URLs and addresses
//! are checked ([`target`]) and the webhook client connects only to the addresses checked
//! ([`resolve`]).

pub mod seal;
pub mod stream;
pub mod webhook_url;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use reqwest::Url;

use crate::a2a::{A2aError, StreamResponse, TaskPushNotificationConfig};
use crate::https::guarded_client_with;
use crate::https::resolve::{Lookup, Refused, SystemLookup};
use crate::https::target::{self, Targets};
use crate::keyed_lock::KeyedLocks;
use crate::sealing::{PushKey, SealError};
use crate::store::{PushConfigRecord, Store, StoreError, MAX_CONFIGS_PER_TASK};

/// Tries per event before it is passed over.
pub const ATTEMPTS: u32 = 3;
/// Wait before the second try; doubled before each further one.
const BACKOFF: Duration = Duration::from_millis(200);
/// Log events read at a time.
const PAGE: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error("the invocation's time ran out before delivery caught up")]
    OutOfTime,
}

pub struct Notifier {
    /// Built at the first delivery: loading the trust roots takes milliseconds that a
    /// start-up (or a cold start) need not wait for.
    client: std::sync::OnceLock<reqwest::Client>,
    store: Arc<dyn Store>,
    key: PushKey,
    targets: Targets,
    lookup: Arc<dyn Lookup>,
    timeout: Duration,
    /// One delivery pass at a time per task in this process.
    delivering: KeyedLocks,
}

impl Notifier {
    pub fn new(store: Arc<dyn Store>, key: PushKey, timeout: Duration, targets: Targets) -> Self {
        Notifier {
            client: std::sync::OnceLock::new(),
            store,
            key,
            targets,
            lookup: Arc::new(SystemLookup),
            timeout,
            delivering: KeyedLocks::default(),
        }
    }

    /// Resolves webhook hosts through `lookup` instead of the system resolver (tests).
    pub fn with_lookup(mut self, lookup: Arc<dyn Lookup>) -> Self {
        self.lookup = lookup;
        self
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = guarded_client_with(self.targets.clone(), self.timeout, self.lookup.clone())?;
        Ok(self.client.get_or_init(|| client))
    }

    /// Where this notifier may call (see [`target`]).
    pub fn targets(&self) -> &Targets {
        &self.targets
    }

    /// Refuses a config this server will not call (see [`target`]).
    pub fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), A2aError> {
        webhook_url::check(&self.targets, config)
    }

    /// The record that stores `config`, created by `creator`, with its secrets sealed and
    /// its cursor at `delivered`.
    pub fn seal(
        &self,
        mut config: TaskPushNotificationConfig,
        creator: &str,
        delivered: u64,
    ) -> PushConfigRecord {
        let sealed = self.key.seal(&mut config);
        PushConfigRecord {
            config,
            creator: creator.to_owned(),
            sealed,
            delivered,
            ..Default::default()
        }
    }

    /// The config a record stores, secrets included.
    pub fn open(&self, record: &PushConfigRecord) -> Result<TaskPushNotificationConfig, SealError> {
        let mut config = record.config.clone();
        self.key.open(&mut config, &record.sealed)?;
        Ok(config)
    }

    /// The config a record stores as participant `who` may see it: with its secrets for
    /// the participant who created it, without them for anyone else (a row from before
    /// creators were kept, whose secrets may be in the clear, shows them to no one).
    pub fn open_for(
        &self,
        record: &PushConfigRecord,
        who: &str,
    ) -> Result<TaskPushNotificationConfig, SealError> {
        if crate::ext::permissions::is_webhook_creator(who, &record.creator) {
            return self.open(record);
        }
        let mut config = record.config.clone();
        config.token.clear();
        if let Some(auth) = config.authentication.as_mut() {
            auth.credentials.clear();
        }
        Ok(config)
    }

    /// Delivers what every webhook of the task has not been handed yet; stops early (with
    /// `OutOfTime`) when a worst-case delivery would pass `deadline`.
    pub async fn deliver_pending(
        &self,
        task_id: &str,
        deadline: Option<Instant>,
    ) -> Result<(), DeliveryError> {
        self.delivering
            .run(task_id, async {
                let configs = self
                    .store
                    .list_push_configs(task_id, None, MAX_CONFIGS_PER_TASK)
                    .await?;
                if configs.is_empty() {
                    return Ok(());
                }
                // Who is on the task now (its head alone): a config's creator who was
                // removed from it gets nothing more.
                let admit: &crate::store::Admit = &|_| true;
                let members = (self.store.load_view(task_id, Some(0), false, admit).await?)
                    .map(|rec| rec.members())
                    .unwrap_or_default();
                join_all(configs.into_iter().map(|c| {
                    // Rows from before creators were kept are no one's: as they were.
                    let member = c.creator.is_empty() || members.contains(&c.creator);
                    self.catch_up(c, deadline, member)
                }))
                .await
                .into_iter()
                .collect()
            })
            .await
    }

    /// Delivers pending events of every task the store signals, as long as the store
    /// lives: the local stand-in for the notifier function.
    pub async fn watch(self: Arc<Self>, mut pushes: tokio::sync::broadcast::Receiver<String>) {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match pushes.recv().await {
                Ok(task_id) => {
                    let me = self.clone();
                    tokio::spawn(async move { me.deliver_logged(&task_id).await });
                }
                // The tasks missed here are caught up by their next commit.
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "push signals dropped under load")
                }
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// [`Self::deliver_pending`] without a deadline, failures logged: for spawned passes.
    pub async fn deliver_logged(&self, task_id: &str) {
        if let Err(e) = self.deliver_pending(task_id, None).await {
            tracing::warn!(task_id, error = %e, "push delivery stopped; the next commit resumes it");
        }
    }

    /// The longest one event can take: every attempt timing out, plus the backoffs.
    fn worst_case(&self) -> Duration {
        self.timeout * ATTEMPTS + BACKOFF * (2u32.pow(ATTEMPTS - 1) - 1)
    }

    /// Delivers what `record`'s webhook has not been handed yet; for a creator who is no
    /// longer a `member` of the task, passes it over instead, so nothing of the time they
    /// were off the task reaches them should they be added again.
    async fn catch_up(
        &self,
        mut record: PushConfigRecord,
        deadline: Option<Instant>,
        member: bool,
    ) -> Result<(), DeliveryError> {
        let config = self.open(&record)?;
        let mut stored = record.delivered;
        loop {
            let events = self
                .store
                .read_events(&config.task_id, Some(record.delivered), PAGE)
                .await?;
            if events.is_empty() {
                self.save(&record, stored).await?;
                return Ok(());
            }
            for logged in events {
                let update = &logged.event;
                if update.task.is_some() || !member {
                    // A task snapshot is not an update, and a former member's webhook gets
                    // nothing: only the cursor moves.
                    record.delivered = logged.seq;
                    continue;
                }
                if deadline.is_some_and(|d| Instant::now() + self.worst_case() > d) {
                    self.save(&record, stored).await?;
                    return Err(DeliveryError::OutOfTime);
                }
                if let Err(why) = self.post(&config, update).await {
                    tracing::warn!(task_id = %config.task_id, config_id = %config.id, seq = logged.seq, %why, "webhook event passed over");
                    record.failures += 1;
                    record.last_failure = format!("event {}: {why}", logged.seq);
                }
                record.delivered = logged.seq;
                if !self.save(&record, stored).await? {
                    return Ok(()); // another pass moved it on, or the config was deleted
                }
                stored = record.delivered;
            }
        }
    }

    /// Moves the stored cursor from `from` to the record's; true if it was still there.
    async fn save(&self, record: &PushConfigRecord, from: u64) -> Result<bool, StoreError> {
        if record.delivered == from {
            return Ok(true);
        }
        self.store.advance_push_config(record, from).await
    }

    /// One event to one webhook, retried with backoff on failures worth retrying.
    async fn post(
        &self,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
    ) -> Result<(), String> {
        let url = Url::parse(&config.url).map_err(|e| format!("bad url: {e}"))?;
        let body = serde_json::to_vec(event).map_err(|e| e.to_string())?;
        let sent = self.send(&url, "application/a2a+json", body, |mut req| {
            if let Some(auth) = &config.authentication {
                let value = format!("{} {}", auth.scheme, auth.credentials);
                req = req.header(AUTHORIZATION, value.trim());
            }
            if !config.token.is_empty() {
                req = req.header("x-a2a-notification-token", &config.token);
            }
            req
        });
        sent.await.inspect_err(|why| {
            tracing::info!(task_id = %config.task_id, config_id = %config.id, %why, "webhook not reached");
        })
    }

    /// Posts `body` as JSON to `url`, a webhook that is not a push config (a participant's
    /// personal channel), through the same guard and retries.
    pub async fn post_json(&self, url: &Url, body: &serde_json::Value) -> Result<(), String> {
        let body = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        self.send(url, "application/json", body, |req| req).await
    }

    /// Posts `body` to `url`, `ATTEMPTS` times at most; no address the targets refuse is
    /// ever called. Errors never hold the URL, which may carry a secret.
    async fn send(
        &self,
        url: &Url,
        content_type: &str,
        body: Vec<u8>,
        decorate: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<(), String> {
        // A client span (no URL: it may carry a secret), each attempt carrying its
        // `traceparent`. A delivery outside a request (the notifier, a catch-up) is a
        // trace of its own.
        let span = tracing::debug_span!(
            "webhook",
            otel.name = "webhook POST",
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            http.request.method = "POST",
        );
        let sent = self.send_in(url, content_type, body, decorate);
        crate::traces::client_call(span, sent).await
    }

    async fn send_in(
        &self,
        url: &Url,
        content_type: &str,
        body: Vec<u8>,
        decorate: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<(), String> {
        // reqwest resolves names through the client's Resolver, never an address.
        if let Some(ip) = target::literal(url).filter(|&ip| !self.targets.permits(ip)) {
            return Err(Refused::Blocked(ip).to_string());
        }
        let client = self.client()?;
        let mut why = String::new();
        for attempt in 1..=ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(BACKOFF * 2u32.pow(attempt - 2)).await;
            }
            let req = client
                .post(url.clone())
                .header(CONTENT_TYPE, content_type)
                .body(body.clone());
            match crate::traces::inject(decorate(req)).send().await {
                Ok(resp) if resp.status().is_success() => return Ok(()),
                // The receiver refused it; sending the same again will not help.
                Ok(resp) if resp.status().is_client_error() && resp.status().as_u16() != 429 => {
                    return Err(format!("refused with HTTP {}", resp.status().as_u16()));
                }
                Ok(resp) => why = format!("HTTP {}", resp.status().as_u16()),
                Err(e) => match Refused::behind(&e) {
                    // A failed lookup may succeed on the next try; a refusal will not.
                    Some(r @ Refused::Unresolved(_)) => why = r.to_string(),
                    Some(r) => return Err(r.to_string()),
                    None if e.is_timeout() => why = "timed out".into(),
                    // Without the URL, which could carry a user:password.
                    None => why = format!("unreachable ({})", e.without_url()),
                },
            }
            tracing::info!(attempt, %why, "webhook attempt failed");
        }
        Err(format!("{why} after {ATTEMPTS} attempts"))
    }
}
