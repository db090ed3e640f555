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

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use tokio::sync::{broadcast, oneshot};

use super::keys;
use super::layout::{self, Listing, PartKind, Split, Want};
use super::view_cache::{Changed, Lookup, ViewCache};
use super::{
    counting_conflicts, ended_by, Admit, AuditRecord, Cursor, Due, InboundMessage, LoggedEvent,
    PushConfigRecord, Store, StoreError, TaskPage, TaskQuery, TaskRecord,
};
use crate::a2a::{StreamResponse, Timestamp};

const DB_FILE: &str = "harness.sqlite3";
const READERS: usize = 4;
/// How long a connection waits on another process's hold of the database.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Most commits gathered into one transaction.
const MAX_BATCH: usize = 256;
/// Commits between two checkpoints of the write-ahead log into the database (~320 pages at
/// a send's 10). Often enough that little is left to copy when the writer starts the log
/// over, which holds every commit meanwhile: at 128, on ext4, sends' p99 was 5 ms at
/// concurrency 1 and 7 ms at 32; at 32 it is 2.5 ms and 4.5-6.5 ms, with 5-10% more sends
/// a second. More often (8, or every commit) costs more fsyncs than it saves. At 64, with
/// a send at ~10 pages: sends even, p99 at 32 4.9-5.4 ms against 4.2-4.9.
const CHECKPOINT_EVERY: usize = 32;
/// Frames (pages) in the write-ahead log past which the writer empties it: the log's bound,
/// about 16 MB at SQLite's 4 KB pages.
const WAL_RESTART_FRAMES: i64 = 4096;
/// The log file's size past which it is cut back when it starts over: the bound, with its
/// frame headers (24 bytes each) and the file's own (32 bytes).
const LOG_LIMIT_BYTES: i64 = WAL_RESTART_FRAMES * (4096 + 24) + 32;

/// The `kind` of a task's events among its rows of `task_parts` (past [`PartKind`]'s
/// codes): a new task's rows then share the leaf pages of one B-tree.
const EVENT_KIND: i64 = 8;
const _: () = {
    let mut i = 0;
    while i < PartKind::ALL.len() {
        assert!(PartKind::ALL[i].code() != EVENT_KIND);
        i += 1;
    }
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    context_id TEXT NOT NULL,
    state INTEGER NOT NULL,
    status_ms INTEGER NOT NULL,
    version INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    record TEXT NOT NULL,
    members TEXT NOT NULL DEFAULT '',
    lease_until INTEGER,
    woken_ms INTEGER
);
CREATE TABLE IF NOT EXISTS task_parts (
    task_id TEXT NOT NULL,
    kind INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (task_id, kind, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inbound (
    tenant TEXT NOT NULL,
    sender TEXT NOT NULL,
    message_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    received_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, sender, message_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS push_configs (
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    config TEXT NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms INTEGER NOT NULL,
    record TEXT NOT NULL,
    task_id TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS audit_quota (
    participant TEXT NOT NULL,
    hour INTEGER NOT NULL,
    rows_used INTEGER NOT NULL,
    PRIMARY KEY (participant, hour)
) WITHOUT ROWID;
";

/// Columns added after the first release: (table, column, definition). A store written by
/// an older build gets them when it is opened.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("tasks", "members", "TEXT NOT NULL DEFAULT ''"),
    ("audit", "task_id", "TEXT NOT NULL DEFAULT ''"),
    ("tasks", "lease_until", "INTEGER"),
    ("push_configs", "delivered", "INTEGER NOT NULL DEFAULT 0"),
    ("tasks", "woken_ms", "INTEGER"),
];

/// Whether the database has table `name` (one an older build may have left, or not made).
fn has_table(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        params![name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(backend)
}

/// Whether `table` has `column`.
fn has_column(conn: &Connection, table: &str, column: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
        params![table, column],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(backend)
}

fn migrate(conn: &Connection) -> Result<(), StoreError> {
    for (table, column, definition) in ADDED_COLUMNS {
        if !has_column(conn, table, column)? {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))
            .map_err(backend)?;
            if *column == "woken_ms" {
                // Rows left waiting on a wake-up before the sweep could find them: due now.
                conn.execute(
                    "UPDATE tasks SET woken_ms = 0 WHERE lease_until IS NULL
                     AND state IN (?1, ?2) AND json_extract(record, '$.wake')",
                    params![
                        crate::a2a::TaskState::Submitted.number(),
                        crate::a2a::TaskState::Working.number()
                    ],
                )
                .map_err(backend)?;
            }
        }
    }
    // The listing table, filled from the tasks' `members` column when it is new.
    if !has_table(conn, "task_members")? {
        conn.execute_batch(
            "CREATE TABLE task_members (
                 tenant TEXT NOT NULL,
                 participant TEXT NOT NULL,
                 status_ms INTEGER NOT NULL,
                 task_id TEXT NOT NULL,
                 context_id TEXT NOT NULL,
                 state INTEGER NOT NULL,
                 waiting INTEGER NOT NULL DEFAULT 0,
                 PRIMARY KEY (tenant, participant, status_ms, task_id)
             ) WITHOUT ROWID;",
        )
        .map_err(backend)?;
        let mut stmt = conn
            .prepare("SELECT id, tenant, context_id, state, status_ms, members FROM tasks")
            .map_err(backend)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i32>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(backend)?;
        for row in rows {
            let (id, tenant, context_id, state, status_ms, members) = row.map_err(backend)?;
            let listing = Listing {
                members: column_members(&members).map(str::to_owned).collect(),
                status_ms,
                state,
                waiting: None,
            };
            list_members(conn, &id, &tenant, &context_id, &listing)?;
        }
    }
    // "Waiting on me" (a listing row of the member a task waits on), added after the
    // table: no task written before it names an addressee, so nothing waits yet.
    if !has_column(conn, "task_members", "waiting")? {
        conn.execute_batch(
            "ALTER TABLE task_members ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0",
        )
        .map_err(backend)?;
    }
    // Only the rows that wait: a query for them reads nothing else.
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS task_members_waiting
             ON task_members (tenant, participant, status_ms, task_id) WHERE waiting = 1",
    )
    .map_err(backend)?;
    // Messages were keyed by (tenant, messageId) before they were the sender's own: the
    // rows move to `inbound` under the sender their metadata names.
    if has_table(conn, "messages")? {
        conn.execute_batch(
            "INSERT OR IGNORE INTO inbound (tenant, sender, message_id, task_id, received_ms)
             SELECT tenant, COALESCE(json_extract(message, '$.metadata.participant_id'), ''),
                    message_id, task_id, received_ms FROM messages;
             DROP TABLE messages;",
        )
        .map_err(backend)?;
    }
    // A dedupe row kept a copy of its message, which nothing read (the task's history
    // holds it): a new task wrote its message twice.
    if has_column(conn, "inbound", "message")? {
        conn.execute_batch("ALTER TABLE inbound DROP COLUMN message")
            .map_err(backend)?;
    }
    // A task's events were a table of their own: they move among its parts.
    if has_table(conn, "events")? {
        conn.execute(
            "INSERT OR IGNORE INTO task_parts (task_id, kind, idx, json)
             SELECT task_id, ?1, seq, event FROM events",
            params![EVENT_KIND],
        )
        .map_err(backend)?;
        conn.execute_batch("DROP TABLE events").map_err(backend)?;
    }
    // Listing reads `task_members`; this index of every task by time was only written,
    // on every status change, and in descending order, so each insert split the B-tree's
    // first page.
    conn.execute_batch("DROP INDEX IF EXISTS tasks_by_status")
        .map_err(backend)?;
    // Listing rows are deleted by their whole key (`unlist`): this index of them by task
    // cost every new task ~1.4 of its ~16 pages a commit.
    conn.execute_batch("DROP INDEX IF EXISTS task_members_by_task")
        .map_err(backend)?;
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS audit_by_task ON audit (task_id, seq);
         CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at_ms);
         CREATE INDEX IF NOT EXISTS tasks_by_lease ON tasks (lease_until)
             WHERE lease_until IS NOT NULL;
         CREATE INDEX IF NOT EXISTS tasks_by_wake ON tasks (woken_ms)
             WHERE woken_ms IS NOT NULL;",
    )
    .map_err(backend)
}

