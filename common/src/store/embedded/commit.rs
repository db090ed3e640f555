//! A task's commit as one write job: the head row written at the version it was read at
//! (or inserted, for a new task), its changed parts and new events, its message's dedupe
//! row, and what goes along with it (a task it creates, a webhook it attaches), all or
//! nothing.

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::backend;
use super::listing::Listed;
use super::messages::{insert_message, InboundRow};
use super::push::put_push_row;
use super::rows::{append_events, event_rows, HeadRow};
use super::EmbeddedStore;
use crate::a2a::StreamResponse;
use crate::config::TaskBounds;
use crate::store::layout::Stored;
use crate::store::view_cache::Changed;
use crate::store::{counting_conflicts, ended_by, Along, InboundMessage, StoreError, TaskRecord};

/// A new task as its write job inserts it: its head row and first events.
struct NewTask {
    row: HeadRow,
    events: Vec<String>,
}

impl NewTask {
    /// `record` as created with `events`: the record as stored once written, and its rows.
    fn of(
        record: &TaskRecord,
        events: &[StreamResponse],
        unlisted: Option<&str>,
        bounds: &TaskBounds,
    ) -> Result<(TaskRecord, NewTask), StoreError> {
        let rec = record.created(events.len());
        let row = HeadRow::of(&rec, unlisted, bounds)?;
        let events = event_rows(events)?;
        Ok((rec, NewTask { row, events }))
    }

    /// Inserts it, on the condition that the task is new (`Conflict` naming it if not).
    fn insert(&self, conn: &Connection) -> Result<Stored, StoreError> {
        if !self.row.write(conn, None)? {
            return Err(StoreError::Conflict {
                task_id: self.row.id.clone(),
                expected: 0,
            });
        }
        append_events(conn, &self.row.id, 0, &self.events)?;
        Ok(self.row.split.stored.clone())
    }
}

impl EmbeddedStore {
    /// [`Store::create_task`](crate::store::Store::create_task): the head row inserted, on
    /// the condition that the task is new.
    pub(super) async fn create(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let (mut rec, new) = NewTask::of(record, events, self.unlisted.as_deref(), &self.bounds)?;
        let ended = ended_by(events);
        let message = message.map(InboundRow::of).transpose()?;
        let stored = self
            .write(move |conn| {
                if let Some(m) = &message {
                    insert_message(conn, m, &new.row.id)?;
                }
                new.insert(conn)
            })
            .await;
        rec.stored = counting_conflicts(stored)?;
        let stored = rec;
        self.signals.created(&stored, ended);
        Ok(stored)
    }

    /// [`Store::commit_along`](crate::store::Store::commit_along): on the condition that
    /// the row is still at the version and last seq it was read at, with what goes along
    /// in the same write job.
    pub(super) async fn commit_at(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
        along: Along<'_>,
    ) -> Result<TaskRecord, StoreError> {
        let (mut rec, first_seq) = record.committed(expected_version, events.len());
        let row = HeadRow::of(&rec, self.unlisted.as_deref(), &self.bounds)?;
        let ended = ended_by(events);
        let events = event_rows(events)?;
        let message = message.map(InboundRow::of).transpose()?;
        let created = (along.created)
            .map(|(child, events)| {
                NewTask::of(child, events, self.unlisted.as_deref(), &self.bounds)
            })
            .transpose()?;
        let (mut child, new) = created.unzip();
        let push = along.push.cloned();
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
            let created = new.as_ref().map(|n| n.insert(conn)).transpose()?;
            if let Some(push) = &push {
                put_push_row(conn, push)?;
            }
            Ok((row.split.stored, created))
        };
        let stored = self.write_then(commit, Some(changed)).await;
        let (stored, created) = counting_conflicts(stored)?;
        rec.stored = stored;
        if let (Some(child), Some(stored)) = (child.as_mut(), created) {
            child.stored = stored;
            self.signals.created(child, None);
        }
        let stored = rec;
        self.signals.committed(&stored, ended);
        Ok(stored)
    }
}
