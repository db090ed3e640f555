//! Every setting of the harness, written once: the environment variable, `harness-local`'s
//! flag, which entry points read it and its default in each. The Lambda functions
//! ([`crate::lambda`]) read their variables through these constants, `harness-local` takes
//! its flags' and variables' names from them, and `common/tests/settings_table.rs` holds
//! the documentation (`common/docs/configuration.md`, `functions/README.md`) and every
//! `HARNESS_*` name in the source to this table.
//!
//! A default is written as the documentation writes it (a value in backticks, or words):
//! the code's own defaults stay where the code needs them (the clap arguments, the
//! `Config` default), and `harness-local`'s tests hold its flags' defaults to this table.

/// What one entry point does with a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// It does not read it.
    No,
    /// It reads it; unset, this holds (as the documentation writes it).
    Default(&'static str),
}

impl Read {
    pub const fn is_read(self) -> bool {
        matches!(self, Read::Default(_))
    }
}

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub env: &'static str,
    /// `harness-local`'s flag, without its dashes; None: only the variable.
    pub flag: Option<&'static str>,
    /// What `harness-local` does with it.
    pub local: Read,
    /// What the Lambda functions do with it.
    pub lambda: Read,
    /// What it sets, in one line (the documentation says more).
    pub meaning: &'static str,
}

impl Setting {
    /// The flag, for clap's `long = …`. Panics for a setting without one (clap's debug
    /// assertions, run by `harness-local`'s tests, build every argument).
    pub const fn long(&self) -> &'static str {
        match self.flag {
            Some(flag) => flag,
            None => panic!("this setting has no flag"),
        }
    }
}

const NONE: Read = Read::Default("none");

/// A setting of both entry points, with one default.
const fn both(
    env: &'static str,
    flag: Option<&'static str>,
    default: &'static str,
    meaning: &'static str,
) -> Setting {
    Setting {
        env,
        flag,
        local: Read::Default(default),
        lambda: Read::Default(default),
        meaning,
    }
}

// The listener and the process.

pub const LISTEN: Setting = Setting {
    env: "HARNESS_LISTEN",
    flag: Some("listen"),
    local: Read::Default("`127.0.0.1:8080`"),
    lambda: Read::No,
    meaning: "address to listen on",
};
pub const LOG_FORMAT: Setting = Setting {
    env: "HARNESS_LOG_FORMAT",
    flag: Some("log-format"),
    local: Read::Default("`text`"),
    lambda: Read::No,
    meaning: "log lines as `text` (coloured only on a terminal) or `json` (one object a line)",
};
pub const RUST_LOG: Setting = both("RUST_LOG", None, "`info`", "log filter");
pub const STATE_DIR: Setting = both(
    "HARNESS_STATE_DIR",
    Some("state-dir"),
    "`.harness`",
    "directory of the embedded store (and of harness-local's key files), its owner's only: made 0700 with its files 0600, and tightened (with a warning) where found wider",
);
pub const STORE: Setting = Setting {
    env: "HARNESS_STORE",
    flag: None,
    local: Read::No,
    lambda: Read::Default("`dynamodb`"),
    meaning: "`dynamodb`, or `embedded` (local testing; built with the `embedded-store` feature)",
};
pub const TABLE: Setting = Setting {
    env: "HARNESS_TABLE",
    flag: Some("table"),
    local: NONE,
    lambda: Read::Default("(required with `dynamodb`)"),
    meaning: "the DynamoDB table state is kept in (harness-local: instead of the embedded store)",
};
pub const FSYNC_COMMITS: Setting = Setting {
    env: "HARNESS_FSYNC_COMMITS",
    flag: Some("fsync-commits"),
    local: Read::Default("`false`"),
    lambda: Read::No,
    meaning: "fsync the embedded store's log before answering a commit",
};
pub const AUDIT_RETENTION_DAYS: Setting = Setting {
    env: "HARNESS_AUDIT_RETENTION_DAYS",
    flag: None,
    local: Read::No,
    lambda: Read::Default("`30`"),
    meaning: "how long audit rows live (DynamoDB TTL; the embedded store deletes them)",
};
pub const TASK_RETENTION_DAYS: Setting = Setting {
    env: "HARNESS_TASK_RETENTION_DAYS",
    flag: None,
    local: Read::No,
    lambda: Read::Default("`0` (kept)"),
    meaning: "how long a finished task lives on DynamoDB (0: kept)",
};

