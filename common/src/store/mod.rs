//! The Store: where tasks, their event logs, inbound messages, push configs and the audit
//! trail live. One trait at the level of the domain, with the conditional semantics every
//! implementation must give (the same DynamoDB gives): a task changes only at the version
//! that was read, a state change and its events are written together, events take the
//! next gap-free sequence numbers, and a message is stored only if its id is new.

mod bounds;
pub mod conversation;
pub mod dynamodb;
#[cfg(feature = "embedded-store")]
mod embedded;
mod keys;
pub mod layout;
mod read_only;
#[cfg(feature = "embedded-store")]
mod view_cache;

pub use bounds::{Bound, PageBytes, Size, ENDING_ALLOWANCE};
pub use dynamodb::DynamoStore;
#[cfg(feature = "embedded-store")]
pub use embedded::{Durability, EmbeddedStore};
pub use read_only::ReadOnly;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::a2a::{Message, StreamResponse, Task, TaskPushNotificationConfig, TaskState, Timestamp};

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Most push notification configs one task may have.
pub const MAX_CONFIGS_PER_TASK: usize = 100;

/// Everything the harness keeps about a task. Its `Serialize` is the head a store keeps
/// (see [`layout`]): the lists are parts of their own.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskRecord {
    /// The tenant (REST path prefix / request `tenant`) the task belongs to.
    pub tenant: String,
    /// The A2A task: status, artifacts, full history (or, in a view, what was asked for).
    /// Serialized as the store's head keeps it: without history and artifacts.
    #[serde(serialize_with = "layout::task_head")]
    pub task: Task,
    /// Bumped by every commit; a commit names the version it read.
    pub version: u64,
    /// Sequence number of the last event in the task's log (the creation event is 0).
    pub last_seq: u64,
    /// Whether push configs were ever created for the task, so tasks without any cost
    /// no lookup per event.
    pub push: bool,
    /// What the LLM agent has committed for the task: its conversation and model calls.
    pub agent: conversation::AgentState,
    /// Who drives the task now, until when; None while no one does.
    pub lease: Option<crate::task::lease::Lease>,
    /// The task has work to do and no one drives it: the write that sets this is the
    /// wake-up (the table's stream in AWS, the store's signal locally).
    pub wake: bool,
    /// The task ended and has parents not yet woken for it: set in the write that ends it,
    /// so the wake-up they are owed cannot be lost (the sweep pays it if no one else does).
    pub parents_owed: bool,
    /// How many times the sweep has handed the task to a new drive since a drive last
    /// made progress (a checkpoint): past [`crate::engine::MAX_HANDOVERS`] it fails
    /// instead, so a task no drive can run (or a store that keeps refusing it) costs a
    /// bounded number of attempts.
    #[serde(skip_serializing_if = "is_zero")]
    pub handovers: u32,
    /// The participant the task waits on while INPUT_REQUIRED: the one a help request
    /// asks, a participant's task's assignee. Kept in the head, by the server, so what a
    /// status message says later (a command's reply, say) cannot change it, and a
    /// listing can check it without reading the task's parts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_on: Option<String>,
    /// What the store holds of this record (see [`layout`]); set by the store.
    #[serde(skip)]
    pub stored: layout::Stored,
}

impl TaskRecord {
    pub fn id(&self) -> &str {
        &self.task.id
    }

    pub fn state(&self) -> TaskState {
        self.task.state()
    }

    /// When the lease of a drive in progress runs out (ms), or the timer a task waits
    /// under (a remote's next poll, a question's deadline); None when neither holds the
    /// task, or it has ended. One of the sweep index's keys.
    pub fn lease_expiry(&self) -> Option<i64> {
        let ended = self.state().is_terminal();
        (self.lease.as_ref()).filter(|_| !ended).map(|l| l.until_ms)
    }

    /// The timer a task with no drive waits under, when what it waits on has a deadline:
    /// the question it asks, or the answer its assignee owes (a task for a participant).
    /// What a write that leaves it waiting with no drive keeps in the lease's place, so
    /// the deadline's reminder and expiry are not lost.
    pub fn wait_timer(&self) -> Option<crate::task::lease::Lease> {
        self.wait_deadline().map(|d| d.timer())
    }

