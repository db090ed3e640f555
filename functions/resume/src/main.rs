//! Lambda function: resume. Fed by the table's DynamoDB stream (filtered to runnable,
//! unleased tasks); drives each task and reports failed records as batch item failures.

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run_resume().await
}
