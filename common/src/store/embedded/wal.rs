//! The write-ahead log's bound and its checkpoints: the writer learns the log's length at
//! each commit, a thread of its own copies it into the database, and the writer thread
//! starts it over past its bound, so a commit never waits on a checkpoint's fsyncs.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::connection::{open, BUSY_TIMEOUT};
use super::Durability;

/// Commits between two checkpoints of the write-ahead log into the database (~320 pages at
/// a send's 10). Often enough that little is left to copy when the writer starts the log
/// over, which holds every commit meanwhile: at 128, on ext4, sends' p99 was 5 ms at
/// concurrency 1 and 7 ms at 32; at 32 it is 2.5 ms and 4.5-6.5 ms, with 5-10% more sends
/// a second. More often (8, or every commit) costs more fsyncs than it saves. At 64, with
/// a send at ~10 pages: sends even, p99 at 32 4.9-5.4 ms against 4.2-4.9.
pub(super) const CHECKPOINT_EVERY: usize = 32;
/// Frames (pages) in the write-ahead log past which the writer empties it: the log's bound,
/// about 16 MB at SQLite's 4 KB pages.
pub(super) const WAL_RESTART_FRAMES: i64 = 4096;
/// The log file's size past which it is cut back when it starts over: the bound, with its
/// frame headers (24 bytes each) and the file's own (32 bytes).
pub(super) const LOG_LIMIT_BYTES: i64 = WAL_RESTART_FRAMES * (4096 + 24) + 32;

/// The write-ahead log as the writers see it.
pub(super) struct Log {
    /// Its length in frames after the last commit (SQLite's WAL hook, [`note_log_frames`]).
    pub(super) frames: AtomicI64,
    /// Whether the next commit may start it over (after a checkpoint, or the writer
    /// thread's `restart_log`): that commit writes the log's header and fsyncs it, so it
    /// is the writer thread's, not a caller's.
    pub(super) may_restart: AtomicBool,
}

impl Log {
    /// Whether a caller may commit on its own thread as far as the log goes.
    pub(super) fn steady(&self) -> bool {
        !self.may_restart.load(Ordering::Acquire)
            && self.frames.load(Ordering::Relaxed) < WAL_RESTART_FRAMES
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
pub(super) fn restart_log(conn: &Connection) {
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
    pub(super) static LOG_FRAMES: Cell<i64> = const { Cell::new(0) };
}

/// The writer connection's WAL hook: SQLite calls it in each COMMIT, on the committing
/// thread, with the log's length. The writer learns it at once, where the checkpointer's
/// count came up to 128 commits late (and a log of large commits passed twice its bound).
pub(super) fn note_log_frames(
    _: &rusqlite::hooks::Wal,
    frames: std::ffi::c_int,
) -> rusqlite::Result<()> {
    LOG_FRAMES.with(|f| f.set(frames.into()));
    Ok(())
}

/// Copies the log into the database when the writer asks. PASSIVE: it never blocks the
/// writer nor readers, and a log that readers still need is copied by a later one.
/// Its connection is opened at the first checkpoint, off the start-up path.
pub(super) fn checkpoint_loop(
    path: &Path,
    durability: Durability,
    kicks: mpsc::Receiver<()>,
    log: &Log,
) {
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