// The card and the bindings.

pub const PUBLIC_URL: Setting = Setting {
    env: "HARNESS_PUBLIC_URL",
    flag: Some("public-url"),
    local: Read::Default("`http://<listen>`"),
    lambda: Read::Default("the URL the request came to (`X-Forwarded-Host`, else `Host`)"),
    meaning: "URL of the HTTP+JSON interface (and of JSON-RPC unless set apart)",
};
pub const ALLOWED_HOSTS: Setting = Setting {
    env: "HARNESS_ALLOWED_HOSTS",
    flag: Some("allowed-hosts"),
    local: Read::Default("the loopback names and the public URL's host"),
    lambda: Read::No,
    meaning: "more `Host` names to answer to (comma-separated; any port), or `*` for any host and any page's origin",
};
pub const JSONRPC_URL: Setting = Setting {
    env: "HARNESS_JSONRPC_URL",
    flag: None,
    local: Read::No,
    lambda: Read::Default("`HARNESS_PUBLIC_URL`"),
    meaning: "URL of the JSON-RPC interface",
};
pub const REST_CONTENT_TYPE: Setting = both(
    "HARNESS_REST_CONTENT_TYPE",
    Some("rest-content-type"),
    "`json`",
    "response Content-Type of the HTTP+JSON binding: `json` or `a2a+json`",
);
pub const REQUIRED_EXTENSIONS: Setting = both(
    "HARNESS_REQUIRED_EXTENSIONS",
    Some("required-extensions"),
    "none",
    "card extensions marked required (comma-separated)",
);
pub const MAX_BODY_BYTES: Setting = both(
    "HARNESS_MAX_BODY_BYTES",
    Some("max-body-bytes"),
    "`1048576`",
    "largest request body",
);
pub const TASK_MAX_MESSAGES: Setting = both(
    "HARNESS_TASK_MAX_MESSAGES",
    Some("task-max-messages"),
    "`1000`",
    "most messages one task holds (its history and status message); a send past it is refused",
);
pub const TASK_MAX_BYTES: Setting = both(
    "HARNESS_TASK_MAX_BYTES",
    Some("task-max-bytes"),
    "`8388608`",
    "most bytes one task holds (its messages, artifacts and the agent's conversation, as stored JSON); a send past it is refused",
);
pub const MAX_BLOCKING_WAIT_SECONDS: Setting = Setting {
    env: "HARNESS_MAX_BLOCKING_WAIT_SECONDS",
    flag: None,
    local: Read::No,
    lambda: Read::Default("`600`"),
    meaning: "longest a blocking SendMessage waits for `resume` to settle the task",
};
pub const RATE_LIMIT_PER_MINUTE: Setting = Setting {
    env: "HARNESS_RATE_LIMIT_PER_MINUTE",
    flag: Some("rate-limit-per-minute"),
    local: Read::Default("`0` (no limit)"),
    lambda: Read::No,
    meaning: "requests per minute per peer address (0: unlimited)",
};
pub const HEADER_READ_TIMEOUT_SECONDS: Setting = Setting {
    env: "HARNESS_HEADER_READ_TIMEOUT_SECONDS",
    flag: Some("header-read-timeout-seconds"),
    local: Read::Default("`10`"),
    lambda: Read::No,
    meaning: "longest a connection waits for a request's whole head, from its accept or its last answer (so also how long a kept-alive connection may idle), then closed",
};
pub const IDLE_TIMEOUT_SECONDS: Setting = Setting {
    env: "HARNESS_IDLE_TIMEOUT_SECONDS",
    flag: Some("idle-timeout-seconds"),
    local: Read::Default("`30`"),
    lambda: Read::No,
    meaning: "longest a request body may send nothing, then 408 and the connection closed",
};
pub const MAX_CONNECTIONS: Setting = Setting {
    env: "HARNESS_MAX_CONNECTIONS",
    flag: Some("max-connections"),
    local: Read::Default("`512`"),
    lambda: Read::No,
    meaning:
        "most connections served at once; past it a new one waits, unanswered, until one closes",
};
pub const METRICS: Setting = Setting {
    env: "HARNESS_METRICS",
    flag: Some("metrics"),
    local: Read::Default("on with `--auth none`, off with `jwt`"),
    lambda: Read::No,
    meaning: "serve `/metrics` (Prometheus text format) on the listener",
};

