//! Lambda function: SubscribeToTask (GET or POST /tasks/{id}:subscribe), response-streamed.

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run(Endpoint::Rest(Operation::SubscribeToTask), true).await
}
