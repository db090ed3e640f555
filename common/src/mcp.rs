//! MCP servers as tool sources: `--mcp FILE` / `HARNESS_MCP`, a TOML file with one table
//! per server.
//!
//! ```toml
//! [mcp.search]
//! url = "https://mcp.example/mcp"          # Streamable HTTP
//! token_env = "SEARCH_TOKEN"               # optional: a bearer token, from this variable
//! headers = { "X-Team" = "docs" }          # optional
//! tools = ["lookup"]                       # optional allow-list of its tool names
//! idempotent = ["lookup"]                  # optional: overrides the tools' annotations
//! read_only_tools = ["lookup"]             # optional: tools that change nothing
//! trusted_output = false                   # optional: whether its results may steer calls
//! timeout_seconds = 30                     # optional, default 30, at most 300
//! ```
//!
//! On AWS the same text is kept in a Secrets Manager secret (`HARNESS_MCP_SECRET`), read by
//! the resume function only, where a server's `token = "..."` may stand in the text.
//!
//! Each server's tools are listed once per start (a cold start on AWS) through the
//! official Rust SDK (`rmcp`) over the webhooks' SSRF guard, and offered to the model as
//! `<server>__<tool>` with their input schemas, which arguments are checked against before
//! a call. A server that cannot be reached makes its tools unavailable, and the model is
//! told so; the task goes on. A result (text, structured content as JSON, resource links
//! as references) reaches the model as a tool result, inside the untrusted block, cut to
//! [`MAX_RESULT_CHARS`] with a marker; a tool's error is an error result, never a crash.
//!
//! Whether a tool may run twice: the file's `idempotent` list when it names any, else the
//! tool's `readOnlyHint` or `idempotentHint`; a tool in `read_only_tools` may. A call of
//! one that may not is committed as started before it runs; after a crash the model is
//! told its outcome is unknown instead of the call being made again.
//!
//! Who may lead the model to a call: a tool the operator declares in `read_only_tools`
//! runs on anyone's word; any other has side effects, made with the operator's
//! credentials, and runs only when the model acts on the words of the task's reporter or
//! an admin (`agent::actor`, `agent::tools::ToolRegistry::check_on`). A server's own
//! `readOnlyHint` grants nothing: the server is not trusted to say what its tools do. A
//! result from a server (any of its tools) makes the server the one the model acts on,
//! so the reporter or an admin must speak again before a call with side effects, unless
//! the operator declares the server's output trusted (`trusted_output = true`).
//!
//! What a server says about its tools is bounded and framed: a tool's name is
//! [`MAX_NAME_CHARS`] of `A-Z a-z 0-9 _ -`, its description is cut to
//! [`MAX_DESCRIPTION_BYTES`] with a marker and shown inside an untrusted block from the
//! server, its input schema is at most [`MAX_SCHEMA_BYTES`] serialized (as the server gave
//! it) and keeps only known JSON Schema keywords, its free text (`description`, `title`)
//! cut to [`MAX_SCHEMA_TEXT_BYTES`] with a marker, its property names at most
//! [`MAX_PROPERTY_NAME_BYTES`] of `A-Z a-z 0-9 _ . -` and its other strings (enum values...) at most
//! [`MAX_SCHEMA_VALUE_BYTES`] (`schema::bound`), a server offers at most [`MAX_TOOLS`], and
//! all its tools' text (names, descriptions, schemas) is at most [`MAX_SERVER_TOOL_BYTES`];
//! a tool that breaks a bound is left out, and the model is told so.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, Implementation, InitializeRequestParams,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde::Deserialize;
use serde_json::Value;

use crate::https::target::Targets;
use crate::models::{Tool, ToolError};

mod schema;
mod traced;

