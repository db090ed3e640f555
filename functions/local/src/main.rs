//! `harness-local`: every A2A operation on one listener over the embedded store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::builder::TypedValueParser;
use clap::{Parser, Subcommand};
use common::agent::AgentKind;
use common::auth::local_key::{self, LocalKey};
use common::auth::AuthMode;
use common::config::{settings, Config, RestContentType};
use common::models::config::ModelCatalog;
use common::ops::Harness;
use common::store::{Durability, EmbeddedStore, Store};

/// Runs the whole harness locally, with its state in a directory.
#[derive(Debug, Parser)]
#[command(name = "harness-local", version)]
struct Args {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// Log lines as `text` (coloured only on a terminal) or `json` (one object a line).
    #[arg(
        long = settings::LOG_FORMAT.long(),
        env = settings::LOG_FORMAT.env,
        default_value = "text",
        global = true
    )]
    log_format: common::logs::LogFormat,
    /// Address to listen on.
    #[arg(long = settings::LISTEN.long(), env = settings::LISTEN.env, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Directory holding the embedded store (and, for --auth jwt without --jwks-url, the
    /// key local tokens are signed with).
    #[arg(
        long = settings::STATE_DIR.long(),
        env = settings::STATE_DIR.env,
        default_value = ".harness",
        global = true
    )]
    state_dir: PathBuf,
    /// How a request's participant is known: none (self-asserted, X-Participant-Id and
    /// metadata.participant_id; identity is not verified) or jwt (a bearer token verified
    /// on every request but the agent card).
    #[arg(long = settings::AUTH.long(), env = settings::AUTH.env, default_value = "none")]
    auth: AuthMode,
    /// jwt: the identity provider's JWKS URL (https, or http on loopback). Unset: tokens
    /// from `harness-local token` on the same state directory.
    #[arg(long = settings::JWKS_URL.long(), env = settings::JWKS_URL.env, global = true)]
    jwks_url: Option<String>,
    /// jwt: the issuer (`iss`) tokens must carry (default with no JWKS URL: harness-local).
    #[arg(long = settings::JWT_ISSUER.long(), env = settings::JWT_ISSUER.env, global = true)]
    jwt_issuer: Option<String>,
    /// jwt: the audience (`aud`) tokens must carry (default with no JWKS URL:
    /// harness-local).
    #[arg(long = settings::JWT_AUDIENCE.long(), env = settings::JWT_AUDIENCE.env, global = true)]
    jwt_audience: Option<String>,
    /// jwt: the claim holding the participant id.
    #[arg(long = settings::IDENTITY_CLAIM.long(), env = settings::IDENTITY_CLAIM.env, default_value = common::auth::DEFAULT_IDENTITY_CLAIM, global = true)]
    identity_claim: String,
    /// jwt: an OpenID Connect discovery URL the card advertises (openIdConnectSecurityScheme)
    /// instead of a bare bearer scheme.
    #[arg(long = settings::OIDC_DISCOVERY_URL.long(), env = settings::OIDC_DISCOVERY_URL.env)]
    oidc_discovery_url: Option<String>,
    /// URL clients reach the server at (default: http://<listen>).
    #[arg(long = settings::PUBLIC_URL.long(), env = settings::PUBLIC_URL.env)]
    public_url: Option<String>,
    /// More `Host` names to answer to (any port) besides the loopback names and the public
    /// URL's host, or `*` for any host and any web page's origin: for a harness served on a
    /// LAN or behind a proxy. A request for another name is refused (421), and one from a
    /// web page of another origin (403).
    #[arg(
        long = settings::ALLOWED_HOSTS.long(),
        env = settings::ALLOWED_HOSTS.env,
        value_delimiter = ',',
        value_parser = common::config::hosts::entry
    )]
    allowed_hosts: Vec<String>,
    /// The agent that runs tasks: llm, or conformance (the A2A TCK's test agent).
    #[arg(long = settings::AGENT.long(), env = settings::AGENT.env, default_value = "llm")]
    agent: AgentKind,
    /// The LLM agent's model: a name from the models file, <provider>:<model>, or
    /// scripted:<path>.
    #[arg(long = settings::MODEL.long(), env = settings::MODEL.env)]
    model: Option<String>,
    /// The models file (TOML): named models and the default.
    #[arg(long = settings::MODELS.long(), env = settings::MODELS.env)]
    models: Option<PathBuf>,
    /// A prompt file whose `## <section>` parts replace (or, headed `## <section> (extends)`,
    /// extend) the built-in system prompt's sections.
    #[arg(long = settings::PROMPT.long(), env = settings::PROMPT.env)]
    prompt: Option<String>,
    /// Most model calls a task may make before it fails.
    #[arg(long = settings::TURN_LIMIT.long(), env = settings::TURN_LIMIT.env, default_value_t = common::agent::llm::DEFAULT_TURN_LIMIT)]
    turn_limit: usize,
    /// How long a question or a task for a participant waits for its answer when the model
    /// names no `reply_within` (`90s`, `45m`, `2h`, `3d`). Default: no deadline.
    #[arg(long = settings::REPLY_WITHIN.long(), env = settings::REPLY_WITHIN.env)]
    reply_within: Option<String>,
    /// The longest `reply_within` the model may give (1s to 30d).
    #[arg(long = settings::REPLY_WITHIN_MAX.long(), env = settings::REPLY_WITHIN_MAX.env, default_value = "30d")]
    reply_within_max: String,
    /// Most tokens (estimated) a model request may hold, for models whose configuration
    /// names none; older turns are summarized past it. Default: the provider's.
    #[arg(long = settings::CONTEXT_TOKENS.long(), env = settings::CONTEXT_TOKENS.env)]
    context_tokens: Option<usize>,
    /// Largest request body in bytes.
    #[arg(long = settings::MAX_BODY_BYTES.long(), env = settings::MAX_BODY_BYTES.env, default_value_t = 1024 * 1024)]
    max_body_bytes: usize,
    /// Most messages one task holds (its history and its status message); a message that
    /// would pass it is refused (-32602), nothing stored.
    #[arg(long = settings::TASK_MAX_MESSAGES.long(), env = settings::TASK_MAX_MESSAGES.env, default_value_t = common::config::DEFAULT_TASK_MAX_MESSAGES, value_parser = clap::value_parser!(u64).range(1..))]
    task_max_messages: u64,
    /// Most bytes one task holds (its messages, artifacts and the agent's conversation, as
    /// stored JSON); a message that would pass it is refused (-32602), nothing stored.
    #[arg(long = settings::TASK_MAX_BYTES.long(), env = settings::TASK_MAX_BYTES.env, default_value_t = common::config::DEFAULT_TASK_MAX_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    task_max_bytes: u64,
    /// Requests per minute per peer address (0, the default: unlimited, since a local
    /// harness serves its own scripts and test runs; a deployment throttles at API Gateway).
    #[arg(long = settings::RATE_LIMIT_PER_MINUTE.long(), env = settings::RATE_LIMIT_PER_MINUTE.env, default_value_t = 0)]
    rate_limit_per_minute: u32,
    /// Longest a connection waits for a request's whole head, from its accept or its last
    /// answer (so also how long a kept-alive connection may sit idle); then it is closed.
    #[arg(long = settings::HEADER_READ_TIMEOUT_SECONDS.long(), env = settings::HEADER_READ_TIMEOUT_SECONDS.env, default_value_t = common::config::DEFAULT_HEADER_READ_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout_seconds: u64,
    /// Longest a request body may send nothing; then it is answered 408 and its connection
    /// closed.
    #[arg(long = settings::IDLE_TIMEOUT_SECONDS.long(), env = settings::IDLE_TIMEOUT_SECONDS.env, default_value_t = common::config::DEFAULT_IDLE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout_seconds: u64,
    /// Most connections served at once; past it a new one waits, unanswered, until one
    /// closes.
    #[arg(long = settings::MAX_CONNECTIONS.long(), env = settings::MAX_CONNECTIONS.env, default_value_t = common::config::DEFAULT_MAX_CONNECTIONS, value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    max_connections: usize,
    #[arg(long = settings::TASKS_FOR_OTHERS_PER_HOUR.long(), env = settings::TASKS_FOR_OTHERS_PER_HOUR.env, default_value_t = common::config::DEFAULT_TASKS_FOR_OTHERS_PER_HOUR)]
    tasks_for_others_per_hour: u64,
    #[arg(long = settings::POSTS_PER_SENDER_PER_HOUR.long(), env = settings::POSTS_PER_SENDER_PER_HOUR.env, default_value_t = common::config::DEFAULT_POSTS_PER_SENDER_PER_HOUR)]
    posts_per_sender_per_hour: u64,
    #[arg(long = settings::POSTS_PER_RECIPIENT_PER_HOUR.long(), env = settings::POSTS_PER_RECIPIENT_PER_HOUR.env, default_value_t = common::config::DEFAULT_POSTS_PER_RECIPIENT_PER_HOUR)]
    posts_per_recipient_per_hour: u64,
    /// Response Content-Type of the HTTP+JSON binding: json or a2a+json.
    #[arg(long = settings::REST_CONTENT_TYPE.long(), env = settings::REST_CONTENT_TYPE.env, default_value = "json")]
    rest_content_type: RestContentType,
    /// Extension URIs the card marks required (comma-separated).
    #[arg(long = settings::REQUIRED_EXTENSIONS.long(), env = settings::REQUIRED_EXTENSIONS.env, value_delimiter = ',')]
    required_extensions: Vec<String>,
    /// Offer push notifications (webhooks).
    #[arg(long = settings::PUSH_NOTIFICATIONS.long(), env = settings::PUSH_NOTIFICATIONS.env, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    push_notifications: bool,
    /// The key (32 bytes, base64) webhook secrets are sealed with at rest. Default: the
    /// key file in the state directory, created on first start; required with --table.
    #[arg(long = settings::PUSH_KEY.long(), env = settings::PUSH_KEY.env, hide_env_values = true)]
    push_key: Option<common::sealing::PushKey>,
    /// Allow push webhooks on loopback and private addresses (on for a local server;
    /// `false` turns on the SSRF protection a public deployment has).
    #[arg(long = settings::PUSH_ALLOW_PRIVATE_URLS.long(), env = settings::PUSH_ALLOW_PRIVATE_URLS.env, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    push_allow_private_urls: bool,
    /// Address ranges (CIDRs, or single addresses) webhooks may reach although they are
    /// loopback, private or special-purpose: one internal receiver, while
    /// --push-allow-private-urls false blocks the rest. Repeatable or comma-separated.
    #[arg(long = settings::WEBHOOK_ALLOW.long(), env = settings::WEBHOOK_ALLOW.env, value_delimiter = ',')]
    webhook_allow: Vec<common::https::target::Cidr>,
    /// Allow webhooks and personal channels at plain `http://` URLs on other hosts than
    /// this machine (off: https, so their tokens and answer links never cross the network
    /// in the clear; http to localhost or a loopback address is always taken).
    #[arg(long = settings::ALLOW_HTTP_URLS.long(), env = settings::ALLOW_HTTP_URLS.env, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    allow_http_urls: bool,
    /// Participants' own webhooks (a TOML file, one `[participant]` table with `url`):
    /// each request addressed to them (a question, a task assigned) is posted there with a
    /// link to answer it.
    #[arg(long = settings::PERSONAL_CHANNELS.long(), env = settings::PERSONAL_CHANNELS.env)]
    personal_channels: Option<PathBuf>,
    /// Remote A2A agents tasks may delegate to (a TOML file, one `[agents.<id>]` table with
    /// `card_url`, optional `description` and `token_env`).
    #[arg(long = settings::AGENTS.long(), env = settings::AGENTS.env)]
    remote_agents: Option<PathBuf>,
    /// MCP servers whose tools the agent may call (a TOML file, one `[mcp.<name>]` table
    /// with `url`, optional `token_env`, `headers`, `tools`, `idempotent`,
    /// `timeout_seconds`).
    #[arg(long = settings::MCP.long(), env = settings::MCP.env)]
    mcp_servers: Option<PathBuf>,
    /// Serve `/metrics` (Prometheus text format) on the listener. Default: on with `--auth
    /// none`, off with `jwt` (the counts are every participant's: turn it on there only
    /// where the listener is private).
    #[arg(long = settings::METRICS.long(), env = settings::METRICS.env, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    metrics: Option<bool>,
    /// Extra credential patterns to redact at intake, in tool results and in logs, besides
    /// the built-in table (regular expressions; repeatable, or one per line in the
    /// variable).
    #[arg(
        long = settings::REDACT_PATTERNS.long(),
        env = settings::REDACT_PATTERNS.env,
        value_delimiter = '\n'
    )]
    redact_patterns: Vec<String>,
    /// Traces (on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set): the model calls' messages and
    /// answers and the tool calls' arguments and results in their spans, redacted.
    #[arg(long = settings::OTEL_CAPTURE_CONTENT.long(), env = settings::OTEL_CAPTURE_CONTENT.env, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    otel_capture_content: bool,
    /// How long a drive's lease on a task lasts (renewed by every commit); the sweep,
    /// every 10 s, hands tasks whose lease ran out to a new drive.
    #[arg(long = settings::LEASE_SECONDS.long(), env = settings::LEASE_SECONDS.env, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    lease_seconds: u64,
    /// Keep state in this DynamoDB table instead of the embedded store (credentials,
    /// region and `AWS_ENDPOINT_URL_DYNAMODB` from the standard AWS environment).
    #[arg(long = settings::TABLE.long(), env = settings::TABLE.env)]
    table: Option<String>,
    /// Fsync the embedded store's log before answering a commit, so it survives a power
    /// loss too. Off, a commit survives the process being killed (the default).
    #[arg(long = settings::FSYNC_COMMITS.long(), env = settings::FSYNC_COMMITS.env, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    fsync_commits: bool,
    /// The harness's own participant id: the assignee of the tasks its agent runs.
    #[arg(long = settings::AGENT_ID.long(), env = settings::AGENT_ID.env, default_value = common::config::DEFAULT_AGENT_ID, value_parser = common::ext::participant::parse_id)]
    agent_id: String,
    /// Who a message or request asserting no participant stands for. Unset (the default),
    /// such messages are refused and such requests see no task.
    #[arg(long = settings::DEFAULT_PARTICIPANT.long(), env = settings::DEFAULT_PARTICIPANT.env, value_parser = common::ext::participant::parse_id)]
    default_participant: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Prints a short-lived token for a participant, signed by the key in the state
    /// directory: a harness on that directory with --auth jwt and no --jwks-url accepts it.
    Token {
        /// The participant the token names.
        #[arg(value_parser = common::ext::participant::parse_id)]
        participant: String,
        /// How long the token is valid, in seconds (at most a day).
        #[arg(long, default_value_t = local_key::DEFAULT_LIFETIME.as_secs())]
        ttl_seconds: u64,
    },
    /// Once, after upgrading a DynamoDB table written by a build before the listing index:
    /// lists its older tasks (writes their listing items) so ListTasks finds them. Needs
    /// --table; safe beside a running deployment.
    BackfillListing,
}

