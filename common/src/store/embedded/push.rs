//! Push configs in `push_configs`, each with its delivery cursor: created under the task's
//! limit in one write transaction, so no other writer comes between the count and the
//! insert.

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::backend;
use super::rows::to_json;
use super::EmbeddedStore;
use crate::store::keys;
use crate::store::{PushConfigRecord, StoreError};

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

    /// [`Store::put_push_config`](crate::store::Store::put_push_config).
    pub(super) async fn put_push(&self, record: &PushConfigRecord) -> Result<(), StoreError> {
        let r = record.clone();
        self.write(move |conn| put_push_row(conn, &r)).await
    }

    /// [`Store::get_push_config`](crate::store::Store::get_push_config).
    pub(super) async fn get_push(
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

    /// [`Store::list_push_configs`](crate::store::Store::list_push_configs).
    pub(super) async fn push_page(
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

    /// [`Store::advance_push_config`](crate::store::Store::advance_push_config).
    pub(super) async fn advance_push(
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

    /// [`Store::delete_push_config`](crate::store::Store::delete_push_config).
    pub(super) async fn delete_push(&self, task_id: &str, id: &str) -> Result<(), StoreError> {
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
}

/// Writes `r` as [`Store::put_push_config`](crate::store::Store::put_push_config) says, in
/// the write transaction `conn` is in: read and written in it, so no other writer comes
/// between the count and the insert.
pub(super) fn put_push_row(conn: &Connection, r: &PushConfigRecord) -> Result<(), StoreError> {
    keys::push_sk(&r.config.id)?;
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
            .and_then(|mut stmt| stmt.query_row(params![r.config.task_id], |row| row.get(0)))
            .map_err(backend)?;
        if count as usize >= crate::store::MAX_CONFIGS_PER_TASK {
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
                to_json(r)?,
                r.delivered as i64
            ],
        )
        .map_err(backend)?;
    if stored == 0 {
        return Err(StoreError::NoTask(r.config.task_id.clone()));
    }
    Ok(())
}