/// Longest tool result the model is given; the rest is cut with a marker.
pub const MAX_RESULT_CHARS: usize = 16_000;
/// Most servers one file may name.
pub const MAX_SERVERS: usize = 16;
/// Longest tool description the model is given, in bytes of UTF-8; the rest is cut (at a
/// character boundary) with a marker.
pub const MAX_DESCRIPTION_BYTES: usize = 1024;
/// Largest input schema a tool may have, serialized as JSON; a larger one leaves the tool
/// out.
pub const MAX_SCHEMA_BYTES: usize = 8 * 1024;
/// Longest free text (`description`, `title`) inside a tool's input schema, in bytes of
/// UTF-8; the rest is cut (at a character boundary) with a marker.
pub const MAX_SCHEMA_TEXT_BYTES: usize = 200;
/// Longest other string inside a tool's input schema (an enum or const value, a
/// `default`, an example, a pattern, a format, a reference), in bytes of UTF-8: a longer
/// one leaves the tool out, or drops the advisory `default` or `examples` holding it.
pub const MAX_SCHEMA_VALUE_BYTES: usize = 100;
/// Longest property (or definition, or `required`) name in a tool's input schema, in bytes
/// of `A-Z a-z 0-9 _ . -` (nothing else): a longer one, or another character, leaves the
/// tool out.
pub const MAX_PROPERTY_NAME_BYTES: usize = 64;
/// Most bytes of tool text one server may put before the model on every call: its tools'
/// names, descriptions and input schemas (serialized, bounded) together. A tool past it is
/// left out, and the model is told so.
pub const MAX_SERVER_TOOL_BYTES: usize = 64 * 1024;
/// Longest tool name a server may give (`A-Z a-z 0-9 _ -`); another leaves the tool out.
pub const MAX_NAME_CHARS: usize = 64;
/// Most tools offered from one server; the rest are left out.
pub const MAX_TOOLS: usize = 64;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest a server may take to answer its tools list at start.
const LIST_WITHIN: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    mcp: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    url: String,
    #[serde(default)]
    token_env: Option<String>,
    /// The token itself: for a file kept in a secret (on AWS).
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    idempotent: Option<Vec<String>>,
    /// Tools the operator declares read-only: they run on anyone's word.
    #[serde(default)]
    read_only_tools: Vec<String>,
    /// Whether the operator vouches for what the server's tools return: if so, a result
    /// leaves the actor as it is.
    #[serde(default)]
    trusted_output: bool,
    #[serde(default)]
    timeout_seconds: Option<u64>,
}

/// One server, as configured.
#[derive(Clone)]
pub struct Server {
    pub name: String,
    pub url: reqwest::Url,
    token: Option<String>,
    headers: HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>,
    allow: Option<Vec<String>>,
    idempotent: Option<Vec<String>>,
    read_only: Vec<String>,
    trusted_output: bool,
    timeout: Duration,
}

impl std::fmt::Debug for Server {
    // The token and the headers may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("url", &self.url.as_str())
            .finish()
    }
}

/// The servers `text` names, with tokens from `env`.
pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Vec<Server>, String> {
    let file: File = toml::from_str(text).map_err(|e| {
        let line = crate::config::toml_line(text, &e);
        format!("line {line}: {}", e.message())
    })?;
    if file.mcp.len() > MAX_SERVERS {
        return Err(format!("at most {MAX_SERVERS} servers"));
    }
    let mut servers = Vec::new();
    for (name, entry) in file.mcp {
        if name.is_empty()
            || name.contains("__")
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(format!(
                "[mcp.{name}]: a server's name is lower-case letters, digits and single underscores"
            ));
        }
        let url = crate::config::http_url(&entry.url)
            .ok_or_else(|| format!("[mcp.{name}] url is not an http(s) URL"))?;
        let token = crate::config::bearer_token(
            &format!("mcp.{name}"),
            entry.token_env.as_deref(),
            entry.token,
            &env,
        )?;
        let mut headers = HashMap::new();
        for (k, v) in &entry.headers {
            let key = reqwest::header::HeaderName::try_from(k.as_str())
                .map_err(|_| format!("[mcp.{name}] header {k:?} is not a header name"))?;
            let value = reqwest::header::HeaderValue::try_from(v.as_str())
                .map_err(|_| format!("[mcp.{name}] header {k} has a value no header may hold"))?;
            headers.insert(key, value);
        }
        let timeout = entry
            .timeout_seconds
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_TIMEOUT);
        if timeout.is_zero() || timeout > MAX_TIMEOUT {
            return Err(format!(
                "[mcp.{name}] timeout_seconds is 1 to {}",
                MAX_TIMEOUT.as_secs()
            ));
        }
        servers.push(Server {
            name,
            url,
            token,
            headers,
            allow: entry.tools,
            idempotent: entry.idempotent,
            read_only: entry.read_only_tools,
            trusted_output: entry.trusted_output,
            timeout,
        });
    }
    Ok(servers)
}

