//! Running as an AWS Lambda function: the configuration from the environment, the store
//! it names, and the `lambda_http` runtime, buffered or response-streaming. A function's
//! `main` is one call to [`run`].
//!
//! Every variable the functions read, with its default, is in [`crate::config::settings`]
//! and documented in `functions/README.md` ("Function configuration").

use std::sync::Arc;
use std::time::Duration;

use crate::agent::context::SystemPrompt;
use crate::agent::{self, AgentKind};
use crate::config::settings::{self, Setting};
use crate::config::Config;
use crate::models::config::{Credentials, ModelCatalog};
use crate::ops::Harness;
use crate::server::{self, Endpoint};
use crate::store::{DynamoStore, Store};

pub type Error = lambda_http::Error;

/// The value of `setting`'s variable; blank is unset.
fn var(setting: Setting) -> Option<String> {
    debug_assert!(
        setting.lambda.is_read(),
        "{}: the settings table says the functions do not read it",
        setting.env
    );
    std::env::var(setting.env)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

fn parse<T: std::str::FromStr>(setting: Setting, default: T) -> Result<T, Error>
where
    T::Err: std::fmt::Display,
{
    match var(setting) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|e| format!("{}={v:?}: {e}", setting.env).into()),
    }
}

/// `HARNESS_REPLY_WITHIN` and `HARNESS_REPLY_WITHIN_MAX`.
fn reply_within() -> Result<crate::task::deadline::ReplyWithin, Error> {
    let (default, max) = (settings::REPLY_WITHIN, settings::REPLY_WITHIN_MAX);
    Ok(crate::task::deadline::ReplyWithin::parse(
        (default.env, var(default).as_deref()),
        (max.env, var(max).as_deref()),
    )?)
}

/// A participant id from the environment, refused if it could not be one.
fn checked_id(setting: Setting) -> Result<Option<String>, Error> {
    var(setting)
        .map(|v| {
            crate::ext::participant::parse_id(&v)
                .map_err(|e| format!("{}: {e}", setting.env).into())
        })
        .transpose()
}

