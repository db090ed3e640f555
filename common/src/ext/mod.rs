//! The tiny-harness extensions (seeds 000, 001, 003): their URIs and media types. These
//! strings are wire contracts.

pub const TASK_EXTENSION: &str = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1";
pub const CHANNEL_EXTENSION: &str =
    "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/channel/v1";
pub const COMMANDS_EXTENSION: &str =
    "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1";

pub const TASK_MEDIA_TYPE: &str = "application/vnd.tiny-harness.task+json";
pub const CHANNEL_MEDIA_TYPE: &str = "application/vnd.tiny-harness.channel+json";
pub const EVENT_MEDIA_TYPE: &str = "application/vnd.tiny-harness.event+json";

/// Every extension this server supports, in card order.
pub const SUPPORTED: &[&str] = &[TASK_EXTENSION, CHANNEL_EXTENSION, COMMANDS_EXTENSION];
