//! Lambda function: the agent card (GET /.well-known/agent-card.json).

use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run_reader(Endpoint::AgentCard).await
}