/// The configuration the environment describes.
pub fn config_from_env() -> Result<Config, Error> {
    let defaults = Config::default();
    Ok(Config {
        public_url: var(settings::PUBLIC_URL).unwrap_or_default(),
        // API Gateway and Function URLs answer only to their own names (the Host the
        // function sees is AWS's, or the front door's origin): no name to check here. A
        // browser's simple request still cannot call a function (no Content-Type, no
        // version header, no token without a preflight, which nothing here answers).
        allowed_hosts: crate::config::hosts::AllowedHosts::Any,
        jsonrpc_url: var(settings::JSONRPC_URL),
        rest_content_type: parse(settings::REST_CONTENT_TYPE, defaults.rest_content_type)?,
        required_extensions: var(settings::REQUIRED_EXTENSIONS)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        max_body_bytes: parse(settings::MAX_BODY_BYTES, defaults.max_body_bytes)?,
        blocking_wait: Duration::from_secs(parse(
            settings::MAX_BLOCKING_WAIT_SECONDS,
            defaults.blocking_wait.as_secs(),
        )?),
        // API Gateway throttles in AWS; there is no peer address to key on here.
        rate_limit_per_minute: 0,
        // Each invocation prints its metrics (EMF) instead.
        metrics_endpoint: false,
        push_notifications: parse(settings::PUSH_NOTIFICATIONS, true)?,
        push_key: var(settings::PUSH_KEY)
            .map(|k| {
                k.parse()
                    .map_err(|e| format!("{}: {e}", settings::PUSH_KEY.env))
            })
            .transpose()?,
        // The environment freezes after its answer: the notifier function delivers.
        push_in_process: false,
        push_allow_private_urls: parse(settings::PUSH_ALLOW_PRIVATE_URLS, false)?,
        allow_http_urls: parse(settings::ALLOW_HTTP_URLS, false)?,
        webhook_allow: var(settings::WEBHOOK_ALLOW)
            .map(|v| {
                v.split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| {
                        s.parse()
                            .map_err(|e| format!("{}: {e}", settings::WEBHOOK_ALLOW.env))
                    })
                    .collect::<Result<_, _>>()
            })
            .transpose()?
            .unwrap_or_default(),
        mcp_servers: var(settings::MCP).map(|path| crate::config::Source::File(path.into())),
        remote_agents: var(settings::AGENTS).map(|path| crate::config::Source::File(path.into())),
        personal_channels: var(settings::PERSONAL_CHANNELS)
            .map(|path| crate::config::Source::File(path.into())),
        tasks_for_others_per_hour: parse(
            settings::TASKS_FOR_OTHERS_PER_HOUR,
            defaults.tasks_for_others_per_hour,
        )?,
        posts_per_sender_per_hour: parse(
            settings::POSTS_PER_SENDER_PER_HOUR,
            defaults.posts_per_sender_per_hour,
        )?,
        posts_per_recipient_per_hour: parse(
            settings::POSTS_PER_RECIPIENT_PER_HOUR,
            defaults.posts_per_recipient_per_hour,
        )?,
        agent_id: checked_id(settings::AGENT_ID)?.unwrap_or(defaults.agent_id),
        lease_ttl: Duration::from_secs(parse(
            settings::LEASE_SECONDS,
            defaults.lease_ttl.as_secs(),
        )?),
        // A frozen environment cannot go on with a run after answering: the write that
        // leaves the task runnable wakes the resume function instead.
        detached_runs: false,
        default_participant: checked_id(settings::DEFAULT_PARTICIPANT)?,
        // A deployment verifies identity unless told otherwise.
        auth: crate::auth::Options {
            mode: parse(settings::AUTH, crate::auth::AuthMode::Jwt)?,
            jwks_url: var(settings::JWKS_URL),
            issuer: var(settings::JWT_ISSUER),
            audience: var(settings::JWT_AUDIENCE),
            identity_claim: var(settings::IDENTITY_CLAIM),
            oidc_discovery_url: var(settings::OIDC_DISCOVERY_URL),
        }
        .resolve(None)?,
        ..defaults
    })
}

/// The DynamoDB store on `table`, its client configured by [`crate::https::sdk_config`]
/// (region, credentials) and `AWS_ENDPOINT_URL_DYNAMODB`.
pub async fn dynamo_store(table: String, retention_days: u64) -> DynamoStore {
    let sdk = crate::https::sdk_config().await;
    let mut config = aws_sdk_dynamodb::config::Builder::from(&sdk);
    if let Some(url) = crate::https::service_endpoint("DYNAMODB") {
        config = config.endpoint_url(url);
    }
    let client = aws_sdk_dynamodb::Client::from_conf(config.build());
    DynamoStore::new(client, table).with_retention(Duration::from_secs(retention_days * 24 * 3600))
}

fn retention_days() -> Result<u64, Error> {
    parse(settings::AUDIT_RETENTION_DAYS, 30)
}

/// How large a task may grow (`HARNESS_TASK_MAX_MESSAGES`, `HARNESS_TASK_MAX_BYTES`).
fn task_bounds() -> Result<crate::config::TaskBounds, Error> {
    let defaults = crate::config::TaskBounds::default();
    Ok(crate::config::TaskBounds {
        messages: parse(settings::TASK_MAX_MESSAGES, defaults.messages)?,
        bytes: parse(settings::TASK_MAX_BYTES, defaults.bytes)?,
    })
}

/// The store the environment names, with its SDK client built once per cold start.
pub async fn store_from_env() -> Result<Arc<dyn Store>, Error> {
    Ok(match open_store().await? {
        Opened::Dynamo(store) => Arc::new(store),
        #[cfg(feature = "embedded-store")]
        Opened::Embedded(store) => Arc::new(store),
    })
}

/// [`store_from_env`] for the read-only functions: [`crate::store::ReadOnly`].
async fn read_only_store_from_env() -> Result<Arc<dyn Store>, Error> {
    use crate::store::ReadOnly;
    Ok(match open_store().await? {
        Opened::Dynamo(store) => Arc::new(ReadOnly(store)),
        #[cfg(feature = "embedded-store")]
        Opened::Embedded(store) => Arc::new(ReadOnly(store)),
    })
}