/// The servers to list tools from, and the guard their connections pass.
#[derive(Debug, Clone)]
pub struct Setup {
    pub servers: Vec<Server>,
    pub targets: Targets,
}

impl Setup {
    /// The servers `source` names, their tokens from the environment; connections pass the
    /// webhooks' guard as `config` sets it.
    pub fn load(
        source: &crate::config::Source,
        config: &crate::config::Config,
    ) -> Result<Self, String> {
        let text = source.read("MCP servers")?;
        let servers = parse(&text, |v| std::env::var(v).ok())
            .map_err(|e| format!("MCP servers {source:?}: {e}"))?;
        Ok(Setup {
            servers,
            targets: config.targets(),
        })
    }
}

/// What the model is told about servers and tools it cannot call.
pub fn unavailable_note(unavailable: &[Unavailable]) -> String {
    if unavailable.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = unavailable
        .iter()
        .map(|u| match &u.tool {
            Some(tool) => format!("- {}__{tool}: {}", u.server, u.reason),
            None => format!("- {}__* ({}): {}", u.server, u.server, u.reason),
        })
        .collect();
    format!(
        "\n\nThese tool servers are unavailable; their tools cannot be called now:\n{}",
        lines.join("\n")
    )
}

type Session = RunningService<RoleClient, InitializeRequestParams>;

/// A tool of an MCP server, as the model sees it.
pub struct McpTool {
    /// `<server>__<tool>`.
    pub name: String,
    pub description: String,
    /// Its input schema, as the server gave it.
    pub parameters: Value,
    /// The server's name.
    pub server: String,
    remote_name: String,
    session: Arc<Session>,
    timeout: Duration,
    idempotent: bool,
    /// Declared read-only by the operator.
    read_only: bool,
    /// Its server's output declared trusted by the operator.
    trusted_output: bool,
}

/// A server whose tools could not be listed, or one of its tools left out, and why (told
/// to the model).
#[derive(Debug, Clone)]
pub struct Unavailable {
    pub server: String,
    /// The tool left out (`*`: some, unnamed), or None for the whole server.
    pub tool: Option<String>,
    pub reason: String,
}

/// Connects to each server and lists its tools; a server that fails is [`Unavailable`].
pub async fn discover(servers: &[Server], targets: &Targets) -> (Vec<McpTool>, Vec<Unavailable>) {
    // All at once: a start waits for the slowest server only, 10 s at most.
    let listed = futures::future::join_all(
        servers
            .iter()
            .map(|server| tokio::time::timeout(LIST_WITHIN, list(server, targets))),
    )
    .await;
    let mut tools = Vec::new();
    let mut unavailable = Vec::new();
    for (server, outcome) in servers.iter().zip(listed) {
        let reason = match outcome {
            Ok(Ok((mut found, mut left_out))) => {
                tools.append(&mut found);
                unavailable.append(&mut left_out);
                continue;
            }
            Ok(Err(reason)) => reason,
            Err(_) => "it did not answer in time".into(),
        };
        unavailable.push(Unavailable {
            server: server.name.clone(),
            tool: None,
            reason,
        });
    }
    for u in &unavailable {
        tracing::warn!(server = %u.server, reason = %u.reason, "an MCP server's tools are unavailable");
    }
    (tools, unavailable)
}

/// The server's tools within the bounds, and those left out.
async fn list(
    server: &Server,
    targets: &Targets,
) -> Result<(Vec<McpTool>, Vec<Unavailable>), String> {
    if let Some(ip) = crate::https::target::literal(&server.url).filter(|&ip| !targets.permits(ip))
    {
        return Err(crate::https::resolve::Refused::Blocked(ip)
            .to_string()
            .replace("webhook", "server"));
    }
    let http = crate::https::guarded_client(targets.clone(), server.timeout)?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
        .custom_headers(server.headers.clone());
    if let Some(token) = &server.token {
        config = config.auth_header(token.clone());
    }
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let info = InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("tiny-harness", env!("CARGO_PKG_VERSION")),
    );
    let session = Arc::new(
        info.serve(transport)
            .await
            .map_err(|e| format!("it could not be connected to ({})", short(&e.to_string())))?,
    );
    let listed = session
        .list_all_tools()
        .await
        .map_err(|e| format!("it did not list its tools ({})", short(&e.to_string())))?;
    let (offers, left_out) = select(server, listed);
    let tools = (offers.into_iter())
        .map(|o| McpTool {
            name: format!("{}__{}", server.name, o.remote_name),
            description: o.description,
            parameters: o.parameters,
            remote_name: o.remote_name,
            server: server.name.clone(),
            session: session.clone(),
            timeout: server.timeout,
            idempotent: o.idempotent,
            read_only: o.read_only,
            trusted_output: server.trusted_output,
        })
        .collect();
    Ok((tools, left_out))
}

