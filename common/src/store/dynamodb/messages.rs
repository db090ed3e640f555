//! A message's dedupe record (`IN#…`, `MSG`): what makes a resend within the retention
//! period an answer with its task rather than a second task.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{ReturnValuesOnConditionCheckFailure, TransactWriteItem};

use super::commit::put;
use super::errors::unavailable;
use super::items::{get_s, n, s, Item};
use super::schema::TTL_ATTRIBUTE;
use super::DynamoStore;
use crate::a2a::Timestamp;
use crate::store::keys::message_pk;
use crate::store::{InboundMessage, Store, StoreError};

impl DynamoStore {
    pub(super) fn message_put(
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

    /// [`Store::put_message`]: the record alone, for a message that starts no
    /// task.
    pub(super) async fn put_dedupe(&self, message: &InboundMessage) -> Result<(), StoreError> {
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

    /// [`Store::message_task`].
    pub(super) async fn dedupe_task(
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
}