/// The store `HARNESS_STORE` names, before it is shared: which one a binary shares (and
/// so links) is decided at compile time.
enum Opened {
    Dynamo(crate::store::DynamoStore),
    #[cfg(feature = "embedded-store")]
    Embedded(crate::store::EmbeddedStore),
}

async fn open_store() -> Result<Opened, Error> {
    // The harness's own id, whose tasks neither store lists (no client may speak as it).
    let agent = checked_id(settings::AGENT_ID)?;
    let unlisted = agent.as_deref().unwrap_or(crate::config::DEFAULT_AGENT_ID);
    match var(settings::STORE).as_deref().unwrap_or("dynamodb") {
        "dynamodb" => {
            let table = var(settings::TABLE)
                .ok_or("HARNESS_TABLE is required with HARNESS_STORE=dynamodb")?;
            // 0: finished tasks are kept.
            let days = parse(settings::TASK_RETENTION_DAYS, 0)?;
            let keep = (days > 0).then(|| Duration::from_secs(days * 24 * 3600));
            let store = dynamo_store(table, retention_days()?).await;
            Ok(Opened::Dynamo(
                (store.with_task_retention(keep).with_unlisted(unlisted))
                    .with_bounds(task_bounds()?),
            ))
        }
        #[cfg(feature = "embedded-store")]
        "embedded" => {
            let dir = var(settings::STATE_DIR).unwrap_or_else(|| ".harness".into());
            let store = crate::store::EmbeddedStore::open(std::path::Path::new(&dir))?
                .with_retention(Duration::from_secs(retention_days()? * 24 * 3600))
                .with_unlisted(unlisted)
                .with_bounds(task_bounds()?);
            Ok(Opened::Embedded(store))
        }
        #[cfg(not(feature = "embedded-store"))]
        "embedded" => Err("HARNESS_STORE=embedded: this build has no embedded store \
             (build the function with `--features embedded-store`)"
            .into()),
        other => Err(format!("HARNESS_STORE={other:?}: expected dynamodb or embedded").into()),
    }
}

/// The built-in system prompt with a prompt file's sections applied (replacing, or with
/// `(extends)`, extending the built-in ones).
pub fn prompt_from(file: Option<&str>) -> Result<SystemPrompt, Error> {
    let mut prompt = SystemPrompt::default();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the prompt file {path}: {e}"))?;
        prompt
            .apply(&text)
            .map_err(|e| format!("prompt file {path}: {e}"))?;
    }
    Ok(prompt)
}

/// Which functions call the model: only the one that drives tasks reads the model's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModelCalls {
    /// The resume function: the key from `HARNESS_MODEL_API_KEY_SECRET` (Secrets
    /// Manager, read here, once per cold start), else from the model's variable.
    Drives,
    /// Every other function: no model is built, and none is called.
    None,
}

/// What a function that never drives the LLM agent needs, from the environment: every
/// function but resume. Its agent is the conformance agent or the LLM agent as
/// [`agent::elsewhere::DrivenElsewhere`], so it links no model provider or MCP client.
pub async fn harness_from_env() -> Result<Arc<Harness>, Error> {
    let (config, kind, settings) = settings_from_env(ModelCalls::None).await?;
    let agent = agent::driven_elsewhere(kind, &settings)?;
    let store = store_from_env().await?;
    Ok(Harness::with_remotes(
        store,
        agent,
        config,
        settings.remotes,
    )?)
}

/// What the resume function needs, from the environment: the agent that drives tasks,
/// with its model's key and its MCP servers.
pub async fn driving_harness_from_env() -> Result<Arc<Harness>, Error> {
    let (config, kind, mut settings) = settings_from_env(ModelCalls::Drives).await?;
    settings.mcp = (config.mcp_servers.as_ref())
        .map(|source| crate::mcp::Setup::load(source, &config))
        .transpose()?;
    let agent = agent::build(kind, &settings).await?;
    let store = store_from_env().await?;
    Ok(Harness::with_remotes(
        store,
        agent,
        config,
        settings.remotes,
    )?)
}

