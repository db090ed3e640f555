//! When items go (DynamoDB's TTL on `expires_at`): a finished task's events after the
//! retention period, and all its items when finished tasks expire; given in the commit
//! that ends a task when they fit, else right after it.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};

use super::errors::{corrupt, unavailable};
use super::items::{event_sk, get_s, n, s, task_pk, Item};
use super::schema::TTL_ATTRIBUTE;
use super::DynamoStore;
use crate::a2a::Timestamp;
use crate::store::{StoreError, TaskRecord};

/// How many earlier events a commit that ends a task gives their expiry itself; a task
/// with more has them given it after the commit (a Query and batch writes).
const EXPIRE_IN_COMMIT: u64 = 32;

impl DynamoStore {
    /// When the items of `rec` expire: `task_retention` after it ended; None while it
    /// runs, or when finished tasks are kept.
    pub(super) fn expiry(&self, rec: &TaskRecord) -> Option<AttributeValue> {
        let keep = self.task_retention?;
        rec.state()
            .is_terminal()
            .then(|| n(rec.status_millis() / 1000 + keep.as_secs() as i64))
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
    pub(super) fn events_expiry(&self, rec: &TaskRecord) -> i64 {
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
    pub(super) async fn expire_finished_logged(&self, rec: &TaskRecord) {
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

    /// In a commit that ends the task: the expiry of the events before `first_seq`, one
    /// update each, when their keys are known (none of them was chunked) and they are
    /// few; None when they are given it after the commit ([`Self::expire_finished`]).
    pub(super) fn earlier_events_expiry(
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
}
