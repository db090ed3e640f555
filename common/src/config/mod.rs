//! Server configuration: what the harness runs with ([`Config`]), and every setting that
//! sets it from outside, with its environment variable, flag and defaults ([`settings`]:
//! the same names in Lambda and locally; the local server also takes flags).

pub mod hosts;
pub mod settings;

use std::time::Duration;

/// Response Content-Type of the HTTP+JSON binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestContentType {
    /// `application/json`: what the TCK checks for.
    #[default]
    Json,
    /// `application/a2a+json`: what spec v1.0.1 prefers.
    A2aJson,
}

impl RestContentType {
    pub fn as_str(self) -> &'static str {
        match self {
            RestContentType::Json => "application/json",
            RestContentType::A2aJson => "application/a2a+json",
        }
    }
}

impl std::str::FromStr for RestContentType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" | "application/json" => Ok(RestContentType::Json),
            "a2a+json" | "a2a" | "application/a2a+json" => Ok(RestContentType::A2aJson),
            other => Err(format!("unknown content type {other:?} (json or a2a+json)")),
        }
    }
}

/// Longest a stream lasts; a task still running then is followed by subscribing again.
/// Also how long a blocking SendMessage waits by default.
pub const MAX_STREAM: Duration = Duration::from_secs(10 * 60);

/// Tasks a participant may assign to someone else an hour unless configured otherwise.
pub const DEFAULT_TASKS_FOR_OTHERS_PER_HOUR: u64 = 20;

/// Posts to personal channels a participant's word may make an hour unless configured
/// otherwise ([`crate::channels::personal`]).
pub const DEFAULT_POSTS_PER_SENDER_PER_HOUR: u64 = 60;

/// Posts a participant's personal channel takes an hour unless configured otherwise:
/// well above a sender's quota, so no one account can fill it on its own (at most a
/// third of it); in `none` mode, where ids are self-asserted, the bound on a flood.
pub const DEFAULT_POSTS_PER_RECIPIENT_PER_HOUR: u64 = 200;

/// The harness's own participant id unless configured otherwise.
pub const DEFAULT_AGENT_ID: &str = "tiny-harness";

/// How harness-local's listener treats connections ([`crate::server::serve`]); a Lambda
/// function has no listener of its own (API Gateway and Lambda's front end keep them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    /// Longest a connection waits for a request's whole head, counted from when it starts
    /// waiting (its accept, or the end of its last answer: so also how long a kept-alive
    /// connection may sit idle); then it is closed.
    pub header_read_timeout: Duration,
    /// Longest a request body may send nothing; then the request is answered 408 and its
    /// connection closed.
    pub idle_timeout: Duration,
    /// Most connections served at once; past it a new connection waits in the listen
    /// backlog, unanswered, until one closes.
    pub max_connections: usize,
}

/// [`Connections::header_read_timeout`] unless configured otherwise.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// [`Connections::idle_timeout`] unless configured otherwise.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// [`Connections::max_connections`] unless configured otherwise: well under the 1,024
/// open files a process gets by default on Linux, with room for the store's and the
/// outbound clients'.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

