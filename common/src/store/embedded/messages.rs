//! A message's dedupe row in `inbound`: what makes a resend within the retention period
//! an answer with its task rather than a second task.

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::backend;
use super::rows::now_ms;
use super::EmbeddedStore;
use crate::store::keys;
use crate::store::{InboundMessage, StoreError};

const MESSAGE_TASK: &str =
    "SELECT task_id FROM inbound WHERE tenant = ?1 AND sender = ?2 AND message_id = ?3";

/// A client's message as its dedupe row keys it: the task's history holds the message.
pub(super) struct InboundRow {
    tenant: String,
    sender: String,
    message_id: String,
}

impl InboundRow {
    pub(super) fn of(m: &InboundMessage) -> Result<InboundRow, StoreError> {
        keys::message_pk(&m.tenant, &m.sender, &m.message.message_id)?;
        Ok(InboundRow {
            tenant: m.tenant.clone(),
            sender: m.sender.clone(),
            message_id: m.message.message_id.clone(),
        })
    }
}

pub(super) fn insert_message(
    conn: &Connection,
    m: &InboundRow,
    task_id: &str,
) -> Result<(), StoreError> {
    // The key's own condition: a second look only for a message seen before.
    let inserted = conn
        .prepare_cached(
            "INSERT INTO inbound (tenant, sender, message_id, task_id, received_ms)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![m.tenant, m.sender, m.message_id, task_id, now_ms()])
        })
        .map_err(backend)?;
    if inserted == 1 {
        return Ok(());
    }
    let task_id: String = conn
        .prepare_cached(MESSAGE_TASK)
        .and_then(|mut stmt| {
            stmt.query_row(params![m.tenant, m.sender, m.message_id], |r| r.get(0))
        })
        .map_err(backend)?;
    Err(StoreError::DuplicateMessage {
        message_id: m.message_id.clone(),
        task_id,
    })
}

impl EmbeddedStore {
    /// [`Store::put_message`](crate::store::Store::put_message): the row alone, for a
    /// message that starts no task.
    pub(super) async fn put_dedupe(&self, message: &InboundMessage) -> Result<(), StoreError> {
        let m = InboundRow::of(message)?;
        self.write(move |conn| insert_message(conn, &m, "")).await
    }

    /// [`Store::message_task`](crate::store::Store::message_task).
    pub(super) async fn dedupe_task(
        &self,
        tenant: &str,
        sender: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        keys::message_pk(tenant, sender, message_id)?;
        let key = (tenant.to_owned(), sender.to_owned(), message_id.to_owned());
        self.read_now(|conn| {
            conn.prepare_cached(MESSAGE_TASK)
                .and_then(|mut stmt| stmt.query_row(params![key.0, key.1, key.2], |r| r.get(0)))
                .optional()
                .map_err(backend)
        })
    }
}