/// A server's tool as it will be offered: bounded, with what the configuration says of it.
#[derive(Debug)]
struct Offer {
    remote_name: String,
    description: String,
    parameters: Value,
    idempotent: bool,
    read_only: bool,
}

/// The tools of `listed` the server may offer, bounded, and those left out: at most
/// [`MAX_TOOLS`], each named within the rule, its schema (as given) within
/// [`MAX_SCHEMA_BYTES`] and then bounded (`schema::bound`), its description cut, and all of them
/// (as sent) within
/// [`MAX_SERVER_TOOL_BYTES`] (a tool past it is left out; a smaller one after it may fit).
fn select(server: &Server, listed: Vec<rmcp::model::Tool>) -> (Vec<Offer>, Vec<Unavailable>) {
    let mut offers = Vec::new();
    let mut left_out = Vec::new();
    let mut leave_out = |tool: Option<&str>, reason: String| {
        left_out.push(Unavailable {
            server: server.name.clone(),
            tool: tool.map(str::to_owned),
            reason,
        })
    };
    let mut spent = 0;
    let allowed = (listed.into_iter())
        .filter(|t| (server.allow.as_ref()).is_none_or(|allow| allow.iter().any(|a| a == &t.name)));
    for (i, t) in allowed.enumerate() {
        if i == MAX_TOOLS {
            leave_out(
                Some("*"),
                format!("it offers more than {MAX_TOOLS} tools; the rest are left out"),
            );
            break;
        }
        if !valid_name(&t.name) {
            let rule = format!("1 to {MAX_NAME_CHARS} of A-Z a-z 0-9 _ -");
            leave_out(
                Some("*"),
                format!("a tool whose name is not {rule} is left out"),
            );
            continue;
        }
        let given = serde_json::to_string(&*t.input_schema).unwrap_or_default();
        if given.len() > MAX_SCHEMA_BYTES {
            let why =
                format!("its input schema is larger than {MAX_SCHEMA_BYTES} bytes; it is left out");
            leave_out(Some(&t.name), why);
            continue;
        }
        let mut parameters = Value::Object((*t.input_schema).clone());
        if let Err(why) = schema::bound(&mut parameters) {
            leave_out(Some(&t.name), why);
            continue;
        }
        let schema = serde_json::to_string(&parameters).unwrap_or_default();
        let description = cut_bytes(
            t.description.as_deref().unwrap_or_default(),
            MAX_DESCRIPTION_BYTES,
        );
        let cost = t.name.len() + description.len() + schema.len();
        if spent + cost > MAX_SERVER_TOOL_BYTES {
            let why = format!(
                "the server's tools take more than {MAX_SERVER_TOOL_BYTES} bytes of text; it is left out"
            );
            leave_out(Some(&t.name), why);
            continue;
        }
        spent += cost;
        let hinted = (t.annotations.as_ref())
            .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true));
        let read_only = server.read_only.iter().any(|n| n == &t.name);
        let idempotent = read_only
            || match &server.idempotent {
                Some(list) => list.iter().any(|n| n == &t.name),
                None => hinted,
            };
        offers.push(Offer {
            remote_name: t.name.to_string(),
            description,
            parameters,
            idempotent,
            read_only,
        });
    }
    (offers, left_out)
}

/// Whether a server's tool name can be offered: [`MAX_NAME_CHARS`] of `A-Z a-z 0-9 _ -`.
fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `text` in at most `max` bytes, cut at a character boundary, with a marker where it was
/// cut.
fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[cut: {} more bytes]", &text[..end], text.len() - end)
}

fn short(text: &str) -> String {
    text.chars().take(300).collect()
}