/// The participant ids a task's listing rows are keyed by, as one column of its row
/// (`unlist` reads it): `\n<id>\n<id>\n` (ids hold no control characters).
fn members_column(ids: &[String]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    format!("\n{}\n", ids.join("\n"))
}

/// The participant ids of a [`members_column`].
fn column_members(column: &str) -> impl Iterator<Item = &str> {
    column.split('\n').filter(|m| !m.is_empty())
}

type Completion = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
/// Runs its work on the connection it is given (None: the transaction could not start, so
/// the work is skipped), in a savepoint if it shares the transaction (`shared`), and
/// returns whether it succeeded and what acknowledges it once the outcome is known.
type Job = Box<dyn FnOnce(Option<&Connection>, bool) -> (bool, Completion) + Send>;

/// The writer's connection and the commits since the last checkpoint: held by the writer
/// thread while it commits a batch, or by a caller committing its own write while the
/// writer has nothing to do.
struct Writer {
    conn: Connection,
    since_checkpoint: usize,
}

/// The write-ahead log as the writers see it.
struct Log {
    /// Its length in frames after the last commit (SQLite's WAL hook, [`note_log_frames`]).
    frames: AtomicI64,
    /// Whether the next commit may start it over (after a checkpoint, or the writer
    /// thread's `restart_log`): that commit writes the log's header and fsyncs it, so it
    /// is the writer thread's, not a caller's.
    may_restart: AtomicBool,
}

impl Log {
    /// Whether a caller may commit on its own thread as far as the log goes.
    fn steady(&self) -> bool {
        !self.may_restart.load(Ordering::Acquire)
            && self.frames.load(Ordering::Relaxed) < WAL_RESTART_FRAMES
    }
}

/// How writes reach the writer's connection.
struct Writes {
    writer: Arc<Mutex<Writer>>,
    jobs: mpsc::Sender<Job>,
    /// Jobs sent to the writer thread that it has not taken yet.
    queued: Arc<AtomicUsize>,
    log: Arc<Log>,
    checkpoint: mpsc::SyncSender<()>,
    /// Whether a caller may commit on its own thread: not when a commit waits on an fsync.
    inline: bool,
    /// Writes under way, and when the last one ended ([`Writing`]).
    pace: Pace,
}

/// How busy the store's writes are.
struct Pace {
    /// Writes between their hand-over and their outcome.
    under_way: AtomicUsize,
    /// When the last write ended, in microseconds since `epoch`.
    last_end: AtomicU64,
    epoch: std::time::Instant,
}

/// Closer together than this, writes go to the writer thread even one at a time: its
/// batches share their pages, and the runtime's threads go on serving meanwhile.
const BUSY_GAP_MICROS: u64 = 100;

impl Pace {
    fn new() -> Pace {
        Pace {
            under_way: AtomicUsize::new(0),
            last_end: AtomicU64::new(0),
            epoch: std::time::Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }
}

/// One write under way, counted in [`Pace`] until it is dropped.
struct Writing<'w>(&'w Pace);

impl<'w> Writing<'w> {
    /// The write, and whether it comes alone: no other under way, none just ended.
    fn start(pace: &'w Pace) -> (Writing<'w>, bool) {
        let others = pace.under_way.fetch_add(1, Ordering::AcqRel);
        let quiet = pace
            .now()
            .saturating_sub(pace.last_end.load(Ordering::Relaxed));
        (Writing(pace), others == 0 && quiet > BUSY_GAP_MICROS)
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.last_end.store(self.0.now(), Ordering::Relaxed);
        self.0.under_way.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Writes {
    /// Commits `job` on this thread if it is the only write (`alone`) and the writer has
    /// nothing to do, else sends it to the writer thread.
    fn hand_over(&self, job: Job, alone: bool) -> Result<(), StoreError> {
        let idle =
            self.inline && alone && self.queued.load(Ordering::Acquire) == 0 && self.log.steady();
        let writer = match idle.then(|| self.writer.try_lock()) {
            Some(Ok(writer)) => Some(writer),
            // A write panicked on its caller's thread: `commit` rolled it back.
            Some(Err(std::sync::TryLockError::Poisoned(p))) => Some(p.into_inner()),
            _ => None,
        };
        match writer {
            // Checked again with the lock held: a checkpoint may have ended meanwhile. Not
            // waiting on another process's transaction: that is the writer thread's.
            Some(mut writer) if self.log.steady() && begin(&writer.conn, false).is_ok() => {
                commit(&mut writer, vec![job], &self.checkpoint, &self.log)
            }
            _ => {
                self.queued.fetch_add(1, Ordering::AcqRel);
                if self.jobs.send(job).is_err() {
                    self.queued.fetch_sub(1, Ordering::AcqRel);
                    return Err(backend("the store writer has stopped"));
                }
            }
        }
        Ok(())
    }
}

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
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
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

/// Turns off SQLite's memory statistics, once, before the process's first connection:
/// SQLite keeps them by default behind one process-wide mutex taken on every allocation
/// and free, which the writer's and the readers' threads contend on; nothing reads them.
fn without_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int. Every connection of the harness
        // opens through `open`, after this; a call made once SQLite is initialized (by
        // a connection opened elsewhere) changes nothing and returns SQLITE_MISUSE.
        unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
                0 as std::ffi::c_int,
            );
        }
    });
}