/// The configuration, the agent's kind and the LLM agent's settings (without MCP, which
/// only [`driving_harness_from_env`] loads), with the secrets `calls` needs read.
async fn settings_from_env(
    calls: ModelCalls,
) -> Result<(Config, AgentKind, agent::LlmSettings), Error> {
    let mut config = config_from_env()?;
    if let (Some(arn), ModelCalls::Drives) = (var(settings::MCP_SECRET), calls) {
        let text = crate::secrets::text(&arn, "MCP servers").await?;
        config.mcp_servers = Some(crate::config::Source::Text {
            origin: format!("secret {arn}"),
            text,
        });
    }
    if let Some(arn) = var(settings::AGENTS_SECRET) {
        let text = crate::secrets::text(&arn, "agents registry").await?;
        config.remote_agents = Some(crate::config::Source::Text {
            origin: format!("secret {arn}"),
            text,
        });
    }
    if let Some(arn) = var(settings::PERSONAL_CHANNELS_SECRET) {
        let text = crate::secrets::text(&arn, "personal channels").await?;
        config.personal_channels = Some(crate::config::Source::Text {
            origin: format!("secret {arn}"),
            text,
        });
    }
    let kind: AgentKind = parse(settings::AGENT, AgentKind::Conformance)?;
    let mut catalog = match var(settings::MODELS) {
        Some(path) => ModelCatalog::load(std::path::Path::new(&path))?,
        None => ModelCatalog::default(),
    };
    catalog.credentials = match (calls, var(settings::MODEL_API_KEY_SECRET)) {
        (ModelCalls::None, _) => Credentials::NoCalls,
        (ModelCalls::Drives, Some(arn)) => {
            // The key is the default model's: bound to its provider and endpoint.
            let name = var(settings::MODEL)
                .or_else(|| catalog.default.clone())
                .ok_or("HARNESS_MODEL_API_KEY_SECRET is for a model: set HARNESS_MODEL")?;
            let spec = catalog.resolve(&name)?;
            Credentials::Key {
                provider: spec.provider,
                base_url: spec.base_url,
                key: crate::secrets::api_key(&arn).await?,
            }
        }
        (ModelCalls::Drives, None) => Credentials::FromEnv,
    };
    let settings = agent::LlmSettings {
        model: var(settings::MODEL),
        catalog,
        prompt: prompt_from(var(settings::PROMPT).as_deref())?,
        turn_limit: parse(settings::TURN_LIMIT, crate::agent::llm::DEFAULT_TURN_LIMIT)?,
        context_tokens: var(settings::CONTEXT_TOKENS)
            .map(|_| parse(settings::CONTEXT_TOKENS, 0))
            .transpose()?,
        remotes: crate::remote::Remotes::from_config(&config)?,
        mcp: None,
        reply_within: reply_within()?,
    };
    Ok((config, kind, settings))
}

/// What every function does first: the redactor (the built-in table and
/// `HARNESS_REDACT_PATTERNS`), then JSON logs through it, and traces when the standard
/// OpenTelemetry variables ask for them (the ADOT layer's collector, or any endpoint).
fn start() -> Result<(), Error> {
    let extra = crate::redact::Redactor::from_env_value(var(settings::REDACT_PATTERNS).as_deref())?;
    crate::redact::install(extra);
    let traces = crate::traces::Options {
        service: var(settings::AWS_LAMBDA_FUNCTION_NAME).unwrap_or_else(|| "tiny-harness".into()),
        capture_content: parse(settings::OTEL_CAPTURE_CONTENT, false)?,
    };
    crate::logs::init_lambda(&traces)?;
    Ok(())
}

/// The CloudWatch namespace of the functions' metrics.
pub const METRICS_NAMESPACE: &str = "TinyHarness";

/// Where an invocation's metrics go: one CloudWatch Embedded Metric Format line each,
/// which CloudWatch Logs turns into metrics with no client and no extra request.
pub type MetricsSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Lambda's log: stdout.
pub fn stdout_metrics() -> MetricsSink {
    Arc::new(|line: &str| {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
    })
}

