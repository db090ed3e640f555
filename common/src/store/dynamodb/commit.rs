//! A commit as one transaction: its plan (the head, the changed parts, the listing items,
//! the events, the message), DynamoDB's limits on it, and how a cancelled transaction is
//! told apart (conflict, duplicate message, too large), plus the batch writes outside one.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, PutRequest, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, WriteRequest,
};

use super::chunks::chunked;
use super::errors::{condition_failed, corrupt, too_large, unavailable};
use super::items::{
    event_sk, get_s, item_bytes, n, part_items, s, task_item, task_pk, to_json, Item,
};
use super::schema::TTL_ATTRIBUTE;
use super::DynamoStore;
use crate::a2a::StreamResponse;
use crate::store::layout;
use crate::store::{
    counting_conflicts, ended_by, Along, InboundMessage, Store, StoreError, TaskRecord,
};

/// Most items in one transaction, and most bytes (DynamoDB's limits: 100 and 4 MB, less a
/// margin for what the estimate of an item's size leaves out).
const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024 - 64 * 1024;
/// Most items in one transaction (DynamoDB's limit).
const MAX_TRANSACTION_ITEMS: usize = 100;

/// A commit's transaction, and what it leaves to do.
struct CommitPlan {
    items: Vec<TransactWriteItem>,
    /// Whether an event of the task is stored in more than one item, as the head says.
    chunked: Option<bool>,
    /// The commit ends the task, and its items get their expiry after it.
    expire_after: bool,
}

pub(super) fn put(
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
    /// Puts `items` outside any transaction, 25 a BatchWriteItem; what throttling leaves
    /// unprocessed is sent again a bounded number of times, then is an error.
    pub(super) async fn put_batches(&self, items: &[Item]) -> Result<(), StoreError> {
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

    /// The items of a commit of `rec`: its head first, put on `condition` (an expression
    /// and its values). A commit that ends the task gives its events their expiry, and the
    /// earlier ones theirs when it can (see [`Self::earlier_events_expiry`]); the plan says
    /// whether the task's items still need theirs after it. [`Self::sealed`] adds the
    /// message.
    fn commit_items(
        &self,
        rec: &TaskRecord,
        split: &layout::Split,
        (condition, values): (&str, Option<Item>),
        first_seq: u64,
        events: &[StreamResponse],
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
        Ok(CommitPlan {
            items,
            chunked,
            expire_after,
        })
    }

    /// `items` with the message (when given) last, as [`Self::transact`] reads them, if
    /// they fit one transaction (`TooLarge` naming the task if not).
    fn sealed(
        &self,
        mut items: Vec<TransactWriteItem>,
        message: Option<&InboundMessage>,
        task_id: &str,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        if let Some(m) = message {
            items.push(self.message_put(m, task_id)?);
        }
        let bytes: usize = (items.iter())
            .filter_map(|i| i.put().map(|p| item_bytes(p.item())))
            .sum();
        if items.len() > MAX_TRANSACTION_ITEMS || bytes > MAX_TRANSACTION_BYTES {
            return Err(StoreError::TooLarge(task_id.to_owned()));
        }
        Ok(items)
    }

    /// Runs a transaction whose first item is the task; a failed condition on the message
    /// (the last item, when given) is a duplicate, else on the first item of `refusals`
    /// whose condition failed that refusal, else a conflict.
    async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        task_id: &str,
        expected: u64,
        message: Option<&InboundMessage>,
        refusals: &[(usize, StoreError)],
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
        if let Some((_, refusal)) = refusals.iter().find(|(i, _)| failed(*i)) {
            return Err(refusal.clone());
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

    /// [`Store::create_task`]: the task's first commit, on the condition that it is
    /// new.
    pub(super) async fn create(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        let (mut rec, plan, split) = self.new_task_items(record, events)?;
        let items = self.sealed(plan.items, message, &rec.task.id)?;
        counting_conflicts(self.transact(items, &rec.task.id, 0, message, &[]).await)?;
        rec.stored = split.stored;
        rec.stored.events_chunked = plan.chunked;
        self.signals.created(&rec, ended_by(events));
        if plan.expire_after {
            self.expire_finished_logged(&rec).await;
        }
        Ok(rec)
    }

    /// A new task's record as created with `events`, its items (on the condition that it
    /// is new), and its split.
    fn new_task_items(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
    ) -> Result<(TaskRecord, CommitPlan, layout::Split), StoreError> {
        let rec = record.created(events.len());
        let split = layout::split(&rec, &self.bounds)?;
        let condition = "attribute_not_exists(pk)";
        let plan = self.commit_items(&rec, &split, (condition, None), 0, events)?;
        Ok((rec, plan, split))
    }

    /// [`Store::commit_along`]: on the condition that the head is still at the version and
    /// last seq it was read at, with what goes along in the same transaction. A webhook
    /// goes as a new config (counted under its task's limit) and, when one with its id
    /// exists, again as that config's replacement, by its creator only.
    pub(super) async fn commit_at(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
        along: Along<'_>,
    ) -> Result<TaskRecord, StoreError> {
        let (mut rec, first_seq) = record.committed(expected_version, events.len());
        let split = layout::split(&rec, &self.bounds)?;
        let values = HashMap::from([
            (":v".to_owned(), n(expected_version)),
            (":s".to_owned(), n(first_seq - 1)),
        ]);
        let condition = "version = :v AND last_seq = :s";
        let head = (condition, Some(values));
        let plan = self.commit_items(&rec, &split, head, first_seq, events)?;
        let mut items = plan.items;
        // The task changed: a conflict, whatever else failed with it.
        let mut refusals = vec![(
            0,
            StoreError::Conflict {
                task_id: rec.task.id.clone(),
                expected: expected_version,
            },
        )];
        let mut child = None;
        if let Some((created, child_events)) = along.created {
            let (child_rec, child_plan, child_split) =
                self.new_task_items(created, child_events)?;
            let taken = StoreError::Conflict {
                task_id: child_rec.task.id.clone(),
                expected: 0,
            };
            refusals.push((items.len(), taken));
            items.extend(child_plan.items);
            child = Some((child_rec, child_plan.chunked, child_split.stored));
        }
        let id = rec.task.id.clone();
        let outcome = match along.push {
            None => {
                let items = self.sealed(items, message, &id)?;
                (self.transact(items, &id, expected_version, message, &refusals)).await
            }
            // First as a new config; when one with its id exists, as its replacement.
            Some(push) => {
                let mut new = true;
                loop {
                    let mut tried = items.clone();
                    let mut refusals = refusals.clone();
                    refusals.extend(self.push_refusals(push, new, tried.len()));
                    tried.extend(self.push_items(push, new)?);
                    let tried = self.sealed(tried, message, &id)?;
                    match (self.transact(tried, &id, expected_version, message, &refusals)).await {
                        Err(StoreError::PushConfigTaken { .. }) if new => new = false,
                        outcome => break outcome,
                    }
                }
            }
        };
        counting_conflicts(outcome)?;
        rec.stored = split.stored;
        rec.stored.events_chunked = plan.chunked;
        if let Some((mut child, chunked, stored)) = child {
            child.stored = stored;
            child.stored.events_chunked = chunked;
            self.signals.created(&child, None);
        }
        self.signals.committed(&rec, ended_by(events));
        if plan.expire_after {
            self.expire_finished_logged(&rec).await;
        }
        Ok(rec)
    }
}
