//! Lambda function: GetTaskPushNotificationConfig (GET /tasks/{id}/pushNotificationConfigs/{configId}).

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run_reader(Endpoint::Rest(Operation::GetTaskPushNotificationConfig)).await
}
