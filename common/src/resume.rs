//! The resume function: what wakes a task in AWS. The table's stream feeds it, through an
//! event source mapping whose filter passes only task items whose write was a wake-up
//! (`wake` set; see `template.yaml`); the handler checks each record again, skips
//! anything else, and drives the task under its own lease. A record whose drive fails is
//! reported as a batch item failure, so only it is retried.

use std::sync::Arc;
use std::time::Instant;

use crate::engine::Engine;
use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};

/// The task a stream record asks to resume (the store's reading of its item).
use crate::store::dynamodb::stream::task_to_resume;

/// Drives the task of every record that asks for it, before `deadline`; the failures
/// are the records to retry.
pub async fn handle(
    engine: &Arc<Engine>,
    event: &Event,
    deadline: Option<Instant>,
) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    for record in &event.records {
        let Some(task_id) = task_to_resume(record) else {
            continue;
        };
        if let Err(e) = engine.drive_now(&task_id, deadline).await {
            tracing::warn!(%task_id, error = %e, "resume failed; the record is retried");
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = record.change.sequence_number.clone();
            response.batch_item_failures.push(failure);
        }
    }
    response
}
