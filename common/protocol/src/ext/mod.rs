//! The tiny-harness extensions (seeds 000, 001, 003): their URIs, media types and wire
//! types. These strings and shapes are wire contracts.

pub mod channel;
pub mod participant;
pub mod permissions;
pub mod task;

pub const TASK_EXTENSION: &str = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1";
pub const CHANNEL_EXTENSION: &str =
    "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/channel/v1";
pub const COMMANDS_EXTENSION: &str =
    "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1";

/// Where a task carries the task extension's data (name, goal, criteria, participants...).
pub const TASK_METADATA_KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";

pub const TASK_MEDIA_TYPE: &str = "application/vnd.tiny-harness.task+json";
pub const CHANNEL_MEDIA_TYPE: &str = "application/vnd.tiny-harness.channel+json";
pub const EVENT_MEDIA_TYPE: &str = "application/vnd.tiny-harness.event+json";

/// Every extension this server supports, in card order.
pub const SUPPORTED: &[&str] = &[TASK_EXTENSION, CHANNEL_EXTENSION, COMMANDS_EXTENSION];

/// The channel data part schema (seed 000), the single copy under `schemas/`.
pub const CHANNEL_SCHEMA: &str = include_str!("../../../../schemas/channel-v1.schema.json");
/// The task extension's data schema, the single copy under `schemas/`.
pub const TASK_SCHEMA: &str = include_str!("../../../../schemas/task-v1.schema.json");
/// The commands extension's card params schema (seed 003), the single copy under `schemas/`.
pub const COMMANDS_SCHEMA: &str = include_str!("../../../../schemas/commands-v1.schema.json");

/// Compiles a schema under `schemas/`; they are embedded at build time, so failing to
/// compile one is a bug the unit tests catch.
pub fn compile(schema: &str) -> jsonschema::Validator {
    let value: serde_json::Value =
        serde_json::from_str(schema).unwrap_or(serde_json::Value::Bool(false));
    jsonschema::validator_for(&value)
        .or_else(|_| jsonschema::validator_for(&serde_json::Value::Bool(false)))
        .expect("the schema `false` compiles")
}

/// Every way `value` breaks `validator`, as `<path>: <problem>` joined by `; `.
pub fn problems(validator: &jsonschema::Validator, value: &serde_json::Value) -> Option<String> {
    let found: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().as_str().to_owned();
            let path = if path.is_empty() {
                "(root)".into()
            } else {
                path
            };
            format!("{path}: {e}")
        })
        .collect();
    (!found.is_empty()).then(|| found.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_are_json_with_their_extension_ids() {
        for (schema, uri) in [
            (TASK_SCHEMA, TASK_EXTENSION),
            (CHANNEL_SCHEMA, CHANNEL_EXTENSION),
            (COMMANDS_SCHEMA, COMMANDS_EXTENSION),
        ] {
            let v: serde_json::Value = serde_json::from_str(schema).expect("schema is JSON");
            assert_eq!(v["$id"], format!("{uri}/schema.json"));
        }
    }

    #[test]
    fn every_schema_compiles() {
        for schema in [TASK_SCHEMA, CHANNEL_SCHEMA, COMMANDS_SCHEMA] {
            let v: serde_json::Value = serde_json::from_str(schema).unwrap();
            jsonschema::validator_for(&v).expect("compiles");
        }
    }
}
