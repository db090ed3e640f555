//! The DynamoDB store: one table (PAY_PER_REQUEST), every write conditional.
//!
//! Items (`pk`, `sk`):
//! - task head: `TASK#<id>`, `TASK`, with `version`, `last_seq`, the head as JSON (see
//!   [`super::layout`]: bounded, no lists), `listed` = 1 (its listing items are written;
//!   a head without it predates them and is listed by its next commit or
//!   [`DynamoStore::backfill_listing`]), and the sweep index keys
//!   `gsi2pk` = `LEASED` (`gsi2sk` = the lease's expiry) while a drive holds it, or
//!   `WOKEN` (`gsi2sk` = when it was written) while it waits on a wake-up, and `wake` = 1
//!   then too (what the resume function's event source mapping passes);
//! - task part: `TASK#<id>`, `HIST#`/`TURN#`/`ART#<index, 10 digits>` or `STATUS#…`, one
//!   history message, conversation turn, artifact or long status message;
//! - listing item: `TASK#<id>`, `MEMBER#<participant>`, one per participant, with the
//!   listing index (`gsi1`) keys `gsi1pk` = `MEMBER#<tenant>#<participant>`, `gsi1sk` =
//!   `<status ms, 15 digits>#<id>`, and `context_id` and `state` for ListTasks' filters;
//!   written with the head whenever the status or the roster changes;
//! - event: `TASK#<id>`, `EV#<seq, 20 digits>`;
//! - push config: `TASK#<id>`, `PUSH#<config id>`, and the task's count of them,
//!   `TASK#<id>`, `COUNT#PUSH` (`configs`), changed in the same transaction as a config
//!   is created or deleted, so the limit holds under concurrent creates;
//! - message: `IN#<tenant>#<sender>#<messageId>`, `MSG`, naming its task (each part
//!   escaped by [`key_part`](super::keys::key_part), so no two triples share a key; the
//!   prefix is new with the sender, so no key of the old `MSG#<tenant>#<messageId>` items
//!   can pass for one);
//! - audit: `AUDIT#<task id>`, `<ms>#<uuid>`, expiring through the `expires_at` TTL; a
//!   refusal's row is written only after its participant's hourly count
//!   `QUOTA#<participant>`, `<hour>` took it (an update of its own, so writers do not
//!   conflict on it in transactions; it expires an hour after its hour); another hourly
//!   count ([`Quota`](super::Quota)) is `QUOTA#<participant>`, `<quota>#<hour>`;
//! - agent ids the harness has used: `AGENT_IDS`, `<id>`.
//!
//! A payload (part or event) longer than [`CHUNK_BYTES`] continues in items right after
//! its own (`<sk>~<n, 3 digits>`), written in the same transaction: no item is over 64 KB,
//! whatever a message or a tool result holds, and a payload is never half written.
//!
//! Audit rows, and the events of a task once it is finished, carry `expires_at`: they are
//! kept for the retention period (`HARNESS_AUDIT_RETENTION_DAYS`, 30 days by default).
//!
//! A commit is one transaction: the head put conditional on the version and last seq it
//! read, the parts that changed (new history messages and turns conditional on absence),
//! each event put conditional on absence, and the message put conditional on absence:
//! its write units follow what changed, not the size of the task. ListTasks is a Query on
//! the caller's own partition of `gsi1`, never a Scan, so its cost follows the caller's
//! tasks, not the tenant's. The SDK retries throttling and 5xx with backoff before an
//! error reaches the caller.
//!
//! This module holds the type and its [`Store`] impl, which hands each call to the module
//! of its concept, so each of them can be read (and changed) alone.

mod audit;
mod chunks;
mod commit;
mod errors;
mod expiry;
mod items;
mod listing;
mod messages;
mod push;
mod reads;
mod schema;
pub mod stream;

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use tokio::sync::broadcast;
use tracing::Instrument;

use super::layout::Want;
use super::{
    Admit, Along, AuditRecord, Due, InboundMessage, LoggedEvent, PushConfigRecord, Quota, Store,
    StoreError, TaskPage, TaskQuery, TaskRecord, DEFAULT_RETENTION,
};
use crate::a2a::StreamResponse;

pub use chunks::CHUNK_BYTES;
pub use schema::{INDEX, SWEEP_INDEX, TTL_ATTRIBUTE};

