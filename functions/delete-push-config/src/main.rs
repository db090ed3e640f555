//! Lambda function: DeleteTaskPushNotificationConfig (DELETE /tasks/{id}/pushNotificationConfigs/{configId}).

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run(
        Endpoint::Rest(Operation::DeleteTaskPushNotificationConfig),
        false,
    )
    .await
}
