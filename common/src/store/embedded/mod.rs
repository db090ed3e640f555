//! The embedded store: one SQLite database file in the state directory. SQLite gives what
//! the Store contract needs on one machine: transactions for "state and events together",
//! file locking so several processes (one per function under `cargo lambda watch`) can
//! share the directory, and a write-ahead log that survives kill -9.
//!
//! Writes go through one writer connection. While it has nothing to do, a caller commits
//! its write alone on its own thread; otherwise the write goes to the writer thread, which
//! gathers whatever commits are waiting into a single transaction (each in its own
//! savepoint when there are several, so one failed condition does not undo the others) and
//! acknowledges them together: group commit. A commit is acknowledged once it is in the
//! write-ahead log, or, with [`Durability::PowerLoss`] (always through the writer thread),
//! once the log is fsynced. Checkpoints (copying the log into the database, with their
//! fsyncs) run on a thread of their own, so a commit does not wait for one; only when the
//! log passes its bound does the writer thread start it over, between two transactions
//! (`restart_log`). Point reads
//! run on the calling thread, scans on the blocking pool, each on one of a small pool of
//! connections.
//!
//! This module holds the type, its opening, and its [`Store`] impl, which hands each call
//! to the module of its concept, so each of them can be read (and changed) alone.

mod audit;
mod commit;
mod connection;
mod listing;
mod messages;
mod push;
mod reads;
mod rows;
mod schema;
mod wal;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::broadcast;
use tracing::Instrument;

use super::layout::Want;
use super::view_cache::ViewCache;
use super::{
    Admit, Along, AuditRecord, Due, InboundMessage, LoggedEvent, PushConfigRecord, Quota, Store,
    StoreError, TaskPage, TaskQuery, TaskRecord,
};
use crate::a2a::StreamResponse;
use connection::{backend, open};
use reads::load;
use schema::{migrate, SCHEMA};
use wal::{checkpoint_loop, note_log_frames, Log};
use writer::{writer_loop, Job, Pace, Writer, Writes};

const DB_FILE: &str = "harness.sqlite3";
const READERS: usize = 4;

pub struct EmbeddedStore {
    writes: Writes,
    readers: Arc<Vec<Mutex<Connection>>>,
    next_reader: AtomicUsize,
    signals: super::Signals,
    /// Task views as GetTask reads them, kept until their task changes.
    views: Arc<ViewCache>,
    /// How long audit rows are kept.
    retention: Duration,
    /// A participant whose tasks are not listed (`task_members`): the harness's own agent,
    /// a member of nearly every task, which no client may speak as, so none lists its
    /// tasks. Its rows were half of a new task's listing writes.
    unlisted: Option<String>,
    /// How large a task may grow (kept by each commit's split).
    bounds: crate::config::TaskBounds,
}

/// When a commit is acknowledged (SQLite's `synchronous` setting in WAL mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// Once it is in the write-ahead log: it survives the process being killed at any
    /// point; a power loss or an OS crash may lose the last commits (never corrupting
    /// the store). No fsync on the request path (`synchronous=NORMAL`).
    #[default]
    Process,
    /// Once the write-ahead log is fsynced: it also survives a power loss
    /// (`synchronous=FULL`; concurrent commits share one fsync).
    PowerLoss,
}

/// The state directory and the database its owner's only: the directory 0700, the
/// database made 0600 before SQLite opens it (its `-wal` and `-shm` files take the
/// database's mode), and any of them found wider (made by an older build, or by hand)
/// tightened, with a warning.
fn private_state(dir: &Path, db: &Path) -> std::io::Result<()> {
    let mut tightened = crate::secret_file::private_dir(dir)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(db)?;
    for suffix in ["", "-wal", "-shm"] {
        let file = db.with_file_name(format!("{DB_FILE}{suffix}"));
        tightened |= crate::secret_file::private_file(&file)?;
    }
    if tightened {
        tracing::warn!(dir = %dir.display(), "state directory was readable by others: made its owner's only (0700, files 0600)");
    }
    Ok(())
}

impl EmbeddedStore {
    /// Opens (creating if needed) the store in `dir`, commits durable against the
    /// process being killed ([`Durability::Process`]).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with(dir, Durability::default())
    }

    /// Opens (creating if needed) the store in `dir`.
    pub fn open_with(dir: &Path, durability: Durability) -> Result<Self, StoreError> {
        let path = dir.join(DB_FILE);
        private_state(dir, &path).map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot make state directory {} its owner's only: {e}",
                dir.display()
            ))
        })?;
        let writer = open(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            durability,
        )?;
        // One transaction, so one fsync (not one per statement: a dozen fsyncs were most
        // of a fresh start-up), and a migration is all or nothing.
        writer.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
        let prepared = writer
            .execute_batch(SCHEMA)
            .map_err(backend)
            .and_then(|()| migrate(&writer));
        let end = if prepared.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        writer.execute_batch(end).map_err(backend)?;
        prepared?;
        // The checkpointer does it, off the commit path.
        writer
            .execute_batch("PRAGMA wal_autocheckpoint=0")
            .map_err(backend)?;
        // After the pragma, which sets the connection's WAL hook to nothing.
        writer.wal_hook(Some(note_log_frames));
        let (kick, kicks) = mpsc::sync_channel::<()>(1);
        // A new log's first commit writes its header.
        let log = Arc::new(Log {
            frames: AtomicI64::new(0),
            may_restart: AtomicBool::new(true),
        });
        let (file, seen) = (path.clone(), log.clone());
        std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || checkpoint_loop(&file, durability, kicks, &seen))
            .map_err(backend)?;
        let readers = (0..READERS)
            .map(|_| {
                open(
                    &path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    durability,
                )
                .map(Mutex::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (jobs, rx) = mpsc::channel::<Job>();
        let writes = Writes {
            writer: Arc::new(Mutex::new(Writer {
                conn: writer,
                since_checkpoint: 0,
            })),
            jobs,
            queued: Arc::default(),
            log,
            checkpoint: kick,
            inline: durability == Durability::Process,
            pace: Pace::new(),
        };
        let (writer, queued, log, kick) = (
            writes.writer.clone(),
            writes.queued.clone(),
            writes.log.clone(),
            writes.checkpoint.clone(),
        );
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer_loop(&writer, rx, &queued, &kick, &log))
            .map_err(backend)?;
        Ok(EmbeddedStore {
            writes,
            readers: Arc::new(readers),
            next_reader: AtomicUsize::new(0),
            signals: Default::default(),
            views: Arc::new(ViewCache::open(dir)?),
            retention: super::DEFAULT_RETENTION,
            unlisted: None,
            bounds: Default::default(),
        })
    }

    /// Keeps audit rows for `retention` (30 days by default).
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Leaves `participant`'s tasks out of the listing (the harness's own id).
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
impl Store for EmbeddedStore {
    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let span = super::write_span("sqlite", "create", record, events.len());
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
        let span = super::write_span("sqlite", "commit", record, events.len());
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
        let loaded = self.read_now(|conn| load(conn, task_id, Want::WHOLE, admit))?;
        Ok(loaded.map(|(rec, _)| rec))
    }

    async fn load_view(
        &self,
        task_id: &str,
        history: Option<usize>,
        artifacts: bool,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.view(task_id, history, artifacts, admit).await
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
