//! A task's commit as one write job: the head row written at the version it was read at
//! (or inserted, for a new task), its changed parts and new events, and its message's
//! dedupe row, all or nothing.

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::backend;
use super::listing::Listed;
use super::messages::{insert_message, InboundRow};
use super::rows::{append_events, event_rows, HeadRow};
use super::EmbeddedStore;
use crate::a2a::StreamResponse;
use crate::store::view_cache::Changed;
use crate::store::{counting_conflicts, ended_by, InboundMessage, StoreError, TaskRecord};

impl EmbeddedStore {
    /// [`Store::create_task`](crate::store::Store::create_task): the head row inserted, on
    /// the condition that the task is new.
    pub(super) async fn create(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let mut rec = record.created(events.len());
        let row = HeadRow::of(&rec, self.unlisted.as_deref(), &self.bounds)?;
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

    /// [`Store::commit`](crate::store::Store::commit): on the condition that the row is
    /// still at the version and last seq it was read at.
    pub(super) async fn commit_at(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let (mut rec, first_seq) = record.committed(expected_version, events.len());
        let row = HeadRow::of(&rec, self.unlisted.as_deref(), &self.bounds)?;
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
}