// A request allocates and frees many small buffers across the runtime's threads; glibc's
// malloc took a fifth of the CPU of a send under load (wrk, sends at c=32: 176-204 µs of
// CPU a send with glibc's, 137-171 with mimalloc; at c=1 311-331 and 264-286).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The embedded store's push key, beside (not inside) its data.
const PUSH_KEY_FILE: &str = "push.key";
/// Most tasks the start-up sweep hands on; the timer's sweeps take the rest.
const SWEEP_AT_START: usize = 1000;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("harness-local: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), common::lambda::Error> {
    let args = Args::parse();
    let extra = args.redact_patterns.join("\n");
    common::redact::install(common::redact::Redactor::from_env_value(Some(&extra))?);
    let traces = common::traces::Options {
        service: "harness-local".into(),
        capture_content: args.otel_capture_content,
    };
    common::logs::init(args.log_format, &traces)?;
    // A workstation's AWS setup (profiles, SSO) for --table and Bedrock models.
    common::https::use_standard_chain();
    if let Some(Cmd::Token {
        participant,
        ttl_seconds,
    }) = &args.command
    {
        return token(&args, participant, *ttl_seconds);
    }
    if let Some(Cmd::BackfillListing) = &args.command {
        let Some(table) = args.table.clone() else {
            return Err("backfill-listing needs --table (the embedded store needs none)".into());
        };
        let listed = (common::lambda::dynamo_store(table, 30).await)
            .backfill_listing()
            .await?;
        println!("listed {listed} task(s) written before the listing index");
        return Ok(());
    }
    let auth = common::auth::Options {
        mode: args.auth,
        jwks_url: args.jwks_url.clone(),
        issuer: args.jwt_issuer.clone(),
        audience: args.jwt_audience.clone(),
        identity_claim: Some(args.identity_claim.clone()),
        oidc_discovery_url: args.oidc_discovery_url.clone(),
    }
    .resolve(Some(&args.state_dir))?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let bound = listener.local_addr()?;
    let config = Config {
        public_url: args.public_url.unwrap_or_else(|| format!("http://{bound}")),
        allowed_hosts: common::config::hosts::AllowedHosts::from_entries(args.allowed_hosts),
        rest_content_type: args.rest_content_type,
        required_extensions: args.required_extensions,
        max_body_bytes: args.max_body_bytes,
        grpc: true,
        rate_limit_per_minute: args.rate_limit_per_minute,
        tasks_for_others_per_hour: args.tasks_for_others_per_hour,
        posts_per_sender_per_hour: args.posts_per_sender_per_hour,
        posts_per_recipient_per_hour: args.posts_per_recipient_per_hour,
        metrics_endpoint: args.metrics.unwrap_or(args.auth == AuthMode::None),
        push_notifications: args.push_notifications,
        push_key: match (args.push_key.clone(), &args.table) {
            _ if !args.push_notifications => None,
            (Some(key), _) => Some(key),
            // A shared table's deployment shares one key: it must be given.
            (None, Some(_)) => None,
            (None, None) => {
                common::secret_file::private_dir(&args.state_dir)?;
                Some(common::sealing::PushKey::load_or_create(
                    &args.state_dir.join(PUSH_KEY_FILE),
                )?)
            }
        },
        push_allow_private_urls: args.push_allow_private_urls,
        webhook_allow: args.webhook_allow,
        allow_http_urls: args.allow_http_urls,
        remote_agents: args.remote_agents.clone().map(common::config::Source::File),
        mcp_servers: args.mcp_servers.clone().map(common::config::Source::File),
        personal_channels: args.personal_channels.map(common::config::Source::File),
        auth,
        agent_id: args.agent_id,
        default_participant: args.default_participant,
        // Unique to this process; its lock file tells the others sharing the state when it
        // has ended, so they take its leases at once.
        owner_locks: Some(args.state_dir.join("owners")),
        lease_ttl: std::time::Duration::from_secs(args.lease_seconds),
        ..Config::default()
    };
    // A bad model setting stops start-up before anything is written.
    let catalog = match &args.models {
        Some(path) => ModelCatalog::load(path)?,
        None => ModelCatalog::default(),
    };
    let settings = common::agent::LlmSettings {
        model: args.model.clone(),
        catalog,
        prompt: common::lambda::prompt_from(args.prompt.as_deref())?,
        turn_limit: args.turn_limit,
        context_tokens: args.context_tokens,
        remotes: common::remote::Remotes::from_config(&config)?,
        mcp: (config.mcp_servers.as_ref())
            .map(|source| common::mcp::Setup::load(source, &config))
            .transpose()?,
        reply_within: common::task::deadline::ReplyWithin::parse(
            (settings::REPLY_WITHIN.env, args.reply_within.as_deref()),
            (settings::REPLY_WITHIN_MAX.env, Some(&args.reply_within_max)),
        )?,
    };
    let agent = common::agent::build(args.agent, &settings).await?;
    let bounds = common::config::TaskBounds {
        messages: args.task_max_messages,
        bytes: args.task_max_bytes,
    };
    let (store, undelivered): (Arc<dyn Store>, Vec<String>) = match &args.table {
        // A DynamoDB table (AWS, or DynamoDB Local through AWS_ENDPOINT_URL_DYNAMODB).
        // Webhook deliveries a stop cut off resume with their task's next commit.
        Some(table) => (
            Arc::new(
                (common::lambda::dynamo_store(table.clone(), 30).await)
                    .with_unlisted(&config.agent_id)
                    .with_bounds(bounds),
            ),
            Vec::new(),
        ),
        None => {
            let durability = if args.fsync_commits {
                Durability::PowerLoss
            } else {
                Durability::Process
            };
            let store = EmbeddedStore::open_with(&args.state_dir, durability)?
                .with_unlisted(&config.agent_id)
                .with_bounds(bounds);
            let undelivered = store.push_backlog().await?;
            (Arc::new(store), undelivered)
        }
    };
    let harness = Harness::with_remotes(store, agent, config, settings.remotes)?;
    // Webhook deliveries the last stop cut off go on from their cursors.
    if let Some(notifier) = harness.push().cloned() {
        tokio::spawn(async move {
            for id in undelivered {
                notifier.deliver_logged(&id).await;
            }
        });
    }
    // Runs cut off by the last stop carry on from their checkpoints: its leases are taken
    // at once (its lock file is free), its unanswered wake-ups rung again; in the
    // background, so the server answers meanwhile. Then, on a timer, the sweep hands on
    // what another process left behind, often enough that a lapsed lease or a lost
    // wake-up costs little more than its grace.
    let period = (harness.engine().wake_grace() / 2).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(10),
    );
    let engine = harness.engine().clone();
    tokio::spawn(async move {
        if let Err(e) = engine.sweep_at_start(SWEEP_AT_START).await {
            tracing::warn!(error = %e, "the start-up sweep failed");
        }
        common::engine::sweep_every(engine, period).await
    });
    println!(
        "harness-local serving {} (agent card: {}/.well-known/agent-card.json, state: {}, auth: {})",
        harness.config().public_url,
        harness.config().public_url.trim_end_matches('/'),
        args.state_dir.display(),
        match args.auth {
            AuthMode::None => "none, identity not verified",
            AuthMode::Jwt => "jwt",
        }
    );
    let app = common::server::router(harness, common::server::Endpoint::All);
    let connections = common::config::Connections {
        header_read_timeout: std::time::Duration::from_secs(args.header_read_timeout_seconds),
        idle_timeout: std::time::Duration::from_secs(args.idle_timeout_seconds),
        max_connections: args.max_connections,
    };
    common::server::serve(listener, app, connections, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    // The spans still queued go out before the process ends.
    common::traces::shutdown().await;
    Ok(())
}