// The agent and its model.

pub const AGENT: Setting = Setting {
    env: "HARNESS_AGENT",
    flag: Some("agent"),
    local: Read::Default("`llm`"),
    lambda: Read::Default("`conformance` (the template: `llm`)"),
    meaning: "the agent that runs tasks: `llm` or `conformance`",
};
pub const AGENT_ID: Setting = both(
    "HARNESS_AGENT_ID",
    Some("agent-id"),
    "`tiny-harness`",
    "the harness's own participant id (assignee of its tasks)",
);
pub const MODEL: Setting = Setting {
    env: "HARNESS_MODEL",
    flag: Some("model"),
    local: Read::Default("the models file's default, else offline"),
    lambda: Read::Default("the models file's default"),
    meaning: "the LLM agent's model: a name, `<provider>:<model>` or `scripted:<path>`",
};
pub const MODELS: Setting = both(
    "HARNESS_MODELS",
    Some("models"),
    "none",
    "the models file (TOML)",
);
pub const MODEL_API_KEY_SECRET: Setting = Setting {
    env: "HARNESS_MODEL_API_KEY_SECRET",
    flag: None,
    local: Read::No,
    lambda: NONE,
    meaning: "`resume` only: a Secrets Manager secret (ARN) holding the model's API key",
};
pub const OPENAI_API_KEY: Setting = both(
    "OPENAI_API_KEY",
    None,
    "none",
    "the OpenAI provider's key, unless the models file names another variable",
);
pub const ANTHROPIC_API_KEY: Setting = both(
    "ANTHROPIC_API_KEY",
    None,
    "none",
    "the Anthropic provider's key, unless the models file names another variable",
);
pub const PROMPT: Setting = both(
    "HARNESS_PROMPT",
    Some("prompt"),
    "built in",
    "a prompt file replacing or extending system prompt sections",
);
pub const TURN_LIMIT: Setting = both(
    "HARNESS_TURN_LIMIT",
    Some("turn-limit"),
    "`50`",
    "most model calls a task may make before it fails",
);
pub const REPLY_WITHIN: Setting = both(
    "HARNESS_REPLY_WITHIN",
    Some("reply-within"),
    "none (no deadline)",
    "how long a question or a task for a participant waits for its answer when the model names no `reply_within` (`90s`, `45m`, `2h`, `3d`)",
);
pub const REPLY_WITHIN_MAX: Setting = both(
    "HARNESS_REPLY_WITHIN_MAX",
    Some("reply-within-max"),
    "`30d`",
    "the longest `reply_within` the model may give (1s to 30d)",
);
pub const CONTEXT_TOKENS: Setting = both(
    "HARNESS_CONTEXT_TOKENS",
    Some("context-tokens"),
    "the provider's",
    "most tokens (estimated) a model request may hold, for models whose entry names none",
);
pub const LEASE_SECONDS: Setting = both(
    "HARNESS_LEASE_SECONDS",
    Some("lease-seconds"),
    "`300`",
    "how long a drive's lease on a task lasts (renewed by each commit)",
);
pub const REDACT_PATTERNS: Setting = both(
    "HARNESS_REDACT_PATTERNS",
    Some("redact-pattern"),
    "none",
    "extra credential patterns (one regular expression per line) redacted besides the built-in table",
);

// Traces (`crate::traces`): the standard OpenTelemetry variables that turn them on and
// off (the SDK reads the others itself), and what they may hold.

