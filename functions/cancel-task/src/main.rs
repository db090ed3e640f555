//! Lambda function: CancelTask (POST /tasks/{id}:cancel).

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run(Endpoint::Rest(Operation::CancelTask), false).await
}
