//! The notifier function: what delivers webhooks in AWS. The table's stream feeds it
//! through an event source mapping whose filter passes only inserted log events of tasks
//! with webhooks (`push` set) and inserted push configs (see `template.yaml`); the handler
//! checks each record again, and delivers each named task's pending events once per
//! batch, tasks side by side. When a task cannot be caught up (store error, time running out), its first
//! record in the batch is reported as a batch item failure, so Lambda retries from there;
//! the cursors make the retry resume rather than repeat.

use std::time::Instant;

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};

use super::Notifier;

/// The task a stream record asks to notify about (the store's reading of its item).
use crate::store::dynamodb::stream::task_to_notify;

/// Catches up every task the batch names, before `deadline`.
pub async fn handle(
    notifier: &Notifier,
    event: &Event,
    deadline: Option<Instant>,
) -> DynamoDbEventResponse {
    // Each task once, at its first record's place in the batch.
    let mut tasks: Vec<(String, &EventRecord)> = Vec::new();
    for record in &event.records {
        if let Some(task_id) = task_to_notify(record) {
            if !tasks.iter().any(|(t, _)| *t == task_id) {
                tasks.push((task_id, record));
            }
        }
    }
    let outcomes = futures::future::join_all(
        tasks
            .iter()
            .map(|(task_id, _)| notifier.deliver_pending(task_id, deadline)),
    )
    .await;
    let mut response = DynamoDbEventResponse::default();
    for ((task_id, first), outcome) in tasks.iter().zip(outcomes) {
        if let Err(e) = outcome {
            tracing::warn!(%task_id, error = %e, "push delivery incomplete; the record is retried");
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = first.change.sequence_number.clone();
            response.batch_item_failures.push(failure);
        }
    }
    response
}