    /// The deadline of what the task waits on, if it waits (INPUT_REQUIRED) on something
    /// that has one: the question it asks, or the answer its assignee owes.
    pub fn wait_deadline(&self) -> Option<crate::task::Deadline> {
        if self.state() != TaskState::InputRequired {
            return None;
        }
        match &self.agent.pending_help {
            Some(help) => help.deadline,
            None => self.agent.reply_by,
        }
    }

    /// Whether the write that stores the record is a wake-up: the task is runnable with no
    /// drive, or ended owing its parents theirs. The sweep's index keeps such a task by
    /// when it was written, so a wake-up that started no drive is rung again.
    pub fn woken(&self) -> bool {
        let ended = self.state().is_terminal();
        if ended {
            self.parents_owed
        } else {
            self.wake && self.lease.is_none()
        }
    }

    /// The task extension's data (participants, links), if the task has it.
    pub fn ext(&self) -> Option<crate::ext::task::TaskExtension> {
        crate::ext::task::TaskExtension::of(&self.task)
    }

    /// The ids of the task's participants, which ListTasks filters on.
    pub fn members(&self) -> Vec<String> {
        crate::ext::task::participant_ids(&self.task)
    }

    /// The member this task waits on ([`Self::waits_on`]), while it is INPUT_REQUIRED
    /// and they are still one of its members.
    pub fn waiting_on(&self) -> Option<String> {
        let waits_on = self
            .waits_on
            .as_ref()
            .filter(|_| self.state() == TaskState::InputRequired)?;
        self.members().into_iter().find(|m| m == waits_on)
    }

    /// The record as created with `events` (seq 0 onwards): version 1.
    pub fn created(&self, events: usize) -> TaskRecord {
        TaskRecord {
            version: 1,
            last_seq: events.saturating_sub(1) as u64,
            ..self.clone()
        }
    }

    /// The record as a commit of `events` at `expected_version` stores it, and the seq of
    /// its first event (right after the last one this record has).
    pub fn committed(&self, expected_version: u64, events: usize) -> (TaskRecord, u64) {
        let first_seq = self.last_seq + 1;
        let rec = TaskRecord {
            version: expected_version + 1,
            last_seq: self.last_seq + events as u64,
            ..self.clone()
        };
        (rec, first_seq)
    }

    /// The status timestamp ListTasks orders by, in milliseconds.
    pub fn status_millis(&self) -> i64 {
        self.task
            .status
            .as_ref()
            .and_then(|s| s.timestamp)
            .map(|t| t.millis())
            .unwrap_or(0)
    }
}

/// What the sweep's index gives: task ids, by why they are due.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Due {
    /// Leased tasks whose lease ran out.
    pub leased: Vec<String>,
    /// Tasks waiting on a wake-up rung long enough ago.
    pub woken: Vec<String>,
}

/// One entry of a task's event log.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedEvent {
    pub seq: u64,
    pub event: StreamResponse,
}

/// A task's webhook as stored: the config with its secrets taken out and sealed (see
/// [`crate::push::seal`]), who created it, and how far delivery got.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PushConfigRecord {
    pub config: TaskPushNotificationConfig,
    /// The participant who created the config: only they see its secrets or replace it.
    /// "" (rows written before creators were kept) is no one's.
    pub creator: String,
    /// The config's token and credentials, sealed ("" when it has none).
    pub sealed: String,
    /// Seq of the last event of the task's log this webhook was handed (or passed over).
    pub delivered: u64,
    /// Events given up on after every attempt failed.
    pub failures: u64,
    /// Why the last of those failed.
    pub last_failure: String,
}

impl PushConfigRecord {
    /// A record from its stored JSON. Rows written before records existed hold the bare
    /// config (secrets in the clear): they read as unsealed with the stored cursor.
    pub fn from_stored(json: &str, delivered: u64) -> Result<Self, StoreError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut record = if value.get("config").is_some() {
            serde_json::from_value(value)
        } else {
            serde_json::from_value(value).map(|config| PushConfigRecord {
                config,
                ..Default::default()
            })
        }
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        record.delivered = delivered;
        Ok(record)
    }
}

/// An inbound message, stored in its task's history before it is acknowledged, with a
/// dedupe record by `(tenant, sender, messageId)` that names the task (no second copy of
/// the message). The sender is part of the key: a messageId is the sender's own, so
/// someone else's message with the same id neither finds the first (and its task) nor is
/// swallowed by it.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundMessage {
    pub tenant: String,
    /// The participant the message is from, as intake decided it.
    pub sender: String,
    pub message: Message,
}