/// `harness-local token <participant>`: the token on stdout (so `$(...)` takes it), how to
/// use it on stderr.
fn token(args: &Args, participant: &str, ttl_seconds: u64) -> Result<(), common::lambda::Error> {
    if args.jwks_url.is_some() {
        return Err(
            "a harness with a JWKS URL accepts its identity provider's tokens, \
             not local ones: unset --jwks-url (HARNESS_JWKS_URL) to mint one"
                .into(),
        );
    }
    let key = LocalKey::load_or_create(&args.state_dir)?;
    let issuer = args
        .jwt_issuer
        .as_deref()
        .unwrap_or(local_key::LOCAL_ISSUER);
    let audience = args
        .jwt_audience
        .as_deref()
        .unwrap_or(local_key::LOCAL_ISSUER);
    let token = key.mint(
        participant,
        &args.identity_claim,
        issuer,
        audience,
        std::time::Duration::from_secs(ttl_seconds),
    )?;
    println!("{token}");
    eprintln!(
        "A token for {participant}, valid for {ttl_seconds} s, accepted by harness-local \
         --auth jwt --state-dir {dir}. Send it on every request:\n  \
         curl -H \"Authorization: Bearer $TOKEN\" -H 'A2A-Version: 1.0' ...",
        dir = args.state_dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every flag is a setting of `common::config::settings` with that setting's variable,
    /// and its default is the one the table (and so the documentation) gives; every
    /// setting with a flag is a flag.
    #[test]
    fn every_flag_is_a_setting_of_the_table() {
        let command = Args::command();
        command.clone().debug_assert();
        let mut flags = std::collections::BTreeSet::new();
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            let long = arg.get_long().unwrap_or_else(|| panic!("{id}: not a flag"));
            let setting = settings::by_flag(long)
                .unwrap_or_else(|| panic!("--{long} is not in common::config::settings"));
            assert_eq!(
                arg.get_env().and_then(|e| e.to_str()),
                Some(setting.env),
                "--{long}: its variable"
            );
            let settings::Read::Default(default) = setting.local else {
                panic!("--{long}: the table says harness-local does not read it");
            };
            for value in arg.get_default_values() {
                let value = value.to_str().expect("a UTF-8 default");
                assert!(
                    default.starts_with(&format!("`{value}`")),
                    "--{long}: the default is {value}, the table says {default}"
                );
            }
            flags.insert(long);
        }
        for setting in settings::SETTINGS {
            if let Some(flag) = setting.flag {
                assert!(flags.contains(flag), "--{flag} is in the table, not a flag");
            }
        }
    }
}
