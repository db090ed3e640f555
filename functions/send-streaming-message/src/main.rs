//! Lambda function: SendStreamingMessage (POST /message:stream), response-streamed.

use common::a2a::Operation;
use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run(Endpoint::Rest(Operation::SendStreamingMessage), true).await
}
