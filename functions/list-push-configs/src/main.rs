//! Lambda function: ListTaskPushNotificationConfigs (GET /tasks/{id}/pushNotificationConfigs).

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run_reader(Endpoint::Rest(Operation::ListTaskPushNotificationConfigs)).await
}
