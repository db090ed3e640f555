//! Lambda function: notifier. Fed by the table's DynamoDB stream (filtered to new log
//! events of tasks with webhooks, and new webhooks); delivers each task's pending events
//! and reports what could not be caught up as batch item failures.

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run_notifier().await
}