#[async_trait::async_trait]
impl Tool for McpTool {
    async fn run(&self, arguments: &Value) -> Result<String, ToolError> {
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        if let Value::Object(args) = arguments {
            params = params.with_arguments(args.clone());
        }
        let span = traced::span(&self.server, &self.remote_name);
        traced::propagate(&span, &mut params);
        let call = tokio::time::timeout(self.timeout, self.session.call_tool(params));
        let result = match tracing::Instrument::instrument(call, span).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return Err(ToolError::new(
                    "mcp.failed",
                    format!("{}: {}", self.server, short(&e.to_string())),
                ))
            }
            Err(_) => {
                return Err(ToolError::new(
                    "mcp.timeout",
                    format!("{} did not answer within {:?}", self.server, self.timeout),
                ))
            }
        };
        let mut parts: Vec<String> = Vec::new();
        for block in &result.content {
            if let Some(t) = block.as_text() {
                parts.push(t.text.clone());
            } else if let Some(link) = block.as_resource_link() {
                parts.push(
                    serde_json::json!({"resource": link.uri, "name": link.name, "mimeType": link.mime_type})
                        .to_string(),
                );
            }
        }
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
        let text = cut(&parts.join("\n"));
        if result.is_error == Some(true) {
            Err(ToolError::new("mcp.tool_error", text))
        } else {
            Ok(text)
        }
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }

    fn side_effects(&self) -> bool {
        !self.read_only
    }

    fn untrusted_source(&self) -> Option<&str> {
        (!self.trusted_output).then_some(self.server.as_str())
    }
}