/// What a ListTasks query asks for; the cursor comes from a previous page.
#[derive(Debug, Clone, Default)]
pub struct TaskQuery {
    pub tenant: String,
    /// Only tasks this participant is a member of.
    pub participant: String,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    pub status_after: Option<Timestamp>,
    /// Only tasks waiting on the participant ([`TaskRecord::waiting_on`]), read through an
    /// index of those alone.
    pub waiting: bool,
    pub page_size: usize,
    pub cursor: Option<Cursor>,
    /// Each task's last this many messages (all when None), within the bytes
    /// [`Store::load_view`] reads.
    pub history: Option<usize>,
    pub artifacts: bool,
}

/// Position after the last task of a page: newest status first, ties by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub status_millis: i64,
    pub task_id: String,
}

#[derive(Debug, Clone, Default)]
pub struct TaskPage {
    pub tasks: Vec<TaskRecord>,
    pub next: Option<Cursor>,
    pub total: u64,
}

/// How long audit rows are kept unless configured otherwise (`HARNESS_AUDIT_RETENTION_DAYS`).
pub const DEFAULT_RETENTION: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Refusals kept in the audit trail per participant (whatever the tenant) per clock hour,
/// and, where the participant is self-asserted (`none` mode), per address the requests
/// came from too, so refusals cannot fill the store however many ids one client names;
/// past it, the hour's further refusals are logged, not stored. Accepted decisions
/// (commands) are always stored.
pub const AUDIT_ROWS_PER_PARTICIPANT_HOUR: u64 = 100;

/// An hourly count a store keeps per participant, shared by every process on the store
/// and surviving restarts: each use is a conditional update that fails past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// Refusals kept in the audit trail ([`AUDIT_ROWS_PER_PARTICIPANT_HOUR`]).
    AuditRows,
    /// Refusals kept in the audit trail from one address ([`AuditRecord::peer`]), counted
    /// under the address in place of a participant.
    AuditRowsFromPeer,
    /// Tasks a participant assigned to someone else with `/task` and no task
    /// (`HARNESS_TASKS_FOR_OTHERS_PER_HOUR`), each posted to its assignee's channels.
    TasksForOthers,
    /// Posts to personal channels made on a participant's word
    /// (`HARNESS_POSTS_PER_SENDER_PER_HOUR`).
    PostsBySender,
    /// Posts to a participant's personal channels, whoever's word they are made on
    /// (`HARNESS_POSTS_PER_RECIPIENT_PER_HOUR`).
    PostsToRecipient,
}

impl Quota {
    /// The quota's name in a store's keys (the audit's is the empty one it always had).
    pub fn name(self) -> &'static str {
        match self {
            Quota::AuditRows => "",
            Quota::AuditRowsFromPeer => "audit-from-peer",
            Quota::TasksForOthers => "tasks-for-others",
            Quota::PostsBySender => "posts-by-sender",
            Quota::PostsToRecipient => "posts-to-recipient",
        }
    }
}

/// The clock hour `ms` (milliseconds since the epoch) falls in: what [`Quota`]s count in.
pub fn hour_of(ms: i64) -> i64 {
    ms.div_euclid(3_600_000)
}

/// One refused intake (or other decision worth keeping), for audit. An accepted message
/// is its own record: the stored message names its sender and when it arrived.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditRecord {
    pub at: Option<Timestamp>,
    pub tenant: String,
    pub operation: String,
    pub task_id: String,
    pub message_id: String,
    /// The participant the message or request asserted (empty: none).
    pub participant: String,
    pub accepted: bool,
    /// Why it was refused.
    pub detail: String,
    /// Where the request came from when its participant is self-asserted (`none` mode):
    /// its address (an IPv6 one's /64; `loopback` for any loopback one), whose hourly quota
    /// a refusal counts against too.
    /// Empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub peer: String,
}

impl AuditRecord {
    /// The record, made now, of what `operation` decided about `message` from `sender`.
    pub fn of_message(
        tenant: &str,
        operation: &str,
        message: &crate::a2a::Message,
        sender: &str,
        accepted: bool,
        detail: String,
    ) -> Self {
        AuditRecord {
            at: Some(Timestamp::now()),
            tenant: tenant.into(),
            operation: operation.into(),
            task_id: message.task_id.clone(),
            message_id: message.message_id.clone(),
            participant: sender.into(),
            accepted,
            detail,
            peer: String::new(),
        }
    }

