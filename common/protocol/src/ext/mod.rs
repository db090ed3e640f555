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

/// Where the harness shows a task's members the task's model calls and tokens, in all and
/// by model id: its own key, beside the task extension's (whose schema is closed), and
/// no extension's contract. Never read from a client.
pub const USAGE_METADATA_KEY: &str = "io.github.madarauchiha-314.tiny-harness/usage";

/// When the answer to a message that waits on someone is due (RFC 3339, UTC): in the
/// metadata of a question's message and of a task for a participant (and its status
/// message). The harness's own key: the channel part's schema is closed. Never read from
/// a client.
pub const REPLY_BY_METADATA_KEY: &str = "io.github.madarauchiha-314.tiny-harness/replyBy";

pub const TASK_MEDIA_TYPE: &str = "application/vnd.tiny-harness.task+json";
pub const CHANNEL_MEDIA_TYPE: &str = "application/vnd.tiny-harness.channel+json";
pub const EVENT_MEDIA_TYPE: &str = "application/vnd.tiny-harness.event+json";

/// Whether a part's `media_type` is `ours` (one of the media types above): compared as
/// media types are, without case and without parameters, so
/// `Application/VND.tiny-harness.event+json; v=1` is the event media type. Every match
/// on an extension media type goes through here.
pub fn is_media_type(media_type: &str, ours: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default();
    essence.trim().eq_ignore_ascii_case(ours)
}

/// Refuses (-32602 naming the part) a part that carries the channel or event media type
/// without being a data part: what those media types carry is JSON data, and a text,
/// raw or url part under one would be read as content by one check and skipped by
/// another.
pub fn check_data_parts(m: &crate::a2a::Message) -> Result<(), crate::a2a::A2aError> {
    let ours = |p: &crate::a2a::Part| {
        [CHANNEL_MEDIA_TYPE, EVENT_MEDIA_TYPE]
            .into_iter()
            .find(|t| is_media_type(&p.media_type, t))
    };
    for (i, p) in m.parts.iter().enumerate() {
        if let (Some(t), None) = (ours(p), &p.data) {
            let field = format!("message.parts[{i}]");
            let why = format!("{field} has media type {t}, which only a data part may have");
            return Err(crate::a2a::A2aError::invalid_field(field, why));
        }
    }
    Ok(())
}

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
    fn extension_media_types_compare_without_case_or_parameters_and_are_data() {
        use crate::a2a::{A2aError, Message, Part};
        for media in [
            EVENT_MEDIA_TYPE,
            "Application/VND.Tiny-Harness.Event+JSON",
            "application/vnd.tiny-harness.event+json;v=1",
            " application/vnd.tiny-harness.event+json ; charset=utf-8",
        ] {
            assert!(is_media_type(media, EVENT_MEDIA_TYPE), "{media}");
        }
        assert!(!is_media_type(
            "application/vnd.tiny-harness.event+jsonx",
            EVENT_MEDIA_TYPE
        ));
        assert!(!is_media_type(EVENT_MEDIA_TYPE, CHANNEL_MEDIA_TYPE));
        let with = |part: Part| Message {
            parts: vec![Part::text("x"), part],
            ..Default::default()
        };
        let typed = |mut p: Part, media: &str| {
            p.media_type = media.into();
            p
        };
        let data = typed(Part::data(serde_json::json!({})), EVENT_MEDIA_TYPE);
        assert_eq!(check_data_parts(&with(data)), Ok(()));
        let raw = Part {
            raw: Some("eyJ9".into()),
            ..Default::default()
        };
        for part in [
            typed(Part::text("{}"), EVENT_MEDIA_TYPE),
            typed(
                Part::text("{}"),
                "application/vnd.tiny-harness.CHANNEL+json; v=1",
            ),
            typed(raw, EVENT_MEDIA_TYPE),
        ] {
            let refused = check_data_parts(&with(part));
            assert!(
                matches!(&refused, Err(A2aError::InvalidParams { field: Some(f), .. }) if f == "message.parts[1]"),
                "{refused:?}"
            );
        }
        assert_eq!(check_data_parts(&with(Part::text("{}"))), Ok(()));
    }

    #[test]
    fn every_schema_compiles() {
        for schema in [TASK_SCHEMA, CHANNEL_SCHEMA, COMMANDS_SCHEMA] {
            let v: serde_json::Value = serde_json::from_str(schema).unwrap();
            jsonschema::validator_for(&v).expect("compiles");
        }
    }
}
