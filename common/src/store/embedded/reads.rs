//! Reads: point reads on the calling thread, scans on the blocking pool, each on one of
//! a few reader connections; a task's view through the view cache; its event log; the
//! sweep's due tasks.

use std::sync::atomic::Ordering;

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::{backend, in_snapshot};
use super::rows::{decode_record, from_json, row_record};
use super::schema::EVENT_KIND;
use super::EmbeddedStore;
use crate::store::layout::Want;
use crate::store::view_cache::Lookup;
use crate::store::{Admit, Due, LoggedEvent, StoreError, TaskRecord};

/// The task `id` with what `want` asks for (and the bytes of JSON it was read from), read
/// in one transaction (one snapshot); no parts unless `admit` passes its head.
pub(super) fn load(
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

impl EmbeddedStore {
    /// A read small enough to run on the calling thread (a point lookup or a short page
    /// from the page cache takes microseconds, less than the two thread hops of the
    /// blocking pool), on the first idle reader connection.
    pub(super) fn read_now<R>(
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
    pub(super) async fn read<R: Send + 'static>(
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

    /// [`Store::load_view`](crate::store::Store::load_view), through the view cache.
    pub(super) async fn view(
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

    /// [`Store::read_events`](crate::store::Store::read_events).
    pub(super) async fn events_after(
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

    /// [`Store::due_tasks`](crate::store::Store::due_tasks).
    pub(super) async fn due(
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
}