    /// When the record was made, in milliseconds.
    pub fn at_millis(&self) -> i64 {
        self.at
            .map(|t| t.millis())
            .unwrap_or_else(|| Timestamp::now().millis())
    }

    /// The clock hour the record counts against its participant's quota in.
    pub fn quota_hour(&self) -> i64 {
        hour_of(self.at_millis())
    }

    /// The hourly quotas the record counts against, each with its key: none for an
    /// accepted decision; a refusal's peer's (first: a flood of rotated ids stops there
    /// before it counts against any of them), then its participant's.
    pub fn quotas(&self) -> Vec<(Quota, &str)> {
        if self.accepted {
            return Vec::new();
        }
        let peer =
            (!self.peer.is_empty()).then_some((Quota::AuditRowsFromPeer, self.peer.as_str()));
        peer.into_iter()
            .chain([(Quota::AuditRows, self.participant.as_str())])
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// The task changed since it was read (or, on create, already exists).
    #[error("task {task_id} changed concurrently (expected version {expected})")]
    Conflict { task_id: String, expected: u64 },
    /// The sender stored this message id before; it went to `task_id` (empty for a direct
    /// reply).
    #[error("message {message_id} was already received")]
    DuplicateMessage { message_id: String, task_id: String },
    /// The task a write depends on does not exist.
    #[error("task {0} does not exist")]
    NoTask(String),
    /// The task as written would be larger than the store holds in one item (DynamoDB:
    /// 400 KB). Permanent: the same write never succeeds on a retry.
    #[error("task {0} would be larger than the store holds")]
    TooLarge(String),
    /// The write would grow the task past one of its bounds
    /// ([`TaskBounds`](crate::config::TaskBounds)). Permanent: it never fits on a retry.
    #[error("task {task_id} would pass its bound of {bound}")]
    TaskFull { task_id: String, bound: Bound },
    /// A push config with this id exists and another participant created it.
    #[error("push notification config {id} of task {task_id} was created by someone else")]
    PushConfigTaken { task_id: String, id: String },
    /// A new push config past [`MAX_CONFIGS_PER_TASK`].
    #[error("task {0} has as many push notification configs as a task may")]
    TooManyPushConfigs(String),
    /// Names the request joins into one of the store's keys are longer than DynamoDB's
    /// keys hold (2048 bytes a partition key, 1024 a sort key), which every store refuses
    /// alike (`store::keys`); says which.
    #[error("{0}: too long for the store's keys")]
    KeyTooLong(&'static str),
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A write (or a read no read-only operation makes) through [`ReadOnly`].
    #[error("this function's store is read-only")]
    ReadOnly,
}

/// What a commit writes besides its task, in the same transaction ([`Store::commit_along`]):
/// what a change of one task makes that must not outlive, or come without, that change.
#[derive(Debug, Clone, Copy, Default)]
pub struct Along<'a> {
    /// A task it creates (the sub-task a `/task` command makes), with its first events, as
    /// [`Store::create_task`] stores one: refused with `Conflict` naming it (`expected` 0)
    /// if its id exists.
    pub created: Option<(&'a TaskRecord, &'a [StreamResponse])>,
    /// A webhook it attaches (a message's `taskPushNotificationConfig`), as
    /// [`Store::put_push_config`] stores one, refused as that refuses.
    pub push: Option<&'a PushConfigRecord>,
}

/// The span of one write of a task in traces: its creation or a commit (`operation`) in
/// the store `system` names (the conventions' `db.system.name`), with the task and how
/// many events it appends; nothing of what is written.
pub(crate) fn write_span(
    system: &'static str,
    operation: &'static str,
    record: &TaskRecord,
    events: usize,
) -> tracing::Span {
    tracing::debug_span!(
        "store",
        otel.name = format!("{operation} {system}").as_str(),
        otel.kind = "client",
        db.system.name = system,
        db.operation.name = operation,
        task_id = record.id(),
        events = i64::try_from(events).unwrap_or(i64::MAX),
    )
}

/// A check of a task's head (without its parts) before anything more is read.
pub type Admit<'a> = dyn Fn(&TaskRecord) -> bool + Send + Sync + 'a;

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates a task with its first events, and stores the message that started it.
    /// Fails with `Conflict` if the id exists, `DuplicateMessage` if the message does.
    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError>;

