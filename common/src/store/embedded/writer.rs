//! Group commit: every write goes through one writer connection, committed on its
//! caller's thread when it comes alone, else gathered with others by the writer thread
//! into one transaction (a savepoint each), and acknowledged once durable.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::connection::{backend, run, Close, BUSY_TIMEOUT};
use super::wal::{restart_log, Log, CHECKPOINT_EVERY, LOG_FRAMES, WAL_RESTART_FRAMES};
use super::EmbeddedStore;
use crate::store::view_cache::Changed;
use crate::store::StoreError;

/// Most commits gathered into one transaction.
const MAX_BATCH: usize = 256;

type Completion = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
/// Runs its work on the connection it is given (None: the transaction could not start, so
/// the work is skipped), in a savepoint if it shares the transaction (`shared`), and
/// returns whether it succeeded and what acknowledges it once the outcome is known.
pub(super) type Job = Box<dyn FnOnce(Option<&Connection>, bool) -> (bool, Completion) + Send>;

/// The writer's connection and the commits since the last checkpoint: held by the writer
/// thread while it commits a batch, or by a caller committing its own write while the
/// writer has nothing to do.
pub(super) struct Writer {
    pub(super) conn: Connection,
    pub(super) since_checkpoint: usize,
}

/// How writes reach the writer's connection.
pub(super) struct Writes {
    pub(super) writer: Arc<Mutex<Writer>>,
    pub(super) jobs: mpsc::Sender<Job>,
    /// Jobs sent to the writer thread that it has not taken yet.
    pub(super) queued: Arc<AtomicUsize>,
    pub(super) log: Arc<Log>,
    pub(super) checkpoint: mpsc::SyncSender<()>,
    /// Whether a caller may commit on its own thread: not when a commit waits on an fsync.
    pub(super) inline: bool,
    /// Writes under way, and when the last one ended ([`Writing`]).
    pub(super) pace: Pace,
}

/// How busy the store's writes are.
pub(super) struct Pace {
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
    pub(super) fn new() -> Pace {
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

impl EmbeddedStore {
    /// Runs `f` inside the next group transaction; resolves once that transaction is
    /// committed (durable as the store's [`Durability`] says). When no other write is under
    /// way, the caller commits `f` alone on its own thread, as a point read runs: the
    /// hand-off to the writer thread and back was two thread wake-ups a write, most of a
    /// lone commit's wait. Not when a commit waits on an fsync, nor when the log is due to
    /// start over (the writer thread does that, between two of its batches), nor while
    /// other writes are under way or one has just ended ([`BUSY_GAP_MICROS`]): the writer
    /// thread's batches share their pages (at 32 concurrent sends, each committing alone
    /// gave 16% fewer sends a second).
    ///
    /// [`Durability`]: super::Durability
    pub(super) async fn write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.write_then(f, None).await
    }

    /// [`EmbeddedStore::write`] that drops `changed` (telling the view cache) once the
    /// transaction's outcome is known, before the write is acknowledged, on the thread that
    /// committed it: even if the caller has gone (a client that hung up), or the job never
    /// ran.
    pub(super) async fn write_then<R: Send + 'static>(
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

/// Commits what callers hand over, in batches, and starts the log over past its bound.
pub(super) fn writer_loop(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::{Durability, DB_FILE};

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