impl Default for Connections {
    fn default() -> Self {
        Connections {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Most messages one task holds unless configured otherwise (`HARNESS_TASK_MAX_MESSAGES`).
pub const DEFAULT_TASK_MAX_MESSAGES: u64 = 1000;
/// Most bytes one task holds unless configured otherwise (`HARNESS_TASK_MAX_BYTES`): 8 MiB.
pub const DEFAULT_TASK_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// How large one task may grow, kept by the store's own conditional write (so two
/// concurrent writers cannot pass it between them): its messages (the history and the
/// status message) and its bytes (the stored JSON of those messages, its artifacts and the
/// agent's conversation). A write that would grow a task past either is refused and
/// stores nothing; one that ends the task may pass them by its final status message (see
/// `store::layout`), so a full task can still fail, complete or be canceled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskBounds {
    pub messages: u64,
    pub bytes: u64,
}

impl Default for TaskBounds {
    fn default() -> Self {
        TaskBounds {
            messages: DEFAULT_TASK_MAX_MESSAGES,
            bytes: DEFAULT_TASK_MAX_BYTES,
        }
    }
}

impl TaskBounds {
    /// No bound: what the store writes when it rewrites a task it already holds in
    /// another layout.
    pub const NONE: TaskBounds = TaskBounds {
        messages: u64::MAX,
        bytes: u64::MAX,
    };
}

/// History an answer holds when its request names no `historyLength` (GetTask,
/// ListTasks, SendMessage's task, the Task a stream starts with).
pub const DEFAULT_HISTORY_LENGTH: usize = 20;
/// Most history messages an answer holds: a larger `historyLength` is taken as this.
pub const MAX_HISTORY_LENGTH: usize = 1000;
/// Most bytes of history (as stored JSON) one answer holds: older messages are left out
/// first. A ListTasks page also ends early, before the tasks it holds pass this many
/// bytes of stored JSON together (its `nextPageToken` goes on from there).
pub const RESPONSE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct Config {
    /// Base URL clients reach the server at; the card's interfaces point here. Empty: the
    /// URL the request came to (its Host), as behind an API Gateway.
    pub public_url: String,
    /// The `Host` names the server answers to, and so which web pages may call it
    /// ([`hosts`]): by default the loopback names and the public URL's host.
    pub allowed_hosts: hosts::AllowedHosts,
    /// URL of the JSON-RPC interface when it differs from `public_url` (in AWS, the
    /// streaming Function URL of the jsonrpc function).
    pub jsonrpc_url: Option<String>,
    pub rest_content_type: RestContentType,
    /// Extension URIs the card marks `required` (none by default).
    pub required_extensions: Vec<String>,
    /// Largest request body accepted; larger gets 413 before it is parsed. A gRPC
    /// request's message is held to it too (RESOURCE_EXHAUSTED).
    pub max_body_bytes: usize,
    /// Whether the listener serves the gRPC binding beside the other two (harness-local,
    /// built with the `grpc` feature): the card lists it, at the public URL.
    pub grpc: bool,
    /// Requests per minute per peer address; more gets 429. 0 disables the limit.
    pub rate_limit_per_minute: u32,
    /// Serve `/metrics` (the local server): every tenant's counts, to anyone who can
    /// reach the listener.
    pub metrics_endpoint: bool,
    /// Longest a blocking SendMessage waits for a drive elsewhere (a Lambda function's
    /// task driven by `resume`) before answering with the task as it stands.
    pub blocking_wait: Duration,
    /// `Cache-Control: max-age` of the agent card.
    pub card_max_age: Duration,
    /// Whether push notifications are offered (the card's capability). Off, every push
    /// operation answers PushNotificationNotSupported.
    pub push_notifications: bool,
    /// The key webhook secrets are sealed with at rest; required while push is on.
    pub push_key: Option<crate::sealing::PushKey>,
    /// Whether this process delivers webhooks itself after each commit. Not in Lambda:
    /// the notifier function, fed by the table's stream, does.
    pub push_in_process: bool,
    /// Whether webhooks may be loopback or private addresses (off: SSRF protection).
    pub push_allow_private_urls: bool,
    /// Address ranges webhooks may reach although they are private or special-purpose
    /// (one internal receiver, while the SSRF protection blocks the rest).
    pub webhook_allow: Vec<crate::https::target::Cidr>,
    /// Whether webhooks and personal channels may be plain `http://` URLs on other hosts
    /// than this machine (off: https, so their tokens and answer links never cross the
    /// network in the clear).
    pub allow_http_urls: bool,
    /// The MCP servers whose tools the agent may call ([`crate::mcp`]).
    pub mcp_servers: Option<Source>,
    /// The registry of remote agents tasks may delegate to ([`crate::remote::registry`]).
    pub remote_agents: Option<Source>,
    /// The participants' personal channels ([`crate::channels::personal`]).
    pub personal_channels: Option<Source>,
    /// Tasks a participant may assign to someone else in a clock hour with `/task` and
    /// no task (each is posted to the assignee's channels); past it, refused.
    pub tasks_for_others_per_hour: u64,
    /// Posts to personal channels made on one participant's word in a clock hour; past
    /// it, not delivered (the request stays in the task and the inbox).
    pub posts_per_sender_per_hour: u64,
    /// Posts to one participant's personal channels in a clock hour, whoever asks; past
    /// it, not delivered.
    pub posts_per_recipient_per_hour: u64,
    /// Timeout of one webhook request.
    pub push_timeout: Duration,
    /// How a request's participant is known: self-asserted (`none`) or from a verified
    /// bearer token (`jwt`).
    pub auth: crate::auth::Auth,
    /// The participant id of the harness's own agent: the assignee of the tasks it runs,
    /// and the sender of what it asks and delegates. No request may act as it.
    pub agent_id: String,
    /// Who a message or request that asserts no participant stands for (`none` mode only).
    /// None (the default) refuses such messages and hides every task from such requests.
    pub default_participant: Option<String>,
    /// How long a drive's lease on a task lasts; each commit renews it, and a lease that
    /// runs out (a crashed drive) lets the sweeper hand the task to another.
    pub lease_ttl: Duration,
    /// Who this process is when it holds a lease. None: a fresh id per start (what a
    /// Lambda environment is), or the owner `owner_locks` names. Unique per process: two
    /// processes never take each other's leases for their own.
    pub lease_owner: Option<String>,
    /// Where `harness-local` keeps its lease owners' lock files: the engine claims its own
    /// owner id there, and learns which other owners on the same state have ended, whose
    /// leases the sweep takes at once (see `engine::owners`).
    pub owner_locks: Option<std::path::PathBuf>,
    /// Whether a run may go on after its request is answered (a long-lived server). In
    /// Lambda it may not (the environment freezes): a `returnImmediately` message leaves
    /// the task runnable for the resume function instead.
    pub detached_runs: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            public_url: "http://127.0.0.1:8080".into(),
            allowed_hosts: hosts::AllowedHosts::default(),
            jsonrpc_url: None,
            rest_content_type: RestContentType::Json,
            required_extensions: Vec::new(),
            max_body_bytes: 1024 * 1024,
            grpc: false,
            rate_limit_per_minute: 0,
            metrics_endpoint: true,
            blocking_wait: MAX_STREAM,
            card_max_age: Duration::from_secs(300),
            push_notifications: true,
            push_key: None,
            push_in_process: true,
            push_allow_private_urls: false,
            webhook_allow: Vec::new(),
            allow_http_urls: false,
            personal_channels: None,
            tasks_for_others_per_hour: DEFAULT_TASKS_FOR_OTHERS_PER_HOUR,
            posts_per_sender_per_hour: DEFAULT_POSTS_PER_SENDER_PER_HOUR,
            posts_per_recipient_per_hour: DEFAULT_POSTS_PER_RECIPIENT_PER_HOUR,
            remote_agents: None,
            mcp_servers: None,
            push_timeout: Duration::from_secs(10),
            auth: crate::auth::Auth::None,
            agent_id: DEFAULT_AGENT_ID.into(),
            default_participant: None,
            lease_ttl: crate::task::lease::DEFAULT_TTL,
            lease_owner: None,
            owner_locks: None,
            detached_runs: true,
        }
    }
}