fn open(path: &Path, flags: OpenFlags, durability: Durability) -> Result<Connection, StoreError> {
    without_memory_statistics();
    let conn = Connection::open_with_flags(path, flags).map_err(backend)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    // Room for every statement the store runs, so none is parsed twice.
    conn.set_prepared_statement_cache_capacity(64);
    let synchronous = match durability {
        Durability::Process => "NORMAL",
        Durability::PowerLoss => "FULL",
    };
    // temp_store: savepoint journals in memory. A group commit's savepoints spilled theirs
    // to a temporary file, opened and written every transaction (13% of a send's CPU at
    // c=32); each holds the pages of one job and is emptied when the job's savepoint ends.
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous={synchronous}; PRAGMA foreign_keys=OFF;
         PRAGMA temp_store=MEMORY; PRAGMA journal_size_limit={LOG_LIMIT_BYTES};"
    ))
    .map_err(backend)?;
    Ok(conn)
}

impl EmbeddedStore {
    /// Opens (creating if needed) the store in `dir`, commits durable against the
    /// process being killed ([`Durability::Process`]).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with(dir, Durability::default())
    }

    /// Opens (creating if needed) the store in `dir`.
    pub fn open_with(dir: &Path, durability: Durability) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot create state directory {}: {e}",
                dir.display()
            ))
        })?;
        let path = dir.join(DB_FILE);
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

    /// Runs `f` inside the next group transaction; resolves once that transaction is
    /// committed (durable as the store's [`Durability`] says). When no other write is under
    /// way, the caller commits `f` alone on its own thread, as a point read runs: the
    /// hand-off to the writer thread and back was two thread wake-ups a write, most of a
    /// lone commit's wait. Not when a commit waits on an fsync, nor when the log is due to
    /// start over (the writer thread does that, between two of its batches), nor while
    /// other writes are under way or one has just ended ([`BUSY_GAP_MICROS`]): the writer
    /// thread's batches share their pages (at 32 concurrent sends, each committing alone
    /// gave 16% fewer sends a second).
    async fn write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.write_then(f, None).await
    }

    /// [`EmbeddedStore::write`] that drops `changed` (telling the view cache) once the
    /// transaction's outcome is known, before the write is acknowledged, on the thread that
    /// committed it: even if the caller has gone (a client that hung up), or the job never
    /// ran.
    async fn write_then<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
        changed: Option<Changed>,
    ) -> Result<R, StoreError> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn: Option<&Connection>, shared: bool| {
            let outcome = match conn {
                Some(conn) if shared => in_savepoint(conn, f),
                // Alone in its transaction, which is rolled back if it fails: no savepoint
                // (whose sub-journal copies every page the job changes).
                Some(conn) => f(conn),
                None => Err(backend("the write was not attempted")),
            };
            let ok = outcome.is_ok();
            let done: Completion = Box::new(move |committed: Result<(), StoreError>| {
                drop(changed);
                let _ = tx.send(committed.and(outcome));
            });
            (ok, done)
        });
        let (_writing, alone) = Writing::start(&self.writes.pace);
        self.writes.hand_over(job, alone)?;
        rx.await
            .map_err(|_| backend("the store writer has stopped"))?
    }

    /// A read small enough to run on the calling thread (a point lookup or a short page
    /// from the page cache takes microseconds, less than the two thread hops of the
    /// blocking pool), on the first idle reader connection.
    fn read_now<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let n = self.readers.len();
        let first = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for k in 0..n {
            if let Ok(conn) = self.readers[(first + k) % n].try_lock() {
                return f(&conn);
            }
        }
        let conn = self.readers[first % n]
            .lock()
            .map_err(|_| backend("a reader panicked"))?;
        f(&conn)
    }

    /// A read that may scan: on the blocking pool.
    async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let readers = self.readers.clone();
        let i = self.next_reader.fetch_add(1, Ordering::Relaxed) % readers.len();
        tokio::task::spawn_blocking(move || {
            let conn = readers[i]
                .lock()
                .map_err(|_| backend("a reader panicked"))?;
            f(&conn)
        })
        .await
        .map_err(backend)?
    }
}

fn in_savepoint<R>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    run(conn, "SAVEPOINT job")?;
    let out = f(conn);
    if out.is_err() {
        run(conn, "ROLLBACK TO job")?;
    }
    run(conn, "RELEASE job")?;
    out
}

/// Runs one statement, prepared once per connection: every commit runs these.
fn run(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute([]))
        .map(drop)
        .map_err(backend)
}

/// Commits what callers hand over, in batches, and starts the log over past its bound.
fn writer_loop(
    writer: &Mutex<Writer>,
    rx: mpsc::Receiver<Job>,
    queued: &AtomicUsize,
    checkpoint: &mpsc::SyncSender<()>,
    log: &Log,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut writer = writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        queued.fetch_sub(batch.len(), Ordering::AcqRel);
        match begin(&writer.conn, true) {
            Ok(()) => {
                // A job that panics fails its batch (each caller's answer is dropped, so it
                // errs), not the writer thread.
                let committed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    commit(&mut writer, batch, checkpoint, log)
                }));
                if committed.is_ok() {
                    log.may_restart.store(false, Ordering::Release);
                }
            }
            Err(err) => {
                for job in batch {
                    job(None, false).1(Err(err.clone()));
                }
            }
        }
        if log.frames.load(Ordering::Relaxed) >= WAL_RESTART_FRAMES {
            restart_log(&writer.conn);
            log.frames.store(0, Ordering::Relaxed);
            log.may_restart.store(true, Ordering::Release);
        }
    }
}

/// Ends a transaction left open when it is dropped (an error, a panic): an open read would
/// hold the log from being emptied, an open write the database from every other writer.
struct Close<'c>(&'c Connection);

impl Drop for Close<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = run(self.0, "ROLLBACK");
        }
    }
}

/// Starts the writer's transaction, waiting out another process's (up to the busy timeout)
/// if `wait`.
fn begin(conn: &Connection, wait: bool) -> Result<(), StoreError> {
    if wait {
        return run(conn, "BEGIN IMMEDIATE");
    }
    conn.busy_timeout(Duration::ZERO).map_err(backend)?;
    let begun = run(conn, "BEGIN IMMEDIATE");
    // Restored whatever BEGIN did (setting a timeout cannot fail on an open connection).
    let _ = conn.busy_timeout(BUSY_TIMEOUT);
    begun
}

/// Commits `batch` in the transaction [`begin`] started, each job in a savepoint of its
/// own when there are several, and acknowledges each.
fn commit(writer: &mut Writer, batch: Vec<Job>, checkpoint: &mpsc::SyncSender<()>, log: &Log) {
    let conn = &writer.conn;
    // Whatever ends this early (a failed COMMIT, a job that panics) leaves no transaction
    // holding the database from other processes.
    let _close = Close(conn);
    writer.since_checkpoint += batch.len();
    let shared = batch.len() > 1;
    let (oks, completions): (Vec<bool>, Vec<Completion>) =
        batch.into_iter().map(|job| job(Some(conn), shared)).unzip();
    // Unknown until a COMMIT that wrote frames calls the WAL hook.
    LOG_FRAMES.with(|f| f.set(-1));
    let committed = if shared || oks.iter().all(|ok| *ok) {
        run(conn, "COMMIT")
    } else {
        // The lone job failed (its outcome says why): undo whatever it did.
        run(conn, "ROLLBACK")
    };
    let frames = LOG_FRAMES.with(Cell::get);
    if committed.is_ok() && frames >= 0 {
        log.frames.store(frames, Ordering::Relaxed);
    }
    for done in completions {
        done(committed.clone());
    }
    if writer.since_checkpoint >= CHECKPOINT_EVERY {
        // Full: a checkpoint is already due, which covers these commits too.
        let _ = checkpoint.try_send(());
        writer.since_checkpoint = 0;
    }
}