pub const OTEL_EXPORTER_OTLP_ENDPOINT: Setting = both(
    crate::traces::ENDPOINT,
    None,
    "none (no traces)",
    "traces: the OTLP/HTTP collector spans are sent to (`/v1/traces` is added); traces are off without it or the next",
);
pub const OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Setting = both(
    crate::traces::TRACES_ENDPOINT,
    None,
    "none",
    "traces: the whole OTLP/HTTP URL of the traces (instead of the above)",
);
pub const OTEL_SDK_DISABLED: Setting = both(
    crate::traces::SDK_DISABLED,
    None,
    "`false`",
    "`true`: no traces, whatever the endpoint",
);
pub const OTEL_TRACES_EXPORTER: Setting = both(
    crate::traces::TRACES_EXPORTER,
    None,
    "`otlp`",
    "`none`: no traces (any other value but `otlp` is refused at start)",
);
pub const OTEL_CAPTURE_CONTENT: Setting = both(
    "HARNESS_OTEL_CAPTURE_CONTENT",
    Some("otel-capture-content"),
    "`false`",
    "traces: the model calls' messages and answers and the tool calls' arguments and results in their spans, through the redactor (off: no content in any span)",
);

// Tools, remote agents and channels: a file, or in a deployment a secret.

pub const MCP: Setting = both(
    "HARNESS_MCP",
    Some("mcp"),
    "none",
    "a TOML file of MCP servers whose tools the agent may call",
);
pub const MCP_SECRET: Setting = Setting {
    env: "HARNESS_MCP_SECRET",
    flag: None,
    local: Read::No,
    lambda: NONE,
    meaning: "`resume` only: the MCP servers' TOML in a Secrets Manager secret (ARN)",
};
pub const AGENTS: Setting = both(
    "HARNESS_AGENTS",
    Some("agents"),
    "none",
    "a TOML file of remote A2A agents tasks may delegate to",
);
pub const AGENTS_SECRET: Setting = Setting {
    env: "HARNESS_AGENTS_SECRET",
    flag: None,
    local: Read::No,
    lambda: NONE,
    meaning: "the remote agents' TOML in a Secrets Manager secret (ARN)",
};
pub const PERSONAL_CHANNELS: Setting = both(
    "HARNESS_PERSONAL_CHANNELS",
    Some("personal-channels"),
    "none",
    "a TOML file of participants' own webhooks",
);
pub const TASKS_FOR_OTHERS_PER_HOUR: Setting = both(
    "HARNESS_TASKS_FOR_OTHERS_PER_HOUR",
    Some("tasks-for-others-per-hour"),
    "`20`",
    "tasks a participant may assign to someone else an hour (`/task` without a task, a new task whose envelope names others)",
);
pub const POSTS_PER_SENDER_PER_HOUR: Setting = both(
    "HARNESS_POSTS_PER_SENDER_PER_HOUR",
    Some("posts-per-sender-per-hour"),
    "`60`",
    "posts to personal channels one participant's word may make an hour",
);
pub const POSTS_PER_RECIPIENT_PER_HOUR: Setting = both(
    "HARNESS_POSTS_PER_RECIPIENT_PER_HOUR",
    Some("posts-per-recipient-per-hour"),
    "`200`",
    "posts one participant's personal channel takes an hour, whoever asks",
);
pub const PERSONAL_CHANNELS_SECRET: Setting = Setting {
    env: "HARNESS_PERSONAL_CHANNELS_SECRET",
    flag: None,
    local: Read::No,
    lambda: NONE,
    meaning: "the personal channels' TOML in a Secrets Manager secret (ARN)",
};

// Push notifications.

pub const PUSH_NOTIFICATIONS: Setting = both(
    "HARNESS_PUSH_NOTIFICATIONS",
    Some("push-notifications"),
    "`true`",
    "offer push notifications",
);
pub const PUSH_KEY: Setting = Setting {
    env: "HARNESS_PUSH_KEY",
    flag: Some("push-key"),
    local: Read::Default("`<state-dir>/push.key`, created on first start"),
    lambda: Read::Default("(required while push is on)"),
    meaning: "32 bytes, base64: seals webhook secrets at rest",
};
pub const PUSH_ALLOW_PRIVATE_URLS: Setting = Setting {
    env: "HARNESS_PUSH_ALLOW_PRIVATE_URLS",
    flag: Some("push-allow-private-urls"),
    local: Read::Default("`true` locally"),
    lambda: Read::Default("`false`"),
    meaning: "webhooks on loopback and private addresses (`false`: SSRF protection)",
};
pub const WEBHOOK_ALLOW: Setting = both(
    "HARNESS_WEBHOOK_ALLOW",
    Some("webhook-allow"),
    "none",
    "address ranges (comma-separated CIDRs) webhooks may reach although private",
);

