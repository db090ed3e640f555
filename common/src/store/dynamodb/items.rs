//! What the table's items look like: the key formats (`TASK#`, `EV#`, `MEMBER#`, …), the
//! builders of a task's items and the readers of their attributes. Only the store's own
//! modules (and the stream parsers beside them) know these formats.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::chunks::chunked;
use super::errors::corrupt;
use super::schema::{EVENTS_CHUNKED, LEASED, LISTED, TTL_ATTRIBUTE, WOKEN};
use crate::store::keys::{key_part, push_sk};
use crate::store::layout::{self, Counts, PartKind};
use crate::store::{PushConfigRecord, StoreError, TaskRecord};

pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(super) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(super) fn task_pk(id: &str) -> String {
    format!("TASK#{id}")
}

pub(super) fn event_sk(seq: u64) -> String {
    format!("EV#{seq:020}")
}

pub(super) fn part_sk(kind: PartKind, index: u64) -> String {
    format!("{}{index:010}", part_prefix(kind))
}

/// The sort-key prefix of the kind's parts.
pub(super) fn part_prefix(kind: PartKind) -> &'static str {
    match kind {
        PartKind::Artifact => "ART#",
        PartKind::History => "HIST#",
        PartKind::Status => "STATUS#",
        PartKind::Turn => "TURN#",
    }
}

/// The items of one part of `rec`, as the commit of `rec` writes them.
pub(super) fn part_items(rec: &TaskRecord, p: &layout::Part) -> Vec<Item> {
    let item = HashMap::from([
        ("pk".into(), s(task_pk(&rec.task.id))),
        ("sk".into(), s(part_sk(p.kind, p.index))),
    ]);
    chunked(item, &p.json, rec.version)
}

/// The listing index's partition of one participant's tasks in one tenant.
pub(super) fn listing_pk(tenant: &str, participant: &str) -> String {
    format!("MEMBER#{}#{}", key_part(tenant), key_part(participant))
}

/// Where a task sorts in a listing partition: newest status first, ties by id.
pub(super) fn listing_sk(status_ms: i64, id: &str) -> String {
    format!("{:015}#{id}", status_ms.max(0))
}

pub(super) fn member_sk(participant: &str) -> String {
    format!("MEMBER#{}", key_part(participant))
}

/// The listing index's partition of the tasks waiting on one participant in one tenant:
/// only those, so a "waiting on me" query reads nothing else.
pub(super) fn waiting_pk(tenant: &str, participant: &str) -> String {
    format!("WAITING#{}#{}", key_part(tenant), key_part(participant))
}

pub(super) fn waiting_sk(participant: &str) -> String {
    format!("WAITING#{}", key_part(participant))
}

/// A waiting task's item in the listing index for the member it waits on.
pub(super) fn waiting_item(rec: &TaskRecord, participant: &str) -> Item {
    let mut item = member_item(rec, participant, None);
    item.insert("sk".into(), s(waiting_sk(participant)));
    item.insert("gsi1pk".into(), s(waiting_pk(&rec.tenant, participant)));
    item
}

/// A task's item in the listing index for one of its members.
pub(super) fn member_item(
    rec: &TaskRecord,
    participant: &str,
    expires: Option<&AttributeValue>,
) -> Item {
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

/// An item's size as DynamoDB counts it, near enough (names and values in bytes).
pub(super) fn item_bytes(item: &Item) -> usize {
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

pub(super) fn push_item(record: &PushConfigRecord) -> Result<Item, StoreError> {
    Ok(HashMap::from([
        ("pk".into(), s(task_pk(&record.config.task_id))),
        ("sk".into(), s(push_sk(&record.config.id)?)),
        ("config".into(), s(to_json(record)?)),
        ("delivered".into(), n(record.delivered)),
        // Outside the JSON too, for put_push_config's condition.
        ("creator".into(), s(&record.creator)),
    ]))
}

pub(super) fn decode_push(item: &Item) -> Result<PushConfigRecord, StoreError> {
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

pub(super) fn get_s<'a>(item: &'a Item, key: &str) -> Result<&'a str, StoreError> {
    item.get(key)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| corrupt(format!("item without string attribute {key}")))
}

pub(super) fn get_n(item: &Item, key: &str) -> Result<u64, StoreError> {
    item.get(key)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| corrupt(format!("item without number attribute {key}")))
}

pub(super) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(corrupt)
}

/// A task from its head item, without its parts, and the counts of those.
pub(super) fn decode_head(item: &Item) -> Result<(TaskRecord, Counts), StoreError> {
    let (mut rec, counts) = layout::decode_head(get_s(item, "record")?)?;
    rec.version = get_n(item, "version")?;
    rec.last_seq = get_n(item, "last_seq")?;
    Ok((rec, counts))
}

pub(super) fn task_item(
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
    // The sweeper's sparse index holds a task only while a drive holds its lease, while
    // it waits under a timer (a reply deadline, a remote's next poll), or while it waits
    // on the wake-up this write is.
    let due = match rec.lease_expiry() {
        Some(until) => Some((LEASED, until)),
        None => rec.woken().then(|| (WOKEN, crate::task::lease::now_ms())),
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
