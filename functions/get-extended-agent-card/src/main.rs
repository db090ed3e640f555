//! Lambda function: GetExtendedAgentCard (GET /extendedAgentCard).

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run_reader(Endpoint::Rest(Operation::GetExtendedAgentCard)).await
}