    /// Replaces a task at `expected_version`, appending `events` after its last one and
    /// storing `message` if given; all or nothing. Returns the record as stored.
    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let along = Along::default();
        (self.commit_along(record, expected_version, events, message, along)).await
    }

    /// [`Store::commit`], and in the same transaction what `along` holds: a task it
    /// creates, a webhook it attaches. All of it or none: a refusal of any part (the
    /// task changed, the new task's id is taken, the webhook is past its task's limit)
    /// writes nothing.
    async fn commit_along(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
        along: Along<'_>,
    ) -> Result<TaskRecord, StoreError>;

    /// Stores a message that created no task (a direct reply), if its id is new.
    async fn put_message(&self, message: &InboundMessage) -> Result<(), StoreError>;

    /// The task a message `sender` stored went to: `Some("")` for a direct reply, `None`
    /// if unseen.
    async fn message_task(
        &self,
        tenant: &str,
        sender: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError>;

    /// The whole task: a record that can be committed.
    async fn load_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.load_task_for(task_id, &|_| true).await
    }

    /// [`Store::load_task`] for a caller: nothing past the head unless `admit` passes it,
    /// so a task that is not theirs costs what a missing one does.
    async fn load_task_for(
        &self,
        task_id: &str,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// What a reader asks of the task: its last `history` messages (all when None) but no
    /// more of the newest than hold [`RESPONSE_BYTES`](crate::config::RESPONSE_BYTES)
    /// together, its artifacts if `artifacts`, never the agent's conversation. Reads only
    /// those parts (the history newest first, no further than that), and none unless
    /// `admit` passes the head (the caller's visibility check, so a stranger's request
    /// costs one read). A view cannot be committed.
    async fn load_view(
        &self,
        task_id: &str,
        history: Option<usize>,
        artifacts: bool,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// Events with `seq > after`, in order, at most `limit`.
    async fn read_events(
        &self,
        task_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError>;

    /// A page of the query's tasks, each read as [`Store::load_view`] reads it; the page
    /// ends early, before a task that would take it past
    /// [`RESPONSE_BYTES`](crate::config::RESPONSE_BYTES) of stored JSON ([`PageBytes`]),
    /// and its cursor goes on from there.
    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError>;

    /// Creates the config `(record.config.task_id, record.config.id)`, or replaces it if
    /// the stored one has the same non-empty `creator` (`PushConfigTaken` if not), if the
    /// task exists (`NoTask` if not) and, for a new one, has fewer than
    /// [`MAX_CONFIGS_PER_TASK`] (`TooManyPushConfigs` if not). The checks and
    /// the write are one atomic step.
    async fn put_push_config(&self, record: &PushConfigRecord) -> Result<(), StoreError>;

    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Option<PushConfigRecord>, StoreError>;

    /// Configs of a task ordered by id, starting after `after`.
    async fn list_push_configs(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PushConfigRecord>, StoreError>;

    /// Stores `record` (its new cursor and failures) if the stored cursor is still
    /// `from`; false if another delivery moved it or the config is gone.
    async fn advance_push_config(
        &self,
        record: &PushConfigRecord,
        from: u64,
    ) -> Result<bool, StoreError>;

    /// Deletes a config; deleting one that does not exist is not an error.
    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), StoreError>;

    /// Stores `record` for the retention period, unless it is a refusal and its participant
    /// already has [`AUDIT_ROWS_PER_PARTICIPANT_HOUR`] in its hour; whether it was stored.
    async fn audit(&self, record: &AuditRecord) -> Result<bool, StoreError>;

    /// Counts one use of `quota` by `participant` in clock hour `hour` ([`hour_of`]),
    /// unless they already used `limit` in it; whether it was counted.
    async fn take_quota(
        &self,
        quota: Quota,
        participant: &str,
        hour: i64,
        limit: u64,
    ) -> Result<bool, StoreError>;

    /// Records `id` as an agent id the harness has used: a write conditional on its
    /// absence, so recording it again changes nothing. An id once recorded stays reserved
    /// after the harness takes another (`--agent-id`).
    async fn record_agent_id(&self, id: &str) -> Result<(), StoreError>;

    /// Every agent id recorded with [`Store::record_agent_id`].
    async fn agent_ids(&self) -> Result<Vec<String>, StoreError>;

    /// The audit records kept under a task id (the id as the request named it, whether or
    /// not such a task exists), oldest first.
    async fn audit_trail(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError>;

    /// A signal for every committed change: the id of the task that changed. Writers in
    /// other processes are not signalled; readers also re-check on a timer.
    fn changes(&self) -> tokio::sync::broadcast::Receiver<String>;

    /// A signal for every commit in this process that left a task waiting to be woken
    /// (`wake` set, no lease): the local stand-in for the table's stream.
    fn wakeups(&self) -> tokio::sync::broadcast::Receiver<String>;

    /// A signal for every commit in this process to a task with webhooks: what delivers
    /// them locally (the table's stream feeds the notifier function in AWS).
    fn pushes(&self) -> tokio::sync::broadcast::Receiver<String>;

    /// A signal for every commit in this process that set a task's timer
    /// (`Lease::poll`): when it runs out, in ms since the epoch. What lets `harness-local`'s
    /// sweep wake at the soonest timer instead of polling (the scheduled sweeper needs
    /// none). None by default: the sweep's own period.
    fn timers(&self) -> tokio::sync::broadcast::Receiver<i64> {
        tokio::sync::broadcast::channel(1).1
    }

    /// What the sweep looks at, through an index of only such tasks: tasks whose lease ran
    /// out before `leases_before` (their drive was cut off), oldest expiry first, and
    /// tasks last written as a wake-up ([`TaskRecord::woken`]) before `woken_before`,
    /// oldest first; at most `limit` of each.
    async fn due_tasks(
        &self,
        leases_before: i64,
        woken_before: i64,
        limit: usize,
    ) -> Result<Due, StoreError>;
}

/// The in-process signals a store gives after each commit.
#[derive(Debug, Clone)]
pub struct Signals {
    changes: tokio::sync::broadcast::Sender<String>,
    wakes: tokio::sync::broadcast::Sender<String>,
    pushes: tokio::sync::broadcast::Sender<String>,
    timers: tokio::sync::broadcast::Sender<i64>,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            changes: tokio::sync::broadcast::channel(1024).0,
            wakes: tokio::sync::broadcast::channel(1024).0,
            pushes: tokio::sync::broadcast::channel(1024).0,
            timers: tokio::sync::broadcast::channel(1024).0,
        }
    }
}

/// The state a commit's events end the task in, if they end it.
pub fn ended_by(events: &[StreamResponse]) -> Option<TaskState> {
    events
        .iter()
        .filter(|e| e.status_update.is_some())
        .filter_map(|e| e.state())
        .find(|s| s.is_terminal())
}

/// Counts a conflict on its way to the caller (who may retry).
pub fn counting_conflicts<T>(result: Result<T, StoreError>) -> Result<T, StoreError> {
    if let Err(StoreError::Conflict { .. }) = &result {
        crate::metrics::record(crate::metrics::Event::StoreConflict);
    }
    result
}

impl Signals {
    /// Announces a new task (counted) and its first commit.
    pub fn created(&self, rec: &TaskRecord, ended: Option<TaskState>) {
        crate::metrics::record(crate::metrics::Event::TaskCreated);
        self.committed(rec, ended);
    }

    /// Announces a committed record; a commit that ended the task is counted by state.
    pub fn committed(&self, rec: &TaskRecord, ended: Option<TaskState>) {
        use crate::metrics::Event;
        let ended = match ended {
            Some(TaskState::Completed) => Some(Event::TaskCompleted),
            Some(TaskState::Failed) => Some(Event::TaskFailed),
            Some(TaskState::Canceled) => Some(Event::TaskCanceled),
            Some(TaskState::Rejected) => Some(Event::TaskRejected),
            _ => None,
        };
        if let Some(event) = ended {
            crate::metrics::record(event);
        }
        let _ = self.changes.send(rec.task.id.clone());
        if rec.woken() {
            let _ = self.wakes.send(rec.task.id.clone());
        }
        if rec.push {
            let _ = self.pushes.send(rec.task.id.clone());
        }
        if let Some(timer) = (rec.lease.as_ref()).filter(|l| l.is_timer()) {
            let _ = self.timers.send(timer.until_ms);
        }
    }

    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.changes.subscribe()
    }

    pub fn wakes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.wakes.subscribe()
    }

    pub fn pushes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.pushes.subscribe()
    }

    pub fn timers(&self) -> tokio::sync::broadcast::Receiver<i64> {
        self.timers.subscribe()
    }
}