pub const ALLOW_HTTP_URLS: Setting = both(
    "HARNESS_ALLOW_HTTP_URLS",
    Some("allow-http-urls"),
    "`false`",
    "webhooks and personal channels at plain `http://` URLs on other hosts than this machine",
);

// Identity.

pub const AUTH: Setting = Setting {
    env: "HARNESS_AUTH",
    flag: Some("auth"),
    local: Read::Default("`none`"),
    lambda: Read::Default("`jwt`"),
    meaning: "`jwt` (a verified bearer token on every request but the card) or `none`",
};
pub const JWKS_URL: Setting = Setting {
    env: "HARNESS_JWKS_URL",
    flag: Some("jwks-url"),
    local: Read::Default("none: tokens from `harness-local token`"),
    lambda: Read::Default("(required with `jwt`)"),
    meaning: "`jwt`: the identity provider's JWKS",
};
pub const JWT_ISSUER: Setting = Setting {
    env: "HARNESS_JWT_ISSUER",
    flag: Some("jwt-issuer"),
    local: Read::Default("`harness-local` without `--jwks-url`, else required"),
    lambda: Read::Default("(required with `jwt`)"),
    meaning: "`jwt`: the `iss` tokens must carry",
};
pub const JWT_AUDIENCE: Setting = Setting {
    env: "HARNESS_JWT_AUDIENCE",
    flag: Some("jwt-audience"),
    local: Read::Default("`harness-local` without `--jwks-url`, else required"),
    lambda: Read::Default("(required with `jwt`)"),
    meaning: "`jwt`: the `aud` (or `client_id`) tokens must carry",
};
pub const IDENTITY_CLAIM: Setting = both(
    "HARNESS_IDENTITY_CLAIM",
    Some("identity-claim"),
    "`sub`",
    "`jwt`: the claim holding the participant id",
);
pub const OIDC_DISCOVERY_URL: Setting = both(
    "HARNESS_OIDC_DISCOVERY_URL",
    Some("oidc-discovery-url"),
    "none",
    "`jwt`: advertised on the card as an OpenID Connect scheme",
);
pub const DEFAULT_PARTICIPANT: Setting = both(
    "HARNESS_DEFAULT_PARTICIPANT",
    Some("default-participant"),
    "none (fail closed)",
    "`none` only: who a message or request asserting no participant stands for",
);

// AWS: read by name besides the SDK's own environment.

pub const AWS_ENDPOINT_URL: Setting = both(
    "AWS_ENDPOINT_URL",
    None,
    "AWS",
    "another endpoint for every AWS service",
);
pub const AWS_ENDPOINT_URL_DYNAMODB: Setting = both(
    "AWS_ENDPOINT_URL_DYNAMODB",
    None,
    "AWS",
    "another DynamoDB-API server (DynamoDB Local)",
);
pub const AWS_ENDPOINT_URL_BEDROCK_RUNTIME: Setting = both(
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    None,
    "AWS",
    "another Bedrock Runtime endpoint",
);
pub const AWS_ENDPOINT_URL_SECRETS_MANAGER: Setting = Setting {
    env: "AWS_ENDPOINT_URL_SECRETS_MANAGER",
    flag: None,
    local: Read::No,
    lambda: Read::Default("AWS"),
    meaning: "another Secrets Manager endpoint",
};
pub const AWS_LAMBDA_FUNCTION_NAME: Setting = Setting {
    env: "AWS_LAMBDA_FUNCTION_NAME",
    flag: None,
    local: Read::No,
    lambda: Read::Default("set by Lambda"),
    meaning: "the function's name: the `FunctionName` dimension of its metrics",
};