pub struct DynamoStore {
    client: Client,
    table: String,
    /// How long audit rows, a finished task's events and a message's dedupe record live.
    retention: Duration,
    /// How long a finished task lives (all its items); None: kept until deleted.
    task_retention: Option<Duration>,
    /// A participant whose tasks are not listed: the harness's own agent, a member of
    /// nearly every task, which no client may speak as (so none lists its tasks). Its
    /// items would cost one more write a transition, all on one index key a tenant.
    unlisted: Option<String>,
    /// How large a task may grow (kept by each commit's split).
    bounds: crate::config::TaskBounds,
    signals: super::Signals,
}

impl DynamoStore {
    /// A store on `table` with the client's configuration (region, credentials and the
    /// `AWS_ENDPOINT_URL_DYNAMODB` override come from the standard AWS chain).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
            retention: DEFAULT_RETENTION,
            task_retention: None,
            unlisted: None,
            bounds: Default::default(),
            signals: Default::default(),
        }
    }

    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Finished tasks expire this long after they end (through the TTL attribute, every
    /// item of theirs); None keeps them.
    pub fn with_task_retention(mut self, retention: Option<Duration>) -> Self {
        self.task_retention = retention;
        self
    }

    /// Leaves `participant`'s tasks out of the listing index (the harness's own id).
    pub fn with_unlisted(mut self, participant: impl Into<String>) -> Self {
        self.unlisted = Some(participant.into());
        self
    }

    /// How large a task may grow ([`TaskBounds::default`](crate::config::TaskBounds)
    /// unless set).
    pub fn with_bounds(mut self, bounds: crate::config::TaskBounds) -> Self {
        self.bounds = bounds;
        self
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let span = super::write_span("aws.dynamodb", "create", record, events.len());
        self.create(record, events, message).instrument(span).await
    }

    async fn commit_along(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
        along: Along<'_>,
    ) -> Result<TaskRecord, StoreError> {
        let span = super::write_span("aws.dynamodb", "commit", record, events.len());
        (self.commit_at(record, expected_version, events, message, along))
            .instrument(span)
            .await
    }

    async fn put_message(&self, message: &InboundMessage) -> Result<(), StoreError> {
        self.put_dedupe(message).await
    }

    async fn message_task(
        &self,
        tenant: &str,
        sender: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        self.dedupe_task(tenant, sender, message_id).await
    }

    async fn load_task_for(
        &self,
        task_id: &str,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.load(task_id, Want::WHOLE, admit).await
    }

    async fn load_view(
        &self,
        task_id: &str,
        history: Option<usize>,
        artifacts: bool,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.load(task_id, Want::view(history, artifacts), admit)
            .await
    }

    async fn read_events(
        &self,
        task_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.events_after(task_id, after, limit).await
    }

    async fn list_tasks(&self, q: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.listing_page(q).await
    }

    async fn put_push_config(&self, record: &PushConfigRecord) -> Result<(), StoreError> {
        self.put_push(record).await
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Option<PushConfigRecord>, StoreError> {
        self.get_push(task_id, id).await
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PushConfigRecord>, StoreError> {
        self.push_page(task_id, after, limit).await
    }

    async fn advance_push_config(
        &self,
        record: &PushConfigRecord,
        from: u64,
    ) -> Result<bool, StoreError> {
        self.advance_push(record, from).await
    }

    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), StoreError> {
        self.delete_push(task_id, id).await
    }

    async fn audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        self.append_audit(record).await
    }

    async fn due_tasks(
        &self,
        leases_before: i64,
        woken_before: i64,
        limit: usize,
    ) -> Result<Due, StoreError> {
        self.due(leases_before, woken_before, limit).await
    }

    async fn take_quota(
        &self,
        quota: Quota,
        participant: &str,
        hour: i64,
        limit: u64,
    ) -> Result<bool, StoreError> {
        self.count_quota(quota, participant, hour, limit).await
    }

    async fn record_agent_id(&self, id: &str) -> Result<(), StoreError> {
        self.put_agent_id(id).await
    }

    async fn agent_ids(&self) -> Result<Vec<String>, StoreError> {
        self.read_agent_ids().await
    }

    async fn audit_trail(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_rows(task_id).await
    }

    fn changes(&self) -> broadcast::Receiver<String> {
        self.signals.changes()
    }

    fn wakeups(&self) -> broadcast::Receiver<String> {
        self.signals.wakes()
    }

    fn pushes(&self) -> broadcast::Receiver<String> {
        self.signals.pushes()
    }

    fn timers(&self) -> broadcast::Receiver<i64> {
        self.signals.timers()
    }
}
