//! The tiny-harness extensions (seeds 000, 001, 003): their URIs and media types. These
//! strings are wire contracts.

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
pub const CHANNEL_SCHEMA: &str = include_str!("../../../schemas/channel-v1.schema.json");
/// The commands extension's card params schema (seed 003), the single copy under `schemas/`.
pub const COMMANDS_SCHEMA: &str = include_str!("../../../schemas/commands-v1.schema.json");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_are_json_with_their_extension_ids() {
        for (schema, uri) in [
            (CHANNEL_SCHEMA, CHANNEL_EXTENSION),
            (COMMANDS_SCHEMA, COMMANDS_EXTENSION),
        ] {
            let v: serde_json::Value = serde_json::from_str(schema).expect("schema is JSON");
            assert_eq!(v["$id"], format!("{uri}/schema.json"));
        }
    }

    #[test]
    fn the_card_commands_params_have_the_schema_shape() {
        let card = crate::a2a::card::build(&crate::config::Config::default());
        let ext = card
            .capabilities
            .extensions
            .iter()
            .find(|e| e.uri == COMMANDS_EXTENSION);
        let params = ext.and_then(|e| e.params.clone()).expect("commands params");
        assert!(
            params.keys().all(|k| k == "commands"),
            "only the schema's key"
        );
        assert!(params["commands"].is_array());
    }
}
