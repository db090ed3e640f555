//! The audit trail in `audit`, pruned past the retention period as it is written; the
//! hourly counts per participant (`quotas`), one of which (the refusals') bounds it; the
//! agent ids the harness has used (`agent_ids`).

use rusqlite::{params, Connection};

use super::connection::{backend, corrupt};
use super::rows::{now_ms, to_json};
use super::EmbeddedStore;
use crate::store::{AuditRecord, Quota, StoreError, AUDIT_ROWS_PER_PARTICIPANT_HOUR};

impl EmbeddedStore {
    /// [`Store::audit`](crate::store::Store::audit).
    pub(super) async fn append_audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        let r = record.clone();
        let at = r.at_millis();
        let expired_before = now_ms() - self.retention.as_millis() as i64;
        self.write(move |conn| {
            for (quota, key) in r.quotas() {
                if !take(
                    conn,
                    (quota, key, r.quota_hour()),
                    AUDIT_ROWS_PER_PARTICIPANT_HOUR,
                )? {
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
            Ok(true)
        })
        .await
    }

    /// [`Store::take_quota`](crate::store::Store::take_quota).
    pub(super) async fn count_quota(
        &self,
        quota: Quota,
        participant: &str,
        hour: i64,
        limit: u64,
    ) -> Result<bool, StoreError> {
        let participant = participant.to_owned();
        self.write(move |conn| take(conn, (quota, &participant, hour), limit))
            .await
    }

    /// [`Store::record_agent_id`](crate::store::Store::record_agent_id).
    pub(super) async fn put_agent_id(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write(move |conn| {
            conn.prepare_cached("INSERT INTO agent_ids (id) VALUES (?1) ON CONFLICT DO NOTHING")
                .and_then(|mut stmt| stmt.execute(params![id]))
                .map(|_| ())
                .map_err(backend)
        })
        .await
    }

    /// [`Store::agent_ids`](crate::store::Store::agent_ids).
    pub(super) async fn read_agent_ids(&self) -> Result<Vec<String>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT id FROM agent_ids ORDER BY id")
                .map_err(backend)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(backend)?;
            rows.map(|r| r.map_err(backend)).collect()
        })
        .await
    }

    /// [`Store::audit_trail`](crate::store::Store::audit_trail).
    pub(super) async fn audit_rows(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError> {
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
}

/// One use of `quota` by a participant in an hour, unless `limit` are used; whether it
/// was counted. Past hours' counts go as a count is taken.
fn take(
    conn: &Connection,
    (quota, participant, hour): (Quota, &str, i64),
    limit: u64,
) -> Result<bool, StoreError> {
    let counted = conn
        .prepare_cached(
            "INSERT INTO quotas (quota, participant, hour, used) VALUES (?1, ?2, ?3, 1)
             ON CONFLICT DO UPDATE SET used = used + 1 WHERE used < ?4",
        )
        .and_then(|mut stmt| stmt.execute(params![quota.name(), participant, hour, limit as i64]))
        .map_err(backend)?;
    conn.prepare_cached("DELETE FROM quotas WHERE hour < ?1")
        .and_then(|mut stmt| stmt.execute(params![hour - 1]))
        .map_err(backend)?;
    Ok(counted > 0)
}
