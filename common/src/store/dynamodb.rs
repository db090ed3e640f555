//! The DynamoDB store: one table (PAY_PER_REQUEST), every write conditional.
//!
//! Items (`pk`, `sk`):
//! - task head: `TASK#<id>`, `TASK`, with `version`, `last_seq`, the head as JSON (see
//!   [`super::layout`]: bounded, no lists), `listed` = 1 (its listing items are written;
//!   a head without it predates them and is listed by its next commit or
//!   [`DynamoStore::backfill_listing`]), and the sweep index keys
//!   `gsi2pk` = `LEASED` (`gsi2sk` = the lease's expiry) while a drive holds it, or
//!   `WOKEN` (`gsi2sk` = when it was written) while it waits on a wake-up, and `wake` = 1
//!   then too (what the resume function's event source mapping passes);
//! - task part: `TASK#<id>`, `HIST#`/`TURN#`/`ART#<index, 10 digits>` or `STATUS#…`, one
//!   history message, conversation turn, artifact or long status message;
//! - listing item: `TASK#<id>`, `MEMBER#<participant>`, one per participant, with the
//!   listing index (`gsi1`) keys `gsi1pk` = `MEMBER#<tenant>#<participant>`, `gsi1sk` =
//!   `<status ms, 15 digits>#<id>`, and `context_id` and `state` for ListTasks' filters;
//!   written with the head whenever the status or the roster changes;
//! - event: `TASK#<id>`, `EV#<seq, 20 digits>`;
//! - push config: `TASK#<id>`, `PUSH#<config id>`, and the task's count of them,
//!   `TASK#<id>`, `COUNT#PUSH` (`configs`), changed in the same transaction as a config
//!   is created or deleted, so the limit holds under concurrent creates;
//! - message: `IN#<tenant>#<sender>#<messageId>`, `MSG`, naming its task (each part
//!   escaped by [`key_part`], so no two triples share a key; the prefix is new with the
//!   sender, so no key of the old `MSG#<tenant>#<messageId>` items can pass for one);
//! - audit: `AUDIT#<task id>`, `<ms>#<uuid>`, expiring through the `expires_at` TTL; a
//!   refusal's row is written only after its participant's hourly count
//!   `QUOTA#<participant>`, `<hour>` took it (an update of its own, so writers do not
//!   conflict on it in transactions; it expires an hour after its hour).
//!
//! A payload (part or event) longer than [`CHUNK_BYTES`] continues in items right after
//! its own (`<sk>~<n, 3 digits>`), written in the same transaction: no item is over 64 KB,
//! whatever a message or a tool result holds, and a payload is never half written.
//!
//! Audit rows, and the events of a task once it is finished, carry `expires_at`: they are
//! kept for the retention period (`HARNESS_AUDIT_RETENTION_DAYS`, 30 days by default).
//!
//! A commit is one transaction: the head put conditional on the version and last seq it
//! read, the parts that changed (new history messages and turns conditional on absence),
//! each event put conditional on absence, and the message put conditional on absence:
//! its write units follow what changed, not the size of the task. ListTasks is a Query on
//! the caller's own partition of `gsi1`, never a Scan, so its cost follows the caller's
//! tasks, not the tenant's. The SDK retries throttling and 5xx with backoff before an
//! error reaches the caller.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::error::TransactionCanceledException;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, GlobalSecondaryIndex,
    KeySchemaElement, KeyType, KeysAndAttributes, Projection, ProjectionType, Put, PutRequest,
    ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure, ScalarAttributeType, Select,
    StreamSpecification, StreamViewType, TimeToLiveSpecification, TransactWriteItem, Update,
    WriteRequest,
};
use aws_sdk_dynamodb::Client;
use tokio::sync::broadcast;

use super::keys::{key_part, message_pk, push_sk};
use super::layout::{self, Counts, Listing, PartKind, Want};
use super::{
    counting_conflicts, ended_by, Admit, AuditRecord, Cursor, Due, InboundMessage, LoggedEvent,
    PushConfigRecord, Store, StoreError, TaskPage, TaskQuery, TaskRecord,
    AUDIT_ROWS_PER_PARTICIPANT_HOUR, DEFAULT_RETENTION,
};
use crate::a2a::{StreamResponse, Timestamp};

/// The listing index: each participant's tasks, newest status first.
pub const INDEX: &str = "gsi1";
/// The sweeper's sparse index: leased tasks by lease expiry, and tasks waiting on a
/// wake-up by when it was rung.
pub const SWEEP_INDEX: &str = "gsi2";
const LEASED: &str = "LEASED";
/// The sweep index's partition of tasks last written as a wake-up, by when.
const WOKEN: &str = "WOKEN";
pub const TTL_ATTRIBUTE: &str = "expires_at";
/// The sort key of a task's count of push configs (`configs`), which keeps the limit.
const PUSH_COUNT: &str = "COUNT#PUSH";
/// A head's mark that the listing index holds its members.
const LISTED: &str = "listed";
/// On a head: 1 when an event of the task was stored in more than one item, 0 when none
/// was (absent on heads written before it was kept).
const EVENTS_CHUNKED: &str = "ev_chunked";
/// How many earlier events a commit that ends a task gives their expiry itself; a task
/// with more has them given it after the commit (a Query and batch writes).
const EXPIRE_IN_COMMIT: u64 = 32;

type Item = HashMap<String, AttributeValue>;

/// Most bytes of a payload one item holds; the rest continues in items of its own, so no
/// item is over 64 KB (with its keys and attributes).
pub const CHUNK_BYTES: usize = 60 * 1024;
/// Most items in one transaction, and most bytes (DynamoDB's limits: 100 and 4 MB, less a
/// margin for what the estimate of an item's size leaves out).
const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024 - 64 * 1024;
/// Most items in one transaction (DynamoDB's limit).
/// Most items one payload spans (a transaction holds at most 4 MB).
const MAX_CHUNKS: usize = 4 * 1024 * 1024 / CHUNK_BYTES + 1;
const MAX_TRANSACTION_ITEMS: usize = 100;

/// Why a small transaction did not go through.
enum Refused {
    /// Each item's condition: whether it failed (at least one did).
    Conditions(Vec<bool>),
    Store(StoreError),
}