/// At most [`MAX_RESULT_CHARS`] characters, with a marker where it was cut.
fn cut(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_RESULT_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(MAX_RESULT_CHARS).collect();
    format!(
        "{kept}\n[cut: {} more characters]",
        count - MAX_RESULT_CHARS
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_with_their_tokens_limits_and_allow_lists() {
        let text = r#"
[mcp.search]
url = "https://mcp.example/mcp"
token_env = "T"
tools = ["lookup"]
timeout_seconds = 5
"#;
        let servers = parse(text, |v| (v == "T").then(|| "s3cret".into())).unwrap();
        assert_eq!(servers[0].name, "search");
        assert_eq!(servers[0].timeout, Duration::from_secs(5));
        assert!(!format!("{servers:?}").contains("s3cret"));
        for (bad, want) in [
            ("[mcp.a__b]\nurl = \"https://x/\"\n", "single underscores"),
            ("[mcp.a]\nurl = \"ftp://x/\"\n", "not an http(s) URL"),
            (
                "[mcp.a]\nurl = \"https://x/\"\ntimeout_seconds = 0\n",
                "timeout_seconds",
            ),
            (
                "[mcp.a]\nurl = \"https://x/\"\ntoken_env = \"NOPE\"\n",
                "NOPE",
            ),
        ] {
            let err = parse(bad, |_| None).unwrap_err();
            assert!(err.contains(want), "{bad}: {err}");
        }
    }

    #[test]
    fn read_only_tools_are_the_operators_list() {
        let text = "[mcp.docs]\nurl = \"https://x/\"\nread_only_tools = [\"lookup\"]\n";
        let servers = parse(text, |_| None).unwrap();
        assert_eq!(servers[0].read_only, ["lookup"]);
        assert!(!servers[0].trusted_output, "untrusted unless declared");
        let text = "[mcp.docs]\nurl = \"https://x/\"\ntrusted_output = true\n";
        assert!(parse(text, |_| None).unwrap()[0].trusted_output);
        let err = parse(
            "[mcp.docs]\nurl = \"https://x/\"\nread_only = [\"x\"]\n",
            |_| None,
        );
        assert!(
            err.unwrap_err().contains("read_only"),
            "an unknown key is refused"
        );
    }

    /// Issue 47, item 6: a description is cut to its bound at a character boundary, with a
    /// marker; names outside the rule are not offered.
    #[test]
    fn a_long_description_is_cut_at_a_character_boundary_with_a_marker() {
        let long = format!("<IMPORTANT>{}</IMPORTANT>", "é".repeat(1_000_000));
        let cut = cut_bytes(&long, MAX_DESCRIPTION_BYTES);
        let (kept, marker) = cut.rsplit_once('\n').unwrap();
        assert!(kept.len() <= MAX_DESCRIPTION_BYTES && kept.len() > MAX_DESCRIPTION_BYTES - 4);
        assert!(kept.starts_with("<IMPORTANT>"));
        assert_eq!(
            marker,
            format!("[cut: {} more bytes]", long.len() - kept.len())
        );
        assert_eq!(
            cut_bytes("Looks a word up.", MAX_DESCRIPTION_BYTES),
            "Looks a word up."
        );
        assert!(valid_name("lookup") && valid_name("read-File_2"));
        for bad in ["", "a b", "a.b", "tіny", &"x".repeat(MAX_NAME_CHARS + 1)] {
            assert!(!valid_name(bad), "{bad}");
        }
        let note = unavailable_note(&[Unavailable {
            server: "docs".into(),
            tool: Some("wide".into()),
            reason: "too wide".into(),
        }]);
        assert!(note.ends_with("\n- docs__wide: too wide"), "{note}");
    }

    fn tool(name: &str, description: &str, schema: Value) -> rmcp::model::Tool {
        let Value::Object(schema) = schema else {
            panic!("an object")
        };
        rmcp::model::Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
    }

    fn docs_server() -> Server {
        let text = "[mcp.docs]\nurl = \"https://x/\"\n";
        parse(text, |_| None).unwrap().remove(0)
    }

    /// Issue 47, review 2: a tool whose input schema breaks a bound (here a property name
    /// over [`MAX_PROPERTY_NAME_BYTES`]) is left out and named in the note; the others stay.
    #[test]
    fn a_tool_whose_schema_breaks_a_bound_is_left_out() {
        let long_name = "p".repeat(MAX_PROPERTY_NAME_BYTES + 1);
        let with = |property: &str, schema: Value| serde_json::json!({"type": "object", "properties": {property: schema}});
        let listed = vec![
            tool(
                "named",
                "Long name.",
                with(&long_name, serde_json::json!({"type": "string"})),
            ),
            tool(
                "fine",
                "Fine.",
                with("p", serde_json::json!({"type": "string"})),
            ),
        ];
        let (offers, left_out) = select(&docs_server(), listed);
        assert_eq!(offers.len(), 1);
        assert_eq!(left_out[0].tool.as_deref(), Some("named"));
        assert!(
            left_out[0]
                .reason
                .contains("not 1 to 64 of A-Z a-z 0-9 _ . -"),
            "{:?}",
            left_out
        );
    }

    /// Issue 47, F5: a server's tools together put at most [`MAX_SERVER_TOOL_BYTES`] of
    /// text before the model; the tools past it are left out, each named in the note, and
    /// a small one after them still fits.
    #[test]
    fn a_servers_tools_are_held_to_a_budget_of_text() {
        let wide = |i: usize| {
            let text = "w".repeat(MAX_SCHEMA_TEXT_BYTES);
            let props: serde_json::Map<String, Value> = (0..30)
                .map(|p| {
                    (
                        format!("p{p}"),
                        serde_json::json!({"type": "string", "description": text}),
                    )
                })
                .collect();
            let schema = serde_json::json!({"type": "object", "properties": props});
            tool(&format!("wide{i}"), &"d".repeat(2_000), schema)
        };
        let mut listed: Vec<rmcp::model::Tool> = (0..MAX_TOOLS - 1).map(wide).collect();
        listed.push(tool(
            "small",
            "Small.",
            serde_json::json!({"type": "object"}),
        ));
        let (offers, left_out) = select(&docs_server(), listed);
        let spent: usize = (offers.iter())
            .map(|o| o.remote_name.len() + o.description.len() + o.parameters.to_string().len())
            .sum();
        assert!(spent <= MAX_SERVER_TOOL_BYTES, "{spent}");
        assert!(
            offers.len() > 1 && offers.len() < MAX_TOOLS - 1,
            "{}",
            offers.len()
        );
        assert_eq!(offers.last().unwrap().remote_name, "small");
        assert_eq!(offers.len() + left_out.len(), MAX_TOOLS);
        assert!(left_out
            .iter()
            .all(|u| u.reason.contains("65536 bytes of text")));
        let note = unavailable_note(&left_out);
        assert!(
            note.contains(&format!("- docs__wide{}: ", MAX_TOOLS - 2)),
            "{note}"
        );
        let (offers, left_out) = select(&docs_server(), vec![wide(0)]);
        assert_eq!((offers.len(), left_out.len()), (1, 0));
        assert!(offers[0].description.ends_with("[cut: 976 more bytes]"));
    }

    #[test]
    fn a_long_result_is_cut_with_a_marker() {
        let long = "x".repeat(MAX_RESULT_CHARS + 5);
        assert!(cut(&long).ends_with("[cut: 5 more characters]"));
        assert_eq!(cut("short"), "short");
    }
}