/// Prints what this invocation recorded (the process serves one invocation at a time).
pub fn emit_metrics(sink: &MetricsSink) {
    static FUNCTION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        std::env::var(settings::AWS_LAMBDA_FUNCTION_NAME.env)
            .unwrap_or_else(|_| "tiny-harness".into())
    });
    let now = chrono::Utc::now().timestamp_millis();
    for line in crate::metrics::take_emf(METRICS_NAMESPACE, &FUNCTION, now) {
        sink(&line);
    }
}

/// A function's router: `endpoint`, printing each invocation's metrics once its response
/// is done (a stream's when it ends), and then sending its spans.
pub fn app(harness: Arc<Harness>, endpoint: Endpoint, sink: MetricsSink) -> axum::Router {
    with_metrics(server::router(harness, endpoint), sink)
}

/// `router` emitting each invocation's metrics when its response ends, and flushing its
/// spans before the response is over (then the process may be frozen).
fn with_metrics(router: axum::Router, sink: MetricsSink) -> axum::Router {
    router.layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let sink = sink.clone();
            async move {
                let (parts, body) = next.run(req).await.into_parts();
                let body = axum::body::Body::new(MetricsOnEnd {
                    body,
                    sink: Some(sink),
                    flushing: None,
                });
                axum::response::Response::from_parts(parts, body)
            }
        },
    ))
}

/// A response body that emits the invocation's metrics when it ends or is dropped, and
/// with traces on ends only once the spans are flushed ([`crate::traces::flush`]).
struct MetricsOnEnd {
    body: axum::body::Body,
    sink: Option<MetricsSink>,
    flushing: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
}

impl MetricsOnEnd {
    fn emit(&mut self) {
        if let Some(sink) = self.sink.take() {
            emit_metrics(&sink);
        }
    }

    /// Whether the body has ended and nothing is left to do.
    fn over(&self) -> bool {
        self.sink.is_none() && self.flushing.is_none()
    }
}

impl axum::body::HttpBody for MetricsOnEnd {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::task::Poll;
        if let Some(flushing) = self.flushing.as_mut() {
            std::task::ready!(flushing.as_mut().poll(cx));
            self.flushing = None;
            return Poll::Ready(None);
        }
        let polled = std::pin::Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            let ended = self.sink.is_some();
            self.emit();
            if ended && crate::traces::enabled() {
                self.flushing = Some(Box::pin(crate::traces::flush()));
                return self.poll_frame(cx);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        // With traces on, the end is reached only through the flush.
        (self.over() || !crate::traces::enabled()) && self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for MetricsOnEnd {
    fn drop(&mut self) {
        // Cut off (the client went away): the spans go out when they can.
        if self.sink.is_some() && crate::traces::enabled() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(crate::traces::flush());
            }
        }
        self.emit();
    }
}

/// Serves `endpoint` under the Lambda runtime: JSON logs without timestamps (CloudWatch
/// adds them), then buffered responses or, for streams, response streaming.
pub async fn run(endpoint: Endpoint, streaming: bool) -> Result<(), Error> {
    start()?;
    let harness = harness_from_env().await?;
    let app = app(harness, endpoint, stdout_metrics());
    if streaming {
        lambda_http::run_with_streaming_response(app).await
    } else {
        lambda_http::run(app).await
    }
}

/// A function that serves only reads (the agent card, GetTask, ListTasks, the push
/// config reads, the extended card): a [`Harness::reader`] on [`crate::ops::Reads`], with
/// no secrets read, so it links no agent, model, secrets client or webhook delivery.
pub async fn run_reader(endpoint: Endpoint) -> Result<(), Error> {
    start()?;
    let harness = Harness::reader(read_only_store_from_env().await?, config_from_env()?)?;
    let app = server::router_for::<crate::ops::Reads>(harness, endpoint);
    lambda_http::run(with_metrics(app, stdout_metrics())).await
}

