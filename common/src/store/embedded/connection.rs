//! The store's SQLite connections: how each is opened (pragmas, busy timeout) and how a
//! statement or a read transaction runs on one, so that no error or panic leaves a
//! transaction open to hold the log or the database from others.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::wal::LOG_LIMIT_BYTES;
use super::Durability;
use crate::store::StoreError;

/// How long a connection waits on another process's hold of the database.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

pub(super) fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
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

pub(super) fn open(
    path: &Path,
    flags: OpenFlags,
    durability: Durability,
) -> Result<Connection, StoreError> {
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

/// Runs one statement, prepared once per connection: every commit runs these.
pub(super) fn run(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute([]))
        .map(drop)
        .map_err(backend)
}

/// Ends a transaction left open when it is dropped (an error, a panic): an open read would
/// hold the log from being emptied, an open write the database from every other writer.
pub(super) struct Close<'c>(pub(super) &'c Connection);

impl Drop for Close<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = run(self.0, "ROLLBACK");
        }
    }
}

/// Runs `f`'s reads in one read transaction (one snapshot). Its BEGIN and COMMIT are
/// prepared once per connection: rusqlite's `Transaction` parses both on every read (and
/// ends a read with ROLLBACK, which costs more than COMMIT), a tenth of a GetTask's CPU.
pub(super) fn in_snapshot<R>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    run(conn, "BEGIN")?;
    let _close = Close(conn);
    let out = f(conn)?;
    run(conn, "COMMIT")?;
    Ok(out)
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
}
