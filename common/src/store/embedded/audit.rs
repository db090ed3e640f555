//! The audit trail in `audit`, pruned past the retention period as it is written, and
//! the hourly count of refusals per participant (`audit_quota`) that bounds it.

use rusqlite::params;

use super::connection::{backend, corrupt};
use super::rows::{now_ms, to_json};
use super::EmbeddedStore;
use crate::store::{AuditRecord, StoreError, AUDIT_ROWS_PER_PARTICIPANT_HOUR};

impl EmbeddedStore {
    /// [`Store::audit`](crate::store::Store::audit).
    pub(super) async fn append_audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
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
                            AUDIT_ROWS_PER_PARTICIPANT_HOUR as i64
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