/// The resume function: DynamoDB stream batches in, drives, batch item failures out.
pub async fn run_resume() -> Result<(), Error> {
    use aws_lambda_events::event::dynamodb::Event;
    use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
    start()?;
    let harness = driving_harness_from_env().await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Event>| {
        let engine = harness.engine().clone();
        async move {
            let deadline = crate::task::lease::instant_at_epoch_ms(event.context.deadline);
            Ok::<_, Error>(
                resume_invocation(&engine, &event.payload, deadline, &stdout_metrics()).await,
            )
        }
    }))
    .await
}

/// One resume invocation: the batch's drives, then the metrics they recorded.
pub async fn resume_invocation(
    engine: &Arc<crate::engine::Engine>,
    event: &aws_lambda_events::event::dynamodb::Event,
    deadline: Option<std::time::Instant>,
    sink: &MetricsSink,
) -> aws_lambda_events::event::streams::DynamoDbEventResponse {
    let answer = crate::resume::handle(engine, event, deadline).await;
    emit_metrics(sink);
    crate::traces::flush().await;
    answer
}

/// The notifier function: DynamoDB stream batches of new log events and configs in,
/// webhook deliveries, batch item failures out.
pub async fn run_notifier() -> Result<(), Error> {
    use aws_lambda_events::event::dynamodb::Event;
    use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
    start()?;
    let harness = harness_from_env().await?;
    let notifier = harness
        .push()
        .cloned()
        .ok_or("the notifier function needs push notifications on (HARNESS_PUSH_NOTIFICATIONS)")?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Event>| {
        let notifier = notifier.clone();
        async move {
            let deadline = crate::task::lease::instant_at_epoch_ms(event.context.deadline);
            let answer = crate::push::stream::handle(&notifier, &event.payload, deadline).await;
            emit_metrics(&stdout_metrics());
            crate::traces::flush().await;
            Ok::<_, Error>(answer)
        }
    }))
    .await
}

/// The sweeper function, on a schedule: hands tasks whose drive's lease ran out to the
/// resume function (the write that makes them runnable is their wake-up).
pub async fn run_sweeper() -> Result<(), Error> {
    use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
    start()?;
    let harness = harness_from_env().await?;
    lambda_runtime::run(service_fn(|_: LambdaEvent<serde_json::Value>| {
        let engine = harness.engine().clone();
        async move {
            let woken = engine.sweep(crate::engine::SWEEP_BATCH).await;
            emit_metrics(&stdout_metrics());
            crate::traces::flush().await;
            let woken = woken?;
            tracing::info!(tasks = woken.len(), "swept");
            Ok::<_, Error>(serde_json::json!({ "woken": woken }))
        }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::Read;

    fn documented(setting: Setting) -> &'static str {
        match setting.lambda {
            Read::Default(default) => default,
            Read::No => panic!("{}: not read by the functions", setting.env),
        }
    }

    /// The defaults the functions take from `Config` and the agent are the ones the
    /// settings table (and so `functions/README.md`) gives.
    #[test]
    fn the_defaults_are_the_documented_ones() {
        let defaults = Config::default();
        let cases = [
            (
                settings::MAX_BODY_BYTES,
                defaults.max_body_bytes.to_string(),
            ),
            (
                settings::MAX_BLOCKING_WAIT_SECONDS,
                defaults.blocking_wait.as_secs().to_string(),
            ),
            (
                settings::LEASE_SECONDS,
                defaults.lease_ttl.as_secs().to_string(),
            ),
            (
                settings::TURN_LIMIT,
                crate::agent::llm::DEFAULT_TURN_LIMIT.to_string(),
            ),
            (settings::AGENT_ID, defaults.agent_id.clone()),
            (
                settings::IDENTITY_CLAIM,
                crate::auth::DEFAULT_IDENTITY_CLAIM.to_owned(),
            ),
        ];
        for (setting, value) in cases {
            assert_eq!(documented(setting), format!("`{value}`"), "{}", setting.env);
        }
        assert_eq!(
            defaults.rest_content_type,
            crate::config::RestContentType::Json
        );
        assert_eq!(documented(settings::REST_CONTENT_TYPE), "`json`");
    }
}