/// Where a configuration file's text comes from: a file, or (in a deployment) a secret,
/// when the text holds secrets itself (webhook URLs, tokens).
#[derive(Clone)]
pub enum Source {
    /// A file (harness-local, `cargo lambda watch`).
    File(std::path::PathBuf),
    /// The text itself, read from `origin` (a deployment's secret).
    Text { origin: String, text: String },
}

impl std::fmt::Debug for Source {
    // The text may hold secrets: only where it came from.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Text { origin, .. } => f.write_str(origin),
        }
    }
}

impl Config {
    /// The addresses outbound calls (webhooks, remote agents, MCP servers) may reach.
    pub fn targets(&self) -> crate::https::target::Targets {
        crate::https::target::Targets::new(self.push_allow_private_urls, self.webhook_allow.clone())
            .with_cleartext(self.allow_http_urls)
    }
}

impl Source {
    /// The text; an unreadable file is an error naming it and `what` it should hold.
    pub fn read(&self, what: &str) -> Result<String, String> {
        match self {
            Source::File(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("{what} file {}: {e}", path.display())),
            Source::Text { text, .. } => Ok(text.clone()),
        }
    }
}

/// The line (from 1) a TOML parse error points at, for an error that quotes no value (the
/// files it reads may hold secrets); 0 when it points nowhere.
pub fn toml_line(text: &str, e: &toml::de::Error) -> usize {
    e.span()
        .map_or(0, |s| text[..s.start].matches('\n').count() + 1)
}

/// An http(s) URL with a host, or None.
pub fn http_url(text: &str) -> Option<reqwest::Url> {
    reqwest::Url::parse(text)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

/// The bearer token of the table `table` of a configuration file: its `token_env`
/// variable's value (which must be set), or its `token` (for a file kept in a secret),
/// never both; a blank token is none.
pub fn bearer_token(
    table: &str,
    token_env: Option<&str>,
    token: Option<String>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    match (token_env, token) {
        (Some(_), Some(_)) => Err(format!("[{table}] has both token and token_env")),
        (Some(var), None) => env(var)
            .filter(|t| !t.trim().is_empty())
            .map(Some)
            .ok_or_else(|| format!("[{table}] token_env names {var}, which is not set")),
        (None, token) => Ok(token.filter(|t| !t.trim().is_empty())),
    }
}