pub struct DynamoStore {
    client: Client,
    table: String,
    /// How long audit rows, a finished task's events and a message's dedupe record live.
    retention: Duration,
    /// How long a finished task lives (all its items); None: kept until deleted.
    task_retention: Option<Duration>,
    /// A participant whose tasks are not listed: the harness's own agent, a member of
    /// nearly every task, which no client may speak as (so none lists its tasks). Its
    /// items would cost one more write a transition, all on one index key a tenant.
    unlisted: Option<String>,
    signals: super::Signals,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn task_pk(id: &str) -> String {
    format!("TASK#{id}")
}

fn event_sk(seq: u64) -> String {
    format!("EV#{seq:020}")
}

fn part_sk(kind: PartKind, index: u64) -> String {
    format!("{}{index:010}", kind.prefix())
}

/// The items of one part of `rec`, as the commit of `rec` writes them.
fn part_items(rec: &TaskRecord, p: &layout::Part) -> Vec<Item> {
    let item = HashMap::from([
        ("pk".into(), s(task_pk(&rec.task.id))),
        ("sk".into(), s(part_sk(p.kind, p.index))),
    ]);
    chunked(item, &p.json, rec.version)
}

/// The items of `payload` (attribute `data`) under `first`'s keys: `first` with the
/// payload's first chunk and, when there are more, how many items it spans (`chunks`);
/// then one item per further chunk, `<sk>~<n>`. Every item names the task version that
/// wrote it (`v`), so a reader never joins chunks of two writes of a rewritten part.
fn chunked(mut first: Item, payload: &str, version: u64) -> Vec<Item> {
    let mut chunks = Vec::new();
    let mut rest = payload;
    while rest.len() > CHUNK_BYTES {
        let mut cut = CHUNK_BYTES;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        chunks.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    chunks.push(rest);
    let (pk, sk) = (first.get("pk").cloned(), first.get("sk").cloned());
    if chunks.len() > 1 {
        first.insert("chunks".into(), n(chunks.len()));
    }
    first.insert("data".into(), s(chunks[0]));
    first.insert("v".into(), n(version));
    let sk = sk.and_then(|v| v.as_s().ok().cloned()).unwrap_or_default();
    let mut items = vec![first];
    for (i, chunk) in chunks.iter().enumerate().skip(1) {
        let mut item = HashMap::from([
            ("sk".to_owned(), s(format!("{sk}~{i:03}"))),
            ("data".to_owned(), s(*chunk)),
            ("v".to_owned(), n(version)),
        ]);
        if let Some(pk) = &pk {
            item.insert("pk".into(), pk.clone());
        }
        items.push(item);
    }
    items
}

/// A payload's first (or only) chunk: `data`, or `event` in events written before
/// payloads could be chunked.
fn first_chunk(item: &Item) -> Result<&str, StoreError> {
    get_s(item, "data").or_else(|_| get_s(item, "event"))
}

/// The payloads of `items` (read in sort-key order), each joined from its chunks, with
/// the item that holds its first. A payload whose chunks the page cut off, or that a
/// concurrent rewrite tore (continuations of another write), is left out, as are stale
/// continuations (of a longer payload the item held before).
fn joined(items: &[Item]) -> Result<Vec<(&Item, String)>, StoreError> {
    let mut out: Vec<(&Item, String)> = Vec::new();
    let mut missing = 0usize;
    let mut write = None;
    for item in items {
        let sk = get_s(item, "sk")?;
        if sk.contains('~') {
            if missing > 0 && item.get("v") != write {
                out.pop();
                missing = 0;
            } else if missing > 0 {
                if let Some((_, payload)) = out.last_mut() {
                    payload.push_str(get_s(item, "data")?);
                }
                missing -= 1;
            }
            continue;
        }
        if missing > 0 {
            out.pop();
        }
        let chunks = item
            .get("chunks")
            .map(|_| get_n(item, "chunks"))
            .transpose()?;
        missing = chunks.unwrap_or(1).saturating_sub(1) as usize;
        write = item.get("v");
        out.push((item, first_chunk(item)?.to_owned()));
    }
    if missing > 0 {
        out.pop();
    }
    Ok(out)
}

/// The listing index's partition of one participant's tasks in one tenant.
fn listing_pk(tenant: &str, participant: &str) -> String {
    format!("MEMBER#{}#{}", key_part(tenant), key_part(participant))
}

/// Where a task sorts in a listing partition: newest status first, ties by id.
fn listing_sk(status_ms: i64, id: &str) -> String {
    format!("{:015}#{id}", status_ms.max(0))
}

fn member_sk(participant: &str) -> String {
    format!("MEMBER#{}", key_part(participant))
}

/// The listing index's partition of the tasks waiting on one participant in one tenant:
/// only those, so a "waiting on me" query reads nothing else.
fn waiting_pk(tenant: &str, participant: &str) -> String {
    format!("WAITING#{}#{}", key_part(tenant), key_part(participant))
}

fn waiting_sk(participant: &str) -> String {
    format!("WAITING#{}", key_part(participant))
}

/// A waiting task's item in the listing index for the member it waits on.
fn waiting_item(rec: &TaskRecord, participant: &str) -> Item {
    let mut item = member_item(rec, participant, None);
    item.insert("sk".into(), s(waiting_sk(participant)));
    item.insert("gsi1pk".into(), s(waiting_pk(&rec.tenant, participant)));
    item
}

/// A task's item in the listing index for one of its members.
fn member_item(rec: &TaskRecord, participant: &str, expires: Option<&AttributeValue>) -> Item {
    let id = &rec.task.id;
    let mut item = HashMap::from([
        ("pk".into(), s(task_pk(id))),
        ("sk".into(), s(member_sk(participant))),
        ("gsi1pk".into(), s(listing_pk(&rec.tenant, participant))),
        ("gsi1sk".into(), s(listing_sk(rec.status_millis(), id))),
        ("context_id".into(), s(&rec.task.context_id)),
        ("state".into(), n(rec.state().number())),
    ]);
    if let Some(at) = expires {
        item.insert(TTL_ATTRIBUTE.into(), at.clone());
    }
    item
}

fn unavailable<E: std::error::Error + 'static, R: std::fmt::Debug>(
    e: SdkError<E, R>,
) -> StoreError {
    StoreError::Unavailable(DisplayErrorContext(&e).to_string())
}

/// Whether the `i`-th item of a cancelled transaction failed its condition.
fn condition_failed(cancel: &TransactionCanceledException, i: usize) -> bool {
    cancel.cancellation_reasons().get(i).and_then(|r| r.code()) == Some("ConditionalCheckFailed")
}

/// Whether DynamoDB refused a write for its size: an item over 400 KB, or a transaction
/// over 4 MB (DynamoDB Local: "Transaction payload size cannot exceed 4MB"). Commits are
/// checked against both before they are sent (`commit_items`); this
/// catches what that estimate misses.
fn too_large<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    let size = |m: &str| {
        let m = m.to_ascii_lowercase();
        m.contains("size") && (m.contains("exceed") || m.contains("larger than"))
    };
    e.code() == Some("ValidationException") && e.message().is_some_and(size)
}

/// An item's size as DynamoDB counts it, near enough (names and values in bytes).
fn item_bytes(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    AttributeValue::S(v) | AttributeValue::N(v) => v.len(),
                    AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
                    _ => 1,
                }
        })
        .sum()
}

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

fn push_item(record: &PushConfigRecord) -> Result<Item, StoreError> {
    Ok(HashMap::from([
        ("pk".into(), s(task_pk(&record.config.task_id))),
        ("sk".into(), s(push_sk(&record.config.id)?)),
        ("config".into(), s(to_json(record)?)),
        ("delivered".into(), n(record.delivered)),
        // Outside the JSON too, for put_push_config's condition.
        ("creator".into(), s(&record.creator)),
    ]))
}

fn decode_push(item: &Item) -> Result<PushConfigRecord, StoreError> {
    // Items written before cursors existed have none: nothing was delivered through them.
    let delivered = match item.get("delivered") {
        Some(v) => v
            .as_n()
            .map_err(|_| corrupt("delivered is not a number"))?
            .parse()
            .map_err(corrupt)?,
        None => 0,
    };
    PushConfigRecord::from_stored(get_s(item, "config")?, delivered)
}

fn get_s<'a>(item: &'a Item, key: &str) -> Result<&'a str, StoreError> {
    item.get(key)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| corrupt(format!("item without string attribute {key}")))
}

fn get_n(item: &Item, key: &str) -> Result<u64, StoreError> {
    item.get(key)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| corrupt(format!("item without number attribute {key}")))
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(corrupt)
}

