//! The audit trail (`AUDIT#<task id>`), expiring through the TTL; the hourly counts per
//! participant (`QUOTA#…`), one of which (the refusals') bounds what a refused caller can
//! write; the agent ids the harness has used (`AGENT_IDS`).

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

/// The partition of the agent ids the harness has used.
const AGENT_IDS: &str = "AGENT_IDS";

use super::errors::{corrupt, unavailable};
use super::items::{get_s, n, s, to_json, Item};
use super::schema::TTL_ATTRIBUTE;
use super::DynamoStore;
use crate::a2a::Timestamp;
use crate::store::{AuditRecord, Quota, StoreError, AUDIT_ROWS_PER_PARTICIPANT_HOUR};

impl DynamoStore {
    /// [`Store::audit`](crate::store::Store::audit).
    pub(super) async fn append_audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        let at = record.at_millis();
        for (quota, key) in record.quotas() {
            let hour = record.quota_hour();
            if !(self.count_quota(quota, key, hour, AUDIT_ROWS_PER_PARTICIPANT_HOUR)).await? {
                return Ok(false);
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

    /// [`Store::take_quota`](crate::store::Store::take_quota): `QUOTA#<participant>` (or
    /// `QUOTA#<address>`, for [`Quota::AuditRowsFromPeer`]),
    /// `<hour>` for the audit's (the key it always had), `<quota>#<hour>` for another;
    /// an update of its own, expiring an hour after its hour.
    pub(super) async fn count_quota(
        &self,
        quota: Quota,
        participant: &str,
        hour: i64,
        limit: u64,
    ) -> Result<bool, StoreError> {
        let sk = match quota.name() {
            "" => hour.to_string(),
            name => format!("{name}#{hour}"),
        };
        let counted = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(format!("QUOTA#{participant}")))
            .key("sk", s(sk))
            .update_expression("ADD rows_used :one SET #ttl = :expires")
            .condition_expression("attribute_not_exists(rows_used) OR rows_used < :quota")
            .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":quota", n(limit))
            .expression_attribute_values(":expires", n((hour + 2) * 3600))
            .send()
            .await;
        match counted {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(_)) => Ok(false),
                _ => Err(unavailable(e)),
            },
        }
    }

    /// [`Store::record_agent_id`](crate::store::Store::record_agent_id): `AGENT_IDS`,
    /// `<id>`, put only if absent.
    pub(super) async fn put_agent_id(&self, id: &str) -> Result<(), StoreError> {
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(AGENT_IDS))
            .item("sk", s(id))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(_)) => Ok(()),
                _ => Err(unavailable(e)),
            },
        }
    }

    /// [`Store::agent_ids`](crate::store::Store::agent_ids).
    pub(super) async fn read_agent_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut ids = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(AGENT_IDS))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            for item in out.items() {
                ids.push(get_s(item, "sk")?.to_owned());
            }
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(ids);
            }
        }
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