/// Empties the write-ahead log. The log starts over only once a checkpoint has copied all
/// of it, which the checkpointer's PASSIVE ones never do while commits keep coming: under
/// steady load it grew without end (4.7 GB after 60,000 sends). A RESTART checkpoint
/// does, holding the write lock meanwhile; so the writer runs it, between two
/// transactions (run from another connection it waited seconds for a writer that never
/// lets go), and commits wait only while it copies what the checkpointer left and readers
/// (point reads, microseconds) move off the log. The next commits overwrite the file from
/// its start: a truncated log made the file system allocate and zero every page anew
/// (~10% of a send's CPU), and `journal_size_limit` cuts back a log a large transaction
/// grew past the bound.
fn restart_log(conn: &Connection) {
    let _ = conn.busy_handler(Some(wait_for_readers));
    let done = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
    // Restored (setting a timeout cannot fail on an open connection).
    let _ = conn.busy_timeout(BUSY_TIMEOUT);
    if let Err(e) = done {
        tracing::warn!(error = %e, "the embedded store's log was not emptied");
    }
}

/// The busy handler while the writer starts the log over: the readers it waits for leave
/// within microseconds, where SQLite's own handler sleeps 1 ms, then 2, then 5... with
/// every commit held meanwhile. Short naps for the first 10 ms, then 1 ms ones, up to the
/// busy timeout in all.
fn wait_for_readers(tries: i32) -> bool {
    const NAP: Duration = Duration::from_micros(20);
    const NAPS: i32 = 500;
    const LONG: Duration = Duration::from_millis(1);
    let long_naps = tries - NAPS;
    if long_naps >= (BUSY_TIMEOUT.as_millis() as i32) {
        return false;
    }
    std::thread::sleep(if long_naps < 0 { NAP } else { LONG });
    true
}

thread_local! {
    /// The log's length in frames after the last commit on this thread.
    static LOG_FRAMES: Cell<i64> = const { Cell::new(0) };
}

/// The writer connection's WAL hook: SQLite calls it in each COMMIT, on the committing
/// thread, with the log's length. The writer learns it at once, where the checkpointer's
/// count came up to 128 commits late (and a log of large commits passed twice its bound).
fn note_log_frames(_: &rusqlite::hooks::Wal, frames: std::ffi::c_int) -> rusqlite::Result<()> {
    LOG_FRAMES.with(|f| f.set(frames.into()));
    Ok(())
}

/// Copies the log into the database when the writer asks. PASSIVE: it never blocks the
/// writer nor readers, and a log that readers still need is copied by a later one.
/// Its connection is opened at the first checkpoint, off the start-up path.
fn checkpoint_loop(path: &Path, durability: Durability, kicks: mpsc::Receiver<()>, log: &Log) {
    let mut conn = None;
    while kicks.recv().is_ok() {
        if conn.is_none() {
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            conn = open(path, flags, durability)
                .map_err(|e| tracing::warn!(error = %e, "the checkpointer cannot open the store"))
                .ok();
        }
        let Some(conn) = &conn else { continue };
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            Ok(()) => log.may_restart.store(true, Ordering::Release),
            Err(e) => tracing::warn!(error = %e, "the embedded store's checkpoint failed"),
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(corrupt)
}

fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(corrupt)
}

fn now_ms() -> i64 {
    Timestamp::now().millis()
}

const MESSAGE_TASK: &str =
    "SELECT task_id FROM inbound WHERE tenant = ?1 AND sender = ?2 AND message_id = ?3";

/// A client's message as its dedupe row keys it: the task's history holds the message.
struct InboundRow {
    tenant: String,
    sender: String,
    message_id: String,
}

impl InboundRow {
    fn of(m: &InboundMessage) -> Result<InboundRow, StoreError> {
        keys::message_pk(&m.tenant, &m.sender, &m.message.message_id)?;
        Ok(InboundRow {
            tenant: m.tenant.clone(),
            sender: m.sender.clone(),
            message_id: m.message.message_id.clone(),
        })
    }
}

fn insert_message(conn: &Connection, m: &InboundRow, task_id: &str) -> Result<(), StoreError> {
    // The key's own condition: a second look only for a message seen before.
    let inserted = conn
        .prepare_cached(
            "INSERT INTO inbound (tenant, sender, message_id, task_id, received_ms)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![m.tenant, m.sender, m.message_id, task_id, now_ms()])
        })
        .map_err(backend)?;
    if inserted == 1 {
        return Ok(());
    }
    let task_id: String = conn
        .prepare_cached(MESSAGE_TASK)
        .and_then(|mut stmt| {
            stmt.query_row(params![m.tenant, m.sender, m.message_id], |r| r.get(0))
        })
        .map_err(backend)?;
    Err(StoreError::DuplicateMessage {
        message_id: m.message_id.clone(),
        task_id,
    })
}

/// Events as their rows keep them, printed on the caller's thread.
fn event_rows(events: &[StreamResponse]) -> Result<Vec<String>, StoreError> {
    events.iter().map(to_json).collect()
}

fn append_events(
    conn: &Connection,
    task_id: &str,
    first_seq: u64,
    events: &[String],
) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached("INSERT INTO task_parts (task_id, kind, idx, json) VALUES (?1, ?2, ?3, ?4)")
        .map_err(backend)?;
    for (i, e) in events.iter().enumerate() {
        stmt.execute(params![
            task_id,
            EVENT_KIND,
            (first_seq + i as u64) as i64,
            e
        ])
        .map_err(backend)?;
    }
    Ok(())
}

fn row_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, i64, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}