/// A task from its head item, without its parts, and the counts of those.
/// A commit's transaction, and what it leaves to do.
struct CommitPlan {
    items: Vec<TransactWriteItem>,
    /// Whether an event of the task is stored in more than one item, as the head says.
    chunked: Option<bool>,
    /// The commit ends the task, and its items get their expiry after it.
    expire_after: bool,
}

fn decode_head(item: &Item) -> Result<(TaskRecord, Counts), StoreError> {
    let (mut rec, counts) = layout::decode_head(get_s(item, "record")?)?;
    rec.version = get_n(item, "version")?;
    rec.last_seq = get_n(item, "last_seq")?;
    Ok((rec, counts))
}

fn task_item(
    rec: &TaskRecord,
    head: &str,
    expires: Option<&AttributeValue>,
    events_chunked: Option<bool>,
) -> Result<Item, StoreError> {
    let mut item = HashMap::from([
        ("pk".into(), s(task_pk(&rec.task.id))),
        ("sk".into(), s("TASK")),
        ("version".into(), n(rec.version)),
        ("last_seq".into(), n(rec.last_seq)),
        ("record".into(), s(head)),
        // The listing index holds this head's members (a head without it was written
        // before that index: its next commit writes them all).
        (LISTED.into(), n(1)),
    ]);
    if let Some(at) = expires {
        item.insert(TTL_ATTRIBUTE.into(), at.clone());
    }
    if let Some(chunked) = events_chunked {
        item.insert(EVENTS_CHUNKED.into(), n(u64::from(chunked)));
    }
    // The sweeper's sparse index holds a task only while a drive holds its lease, or
    // while it waits on the wake-up this write is.
    let due = match rec.lease_expiry() {
        Some(until) => Some((LEASED, until)),
        None => rec.woken().then(|| (WOKEN, crate::engine::lease::now_ms())),
    };
    if let Some((partition, at)) = due {
        item.insert("gsi2pk".into(), s(partition));
        item.insert("gsi2sk".into(), s(format!("{:015}", at.max(0))));
    }
    // The resume function's event source mapping passes only records that carry it.
    if rec.woken() {
        item.insert("wake".into(), n(1));
    }
    Ok(item)
}

fn put(
    table: &str,
    item: Item,
    condition: &str,
    values: Option<Item>,
) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression(condition)
        .set_expression_attribute_values(values)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(corrupt)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