/// Every setting.
pub const SETTINGS: &[Setting] = &[
    LISTEN,
    LOG_FORMAT,
    RUST_LOG,
    STATE_DIR,
    STORE,
    TABLE,
    FSYNC_COMMITS,
    AUDIT_RETENTION_DAYS,
    TASK_RETENTION_DAYS,
    PUBLIC_URL,
    ALLOWED_HOSTS,
    JSONRPC_URL,
    REST_CONTENT_TYPE,
    REQUIRED_EXTENSIONS,
    MAX_BODY_BYTES,
    TASK_MAX_MESSAGES,
    TASK_MAX_BYTES,
    MAX_BLOCKING_WAIT_SECONDS,
    RATE_LIMIT_PER_MINUTE,
    HEADER_READ_TIMEOUT_SECONDS,
    IDLE_TIMEOUT_SECONDS,
    MAX_CONNECTIONS,
    METRICS,
    AGENT,
    AGENT_ID,
    MODEL,
    MODELS,
    MODEL_API_KEY_SECRET,
    OPENAI_API_KEY,
    ANTHROPIC_API_KEY,
    PROMPT,
    TURN_LIMIT,
    REPLY_WITHIN,
    REPLY_WITHIN_MAX,
    CONTEXT_TOKENS,
    LEASE_SECONDS,
    REDACT_PATTERNS,
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_SDK_DISABLED,
    OTEL_TRACES_EXPORTER,
    OTEL_CAPTURE_CONTENT,
    MCP,
    MCP_SECRET,
    AGENTS,
    AGENTS_SECRET,
    PERSONAL_CHANNELS,
    TASKS_FOR_OTHERS_PER_HOUR,
    POSTS_PER_SENDER_PER_HOUR,
    POSTS_PER_RECIPIENT_PER_HOUR,
    PERSONAL_CHANNELS_SECRET,
    PUSH_NOTIFICATIONS,
    PUSH_KEY,
    PUSH_ALLOW_PRIVATE_URLS,
    WEBHOOK_ALLOW,
    ALLOW_HTTP_URLS,
    AUTH,
    JWKS_URL,
    JWT_ISSUER,
    JWT_AUDIENCE,
    IDENTITY_CLAIM,
    OIDC_DISCOVERY_URL,
    DEFAULT_PARTICIPANT,
    AWS_ENDPOINT_URL,
    AWS_ENDPOINT_URL_DYNAMODB,
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
    AWS_ENDPOINT_URL_SECRETS_MANAGER,
    AWS_LAMBDA_FUNCTION_NAME,
];

/// The setting of the variable `env`.
pub fn by_env(env: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.env == env)
}

/// The setting of `harness-local`'s flag `--flag`.
pub fn by_flag(flag: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.flag == Some(flag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_variable_and_flag_is_one_setting_read_somewhere() {
        let mut envs = BTreeSet::new();
        let mut flags = BTreeSet::new();
        for s in SETTINGS {
            assert!(envs.insert(s.env), "{} twice", s.env);
            if let Some(flag) = s.flag {
                assert!(flags.insert(flag), "--{flag} twice");
                assert!(s.local.is_read(), "--{flag}: a flag is harness-local's");
                assert!(
                    !flag.starts_with('-') && flag == flag.to_lowercase(),
                    "--{flag}: lower case, without its dashes"
                );
            }
            assert!(
                s.local.is_read() || s.lambda.is_read(),
                "{}: read by neither entry point",
                s.env
            );
            for read in [s.local, s.lambda] {
                if let Read::Default(default) = read {
                    assert!(!default.trim().is_empty(), "{}: an empty default", s.env);
                }
            }
            assert!(!s.meaning.trim().is_empty(), "{}: no meaning", s.env);
        }
        assert_eq!(by_flag("redact-pattern"), Some(&REDACT_PATTERNS));
        assert_eq!(by_env("HARNESS_TABLE").and_then(|s| s.flag), Some("table"));
        assert_eq!(TABLE.long(), "table");
    }
}
