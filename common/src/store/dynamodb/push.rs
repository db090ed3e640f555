//! Push configs (`PUSH#<id>`) and their count per task (`COUNT#PUSH`), changed together in
//! small transactions so the limit holds under concurrent creates.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ConditionCheck, Delete, Put, TransactWriteItem, Update};

use super::errors::{condition_failed, corrupt, unavailable};
use super::items::{decode_push, n, push_item, s, task_pk, to_json};
use super::DynamoStore;
use crate::store::keys::push_sk;
use crate::store::{PushConfigRecord, StoreError};

/// The sort key of a task's count of push configs (`configs`), which keeps the limit.
const PUSH_COUNT: &str = "COUNT#PUSH";

/// The refusal of `record` when a config with its id is someone else's.
fn taken(record: &PushConfigRecord) -> StoreError {
    StoreError::PushConfigTaken {
        task_id: record.config.task_id.clone(),
        id: record.config.id.clone(),
    }
}

/// Why a small transaction did not go through.
enum Refused {
    /// Each item's condition: whether it failed (at least one did).
    Conditions(Vec<bool>),
    Store(StoreError),
}

impl DynamoStore {
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

    /// [`Store::put_push_config`](crate::store::Store::put_push_config).
    pub(super) async fn put_push(&self, record: &PushConfigRecord) -> Result<(), StoreError> {
        let task_id = &record.config.task_id;
        // Conditional on its task: a config never outlives or precedes the task it serves.
        let task = ConditionCheck::builder()
            .table_name(&self.table)
            .key("pk", s(task_pk(task_id)))
            .key("sk", s("TASK"))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(corrupt)?;
        // First as a new config, counted under the task's limit in the same transaction;
        // one whose id exists is replaced instead (see `push_items`).
        for new in [true, false] {
            let mut items = vec![TransactWriteItem::builder()
                .condition_check(task.clone())
                .build()];
            items.extend(self.push_items(record, new)?);
            let failed = match self.transact_small(items).await {
                Ok(()) => return Ok(()),
                Err(Refused::Store(e)) => return Err(e),
                Err(Refused::Conditions(failed)) => failed,
            };
            let failed = |i: usize| failed.get(i).copied().unwrap_or(false);
            if failed(0) {
                return Err(StoreError::NoTask(task_id.clone()));
            }
            match self
                .push_refusals(record, new, 1)
                .into_iter()
                .find(|(i, _)| failed(*i))
            {
                Some((_, StoreError::PushConfigTaken { .. })) if new => continue,
                Some((_, refusal)) => return Err(refusal),
                None => return Err(corrupt("a refused condition of no item")),
            }
        }
        Err(taken(record))
    }

    /// The items that store `record`: as a new config (`new`: on the condition that its id
    /// is new, counted under its task's limit), or as the replacement of the config with its
    /// id, by that config's creator only (configs written before creators were kept have
    /// none, and are no one's: `PushConfigTaken`), counting no more.
    pub(super) fn push_items(
        &self,
        record: &PushConfigRecord,
        new: bool,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let config = Put::builder()
            .table_name(&self.table)
            .set_item(Some(push_item(record)?));
        let config = if new {
            config.condition_expression("attribute_not_exists(pk)")
        } else if record.creator.is_empty() {
            return Err(taken(record));
        } else {
            config
                .condition_expression("creator = :creator")
                .expression_attribute_values(":creator", s(&record.creator))
        }
        .build()
        .map_err(corrupt)?;
        let mut items = vec![TransactWriteItem::builder().put(config).build()];
        if new {
            let count = Update::builder()
                .table_name(&self.table)
                .key("pk", s(task_pk(&record.config.task_id)))
                .key("sk", s(PUSH_COUNT))
                .update_expression("ADD configs :one")
                .condition_expression("attribute_not_exists(configs) OR configs < :most")
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":most", n(crate::store::MAX_CONFIGS_PER_TASK))
                .build()
                .map_err(corrupt)?;
            items.push(TransactWriteItem::builder().update(count).build());
        }
        Ok(items)
    }

    /// What a failed condition on each of [`Self::push_items`] means, at its index in a
    /// transaction where they start at `at`: the config's id is taken (for a new config:
    /// try its replacement), or the task has as many configs as it may.
    pub(super) fn push_refusals(
        &self,
        record: &PushConfigRecord,
        new: bool,
        at: usize,
    ) -> Vec<(usize, StoreError)> {
        let mut refusals = vec![(at, taken(record))];
        if new {
            let full = StoreError::TooManyPushConfigs(record.config.task_id.clone());
            refusals.push((at + 1, full));
        }
        refusals
    }

    /// [`Store::get_push_config`](crate::store::Store::get_push_config).
    pub(super) async fn get_push(
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

    /// [`Store::list_push_configs`](crate::store::Store::list_push_configs).
    pub(super) async fn push_page(
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

    /// [`Store::advance_push_config`](crate::store::Store::advance_push_config).
    pub(super) async fn advance_push(
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

    /// [`Store::delete_push_config`](crate::store::Store::delete_push_config).
    pub(super) async fn delete_push(&self, task_id: &str, id: &str) -> Result<(), StoreError> {
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
}
