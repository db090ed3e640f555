//! The audit trail (`AUDIT#<task id>`), expiring through the TTL, and the hourly count of
//! refusals per participant (`QUOTA#…`) that bounds what a refused caller can write.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

use super::errors::{corrupt, unavailable};
use super::items::{get_s, n, s, to_json, Item};
use super::schema::TTL_ATTRIBUTE;
use super::DynamoStore;
use crate::a2a::Timestamp;
use crate::store::{AuditRecord, StoreError, AUDIT_ROWS_PER_PARTICIPANT_HOUR};

impl DynamoStore {
    /// [`Store::audit`](crate::store::Store::audit).
    pub(super) async fn append_audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
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

    /// [`Store::audit_trail`](crate::store::Store::audit_trail).
    pub(super) async fn audit_rows(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError> {
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
}
