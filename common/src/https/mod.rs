//! Outbound HTTPS and the AWS configuration: one HTTP client, reqwest on rustls with the
//! `ring` provider, for every client the harness builds (the AWS SDK clients, the model
//! providers, the webhook deliveries, the JWKS fetches), and where the SDK clients'
//! region, credentials and endpoints come from.
//!
//! The SDKs' and reqwest's defaults bring rustls on aws-lc, whose C library was about a
//! tenth of every Lambda function binary; ring does the same work in a fraction of it.
//! The SDKs' own HTTP client (hyper with HTTP/2, which none of our AWS calls use) was a
//! second HTTP stack in every binary beside reqwest: the SDK clients send through
//! reqwest instead ([`sdk_http_client`]).
//!
//! A Lambda function reads its AWS configuration from its environment alone
//! (its role's credentials and `AWS_REGION` are there), and only `harness-local`, which
//! runs on workstations with profiles and SSO, links aws-config's standard chain (with
//! its STS, SSO and IMDS clients) by calling [`use_standard_chain`].

pub mod resolve;
pub mod target;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Once, OnceLock, PoisonError};
use std::time::Duration;

use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::region::ProvideRegion;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::SharedCredentialsProvider;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use resolve::{Lookup, Resolver, SystemLookup};
use target::Targets;

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

/// The HTTP client the AWS SDK clients share: reqwest, with the connect and read timeouts
/// each SDK client asks for, never following a redirect, never through a proxy (as the
/// SDK's own client did unless told). Unlike the SDK's own client it cannot drop a
/// connection after a 5xx answer: the SDK's retry of one goes out on the same keep-alive
/// connection (a timeout or I/O error does close it).
pub fn sdk_http_client() -> SharedHttpClient {
    SharedHttpClient::new(SdkHttp::default())
}

/// The SDK's HTTP client on reqwest: one reqwest client per connect timeout asked for (a
/// process asks for one or two), so the connections of one pool are reused.
#[derive(Debug, Default)]
struct SdkHttp {
    clients: Mutex<Vec<(Option<Duration>, reqwest::Client)>>,
}

impl HttpClient for SdkHttp {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let connect = settings.connect_timeout();
        let read = settings.read_timeout();
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let client = match clients.iter().find(|(t, _)| *t == connect) {
            Some((_, client)) => Ok(client.clone()),
            None => {
                let mut builder = client_builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy();
                if let Some(t) = connect {
                    builder = builder.connect_timeout(t);
                }
                // A client that cannot be built fails this call with why (not the
                // process), and the next call tries again.
                builder
                    .build()
                    .map_err(|e| e.to_string())
                    .inspect(|client| {
                        clients.push((connect, client.clone()));
                    })
            }
        };
        SharedHttpConnector::new(SdkConnector { client, read })
    }
}

#[derive(Debug)]
struct SdkConnector {
    client: Result<reqwest::Client, String>,
    /// The SDK's read timeout: until the answer's head arrives, as the SDK's own client
    /// counts it (reqwest's would also cut off a streamed body, e.g. a model's, that
    /// pauses longer).
    read: Option<Duration>,
}

impl HttpConnector for SdkConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let (client, read) = (self.client.clone(), self.read);
        HttpConnectorFuture::new(async move {
            let client = client.map_err(|e| ConnectorError::other(e.into(), None))?;
            let request = request
                .try_into_http1x()
                .map_err(|e| ConnectorError::user(e.into()))?;
            let request = request.map(|body| match body.bytes() {
                // Every request body of ours is in memory: sent with its length.
                Some(bytes) => reqwest::Body::from(bytes.to_vec()),
                None => reqwest::Body::wrap(body),
            });
            let request =
                reqwest::Request::try_from(request).map_err(|e| ConnectorError::user(e.into()))?;
            let sent = client.execute(request);
            let answered = match read {
                Some(limit) => tokio::time::timeout(limit, sent).await.map_err(|_| {
                    ConnectorError::timeout(format!("no answer within {limit:?}").into())
                })?,
                None => sent.await,
            };
            let response = answered.map_err(|e| {
                if e.is_timeout() {
                    ConnectorError::timeout(e.into())
                } else if e.is_connect() || e.is_request() || e.is_body() {
                    // A refused or dropped connection: the SDK retries these.
                    ConnectorError::io(e.into())
                } else {
                    ConnectorError::other(e.into(), None)
                }
            })?;
            let response = http::Response::<reqwest::Body>::from(response);
            HttpResponse::try_from(response.map(SdkBody::from_body_1_x))
                .map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
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

/// An HTTP client that connects only to addresses `targets` permits (see [`resolve`]): no
/// proxy (it would resolve names its own way), no redirects, every request bounded by
/// `timeout`. For webhooks, remote agents and MCP servers alike. An address written in a
/// URL passes no resolver: check it with [`target::literal`] before sending.
pub fn guarded_client(targets: Targets, timeout: Duration) -> Result<reqwest::Client, String> {
    guarded_client_with(targets, timeout, Arc::new(SystemLookup))
}

pub fn guarded_client_with(
    targets: Targets,
    timeout: Duration,
    lookup: Arc<dyn Lookup>,
) -> Result<reqwest::Client, String> {
    crate::https::client_builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Resolver::new(targets, lookup))
        .build()
        .map_err(|e| format!("cannot build an outbound client: {e}"))
}