impl DynamoStore {
    /// A store on `table` with the client's configuration (region, credentials and the
    /// `AWS_ENDPOINT_URL_DYNAMODB` override come from the standard AWS chain).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
            retention: DEFAULT_RETENTION,
            task_retention: None,
            unlisted: None,
            signals: Default::default(),
        }
    }

    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Finished tasks expire this long after they end (through the TTL attribute, every
    /// item of theirs); None keeps them.
    pub fn with_task_retention(mut self, retention: Option<Duration>) -> Self {
        self.task_retention = retention;
        self
    }

    /// Leaves `participant`'s tasks out of the listing index (the harness's own id).
    pub fn with_unlisted(mut self, participant: impl Into<String>) -> Self {
        self.unlisted = Some(participant.into());
        self
    }

    /// When the items of `rec` expire: `task_retention` after it ended; None while it
    /// runs, or when finished tasks are kept.
    fn expiry(&self, rec: &TaskRecord) -> Option<AttributeValue> {
        let keep = self.task_retention?;
        rec.state()
            .is_terminal()
            .then(|| n(rec.status_millis() / 1000 + keep.as_secs() as i64))
    }

    /// Creates a table from the `Properties` of an `AWS::DynamoDB::Table` resource (the
    /// one `template.yaml` declares, as JSON): keys, attribute definitions, global
    /// indexes, billing mode, stream and TTL. For tests and local DynamoDB servers, so they
    /// run on exactly the table that is deployed.
    pub async fn create_table(
        client: &Client,
        table: &str,
        properties: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let bad = |what: &str| corrupt(format!("table definition: {what}"));
        let list =
            |v: &serde_json::Value, key: &str| v[key].as_array().cloned().unwrap_or_default();
        let text = |v: &serde_json::Value, key: &str| {
            v[key].as_str().map(str::to_owned).ok_or_else(|| bad(key))
        };
        let keys = |v: &serde_json::Value| {
            list(v, "KeySchema")
                .iter()
                .map(|k| {
                    KeySchemaElement::builder()
                        .attribute_name(text(k, "AttributeName")?)
                        .key_type(KeyType::from(text(k, "KeyType")?.as_str()))
                        .build()
                        .map_err(corrupt)
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let attributes = list(properties, "AttributeDefinitions")
            .iter()
            .map(|a| {
                AttributeDefinition::builder()
                    .attribute_name(text(a, "AttributeName")?)
                    .attribute_type(ScalarAttributeType::from(
                        text(a, "AttributeType")?.as_str(),
                    ))
                    .build()
                    .map_err(corrupt)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let indexes = list(properties, "GlobalSecondaryIndexes")
            .iter()
            .map(|g| {
                let projection = g["Projection"]["ProjectionType"].as_str().unwrap_or("ALL");
                GlobalSecondaryIndex::builder()
                    .index_name(text(g, "IndexName")?)
                    .set_key_schema(Some(keys(g)?))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::from(projection))
                            .build(),
                    )
                    .build()
                    .map_err(corrupt)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let stream = properties["StreamSpecification"]["StreamViewType"]
            .as_str()
            .map(|view| {
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::from(view))
                    .build()
            });
        client
            .create_table()
            .table_name(table)
            .billing_mode(BillingMode::from(
                properties["BillingMode"]
                    .as_str()
                    .unwrap_or("PAY_PER_REQUEST"),
            ))
            .set_attribute_definitions(Some(attributes))
            .set_key_schema(Some(keys(properties)?))
            .set_global_secondary_indexes((!indexes.is_empty()).then_some(indexes))
            .set_stream_specification(stream.transpose().map_err(corrupt)?)
            .send()
            .await
            .map_err(unavailable)?;
        let ttl = &properties["TimeToLiveSpecification"];
        if let (Some(attribute), Some(true)) =
            (ttl["AttributeName"].as_str(), ttl["Enabled"].as_bool())
        {
            client
                .update_time_to_live()
                .table_name(table)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .attribute_name(attribute)
                        .enabled(true)
                        .build()
                        .map_err(corrupt)?,
                )
                .send()
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }

    /// Puts `items` outside any transaction, 25 a BatchWriteItem; what throttling leaves
    /// unprocessed is sent again a bounded number of times, then is an error.
    async fn put_batches(&self, items: &[Item]) -> Result<(), StoreError> {
        for chunk in items.chunks(25) {
            let mut pending: Vec<WriteRequest> = chunk
                .iter()
                .map(|item| {
                    PutRequest::builder()
                        .set_item(Some(item.clone()))
                        .build()
                        .map(|p| WriteRequest::builder().put_request(p).build())
                        .map_err(corrupt)
                })
                .collect::<Result<_, _>>()?;
            for _ in 0..5 {
                if pending.is_empty() {
                    break;
                }
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, pending)
                    .send()
                    .await
                    .map_err(unavailable)?;
                pending = (out.unprocessed_items().and_then(|u| u.get(&self.table)))
                    .cloned()
                    .unwrap_or_default();
            }
            if !pending.is_empty() {
                return Err(StoreError::Unavailable(
                    "a batch write stayed throttled".into(),
                ));
            }
        }
        Ok(())
    }

    /// Gives every event of a finished task the `expires_at` TTL: the log is kept for the
    /// retention period after the task ends. One Query and a BatchWriteItem per 25 events.
    /// Gives a finished task's items their expiry: its events the retention period's,
    /// and, when finished tasks expire, every other item of it (its head and listing items
    /// got theirs in the commit that ended it) that task retention's, whichever is sooner
    /// for the events. Read consistently; only items written once (events, history,
    /// turns) are put again whole: the others (artifacts, a long status message, push
    /// configs and their count, which later writes may change) get their expiry by an
    /// update, so nothing newer is put over.
    async fn expire_finished(&self, rec: &TaskRecord) -> Result<(), StoreError> {
        let task_expires = self.expiry(rec);
        let events_expire = self.events_expiry(rec);
        let mut start: Option<Item> = None;
        loop {
            let query = self
                .client
                .query()
                .table_name(&self.table)
                .expression_attribute_values(":pk", s(task_pk(rec.id())));
            let query = if task_expires.is_some() {
                query.key_condition_expression("pk = :pk")
            } else {
                query
                    .key_condition_expression("pk = :pk AND begins_with(sk, :ev)")
                    .expression_attribute_values(":ev", s("EV#"))
            };
            let out = query
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            let mut expiring = Vec::new();
            for item in out.items() {
                let sk = get_s(item, "sk")?;
                let at = if sk.starts_with("EV#") {
                    n(events_expire)
                } else if sk == "TASK" || sk.starts_with("MEMBER#") {
                    continue;
                } else if let Some(at) = task_expires.clone() {
                    at
                } else {
                    continue;
                };
                let once = ["EV#", "HIST#", "TURN#"].iter().any(|p| sk.starts_with(p));
                if !once {
                    self.expire_item(rec.id(), sk, at).await?;
                    continue;
                }
                let mut item = item.clone();
                item.insert(TTL_ATTRIBUTE.into(), at);
                expiring.push(item);
            }
            self.put_batches(&expiring).await?;
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(());
            }
        }
    }

    /// When a finished task's events expire: the retention period from now, or with the
    /// task when that is sooner.
    fn events_expiry(&self, rec: &TaskRecord) -> i64 {
        let events_expire = Timestamp::now().millis() / 1000 + self.retention.as_secs() as i64;
        match &self.expiry(rec) {
            Some(AttributeValue::N(at)) => at
                .parse()
                .map_or(events_expire, |at: i64| at.min(events_expire)),
            _ => events_expire,
        }
    }

    /// [`Self::expire_finished`], best effort: a log that keeps its events is still
    /// correct, only longer-lived.
    async fn expire_finished_logged(&self, rec: &TaskRecord) {
        if let Err(e) = self.expire_finished(rec).await {
            tracing::warn!(task_id = %rec.task.id, error = %e, "could not set the expiry of a finished task's events");
        }
    }

    /// Sets the expiry of the item `sk` of task `task_id`, if it is still there.
    async fn expire_item(
        &self,
        task_id: &str,
        sk: &str,
        at: AttributeValue,
    ) -> Result<(), StoreError> {
        let result = (self.client.update_item())
            .table_name(&self.table)
            .key("pk", s(task_pk(task_id)))
            .key("sk", s(sk))
            .update_expression("SET #ttl = :at")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
            .expression_attribute_values(":at", at)
            .send()
            .await;
        match result {
            Err(e)
                if !matches!(
                    e.as_service_error(),
                    Some(UpdateItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Err(unavailable(e))
            }
            _ => Ok(()),
        }
    }

    /// The puts of a commit's events. An event of a task with webhooks carries `push`, so
    /// the notifier function's stream filter passes it and nothing else.
    /// Their items expire at `expires` when given (the commit ends the task).
    fn event_puts(
        &self,
        rec: &TaskRecord,
        first_seq: u64,
        events: &[StreamResponse],
        expires: Option<i64>,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let mut puts = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let mut item = HashMap::from([
                ("pk".into(), s(task_pk(&rec.task.id))),
                ("sk".into(), s(event_sk(first_seq + i as u64))),
            ]);
            if rec.push {
                item.insert("push".into(), AttributeValue::Bool(true));
            }
            if let Some(at) = expires {
                item.insert(TTL_ATTRIBUTE.into(), n(at));
            }
            for item in chunked(item, &to_json(e)?, rec.version) {
                puts.push(put(&self.table, item, "attribute_not_exists(pk)", None)?);
            }
        }
        Ok(puts)
    }

    /// In a commit that ends the task: the expiry of the events before `first_seq`, one
    /// update each, when their keys are known (none of them was chunked) and they are
    /// few; None when they are given it after the commit ([`Self::expire_finished`]).
    fn earlier_events_expiry(
        &self,
        rec: &TaskRecord,
        first_seq: u64,
        at: i64,
    ) -> Result<Option<Vec<TransactWriteItem>>, StoreError> {
        let known = rec.stored.events_chunked == Some(false) || first_seq == 0;
        if !known || first_seq > EXPIRE_IN_COMMIT || self.task_retention.is_some() {
            return Ok(None);
        }
        (0..first_seq)
            .map(|seq| {
                let update = Update::builder()
                    .table_name(&self.table)
                    .key("pk", s(task_pk(&rec.task.id)))
                    .key("sk", s(event_sk(seq)))
                    .update_expression("SET #ttl = :at")
                    .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
                    .expression_attribute_values(":at", n(at))
                    .build()
                    .map_err(corrupt)?;
                Ok(TransactWriteItem::builder().update(update).build())
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// The puts of the parts a commit changed: history messages and turns are new items
    /// (conditional on absence), artifacts and the status message replace their own.
    fn part_puts(
        &self,
        rec: &TaskRecord,
        parts: &[layout::Part],
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let mut puts = Vec::new();
        for p in parts {
            for item in part_items(rec, p) {
                puts.push(if p.once {
                    put(&self.table, item, "attribute_not_exists(pk)", None)?
                } else {
                    let put = Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(item))
                        .build()
                        .map_err(corrupt)?;
                    TransactWriteItem::builder().put(put).build()
                });
            }
        }
        Ok(puts)
    }

    /// The parts of kind `kind` at the indexes `range` (one Query, paged), as `attach`
    /// takes them.
    async fn read_parts(
        &self,
        task_id: &str,
        kind: PartKind,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<(PartKind, u64, String)>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(task_pk(task_id)))
                .expression_attribute_values(":from", s(part_sk(kind, range.start)))
                // `~` sorts after the digits: the last part's continuations are in range.
                .expression_attribute_values(
                    ":to",
                    s(format!("{}~~", part_sk(kind, range.end.saturating_sub(1)))),
                )
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            items.extend(out.items().iter().cloned());
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        joined(&items)?
            .into_iter()
            .map(|(item, payload)| {
                let sk = get_s(item, "sk")?;
                let index = sk[kind.prefix().len()..].parse().map_err(corrupt)?;
                Ok((kind, index, payload))
            })
            .collect()
    }

    /// The record of a head item with the parts `want` asks for (one Query per kind, run
    /// together); None, with nothing more read, unless `admit` passes the head.
    async fn with_parts(
        &self,
        item: &Item,
        want: Want,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let (mut rec, counts) = decode_head(item)?;
        if !admit(&rec) {
            return Ok(None);
        }
        let reads = PartKind::ALL
            .into_iter()
            .filter(|k| want.reads(*k, &counts))
            .map(|k| self.read_parts(&rec.task.id, k, want.range(k, &counts)));
        let parts = futures::future::try_join_all(reads).await?;
        layout::attach(&mut rec, &counts, want, parts.concat())?;
        if want == Want::WHOLE {
            if counts == Counts::default() {
                self.write_out_inline_parts(&mut rec).await?;
            }
            rec.stored.listing = item.contains_key(LISTED).then(|| Listing::of(&rec));
            rec.stored.events_chunked = item
                .get(EVENTS_CHUNKED)
                .and_then(|v| v.as_n().ok())
                .map(|v| v != "0");
        }
        Ok(Some(rec))
    }

    /// A head written before the layout holds its lists inline: they are written out as
    /// parts now (batches, outside any commit: more than one transaction could hold), so
    /// the record's next commit writes only its head and what is new.
    async fn write_out_inline_parts(&self, rec: &mut TaskRecord) -> Result<(), StoreError> {
        let split = layout::split(rec)?;
        if split.parts.is_empty() {
            return Ok(());
        }
        let items: Vec<Item> = (split.parts.iter())
            .flat_map(|p| part_items(rec, p))
            .collect();
        self.put_batches(&items).await?;
        rec.stored = split.stored;
        Ok(())
    }

    /// The task's head and the parts `want` asks for. A read that meets a part torn by a
    /// concurrent rewrite (an artifact being extended) is made again.
    async fn load(
        &self,
        task_id: &str,
        want: Want,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let mut attempt = 0;
        loop {
            let out = self
                .client
                .get_item()
                .table_name(&self.table)
                .key("pk", s(task_pk(task_id)))
                .key("sk", s("TASK"))
                .consistent_read(true)
                .send()
                .await
                .map_err(unavailable)?;
            let Some(item) = out.item() else {
                return Ok(None);
            };
            match self.with_parts(item, want, admit).await {
                Err(StoreError::Corrupt(_)) if attempt < 2 => attempt += 1,
                other => return other,
            }
        }
    }

    /// The items of a commit of `rec`: its head first, put on `condition` (an expression
    /// and its values), the message (when given) last. A commit that ends the task gives
    /// its events their expiry, and the earlier ones theirs when it can (see
    /// [`Self::earlier_events_expiry`]); the plan says whether the task's items still
    /// need theirs after it.
    fn commit_items(
        &self,
        rec: &TaskRecord,
        split: &layout::Split,
        (condition, values): (&str, Option<Item>),
        first_seq: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<CommitPlan, StoreError> {
        let ends = ended_by(events).is_some();
        let at = ends.then(|| self.events_expiry(rec));
        let event_items = self.event_puts(rec, first_seq, events, at)?;
        let chunked = (rec
            .stored
            .events_chunked
            .or((first_seq == 0).then_some(false)))
        .map(|was| was || event_items.len() > events.len());
        let head = task_item(rec, &split.head, self.expiry(rec).as_ref(), chunked)?;
        let mut items = vec![put(&self.table, head, condition, values)?];
        items.extend(self.part_puts(rec, &split.parts)?);
        items.extend(self.listing_writes(rec, split)?);
        items.extend(event_items);
        let earlier = match at {
            Some(at) => self.earlier_events_expiry(rec, first_seq, at)?,
            None => Some(Vec::new()),
        };
        let fits = |extra: usize| items.len() + extra < MAX_TRANSACTION_ITEMS;
        let earlier = earlier.filter(|e| fits(e.len()));
        let expire_after = ends && earlier.is_none();
        items.extend(earlier.unwrap_or_default());
        if let Some(m) = message {
            items.push(self.message_put(m, &rec.task.id)?);
        }
        let bytes: usize = (items.iter())
            .filter_map(|i| i.put().map(|p| item_bytes(p.item())))
            .sum();
        if items.len() > MAX_TRANSACTION_ITEMS || bytes > MAX_TRANSACTION_BYTES {
            return Err(StoreError::TooLarge(rec.task.id.clone()));
        }
        Ok(CommitPlan {
            items,
            chunked,
            expire_after,
        })
    }

    /// The listing index's writes in a commit of `rec`: every member's item again when
    /// the task sorts or filters differently (its status or state changed), a new
    /// member's, and a delete of a gone member's; nothing when the index has it as it is.
    fn listing_writes(
        &self,
        rec: &TaskRecord,
        split: &layout::Split,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        // The listing as this commit stores it (computed once, by the split).
        let now = split
            .stored
            .listing
            .clone()
            .unwrap_or_else(|| Listing::of(rec));
        let was = rec.stored.listing.as_ref();
        let moved = was.is_none_or(|w| w.status_ms != now.status_ms || w.state != now.state);
        let had = |p: &String| was.is_some_and(|w| w.members.contains(p));
        let listed = |p: &&String| self.unlisted.as_ref() != Some(*p);
        let expires = self.expiry(rec);
        let mut writes = Vec::new();
        for p in (now.members.iter().filter(listed)).filter(|p| moved || !had(p)) {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(member_item(rec, p, expires.as_ref())))
                .build()
                .map_err(corrupt)?;
            writes.push(TransactWriteItem::builder().put(put).build());
        }
        let delete = |sk: String| -> Result<TransactWriteItem, StoreError> {
            let delete = Delete::builder()
                .table_name(&self.table)
                .key("pk", s(task_pk(&rec.task.id)))
                .key("sk", s(sk))
                .build()
                .map_err(corrupt)?;
            Ok(TransactWriteItem::builder().delete(delete).build())
        };
        for p in was.iter().flat_map(|w| &w.members).filter(listed) {
            if !now.members.contains(p) {
                writes.push(delete(member_sk(p))?);
            }
        }
        // The member it waits on: again when it sorts differently, gone when it waits no more.
        let waited = was.and_then(|w| w.waiting.as_ref());
        if let Some(p) = now.waiting.as_ref().filter(listed) {
            if moved || waited != Some(p) {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(waiting_item(rec, p)))
                    .build()
                    .map_err(corrupt)?;
                writes.push(TransactWriteItem::builder().put(put).build());
            }
        }
        if let Some(p) = waited.filter(listed) {
            if now.waiting.as_ref() != Some(p) {
                writes.push(delete(waiting_sk(p))?);
            }
        }
        Ok(writes)
    }

    /// Writes the listing items of every task whose head was written before the listing
    /// index (a head without `listed`; ListTasks shows it only once this has run or it is
    /// committed again): a Scan of the table, then per such task a commit of it as it is.
    /// Safe beside running drives (each commit is conditional; a conflict is read again).
    /// Returns how many tasks it listed.
    pub async fn backfill_listing(&self) -> Result<u64, StoreError> {
        let mut listed = 0;
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("sk = :task AND attribute_not_exists(#listed)")
                .expression_attribute_names("#listed", LISTED)
                .expression_attribute_values(":task", s("TASK"))
                .projection_expression("pk")
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            for item in out.items() {
                let id = get_s(item, "pk")?.trim_start_matches("TASK#");
                loop {
                    let Some(rec) = self.load_task(id).await? else {
                        break;
                    };
                    if rec.stored.listing.is_some() {
                        break;
                    }
                    match self.commit(&rec, rec.version, &[], None).await {
                        Ok(_) => {
                            listed += 1;
                            break;
                        }
                        Err(StoreError::Conflict { .. }) => continue,
                        // One task that cannot be written (too large a roster for one
                        // transaction) stops no other.
                        Err(e) => {
                            tracing::warn!(task_id = %id, error = %e, "could not list the task");
                            break;
                        }
                    }
                }
            }
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(listed);
            }
        }
    }

    /// Runs a transaction of a few small items, sent again (a few times, briefly apart)
    /// when a concurrent transaction on one of its items cancelled it: the push configs'
    /// count is one item every create and delete of a task's configs writes. Refused with
    /// which items' conditions failed, or with the store's error.
    async fn transact_small(&self, items: Vec<TransactWriteItem>) -> Result<(), Refused> {
        let mut attempt = 0;
        loop {
            let err = match (self.client.transact_write_items())
                .set_transact_items(Some(items.clone()))
                .send()
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
                err.as_service_error()
            else {
                return Err(Refused::Store(unavailable(err)));
            };
            let reasons = cancel.cancellation_reasons();
            let conflict = reasons
                .iter()
                .any(|r| r.code() == Some("TransactionConflict"));
            if !conflict || attempt == 4 {
                let failed: Vec<bool> = (0..items.len())
                    .map(|i| condition_failed(cancel, i))
                    .collect();
                return Err(if failed.contains(&true) {
                    Refused::Conditions(failed)
                } else {
                    Refused::Store(unavailable(err))
                });
            }
            attempt += 1;
            tokio::time::sleep(Duration::from_millis(20 << attempt)).await;
        }
    }

    /// The heads of the tasks `ids`, read consistently, in the order of `ids` (one
    /// BatchGetItem per 100; a task gone since is left out). Keys throttling leaves
    /// unprocessed are asked for again a bounded number of times, then are an error.
    async fn heads(&self, ids: &[String]) -> Result<Vec<Item>, StoreError> {
        let mut found: HashMap<String, Item> = HashMap::new();
        for chunk in ids.chunks(100) {
            let keys = chunk
                .iter()
                .map(|id| HashMap::from([("pk".into(), s(task_pk(id))), ("sk".into(), s("TASK"))]))
                .collect::<Vec<_>>();
            let mut pending = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .consistent_read(true)
                    .build()
                    .map_err(corrupt)?,
            );
            let mut attempt = 0;
            while let Some(request) = pending.take() {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(unavailable)?;
                for item in out
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .into_iter()
                    .flatten()
                {
                    found.insert(get_s(item, "pk")?.to_owned(), item.clone());
                }
                pending = (out.unprocessed_keys())
                    .and_then(|u| u.get(&self.table))
                    .filter(|k| !k.keys().is_empty())
                    .cloned();
                if pending.is_some() {
                    attempt += 1;
                    if attempt > 5 {
                        return Err(StoreError::Unavailable(
                            "task heads left unread after 5 attempts".into(),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                }
            }
        }
        Ok(ids
            .iter()
            .filter_map(|id| found.remove(&task_pk(id)))
            .collect())
    }

    fn message_put(
        &self,
        m: &InboundMessage,
        task_id: &str,
    ) -> Result<TransactWriteItem, StoreError> {
        put(
            &self.table,
            self.message_item(m, task_id)?,
            "attribute_not_exists(pk)",
            None,
        )
    }

    /// A message's dedupe record: its sender's messageId names its task for the retention
    /// period (a resend within it is answered with that task), then expires.
    fn message_item(&self, m: &InboundMessage, task_id: &str) -> Result<Item, StoreError> {
        let expires = Timestamp::now().millis() / 1000 + self.retention.as_secs() as i64;
        Ok(HashMap::from([
            (TTL_ATTRIBUTE.into(), n(expires)),
            (
                "pk".into(),
                s(message_pk(&m.tenant, &m.sender, &m.message.message_id)?),
            ),
            ("sk".into(), s("MSG")),
            ("task_id".into(), s(task_id)),
        ]))
    }

    /// Runs a transaction whose first item is the task; a failed condition on it is a
    /// conflict, on the message (the last item, when given) a duplicate.
    async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        task_id: &str,
        expected: u64,
        message: Option<&InboundMessage>,
    ) -> Result<(), StoreError> {
        let count = items.len();
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        let err = match result {
            Ok(out) => {
                // What each commit costs, for operators (and the long-task tests).
                let units: f64 = (out.consumed_capacity().iter())
                    .filter_map(|c| c.capacity_units())
                    .sum();
                tracing::debug!(target: "harness::cost", %task_id, items = count, write_units = units, "commit");
                return Ok(());
            }
            Err(e) => e,
        };
        if too_large(&err) {
            return Err(StoreError::TooLarge(task_id.to_owned()));
        }
        let conflict = StoreError::Conflict {
            task_id: task_id.to_owned(),
            expected,
        };
        let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
            err.as_service_error()
        else {
            return Err(unavailable(err));
        };
        let failed = |i: usize| condition_failed(cancel, i);
        if let Some(m) = message {
            if failed(count - 1) {
                let owner = cancel
                    .cancellation_reasons()
                    .get(count - 1)
                    .and_then(|r| r.item())
                    .and_then(|item| get_s(item, "task_id").ok())
                    .map(str::to_owned);
                let task_id = match owner {
                    Some(t) => t,
                    None => self
                        .message_task(&m.tenant, &m.sender, &m.message.message_id)
                        .await?
                        .unwrap_or_default(),
                };
                return Err(StoreError::DuplicateMessage {
                    message_id: m.message.message_id.clone(),
                    task_id,
                });
            }
        }
        if (0..count).any(failed) {
            return Err(conflict);
        }
        // Cancelled for another reason (a concurrent transaction on the same items).
        Err(
            if cancel
                .cancellation_reasons()
                .iter()
                .any(|r| r.code() == Some("TransactionConflict"))
            {
                conflict
            } else {
                unavailable(err)
            },
        )
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let mut rec = record.created(events.len());
        let split = layout::split(&rec)?;
        let condition = "attribute_not_exists(pk)";
        let plan = self.commit_items(&rec, &split, (condition, None), 0, events, message)?;
        counting_conflicts(self.transact(plan.items, &rec.task.id, 0, message).await)?;
        rec.stored = split.stored;
        rec.stored.events_chunked = plan.chunked;
        self.signals.created(&rec, ended_by(events));
        if plan.expire_after {
            self.expire_finished_logged(&rec).await;
        }
        Ok(rec)
    }

    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let (mut rec, first_seq) = record.committed(expected_version, events.len());
        let split = layout::split(&rec)?;
        let values = HashMap::from([
            (":v".to_owned(), n(expected_version)),
            (":s".to_owned(), n(first_seq - 1)),
        ]);
        let condition = "version = :v AND last_seq = :s";
        let head = (condition, Some(values));
        let plan = self.commit_items(&rec, &split, head, first_seq, events, message)?;
        counting_conflicts(
            self.transact(plan.items, &rec.task.id, expected_version, message)
                .await,
        )?;
        rec.stored = split.stored;
        rec.stored.events_chunked = plan.chunked;
        self.signals.committed(&rec, ended_by(events));
        if plan.expire_after {
            self.expire_finished_logged(&rec).await;
        }
        Ok(rec)
    }

    async fn put_message(&self, message: &InboundMessage) -> Result<(), StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.message_item(message, "")?))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => {
                let Some(PutItemError::ConditionalCheckFailedException(failed)) =
                    e.as_service_error()
                else {
                    return Err(unavailable(e));
                };
                let owner = failed
                    .item()
                    .and_then(|i| get_s(i, "task_id").ok())
                    .map(str::to_owned);
                let task_id = match owner {
                    Some(t) => t,
                    None => {
                        let m = &message.message;
                        self.message_task(&message.tenant, &message.sender, &m.message_id)
                            .await?
                            .unwrap_or_default()
                    }
                };
                Err(StoreError::DuplicateMessage {
                    message_id: message.message.message_id.clone(),
                    task_id,
                })
            }
        }
    }

    async fn message_task(
        &self,
        tenant: &str,
        sender: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(message_pk(tenant, sender, message_id)?))
            .key("sk", s("MSG"))
            .consistent_read(true)
            .projection_expression("task_id")
            .send()
            .await
            .map_err(unavailable)?;
        out.item()
            .map(|i| get_s(i, "task_id").map(str::to_owned))
            .transpose()
    }

    async fn load_task_for(
        &self,
        task_id: &str,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.load(task_id, Want::WHOLE, admit).await
    }

    async fn load_view(
        &self,
        task_id: &str,
        history: Option<usize>,
        artifacts: bool,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.load(task_id, Want::view(history, artifacts), admit)
            .await
    }

    async fn read_events(
        &self,
        task_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let from = after.map(|a| a + 1).unwrap_or(0);
        let limit = limit.clamp(1, 1000);
        // Pages until `limit` whole events are read or the log ends: a page (1 MB at most)
        // may end inside a long event, which must not pass for the end of the log.
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(task_pk(task_id)))
                .expression_attribute_values(":from", s(event_sk(from)))
                .expression_attribute_values(":to", s(event_sk(u64::MAX)))
                .consistent_read(true)
                // Room for the continuations of long events.
                .limit((limit + MAX_CHUNKS) as i32)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            items.extend(out.items().iter().cloned());
            start = out.last_evaluated_key().cloned();
            if start.is_none() || joined(&items)?.len() >= limit {
                break;
            }
        }
        joined(&items)?
            .into_iter()
            .take(limit)
            .map(|(item, payload)| {
                let sk = get_s(item, "sk")?;
                let seq = sk.trim_start_matches("EV#").parse().map_err(corrupt)?;
                let event = serde_json::from_str(&payload).map_err(corrupt)?;
                Ok(LoggedEvent { seq, event })
            })
            .collect()
    }

    async fn list_tasks(&self, q: &TaskQuery) -> Result<TaskPage, StoreError> {
        let (partition, sort) = if q.waiting {
            (
                waiting_pk(&q.tenant, &q.participant),
                waiting_sk(&q.participant),
            )
        } else {
            (
                listing_pk(&q.tenant, &q.participant),
                member_sk(&q.participant),
            )
        };
        let mut filters = Vec::new();
        let mut values: Item = HashMap::from([(":m".to_owned(), s(&partition))]);
        let mut names = HashMap::new();
        if let Some(ctx) = &q.context_id {
            filters.push("context_id = :c");
            values.insert(":c".into(), s(ctx));
        }
        if let Some(state) = q.state {
            filters.push("#state = :st");
            names.insert("#state".to_owned(), "state".to_owned());
            values.insert(":st".into(), n(state.number()));
        }
        let mut key = "gsi1pk = :m".to_owned();
        if let Some(after) = q.status_after {
            key.push_str(" AND gsi1sk >= :after");
            values.insert(":after".into(), s(format!("{:015}", after.millis().max(0))));
        }
        let filter = (!filters.is_empty()).then(|| filters.join(" AND "));
        let names = (!names.is_empty()).then_some(names);
        let query = || {
            self.client
                .query()
                .table_name(&self.table)
                .index_name(INDEX)
                .key_condition_expression(&key)
                .set_filter_expression(filter.clone())
                .set_expression_attribute_names(names.clone())
                .set_expression_attribute_values(Some(values.clone()))
        };

        // The participant's own partition: its size, not the tenant's, is what it costs.
        let mut total = 0u64;
        let mut start: Option<Item> = None;
        loop {
            let out = query()
                .select(Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            total += out.count().max(0) as u64;
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }

        // The index is eventually consistent: each head, read consistently, has the last
        // word on whether the task is listed (a member just removed is not shown it).
        let admit = |rec: &TaskRecord| {
            rec.members().contains(&q.participant)
                && q.context_id
                    .as_ref()
                    .is_none_or(|c| *c == rec.task.context_id)
                && q.state.is_none_or(|st| st == rec.state())
                && q.status_after
                    .is_none_or(|a| rec.status_millis() >= a.millis())
                && (!q.waiting || rec.waiting_on().as_ref() == Some(&q.participant))
        };
        let want = Want::view(q.history, q.artifacts);
        let mut tasks = Vec::new();
        // Where each task stands in the index: the next page starts after it there, even
        // if its head has moved on since.
        let mut listed_at: HashMap<String, i64> = HashMap::new();
        let mut start = q.cursor.as_ref().map(|c| {
            HashMap::from([
                ("pk".to_owned(), s(task_pk(&c.task_id))),
                ("sk".to_owned(), s(&sort)),
                ("gsi1pk".to_owned(), s(&partition)),
                (
                    "gsi1sk".to_owned(),
                    s(listing_sk(c.status_millis, &c.task_id)),
                ),
            ])
        });
        while tasks.len() <= q.page_size {
            let out = query()
                .scan_index_forward(false)
                .limit((q.page_size + 1 - tasks.len()) as i32)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            let mut ids = Vec::new();
            for item in out.items() {
                let id = get_s(item, "pk")?.trim_start_matches("TASK#").to_owned();
                let at = get_s(item, "gsi1sk")?.split('#').next().unwrap_or_default();
                listed_at.insert(id.clone(), at.parse::<i64>().map_err(corrupt)?);
                ids.push(id);
            }
            let heads = self.heads(&ids).await?;
            let page = (heads.iter()).map(|item| self.with_parts(item, want, &admit));
            tasks.extend(
                futures::future::try_join_all(page)
                    .await?
                    .into_iter()
                    .flatten(),
            );
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        let next = if tasks.len() > q.page_size {
            tasks.truncate(q.page_size);
            tasks.last().map(|t| Cursor {
                status_millis: (listed_at.get(t.id()).copied())
                    .unwrap_or_else(|| t.status_millis()),
                task_id: t.task.id.clone(),
            })
        } else {
            None
        };
        Ok(TaskPage { tasks, next, total })
    }

    async fn put_push_config(&self, record: &PushConfigRecord) -> Result<(), StoreError> {
        let task_id = &record.config.task_id;
        // Conditional on its task: a config never outlives or precedes the task it serves.
        let task = ConditionCheck::builder()
            .table_name(&self.table)
            .key("pk", s(task_pk(task_id)))
            .key("sk", s("TASK"))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(corrupt)?;
        let taken = || StoreError::PushConfigTaken {
            task_id: task_id.clone(),
            id: record.config.id.clone(),
        };
        // First as a new config, counted under the task's limit in the same transaction;
        // one whose id exists is replaced instead, by its creator only (configs written
        // before creators were kept have none, and are no one's), counting no more.
        for new in [true, false] {
            let config = Put::builder()
                .table_name(&self.table)
                .set_item(Some(push_item(record)?));
            let config = if new {
                config.condition_expression("attribute_not_exists(pk)")
            } else if record.creator.is_empty() {
                return Err(taken());
            } else {
                config
                    .condition_expression("creator = :creator")
                    .expression_attribute_values(":creator", s(&record.creator))
            }
            .build()
            .map_err(corrupt)?;
            let mut items = vec![
                TransactWriteItem::builder()
                    .condition_check(task.clone())
                    .build(),
                TransactWriteItem::builder().put(config).build(),
            ];
            if new {
                let count = Update::builder()
                    .table_name(&self.table)
                    .key("pk", s(task_pk(task_id)))
                    .key("sk", s(PUSH_COUNT))
                    .update_expression("ADD configs :one")
                    .condition_expression("attribute_not_exists(configs) OR configs < :most")
                    .expression_attribute_values(":one", n(1))
                    .expression_attribute_values(":most", n(crate::push::MAX_CONFIGS_PER_TASK))
                    .build()
                    .map_err(corrupt)?;
                items.push(TransactWriteItem::builder().update(count).build());
            }
            let failed = match self.transact_small(items).await {
                Ok(()) => return Ok(()),
                Err(Refused::Store(e)) => return Err(e),
                Err(Refused::Conditions(failed)) => failed,
            };
            let failed = |i: usize| failed.get(i).copied().unwrap_or(false);
            if failed(0) {
                return Err(StoreError::NoTask(task_id.clone()));
            } else if failed(1) && new {
                continue;
            } else if failed(1) {
                return Err(taken());
            } else if failed(2) {
                return Err(StoreError::TooManyPushConfigs(task_id.clone()));
            }
            return Err(corrupt("a refused condition of no item"));
        }
        Err(taken())
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Option<PushConfigRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(task_pk(task_id)))
            .key("sk", s(push_sk(id)?))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        out.item().map(decode_push).transpose()
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PushConfigRecord>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(task_pk(task_id)))
            // '$' sorts after '#', so the lower bound excludes the `after` config itself.
            .expression_attribute_values(
                ":from",
                s(match after {
                    Some(a) => push_sk(a)? + "$",
                    None => "PUSH#".into(),
                }),
            )
            .expression_attribute_values(":to", s("PUSH#\u{10ffff}"))
            .consistent_read(true)
            .limit(limit.clamp(1, 1000) as i32)
            .send()
            .await
            .map_err(unavailable)?;
        out.items().iter().map(decode_push).collect()
    }

    async fn advance_push_config(
        &self,
        record: &PushConfigRecord,
        from: u64,
    ) -> Result<bool, StoreError> {
        // The same config, not one made since under its id by someone else (rows from
        // before creators were recorded have none).
        let condition = if record.creator.is_empty() {
            "delivered = :from AND (attribute_not_exists(creator) OR creator = :creator)"
        } else {
            "delivered = :from AND creator = :creator"
        };
        // An update, so what else the item holds (its expiry) stays.
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(task_pk(&record.config.task_id)))
            .key("sk", s(push_sk(&record.config.id)?))
            .update_expression("SET config = :config, delivered = :to")
            .condition_expression(condition)
            .expression_attribute_values(":config", s(to_json(record)?))
            .expression_attribute_values(":to", n(record.delivered))
            .expression_attribute_values(":from", n(from))
            .expression_attribute_values(":creator", s(&record.creator))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(_)) => Ok(false),
                _ => Err(unavailable(e)),
            },
        }
    }

    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), StoreError> {
        let sk = push_sk(id)?;
        let key = || {
            HashMap::from([
                ("pk".to_owned(), s(task_pk(task_id))),
                ("sk".to_owned(), s(&sk)),
            ])
        };
        // The config and its place in the task's count go together.
        let config = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key()))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(corrupt)?;
        let count = Update::builder()
            .table_name(&self.table)
            .key("pk", s(task_pk(task_id)))
            .key("sk", s(PUSH_COUNT))
            .update_expression("ADD configs :minus")
            .condition_expression("configs > :zero")
            .expression_attribute_values(":minus", n(-1))
            .expression_attribute_values(":zero", n(0))
            .build()
            .map_err(corrupt)?;
        let items = vec![
            TransactWriteItem::builder().delete(config).build(),
            TransactWriteItem::builder().update(count).build(),
        ];
        match self.transact_small(items).await {
            Ok(()) => return Ok(()),
            Err(Refused::Store(e)) => return Err(e),
            // Deleting one that is not there is not an error.
            Err(Refused::Conditions(failed)) if failed[0] => return Ok(()),
            Err(Refused::Conditions(_)) => {}
        }
        // A config from before the count: it never took a place in it.
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key()))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        let at = record.at_millis();
        if record.counted() {
            let hour = record.quota_hour();
            let counted = self
                .client
                .update_item()
                .table_name(&self.table)
                .key("pk", s(format!("QUOTA#{}", record.participant)))
                .key("sk", s(hour.to_string()))
                .update_expression("ADD rows_used :one SET #ttl = :expires")
                .condition_expression("attribute_not_exists(rows_used) OR rows_used < :quota")
                .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":quota", n(AUDIT_ROWS_PER_PARTICIPANT_HOUR))
                .expression_attribute_values(":expires", n((hour + 2) * 3600))
                .send()
                .await;
            match counted {
                Ok(_) => {}
                Err(e) => match e.as_service_error() {
                    Some(UpdateItemError::ConditionalCheckFailedException(_)) => return Ok(false),
                    _ => return Err(unavailable(e)),
                },
            }
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(format!("AUDIT#{}", record.task_id)))
            .item(
                "sk",
                // now_v7's counter orders one process's rows within a millisecond, so the
                // trail reads oldest first (the key is never shown: it need not be
                // unguessable).
                s(format!("{:015}#{}", at.max(0), uuid::Uuid::now_v7())),
            )
            .item("record", s(to_json(record)?))
            .item(
                TTL_ATTRIBUTE,
                n(at / 1000 + self.retention.as_secs() as i64),
            )
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(unavailable)?;
        Ok(true)
    }

    async fn due_tasks(
        &self,
        leases_before: i64,
        woken_before: i64,
        limit: usize,
    ) -> Result<Due, StoreError> {
        let ids = |partition: &'static str, before: i64| async move {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(SWEEP_INDEX)
                .key_condition_expression("gsi2pk = :p AND gsi2sk < :before")
                .expression_attribute_values(":p", s(partition))
                .expression_attribute_values(":before", s(format!("{:015}", before.max(0))))
                .limit(limit.clamp(1, 1000) as i32)
                .send()
                .await
                .map_err(unavailable)?;
            (out.items().iter())
                .map(|item| Ok(get_s(item, "pk")?.trim_start_matches("TASK#").to_owned()))
                .collect::<Result<Vec<String>, StoreError>>()
        };
        let (leased, woken) =
            futures::try_join!(ids(LEASED, leases_before), ids(WOKEN, woken_before))?;
        Ok(Due { leased, woken })
    }

    async fn audit_trail(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError> {
        let now = Timestamp::now().millis() / 1000;
        let mut records = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(format!("AUDIT#{task_id}")))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            for item in out.items() {
                // TTL deletion is lazy: an expired row may still be there.
                let expired = item
                    .get(TTL_ATTRIBUTE)
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|at| at <= now);
                if !expired {
                    records.push(serde_json::from_str(get_s(item, "record")?).map_err(corrupt)?);
                }
            }
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(records);
            }
        }
    }

    fn changes(&self) -> broadcast::Receiver<String> {
        self.signals.changes()
    }

    fn wakeups(&self) -> broadcast::Receiver<String> {
        self.signals.wakes()
    }

    fn pushes(&self) -> broadcast::Receiver<String> {
        self.signals.pushes()
    }
}
