//! Lambda function: every method over JSON-RPC (POST /), response-streamed.

use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run(Endpoint::JsonRpc, true).await
}
