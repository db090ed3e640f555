//! A task as its rows hold it: the head row of `tasks` (with the columns queries filter
//! on), its parts and events in `task_parts`, and the decoding of them back into a record.

use rusqlite::{params, Connection};

use super::connection::{backend, corrupt};
use super::listing::{list_members, members_column, unlist, Listed};
use super::schema::EVENT_KIND;
use crate::a2a::{StreamResponse, Timestamp};
use crate::store::layout::{self, Listing, PartKind, Split, Want};
use crate::store::{Admit, StoreError, TaskRecord};

pub(super) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(corrupt)
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(corrupt)
}

pub(super) fn now_ms() -> i64 {
    Timestamp::now().millis()
}

/// Events as their rows keep them, printed on the caller's thread.
pub(super) fn event_rows(events: &[StreamResponse]) -> Result<Vec<String>, StoreError> {
    events.iter().map(to_json).collect()
}

pub(super) fn append_events(
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

pub(super) fn row_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, i64, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}

/// A record from its head row, with the parts `want` asks for read from `task_parts`, and
/// the bytes of JSON it was read from; None (and nothing more read) unless `admit` passes
/// the head. History within a budget (`want.history_bytes`) is read newest first, and no
/// further than the budget.
pub(super) fn decode_record(
    conn: &Connection,
    (json, version, last_seq): (String, i64, i64),
    mut want: Want,
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
        if let (PartKind::History, Some(budget)) = (kind, want.history_bytes) {
            let kept = newest_history(conn, &rec.task.id, from, to, budget, &mut parts)?;
            want = want.keeping(kept);
            continue;
        }
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

/// Task `id`'s history messages at indexes `from..to`, newest first, while they hold at
/// most `budget` bytes together (a row past it is the last read), added to `parts`; how
/// many were kept.
fn newest_history(
    conn: &Connection,
    id: &str,
    from: i64,
    to: i64,
    budget: usize,
    parts: &mut Vec<(PartKind, u64, String)>,
) -> Result<usize, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT idx, json FROM task_parts WHERE task_id = ?1 AND kind = ?2
             AND idx >= ?3 AND idx < ?4 ORDER BY idx DESC",
        )
        .map_err(backend)?;
    let mut rows = stmt
        .query(params![id, PartKind::History.code(), from, to])
        .map_err(backend)?;
    let (mut spent, mut kept) = (0, 0);
    while let Some(row) = rows.next().map_err(backend)? {
        let json: String = row.get(1).map_err(backend)?;
        spent += json.len();
        if spent > budget {
            break;
        }
        let index: i64 = row.get(0).map_err(backend)?;
        parts.push((PartKind::History, index as u64, json));
        kept += 1;
    }
    Ok(kept)
}

/// A task's row in `tasks`: its head and the columns queries filter on.
pub(super) struct HeadRow {
    pub(super) id: String,
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
    pub(super) split: Split,
}

impl HeadRow {
    /// The row of `rec`, whose listing leaves out `unlisted`, if it stays within `bounds`.
    pub(super) fn of(
        rec: &TaskRecord,
        unlisted: Option<&str>,
        bounds: &crate::config::TaskBounds,
    ) -> Result<Self, StoreError> {
        let split = layout::split(rec, bounds)?;
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
            woken_ms: rec.woken().then(crate::task::lease::now_ms),
            listing: changed.then_some(now),
            split,
        })
    }

    /// Writes the row (inserted, or updated at the version before this one, whose listing
    /// was `previous`) and its changed parts; whether the row was written.
    pub(super) fn write(
        &self,
        conn: &Connection,
        previous: Option<&Listed>,
    ) -> Result<bool, StoreError> {
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
