//! Lambda function: the callback remote agents' webhooks call
//! (POST /remote/callback/{reference}).

use common::server::Endpoint;

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::run(Endpoint::RemoteCallback, false).await
}
