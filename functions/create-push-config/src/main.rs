//! Lambda function: CreateTaskPushNotificationConfig (POST /tasks/{id}/pushNotificationConfigs).

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run(
        Endpoint::Rest(Operation::CreateTaskPushNotificationConfig),
        false,
    )
    .await
}
