//! The audit trail as the operations write it: a record the store cannot take is logged,
//! and the request goes on.

use super::Harness;
use crate::store::AuditRecord;

impl Harness {
    /// Stores an audit record; one the store cannot take (down, or a refusal past the
    /// participant's hourly quota) is logged instead, and the request goes on.
    pub async fn audit(&self, record: &AuditRecord) {
        match self.store.audit(record).await {
            Ok(true) => {}
            Ok(false) => tracing::info!(
                participant = record.participant,
                tenant = record.tenant,
                operation = record.operation,
                task_id = record.task_id,
                message_id = record.message_id,
                detail = record.detail,
                "audit quota reached for the hour; this refusal is in the log only"
            ),
            Err(e) => tracing::warn!(error = %e, "the decision could not be audited"),
        }
    }
}
