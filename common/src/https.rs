//! Outbound HTTPS and the AWS configuration: one TLS stack, rustls on the `ring`
//! provider, for every client the harness builds (the AWS SDK clients, the model
//! providers, the webhook deliveries), and where the SDK clients' region, credentials and
//! endpoints come from.
//!
//! The SDKs' and reqwest's defaults bring rustls on aws-lc, whose C library was about a
//! tenth of every Lambda function binary; ring does the same work in a fraction of it.
//! Likewise a Lambda function reads its AWS configuration from its environment alone
//! (its role's credentials and `AWS_REGION` are there), and only `harness-local`, which
//! runs on workstations with profiles and SSO, links aws-config's standard chain (with
//! its STS, SSO and IMDS clients) by calling [`use_standard_chain`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Once, OnceLock};

use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::region::ProvideRegion;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::SharedCredentialsProvider;
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

type Loader = fn() -> Pin<Box<dyn Future<Output = SdkConfig> + Send>>;

static LOADER: OnceLock<Loader> = OnceLock::new();

/// From now on [`sdk_config`] loads aws-config's standard chain: environment, shared
/// config and credentials files (profiles, SSO, assume-role), web identity, container and
/// instance metadata.
pub fn use_standard_chain() {
    let _ = LOADER.set(|| {
        Box::pin(
            aws_config::defaults(BehaviorVersion::latest())
                .http_client(sdk_http_client())
                .load(),
        )
    });
}

/// The AWS configuration the SDK clients are built from, on [`sdk_http_client`]: the
/// environment's (`AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/
/// `AWS_SESSION_TOKEN`, `AWS_ENDPOINT_URL`), or the standard chain after
/// [`use_standard_chain`].
pub async fn sdk_config() -> SdkConfig {
    if let Some(load) = LOADER.get() {
        return load().await;
    }
    let region = EnvironmentVariableRegionProvider::new().region().await;
    let credentials = EnvironmentVariableCredentialsProvider::new();
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(sdk_http_client())
        .region(region)
        .credentials_provider(SharedCredentialsProvider::new(credentials));
    if let Some(url) = env_nonempty("AWS_ENDPOINT_URL") {
        config = config.endpoint_url(url);
    }
    config.build()
}

/// A service's own endpoint from `AWS_ENDPOINT_URL_<SERVICE>` (e.g. `DYNAMODB` for
/// DynamoDB Local), which the standard chain also reads.
pub fn service_endpoint(service: &str) -> Option<String> {
    env_nonempty(&format!("AWS_ENDPOINT_URL_{service}"))
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
