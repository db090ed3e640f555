//! Tools: what a model may call, each described by one file under `schemas/tools/`.
//!
//! A tool's schema file (`{"name", "description", "parameters"}`) is the single source of
//! both what the model is told ([`ToolSpec`]) and how its arguments are checked: the
//! registry compiles `parameters` with `jsonschema` when the tool is registered and
//! validates every call against it before the tool runs. Unknown tools, invalid arguments
//! and tool failures come back as error results (`[code] message`); in the first two
//! cases nothing runs. The files are embedded with `include_str!`, so a binary carries
//! them.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

mod traced;

use super::context::untrusted;
use crate::a2a::Timestamp;
use crate::ext::permissions::{permits, Action};
use crate::models::{Tool, ToolCall, ToolError, ToolSpec};
use crate::store::TaskRecord;

/// The schema file of the `current_time` tool.
pub const CURRENT_TIME_SCHEMA: &str = include_str!("../../../schemas/tools/current_time.json");

/// The schema files of the intrinsic tools: the agent runs these itself, on the task
/// (see `agent::intrinsics`), after the registry has checked their arguments.
pub const INTRINSIC_SCHEMAS: &[&str] = &[
    include_str!("../../../schemas/tools/ask_participant.json"),
    include_str!("../../../schemas/tools/create_task_for_participant.json"),
    include_str!("../../../schemas/tools/set_participant_role.json"),
    include_str!("../../../schemas/tools/request_help.json"),
];

/// The schema file of `reply_to_agent`, an intrinsic offered where remote agents are
/// configured.
pub const REPLY_TO_AGENT_SCHEMA: &str = include_str!("../../../schemas/tools/reply_to_agent.json");

/// What a call of a tool gave back to the model: its output, or an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutcome {
    pub fn output(content: String) -> Self {
        ToolOutcome {
            content,
            is_error: false,
        }
    }

    pub fn error(error: ToolError) -> Self {
        ToolOutcome {
            content: error.to_string(),
            is_error: true,
        }
    }

    /// What a tool's run gave back.
    pub fn of(ran: Result<String, ToolError>) -> Self {
        ran.map_or_else(Self::error, Self::output)
    }
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    #[error("the tool schema file is not valid: {0}")]
    InvalidFile(String),
    #[error("tool name {0:?} is not valid (expected [a-z][a-z0-9_]*)")]
    InvalidName(String),
    #[error("a tool named {0:?} is already registered")]
    DuplicateName(String),
    #[error("tool {0:?} has an empty description")]
    EmptyDescription(String),
    #[error("the parameters of tool {0:?} are not a schema of type \"object\"")]
    NotAnObject(String),
    #[error("the parameters of tool {0:?} do not set \"additionalProperties\": false")]
    OpenParameters(String),
    #[error("the parameters of tool {name:?} are not a valid JSON Schema: {message}")]
    InvalidParameters { name: String, message: String },
}

/// A tool's schema file, as written under `schemas/tools/`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaFile {
    name: String,
    description: String,
    parameters: Value,
}

struct Entry {
    spec: ToolSpec,
    validator: jsonschema::Validator,
    /// None for an intrinsic, which the agent runs itself.
    tool: Option<Box<dyn Tool>>,
    /// Whose text the description is, when not the harness's (`mcp.<server>`): it is
    /// shown to the model framed as untrusted.
    source: Option<String>,
}

/// A call that passed its checks: a tool to run, or an intrinsic for the agent.
pub enum Checked<'a> {
    Tool(&'a dyn Tool),
    Intrinsic,
}

/// Whose words the result of a call (checked as `checked`) carries when the operator does
/// not vouch for them (`Tool::untrusted_source`): None for a refused call (the harness's
/// words), an intrinsic or a trusted tool. Its source is the actor once the turn's calls
/// are all made (`actor::heard_tool`, `actor::end_turn`), so a call with side effects in
/// a later turn waits for a fresh word.
pub fn untrusted_source<'a>(checked: &Result<Checked<'a>, ToolOutcome>) -> Option<&'a str> {
    match checked {
        Ok(Checked::Tool(tool)) => tool.untrusted_source(),
        _ => None,
    }
}

