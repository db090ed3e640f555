//! The listing (`task_members`): a task's row per member, keyed so that ListTasks reads
//! only the caller's own rows, and rewritten with the task's head row when its status or
//! roster changes.

use rusqlite::{params, Connection};

use super::connection::{backend, in_snapshot};
use super::rows::{decode_record, row_record};
use super::EmbeddedStore;
use crate::store::layout::{Listing, Want};
use crate::store::{Cursor, PageBytes, StoreError, TaskPage, TaskQuery};

/// The participant ids a task's listing rows are keyed by, as one column of its row
/// (`unlist` reads it): `\n<id>\n<id>\n` (ids hold no control characters).
pub(super) fn members_column(ids: &[String]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    format!("\n{}\n", ids.join("\n"))
}

/// The participant ids of a [`members_column`].
pub(super) fn column_members(column: &str) -> impl Iterator<Item = &str> {
    column.split('\n').filter(|m| !m.is_empty())
}

/// Where a task's rows in `task_members` are, as its row in `tasks` says: the listing is
/// written with the row's `tenant`, `status_ms` and `members`, so they key its rows.
pub(super) struct Listed {
    pub(super) tenant: String,
    pub(super) status_ms: i64,
    pub(super) members: String,
}

/// Removes task `id`'s rows from `task_members`, by their whole keys (no index by task to
/// keep up on every insert). Should fewer rows go than `previous` names (rows an older
/// build keyed otherwise), all of the task's rows go, by a scan: a row left behind would
/// list the task to someone no longer on it.
pub(super) fn unlist(conn: &Connection, id: &str, previous: &Listed) -> Result<(), StoreError> {
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
pub(super) fn list_members(
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
    /// [`Store::list_tasks`](crate::store::Store::list_tasks).
    pub(super) async fn listing_page(&self, q: &TaskQuery) -> Result<TaskPage, StoreError> {
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
            // Tasks in order until the next would pass the page's bytes (the first always
            // goes in): the page ends there, and the next one starts after it.
            let (mut tasks, full) = in_snapshot(conn, |conn| {
                let mut stmt = conn.prepare(&sql).map_err(backend)?;
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(args.iter()), row_record)
                    .map_err(backend)?;
                let (mut tasks, mut page) = (Vec::new(), PageBytes::default());
                for row in rows {
                    let head = row.map_err(backend)?;
                    if let Some((rec, bytes)) = decode_record(conn, head, want, &|_| true)? {
                        if !page.takes(bytes) {
                            return Ok((tasks, true));
                        }
                        tasks.push(rec);
                    }
                }
                Ok((tasks, false))
            })?;
            let next = if full || tasks.len() > q.page_size {
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
}
