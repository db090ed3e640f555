//! Lambda function: sweeper. On an EventBridge schedule, finds tasks whose lease ran out
//! while WORKING and makes them runnable again (which wakes the resume function).

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run_sweeper().await
}