/// The tools a model may call, in registration order.
#[derive(Default)]
pub struct ToolRegistry {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.spec.name))
            .finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools: `current_time` and the participant intrinsics.
    pub fn builtin() -> Self {
        let mut registry = Self::new();
        registry
            .register(CURRENT_TIME_SCHEMA, CurrentTime)
            .expect("the built-in tool schemas are valid");
        for schema in INTRINSIC_SCHEMAS {
            registry
                .register_intrinsic(schema)
                .expect("the intrinsic tool schemas are valid");
        }
        registry
    }

    /// Adds a tool the agent runs itself; its schema file is checked like any other.
    pub fn register_intrinsic(&mut self, schema: &str) -> Result<(), RegistrationError> {
        self.add(schema, None)
    }

    /// Adds a tool described by its schema file (the JSON text). Refuses a file that does
    /// not parse, a name that is not `[a-z][a-z0-9_]*` or is already taken, an empty
    /// description, and parameters that are not a valid JSON Schema of an object with
    /// `"additionalProperties": false`.
    pub fn register<T: Tool>(&mut self, schema: &str, tool: T) -> Result<(), RegistrationError> {
        self.add(schema, Some(Box::new(tool)))
    }

    fn add(&mut self, schema: &str, tool: Option<Box<dyn Tool>>) -> Result<(), RegistrationError> {
        let file: SchemaFile = serde_json::from_str(schema)
            .map_err(|e| RegistrationError::InvalidFile(e.to_string()))?;
        let SchemaFile {
            name,
            description,
            parameters,
        } = file;
        if !valid_name(&name) {
            return Err(RegistrationError::InvalidName(name));
        }
        if self.entries.iter().any(|e| e.spec.name == name) {
            return Err(RegistrationError::DuplicateName(name));
        }
        if description.trim().is_empty() {
            return Err(RegistrationError::EmptyDescription(name));
        }
        if parameters.get("type") != Some(&Value::from("object")) {
            return Err(RegistrationError::NotAnObject(name));
        }
        if parameters.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Err(RegistrationError::OpenParameters(name));
        }
        let validator = jsonschema::validator_for(&parameters).map_err(|e| {
            RegistrationError::InvalidParameters {
                name: name.clone(),
                message: e.to_string(),
            }
        })?;
        let tool = tool.map(|tool| traced::Traced::boxed(&name, None, tool));
        self.entries.push(Entry {
            spec: ToolSpec {
                name,
                description,
                parameters,
            },
            validator,
            tool,
            source: None,
        });
        Ok(())
    }

    /// Adds a tool of an MCP server under its `<server>__<tool>` name, with the input
    /// schema the server gave (which need not be closed: it is the server's).
    pub fn register_mcp(&mut self, tool: crate::mcp::McpTool) -> Result<(), RegistrationError> {
        if self.entries.iter().any(|e| e.spec.name == tool.name) {
            return Err(RegistrationError::DuplicateName(tool.name));
        }
        let validator = jsonschema::validator_for(&tool.parameters).map_err(|e| {
            RegistrationError::InvalidParameters {
                name: tool.name.clone(),
                message: e.to_string(),
            }
        })?;
        self.entries.push(Entry {
            spec: ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.parameters.clone(),
            },
            source: Some(format!("mcp.{}", tool.server)),
            validator,
            tool: Some(traced::Traced::boxed(
                &tool.name.clone(),
                Some(tool.server.clone()),
                Box::new(tool),
            )),
        });
        Ok(())
    }

    /// What the model is told about the tools, in registration order: an MCP tool's
    /// description (its server's text) inside an untrusted block from that server,
    /// delimited with the task's `nonce` (`context::untrusted`).
    pub fn specs(&self, nonce: &str) -> Vec<ToolSpec> {
        (self.entries.iter())
            .map(|e| match &e.source {
                Some(source) => ToolSpec {
                    description: untrusted(nonce, source, &e.spec.description),
                    ..e.spec.clone()
                },
                None => e.spec.clone(),
            })
            .collect()
    }

    /// [`check`](Self::check) on a task: a tool with side effects runs only when the
    /// model acts on the words of the task's reporter or an admin (`AgentState::actor`,
    /// see `agent::actor`; `Action::CallToolWithSideEffects`); otherwise the model gets an
    /// error result and the tool never hears of the call. A watcher's message (even with
    /// an admin's after it in one batch), or a remote agent's answer, a sub-task's outcome
    /// or an untrusted tool's result after the admin's word, cannot lead to one.
    pub fn check_on(&self, call: &ToolCall, rec: &TaskRecord) -> Result<Checked<'_>, ToolOutcome> {
        let checked = self.check(call)?;
        if let Checked::Tool(tool) = &checked {
            let actor = rec.agent.actor.as_deref().unwrap_or_default();
            let word = |ext| permits(&ext, actor, Action::CallToolWithSideEffects);
            if tool.side_effects() && !word(rec.ext().unwrap_or_default()) {
                let why = match super::actor::tool_output_server(actor) {
                    // From the model's side the reporter spoke last: say what came since.
                    Some(server) => format!(
                        "a result of the MCP server {server:?} came after the last word of the task's reporter or an admin, and may have steered this call; ask one of them to confirm this exact call (ask_participant), then make it"
                    ),
                    None => format!("{}; ask them", Action::CallToolWithSideEffects.rule()),
                };
                return Err(ToolOutcome::error(ToolError::new(
                    "tool.forbidden",
                    format!(
                        "{} has side effects: {why} (a tool its server's configuration declares read-only runs on anyone's word)",
                        call.name
                    ),
                )));
            }
        }
        Ok(checked)
    }

    /// The call's tool, if it names a registered one and its arguments pass the tool's
    /// schema; otherwise the error result the model gets (and nothing runs).
    pub fn check(&self, call: &ToolCall) -> Result<Checked<'_>, ToolOutcome> {
        let Some(entry) = self.entries.iter().find(|e| e.spec.name == call.name) else {
            return Err(ToolOutcome::error(ToolError::new(
                "unknown_tool",
                format!("no tool named {:?}", call.name),
            )));
        };
        if let Some(problems) = crate::ext::problems(&entry.validator, &call.arguments) {
            return Err(ToolOutcome::error(ToolError::new(
                "invalid_arguments",
                problems,
            )));
        }
        Ok(match &entry.tool {
            Some(tool) => Checked::Tool(tool.as_ref()),
            None => Checked::Intrinsic,
        })
    }

    /// Runs the call if it passes [`check`](Self::check); an intrinsic cannot run here
    /// (it needs a task), and a tool's failure is an error result.
    pub async fn call(&self, call: &ToolCall) -> ToolOutcome {
        match self.check(call) {
            Err(outcome) => outcome,
            Ok(Checked::Intrinsic) => ToolOutcome::error(ToolError::new(
                "tool.unbound",
                "no task is bound to this intrinsic",
            )),
            Ok(Checked::Tool(tool)) => ToolOutcome::of(tool.run(&call.arguments).await),
        }
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `current_time`: the current date and time in UTC, as RFC 3339.
pub struct CurrentTime;

#[async_trait]
impl Tool for CurrentTime {
    async fn run(&self, _arguments: &Value) -> Result<String, ToolError> {
        Ok(Timestamp::now().to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    /// Counts its runs, and fails with `[code] message` when asked to.
    struct Counting {
        runs: Arc<AtomicUsize>,
        fail: Option<ToolError>,
    }

    #[async_trait]
    impl Tool for Counting {
        async fn run(&self, arguments: &Value) -> Result<String, ToolError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            match &self.fail {
                Some(error) => Err(error.clone()),
                None => {
                    let word = arguments["word"].as_str().unwrap_or_default();
                    let count = arguments["count"].as_u64().unwrap_or_default() as usize;
                    Ok(vec![word; count].join(" "))
                }
            }
        }
    }

    const REPEAT_SCHEMA: &str = r#"{
        "name": "repeat",
        "description": "Repeats a word a number of times",
        "parameters": {
            "type": "object",
            "properties": {
                "word": {"type": "string"},
                "count": {"type": "integer", "minimum": 1}
            },
            "required": ["word", "count"],
            "additionalProperties": false
        }
    }"#;

    fn counting(fail: Option<ToolError>) -> (Counting, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        (
            Counting {
                runs: runs.clone(),
                fail,
            },
            runs,
        )
    }

    fn registry_with_repeat(fail: Option<ToolError>) -> (ToolRegistry, Arc<AtomicUsize>) {
        let (tool, runs) = counting(fail);
        let mut registry = ToolRegistry::builtin();
        registry.register(REPEAT_SCHEMA, tool).unwrap();
        (registry, runs)
    }

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "call-1".into(),
            name: name.into(),
            arguments,
        }
    }

    fn schema_with(name: &str, description: &str, parameters: Value) -> String {
        json!({"name": name, "description": description, "parameters": parameters}).to_string()
    }

    fn closed_object() -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    #[test]
    fn builtin_registry_lists_current_time_with_the_schema_from_its_file() {
        let mut specs = ToolRegistry::builtin().specs("");
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "current_time",
                "ask_participant",
                "create_task_for_participant",
                "set_participant_role",
                "request_help"
            ]
        );
        specs.truncate(1);
        let file: Value = serde_json::from_str(CURRENT_TIME_SCHEMA).unwrap();
        assert_eq!(
            specs,
            vec![ToolSpec {
                name: "current_time".into(),
                description: "The current date and time in UTC, as RFC 3339".into(),
                parameters: file["parameters"].clone(),
            }]
        );
        assert_eq!(
            specs[0].parameters,
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    #[test]
    fn tools_are_listed_in_registration_order() {
        let (registry, _) = registry_with_repeat(None);
        let names: Vec<String> = registry.specs("").into_iter().map(|s| s.name).collect();
        assert_eq!(names.first().map(String::as_str), Some("current_time"));
        assert_eq!(names.last().map(String::as_str), Some("repeat"));
    }

    #[tokio::test]
    async fn current_time_answers_the_time_in_utc_as_rfc_3339() {
        let outcome = ToolRegistry::builtin()
            .call(&call("current_time", json!({})))
            .await;
        assert!(!outcome.is_error, "{outcome:?}");
        let parsed = chrono::DateTime::parse_from_rfc3339(&outcome.content).unwrap();
        assert_eq!(parsed.offset().local_minus_utc(), 0);
        assert!(outcome.content.ends_with('Z'), "{}", outcome.content);
        let age = chrono::Utc::now().signed_duration_since(parsed);
        assert!(age.num_seconds().abs() < 60, "{age}");
    }

    #[tokio::test]
    async fn a_valid_call_runs_the_tool_once_and_returns_its_output() {
        let (registry, runs) = registry_with_repeat(None);
        let outcome = registry
            .call(&call("repeat", json!({"word": "hi", "count": 2})))
            .await;
        assert_eq!(
            outcome,
            ToolOutcome {
                content: "hi hi".into(),
                is_error: false,
            }
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_unknown_tool_is_an_error_result_and_nothing_runs() {
        let (registry, runs) = registry_with_repeat(None);
        let outcome = registry.call(&call("rm_rf", json!({}))).await;
        assert_eq!(
            outcome,
            ToolOutcome {
                content: r#"[unknown_tool] no tool named "rm_rf""#.into(),
                is_error: true,
            }
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn an_extra_property_is_an_error_result_naming_it_and_the_tool_never_runs() {
        let (registry, runs) = registry_with_repeat(None);
        let outcome = registry
            .call(&call(
                "repeat",
                json!({"word": "hi", "count": 2, "shell": "ls"}),
            ))
            .await;
        assert!(outcome.is_error);
        assert!(
            outcome.content.starts_with("[invalid_arguments] "),
            "{}",
            outcome.content
        );
        assert!(outcome.content.contains("shell"), "{}", outcome.content);
        assert_eq!(runs.load(Ordering::SeqCst), 0);

        let outcome = ToolRegistry::builtin()
            .call(&call("current_time", json!({"zone": "CET"})))
            .await;
        assert!(outcome.is_error);
        assert!(
            outcome.content.starts_with("[invalid_arguments] ") && outcome.content.contains("zone"),
            "{}",
            outcome.content
        );
    }

    #[tokio::test]
    async fn a_wrong_type_is_an_error_result_naming_the_field_and_the_tool_never_runs() {
        let (registry, runs) = registry_with_repeat(None);
        let outcome = registry
            .call(&call("repeat", json!({"word": "hi", "count": "two"})))
            .await;
        assert!(outcome.is_error);
        assert!(
            outcome.content.starts_with("[invalid_arguments] /count: "),
            "{}",
            outcome.content
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn every_validation_error_is_reported_joined_with_semicolons() {
        let (registry, runs) = registry_with_repeat(None);
        let outcome = registry
            .call(&call("repeat", json!({"word": 7, "count": 0})))
            .await;
        assert!(outcome.is_error);
        let problems = outcome
            .content
            .strip_prefix("[invalid_arguments] ")
            .unwrap_or_else(|| panic!("{}", outcome.content));
        let problems: Vec<&str> = problems.split("; ").collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("/word: ")));
        assert!(problems.iter().any(|p| p.starts_with("/count: ")));
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn arguments_that_are_not_an_object_are_refused_at_the_root() {
        let outcome = ToolRegistry::builtin()
            .call(&call("current_time", Value::Null))
            .await;
        assert!(outcome.is_error);
        assert!(
            outcome
                .content
                .starts_with("[invalid_arguments] (root): null"),
            "{}",
            outcome.content
        );
    }

    #[tokio::test]
    async fn a_failing_tool_gives_code_and_message() {
        let (registry, runs) =
            registry_with_repeat(Some(ToolError::new("repeat.too_long", "that is too many")));
        let outcome = registry
            .call(&call("repeat", json!({"word": "hi", "count": 2})))
            .await;
        assert_eq!(
            outcome,
            ToolOutcome {
                content: "[repeat.too_long] that is too many".into(),
                is_error: true,
            }
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn registration_refuses_parameters_without_additional_properties_false() {
        for parameters in [
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "properties": {}, "additionalProperties": true}),
            json!({"type": "object", "properties": {}, "additionalProperties": {}}),
        ] {
            let (tool, _) = counting(None);
            let error = ToolRegistry::new()
                .register(&schema_with("open", "Takes anything", parameters), tool)
                .unwrap_err();
            assert_eq!(error, RegistrationError::OpenParameters("open".into()));
        }
    }

    #[test]
    fn registration_refuses_an_empty_description() {
        for description in ["", "   "] {
            let (tool, _) = counting(None);
            let error = ToolRegistry::new()
                .register(&schema_with("mute", description, closed_object()), tool)
                .unwrap_err();
            assert_eq!(error, RegistrationError::EmptyDescription("mute".into()));
        }
    }

    #[test]
    fn registration_refuses_a_duplicate_name() {
        let mut registry = ToolRegistry::builtin();
        let (tool, _) = counting(None);
        let error = registry.register(CURRENT_TIME_SCHEMA, tool).unwrap_err();
        assert_eq!(
            error,
            RegistrationError::DuplicateName("current_time".into())
        );
        assert_eq!(registry.specs("").len(), 1 + INTRINSIC_SCHEMAS.len());
    }

    /// `test_intrinsic_schemas.py`: every intrinsic is closed, described, and runs only
    /// on a task (the registry alone answers `tool.unbound` once the arguments pass).
    #[tokio::test]
    async fn intrinsics_are_closed_and_described_and_need_a_task() {
        let registry = ToolRegistry::builtin();
        for schema in INTRINSIC_SCHEMAS {
            let file: Value = serde_json::from_str(schema).unwrap();
            assert_eq!(file["parameters"]["additionalProperties"], false);
            assert!(!file["description"].as_str().unwrap().is_empty());
        }
        let outcome = registry
            .call(&call(
                "ask_participant",
                json!({"participant_id": "alice", "question": "?"}),
            ))
            .await;
        assert_eq!(
            outcome.content,
            "[tool.unbound] no task is bound to this intrinsic"
        );
        let outcome = registry
            .call(&call("ask_participant", json!({"participant_id": "alice"})))
            .await;
        assert!(
            outcome.content.starts_with("[invalid_arguments] "),
            "{}",
            outcome.content
        );
    }

    #[test]
    fn registration_refuses_an_invalid_name() {
        for name in [
            "",
            "Upper",
            "1st",
            "_hidden",
            "has-dash",
            "has space",
            "ünï",
        ] {
            let (tool, _) = counting(None);
            let error = ToolRegistry::new()
                .register(&schema_with(name, "Some tool", closed_object()), tool)
                .unwrap_err();
            assert_eq!(error, RegistrationError::InvalidName(name.into()));
        }
        let (tool, _) = counting(None);
        ToolRegistry::new()
            .register(&schema_with("a1_b2", "Some tool", closed_object()), tool)
            .unwrap();
    }

    #[test]
    fn registration_refuses_a_malformed_file_or_schema() {
        let mut registry = ToolRegistry::new();
        let (tool, _) = counting(None);
        assert!(matches!(
            registry.register("{not json", tool),
            Err(RegistrationError::InvalidFile(_))
        ));
        let (tool, _) = counting(None);
        let extra_key = r#"{"name":"x","description":"d","parameters":{"type":"object","additionalProperties":false},"strict":true}"#;
        assert!(matches!(
            registry.register(extra_key, tool),
            Err(RegistrationError::InvalidFile(_))
        ));
        let (tool, _) = counting(None);
        assert_eq!(
            registry.register(
                &schema_with(
                    "list",
                    "A list",
                    json!({"type": "array", "additionalProperties": false})
                ),
                tool
            ),
            Err(RegistrationError::NotAnObject("list".into()))
        );
        let (tool, _) = counting(None);
        let error = registry
            .register(
                &schema_with(
                    "broken",
                    "A broken schema",
                    json!({
                        "type": "object",
                        "properties": {"n": {"type": "no_such_type"}},
                        "additionalProperties": false
                    }),
                ),
                tool,
            )
            .unwrap_err();
        assert!(
            matches!(error, RegistrationError::InvalidParameters { ref name, .. } if name == "broken"),
            "{error:?}"
        );
        assert!(registry.specs("").is_empty());
    }

    #[test]
    fn every_schema_file_parses_is_closed_and_has_a_description() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/tools");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            seen += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let file: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = file["name"].as_str().unwrap_or_default();
            assert_eq!(
                path.file_stem().and_then(|s| s.to_str()),
                Some(name),
                "{}: the file is named after its tool",
                path.display()
            );
            let description = file["description"].as_str().unwrap_or_default();
            assert!(
                !description.trim().is_empty(),
                "{}: empty description",
                path.display()
            );
            assert_eq!(
                file["parameters"]["additionalProperties"],
                json!(false),
                "{}",
                path.display()
            );
            let (tool, _) = counting(None);
            ToolRegistry::new()
                .register(&text, tool)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        assert!(seen >= 1, "no schema files under {}", dir.display());
    }
}