/// A record from its head row, with the parts `want` asks for read from `task_parts`, and
/// the bytes of JSON it was read from; None (and nothing more read) unless `admit` passes
/// the head.
fn decode_record(
    conn: &Connection,
    (json, version, last_seq): (String, i64, i64),
    want: Want,
    admit: &Admit<'_>,
) -> Result<Option<(TaskRecord, usize)>, StoreError> {
    let (mut rec, counts) = layout::decode_head(&json)?;
    rec.version = version as u64;
    rec.last_seq = last_seq as u64;
    if !admit(&rec) {
        return Ok(None);
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT idx, json FROM task_parts WHERE task_id = ?1 AND kind = ?2
             AND idx >= ?3 AND idx < ?4 ORDER BY idx",
        )
        .map_err(backend)?;
    let mut parts = Vec::new();
    for kind in PartKind::ALL {
        if !want.reads(kind, &counts) {
            continue;
        }
        let range = want.range(kind, &counts);
        let (from, to) = (range.start as i64, range.end as i64);
        let rows = stmt
            .query_map(params![rec.task.id, kind.code(), from, to], |r| {
                Ok((kind, r.get::<_, i64>(0)? as u64, r.get::<_, String>(1)?))
            })
            .map_err(backend)?;
        for row in rows {
            parts.push(row.map_err(backend)?);
        }
    }
    let bytes = json.len() + parts.iter().map(|p| p.2.len()).sum::<usize>();
    layout::attach(&mut rec, &counts, want, parts)?;
    Ok(Some((rec, bytes)))
}

/// The task `id` with what `want` asks for (and the bytes of JSON it was read from), read
/// in one transaction (one snapshot); no parts unless `admit` passes its head.
fn load(
    conn: &Connection,
    id: &str,
    want: Want,
    admit: &Admit<'_>,
) -> Result<Option<(TaskRecord, usize)>, StoreError> {
    in_snapshot(conn, |conn| {
        let head = conn
            .prepare_cached("SELECT record, version, last_seq FROM tasks WHERE id = ?1")
            .map_err(backend)?
            .query_row(params![id], row_record)
            .optional()
            .map_err(backend)?;
        match head {
            Some(head) => decode_record(conn, head, want, admit),
            None => Ok(None),
        }
    })
}

/// Runs `f`'s reads in one read transaction (one snapshot). Its BEGIN and COMMIT are
/// prepared once per connection: rusqlite's `Transaction` parses both on every read (and
/// ends a read with ROLLBACK, which costs more than COMMIT), a tenth of a GetTask's CPU.
fn in_snapshot<R>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    run(conn, "BEGIN")?;
    let _close = Close(conn);
    let out = f(conn)?;
    run(conn, "COMMIT")?;
    Ok(out)
}

/// A task's row in `tasks`: its head and the columns queries filter on.
struct HeadRow {
    id: String,
    tenant: String,
    context_id: String,
    state: i32,
    status_ms: i64,
    version: i64,
    last_seq: i64,
    members: String,
    lease_until: Option<i64>,
    /// When the row was written as a wake-up ([`TaskRecord::woken`]).
    woken_ms: Option<i64>,
    /// The task's rows in `task_members` when they change with this write.
    listing: Option<Listing>,
    split: Split,
}

impl HeadRow {
    /// The row of `rec`, whose listing leaves out `unlisted`.
    fn of(rec: &TaskRecord, unlisted: Option<&str>) -> Result<Self, StoreError> {
        let split = layout::split(rec)?;
        // The listing as this write stores it (computed once, by the split).
        let mut now = split
            .stored
            .listing
            .clone()
            .unwrap_or_else(|| Listing::of(rec));
        let changed = rec.stored.listing.as_ref() != Some(&now);
        now.members.retain(|m| Some(m.as_str()) != unlisted);
        Ok(HeadRow {
            id: rec.task.id.clone(),
            tenant: rec.tenant.clone(),
            context_id: rec.task.context_id.clone(),
            state: rec.state().number(),
            status_ms: rec.status_millis(),
            version: rec.version as i64,
            last_seq: rec.last_seq as i64,
            members: members_column(&now.members),
            lease_until: rec.lease_expiry(),
            woken_ms: rec.woken().then(crate::engine::lease::now_ms),
            listing: changed.then_some(now),
            split,
        })
    }

