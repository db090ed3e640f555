//! Outbound HTTPS: one TLS stack, rustls on the `ring` provider, for every client the
//! harness builds (the AWS SDK clients, the model providers, the webhook deliveries).
//!
//! The SDKs' and reqwest's defaults bring rustls on aws-lc, whose C library was about a
//! tenth of every Lambda function binary; ring does the same work in a fraction of it.

use std::sync::Once;

use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};

/// A reqwest client builder on the harness's TLS stack. Every reqwest client is built
/// from one of these: reqwest (built without a provider of its own) refuses to build a
/// client before a provider is installed.
pub fn client_builder() -> reqwest::ClientBuilder {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Fails only when another provider was installed first, which then serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

/// The HTTPS client the AWS SDK clients share.
pub fn sdk_http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// The AWS configuration from the standard chain (region, credentials, endpoint
/// overrides such as `AWS_ENDPOINT_URL_DYNAMODB`), on [`sdk_http_client`].
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(sdk_http_client())
        .load()
        .await
}
