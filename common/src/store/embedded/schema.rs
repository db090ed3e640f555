//! The database's tables as this build writes them, and the migrations that bring a
//! store an older build wrote up to them when it is opened, in the same transaction.

use rusqlite::{params, Connection};

use super::connection::backend;
use super::listing::{column_members, list_members};
use crate::store::layout::{Listing, PartKind};
use crate::store::StoreError;

/// The `kind` of a task's events among its rows of `task_parts` (past [`PartKind`]'s
/// codes): a new task's rows then share the leaf pages of one B-tree.
pub(super) const EVENT_KIND: i64 = 8;
const _: () = {
    let mut i = 0;
    while i < PartKind::ALL.len() {
        assert!(PartKind::ALL[i].code() != EVENT_KIND);
        i += 1;
    }
};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    context_id TEXT NOT NULL,
    state INTEGER NOT NULL,
    status_ms INTEGER NOT NULL,
    version INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    record TEXT NOT NULL,
    members TEXT NOT NULL DEFAULT '',
    lease_until INTEGER,
    woken_ms INTEGER
);
CREATE TABLE IF NOT EXISTS task_parts (
    task_id TEXT NOT NULL,
    kind INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (task_id, kind, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inbound (
    tenant TEXT NOT NULL,
    sender TEXT NOT NULL,
    message_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    received_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, sender, message_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS push_configs (
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    config TEXT NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms INTEGER NOT NULL,
    record TEXT NOT NULL,
    task_id TEXT NOT NULL DEFAULT ''
);
-- Before `quotas`, refusals were counted here: only the current hour's count is lost.
DROP TABLE IF EXISTS audit_quota;
CREATE TABLE IF NOT EXISTS quotas (
    quota TEXT NOT NULL,
    participant TEXT NOT NULL,
    hour INTEGER NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (quota, participant, hour)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_ids (
    id TEXT PRIMARY KEY
) WITHOUT ROWID;
";

/// Columns added after the first release: (table, column, definition). A store written by
/// an older build gets them when it is opened.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("tasks", "members", "TEXT NOT NULL DEFAULT ''"),
    ("audit", "task_id", "TEXT NOT NULL DEFAULT ''"),
    ("tasks", "lease_until", "INTEGER"),
    ("push_configs", "delivered", "INTEGER NOT NULL DEFAULT 0"),
    ("tasks", "woken_ms", "INTEGER"),
];

/// Whether the database has table `name` (one an older build may have left, or not made).
fn has_table(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        params![name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(backend)
}

/// Whether `table` has `column`.
fn has_column(conn: &Connection, table: &str, column: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
        params![table, column],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(backend)
}

pub(super) fn migrate(conn: &Connection) -> Result<(), StoreError> {
    for (table, column, definition) in ADDED_COLUMNS {
        if !has_column(conn, table, column)? {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))
            .map_err(backend)?;
            if *column == "woken_ms" {
                // Rows left waiting on a wake-up before the sweep could find them: due now.
                conn.execute(
                    "UPDATE tasks SET woken_ms = 0 WHERE lease_until IS NULL
                     AND state IN (?1, ?2) AND json_extract(record, '$.wake')",
                    params![
                        crate::a2a::TaskState::Submitted.number(),
                        crate::a2a::TaskState::Working.number()
                    ],
                )
                .map_err(backend)?;
            }
        }
    }
    // The listing table, filled from the tasks' `members` column when it is new.
    if !has_table(conn, "task_members")? {
        conn.execute_batch(
            "CREATE TABLE task_members (
                 tenant TEXT NOT NULL,
                 participant TEXT NOT NULL,
                 status_ms INTEGER NOT NULL,
                 task_id TEXT NOT NULL,
                 context_id TEXT NOT NULL,
                 state INTEGER NOT NULL,
                 waiting INTEGER NOT NULL DEFAULT 0,
                 PRIMARY KEY (tenant, participant, status_ms, task_id)
             ) WITHOUT ROWID;",
        )
        .map_err(backend)?;
        let mut stmt = conn
            .prepare("SELECT id, tenant, context_id, state, status_ms, members FROM tasks")
            .map_err(backend)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i32>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(backend)?;
        for row in rows {
            let (id, tenant, context_id, state, status_ms, members) = row.map_err(backend)?;
            let listing = Listing {
                members: column_members(&members).map(str::to_owned).collect(),
                status_ms,
                state,
                waiting: None,
            };
            list_members(conn, &id, &tenant, &context_id, &listing)?;
        }
    }
    // "Waiting on me" (a listing row of the member a task waits on), added after the
    // table: no task written before it names an addressee, so nothing waits yet.
    if !has_column(conn, "task_members", "waiting")? {
        conn.execute_batch(
            "ALTER TABLE task_members ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0",
        )
        .map_err(backend)?;
    }
    // Only the rows that wait: a query for them reads nothing else.
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS task_members_waiting
             ON task_members (tenant, participant, status_ms, task_id) WHERE waiting = 1",
    )
    .map_err(backend)?;
    // Messages were keyed by (tenant, messageId) before they were the sender's own: the
    // rows move to `inbound` under the sender their metadata names.
    if has_table(conn, "messages")? {
        conn.execute_batch(
            "INSERT OR IGNORE INTO inbound (tenant, sender, message_id, task_id, received_ms)
             SELECT tenant, COALESCE(json_extract(message, '$.metadata.participant_id'), ''),
                    message_id, task_id, received_ms FROM messages;
             DROP TABLE messages;",
        )
        .map_err(backend)?;
    }
    // A dedupe row kept a copy of its message, which nothing read (the task's history
    // holds it): a new task wrote its message twice.
    if has_column(conn, "inbound", "message")? {
        conn.execute_batch("ALTER TABLE inbound DROP COLUMN message")
            .map_err(backend)?;
    }
    // A task's events were a table of their own: they move among its parts.
    if has_table(conn, "events")? {
        conn.execute(
            "INSERT OR IGNORE INTO task_parts (task_id, kind, idx, json)
             SELECT task_id, ?1, seq, event FROM events",
            params![EVENT_KIND],
        )
        .map_err(backend)?;
        conn.execute_batch("DROP TABLE events").map_err(backend)?;
    }
    // Listing reads `task_members`; this index of every task by time was only written,
    // on every status change, and in descending order, so each insert split the B-tree's
    // first page.
    conn.execute_batch("DROP INDEX IF EXISTS tasks_by_status")
        .map_err(backend)?;
    // Listing rows are deleted by their whole key (`unlist`): this index of them by task
    // cost every new task ~1.4 of its ~16 pages a commit.
    conn.execute_batch("DROP INDEX IF EXISTS task_members_by_task")
        .map_err(backend)?;
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS audit_by_task ON audit (task_id, seq);
         CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at_ms);
         CREATE INDEX IF NOT EXISTS tasks_by_lease ON tasks (lease_until)
             WHERE lease_until IS NOT NULL;
         CREATE INDEX IF NOT EXISTS tasks_by_wake ON tasks (woken_ms)
             WHERE woken_ms IS NOT NULL;",
    )
    .map_err(backend)
}