    /// Writes the row (inserted, or updated at the version before this one, whose listing
    /// was `previous`) and its changed parts; whether the row was written.
    fn write(&self, conn: &Connection, previous: Option<&Listed>) -> Result<bool, StoreError> {
        let insert = previous.is_none();
        let sql = if insert {
            "INSERT OR IGNORE INTO tasks (id, tenant, context_id, state, status_ms, version, last_seq, record, members, lease_until, woken_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        } else {
            "UPDATE tasks SET tenant = ?2, context_id = ?3, state = ?4, status_ms = ?5, version = ?6,
             last_seq = ?7, record = ?8, members = ?9, lease_until = ?10, woken_ms = ?11
             WHERE id = ?1 AND version = ?12"
        };
        let mut stmt = conn.prepare_cached(sql).map_err(backend)?;
        let expected = self.version - 1;
        let mut values: Vec<&dyn rusqlite::ToSql> = vec![
            &self.id,
            &self.tenant,
            &self.context_id,
            &self.state,
            &self.status_ms,
            &self.version,
            &self.last_seq,
            &self.split.head,
            &self.members,
            &self.lease_until,
            &self.woken_ms,
        ];
        if !insert {
            values.push(&expected);
        }
        if stmt.execute(values.as_slice()).map_err(backend)? == 0 {
            return Ok(false);
        }
        let mut stmt = conn
            .prepare_cached(
                "INSERT OR REPLACE INTO task_parts (task_id, kind, idx, json) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(backend)?;
        for p in &self.split.parts {
            stmt.execute(params![self.id, p.kind.code(), p.index as i64, p.json])
                .map_err(backend)?;
        }
        if let Some(listing) = &self.listing {
            // A new task has no rows to replace.
            if let Some(previous) = previous {
                unlist(conn, &self.id, previous)?;
            }
            list_members(conn, &self.id, &self.tenant, &self.context_id, listing)?;
        }
        Ok(true)
    }
}

/// Where a task's rows in `task_members` are, as its row in `tasks` says: the listing is
/// written with the row's `tenant`, `status_ms` and `members`, so they key its rows.
struct Listed {
    tenant: String,
    status_ms: i64,
    members: String,
}

/// Removes task `id`'s rows from `task_members`, by their whole keys (no index by task to
/// keep up on every insert). Should fewer rows go than `previous` names (rows an older
/// build keyed otherwise), all of the task's rows go, by a scan: a row left behind would
/// list the task to someone no longer on it.
fn unlist(conn: &Connection, id: &str, previous: &Listed) -> Result<(), StoreError> {
    let mut delete = conn
        .prepare_cached(
            "DELETE FROM task_members
             WHERE tenant = ?1 AND participant = ?2 AND status_ms = ?3 AND task_id = ?4",
        )
        .map_err(backend)?;
    let (mut named, mut gone) = (0, 0);
    for p in column_members(&previous.members) {
        named += 1;
        gone += delete
            .execute(params![previous.tenant, p, previous.status_ms, id])
            .map_err(backend)?;
    }
    if gone < named {
        conn.prepare_cached("DELETE FROM task_members WHERE task_id = ?1")
            .and_then(|mut stmt| stmt.execute(params![id]))
            .map_err(backend)?;
    }
    Ok(())
}

/// Writes task `id`'s rows in `task_members` (one a member: what ListTasks reads, so its
/// cost follows the caller's own tasks), where it has none ([`unlist`]).
fn list_members(
    conn: &Connection,
    id: &str,
    tenant: &str,
    context_id: &str,
    listing: &Listing,
) -> Result<(), StoreError> {
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO task_members (tenant, participant, status_ms, task_id, context_id, state, waiting)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(backend)?;
    for p in &listing.members {
        insert
            .execute(params![
                tenant,
                p,
                listing.status_ms,
                id,
                context_id,
                listing.state,
                listing.waiting.as_ref() == Some(p),
            ])
            .map_err(backend)?;
    }
    Ok(())
}

impl EmbeddedStore {
    /// Tasks with a webhook whose delivery is behind the task's log: what a stop cut off,
    /// for the next start to catch up.
    pub async fn push_backlog(&self) -> Result<Vec<String>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT DISTINCT p.task_id FROM push_configs p \
                     JOIN tasks t ON t.id = p.task_id WHERE p.delivered < t.last_seq",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(backend)?;
            rows.map(|r| r.map_err(backend)).collect()
        })
        .await
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
        let mut rec = record.created(events.len());
        let row = HeadRow::of(&rec, self.unlisted.as_deref())?;
        let ended = ended_by(events);
        let events = event_rows(events)?;
        let message = message.map(InboundRow::of).transpose()?;
        let stored = self
            .write(move |conn| {
                if let Some(m) = &message {
                    insert_message(conn, m, &row.id)?;
                }
                if !row.write(conn, None)? {
                    return Err(StoreError::Conflict {
                        task_id: row.id,
                        expected: 0,
                    });
                }
                append_events(conn, &row.id, 0, &events)?;
                Ok(row.split.stored)
            })
            .await;
        rec.stored = counting_conflicts(stored)?;
        let stored = rec;
        self.signals.created(&stored, ended);
        Ok(stored)
    }

    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let (mut rec, first_seq) = record.committed(expected_version, events.len());
        let row = HeadRow::of(&rec, self.unlisted.as_deref())?;
        let ended = ended_by(events);
        let events = event_rows(events)?;
        let message = message.map(InboundRow::of).transpose()?;
        // Whatever the outcome (cheaper than knowing whether a failed transaction landed).
        let changed = Changed::new(&self.views, rec.id());
        let commit = move |conn: &Connection| {
            // The stored last_seq must be the one this commit read, or events would gap.
            let current: Option<(i64, i64, Listed)> = conn
                .prepare_cached(
                    "SELECT version, last_seq, tenant, status_ms, members FROM tasks WHERE id = ?1",
                )
                .and_then(|mut stmt| {
                    stmt.query_row(params![row.id], |r| {
                        let listed = Listed {
                            tenant: r.get(2)?,
                            status_ms: r.get(3)?,
                            members: r.get(4)?,
                        };
                        Ok((r.get(0)?, r.get(1)?, listed))
                    })
                    .optional()
                })
                .map_err(backend)?;
            let conflict = || StoreError::Conflict {
                task_id: row.id.clone(),
                expected: expected_version,
            };
            let listed = match current {
                Some((v, seq, listed))
                    if v as u64 == expected_version && seq as u64 + 1 == first_seq =>
                {
                    listed
                }
                _ => return Err(conflict()),
            };
            if let Some(m) = &message {
                insert_message(conn, m, &row.id)?;
            }
            if !row.write(conn, Some(&listed))? {
                return Err(conflict());
            }
            append_events(conn, &row.id, first_seq, &events)?;
            Ok(row.split.stored)
        };
        let stored = self.write_then(commit, Some(changed)).await;
        rec.stored = counting_conflicts(stored)?;
        let stored = rec;
        self.signals.committed(&stored, ended);
        Ok(stored)
    }

    async fn put_message(&self, message: &InboundMessage) -> Result<(), StoreError> {
        let m = InboundRow::of(message)?;
        self.write(move |conn| insert_message(conn, &m, "")).await
    }

    async fn message_task(
        &self,
        tenant: &str,
        sender: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        keys::message_pk(tenant, sender, message_id)?;
        let key = (tenant.to_owned(), sender.to_owned(), message_id.to_owned());
        self.read_now(|conn| {
            conn.prepare_cached(MESSAGE_TASK)
                .and_then(|mut stmt| stmt.query_row(params![key.0, key.1, key.2], |r| r.get(0)))
                .optional()
                .map_err(backend)
        })
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
        let want = Want::view(history, artifacts);
        let ticket = match self.views.get(task_id, want) {
            Lookup::Hit(rec) => return Ok(admit(&rec).then(|| TaskRecord::clone(&rec))),
            Lookup::Miss(ticket) => ticket,
        };
        let loaded = self.read_now(|conn| load(conn, task_id, want, admit))?;
        Ok(loaded.map(|(rec, bytes)| {
            self.views.keep(ticket, want, &rec, bytes);
            rec
        }))
    }

    async fn read_events(
        &self,
        task_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let id = task_id.to_owned();
        let from = after.map(|a| a as i64 + 1).unwrap_or(0);
        self.read_now(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT idx, json FROM task_parts WHERE task_id = ?1 AND kind = ?2 AND idx >= ?3
                     ORDER BY idx LIMIT ?4",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![id, EVENT_KIND, from, limit as i64], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(backend)?;
            rows.map(|row| {
                let (seq, json) = row.map_err(backend)?;
                Ok(LoggedEvent {
                    seq: seq as u64,
                    event: from_json(&json)?,
                })
            })
            .collect()
        })
    }

    async fn list_tasks(&self, q: &TaskQuery) -> Result<TaskPage, StoreError> {
        let q = q.clone();
        self.read(move |conn| {
            // The caller's own rows of `task_members`: the cost follows their tasks.
            let mut filter = String::from("m.tenant = ?1 AND m.participant = ?2");
            let mut args: Vec<rusqlite::types::Value> =
                vec![q.tenant.clone().into(), q.participant.clone().into()];
            if let Some(ctx) = &q.context_id {
                args.push(ctx.clone().into());
                filter += &format!(" AND m.context_id = ?{}", args.len());
            }
            if let Some(state) = q.state {
                args.push(i64::from(state.number()).into());
                filter += &format!(" AND m.state = ?{}", args.len());
            }
            if let Some(after) = q.status_after {
                args.push(after.millis().into());
                filter += &format!(" AND m.status_ms >= ?{}", args.len());
            }
            if q.waiting {
                filter += " AND m.waiting = 1";
            }
            let total: i64 = conn
                .query_row(
                    &format!("SELECT COUNT(*) FROM task_members m WHERE {filter}"),
                    rusqlite::params_from_iter(args.iter()),
                    |r| r.get(0),
                )
                .map_err(backend)?;
            let mut page_filter = filter.clone();
            if let Some(c) = &q.cursor {
                args.push(c.status_millis.into());
                let ms = args.len();
                args.push(c.task_id.clone().into());
                let id = args.len();
                page_filter += &format!(
                    " AND (m.status_ms < ?{ms} OR (m.status_ms = ?{ms} AND m.task_id < ?{id}))"
                );
            }
            args.push((q.page_size as i64 + 1).into());
            let sql = format!(
                "SELECT t.record, t.version, t.last_seq FROM task_members m
                 JOIN tasks t ON t.id = m.task_id WHERE {page_filter}
                 ORDER BY m.status_ms DESC, m.task_id DESC LIMIT ?{}",
                args.len()
            );
            let want = Want::view(q.history, q.artifacts);
            let mut tasks = in_snapshot(conn, |conn| {
                let mut stmt = conn.prepare(&sql).map_err(backend)?;
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(args.iter()), row_record)
                    .map_err(backend)?;
                rows.filter_map(|r| {
                    (r.map_err(backend))
                        .and_then(|h| decode_record(conn, h, want, &|_| true))
                        .map(|loaded| loaded.map(|(rec, _)| rec))
                        .transpose()
                })
                .collect::<Result<Vec<_>, _>>()
            })?;
            let next = if tasks.len() > q.page_size {
                tasks.truncate(q.page_size);
                tasks.last().map(|t| Cursor {
                    status_millis: t.status_millis(),
                    task_id: t.task.id.clone(),
                })
            } else {
                None
            };
            Ok(TaskPage {
                tasks,
                next,
                total: total as u64,
            })
        })
        .await
    }

    async fn put_push_config(&self, record: &PushConfigRecord) -> Result<(), StoreError> {
        keys::push_sk(&record.config.id)?;
        let r = record.clone();
        self.write(move |conn| {
            // Read and written in one write transaction: no other writer comes between.
            let existing = conn
                .prepare_cached("SELECT config FROM push_configs WHERE task_id = ?1 AND id = ?2")
                .and_then(|mut stmt| {
                    stmt.query_row(params![r.config.task_id, r.config.id], |row| {
                        row.get::<_, String>(0)
                    })
                })
                .optional()
                .map_err(backend)?;
            if let Some(json) = existing {
                let creator = PushConfigRecord::from_stored(&json, 0)?.creator;
                if creator.is_empty() || creator != r.creator {
                    return Err(StoreError::PushConfigTaken {
                        task_id: r.config.task_id.clone(),
                        id: r.config.id.clone(),
                    });
                }
            } else {
                let count: i64 = conn
                    .prepare_cached("SELECT COUNT(*) FROM push_configs WHERE task_id = ?1")
                    .and_then(|mut stmt| {
                        stmt.query_row(params![r.config.task_id], |row| row.get(0))
                    })
                    .map_err(backend)?;
                if count as usize >= crate::push::MAX_CONFIGS_PER_TASK {
                    return Err(StoreError::TooManyPushConfigs(r.config.task_id.clone()));
                }
            }
            let stored = conn
                .execute(
                    "INSERT OR REPLACE INTO push_configs (task_id, id, config, delivered) \
                     SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?1)",
                    params![
                        r.config.task_id,
                        r.config.id,
                        to_json(&r)?,
                        r.delivered as i64
                    ],
                )
                .map_err(backend)?;
            if stored == 0 {
                return Err(StoreError::NoTask(r.config.task_id.clone()));
            }
            Ok(())
        })
        .await
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Option<PushConfigRecord>, StoreError> {
        keys::push_sk(id)?;
        let (task_id, id) = (task_id.to_owned(), id.to_owned());
        self.read_now(|conn| {
            conn.prepare_cached(
                "SELECT config, delivered FROM push_configs WHERE task_id = ?1 AND id = ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![task_id, id], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })
            })
            .optional()
            .map_err(backend)?
            .map(|(json, delivered)| PushConfigRecord::from_stored(&json, delivered as u64))
            .transpose()
        })
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PushConfigRecord>, StoreError> {
        after.map(keys::push_sk).transpose()?;
        let (task_id, after) = (task_id.to_owned(), after.unwrap_or("").to_owned());
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT config, delivered FROM push_configs \
                     WHERE task_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![task_id, after, limit as i64], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })
                .map_err(backend)?;
            rows.map(|r| {
                let (json, delivered) = r.map_err(backend)?;
                PushConfigRecord::from_stored(&json, delivered as u64)
            })
            .collect()
        })
        .await
    }

    async fn advance_push_config(
        &self,
        record: &PushConfigRecord,
        from: u64,
    ) -> Result<bool, StoreError> {
        let r = record.clone();
        self.write(move |conn| {
            let changed = conn
                .execute(
                    "UPDATE push_configs SET config = ?3, delivered = ?4 \
                     WHERE task_id = ?1 AND id = ?2 AND delivered = ?5 \
                     AND COALESCE(json_extract(config, '$.creator'), '') = ?6",
                    params![
                        r.config.task_id,
                        r.config.id,
                        to_json(&r)?,
                        r.delivered as i64,
                        from as i64,
                        r.creator
                    ],
                )
                .map_err(backend)?;
            Ok(changed == 1)
        })
        .await
    }

    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), StoreError> {
        keys::push_sk(id)?;
        let (task_id, id) = (task_id.to_owned(), id.to_owned());
        self.write(move |conn| {
            conn.execute(
                "DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2",
                params![task_id, id],
            )
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        let r = record.clone();
        let at = r.at_millis();
        let expired_before = now_ms() - self.retention.as_millis() as i64;
        self.write(move |conn| {
            if r.counted() {
                let counted = conn
                    .prepare_cached(
                        "INSERT INTO audit_quota (participant, hour, rows_used) VALUES (?1, ?2, 1)
                         ON CONFLICT DO UPDATE SET rows_used = rows_used + 1 WHERE rows_used < ?3",
                    )
                    .and_then(|mut stmt| {
                        stmt.execute(params![
                            r.participant,
                            r.quota_hour(),
                            super::AUDIT_ROWS_PER_PARTICIPANT_HOUR as i64
                        ])
                    })
                    .map_err(backend)?;
                if counted == 0 {
                    return Ok(false);
                }
            }
            let json = to_json(&r)?;
            conn.prepare_cached("INSERT INTO audit (at_ms, record, task_id) VALUES (?1, ?2, ?3)")
                .and_then(|mut stmt| stmt.execute(params![at, json, r.task_id]))
                .map_err(backend)?;
            // What the retention and past hours' counts leave behind goes as it is passed, a
            // few hundred rows a write at most (a backlog, after downtime, over many writes).
            conn.prepare_cached(
                "DELETE FROM audit WHERE seq IN
                     (SELECT seq FROM audit WHERE at_ms < ?1 LIMIT 256)",
            )
            .and_then(|mut stmt| stmt.execute(params![expired_before]))
            .map_err(backend)?;
            conn.prepare_cached("DELETE FROM audit_quota WHERE hour < ?1")
                .and_then(|mut stmt| stmt.execute(params![r.quota_hour() - 1]))
                .map_err(backend)?;
            Ok(true)
        })
        .await
    }

    async fn due_tasks(
        &self,
        leases_before: i64,
        woken_before: i64,
        limit: usize,
    ) -> Result<Due, StoreError> {
        self.read(move |conn| {
            let ids = |sql: &str, before: i64| -> Result<Vec<String>, StoreError> {
                let mut stmt = conn.prepare_cached(sql).map_err(backend)?;
                let rows = stmt
                    .query_map(params![before, limit as i64], |r| r.get::<_, String>(0))
                    .map_err(backend)?;
                rows.map(|r| r.map_err(backend)).collect()
            };
            Ok(Due {
                leased: ids(
                    "SELECT id FROM tasks WHERE lease_until IS NOT NULL AND lease_until < ?1
                     ORDER BY lease_until LIMIT ?2",
                    leases_before,
                )?,
                woken: ids(
                    "SELECT id FROM tasks WHERE woken_ms IS NOT NULL AND woken_ms < ?1
                     ORDER BY woken_ms LIMIT ?2",
                    woken_before,
                )?,
            })
        })
        .await
    }

    async fn audit_trail(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError> {
        let task_id = task_id.to_owned();
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT record FROM audit WHERE task_id = ?1 ORDER BY seq")
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![task_id], |r| r.get::<_, String>(0))
                .map_err(backend)?;
            rows.map(|r| {
                r.map_err(backend)
                    .and_then(|json| serde_json::from_str(&json).map_err(corrupt))
            })
            .collect()
        })
        .await
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read that fails or panics leaves its connection outside any transaction (an open
    /// one would hold the write-ahead log from being emptied), with the read's own error.
    #[test]
    fn a_failed_or_panicking_read_ends_its_transaction() {
        let conn = Connection::open_in_memory().unwrap();
        let failed: Result<(), _> = in_snapshot(&conn, |_| Err(backend("the read's own")));
        assert!(failed.unwrap_err().to_string().contains("the read's own"));
        assert!(conn.is_autocommit());

        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_snapshot(&conn, |_| -> Result<(), StoreError> { panic!("in a read") })
        }));
        assert!(panicked.is_err());
        assert!(conn.is_autocommit());

        assert_eq!(in_snapshot(&conn, |_| Ok(7)).unwrap(), 7);
        assert!(conn.is_autocommit());
    }

    fn dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("harness-{name}-"))
            .tempdir()
            .unwrap()
    }
    fn thread_name() -> Result<String, StoreError> {
        Ok(std::thread::current().name().unwrap_or("").to_owned())
    }

    /// A write while the writer has nothing to do commits on its caller's thread; one that
    /// must wait on an fsync goes to the writer thread, whose commits share it.
    #[tokio::test]
    async fn an_idle_writer_lets_the_caller_commit_unless_it_fsyncs() {
        let d = dir("inline");
        let store = EmbeddedStore::open(d.path()).unwrap();
        // The first writes the new log's header, and fsyncs it.
        assert_eq!(
            store.write(|_| thread_name()).await.unwrap(),
            "store-writer"
        );
        until_inline(&store).await;
        let d = dir("fsync");
        let store = EmbeddedStore::open_with(d.path(), Durability::PowerLoss).unwrap();
        assert_eq!(
            store.write(|_| thread_name()).await.unwrap(),
            "store-writer"
        );
    }

    /// A write close behind another goes to the writer thread, whose batches share their
    /// pages, even when it is the only one under way.
    #[tokio::test]
    async fn a_write_close_behind_another_goes_to_the_writer_thread() {
        let d = dir("pace");
        let store = EmbeddedStore::open(d.path()).unwrap();
        until_inline(&store).await;
        let here = std::thread::current().name().unwrap_or("").to_owned();
        assert_eq!(store.write(|_| thread_name()).await.unwrap(), here);
        assert_eq!(
            store.write(|_| thread_name()).await.unwrap(),
            "store-writer"
        );
    }

    /// While another process holds the database, a write waits on the writer thread, not
    /// on the runtime's thread that made it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_waits_out_another_process_on_the_writer_thread() {
        let d = dir("busy");
        let store = Arc::new(EmbeddedStore::open(d.path()).unwrap());
        store.write(|_| Ok(())).await.unwrap();
        let other = Connection::open(d.path().join(DB_FILE)).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let s = store.clone();
        let write = tokio::spawn(async move { s.write(|_| thread_name()).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!write.is_finished());
        other.execute_batch("COMMIT").unwrap();
        assert_eq!(write.await.unwrap().unwrap(), "store-writer");
    }

    /// A write that panics on the writer thread fails its batch, not the writer: the next
    /// write commits.
    #[tokio::test]
    async fn a_write_that_panics_on_the_writer_thread_leaves_it_running() {
        let d = dir("panic-writer");
        let store = EmbeddedStore::open_with(d.path(), Durability::PowerLoss).unwrap();
        let panicked = store
            .write(|_| -> Result<(), StoreError> { panic!("in a write") })
            .await;
        assert!(panicked.is_err());
        assert_eq!(
            store.write(|_| thread_name()).await.unwrap(),
            "store-writer"
        );
    }

    /// Writes until one commits on the caller's thread: the writer thread takes those that
    /// may start the log over (the first, and one after each checkpoint, which another
    /// thread makes when it will).
    async fn until_inline(store: &EmbeddedStore) {
        let here = std::thread::current().name().unwrap_or("").to_owned();
        for _ in 0..100 {
            if store.write(|_| thread_name()).await.unwrap() == here {
                // A write right after another goes to the writer thread (`BUSY_GAP_MICROS`).
                tokio::time::sleep(Duration::from_millis(1)).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("no write committed on the caller's thread");
    }

    /// A write that panics on its caller's thread leaves no transaction open and no
    /// writer stuck: what it wrote is undone, and the next write commits.
    #[tokio::test]
    async fn a_write_that_panics_on_its_callers_thread_is_undone() {
        let d = dir("panic");
        let store = Arc::new(EmbeddedStore::open(d.path()).unwrap());
        until_inline(&store).await;
        let s = store.clone();
        let panicked = tokio::spawn(async move {
            s.write(|conn| -> Result<(), StoreError> {
                conn.execute("INSERT INTO audit (at_ms, record) VALUES (1, 'lost')", [])
                    .unwrap();
                panic!("in a write")
            })
            .await
        })
        .await;
        assert!(panicked.is_err());
        store
            .write(|conn| {
                conn.execute("INSERT INTO audit (at_ms, record) VALUES (2, 'kept')", [])
                    .map_err(backend)
            })
            .await
            .unwrap();
        let rows: Vec<String> = store
            .read_now(|conn| {
                let mut stmt = conn.prepare("SELECT record FROM audit").map_err(backend)?;
                let rows = stmt.query_map([], |r| r.get(0)).map_err(backend)?;
                rows.collect::<Result<_, _>>().map_err(backend)
            })
            .unwrap();
        assert_eq!(rows, ["kept"]);
    }
}
